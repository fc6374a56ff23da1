/**
 * Saved programs: how long replaying a recorded test takes as the number of recorded calls
 * grows (in-process, the real sandbox), and the wall time of `fence programs test` on the
 * finance program saved from a real run against its MCP server.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { trustWorkspace } from '../src/config/trust';
import { replayTest } from '../src/ptc/replay-test';
import { runProgram, type ProgramTool } from '../src/ptc/run-program';
import { writeApproval } from '../src/ptc/approvals';
import { approvedPrograms, codeHash, programRoots, testFromTrace, type ProgramRecord } from '../src/ptc/saved-programs';
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
  // The person trusts the example's folder, so its fence.toml starts the server.
  trustWorkspace(MCP_EXAMPLE, env.FENCE_HOME);
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

/**
 * What every session start pays for saved programs: finding the offered versions among
 * `programs` programs of `versions` versions each (the newest approved, each record holding one
 * recorded test of 50 calls), median of 7.
 */
export function offeredProgramsMs(programs = 100, versions = 5): number {
  const home = mkdtempSync(join(tmpdir(), 'fence-bench-offered-'));
  for (let p = 0; p < programs; p++) {
    const dir = join(home, 'programs', `program_${p}`);
    mkdirSync(dir, { recursive: true });
    for (let v = 1; v <= versions; v++) {
      const code = `// intent: program ${p}, version ${v}\n${'print(1);\n'.repeat(200)}`;
      const calls = Array.from({ length: 50 }, (_, i) => ({ tool: 'lookup', args: { i }, ok: true, result: { text: 'x'.repeat(200) } }));
      const record: ProgramRecord = {
        name: `program_${p}`,
        version: v,
        sha256: codeHash(code),
        savedAt: new Date(0).toISOString(),
        tools: ['lookup'],
        fromTrace: 'bench',
        sessionId: 'bench',
        status: v === versions ? 'approved' : 'saved',
        tests: [{ fromTrace: 'bench', recordedAt: new Date(0).toISOString(), calls, expect: { ok: true, stdout: '1\n' } }],
      };
      writeFileSync(join(dir, `v${v}.js`), code);
      writeFileSync(join(dir, `v${v}.json`), JSON.stringify(record));
      if (v === versions) writeApproval(home, { scope: 'user', name: record.name, version: v, sha256: record.sha256, tools: record.tools, approvedAt: record.savedAt });
    }
  }
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    const offered = approvedPrograms(programRoots(home, join(home, 'no-workspace')), home);
    times.push(performance.now() - t0);
    if (offered.length !== programs) throw new Error(`expected ${programs} programs offered, got ${offered.length}`);
  }
  return median(times);
}
