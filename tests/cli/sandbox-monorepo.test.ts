import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runFence } from '../support/run-cli';
import { fsmonitorCommand, GIT_AUTHOR, hostGit, modelCodeMarker } from '../support/host-git';
import { block, bubblewrapMissing, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';

/**
 * The workspace is a folder inside a repository whose git folder lies outside it: a package of
 * a monorepo (`work/packages/app`, the repository's `.git` at `work/.git`), a worktree, a
 * submodule. Through the built CLI on the default settings, real git and real bubblewrap: the
 * model's `git add` and `git commit` work and the host sees the commit; what would make git
 * run a program of the model's on the host (hooks, config, `commondir`, `config.worktree` of
 * that git folder) is refused or undone, and the rest of the repository stays read-only.
 */

const rig = useSandboxRig();


/** `git status` and `git commit` on the host at the repository's root; whether the model's command ran. */
function gitRunsModelCode(rig: SandboxRig, folder = rig.workspace): boolean {
  hostGit(rig, folder, ['status']);
  hostGit(rig, folder, ['commit', '-q', '--allow-empty', '-m', 'by the person']);
  return existsSync(modelCodeMarker(rig));
}

/** The rig's repository as a monorepo: `package.json` at its root, `packages/app` and `packages/other`, one commit. Returns the package's folder. */
function monorepo(rig: SandboxRig): string {
  const files: Record<string, string> = {
    'package.json': '{ "private": true, "workspaces": ["packages/*"] }\n',
    'packages/app/index.js': 'module.exports = 1;\n',
    'packages/other/index.js': 'module.exports = 2;\n',
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(rig.workspace, path, '..'), { recursive: true });
    writeFileSync(join(rig.workspace, path), text);
  }
  git(rig.workspace, 'add', '-A');
  git(rig.workspace, 'commit', '-q', '-m', 'start');
  return join(rig.workspace, 'packages', 'app');
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: { ...process.env, ...GIT_AUTHOR }, encoding: 'utf8' });

/** fence -n in `cwd`, with git's author known inside. */
const fenceAt = (rig: SandboxRig, cwd: string, args: string[] = ['-n', 'work on the package']) =>
  runFence(['-m', 'local/test', ...args], { cwd, env: { ...rig.env, ...GIT_AUTHOR }, timeoutMs: 150_000 });

/** The text the model read after each block. */
const results = (rig: SandboxRig) => toolResults(rig).map((message) => message.content);

/** What the model commits from the workspace, and what it reads back. */
const COMMIT = 'echo change >> index.js 2>/dev/null || echo change > change.txt; git add . && git commit -q -m from-the-sandbox && git log -1 --format=%s';

