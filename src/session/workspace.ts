import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Resolves and checks the workspace folder (`-w`, or the current folder); returns an error
 * line for the user when unusable. A module of its own, so commands that need only this (the
 * `programs`, `mcp` and `run` commands) do not load the session's.
 */
export function resolveWorkspace(dir: string | undefined): { path: string } | { error: string } {
  const path = resolve(dir ?? process.cwd());
  if (!existsSync(path)) return { error: `workspace ${path} does not exist` };
  if (!statSync(path).isDirectory()) return { error: `workspace ${path} is not a folder` };
  return { path };
}
