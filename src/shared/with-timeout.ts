/**
 * A bound on a wait that has no bound of its own (a Redis command while the connection hangs, a
 * library call that may never answer): "nothing waits forever". The promise itself goes on; its
 * late outcome is ignored (so a caller that tries again must make the retry harmless).
 */

/** Settles as `promise` does, or rejects with `Error(message())` after `ms`; the timer never outlives it. */
export function withTimeout<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(message())), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
