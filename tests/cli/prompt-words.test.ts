import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** The user prompts of the only session of the run. */
function prompts(): string[] {
  return readOnlySessionLog(cli.dirs.home)
    .filter((message) => message.role === 'user')
    .map((message) => message.content);
}

describe('a prompt that is also the name of a command', () => {
  it.each(['sandbox', 'trust', 'sessions', 'run'])('is the prompt with -n: fence -n %s', async (word) => {
    cli.server.reply((r) => r.text(`About ${word}.`));
    const result = await runFence(['-n', '-m', 'local/test', word], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(`About ${word}.`);
    expect(prompts()).toEqual([word]);
  });

  it('is the prompt when more prompt text follows it, and the options after it are the run\'s', async () => {
    cli.server.reply((r) => r.text('Trusting is up to you.'));
    const result = await runFence(['trust', 'me', 'on', 'this', '-n', '-m', 'local/test'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Trusting is up to you.');
    expect(prompts()).toEqual(['trust me on this']);
    // The folder was not trusted: no trust record was written.
    expect(existsSync(join(cli.dirs.home, 'trusted-workspaces.json'))).toBe(false);
  });

  it('is the prompt after --, the options before it the run\'s', async () => {
    cli.server.reply((r) => r.text('The sandbox holds.'));
    const result = await runFence(['-n', '-m', 'local/test', '--', 'sandbox'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('The sandbox holds.');
    expect(prompts()).toEqual(['sandbox']);
  });

  it('stays the command after options a shell alias may add, such as the model', async () => {
    const trust = await runFence(['-m', 'local/test', 'trust'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(trust.exitCode).toBe(0);
    expect(existsSync(join(cli.dirs.home, 'trusted-workspaces.json'))).toBe(true);
    expect(cli.server.requests).toHaveLength(0);
  });

  it('stays the command alone, and when the command fails says how to write it as the prompt', async () => {
    const result = await runFence(['sandbox'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('fence sandbox check');
    expect(result.stderr).toContain('To give "sandbox" to the model as the prompt, put -- before it: fence -- sandbox, or fence -n -- sandbox');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(cli.server.requests).toHaveLength(0);
  });

  it('stays the command with the words the command takes, options of a run before it or not', async () => {
    const check = await runFence(['-m', 'local/test', 'sandbox', 'check', '--sandbox', 'off'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(check.exitCode).toBe(0);
    expect(check.stdout.length).toBeGreaterThan(0);
    const sessions = await runFence(['sessions', 'list'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(sessions.exitCode).toBe(0);
    const trust = await runFence(['trust', cli.dirs.workspace], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(trust.exitCode).toBe(0);
    expect(existsSync(join(cli.dirs.home, 'trusted-workspaces.json'))).toBe(true);
    expect(cli.server.requests).toHaveLength(0);
    expect(existsSync(join(cli.dirs.home, 'sessions')) ? readdirSync(join(cli.dirs.home, 'sessions')) : []).toEqual([]);
  });
});
