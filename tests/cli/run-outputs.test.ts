import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { ReplyBuilder } from '../support/fake-llm';
import { FENCE_BIN, readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** A run against the fake OpenAI-compatible server, with `args` after `-m local/test`. */
const run = (args: string[], extra: Record<string, string> = {}) =>
  runFence(['-m', 'local/test', ...args], { cwd: cli.dirs.workspace, env: { ...cli.env(), ...extra } });

describe('--output-format', () => {
  it('json: stdout is one JSON object with the result, the stop reason and the usage', async () => {
    // Native calls, so that the replies are read to the end where the usage comes.
    cli.server.reply((r) => r.toolCall('shell', { command: 'echo hi' }).usage({ input: 100, output: 10 }));
    cli.server.reply((r) => r.text('It printed hi.').usage({ input: 150, output: 5 }));

    const result = await run(['-n', '--tool-format', 'tool', '--output-format', 'json', 'say hi']);

    expect(result.exitCode).toBe(0);
    expect(result.stdout.trim().split('\n')).toHaveLength(1);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({
      result: 'It printed hi.',
      stop_reason: 'done',
      is_error: false,
      turns: 2,
      cost_usd: null,
      usage: { input_tokens: 250, output_tokens: 15 },
    });
    expect(summary.session_id).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
    expect(result.stderr).toContain('[running shell echo hi]');
  });

  it('json of a resumed session counts the tokens and cost of this run only', async () => {
    const prices = '[models."local/test"]\ninput_per_mtok = 1000\noutput_per_mtok = 2000\n';
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), prices);
    cli.trust();
    cli.server.reply((r) => r.text('First answer.').usage({ input: 1000, output: 100 }));
    const first = JSON.parse((await run(['-n', '--output-format', 'json', 'first'])).stdout);
    expect(first.usage).toMatchObject({ input_tokens: 1000, output_tokens: 100 });

    cli.server.reply((r) => r.text('Second answer.').usage({ input: 3000, output: 10 }));
    const second = JSON.parse((await run(['-n', '--output-format', 'json', '--resume', first.session_id, 'second'])).stdout);

    expect(second).toMatchObject({ result: 'Second answer.', turns: 1, usage: { input_tokens: 3000, output_tokens: 10 } });
    // 3,000 input tokens at $1,000 per million and 10 output tokens at $2,000 per million.
    expect(second.cost_usd).toBeCloseTo(3.02, 9);
  });

  it('stream-json: every line of stdout is one JSON event, ending with the result', async () => {
    cli.server.reply((r) => r.text('```shell\necho hi\n```\n'));
    cli.server.reply((r) => r.text('Done.'));

    const result = await run(['-n', '--output-format', 'stream-json', 'say hi']);

    expect(result.exitCode).toBe(0);
    const events = result.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(events.map((event) => event.type)).toEqual(['init', 'prompt', 'assistant', 'tool_use', 'tool_result', 'assistant', 'result']);
    expect(events[1]).toMatchObject({ text: 'say hi' });
    expect(events[3]).toMatchObject({ tool: 'shell', input: { args: [], content: 'echo hi' } });
    expect(events[4]).toMatchObject({ tool: 'shell', is_error: false });
    expect(events[4].output).toContain('hi');
    expect(events.at(-1)).toMatchObject({ result: 'Done.', stop_reason: 'done' });
    expect(new Set(events.map((event) => event.session_id)).size).toBe(1);
  });

  it('stream-json marks where each of several prompts starts', async () => {
    cli.server.reply((r) => r.text('```shell\necho one\n```\n'));
    cli.server.reply((r) => r.text('First done.'));
    cli.server.reply((r) => r.text('Second done.'));

    const result = await run(['-n', '--output-format', 'stream-json', 'first task', '-', 'second task']);

    expect(result.exitCode).toBe(0);
    const events = result.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(events.map((event) => event.type)).toEqual(['init', 'prompt', 'assistant', 'tool_use', 'tool_result', 'assistant', 'prompt', 'assistant', 'result']);
    expect(events.filter((event) => event.type === 'prompt').map((event) => event.text)).toEqual(['first task', 'second task']);
    expect(events.at(-1)).toMatchObject({ result: 'Second done.', stop_reason: 'done' });
  });

  it('json can be read by a shell script with jq', async () => {
    cli.server.reply((r) => r.text('forty-two'));
    const script = `"${process.execPath}" "${FENCE_BIN}" -n -m local/test --output-format json "answer" | jq -r '.stop_reason + " " + .result'`;
    // Asynchronously: the fake server answers from this process's event loop.
    const out = await execa('bash', ['-c', script], { cwd: cli.dirs.workspace, env: { PATH: process.env.PATH ?? '', ...cli.env() }, extendEnv: false, input: '', timeout: 60_000 });
    expect(out.stdout).toBe('done forty-two');
  });
});

