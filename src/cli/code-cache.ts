import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Script } from 'node:vm';
import { PRIVATE_FOLDER } from '../config/private-data';

/** A CommonJS bundle and the V8 code cache made for it. */
export interface CachedBundle {
  /** Path of the bundle (CommonJS, pure ASCII: it is read as Latin-1, the cheapest way). */
  file: string;
  /** Path of its code cache; a missing file is no error. */
  cacheFile: string;
  /**
   * Write a fresh code cache here when the process exits: the bytecode of every function the
   * run compiled (how the build makes `cacheFile`, from a run that does what most runs do).
   */
  writeCacheTo?: string;
}

/** Whether the code cache was used: `absent` (no file), `rejected` (V8 would not take it) or `used`. */
export type CodeCacheUse = 'used' | 'rejected' | 'absent';

/** The function a CommonJS module's text is wrapped in, as Node's own loader does. */
const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) { ';
const WRAPPER_TAIL = '\n})';

type ModuleFunction = (exports: object, require: NodeJS.Require, module: { exports: object }, filename: string, dirname: string) => void;

/**
 * Runs a CommonJS bundle in this context as Node's `require` would, but compiled from its code
 * cache when V8 accepts it: V8 then neither parses the bundle nor compiles the functions the
 * cache holds, which is most of what a process spends before its first useful work. V8 takes
 * a cache only when it was made by the same V8 version with the same flags for a source of the
 * same length, so the cache must belong to this very bundle (the build names it by the
 * bundle's hash); otherwise, or without one, the bundle is compiled as usual. Throws what
 * the bundle's top level throws.
 */
export function runCachedBundle(bundle: CachedBundle): CodeCacheUse {
  const source = readFileSync(bundle.file, 'latin1');
  const cachedData = readIfPresent(bundle.cacheFile);
  const script = new Script(`${WRAPPER_HEAD}${source}${WRAPPER_TAIL}`, { filename: bundle.file, ...(cachedData ? { cachedData } : {}) });
  const use: CodeCacheUse = cachedData === undefined ? 'absent' : script.cachedDataRejected ? 'rejected' : 'used';
  const out = bundle.writeCacheTo;
  if (out) process.once('exit', () => writeAtomically(out, script.createCachedData()));
  const run = script.runInThisContext() as ModuleFunction;
  const module = { exports: {} };
  run.call(module.exports, module.exports, createRequire(bundle.file), module, bundle.file, dirname(bundle.file));
  return use;
}

function readIfPresent(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}

/** Written to a temp file, then renamed over the target: a reader never sees half a cache. */
function writeAtomically(path: string, data: Buffer): void {
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, data);
  renameSync(temp, path);
}

/** `module.enableCompileCache`, which Node 22.1 added; `@types/node` 20 does not know it. */
type EnableCompileCache = (directory: string) => { status: number };

/**
 * Turns on Node's module compile cache in `directory` (made 0700 when missing, as the folders
 * of fence's data are; Node writes its files 0600) for the modules `require` loads from now
 * on: the bundles of `dist/vendor/` (a provider's SDK, the MCP SDK, execa) and node-pty's
 * JavaScript, which the program's own code cache does not hold. Node keeps a cache per Node
 * version there and writes it when the process exits. Does nothing on
 * Node 20, which has no such cache, and nothing but lose the gain when the folder cannot be
 * made or written. Not the system's temporary folder, Node's default: a cache there could be
 * put in place by another user of the machine, and V8 runs what it holds.
 */
export function enableModuleCompileCache(directory: string): void {
  const enable = (nodeModule as { enableCompileCache?: EnableCompileCache }).enableCompileCache;
  if (typeof enable !== 'function') return;
  // Node makes the folder and one named by its version inside as it enables the cache, with
  // the process's umask: a umask that leaves only the owner's bits makes both 0700.
  const umask = process.umask(0o777 & ~PRIVATE_FOLDER);
  try {
    enable(directory);
  } catch {
    // A folder that cannot be made: fence runs as well without the cache.
  } finally {
    process.umask(umask);
  }
}
