import { appendFileSync, chownSync, readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { FENCE_BIN } from '../support/run-cli';
import { block, bubblewrapMissing, fenceIn, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';

/**
 * The limits of `[sandbox]`, through the built CLI: a fork bomb stops at `max_processes` and
 * the run goes on, a process cannot take more memory than `max_memory_mb`, a file stops
 * growing at `max_file_mb`; honest work under the same limits runs.
 */

const rig = useSandboxRig();

/** Sets keys of `[sandbox]` in the user's own config.toml. */
function limit(rig: SandboxRig, lines: string): void {
  appendFileSync(rig.userConfig, `[sandbox]\n${lines}\n`);
}

/**
 * The kernel does not hold root to a process limit, so the process test runs fence as
 * `nobody` when the tests run as root (bubblewrap then makes a user namespace, whose count is
 * the sandbox's own), with the rig's folders made theirs.
 */
const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;
/** Whether fence can be run as `nobody` with bubblewrap working for them (setpriv there, user namespaces allowed). */
const canDropRoot =
  !isRoot ||
  spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', 'bwrap', '--ro-bind', '/', '/', '--unshare-pid', '--', 'true'], { cwd: '/', stdio: 'ignore' }).status === 0;

function chownTree(path: string, id: number): void {
  chownSync(path, id, id);
  if (!statSync(path).isDirectory()) return;
  for (const name of readdirSync(path)) chownTree(join(path, name), id);
}

/** Runs the built fence in the rig's workspace as a user the process limit holds. */
function fenceAsUser(rig: SandboxRig, args: string[]) {
  const command = [process.execPath, FENCE_BIN, '-m', 'local/test', ...args];
  if (isRoot) chownTree(rig.root, NOBODY);
  const [file, ...rest] = isRoot ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...command] : command;
  return execa(file ?? '', rest, {
    cwd: rig.workspace,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', ...rig.env },
    extendEnv: false,
    input: '',
    reject: false,
    timeout: 150_000,
  });
}

describe.skipIf(bubblewrapMissing)('sandbox limits', () => {
  it.skipIf(!canDropRoot)('stops a fork bomb at max_processes, keeps a command from starting more, and the run goes on', { timeout: 180_000 }, async () => {
    limit(rig(), 'max_processes = 200');
    // Bounded twice over: by the limit, and by killing its process group after 5 s, again and
    // again until none is left (a group kill can miss a child being forked as it lands).
    const bomb = block(
      'shell',
      [
        'set -m',
        "bash -c ':(){ :|:& };:' 2>/tmp/bomb.err &",
        'bomb=$!',
        'sleep 5',
        'while kill -KILL -- -$bomb 2>/dev/null; do :; done',
        'set +m',
        "grep -q 'Resource temporarily unavailable' /tmp/bomb.err && echo fork refused",
        'echo bomb over',
      ].join('\n'),
    );
    const count = block(
      'shell',
      [
        'python3 - <<\'EOF\'',
        'import os, time',
        'children = []',
        'try:',
        '    for _ in range(300):',
        '        pid = os.fork()',
        '        if pid == 0:',
        '            time.sleep(60)',
        '            os._exit(0)',
        '        children.append(pid)',
        'except OSError as error:',
        '    print("fork failed:", error.strerror)',
        'print("started", len(children))',
        'for pid in children:',
        '    os.kill(pid, 9)',
        '    os.waitpid(pid, 0)',
        'EOF',
      ].join('\n'),
    );
    const honest = block('shell', 'for i in $(seq 50); do sleep 0.2 & done; wait; echo fifty ran');
    script(rig(), [bomb, count, honest, 'Done.']);
    const run = await fenceAsUser(rig(), ['-n', 'bomb']);
    expect(run.exitCode, run.stderr).toBe(0);
    const [bombed, counted, fifty] = toolResults(rig()).map((message) => message.content);
    expect(bombed).toContain('fork refused');
    expect(bombed).toContain('bomb over');
    const started = Number(/started (\d+)/.exec(counted ?? '')?.[1]);
    expect(started).toBeGreaterThan(50);
    expect(started).toBeLessThan(200);
    expect(fifty).toContain('fifty ran');
    expect(run.stdout).toContain('Done.');
  });

  it('keeps one process under max_memory_mb, while Node (which reserves much more than it uses) still starts', { timeout: 120_000 }, async () => {
    // Node 24's V8 makes its 512 MB range for compiled code writable as it starts, which counts:
    // it needs about 600 MB to start where Node 20 and 22 need less than 100.
    limit(rig(), 'max_memory_mb = 1024');
    script(rig(), [
      block('shell', `python3 -c "b = bytearray(1536 * 1024 * 1024); print('allocated')" 2>&1 | tail -1`),
      block('shell', `"${process.execPath}" -e "console.log('node ran')"`),
      'Done.',
    ]);
    const run = await fenceIn(rig(), ['-n', 'memory']);
    expect(run.exitCode).toBe(0);
    const [python, node] = toolResults(rig()).map((message) => message.content);
    expect(python).toContain('MemoryError');
    expect(python).not.toContain('allocated');
    expect(node).toContain('node ran');
  });

  it('stops a file at max_file_mb, and writes a smaller one whole', { timeout: 120_000 }, async () => {
    limit(rig(), 'max_file_mb = 5');
    script(rig(), [
      block('shell', 'head -c 20M /dev/zero > /tmp/fill; echo "exit $?"; stat -c "size %s" /tmp/fill'),
      block('shell', 'head -c 4M /dev/zero > small; stat -c "size %s" small'),
      'Done.',
    ]);
    const run = await fenceIn(rig(), ['-n', 'fill']);
    expect(run.exitCode).toBe(0);
    const [fill, small] = toolResults(rig()).map((message) => message.content);
    expect(fill).toContain('size 5242880');
    expect(fill).not.toContain('exit 0');
    expect(small).toContain(`size ${4 * 1024 * 1024}`);
  });
});
