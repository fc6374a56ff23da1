import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PythonKernel, type PythonKernelOptions } from '../../src/processes/python-kernel';
import { waitUntilDead } from '../support/bash-sessions';
import { makeTempWorkspace } from '../support/tool-context';

let workspace: string;
let kernel: PythonKernel;

const hasIPython = spawnSync(process.env.FENCE_PYTHON ?? 'python3', ['-c', 'import IPython']).status === 0;

beforeAll(async () => {
  workspace = await makeTempWorkspace('fence-python-test-');
  kernel = await PythonKernel.start({ cwd: workspace });
});
afterAll(async () => {
  await kernel?.close();
  await rm(workspace, { recursive: true, force: true });
});

/** A kernel of its own for one test, closed at its end. */
async function withKernel<T>(run: (k: PythonKernel) => Promise<T>, options: Partial<PythonKernelOptions> = {}): Promise<T> {
  const own = await PythonKernel.start({ cwd: workspace, ...options });
  try {
    return await run(own);
  } finally {
    await own.close();
  }
}

/** Whether `pid` exists at all, a zombie included. */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether `pid` is a live process (a zombie waiting to be reaped counts as gone). */
async function isRunning(pid: number): Promise<boolean> {
  if (process.platform === 'linux') {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
    return stat !== undefined && !/^\d+ \(.*\) Z/s.test(stat);
  }
  return processExists(pid);
}

describe('PythonKernel cells', () => {
  it('evaluates a final expression and shows its repr', async () => {
    expect(await kernel.run('1+1')).toEqual({ output: '', value: '2', timedOut: false, interrupted: false, droppedBytes: 0 });
    expect((await kernel.run('"a" * 3')).value).toBe("'aaa'");
  });

  it('shows no value for None, statements or a trailing semicolon', async () => {
    for (const code of ['None', 'y = 1', '2 + 2;']) expect((await kernel.run(code)).value).toBeUndefined();
  });

  it('keeps globals, functions and imports between cells', async () => {
    await kernel.run('import math\ncounter = 41\ndef bump(n):\n    return n + 1');
    expect((await kernel.run('bump(counter), math.floor(2.5)')).value).toBe('(42, 2)');
  });

  it('runs in the working folder, with __name__ == "__main__"', async () => {
    expect((await kernel.run('import os; os.getcwd()')).value).toBe(`'${workspace}'`);
    expect((await kernel.run('__name__')).value).toBe("'__main__'");
  });

  it('gives stdout and stderr in the order written', async () => {
    const result = await kernel.run('import sys\nprint("one")\nprint("two", file=sys.stderr)\nsys.stdout.write("three\\n")\nsys.stderr.write("four\\n")');
    expect(result.output).toBe('one\ntwo\nthree\nfour\n');
  });

  it('captures the output of child processes at the file-descriptor level', async () => {
    const result = await kernel.run('import os, subprocess\nos.system("echo from-shell")\nsubprocess.run(["sh", "-c", "echo to-stderr >&2"])\nNone');
    expect(result.output).toBe('from-shell\nto-stderr\n');
  });

  it('reports an exception with a traceback trimmed to the cell', async () => {
    const result = await kernel.run('def fail():\n    raise ValueError("bad input")\n\nfail()');
    expect(result.error).toMatchObject({ name: 'ValueError', message: 'bad input' });
    const traceback = result.error?.traceback ?? '';
    expect(traceback).toMatch(/^Traceback \(most recent call last\):\n {2}File "<cell-\d+>", line 4, in <module>\n/);
    expect(traceback).toContain('raise ValueError("bad input")');
    expect(traceback).toMatch(/ValueError: bad input\n$/);
    expect(traceback).not.toContain('kernel.py');
  });

  it('reports a syntax error without running anything', async () => {
    const result = await kernel.run('marker = "ran"\nx = (');
    expect(result.error?.name).toBe('SyntaxError');
    expect(result.error?.traceback).toContain("'(' was never closed");
    expect(result.error?.traceback).not.toContain('kernel.py');
    expect((await kernel.run('"marker" in globals()')).value).toBe('False');
  });

  it('survives SystemExit and input() on an empty stdin', async () => {
    expect((await kernel.run('import sys; sys.exit(2)')).error?.name).toBe('SystemExit');
    expect((await kernel.run('input()')).error?.name).toBe('EOFError');
    expect((await kernel.run('"alive"')).value).toBe("'alive'");
  });

  it('supports top-level await', async () => {
    expect((await kernel.run('import asyncio\nawait asyncio.sleep(0.01)\n5')).value).toBe('5');
    expect((await kernel.run('async def twice(x):\n    return 2 * x\nawait twice(21)')).value).toBe('42');
  });

  it('puts sys.stdout and the output descriptors back after a cell moved them', async () => {
    expect((await kernel.run('import io, os, sys\nsys.stdout = io.StringIO()\nos.close(2)\nprint("hidden")')).output).toBe('');
    expect((await kernel.run('import sys\nprint("visible")\nprint("err", file=sys.stderr)')).output).toBe('visible\nerr\n');
  });

  it('makes non-UTF-8 bytes and control characters readable', async () => {
    const result = await kernel.run('import sys\nsys.stdout.buffer.write(b"\\xff\\xfe ok\\n")\nprint("nul\\x00bell\\x07")\nNone');
    expect(result.output).toBe('\uFFFD\uFFFD ok\nnul\uFFFDbell\n');
  });

  it('streams output as it arrives', async () => {
    const chunks: string[] = [];
    const result = await kernel.run('print("first")\nprint("second")', { onOutput: (chunk) => chunks.push(chunk) });
    expect(chunks.join('')).toBe(result.output);
    expect(result.output).toBe('first\nsecond\n');
  });
});

