import { existsSync, readdirSync, statSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runFence, useCliRun } from '../support/run-cli';

/**
 * Node's module compile cache (Node 22.1 and later), through the built CLI: the modules fence
 * loads with `require` after start-up (here the Anthropic SDK's bundle) are compiled once and
 * kept in `$FENCE_HOME/compile-cache`; the next run takes them from there.
 */

const cli = useCliRun();
const hasCompileCache = typeof (nodeModule as { enableCompileCache?: unknown }).enableCompileCache === 'function';

function anthropicRun(extraEnv: Record<string, string> = {}) {
  cli.server.reply((r) => r.text('Hello.'));
  return runFence(['-n', '-m', 'anthropic/claude-test', 'hello'], {
    cwd: cli.dirs.workspace,
    env: { FENCE_HOME: cli.dirs.home, ANTHROPIC_BASE_URL: cli.server.url, ANTHROPIC_API_KEY: 'test-key', ...extraEnv },
  });
}

describe('the module compile cache', () => {
  it.skipIf(!hasCompileCache)('keeps the compiled Anthropic SDK in FENCE_HOME/compile-cache, and the next run takes it from there', async () => {
    const first = await anthropicRun();
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.stdout).toContain('Hello.');
    const folder = join(cli.dirs.home, 'compile-cache');
    const versions = readdirSync(folder);
    expect(versions).toEqual([expect.stringMatching(new RegExp(`^v${process.versions.node}-`))]);
    expect(readdirSync(join(folder, versions[0] ?? '')).length).toBeGreaterThan(0);
    // Made for the user alone, as the rest of fence's data folder.
    expect(statSync(cli.dirs.home).mode & 0o777).toBe(0o700);
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    for (const name of readdirSync(join(folder, versions[0] ?? ''))) expect(statSync(join(folder, versions[0] ?? '', name)).mode & 0o077).toBe(0);

    // Node tells on stderr, when asked, which cached code V8 accepted.
    const second = await anthropicRun({ NODE_DEBUG_NATIVE: 'COMPILE_CACHE' });
    expect(second.exitCode).toBe(0);
    expect(second.stdout).toContain('Hello.');
    expect(second.stderr).toMatch(/V8 code cache for CommonJS \S*vendor\/anthropic-sdk\.cjs was accepted/);
  });

  it.skipIf(hasCompileCache)('is left out on a Node without one, which runs as before', async () => {
    const run = await anthropicRun();
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain('Hello.');
    expect(existsSync(join(cli.dirs.home, 'compile-cache'))).toBe(false);
  });
});
