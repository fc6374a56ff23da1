import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMessage, type Message } from '../../src/conversation/message';
import { estimateMessageTokens } from '../../src/llm/estimate-tokens';
import { createOpenAIProvider, type OpenAITarget } from '../../src/llm/openai';
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

function provider(kind: OpenAITarget['provider'] = 'openai', retry: RetryOptions = {}) {
  return createOpenAIProvider({ provider: kind, apiKey: 'test-key', baseURL: server.openaiBaseURL }, { retry: { baseDelayMs: 1, ...retry } });
}

const conversation: Message[] = [createMessage('system', 'You are fence.'), createMessage('user', 'Say hello.')];
const types = (events: StreamEvent[]) => events.map((event) => event.type);

describe('OpenAI adapter streaming', () => {
  it('streams text deltas and reads usage from the stream', async () => {
    server.reply((r) => r.text('Hello ').text('world').usage({ input: 12, output: 3, cacheRead: 4 }));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(events).toEqual([
      { type: 'text', text: 'Hello ' },
      { type: 'text', text: 'world' },
      { type: 'usage', usage: { inputTokens: 12, outputTokens: 3, cacheReadTokens: 4 } },
      { type: 'done', stopReason: 'end' },
    ]);
    const [request] = server.requests;
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe('Bearer test-key');
    expect(request?.body).toMatchObject({ model: 'gpt-test', stream: true, stream_options: { include_usage: true } });
  });

  it('assembles native tool-call deltas and maps tool_calls to tool_use', async () => {
    server.reply((r) => r.text('Let me look.').toolCall('shell', { command: 'ls -la' }, 'call_a').toolCall('read', { path: 'src/x.ts' }, 'call_b'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(assembleToolCalls(events)).toEqual([
      { id: 'call_a', name: 'shell', arguments: '{"command":"ls -la"}' },
      { id: 'call_b', name: 'read', arguments: '{"path":"src/x.ts"}' },
    ]);
    expect(events.filter((event) => event.type === 'tool_call').length).toBeGreaterThan(2);
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'tool_use' });
  });

  it('sends the reasoning level as reasoning_effort, shows a server\'s reasoning_content as thinking, and counts reasoning tokens', async () => {
    server.reply((r) => r.thinking('Two words will do.').text('Hello.').usage({ input: 12, output: 30, reasoning: 20 }));
    const events = await collect(provider('local').stream({ model: 'qwen-test', messages: conversation, reasoning: 'high' }));
    expect(events.filter((event) => event.type === 'thinking').map((event) => (event as { text: string }).text).join('')).toBe('Two words will do.');
    expect(events.find((event) => event.type === 'usage')).toEqual({ type: 'usage', usage: { inputTokens: 12, outputTokens: 30, reasoningTokens: 20 } });
    expect(types(events).indexOf('thinking')).toBeLessThan(types(events).indexOf('text'));
    expect(server.requests[0]?.body).toMatchObject({ reasoning_effort: 'high' });

    server.reply((r) => r.text('Hi.'));
    await collect(provider().stream({ model: 'gpt-5', messages: conversation, reasoning: 'off' }));
    expect(server.requests[1]?.body).toMatchObject({ reasoning_effort: 'minimal' });
    server.reply((r) => r.text('Hi.'));
    await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(server.requests[2]?.body).not.toHaveProperty('reasoning_effort');
  });

  it('maps length to max_tokens', async () => {
    server.reply((r) => r.text('cut short').stop('max_tokens'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'max_tokens' });
  });

  it('ends promptly with aborted and estimated usage when aborted mid-stream', async () => {
    server.reply((r) => r.text('slow reply').hang());
    const controller = new AbortController();
    const events: StreamEvent[] = [];
    for await (const event of provider().stream({ model: 'gpt-test', messages: conversation, signal: controller.signal })) {
      events.push(event);
      if (event.type === 'text') controller.abort();
    }
    expect(events).toEqual([
      { type: 'text', text: 'slow reply' },
      { type: 'usage', usage: { inputTokens: estimateMessageTokens(conversation), outputTokens: 3, estimated: true } },
      { type: 'done', stopReason: 'aborted' },
    ]);
    await server.responseClosed(0);
  });

  it('ends with aborted without sending when the signal is already aborted', async () => {
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation, signal: AbortSignal.abort() }));
    expect(events).toEqual([{ type: 'done', stopReason: 'aborted' }]);
    expect(server.requests).toHaveLength(0);
  });

  it('closes the HTTP request when the caller stops reading', async () => {
    server.reply((r) => r.text('first').hang());
    for await (const event of provider().stream({ model: 'gpt-test', messages: conversation })) {
      if (event.type === 'text') break;
    }
    await server.responseClosed(0);
  });
});

