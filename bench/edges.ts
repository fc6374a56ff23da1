/**
 * The edges of a one-shot run, measured against a bare `node -e 0` in the same rounds: the
 * start-up (`fence --version`, spawn → first request), the first tool call of a process
 * against later ones with a model that answers at once, and the time from the answer on
 * stdout to the process being gone. Each round runs every measure once, so a busy moment of
 * the machine touches all of them alike; the figures are medians over the rounds.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startFakeLlm, type FakeLlm } from '../tests/support/fake-llm';
import { median } from './ptc';

/** The built CLI of this checkout. */
export const FENCE_BIN = resolve(import.meta.dirname, '../bin/fence.js');

/** Medians over the rounds, in milliseconds. */
export interface EdgeFigures {
  rounds: number;
  /** The machine's 1-minute load average before and after the rounds. */
  load: [number, number];
  /** Wall time of `node -e 0`. */
  nodeMs: number;
  /** Wall time of `fence --version`. */
  versionMs: number;
  /** Spawning `fence -n` → the fake server has the whole first request. */
  firstRequestMs: number;
  /** Last byte of the first tool block sent → the request with its result received. */
  firstCallMs: number;
  /** The same for the second and third tool calls of the process (median of both). */
  laterCallMs: number;
  /** The answer on stdout → the process gone: a one-turn run with no tool call. */
  exitMs: number;
  /** The same after a run that used the shell. */
  exitAfterToolsMs: number;
}

/** When a child process wrote its first byte to stdout and when it exited. */
interface ChildTimes {
  spawnedAt: number;
  firstOutputAt: number;
  exitedAt: number;
  code: number | null;
  stderr: string;
}

function runChild(args: readonly string[], options: { cwd: string; env: Record<string, string> }): Promise<ChildTimes> {
  return new Promise((done, fail) => {
    const spawnedAt = performance.now();
    const child = spawn(process.execPath, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let firstOutputAt = Number.NaN;
    let stderr = '';
    child.stdout.on('data', () => {
      if (Number.isNaN(firstOutputAt)) firstOutputAt = performance.now();
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    // A run that never ends is a failure of the bench, not a wait: it stops within a minute.
    const limit = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`fence ${args.slice(1).join(' ')} did not end within 60 s:\n${stderr}`));
    }, 60_000);
    child.on('error', fail);
    child.on('exit', (code) => {
      clearTimeout(limit);
      done({ spawnedAt, firstOutputAt, exitedAt: performance.now(), code, stderr });
    });
  });
}

// The blank line after the closing fence is what tells fence the block is over (a bare fence
// followed by text would open a nested block), so the reply can hang after it.
const SHELL_BLOCK = '```shell\necho hi\n```\n\n';

/**
 * One `fence -n` run against a fresh fake server whose replies `script` queues; fails unless
 * it exits with 0 having made `requests` requests.
 */
async function oneShot(bin: string, root: string, script: (server: FakeLlm) => void, requests: number): Promise<{ times: ChildTimes; server: FakeLlm }> {
  const server = await startFakeLlm();
  try {
    script(server);
    const workspace = mkdtempSync(join(root, 'ws-'));
    const env = { ...baseEnv(root), OPENAI_BASE_URL: server.openaiBaseURL };
    const times = await runChild([bin, '-n', '-m', 'local/bench', 'hello'], { cwd: workspace, env });
    if (times.code !== 0 || server.requests.length !== requests) {
      throw new Error(`fence -n exited with ${times.code} after ${server.requests.length} requests (expected ${requests}): ${times.stderr.trim()}`);
    }
    return { times, server };
  } finally {
    await server.close();
  }
}

/** No NODE_OPTIONS or extra CA files from the calling shell: they change every Node start. */
function baseEnv(root: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, LANG: 'C.UTF-8', FENCE_HOME: join(root, 'home') };
}

/**
 * Runs `rounds` rounds of: `node -e 0`, `fence --version`, a one-turn run (answer at once), and
 * a run of three shell calls then the answer, every reply sent at once. Returns the medians.
 */
