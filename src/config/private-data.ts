import { chmodSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';

/**
 * fence's data folder (`$FENCE_HOME`) holds the logs of every session, their saved outputs,
 * program traces and saved programs (whose records hold tool results), approvals and the trust
 * record: all of it is for the user alone. Whatever writes there makes its folders 0700 and its
 * files 0600, whichever command runs first and whatever the umask (a umask can only take bits
 * away, never add them).
 */

/** The mode of every folder fence makes in its data folder. */
export const PRIVATE_FOLDER = 0o700;
/** The mode of every file fence writes in its data folder. */
export const PRIVATE_FILE = 0o600;

/**
 * Makes `path` and its missing parents, each 0700. Gives the first folder it made, or
 * undefined when all existed (as `mkdirSync` with `recursive`). Folders that existed keep
 * their mode.
 */
export function makePrivateFolder(path: string): string | undefined {
  return mkdirSync(path, { recursive: true, mode: PRIVATE_FOLDER });
}

/**
 * Writes `data` to `path`, a new file made 0600. `flag` as for `writeFileSync` (`'w'` by
 * default, `'wx'` to fail when it exists). A file that existed keeps its mode: write to a
 * new temporary file and rename it to replace one.
 */
export function writePrivateFile(path: string, data: string | NodeJS.ArrayBufferView, flag = 'w'): void {
  writeFileSync(path, data, { mode: PRIVATE_FILE, flag });
}

/** What fence keeps at the top of its data folder. */
const DATA_FOLDER_ENTRIES = new Set(['sessions', 'programs', 'approvals', 'trusted-workspaces.json', 'sandbox-probe.json', 'mcp-tools', 'git-guard', 'input-history.jsonl', 'compile-cache']);

/**
 * Makes the data folder `home` 0700 when others may read or enter it: earlier versions of
 * fence made it 0755, which left every session log readable by the other users of the
 * machine. Only a folder that is plainly fence's is changed: the user's own (not a link), not
 * shared (no sticky bit, as `/tmp` has), not the home folder, holding fence's entries and
 * nothing else (a `$FENCE_HOME` pointed at a folder of other things is left as it is). Never
 * throws.
 */
export function tightenDataFolder(home: string): void {
  try {
    const stat = lstatSync(home);
    if (!stat.isDirectory() || stat.uid !== process.getuid?.() || (stat.mode & 0o077) === 0 || (stat.mode & 0o1000) !== 0) return;
    if (resolve(home) === resolve(homedir()) || resolve(home) === '/') return;
    const entries = readdirSync(home);
    const ours = (name: string) => DATA_FOLDER_ENTRIES.has(name) || name.endsWith('.tmp');
    if (!entries.some((name) => DATA_FOLDER_ENTRIES.has(name)) || !entries.every(ours)) return;
    chmodSync(home, PRIVATE_FOLDER);
  } catch {
    // Not there yet, or not ours to change.
  }
}
