import type {
  ImageBlockParam,
  MessageParam,
  RedactedThinkingBlockParam,
  TextBlockParam,
  ThinkingBlockParam,
  ToolResultBlockParam,
  ToolUseBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import type { Message } from '../conversation/message';
import { planHistory, wrapAsSystem, type HistoryEntry, type SentImage } from './history';

/** The `system` and `messages` of a Messages API request. */
export interface AnthropicConversation {
  system: TextBlockParam[];
  messages: MessageParam[];
}

type Thinking = ThinkingBlockParam | RedactedThinkingBlockParam;
type Block = TextBlockParam | ImageBlockParam | ToolUseBlockParam | ToolResultBlockParam | Thinking;
type Turn = { role: 'user' | 'assistant'; blocks: Block[] };

/** Sent as the first user turn when a conversation would otherwise open with the assistant. */
const OPENING = '(continue)';

/**
 * Shapes fence messages for the Messages API:
 * - the system prompt(s) at the start go to `system`;
 * - a later system message becomes user text wrapped in `<system>` tags;
 * - images (loaded `meta.images`) become base64 `image` blocks: after a user's or a system
 *   message's text in the same user turn, and inside a native `tool_result` block's content;
 * - with `nativeCalls` (tools offered), paired native calls become `tool_use` blocks and their
 *   results `tool_result` blocks, first in the user turn that follows (see `planHistory`);
 * - consecutive turns of one role are merged, empty text is left out, and the first turn is a
 *   user turn, as the API requires;
 * - an assistant message's Anthropic reasoning parts (signed `thinking` and `redacted_thinking`
 *   blocks) go back exactly as stored, in their place (see `assistantBlocks`); parts of
 *   another API are left out;
 * - the system prompt (after the tool definitions), the last turn and the user turn before it
 *   carry cache breakpoints, so a growing conversation is read from the prompt cache: the
 *   second-last user turn ends where the previous request ended. A thinking block never
 *   carries one (the API refuses it there): the turn's last other block does.
 * Pure: the input is not changed.
 */
export function toAnthropicMessages(messages: readonly Message[], nativeCalls: boolean): AnthropicConversation {
  const history = planHistory(messages, { nativeCalls });
  const turns: Turn[] = [];
  const add = (role: Turn['role'], block: Block) => {
    const last = turns.at(-1);
    if (last?.role === role) last.blocks.push(block);
    else turns.push({ role, blocks: [block] });
  };
  for (const entry of history.entries) {
    switch (entry.kind) {
      case 'user':
        if (entry.text.trim() !== '') add('user', { type: 'text', text: entry.text });
        for (const image of entry.images ?? []) add('user', imageBlock(image));
        break;
      case 'system':
        add('user', { type: 'text', text: wrapAsSystem(entry.text) });
        for (const image of entry.images ?? []) add('user', imageBlock(image));
        break;
      case 'assistant':
        for (const block of assistantBlocks(entry)) add('assistant', block);
        break;
      case 'tool_result': {
        const block: ToolResultBlockParam = { type: 'tool_result', tool_use_id: entry.callId };
        if (entry.images?.length) block.content = [...(entry.text === '' ? [] : [{ type: 'text' as const, text: entry.text }]), ...entry.images.map(imageBlock)];
        else if (entry.text !== '') block.content = entry.text;
        if (entry.isError) block.is_error = true;
        add('user', block);
        break;
      }
    }
  }

  for (const turn of turns) {
    // The API wants a turn's tool results before any other content.
    if (turn.role === 'user') turn.blocks.sort((a, b) => rank(a) - rank(b));
  }
  if (turns[0]?.role !== 'user') turns.unshift({ role: 'user', blocks: [{ type: 'text', text: OPENING }] });
  const last = turns.at(-1);
  const lastBlock = last?.blocks.at(-1);
  // A final assistant turn (a prefill) may not end with white space.
  if (last?.role === 'assistant' && lastBlock?.type === 'text') lastBlock.text = lastBlock.text.trimEnd();
  const breakpoint = last?.blocks.findLast(notThinking);
  if (breakpoint) breakpoint.cache_control = { type: 'ephemeral' };
  // Also where the previous request ended (the user turn before the last one): that prefix is
  // read from the cache however many blocks the last step added.
  const previous = turns.slice(0, -1).findLast((turn) => turn.role === 'user')?.blocks.findLast(notThinking);
  if (previous && turns.length > 2) previous.cache_control = { type: 'ephemeral' };

  const system: TextBlockParam[] = history.systemPrompt
    ? [{ type: 'text', text: history.systemPrompt, cache_control: { type: 'ephemeral' } }]
    : [];
  return { system, messages: turns.map((turn) => ({ role: turn.role, content: turn.blocks })) };
}

/**
 * The blocks of an assistant entry: its Anthropic reasoning parts that came before the text
 * (no call named) or before the first replayed call, then the text, then each later replayed
 * call with the parts that came before it. A part whose call is not replayed goes before the
 * next replayed call (found through the later parts' call numbers), else at the end. The first
 * call's parts lead because the API wants an assistant turn of a thinking tool loop to start
 * with its thinking, and the text (kept whole) is always before the calls. Each `raw` is sent
 * as the very object stored, never changed; a part without a thinking block's shape is left out.
 */
function assistantBlocks(entry: Extract<HistoryEntry, { kind: 'assistant' }>): Block[] {
  const parts = entry.reasoning.filter((part) => part.api === 'anthropic' && isThinkingBlock(part.raw));
  const replayed = new Set(entry.calls.map((call) => call.id));
  const head: Block[] = [];
  const tail: Block[] = [];
  const beforeCall = new Map<string, Block[]>();
  parts.forEach((part, index) => {
    const block = part.raw as unknown as Thinking;
    if (part.beforeCallId === undefined) {
      head.push(block);
      return;
    }
    const anchor = replayed.has(part.beforeCallId)
      ? part.beforeCallId
      : parts.slice(index + 1).find((later) => later.beforeCallId !== undefined && replayed.has(later.beforeCallId) && (later.beforeCall ?? 0) > (part.beforeCall ?? 0))
          ?.beforeCallId;
    if (anchor === undefined) tail.push(block);
    else beforeCall.set(anchor, [...(beforeCall.get(anchor) ?? []), block]);
  });
  const first = entry.calls[0]?.id;
  const blocks: Block[] = [...head, ...(first === undefined ? [] : (beforeCall.get(first) ?? []))];
  if (first !== undefined) beforeCall.delete(first);
  if (entry.text.trim() !== '') blocks.push({ type: 'text', text: entry.text });
  for (const call of entry.calls) {
    blocks.push(...(beforeCall.get(call.id) ?? []));
    blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: argumentsObject(call.arguments) });
  }
  return [...blocks, ...tail];
}

/** Whether a stored part has a thinking block's shape (a damaged log's part is left out, not sent to fail). */
function isThinkingBlock(raw: Record<string, unknown>): boolean {
  if (raw.type === 'redacted_thinking') return typeof raw.data === 'string';
  return raw.type === 'thinking' && typeof raw.thinking === 'string' && typeof raw.signature === 'string';
}

function notThinking(block: Block): block is Exclude<Block, Thinking> {
  return block.type !== 'thinking' && block.type !== 'redacted_thinking';
}

/** A stored call's arguments as the object `tool_use` needs (fence stores compact JSON objects; anything else is `{}`). */
function argumentsObject(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** An image as the Messages API takes it inline: base64 with its media type. */
function imageBlock(image: SentImage): ImageBlockParam {
  return { type: 'image', source: { type: 'base64', media_type: image.mediaType, data: image.data } };
}

function rank(block: Block): number {
  return block.type === 'tool_result' ? 0 : 1;
}
