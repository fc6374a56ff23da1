import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { buildToolset, type Toolset } from '../../src/session/toolset';
import type { FenceConfig } from '../../src/config/config';
import { DEFAULT_PTC_CONFIG, type PtcConfig } from '../../src/config/config-schema';
import { runProgram, type ProgramRun } from '../../src/ptc/run-program';
import { writeApproval } from '../../src/ptc/approvals';
import { approvedPrograms, codeHash, programRoots, saveProgram } from '../../src/ptc/saved-programs';
import type { ToolSpec } from '../../src/tools/define-tool';
import { fakeTool } from '../support/fake-tool';
import { useTempSession } from '../support/temp-session';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-program-budget-');
const session = useTempSession();

function config(ptc: Partial<PtcConfig> = {}): FenceConfig {
  return { toolFormat: 'markdown', models: {}, mcpServers: {}, tools: {}, policy: [], ptc: { ...DEFAULT_PTC_CONFIG, ...ptc }, sandbox: { writable: [], denyRead: [], network: false, passEnv: [], ignored: [] }, sources: [] };
}

const sessionRef = () => ({ id: session().id, dir: session().dir });
const roots = () => programRoots(session().home, workspace());

/**
 * Saves `code` as the approved program `name`, allowed to call `tools`: from a run of it with
 * its declared defaults, which make no calls, as a reviewer would approve it.
 */
async function approveProgram(name: string, code: string, tools: string[]): Promise<void> {
  const { trace } = await runProgram({ code, tools: {}, session: sessionRef(), args: { width: 0 } });
  const user = roots()[1];
  if (!user) throw new Error('no user root');
  const saved = saveProgram(roots(), user, name, trace, tools);
  if ('error' in saved) throw new Error(saved.error);
  const why = writeApproval(session().home, { scope: 'user', name, version: saved.record.version, sha256: codeHash(saved.code), tools: saved.record.tools, approvedAt: new Date().toISOString() });
  if (why) throw new Error(why);
}

/** A saved program that calls `callee` `args.width` times at once and gives how many answered. */
function fanOut(callee: string): string {
  return [
    `// intent: call ${callee} many times at once`,
    '// param width: integer = 0',
    `const answers = await gather(Array.from({ length: args.width }, () => ${callee}({ width: args.width })));`,
    'return answers.length;',
  ].join('\n');
}

/** Three levels of approved programs, each calling the next `width` times at once: top → mid → leaf. */
async function approveTree(): Promise<void> {
  await approveProgram('leaf', '// intent: answer one\n// param width: integer = 0\nreturn 1;', []);
  await approveProgram('mid', fanOut('leaf'), ['leaf']);
  await approveProgram('top', fanOut('mid'), ['mid']);
}

function toolset(ptc: Partial<PtcConfig> = {}, extra: ToolSpec[] = []): Toolset {
  return buildToolset(config(ptc), sessionRef(), extra, approvedPrograms(roots(), session().home));
}

async function runPtc(tools: Toolset, code: string, signal?: AbortSignal): Promise<ProgramRun> {
  const ptc = tools.tools.find((tool) => tool.name === 'ptc') as ToolSpec;
  const result = await ptc.execute(ptc.parameters.parse({ code }), makeToolContext(workspace(), signal));
  return result.details as ProgramRun;
}

describe('one budget of sandboxes for a session', () => {
  it('stops saved programs calling each other 16 wide and 3 deep with an error, never over the cap', { timeout: 60_000 }, async () => {
    await approveTree();
    const tools = toolset();
    const cap = DEFAULT_PTC_CONFIG.maxLiveSandboxes;
    const { trace } = await runPtc(tools, 'return await gather(Array.from({ length: 16 }, () => top({ width: 16 })));');
    expect(trace.ok).toBe(false);
    expect(trace.error?.message).toContain(`no sandbox was free for a program called from a program: ${cap} sandboxes are running, the most this session allows at once`);
    expect(tools.budget.peakLive).toBe(cap);
    // The programs still running when the first one failed are stopped, and give their places back.
    await vi.waitFor(() => expect(tools.budget.live).toBe(0));
    expect(tools.budget.peakLive).toBe(cap);
    expect(tools.budget.reservedBytes).toBe(0);
  });

  it('does not deadlock when a program calls a program at the cap: the call fails and can be caught', async () => {
    await approveTree();
    const tools = toolset({ maxLiveSandboxes: 2 });
    const { trace } = await runPtc(tools, 'try { return await top({ width: 1 }); } catch (e) { return e.message; }');
    expect(trace.ok).toBe(true);
    expect(trace.result).toContain('no sandbox was free for a program called from a program: 2 sandboxes are running');
    expect([tools.budget.live, tools.budget.peakLive]).toEqual([0, 2]);
  });

  it('runs programs calling programs that fit, and plain programs, and gives every place back', async () => {
    await approveTree();
    const tools = toolset();
    // The program, top, two mids and four leaves: eight sandboxes alive at once, the cap.
    const nested = await runPtc(tools, 'return await top({ width: 2 });');
    expect(nested.trace.error).toBeUndefined();
    expect(nested.trace.result).toBe(2);
    expect([tools.budget.live, tools.budget.peakLive]).toEqual([0, 8]);
    const plain = await runPtc(tools, 'print("hello"); return 1 + 1;');
    expect(plain.trace.result).toBe(2);
    expect([tools.budget.live, tools.budget.reservedBytes]).toEqual([0, 0]);
  });

  it('gives every place back when the run is aborted while programs it called are running', async () => {
    const waits = fakeTool({
      name: 'wait_for_stop',
      parameters: z.object({}),
      example: {},
      callers: ['program'],
      execute: (_input, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve({ output: 'stopped' }), { once: true })),
    });
    await approveProgram('waiter', '// intent: wait until stopped\n// param width: integer = 0\nif (args.width > 0) await wait_for_stop({});\nreturn 1;', ['wait_for_stop']);
    const tools = toolset({}, [waits.spec]);
    const stop = new AbortController();
    const running = runPtc(tools, 'return await gather([1, 2, 3].map(() => waiter({ width: 1 })));', stop.signal);
    await vi.waitFor(() => expect(waits.calls).toHaveLength(3));
    expect(tools.budget.live).toBe(4);
    stop.abort();
    const { trace } = await running;
    expect(trace.error?.kind).toBe('aborted');
    await vi.waitFor(() => expect(tools.budget.live).toBe(0));
    expect(tools.budget.reservedBytes).toBe(0);
  });
});