describe('stop reasons and exit codes', () => {
  it('--auto ends with complete: exit 0, stop_reason complete, the result is what complete said', async () => {
    cli.server.reply((r) => r.text('Working.'));
    cli.server.reply((r) => r.text('```complete\nAll done.\n```\n'));

    const result = await run(['--auto', '--output-format', 'json', 'do it']);

    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ result: 'All done.', stop_reason: 'complete', is_error: false, turns: 2 });
  });

  it('--max-cost stops the run at its limit with exit 4, when the model has prices', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[models."local/test"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n');
    cli.trust();
    // 1,000 tokens at $1,000 per million: $1 a reply.
    for (let i = 0; i < 5; i++) cli.server.reply((r) => r.toolCall('shell', { command: `echo ${i}` }).usage({ input: 900, output: 100 }));

    const result = await run(['-n', '--tool-format', 'tool', '--max-cost', '2.5', '--output-format', 'json', 'spend']);

    expect(result.exitCode).toBe(4);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ stop_reason: 'max_cost', is_error: true, turns: 3 });
    expect(summary.cost_usd).toBeCloseTo(3, 6);
    expect(result.stderr).toContain('stopped: spent $3.0000 of the $2.5 budget (--max-cost)');
  });

  it('--max-cost without known prices is a usage error naming where to set them', async () => {
    const result = await run(['-n', '--max-cost', '1', 'spend']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('--max-cost needs the prices of local/test; set input_per_mtok and output_per_mtok in [models."local/test"] of your config.toml (or of a trusted project\'s fence.toml)');
  });

  it('--timeout ends a run whose model hangs, with exit 6', async () => {
    cli.server.reply((r) => r.text('Thinking').hang());

    const result = await run(['-n', '--timeout', '1s', '--output-format', 'json', 'think']);

    expect(result.exitCode).toBe(6);
    expect(JSON.parse(result.stdout)).toMatchObject({ stop_reason: 'timeout', is_error: true });
  });

  it('a refused key ends with exit 9 and stop_reason auth', async () => {
    cli.server.reply((r) => r.status(401, { message: 'invalid api key' }));

    const result = await run(['-n', '--output-format', 'json', 'hi']);

    expect(result.exitCode).toBe(9);
    expect(JSON.parse(result.stdout)).toMatchObject({ stop_reason: 'auth', is_error: true });
    expect(result.stderr).toContain('HTTP 401');
  });

  it('--max-turns reports what the last reply said before its block, never the unrun block', async () => {
    cli.server.reply((r) => r.text('```shell\necho 1\n```\n'));
    cli.server.reply((r) => r.text('```shell\necho 2\n```\n'));
    cli.server.reply((r) => r.text('Counting on.\n```shell\necho 3\n```\n'));
    cli.server.reply((r) => r.text('```shell\necho 4\n```\n'));

    const bare = await run(['-n', '--max-turns', '2', '--output-format', 'json', 'count']);
    const withProse = await run(['-n', '--max-turns', '1', '--output-format', 'json', 'count']);

    expect(bare.exitCode).toBe(3);
    expect(JSON.parse(bare.stdout)).toMatchObject({ result: '', stop_reason: 'max_turns', turns: 2 });
    expect(withProse.exitCode).toBe(3);
    expect(JSON.parse(withProse.stdout)).toMatchObject({ result: 'Counting on.', stop_reason: 'max_turns', turns: 1 });
  });

  it('--auto stopped for no progress reports the last reply and counts the replies', async () => {
    cli.server.reply((r) => r.text('```shell\necho 1\n```\n'));
    for (let i = 1; i <= 4; i++) cli.server.reply((r) => r.text(`I believe it is done (${i}).`));

    const result = await run(['--auto', '--output-format', 'json', 'count']);

    expect(result.exitCode).toBe(8);
    expect(JSON.parse(result.stdout)).toMatchObject({
      result: 'I believe it is done (4).',
      stop_reason: 'no_progress',
      error: 'stopped: 4 replies in a row without a tool call, after 3 reminders',
    });
  });

  it('--max-turns ends with exit 3 and nothing on stdout in text mode', async () => {
    for (let i = 0; i < 3; i++) cli.server.reply((r) => r.text(`\`\`\`shell\necho ${i}\n\`\`\`\n`));

    const result = await run(['-n', '--max-turns', '2', 'loop']);

    expect(result.exitCode).toBe(3);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('stopped after 2 model requests (--max-turns)');
  });
});

