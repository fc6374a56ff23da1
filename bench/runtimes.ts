/**
 * Runtime figures for `npm run bench`: the Python kernel's start and cell round trip, and the
 * shell under a 5 MB output (time, and the host's memory afterwards).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BashSession } from '../src/processes/bash-session';
import { PythonKernel } from '../src/processes/python-kernel';
import { median } from './ptc';

const root = mkdtempSync(join(tmpdir(), 'fence-bench-runtimes-'));

/** Kernel start (median of 5 fresh kernels) and `1+1` round trip on a warm kernel. */
export async function pythonFigures(): Promise<{ startMs: number; cellMs: number }> {
  const starts: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const kernel = await PythonKernel.start({ cwd: root });
    starts.push(performance.now() - t0);
    await kernel.close();
  }
  const kernel = await PythonKernel.start({ cwd: root });
  try {
    for (let i = 0; i < 20; i++) await kernel.run('1+1');
    const cells: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      await kernel.run('1+1');
      cells.push(performance.now() - t0);
    }
    return { startMs: median(starts), cellMs: median(cells) };
  } finally {
    await kernel.close();
  }
}

/** A shell command printing 5 MB: its round trip, and the host's RSS growth once it is over. */
export async function shellLargeOutputFigures(): Promise<{ ms: number; rssGrowthMb: number }> {
  const bash = await BashSession.start({ cwd: root });
  try {
    await bash.run('true');
    global.gc?.();
    const before = process.memoryUsage().rss;
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const result = await bash.run('head -c 5000000 /dev/zero | tr "\\0" "x" | fold -w 100');
      times.push(performance.now() - t0);
      if (result.exitCode !== 0) throw new Error('the 5 MB command failed');
    }
    global.gc?.();
    const after = process.memoryUsage().rss;
    return { ms: median(times), rssGrowthMb: (after - before) / 1024 / 1024 };
  } finally {
    await bash.close();
  }
}
