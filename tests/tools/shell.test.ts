import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BashSession } from '../../src/processes/bash-session';
import type { ToolContext } from '../../src/tools/define-tool';
import type { ToolUse } from '../../src/parse/tool-use';
import { blockInput } from '../../src/tools/run-tool-use';
import { createShellTool, DEFAULT_SHELL_TIMEOUT_MS, parseShellOptions } from '../../src/tools/shell';
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

function run(command: string, tool = shell, context: ToolContext = ctx, options?: string) {
  return tool.execute(tool.parameters.parse({ command, options }), context);
}

/** A shell tool that notices a command waiting for input after 0.3 s of silence. */
const prompt = createShellTool({ inputWaitMs: 300 });

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
    expect(result).toEqual({ output: 'The command was empty: write the commands to run.', isError: true });
  });

  it.runIf(process.platform === 'linux')('reports a command waiting for input and types the answer of an input block', async () => {
    const asked = await run('read -p "continue? " ANSWER; echo "got $ANSWER"', prompt);
    expect(asked.output).toBe(
      'continue? \nThe command is waiting for input (no output for 0.3 s and it is reading the terminal). Answer it with a shell call whose options are `input`, or run another command to stop it.',
    );
    expect(asked.isError).toBe(false);
    expect(asked.value).toEqual({ output: 'continue? ', exitCode: null, waitingForInput: true });

    expect(await run('yes', prompt, ctx, 'input')).toMatchObject({ output: 'got yes\nExit code 0.', isError: false });
  });

  it.runIf(process.platform === 'linux')('stops a waiting command when the next block runs a command, and says so', async () => {
    expect((await run('cat', prompt)).value).toMatchObject({ waitingForInput: true });
    const next = await run('echo next', prompt);
    expect(next.output).toBe('The previous command was still waiting for input; it was stopped first.\nnext\nExit code 0.');
  });

  it('answers an input block with nothing waiting with an error, typing nothing', async () => {
    const result = await run('touch typed.txt', prompt, ctx, 'input');
    expect(result).toMatchObject({
      output: 'Nothing is waiting for input, so nothing was typed. Run commands without the `input` option.',
      isError: true,
    });
    expect((await run('ls typed.txt 2>&1 || echo absent', prompt)).output).toMatch(/absent/);
  });

  it('says a stopped command was interrupted, and nothing of what becomes of the shell', async () => {
    const stop = new AbortController();
    const running = run('echo started; touch stop-now; sleep 30; echo never', shell, { ...ctx, signal: stop.signal });
    while (!existsSync(join(workspace, 'stop-now'))) await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort();
    const result = await running;
    expect(result.output).toMatch(/^started\n(Exit code 130\.\n)?Interrupted before it finished\.$/);
    expect(result.isError).toBe(true);
    expect(await run('echo after')).toMatchObject({ output: 'after\nExit code 0.' });
  });

  it('gives a block its own timeout with timeout=<seconds>', async () => {
    const result = await run('echo started; sleep 30', shell, ctx, 'timeout=1');
    expect(result.output).toBe('started\nTimed out after 1 s and was interrupted; the shell is still running.');
    expect(result.isError).toBe(true);
    expect(await run('echo quick', shell, ctx, 'timeout=2.5s')).toMatchObject({ output: 'quick\nExit code 0.' });
  });

  it('refuses unknown options and timeouts out of bounds, without starting the shell', async () => {
    const noShell = makeToolContext(workspace);
    for (const options of ['timeout=0', 'timeout=0.5', 'timeout=86401', 'timeout=abc', 'timeout=', 'inptu', 'input --yes']) {
      const result = await run('echo hi', shell, noShell, options);
      expect(result.isError).toBe(true);
      expect(result.output).toMatch(/^(Unknown|Bad) shell option /);
    }
    expect((await run('echo hi', shell, noShell, 'timeout=0')).output).toBe(
      'Bad shell option "timeout=0": the timeout is a number of seconds from 1 to 86400 (24 h), e.g. `shell timeout=600`.',
    );
  });

  it('parses its options and takes them from the words after the tag', () => {
    expect(parseShellOptions(undefined)).toEqual({ input: false });
    expect(parseShellOptions('input')).toEqual({ input: true });
    expect(parseShellOptions(' timeout=600  input ')).toEqual({ input: true, timeoutMs: 600_000 });
    expect(parseShellOptions('timeout=86400s')).toEqual({ input: false, timeoutMs: 86_400_000 });
    const use = (args: string[], content: string): ToolUse => ({ tool: 'shell', args, content, format: 'markdown', start: 0, end: 0 });
    expect(blockInput(shell, use(['input'], 'y'))).toEqual({ options: 'input', command: 'y' });
    expect(blockInput(shell, use(['timeout=600', 'input'], ''))).toEqual({ options: 'timeout=600 input', command: '' });
    expect(blockInput(shell, use([], 'ls'))).toEqual({ command: 'ls' });
  });

  it.runIf(process.platform === 'linux')('lets an input block send an empty line', async () => {
    expect((await run('read -p "press enter" LINE; echo "[$LINE]"', prompt)).value).toMatchObject({ waitingForInput: true });
    expect(await run('', prompt, ctx, 'input')).toMatchObject({ output: '[]\nExit code 0.' });
  });

  it('notes the sandbox under a failed write to a protected path, a refused rename ("busy") too', async () => {
    const sandboxed: ToolContext = {
      ...ctx,
      sandboxPolicy: { mode: 'workspace-write', workspace, writable: [workspace], denied: [], readable: [], protected: [], network: false },
    };
    const fails = (message: string) => run(`echo ${JSON.stringify(message)} >&2; false`, shell, sandboxed);
    const refusals = [
      'bash: fence.toml: Read-only file system',
      'error: could not write config file .git/config: Device or resource busy',
      "mv: cannot move '.git' to '.git-old': Device or resource busy",
      'sed: cannot rename ./sedM9jMWz: Device or resource busy',
      'bash: .fence/x: Is a directory',
    ];
    // git's own config gets git's note: what stays read-only, and that commits work.
    const gitConfig = refusals[1] as string;
    for (const message of refusals.filter((line) => line !== gitConfig)) expect((await fails(message)).output).toContain('Note: fence runs commands in a sandbox');
    expect((await fails(gitConfig)).output).toContain("Note: git's hooks and configuration stay read-only in the sandbox");
    expect((await fails('umount: /mnt/disk: Device or resource busy')).output).not.toContain('Note:');
    expect((await run(`echo ${JSON.stringify(refusals[1])} >&2; false`)).output).not.toContain('Note:');
  });

  it('states its timeout in its instructions', () => {
    expect(shell.instructions).toContain(`${DEFAULT_SHELL_TIMEOUT_MS / 1000} s`);
    expect(createShellTool({ timeoutMs: 30_000 }).instructions).toContain('30 s');
    expect(shell.instructions).toContain('answer it with options `input`');
    expect(shell.instructions).toContain('timeout=<seconds>');
    expect(shell.instructions).not.toContain('```');
  });

  it('has an example that is a valid call with a timeout option', () => {
    expect(shell.example).toEqual({ options: 'timeout=600', command: 'npm install && npm test' });
    expect(parseShellOptions(shell.parameters.parse(shell.example).options)).toEqual({ input: false, timeoutMs: 600_000 });
  });
});
