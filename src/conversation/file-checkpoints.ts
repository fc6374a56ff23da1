import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

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

  /** Puts back every file written at a position from `from` on, as before its first such write. */
  restore(from: number): RestoreOutcome {
    const first = new Map<string, Exclude<CheckpointLine, { restoredFrom: number }>>();
    for (const line of this.live()) {
      if (line.position >= from && !first.has(line.path)) first.set(line.path, line);
    }
    const outcome: RestoreOutcome = { restored: [], failed: [] };
    for (const [path, line] of first) {
      try {
        if (!line.existed) rmSync(path, { force: true });
        else if ('tooLarge' in line) {
          outcome.failed.push({ path, reason: `it held ${line.tooLarge} bytes, more than a checkpoint keeps` });
          continue;
        } else {
          mkdirSync(dirname(path), { recursive: true });
          writeFileSync(path, Buffer.from(line.base64, 'base64'));
        }
        outcome.restored.push(path);
      } catch (error) {
        outcome.failed.push({ path, reason: (error as NodeJS.ErrnoException).code ?? String(error) });
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
