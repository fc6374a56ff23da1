import type { ToolUse } from '../parse/tool-use';
import { CALL_TOOL } from '../tools/call';
import type { ToolRunOutcome } from '../tools/run-tool-use';

/**
 * The tool a use runs, as the model called it, and the words that tell its calls apart: for a
 * `call` block or native `call`, the tool it names (`over_limit`) and the words after the name;
 * for any other, the tool and `useWords`. So a run is named the same way where it starts and
 * where it ends (`outcome.tool` is the tool `call` named).
 */
export function calledTool(use: ToolUse): { tool: string; words: string[] } {
  if (use.tool !== CALL_TOOL) return { tool: use.tool, words: useWords(use) };
  if (use.format === 'tool') {
    const named = use.kwargs?.tool;
    return typeof named === 'string' && named.trim() !== '' ? { tool: named.trim(), words: [] } : { tool: use.tool, words: useWords(use) };
  }
  const [named, ...rest] = use.args;
  return named ? { tool: named, words: rest } : { tool: use.tool, words: [] };
}

/**
 * The words that tell calls of a tool apart: a block's args, or for a native call its first
 * short one-line string argument (a path, a pattern, a command).
 */
export function useWords(use: ToolUse): string[] {
  if (use.format !== 'tool') return use.args;
  const first = Object.values(use.kwargs ?? {}).find((value) => typeof value === 'string' && value.length <= 80 && !value.includes('\n'));
  return typeof first === 'string' ? [first] : [];
}

/**
 * How a tool run ended, for its label: `declined` (a person said no), `interrupted` (Ctrl-C or
 * the end of the session stopped it: the shell's and Python's results say so in their
 * `details`, and a timeout is not an interruption), `failed`, or `done`.
 */
export function runEnding(outcome: ToolRunOutcome): 'declined' | 'interrupted' | 'failed' | 'done' {
  if (outcome.declined) return 'declined';
  const details = outcome.result.details;
  if (typeof details === 'object' && details !== null && 'interrupted' in details && details.interrupted === true && !('timedOut' in details && details.timedOut === true)) return 'interrupted';
  return outcome.result.isError ? 'failed' : 'done';
}
