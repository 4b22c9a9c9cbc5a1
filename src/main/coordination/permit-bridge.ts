/**
 * SPEC B8, `retry.maxConcurrentRequests`: the host's answer to its workers' permit messages. A
 * worker asks before each model request of a session that has the setting; the answer waits at the
 * session's provider gate, then for one of its provider's permits, and is sent back with
 * `grantPermit`. Built once per host and handed to its worker roster; main thread only.
 */
import type { PermitHandler } from "../workers/link-options.js";
import type { HostCoordination } from "./host-coordination.js";

/**
 * Where one session's model requests take their permits: its provider, the permit count of that
 * provider (`retry.maxConcurrentRequests`), and the gate key it waits at (undefined: no gate).
 */
export interface PermitTarget {
  provider: string;
  limit: number;
  gateKey: string | undefined;
}

/**
 * The permit handler of a host's workers. `targetOf` names the permits of an open session; a
 * session it does not know (closed, or never opened here) or whose settings ask for no permits is
 * refused at once, so the worker never waits for an answer that will not come. A grant that cannot
 * be delivered (the worker died) is released again. None of the handlers throws.
 */
export function permitBridge(
  coordination: HostCoordination,
  targetOf: (sessionId: string) => PermitTarget | undefined,
): PermitHandler {
  return {
    request: (link, sessionId, requestId) => {
      const target = targetOf(sessionId);
      if (target === undefined) {
        void link.call("grantPermit", requestId, false).catch(() => {});
        return;
      }
      const semaphore = coordination.semaphore(target.provider, target.limit);
      void coordination.requestPermit(link, requestId, semaphore, target.gateKey).then((granted) => {
        // Not granted: cancelled by the worker, or the worker died; nobody waits for an answer.
        if (!granted) return;
        link.call("grantPermit", requestId, true).catch(() => coordination.releasePermit(link, requestId));
      });
    },
    release: (link, requestId) => coordination.releasePermit(link, requestId),
    releaseAll: (link) => coordination.releaseOwner(link),
  };
}
