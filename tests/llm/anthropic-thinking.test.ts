import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMessage, type Message, type NativeToolCall, type ReasoningPart } from '../../src/conversation/message';
import { createAnthropicProvider } from '../../src/llm/anthropic';
import { toAnthropicMessages } from '../../src/llm/anthropic-messages';
import { INTERLEAVED_THINKING_BETA, ThinkingBlocks } from '../../src/llm/anthropic-thinking';
import { formatNativeCall } from '../../src/llm/native-calls';
import type { ReasoningLevel, StreamEvent, ToolSchema } from '../../src/llm/provider';
import { assembleToolCalls, checkThinkingReturned, checkToolCallPairing, collect, startFakeLlm, type FakeLlm, type RecordedRequest } from '../support/fake-llm';

let server: FakeLlm;
beforeEach(async () => {
  server = await startFakeLlm();
});
afterEach(async () => {
  await server.close();
});

const provider = () => createAnthropicProvider({ apiKey: 'test-key', baseURL: server.anthropicBaseURL }, { retry: { baseDelayMs: 1 } });
const tools: ToolSchema[] = [{ name: 'read', description: 'Reads a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } }];
const ask: Message[] = [createMessage('system', 'You are fence.'), createMessage('user', 'Fix a.ts.')];

/** Sends one request and returns what the server received. */
async function sent(options: { reasoning?: ReasoningLevel; model?: string; maxTokens?: number; tools?: ToolSchema[] }): Promise<RecordedRequest> {
  server.reply((r) => r.text('ok'));
  await collect(provider().stream({ model: options.model ?? 'claude-test', messages: ask, ...options }));
  const request = server.requests.at(-1);
  if (!request) throw new Error('no request recorded');
  return request;
}

/**
 * The assistant message a reply's events make, as the agent keeps it: the text with a line for
 * each call, the calls, and the reasoning parts in stream order, each naming the call it came
 * before (none after the last call: those come before the text).
 */
function assistantOf(events: readonly StreamEvent[]): Message {
  const calls = assembleToolCalls(events).map((call): NativeToolCall => ({ id: call.id ?? '', name: call.name ?? '', arguments: call.arguments }));
  const reasoning: ReasoningPart[] = [];
  let callsSeen = 0;
  const seenIndexes = new Set<number>();
  let text = '';
  for (const event of events) {
    if (event.type === 'text') text += event.text;
    if (event.type === 'tool_call' && !seenIndexes.has(event.index)) {
      seenIndexes.add(event.index);
      callsSeen++;
    }
    if (event.type === 'reasoning') reasoning.push({ ...event.part, ...(callsSeen < calls.length ? { beforeCall: callsSeen } : {}) });
  }
  const lines = [text, ...calls.map(formatNativeCall)].filter((line) => line !== '');
  return createMessage('assistant', lines.join('\n'), { meta: { toolCalls: calls, reasoning } });
}

const result = (callId: string, text: string) => createMessage('system', text, { callId, meta: { toolResult: true, tool: 'read' } });

/** Every content block of a request body that has a `cache_control`. */
function cached(request: RecordedRequest): { type?: unknown }[] {
  return (request.body.messages ?? []).flatMap((message) => (Array.isArray(message.content) ? (message.content as { type?: unknown; cache_control?: unknown }[]) : [])).filter((block) => block.cache_control);
}

describe('Anthropic thinking: the request', () => {
  it('sends a budget scaled to the level, with max_tokens keeping the reply its room', async () => {
    const medium = await sent({ reasoning: 'medium' });
    expect(medium.body.thinking).toEqual({ type: 'enabled', budget_tokens: 8192 });
    expect(medium.body.max_tokens).toBe(16_000 + 8192);
    const low = await sent({ reasoning: 'low', maxTokens: 1000 });
    expect(low.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(low.body.max_tokens).toBe(1000 + 2048);
    expect((await sent({ reasoning: 'high' })).body.thinking).toEqual({ type: 'enabled', budget_tokens: 24_576 });
  });

  it('sends no thinking when the level is off or absent', async () => {
    for (const reasoning of ['off', undefined] as const) {
      const request = await sent({ reasoning, tools, maxTokens: 500 });
      expect(request.body).not.toHaveProperty('thinking');
      expect(request.body).not.toHaveProperty('output_config');
      expect(request.body.max_tokens).toBe(500);
      expect(request.headers['anthropic-beta']).toBeUndefined();
    }
  });

  it('asks for interleaved thinking only when native tools are offered', async () => {
    expect((await sent({ reasoning: 'medium', tools })).headers['anthropic-beta']).toBe(INTERLEAVED_THINKING_BETA);
    expect((await sent({ reasoning: 'medium' })).headers['anthropic-beta']).toBeUndefined();
  });

  it('keeps max_tokens within the longest reply the model may write, above the budget', async () => {
    const request = await sent({ reasoning: 'high', model: 'claude-opus-4-1' });
    expect(request.body.max_tokens).toBe(32_000);
    expect(request.body.thinking).toEqual({ type: 'enabled', budget_tokens: 24_000 });
  });

  it('uses adaptive thinking with the level as effort on models that take no budget, without the beta', async () => {
    const request = await sent({ reasoning: 'low', model: 'claude-opus-4-7', tools });
    expect(request.body.thinking).toEqual({ type: 'adaptive' });
    expect((request.body as { output_config?: unknown }).output_config).toEqual({ effort: 'low' });
    expect(request.body.max_tokens).toBe(16_000 + 2048);
    expect(request.headers['anthropic-beta']).toBeUndefined();
  });

  it('turns thinking off explicitly on adaptive models, which think when the field is left out', async () => {
    for (const model of ['claude-opus-5', 'claude-opus-4-7']) {
      const off = await sent({ reasoning: 'off', model, maxTokens: 500 });
      expect(off.body.thinking).toEqual({ type: 'disabled' });
      expect(off.body).not.toHaveProperty('output_config');
      expect(off.body.max_tokens).toBe(500);
    }
    // No level at all: nothing is said, and the model does as it does by default.
    expect((await sent({ model: 'claude-opus-5' })).body).not.toHaveProperty('thinking');
  });
});

describe('Anthropic thinking: the stream', () => {
  it('streams thinking, then one reasoning part with the block exactly as given, before the tool call', async () => {
    server.reply((r) => r.thinking('Look at a.ts first.').toolCall('read', { path: 'a.ts' }, 'toolu_1'));
    const events = await collect(provider().stream({ model: 'claude-test', messages: ask, tools, reasoning: 'medium' }));
    const signature = server.issued[0]?.value;
    expect(events.filter((event) => event.type === 'thinking').map((event) => event.text).join('')).toBe('Look at a.ts first.');
    const reasoning = events.filter((event) => event.type === 'reasoning');
    expect(reasoning).toEqual([
      { type: 'reasoning', part: { api: 'anthropic', raw: { type: 'thinking', thinking: 'Look at a.ts first.', signature }, text: 'Look at a.ts first.' } },
    ]);
    expect(JSON.stringify(reasoning[0]?.part.raw)).toBe(JSON.stringify({ type: 'thinking', thinking: 'Look at a.ts first.', signature }));
    const order = events.map((event) => event.type).filter((type) => type !== 'usage');
    expect(order).toEqual(['thinking', 'thinking', 'reasoning', 'tool_call', 'tool_call', 'tool_call', 'done']);
  });

  it('passes a redacted block on whole, with no text, in stream order among text and calls', async () => {
    server.reply((r) => r.redactedThinking('RkFLRQ==').text('Reading.').thinking('Then b.ts.').toolCall('read', { path: 'b.ts' }, 'toolu_2'));
    const events = await collect(provider().stream({ model: 'claude-test', messages: ask, tools, reasoning: 'low' }));
    const order = events.flatMap((event) => (event.type === 'reasoning' ? [`reasoning:${String(event.part.raw.type)}`] : event.type === 'usage' || event.type === 'thinking' ? [] : [event.type]));
    expect(order).toEqual(['reasoning:redacted_thinking', 'text', 'reasoning:thinking', 'tool_call', 'tool_call', 'tool_call', 'done']);
    expect(events.find((event) => event.type === 'reasoning')).toEqual({ type: 'reasoning', part: { api: 'anthropic', raw: { type: 'redacted_thinking', data: 'RkFLRQ==' } } });
  });

  it('tells the caller to discard thinking of a reply whose connection dropped, and streams it again', async () => {
    server.reply((r) => r.thinking('First try.').cut()).reply((r) => r.thinking('Second try.').text('Done.'));
    const events = await collect(provider().stream({ model: 'claude-test', messages: ask, reasoning: 'low' }));
    const restart = events.findIndex((event) => event.type === 'restart');
    expect(restart).toBeGreaterThan(0);
    const after = events.slice(restart).filter((event) => event.type === 'reasoning');
    expect(after.map((event) => event.part.text)).toEqual(['Second try.']);
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
  });

  it('never makes a reasoning part of a block that did not stop', () => {
    const blocks = new ThinkingBlocks();
    expect(blocks.start(0, { type: 'thinking', thinking: '', signature: '' })).toEqual([]);
    expect(blocks.thinking(0, 'half')).toEqual([{ type: 'thinking', text: 'half' }]);
    blocks.signature(0, 'sig');
    expect(blocks.stop(1)).toEqual([]);
    expect(blocks.stop(0)).toEqual([{ type: 'reasoning', part: { api: 'anthropic', raw: { type: 'thinking', thinking: 'half', signature: 'sig' }, text: 'half' } }]);
    expect(blocks.stop(0)).toEqual([]);
  });
});

describe('Anthropic thinking: replay', () => {
  /** Streams a first reply through the adapter, answers its calls, sends the next request, returns it. */
  async function exchange(first: Parameters<FakeLlm['reply']>[0], results: (calls: NativeToolCall[]) => Message[]) {
    server.reply(first).reply((r) => r.text('Done.'));
    const reply = assistantOf(await collect(provider().stream({ model: 'claude-test', messages: ask, tools, reasoning: 'medium' })));
    const messages = [...ask, reply, ...results(reply.meta?.toolCalls ?? [])];
    const events = await collect(provider().stream({ model: 'claude-test', messages, tools, reasoning: 'medium' }));
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
    const request = server.requests[1];
    if (!request) throw new Error('no second request');
    return { request, reply };
  }

  it('sends thinking before text back in place, byte for byte', async () => {
    const { request, reply } = await exchange(
      (r) => r.thinking('Plan the fix.').text('I will read it.').toolCall('read', { path: 'a.ts' }, 'toolu_1'),
      () => [result('toolu_1', 'export const a = 1;')],
    );
    expect(checkThinkingReturned(request, server.issued)).toEqual([]);
    expect(checkToolCallPairing(request)).toEqual([]);
    const assistant = request.body.messages?.[1];
    expect(assistant?.content).toEqual([
      reply.meta?.reasoning?.[0]?.raw,
      { type: 'text', text: 'I will read it.' },
      { type: 'tool_use', id: 'toolu_1', name: 'read', input: { path: 'a.ts' } },
    ]);
    expect(JSON.stringify((assistant?.content as unknown[])[0])).toBe(JSON.stringify(reply.meta?.reasoning?.[0]?.raw));
  });

  it('puts interleaved thinking back before each call: thinking, call 1, thinking, call 2', async () => {
    const { request } = await exchange(
      (r) => r.thinking('Read a first.').toolCall('read', { path: 'a.ts' }, 'toolu_1').redactedThinking('UkVEQUNURUQ=').thinking('Then b.').toolCall('read', { path: 'b.ts' }, 'toolu_2'),
      () => [result('toolu_1', 'a'), result('toolu_2', 'b')],
    );
    expect(server.issued.filter((state) => state.request === 0).map((state) => state.before)).toEqual(['toolu_1', 'toolu_2', 'toolu_2']);
    expect(checkThinkingReturned(request, server.issued)).toEqual([]);
    const types = (request.body.messages?.[1]?.content as { type: string }[]).map((block) => block.type);
    expect(types).toEqual(['thinking', 'tool_use', 'redacted_thinking', 'thinking', 'tool_use']);
  });

  it('is caught by the check when the thinking does not come back', async () => {
    const { request } = await exchange(
      (r) => r.thinking('Plan.').toolCall('read', { path: 'a.ts' }, 'toolu_1'),
      () => [result('toolu_1', 'a')],
    );
    const stripped = structuredClone(request);
    const assistant = stripped.body.messages?.[1];
    if (assistant && Array.isArray(assistant.content)) assistant.content = (assistant.content as { type: string }[]).filter((block) => block.type !== 'thinking');
    expect(checkThinkingReturned(stripped, server.issued)).not.toEqual([]);
  });

  it('puts a part whose call is not replayed before the next replayed call', () => {
    const calls: NativeToolCall[] = [
      { id: 'toolu_1', name: 'read', arguments: '{"path":"a.ts"}' },
      { id: 'toolu_2', name: 'read', arguments: '{"path":"b.ts"}' },
    ];
    const one = { type: 'thinking', thinking: 'One.', signature: 's1' };
    const two = { type: 'thinking', thinking: 'Two.', signature: 's2' };
    const messages = [
      ...ask,
      createMessage('assistant', calls.map(formatNativeCall).join('\n'), {
        meta: { toolCalls: calls, reasoning: [{ api: 'anthropic', raw: one, beforeCall: 0 }, { api: 'anthropic', raw: two, beforeCall: 1 }] },
      }),
      result('toolu_2', 'b'),
    ];
    const { messages: turns } = toAnthropicMessages(messages, true);
    const content = turns[1]?.content as { type: string; text?: string }[];
    expect(content.map((block) => block.type)).toEqual(['thinking', 'thinking', 'text', 'tool_use']);
    expect(content[0]).toBe(one);
    expect(content[1]).toBe(two);
  });

  it("never sends a part made by another API, nor one without a thinking block's shape", () => {
    const messages = [
      ...ask,
      createMessage('assistant', 'Hello.', {
        meta: {
          reasoning: [
            { api: 'openai-responses', raw: { type: 'reasoning', id: 'rs_1', encrypted_content: 'ENCRYPTED-XYZ' } },
            { api: 'anthropic', raw: { type: 'thinking', thinking: 'Hi.', signature: 'sig' } },
            // A damaged part (no signature) is left out rather than sent to fail.
            { api: 'anthropic', raw: { type: 'thinking', thinking: 'Damaged.' } },
          ],
        },
      }),
      createMessage('user', 'Again.'),
    ];
    const conversation = toAnthropicMessages(messages, false);
    expect(JSON.stringify(conversation)).not.toContain('ENCRYPTED-XYZ');
    expect(conversation.messages[1]?.content).toEqual([
      { type: 'thinking', thinking: 'Hi.', signature: 'sig' },
      { type: 'text', text: 'Hello.' },
    ]);
  });

  it('never puts a cache breakpoint on a thinking block, nor changes the stored block', () => {
    const stored = { type: 'thinking', thinking: 'Only thinking.', signature: 'sig' };
    const redacted = { type: 'redacted_thinking', data: 'RkFLRQ==' };
    const endsWithThinking = [...ask, createMessage('assistant', '', { meta: { reasoning: [{ api: 'anthropic', raw: stored }] } })];
    const last = toAnthropicMessages(endsWithThinking, false).messages.at(-1);
    expect(last?.content).toEqual([stored]);
    expect(stored).toEqual({ type: 'thinking', thinking: 'Only thinking.', signature: 'sig' });

    const prefill = [...ask, createMessage('assistant', 'Next:  ', { meta: { reasoning: [{ api: 'anthropic', raw: redacted }] } })];
    expect(toAnthropicMessages(prefill, false).messages.at(-1)?.content).toEqual([redacted, { type: 'text', text: 'Next:', cache_control: { type: 'ephemeral' } }]);
    expect(redacted).toEqual({ type: 'redacted_thinking', data: 'RkFLRQ==' });
  });

  it('puts the breakpoints of a thinking exchange on the tool results, never on thinking', async () => {
    const { request } = await exchange(
      (r) => r.thinking('Plan.').toolCall('read', { path: 'a.ts' }, 'toolu_1'),
      () => [result('toolu_1', 'a')],
    );
    const marked = cached(request);
    expect(marked.map((block) => block.type)).toEqual(['text', 'tool_result']);
  });
});

describe('Anthropic thinking: usage', () => {
  it('reads the output tokens spent thinking as reasoning tokens', async () => {
    // The fake model server does not report thinking tokens; this one-reply server does, as the API does.
    const event = (type: string, payload: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
    const usage = { input_tokens: 20, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
    const body = [
      event('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [], stop_reason: null, stop_sequence: null, usage } }),
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Done.' } }),
      event('content_block_stop', { index: 0 }),
      event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 900, output_tokens_details: { thinking_tokens: 850 } } }),
      event('message_stop', {}),
    ].join('');
    const one = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/event-stream' }).end(body));
    await new Promise<void>((resolve) => one.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = one.address() as AddressInfo;
      const subject = createAnthropicProvider({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${port}` }, { retry: { maxAttempts: 1 } });
      const events = await collect(subject.stream({ model: 'claude-test', messages: ask, reasoning: 'medium' }));
      expect(events.filter((e) => e.type === 'usage').at(-1)).toEqual({ type: 'usage', usage: { inputTokens: 20, outputTokens: 900, reasoningTokens: 850 } });
      expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
    } finally {
      one.closeAllConnections();
      await new Promise((resolve) => one.close(resolve));
    }
  });
});
