import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { fsmonitorCommand, GIT_AUTHOR, hostGit, modelCodeMarker } from '../support/host-git';
import { block, bubblewrapMissing, fenceIn, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';
import { KEYS, startTerminalSession } from '../support/terminal-session';

/**
 * A scripted model leaves things in the workspace that would make git run a program of its
 * own later, on the host, when the person runs `git status` or `git commit`: a new submodule's
 * or a new nested repository's config, an existing nested repository's hooks, a `commondir`,
 * a replaced hooks link, a replaced `fence.toml` link. After the run — a normal end, SIGHUP,
 * SIGKILL, and the next start — real git on the host runs none of it. Beside them, what an
 * honest model does with git still works.
 */

const rig = useSandboxRig();


/** `git status` and `git commit` on the host in each folder; whether the model's command ran. */
function gitRunsModelCode(rig: SandboxRig, folders: string[]): boolean {
  for (const folder of folders) {
    hostGit(rig, folder, ['status']);
    hostGit(rig, folder, ['commit', '-q', '--allow-empty', '-m', 'by the person']);
  }
  return existsSync(modelCodeMarker(rig));
}

/** A workspace with one commit, so that commits and status behave as in a real project. */
function firstCommit(rig: SandboxRig): void {
  execFileSync('git', ['commit', '-q', '--allow-empty', '-m', 'start'], { cwd: rig.workspace, env: { ...process.env, ...GIT_AUTHOR } });
}

/** The fence run, with git's author known inside. */
const fence = (rig: SandboxRig, args: string[] = ['-n', 'work on the project']) => fenceIn(rig, args, GIT_AUTHOR);

/** The pid of the git guard's guardian of the fence running in `rig`: the process whose command line names a record in its FENCE_HOME. */
function guardianIn(rig: SandboxRig): number | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(`${join(rig.fenceHome, 'git-guard')}/`)) return Number(name);
    } catch {
      // Gone meanwhile.
    }
  }
  return undefined;
}

