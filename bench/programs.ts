/**
 * Saved programs: how long replaying a recorded test takes as the number of recorded calls
 * grows (in-process, the real sandbox), and the wall time of `fence programs test` on the
 * finance program saved from a real run against its MCP server.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { replayTest } from '../src/ptc/replay-test';
import { runProgram, type ProgramTool } from '../src/ptc/run-program';
import { testFromTrace } from '../src/ptc/saved-programs';
import { median } from './ptc';

const BIN = resolve(import.meta.dirname, '../bin/fence.js');
const MCP_EXAMPLE = resolve(import.meta.dirname, '../examples/finance/mcp');

/** A lookup that answers at once with a small record. */
const lookup: ProgramTool = async (args) => ({ decision: { action: 'allow' }, ok: true, value: { id: (args as { id: number }).id, amount: 12.5 } });

/** Median time to replay a recorded run of `calls` parallel lookups. */
export async function replayFigures(calls: number): Promise<{ calls: number; ms: number }> {
  const code = `const ids = Array.from({ length: ${calls} }, (_, i) => i);\nconst rows = await gather(ids.map((id) => lookup({ id })));\nprint(rows.reduce((s, r) => s + r.amount, 0));`;
  const session = { id: 'bench', dir: mkdtempSync(join(tmpdir(), 'fence-bench-programs-')) };
  const { trace } = await runProgram({ code, tools: { lookup }, session });
  if (!trace.ok) throw new Error(`the bench program failed: ${trace.error?.message}`);
  const test = testFromTrace(trace);
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    const outcome = await replayTest(code, test, { tools: ['lookup'] });
    times.push(performance.now() - t0);
    if (!outcome.passed) throw new Error(`the replay failed: ${outcome.problems.join('; ')}`);
  }
  return { calls, ms: median(times) };
}

/** Wall time of `fence programs test over_limit` (17 recorded calls), saved from a real run. */
export async function programsTestWallTime(): Promise<number> {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', FENCE_HOME: mkdtempSync(join(tmpdir(), 'fence-bench-home-')) };
  const run = await execa(process.execPath, [BIN, 'run', 'over-limit.js'], { cwd: MCP_EXAMPLE, env, extendEnv: false });
  const trace = /trace (\S+)/.exec(run.stderr)?.[1];
  if (!trace) throw new Error(`no trace from fence run: ${run.stderr}`);
  await execa(process.execPath, [BIN, 'programs', 'save', 'over_limit', '--from-trace', trace], { cwd: MCP_EXAMPLE, env, extendEnv: false });
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    await execa(process.execPath, [BIN, 'programs', 'test', 'over_limit'], { cwd: MCP_EXAMPLE, env, extendEnv: false });
    times.push(performance.now() - t0);
  }
  return median(times);
}
