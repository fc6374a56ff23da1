import { z } from 'zod';
import { DEFAULT_INPUT_WAIT_MS, NOTHING_WAITING, type BashRunResult } from '../processes/bash-session';
import type { SandboxPolicy } from '../os-sandbox/policy';
import { sandboxNotes } from './sandbox-notes';
import { defineTool, type ToolResult } from './define-tool';
import { seconds } from './prompt-text';

/** Default per-command timeout. A command that runs longer is interrupted, the shell survives. */
export const DEFAULT_SHELL_TIMEOUT_MS = 120_000;
/** Bounds of a block's own timeout (`shell timeout=600`), in seconds: 1 s to 24 h. */
export const MIN_BLOCK_TIMEOUT_S = 1;
export const MAX_BLOCK_TIMEOUT_S = 24 * 60 * 60;

/** Options of the shell tool that a session may set. */
export interface ShellToolOptions {
  /** Timeout of a block that does not set its own (default {@link DEFAULT_SHELL_TIMEOUT_MS}). */
  timeoutMs?: number;
  /** Silence after which a command reading the terminal counts as waiting for input (default 1.5 s). */
  inputWaitMs?: number;
}

/** What the words after the tag (` ```shell input timeout=600 `) ask for. */
export interface ShellBlockOptions {
  /** The body is typed into the command that waits for input, instead of being run. */
  input: boolean;
  /** The block's own timeout, when it sets one. */
  timeoutMs?: number;
}

/**
 * Parses the words of a shell block's `options`: `input`, and `timeout=<seconds>` (whole or
 * decimal, an optional `s`, from 1 s to 24 h). Returns an error message the model can act on
 * for any other word or a timeout out of bounds; never throws.
 */
export function parseShellOptions(text: string | undefined): ShellBlockOptions | { error: string } {
  const parsed: ShellBlockOptions = { input: false };
  for (const word of (text ?? '').split(/\s+/).filter(Boolean)) {
    if (word === 'input') {
      parsed.input = true;
      continue;
    }
    const timeout = /^timeout=(.*?)s?$/.exec(word);
    if (!timeout) {
      return { error: `Unknown shell option "${word}": the words after \`shell\` may be \`input\` and \`timeout=<seconds>\`.` };
    }
    const value = Number(timeout[1]);
    if (!(Number.isFinite(value) && value >= MIN_BLOCK_TIMEOUT_S && value <= MAX_BLOCK_TIMEOUT_S)) {
      return {
        error: `Bad shell option "${word}": the timeout is a number of seconds from ${MIN_BLOCK_TIMEOUT_S} to ${MAX_BLOCK_TIMEOUT_S} (24 h), e.g. \`shell timeout=600\`.`,
      };
    }
    parsed.timeoutMs = Math.round(value * 1000);
  }
  return parsed;
}

/** Makes the `shell` tool: runs a command in the session's persistent bash, or answers one that waits. */
export function createShellTool(options: ShellToolOptions = {}) {
  const defaultTimeoutMs = options.timeoutMs ?? DEFAULT_SHELL_TIMEOUT_MS;
  const inputWaitMs = options.inputWaitMs ?? DEFAULT_INPUT_WAIT_MS;
  return defineTool({
    name: 'shell',
    description: 'Run commands in a persistent bash shell, and answer those that wait for input.',
    instructions: [
      'The shell lives for the whole session: the working folder, variables and functions persist.',
      'Prefer flags that avoid questions (`-y`, `--no-input`). A command that reads the terminal (a prompt, a REPL) is reported as waiting; answer it with options `input` (`command` is typed, then Enter), or run another command to stop it.',
      `A call may run for ${seconds(defaultTimeoutMs)}, then it is interrupted; options \`timeout=<seconds>\` set another limit (up to 24 h).`,
      'Run servers in the background with output to a file (`cmd > server.log 2>&1 &`) and read the file later; background jobs end with the session.',
    ].join('\n'),
    example: { options: 'timeout=600', command: 'npm install && npm test' },
    blockTypes: ['shell', 'bash', 'sh'],
    parameters: z.object({
      command: z.string().describe('The bash commands to run, or with `input` the text to type'),
      options: z
        .string()
        .optional()
        .describe('Space-separated: `input` (type `command` into the program waiting for input), `timeout=<seconds>`'),
    }),
    block: { args: ['options'], content: 'command' },
    callers: ['direct'],
    mutating: true,
    resource: ({ command }) => command,
    async execute({ command, options: words }, ctx) {
      const parsed = parseShellOptions(words);
      if ('error' in parsed) return { output: parsed.error, isError: true };
      if (!parsed.input && !command.trim()) {
        return { output: 'The command was empty: write the commands to run.', isError: true };
      }
      const bash = await ctx.bash();
      const timeoutMs = parsed.timeoutMs ?? defaultTimeoutMs;
      const runOptions = { timeoutMs, inputWaitMs, signal: ctx.signal };
      const result = parsed.input ? await bash.sendInput(command, runOptions) : await bash.run(command, runOptions);
      return describeResult(result, timeoutMs, inputWaitMs, ctx.sandboxPolicy);
    },
  });
}

/** The model's view of a run: the output, then the exit code and plain notes on what happened. */
function describeResult(result: BashRunResult, timeoutMs: number, inputWaitMs: number, sandbox?: SandboxPolicy): ToolResult {
  const value = { output: result.output, exitCode: result.exitCode, ...(result.waitingForInput ? { waitingForInput: true } : {}) };
  if (result.nothingWaiting && result.output === NOTHING_WAITING && result.exitCode === null) {
    return { output: 'Nothing is waiting for input, so nothing was typed. Run commands without the `input` option.', value, isError: true, details: result };
  }
  const before: string[] = [];
  if (result.nothingWaiting) before.push('The command had already finished, so nothing was typed. Its last output:');
  if (result.stoppedWaiting) {
    const code = result.stoppedWaiting.exitCode;
    before.push(`The previous command was still waiting for input; it was stopped first${code === null ? '' : ` (exit code ${code})`}.`);
  }
  const notes: string[] = [];
  if (result.waitingForInput) {
    notes.push(
      `The command is waiting for input (no output for ${seconds(inputWaitMs)} and it is reading the terminal). Answer it with a shell call whose options are \`input\`, or run another command to stop it.`,
    );
  }
  if (result.timedOut) notes.push(`Timed out after ${seconds(timeoutMs)} and was interrupted; the shell is still running.`);
  // Whether the shell outlives an interruption is not this call's to say: a chat goes on with
  // it, a stopped fence closes it (and the agent says so).
  else if (result.interrupted) notes.push('Interrupted before it finished.');
  if (result.shellExited) {
    notes.push(
      `bash exited (code ${result.shellExited.code ?? 'unknown'}) and was started again: the working folder, variables and functions were reset.`,
    );
  }
  if (result.droppedBytes > 0) notes.push(`${result.droppedBytes} bytes of output were dropped from the middle.`);
  if (result.exitCode !== 0) notes.push(...sandboxNotes(result.output, sandbox));
  const status = result.exitCode === null ? '' : `Exit code ${result.exitCode}.`;
  // A prompt keeps its trailing space: it shows where the answer goes.
  const text = result.waitingForInput ? result.output : result.output.replace(/\n+$/, '');
  const output = [...before, text, status, ...notes].filter(Boolean).join('\n');
  const isError = result.waitingForInput ? false : result.exitCode !== 0;
  return { output: output || '(no output)', value, isError, details: result };
}
