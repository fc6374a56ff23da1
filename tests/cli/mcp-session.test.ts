import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { mcpTestServer } from '../support/mcp-test-config';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** The system prompt of request `index`: `instructions` of the Responses API (how openai/ models are spoken to). */
function systemPromptOf(index: number): string {
  return cli.server.requests[index]?.body.instructions ?? '';
}

/**
 * A fence.toml in the test's workspace that starts the test MCP server as `calc` (with `args`),
 * trusted, and its tools listed by `fence mcp list`: a session takes them from the cache, so
 * the first request has them (a server not listed yet joins later, see mcp-late-*.test.ts).
 */
async function configureCalc(args: string[] = []): Promise<void> {
  writeFileSync(join(cli.dirs.workspace, 'fence.toml'), stringify({ mcp: { servers: { calc: mcpTestServer(args) } } }));
  cli.trust();
  const listed = await runFence(['mcp', 'list'], { cwd: cli.dirs.workspace, env: cli.env(), timeoutMs: 60_000 });
  expect(listed.exitCode).toBe(0);
}

function fence(args: string[]) {
  return runFence(['-n', '-m', 'openai/gpt-test', ...args], { cwd: cli.dirs.workspace, env: cli.env(), timeoutMs: 60_000 });
}

describe('a session with an MCP server', () => {
  it('lets the model call a server tool natively, and sends the tool as a definition', { timeout: 60_000 }, async () => {
    await configureCalc();
    cli.server.reply((r) => r.toolCall('calc_get_sum', { a: 2, b: 3 })).reply((r) => r.text('2 + 3 = 5.'));
    const run = await fence(['--tool-format', 'tool', 'add 2 and 3']);
    expect(run.stderr).not.toContain('did not start');
    expect(run.exitCode).toBe(0);
    expect(run.stdout.trim()).toBe('2 + 3 = 5.');
    const tools = JSON.stringify(cli.server.requests[0]?.body.tools);
    expect(tools).toContain('calc_get_sum');
    expect(tools).toContain('the first number');
    const result = readOnlySessionLog(cli.dirs.home).find((m) => m.meta?.toolResult);
    expect(result?.meta?.tool).toBe('calc_get_sum');
    expect(result?.content).toContain('The sum is 5');
  });

  it('lets the model call a server tool with a call block in markdown, which the prompt explains', { timeout: 60_000 }, async () => {
    await configureCalc();
    cli.server.reply((r) => r.text('```call calc_get_sum\n{"a": 2, "b": 5}\n```')).reply((r) => r.text('2 + 5 = 7.'));
    const run = await fence(['add 2 and 5']);
    expect(run.exitCode).toBe(0);
    expect(run.stdout.trim()).toBe('2 + 5 = 7.');
    expect(systemPromptOf(0)).toContain('## call');
    const result = readOnlySessionLog(cli.dirs.home).find((m) => m.meta?.toolResult);
    expect(result?.meta?.tool).toBe('calc_get_sum');
    expect(result?.content).toContain('The sum is 7');
  });

  it("answers a server crash mid-call as the call's result, and the session finishes", { timeout: 60_000 }, async () => {
    await configureCalc();
    cli.server
      .reply((r) => r.toolCall('calc_crash', {}))
      .reply((r) => r.toolCall('calc_get_sum', { a: 1, b: 1 }))
      .reply((r) => r.text('Recovered.'));
    const run = await fence(['--tool-format', 'tool', 'try the server']);
    expect(run.exitCode).toBe(0);
    expect(run.stdout.trim()).toBe('Recovered.');
    const results = readOnlySessionLog(cli.dirs.home).filter((m) => m.meta?.toolResult);
    expect(results[0]?.meta?.isError).toBe(true);
    expect(results[0]?.content).toMatch(/server calc exited \(code 1\) during crash/);
    // The next call started the server again.
    expect(results[1]?.content).toContain('The sum is 2');
  });

  it('lists 50 server tools by name, describes one on demand and lets a program call it', { timeout: 60_000 }, async () => {
    await configureCalc(['--many', '50']);
    cli.server
      .reply((r) => r.text('```describe calc_tool_7\n```'))
      .reply((r) => r.text('```ptc\n// intent: try tool 7\nprint(await calc_tool_7({ x: "a" }));\n```'))
      .reply((r) => r.text('Tool 7 works.'));
    const run = await fence(['try tool 7']);
    expect(run.exitCode).toBe(0);
    expect(run.stdout.trim()).toBe('Tool 7 works.');
    const system = systemPromptOf(0);
    expect(system).toContain('calc_tool_7 — Tool number 7.');
    expect(system).not.toContain('declare function calc_tool_7');
    const results = readOnlySessionLog(cli.dirs.home).filter((m) => m.meta?.toolResult);
    expect(results.map((m) => m.meta?.tool)).toEqual(['describe', 'ptc']);
    expect(results[0]?.content).toContain('## calc_tool_7');
    expect(results[0]?.content).toContain('x?: string');
    expect(results[1]?.content).toContain('tool 7');
  });

  it('counts 400 server tools instead of defining them, and lets the model call one natively through call', { timeout: 60_000 }, async () => {
    await configureCalc(['--many', '400']);
    cli.server.reply((r) => r.toolCall('call', { tool: 'calc_tool_250', arguments: { x: 'a' } })).reply((r) => r.text('Tool 250 works.'));
    const run = await fence(['--tool-format', 'tool', 'try tool 250']);
    expect(run.exitCode).toBe(0);
    expect(run.stdout.trim()).toBe('Tool 250 works.');
    // Responses API function tools: name and description at the top of each.
    const tools = cli.server.requests[0]?.body.tools as { name: string; description: string }[];
    expect(tools.filter((t) => t.name.startsWith('calc_')).map((t) => t.name)).toEqual([]);
    expect(tools.find((t) => t.name === 'call')?.description).toContain('- MCP server calc: 408 tools');
    const result = readOnlySessionLog(cli.dirs.home).find((m) => m.meta?.toolResult);
    expect(result?.meta?.tool).toBe('calc_tool_250');
    expect(result?.content).toBe('tool 250');
  });

  it('goes on without a server that does not start, saying so in one line', { timeout: 60_000 }, async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), stringify({ mcp: { servers: { calc: mcpTestServer(['--fail-start']) } } }));
    cli.trust();
    cli.server.reply((r) => r.text('No tools needed.'));
    const run = await fence(['hello']);
    expect(run.exitCode).toBe(0);
    expect(run.stdout.trim()).toBe('No tools needed.');
    const lines = run.stderr.split('\n').filter((line) => line.includes('MCP server calc did not start'));
    expect(lines).toHaveLength(1);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});
