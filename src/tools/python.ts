import { z } from 'zod';
import type { CellResult } from '../processes/python-kernel';
import { defineTool } from './define-tool';
import { seconds } from './prompt-text';
import { sandboxNotes } from './sandbox-notes';

/** Default per-cell timeout. A cell that runs longer is interrupted; its variables are kept. */
export const DEFAULT_PYTHON_TIMEOUT_MS = 120_000;

const STATE_LOST = 'variables, imports and functions are gone.';

/** Options of the python tool that a session may set. */
export interface PythonToolOptions {
  timeoutMs?: number;
}

/**
 * Makes the `python` tool: runs a block as one cell of the session's persistent Python kernel
 * (`ctx.python`). The result is the cell's output, then `Out: <repr>` for a final value, the
 * traceback of an error, and one plain note for a timeout, an interrupt, a restart (state
 * lost) or dropped output. It is an error result when the cell raised, timed out or the kernel
 * restarted, and when the session has no Python. It never throws for what the cell does.
 */
export function createPythonTool(options: PythonToolOptions = {}) {
  const timeoutMs = options.timeoutMs ?? DEFAULT_PYTHON_TIMEOUT_MS;
  return defineTool({
    name: 'python',
    description: 'Run Python code in a persistent kernel.',
    instructions: [
      'Each `code` is a cell of one kernel that lives for the whole session: variables, imports and functions persist.',
      'A final expression is shown as `Out: <repr>`; print anything else. Top-level `await` works; IPython syntax too when installed. stdin is empty.',
      'Program tools are functions here: `read(path="a.txt")` returns its value or raises `ToolError`; `await gather(tools.read(path="a"), tools.read(path="b"))` runs calls in parallel.',
      `A cell may run for ${seconds(timeoutMs)}, then it is interrupted (KeyboardInterrupt; variables kept). A cell that does not stop or crashes Python restarts the kernel: ${STATE_LOST.replace(/\.$/, '')}.`,
    ].join('\n'),
    example: { code: 'import json\ndata = json.loads(read(path="package.json"))\nsorted(data["dependencies"])' },
    blockTypes: ['python', 'py', 'ipython'],
    parameters: z.object({ code: z.string().describe('The Python code to run') }),
    block: { content: 'code' },
    callers: ['direct'],
    mutating: true,
    resource: ({ code }) => code,
    async execute({ code }, ctx) {
      if (!code.trim()) return { output: 'The code was empty: write the Python to run.', isError: true };
      if (!ctx.python) return { output: 'Python is not available in this session: use the shell or a program instead.', isError: true };
      let kernel;
      try {
        kernel = await ctx.python();
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        return { output: `Python could not be started: ${reason}`, isError: true };
      }
      const result = await kernel.run(code, { timeoutMs, signal: ctx.signal });
      const parts = [
        result.output.replace(/\n+$/, ''),
        result.value === undefined ? '' : `Out: ${result.value}`,
        result.error ? result.error.traceback.replace(/\n+$/, '') || `${result.error.name}: ${result.error.message}` : '',
        ...notes(result, timeoutMs),
        ...(result.error ? sandboxNotes(`${result.output}\n${result.error.traceback || result.error.message}`, ctx.sandboxPolicy) : []),
      ];
      const output = parts.filter(Boolean).join('\n');
      return {
        output: output || '(no output)',
        value: { output: result.output, value: result.value ?? null, error: result.error ?? null },
        isError: result.error !== undefined || result.timedOut || result.restarted !== undefined,
        details: result,
      };
    },
  });
}

/** Plain sentences about how the cell ended, when it did not simply finish. */
function notes(result: CellResult, timeoutMs: number): string[] {
  const notes: string[] = [];
  const stopped = result.timedOut ? `Timed out after ${seconds(timeoutMs)}` : 'Interrupted';
  if (result.restarted && (result.timedOut || result.interrupted)) {
    notes.push(`${stopped} and did not stop, so the Python kernel was killed and started again: ${STATE_LOST}`);
  } else if (result.restarted) {
    notes.push(`The Python kernel crashed and was started again: ${STATE_LOST} (Cause: ${result.restarted.reason}.)`);
  } else if (result.timedOut) {
    notes.push(`${stopped} with KeyboardInterrupt; the kernel kept its variables.`);
  } else if (result.interrupted) {
    // As for the shell: whether the kernel outlives the interruption is for the agent to say.
    notes.push(`${stopped} with KeyboardInterrupt.`);
  }
  if (result.droppedBytes > 0) notes.push(`${result.droppedBytes} bytes of output were dropped from the middle.`);
  return notes;
}
