import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findEnclosingRepository } from '../../src/os-sandbox/enclosing-repository';
import { workspaceProtectedPaths } from '../../src/os-sandbox/policy';
import { openGitGuard, readRecord, recordGitState, sweepAfterFence } from '../../src/os-sandbox/git-guard';
import { surveyWorkspaceGit } from '../../src/os-sandbox/workspace-git';

/** The repository holding a workspace, found as git finds it, on real folders and real git. */

let root: string;
let home: string;

beforeEach(() => {
  root = mkdtempSync('/var/tmp/fence-enclosing-test-');
  home = join(root, 'home');
  mkdirSync(home);
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const AUTHOR = { GIT_AUTHOR_NAME: 'Fence Test', GIT_AUTHOR_EMAIL: 'test@example.com', GIT_COMMITTER_NAME: 'Fence Test', GIT_COMMITTER_EMAIL: 'test@example.com' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: { ...process.env, ...AUTHOR, GIT_CONFIG_NOSYSTEM: '1' } });
const find = (workspace: string, env: NodeJS.ProcessEnv = {}) => findEnclosingRepository(workspace, { home, env });

/** A repository at `root/<name>` with one commit and a `packages/app` folder. */
function repositoryWithPackage(name = 'repo'): { repo: string; app: string } {
  const repo = join(root, name);
  const app = join(repo, 'packages', 'app');
  mkdirSync(app, { recursive: true });
  git(root, 'init', '-q', repo);
  git(repo, 'commit', '-q', '--allow-empty', '-m', 'start');
  return { repo, app };
}

describe('findEnclosingRepository', () => {
  it('finds the repository above a package, its .git writable for git data', () => {
    const { repo, app } = repositoryWithPackage();
    expect(find(app)).toEqual({ root: repo, gitDir: join(repo, '.git'), commonDir: join(repo, '.git'), gitFolders: [join(repo, '.git')], access: { writable: true } });
  });

  it('a repository whose .git is in the workspace has no git folder outside it', () => {
    const { repo } = repositoryWithPackage();
    expect(find(repo)).toMatchObject({ root: repo, gitFolders: [], access: { writable: true } });
  });

  it("a worktree: its own git folder lies in the common folder's worktrees/, and the common folder is the one made writable", () => {
    const { repo } = repositoryWithPackage();
    const tree = join(root, 'tree');
    git(repo, 'worktree', 'add', '-q', '--detach', tree);
    mkdirSync(join(tree, 'sub'));
    expect(find(join(tree, 'sub'))).toEqual({
      root: tree,
      gitDir: join(repo, '.git', 'worktrees', 'tree'),
      commonDir: join(repo, '.git'),
      gitFolders: [join(repo, '.git')],
      access: { writable: true },
    });
  });

  it("a submodule: its git folder under the superproject's .git/modules", () => {
    const { repo } = repositoryWithPackage();
    const lib = join(root, 'lib');
    git(root, 'init', '-q', lib);
    git(lib, 'commit', '-q', '--allow-empty', '-m', 'lib');
    git(repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'vendor/lib');
    const module = join(repo, '.git', 'modules', 'vendor', 'lib');
    expect(find(join(repo, 'vendor', 'lib'))).toEqual({ root: join(repo, 'vendor', 'lib'), gitDir: module, commonDir: module, gitFolders: [module], access: { writable: true } });
  });

  it('passes over a .git folder that is not a git folder (an empty placeholder), as git does', () => {
    const { repo, app } = repositoryWithPackage();
    mkdirSync(join(app, '.git'));
    expect(find(app)?.root).toBe(repo);
  });

  it('finds nothing without a repository, and stops at a ceiling folder and above the home folder', () => {
    const plain = join(root, 'plain');
    mkdirSync(plain);
    expect(find(plain)).toBeUndefined();
    const { repo, app } = repositoryWithPackage();
    expect(find(app, { GIT_CEILING_DIRECTORIES: repo })).toBeUndefined();
    expect(find(app, { GIT_CEILING_DIRECTORIES: join(repo, 'packages') })).toBeUndefined();
    expect(find(app, { GIT_CEILING_DIRECTORIES: `${root}:/nowhere` })?.root).toBe(repo);
    // The home folder's parent is not looked at from a workspace in the home folder.
    git(root, 'init', '-q', root);
    const project = join(home, 'project');
    mkdirSync(project);
    expect(findEnclosingRepository(project, { home, env: {} })).toBeUndefined();
  });

  it('leaves read-only a repository at the home folder, whose work tree is all of it', () => {
    git(root, 'init', '-q', home);
    const project = join(home, 'project');
    mkdirSync(project);
    expect(find(project)).toMatchObject({ root: home, access: { writable: false, reason: 'it is your home folder' } });
  });

  it("leaves read-only a .git file or link naming another repository's git folder, which does not name this folder back", () => {
    const { repo } = repositoryWithPackage('other');
    const planted = join(root, 'planted');
    mkdirSync(join(planted, 'app'), { recursive: true });
    writeFileSync(join(planted, '.git'), `gitdir: ${join(repo, '.git')}\n`);
    expect(find(join(planted, 'app'))).toMatchObject({ root: planted, access: { writable: false, reason: expect.stringContaining('does not name this folder as its work tree') } });
    const linked = join(root, 'linked');
    mkdirSync(join(linked, 'app'), { recursive: true });
    symlinkSync(join(repo, '.git'), join(linked, '.git'));
    expect(find(join(linked, 'app'))).toMatchObject({ root: linked, access: { writable: false, reason: expect.stringContaining('link') } });
  });

  it('leaves read-only a commondir that leads outside git’s layout of worktrees, and a git folder that holds the workspace', () => {
    const { repo, app } = repositoryWithPackage();
    const elsewhere = repositoryWithPackage('elsewhere').repo;
    writeFileSync(join(repo, '.git', 'commondir'), `${join(elsewhere, '.git')}\n`);
    expect(find(app)).toMatchObject({ commonDir: join(elsewhere, '.git'), access: { writable: false, reason: expect.stringContaining('commondir') } });
    rmSync(join(repo, '.git', 'commondir'));
    const inside = join(repo, '.git', 'work');
    mkdirSync(inside);
    writeFileSync(join(inside, '.git'), 'gitdir: ..\n');
    git(repo, 'config', 'core.worktree', inside);
    expect(find(inside)).toMatchObject({ access: { writable: false, reason: expect.stringContaining('holds the workspace') } });
  });

  it('a broken .git file stops the walk, as git stops there, with nothing writable', () => {
    const { app } = repositoryWithPackage();
    writeFileSync(join(app, '..', '.git'), 'not a gitdir line\n');
    expect(find(app)).toMatchObject({ root: join(app, '..'), gitFolders: [], access: { writable: false } });
  });
});

describe("the repository's git folders in the policy and the guard", () => {
  it("protects their hooks (a placeholder when missing), config, a commondir, and the core.hooksPath folder inside the workspace, and the submodules' inside them", () => {
    const { repo, app } = repositoryWithPackage();
    rmSync(join(repo, '.git', 'hooks'), { recursive: true });
    git(repo, 'config', 'core.hooksPath', 'packages/app/.githooks');
    mkdirSync(join(repo, '.git', 'modules', 'lib'), { recursive: true });
    writeFileSync(join(repo, '.git', 'modules', 'lib', 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(join(repo, '.git', 'modules', 'lib', 'config'), '[core]\n');
    const paths = workspaceProtectedPaths(app, surveyWorkspaceGit(app, { home }));
    expect(paths).toEqual(
      expect.arrayContaining([
        join(repo, '.git', 'hooks'),
        join(repo, '.git', 'config'),
        join(app, '.githooks'),
        join(repo, '.git', 'modules', 'lib', 'hooks'),
        join(repo, '.git', 'modules', 'lib', 'config'),
        join(app, '.git'),
      ]),
    );
  });

  it('the guard removes a commondir and config.worktree written in the repository’s git folder, and judges a new submodule folder there', () => {
    const { repo, app } = repositoryWithPackage();
    const lines: string[] = [];
    const guard = openGitGuard({ workspace: app, protectedPaths: [], report: (line) => lines.push(line), git: surveyWorkspaceGit(app, { home }) });
    // Written as a command in the sandbox would, after the guard started.
    const evil = join(repo, '.git', 'modules', 'evil');
    git(root, 'init', '-q', '--bare', evil);
    git(evil, 'config', 'core.fsmonitor', 'touch /nonexistent/ran');
    writeFileSync(join(repo, '.git', 'commondir'), '../elsewhere\n');
    writeFileSync(join(repo, '.git', 'config.worktree'), '[core]\n\tfsmonitor = x\n');
    guard.close();

    expect(lines.join('\n')).toContain(`${evil} was made in the sandbox and could make git run a program (config sets core.fsmonitor)`);
    expect(lines.join('\n')).toContain(`removed ${join(repo, '.git', 'commondir')}`);
    expect(lines.join('\n')).toContain(`removed ${join(repo, '.git', 'config.worktree')}`);
  });

  it("a record written to a file keeps the repository's git folders, so the guardian's sweep after fence is gone reaches them", () => {
    const { repo, app } = repositoryWithPackage();
    const { truncated: _truncated, ...record } = recordGitState(app, [], [], surveyWorkspaceGit(app, { home }));
    const file = join(root, 'record.json');
    writeFileSync(file, JSON.stringify(record));
    writeFileSync(join(repo, '.git', 'config.worktree'), '[core]\n\tfsmonitor = x\n');
    const lines: string[] = [];
    const read = readRecord(file);
    expect(read?.outside).toEqual([join(repo, '.git')]);
    sweepAfterFence(read as NonNullable<typeof read>, (line) => lines.push(line));

    expect(existsSync(join(repo, '.git', 'config.worktree'))).toBe(false);
    expect(lines).toEqual([expect.stringContaining(`removed ${join(repo, '.git', 'config.worktree')}`)]);
  });
});
