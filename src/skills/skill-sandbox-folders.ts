import { lstatSync, readdirSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { userSkillRoots, type SkillRootOptions } from './skill-roots';

/**
 * The folders of the user's skills that a session's sandbox mounts readable and read-only at
 * their own paths (as `SandboxPolicy.readable`), so that the model can read a skill and run
 * its scripts but never change one (a skill changed by a model talked into it would be
 * followed by every later session): each of the user's skill folders that exists (see
 * `userSkillRoots`; fence's configuration folder and `~/.claude` are otherwise denied), and
 * the real folder of each one, and of each skill in it, that is reached through a link. A
 * folder is left out when it holds the workspace (a person working on their skills there),
 * or when its real path holds one of `denied` or lies in one (a link into `~/.ssh` is not
 * made readable by being a skill). Reads the file system only where a skill folder exists.
 */
export function readOnlySkillFolders(options: SkillRootOptions & { workspace: string; denied: readonly string[] }): string[] {
  const workspace = resolve(options.workspace);
  const folders: string[] = [];
  // The denied paths as written and as their real paths, found once and only when some skill folder exists.
  let deniedBoth: string[] | undefined;
  const denied = () => (deniedBoth ??= options.denied.flatMap((path) => [resolve(path), tryRealPath(path)]).filter((path): path is string => path !== undefined));
  const add = (path: string, linked: boolean) => {
    const real = tryRealPath(path);
    if (real === undefined || isWithin(workspace, path) || isWithin(workspace, real)) return;
    if (denied().some((store) => isWithin(store, real))) return;
    // A folder found in a denied folder is there on purpose (fence's configuration, ~/.claude); where a link leads is judged alone.
    if (linked && denied().some((store) => isWithin(real, store))) return;
    folders.push(path);
    if (real !== path) folders.push(real);
  };
  for (const root of userSkillRoots(options)) {
    if (tryRealPath(root.folder) === undefined) continue;
    add(root.folder, isLink(root.folder));
    for (const name of listFolder(root.folder)) {
      const skill = join(root.folder, name);
      if (isLink(skill)) add(skill, true);
    }
  }
  return [...new Set(folders)];
}

function tryRealPath(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

function listFolder(folder: string): string[] {
  try {
    return readdirSync(folder);
  } catch {
    return [];
  }
}

function isWithin(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

/**
 * The user's skill folders that do not exist yet but that a path of `writable` would let the
 * model create (`[sandbox] writable = ["~/.agents"]`, a workspace that is the home folder), and
 * that lie in no `denied` path: the sandbox holds their place read-only for the session (as it
 * does a missing protected path, see `SandboxPolicy.protected`), so that no skill can be
 * planted there for a later session to follow.
 */
export function unwrittenSkillFolders(options: SkillRootOptions & { writable: readonly string[]; denied: readonly string[] }): string[] {
  const missing = userSkillRoots(options)
    .map((root) => root.folder)
    .filter((folder) => tryRealPath(folder) === undefined && !isLink(folder));
  if (missing.length === 0) return [];
  const writable = options.writable.flatMap((path) => [resolve(path), tryRealPath(path)]).filter((path): path is string => path !== undefined);
  return missing.filter((folder) => {
    if (options.denied.some((denied) => isWithin(folder, resolve(denied)))) return false;
    const real = nearestRealPath(folder);
    return writable.some((root) => isWithin(folder, root) || isWithin(real, root));
  });
}

/** The real path of `path`, which may not exist: its nearest existing folder's, with the rest appended. */
function nearestRealPath(path: string): string {
  const rest: string[] = [];
  for (let current = resolve(path); ; ) {
    const real = tryRealPath(current);
    if (real !== undefined) return join(real, ...rest.reverse());
    const parent = dirname(current);
    if (parent === current) return resolve(path);
    rest.push(basename(current));
    current = parent;
  }
}
