import { readdirSync, readFileSync, rmSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { block, bubblewrapMissing, fenceIn, script, sessionId, toolResults, useSandboxRig } from '../support/sandbox-rig';

/**
 * Node's module compile cache (Node 22 and later) holds code that V8 runs in fence's own
 * process, outside the sandbox, at the next start: the sandbox must not be able to write it.
 * It lives in fence's data folder, which the sandbox denies.
 */

const rig = useSandboxRig();
const hasCompileCache = typeof (nodeModule as { enableCompileCache?: unknown }).enableCompileCache === 'function';

/** Every file of the compile cache with its bytes. */
function cacheFiles(folder: string): Map<string, string> {
  const files = readdirSync(folder, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
  return new Map(files.map((entry) => [join(entry.parentPath, entry.name), readFileSync(join(entry.parentPath, entry.name), 'base64')]));
}

describe.skipIf(bubblewrapMissing || !hasCompileCache)('the compile cache and the sandbox', () => {
  it('cannot be planted or changed from the sandbox, by the shell or by save', { timeout: 120_000 }, async () => {
    script(rig(), ['Hello.']);
    expect((await fenceIn(rig(), ['-n', 'hello'])).exitCode).toBe(0);
    // The next run's session is then the only one, as the rig's readers want.
    rmSync(join(rig().fenceHome, 'sessions', sessionId(rig())), { recursive: true });
    const folder = join(rig().fenceHome, 'compile-cache');
    const before = cacheFiles(folder);
    expect(before.size).toBeGreaterThan(0);
    const [first] = [...before.keys()];

    script(rig(), [
      block('shell', `for f in $(find "${folder}" -type f); do printf planted > "$f" && echo "overwrote $f"; done; printf planted > "${folder}/new" && echo "planted new"; mkdir "${folder}/v0" && echo "made a folder"; echo tried`),
      block(`save ${first}`, 'planted'),
      'Done.',
    ]);
    const run = await fenceIn(rig(), ['-n', 'plant']);
    expect(run.exitCode).toBe(0);
    const [shell, save] = toolResults(rig()).map((message) => message.content);
    expect(shell).toContain('tried');
    expect(shell).not.toMatch(/overwrote|planted new|made a folder/);
    expect(save).not.toMatch(/^saved/i);
    const after = cacheFiles(folder);
    for (const [path, bytes] of before) expect(after.get(path), path).toBe(bytes);
    expect(after.has(join(folder, 'new'))).toBe(false);
  });
});