describe.skipIf(bubblewrapMissing)('git in a workspace whose repository keeps its git folder outside it', () => {
  it('a package of a monorepo: git add and git commit work, and the host sees the commit; branches, stashes and a new worktree too', async () => {
    const app = monorepo(rig());
    script(rig(), [
      block('shell', COMMIT),
      block(
        'shell',
        [
          'git checkout -q -b feature && echo f > f.txt && git add f.txt && git commit -q -m on-feature',
          'echo wip >> f.txt && git stash -q && git stash pop -q && git commit -q -am stashed',
          'git checkout -q - && git worktree add -q -b side tree && git -C tree commit -q --allow-empty -m in-tree && git log -1 --format=%s side',
        ].join('\n'),
      ),
      'Done.',
    ]);
    const result = await fenceAt(rig(), app);

    expect(result.exitCode, result.stderr).toBe(0);
    expect(results(rig())[0]).toMatch(/from-the-sandbox\n[\s\S]*Exit code 0/);
    expect(results(rig())[1]).toMatch(/in-tree\n[\s\S]*Exit code 0/);
    expect(hostGit(rig(), rig().workspace, ['log', '--format=%s', 'feature']).stdout).toBe('stashed\non-feature\nfrom-the-sandbox\nstart\n');
    expect(hostGit(rig(), join(app, 'tree'), ['log', '-1', '--format=%s']).stdout).toBe('in-tree\n');
    hostGit(rig(), rig().workspace, ['worktree', 'remove', '--force', join(app, 'tree')]);
    expect(hostGit(rig(), rig().workspace, ['log', '-1', '--format=%s']).stdout).toBe('from-the-sandbox\n');
    expect(hostGit(rig(), rig().workspace, ['show', '--stat', '--format=', 'HEAD']).stdout).toContain('packages/app/index.js');
    expect(hostGit(rig(), rig().workspace, ['status', '--porcelain']).stdout).toBe('');
    expect(result.stderr).not.toContain('disabled-by-fence');
  }, 180_000);

  it('a worktree of a repository: commits land on its branch', async () => {
    git(rig().workspace, 'commit', '-q', '--allow-empty', '-m', 'start');
    const tree = join(rig().root, 'tree');
    git(rig().workspace, 'worktree', 'add', '-q', '-b', 'side', tree);
    script(rig(), [block('shell', COMMIT), 'Done.']);
    const result = await fenceAt(rig(), tree);

    expect(result.exitCode, result.stderr).toBe(0);
    expect(results(rig())[0]).toMatch(/from-the-sandbox\n[\s\S]*Exit code 0/);
    expect(hostGit(rig(), rig().workspace, ['log', '-1', '--format=%s', 'side']).stdout).toBe('from-the-sandbox\n');
    expect(hostGit(rig(), tree, ['status', '--porcelain']).stdout).toBe('');
  }, 180_000);

  it('a submodule: commits land in its git folder under the superproject', async () => {
    const lib = join(rig().root, 'lib');
    execFileSync('git', ['init', '-q', lib]);
    git(lib, 'commit', '-q', '--allow-empty', '-m', 'lib start');
    git(rig().workspace, 'commit', '-q', '--allow-empty', '-m', 'start');
    git(rig().workspace, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'lib');
    const submodule = join(rig().workspace, 'lib');
    script(rig(), [block('shell', COMMIT), 'Done.']);
    const result = await fenceAt(rig(), submodule);

    expect(result.exitCode, result.stderr).toBe(0);
    expect(results(rig())[0]).toMatch(/from-the-sandbox\n[\s\S]*Exit code 0/);
    expect(hostGit(rig(), submodule, ['log', '--format=%s']).stdout).toBe('from-the-sandbox\nlib start\n');
    expect(hostGit(rig(), submodule, ['status', '--porcelain']).stdout).toBe('');
  }, 180_000);

  it('fence sandbox check names the repository root and says its git folder takes git data', async () => {
    const app = monorepo(rig());
    const result = await runFence(['sandbox', 'check'], { cwd: app, env: rig().env, timeoutMs: 120_000 });

    expect(result.exitCode, result.stdout).toBe(0);
    expect(result.stdout).toContain(
      `git: repository ${rig().workspace}; its git folder ${join(rig().workspace, '.git')} is writable for git's data (objects, refs, the index), its hooks and config read-only`,
    );
    expect(result.stdout).toMatch(new RegExp(`^protected: .*${join(rig().workspace, '.git', 'hooks')}`, 'm'));
  }, 120_000);
});

