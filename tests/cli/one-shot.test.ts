import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { cliProviders, FENCE_BIN, readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';
import { startTerminalSession } from '../support/terminal-session';

const cli = useCliRun();

const providers = cliProviders(cli);

describe.each(providers)('one-shot run against an $name server', ({ model, env }) => {
  it('saves, patches and runs a file, then prints only the final answer', async () => {
    cli.server.reply((r) => r.text("I'll write the script.\n```save hello.py\nprint('hi')\n```\nThis text comes after the block and must be dropped."));
    cli.server.reply((r) => r.text("```patch hello.py\n<<<<<<< ORIGINAL\nprint('hi')\n=======\nprint('hi there')\n>>>>>>> UPDATED\n```\n"));
    cli.server.reply((r) => r.text('Now run it:\n```shell\npython3 hello.py\n```'));
    cli.server.reply((r) => r.text('Done: hello.py prints "hi there".'));

    const result = await runFence(['-n', '-m', model, 'make hello.py say hi there, then run it'], {
      cwd: cli.dirs.workspace,
      env: { FENCE_HOME: cli.dirs.home, ...env() },
    });

    expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Done: hello.py prints "hi there".');
    expect(readFileSync(join(cli.dirs.workspace, 'hello.py'), 'utf8')).toBe("print('hi there')\n");

    const log = readOnlySessionLog(cli.dirs.home);
    expect(log.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'system', 'assistant', 'system', 'assistant', 'system', 'assistant']);
    expect(log[2]!.content).not.toContain('must be dropped');
    expect(log[2]!.content.endsWith('```')).toBe(true);
    expect(log[7]!.content).toContain('hi there');
    expect(log[7]!.meta).toMatchObject({ toolResult: true, tool: 'shell' });
    for (const m of log.filter((m) => m.role === 'assistant')) {
      expect(m.meta?.model).toBe(model);
      expect(m.meta?.usage?.outputTokens).toBeGreaterThan(0);
    }

    // The last request carried the shell's output back to the model.
    expect(cli.server.requests).toHaveLength(4);
    expect(JSON.stringify(cli.server.requests[3]!.body)).toContain('hi there');
  });
});