describe('OpenAI adapter retries', () => {
  it('retries a 429 after the retry-after the server asked for, then streams', async () => {
    server.reply((r) => r.status(429, { retryAfter: 0, message: 'slow down' })).reply((r) => r.text('ok'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(types(events)).toEqual(['retry', 'text', 'usage', 'done']);
    expect(events[0]).toEqual({ type: 'retry', attempt: 2, delayMs: 0, reason: 'HTTP 429 from openai: slow down' });
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
    expect(server.requests).toHaveLength(2);
  });

  it('honours retry-after-ms', async () => {
    server.reply((r) => r.status(503, { retryAfterMs: 7 })).reply((r) => r.text('ok'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(events[0]).toMatchObject({ type: 'retry', delayMs: 7 });
  });

  it('gives up with one clean line when every attempt fails with 500', async () => {
    for (let i = 0; i < 3; i++) server.reply((r) => r.status(500, { message: 'boom' }));
    const events = await collect(provider('openai', { maxAttempts: 3 }).stream({ model: 'gpt-test', messages: conversation }));
    expect(types(events)).toEqual(['retry', 'retry', 'done']);
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'error', error: 'HTTP 500 from openai: boom (after 3 attempts)' });
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a 401 and says why', async () => {
    server.reply((r) => r.status(401, { message: 'invalid api key' })).reply((r) => r.text('never'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(events).toEqual([{ type: 'done', stopReason: 'error', error: 'HTTP 401 from openai: invalid api key', errorKind: 'auth' }]);
    expect(server.requests).toHaveLength(1);
  });

  it('restarts a reply whose connection dropped after some text', async () => {
    server.reply((r) => r.text('partial').cut()).reply((r) => r.text('complete'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(types(events)).toEqual(['text', 'restart', 'retry', 'text', 'usage', 'done']);
    expect(events[1]).toMatchObject({ type: 'restart', attempt: 2 });
    expect(events[3]).toEqual({ type: 'text', text: 'complete' });
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
    expect(server.requests).toHaveLength(2);
  });

  it('retries without restart when the connection drops before any text', async () => {
    server.reply((r) => r.cut()).reply((r) => r.text('fine'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(types(events)).toEqual(['retry', 'text', 'usage', 'done']);
  });

  it('reports a lost connection when every attempt drops mid-reply', async () => {
    server.reply((r) => r.text('one').cut()).reply((r) => r.text('two').cut());
    const events = await collect(provider('openai', { maxAttempts: 2 }).stream({ model: 'gpt-test', messages: conversation }));
    expect(types(events)).toEqual(['text', 'restart', 'retry', 'text', 'usage', 'done']);
    expect(events.at(-2)).toMatchObject({ type: 'usage', usage: { estimated: true, outputTokens: 1 } });
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'error', error: 'connection lost mid-reply after 2 attempts' });
  });

  it('retries an error event sent inside the stream', async () => {
    server.reply((r) => r.streamError('server_error', 'The server had an error')).reply((r) => r.text('recovered'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(events[0]).toMatchObject({ type: 'retry', reason: 'openai stream error: server_error: The server had an error' });
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
  });

  it('retries a refused connection, then names the failure', async () => {
    const closedPort = server.openaiBaseURL;
    await server.close();
    const adapter = createOpenAIProvider({ provider: 'local', apiKey: 'local', baseURL: closedPort }, { retry: { baseDelayMs: 1, maxAttempts: 2 } });
    const events = await collect(adapter.stream({ model: 'llama', messages: conversation }));
    expect(types(events)).toEqual(['retry', 'done']);
    const done = events.at(-1);
    expect(done).toMatchObject({ type: 'done', stopReason: 'error' });
    expect(done?.type === 'done' ? done.error : '').toMatch(/^connection to local failed: .*ECONNREFUSED.* \(after 2 attempts\)$/);
    server = await startFakeLlm();
  });
});

describe('OpenAI adapter messages', () => {
  const history: Message[] = [
    createMessage('system', 'You are fence.'),
    createMessage('user', 'List the files.'),
    createMessage('assistant', '```shell\nls\n```'),
    createMessage('system', 'a.txt\nb.txt', { meta: { toolResult: true, tool: 'shell' }, hide: true }),
    createMessage('system', 'Budget: 3 steps left.'),
  ];

  async function sentMessages(kind: OpenAITarget['provider'], messages: Message[] = history) {
    server.reply((r) => r.text('ok'));
    await collect(provider(kind).stream({ model: 'm', messages, maxTokens: 100 }));
    const body = server.requests.at(-1)?.body;
    return { body, messages: body?.messages ?? [] };
  }

  it('sends later system messages as system to openai, with max_completion_tokens', async () => {
    const { body, messages } = await sentMessages('openai');
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'You are fence.'],
      ['user', 'List the files.'],
      ['assistant', '```shell\nls\n```'],
      ['system', 'a.txt\nb.txt'],
      ['system', 'Budget: 3 steps left.'],
    ]);
    expect(body).toMatchObject({ max_completion_tokens: 100 });
    expect(body).not.toHaveProperty('max_tokens');
  });

  it('wraps later system messages as user for local servers and merges consecutive user messages', async () => {
    const { body, messages } = await sentMessages('local');
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'You are fence.'],
      ['user', 'List the files.'],
      ['assistant', '```shell\nls\n```'],
      ['user', '<system>\na.txt\nb.txt\n</system>\n\n<system>\nBudget: 3 steps left.\n</system>'],
    ]);
    expect(body).toMatchObject({ max_tokens: 100 });
    expect(body).not.toHaveProperty('max_completion_tokens');
  });

  it('wraps later system messages as user for openrouter', async () => {
    const { messages } = await sentMessages('openrouter');
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'user']);
    expect(messages[3]?.content).toBe('<system>\na.txt\nb.txt\n</system>');
    expect(server.requests.at(-1)?.headers['x-title']).toBe('fence');
  });

  it('replays native calls as tool_calls answered by tool messages when tools are offered', async () => {
    const withCall: Message[] = [
      createMessage('system', 'You are fence.'),
      createMessage('user', 'List the files.'),
      createMessage('assistant', 'Listing.\n@shell(call_1): {"command":"ls"}', {
        meta: { toolCalls: [{ id: 'call_1', name: 'shell', arguments: '{"command":"ls"}' }] },
      }),
      createMessage('system', 'a.txt', { callId: 'call_1', meta: { toolResult: true, tool: 'shell' } }),
    ];
    server.reply((r) => r.text('done'));
    const tools = [{ name: 'shell', description: 'Runs a command', parameters: { type: 'object', properties: { command: { type: 'string' } } } }];
    await collect(provider().stream({ model: 'm', messages: withCall, tools }));
    const request = server.requests[0];
    expect(request?.body.messages?.slice(2)).toEqual([
      { role: 'assistant', content: 'Listing.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"command":"ls"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'a.txt' },
    ]);
    expect(request?.body.tools).toEqual([{ type: 'function', function: tools[0] }]);
    expect(request && checkToolCallPairing(request)).toEqual([]);

    const { messages } = await sentMessages('openai', withCall);
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'system']);
    expect(messages[2]).not.toHaveProperty('tool_calls');
  });
});

describe('OpenAI provider: an early connection', () => {
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
