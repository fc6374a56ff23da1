import type { SandboxPolicy } from '../os-sandbox/policy';

/**
 * The note for a command that git, or a command on git's files, failed in the way the sandbox
 * makes it fail: a write to a git folder's hooks or config (read-only in every git folder), or
 * to the git folder of a repository the sandbox keeps read-only. Told apart from a write
 * outside the workspace, whose note says to write inside it, which would not help here.
 */

/** A path of git's executable configuration: `hooks/…`, `config`, `config.worktree` or `commondir` of a `.git` folder, a submodule's or a worktree's. */
const GIT_SETTING = String.raw`\.git\/(?:(?:modules|worktrees)\/[^\s'"\x60]+\/)?(?:hooks(?:\/[^\s'"\x60]*)?|config|config\.worktree|commondir)(?![\w.-])`;
/** How a refused write is worded: bash, coreutils, Python, Node (`EROFS`), and git's rename onto a mount point. */
const REFUSED = String.raw`(?:[Rr]ead-only file system|\bEROFS\b|Device or resource busy)`;
const GIT_SETTING_REFUSED = new RegExp(`${GIT_SETTING}.*${REFUSED}|${REFUSED}.*${GIT_SETTING}`, 'm');
/** Any path in a `.git` folder (or a `.git` file) refused. */
const GIT_PATH_REFUSED = new RegExp(String.raw`\.git\b.*${REFUSED}|${REFUSED}.*\.git\b`, 'm');

/**
 * The note for `output` when git's files were refused in it, or undefined: its hooks and
 * config are protected (commits still work); or the repository holding the workspace has a
 * git folder the sandbox keeps read-only, and why; or, when git works here, that a `.git` in
 * the workspace (a new repository) is for the user to make.
 */
export function gitRefusalNote(output: string, policy: SandboxPolicy): string | undefined {
  if (GIT_SETTING_REFUSED.test(output)) {
    return "Note: git's hooks and configuration stay read-only in the sandbox (hooks/, config, commondir and config.worktree of every git folder, and the folder core.hooksPath names), so that nothing written here runs when the user runs git later. Commits, branches and the index work. For one command, git -c key=value sets a value; to change it for good, tell the user what to change.";
  }
  const repository = policy.git?.repository;
  if (repository === undefined || !GIT_PATH_REFUSED.test(output)) return undefined;
  if (!repository.access.writable) {
    return `Note: the git repository holding the workspace (${repository.root}) keeps its git folder outside the workspace, and the sandbox leaves it read-only: ${repository.access.reason}. git status, log and diff work here; git add and commit are for the user, outside fence.`;
  }
  // git keeps its folder in the workspace: nothing to add to the general note.
  if (repository.gitFolders.length === 0) return undefined;
  return `Note: the workspace belongs to the git repository at ${repository.root}, and git's data there (objects, refs, the index) is writable, so git add and commit work; its hooks and config, and the workspace's own .git, stay read-only. A repository of the workspace's own (git init) is for the user to make, outside fence.`;
}
