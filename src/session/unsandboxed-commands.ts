import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import type { FenceConfig } from '../config/config';
import { isWithin, realPathOf } from '../os-sandbox/policy';
import { WORKSPACE_WORD } from '../processes/mcp-server-placement';

/**
 * A command of the configuration that runs outside the sandbox (`sandbox = false`, honoured
 * from the user's own file only): its words, program first, and the folder it runs in.
 */
export interface UnsandboxedCommand {
  words: string[];
  cwd: string;
}

/**
 * The commands of `config` that run outside the sandbox: each command tool, each stdio MCP
 * server and each hook with `sandbox = false` (a hook runs in the workspace), with the folder it runs in (its `cwd` from the workspace,
 * `~/` expanded; absent, the workspace) and a server's `${workspace}` expanded.
 */
export function unsandboxedCommands(config: Pick<FenceConfig, 'tools' | 'mcpServers' | 'hooks'>, workspace: string, home: string = homedir()): UnsandboxedCommand[] {
  const commands: UnsandboxedCommand[] = [];
  for (const tool of Object.values(config.tools)) {
    if (tool.sandbox !== false) continue;
    const cwd = tool.cwd === undefined ? workspace : resolve(workspace, expandHome(tool.cwd, home));
    commands.push({ words: tool.command, cwd });
  }
  for (const server of Object.values(config.mcpServers)) {
    if (server.sandbox !== false || !('command' in server)) continue;
    // The workspace given as the folder a server works on (`${workspace}`) is not code it runs; a path below it is.
    const args = (server.args ?? []).filter((arg) => arg !== WORKSPACE_WORD).map((arg) => arg.split(WORKSPACE_WORD).join(workspace));
    commands.push({ words: [server.command, ...args], cwd: server.cwd === undefined ? workspace : resolve(workspace, expandHome(server.cwd, home)) });
  }
  for (const hook of config.hooks ?? []) {
    if (hook.sandbox === false) commands.push({ words: hook.command, cwd: workspace });
  }
  return commands;
}

/** `~` and `~/…` in the home folder; anything else as it is. */
function expandHome(path: string, home: string): string {
  return path === '~' ? home : path.startsWith('~/') ? join(home, path.slice(2)) : path;
}

/**
 * Programs that run a package, taking it from the folder they run in first, and what each reads
 * there: the installed packages, the project's own package, and its package manager's settings
 * (which can name code to load, such as npm's `node-options`).
 */
const PACKAGE_RUNNERS: readonly { words: readonly string[]; reads: readonly string[] }[] = [
  { words: ['npx'], reads: ['node_modules', 'package.json', '.npmrc'] },
  { words: ['npm', 'exec'], reads: ['node_modules', 'package.json', '.npmrc'] },
  { words: ['npm', 'x'], reads: ['node_modules', 'package.json', '.npmrc'] },
  { words: ['pnpm', 'dlx'], reads: ['node_modules', 'package.json', '.npmrc', '.pnpmfile.cjs'] },
  { words: ['pnpm', 'exec'], reads: ['node_modules', 'package.json', '.npmrc', '.pnpmfile.cjs'] },
  { words: ['yarn', 'dlx'], reads: ['node_modules', 'package.json', '.npmrc', '.yarnrc', '.yarnrc.yml'] },
  { words: ['bunx'], reads: ['node_modules', 'package.json', '.npmrc', 'bunfig.toml'] },
  { words: ['bun', 'x'], reads: ['node_modules', 'package.json', '.npmrc', 'bunfig.toml'] },
];

/**
 * The paths inside a writable root (`writable`, absolute) that the `commands` run outside the
 * sandbox would run as code, so that the session keeps them read-only: a program or an
 * argument that names a path there (`./deploy.sh`, `scripts/serve.py`, `--config=tools/x.js`;
 * an argument when it exists, or holds a `/` and is neither a URL nor an npm scope), the folder holding it unless that folder is
 * a writable root itself, the folder the command runs in when it lies inside a writable root
 * but is not one, and, for a package runner (`npx`, `npm exec`, `pnpm dlx`, `yarn dlx`, `bunx`)
 * run inside a writable root, that folder's `node_modules`, `package.json`, `.npmrc` and its own
 * package manager's settings, which it would run from before any registry (held whether they
 * exist or not: a package the model installed there later would run too). A program named without a `/` is
 * looked up on the `PATH` and names nothing here. Never throws.
 */
export function unsandboxedCodePaths(commands: readonly UnsandboxedCommand[], writable: readonly string[]): string[] {
  const roots = [...new Set(writable.flatMap((root) => [resolve(root), realPathOf(resolve(root))]))];
  const inRoot = (path: string) => roots.some((root) => isWithin(path, root) || isWithin(realPathOf(path), root));
  const isRoot = (path: string) => roots.includes(path) || roots.includes(realPathOf(path));
  const found = new Set<string>();
  const protect = (path: string, withFolder: boolean) => {
    if (!inRoot(path)) return;
    found.add(path);
    const folder = dirname(path);
    if (withFolder && !isRoot(folder) && inRoot(folder)) found.add(folder);
  };
  for (const { words, cwd } of commands) {
    const [program = '', ...args] = words;
    if (inRoot(cwd) && !isRoot(cwd)) found.add(cwd);
    if (program.includes('/')) protect(resolve(cwd, program), true);
    for (const arg of args) {
      for (const candidate of arg.includes('=') ? [arg, arg.slice(arg.indexOf('=') + 1)] : [arg]) {
        if (candidate === '' || candidate.startsWith('-')) continue;
        const path = resolve(cwd, candidate);
        if (looksLikePath(candidate) || existsSync(path)) protect(path, true);
      }
    }
    if (inRoot(cwd)) for (const name of packageRunnerReads(words)) found.add(join(cwd, name));
  }
  return [...found].sort();
}

/** `./x`, `/x`, `tools/x.py`; not `https://…`, `@scope/package` or a bare word. */
function looksLikePath(word: string): boolean {
  return word.includes('/') && !word.includes(':') && !word.startsWith('@');
}

/** What the package runner `words` starts would read from its folder; none for another program. */
function packageRunnerReads(words: readonly string[]): readonly string[] {
  const program = basename(words[0] ?? '');
  const runner = PACKAGE_RUNNERS.find(({ words: [name, sub] }) => name === program && (sub === undefined || words.slice(1).includes(sub)));
  return runner?.reads ?? [];
}
