import { describe, expect, it } from 'vitest';
import { offPolicy } from '../../src/os-sandbox/os-sandbox';
import type { EnclosingRepository } from '../../src/os-sandbox/enclosing-repository';
import type { SandboxPolicy } from '../../src/os-sandbox/policy';
import { sandboxNotes } from '../../src/tools/sandbox-notes';

/** A package of a monorepo at /r/packages/app, its repository's git folder at /r/.git. */
function inMonorepo(access: EnclosingRepository['access']): SandboxPolicy {
  const repository: EnclosingRepository = { root: '/r', gitDir: '/r/.git', commonDir: '/r/.git', gitFolders: ['/r/.git'], access };
  const found = { folders: [], gitFiles: [], truncated: false };
  return { ...offPolicy('/r/packages/app'), mode: 'workspace-write', network: false, protected: ['/r/packages/app/.git', '/r/.git/hooks', '/r/.git/config'], git: { found, repository, guarded: [] } };
}

const GIT_NOTE = "git's hooks and configuration stay read-only in the sandbox";

describe("the note for git's refused files", () => {
  it("says git's hooks and config are protected, in the wordings of bash, git, Python and Node, for any git folder", () => {
    const policy = inMonorepo({ writable: true });
    const outputs = [
      'bash: ../../.git/hooks/pre-commit: Read-only file system',
      'error: could not write config file /r/.git/config: Device or resource busy',
      "OSError: [Errno 30] Read-only file system: '/r/.git/hooks/post-checkout'",
      "Error: EROFS: read-only file system, open '/r/.git/config'",
      'bash: /r/.git/modules/lib/hooks/pre-commit: Read-only file system',
      "cp: cannot create regular file '/r/.git/worktrees/side/commondir': Read-only file system",
    ];
    for (const output of outputs) expect(sandboxNotes(output, policy), output).toEqual([expect.stringContaining(GIT_NOTE)]);
  });

  it('is not given for a write outside the workspace that is not git', () => {
    const notes = sandboxNotes('bash: ../other/index.js: Read-only file system', inMonorepo({ writable: true }));
    expect(notes).toEqual([expect.stringContaining('write only inside the workspace and /tmp')]);
  });

  it('a config.lock or a git folder elsewhere in a path is not git configuration', () => {
    const notes = sandboxNotes('bash: ../../packages/.github/configs/x: Read-only file system', inMonorepo({ writable: true }));
    expect(notes).toEqual([expect.stringContaining('write only inside the workspace and /tmp')]);
  });

  it('names the repository and why its git folder stays read-only, when it does', () => {
    const policy = inMonorepo({ writable: false, reason: 'it holds your home folder' });
    const notes = sandboxNotes("fatal: Unable to create '/r/.git/index.lock': Read-only file system", policy);
    expect(notes).toEqual([expect.stringContaining('the git repository holding the workspace (/r)')]);
    expect(notes[0]).toContain('it holds your home folder');
  });

  it('tells a git init in a package that git already works from there, not that the workspace has no repository', () => {
    const notes = sandboxNotes("fatal: cannot copy '/usr/share/git-core/templates/description' to '/r/packages/app/.git/description': Read-only file system", inMonorepo({ writable: true }));
    expect(notes).toEqual([expect.stringContaining('the workspace belongs to the git repository at /r')]);
  });
});
