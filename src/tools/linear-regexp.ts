import { createRequire } from 'node:module';

/**
 * The regular expressions the model writes (`grep`'s) meet text nobody checked: a pattern such
 * as `^(a+)+$` backtracks without end on a line of a's ending in `!`. V8 has a second engine
 * that runs in time linear in the text, for the patterns it can run (no backreferences, no
 * lookahead, no counted repetition over 16, no case folding or `u` flag; lookbehind only in
 * newer V8s such as Node 22's and 24's, not Node 20's): these flags make V8 switch to it once
 * a match backtracks too much (the fast engine stays the first choice), and enable the `l`
 * flag, which asks for it outright and so tells which patterns it can run.
 */
const FLAGS = ['--enable-experimental-regexp-engine-on-excessive-backtracks', '--enable-experimental-regexp-engine'];

let enabled = false;

/** Loads `node:v8` on first use: most sessions never grep, and loading it at start-up costs milliseconds. */
const requireBuiltin = createRequire(import.meta.url);

/**
 * Sets V8's flags for the linear-time engine (see above), once per process; every regular
 * expression run afterwards, already compiled or not, falls back to it on excessive
 * backtracking. Cheap to call again.
 */
export function enableLinearFallback(): void {
  if (enabled) return;
  const { setFlagsFromString } = requireBuiltin('node:v8') as typeof import('node:v8');
  for (const flag of FLAGS) setFlagsFromString(flag);
  enabled = true;
}

/**
 * Whether V8's linear-time engine can run `source` with `flags`: then a match of it never
 * backtracks for long (see `enableLinearFallback`, which this calls). False for an invalid
 * pattern too.
 */
export function runsInLinearTime(source: string, flags = ''): boolean {
  enableLinearFallback();
  try {
    new RegExp(source, `${flags}l`);
    return true;
  } catch {
    return false;
  }
}
