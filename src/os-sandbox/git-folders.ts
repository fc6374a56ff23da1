import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, realpathSync, type Dirent } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { isFile, isFolder, isPresent } from './path-kinds';

/**
 * Where git would take executable configuration from in a workspace: every git folder at any
 * depth, found by a bounded walk. A git folder is a `.git` folder, the folder a `.git` file
 * points at (`gitdir: …`), a submodule's folder under `.git/modules/**`, a worktree's under
 * `.git/worktrees/*`, or a folder that looks like a bare repository (`HEAD`, `objects/`,
 * `refs/`), which git enters as one when run inside it.
 */

/** One git folder, and how it was found. */
export interface GitFolder {
  /** Absolute path of the git folder itself (the `.git` folder, not the work tree). */
  path: string;
  kind: 'dot-git' | 'module' | 'worktree' | 'gitdir-target' | 'bare';
}

/** What a walk of a workspace found. */
export interface FoundGitFolders {
  folders: GitFolder[];
  /** `.git` files (`gitdir: …` pointers), wherever they point. */
  gitFiles: { path: string; target?: string }[];
  /** The walk stopped at `MAX_WALKED_FOLDERS`: folders past it were not looked at. */
  truncated: boolean;
}

/** Folders of the work tree looked at, at most, per walk (git folders' insides aside). */
export const MAX_WALKED_FOLDERS = 50_000;
/** How deep the walk goes under the workspace. */
const MAX_DEPTH = 24;
/** How deep submodule folders nest under `modules/` (names may hold `/`). */
const MAX_MODULE_DEPTH = 6;

/**
 * Every git folder of `workspace` (absolute, normalised), by a breadth-first walk that never
 * follows a link and never descends into a git folder but for its `modules/` and
 * `worktrees/`. Stops after `maxFolders` folders and says so (`truncated`). Never throws: an
 * unreadable folder is skipped.
 */
export function findGitFolders(workspace: string, maxFolders = MAX_WALKED_FOLDERS): FoundGitFolders {
  const found: FoundGitFolders = { folders: [], gitFiles: [], truncated: false };
  const seen = new Set<string>();
  const add = (path: string, kind: GitFolder['kind']) => {
    if (seen.has(path)) return;
    seen.add(path);
    found.folders.push({ path, kind });
    gitFoldersInside(path, add);
  };
  let level = [workspace];
  let walked = 0;
  for (let depth = 0; level.length > 0 && depth <= MAX_DEPTH; depth += 1) {
    const next: string[] = [];
    for (const folder of level) {
      if (walked >= maxFolders) {
        found.truncated = true;
        return found;
      }
      walked += 1;
      const entries = readEntries(folder);
      if (entries === undefined) continue;
      if (folder !== workspace && looksBare(entries)) {
        add(folder, 'bare');
        continue;
      }
      for (const entry of entries) {
        const path = join(folder, entry.name);
        if (entry.name === '.git') {
          gitEntry(path, entry, workspace, found, add);
          continue;
        }
        if (entry.isDirectory()) next.push(path);
      }
    }
    level = next;
  }
  return found;
}

/** A `.git` entry: a folder is a git folder; a file (or link) points at one. */
function gitEntry(path: string, entry: Dirent, workspace: string, found: FoundGitFolders, add: (path: string, kind: GitFolder['kind']) => void): void {
  if (entry.isDirectory()) {
    // git passes over a `.git` folder without a HEAD (the empty placeholder another session's
    // sandbox holds a workspace's `.git` with, say): not a repository, nothing to protect.
    // Should one become a repository in the session, the guard's sweep judges it as new.
    if (isPresent(join(path, 'HEAD'))) add(path, 'dot-git');
    return;
  }
  const target = entry.isFile() ? gitdirTarget(path) : linkedFolder(path);
  found.gitFiles.push(target === undefined ? { path } : { path, target });
  if (target !== undefined && (target === workspace || target.startsWith(`${workspace}${sep}`)) && isFolder(target)) add(target, 'gitdir-target');
}

/**
 * Hands `add` the submodules' git folders under `modules/` (at any depth, as submodule names
 * may hold `/`) and the worktrees' under `worktrees/` of the git folder `git`.
 */
export function gitFoldersInside(git: string, add: (path: string, kind: GitFolder['kind']) => void): void {
  const modules = (folder: string, depth: number) => {
    if (depth > MAX_MODULE_DEPTH) return;
    for (const entry of readEntries(folder) ?? []) {
      if (!entry.isDirectory()) continue;
      const path = join(folder, entry.name);
      if (isFile(join(path, 'HEAD'))) add(path, 'module');
      else modules(path, depth + 1);
    }
  };
  modules(join(git, 'modules'), 0);
  for (const entry of readEntries(join(git, 'worktrees')) ?? []) {
    if (entry.isDirectory()) add(join(git, 'worktrees', entry.name), 'worktree');
  }
}

/**
 * The folder a git folder's config names in `core.hooksPath`, absolute, or undefined when it
 * names none: git runs the hooks found there instead of the git folder's own `hooks/`. A
 * relative path counts from `workTree` (the folder holding `.git`; for a bare repository, the
 * git folder itself), as git resolves it when it runs a hook. Spawns git only when the config
 * mentions the key at all.
 */
export function hooksPathOf(gitFolder: string, workTree: string): string | undefined {
  const config = join(gitFolder, 'config');
  let text: string;
  try {
    text = readFileSync(config, 'utf8');
  } catch {
    return undefined;
  }
  if (!/hookspath/i.test(text)) return undefined;
  const read = spawnSync('git', ['config', '--file', config, '--no-includes', '--get', 'core.hooksPath'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
    timeout: 10_000,
  });
  const value = read.status === 0 ? read.stdout.replace(/\n$/, '') : '';
  if (value === '') return undefined;
  if (value === '~' || value.startsWith('~/')) return join(homedir(), value.slice(1));
  return isAbsolute(value) ? resolve(value) : resolve(workTree, value);
}

/**
 * The git folder a `.git` file names (`gitdir: <path>`, relative to the file's folder), or
 * undefined when it names none.
 */
export function gitdirTarget(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').slice(0, 4096);
  } catch {
    return undefined;
  }
  const line = /^gitdir: *(.+?) *$/m.exec(text)?.[1];
  return line === undefined ? undefined : resolve(dirname(file), line);
}

/** Where a `.git` link leads, when it leads to a folder. */
function linkedFolder(path: string): string | undefined {
  try {
    return isFolder(path) ? realpathSync(path) : undefined;
  } catch {
    return undefined;
  }
}

/** git's own test for a git folder: `HEAD`, and `objects/` and `refs/` folders. */
function looksBare(entries: Dirent[]): boolean {
  const has = (name: string, folder: boolean) => entries.some((entry) => entry.name === name && (folder ? entry.isDirectory() : entry.isFile()));
  return has('HEAD', false) && has('objects', true) && has('refs', true);
}

function readEntries(folder: string): Dirent[] | undefined {
  try {
    return readdirSync(folder, { withFileTypes: true });
  } catch {
    return undefined;
  }
}

