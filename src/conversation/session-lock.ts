import { randomBytes } from 'node:crypto';
import { closeSync, linkSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';

/** The lock's file name inside a session folder. */
export const LOCK_FILE = 'session.lock';

/** What `session.lock` holds (one JSON object): the fence process that has the session open. */
export interface SessionLockHolder {
  pid: number;
  host: string;
  /** ISO 8601: when the lock was taken. */
  startedAt: string;
  /** The kernel's boot id when it was taken (Linux only): a lock from an earlier boot is stale whatever its pid. */
  boot?: string;
}

/** A lock held by this process. */
export interface SessionLock {
  /** Removes the lock file if it still is the one this lock wrote. Safe to call more than once. */
  release(): void;
}

/** How many times a lock that keeps changing under us is looked at again before giving up. */
const MAX_ATTEMPTS = 10;

/**
 * Takes `<dir>/session.lock` for this process, so that one session is open in one fence
 * process at a time, and returns the handle that releases it.
 *
 * The file appears whole or not at all: its JSON is written to a temp file first, then
 * hard-linked into place, which fails when a lock exists. An existing lock is refused with a
 * one-line Error naming its holder when that holder may still run: its pid answers
 * `process.kill(pid, 0)` (or refuses it with EPERM) on this host, or it was taken on another
 * host, whose processes cannot be looked at. It is taken over when its pid is gone (ESRCH), it
 * was taken before this machine's last boot, or its content is unreadable or not a lock: the
 * stale file is moved aside under a unique name (only one process can move it), checked to
 * be the one judged stale (else put back), deleted, and the lock is created again as above.
 * Never waits, never signals the holder.
 */
export function acquireSessionLock(dir: string): SessionLock {
  const path = join(dir, LOCK_FILE);
  const boot = bootId();
  const mine: SessionLockHolder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), ...(boot ? { boot } : {}) };
  const text = `${JSON.stringify(mine)}\n`;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (createWhole(path, text)) return heldLock(path, text);
    const found = readLock(path);
    if (found === undefined) continue; // released meanwhile: try again
    const holder = parseHolder(found);
    if (holder && mayBeRunning(holder)) throw new Error(inUseMessage(dir, holder));
    moveAsideIfUnchanged(path, found);
  }
  throw new Error(`could not lock session ${basename(dir)}: its lock file keeps changing; try again`);
}

/**
 * The holder of `<dir>/session.lock` when it may still be running (as `acquireSessionLock`
 * judges it); undefined when there is no lock, or it is stale or unreadable. Only reads.
 */
export function sessionLockHolder(dir: string): SessionLockHolder | undefined {
  const found = readLock(join(dir, LOCK_FILE));
  const holder = found === undefined ? undefined : parseHolder(found);
  return holder && mayBeRunning(holder) ? holder : undefined;
}

function heldLock(path: string, text: string): SessionLock {
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      if (readLock(path) !== text) return; // taken over by another process: theirs now
      try {
        unlinkSync(path);
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') throw error;
      }
    },
  };
}

/** Creates `path` holding `text`, whole; false when it exists already. */
function createWhole(path: string, text: string): boolean {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.new`;
  writeFileSync(temp, text, { flag: 'wx', mode: 0o600 });
  try {
    linkSync(temp, path);
    return true;
  } catch (error) {
    const code = errorCode(error);
    if (code === 'EEXIST') return false;
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') return createExclusive(path, text);
    throw error;
  } finally {
    unlinkSync(temp);
  }
}

/** For file systems without hard links: create with `wx`, then write (the file is empty for a moment). */
function createExclusive(path: string, text: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw error;
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Moves a stale lock out of the way. The move is atomic, so of several processes that judged
 * the same file stale only one moves it; if what it moved is not what it judged (another
 * process took the lock over in between), it links that back into place.
 */
function moveAsideIfUnchanged(path: string, judged: string): void {
  const aside = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.stale`;
  try {
    renameSync(path, aside);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  if (readLock(aside) !== judged) {
    try {
      linkSync(aside, path);
    } catch {
      // A lock exists again: whoever made it holds the session.
    }
  }
  unlinkSync(aside);
}

/** The lock file's text; `''` when it exists but cannot be read; undefined when there is none. */
function readLock(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    return errorCode(error) === 'ENOENT' ? undefined : '';
  }
}

function parseHolder(text: string): SessionLockHolder | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { pid, host, startedAt, boot } = value as Record<string, unknown>;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  if (typeof host !== 'string' || typeof startedAt !== 'string') return undefined;
  if (boot !== undefined && typeof boot !== 'string') return undefined;
  return { pid, host, startedAt, ...(boot !== undefined ? { boot } : {}) };
}

/** Whether the holder may still be running. A holder on another host always may: its processes cannot be seen from here. */
function mayBeRunning(holder: SessionLockHolder): boolean {
  if (holder.host !== hostname()) return true;
  const boot = bootId();
  if (holder.boot !== undefined && boot !== undefined && holder.boot !== boot) return false;
  if (holder.pid === process.pid) return true;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) !== 'ESRCH';
  }
}

function inUseMessage(dir: string, holder: SessionLockHolder): string {
  const id = basename(dir);
  if (holder.host !== hostname()) {
    return `session ${id} is in use by a fence process on ${holder.host} (pid ${holder.pid}, since ${holder.startedAt}); if it has ended, delete ${join(dir, LOCK_FILE)}`;
  }
  if (holder.pid === process.pid) return `session ${id} is open already in this fence process`;
  return `session ${id} is in use by another fence process (pid ${holder.pid}, since ${holder.startedAt}); wait for it to end or stop it`;
}

let cachedBootId: string | null | undefined;

/** This machine's boot id (`/proc/sys/kernel/random/boot_id`), read once; undefined where there is none. */
function bootId(): string | undefined {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
    } catch {
      cachedBootId = null;
    }
  }
  return cachedBootId ?? undefined;
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}
