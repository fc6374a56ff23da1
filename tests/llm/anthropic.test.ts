import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMessage, type Message } from '../../src/conversation/message';
import { createAnthropicProvider } from '../../src/llm/anthropic';
import type { StreamEvent } from '../../src/llm/provider';
import type { RetryOptions } from '../../src/llm/retry';
import { assembleToolCalls, checkToolCallPairing, collect, startFakeLlm, type FakeLlm } from '../support/fake-llm';

let server: FakeLlm;
beforeEach(async () => {
  server = await startFakeLlm();
});
afterEach(async () => {
  await server.close();
});

function provider(retry: RetryOptions = {}) {
  return createAnthropicProvider({ apiKey: 'test-key', baseURL: server.anthropicBaseURL }, { retry: { baseDelayMs: 1, ...retry } });
}

const conversation: Message[] = [createMessage('system', 'You are fence.'), createMessage('user', 'Say hello.')];
const types = (events: StreamEvent[]) => events.map((event) => event.type);

describe('Anthropic adapter streaming', () => {
  it("passes the SDK's deprecation warning on as one line, once however many requests, and never to the console", async () => {
    const warned: string[] = [];
    const console_ = vi.spyOn(console, 'warn');
    try {
      const deprecated = createAnthropicProvider({ apiKey: 'test-key', baseURL: server.anthropicBaseURL }, { warn: (line) => warned.push(line) });
      server.reply((r) => r.text('one')).reply((r) => r.text('two'));
      // A model the SDK (at the version fence pins) knows as deprecated.
      await collect(deprecated.stream({ model: 'claude-sonnet-4-5', messages: conversation }));
      await collect(deprecated.stream({ model: 'claude-sonnet-4-5', messages: conversation }));
      expect(console_).not.toHaveBeenCalled();
    } finally {
      console_.mockRestore();
    }
    expect(warned).toEqual([expect.stringMatching(/^Anthropic SDK: The model 'claude-sonnet-4-5' is deprecated and will reach end-of-life on .+\d{4}$/)]);
    expect(server.requests).toHaveLength(2);
  });

  it('streams text and reads input usage at the start and output usage at the end', async () => {
    server.reply((r) => r.text('Hello ').text('world').usage({ input: 12, output: 3, cacheRead: 4, cacheWrite: 2 }));
    const events = await collect(provider().stream({ model: 'claude-test', messages: conversation }));
    expect(events).toEqual([
      { type: 'usage', usage: { inputTokens: 12, outputTokens: 1, cacheReadTokens: 4, cacheWriteTokens: 2 } },
      { type: 'text', text: 'Hello ' },
      { type: 'text', text: 'world' },
      { type: 'usage', usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 4, cacheWriteTokens: 2 } },
      { type: 'done', stopReason: 'end' },
    ]);
    const [request] = server.requests;
    expect(request?.path).toBe('/v1/messages');
    expect(request?.headers.authorization).toBe('Bearer test-key');
    expect(request?.body).toMatchObject({ model: 'claude-test', stream: true, max_tokens: 16_000 });
  });

  it('assembles tool_use blocks into tool calls numbered among themselves', async () => {
    server.reply((r) => r.text('Checking.').toolCall('shell', { command: 'ls' }, 'toolu_1').toolCall('read', { path: 'a.ts' }, 'toolu_2'));
    const events = await collect(provider().stream({ model: 'claude-test', messages: conversation }));
    expect(assembleToolCalls(events)).toEqual([
      { id: 'toolu_1', name: 'shell', arguments: '{"command":"ls"}' },
      { id: 'toolu_2', name: 'read', arguments: '{"path":"a.ts"}' },
    ]);
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'tool_use' });
  });

  it('maps max_tokens', async () => {
    server.reply((r) => r.text('long').stop('max_tokens'));
    const events = await collect(provider().stream({ model: 'claude-test', messages: conversation }));
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'max_tokens' });
  });

  it('on abort keeps the reported input and estimates only the output', async () => {
    server.reply((r) => r.text('twelve chars').hang().usage({ input: 40 }));
    const controller = new AbortController();
    const events: StreamEvent[] = [];
    for await (const event of provider().stream({ model: 'claude-test', messages: conversation, signal: controller.signal })) {
      events.push(event);
      if (event.type === 'text') controller.abort();
    }
    expect(events.slice(-2)).toEqual([
      { type: 'usage', usage: { inputTokens: 40, outputTokens: 3, estimated: true } },
      { type: 'done', stopReason: 'aborted' },
    ]);
    await server.responseClosed(0);
  });
});

