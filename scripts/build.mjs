// Builds fence into dist/ with esbuild:
// - dist/fence.cjs: the program (src/cli/main.ts and what it imports) as one CommonJS file.
//   Modules reached through import() — a provider's adapter, the chat, node-pty — are still
//   initialised only when used, so `fence sessions list` never runs an SDK's code.
// - dist/vendor/*.cjs: packages that only some sessions need (the Anthropic SDK, the MCP SDK,
//   execa), each bundled apart, so that the program's file holds what every run reads.
// - dist/cli.cjs: the launcher (src/cli/launch.ts) that bin/fence.js requires; it answers
//   --version itself and runs fence.cjs compiled from its V8 code cache.
// - dist/fence-<hash>.cache: that code cache, made by one warm-up run (scripts/code-cache.mjs).
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { copyFile, readFile, rm } from 'node:fs/promises';
import { warmUpCodeCache } from './code-cache.mjs';

const outdir = new URL('../dist/', import.meta.url).pathname;
const common = { bundle: true, platform: 'node', target: 'node20', logLevel: 'warning' };

/**
 * Bundled apart, by the imports that reach them: name in dist/vendor/ → the modules it holds,
 * and whether it holds a provider SDK, whose requests go through fence's fetch (the MCP SDK's
 * go through Node's).
 */
const VENDOR = {
  'anthropic-sdk': { modules: ['@anthropic-ai/sdk'], providerSdk: true },
  'mcp-sdk': {
    modules: [
      '@modelcontextprotocol/sdk/client/index.js',
      '@modelcontextprotocol/sdk/client/stdio.js',
      '@modelcontextprotocol/sdk/client/streamableHttp.js',
      '@modelcontextprotocol/sdk/types.js',
    ],
    providerSdk: false,
  },
  execa: { modules: ['execa'], providerSdk: false },
  // Skills' front matter: read only when a SKILL.md exists.
  yaml: { modules: ['yaml'], providerSdk: false },
  // Web pages made markdown: loaded by the fetch tool on the first HTML page only.
  'web-page': { modules: ['linkedom', '@mozilla/readability', 'node-html-markdown'], providerSdk: false },
};

/**
 * For the bundles that hold a provider SDK: its requests never touch Node's fetch classes,
 * whose first use costs about as much as starting Node. Its `Headers` and `FormData` are
 * fence's (see fetch-globals.mjs), and it sees no global `ReadableStream`: it only tests
 * request bodies against it (fence's are strings) and makes one to upload files (fence
 * uploads none); fence's fetch gives response bodies as a `BodyStream`.
 */
const providerSdk = {
  inject: [new URL('./fetch-globals.mjs', import.meta.url).pathname],
  define: { 'globalThis.ReadableStream': 'undefined' },
};

/** Only the English messages of zod: fence shows no other language, and the rest is ~300 kB. */
const englishZod = {
  name: 'english-zod',
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, () => ({
      contents: 'export { default as en } from "./en.js";',
      loader: 'js',
      resolveDir: new URL('../node_modules/zod/v4/locales/', import.meta.url).pathname,
    }));
  },
};

/** Imports of a vendor package become requires of its file in dist/vendor/. */
const vendorImports = {
  name: 'vendor-imports',
  setup(build) {
    for (const [name, { modules }] of Object.entries(VENDOR)) {
      for (const module of modules) {
        const filter = new RegExp(`^${module.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`);
        build.onResolve({ filter }, () => ({ path: `./vendor/${name}.cjs`, external: true }));
      }
    }
  },
};

/** What a bundle run as a script needs (see src/cli/code-cache.ts). */
const script = {
  format: 'cjs',
  // Pure ASCII, no comments: the launcher reads the file as Latin-1, the cheapest way.
  minifyWhitespace: true,
  legalComments: 'linked',
  charset: 'ascii',
  // A script has no import(): every import() becomes a require() of a bundled module.
  supported: { 'dynamic-import': false },
  define: { 'import.meta.url': '__fenceModuleUrl' },
  banner: { js: 'var __fenceModuleUrl = require("node:url").pathToFileURL(__filename).href;' },
  plugins: [englishZod],
};

await rm(outdir, { recursive: true, force: true });
await build({
  ...common,
  ...script,
  entryPoints: ['src/cli/main.ts'],
  outfile: `${outdir}fence.cjs`,
  sourcemap: 'linked',
  // node-pty and sharp (images) are native addons, and the tokenizer is megabytes used only
  // near a context window's end: they are loaded from node_modules when needed.
  external: ['node-pty', 'gpt-tokenizer', 'sharp'],
  inject: providerSdk.inject,
  define: { ...script.define, ...providerSdk.define },
  plugins: [englishZod, vendorImports],
});
for (const [name, { modules, providerSdk: holdsSdk }] of Object.entries(VENDOR)) {
  await build({
    ...common,
    ...script,
    ...(holdsSdk ? { inject: providerSdk.inject, define: { ...script.define, ...providerSdk.define } } : {}),
    stdin: { contents: modules.map((module) => `export * from ${JSON.stringify(module)};`).join('\n'), resolveDir: process.cwd() },
    outfile: `${outdir}vendor/${name}.cjs`,
  });
}
const bundle = await readFile(`${outdir}fence.cjs`);
if (bundle.some((byte) => byte > 0x7f)) throw new Error('dist/fence.cjs is not pure ASCII: the launcher reads it as Latin-1');
const bundleId = createHash('sha256').update(bundle).digest('hex').slice(0, 16);
await build({
  ...common,
  entryPoints: ['src/cli/launch.ts'],
  outfile: `${outdir}cli.cjs`,
  format: 'cjs',
  define: { FENCE_BUNDLE_ID: JSON.stringify(bundleId), 'import.meta.url': '__fenceModuleUrl' },
  banner: script.banner,
});
// The Python kernel is a script run by python3, not bundled: it sits beside fence.cjs, where
// src/processes/python-kernel.ts looks for it.
await copyFile(new URL('../src/processes/kernel.py', import.meta.url), `${outdir}kernel.py`);
// The git guard's sweep, run by its guardian process once fence died without closing (see
// src/os-sandbox/git-guard.ts, which looks for it beside fence.cjs).
await build({ ...common, format: 'cjs', define: script.define, banner: script.banner, entryPoints: ['src/os-sandbox/git-guard-sweep.ts'], outfile: `${outdir}git-guard-sweep.cjs` });
const problem = await warmUpCodeCache({ launcher: `${outdir}cli.cjs`, cacheFile: `${outdir}fence-${bundleId}.cache` });
if (problem) process.stderr.write(`build: no code cache (${problem}); fence works, but starts more slowly\n`);
