import { readFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { BashSession, type BashSessionOptions } from '../../src/processes/bash-session';

/** What `useBashSessions` gives the tests of a file. */
export interface BashSessions {
  /** The test's temp folder (symlinks resolved), where sessions start. */
  dir(): string;
  /** Starts a session in the test's folder; it is closed after the test. */
  open(options?: Partial<BashSessionOptions>): Promise<BashSession>;
}

/**
 * Gives every test of the calling file a fresh temp folder and closes the sessions it opened,
 * then removes the folder, after each test.
 */
export function useBashSessions(prefix = 'fence-bash-test-'): BashSessions {
  let dir: string | undefined;
  const sessions: BashSession[] = [];
  beforeEach(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  });
  afterEach(async () => {
    await Promise.all(sessions.splice(0).map((session) => session.close()));
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });
  const folder = () => {
    if (!dir) throw new Error('useBashSessions: the folder exists only inside a test');
    return dir;
  };
  return {
    dir: folder,
    async open(options = {}) {
      const session = await BashSession.start({ cwd: folder(), ...options });
      sessions.push(session);
      return session;
    },
  };
}

/** Whether a process exists and is not a zombie (Linux: /proc; elsewhere: signal 0). */
export function isAlive(pid: number): boolean {
  if (process.platform === 'linux') {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return text[text.lastIndexOf(')') + 2] !== 'Z';
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (at most 5 s) until the processes are gone — a killed orphan is reaped by init — and returns those still alive. */
export async function waitUntilDead(pids: number[]): Promise<number[]> {
  const deadline = Date.now() + 5_000;
  while (pids.some(isAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return pids.filter(isAlive);
}