describe('PythonKernel limits', () => {
  it('bounds 50 MB of output to its head and tail, with the dropped bytes counted', async () => {
    const result = await withKernel((k) => k.run('import sys\nsys.stdout.write(("x" * 1023 + "\\n") * 51200)\nprint("THE END")'), {
      maxOutputBytes: 1024 * 1024,
    });
    expect(result.droppedBytes).toBeGreaterThan(49 * 1024 * 1024);
    expect(Buffer.byteLength(result.output)).toBeLessThan(1024 * 1024 + 200);
    expect(result.output).toMatch(/\[\.\.\. \d+ bytes of output dropped \.\.\.\]/);
    expect(result.output.endsWith('x\nTHE END\n')).toBe(true);
  });

  it('interrupts a cell past its timeout with KeyboardInterrupt and keeps the state', async () => {
    await kernel.run('kept = "still here"');
    const result = await kernel.run('while True:\n    pass', { timeoutMs: 200 });
    expect(result).toMatchObject({ timedOut: true, interrupted: true, error: { name: 'KeyboardInterrupt' } });
    expect(result.restarted).toBeUndefined();
    expect((await kernel.run('kept')).value).toBe("'still here'");
  });

  it('interrupts a cell when its signal is aborted', async () => {
    const controller = new AbortController();
    // One write: print() writes its text and its newline apart, and the abort could fall between.
    const running = kernel.run('import sys, time\nsys.stdout.write("sleeping\\n")\ntime.sleep(60)', {
      signal: controller.signal,
      onOutput: () => controller.abort(),
    });
    const result = await running;
    expect(result).toMatchObject({ timedOut: false, interrupted: true, output: 'sleeping\n', error: { name: 'KeyboardInterrupt' } });
  });

  it('kills and restarts a kernel whose cell ignores SIGINT', async () => {
    await withKernel(async (k) => {
      const before = k.pid;
      await k.run('kept = 1');
      const result = await k.run('import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass', { timeoutMs: 200 });
      expect(result).toMatchObject({ timedOut: true, interrupted: true });
      expect(result.restarted?.reason).toMatch(/did not stop/);
      expect(k.pid).not.toBe(before);
      expect(await isRunning(before)).toBe(false);
      expect((await k.run('"kept" in globals(), 1 + 1')).value).toBe('(False, 2)');
    });
  });

  it('restarts after os._exit and after a segfault, saying why', async () => {
    await withKernel(async (k) => {
      const exited = await k.run('print("bye", flush=True)\nimport os\nos._exit(3)');
      expect(exited.restarted?.reason).toBe('the kernel exited with code 3');
      expect(exited.output).toBe('bye\n');
      const crashed = await k.run('import ctypes\nctypes.string_at(0)');
      expect(crashed.restarted?.reason).toBe('the kernel was killed by SIGSEGV');
      expect((await k.run('6 * 7')).value).toBe('42');
    });
  });

  it('notices a kernel that died between cells', async () => {
    await withKernel(async (k) => {
      const old = k.pid;
      process.kill(old, 'SIGKILL');
      // Wait until fence has reaped it (its exit event comes with the reaping), or the cell
      // would meet a dying kernel.
      while (processExists(old)) await new Promise((resolve) => setTimeout(resolve, 10));
      const result = await k.run('"fresh"');
      expect(result.restarted?.reason).toMatch(/SIGKILL while idle/);
      expect(result.value).toBe("'fresh'");
    });
  });
});

