import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const CODE_CACHE = resolve(import.meta.dirname, '../../src/cli/code-cache.ts');
const DIST = resolve(import.meta.dirname, '../../dist');

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'fence-code-cache-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Runs `runCachedBundle` in a fresh Node process (a code cache is only ever read by another
 * process than the one that made it) with `args` after the script; returns what it printed:
 * the bundle's own output, then how the cache was used.
 */
async function runBundle(bundle: { file: string; cacheFile: string; writeCacheTo?: string }, args: string[] = []): Promise<string> {
  const script = [
    `import { runCachedBundle } from ${JSON.stringify(CODE_CACHE)};`,
    `const use = runCachedBundle(${JSON.stringify(bundle)});`,
    'process.stderr.write(`cache: ${use}\\n`);',
  ].join('\n');
  // Node gives an -e script the words after `--` from argv[1] on; a program reads its own from argv[2].
  const result = await execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, '--', 'bundle', ...args], {
    env: { ...process.env, FENCE_HOME: join(dir, 'home') },
    input: '',
    reject: false,
    stripFinalNewline: false,
    timeout: 20_000,
  });
  return `${result.stdout}${result.stderr}`;
}

describe('runCachedBundle', () => {
  const bundle = (name: string, text: string) => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };

  it('runs a CommonJS bundle, writes its code cache on exit when asked, and runs from it next time', async () => {
    const file = bundle('b.cjs', "const { sep } = require('node:path'); process.stdout.write(`bundle ran in ${__dirname === require('node:path').dirname(__filename)} ${sep}\\n`);");
    const cacheFile = join(dir, 'b.cache');

    expect(await runBundle({ file, cacheFile, writeCacheTo: cacheFile })).toBe('bundle ran in true /\ncache: absent\n');
    expect(existsSync(cacheFile)).toBe(true);
    expect(await runBundle({ file, cacheFile })).toBe('bundle ran in true /\ncache: used\n');
  });

  it('compiles the bundle as usual when the cache belongs to another bundle or is damaged', async () => {
    const first = bundle('first.cjs', "process.stdout.write('first\\n');");
    const cacheFile = join(dir, 'first.cache');
    await runBundle({ file: first, cacheFile, writeCacheTo: cacheFile });

    const other = bundle('other.cjs', "process.stdout.write('the other one\\n');");
    expect(await runBundle({ file: other, cacheFile })).toBe('the other one\ncache: rejected\n');

    writeFileSync(cacheFile, readFileSync(cacheFile).subarray(0, 64));
    expect(await runBundle({ file: first, cacheFile })).toBe('first\ncache: rejected\n');
  });

  it('lets an error of the bundle’s top level through', async () => {
    const file = bundle('broken.cjs', "throw new Error('the bundle broke');");
    expect(await runBundle({ file, cacheFile: join(dir, 'none.cache') })).toContain('the bundle broke');
  });

  it('runs the built program from the code cache the build made for it', async () => {
    const cache = readdirSync(DIST).find((name) => /^fence-[0-9a-f]+\.cache$/.test(name));
    expect(cache).toBeDefined();
    const output = await runBundle({ file: join(DIST, 'fence.cjs'), cacheFile: join(DIST, cache ?? '') }, ['sessions', 'list']);
    expect(output).toContain('cache: used');
    expect(output).toContain('no sessions yet');
  });
});
