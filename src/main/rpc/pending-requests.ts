/**
 * A client's commands awaiting their response (`RpcClient`'s, and `RpcHostClient`'s, whose
 * commands carry a session envelope): a fresh id and a timer per request, settled by
 * the response with that id, by an oversize record that was that response, by the timer, or by the
 * child's end, whichever comes first.
 */
import { LifelineError } from "../../shared/errors.js";
import { serializeJsonLine } from "./jsonl.js";
import type { RpcChild } from "./rpc-child.js";

interface PendingRequest {
  command: string;
  resolve(data: unknown): void;
  reject(error: LifelineError): void;
  timer: NodeJS.Timeout | undefined;
}

/** The requests of one client not answered yet. */
export class PendingRequests {
  readonly #timeoutMs: number;
  #nextId = 0;
  readonly #pending = new Map<string, PendingRequest>();

  /** @param timeoutMs longest wait for each response (a validated timeout), or `Infinity` */
  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Sends one command with a fresh id and resolves with its response's data. Rejects with
   * `ERR_RPC_TIMEOUT` when no response came in time (the request is then forgotten),
   * `ERR_RPC_EXITED` when it could not be written, and as settled by the methods below. The
   * response data is trusted as the server sent it: `T` is what the caller knows the command answers.
   */
  send<T>(child: Pick<RpcChild, "pid" | "write" | "stderrTail">, command: { readonly type: string }): Promise<T> {
    const id = `req_${++this.#nextId}`;
    return new Promise<T>((resolve, reject) => {
      const pending: PendingRequest = {
        command: command.type,
        resolve: (data) => resolve(data as T),
        reject,
        timer: undefined,
      };
      if (this.#timeoutMs !== Number.POSITIVE_INFINITY) {
        pending.timer = setTimeout(() => {
          this.#pending.delete(id);
          reject(
            new LifelineError(
              "ERR_RPC_TIMEOUT",
              `${command.type} got no response in ${this.#timeoutMs} ms from the lifeline RPC child (pid ${child.pid}). ` +
                "It may be stuck or overloaded: check getStderr(), raise requestTimeoutMs, or stop() it.",
            ),
          );
        }, this.#timeoutMs);
      }
      this.#pending.set(id, pending);
      child.write(serializeJsonLine({ ...command, id }), (error) => {
        if (error == null || !this.#pending.has(id)) return;
        this.#settle(id, () =>
          reject(
            new LifelineError(
              "ERR_RPC_EXITED",
              `${command.type} could not be sent: the lifeline RPC child's stdin is closed (${error.message}). ${child.stderrTail()}`,
              { cause: error },
            ),
          ),
        );
      });
    });
  }

  /** A response record (`type` "response"): settles the request with its id, if one is pending. */
  receiveResponse(response: Record<string, unknown>): void {
    const id = response.id;
    // A response without a known id (a parse error, an unknown command, a request that already
    // timed out) answers nothing this client waits for.
    if (typeof id !== "string") return;
    this.#settle(id, (pending) => {
      if (response.success === true) {
        pending.resolve(response.data);
        return;
      }
      const error = typeof response.error === "string" ? response.error : "the server gave no error text";
      pending.reject(new LifelineError("ERR_RPC_FAILED", `${pending.command} failed: ${error}`));
    });
  }

  /**
   * A record over `limit` bytes, skipped: if it is the response to a pending request, that request
   * fails now instead of timing out.
   */
  receiveOversize(bytes: number, head: string, limit: number): void {
    const id = /^\s*\{.*?"id"\s*:\s*"([^"\\]*)"/.exec(head)?.[1];
    if (id === undefined || !/"type"\s*:\s*"response"/.test(head)) return;
    this.#settle(id, (pending) =>
      pending.reject(
        new LifelineError(
          "ERR_RPC_FAILED",
          `${pending.command} failed: its response of ${bytes} bytes exceeds the client's limit of ${limit} bytes.`,
        ),
      ),
    );
  }

  /** Rejects every pending request with `error`. */
  failAll(error: LifelineError): void {
    for (const id of [...this.#pending.keys()]) this.#settle(id, (pending) => pending.reject(error));
  }

  /** Removes a pending request and its timer, then runs `then`. */
  #settle(id: string, then: (pending: PendingRequest) => void): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    then(pending);
  }
}
