import { readlinkSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { CREDENTIAL_STORES } from './credential-stores';
import { gitProtectedPaths, surveyWorkspaceGit, type WorkspaceGit } from './workspace-git';
import { isPresent } from './path-kinds';

/**
 * What the processes a session starts, and the file tools, may touch: the OS sandbox's rules
 * as data, with every path absolute and normalised (as `resolve` gives it). `pathAccess`
 * answers for one path; `os-sandbox.ts` turns the same rules into mounts.
 */

/** `workspace-write` (the default), `read-only`, or `off`. */
export type SandboxMode = 'workspace-write' | 'read-only' | 'off';

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
  /**
   * Readable and never written, inside a denied or writable path alike: the running session's
   * saved tool outputs, the user's skill folders.
   */
  readable: string[];
  /** Read-only even inside a writable path: fence's configuration and git's hooks and config. */
  protected: string[];
  /** `false`: no network; `true`: all of it; a list: only these hosts (through fence's proxy). */
  network: boolean | string[];
  /**
   * The host's folders that the sandbox's processes see a fresh one of instead (`/tmp`, `/run`,
   * `/proc` under bubblewrap): the file tools, which run in fence's own process, refuse them as
   * well, but for the policy's own paths inside them (a workspace under `/tmp`). Absent: none.
   */
  replaced?: string[];
  /**
   * The host folder that is the sandbox's own `/tmp`: a file tool given a path under `/tmp`
   * reads and writes it there, as the shell would (see `inSandboxTmp`). Absent: none.
   */
  privateTmp?: string;
  /**
   * The empty folders the sandbox made on the host to hold the place of protected paths that
   * did not exist (`fence.toml`, `.fence`, `.git`), removed when the session ends: set by the
   * sandbox once made (see `bubblewrapSandbox`), for the file tools to leave out. Read-only.
   */
  placeholders?: readonly string[];
  /**
   * The git folders found when the policy was made (see `surveyWorkspaceGit`): the git guard
   * records them instead of walking the workspace again, and the repository holding the
   * workspace is named by `fence sandbox check`. Absent: surveyed when needed.
   */
  git?: WorkspaceGit;
}

/** What a path allows: writing (and reading), reading only, or nothing. */
export type PathAccess = 'write' | 'read' | 'none';

/**
 * Paths denied by default, relative to the home folder: the credential stores of
 * `credential-stores.ts` (keys, tokens, cloud credentials, other agents' folders, browser
 * profiles, shell histories, and all of `~/.docker`, whose Docker Desktop socket would start a
 * container with the host's files). fence's own data and configuration folders are added by
 * `sessionPolicy`.
 */
export const DENIED_IN_HOME: readonly string[] = CREDENTIAL_STORES.map((store) => store.path);

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
 * which could otherwise be pointed at hooks the model wrote; with neither, `.git` itself. Then
 * every other git folder of `git` (see `surveyWorkspaceGit`: nested repositories, submodules'
 * and worktrees' folders, `gitdir:` targets, bare-looking folders, and the git folders of the
 * repository holding the workspace) gets the same: its hooks (an empty placeholder when
 * missing) and its config, its `commondir` and `config.worktree` when they exist, the folder
 * its `core.hooksPath` names, and each `.git` file (see `gitProtectedPaths`). What the walk
 * cannot see, or what appears during the session, is for the git guard's sweep
 * (`git-guard.ts`). Without `git`, the workspace is surveyed now.
 */
export function workspaceProtectedPaths(workspace: string, git: WorkspaceGit = surveyWorkspaceGit(workspace)): string[] {
  let gitFolder = false;
  try {
    gitFolder = statSync(join(workspace, '.git')).isDirectory();
  } catch {
    // No .git: protected whole, as a .git file is.
  }
  return [...new Set([...protectedPaths(workspace, gitFolder), ...gitProtectedPaths(workspace, git)])];
}

/**
 * Whether `path` is `root` or inside it (both absolute and normalised, as `resolve` gives
 * them). A comparison of strings, no more: walks ask it for every file and every path of the
 * policy.
 */
export function isWithin(path: string, root: string): boolean {
  if (!path.startsWith(root)) return false;
  return path.length === root.length || path[root.length] === sep || root.endsWith(sep);
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
  if (policy.privateTmp !== undefined && isWithin(path, policy.privateTmp)) return 'write';
  if (isReplaced(policy, path)) return 'none';
  if (policy.protected.some((root) => isWithin(path, root))) return 'read';
  if (policy.mode === 'workspace-write' && policy.writable.some((root) => isWithin(path, root))) return 'write';
  return 'read';
}

/**
 * Whether `path` (absolute, normalised) lies in one of the host's folders the sandbox replaces
 * (see `SandboxPolicy.replaced`), outside the workspace and the writable and readable paths.
 */
export function isReplaced(policy: SandboxPolicy, path: string): boolean {
  if (!policy.replaced?.some((root) => isWithin(path, root))) return false;
  return ![policy.workspace, ...policy.writable, ...policy.readable].some((root) => isWithin(path, root));
}

