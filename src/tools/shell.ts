import { z } from 'zod';
import { defineTool } from './define-tool';

/** Default per-command timeout. A command that runs longer is interrupted, the shell survives. */
export const DEFAULT_SHELL_TIMEOUT_MS = 120_000;

/** A duration for people: `120 s`, `0.5 s`. */
function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

/** Options of the shell tool that a session may set. */
export interface ShellToolOptions {
  timeoutMs?: number;
}

/** Makes the `shell` tool: runs a command in the session's persistent bash. */
export function createShellTool(options: ShellToolOptions = {}) {
  const timeoutMs = options.timeoutMs ?? DEFAULT_SHELL_TIMEOUT_MS;
  return defineTool({
    name: 'shell',
    description: 'Run commands in a persistent bash shell.',
    instructions: [
      'Runs the block in one bash shell that lives for the whole session: the working folder, variables and functions persist between blocks.',
      'The shell is not interactive: do not start editors, pagers or programs that wait for input; pass flags such as `-y` instead.',
      `Each block may run for ${seconds(timeoutMs)}; then it is interrupted. Run long-lived servers in the background (\`cmd > log 2>&1 &\`).`,
      'Long output is cut to its head and tail; the full text is saved and its path given.',
    ].join('\n'),
    examples: '```shell\nls -la\n```',
    blockTypes: ['shell', 'bash', 'sh'],
    parameters: z.object({ command: z.string().describe('The bash commands to run') }),
    block: { content: 'command' },
    callers: ['direct'],
    mutating: true,
    resource: ({ command }) => command,
    async execute({ command }, ctx) {
      if (!command.trim()) return { output: 'The shell block was empty: write the commands inside it.', isError: true };
      const bash = await ctx.bash();
      const result = await bash.run(command, { timeoutMs, signal: ctx.signal });
      const notes: string[] = [];
      if (result.timedOut) notes.push(`Timed out after ${seconds(timeoutMs)} and was interrupted; the shell is still running.`);
      else if (result.interrupted) notes.push('Interrupted; the shell is still running.');
      if (result.shellExited) {
        notes.push(
          `bash exited (code ${result.shellExited.code ?? 'unknown'}) and was started again: the working folder, variables and functions were reset.`,
        );
      }
      if (result.droppedBytes > 0) notes.push(`${result.droppedBytes} bytes of output were dropped from the middle.`);
      const status = result.exitCode === null ? '' : `Exit code ${result.exitCode}.`;
      const output = [result.output.replace(/\n+$/, ''), status, ...notes].filter(Boolean).join('\n');
      const isError = result.exitCode !== 0;
      return {
        output: output || '(no output)',
        value: { output: result.output, exitCode: result.exitCode },
        isError,
        details: result,
      };
    },
  });
}
