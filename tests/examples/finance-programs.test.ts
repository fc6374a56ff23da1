import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { listTraces, type ProgramTrace } from '../../src/ptc/trace';
import { readMessages } from '../../src/conversation/session-store';
import { runFence, useCliRun } from '../support/run-cli';

const mcpExample = fileURLToPath(new URL('../../examples/finance/mcp', import.meta.url));
const cli = useCliRun();

/** fence in the MCP finance example, with the test's FENCE_HOME and fake server. */
function fence(args: string[]) {
  return runFence(args, { cwd: mcpExample, env: cli.env(), timeoutMs: 60_000 });
}

/** The messages of the session named `name`. */
function sessionLog(name: string) {
  return readMessages(join(cli.dirs.home, 'sessions', name));
}

/** Every trace the sessions of the test's FENCE_HOME wrote. */
function allTraces(): ProgramTrace[] {
  return listTraces(cli.dirs.home).map((stored) => stored.trace);
}

describe('the finance program as procedural memory', () => {
  it('is saved from its trace, tested, approved, called as a tool by a fresh session, and gone once revoked', { timeout: 180_000 }, async () => {
    // 0. The person trusts the example's folder, so its fence.toml starts the server.
    const trusted = await fence(['trust']);
    expect(trusted.exitCode).toBe(0);
    expect(trusted.stdout).toContain('MCP server finance: runs node ../mcp-server.js');

    // 1. It runs once against the MCP server and leaves a trace.
    const first = await fence(['run', 'over-limit.js']);
    expect(first.exitCode).toBe(0);
    const expected = JSON.parse(first.stdout) as string[];
    expect(expected.length).toBeGreaterThan(0);
    const traceId = /trace (\S+) \(17 tool calls\)/.exec(first.stderr)?.[1];
    expect(traceId).toBeDefined();

    // 2. Saved, with the run as its recorded test (replayed before it is kept).
    const save = await fence(['programs', 'save', 'over_limit', '--from-trace', String(traceId)]);
    expect(save.stderr).toBe('');
    expect(save.exitCode).toBe(0);
    expect(save.stdout).toContain('saved over_limit@1');
    expect(save.stdout).toContain('department: string = "engineering"');
    expect(save.stdout).toContain('calls: finance_get_expenses, finance_get_limits, finance_get_members');

    // 3. Tested with no server: the replay gives the same names from the recording.
    const test = await fence(['programs', 'test', 'over_limit']);
    expect(test.exitCode).toBe(0);
    expect(test.stdout).toContain('1 of 1 test of over_limit@1 passed');

    // Not offered before approval.
    cli.server.reply((r) => r.text('Nothing to do.'));
    expect((await fence(['-n', '-m', 'openai/gpt-test', '--tool-format', 'tool', 'hello'])).exitCode).toBe(0);
    expect(JSON.stringify(cli.server.requests[0]?.body.tools)).not.toContain('over_limit');

    // 4. Approved: a fresh session offers it, typed, and the model calls it directly.
    const approve = await fence(['programs', 'approve', 'over_limit@1']);
    expect(approve.exitCode).toBe(0);
    cli.server.reply((r) => r.toolCall('over_limit', { department: 'engineering' })).reply((r) => r.text('Listed them.'));
    const native = await fence(['-n', '-m', 'openai/gpt-test', '--name', 'native', '--tool-format', 'tool', 'who is over the travel limit in engineering?']);
    expect(native.exitCode).toBe(0);
    expect(native.stdout.trim()).toBe('Listed them.');
    // openai/ models take their tools as Responses function tools: name and parameters at the top.
    const offered = cli.server.requests[1]?.body.tools as { name: string; parameters: unknown }[];
    const tool = offered.find((t) => t.name === 'over_limit');
    expect(tool?.parameters).toMatchObject({ properties: { department: { type: 'string', default: 'engineering' } } });
    const result = sessionLog('native').find((m) => m.meta?.toolResult && m.meta.tool === 'over_limit');
    expect(result?.meta?.isError).toBeFalsy();
    for (const name of expected) expect(result?.content).toContain(name);
    // It ran as its own principal, over the real server this time.
    const run = allTraces().find((t) => t.principal === 'program:over_limit@1');
    expect(run?.ok).toBe(true);
    expect(run?.calls).toHaveLength(17);
    expect(run?.args).toEqual({ department: 'engineering' });

    // 5. A model's program calls it like any tool and gets its return value.
    cli.server
      .reply((r) => r.text('```ptc\n// intent: count who is over\nconst names = await over_limit({});\nprint(names.length, names[0]);\n```'))
      .reply((r) => r.text('Counted.'));
    const viaProgram = await fence(['-n', '-m', 'openai/gpt-test', '--name', 'program', 'how many are over?']);
    expect(viaProgram.exitCode).toBe(0);
    const printed = sessionLog('program').find((m) => m.meta?.toolResult && m.meta.tool === 'ptc');
    expect(printed?.content).toContain(`${expected.length} ${expected[0]}`);

    // In markdown, a call block reaches it directly too, with JSON arguments.
    cli.server.reply((r) => r.text('```call over_limit\n{"department": "engineering"}\n```')).reply((r) => r.text('Listed.'));
    expect((await fence(['-n', '-m', 'openai/gpt-test', '--name', 'block', 'who is over?'])).exitCode).toBe(0);
    const direct = sessionLog('block').find((m) => m.meta?.toolResult);
    expect(direct?.meta?.tool).toBe('over_limit');
    expect(direct?.content).toContain(`Result: ${JSON.stringify(expected, null, 2)}`);

    // 6. Revoked: the next session does not offer it.
    expect((await fence(['programs', 'revoke', 'over_limit@1'])).exitCode).toBe(0);
    const before = cli.server.requests.length;
    cli.server.reply((r) => r.text('Nothing to do.'));
    expect((await fence(['-n', '-m', 'openai/gpt-test', '--tool-format', 'tool', 'hello'])).exitCode).toBe(0);
    expect(JSON.stringify(cli.server.requests[before]?.body.tools)).not.toContain('over_limit');
    const list = await fence(['programs', 'list']);
    expect(list.stdout).toMatch(/over_limit@1\s+revoked/);
  });
});
