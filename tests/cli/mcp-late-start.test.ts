import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';
import { inputItems } from '../support/fake-llm-wire';

const cli = useCliRun();

/** The plain-script MCP server whose start is slow, endless or failing (see the file). */
const LATE_SERVER = resolve(import.meta.dirname, '../support/mcp-late-server.mjs');

/**
 * A trusted fence.toml in the test's workspace naming the late server as `calc`, with `env`
 * for it and a tag in its arguments to find its process by. Its marks go to `marks/` in the
 * workspace (the server runs in the workspace's sandbox, where that folder is writable).
 * Nothing is cached: the session starts the server.
 */
function configureLate(env: Record<string, string>, extra: Record<string, unknown> = {}): { marks: string; tag: string } {
  const marks = join(cli.dirs.workspace, 'marks');
  mkdirSync(marks, { recursive: true });
  const tag = `late-${randomUUID()}`;
  const calc = { command: process.execPath, args: [LATE_SERVER, tag], env: { MARKS: marks, ...env }, ...extra };
  writeFileSync(join(cli.dirs.workspace, 'fence.toml'), stringify({ mcp: { servers: { calc } } }));
  cli.trust();
  return { marks, tag };
}

/**
 * Records, as each model request arrives, whether the server had written `mark` by then (a
 * route that matches nothing, so the scripted replies answer as queued).
 */
function markSeenAtEachRequest(marks: string, mark: string): boolean[] {
  const seen: boolean[] = [];
  cli.server.route(() => {
    seen.push(existsSync(join(marks, mark)));
    return false;
  }, (r) => r.text('unused'));
  return seen;
}

/** A shell command that returns once the server has written `mark`. */
const waitFor = (marks: string, mark: string) => `until [ -e ${join(marks, mark)} ]; do sleep 0.1; done; echo ${mark}`;

function fence(args: string[]) {
  return runFence(['-n', '-m', 'openai/gpt-test', ...args], { cwd: cli.dirs.workspace, env: cli.env(), timeoutMs: 90_000 });
}

/** fence's own lines on stderr that name the server (not the tool results the progress shows). */
const calcLines = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('fence: ') && line.includes('MCP server calc'));

/** Whether fence's line about the server came after the line it writes once the session is open. */
function saidAfterOpening(stderr: string): boolean {
  const lines = stderr.split('\n');
  const opened = lines.findIndex((line) => line.startsWith('session '));
  const said = lines.findIndex((line) => line.startsWith('fence: MCP server calc'));
  return opened >= 0 && said > opened;
}

/** The processes whose command line holds `tag` (the server's, wherever its sandbox put it). */
function processesTagged(tag: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(tag)) found.push(Number(entry));
    } catch {
      // A process that ended meanwhile.
    }
  }
  return found;
}

