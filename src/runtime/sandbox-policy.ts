import { realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/**
 * What the processes a session starts, and the file tools, may touch: the OS sandbox's rules
 * as data, with every path absolute. `pathAccess` answers for one path; `os-sandbox.ts` turns
 * the same rules into mounts.
 */

/** `workspace-write` (the default), `read-only`, or `off`. */
export type SandboxMode = 'workspace-write' | 'read-only' | 'off';

export const SANDBOX_MODES: readonly SandboxMode[] = ['workspace-write', 'read-only', 'off'];

/** The rules of one session's sandbox. */
export interface SandboxPolicy {
  mode: SandboxMode;
  workspace: string;
  /**
   * Where writes are allowed: in `workspace-write` the workspace and the paths the user's
   * configuration adds; in `read-only`, none (the sandbox's own temporary folder aside).
   */
  writable: string[];
  /** Neither read nor written, in any mode but `off`. */
  denied: string[];
  /** Inside a denied path, yet readable (the running session's saved tool outputs). */
  readable: string[];
  /** Read-only even inside a writable path: fence's configuration and git's hooks and config. */
  protected: string[];
  /** `false`: no network; `true`: all of it; a list: only these hosts (through fence's proxy). */
  network: boolean | string[];
}

/** What a path allows: writing (and reading), reading only, or nothing. */
export type PathAccess = 'write' | 'read' | 'none';

/**
 * Paths denied by default, relative to the home folder: keys, cloud credentials, tokens.
 * fence's own data and configuration folders are added by `defaultDenied`.
 */
export const DENIED_IN_HOME: readonly string[] = ['.ssh', '.aws', '.gnupg', '.config/gcloud', '.netrc', '.docker/config.json'];

/** Paths of a workspace that stay read-only: what would give the model tools, approvals, or code run later outside. */
export const PROTECTED_IN_WORKSPACE: readonly string[] = ['fence.toml', '.fence', '.git/hooks', '.git/config'];

/**
 * The protected paths of `workspace`. Without a `.git` folder, `.git` itself is protected: a
 * repository created inside the sandbox would have hooks and a config the sandbox did not
 * guard, which git would run later, outside it.
 */
export function protectedPaths(workspace: string, gitExists: boolean): string[] {
  const names = gitExists ? PROTECTED_IN_WORKSPACE : PROTECTED_IN_WORKSPACE.filter((name) => !name.startsWith('.git/')).concat('.git');
  return names.map((name) => join(workspace, name));
}

/**
 * The protected paths of `workspace` as it is now: with a `.git` folder, its hooks and config;
 * with a `.git` file (a worktree or submodule, pointing at a git folder elsewhere), that file,
 * which could otherwise be pointed at hooks the model wrote; with neither, `.git` itself.
 */
export function workspaceProtectedPaths(workspace: string): string[] {
  let gitFolder = false;
  try {
    gitFolder = statSync(join(workspace, '.git')).isDirectory();
  } catch {
    // No .git: protected whole, as a .git file is.
  }
  return protectedPaths(workspace, gitFolder);
}

/** Whether `path` is `root` or inside it (both absolute and normalised). */
export function isWithin(path: string, root: string): boolean {
  const inside = relative(root, path);
  return inside === '' || (inside !== '..' && !inside.startsWith(`..${sep}`) && !isAbsolute(inside));
}

/**
 * What `policy` allows at `absolute`, by its path as written (no link followed): a readable
 * exception first, then denied, then protected, then writable. With the sandbox off, all.
 */
export function lexicalAccess(policy: SandboxPolicy, absolute: string): PathAccess {
  if (policy.mode === 'off') return 'write';
  const path = resolve(absolute);
  if (policy.readable.some((root) => isWithin(path, root))) return 'read';
  if (policy.denied.some((root) => isWithin(path, root))) return 'none';
  if (policy.protected.some((root) => isWithin(path, root))) return 'read';
  if (policy.mode === 'workspace-write' && policy.writable.some((root) => isWithin(path, root))) return 'write';
  return 'read';
}

const RANK: Record<PathAccess, number> = { none: 0, read: 1, write: 2 };

/**
 * What `policy` allows at `absolute`, judged both by the path as written and by where its
 * links lead (the stricter wins): a link in the workspace to `~/.ssh/id_ed25519` reads as
 * denied, one to `~/.bashrc` as read-only. A path that does not exist yet is judged by the
 * real path of its nearest existing folder, so a new file under a linked folder counts as
 * where the link leads.
 */
export function pathAccess(policy: SandboxPolicy, absolute: string): PathAccess {
  const written = lexicalAccess(policy, absolute);
  if (policy.mode === 'off' || written === 'none') return written;
  const real = lexicalAccess(policy, realPathOf(resolve(absolute)));
  return RANK[real] < RANK[written] ? real : written;
}

/** The real path of `path`, or of its nearest existing ancestor with the rest appended. */
export function realPathOf(path: string): string {
  const rest: string[] = [];
  let current = path;
  for (;;) {
    try {
      return join(realpathSync(current), ...rest.reverse());
    } catch {
      const parent = dirname(current);
      if (parent === current) return path;
      rest.push(current.slice(parent.length).replace(/^[/\\]+/, ''));
      current = parent;
    }
  }
}

/**
 * Why a write to `shown` is refused, for the model; undefined when it is allowed. Names the
 * rule, so the model can write elsewhere instead of retrying.
 */
export function writeRefusal(policy: SandboxPolicy, absolute: string, shown: string): string | undefined {
  const access = pathAccess(policy, absolute);
  if (access === 'write') return undefined;
  const real = realPathOf(resolve(absolute));
  const where = real !== resolve(absolute) ? ` (it leads to ${real})` : '';
  if (access === 'none') return `${shown}${where} is denied by the sandbox: it can be neither read nor written.`;
  if (policy.protected.some((root) => isWithin(resolve(absolute), root) || isWithin(real, root))) {
    return `${shown}${where} is protected by the sandbox: fence's configuration, .fence/ and git's hooks and config stay read-only. Change them yourself outside fence if they must change.`;
  }
  if (policy.mode === 'read-only') return `${shown}${where} cannot be written: the sandbox is read-only in this session.`;
  return `${shown}${where} is outside the folders the sandbox lets this session write (the workspace${policy.writable.length > 1 ? ' and [sandbox] writable' : ''}). Write inside the workspace instead.`;
}

/** Why reading `shown` is refused, for the model; undefined when it is allowed. */
export function readRefusal(policy: SandboxPolicy, absolute: string, shown: string): string | undefined {
  if (pathAccess(policy, absolute) !== 'none') return undefined;
  const real = realPathOf(resolve(absolute));
  const where = real !== resolve(absolute) ? ` (it leads to ${real})` : '';
  return `${shown}${where} is denied by the sandbox (keys, credentials and fence's own data are not readable in a session).`;
}
