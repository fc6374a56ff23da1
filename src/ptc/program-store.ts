import { readFileSync } from 'node:fs';
import { writePrivateFile } from '../config/private-data';

/** Default cap on what programs of one session keep with `store()`: 256 KiB of JSON. */
export const DEFAULT_STORE_MAX_BYTES = 256 * 1024;

/** What programs see behind `store(key, value)` and `load(key)`. */
export interface ProgramStore {
  get(key: string): unknown;
  set(key: string, value: unknown): void;
}

/**
 * JSON values that programs of one session keep between runs, written through to a file in
 * the session folder so a resumed session has them. `set` throws (and the program sees the
 * error) when the value is not JSON or the whole store would pass `maxBytes`; `undefined`
 * removes the key.
 */
export function createProgramStore(file: string, maxBytes: number = DEFAULT_STORE_MAX_BYTES): ProgramStore {
  let values: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) values = parsed as Record<string, unknown>;
  } catch {
    // No store yet, or an unreadable one: start empty.
  }
  return {
    get: (key) => values[key],
    set(key, value) {
      const next = { ...values };
      if (value === undefined) delete next[key];
      else next[key] = value;
      const text = JSON.stringify(next);
      if (Buffer.byteLength(text) > maxBytes) {
        throw new Error(`store is full: it may hold ${Math.round(maxBytes / 1024)} KiB of JSON in a session`);
      }
      writePrivateFile(file, text);
      values = next;
    },
  };
}
