import { existsSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { findEnclosingRepository, type EnclosingRepository, type EnclosingRepositoryOptions } from './enclosing-repository';
import { findGitFolders, gitFoldersInside, hooksPathOf, type FoundGitFolders, type GitFolder } from './git-folders';

/**
 * Every git folder a session's sandbox guards, found once when the session starts: those of
 * the workspace at any depth (`findGitFolders`) and those of the repository holding it when
 * they lie outside it (a package of a monorepo, a worktree, a submodule: see
 * `enclosing-repository.ts`). The policy's protected paths and the git guard's record are
 * both made from it.
 */

/** What git the workspace has. Plain data. */
export interface WorkspaceGit {
  /** The git folders of the workspace, then those of `repository` outside it with their submodules' and worktrees'. */
  found: FoundGitFolders;
  /** The repository holding the workspace, when git finds one from it. */
  repository?: EnclosingRepository;
  /**
   * The git folders outside the workspace that the git guard records and sweeps with it: the
   * repository's, when the sandbox makes them writable or a writable path of the user's holds them.
   */
  guarded: string[];
}

/** Options of `surveyWorkspaceGit`: where the walk up stops, and the writable paths the user added. */
export interface WorkspaceGitOptions extends EnclosingRepositoryOptions {
  writable?: readonly string[];
}

/**
 * The git of `workspace` (absolute, normalised): one walk of the workspace and one walk up
 * from it. The folders of the repository outside the workspace are listed in `found.folders`
 * whether or not they are writable, so that their hooks and config are protected wherever a
 * writable path holds them.
 */
export function surveyWorkspaceGit(workspace: string, options: WorkspaceGitOptions = {}): WorkspaceGit {
  const found = findGitFolders(workspace);
  const repository = findEnclosingRepository(workspace, options);
  if (repository === undefined || repository.gitFolders.length === 0) return { found, ...(repository ? { repository } : {}), guarded: [] };
  const seen = new Set(found.folders.map((folder) => folder.path));
  const outside = gitFoldersOf(repository.gitFolders, repository.gitDir).filter((folder) => !seen.has(folder.path));
  const writableHere = repository.access.writable || repository.gitFolders.some((folder) => (options.writable ?? []).some((root) => within(folder, root)));
  return {
    found: { ...found, folders: [...found.folders, ...outside] },
    repository,
    guarded: writableHere ? repository.gitFolders : [],
  };
}

/**
 * The git folders `roots` (outside the workspace), each with the submodules' and worktrees'
 * folders inside it. `gitDir` is the repository's own git folder, a worktree's when it is one.
 */
export function gitFoldersOf(roots: readonly string[], gitDir?: string): GitFolder[] {
  const folders: GitFolder[] = [];
  const seen = new Set<string>();
  const add = (path: string, kind: GitFolder['kind']) => {
    if (seen.has(path)) return;
    seen.add(path);
    folders.push({ path, kind });
    gitFoldersInside(path, add);
  };
  for (const root of roots) add(root, root === gitDir && basename(dirname(root)) === 'worktrees' ? 'worktree' : basename(root) === '.git' ? 'dot-git' : 'gitdir-target');
  return folders;
}

/**
 * The paths of every git folder of `git` that git reads executable configuration from: its
 * hooks (an empty placeholder when missing, but in a worktree's folder, which takes them from
 * the common folder), its config, `commondir` and `config.worktree` when they exist, and the
 * folder its config names in `core.hooksPath` when that is not the git folder's own and does
 * not hold the whole workspace (`core.hooksPath = .githooks`: hooks kept in the work tree run
 * on the person's commit); then every `.git` file. A relative `core.hooksPath` counts from
 * each work tree the folder serves: for the repository holding the workspace, its root too.
 */
export function gitProtectedPaths(workspace: string, git: WorkspaceGit): string[] {
  const { found, repository } = git;
  const workTrees = new Map<string, string[]>();
  const serves = (folder: string, workTree: string) => workTrees.set(folder, [...(workTrees.get(folder) ?? []), workTree]);
  for (const file of found.gitFiles) if (file.target !== undefined) serves(file.target, dirname(file.path));
  if (repository) {
    serves(repository.gitDir, repository.root);
    serves(repository.commonDir, repository.root);
  }
  const paths = found.folders.flatMap((folder) => {
    const own = folder.kind === 'worktree' ? [] : [join(folder.path, 'hooks')];
    const present = ['config', ...GIT_REDIRECTS].map((name) => join(folder.path, name)).filter((path) => existsSync(path));
    const fallback = folder.kind === 'bare' ? folder.path : folder.kind === 'dot-git' ? dirname(folder.path) : folder.path;
    const trees = folder.kind === 'worktree' ? [] : [...new Set([...(workTrees.get(folder.path) ?? []), ...(folder.kind === 'dot-git' || !workTrees.has(folder.path) ? [fallback] : [])])];
    const named = trees.flatMap((tree) => {
      const hooksPath = hooksPathOf(folder.path, tree);
      // A hooks path that holds the whole workspace would make all of it read-only: left to the person.
      return hooksPath === undefined || within(workspace, hooksPath) ? [] : [hooksPath];
    });
    return [...own, ...present, ...named];
  });
  return [...new Set([...paths, ...found.gitFiles.map((file) => file.path)])];
}

/**
 * The git folders of `git` that the git guard records and watches: those in `workspace`, and
 * those of the repository holding it that lie in `git.guarded` (writable); not a read-only
 * repository's, where nothing of the sandbox's can appear.
 */
export function guardedGitFolders(workspace: string, git: WorkspaceGit): GitFolder[] {
  return git.found.folders.filter((folder) => within(folder.path, workspace) || git.guarded.some((root) => within(folder.path, root)));
}

/** What a git folder may hold that points git at config or hooks elsewhere. */
export const GIT_REDIRECTS: readonly string[] = ['commondir', 'config.worktree'];

function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}
