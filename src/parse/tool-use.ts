/** The ways a tool use can be written in a model's reply. */
export type ToolFormat = 'markdown' | 'xml' | 'tool';

/**
 * One tool use found in a model's reply, as the parsers return it (in text order).
 *
 * For a markdown block ```` ```save notes/a.md ```` the tool is `save`, the args are
 * `['notes/a.md']` and the content is the block's body (without the fences, with its final
 * newline removed). `start`/`end` are offsets into the scanned text: `start` at the opening
 * fence, `end` just past the closing fence line (including its line break, if any).
 */
export interface ToolUse {
  tool: string;
  args: string[];
  content: string;
  kwargs?: Record<string, unknown>;
  callId?: string;
  format: ToolFormat;
  start: number;
  end: number;
}

/** Tells a parser whether a language tag's first word names a tool (e.g. `shell`, not `ts`). */
export type IsTool = (tag: string) => boolean;

/**
 * An incremental scanner over a streamed reply that finds its first tool use as early as
 * possible, so the stream can be stopped there. Every format's scanner keeps this contract:
 * - `push(chunk)` returns the first complete tool use as soon as it is complete, else
 *   undefined; once one was returned (or after `finish`), always undefined.
 * - `finish()` returns the first tool use when it completes only at the end of the input.
 * - `text` is everything fed so far.
 * The result never depends on how the text was split into chunks, and total work is linear in
 * the text's length.
 */
export interface ToolStreamScanner {
  push(chunk: string): ToolUse | undefined;
  finish(): ToolUse | undefined;
  readonly text: string;
}