describe('Anthropic adapter retries', () => {
  it('retries 529 overloaded, then streams', async () => {
    server.reply((r) => r.status(529, { message: 'Overloaded' })).reply((r) => r.text('ok'));
    const events = await collect(provider().stream({ model: 'claude-test', messages: conversation }));
    expect(types(events)).toEqual(['retry', 'usage', 'text', 'usage', 'done']);
    expect(events[0]).toMatchObject({ type: 'retry', attempt: 2, reason: 'HTTP 529 from anthropic: Overloaded' });
  });

  it('retries an overloaded_error event before any text', async () => {
    server.reply((r) => r.streamError('overloaded_error', 'Overloaded')).reply((r) => r.text('ok'));
    const events = await collect(provider().stream({ model: 'claude-test', messages: conversation }));
    expect(types(events)).toEqual(['usage', 'retry', 'usage', 'text', 'usage', 'done']);
    expect(events[1]).toMatchObject({ reason: 'anthropic stream error: overloaded_error: Overloaded' });
  });

  it('restarts when an overloaded_error event comes after some text', async () => {
    server.reply((r) => r.text('half').streamError()).reply((r) => r.text('whole'));
    const events = await collect(provider().stream({ model: 'claude-test', messages: conversation }));
    expect(types(events)).toEqual(['usage', 'text', 'restart', 'retry', 'usage', 'text', 'usage', 'done']);
  });

  it('restarts a reply whose connection dropped after some text', async () => {
    server.reply((r) => r.text('partial').cut()).reply((r) => r.text('complete'));
    const events = await collect(provider().stream({ model: 'claude-test', messages: conversation }));
    expect(types(events)).toEqual(['usage', 'text', 'restart', 'retry', 'usage', 'text', 'usage', 'done']);
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
  });

  it('does not retry a 401 and says why', async () => {
    server.reply((r) => r.status(401, { message: 'invalid x-api-key' }));
    const events = await collect(provider().stream({ model: 'claude-test', messages: conversation }));
    expect(events).toEqual([{ type: 'done', stopReason: 'error', error: 'HTTP 401 from anthropic: invalid x-api-key', errorKind: 'auth' }]);
  });

  it('does not wait for a retry-after longer than allowed', async () => {
    server.reply((r) => r.status(429, { retryAfter: 3600, message: 'quota' }));
    const events = await collect(provider().stream({ model: 'claude-test', messages: conversation }));
    expect(events).toEqual([{ type: 'done', stopReason: 'error', error: 'HTTP 429 from anthropic: quota (the server asks to wait 3600 s)', errorKind: 'rate_limited' }]);
  });
});