describe.skipIf(bubblewrapMissing)('git on the host runs nothing the model wrote', () => {
  it('a new submodule whose git folder under .git/modules sets core.fsmonitor', async () => {
    firstCommit(rig());
    script(rig(), [
      block('shell', `mkdir -p .git/modules && git init -q --separate-git-dir=.git/modules/evil evil && git -C evil commit -q --allow-empty -m sub && git add evil && git -C evil config core.fsmonitor '${fsmonitorCommand(rig())}'`),
      'Done.',
    ]);
    const result = await fence(rig());

    expect(result.exitCode).toBe(0);
    expect(toolResults(rig())[0]?.content).toMatch(/Exit code 0/);
    expect(result.stderr).toContain(`${join(rig().workspace, '.git', 'modules', 'evil')} was made in the sandbox and could make git run a program (config sets core.fsmonitor)`);
    expect(gitRunsModelCode(rig(), [rig().workspace, join(rig().workspace, 'evil')])).toBe(false);
  }, 120_000);

  it('a new nested repository with core.fsmonitor', async () => {
    script(rig(), [block('shell', `mkdir sub && cd sub && git init -q && git config core.fsmonitor '${fsmonitorCommand(rig())}'`), 'Done.']);
    const result = await fence(rig());

    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain(`moved to ${join(rig().workspace, 'sub', '.git', 'config.disabled-by-fence')}`);
    expect(gitRunsModelCode(rig(), [rig().workspace, join(rig().workspace, 'sub')])).toBe(false);
  }, 120_000);

  it("an existing nested repository's hooks and config stay read-only", async () => {
    const project = join(rig().workspace, 'projA');
    execFileSync('git', ['init', '-q', project]);
    const config = readFileSync(join(project, '.git', 'config'), 'utf8');
    script(rig(), [
      block('shell', `printf '#!/bin/sh\\ntouch ${modelCodeMarker(rig())}\\n' > projA/.git/hooks/pre-commit; chmod +x projA/.git/hooks/pre-commit`),
      block('shell', `git -C projA config core.fsmonitor '${fsmonitorCommand(rig())}'`),
      'Done.',
    ]);
    const result = await fence(rig());

    expect(result.exitCode, result.stderr).toBe(0);
    const [hook, configured] = toolResults(rig()).map((message) => message.content);
    expect(hook).toMatch(/pre-commit: Read-only file system/);
    expect(configured).toMatch(/could not write config file .*: Device or resource busy|Read-only file system/);
    expect(readFileSync(join(project, '.git', 'config'), 'utf8')).toBe(config);
    expect(gitRunsModelCode(rig(), [project])).toBe(false);
  }, 120_000);

  it('hooks kept in the work tree through core.hooksPath stay read-only', async () => {
    firstCommit(rig());
    mkdirSync(join(rig().workspace, '.githooks'));
    writeFileSync(join(rig().workspace, '.githooks', 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    execFileSync('git', ['config', 'core.hooksPath', '.githooks'], { cwd: rig().workspace });
    script(rig(), [block('shell', `printf '#!/bin/sh\\ntouch ${modelCodeMarker(rig())}\\n' > .githooks/pre-commit`), 'Done.']);
    const result = await fence(rig());

    expect(result.exitCode).toBe(0);
    expect(toolResults(rig())[0]?.content).toMatch(/pre-commit: Read-only file system/);
    expect(readFileSync(join(rig().workspace, '.githooks', 'pre-commit'), 'utf8')).toBe('#!/bin/sh\nexit 0\n');
    expect(gitRunsModelCode(rig(), [rig().workspace])).toBe(false);
  }, 120_000);

  /** The model points a nested repository's git folder at a common folder of its own. */
  const nestedCommondir = (rig: SandboxRig) =>
    block('shell', `git init -q --bare evil-common && git config -f evil-common/config core.fsmonitor '${fsmonitorCommand(rig)}' && echo ../../evil-common > projA/.git/commondir`);

  it("a commondir in a nested repository's git folder, after a normal end", async () => {
    const project = join(rig().workspace, 'projA');
    execFileSync('git', ['init', '-q', project]);
    script(rig(), [nestedCommondir(rig()), 'Done.']);
    const result = await fence(rig());

    expect(result.exitCode).toBe(0);
    expect(toolResults(rig())[0]?.content).toMatch(/Exit code 0/);
    expect(existsSync(join(project, '.git', 'commondir'))).toBe(false);
    expect(result.stderr).toContain(`removed ${join(project, '.git', 'commondir')}`);
    expect(gitRunsModelCode(rig(), [project, rig().workspace])).toBe(false);
  }, 120_000);

  /**
   * The model writes the root's commondir and makes a nested repository with core.fsmonitor;
   * its next reply never comes, and fence is stopped by `signal` (after `before`).
   */
  async function plantThen(signal: 'SIGHUP' | 'SIGKILL', before?: (pid: number) => void) {
    firstCommit(rig());
    script(rig(), [
      block(
        'shell',
        `git init -q --bare evil-common && git config -f evil-common/config core.fsmonitor '${fsmonitorCommand(rig())}' && echo ../evil-common > .git/commondir; ` +
          `git init -q sub && git -C sub config core.fsmonitor '${fsmonitorCommand(rig())}'`,
      ),
    ]);
    rig().server.reply((reply) => reply.hang());
    const run = fence(rig());
    await rig().server.waitForRequests(2);
    expect(readFileSync(join(rig().workspace, 'sub', '.git', 'config'), 'utf8')).toContain('fsmonitor');
    before?.(run.pid as number);
    process.kill(run.pid as number, signal);
    return run;
  }

  /**
   * What every ending must leave: no commondir, the nested repository's config moved aside, git
   * running nothing, and none of the empty folders that held the place of fence.toml and .fence.
   */
  function expectSwept(stderr: string) {
    const workspace = rig().workspace;
    expect(existsSync(join(workspace, 'fence.toml'))).toBe(false);
    expect(existsSync(join(workspace, '.fence'))).toBe(false);
    expect(existsSync(join(workspace, '.git', 'commondir'))).toBe(false);
    expect(stderr).toContain(`removed ${join(workspace, '.git', 'commondir')}`);
    expect(existsSync(join(workspace, 'sub', '.git', 'config'))).toBe(false);
    expect(stderr).toContain(`moved to ${join(workspace, 'sub', '.git', 'config.disabled-by-fence')}`);
    expect(gitRunsModelCode(rig(), [workspace, join(workspace, 'sub'), join(workspace, 'evil-common')])).toBe(false);
  }

  it('a commondir and a nested repository, after SIGHUP (the terminal closed)', async () => {
    const result = await plantThen('SIGHUP');

    expect(result.exitCode).not.toBe(0);
    expectSwept(result.stderr);
  }, 120_000);

  it('a commondir and a nested repository, after SIGKILL: the guardian sweeps', async () => {
    const result = await plantThen('SIGKILL');

    expect(result.signal).toBe('SIGKILL');
    expectSwept(result.stderr);
    expect(readdirSync(join(rig().fenceHome, 'git-guard'))).toEqual([]);
  }, 120_000);

  it('a nested repository left by a fence killed with its guardian is swept at the next start in that folder', async () => {
    const killed = await plantThen('SIGKILL', () => {
      const guardian = guardianIn(rig());
      expect(guardian).toBeDefined();
      process.kill(guardian as number, 'SIGKILL');
    });
    expect(killed.signal).toBe('SIGKILL');
    // Nothing swept it: this is what the next start finds.
    expect(existsSync(join(rig().workspace, 'sub', '.git', 'config'))).toBe(true);
    expect(existsSync(join(rig().workspace, 'fence.toml'))).toBe(true);
    expect(readdirSync(join(rig().fenceHome, 'git-guard'))).toHaveLength(1);

    script(rig(), ['Nothing to do.']);
    const next = await fence(rig());

    expect(next.exitCode).toBe(0);
    expect(readdirSync(join(rig().fenceHome, 'git-guard'))).toEqual([]);
    // The commondir went during the first session already (see the guard's watch), or now.
    expectSwept(`${killed.stderr}\n${next.stderr}`);
  }, 180_000);

  it('a nested repository added to the index during the session is disabled while the session still runs', async () => {
    firstCommit(rig());
    script(rig(), [block('shell', `git init -q evil && git -C evil config core.fsmonitor '${fsmonitorCommand(rig())}' && git -C evil commit -q --allow-empty -m sub && git add evil`)]);
    rig().server.reply((reply) => reply.hang());
    const run = fence(rig());
    onTestFinished(() => {
      run.kill('SIGKILL');
    });
    // Another terminal's git status at the root would enter the new submodule: wait for fence to say it was disabled.
    const disabled = `${join(rig().workspace, 'evil', '.git')} was made in the sandbox`;
    await new Promise<void>((resolve) => {
      let said = '';
      run.stderr?.on('data', (chunk: Buffer) => {
        said += chunk.toString();
        if (said.includes(disabled)) resolve();
      });
    });
    const during = gitRunsModelCode(rig(), [rig().workspace]);
    process.kill(run.pid as number, 'SIGTERM');
    await run;

    expect(during).toBe(false);
    expect(gitRunsModelCode(rig(), [rig().workspace, join(rig().workspace, 'evil')])).toBe(false);
  }, 120_000);

  it('in the chat, SIGHUP (the terminal closed) closes the session, and its close sweeps', async () => {
    const stderr = join(rig().root, 'chat-stderr.txt');
    script(rig(), [block('shell', `git init -q sub && git -C sub config core.fsmonitor '${fsmonitorCommand(rig())}'`)]);
    rig().server.reply((reply) => reply.hang());
    const chat = startTerminalSession({ args: ['-m', 'local/test', '--yes'], cwd: rig().workspace, env: { ...rig().env, ...GIT_AUTHOR }, stderrTo: stderr });
    onTestFinished(() => chat.kill());
    await chat.waitFor('/help for commands');
    chat.type(`set up the project${KEYS.enter}`);
    await rig().server.waitForRequests(2);
    // Only the chat's own close can sweep now.
    const guardian = guardianIn(rig());
    expect(guardian).toBeDefined();
    process.kill(guardian as number, 'SIGKILL');
    chat.kill();
    await chat.exited;

    expect(readFileSync(stderr, 'utf8')).toContain(`moved to ${join(rig().workspace, 'sub', '.git', 'config.disabled-by-fence')}`);
    expect(gitRunsModelCode(rig(), [rig().workspace, join(rig().workspace, 'sub')])).toBe(false);
  }, 120_000);

  it('a .git/hooks that is a link, replaced by a folder with a planted hook', async () => {
    firstCommit(rig());
    const shared = join(rig().workspace, 'githooks');
    mkdirSync(shared);
    rmSync(join(rig().workspace, '.git', 'hooks'), { recursive: true });
    symlinkSync('../githooks', join(rig().workspace, '.git', 'hooks'));
    script(rig(), [
      block('shell', `rm .git/hooks; mkdir .git/hooks; printf '#!/bin/sh\\ntouch ${modelCodeMarker(rig())}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; ls -la .git/hooks/`),
      'Done.',
    ]);
    const result = await fence(rig());

    expect(result.exitCode).toBe(0);
    expect(readlinkSync(join(rig().workspace, '.git', 'hooks'))).toBe('../githooks');
    expect(readdirSync(shared)).toEqual([]);
    expect(gitRunsModelCode(rig(), [rig().workspace])).toBe(false);
  }, 120_000);

  it('a fence.toml that is a link, replaced by a file of the model’s', async () => {
    mkdirSync(join(rig().workspace, 'config'));
    const original = '[sandbox]\nnetwork = false\n';
    writeFileSync(join(rig().workspace, 'config', 'fence.toml'), original);
    symlinkSync('config/fence.toml', join(rig().workspace, 'fence.toml'));
    script(rig(), [block('shell', `rm fence.toml; printf '[sandbox]\\nmode = "off"\\n' > fence.toml; cat fence.toml`), 'Done.']);
    const result = await fence(rig());

    expect(result.exitCode).toBe(0);
    expect(lstatSync(join(rig().workspace, 'fence.toml')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(rig().workspace, 'fence.toml'))).toBe('config/fence.toml');
    expect(readFileSync(join(rig().workspace, 'fence.toml'), 'utf8')).toBe(original);
  }, 120_000);
});

describe.skipIf(bubblewrapMissing)('the honest paths of git in the sandbox', () => {
  it('commits, branches, stashes and rebases; a new sub-project keeps its repository; a submodule takes commits; a new worktree works', async () => {
    firstCommit(rig());
    const lib = join(rig().workspace, 'lib');
    const inLib = { cwd: rig().workspace, env: { ...process.env, ...GIT_AUTHOR } };
    mkdirSync(join(rig().workspace, '.git', 'modules'));
    execFileSync('git', ['init', '-q', '--separate-git-dir=.git/modules/lib', 'lib'], inLib);
    execFileSync('git', ['-C', 'lib', 'commit', '-q', '--allow-empty', '-m', 'lib base'], inLib);
    execFileSync('git', ['add', 'lib'], inLib);
    execFileSync('git', ['commit', '-q', '-m', 'add lib'], inLib);
    script(rig(), [
      block(
        'shell',
        [
          'git checkout -q -b feature',
          'echo a > a.txt && git add a.txt && git commit -q -m feature-work',
          'git checkout -q -',
          'echo b > b.txt && git add b.txt && git commit -q -m main-work',
          'echo wip >> b.txt && git stash -q && git stash pop -q && git commit -q -am stashed-work',
          'git checkout -q feature && git rebase -q - && git log --format=%s | head -5',
        ].join('\n'),
      ),
      block('shell', 'mkdir newproj && cd newproj && git init -q && git config user.name "New Project" && echo hi > readme && git add readme && git commit -q -m first && git log --format=%s'),
      block('shell', 'cd ../lib && echo x > x.txt && git add x.txt && git commit -q -m in-lib && git log --format=%s'),
      block('shell', 'cd .. && git worktree add -q -b side tree && git -C tree commit -q --allow-empty -m in-tree && git -C tree log -1 --format=%s'),
      'Done.',
    ]);
    const result = await fence(rig());

    expect(result.exitCode).toBe(0);
    const [branches, newProject, submodule, worktree] = toolResults(rig()).map((message) => message.content);
    expect(branches).toMatch(/feature-work\nstashed-work\nmain-work\nadd lib\nstart/);
    expect(newProject).toMatch(/first/);
    expect(submodule).toMatch(/in-lib\nlib base/);
    expect(worktree).toMatch(/in-tree/);
    expect(result.stderr).not.toContain('disabled-by-fence');
    expect(hostGit(rig(), join(rig().workspace, 'newproj'), ['config', 'user.name']).stdout).toBe('New Project\n');
    expect(hostGit(rig(), lib, ['log', '--format=%s']).stdout).toBe('in-lib\nlib base\n');
    expect(hostGit(rig(), join(rig().workspace, 'tree'), ['log', '-1', '--format=%s']).stdout).toBe('in-tree\n');
    expect(hostGit(rig(), rig().workspace, ['log', '--format=%s', 'feature']).stdout).toMatch(/^feature-work\nstashed-work\nmain-work\nadd lib\nstart\n$/);
  }, 120_000);
});