describe('an MCP server that is slow to start', () => {
  it('does not hold the first request, and its tools are in the next request natively', { timeout: 90_000 }, async () => {
    const { marks } = configureLate({ ANSWER_AFTER_MS: '3000' });
    const answered = markSeenAtEachRequest(marks, 'answered');
    cli.server
      .reply((r) => r.toolCall('shell', { command: waitFor(marks, 'listed-1') }))
      .reply((r) => r.toolCall('calc_get_sum', { a: 2, b: 3 }))
      .reply((r) => r.text('2 + 3 = 5.'));
    const run = await fence(['--tool-format', 'tool', 'add 2 and 3']);
    expect(run.stderr).not.toContain('MCP server calc');
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('2 + 3 = 5.');
    // The first request went out before the server had answered initialize.
    expect(answered[0]).toBe(false);
    const names = (index: number) => ((cli.server.requests[index]?.body.tools ?? []) as { name: string }[]).map((tool) => tool.name);
    expect(names(0)).not.toContain('calc_get_sum');
    expect(names(1)).toContain('calc_get_sum');
    expect(names(1)).toContain('calc_echo');
    const result = readOnlySessionLog(cli.dirs.home).filter((m) => m.meta?.toolResult)[1];
    expect(result?.meta?.tool).toBe('calc_get_sum');
    expect(result?.content).toBe('The sum is 5');
  });

  it('is told of in markdown by a system message before the next request, and its tools can be called', { timeout: 90_000 }, async () => {
    const { marks } = configureLate({ ANSWER_AFTER_MS: '3000' });
    const answered = markSeenAtEachRequest(marks, 'answered');
    cli.server
      .reply((r) => r.text(`Waiting.\n\n\`\`\`shell\n${waitFor(marks, 'listed-1')}\n\`\`\``))
      .reply((r) => r.text('```call calc_get_sum\n{"a": 4, "b": 5}\n```'))
      .reply((r) => r.text('4 + 5 = 9.'));
    const run = await fence(['add 4 and 5']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('4 + 5 = 9.');
    expect(answered[0]).toBe(false);
    expect(cli.server.requests[0]?.body.instructions).not.toContain('calc_get_sum');
    const log = readOnlySessionLog(cli.dirs.home);
    const notice = log.find((m) => m.role === 'system' && !m.pinned && !m.meta?.toolResult && m.content.includes('MCP server calc'));
    expect(notice?.content).toContain('MCP server calc finished starting');
    expect(notice?.content).toContain('declare function calc_get_sum');
    expect(notice?.content).toContain('```call calc_get_sum');
    // The message came before the second request, which carried it.
    expect(JSON.stringify(inputItems(cli.server.requests[1]?.body ?? {}))).toContain('MCP server calc finished starting');
    const result = log.filter((m) => m.meta?.toolResult)[1];
    expect(result?.meta?.tool).toBe('calc_get_sum');
    expect(result?.content).toBe('The sum is 9');
  });

  it('answers a call to one of its tools made while it is still starting once it has started', { timeout: 90_000 }, async () => {
    const { marks } = configureLate({ ANSWER_AFTER_MS: '3000' });
    const answered = markSeenAtEachRequest(marks, 'answered');
    cli.server.reply((r) => r.toolCall('calc_get_sum', { a: 20, b: 22 })).reply((r) => r.text('42.'));
    const run = await fence(['--tool-format', 'tool', 'add 20 and 22']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('42.');
    expect(answered[0]).toBe(false);
    const result = readOnlySessionLog(cli.dirs.home).find((m) => m.meta?.toolResult);
    expect(result?.meta?.isError).toBeUndefined();
    expect(result?.content).toBe('The sum is 42');
  });

  it('reads a call block as one in markdown while it is still starting, before any tool needs call, and waits for it', { timeout: 90_000 }, async () => {
    const { marks } = configureLate({ ANSWER_AFTER_MS: '3000' });
    const answered = markSeenAtEachRequest(marks, 'answered');
    cli.server.reply((r) => r.text('```call calc_get_sum\n{"a": 1, "b": 2}\n```')).reply((r) => r.text('3.'));
    const run = await fence(['add 1 and 2 with calc_get_sum']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('3.');
    expect(answered[0]).toBe(false);
    // The first request's prompt says what call is for while the server starts.
    expect(cli.server.requests[0]?.body.instructions).toContain('MCP servers still starting (calc)');
    const result = readOnlySessionLog(cli.dirs.home).find((m) => m.meta?.toolResult);
    expect(result?.meta?.tool).toBe('calc_get_sum');
    expect(result?.content).toBe('The sum is 3');
  });
});

describe('an MCP server that does not start', () => {
  it('that never answers costs one line, and the run finishes without waiting for it or leaving it running', { timeout: 90_000 }, async () => {
    const { marks, tag } = configureLate({ NEVER_ANSWER: '1' }, { timeout: 2 });
    cli.server.reply((r) => r.text('No tools needed.'));
    const run = await fence(["hello"]);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('No tools needed.');
    expect(cli.server.requests).toHaveLength(1);
    expect(existsSync(join(marks, 'answered'))).toBe(false);
    const lines = calcLines(run.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^fence: MCP server calc did not start: /);
    // Said when the session ended, not before it opened.
    expect(saidAfterOpening(run.stderr)).toBe(true);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    // Its process ended with the session (bwrap's --die-with-parent ends it at once, or its stop does).
    for (let i = 0; i < 100 && processesTagged(tag).length > 0; i++) await new Promise((done) => setTimeout(done, 50));
    expect(processesTagged(tag)).toEqual([]);
  });

  it('of the user’s own, run outside the sandbox, does not outlive the session either', { timeout: 90_000 }, async () => {
    // The user's config.toml: a server there runs outside the sandbox (no bwrap to end it with fence).
    const config = join(cli.dirs.home, 'xdg-config');
    mkdirSync(join(config, 'fence'), { recursive: true });
    const tag = `late-own-${randomUUID()}`;
    writeFileSync(join(config, 'fence', 'config.toml'), stringify({ mcp: { servers: { calc: { command: process.execPath, args: [LATE_SERVER, tag], env: { NEVER_ANSWER: '1' } } } } }));
    cli.server.reply((r) => r.text('No tools needed.'));
    const run = await runFence(['-n', '-m', 'openai/gpt-test', 'hello'], { cwd: cli.dirs.workspace, env: { ...cli.env(), XDG_CONFIG_HOME: config }, timeoutMs: 90_000 });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('No tools needed.');
    expect(calcLines(run.stderr)).toEqual(['fence: MCP server calc did not start: it was still starting when the session ended']);
    for (let i = 0; i < 100 && processesTagged(tag).length > 0; i++) await new Promise((done) => setTimeout(done, 50));
    expect(processesTagged(tag)).toEqual([]);
  });

  it('costs its line on stderr in the JSON outputs too, whose stdout stays JSON alone', { timeout: 90_000 }, async () => {
    configureLate({ NEVER_ANSWER: '1' }, { timeout: 2 });
    cli.server.reply((r) => r.text('No tools needed.')).reply((r) => r.text('Still none.'));
    const json = await fence(['--output-format', 'json', 'hello']);
    expect(json.exitCode, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ result: 'No tools needed.', is_error: false });
    expect(calcLines(json.stderr)).toHaveLength(1);
    const stream = await fence(['--output-format', 'stream-json', 'hello']);
    expect(stream.exitCode, stream.stderr).toBe(0);
    const lines = stream.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; result?: string });
    expect(lines.at(-1)).toMatchObject({ type: 'result', result: 'Still none.' });
    expect(calcLines(stream.stderr)).toHaveLength(1);
  });

  it('that exits before it answers costs one line when it fails, and a call to its tools says why', { timeout: 90_000 }, async () => {
    const { marks } = configureLate({ EXIT_AFTER_MS: '2000' });
    const exited = markSeenAtEachRequest(marks, 'exiting');
    cli.server
      .reply((r) => r.toolCall('shell', { command: waitFor(marks, 'exiting') }))
      .reply((r) => r.toolCall('calc_get_sum', { a: 1, b: 1 }))
      .reply((r) => r.text('The calculator is not available.'));
    const run = await fence(['--tool-format', 'tool', 'add 1 and 1']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('The calculator is not available.');
    expect(exited[0]).toBe(false);
    const lines = calcLines(run.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^fence: MCP server calc did not start: .*code 3/);
    expect(saidAfterOpening(run.stderr)).toBe(true);
    const result = readOnlySessionLog(cli.dirs.home).filter((m) => m.meta?.toolResult)[1];
    expect(result?.meta?.isError).toBe(true);
    expect(result?.content).toMatch(/MCP server calc did not start \(.*code 3.*\)/);
    expect(result?.content).toContain('no LATE_TOKEN given');
  });
});

describe('an MCP server whose tools change while the session runs', () => {
  it('goes on with its new list: a tool it dropped leaves the next request and a call to it is refused saying why', { timeout: 90_000 }, async () => {
    const { marks } = configureLate({});
    cli.server
      .reply((r) => r.toolCall('shell', { command: waitFor(marks, 'listed-1') }))
      .reply((r) => r.toolCall('calc_drop_echo', {}))
      .reply((r) => r.toolCall('shell', { command: waitFor(marks, 'listed-2') }))
      .reply((r) => r.toolCall('calc_echo', { text: 'hi' }))
      .reply((r) => r.text('Echo is gone.'));
    const run = await fence(['--tool-format', 'tool', 'drop echo, then try it']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('Echo is gone.');
    const names = (index: number) => ((cli.server.requests[index]?.body.tools ?? []) as { name: string }[]).map((tool) => tool.name);
    expect(names(1)).toContain('calc_echo');
    expect(names(3)).toContain('calc_get_sum');
    expect(names(3)).not.toContain('calc_echo');
    const results = readOnlySessionLog(cli.dirs.home).filter((m) => m.meta?.toolResult);
    expect(results[1]?.content).toBe('echo dropped');
    expect(results[3]?.meta?.isError).toBe(true);
    expect(results[3]?.content).toBe('calc_echo is no longer offered: MCP server calc no longer lists it.');
  });
});
