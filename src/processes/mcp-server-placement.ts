import { accessSync, closeSync, constants, existsSync, openSync, readSync, statSync } from 'node:fs';
import { basename, delimiter, isAbsolute, join, resolve } from 'node:path';
import type { McpStdioServerConfig } from '../config/config-schema';
import { isWithin, realPathOf } from '../os-sandbox/policy';

/**
 * Where a stdio MCP server runs: inside the session's OS sandbox, or outside it with the
 * person's access. A server of the person's own `config.toml` is their own program and runs
 * outside, unless something it runs could be written from the sandbox (now, or in an earlier
 * session of any mode): then the model could make it run its code with the person's access
 * at the next start, so it runs inside, and `reason` says why.
 */

/** The word in `args` that stands for the workspace, expanded as the server starts. */
export const WORKSPACE_WORD = '${workspace}';

/** What the decision needs to know of the session. */
export interface PlacementInput {
  config: McpStdioServerConfig;
  /** The workspace (absolute). */
  workspace: string;
  /** The person's home folder: the working folder of a server outside that names none. */
  home: string;
  /**
   * Every path the sandbox's processes may write in some session: the workspace and the
   * `[sandbox] writable` paths (whatever this session's mode), the sandbox's temporary folder.
   */
  writable: readonly string[];
  /** The `PATH` the server is given. */
  path: string;
}

/** A server outside: the program found on the `PATH` (absolute), in a folder the sandbox cannot write. */
export interface OutsidePlacement {
  where: 'outside';
  command: string;
  args: string[];
  cwd: string;
  /** The server's `PATH` without the folders the sandbox can write, nor relative ones. */
  path: string;
}

/** A server inside the sandbox; `reason` is set when it is a server of the person's own that could not run outside. */
export interface InsidePlacement {
  where: 'inside';
  command: string;
  args: string[];
  cwd: string;
  reason?: string;
}

export type Placement = OutsidePlacement | InsidePlacement;

/**
 * Launchers that run packages from a cache of their own, and where it is: a cache the sandbox
 * can write would let the model change the package the next start runs.
 */
const LAUNCHER_CACHES: readonly { programs: readonly string[]; caches: (env: Record<string, string | undefined>, home: string) => string[] }[] = [
  { programs: ['npx', 'npm', 'pnpm', 'yarn', 'bunx', 'bun'], caches: (env, home) => [env.npm_config_cache ?? join(home, '.npm'), join(home, '.bun'), join(home, '.local', 'share', 'pnpm'), join(home, '.cache', 'yarn')] },
  { programs: ['uvx', 'uv'], caches: (env, home) => [env.UV_CACHE_DIR ?? join(home, '.cache', 'uv'), env.UV_TOOL_DIR ?? join(home, '.local', 'share', 'uv'), join(home, '.config', 'uv')] },
  { programs: ['pipx'], caches: (env, home) => [env.PIPX_HOME ?? join(home, '.local', 'share', 'pipx'), join(home, '.local', 'pipx'), join(home, '.cache', 'pipx')] },
];

/**
 * Where the server of `input` runs, and with what command line and working folder (its
 * `args` with `${workspace}` expanded). Decided again at each start, since what lies where
 * may have changed. Never throws.
 *
 * - `sandbox = true` in its entry, or an entry of a project's `fence.toml`: inside.
 * - `sandbox = false`: outside as written, in its `cwd` or the workspace (the person's choice).
 * - Otherwise outside, in its `cwd` or the home folder, when each of these lies outside the
 *   writable paths, judged by real path: the working folder; the program (as found on `PATH`,
 *   or as written) and the interpreter its `#!` line names; every argument and value of its `env` (or what follows `=` in one) that is
 *   an absolute path, or a relative one that exists in the workspace or the working folder;
 *   and the cache of a package runner (`npx`'s `~/.npm`, `uvx`'s `~/.cache/uv`,
 *   `pipx`'s folder). An argument that is the workspace itself (`${workspace}`) is the folder
 *   it works on, not code, and does not count. Else inside, with the reason.
 */
