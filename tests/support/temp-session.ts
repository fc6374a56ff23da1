import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { makeTempWorkspace } from './tool-context';

/** A session folder laid out as fence lays it out: `<home>/sessions/<id>`. */
export interface TempSession {
  /** The FENCE_HOME the session lives in. */
  home: string;
  id: string;
  dir: string;
}

/** Makes `<home>/sessions/<id>` (created) under a fresh temp folder. */
export async function makeTempSession(id = 'session-1'): Promise<TempSession> {
  const home = await makeTempWorkspace('fence-home-');
  const dir = join(home, 'sessions', id);
  await mkdir(dir, { recursive: true });
  return { home, id, dir };
}

/**
 * Gives every test of the calling file (or `describe` block) a fresh session folder in a
 * fresh FENCE_HOME, removed after the test. Read it with the getter, inside a test.
 */
export function useTempSession(id?: string): () => TempSession {
  let session: TempSession | undefined;
  beforeEach(async () => {
    session = await makeTempSession(id);
  });
  afterEach(async () => {
    if (session) await rm(session.home, { recursive: true, force: true });
    session = undefined;
  });
  return () => {
    if (!session) throw new Error('useTempSession: the session exists only inside a test');
    return session;
  };
}
