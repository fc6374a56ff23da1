import { describe, expect, it } from 'vitest';
import { offPolicy } from '../../src/os-sandbox/os-sandbox';
import { sandboxNotes } from '../../src/tools/sandbox-notes';

const workspaceWrite = { ...offPolicy('/w'), mode: 'workspace-write' as const, network: false as const };

describe('sandboxNotes', () => {
  it('explains a write the sandbox refused, from bash and from Python, once', () => {
    expect(sandboxNotes('bash: /home/me/x: Read-only file system', workspaceWrite)).toEqual([expect.stringContaining('write only inside the workspace and /tmp')]);
    expect(sandboxNotes("bash: fence.toml: Is a directory", workspaceWrite)).toHaveLength(1);
    expect(sandboxNotes("IsADirectoryError: [Errno 21] Is a directory: 'fence.toml'", workspaceWrite)).toHaveLength(1);
    expect(sandboxNotes("OSError: [Errno 30] Read-only file system: '/etc/x'", { ...workspaceWrite, mode: 'read-only' })).toEqual([expect.stringContaining('read-only sandbox')]);
  });

  it("explains npm's refused write, worded its own way", () => {
    const npm = "npm error code EROFS\nnpm error rofs EROFS: read-only file system, mkdir '/home/me/.npm/_cacache'";
    expect(sandboxNotes(npm, workspaceWrite)).toEqual([expect.stringContaining('write only inside the workspace and /tmp')]);
  });

  it('says why git init is refused where the workspace has no repository, instead of "write inside the workspace"', () => {
    const noRepository = { ...workspaceWrite, protected: ['/w/fence.toml', '/w/.fence', '/w/.git'] };
    const gitInit = "fatal: cannot copy '/usr/share/git-core/templates/description' to '/w/.git/description': Read-only file system";
    expect(sandboxNotes(gitInit, noRepository)).toEqual([expect.stringContaining('Ask the user to run git init')]);
    // With a repository, a refused write under .git is its hooks or config: git's own note (see git-refusal-notes.test.ts).
    const withRepository = { ...workspaceWrite, protected: ['/w/fence.toml', '/w/.fence', '/w/.git/hooks', '/w/.git/config'] };
    expect(sandboxNotes("bash: .git/hooks/pre-commit: Read-only file system", withRepository)).toEqual([expect.stringContaining("git's hooks and configuration stay read-only")]);
  });

  it('explains a missing network, and names the hosts of an allow-list', () => {
    expect(sandboxNotes('curl: (6) Could not resolve host: example.com', workspaceWrite)).toEqual([expect.stringContaining('no network')]);
    expect(sandboxNotes('curl: (56) CONNECT tunnel failed, response 403', { ...workspaceWrite, network: ['pypi.org'] })).toEqual([expect.stringContaining('only pypi.org')]);
    expect(sandboxNotes('getaddrinfo ENOTFOUND example.com', { ...workspaceWrite, network: true })).toEqual([expect.stringContaining('only through a proxy (HTTP_PROXY)')]);
  });

  it('says nothing for other failures, or when the sandbox is off', () => {
    expect(sandboxNotes('make: *** [all] Error 1', workspaceWrite)).toEqual([]);
    expect(sandboxNotes('cat: notes.txt: Is a directory', workspaceWrite)).toEqual([]);
    expect(sandboxNotes('bash: /x: Read-only file system', offPolicy('/w'))).toEqual([]);
    expect(sandboxNotes('make: *** [all] Error 1', { ...workspaceWrite, network: true })).toEqual([]);
    expect(sandboxNotes('Read-only file system', undefined)).toEqual([]);
  });
});
