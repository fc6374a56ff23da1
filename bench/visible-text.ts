/**
 * Figures of `visibleText` for `npm run bench`: what making text visible costs on the output a
 * tool really prints (coloured lines) and on text built to make it work hardest.
 */
import { performance } from 'node:perf_hooks';
import { visibleText } from '../src/processes/visible-text';
import { median } from './ptc';

/** Median milliseconds of `visibleText(text)` over `runs` runs, after one to warm up. */
function timed(text: string, runs: number): number {
  visibleText(text);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    visibleText(text);
    times.push(performance.now() - t0);
  }
  return median(times);
}

/** 10 MB of a test runner's coloured output: two colour codes on every line. */
export function visibleColouredOutput(): number {
  return timed('\x1b[32m✓\x1b[0m passes the case of a test runner, with its name and time (12 ms)\n'.repeat(130_000), 9);
}

/** 6 MB of `ESC ]` pairs: string sequences that never end, each shown rather than removed. */
export function visibleUnterminatedStrings(): number {
  return timed('\x1b]'.repeat(3_000_000), 5);
}
