/**
 * What the session's compactions read of it (`CompactionHost`, compaction/session-compaction.ts),
 * built by its prompt runner.
 */
import type { CompactionSettings, Settings } from "../../../shared/settings/settings.js";
import type { ContextOverflowHook } from "../../compaction/context-overflow-hook.js";
import type { CompactionHost, CompactionTarget } from "../../compaction/session-compaction.js";
import type { SessionRecorder } from "../../session-files/session-recorder.js";
import type { TranscriptMirror } from "../runs/transcript-mirror.js";
import type { SessionSetup } from "../session-setup.js";
import type { SessionListeners } from "../state/session-listeners.js";
import type { SessionModel } from "../state/session-model.js";

/**
 * What the session's compactions read of it: a class, so that `settings` and `contextWindow` are
 * methods on the shared prototype rather than two closures per session (P4, docs/performance.md).
 */
export class RunnerCompactionHost implements CompactionHost {
  readonly sessionId: string;
  readonly overflowHook: ContextOverflowHook | undefined;
  readonly recorder: SessionRecorder | undefined;
  readonly prompts: CompactionTarget;
  readonly transcript: TranscriptMirror;
  readonly events: SessionListeners;
  readonly #settings: Settings;
  readonly #model: SessionModel;

  constructor(
    setup: SessionSetup,
    model: SessionModel,
    runner: CompactionTarget & { readonly transcript: TranscriptMirror },
    events: SessionListeners,
  ) {
    this.sessionId = setup.start.sessionId;
    this.overflowHook = setup.host.onContextOverflow;
    this.recorder = setup.host.recorder;
    this.prompts = runner;
    this.transcript = runner.transcript;
    this.events = events;
    this.#settings = setup.start.settings;
    this.#model = model;
  }

  settings(): CompactionSettings {
    return this.#settings.compaction;
  }

  contextWindow(): number {
    return this.#model.current.contextWindow;
  }
}
