import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bubblewrapSandbox, sandboxSupport, type OsSandbox } from '../../src/os-sandbox/os-sandbox';
import { workspaceProtectedPaths, type SandboxPolicy } from '../../src/os-sandbox/policy';

/**
 * The bubblewrap sandbox run for real around `bash -c`, in a git repository. Not under /tmp:
 * inside the sandbox /tmp is a private folder, so anything under it would look writable.
 * Skipped only where bwrap is not installed: one that cannot sandbox fails the tests.
 */
const bubblewrapMissing = process.platform !== 'linux' || spawnSync('bwrap', ['--version']).error !== undefined;

describe.skipIf(bubblewrapMissing)('bubblewrap sandbox around a git workspace', () => {
  let root: string;
  let workspace: string;
  let sandbox: OsSandbox;
  let policy: SandboxPolicy;
  let bwrap: string;

  beforeEach(() => {
    root = mkdtempSync('/var/tmp/fence-os-sandbox-test-');
    workspace = join(root, 'work');
    execFileSync('git', ['init', '-q', workspace]);
    policy = {
      mode: 'workspace-write',
      workspace,
      writable: [workspace],
      denied: [],
      readable: [],
      protected: workspaceProtectedPaths(workspace),
      network: false,
    };
    const support = sandboxSupport();
    if (support.kind !== 'bubblewrap') throw new Error(`bwrap is installed, but: ${support.kind === 'none' ? support.reason : support.kind}`);
    sandbox = bubblewrapSandbox(policy, support.path);
    bwrap = support.path;
  });

  afterEach(() => {
    sandbox.close();
    rmSync(root, { recursive: true, force: true });
  });

  const run = (script: string) => {
    const line = sandbox.wrap('bash', ['-c', script], { cwd: workspace });
    return spawnSync(line.command, line.args, { cwd: workspace, encoding: 'utf8', timeout: 30_000 });
  };

  it('keeps .git where it is, so that its hooks and config cannot be swapped for a new repository', () => {
    const config = readFileSync(join(workspace, '.git', 'config'), 'utf8');
    const moved = run('mv .git .git-old && git init -q && printf "#!/bin/sh\\necho ran\\n" > .git/hooks/pre-commit');
    expect(moved.status).not.toBe(0);
    expect(moved.stderr).toContain('Device or resource busy');
    expect(existsSync(join(workspace, '.git-old'))).toBe(false);
    expect(existsSync(join(workspace, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(readFileSync(join(workspace, '.git', 'config'), 'utf8')).toBe(config);
    expect(run('rm -rf .git/hooks').status).not.toBe(0);
    expect(existsSync(join(workspace, '.git', 'hooks', 'pre-commit.sample'))).toBe(true);
  });

  it('removes a .git/commondir or config.worktree written inside when the sandbox closes, and says so; keeps one that was there', () => {
    const reported: string[] = [];
    sandbox.close();
    sandbox = bubblewrapSandbox(policy, bwrap, { report: (line) => reported.push(line) });
    expect(run('mkdir -p evil/hooks && echo ../evil > .git/commondir && echo "[core]" > .git/config.worktree').status).toBe(0);
    expect(existsSync(join(workspace, '.git', 'commondir'))).toBe(true);
    sandbox.close();
    expect(existsSync(join(workspace, '.git', 'commondir'))).toBe(false);
    expect(existsSync(join(workspace, '.git', 'config.worktree'))).toBe(false);
    expect(reported).toEqual([expect.stringContaining(`removed ${join(workspace, '.git', 'commondir')}`), expect.stringContaining('config.worktree')]);

    // One the user had before the session is theirs.
    execFileSync('sh', ['-c', 'echo "[core]" > .git/config.worktree'], { cwd: workspace });
    sandbox = bubblewrapSandbox(policy, bwrap, { report: (line) => reported.push(line) });
    sandbox.close();
    expect(existsSync(join(workspace, '.git', 'config.worktree'))).toBe(true);
    expect(reported).toHaveLength(2);
  });

  it('protects the hooks and config of submodules’ git folders', () => {
    mkdirSync(join(workspace, '.git', 'modules', 'lib', 'hooks'), { recursive: true });
    execFileSync('sh', ['-c', 'echo ref: refs/heads/main > .git/modules/lib/HEAD && echo "[core]" > .git/modules/lib/config'], { cwd: workspace });
    const paths = workspaceProtectedPaths(workspace);
    expect(paths).toContain(join(workspace, '.git', 'modules', 'lib', 'hooks'));
    sandbox.close();
    sandbox = bubblewrapSandbox({ ...policy, protected: paths }, bwrap);
    const planted = run('echo "#!/bin/sh" > .git/modules/lib/hooks/post-checkout; echo x >> .git/modules/lib/config');
    expect(planted.stderr).toContain('Read-only file system');
    expect(existsSync(join(workspace, '.git', 'modules', 'lib', 'hooks', 'post-checkout'))).toBe(false);
    expect(readFileSync(join(workspace, '.git', 'modules', 'lib', 'config'), 'utf8')).toBe('[core]\n');
  });

  it('still lets git work in the repository', () => {
    const committed = run('echo one > a.txt && git add a.txt && git -c user.name=t -c user.email=t@example.com commit -qm first && git log --format=%s');
    expect(committed.stderr).toBe('');
    expect(committed.stdout).toBe('first\n');
  });

  it('takes back the temporary folder of a sandbox whose fence was killed, and keeps its own', async () => {
    const dead = spawnSync('true').pid;
    const stale = mkdtempSync(join(tmpdir(), `fence-sandbox-${dead}-`));
    mkdirSync(join(stale, 'tmp', 'build'), { recursive: true });
    mkdirSync(join(stale, '.empty'), { mode: 0o500 });
    const next = bubblewrapSandbox(policy, bwrap);
    try {
      // The clean-up runs in the background: wait for it, with no deadline asserted.
      for (let i = 0; i < 400 && existsSync(stale); i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(next.tempDir ?? '')).toBe(true);
      expect(existsSync(sandbox.tempDir ?? '')).toBe(true);
    } finally {
      next.close();
      rmSync(stale, { recursive: true, force: true });
    }
  });
});
