// Bundles the CLI into dist/ with esbuild. Heavy dependencies (the provider SDKs, zod,
// node-pty) are reached through dynamic import() and so land in chunks of their own that
// load only when used: `fence --version` never pays for them.
import { build } from 'esbuild';
import { copyFile, rm } from 'node:fs/promises';

const outdir = new URL('../dist/', import.meta.url).pathname;
await rm(outdir, { recursive: true, force: true });
await build({
  entryPoints: { cli: 'src/cli/main.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
  // node-pty is a native addon: it must be loaded from node_modules at run time.
  external: ['node-pty'],
  // Some bundled CommonJS dependencies call require() for Node built-ins.
  banner: { js: "import { createRequire as __fenceRequire } from 'node:module'; const require = __fenceRequire(import.meta.url);" },
  chunkNames: 'chunks/[name]-[hash]',
});
// The Python kernel is a script run by python3, not bundled: it sits beside cli.js, where
// src/runtime/python-kernel.ts looks for it (next to its chunk, or one folder up).
await copyFile(new URL('../src/runtime/kernel.py', import.meta.url), `${outdir}kernel.py`);
