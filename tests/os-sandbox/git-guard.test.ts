import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gitFolderRisk } from '../../src/os-sandbox/git-folder-risk';
import { findGitFolders } from '../../src/os-sandbox/git-folders';
import { openGitGuard, recordFileOf, recordGitState, sweepLeftBehind } from '../../src/os-sandbox/git-guard';

/** The git guard on real folders and real git: what it finds, what it judges, what it undoes. */

let root: string;
let workspace: string;

beforeEach(() => {
  root = mkdtempSync('/var/tmp/fence-git-guard-test-');
  workspace = join(root, 'work');
  execFileSync('git', ['init', '-q', workspace]);
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

/** Who commits, whatever this machine's git configuration says. */
const AUTHOR = { GIT_AUTHOR_NAME: 'Fence Test', GIT_AUTHOR_EMAIL: 'test@example.com', GIT_COMMITTER_NAME: 'Fence Test', GIT_COMMITTER_EMAIL: 'test@example.com' };

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: { ...process.env, ...AUTHOR, GIT_CONFIG_NOSYSTEM: '1' } });

describe('findGitFolders', () => {
  it('finds git folders at any depth: nested, submodules, worktrees, gitdir targets, bare-looking folders', () => {
    git(workspace, 'commit', '-q', '--allow-empty', '-m', 'start');
    execFileSync('git', ['init', '-q', join(workspace, 'a', 'b', 'nested')]);
    mkdirSync(join(workspace, '.git', 'modules'));
    git(workspace, 'init', '-q', '--separate-git-dir=.git/modules/lib', 'lib');
    git(workspace, 'worktree', 'add', '-q', '--detach', 'tree');
    git(workspace, 'init', '-q', '--bare', 'bare.git');
    const found = findGitFolders(workspace);
    const kinds = Object.fromEntries(found.folders.map((folder) => [folder.path.slice(workspace.length + 1), folder.kind]));
    expect(kinds).toEqual({
      '.git': 'dot-git',
      '.git/modules/lib': 'module',
      '.git/worktrees/tree': 'worktree',
      'a/b/nested/.git': 'dot-git',
      'bare.git': 'bare',
    });
    expect(found.gitFiles.map((file) => file.path).sort()).toEqual([join(workspace, 'lib', '.git'), join(workspace, 'tree', '.git')]);
    expect(found.truncated).toBe(false);
  });

  it('stops after its cap of folders and says so', () => {
    for (let i = 0; i < 5; i++) mkdirSync(join(workspace, `d${i}`));
    expect(findGitFolders(workspace, 3).truncated).toBe(true);
  });
});

describe('gitFolderRisk', () => {
  it('leaves a new repository with harmless config alone', () => {
    const project = join(workspace, 'new');
    execFileSync('git', ['init', '-q', project]);
    git(project, 'config', 'user.name', 'Someone');
    git(project, 'remote', 'add', 'origin', 'https://example.com/x.git');
    expect(gitFolderRisk(join(project, '.git'))).toBeUndefined();
  });

  it('names a config key that could run a program, an include, or a hook', () => {
    const project = join(workspace, 'new');
    execFileSync('git', ['init', '-q', project]);
    const gitFolder = join(project, '.git');
    git(project, 'config', 'core.fsmonitor', 'touch ran');
    expect(gitFolderRisk(gitFolder)).toBe('config sets core.fsmonitor');
    git(project, 'config', '--unset', 'core.fsmonitor');
    git(project, 'config', 'include.path', '../elsewhere');
    expect(gitFolderRisk(gitFolder)).toBe('config sets include.path');
    git(project, 'config', '--unset', 'include.path');
    writeFileSync(join(gitFolder, 'hooks', 'post-checkout'), '#!/bin/sh\n', { mode: 0o755 });
    expect(gitFolderRisk(gitFolder)).toBe('hooks/post-checkout');
  });

  it('counts a config git cannot read as a risk', () => {
    const project = join(workspace, 'new');
    execFileSync('git', ['init', '-q', project]);
    writeFileSync(join(project, '.git', 'config'), '[core\nbroken');
    expect(gitFolderRisk(join(project, '.git'))).toBe('config git cannot read');
  });
});

