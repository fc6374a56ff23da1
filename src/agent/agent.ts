import { createMessage, type Message, type NativeToolCall } from '../conversation/message';
import type { SessionStore } from '../conversation/session-store';
import { formatNativeCall } from '../llm/native-calls';
import type { Provider, ToolSchema } from '../llm/provider';
import type { ParsedArguments } from '../parse/native-call';
import { MarkdownStreamScanner } from '../parse/stream-scanner';
import type { ToolFormat, ToolStreamScanner, ToolUse } from '../parse/tool-use';
import { XmlStreamScanner } from '../parse/xml-stream-scanner';
import type { PolicyRule } from '../policy/admit';
import type { ToolContext } from '../tools/define-tool';
import type { ToolRegistry } from '../tools/registry';
import { runToolUse, type ToolRunOutcome } from '../tools/run-tool-use';
import { toolSchemas } from './system-prompt';
import { streamReply, type Reply, type ReplyEvent } from './stream-reply';

/** Default cap on model requests in one run. */
export const DEFAULT_MAX_TURNS = 50;

/** Everything the step loop works with. */
export interface AgentOptions {
  provider: Provider;
  /** Full model id (`provider/model`), stored on each assistant message. */
  modelId: string;
  /** The provider's own model name. */
  model: string;
  registry: ToolRegistry;
  store: SessionStore;
  toolContext: ToolContext;
  /** Admission rules for the model's own tool calls. */
  rules?: readonly PolicyRule[];
  /** How the model writes tool calls (default `markdown`). */
  format?: ToolFormat;
  /** Cap on model requests over the agent's life (all prompts together). */
  maxTurns?: number;
  signal?: AbortSignal;
  onEvent?: (event: AgentEvent) => void;
}

/** What the loop reports as it goes, for display. */
export type AgentEvent =
  | ReplyEvent
  | { type: 'turn'; turn: number }
  | { type: 'reply_end'; message: Message }
  | { type: 'tool_start'; use: ToolUse }
  | { type: 'tool_end'; use: ToolUse; outcome: ToolRunOutcome };

/** How one prompt's run ended. */
export type RunOutcome =
  | { status: 'done'; answer: string }
  | { status: 'max_turns'; answer: string; turns: number }
  | { status: 'error'; error: string }
  | { status: 'aborted' };

/**
 * The step loop: send the conversation, stream the reply, run its first tool block, append
 * the result as a `system` message, and repeat until a reply has no tool block or the turn
 * budget is spent. Every message is appended to the session store as it completes.
 */
export class Agent {
  private turns = 0;
  private readonly format: ToolFormat;
  /** The tool definitions sent with every request, in the native format. */
  private readonly tools: ToolSchema[] | undefined;
  private readonly scanner: (() => ToolStreamScanner) | undefined;

  constructor(private readonly options: AgentOptions) {
    this.format = options.format ?? 'markdown';
    const { registry } = options;
    this.tools = this.format === 'tool' ? toolSchemas(registry.tools) : undefined;
    this.scanner =
      this.format === 'markdown' ? () => new MarkdownStreamScanner(registry.isTool) : this.format === 'xml' ? () => new XmlStreamScanner() : undefined;
  }

  /** Model requests made so far. */
  get turnCount(): number {
    return this.turns;
  }