describe.skipIf(bubblewrapMissing)("from a package, the model cannot make git on the host run its code, nor write the repository's other files", () => {
  it("the repository's hooks are read-only, from the shell and from the file tools", async () => {
    const app = monorepo(rig());
    script(rig(), [
      block('shell', `printf '#!/bin/sh\\ntouch ${modelCodeMarker(rig())}\\n' > ../../.git/hooks/pre-commit; chmod +x ../../.git/hooks/pre-commit`),
      block('save ../../.git/hooks/post-checkout', `#!/bin/sh\ntouch ${modelCodeMarker(rig())}`),
      'Done.',
    ]);
    const result = await fenceAt(rig(), app);

    expect(result.exitCode, result.stderr).toBe(0);
    const [hook, saved] = results(rig());
    expect(hook).toMatch(/pre-commit: Read-only file system/);
    expect(hook).toMatch(/Note: git's hooks and configuration stay read-only in the sandbox/);
    expect(saved).toMatch(/post-checkout .*is protected by the sandbox: fence\.toml, \.fence\/ and git's hooks and config stay read-only/);
    expect(existsSync(join(rig().workspace, '.git', 'hooks', 'post-checkout'))).toBe(false);
    expect(existsSync(join(rig().workspace, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(gitRunsModelCode(rig())).toBe(false);
  }, 180_000);

  it("the repository's config is read-only: core.fsmonitor and core.hooksPath do not take", async () => {
    const app = monorepo(rig());
    const config = readFileSync(join(rig().workspace, '.git', 'config'), 'utf8');
    mkdirSync(join(app, 'hooks'));
    script(rig(), [
      block('shell', `git config core.fsmonitor '${fsmonitorCommand(rig())}'`),
      block('shell', `printf '#!/bin/sh\\ntouch ${modelCodeMarker(rig())}\\n' > hooks/pre-commit && chmod +x hooks/pre-commit && git config core.hooksPath "$PWD/hooks"`),
      block('shell', `printf '[core]\\n\\tfsmonitor = ${fsmonitorCommand(rig())}\\n' >> ../../.git/config`),
      'Done.',
    ]);
    const result = await fenceAt(rig(), app);

    expect(result.exitCode, result.stderr).toBe(0);
    const [fsmonitorSet, hooksPathSet, appended] = results(rig());
    expect(fsmonitorSet).toMatch(/could not write config file .*config: (?:Device or resource busy|Read-only file system)/);
    expect(fsmonitorSet).toMatch(/Note: git's hooks and configuration stay read-only/);
    expect(hooksPathSet).toMatch(/could not write config file/);
    expect(appended).toMatch(/config: Read-only file system/);
    expect(readFileSync(join(rig().workspace, '.git', 'config'), 'utf8')).toBe(config);
    expect(gitRunsModelCode(rig())).toBe(false);
  }, 180_000);

  it("a commondir written in the repository's git folder is removed", async () => {
    const app = monorepo(rig());
    const evil = join(rig().workspace, '.git', 'evil-common');
    script(rig(), [
      block('shell', `git init -q --bare ${evil} && git config -f ${evil}/config core.fsmonitor '${fsmonitorCommand(rig())}' && echo ${evil} > ../../.git/commondir; echo written`),
      'Done.',
    ]);
    const result = await fenceAt(rig(), app);

    expect(result.exitCode, result.stderr).toBe(0);
    expect(results(rig())[0]).toMatch(/written/);
    expect(existsSync(join(rig().workspace, '.git', 'commondir'))).toBe(false);
    expect(result.stderr).toContain(`removed ${join(rig().workspace, '.git', 'commondir')}`);
    expect(gitRunsModelCode(rig())).toBe(false);
  }, 180_000);

  it("a config.worktree written in the repository's git folder is removed", async () => {
    const app = monorepo(rig());
    // The person's repository reads config.worktree (sparse checkouts turn this on).
    git(rig().workspace, 'config', 'core.repositoryformatversion', '1');
    git(rig().workspace, 'config', 'extensions.worktreeConfig', 'true');
    script(rig(), [block('shell', `printf '[core]\\n\\tfsmonitor = ${fsmonitorCommand(rig())}\\n' > ../../.git/config.worktree; echo written`), 'Done.']);
    const result = await fenceAt(rig(), app);

    expect(result.exitCode, result.stderr).toBe(0);
    expect(results(rig())[0]).toMatch(/written/);
    expect(existsSync(join(rig().workspace, '.git', 'config.worktree'))).toBe(false);
    expect(result.stderr).toContain(`removed ${join(rig().workspace, '.git', 'config.worktree')}`);
    expect(gitRunsModelCode(rig())).toBe(false);
  }, 180_000);

  it("a sibling package and the repository's own files stay read-only", async () => {
    const app = monorepo(rig());
    script(rig(), [
      block('shell', 'echo "require(\'child_process\')" >> ../other/index.js'),
      block('shell', `printf '{ "scripts": { "postinstall": "touch ${modelCodeMarker(rig())}" } }\\n' > ../../package.json`),
      'Done.',
    ]);
    const result = await fenceAt(rig(), app);

    expect(result.exitCode, result.stderr).toBe(0);
    const [sibling, rootFile] = results(rig());
    expect(sibling).toMatch(/index\.js: Read-only file system/);
    expect(sibling).toMatch(/Note: fence runs commands in a sandbox that lets them write only inside the workspace/);
    expect(rootFile).toMatch(/package\.json: Read-only file system/);
    expect(readFileSync(join(rig().workspace, 'packages', 'other', 'index.js'), 'utf8')).toBe('module.exports = 2;\n');
    expect(readFileSync(join(rig().workspace, 'package.json'), 'utf8')).toBe('{ "private": true, "workspaces": ["packages/*"] }\n');
    expect(hostGit(rig(), rig().workspace, ['status', '--porcelain']).stdout).toBe('');
  }, 180_000);
});

describe.skipIf(bubblewrapMissing)('a git folder the sandbox leaves read-only, and says why', () => {
  it("a .git file planted in a folder above the workspace, naming another repository's git folder: that repository stays as it was", async () => {
    git(rig().workspace, 'commit', '-q', '--allow-empty', '-m', 'start');
    const head = hostGit(rig(), rig().workspace, ['rev-parse', 'HEAD']).stdout;
    const planted = join(rig().root, 'planted');
    mkdirSync(join(planted, 'app'), { recursive: true });
    writeFileSync(join(planted, '.git'), `gitdir: ${join(rig().workspace, '.git')}\n`);
    script(rig(), [block('shell', 'git commit -q --allow-empty -m from-the-sandbox'), 'Done.']);
    const result = await fenceAt(rig(), join(planted, 'app'));

    expect(result.exitCode, result.stderr).toBe(0);
    const [commit] = results(rig());
    expect(commit).toMatch(/Read-only file system/);
    expect(commit).toMatch(/Note: the git repository holding the workspace \(.*planted\) keeps its git folder outside the workspace, and the sandbox leaves it read-only: its \.git file names a git folder that does not name this folder as its work tree/);
    expect(hostGit(rig(), rig().workspace, ['rev-parse', 'HEAD']).stdout).toBe(head);
  }, 180_000);

  it('a repository at the home folder: fence sandbox check says its git folder stays read-only, and a commit from a project in it is refused', async () => {
    execFileSync('git', ['init', '-q', rig().home]);
    git(rig().home, 'commit', '-q', '--allow-empty', '-m', 'dotfiles');
    const project = join(rig().home, 'project');
    mkdirSync(project);
    const check = await runFence(['sandbox', 'check'], { cwd: project, env: rig().env, timeoutMs: 120_000 });
    script(rig(), [block('shell', 'echo x > x.txt && git add x.txt'), 'Done.']);
    const result = await fenceAt(rig(), project);

    expect(check.stdout).toMatch(/^git: repository ~; its git folder ~\/\.git stays read-only: it is your home folder, so git add and commit fail in the sandbox$/m);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(results(rig())[0]).toMatch(/index\.lock': Read-only file system[\s\S]*Note: the git repository holding the workspace/);
    expect(hostGit(rig(), rig().home, ['log', '--format=%s']).stdout).toBe('dotfiles\n');
  }, 180_000);

  it('in read-only mode a package commits nothing, and fence sandbox check says so', async () => {
    const app = monorepo(rig());
    const check = await runFence(['sandbox', 'check', '--sandbox', 'read-only'], { cwd: app, env: rig().env, timeoutMs: 120_000 });
    script(rig(), [block('shell', 'git commit -q --allow-empty -m from-the-sandbox'), 'Done.']);
    const result = await fenceAt(rig(), app, ['-n', '--sandbox', 'read-only', 'look at the package']);

    expect(check.stdout).toContain(`git: repository ${rig().workspace}; its git folder ${join(rig().workspace, '.git')} is read-only in this mode`);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(results(rig())[0]).toMatch(/Read-only file system/);
    expect(hostGit(rig(), rig().workspace, ['log', '--format=%s']).stdout).toBe('start\n');
  }, 180_000);
});
