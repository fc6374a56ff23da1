/**
 * MCP servers at session start: from spawning `fence -n` in the finance example's MCP
 * workspace to the fake model server having the first request, once with an empty FENCE_HOME
 * (the server is started beside the first request, which does not wait for it) and once with
 * its tools in the cache, put there by `fence mcp list` (the server is not started, since the
 * prompt needs no tool).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { trustWorkspace } from '../src/config/trust';
import { startFakeLlm } from '../tests/support/fake-llm';
import { median } from './ptc';

const BIN = resolve(import.meta.dirname, '../bin/fence.js');
const MCP_EXAMPLE = resolve(import.meta.dirname, '../examples/finance/mcp');

/** Time to the first request of one `fence -n` run with `home` as FENCE_HOME. */
async function toFirstRequest(home: string): Promise<number> {
  const server = await startFakeLlm();
  try {
    server.reply((r) => r.text('Hello.'));
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', HOME: home, FENCE_HOME: home, OPENAI_BASE_URL: server.openaiBaseURL };
    // The person trusts the example's folder, so its fence.toml starts the server.
    trustWorkspace(MCP_EXAMPLE, home);
    const t0 = performance.now();
    const run = execa(process.execPath, [BIN, '-n', '-m', 'local/bench', 'hello'], { cwd: MCP_EXAMPLE, env, extendEnv: false, input: '' });
    await server.waitForRequests(1);
    const ms = (server.requests[0]?.receivedAt ?? Number.NaN) - t0;
    await run;
    return ms;
  } finally {
    await server.close();
  }
}

/** Medians of 7 runs: with a fresh FENCE_HOME each time, and with one whose cache has the server's tools. */
export async function mcpStartFigures(): Promise<{ listedMs: number; cachedMs: number }> {
  const listed: number[] = [];
  for (let i = 0; i < 7; i++) listed.push(await toFirstRequest(mkdtempSync(join(tmpdir(), 'fence-bench-mcp-'))));
  const warm = mkdtempSync(join(tmpdir(), 'fence-bench-mcp-'));
  // A run no longer waits for the listing, so it may end before the cache is written: mcp list waits.
  trustWorkspace(MCP_EXAMPLE, warm);
  await execa(process.execPath, [BIN, 'mcp', 'list'], { cwd: MCP_EXAMPLE, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', HOME: warm, FENCE_HOME: warm }, extendEnv: false, input: '' });
  const cached: number[] = [];
  for (let i = 0; i < 7; i++) cached.push(await toFirstRequest(warm));
  return { listedMs: median(listed), cachedMs: median(cached) };
}
