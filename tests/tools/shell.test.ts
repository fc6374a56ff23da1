import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BashSession } from '../../src/runtime/bash-session';
import type { ToolContext } from '../../src/tools/define-tool';
import { createShellTool, DEFAULT_SHELL_TIMEOUT_MS } from '../../src/tools/shell';
import { makeTempWorkspace, makeToolContext } from '../support/tool-context';

let workspace: string;
let bash: BashSession;
let ctx: ToolContext;

beforeAll(async () => {
  workspace = await makeTempWorkspace('fence-shell-');
  bash = await BashSession.start({ cwd: workspace });
  ctx = { ...makeToolContext(workspace), bash: () => Promise.resolve(bash) };
});
afterAll(async () => {
  await bash?.close();
  await rm(workspace, { recursive: true, force: true });
});

const shell = createShellTool();

function run(command: string, tool = shell, context: ToolContext = ctx) {
  return tool.execute(tool.parameters.parse({ command }), context);
}

describe('shell tool', () => {
  it('returns the output followed by the exit code', async () => {
    const result = await run('echo hello; echo world');
    expect(result.output).toBe('hello\nworld\nExit code 0.');
    expect(result.isError).toBe(false);
    expect(result.value).toEqual({ output: 'hello\nworld\n', exitCode: 0 });
  });

  it('gives just the exit code when a command prints nothing', async () => {
    expect(await run('true')).toMatchObject({ output: 'Exit code 0.', isError: false });
  });

  it('marks a non-zero exit as an error, with stderr in the output', async () => {
    const result = await run('echo "no luck" >&2; false');
    expect(result.output).toBe('no luck\nExit code 1.');
    expect(result.isError).toBe(true);
  });

  it('keeps the working folder and variables between blocks', async () => {
    await mkdir(join(workspace, 'sub'), { recursive: true });
    await run('cd sub && GREETING=hi');
    expect((await run('echo "$GREETING from $(basename "$PWD")"; cd ..')).output).toBe('hi from sub\nExit code 0.');
  });

  it('interrupts a command that runs past the timeout, and the shell still works', async () => {
    const quick = createShellTool({ timeoutMs: 500 });
    const result = await run('echo started; sleep 30', quick);
    expect(result.isError).toBe(true);
    expect(result.output).toContain('started');
    expect(result.output).toMatch(/Timed out after 0\.5 s and was interrupted; the shell is still running\./);

    expect(await run('echo still here', quick)).toMatchObject({ output: 'still here\nExit code 0.', isError: false });
  });

  it('reports that bash exited and was started again with its state reset', async () => {
    await run('export MARK=set; mkdir -p gone && cd gone');
    const result = await run('exit 3');
    expect(result.isError).toBe(true);
    expect(result.output).toContain('bash exited (code 3) and was started again: the working folder, variables and functions were reset.');

    const after = await run('echo "${MARK:-unset} $PWD"');
    expect(after.output).toBe(`unset ${workspace}\nExit code 0.`);
  });

  it('answers an empty block with an error, without starting the shell', async () => {
    // makeToolContext's bash() fails the test if it is called.
    const result = await run('  \n\t\n', shell, makeToolContext(workspace));
    expect(result).toEqual({ output: 'The shell block was empty: write the commands inside it.', isError: true });
  });

  it('states its timeout in its instructions', () => {
    expect(shell.instructions).toContain(`${DEFAULT_SHELL_TIMEOUT_MS / 1000} s`);
    expect(createShellTool({ timeoutMs: 30_000 }).instructions).toContain('30 s');
  });
});