export function placeServer(input: PlacementInput): Placement {
  const { config, workspace, home } = input;
  const args = (config.args ?? []).map((arg) => arg.split(WORKSPACE_WORD).join(workspace));
  const named = config.cwd === undefined ? undefined : resolve(workspace, expandHome(config.cwd, home));
  const inside = (reason?: string): InsidePlacement => ({ where: 'inside', command: config.command, args, cwd: named ?? workspace, ...(reason ? { reason } : {}) });
  if (config.sandbox === true || config.source !== 'user') return inside();
  if (config.sandbox === false) return { where: 'outside', command: config.command, args, cwd: named ?? workspace, path: input.path };

  const writable = [...new Set(input.writable.flatMap((root) => [resolve(root), realPathOf(resolve(root))]))];
  const canWrite = (path: string) => writable.some((root) => isWithin(resolve(path), root) || isWithin(realPathOf(path), root));
  const cwd = named ?? home;
  if (canWrite(cwd)) return inside(`its working folder ${cwd} is one the sandbox can write`);

  const found = config.command.includes('/') ? [resolve(workspace, config.command), resolve(cwd, config.command)] : [findOnPath(config.command, input.path, cwd)];
  for (const program of found) {
    if (program !== undefined && (isAbsolute(config.command) || existsSync(program)) && canWrite(program)) {
      return inside(`its program ${program} lies where the sandbox can write`);
    }
    // A script's interpreter runs it (`#!/path/to/python`); `#!/usr/bin/env node` finds it on the PATH left below.
    const interpreter = program === undefined ? undefined : interpreterOf(program);
    if (interpreter !== undefined && canWrite(interpreter)) return inside(`its program ${program} is run by ${interpreter}, where the sandbox can write`);
  }
  const words = [...(config.args ?? []).map((arg, index) => ({ word: arg, expanded: args[index] ?? arg })), ...Object.values(config.env ?? {}).map((value) => ({ word: value, expanded: value }))];
  for (const { word, expanded } of words) {
    for (const candidate of pathCandidates(word, expanded)) {
      // An absolute path counts even before it exists (the model could make it); a relative one
      // only where it exists: the server, run from a folder the sandbox cannot write, does not
      // read it from the workspace.
      const paths = isAbsolute(candidate) ? [candidate] : [resolve(workspace, candidate), resolve(cwd, candidate)].filter((path) => existsSync(path));
      const written = paths.find((path) => canWrite(path));
      if (written !== undefined) return inside(`its argument ${JSON.stringify(word)} names ${written}, where the sandbox can write`);
    }
  }
  const program = basename(config.command);
  for (const launcher of LAUNCHER_CACHES) {
    if (!launcher.programs.includes(program)) continue;
    const cache = launcher.caches(config.env ?? {}, home).find((folder) => canWrite(folder));
    if (cache !== undefined) return inside(`${program} runs packages from ${cache}, where the sandbox can write`);
  }
  const path = input.path
    .split(delimiter)
    .filter((folder) => folder !== '' && isAbsolute(folder) && !canWrite(folder))
    .join(delimiter);
  const command = config.command.includes('/') ? resolve(cwd, config.command) : (found[0] ?? config.command);
  return { where: 'outside', command, args, cwd, path };
}

/**
 * The paths a word of the command line may name: the word, and what follows `=` in an option
 * (`--config=conf/x.js`). The workspace itself (`${workspace}`, or `--root=${workspace}`) is
 * the folder the server works on and names nothing here; a path below it does.
 */
function pathCandidates(word: string, expanded: string): string[] {
  const candidates: string[] = [];
  const add = (raw: string, value: string) => {
    if (raw === WORKSPACE_WORD || value === '' || value.startsWith('-')) return;
    candidates.push(value);
  };
  add(word, expanded);
  const equals = word.indexOf('=');
  const expandedEquals = expanded.indexOf('=');
  if (equals !== -1 && expandedEquals !== -1) add(word.slice(equals + 1), expanded.slice(expandedEquals + 1));
  return candidates;
}

/** The interpreter a script's first line (`#!…`) names, when it is an absolute path; undefined otherwise. */
function interpreterOf(program: string): string | undefined {
  let head = '';
  try {
    const fd = openSync(program, 'r');
    try {
      const buffer = Buffer.alloc(256);
      head = buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, 0)).toString('latin1');
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  if (!head.startsWith('#!')) return undefined;
  const interpreter = head.slice(2).split('\n')[0]?.trim().split(/\s+/)[0] ?? '';
  return isAbsolute(interpreter) ? interpreter : undefined;
}

/** `~` and `~/…` in the home folder; anything else as it is. */
function expandHome(path: string, home: string): string {
  if (path === '~') return home;
  return path.startsWith('~/') ? join(home, path.slice(2)) : path;
}

/** The first executable file named `name` in the folders of `path` (relative ones from `cwd`), as `execvp` would find it. */
function findOnPath(name: string, path: string, cwd: string): string | undefined {
  for (const folder of path.split(delimiter)) {
    const candidate = resolve(cwd, folder === '' ? '.' : folder, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here: the next folder.
    }
  }
  return undefined;
}