describe('--auto ending with complete and no result', () => {
  const cases: { name: string; format: string; replies: ((r: ReplyBuilder) => unknown)[]; result: string }[] = [
    {
      name: 'markdown: an empty block after prose',
      format: 'markdown',
      replies: [(r) => r.text('```shell\necho 1\n```\n'), (r) => r.text('Printed 1; nothing else to do.\n\n```complete\n```\n')],
      result: 'Printed 1; nothing else to do.',
    },
    {
      name: 'markdown: an empty block alone',
      format: 'markdown',
      replies: [(r) => r.text('Printing 1, which is all there is to do.\n```shell\necho 1\n```\n'), (r) => r.text('```complete\n```\n')],
      result: 'Printing 1, which is all there is to do.',
    },
    {
      name: 'xml: an empty element',
      format: 'xml',
      replies: [(r) => r.text('<tool-use><shell>echo 1</shell></tool-use>'), (r) => r.text('Printed 1.\n<tool-use><complete/></tool-use>')],
      result: 'Printed 1.',
    },
    {
      name: 'native: complete with {}',
      format: 'tool',
      replies: [(r) => r.toolCall('shell', { command: 'echo 1' }), (r) => r.text('Printed 1.').toolCall('complete', {})],
      result: 'Printed 1.',
    },
    {
      name: 'native: complete with {} alone',
      format: 'tool',
      replies: [(r) => r.text('Printing 1.').toolCall('shell', { command: 'echo 1' }), (r) => r.toolCall('complete', {})],
      result: 'Printing 1.',
    },
  ];

  it.each(cases)('$name ends the run: exit 0, stop_reason complete, the model\'s words as the result', async ({ format, replies, result: answer }) => {
    for (const reply of replies) cli.server.reply(reply);

    const result = await run(['--auto', '--tool-format', format, '--output-format', 'json', 'print 1']);

    expect(result.exitCode).toBe(0);
    expect(result.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ result: answer, stop_reason: 'complete', is_error: false, turns: 2 });
    expect(cli.server.requests).toHaveLength(2);
    const log = readOnlySessionLog(cli.dirs.home);
    expect(log.at(-1)).toMatchObject({ role: 'system', content: 'The run is complete.', meta: { tool: 'complete' } });
    expect(log.some((message) => message.meta?.isError || message.meta?.notice)).toBe(false);
  });
});

