/**
 * The OS sandbox's cost for `npm run bench`, measured against the same work with it off, in
 * interleaved rounds so that a busy moment of the machine touches both alike: a shell command's
 * round trip, and a one-shot session's start (spawn → first request, and spawn → the request
 * that carries the first shell block's result, which waits for bash to be up in its sandbox).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BashSession } from '../src/processes/bash-session';
import { bubblewrapSandbox, offPolicy, sandboxSupport } from '../src/os-sandbox/os-sandbox';
import { startFakeLlm } from '../tests/support/fake-llm';
import { FENCE_BIN } from './edges';
import { median } from './ptc';

export interface OsSandboxFigures {
  /** `true` round trip, milliseconds: sandboxed and not. */
  roundTrip: { sandboxed: number; off: number };
  /** Spawn → first request of `fence -n`, milliseconds. */
  firstRequest: { sandboxed: number; off: number };
  /** Spawn → the request with the first shell block's result (the model answers at once). */
  firstShellResult: { sandboxed: number; off: number };
}

/** Undefined when the machine has no sandbox to measure. */
export async function osSandboxFigures(root: string, rounds = 9): Promise<OsSandboxFigures | undefined> {
  const support = sandboxSupport();
  if (support.kind === 'none') return undefined;
  const workspace = mkdtempSync(join(root, 'ws-'));
  const sandbox = bubblewrapSandbox({ ...offPolicy(workspace), mode: 'workspace-write', network: false }, support.path);
  const shells = { sandboxed: await BashSession.start({ cwd: workspace, sandbox }), off: await BashSession.start({ cwd: workspace }) };
  const trips = { sandboxed: [] as number[], off: [] as number[] };
  try {
    for (let i = 0; i < 200; i++) {
      for (const kind of ['sandboxed', 'off'] as const) {
        const t0 = performance.now();
        await shells[kind].run('true');
        trips[kind].push(performance.now() - t0);
      }
    }
  } finally {
    await Promise.all([shells.sandboxed.close(), shells.off.close()]);
    sandbox.close();
  }
  const first = { sandboxed: [] as number[], off: [] as number[] };
  const shell = { sandboxed: [] as number[], off: [] as number[] };
  const home = join(root, 'home');
  mkdirSync(home, { recursive: true });
  for (let round = 0; round < rounds; round++) {
    for (const kind of ['sandboxed', 'off'] as const) {
      const run = await oneShot(root, home, kind === 'off' ? ['--sandbox', 'off'] : []);
      first[kind].push(run.firstRequest);
      shell[kind].push(run.shellResult);
    }
  }
  const medians = (values: { sandboxed: number[]; off: number[] }) => ({ sandboxed: median(values.sandboxed), off: median(values.off) });
  return { roundTrip: medians(trips), firstRequest: medians(first), firstShellResult: medians(shell) };
}

/** One `fence -n` whose model writes one shell block at once, then answers. */
async function oneShot(root: string, home: string, args: string[]): Promise<{ firstRequest: number; shellResult: number }> {
  const server = await startFakeLlm();
  try {
    server.reply((r) => r.text('```shell\necho hi\n```\n\n').hang());
    server.reply((r) => r.text('Done.'));
    const cwd = mkdtempSync(join(root, 'ws-'));
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, LANG: 'C.UTF-8', FENCE_HOME: home, OPENAI_BASE_URL: server.openaiBaseURL };
    const t0 = performance.now();
    const child = spawn(process.execPath, [FENCE_BIN, '-n', ...args, '-m', 'local/bench', 'hello'], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const code = await new Promise<number | null>((done) => child.on('exit', done));
    if (code !== 0 || server.requests.length !== 2) throw new Error(`fence -n ${args.join(' ')} exited with ${code} after ${server.requests.length} requests: ${stderr}`);
    return { firstRequest: server.requests[0]!.receivedAt - t0, shellResult: server.requests[1]!.receivedAt - t0 };
  } finally {
    await server.close();
  }
}