/**
 * Where a file tool finds `absolute` (absolute, normalised): a path under `/tmp` that is not
 * one of the policy's own (the workspace, a writable or readable path) is the same path in the
 * sandbox's own `/tmp`, when the policy has one (`privateTmp`); any other path is itself.
 */
export function inSandboxTmp(policy: SandboxPolicy, absolute: string): string {
  if (policy.privateTmp === undefined || !isWithin(absolute, '/tmp') || isWithin(absolute, policy.privateTmp)) return absolute;
  if ([policy.workspace, ...policy.writable, ...policy.readable].some((root) => isWithin(absolute, root))) return absolute;
  return join(policy.privateTmp, absolute.slice('/tmp'.length));
}

const RANK: Record<PathAccess, number> = { none: 0, read: 1, write: 2 };

/** The stricter of two accesses. */
function stricterAccess(a: PathAccess, b: PathAccess): PathAccess {
  return RANK[a] <= RANK[b] ? a : b;
}

/**
 * What `policy` allows at `absolute`, judged both by the path as written and by where its
 * links lead (the stricter wins): a link in the workspace to `~/.ssh/id_ed25519` reads as
 * denied, one to `~/.bashrc` as read-only. A path that does not exist yet is judged by the
 * real path of its nearest existing folder, so a new file under a linked folder counts as
 * where the link leads, and a dangling link as where it points. The policy's own paths count
 * both as written and as their real paths (see `withRealPaths`), so a denied `~/.ssh` that is
 * itself a link, or a workspace behind a linked `/home`, is still recognised.
 */
export function pathAccess(policy: SandboxPolicy, absolute: string): PathAccess {
  if (policy.mode === 'off') return 'write';
  const resolved = withRealPaths(policy);
  const written = lexicalAccess(resolved, absolute);
  if (written === 'none') return written;
  return stricterAccess(written, lexicalAccess(resolved, realPathOf(resolve(absolute))));
}

/**
 * `policy` with each of its paths (writable, denied, readable, protected) listed both as
 * written and as its real path, when they differ: what a real path is to be judged against.
 * Reads the file system (see `realPathFinder`: about one `lstat` per path, the folders they
 * share resolved once); a walk over many files makes it once.
 */
export function withRealPaths(policy: SandboxPolicy): SandboxPolicy {
  const realOf = realPathFinder();
  const both = (paths: readonly string[]) => pathsBothWays(paths, realOf);
  return { ...policy, writable: both(policy.writable), denied: both(policy.denied), readable: both(policy.readable), protected: both(policy.protected) };
}

/**
 * Each of `paths` as written (resolved) and as its real path, once each: a missing path's real
 * path is its real parent's with its name, each parent looked up once (one `lstat` a path,
 * not a `realpath` walk for each of a hundred credential stores in one folder).
 */
export function pathsBothWays(paths: readonly string[], realOf: (path: string) => string = realPathFinder()): string[] {
  return [...new Set(paths.flatMap((path) => [resolve(path), realOf(resolve(path))]))];
}

/**
 * `realPathOf` for many paths at once: a path that does not exist (not even as a dangling
 * link) is its folder's real path with its name appended, and each folder is resolved once.
 * The denied paths are many (every credential store of the home folder), most of them absent
 * and sharing a few folders, and a file tool judges each path against all of them.
 */
function realPathFinder(): (path: string) => string {
  const known = new Map<string, string>();
  const realOf = (path: string): string => {
    const found = known.get(path);
    if (found !== undefined) return found;
    const parent = dirname(path);
    const real = parent === path || isPresent(path) ? realPathOf(path) : join(realOf(parent), basename(path));
    known.set(path, real);
    return real;
  };
  return realOf;
}

/** Links followed for one path before giving up, as the kernel's own limit (ELOOP). */
const MAX_LINK_HOPS = 40;

/**
 * The real path of `path` (absolute): every link on it resolved. For a path that does not
 * exist, the real path of its nearest existing ancestor with the rest appended; a dangling
 * link on the way is followed to where it points, as writing through it would (a new file
 * created through a link to `/elsewhere/new.txt` lands there). Never throws.
 */
export function realPathOf(path: string): string {
  let pending = resolve(path);
  for (let hops = 0; hops <= MAX_LINK_HOPS; hops += 1) {
    const rest: string[] = [];
    let current = pending;
    for (;;) {
      const real = tryRealPath(current);
      if (real !== undefined) return join(real, ...rest.reverse());
      const target = tryReadLink(current);
      if (target !== undefined) {
        // A link whose target is missing: go on from its target, read against the link's real folder as the kernel does.
        const folder = dirname(current);
        pending = join(resolve(tryRealPath(folder) ?? folder, target), ...rest.reverse());
        break;
      }
      const parent = dirname(current);
      if (parent === current) return pending;
      rest.push(basename(current));
      current = parent;
    }
  }
  return pending;
}

