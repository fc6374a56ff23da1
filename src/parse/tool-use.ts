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
