/**
 * The person's own checks around each tool call (`pre_tool` and `post_tool` hooks), as
 * `invokeTool` runs them: the session's hooks give it, and a program's or Python's calls carry
 * the same context, so every caller's calls pass them.
 */
export interface ToolHooks {
  /**
   * Before a validated, admitted (and, when asked, confirmed) call runs: the reason it is
   * refused, or undefined to let it run. Never throws.
   */
  beforeTool(call: HookedToolCall, signal?: AbortSignal): Promise<string | undefined>;
  /** After the call ran: text to append to the result the model reads, or undefined. Never throws. */
  afterTool(call: HookedToolCall & { output: string; isError: boolean }, signal?: AbortSignal): Promise<string | undefined>;
}

/** One call, as the hooks see it: the tool, its input, what it touches and who makes it. */
export interface HookedToolCall {
  tool: string;
  input: Record<string, unknown>;
  resource?: string;
  principal: string;
}