describe('Anthropic adapter messages', () => {
  async function sent(messages: Message[], extra: { maxTokens?: number; model?: string; tools?: { name: string; description: string; parameters: Record<string, unknown> }[] } = {}) {
    server.reply((r) => r.text('ok'));
    await collect(provider().stream({ model: extra.model ?? 'claude-test', messages, maxTokens: extra.maxTokens, tools: extra.tools }));
    const request = server.requests.at(-1);
    if (!request) throw new Error('no request recorded');
    return request;
  }

  it('puts the system prompt in `system` and later system messages in user turns, merged to alternate', async () => {
    const request = await sent(
      [
        createMessage('system', 'You are fence.'),
        createMessage('user', 'List the files.'),
        createMessage('assistant', '```shell\nls\n```'),
        createMessage('system', 'a.txt', { meta: { toolResult: true, tool: 'shell' }, hide: true }),
        createMessage('system', 'Budget: 3 steps left.'),
        createMessage('user', 'Thanks.'),
      ],
      { maxTokens: 1234 },
    );
    expect(request.body.system).toEqual([{ type: 'text', text: 'You are fence.', cache_control: { type: 'ephemeral' } }]);
    expect(request.body.max_tokens).toBe(1234);
    expect(request.body.messages).toEqual([
      // The user turn before the last one is where the previous request ended: a breakpoint too.
      { role: 'user', content: [{ type: 'text', text: 'List the files.', cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: [{ type: 'text', text: '```shell\nls\n```' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: '<system>\na.txt\n</system>' },
          { type: 'text', text: '<system>\nBudget: 3 steps left.\n</system>' },
          { type: 'text', text: 'Thanks.', cache_control: { type: 'ephemeral' } },
        ],
      },
    ]);
  });

  it('opens with a user turn when the conversation starts with the assistant, and trims a final assistant turn', async () => {
    const request = await sent([createMessage('system', 'sys'), createMessage('assistant', 'Summary so far.'), createMessage('assistant', 'Next:  \n')]);
    expect(request.body.messages?.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(request.body.messages?.[1]?.content).toEqual([
      { type: 'text', text: 'Summary so far.' },
      { type: 'text', text: 'Next:', cache_control: { type: 'ephemeral' } },
    ]);
  });

  it('keeps a breakpoint where the previous request ended, so each step reads the one before from the cache', async () => {
    const log = [createMessage('system', 'sys'), createMessage('user', 'Go.')];
    const breakpoints: string[][] = [];
    for (let step = 1; step <= 3; step++) {
      log.push(createMessage('assistant', `\`\`\`shell\necho ${step}\n\`\`\``));
      log.push(createMessage('system', `${step}`, { meta: { toolResult: true, tool: 'shell' } }));
      const request = await sent(log);
      breakpoints.push(
        (request.body.messages ?? []).flatMap((message) =>
          (message.content as { text?: string; cache_control?: unknown }[]).filter((block) => block.cache_control).map((block) => block.text ?? ''),
        ),
      );
    }
    expect(breakpoints).toEqual([
      ['Go.', '<system>\n1\n</system>'],
      ['<system>\n1\n</system>', '<system>\n2\n</system>'],
      ['<system>\n2\n</system>', '<system>\n3\n</system>'],
    ]);
  });

  it('chooses max_tokens by model family when none is given', async () => {
    expect((await sent(conversation, { model: 'claude-3-5-haiku-latest' })).body.max_tokens).toBe(8192);
    expect((await sent(conversation, { model: 'claude-3-haiku-20240307' })).body.max_tokens).toBe(4096);
    expect((await sent(conversation, { model: 'claude-sonnet-4-6' })).body.max_tokens).toBe(16_000);
  });

  it('replays native calls as tool_use and tool_result blocks, results first in their turn', async () => {
    const tools = [{ name: 'shell', description: 'Runs a command', parameters: { type: 'object', properties: { command: { type: 'string' } } } }];
    const request = await sent(
      [
        createMessage('system', 'You are fence.'),
        createMessage('user', 'List the files.'),
        createMessage('assistant', 'Listing.\n@shell(toolu_1): {"command":"ls"}\n@shell(toolu_2): {"command":"pwd"}', {
          meta: {
            toolCalls: [
              { id: 'toolu_1', name: 'shell', arguments: '{"command":"ls"}' },
              { id: 'toolu_2', name: 'shell', arguments: '{"command":"pwd"}' },
            ],
          },
        }),
        createMessage('system', '/work', { callId: 'toolu_2', meta: { toolResult: true, tool: 'shell' } }),
        createMessage('system', 'a.txt', { callId: 'toolu_1', meta: { toolResult: true, tool: 'shell', isError: true } }),
      ],
      { tools },
    );
    expect(request.body.tools).toEqual([{ name: 'shell', description: 'Runs a command', input_schema: tools[0]?.parameters }]);
    expect(request.body.messages?.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Listing.' },
          { type: 'tool_use', id: 'toolu_1', name: 'shell', input: { command: 'ls' } },
          { type: 'tool_use', id: 'toolu_2', name: 'shell', input: { command: 'pwd' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt', is_error: true },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: '/work', cache_control: { type: 'ephemeral' } },
        ],
      },
    ]);
    expect(checkToolCallPairing(request)).toEqual([]);
  });
});

describe('Anthropic provider: an early connection', () => {
  it('sends the first request on the connection preconnect opened', async () => {
    const subject = provider();
    subject.preconnect?.();
    for (let i = 0; i < 200 && server.connections === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(server.connections).toBe(1);
    server.reply((r) => r.text('Hi.'));
    await collect(subject.stream({ model: 'm', messages: conversation }));
    expect(server.requests).toHaveLength(1);
    expect(server.connections).toBe(1);
  });
});