export async function edgeFigures(root: string, rounds = 15, bin = FENCE_BIN): Promise<EdgeFigures> {
  mkdirSync(join(root, 'home'), { recursive: true });
  const loadBefore = loadavg()[0] ?? 0;
  const node: number[] = [];
  const version: number[] = [];
  const firstRequest: number[] = [];
  const firstCall: number[] = [];
  const laterCall: number[] = [];
  const exit: number[] = [];
  const exitAfterTools: number[] = [];
  const env = baseEnv(root);
  for (let round = 0; round < rounds; round++) {
    const bare = await runChild(['-e', '0'], { cwd: root, env });
    node.push(bare.exitedAt - bare.spawnedAt);
    const v = await runChild([bin, '--version'], { cwd: root, env });
    version.push(v.exitedAt - v.spawnedAt);

    const oneTurn = await oneShot(bin, root, (s) => s.reply((r) => r.text('Hello.')), 1);
    firstRequest.push(oneTurn.server.requests[0]!.receivedAt - oneTurn.times.spawnedAt);
    exit.push(oneTurn.times.exitedAt - oneTurn.times.firstOutputAt);

    const tools = await oneShot(
      bin,
      root,
      (s) => {
        for (let i = 0; i < 3; i++) s.reply((r) => r.text(SHELL_BLOCK).hang());
        s.reply((r) => r.text('Done.'));
      },
      4,
    );
    const overheads = [0, 1, 2].map((k) => {
      const sent = tools.server.requests[k]!.lastFrameAt;
      if (sent === undefined) throw new Error('the fake server did not record when the block was sent');
      return tools.server.requests[k + 1]!.receivedAt - sent;
    });
    firstCall.push(overheads[0]!);
    laterCall.push(...overheads.slice(1));
    exitAfterTools.push(tools.times.exitedAt - tools.times.firstOutputAt);
  }
  return {
    rounds,
    load: [loadBefore, loadavg()[0] ?? 0],
    nodeMs: median(node),
    versionMs: median(version),
    firstRequestMs: median(firstRequest),
    firstCallMs: median(firstCall),
    laterCallMs: median(laterCall),
    exitMs: median(exit),
    exitAfterToolsMs: median(exitAfterTools),
  };
}

/** One line of the edges table: the figure, its ratio where the aim is one, the aim, and whether it is met. */
export interface EdgeAim {
  measure: string;
  value: string;
  aim: string;
  met: boolean;
}

/** The aims for the edges of a one-shot run, judged on one set of figures. */
export function edgeAims(f: EdgeFigures): EdgeAim[] {
  const ms = (n: number) => `${n < 10 ? n.toFixed(1) : n.toFixed(0)} ms`;
  const x = (n: number) => `${n.toFixed(2)}×`;
  const start = f.firstRequestMs / f.nodeMs;
  const version = f.versionMs / f.nodeMs;
  const firstToLater = f.firstCallMs / f.laterCallMs;
  return [
    { measure: '`node -e 0` wall time (the yardstick)', value: ms(f.nodeMs), aim: '', met: true },
    { measure: '`fence --version` wall time', value: `${ms(f.versionMs)} (${x(version)})`, aim: '≤ 1.5× node', met: version <= 1.5 },
    { measure: 'start → first request, `fence -n` against a local server', value: `${ms(f.firstRequestMs)} (${x(start)})`, aim: '≤ 2.5× node', met: start <= 2.5 },
    { measure: 'first tool call of a process, reply at once (block sent → next request)', value: ms(f.firstCallMs), aim: '≤ 15 ms', met: f.firstCallMs <= 15 },
    {
      measure: 'second and third tool calls, and first ÷ later',
      value: `${ms(f.laterCallMs)} (${x(firstToLater)})`,
      aim: '≤ 1.5×',
      met: firstToLater <= 1.5,
    },
    { measure: 'answer printed → process gone, one-turn run', value: ms(f.exitMs), aim: '≤ 20 ms', met: f.exitMs <= 20 },
    { measure: 'answer printed → process gone, after shell calls', value: ms(f.exitAfterToolsMs), aim: '≤ 20 ms', met: f.exitAfterToolsMs <= 20 },
  ];
}