  /** Runs one user prompt to its end. Never throws for model or tool failures. */
  async run(prompt: string): Promise<RunOutcome> {
    const { store, onEvent } = this.options;
    store.append(createMessage('user', prompt));
    const maxTurns = this.options.maxTurns ?? DEFAULT_MAX_TURNS;
    let lastText = '';
    while (this.turns < maxTurns) {
      this.turns += 1;
      onEvent?.({ type: 'turn', turn: this.turns });
      const request = { model: this.options.model, messages: store.log, ...(this.tools ? { tools: this.tools } : {}) };
      const reply = await streamReply(this.options.provider, request, {
        ...(this.scanner ? { scanner: this.scanner } : {}),
        signal: this.options.signal,
        onEvent,
      });
      const interrupted = reply.stopReason === 'error' || reply.stopReason === 'aborted';
      const calls = reply.toolCalls?.length ? await prepareCalls(reply.toolCalls) : [];
      const text = [reply.text.trimEnd(), ...calls.map((call) => formatNativeCall(call.stored))].filter(Boolean).join('\n');
      if (text || !interrupted) {
        const message = createMessage('assistant', calls.length > 0 ? text : reply.text, {
          meta: {
            model: this.options.modelId,
            usage: reply.usage,
            stopReason: reply.stopReason,
            ...(interrupted ? { interrupted: true } : {}),
            ...(calls.length > 0 ? { toolCalls: calls.map((call) => call.stored) } : {}),
          },
        });
        store.append(message);
        onEvent?.({ type: 'reply_end', message });
      }
      if (reply.stopReason === 'error') return { status: 'error', error: reply.error ?? 'the model request failed' };
      if (reply.stopReason === 'aborted') return { status: 'aborted' };
      lastText = reply.text;
      if (calls.length > 0) {
        await this.runNativeCalls(calls, reply);
      } else if (reply.toolUse) {
        await this.runTool(reply.toolUse);
      } else {
        return { status: 'done', answer: reply.text };
      }
      if (this.options.signal?.aborted) return { status: 'aborted' };
    }
    return { status: 'max_turns', answer: lastText, turns: this.turns };
  }

  /**
   * Runs the native calls of one reply in order, each answered by its own result (with its
   * call's id), whatever happens to the others. A call that cannot run — no name, arguments
   * that are not a JSON object, arguments cut short by the reply's token limit, or the run
   * being stopped — gets an error result saying why, so no call is ever left unanswered.
   */
  private async runNativeCalls(calls: readonly PreparedCall[], reply: Reply): Promise<void> {
    for (const call of calls) {
      const { id, name } = call.stored;
      const use: ToolUse = { tool: name, args: [], content: '', format: 'tool', callId: id, start: 0, end: 0 };
      let refusal: string | undefined;
      if (this.options.signal?.aborted) refusal = 'Not run: the run was stopped before this call.';
      else if (name === '') refusal = 'This tool call has no tool name: call one of the tools you were given.';
      else if (!call.parsed.ok) refusal = `The arguments of this ${name} call are not usable (${call.parsed.error}); nothing was run. Call it again with a JSON object.`;
      else if (reply.stopReason === 'max_tokens' && call.parsed.repaired) {
        refusal = `Your reply reached its length limit while writing this ${name} call, so its arguments are incomplete; nothing was run. Call it again, shorter (split a large file into a save and appends).`;
      }
      if (call.parsed.ok) use.kwargs = call.parsed.value;
      if (refusal !== undefined) {
        this.appendResult(use, { tool: name || '(none)', result: { output: refusal, isError: true } });
        continue;
      }
      await this.runTool(use);
    }
  }

  private async runTool(use: ToolUse): Promise<void> {
    const { registry, store, toolContext, onEvent } = this.options;
    onEvent?.({ type: 'tool_start', use });
    const outcome = await runToolUse(use, registry, toolContext, { outputsDir: store.outputsDir, rules: this.options.rules ?? [] });
    this.appendResult(use, outcome);
  }

  private appendResult(use: ToolUse, outcome: ToolRunOutcome): void {
    this.options.store.append(
      createMessage('system', outcome.result.output, {
        ...(use.callId ? { callId: use.callId } : {}),
        meta: {
          toolResult: true,
          tool: outcome.tool,
          ...(outcome.result.isError ? { isError: true } : {}),
          ...(outcome.fullOutputPath ? { fullOutput: outcome.fullOutputPath } : {}),
        },
      }),
    );
    this.options.onEvent?.({ type: 'tool_end', use, outcome });
  }
}

/** A native call as streamed, with its arguments checked and the form that is stored. */
interface PreparedCall {
  parsed: ParsedArguments;
  /** What the message keeps: the arguments as compact JSON (`{}` when they were not usable). */
  stored: NativeToolCall;
}

/** Checks each call's arguments. The parser (and jsonrepair) load on the first native call: markdown and XML runs never need them. */
async function prepareCalls(calls: readonly NativeToolCall[]): Promise<PreparedCall[]> {
  const { parseToolArguments } = await import('../parse/native-call');
  return calls.map((call) => {
    const parsed = parseToolArguments(call.arguments);
    return { parsed, stored: { id: call.id, name: call.name, arguments: parsed.ok ? parsed.json : '{}' } };
  });
}
