import { mkdtempSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Makes a private temp folder named `<prefix><this pid>-<random>` (mode 0700), after removing
 * the folders with the same prefix whose owning process is gone (left behind by a crash or a
 * kill). Folders of live processes, other users' and anything named otherwise are left alone;
 * the clean-up never throws.
 */
export async function makeOwnedTempDir(prefix: string): Promise<string> {
  const [dir] = await Promise.all([mkdtemp(join(tmpdir(), `${prefix}${process.pid}-`)), removeStaleTempDirs(prefix)]);
  return dir;
}

/**
 * `makeOwnedTempDir`, with the folder made before this returns; the folders of dead processes
 * are removed in the background.
 */
export function makeOwnedTempDirNow(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}${process.pid}-`));
  void removeStaleTempDirs(prefix);
  return dir;
}

async function removeStaleTempDirs(prefix: string): Promise<void> {
  const owned = new RegExp(`^${prefix}(\\d+)-`);
  const names = await readdir(tmpdir()).catch(() => [] as string[]);
  const stale = names.filter((name) => {
    const owner = owned.exec(name)?.[1];
    return owner !== undefined && Number(owner) !== process.pid && !processExists(Number(owner));
  });
  await Promise.all(stale.map((name) => rm(join(tmpdir(), name), { recursive: true, force: true }).catch(() => undefined)));
}

/** Whether a process with `pid` is alive, this user's or another's. */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