function tryRealPath(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

function tryReadLink(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

/** Most extra writable paths a refusal names; the others are counted. */
const NAMED_WRITABLE = 3;

/**
 * Why a write to `shown` is refused, for the model; undefined when it is allowed. Names the
 * rule and what to do instead, so the model does not retry the same write another way.
 */
export function writeRefusal(policy: SandboxPolicy, absolute: string, shown: string): string | undefined {
  const access = pathAccess(policy, absolute);
  if (access === 'write') return undefined;
  const path = resolve(absolute);
  const real = realPathOf(path);
  const named = `${shown}${real !== path ? ` (it leads to ${real})` : ''}`;
  if (access === 'none' && replacedOnly(policy, path, real)) return `${named} cannot be written: ${REPLACED_REASON}`;
  if (access === 'none') return `${named} cannot be read or written: the sandbox denies it (${DENIED_KINDS}). Work without it, or ask the user for what you need.`;
  if (policy.mode === 'read-only') return `${named} cannot be written: the sandbox is read-only in this session, so no file can be changed. Describe the change to the user instead.`;
  const guard = withRealPaths(policy).protected.find((root) => isWithin(path, root) || isWithin(real, root));
  if (guard !== undefined && basename(guard) === '.git') {
    return `${named} cannot be written: the workspace has no git repository, and one made inside the sandbox could run hooks outside it later. Ask the user to create it (git init) outside fence.`;
  }
  if (guard !== undefined && !isFenceOrGitPath(policy.workspace, guard) && !inGitFolder(policy, guard)) {
    return `${named} is protected by the sandbox: it stays read-only in this session, being a start-up file of the shell, git or the desktop, a skill folder, or code that a tool runs outside the sandbox. If it must change, tell the user what to change.`;
  }
  if (guard !== undefined) {
    return `${named} is protected by the sandbox: fence.toml, .fence/ and git's hooks and config stay read-only. If it must change, tell the user what to change.`;
  }
  if (withRealPaths(policy).readable.some((root) => isWithin(path, root) || isWithin(real, root))) {
    return `${named} is read-only in the sandbox: skills and this session's saved outputs can be read, never written. If it must change, tell the user what to change.`;
  }
  return `${named} cannot be written: the sandbox lets this session write only in ${writableNames(policy)}. Write there instead.`;
}

/** Whether the protected path `guard` lies in a git folder the policy's survey found (a nested repository's, the repository's above the workspace). */
function inGitFolder(policy: SandboxPolicy, guard: string): boolean {
  return (policy.git?.found.folders ?? []).some((folder) => isWithin(guard, folder.path));
}

/** Whether the protected path `guard` is fence's configuration or git's, in `workspace` (or a submodule's). */
function isFenceOrGitPath(workspace: string, guard: string): boolean {
  const roots = [resolve(workspace), realPathOf(resolve(workspace))];
  return roots.some((root) => ['fence.toml', '.fence', '.git'].some((name) => isWithin(guard, join(root, name))));
}

/** Why reading `shown` is refused, for the model; undefined when it is allowed. */
export function readRefusal(policy: SandboxPolicy, absolute: string, shown: string): string | undefined {
  if (pathAccess(policy, absolute) !== 'none') return undefined;
  const path = resolve(absolute);
  const real = realPathOf(path);
  const named = `${shown}${real !== path ? ` (it leads to ${real})` : ''}`;
  if (replacedOnly(policy, path, real)) return `${named} cannot be read: ${REPLACED_REASON}`;
  return `${named} cannot be read: the sandbox denies it (${DENIED_KINDS}). Work without it, or ask the user for what you need.`;
}

/** Whether a refusal of `path` (leading to `real`) comes from a replaced host folder, not from a denied path. */
function replacedOnly(policy: SandboxPolicy, path: string, real: string): boolean {
  const resolved = withRealPaths(policy);
  const denied = [path, real].some((candidate) => resolved.denied.some((root) => isWithin(candidate, root)));
  return !denied && [path, real].some((candidate) => isReplaced(resolved, candidate));
}

/** Why a path in a replaced host folder is refused, in a refusal. */
const REPLACED_REASON =
  "commands in the sandbox have their own private /tmp, /run and /proc, so the host's are kept from the file tools too. To share a file between the shell and the file tools, put it in the workspace.";

/** What the denied paths are, in a refusal. */
const DENIED_KINDS = "keys, credentials, fence's own data and the paths the user denied stay out of reach";

/** `the workspace`, `the workspace and /data/cache`: where writes go, for a refusal. */
function writableNames(policy: SandboxPolicy): string {
  const workspace = resolve(policy.workspace);
  const others = policy.writable.map((root) => resolve(root)).filter((root) => root !== workspace);
  const names = ['the workspace', ...others.slice(0, NAMED_WRITABLE)];
  if (others.length > NAMED_WRITABLE) names.push(`${others.length - NAMED_WRITABLE} more [sandbox] writable paths`);
  const last = names.pop() as string;
  return names.length === 0 ? last : `${names.join(', ')} and ${last}`;
}
