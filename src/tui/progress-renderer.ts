import type { AgentEvent } from '../agent/agent';
import type { ToolUse } from '../parse/tool-use';

/** How much of a tool's output the progress display shows (the model gets more). */
const SHOWN_OUTPUT_LINES = 12;

/**
 * Writes the agent's progress as plain text: the model's thinking (after a `[thinking]` mark,
 * on lines of its own), streamed reply text, each tool run with a short excerpt of its output,
 * retries. Used for stderr in one-shot mode, where stdout is kept for the final answer.
 */
export function createProgressRenderer(out: NodeJS.WritableStream): (event: AgentEvent) => void {
  let atLineStart = true;
  const write = (text: string) => {
    if (!text) return;
    out.write(text);
    atLineStart = text.endsWith('\n');
  };
  const newline = () => {
    if (!atLineStart) write('\n');
  };
  /** Thinking is being written: whatever comes next starts on a line of its own. */
  let thinking = false;
  return (event) => {
    if (thinking && event.type !== 'thinking') {
      thinking = false;
      newline();
    }
    switch (event.type) {
      case 'thinking':
        if (!thinking) {
          newline();
          write('[thinking] ');
          thinking = true;
        }
        write(event.text);
        break;
      case 'text':
        write(event.text);
        break;
      case 'reply_end':
        newline();
        break;
      case 'retry':
        newline();
        write(`[retrying in ${(event.delayMs / 1000).toFixed(1)} s: ${event.reason}]\n`);
        break;
      case 'restart':
        newline();
        write(`[connection lost mid-reply; asking again: ${event.reason}]\n`);
        break;
      case 'tool_start':
        newline();
        write(`[running ${[event.use.tool, ...useWords(event.use)].join(' ')}]\n`);
        break;
      case 'tool_end': {
        const lines = event.outcome.result.output.split('\n');
        const shown = lines.slice(0, SHOWN_OUTPUT_LINES).map((line) => `  ${line}`);
        if (lines.length > SHOWN_OUTPUT_LINES) shown.push(`  … (${lines.length - SHOWN_OUTPUT_LINES} more lines)`);
        const mark = event.outcome.result.isError ? `[${event.outcome.tool} failed]` : `[${event.outcome.tool} done]`;
        write(`${shown.join('\n')}\n${mark}\n`);
        break;
      }
      case 'compaction':
        newline();
        write(`[context: older turns summarized to fit the window (up to message ${(event.message.meta?.compaction?.through ?? 0) + 1})]\n`);
        break;
      case 'compaction_failed':
        newline();
        write(`[context: no summary (${event.error}); the oldest turns are cut instead]\n`);
        break;
      case 'turn':
        break;
    }
  };
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