describe('openGitGuard', () => {
  it('removes a new commondir as soon as it appears, during the session', async () => {
    let reported!: (line: string) => void;
    const line = new Promise<string>((resolve) => (reported = resolve));
    const guard = openGitGuard({ workspace, protectedPaths: [], report: (text) => reported(text) });
    try {
      writeFileSync(join(workspace, '.git', 'commondir'), '../elsewhere\n');
      expect(await line).toContain(`removed ${join(workspace, '.git', 'commondir')}`);
      expect(existsSync(join(workspace, '.git', 'commondir'))).toBe(false);
    } finally {
      guard.close();
    }
  });

  it('puts back a .git that was a link and is now a folder of its own, moving the folder aside', () => {
    const project = join(workspace, 'project');
    mkdirSync(project);
    execFileSync('git', ['init', '-q', '--bare', join(workspace, 'store.git')]);
    symlinkSync('../store.git', join(project, '.git'));
    const lines: string[] = [];
    const guard = openGitGuard({ workspace, protectedPaths: [], report: (text) => lines.push(text) });
    rmSync(join(project, '.git'));
    execFileSync('git', ['init', '-q', project]);
    guard.close();
    expect(readlinkSync(join(project, '.git'))).toBe('../store.git');
    expect(existsSync(join(project, '.git.disabled-by-fence', 'HEAD'))).toBe(true);
    expect(lines.join('\n')).toContain(`${join(project, '.git')} was a link to ../store.git that a command in the sandbox replaced`);
  });

  it('sweeps the record of a fence that died, at the next start in that folder, and keeps its own record until it closes', () => {
    const records = join(root, 'records');
    mkdirSync(records);
    const dead = spawnSync('true').pid as number;
    const { truncated: _truncated, ...record } = recordGitState(workspace, []);
    writeFileSync(recordFileOf(records, workspace, dead), JSON.stringify({ ...record, pid: dead }));
    execFileSync('git', ['init', '-q', join(workspace, 'sub')]);
    git(join(workspace, 'sub'), 'config', 'core.pager', 'touch ran');
    const lines: string[] = [];
    sweepLeftBehind(records, workspace, (text) => lines.push(text));
    const guard = openGitGuard({ workspace, protectedPaths: [], recordsDir: records, report: (text) => lines.push(text) });
    expect(lines).toEqual([expect.stringContaining('could make git run a program (config sets core.pager)')]);
    expect(existsSync(join(workspace, 'sub', '.git', 'config.disabled-by-fence'))).toBe(true);
    expect(readdirSync(records)).toEqual([expect.stringMatching(new RegExp(`-${process.pid}-[0-9a-f]{8}\\.json$`))]);
    guard.close();
    expect(readdirSync(records)).toEqual([]);
  });
  it("removes a dead fence's empty placeholder folders at the next start, but not while another fence in the folder is alive", () => {
    const records = join(root, 'records');
    mkdirSync(records);
    const placeholders = [join(workspace, 'fence.toml'), join(workspace, '.fence'), join(workspace, 'kept')];
    for (const path of placeholders) mkdirSync(path);
    writeFileSync(join(workspace, 'kept', 'written-since'), '');
    const dead = spawnSync('true').pid as number;
    const { truncated: _truncated, ...record } = recordGitState(workspace, [], placeholders);
    writeFileSync(recordFileOf(records, workspace, dead), JSON.stringify({ ...record, pid: dead }));
    // A live fence in the same folder (this process) may have mounted over them: they stay.
    const alive = recordFileOf(records, workspace, process.pid);
    writeFileSync(alive, JSON.stringify({ ...record, pid: process.pid }));
    sweepLeftBehind(records, workspace, () => undefined);
    expect(placeholders.map((path) => existsSync(path))).toEqual([true, true, true]);

    rmSync(alive);
    writeFileSync(recordFileOf(records, workspace, dead), JSON.stringify({ ...record, pid: dead }));
    sweepLeftBehind(records, workspace, () => undefined);
    expect(placeholders.map((path) => existsSync(path))).toEqual([false, false, true]);
    expect(readdirSync(records)).toEqual([]);
  });
});
