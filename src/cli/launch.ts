import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { version } from '../../package.json';
import { fenceHome } from '../config/paths';
import { enableModuleCompileCache, runCachedBundle } from './code-cache';

/**
 * fence's entry point (`dist/cli.cjs`, what `bin/fence.js` requires). `fence --version` is
 * answered here, before anything else loads. Every other command runs the program bundled in
 * `dist/fence.cjs` (`main.ts` and all it imports), compiled from the V8 code cache the build
 * made for it by one warm-up run (`scripts/code-cache.mjs`); see `runCachedBundle`. What it
 * loads later with `require` (the bundles of `dist/vendor/`) Node 22 and later compile from
 * their own cache in `$FENCE_HOME/compile-cache`; see `enableModuleCompileCache`.
 */

/** A hash of the bundle's text, set by the build: it names the bundle's code cache. */
declare const FENCE_BUNDLE_ID: string;

/** Set by the build's warm-up run only: where to write the code cache when the run exits. */
const CACHE_OUT_VARIABLE = 'FENCE_CODE_CACHE_OUT';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${version}\n`);
} else {
  const dir = dirname(fileURLToPath(import.meta.url));
  const out = process.env[CACHE_OUT_VARIABLE];
  enableModuleCompileCache(join(fenceHome(), 'compile-cache'));
  runCachedBundle({
    file: join(dir, 'fence.cjs'),
    cacheFile: join(dir, `fence-${FENCE_BUNDLE_ID}.cache`),
    ...(out ? { writeCacheTo: out } : {}),
  });
}
