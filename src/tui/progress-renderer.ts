import type { AgentEvent } from '../agent/agent';
import { VisibleTextStream, visibleLine, visibleName, visibleText } from '../processes/visible-text';
import { calledTool, runEnding } from './called-tool';

/** How much of a tool's output the progress display shows (the model gets more). */
const SHOWN_OUTPUT_LINES = 12;

/**
 * Writes the agent's progress as plain text: the model's thinking (after a `[thinking]` mark,
 * on lines of its own), streamed reply text, each tool run with a short excerpt of its output
 * (between `[running <tool> <words>]` and `[<tool> done]`, `failed` or `interrupted`, the tool
 * named as the model called it: the one a `call` names), retries. Used for stderr in one-shot mode, where stdout is kept for the final answer. All
 * text from the model and the tools is made visible first (see `visibleText`), whether stderr is
 * a terminal or a file that will be shown on one later: it cannot drive the terminal.
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
  /** The thinking or reply text being streamed: a sequence cut between two deltas is held back. */
  const streamed = new VisibleTextStream();
  const endStreamed = () => write(streamed.end());
  return (event) => {
    if (thinking && event.type !== 'thinking') {
      thinking = false;
      endStreamed();
      newline();
    }
    switch (event.type) {
      case 'thinking':
        if (!thinking) {
          endStreamed();
          newline();
          write('[thinking] ');
          thinking = true;
        }
        write(streamed.push(event.text));
        break;
      case 'text':
        write(streamed.push(event.text));
        break;
      case 'reply_end':
        endStreamed();
        newline();
        break;
      case 'web_search':
        endStreamed();
        newline();
        write(`[web search${event.query ? `: ${visibleLine(event.query)}` : ''}]\n`);
        break;
      case 'retry':
        endStreamed();
        newline();
        write(`[retrying in ${(event.delayMs / 1000).toFixed(1)} s: ${visibleLine(event.reason)}]\n`);
        break;
      case 'restart':
        endStreamed();
        newline();
        write(`[connection lost mid-reply; asking again: ${visibleLine(event.reason)}]\n`);
        break;
      case 'tool_start': {
        endStreamed();
        newline();
        const called = calledTool(event.use);
        write(`[running ${visibleName([called.tool, ...called.words].join(' '))}]\n`);
        break;
      }
      case 'tool_end': {
        const lines = visibleText(event.outcome.result.output).split('\n');
        const shown = lines.slice(0, SHOWN_OUTPUT_LINES).map((line) => `  ${line}`);
        if (lines.length > SHOWN_OUTPUT_LINES) shown.push(`  … (${lines.length - SHOWN_OUTPUT_LINES} more lines)`);
        // Named as at its start, as the model called it (not the tool a block's alias or a failed call resolved to).
        const tool = visibleName(calledTool(event.use).tool);
        write(`${shown.join('\n')}\n[${tool} ${runEnding(event.outcome)}]\n`);
        break;
      }
      case 'compaction':
        newline();
        write(`[context: older turns summarized to fit the window (up to message ${(event.message.meta?.compaction?.through ?? 0) + 1})]\n`);
        break;
      case 'compaction_failed':
        newline();
        write(`[context: no summary (${visibleLine(event.error)}); the oldest turns are cut instead]\n`);
        break;
      case 'turn':
        break;
    }
  };
}
