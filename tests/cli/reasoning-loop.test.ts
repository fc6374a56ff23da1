import { describe, expect, it } from 'vitest';
import { checkThinkingReturned, checkToolCallPairing } from '../support/fake-llm';
import { runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** The two APIs that carry reasoning state, each with a model that takes a level and the environment that points it at the fake server. */
const apis = [
  { name: 'Anthropic extended thinking', model: 'anthropic/claude-test', env: () => ({ ANTHROPIC_BASE_URL: cli.server.url, ANTHROPIC_API_KEY: 'test-key' }) },
  { name: 'the OpenAI Responses API', model: 'openai/gpt-test', env: () => ({ OPENAI_BASE_URL: cli.server.openaiBaseURL }) },
];

describe.each(apis)('a tool loop with reasoning on, through $name', ({ model, env }) => {
  it('sends the model its own reasoning back unchanged in native calls, and prints the answer alone', async () => {
    cli.server.reply((r) => r.thinking('The shell will tell me.').toolCall('shell', { command: 'echo from-the-shell' }, 'call_one'));
    cli.server.reply((r) => r.thinking('It printed the word.').text('The shell said from-the-shell.'));
    const run = await runFence(['-n', '-m', model, '--reasoning', 'medium', '--tool-format', 'tool', 'what does the shell say?'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home, ...env() } });
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('The shell said from-the-shell.');
    const second = cli.server.requests[1];
    if (!second) throw new Error('no second request');
    expect(checkToolCallPairing(second)).toEqual([]);
    const firstReply = cli.server.issued.filter((state) => state.request === 0);
    expect(firstReply.length).toBe(1);
    expect(checkThinkingReturned(second, firstReply)).toEqual([]);
  });

  it('keeps the reasoning of a reply cut at its first markdown block, and sends it back before the text', async () => {
    cli.server.reply((r) => r.thinking('A command will do.').text('Let me look.\n\n```shell\necho from-the-shell\n```\n\nAnd more text the stream never keeps.'));
    cli.server.reply((r) => r.text('The shell said from-the-shell.'));
    const run = await runFence(['-n', '-m', model, '--reasoning', 'low', 'what does the shell say?'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home, ...env() } });
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('The shell said from-the-shell.');
    const second = cli.server.requests[1];
    if (!second) throw new Error('no second request');
    expect(checkThinkingReturned(second, cli.server.issued.filter((state) => state.request === 0))).toEqual([]);
    expect(JSON.stringify(second.body)).not.toContain('And more text');
  });

  it('does the same in the XML format, cut at its first <tool-use>', async () => {
    cli.server.reply((r) => r.thinking('A command will do.').text('Let me look.\n<tool-use><shell>echo from-the-shell</shell></tool-use>\nAnd more text the stream never keeps.'));
    cli.server.reply((r) => r.text('The shell said from-the-shell.'));
    const run = await runFence(['-n', '-m', model, '--reasoning', 'low', '--tool-format', 'xml', 'what does the shell say?'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home, ...env() } });
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('The shell said from-the-shell.');
    const second = cli.server.requests[1];
    if (!second) throw new Error('no second request');
    expect(JSON.stringify(second.body)).toContain('from-the-shell');
    expect(checkThinkingReturned(second, cli.server.issued.filter((state) => state.request === 0))).toEqual([]);
    expect(JSON.stringify(second.body)).not.toContain('And more text');
  });

  it('sends the stored reasoning back after a run stopped mid tool loop is resumed', async () => {
    cli.server.reply((r) => r.thinking('First the shell.').toolCall('shell', { command: 'echo from-the-shell' }, 'call_one'));
    cli.server.reply((r) => r.text('The shell said from-the-shell.'));
    const fence = (args: string[]) => runFence(['-m', model, '--reasoning', 'high', '--tool-format', 'tool', '-n', ...args], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home, ...env() } });
    const stopped = await fence(['--name', 'halfway', '--max-turns', '1', 'what does the shell say?']);
    expect(stopped.exitCode).not.toBe(0);
    expect(cli.server.requests).toHaveLength(1);
    const resumed = await fence(['--resume', 'halfway']);
    expect(resumed.exitCode).toBe(0);
    expect(resumed.stdout).toBe('The shell said from-the-shell.');
    const second = cli.server.requests[1];
    if (!second) throw new Error('no second request');
    expect(checkThinkingReturned(second, cli.server.issued.filter((state) => state.request === 0))).toEqual([]);
  });
});
