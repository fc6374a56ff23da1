import { execFileSync } from 'node:child_process';
import { rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runFence, useCliRun } from '../support/run-cli';

/**
 * A repository whose AGENTS.md or fence.toml is a named pipe or a link to /dev/zero: reading
 * it would hang fence or fill its memory at every start in that folder, trusted or not. fence
 * starts (or stops with one line), names the file, and reads nothing from it. The harness's
 * timeout is what a hang meets; no time is asserted.
 */

const cli = useCliRun();

function fence(args: string[]) {
  return runFence(args, { cwd: cli.dirs.workspace, env: cli.env(), timeoutMs: 30_000 });
}

const oneShot = () => fence(['-n', '-m', 'local/test', 'hello']);

const makeFifo = (name: string) => execFileSync('mkfifo', [join(cli.dirs.workspace, name)]);
const linkToZero = (name: string) => symlinkSync('/dev/zero', join(cli.dirs.workspace, name));

describe.each([
  { what: 'a named pipe', make: makeFifo, said: 'fence: AGENTS.md is not used: it is a named pipe, not a regular file' },
  { what: 'a link to /dev/zero', make: linkToZero, said: 'fence: AGENTS.md is not used: it leads out of the workspace (to /dev/zero)' },
])('an AGENTS.md that is $what', ({ make, said }) => {
  it('costs an untrusted run nothing: it answers, and names the file', async () => {
    make('AGENTS.md');
    cli.server.reply((r) => r.text('Hello.'));
    const run = await oneShot();
    expect(run.timedOut).toBe(false);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('Hello.');
    expect(run.stderr).toContain(said);
  });

  it('costs a trusted run nothing either', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), 'tool_format = "markdown"\n');
    make('AGENTS.md');
    cli.trust();
    cli.server.reply((r) => r.text('Hello.'));
    const run = await oneShot();
    expect(run.timedOut).toBe(false);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('Hello.');
    expect(run.stderr).toContain(said);
  });
});

describe.each([
  { what: 'a named pipe', make: makeFifo, said: 'fence.toml: cannot be read: it is a named pipe, not a regular file' },
  { what: 'a link to /dev/zero', make: linkToZero, said: 'fence.toml: cannot be read: it is a device, not a regular file' },
])('a fence.toml that is $what', ({ make, said }) => {
  it('stops fence at once with one line naming it', async () => {
    make('fence.toml');
    const run = await oneShot();
    expect(run.timedOut).toBe(false);
    expect(run.exitCode).toBe(1);
    expect(run.stderr.trim()).toBe(`fence: ${said}`);
  });

  it('is not read in a trusted folder whose fence.toml it replaced: the folder counts as changed', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), 'tool_format = "markdown"\n');
    writeFileSync(join(cli.dirs.workspace, 'AGENTS.md'), 'Be brief.\n');
    cli.trust();
    rmSync(join(cli.dirs.workspace, 'fence.toml'));
    make('fence.toml');
    cli.server.reply((r) => r.text('Hello.'));
    const run = await oneShot();
    expect(run.timedOut).toBe(false);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('Hello.');
    expect(run.stderr).toContain('fence: fence.toml changed since you trusted this folder');
  });
});

describe('a regular AGENTS.md and fence.toml', () => {
  it('still reach a trusted run', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), 'tool_format = "markdown"\n');
    writeFileSync(join(cli.dirs.workspace, 'AGENTS.md'), 'Answer in one word. MARKER-51c2\n');
    cli.trust();
    cli.server.reply((r) => r.text('Hello.'));
    const run = await oneShot();
    expect(run.exitCode).toBe(0);
    expect(run.stderr).not.toContain('AGENTS.md');
    expect(JSON.stringify(cli.server.requests[0]?.body)).toContain('MARKER-51c2');
  });
});
