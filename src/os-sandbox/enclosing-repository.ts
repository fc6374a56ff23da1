import { spawnSync } from 'node:child_process';
import { lstatSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { isFolder } from './path-kinds';

/**
 * The git repository that holds a workspace, found as git finds it from the workspace: the
 * first folder, from the workspace up, with a `.git` that git accepts (a folder, a link to
 * one, or a `gitdir:` file), its git folder, and the common folder a worktree's `commondir`
 * names. A package of a monorepo, a worktree and a submodule have their git folders outside
 * the workspace; this says which, and whether the sandbox may let git write its data there.
 */

/** The repository holding a workspace. */
export interface EnclosingRepository {
  /** The top of its work tree: the folder holding `.git` (the workspace itself, or a folder above it). */
  root: string;
  /** git's folder for that work tree (`HEAD`, `index`, `logs`), real path. */
  gitDir: string;
  /** Where its objects, refs, config and hooks are: `gitDir`, or where `gitDir/commondir` leads (a worktree's). */
  commonDir: string;
  /**
   * `gitDir` and `commonDir` where they lie outside the workspace, outermost only (a worktree's
   * git folder lies in its common folder's `worktrees/`); empty when git keeps everything in
   * the workspace.
   */
  gitFolders: string[];
  /**
   * Whether the sandbox lets git write its data in `gitFolders` (objects, refs, the index,
   * logs; hooks and config stay read-only), and if not, why not, in a few words.
   */
  access: { writable: true } | { writable: false; reason: string };
}

/** Where the walk up stops, and what git's environment says about it. */
export interface EnclosingRepositoryOptions {
  /** The home folder: the walk does not go above it (from a workspace inside it). */
  home?: string;
  /** `GIT_CEILING_DIRECTORIES` and `GIT_DISCOVERY_ACROSS_FILESYSTEM` are read from it, as git reads them. */
  env?: NodeJS.ProcessEnv;
}

/** A `.git` file larger than this is not a `gitdir:` file git reads. */
const MAX_GITFILE_BYTES = 64 * 1024;

/**
 * The repository holding `workspace`, or undefined when git would find none from it. Walks
 * up from the workspace's real path as git does: a `.git` folder that is not a git folder is
 * passed over, a `.git` file is followed (`gitdir:`, relative to its folder), `commondir` is
 * read; the walk stops at the folders of `GIT_CEILING_DIRECTORIES` (not looked into), at a
 * change of file system unless `GIT_DISCOVERY_ACROSS_FILESYSTEM` is true, at the home
 * folder's parent (for a workspace inside the home folder) and at `/`. Never throws.
 */
export function findEnclosingRepository(workspace: string, options: EnclosingRepositoryOptions = {}): EnclosingRepository | undefined {
  const start = realPath(workspace);
  if (start === undefined) return undefined;
  const env = options.env ?? process.env;
  const home = realPath(options.home ?? homedir()) ?? resolve(options.home ?? homedir());
  const ceilings = ceilingFolders(env);
  // Above the home folder nothing is looked at: a repository there would hold all of the user's files.
  if (isWithin(start, home) && start !== home) ceilings.push(dirname(home));
  const oneFileSystem = !gitBoolean(env.GIT_DISCOVERY_ACROSS_FILESYSTEM);
  const device = deviceOf(start);
  for (let folder = start; ; folder = dirname(folder)) {
    if (folder !== start && ceilings.includes(folder)) return undefined;
    if (oneFileSystem && deviceOf(folder) !== device) return undefined;
    const found = repositoryAt(folder, start, home);
    if (found !== undefined) return found;
    if (dirname(folder) === folder) return undefined;
  }
}

/** The repository whose `.git` is in `folder`, when git would take it; undefined to look further up. */
function repositoryAt(folder: string, workspace: string, home: string): EnclosingRepository | undefined {
  const dotGit = join(folder, '.git');
  const entry = lstatOf(dotGit);
  if (entry === undefined) return undefined;
  if (entry.isFile()) return fromGitFile(folder, dotGit, workspace, home);
  // A folder or a link: git uses it if it leads to a git folder, and passes over it otherwise.
  if (!isGitFolder(dotGit)) return undefined;
  const gitDir = realPath(dotGit) ?? dotGit;
  const how = entry.isSymbolicLink() ? 'link' : 'folder';
  return judged(folder, gitDir, how, dotGit, workspace, home);
}

/** A `.git` file: git stops here, at the folder it names or with an error. */
function fromGitFile(folder: string, dotGit: string, workspace: string, home: string): EnclosingRepository {
  const named = gitdirOfFile(dotGit);
  if (named === undefined) return unusable(folder, dotGit, 'its .git file is not one git reads (gitdir: <folder>)');
  if (!isGitFolder(named)) return unusable(folder, named, 'its .git file names a folder that is not a git folder');
  return judged(folder, realPath(named) ?? named, 'file', dotGit, workspace, home);
}

/** A repository git would stop at but not use: nothing of it is writable. */
function unusable(root: string, gitDir: string, reason: string): EnclosingRepository {
  return { root, gitDir, commonDir: gitDir, gitFolders: [], access: { writable: false, reason } };
}

/**
 * The repository at `root` with its git folder `gitDir` (real path), reached through a `.git`
 * folder, link or file: its common folder, the git folders outside the workspace, and whether
 * git may write its data there. Only layouts git itself makes are trusted, and only a git
 * folder that says it belongs to this work tree when it was reached through a link or a file:
 * a `.git` file in a folder the user did not make could otherwise point the sandbox at another
 * repository of theirs.
 */
function judged(root: string, gitDir: string, how: 'folder' | 'link' | 'file', dotGit: string, workspace: string, home: string): EnclosingRepository {
  const commonDir = commonDirOf(gitDir);
  const outside = [commonDir, gitDir].filter((path) => !isWithin(path, workspace));
  const gitFolders = outside.filter((path, index) => !outside.some((other, at) => at !== index && other !== path && isWithin(path, other)));
  const unique = [...new Set(gitFolders)];
  const repository = (access: EnclosingRepository['access']): EnclosingRepository => ({ root, gitDir, commonDir, gitFolders: unique, access });
  if (unique.length === 0) return repository({ writable: true });
  const refused = refusal(root, gitDir, commonDir, unique, how, dotGit, workspace, home);
  return repository(refused === undefined ? { writable: true } : { writable: false, reason: refused });
}

/** Why the git folders of a repository outside the workspace stay read-only; undefined when they need not. */
function refusal(root: string, gitDir: string, commonDir: string, gitFolders: string[], how: 'folder' | 'link' | 'file', dotGit: string, workspace: string, home: string): string | undefined {
  if (isWithin(home, root)) return root === home ? 'it is your home folder' : 'it holds your home folder';
  if (gitFolders.some((folder) => isWithin(workspace, folder) || isWithin(home, folder))) return 'its git folder holds the workspace or your home folder';
  if (commonDir !== gitDir && !(basename(dirname(gitDir)) === 'worktrees' && dirname(dirname(gitDir)) === commonDir)) {
    return "its commondir leads elsewhere than git's own layout of worktrees";
  }
  if (how === 'folder') return undefined;
  if (namesWorkTree(gitDir, dotGit, root)) return undefined;
  return how === 'link'
    ? 'its .git is a link to a git folder that does not name this folder as its work tree'
    : 'its .git file names a git folder that does not name this folder as its work tree';
}

/**
 * Whether the git folder `gitDir` says that its work tree is `root`, as git writes it for the
 * layouts it makes: a worktree's `gitdir` file names the `.git` file of its work tree; a
 * submodule's config names its work tree in `core.worktree` (as `git init
 * --separate-git-dir` does not: such a repository is trusted once its config says so).
 */
function namesWorkTree(gitDir: string, dotGit: string, root: string): boolean {
  const back = readSmall(join(gitDir, 'gitdir'))?.replace(/[\r\n]+$/, '');
  if (back && realPath(resolve(gitDir, back)) === realPath(dotGit)) return true;
  const workTree = configValue(join(gitDir, 'config'), 'core.worktree');
  return workTree !== undefined && realPath(resolve(gitDir, workTree)) === root;
}

/** The common folder of `gitDir` (real path): where its `commondir` leads, or itself. */
export function commonDirOf(gitDir: string): string {
  const named = readSmall(join(gitDir, 'commondir'))?.replace(/[\r\n]+$/, '');
  if (!named) return gitDir;
  const path = isAbsolute(named) ? named : `${gitDir}/${named}`;
  return realPath(path) ?? resolve(path);
}

/**
 * git's test for a git folder: a `HEAD` that is a link or names a ref or an object, and
 * `objects/` and `refs/` folders in its common folder.
 */
function isGitFolder(path: string): boolean {
  const head = lstatOf(join(path, 'HEAD'));
  if (head === undefined) return false;
  if (!head.isSymbolicLink()) {
    const text = readSmall(join(path, 'HEAD'))?.trim() ?? '';
    if (!text.startsWith('ref:') && !/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(text)) return false;
  }
  const common = commonDirOf(realPath(path) ?? path);
  return isFolder(join(common, 'objects')) && isFolder(join(common, 'refs'));
}

/** The folder a `.git` file names, as git reads one: `gitdir: <path>` and nothing after but line ends. */
function gitdirOfFile(file: string): string | undefined {
  const text = readSmall(file);
  if (text === undefined || !text.startsWith('gitdir: ')) return undefined;
  const named = text.slice('gitdir: '.length).replace(/[\r\n]+$/, '');
  if (named === '' || named.includes('\n')) return undefined;
  return resolve(dirname(file), named);
}

/** `GIT_CEILING_DIRECTORIES`: absolute folders, by their real paths (an empty entry stops that for those after it). */
function ceilingFolders(env: NodeJS.ProcessEnv): string[] {
  let resolveLinks = true;
  const folders: string[] = [];
  for (const entry of (env.GIT_CEILING_DIRECTORIES ?? '').split(':')) {
    if (entry === '') {
      resolveLinks = false;
      continue;
    }
    if (!isAbsolute(entry)) continue;
    folders.push(resolveLinks ? (realPath(entry) ?? resolve(entry)) : resolve(entry));
  }
  return folders;
}

/** A boolean of git's environment (`1`, `true`, `yes`, `on`). */
function gitBoolean(value: string | undefined): boolean {
  return value !== undefined && /^(?:1|true|yes|on)$/i.test(value.trim());
}

/** A single value of a config file, read by git itself (no includes); undefined when unset. */
function configValue(file: string, key: string): string | undefined {
  const text = readSmall(file);
  if (text === undefined || !text.toLowerCase().includes(key.split('.').at(-1) ?? key)) return undefined;
  const read = spawnSync('git', ['config', '--file', file, '--no-includes', '--get', key], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 });
  const value = read.status === 0 ? read.stdout.replace(/\n$/, '') : '';
  return value === '' ? undefined : value;
}

function readSmall(file: string): string | undefined {
  try {
    if (statSync(file).size > MAX_GITFILE_BYTES) return undefined;
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function realPath(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

function lstatOf(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function deviceOf(path: string): number | undefined {
  try {
    return statSync(path).dev;
  } catch {
    return undefined;
  }
}

/** Whether `path` is `root` or inside it (both absolute and normalised). */
function isWithin(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}
