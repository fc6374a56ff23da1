import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findGitFolders } from '../../src/os-sandbox/git-folders';
import { bubblewrapSandbox, sandboxSupport, type OsSandbox } from '../../src/os-sandbox/os-sandbox';
import { workspaceProtectedPaths, type SandboxPolicy } from '../../src/os-sandbox/policy';
import { surveyWorkspaceGit } from '../../src/os-sandbox/workspace-git';

/**
 * Two sessions at once in two workspaces of one repository (a monorepo's package and the
 * folder holding it, as `examples/finance` and `examples/finance/mcp`): the repository's git
 * folder has no `hooks/`, so the first session makes an empty one to mount over, and removes
 * it when it ends. The second, still running, must go on running commands; and neither takes
 * the other's empty `.git` placeholder for a repository to protect.
 */
const bubblewrapMissing = process.platform !== 'linux' || spawnSync('bwrap', ['--version']).error !== undefined;

describe.skipIf(bubblewrapMissing)('two sessions in one repository', () => {
  let root: string | undefined;
  const open: OsSandbox[] = [];

  afterEach(() => {
    for (const sandbox of open.splice(0)) sandbox.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** A sandbox for `workspace` as a session would have it: the repository's git folder writable, its hooks and config protected. */
  function sessionIn(workspace: string): OsSandbox {
    const support = sandboxSupport();
    if (support.kind !== 'bubblewrap') throw new Error('bwrap is installed but cannot sandbox here');
    const git = surveyWorkspaceGit(workspace, { writable: [workspace] });
    const outside = git.guarded;
    const policy: SandboxPolicy = {
      mode: 'workspace-write',
      workspace,
      writable: [workspace, ...outside],
      denied: [],
      readable: [],
      protected: workspaceProtectedPaths(workspace, git),
      network: false,
      git,
    };
    const sandbox = bubblewrapSandbox(policy, support.path);
    open.push(sandbox);
    return sandbox;
  }

  const run = (sandbox: OsSandbox, cwd: string, script: string) => {
    const line = sandbox.wrap('bash', ['-c', script], { cwd });
    return spawnSync(line.command, line.args, { cwd, encoding: 'utf8', timeout: 30_000 });
  };

  it('keeps running commands in one when the other ends and removes the empty hooks folder it made', () => {
    root = mkdtempSync('/var/tmp/fence-shared-placeholders-');
    const repository = join(root, 'repo');
    const outer = join(repository, 'examples');
    const inner = join(outer, 'mcp');
    mkdirSync(inner, { recursive: true });
    execFileSync('git', ['init', '-q', repository]);
    rmSync(join(repository, '.git', 'hooks'), { recursive: true, force: true });

    const first = sessionIn(inner);
    expect(run(first, inner, 'echo first').stdout).toBe('first\n');
    // The first session's empty folders: the repository's hooks, and its own workspace's .git.
    expect(existsSync(join(repository, '.git', 'hooks'))).toBe(true);
    expect(existsSync(join(inner, '.git'))).toBe(true);

    const second = sessionIn(outer);
    expect(run(second, outer, 'echo second').stdout).toBe('second\n');
    // The inner workspace's empty .git is no repository: the second session protects nothing in it.
    expect(findGitFolders(outer).folders.map((folder) => folder.path)).not.toContain(join(inner, '.git'));
    expect(existsSync(join(inner, '.git', 'hooks'))).toBe(false);

    first.close();
    open.splice(open.indexOf(first), 1);
    const after = run(second, outer, 'echo still running; touch ../.git/hooks/pre-commit');
    expect(after.stderr).not.toContain("Can't find source path");
    expect(after.stdout).toBe('still running\n');
    // The hooks stay read-only for the session that goes on.
    expect(after.stderr).toMatch(/Read-only file system/);
    expect(existsSync(join(repository, '.git', 'hooks', 'pre-commit'))).toBe(false);
  });
});
