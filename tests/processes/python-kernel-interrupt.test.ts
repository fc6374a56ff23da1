import { mkdtempSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bubblewrapSandbox, offPolicy, sandboxSupport, type OsSandbox } from '../../src/os-sandbox/os-sandbox';
import { PythonKernel } from '../../src/processes/python-kernel';

/**
 * Ctrl-C in the chat aborts the running cell: the cell ends with KeyboardInterrupt and the
 * kernel keeps its variables, with the sandbox off and in bubblewrap alike, wherever the cell
 * is when the interrupt comes — asleep, in a loop of short sleeps, busy, blocked reading, in a
 * child process, or not yet begun.
 */

const support = sandboxSupport();

/** Cells that print `started` and then run until interrupted. */
const RUNNING_CELLS: Record<string, string> = {
  'a long sleep': 'print("started")\nimport time\ntime.sleep(30)',
  'a loop of short sleeps': 'print("started")\nimport time\nfor _ in range(3000):\n    time.sleep(0.01)',
  'a busy loop': 'print("started")\nwhile True:\n    pass',
  'a blocked read': 'import os\nr, w = os.pipe()\nprint("started")\nos.read(r, 1)',
  'a child process': 'import subprocess\nprint("started", flush=True)\nsubprocess.run(["sleep", "30"])',
};

/** `os.system` ignores SIGINT while it waits, as C's system() does: the shell child stops, and the cell ends without an error. */
const SHELL_CHILD = 'import os\nprint("started", flush=True)\nstatus = os.system("sleep 30")\nprint("after", status)';

/** Runs `code` and aborts it once it printed `started`. */
async function interruptOnceStarted(kernel: PythonKernel, code: string) {
  const abort = new AbortController();
  return kernel.run(code, {
    signal: abort.signal,
    onOutput: (chunk) => {
      if (chunk.includes('started')) abort.abort();
    },
  });
}

const modes: Array<{ name: string; sandbox: () => OsSandbox | undefined; skip: boolean }> = [];
let sandbox: OsSandbox | undefined;
let root: string;
modes.push({ name: 'with the sandbox off', sandbox: () => undefined, skip: false });
modes.push({ name: 'in bubblewrap', sandbox: () => sandbox, skip: support.kind !== 'bubblewrap' });

beforeAll(() => {
  root = mkdtempSync('/var/tmp/fence-kernel-interrupt-test-');
  if (support.kind === 'bubblewrap') sandbox = bubblewrapSandbox({ ...offPolicy(root), mode: 'workspace-write', network: false }, support.path);
});
afterAll(() => {
  sandbox?.close();
  rmSync(root, { recursive: true, force: true });
});

for (const mode of modes) {
  describe.skipIf(mode.skip)(`interrupting a Python cell ${mode.name}`, () => {
    let kernel: PythonKernel;
    beforeAll(async () => {
      const inside = mode.sandbox();
      kernel = await PythonKernel.start({ cwd: root, ...(inside ? { sandbox: inside } : {}) });
      await kernel.run('kept = 41');
    }, 30_000);
    afterAll(() => kernel.close());

    for (const [where, code] of Object.entries(RUNNING_CELLS)) {
      it(`ends ${where} with KeyboardInterrupt and keeps the variables`, async () => {
        const result = await interruptOnceStarted(kernel, code);
        expect(result.interrupted).toBe(true);
        expect(result.restarted).toBeUndefined();
        expect(result.error?.name).toBe('KeyboardInterrupt');
        expect(result.output).toContain('started');
        const next = await kernel.run('kept + 1');
        expect(next.restarted).toBeUndefined();
        expect(next.value).toBe('42');
      }, 30_000);
    }

    it('ends a shell child of os.system and keeps the variables, however the interrupt falls as the shell starts', async () => {
      // An interrupt that comes as os.system starts its shell finds neither the cell (system()
      // ignores SIGINT) nor the shell (not there yet): repeated, it still stops the cell.
      for (let round = 0; round < 20; round++) {
        const result = await interruptOnceStarted(kernel, SHELL_CHILD);
        expect(result.interrupted).toBe(true);
        expect(result.restarted).toBeUndefined();
        expect(result.output).toContain('started');
      }
      const next = await kernel.run('kept + 1');
      expect(next.restarted).toBeUndefined();
      expect(next.value).toBe('42');
    }, 60_000);

    it('keeps the variables when the interrupt comes as the cell is sent, before it begins', async () => {
      // The abort lands at different points of the cell's start: before it is sent, while the
      // kernel takes it, as it begins. Wherever it lands, the cell stops and nothing is lost.
      for (const wait of [0, 1, 2, 3, 4, 5, 6, 8, 10, 12].flatMap((ms) => [ms, ms, ms])) {
        const abort = new AbortController();
        const running = kernel.run('import time\ntime.sleep(30)\nkept = 0', { signal: abort.signal });
        setTimeout(() => abort.abort(), wait);
        const result = await running;
        expect(result.restarted).toBeUndefined();
        expect(result.interrupted).toBe(true);
        const next = await kernel.run('kept');
        expect(next.restarted).toBeUndefined();
        expect(next.value).toBe('41');
      }
    }, 60_000);

    it('runs the next cell in full after an interrupt: a late interrupt does not carry over', async () => {
      await interruptOnceStarted(kernel, RUNNING_CELLS['a long sleep'] ?? '');
      const next = await kernel.run('import time\ntime.sleep(0.2)\nkept * 2');
      expect(next.error).toBeUndefined();
      expect(next.value).toBe('82');
    }, 30_000);
  });
}
