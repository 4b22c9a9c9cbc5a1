/**
 * How the CLI reads the values of its flags, the same way in every command: durations, counts,
 * ports, probabilities. Each parser takes the flag's long name for its message and refuses with
 * ERR_INVALID_OPTIONS naming the flag, the text given and what is allowed (exit 2).
 *
 * A duration is written one way everywhere: a number and a unit, `500ms`, `30s`, `2m`, `1.5h`;
 * a bare number means milliseconds (`--wait-ms 30000` and `--wait-ms 30s` are the same wait).
 */
import { LifelineError } from "../../shared/errors.js";
import { MAX_TIMER_MS } from "../../shared/timer-ms.js";
import type { FlagParser } from "./flag.js";

/** Refuses a flag's value: ERR_INVALID_OPTIONS with `message`. */
export function usage(message: string): never {
  throw new LifelineError("ERR_INVALID_OPTIONS", message);
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DAY_MS = 86_400_000;

/**
 * Milliseconds of a duration (`500ms`, `60s`, `2m`, `1.5h`, or a bare number of ms), rounded to
 * whole ms, from `minMs` to about 24 days (what a Node timer holds).
 * @throws ERR_INVALID_OPTIONS naming `flag`.
 */
export function parseDuration(flag: string, text: string, minMs: number): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  const unit = match?.[2] ?? "ms";
  const ms = match === null ? Number.NaN : Math.round(Number(match[1]) * (UNITS[unit] ?? Number.NaN));
  if (!Number.isFinite(ms)) {
    usage(
      `${flag} "${text}" is not a duration; write a number and a unit, ms, s, m or h (for example 500ms, 30s, 2m); a bare number is milliseconds.`,
    );
  }
  if (ms < minMs) usage(`${flag} "${text}" is too short; it must be at least ${minMs} ms.`);
  if (ms > MAX_TIMER_MS) usage(`${flag} "${text}" is too long; at most about 24 days.`);
  return ms;
}

/**
 * An age (`90m`, `12h`, `30d`, or a bare number of ms), for how old something must be, not for a
 * timer: days allowed, up to 100 years.
 * @throws ERR_INVALID_OPTIONS naming `flag`.
 */
export const age: FlagParser<number> = (raw, flag) => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(raw);
  const unit = match?.[2] ?? "ms";
  const ms =
    match === null ? Number.NaN : Math.round(Number(match[1]) * (unit === "d" ? DAY_MS : (UNITS[unit] ?? Number.NaN)));
  if (!Number.isFinite(ms) || ms > 100 * 365 * DAY_MS) {
    usage(
      `${flag} "${raw}" is not an age; write a number and a unit, ms, s, m, h or d (for example 12h, 30d), up to 100 years; a bare number is milliseconds.`,
    );
  }
  return ms;
};

/** A duration flag's parser, at least `minMs`. */
export function duration(minMs = 0): FlagParser<number> {
  return (raw, flag) => parseDuration(flag, raw, minMs);
}

/**
 * A whole number from `min` to `max` (digits only, an optional minus sign).
 * @throws ERR_INVALID_OPTIONS naming `flag`.
 */
export function parseInteger(flag: string, text: string, min: number, max: number): number {
  const value = /^\s*-?\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    usage(`${flag} "${text}" must be a whole number from ${min} to ${max}.`);
  }
  return value;
}

/** A whole-number flag's parser, from `min` to `max`. */
export function integer(min: number, max: number): FlagParser<number> {
  return (raw, flag) => parseInteger(flag, raw, min, max);
}

/** A count flag's parser: a whole number from 1 to `max`. */
export function count(max: number): FlagParser<number> {
  return integer(1, max);
}

/** A port: a whole number from 0 to 65535, 0 picking a free one. */
export const port: FlagParser<number> = (raw, flag) => {
  if (!/^\s*\d+\s*$/.test(raw) || Number(raw) > 65_535) {
    usage(`${flag} "${raw}" must be a port number from 0 to 65535 (0: any free port).`);
  }
  return Number(raw);
};

/**
 * A number from 0 to 1.
 * @throws ERR_INVALID_OPTIONS naming `flag`.
 */
function parseProbability(flag: string, text: string): number {
  const value = /^\s*\d*\.?\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= 0 && value <= 1)) usage(`${flag} "${text}" must be a probability, a number from 0 to 1.`);
  return value;
}

/** A probability flag's parser. */
export const probability: FlagParser<number> = (raw, flag) => parseProbability(flag, raw);

/**
 * A share written as a fraction (`0.95`) or a percentage (`95%`) that `accept` allows.
 * @throws ERR_INVALID_OPTIONS naming `flag` and `what` it must be.
 */
export function share(accept: (value: number) => boolean, what: string): FlagParser<number> {
  return (raw, flag) => {
    const text = raw.trim();
    const percent = text.endsWith("%");
    const body = percent ? text.slice(0, -1) : text;
    const value = /^\d*\.?\d+$/.test(body) ? Number(body) / (percent ? 100 : 1) : Number.NaN;
    if (!accept(value)) usage(`${flag} "${raw}" is not ${what}.`);
    return value;
  };
}

/** One of `choices`, as typed. */
export function oneOf<const C extends readonly string[]>(choices: C): FlagParser<C[number]> {
  return (raw, flag) => {
    if (!(choices as readonly string[]).includes(raw)) usage(`${flag} "${raw}" must be one of: ${choices.join(", ")}.`);
    return raw as C[number];
  };
}

/** A text that is not blank. */
export const nonBlank: FlagParser<string> = (raw, flag) => {
  if (raw.trim() === "") usage(`${flag} needs a value; it was given an empty one.`);
  return raw;
};
