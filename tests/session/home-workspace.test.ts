import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runFence } from '../support/run-cli';
import { block, bubblewrapMissing, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';
import { KEYS, startTerminalSession, type TerminalSession } from '../support/terminal-session';

/**
 * fence started in the home folder, or above it, would make every dotfile writable: the
 * shell's start-up files, git's configuration, ~/.local/bin. Such a workspace is refused for
 * workspace-write (the chat asks first), and start-up files stay read-only whenever a writable
 * path holds them.
 */

const rig = useSandboxRig();
const BASHRC = '# the user\'s own .bashrc\n';
let chat: TerminalSession | undefined;
afterEach(() => {
  chat?.kill();
  chat = undefined;
});

function withStartupFiles(r: SandboxRig): void {
  writeFileSync(join(r.home, '.bashrc'), BASHRC);
  writeFileSync(join(r.home, '.gitconfig'), '[user]\n\tname = Someone\n');
}

/** fence -n in `cwd`, with the rig's fake home as HOME. */
function fenceFrom(r: SandboxRig, cwd: string, args: string[]) {
  return runFence(['-m', 'local/test', ...args], { cwd, env: r.env, timeoutMs: 120_000 });
}

describe.skipIf(bubblewrapMissing)('a workspace that is the home folder or above it', () => {
  it('is refused for -n and --auto, with the reason and what to do instead; the model is never asked', async () => {
    const r = rig();
    withStartupFiles(r);
    for (const [cwd, reason] of [
      [r.home, 'it is your home folder'],
      [r.root, 'it holds your home folder'],
    ] as const) {
      for (const mode of ['-n', '--auto']) {
        const run = await fenceFrom(r, cwd, [mode, 'echo pwned >> ~/.bashrc']);
        expect(run.exitCode).toBe(1);
        expect(run.stderr).toContain(`fence: the workspace ${cwd} cannot be made writable: ${reason}`);
        expect(run.stderr).toContain('cd into a project folder (or give -w <folder>), or use --sandbox read-only');
      }
    }
    expect(r.server.requests).toHaveLength(0);
    expect(readFileSync(join(r.home, '.bashrc'), 'utf8')).toBe(BASHRC);
  });

  it('runs read-only in the home folder when asked to', async () => {
    const r = rig();
    withStartupFiles(r);
    script(r, [block('shell', 'echo pwned >> ~/.bashrc; echo done'), 'Could not.']);
    const run = await fenceFrom(r, r.home, ['-n', '--sandbox', 'read-only', 'append to .bashrc']);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('Could not.');
    expect(readFileSync(join(r.home, '.bashrc'), 'utf8')).toBe(BASHRC);
  });

  it('is asked about in the chat: no leaves before any session opens, yes opens one with the start-up files read-only', { timeout: 90_000 }, async () => {
    const r = rig();
    withStartupFiles(r);
    chat = startTerminalSession({ args: ['-m', 'local/test', '-y'], cwd: r.home, env: r.env, cols: 160, rows: 40 });
    await chat.waitFor('make it writable? [y/N]');
    expect(chat.screen().join('\n')).toContain(`fence would let the model's commands write in ${r.home}: it is your home folder.`);
    chat.type(KEYS.enter);
    expect(await chat.exited).toBe(0);
    expect(readdirSync(join(r.fenceHome, 'sessions'))).toEqual(['older-session']);

    script(r, [block('shell', 'echo pwned >> ~/.bashrc; echo note > ~/note.txt; echo done'), 'Tried.']);
    chat = startTerminalSession({ args: ['-m', 'local/test', '-y'], cwd: r.home, env: r.env, cols: 160, rows: 40 });
    await chat.waitFor('make it writable? [y/N]');
    chat.type(`y${KEYS.enter}`);
    await chat.waitFor('/help for commands');
    chat.type(`go${KEYS.enter}`);
    await chat.waitFor('Tried.');
    chat.type(`/exit${KEYS.enter}`);
    expect(await chat.exited).toBe(0);
    expect(readFileSync(join(r.home, '.bashrc'), 'utf8')).toBe(BASHRC);
    expect(readFileSync(join(r.home, 'note.txt'), 'utf8')).toBe('note\n');
  });
});

describe.skipIf(bubblewrapMissing)('start-up files under a writable path', () => {
  it('stay read-only, from the shell and the file tools, while the rest of the writable path is written', async () => {
    const r = rig();
    withStartupFiles(r);
    writeFileSync(r.userConfig, '[sandbox]\nwritable = ["~"]\n');
    script(r, [
      block('shell', 'echo pwned >> ~/.bashrc; mkdir -p ~/.local/bin && printf "#!/bin/sh\\n" > ~/.local/bin/git; mkdir -p ~/.config/autostart && echo x > ~/.config/autostart/evil.desktop; echo ok > ~/notes.txt; echo done'),
      block('save ~/.gitconfig', '[core]\n\tpager = sh -c "touch /tmp/pwned"'),
      block('save ~/.profile', 'echo pwned'),
      'Done.',
    ]);
    const run = await fenceFrom(r, r.workspace, ['-n', 'change the start-up files']);
    expect(run.exitCode).toBe(0);
    expect(readFileSync(join(r.home, '.bashrc'), 'utf8')).toBe(BASHRC);
    expect(readFileSync(join(r.home, '.gitconfig'), 'utf8')).toBe('[user]\n\tname = Someone\n');
    expect(existsSync(join(r.home, '.local', 'bin', 'git'))).toBe(false);
    expect(existsSync(join(r.home, '.config', 'autostart', 'evil.desktop'))).toBe(false);
    expect(existsSync(join(r.home, '.profile'))).toBe(false);
    expect(readFileSync(join(r.home, 'notes.txt'), 'utf8')).toBe('ok\n');
    // The places held for start-up files that did not exist are gone with the session.
    expect(existsSync(join(r.home, '.zshrc'))).toBe(false);
    expect(existsSync(join(r.home, '.bash_login'))).toBe(false);
    const results = toolResults(r).map((m) => m.content);
    expect(results[1]).toMatch(/\.gitconfig.*(protected|cannot be written)/);
    expect(results[2]).toMatch(/\.profile.*(protected|cannot be written)/);
  });

  it('are writable as before when no writable path holds them', async () => {
    const r = rig();
    mkdirSync(join(r.workspace, 'sub'));
    script(r, [block('shell', 'echo alias ll=ls > .bashrc && cat .bashrc'), 'Done.']);
    const run = await fenceFrom(r, r.workspace, ['-n', 'a project .bashrc']);
    expect(run.exitCode).toBe(0);
    expect(readFileSync(join(r.workspace, '.bashrc'), 'utf8')).toBe('alias ll=ls\n');
  });
});
