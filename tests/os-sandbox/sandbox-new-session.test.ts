import { mkdtempSync, rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bubblewrapSandbox, offPolicy, sandboxSupport, type OsSandbox } from '../../src/os-sandbox/os-sandbox';
import { PythonKernel } from '../../src/processes/python-kernel';
import { createCommandTool } from '../../src/tools/command-tool';
import { makeToolContext } from '../support/tool-context';

/**
 * Processes on pipes start in bubblewrap in a session of their own (`--new-session`): the
 * signals fence sends to stop them must still reach them. A Python cell past its timeout is
 * interrupted and the kernel keeps its state; a command tool past its timeout is stopped with
 * what it started.
 */

const support = sandboxSupport();

describe.skipIf(support.kind !== 'bubblewrap')('interrupts and timeouts in a sandbox with no controlling terminal', () => {
  let root: string;
  let sandbox: OsSandbox;

  beforeEach(() => {
    root = mkdtempSync('/var/tmp/fence-new-session-test-');
    if (support.kind !== 'bubblewrap') throw new Error('no bubblewrap');
    sandbox = bubblewrapSandbox({ ...offPolicy(root), mode: 'workspace-write', network: false }, support.path);
  });
  afterEach(() => {
    sandbox.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('interrupts a Python cell past its timeout with KeyboardInterrupt and keeps the kernel and its variables', async () => {
    const kernel = await PythonKernel.start({ cwd: root, sandbox });
    try {
      await kernel.run('kept = 41');
      const looping = await kernel.run('while True:\n    pass', { timeoutMs: 500 });
      expect(looping.timedOut).toBe(true);
      expect(looping.error?.name).toBe('KeyboardInterrupt');
      expect(looping.restarted).toBeUndefined();
      expect((await kernel.run('kept + 1')).value).toBe('42');
      const child = await kernel.run('import subprocess\nsubprocess.run(["sleep", "60"])', { timeoutMs: 500 });
      expect(child.error?.name).toBe('KeyboardInterrupt');
      expect((await kernel.run('kept')).value).toBe('41');
    } finally {
      await kernel.close();
    }
  }, 60_000);

  it('stops a command tool past its timeout, with the processes it started', async () => {
    const tool = createCommandTool('sleepy', { description: 'sleeps', command: ['sh', '-c', 'sleep 60 & sleep 60; echo "{}"'], timeout: 1 });
    const ctx = { ...makeToolContext(root), wrapInSandbox: sandbox.wrap };
    const result = await tool.execute(tool.parameters.parse({}), ctx);
    expect(result).toMatchObject({ isError: true, output: 'sleepy timed out after 1 s and was stopped' });
  }, 30_000);

  it('still runs a command tool to its answer', async () => {
    const tool = createCommandTool('echo', { description: 'echoes', command: ['python3', '-c', 'import json, sys; print(json.dumps(json.load(sys.stdin)))'] });
    const ctx = { ...makeToolContext(root), wrapInSandbox: sandbox.wrap };
    expect((await tool.execute(tool.parameters.parse({ a: 1 }), ctx)).value).toEqual({ a: 1 });
  }, 30_000);
});
