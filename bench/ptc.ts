/**
 * Program figures for `npm run bench`: sandbox start-up and per-call cost, and the finance
 * task done conventionally (one tool call per model turn) and as one program, measured on
 * the requests a scripted model receives.
 */
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { Agent } from '../src/agent/agent';
import { openSession } from '../src/session/open-session';
import { loadConfig } from '../src/config/config';
import { trustWorkspace } from '../src/config/trust';
import { createProvider } from '../src/llm/create-provider';
import { resolveModel } from '../src/llm/models';
import { runInVm } from '../src/program-vm/run-in-vm';
import { startFakeLlm, type FakeLlm } from '../tests/support/fake-llm';

const FINANCE = resolve(import.meta.dirname, '../examples/finance');

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** First sandbox of the process, later ones, and the cost of one host call. */
export async function sandboxFigures(): Promise<{ firstMs: number; laterMs: number; perCallUs: number }> {
  let t0 = performance.now();
  await runInVm({ code: 'return 1', functions: {} });
  const firstMs = performance.now() - t0;
  const later: number[] = [];
  for (let i = 0; i < 30; i++) {
    t0 = performance.now();
    await runInVm({ code: 'return 1', functions: {} });
    later.push(performance.now() - t0);
  }
  const calls = 20_000;
  const functions = { noop: async () => 1 };
  const base: number[] = [];
  const withCalls: number[] = [];
  for (let i = 0; i < 5; i++) {
    t0 = performance.now();
    await runInVm({ code: `let s = 0; for (let i = 0; i < ${calls}; i++) s += 1; return s`, functions });
    base.push(performance.now() - t0);
    t0 = performance.now();
    await runInVm({ code: `let s = 0; for (let i = 0; i < ${calls}; i++) s += await noop({}); return s`, functions, limits: { maxToolCalls: calls } });
    withCalls.push(performance.now() - t0);
  }
  return { firstMs, laterMs: median(later), perCallUs: ((median(withCalls) - median(base)) / calls) * 1000 };
}

/** What the model was sent over one scripted run. */
export interface ContextFigures {
  roundTrips: number;
  bytesSent: number;
  /** Characters / 4: the same rough count for both ways of working. */
  tokensSent: number;
}

const ptcBlock = (code: string) => `\`\`\`ptc\n${code}\n\`\`\`\n`;

async function scriptedRun(workspace: string, script: (server: FakeLlm) => void): Promise<ContextFigures> {
  const server = await startFakeLlm();
  const home = mkdtempSync(join(tmpdir(), 'fence-bench-home-'));
  try {
    script(server);
    const resolved = resolveModel('local/bench', { OPENAI_BASE_URL: server.openaiBaseURL });
    if ('error' in resolved) throw new Error(resolved.error);
    // The person trusts the example's folder, so its fence.toml registers the tools.
    trustWorkspace(workspace, home);
    const loaded = loadConfig({ workspace, env: { FENCE_HOME: home } });
    if ('error' in loaded) throw new Error(loaded.error);
    const controller = new AbortController();
    const session = await openSession({ home, workspace, modelId: resolved.id, config: loaded.config, signal: controller.signal });
    try {
      const agent = new Agent({
        provider: await createProvider(resolved),
        modelId: resolved.id,
        model: resolved.model,
        registry: session.registry,
        store: session.store,
        toolContext: session.toolContext,
        rules: session.rules,
        maxTurns: 10_000,
      });
      const outcome = await agent.run('Who in engineering spent more on travel than their level allows?');
      if (outcome.status !== 'done') throw new Error(`the scripted run ended with ${outcome.status}`);
    } finally {
      await session.close();
    }
    const bytes = server.requests.reduce((sum, r) => sum + Buffer.byteLength(JSON.stringify(r.body)), 0);
    return { roundTrips: server.requests.length, bytesSent: bytes, tokensSent: Math.round(bytes / 4) };
  } finally {
    await server.close();
  }
}

/** The finance task for `count` staff, conventionally and as one program. */
export async function financeFigures(count: number): Promise<{ staff: number; engineers: number; conventional: ContextFigures; program: ContextFigures }> {
  const workspace = mkdtempSync(join(tmpdir(), 'fence-bench-finance-'));
  cpSync(FINANCE, workspace, { recursive: true });
  await execa(process.execPath, ['generate-data.js', '--count', String(count)], { cwd: workspace });
  const members = JSON.parse((await execa(process.execPath, ['tools/get-members.js'], { cwd: workspace, input: '{"department":"engineering"}' })).stdout) as {
    id: string;
    level: string;
  }[];
  // One call per turn, each result printed whole into the conversation, as plain tool calling does.
  const oneCall = (call: string) => ptcBlock(`print(JSON.stringify(await ${call}));`);
  const conventional = await scriptedRun(workspace, (server) => {
    server.reply((r) => r.text(oneCall('get_members({ department: "engineering" })')));
    for (const m of members) server.reply((r) => r.text(oneCall(`get_expenses({ id: "${m.id}" })`)));
    const levels = JSON.stringify([...new Set(members.map((m) => m.level))]);
    server.reply((r) => r.text(oneCall(`get_limits({ levels: ${levels} })`)));
    server.reply((r) => r.text('These engineers are over their limit.'));
  });
  const program = await scriptedRun(workspace, (server) => {
    server.reply((r) => r.text(ptcBlock(FINANCE_PROGRAM)));
    server.reply((r) => r.text('These engineers are over their limit.'));
  });
  return { staff: count, engineers: members.length, conventional, program };
}

const FINANCE_PROGRAM = [
  '// intent: find engineering staff over their travel limit',
  'const members = await get_members({ department: "engineering" });',
  'const expenses = await gather(members.map(m => get_expenses({ id: m.id })));',
  'const limits = await get_limits({ levels: unique(members.map(m => m.level)) });',
  'const total = (list) => list.reduce((sum, e) => sum + e.amount, 0);',
  'print(members.filter((m, i) => total(expenses[i]) > limits[m.level]).map(m => m.name));',
].join('\n');
