import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Name of the checkpoint log in a session folder. */
export const CHECKPOINTS_FILE = 'file-checkpoints.jsonl';

/** Largest file whose content a checkpoint keeps; a larger one is noted, and cannot be put back. */
export const CHECKPOINT_MAX_BYTES = 2 * 1024 * 1024;

/** One line of the checkpoint log: a file as it was before a write, or a restore. */
type CheckpointLine =
  | { position: number; path: string; existed: false }
  | { position: number; path: string; existed: true; base64: string }
  | { position: number; path: string; existed: true; tooLarge: number }
  | { restoredFrom: number };

/** What putting files back came to. */
export interface RestoreOutcome {
  /** Files written back as they were, or removed because they did not exist. */
  restored: string[];
  /** Files that could not be put back, with why. */
  failed: { path: string; reason: string }[];
}

/**
 * How a restore writes files back: the caller's checked writes (this layer judges no path).
 * Each throws an Error whose message says why a file was refused or failed.
 */
export interface CheckpointWriter {
  /** Makes `path` hold exactly `content`, creating it and its folders when missing. */
  write(path: string, content: Buffer): Promise<void>;
  /** Removes the file at `path`; nothing there is not an error. */
  remove(path: string): Promise<void>;
}

/**
 * What the file tools changed in a session, kept so that taking turns back can put the files
 * back. Before each write the file's old content (or that it did not exist) is appended to
 * `file-checkpoints.jsonl` in the session folder with the log's length at that moment (its
 * position). `restore(from)` puts every file written at a position from `from` on back as it
 * was before the first of those writes, and appends a line saying so, so those checkpoints are
 * not used again. Append-only, like the conversation log. Only the file tools are covered: what
 * shell commands or programs change is not kept.
 */
export class FileCheckpoints {
  /** `dir` gives the session folder at the moment of use (a fork moves it). */
  constructor(private readonly dir: () => string) {}

  /** Keeps `path` as it was (`before`; `undefined` when it did not exist) at `position`. Never throws. */
  keep(path: string, before: Buffer | undefined, position: number): void {
    let line: CheckpointLine;
    if (before === undefined) line = { position, path, existed: false };
    else if (before.length > CHECKPOINT_MAX_BYTES) line = { position, path, existed: true, tooLarge: before.length };
    else line = { position, path, existed: true, base64: before.toString('base64') };
    try {
      mkdirSync(this.dir(), { recursive: true, mode: 0o700 });
      appendFileSync(join(this.dir(), CHECKPOINTS_FILE), `${JSON.stringify(line)}\n`, { mode: 0o600 });
    } catch {
      // A checkpoint that cannot be written only means the file cannot be put back later.
    }
  }

  /**
   * Puts back every file written at a position from `from` on, as before its first such
   * write, through `files` only: the path kept is where the file was, not where its links
   * lead now, so the caller's writes judge each one again (see `admittedRestore`). Each file
   * refused or failed is in `failed` with why; the others are still put back.
   */
  async restore(from: number, files: CheckpointWriter): Promise<RestoreOutcome> {
    const first = new Map<string, Exclude<CheckpointLine, { restoredFrom: number }>>();
    for (const line of this.live()) {
      if (line.position >= from && !first.has(line.path)) first.set(line.path, line);
    }
    const outcome: RestoreOutcome = { restored: [], failed: [] };
    for (const [path, line] of first) {
      try {
        if (!line.existed) await files.remove(path);
        else if ('tooLarge' in line) {
          outcome.failed.push({ path, reason: `it held ${line.tooLarge} bytes, more than a checkpoint keeps` });
          continue;
        } else {
          await files.write(path, Buffer.from(line.base64, 'base64'));
        }
        outcome.restored.push(path);
      } catch (error) {
        outcome.failed.push({ path, reason: error instanceof Error ? error.message : String(error) });
      }
    }
    if (first.size > 0) {
      try {
        appendFileSync(join(this.dir(), CHECKPOINTS_FILE), `${JSON.stringify({ restoredFrom: from })}\n`, { mode: 0o600 });
      } catch {
        // The files are back; a later restore could only put them back again.
      }
    }
    return outcome;
  }

  /** The checkpoints not used by a restore yet, in the order they were taken. */
  private live(): Exclude<CheckpointLine, { restoredFrom: number }>[] {
    let text: string;
    try {
      text = readFileSync(join(this.dir(), CHECKPOINTS_FILE), 'utf8');
    } catch {
      return [];
    }
    let kept: Exclude<CheckpointLine, { restoredFrom: number }>[] = [];
    for (const raw of text.split('\n')) {
      if (!raw) continue;
      let line: CheckpointLine;
      try {
        line = JSON.parse(raw) as CheckpointLine;
      } catch {
        continue; // a line cut short by a crash
      }
      if ('restoredFrom' in line) {
        const from = line.restoredFrom;
        kept = kept.filter((entry) => entry.position < from);
      } else if (typeof line.path === 'string' && typeof line.position === 'number') {
        kept.push(line);
      }
    }
    return kept;
  }
}
