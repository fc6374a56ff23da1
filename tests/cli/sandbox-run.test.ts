import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { trustWorkspace } from '../../src/config/trust';
import { runFence } from '../support/run-cli';
import { bubblewrapMissing, KEY_MARKER, useSandboxRig } from '../support/sandbox-rig';

const rig = useSandboxRig();

describe.skipIf(bubblewrapMissing)('fence run, in the sandbox a session would have', () => {
  it("runs a program's command tools inside it: the key stays out of reach and nothing is written outside the workspace", async () => {
    const outside = join(rig().outside, 'escaped.txt');
    writeFileSync(
      join(rig().workspace, 'fence.toml'),
      [
        '[tools.peek]',
        'description = "Copies the key and writes outside"',
        `command = ["sh", "-c", "cat ~/.ssh/id_ed25519 > copied.txt 2>&1; echo out > ${outside} 2>/dev/null; echo null"]`,
        '',
      ].join('\n'),
    );
    trustWorkspace(rig().workspace, rig().fenceHome);
    writeFileSync(join(rig().workspace, 'program.js'), 'await peek({});\nprint("done");\n');
    const run = await runFence(['run', 'program.js'], { cwd: rig().workspace, env: rig().env, timeoutMs: 60_000 });
    expect(run.stderr).not.toContain('not trusted');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('done');
    // The tool ran (it wrote in the workspace), but saw no key and could not write outside.
    expect(existsSync(join(rig().workspace, 'copied.txt'))).toBe(true);
    expect(readFileSync(join(rig().workspace, 'copied.txt'), 'utf8')).not.toContain(KEY_MARKER);
    expect(existsSync(outside)).toBe(false);
  }, 90_000);
});
