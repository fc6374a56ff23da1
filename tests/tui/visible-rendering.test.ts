import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMessage } from '../../src/conversation/message';
import type { ToolUse } from '../../src/parse/tool-use';
import { ChatView } from '../../src/tui/chat-view';
import { renderFileChange } from '../../src/tui/diff-view';
import { MarkdownStream } from '../../src/tui/markdown-stream';
import { createProgressRenderer } from '../../src/tui/progress-renderer';
import { createStyle } from '../../src/tui/terminal-style';
import { briefHistory, fullLog } from '../../src/tui/transcript';

/** Anything a terminal would act on rather than show, bidirectional controls included. */
const LIVE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** Text built from the pieces of escape sequences, controls and bidi overrides, nested and cut at random. */
const hostile = fc
  .array(fc.constantFrom('\x1b', '[', ']', '0;', '52;c;eA==', 'P', '_', '\\', '\x07', '\x9b', '\x9c', '\x9d', '\r', '\n', '\t', '\b', '2J', 'm', 'ok', ' ', '\u202e', '\u2066', '\x00', '\x7f', '```', '# ', '|'), { maxLength: 30 })
  .map((pieces) => pieces.join(''));

const plain = createStyle(false);

describe('what the chat and -n print from hostile text', () => {
  it('holds nothing live, whatever the text, in /log, the resumed history, tool output, diffs, replies and progress', () => {
    fc.assert(
      fc.property(hostile, hostile, (text, other) => {
        const log = [
          createMessage('user', text),
          createMessage('assistant', other),
          createMessage('system', text, { meta: { toolResult: true, tool: other } }),
          createMessage('system', other, { meta: { notice: 'user_tool' } }),
        ];
        const written: string[] = [];
        const view = new ChatView({ write: (chunk: string) => written.push(chunk), columns: 80 }, plain);
        const use: ToolUse = { tool: other, args: [text], content: text, format: 'markdown', start: 0, end: 0 };
        const markdown = new MarkdownStream({ style: plain, width: 80 });
        let progress = '';
        const render = createProgressRenderer({ write: (chunk: string) => (progress += chunk) } as unknown as NodeJS.WritableStream);
        render({ type: 'text', text });
        render({ type: 'tool_end', use, outcome: { tool: other, result: { output: text } } } as never);
        render({ type: 'retry', attempt: 1, delayMs: 10, reason: other } as never);
        const shown = [
          fullLog(log, plain, 80),
          ...briefHistory(log, plain, 80),
          ...view.toolLines(use, { tool: other, result: { output: text } }, 5),
          ...renderFileChange({ kind: 'diff', path: other, before: other, after: text, created: false }, plain, 1000),
          markdown.push(text) + markdown.finish(),
          progress,
        ];
        for (const piece of shown) expect(piece).not.toMatch(LIVE);
      }),
      { numRuns: 500 },
    );
  });
});
