/**
 * Reasoning figures for `npm run bench`: the same 50-step native tool loop, with reasoning on,
 * through the built CLI against the fake server, once over the Responses API (reasoning items
 * sent back every turn) and once over Chat Completions (`[providers.openai] api = "chat"`,
 * where nothing of the reasoning comes back). Each reply thinks, then calls `shell` with an
 * `echo` of its step; the last one answers. Measured: the size of the requests (characters of
 * the body as sent, and that over four as a token estimate) early, midway and last, and the
 * harness time of a step: the reply's last frame to the next request's arrival, the command
 * included.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import { startFakeLlm } from '../tests/support/fake-llm';
import { median } from './ptc';

const BIN = resolve(import.meta.dirname, '../bin/fence.js');

/** What one API's run measured. */
export interface ReasoningRun {
  api: 'responses' | 'chat';
  /** Request body characters at steps 10, 25 and 50. */
  chars: [number, number, number];
  /** Median harness time of a step, in ms. */
  stepMs: number;
}

/** Steps of the loop: replies that call a tool before the one that answers. */
const STEPS = 50;

/** Thinking of about the length a real model writes before a small command. */
const THOUGHT = 'The command should settle it; I will run it and read what it prints before deciding the next step.';

/** Runs the loop over one API in a fresh workspace under `root`. */
async function runOne(root: string, api: 'responses' | 'chat'): Promise<ReasoningRun> {
  const server = await startFakeLlm();
  const dir = mkdtempSync(join(root, `reasoning-${api}-`));
  const workspace = join(dir, 'work');
  const xdg = join(dir, 'xdg');
  mkdirSync(workspace);
  mkdirSync(join(xdg, 'fence'), { recursive: true });
  writeFileSync(join(xdg, 'fence', 'config.toml'), `[providers.openai]\napi = "${api}"\n`);
  try {
    for (let step = 0; step < STEPS; step++) server.reply((r) => r.thinking(`${THOUGHT} (step ${step})`).toolCall('shell', { command: `echo step ${step}` }));
    server.reply((r) => r.text('All fifty commands ran.'));
    const run = await execa(process.execPath, [BIN, '-n', '-m', 'openai/gpt-bench', '--tool-format', 'tool', '--reasoning', 'medium', '--max-turns', String(STEPS + 5), 'run the checks'], {
      cwd: workspace,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, FENCE_HOME: join(dir, 'home'), XDG_CONFIG_HOME: xdg, OPENAI_BASE_URL: server.openaiBaseURL, OPENAI_API_KEY: 'bench' },
      extendEnv: false,
      input: '',
      reject: false,
    });
    if (run.exitCode !== 0) throw new Error(`the ${api} run failed: ${run.stderr}`);
    const requests = server.requests;
    const size = (index: number) => JSON.stringify(requests[index]?.body ?? {}).length;
    const steps: number[] = [];
    for (let i = 1; i < requests.length; i++) {
      const sent = requests[i - 1]?.lastFrameAt;
      const next = requests[i]?.arrivedAt;
      if (sent !== undefined && next !== undefined) steps.push(next - sent);
    }
    return { api, chars: [size(10), size(25), size(STEPS)], stepMs: median(steps) };
  } finally {
    await server.close();
  }
}

/** The loop over both APIs (see the module's comment). */
export async function reasoningFigures(root: string): Promise<ReasoningRun[]> {
  return [await runOne(root, 'responses'), await runOne(root, 'chat')];
}
