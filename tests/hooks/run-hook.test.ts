import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HOOK_OUTPUT_LIMIT_BYTES, runHook, type HookCommand } from '../../src/hooks/run-hook';

/**
 * One hook run, with real processes outside any sandbox: what it reads and prints, its exit
 * code, and the limits that keep a hook from holding up a run (time, output, a group of
 * children, a closed stdin).
 */

let dir = '';
beforeEach(() => {
  dir = mkdtempSync('/var/tmp/fence-run-hook-');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const sh = (script: string, timeoutSeconds = 10): HookCommand => ({ command: ['sh', '-c', script], cwd: dir, timeoutSeconds });

describe('runHook', () => {
  it('gives the hook the event on stdin, in the folder, and returns its code, stdout and stderr', async () => {
    const run = await runHook(sh('cat; pwd; echo warned >&2; exit 2'), '{"event":"stop"}');
    expect(run).toEqual({ kind: 'exited', code: 2, stdout: `{"event":"stop"}${dir}\n`, stderr: 'warned\n' });
  });

  it('passes no variable of fence but the base ones and those it is given', async () => {
    process.env.FENCE_TEST_SECRET_TOKEN = 'do-not-pass';
    try {
      const run = await runHook({ ...sh('env'), env: { FENCE_HOOK_EVENT: 'stop' } }, '');
      expect(run.kind === 'exited' && run.stdout).toContain('FENCE_HOOK_EVENT=stop');
      expect(run.kind === 'exited' && run.stdout).toContain('TERM=dumb');
      expect(run.kind === 'exited' && run.stdout).not.toContain('do-not-pass');
    } finally {
      delete process.env.FENCE_TEST_SECRET_TOKEN;
    }
  });

  it('stops a hook at its time limit, with the children it started', async () => {
    const pidFile = join(dir, 'child.pid');
    const run = await runHook(sh(`sh -c 'echo $$ > ${pidFile}; sleep 600' & sleep 600`, 1), '');
    expect(run).toEqual({ kind: 'timed-out', stderr: '' });
    // The child held the hook's pipes: the run ended once it was gone (a zombie at most).
    expect(isRunning(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  it('keeps at most the output limit of what a hook prints, and says it cut it', async () => {
    const run = await runHook(sh(`head -c ${HOOK_OUTPUT_LIMIT_BYTES * 4} /dev/zero | tr '\\0' x`), '');
    expect(run.kind).toBe('exited');
    if (run.kind !== 'exited') return;
    expect(run.cut).toBe(true);
    expect(run.stdout.startsWith('x'.repeat(HOOK_OUTPUT_LIMIT_BYTES))).toBe(true);
    expect(run.stdout.slice(HOOK_OUTPUT_LIMIT_BYTES)).toBe('\n[cut: the hook printed more than 64 KiB]');
  });

  it('does not mind a hook that never reads its stdin, and reports one that cannot start', async () => {
    const big = 'y'.repeat(1024 * 1024);
    expect(await runHook(sh('exit 0'), big)).toEqual({ kind: 'exited', code: 0, stdout: '', stderr: '' });
    expect(await runHook({ command: ['./no-such-hook'], cwd: dir, timeoutSeconds: 5 }, '')).toEqual({ kind: 'not-started', reason: 'command "./no-such-hook" not found' });
  });

  it('takes a time limit longer than a timer can hold as the longest one', async () => {
    expect(await runHook(sh('echo ok', 1e12), '')).toEqual({ kind: 'exited', code: 0, stdout: 'ok\n', stderr: '' });
  });

  it('stops when the run it belongs to stops', async () => {
    const controller = new AbortController();
    const running = runHook(sh('sleep 600'), '', controller.signal);
    controller.abort();
    expect(await running).toEqual({ kind: 'stopped' });
  });
});

/** Whether `pid` is a live process (not gone, not a zombie). */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
