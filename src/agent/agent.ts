import { createMessage, type Message } from '../conversation/message';
import type { SessionStore } from '../conversation/session-store';
import type { Provider } from '../llm/provider';
import type { PolicyRule } from '../policy/admit';
import type { ToolUse } from '../parse/tool-use';
import type { ToolContext } from '../tools/define-tool';
import type { ToolRegistry } from '../tools/registry';
import { runToolUse, type ToolRunOutcome } from '../tools/run-tool-use';
import { streamReply, type ReplyEvent } from './stream-reply';

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

  constructor(private readonly options: AgentOptions) {}

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
      const reply = await streamReply(
        this.options.provider,
        { model: this.options.model, messages: store.log },
        this.options.registry.isTool,
        { signal: this.options.signal, onEvent },
      );
      const interrupted = reply.stopReason === 'error' || reply.stopReason === 'aborted';
      if (reply.text || !interrupted) {
        const message = createMessage('assistant', reply.text, {
          meta: {
            model: this.options.modelId,
            usage: reply.usage,
            stopReason: reply.stopReason,
            ...(interrupted ? { interrupted: true } : {}),
          },
        });
        store.append(message);
        onEvent?.({ type: 'reply_end', message });
      }
      if (reply.stopReason === 'error') return { status: 'error', error: reply.error ?? 'the model request failed' };
      if (reply.stopReason === 'aborted') return { status: 'aborted' };
      lastText = reply.text;
      if (!reply.toolUse) return { status: 'done', answer: reply.text };
      await this.runTool(reply.toolUse);
      if (this.options.signal?.aborted) return { status: 'aborted' };
    }
    return { status: 'max_turns', answer: lastText, turns: this.turns };
  }

  private async runTool(use: ToolUse): Promise<void> {
    const { registry, store, toolContext, onEvent } = this.options;
    onEvent?.({ type: 'tool_start', use });
    const outcome = await runToolUse(use, registry, toolContext, { outputsDir: store.outputsDir, rules: this.options.rules ?? [] });
    store.append(
      createMessage('system', outcome.result.output, {
        meta: {
          toolResult: true,
          tool: outcome.tool,
          ...(outcome.result.isError ? { isError: true } : {}),
          ...(outcome.fullOutputPath ? { fullOutput: outcome.fullOutputPath } : {}),
        },
      }),
    );
    onEvent?.({ type: 'tool_end', use, outcome });
  }
}
