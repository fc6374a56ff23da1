import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ReplyBuilder } from '../support/fake-llm';
import { checkToolCallPairing } from '../support/fake-llm';
import { cliProviders, readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

const providers = cliProviders(cli);

const PATCH = "<<<<<<< ORIGINAL\nprint('hi')\n=======\nprint('hi there')\n>>>>>>> UPDATED";

/** The same four steps — save, patch, shell, python — written in each format. */
const steps: Record<'markdown' | 'xml' | 'tool', ((r: ReplyBuilder) => unknown)[]> = {
  markdown: [
    (r) => r.text("```save hello.py\nprint('hi')\n```\n"),
    (r) => r.text(`\`\`\`patch hello.py\n${PATCH}\n\`\`\`\n`),
    (r) => r.text('```shell\npython3 hello.py\n```\n'),
    (r) => r.text('```python\nopen("hello.py").read().count("print")\n```\n'),
  ],
  xml: [
    (r) => r.text("<tool-use><save args=\"hello.py\">\nprint('hi')\n</save></tool-use>"),
    (r) => r.text(`<tool-use><patch args="hello.py">\n${PATCH}\n</patch></tool-use>`),
    (r) => r.text('<tool-use><shell>python3 hello.py</shell></tool-use>'),
    (r) => r.text('<tool-use><python>open("hello.py").read().count("print")</python></tool-use>'),
  ],
  tool: [
    (r) => r.toolCall('save', { path: 'hello.py', content: "print('hi')\n" }),
    (r) => r.toolCall('patch', { path: 'hello.py', patch: PATCH }),
    (r) => r.toolCall('shell', { command: 'python3 hello.py' }),
    (r) => r.toolCall('python', { code: 'open("hello.py").read().count("print")' }),
  ],
};

describe.each(providers)('each tool format against an $name server', ({ model, env }) => {
  it.each(['markdown', 'xml', 'tool'] as const)('completes save, patch, shell and python in %s', async (format) => {
    for (const step of steps[format]) cli.server.reply(step);
    cli.server.reply((r) => r.text('hello.py prints "hi there".'));

    const result = await runFence(['-n', '-m', model, '--tool-format', format, 'make hello.py say hi there and check it'], {
      cwd: cli.dirs.workspace,
      env: { FENCE_HOME: cli.dirs.home, ...env() },
    });

    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('hello.py prints "hi there".');
    expect(readFileSync(join(cli.dirs.workspace, 'hello.py'), 'utf8')).toBe("print('hi there')\n");

    const log = readOnlySessionLog(cli.dirs.home);
    const results = log.filter((message) => message.meta?.toolResult);
    expect(results.map((message) => [message.meta?.tool, message.meta?.isError ?? false])).toEqual([
      ['save', false],
      ['patch', false],
      ['shell', false],
      ['python', false],
    ]);
    expect(results[2]?.content).toContain('hi there');
    expect(results[3]?.content).toContain('Out: 1');

    const requests = cli.server.requests;
    expect(requests).toHaveLength(5);
    expect(requests.flatMap(checkToolCallPairing)).toEqual([]);
    const offered = requests.map((request) => (request.body.tools ?? []).length);
    if (format === 'tool') {
      expect(offered.every((count) => count >= 9)).toBe(true);
      expect(results.every((message) => message.callId !== undefined)).toBe(true);
      expect(log.filter((message) => message.role === 'assistant').slice(0, 4).every((message) => message.meta?.toolCalls?.length === 1)).toBe(true);
    } else {
      expect(offered.every((count) => count === 0)).toBe(true);
    }
    const [sessionId] = readdirSync(join(cli.dirs.home, 'sessions'));
    const sessionJson = JSON.parse(readFileSync(join(cli.dirs.home, 'sessions', sessionId ?? '', 'session.json'), 'utf8'));
    expect(sessionJson.toolFormat).toBe(format);
  });

  it('takes the format from fence.toml, and the command line over it', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), 'tool_format = "xml"\n');
    cli.trust();
    cli.server.reply((r) => r.text('Done.'));

    const result = await runFence(['-n', '-m', model, 'hello'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home, ...env() } });

    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('XML tool calls');
    const system = readOnlySessionLog(cli.dirs.home)[0]?.content ?? '';
    expect(system).toContain('<tool-use>');
  });
});

it('refuses an unknown --tool-format with a usage error', async () => {
  const result = await runFence(['-n', '--tool-format', 'json', 'hi'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
  expect(result.exitCode).toBe(2);
  expect(result.stderr).toContain("option '--tool-format <format>' argument 'json' is invalid. Allowed choices are markdown, xml, tool.");
});

it('shows a native call refused for its arguments with its [running …] line, like any other call', async () => {
  cli.server.reply((r) => r.rawToolCall('read', '[1, 2]', 'call_bad').toolCall('read', { path: 'missing.txt' }, 'call_missing'));
  cli.server.reply((r) => r.text('Both failed.'));
  const result = await runFence(['-n', '-m', 'local/test', '--tool-format', 'tool', 'read'], { cwd: cli.dirs.workspace, env: cli.env() });
  expect(result.exitCode).toBe(0);
  const progress = result.stderr.split('\n').filter((line) => /^\[|not usable|does not exist/.test(line));
  expect(progress).toEqual([
    '[running read]',
    expect.stringMatching(/^ {2}The arguments of this read call are not usable \(/),
    '[read failed]',
    '[running read missing.txt]',
    '  missing.txt does not exist',
    '[read failed]',
  ]);
});
