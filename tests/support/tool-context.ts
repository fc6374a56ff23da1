import { mkdtemp, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
