/**
 * `RpcHostClient`'s link to a `lifeline --mode host --socket <path>` that runs already (another
 * process owns it): the Unix socket in place of a child's stdin and stdout, with the child's
 * contract (rpc-child.ts): records in order, gone once, and nothing of it keeps the process alive
 * afterwards. The host closes this connection's sessions when it goes (their files stay).
 */
import { connect, type Socket } from "node:net";
import { LifelineError } from "../../../shared/errors.js";
import { attachJsonlReader } from "../jsonl.js";
import type { RpcChildHandlers } from "../rpc-child.js";

/** After `end()` (the host's signal that this client is done), wait this long before destroying the socket. */
const END_GRACE_MS = 2_000;

/** One connection to a host's Unix socket, owned by an `RpcHostClient`. Connects in the constructor. */
export class HostSocket {
  readonly #path: string;
  readonly #socket: Socket;
  readonly #handlers: RpcChildHandlers;
  readonly #detachReader: () => void;
  readonly #goneSignal: Promise<void>;
  #markGone: () => void = () => {};
  #gone = false;
  #error: Error | undefined;
  #endTimer: NodeJS.Timeout | undefined;

  constructor(path: string, maxLineBytes: number, handlers: RpcChildHandlers) {
    this.#path = path;
    this.#handlers = handlers;
    this.#goneSignal = new Promise((resolve) => {
      this.#markGone = resolve;
    });
    const socket = connect(path);
    this.#socket = socket;
    // A refused or broken connection ends in `close`, reported there with this error.
    socket.on("error", (error) => {
      this.#error ??= error;
    });
    this.#detachReader = attachJsonlReader(
      socket,
      {
        line: (text) => handlers.line(text),
        oversize: ({ bytes, head }) => handlers.oversize(bytes, head),
      },
      { maxLineBytes },
    );
    socket.once("close", () => this.#closed());
  }

  /** There is no child process: undefined. */
  get pid(): undefined {
    return undefined;
  }

  /** Writes `line` to the host; `callback` gets the write's error, if any. */
  write(line: string, callback: (error: Error | null | undefined) => void): void {
    this.#socket.write(line, callback);
  }

  /** Ends the connection (the host keeps running); resolves once it is closed. Never rejects. */
  stop(): Promise<void> {
    if (!this.#gone && this.#endTimer === undefined) {
      this.#socket.end();
      this.#endTimer = setTimeout(() => this.#socket.destroy(), END_GRACE_MS);
    }
    return this.#goneSignal;
  }

  /** A socket has no stderr: empty. */
  getStderr(): string {
    return "";
  }

  /** For error messages: where the host was. */
  stderrTail(): string {
    return `The host's diagnostics are on its own stderr (socket ${this.#path}).`;
  }

  #closed(): void {
    if (this.#gone) return;
    this.#gone = true;
    clearTimeout(this.#endTimer);
    this.#detachReader();
    const cause = this.#error;
    const how =
      cause === undefined
        ? "was closed"
        : `failed (${cause.message}); check that lifeline --mode host --socket ${this.#path} runs`;
    this.#handlers.gone(
      new LifelineError(
        "ERR_RPC_EXITED",
        `The connection to lifeline host on ${this.#path} ${how}.`,
        cause === undefined ? {} : { cause },
      ),
    );
    this.#markGone();
  }
}
