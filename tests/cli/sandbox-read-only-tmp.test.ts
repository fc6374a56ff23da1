import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runFence } from '../support/run-cli';
import { block, bubblewrapMissing, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';

/**
 * A workspace under the host's /tmp, which the sandbox replaces with its own: every mode still
 * sees it where it is. (The tests' folders are under /var/tmp elsewhere; here /tmp is the point.)
 */

describe.skipIf(bubblewrapMissing)('a workspace under the host /tmp, which the sandbox replaces with its own', () => {
  const rig = useSandboxRig();
  let workspace: string;
  beforeEach(() => {
    // The point of these tests: not /var/tmp.
    workspace = mkdtempSync('/tmp/fence-read-only-test-');
    execFileSync('git', ['init', '-q', workspace]);
    writeFileSync(join(workspace, 'notes.txt'), 'the workspace file\n');
  });
  afterEach(() => rmSync(workspace, { recursive: true, force: true }));

  const fenceInTmp = (r: SandboxRig, args: string[]) => runFence(['-m', 'local/test', ...args], { cwd: workspace, env: r.env, timeoutMs: 120_000 });

  it('reads the workspace in read-only mode and refuses a write there', async () => {
    script(rig(), [block('shell', 'cat notes.txt'), block('shell', 'echo changed > notes.txt'), block('python', 'print(open("notes.txt").read())'), 'Read it.']);
    const result = await fenceInTmp(rig(), ['--sandbox', 'read-only', 'read the notes']);

    expect(result.stderr).not.toContain('bwrap');
    expect(result.exitCode).toBe(0);
    const [read, write, python] = toolResults(rig()).map((message) => String(message.content));
    expect(read).toContain('the workspace file');
    expect(write).toMatch(/Read-only file system/);
    expect(python).toContain('the workspace file');
    expect(readFileSync(join(workspace, 'notes.txt'), 'utf8')).toBe('the workspace file\n');
  }, 150_000);

  it('passes every check of `fence sandbox check` in each mode', async () => {
    for (const mode of ['workspace-write', 'read-only']) {
      const result = await runFence(['sandbox', 'check', '--sandbox', mode], { cwd: workspace, env: rig().env, timeoutMs: 120_000 });
      expect(result.stdout, mode).not.toContain('FAIL');
      expect(result.exitCode, mode).toBe(0);
    }
  }, 150_000);
});
