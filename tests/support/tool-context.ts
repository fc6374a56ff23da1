import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { ToolContext } from '../../src/tools/define-tool';

/**
 * A tool context for `workspace` with a signal that is never aborted and no shell: a tool
 * that asks for the shell fails the test.
 */
export function makeToolContext(workspace: string, signal: AbortSignal = new AbortController().signal): ToolContext {
  return {
    workspace,
    signal,
    bash: () => {
      throw new Error('no shell in this test');
    },
  };
}

/** A fresh, empty folder under the system temp folder (symlinks resolved), for one test to use as a workspace. */
export async function makeTempWorkspace(prefix = 'fence-tools-'): Promise<string> {
  return realpath(await mkdtemp(join(tmpdir(), prefix)));
}

/**
 * Gives every test of the calling file (or `describe` block) a fresh temp workspace, removed
 * after the test. Call it at the top level of a file or block; read the path with the getter.
 */
export function useTempWorkspace(prefix?: string): () => string {
  let workspace: string | undefined;
  beforeEach(async () => {
    workspace = await makeTempWorkspace(prefix);
  });
  afterEach(async () => {
    if (workspace) await rm(workspace, { recursive: true, force: true });
    workspace = undefined;
  });
  return () => {
    if (!workspace) throw new Error('useTempWorkspace: the workspace exists only inside a test');
    return workspace;
  };
}
