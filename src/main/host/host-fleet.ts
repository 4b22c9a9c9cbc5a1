/**
 * A host's membership of its fleet (docs/fleet.md): the connection to the fleet's Redis, made
 * when the host first needs it (its first session) from the host's settings (`fleet`, read from
 * the settings files and the host's `settings`, never a session's). A host whose settings name no
 * fleet never connects. A failed connection is not kept: the next session tries again. The fleet's
 * code (ioredis) is imported then, at run time: a host in no fleet never loads it, and an app's
 * bundle made from `import "lifeline"` does not carry it (config/run-time-import.ts).
 */
import { FleetUnavailableError } from "../../shared/errors.js";
import type { Settings } from "../../shared/settings/settings.js";
import { importAtRunTime } from "../config/run-time-import.js";
import { fleetConnectionModule } from "../config/run-time-modules.js";
import type { FleetConnection } from "../redis/fleet-connection.js";

type FleetConnectionModule = typeof import("../redis/fleet-connection.js");

/** One host's fleet connection; main thread only. */
export class HostFleet {
  readonly #settings: () => Promise<Settings>;
  readonly #onConnected: (connection: FleetConnection) => void | Promise<void>;
  #connecting: Promise<FleetConnection | undefined> | undefined;
  #closed = false;

  /**
   * @param settings the host's settings (before any session's overrides).
   * @param onConnected called once, when the connection is made: what the host shares through the
   *   fleet joins it there. The connection is handed out once a promise it returns has settled
   *   (it must be bounded and must not reject), so the first session sees the fleet joined.
   */
  constructor(settings: () => Promise<Settings>, onConnected: (connection: FleetConnection) => void | Promise<void>) {
    this.#settings = settings;
    this.#onConnected = onConnected;
  }

  /**
   * The fleet connection, made on the first call; undefined when the host is in no fleet.
   * @throws ERR_FLEET_UNAVAILABLE, ERR_INVALID_SETTINGS (see `connectFleet`), and the settings' errors.
   */
  connection(): Promise<FleetConnection | undefined> {
    if (this.#connecting === undefined) {
      const connecting = this.#connect();
      this.#connecting = connecting;
      connecting.catch(() => {
        if (this.#connecting === connecting) this.#connecting = undefined;
      });
    }
    return this.#connecting;
  }

  /** Closes the connection, if one was made; idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const connection = await this.#connecting?.catch(() => undefined);
    await connection?.close();
  }

  async #connect(): Promise<FleetConnection | undefined> {
    const settings = (await this.#settings()).fleet;
    if (settings === undefined) return undefined;
    const { connectFleet } = await importAtRunTime<FleetConnectionModule>(
      fleetConnectionModule(),
      (detail) =>
        new FleetUnavailableError(
          `Fleet mode's code could not be loaded: ${detail}. An app that bundles lifeline and uses fleet mode must keep the lifeline package external to its bundle.`,
        ),
    );
    const connection = await connectFleet(settings);
    if (this.#closed) {
      await connection.close();
      return undefined;
    }
    for (const warning of connection.warnings) process.emitWarning(warning, { code: "LIFELINE_FLEET" });
    await this.#onConnected(connection);
    return connection;
  }
}
