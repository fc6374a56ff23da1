import { describe, expect, it } from 'vitest';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

describe('an openai/ reply over the Responses API is cut at its first block', () => {
  it('stops reading when the model starts a new message after the one that ended with the block', async () => {
    // The block ends the first message item; the model goes on with a second one and never
    // finishes it: the run gets on only if fence stops reading there.
    cli.server.reply((r) => r.text('Let me look.\n```shell\necho from-the-shell\n```').endMessage().text('Then I will explain what ').hang());
    cli.server.reply((r) => r.text('The shell said from-the-shell.'));

    const result = await runFence(['-n', '-m', 'openai/gpt-test', 'what does the shell say?'], { cwd: cli.dirs.workspace, env: cli.env(), timeoutMs: 20_000 });

    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('The shell said from-the-shell.');
    expect(cli.server.requests.map((request) => request.path)).toEqual(['/v1/responses', '/v1/responses']);
    expect(cli.server.requests[0]?.leftEarly).toBe(true);
    const log = readOnlySessionLog(cli.dirs.home);
    const assistant = log.find((message) => message.role === 'assistant');
    expect(assistant?.content).toBe('Let me look.\n```shell\necho from-the-shell\n```');
    expect(log.find((message) => message.meta?.toolResult)?.content).toContain('from-the-shell');
  });

  it('keeps the messages of a reply without a block apart, each on its own paragraph', async () => {
    cli.server.reply((r) => r.text('First I checked the files.').endMessage().text('All of them are fine.'));
    const result = await runFence(['-n', '-m', 'openai/gpt-test', 'check the files'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('First I checked the files.\n\nAll of them are fine.');
    expect(cli.server.requests[0]?.leftEarly).toBeUndefined();
  });

  it('still stops at a block followed by a blank line inside one message', async () => {
    cli.server.reply((r) => r.text('Looking.\n```shell\necho one-message\n```\n\nThen more').hang());
    cli.server.reply((r) => r.text('Done.'));
    const result = await runFence(['-n', '-m', 'openai/gpt-test', 'go'], { cwd: cli.dirs.workspace, env: cli.env(), timeoutMs: 20_000 });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Done.');
    expect(cli.server.requests[0]?.leftEarly).toBe(true);
  });
});

describe('a python block whose code holds a same-language fence in a string', () => {
  it('runs, and its output is the tool result', async () => {
    const reply = [
      'I will keep the snippet in a string and print its lines.',
      '```python',
      "code = '''```python",
      'print("inner")',
      "```'''",
      'print(len(code.splitlines()), "lines, first:", code.splitlines()[0])',
      '```',
      '',
    ].join('\n');
    cli.server.reply((r) => r.text(reply));
    cli.server.reply((r) => r.text('The snippet has 3 lines.'));

    const result = await runFence(['-n', '-m', 'local/test', 'count the lines'], { cwd: cli.dirs.workspace, env: cli.env() });

    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('The snippet has 3 lines.');
    const output = readOnlySessionLog(cli.dirs.home).find((message) => message.meta?.toolResult);
    expect(output?.meta?.tool).toBe('python');
    expect(output?.content).toContain('3 lines, first: ```python');
  });
});
