import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { parse as parseToml } from 'smol-toml';

/**
 * The workspace files a project's `fence.toml` runs: each word of an MCP server's `command` and
 * `args`, and of a command tool's or a hook's `command`, that names a file of the workspace (resolved from
 * the workspace for a server and a hook, from the tool's `cwd` for a tool; for `--flag=path`, the part
 * after `=` too). Trust hashes them beside `fence.toml`, so that a trusted project whose server
 * script was rewritten — by a `git pull`, or by a model in an earlier session — is asked about
 * again before the script runs.
 *
 * Only what the command line names: a module the script loads in turn is not among them.
 */

/**
 * The paths, relative to `workspace` (a real path) and sorted, of the regular files that the
 * project configuration `text` names in its commands and that exist inside the workspace (links followed,
 * and kept only when they lead to a place inside it). Text that is not TOML, or tables of the
 * wrong shape, name nothing: such a file is refused anyway when fence loads it. Never throws.
 */
export function projectCommandFiles(text: string, workspace: string): string[] {
  let parsed: unknown;
  try {
    parsed = parseToml(text);
  } catch {
    return [];
  }
  const found = new Set<string>();
  const add = (word: unknown, cwd: string, program = false): void => {
    if (typeof word !== 'string' || word === '') return;
    // A program named without a folder (`node`, `python3`) is looked up on the PATH, not in `cwd`.
    if (program && !word.includes('/')) return;
    const candidates = [word, ...(word.includes('=') ? [word.slice(word.indexOf('=') + 1)] : [])];
    for (const candidate of candidates) {
      const inside = fileInside(candidate, cwd, workspace);
      if (inside !== undefined) found.add(inside);
    }
  };
  const root = record(parsed);
  for (const server of Object.values(record(record(root.mcp).servers))) {
    const table = record(server);
    add(table.command, workspace, true);
    for (const word of list(table.args)) add(word, workspace);
  }
  for (const tool of Object.values(record(root.tools))) {
    const table = record(tool);
    const cwd = typeof table.cwd === 'string' ? resolve(workspace, expandHome(table.cwd)) : workspace;
    list(table.command).forEach((word, index) => add(word, cwd, index === 0));
  }
  for (const hook of list(root.hooks)) {
    list(record(hook).command).forEach((word, index) => add(word, workspace, index === 0));
  }
  return [...found].sort();
}

/** `word` as a path from `cwd`, relative to `workspace` when it names a regular file inside it. */
function fileInside(word: string, cwd: string, workspace: string): string | undefined {
  let real: string;
  try {
    real = realpathSync(resolve(cwd, expandHome(word)));
    if (!statSync(real).isFile()) return undefined;
  } catch {
    return undefined;
  }
  const path = relative(workspace, real);
  if (path === '' || path.startsWith(`..${sep}`) || path === '..' || isAbsolute(path)) return undefined;
  return path;
}

function expandHome(path: string): string {
  if (path === '~') return homedir();
  return path.startsWith('~/') ? join(homedir(), path.slice(2)) : path;
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
