import { appendFileSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { makePrivateFolder } from '../config/private-data';

/** How many entries a history keeps when `load` is not told otherwise. */
export const DEFAULT_HISTORY_MAX = 1000;

/** Options of `InputHistory.load`. */
export interface InputHistoryOptions {
  /** The most entries kept, in memory and (after compaction) in the file; default 1000. */
  max?: number;
}

/**
 * The entries a person sent at the chat prompt, kept across sessions in a file of one
 * JSON-encoded string per line (so an entry may span lines). History is a convenience, never
 * an error: an unreadable file loads as an empty history and a failed write is ignored.
 *
 * Several fence processes may share one file: each entry is appended with a single write, so
 * lines from different processes do not interleave. Entries other processes append after
 * `load` show up at the next `load`. When the file grows past twice `max` lines it is rewritten
 * with the newest `max` entries (to a temporary file renamed over it, so readers never see half
 * a file).
 */
export class InputHistory {
  readonly #path: string;
  readonly #max: number;
  readonly #entries: string[];
  /** Lines in the file as far as this process knows: those read at load plus those it appended. */
  #fileLines: number;
  /** The file ended in a torn line at load: the next append starts with a newline to keep apart from it. */
  #tornTail: boolean;

  private constructor(path: string, max: number, entries: string[], fileLines: number, tornTail: boolean) {
    this.#path = path;
    this.#max = max;
    this.#entries = entries;
    this.#fileLines = fileLines;
    this.#tornTail = tornTail;
  }

  /**
   * Reads the history at `path`, keeping its newest `max` entries. A missing or unreadable file
   * gives an empty history; torn or non-JSON lines are skipped. Never throws.
   */
  static load(path: string, options: InputHistoryOptions = {}): InputHistory {
    const max = Math.max(1, Math.floor(options.max ?? DEFAULT_HISTORY_MAX) || DEFAULT_HISTORY_MAX);
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      // No history yet, or not readable: start empty.
    }
    const { entries, lines } = parseHistory(text);
    return new InputHistory(path, max, entries.slice(-max), lines, text.length > 0 && !text.endsWith('\n'));
  }

  /** The entries, oldest first; at most `max` of them. */
  get entries(): readonly string[] {
    return this.#entries;
  }

  /**
   * Adds `entry` as the newest entry and appends it to the file at once, creating the file's
   * folder when needed. Empty and whitespace-only entries, and a repeat of the newest entry, are
   * ignored. Write failures are ignored too: the entry stays in memory for this session.
   */
  add(entry: string): void {
    if (typeof entry !== 'string' || entry.trim() === '') return;
    if (this.#entries[this.#entries.length - 1] === entry) return;
    this.#entries.push(entry);
    if (this.#entries.length > this.#max) this.#entries.splice(0, this.#entries.length - this.#max);
    try {
      makePrivateFolder(dirname(this.#path));
      // One write per entry: concurrent appenders each land whole lines.
      appendFileSync(this.#path, `${this.#tornTail ? '\n' : ''}${JSON.stringify(entry)}\n`, { mode: 0o600 });
      this.#tornTail = false;
      this.#fileLines += 1;
    } catch {
      return;
    }
    if (this.#fileLines > 2 * this.#max) this.#compact();
  }

  /** Rewrites the file with its newest `max` entries, read afresh so other processes' entries are kept. */
  #compact(): void {
    const temp = `${this.#path}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`;
    try {
      const { entries } = parseHistory(readFileSync(this.#path, 'utf8'));
      const kept = entries.slice(-this.#max);
      writeFileSync(temp, kept.map((e) => `${JSON.stringify(e)}\n`).join(''), { mode: 0o600 });
      renameSync(temp, this.#path);
      this.#fileLines = kept.length;
    } catch {
      try {
        unlinkSync(temp);
      } catch {
        // Nothing was written.
      }
    }
  }
}

/**
 * The entries in a history file's text, oldest first, and how many non-blank lines it has.
 * Lines that are not a JSON string (torn by a crash, or written by something else) are skipped,
 * as are blank entries and an entry repeating the one before it.
 */
function parseHistory(text: string): { entries: string[]; lines: number } {
  const entries: string[] = [];
  let lines = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    lines += 1;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof value !== 'string' || value.trim() === '') continue;
    if (entries[entries.length - 1] === value) continue;
    entries.push(value);
  }
  return { entries, lines };
}
