/**
 * Live progress of `lifeline load` on stderr: on a terminal, a cli-progress bar with the live
 * counters; otherwise (a CI log, a pipe) one plain line per update, which a log keeps readably.
 */
import cliProgress from "cli-progress";
import type { LoadProgress } from "../metrics/load-metrics.js";

/** Shows {@link LoadProgress} updates. */
export interface ProgressView {
  update(progress: LoadProgress): void;
  /** Leaves the last state on screen and releases the terminal. Idempotent. */
  stop(): void;
}

/** The counters every view shows, as cli-progress payload tokens and in the plain lines. */
function counters(progress: LoadProgress) {
  return {
    inFlight: progress.inFlightPrompts,
    done: progress.promptsDone,
    failed: progress.promptsFailed,
    retries: progress.retries,
    requests: progress.requests,
    tps: progress.outputTokensPerSecond,
    loop: progress.loopDelayMs.toFixed(1),
    elapsed: (progress.elapsedMs / 1000).toFixed(1),
    /** The open model's or the sweep's step, with its separator; empty in the closed model. */
    stage: progress.stage === undefined ? "" : ` | step ${progress.stage}`,
  };
}

/** The bar's goal: prompts when the run counts them, else the duration in seconds. */
function goal(progress: LoadProgress): { total: number; value: number; unit: string } {
  if (progress.plannedPrompts !== null) {
    return { total: progress.plannedPrompts, value: progress.promptsDone, unit: "prompts" };
  }
  const total = Math.round((progress.durationMs ?? 0) / 1000);
  return { total, value: Math.min(total, Math.floor(progress.elapsedMs / 1000)), unit: "s" };
}

/** A bar when `tty`, plain lines otherwise. */
export function createProgressView(stream: NodeJS.WritableStream, tty: boolean): ProgressView {
  return tty ? barView(stream) : lineView(stream);
}

function barView(stream: NodeJS.WritableStream): ProgressView {
  let bar: cliProgress.SingleBar | undefined;
  let stopped = false;
  return {
    update(progress) {
      if (stopped) return;
      const { total, value, unit } = goal(progress);
      const payload = { ...counters(progress), unit };
      if (bar === undefined) {
        bar = new cliProgress.SingleBar(
          {
            stream,
            format:
              "{bar} {value}/{total} {unit}{stage} | in flight {inFlight} | done {done} | failed {failed} | retries {retries} | requests {requests} | {tps} tok/s | loop {loop} ms",
            hideCursor: true,
            clearOnComplete: false,
            // Updates come from the run; the bar only redraws what it was given.
            fps: 5,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(total, value, payload);
      } else {
        bar.setTotal(total);
        bar.update(value, payload);
      }
    },
    stop() {
      if (stopped) return;
      stopped = true;
      bar?.stop();
    },
  };
}

function lineView(stream: NodeJS.WritableStream): ProgressView {
  let stopped = false;
  return {
    update(progress) {
      if (stopped) return;
      const c = counters(progress);
      const { total, value, unit } = goal(progress);
      stream.write(
        `[${c.elapsed}s] ${value}/${total} ${unit}${c.stage.replace(" | ", "; ")}; in flight ${c.inFlight}, done ${c.done}, failed ${c.failed}, retries ${c.retries}, requests ${c.requests}, ${c.tps} tok/s, loop delay ${c.loop} ms\n`,
      );
    },
    stop() {
      stopped = true;
    },
  };
}