describe('one-shot command line', () => {

  it('runs prompts separated by a lone "-" as successive turns and appends piped input to the first', async () => {
    cli.server.reply((r) => r.text('first answer'));
    cli.server.reply((r) => r.text('second answer'));
    const result = await runFence(['-n', '-m', 'local/test', 'summarise this:', '-', 'and now this'], {
      cwd: cli.dirs.workspace,
      env: cli.env(),
      input: 'piped text\n',
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('second answer');
    const users = readOnlySessionLog(cli.dirs.home).filter((m) => m.role === 'user').map((m) => m.content);
    expect(users).toEqual(['summarise this:\n\npiped text', 'and now this']);
  });

  it('takes the prompt from standard input when none is given', async () => {
    cli.server.reply((r) => r.text('ok'));
    const result = await runFence(['-n', '-m', 'local/test'], { cwd: cli.dirs.workspace, env: cli.env(), input: 'what is 2+2?' });
    expect(result.exitCode).toBe(0);
    expect(readOnlySessionLog(cli.dirs.home).find((m) => m.role === 'user')?.content).toBe('what is 2+2?');
  });

  it('says in one line how to configure when there is no key and no server', async () => {
    const result = await runFence(['-n', 'hello'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(result.exitCode).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/ANTHROPIC_API_KEY|OPENAI_API_KEY/);
  });

  it('ends with a clear error, the authentication exit code (9) and no stack trace when the server refuses the key', async () => {
    cli.server.reply((r) => r.status(401));
    const result = await runFence(['-n', '-m', 'local/test', 'hello'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(9);
    expect(result.stderr).toMatch(/401/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('stops at --max-turns with exit code 3', async () => {
    for (let i = 0; i < 3; i++) cli.server.reply((r) => r.text('```shell\necho again\n```'));
    const result = await runFence(['-n', '-m', 'local/test', '--max-turns', '2', 'loop'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toMatch(/--max-turns/);
    expect(cli.server.requests).toHaveLength(2);
  });

  it('saves a README whose code samples are bare inner blocks whole', async () => {
    const readme = '# Tool\n\nInstall:\n```\nnpm install\n```\n\nUse:\n```\ntool --help\n```\nThat is all.';
    cli.server.reply((r) => r.text(`Writing it.\n\`\`\`save README.md\n${readme}\n\`\`\`\n\nDone, the README is written.`));
    cli.server.reply((r) => r.text('The README is written.'));
    const result = await runFence(['-n', '-m', 'local/test', 'write a README'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('The README is written.');
    expect(readFileSync(join(cli.dirs.workspace, 'README.md'), 'utf8')).toBe(`${readme}\n`);
    expect(readOnlySessionLog(cli.dirs.home)[2]?.content).toBe(`Writing it.\n\`\`\`save README.md\n${readme}\n\`\`\``);
  });

  it('gives a failing tool an error result and goes on', async () => {
    cli.server.reply((r) => r.text('```read missing.txt\n```'));
    cli.server.reply((r) => r.text('The file is missing.'));
    const result = await runFence(['-n', '-m', 'local/test', 'read it'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    const toolResult = readOnlySessionLog(cli.dirs.home).find((m) => m.meta?.toolResult);
    expect(toolResult?.meta?.isError).toBe(true);
    expect(toolResult?.content).toMatch(/missing\.txt/);
  });

  it('lists and shows sessions', async () => {
    cli.server.reply((r) => r.text('hello back'));
    await runFence(['-n', '-m', 'local/test', '--name', 'greeting', 'hello'], { cwd: cli.dirs.workspace, env: cli.env() });
    const list = await runFence(['sessions', 'list'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(list.exitCode).toBe(0);
    expect(list.stdout).toContain('greeting');
    const show = await runFence(['sessions', 'show', 'greeting'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(show.exitCode).toBe(0);
    expect(show.stdout).toContain('hello back');
    const missing = await runFence(['sessions', 'show', 'nope'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toMatch(/no session "nope"/);
  });

  it('prints its version', async () => {
    const result = await runFence(['--version'], { cwd: cli.dirs.workspace, env: {} });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^\d+\.\d+\.\d+$/);
  });
});

describe('the final answer of -n, once where it is read', () => {
  const ANSWER = 'The answer is 42.';
  /** A reply that streams the answer in pieces, after a tool step. */
  const script = () => {
    cli.server.reply((r) => r.text('Let me check.\n```shell\necho checked\n```\n'));
    cli.server.reply((r) => r.text('The answer ').text('is 42.'));
  };
  const count = (text: string, what: string) => text.split(what).length - 1;

  it('shows it once in a terminal, where stdout and stderr are the same', async () => {
    script();
    const terminal = startTerminalSession({ args: ['-n', '-m', 'local/test', 'what is it?'], cwd: cli.dirs.workspace, env: cli.env() });
    expect(await terminal.exited).toBe(0);
    expect(count(terminal.lines().join('\n'), ANSWER)).toBe(1);
    expect(terminal.lines().join('\n')).toContain('[shell done]');
  });

  it('still writes it to a stdout redirected from the terminal, and streams it on the terminal once', async () => {
    script();
    const file = join(cli.dirs.workspace, '..', 'answer.txt');
    const terminal = startTerminalSession({ args: ['-n', '-m', 'local/test', 'what is it?'], cwd: cli.dirs.workspace, env: cli.env(), stdoutTo: file });
    expect(await terminal.exited).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(`${ANSWER}\n`);
    expect(count(terminal.lines().join('\n'), ANSWER)).toBe(1);
  });

  it('writes it to stdout when stdout and stderr are pipes, one or two', async () => {
    script();
    const apart = await runFence(['-n', '-m', 'local/test', 'what is it?'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(apart.exitCode).toBe(0);
    expect(apart.stdout).toBe(ANSWER);
    expect(count(apart.stderr, ANSWER)).toBe(1);

    // One pipe for both (`2>&1`): not a terminal, so a script still finds the answer.
    script();
    const together = await execa('/bin/sh', ['-c', 'exec "$@" 2>&1', 'sh', process.execPath, FENCE_BIN, '-n', '-m', 'local/test', 'what is it?'], {
      cwd: cli.dirs.workspace,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dirname(cli.dirs.workspace), ...cli.env() },
      extendEnv: false,
      input: '',
      reject: false,
    });
    expect(together.exitCode).toBe(0);
    expect(together.stdout.endsWith(`\n${ANSWER}`)).toBe(true);
    expect(count(together.stdout, ANSWER)).toBe(2);
  });

  it('prints the answer of --auto, which was not streamed as a reply, in a terminal too', async () => {
    cli.server.reply((r) => r.toolCall('complete', { result: 'Counted: 42 files.' }));
    const terminal = startTerminalSession({
      args: ['--auto', '-m', 'local/test', '--tool-format', 'tool', 'count'],
      cwd: cli.dirs.workspace,
      env: cli.env(),
    });
    expect(await terminal.exited).toBe(0);
    expect(terminal.lines()).toContain('Counted: 42 files.');
  });
});
