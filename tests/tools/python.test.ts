import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PythonKernel } from '../../src/processes/python-kernel';
import type { ToolContext } from '../../src/tools/define-tool';
import { createPythonTool, DEFAULT_PYTHON_TIMEOUT_MS } from '../../src/tools/python';
import { makeTempWorkspace, makeToolContext } from '../support/tool-context';

let workspace: string;
let kernel: PythonKernel;
let ctx: ToolContext;

beforeAll(async () => {
  workspace = await makeTempWorkspace('fence-python-tool-');
  kernel = await PythonKernel.start({ cwd: workspace, maxOutputBytes: 4096 });
  ctx = { ...makeToolContext(workspace), python: () => Promise.resolve(kernel) };
});
afterAll(async () => {
  await kernel?.close();
  await rm(workspace, { recursive: true, force: true });
});

const python = createPythonTool();

function run(code: string, tool = python, context: ToolContext = ctx) {
  return tool.execute(tool.parameters.parse({ code }), context);
}

describe('python tool', () => {
  it('answers to python blocks with the code as its body', () => {
    expect(python).toMatchObject({ name: 'python', blockTypes: ['python', 'py', 'ipython'], block: { content: 'code' } });
    expect(python).toMatchObject({ callers: ['direct'], mutating: true });
    expect(python.resource?.({ code: 'print(1)' }, ctx)).toBe('print(1)');
  });

  it('gives the output, then the value of a final expression', async () => {
    const result = await run('print("hello")\n6 * 7');
    expect(result.output).toBe('hello\nOut: 42');
    expect(result.isError).toBe(false);
    expect(result.value).toEqual({ output: 'hello\n', value: '42', error: null });
  });

  it('says so when a cell prints nothing and has no value', async () => {
    expect(await run('quiet = 1')).toMatchObject({ output: '(no output)', isError: false });
  });

  it('keeps variables between blocks', async () => {
    await run('greeting = "hi"');
    expect((await run('greeting.upper()')).output).toBe("Out: 'HI'");
  });

  it('gives the trimmed traceback of an error, as an error result', async () => {
    const result = await run('print("before")\n{}["missing"]');
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/^before\nTraceback \(most recent call last\):\n {2}File "<cell-\d+>", line 2, in <module>\n/);
    expect(result.output).toMatch(/KeyError: 'missing'$/);
    expect(result.output).not.toContain('kernel.py');
  });

  it('notes a timeout, and the variables survive it', async () => {
    await run('survivor = 7');
    const quick = createPythonTool({ timeoutMs: 300 });
    const result = await run('while True:\n    pass', quick);
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/KeyboardInterrupt\nTimed out after 0\.3 s with KeyboardInterrupt; the kernel kept its variables\.$/);
    expect((await run('survivor', quick)).output).toBe('Out: 7');
  });

  it('says a stopped cell was interrupted, and nothing of what becomes of the kernel', async () => {
    const stop = new AbortController();
    const running = run("open('stop-now', 'w').close()\nwhile True:\n    pass", python, { ...ctx, signal: stop.signal });
    while (!existsSync(join(workspace, 'stop-now'))) await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort();
    const result = await running;
    expect(result.output).toMatch(/KeyboardInterrupt\nInterrupted with KeyboardInterrupt\.$/);
    expect(result.isError).toBe(true);
  });

  it('says plainly that state was lost when the kernel crashed', async () => {
    await run('doomed = 1');
    const result = await run('import os\nos._exit(3)');
    expect(result.isError).toBe(true);
    expect(result.output).toBe(
      'The Python kernel crashed and was started again: variables, imports and functions are gone. (Cause: the kernel exited with code 3.)',
    );
    expect((await run('"doomed" in globals()')).output).toBe('Out: False');
  });

  it('notes output dropped from the middle', async () => {
    const result = await run('for i in range(2000):\n    print(i)');
    expect(result.output).toMatch(/^0\n1\n/);
    expect(result.output).toMatch(/\n1999\n\d+ bytes of output were dropped from the middle\.$/);
  });

  it('answers an empty block with an error, without starting Python', async () => {
    const noPython = { ...ctx, python: () => Promise.reject(new Error('must not start')) };
    expect(await run(' \n\t', python, noPython)).toEqual({ output: 'The code was empty: write the Python to run.', isError: true });
  });

  it('is an error result when the session has no Python', async () => {
    const result = await run('1', python, makeToolContext(workspace));
    expect(result).toEqual({ output: 'Python is not available in this session: use the shell or a program instead.', isError: true });
  });

  it('is an error result when Python cannot be started', async () => {
    const broken = { ...ctx, python: () => Promise.reject(new Error('python3 not found')) };
    expect(await run('1', python, broken)).toEqual({ output: 'Python could not be started: python3 not found', isError: true });
  });

  it('explains persistence, values, await, the tool functions and its timeout', () => {
    const text = python.instructions;
    expect(text).toContain('persist');
    expect(text).toContain('Out: <repr>');
    expect(text).toContain('await');
    expect(text).toContain('ToolError');
    expect(text).toContain('await gather(tools.read(path="a"), tools.read(path="b"))');
    expect(text).toContain(`${DEFAULT_PYTHON_TIMEOUT_MS / 1000} s`);
  });
});