describe('PythonKernel host tools', () => {
  it('returns the host value to a sync call, with the arguments passed through', async () => {
    const calls: unknown[] = [];
    const options = {
      toolNames: ['lookup'],
      onToolCall: async (name: string, args: Record<string, unknown>) => {
        calls.push({ name, args });
        return { found: args.key, n: 3 };
      },
    };
    const value = await withKernel((k) => k.run('lookup(key="alpha")["n"] + 1'), options);
    expect(value.value).toBe('4');
    expect(calls).toEqual([{ name: 'lookup', args: { key: 'alpha' } }]);
  });

  it('raises ToolError for a failing tool, catchable in Python', async () => {
    const options = {
      toolNames: ['read'],
      onToolCall: () => Promise.reject(new Error('no such file: a.txt')),
    };
    await withKernel(async (k) => {
      const caught = await k.run('try:\n    read(path="a.txt")\nexcept ToolError as e:\n    print("caught:", e)');
      expect(caught.output).toBe('caught: no such file: a.txt\n');
      const uncaught = await k.run('read(path="a.txt")');
      expect(uncaught.error).toMatchObject({ name: 'ToolError', message: 'no such file: a.txt' });
      expect(uncaught.error?.traceback).not.toContain('kernel.py');
    }, options);
  });

  it('runs async calls gathered together concurrently on the host', async () => {
    let outstanding = 0;
    let most = 0;
    const waiting: (() => void)[] = [];
    const options = {
      toolNames: ['read'],
      onToolCall: (_name: string, args: Record<string, unknown>) => {
        outstanding++;
        most = Math.max(most, outstanding);
        // Each call is answered only once both are outstanding: run one after the other, they hang.
        const answered = new Promise<void>((resolve) => waiting.push(resolve));
        if (waiting.length === 2) for (const resolve of waiting) resolve();
        return answered.then(() => {
          outstanding--;
          return `text of ${String(args.path)}`;
        });
      },
    };
    const result = await withKernel((k) => k.run('await gather(tools.read(path="a"), tools.read(path="b"))', { timeoutMs: 10_000 }), options);
    expect(result.value).toBe("['text of a', 'text of b']");
    expect(most).toBe(2);
  });

  it('interrupts a cell blocked on a tool that never answers', async () => {
    const options = { toolNames: ['hang'], onToolCall: () => new Promise<never>(() => undefined) };
    await withKernel(async (k) => {
      const result = await k.run('hang()', { timeoutMs: 200 });
      expect(result).toMatchObject({ timedOut: true, error: { name: 'KeyboardInterrupt' } });
      expect(result.error?.traceback).not.toContain('threading.py');
      expect((await k.run('1')).value).toBe('1');
    }, options);
  });
});

describe('PythonKernel lifetime', () => {
  it('kills the kernel and its child processes on close, and removes its temp folder', async () => {
    const k = await PythonKernel.start({ cwd: workspace });
    const child = await k.run('import subprocess\nsubprocess.Popen(["sleep", "300"]).pid');
    const childPid = Number(child.value);
    const pid = k.pid;
    expect(existsSync(k.tempDir)).toBe(true);
    expect(await isRunning(childPid)).toBe(true);
    await k.close();
    await k.close();
    expect(await isRunning(pid)).toBe(false);
    // SIGKILL went to the whole group; a loaded machine may show the child a moment longer.
    expect(await waitUntilDead([childPid])).toEqual([]);
    expect(existsSync(k.tempDir)).toBe(false);
    await expect(k.run('1')).rejects.toThrow(/closed/);
  });

  it('removes temp folders left by a fence process that is gone', async () => {
    const deadPid = await new Promise<number>((resolve) => {
      const child = spawn('true');
      child.on('exit', () => resolve(child.pid ?? 0));
    });
    const stale = join(tmpdir(), `fence-python-${deadPid}-stale`);
    await mkdir(join(stale, 'ipython'), { recursive: true });
    await withKernel(async () => {
      expect(existsSync(stale)).toBe(false);
    });
  });

  it('fails to start with a clear message when the interpreter is missing', async () => {
    await expect(PythonKernel.start({ cwd: workspace, python: join(workspace, 'no-such-python') })).rejects.toThrow(/did not start/);
  });
});

describe.skipIf(!hasIPython)('PythonKernel with IPython installed', () => {
  it('runs magics and !commands, with IPython files in the temp folder', async () => {
    expect((await kernel.run('!echo bang')).output).toBe('bang\n');
    expect((await kernel.run('%cd ..\n%pwd')).value).toBe(`'${join(workspace, '..')}'`);
    await kernel.run(`import os; os.chdir(${JSON.stringify(workspace)})`);
    expect((await kernel.run('get_ipython().ipython_dir.startswith(' + JSON.stringify(kernel.tempDir) + ')')).value).toBe('True');
  });
});

describe('PythonKernel without IPython', () => {
  it('reports IPython syntax as a plain syntax error', async () => {
    // python -S skips site-packages, where IPython would live.
    const real = spawnSync(process.env.FENCE_PYTHON ?? 'python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' });
    const wrapper = join(workspace, 'python-no-site');
    await writeFile(wrapper, `#!/bin/sh\nexec ${JSON.stringify(real.stdout.trim())} -S "$@"\n`);
    await chmod(wrapper, 0o755);
    await withKernel(async (k) => {
      const result = await k.run('!echo bang');
      expect(result.error?.name).toBe('SyntaxError');
      expect(result.output).toBe('');
      expect((await k.run('"get_ipython" in globals(), 1 + 1')).value).toBe('(False, 2)');
    }, { python: wrapper });
  });
});
