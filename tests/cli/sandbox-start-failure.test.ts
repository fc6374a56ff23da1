import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runFence } from '../support/run-cli';
import { block, bubblewrapMissing, fenceIn, script, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';

/**
 * A sandbox that cannot start ends the run with exit 1 and bwrap's reason: never a finished
 * run, and the model never sees fence's own start-up of the shell. `fence sandbox check` gives
 * the reason of each failing row.
 *
 * The bwrap here is a small script first on PATH: it passes the start-up probe (a sandbox with
 * no filter) to the real bwrap and refuses every sandbox with a seccomp filter, as a bubblewrap
 * too old for `--seccomp` would. The rig's FENCE_HOME is fresh, so no cached probe skips it.
 */

const REFUSAL = 'bwrap: Unknown option --seccomp';

/** `fence sandbox check` in the rig's workspace; `env` adds to the rig's. */
const sandboxCheck = (rig: SandboxRig, env: Record<string, string> = {}) =>
  runFence(['sandbox', 'check'], { cwd: rig.workspace, env: { ...rig.env, ...env }, timeoutMs: 120_000 });

describe.skipIf(bubblewrapMissing)('a sandbox that cannot start', () => {
  const rig = useSandboxRig();
  let bin: string;
  beforeEach(() => {
    const real = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).stdout.trim();
    bin = join(rig().root, 'bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'bwrap'),
      `#!/bin/sh\nfor arg in "$@"; do [ "$arg" = --seccomp ] && { echo '${REFUSAL}' >&2; exit 1; }; done\nexec '${real}' "$@"\n`,
    );
    chmodSync(join(bin, 'bwrap'), 0o755);
  });
  const withOldBwrap = () => ({ PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` });

  for (const mode of ['workspace-write', 'read-only']) {
    it(`ends a prompt run in ${mode} with exit 1 and the reason, never as done, and shows the model nothing`, async () => {
      script(rig(), [block('shell', 'echo hello'), 'Done.']);
      const result = await fenceIn(rig(), ['-n', '--sandbox', mode, 'say hello'], withOldBwrap());

      expect(result.exitCode).toBe(1);
      expect(result.stderr).toContain(`fence: the ${mode} sandbox could not start in ${rig().workspace}: ${REFUSAL}`);
      expect(result.stderr).not.toContain('PROMPT_COMMAND');
      expect(result.stdout).not.toContain('Done.');
      expect(rig().server.requests).toHaveLength(0);
    }, 150_000);
  }

  it('refuses an --auto run the same way', async () => {
    script(rig(), [block('shell', 'echo hello'), block('complete', 'Done.')]);
    const result = await fenceIn(rig(), ['--auto', 'say hello'], withOldBwrap());

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(REFUSAL);
    expect(rig().server.requests).toHaveLength(0);
  }, 150_000);

  it('still runs with --sandbox off, which needs no bwrap', async () => {
    script(rig(), [block('shell', 'echo hello'), 'Done.']);
    const result = await fenceIn(rig(), ['-n', '--sandbox', 'off', 'say hello'], withOldBwrap());

    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Done.');
  }, 150_000);

  it('gives the reason on each failing row of `fence sandbox check`', async () => {
    const result = await sandboxCheck(rig(), withOldBwrap());

    expect(result.exitCode).toBe(1);
    const failing = result.stdout.split('\n').filter((line) => line.startsWith('FAIL'));
    expect(failing.length).toBeGreaterThan(0);
    for (const line of failing) expect(line).toContain(`: the sandbox did not start (${REFUSAL})`);
  }, 150_000);
});

describe('what `fence sandbox check` claims', () => {
  const rig = useSandboxRig();

  it.skipIf(bubblewrapMissing)('says the network is limited to the hosts of the list, through the proxy', async () => {
    writeFileSync(rig().userConfig, '[sandbox]\nnetwork = ["example.com"]\n');
    const result = await sandboxCheck(rig());

    expect(result.stdout).toContain("network: only example.com, through fence's proxy");
    expect(result.stdout).not.toContain('network: off');
    expect(result.stdout).toContain('ok   nothing gets out but through the proxy');
  }, 150_000);

  it('does not claim a private /tmp without bubblewrap', async () => {
    // A PATH with no bwrap on it: fence itself is started by path.
    const empty = join(rig().root, 'empty-bin');
    mkdirSync(empty);
    const result = await sandboxCheck(rig(), { PATH: empty });

    expect(result.exitCode).toBe(1);
    expect(result.stdout).toContain('OS sandbox: none — bubblewrap (bwrap) is not installed');
    expect(result.stdout).toContain('without one, commands run with your full access');
    expect(result.stdout).not.toMatch(/\/tmp is|TMPDIR/);
  }, 150_000);
});