describe('a run that cannot start, in the JSON formats', () => {
  /** stdout as the one result object it must be. */
  const onlyResult = (stdout: string) => {
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0] ?? '') as Record<string, unknown>;
  };
  const cases = [
    { name: 'a workspace that does not exist', args: ['-m', 'local/test', '-w', 'missing'], exit: 1, stop: 'error', error: 'does not exist' },
    { name: 'a session name that is not valid', args: ['-m', 'local/test', '--name', 'bad name/'], exit: 2, stop: 'usage', error: 'invalid session name "bad name/"' },
    { name: 'an unknown provider', args: ['-m', 'mistral/large'], exit: 2, stop: 'usage', error: 'unknown provider "mistral"' },
    { name: 'no key and no server', args: [], exit: 1, stop: 'error', error: 'no API key', env: { OPENAI_BASE_URL: '' } },
  ];

  it.each(cases)('$name: one result object, exit $exit, stop_reason $stop', async ({ args, exit, stop, error, env }) => {
    const result = await runFence(['-n', '--output-format', 'json', ...args, 'hello'], { cwd: cli.dirs.workspace, env: { ...cli.env(), ...env } });

    expect(result.exitCode).toBe(exit);
    const summary = onlyResult(result.stdout);
    expect(summary).toMatchObject({ type: 'result', result: '', session_id: '', stop_reason: stop, is_error: true, turns: 0, cost_usd: 0 });
    expect(summary.error).toContain(error);
    expect(result.stderr.trim().split('\n')).toEqual([`fence: ${summary.error}`]);
    expect(cli.server.requests).toHaveLength(0);
    expect(existsSync(join(cli.dirs.home, 'sessions'))).toBe(false);
  });

  it.each([
    { name: 'an unknown option', args: ['--output-format', 'json', '--frobnicate'], error: "unknown option '--frobnicate'" },
    { name: 'a bad value', args: ['--max-turns', 'many', '--output-format=stream-json'], error: "argument 'many' is invalid" },
  ])('$name, refused by the command line itself: one result object too, exit 2', async ({ args, error }) => {
    const result = await runFence(['-n', '-m', 'local/test', ...args, 'hello'], { cwd: cli.dirs.workspace, env: cli.env() });

    expect(result.exitCode).toBe(2);
    const summary = onlyResult(result.stdout);
    expect(summary).toMatchObject({ type: 'result', session_id: '', stop_reason: 'usage', is_error: true, turns: 0 });
    expect(summary.error).toContain(error);
    expect(result.stderr).toContain(`error: ${summary.error}`);
    expect(cli.server.requests).toHaveLength(0);
  });

  it('a usage error in text mode, or with the JSON words only in the prompt, leaves stdout empty', async () => {
    for (const args of [['--frobnicate'], ['--frobnicate', '--', '--output-format', 'json']]) {
      const result = await runFence(['-n', '-m', 'local/test', ...args, 'hello'], { cwd: cli.dirs.workspace, env: cli.env() });
      expect(result.exitCode).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain("unknown option '--frobnicate'");
    }
  });

  it('the name of an existing session: exit 2 before anything starts, the session left as it was', async () => {
    cli.server.reply((r) => r.text('First.'));
    const first = await run(['-n', '--name', 'nightly', 'hello']);
    expect(first.exitCode).toBe(0);
    const before = readOnlySessionLog(cli.dirs.home);

    const result = await run(['-n', '--name', 'nightly', '--output-format', 'stream-json', 'hello again']);

    expect(result.exitCode).toBe(2);
    expect(onlyResult(result.stdout)).toMatchObject({ type: 'result', stop_reason: 'usage', is_error: true, error: 'a session named "nightly" exists already' });
    expect(cli.server.requests).toHaveLength(1);
    expect(readOnlySessionLog(cli.dirs.home)).toEqual(before);
  });

  it('prints nothing on stdout in text mode, and the same one line on stderr', async () => {
    const result = await run(['-n', '--name', 'bad name/', 'hello']);
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim()).toBe(`fence: invalid session name "bad name/": use letters, digits, '.', '_' and '-'`);
  });
});

describe('a long --auto run with a small context window', () => {
  it('runs 300 steps to an empty complete, summarizing and never sending more than the window allows, with the prose as the result', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[models."local/test"]\ncontext_window = 8000\n');
    cli.trust();
    const summary = (body: { messages?: { content?: unknown }[] }) => JSON.stringify(body.messages?.[0] ?? '').includes('You compact the history');
    cli.server.route(summary, (r) => r.text('Steps so far: each printed a line of numbers; nothing failed.'));
    for (let i = 0; i < 300; i++) cli.server.reply((r) => r.text(`Step ${i}.\n\`\`\`shell\nseq ${i} $((${i} + 40)) | paste -sd' '\n\`\`\`\n`));
    // The summary as prose, then complete with nothing in it.
    cli.server.reply((r) => r.text('Ran 300 steps; each printed its line of numbers.\n```complete\n```\n'));

    const result = await runFence(['-m', 'local/test', '--auto', '--max-turns', '400', '--output-format', 'json', 'count for a while'], {
      cwd: cli.dirs.workspace,
      env: cli.env(),
      timeoutMs: 240_000,
    });

    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ stop_reason: 'complete', is_error: false, result: 'Ran 300 steps; each printed its line of numbers.', turns: 301 });
    const { encode } = await import('gpt-tokenizer/encoding/o200k_base');
    const requests = cli.server.requests.filter((request) => !summary(request.body));
    expect(requests).toHaveLength(301);
    // The window less the reply's reserve (a quarter of a small window).
    const budget = 8000 - 2000;
    for (const request of requests) {
      const tokens = (request.body.messages ?? []).reduce((sum, message) => sum + encode(String(message.content ?? '')).length + 4, 0);
      expect(tokens).toBeLessThanOrEqual(budget);
    }
    expect(cli.server.requests.filter((request) => summary(request.body)).length).toBeGreaterThan(0);
    expect(result.stderr).toContain('[context: older turns summarized to fit the window');
  }, 300_000);
});
