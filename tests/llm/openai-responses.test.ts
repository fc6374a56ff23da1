import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadAgentModel } from '../../src/agent/agent-model';
import { mergeConfigFiles, parseConfigText } from '../../src/config/config';
import { createMessage, type Message, type ReasoningPart } from '../../src/conversation/message';
import { createProvider } from '../../src/llm/create-provider';
import { resolveModel, type ResolvedModel } from '../../src/llm/models';
import { formatNativeCall } from '../../src/llm/native-calls';
import type { OpenAITarget } from '../../src/llm/openai-client';
import { OPENAI_COMPAT } from '../../src/llm/openai-compat';
import { reasoningEffort } from '../../src/llm/openai-reasoning';
import { createOpenAIResponsesProvider } from '../../src/llm/openai-responses';
import { toResponsesInput } from '../../src/llm/openai-responses-input';
import type { StreamEvent, StreamRequest, ToolSchema } from '../../src/llm/provider';
import type { RetryOptions } from '../../src/llm/retry';
import {
  assembleToolCalls,
  checkThinkingReturned,
  checkToolCallPairing,
  collect,
  ENCRYPTED_REASONING,
  startFakeLlm,
  type FakeLlm,
} from '../support/fake-llm';
import { inputItems } from '../support/fake-llm-wire';

let server: FakeLlm;
beforeEach(async () => {
  server = await startFakeLlm();
});
afterEach(async () => {
  await server.close();
});

function provider(kind: OpenAITarget['provider'] = 'openai', retry: RetryOptions = {}) {
  return createOpenAIResponsesProvider({ provider: kind, apiKey: 'test-key', baseURL: server.openaiBaseURL }, { retry: { baseDelayMs: 1, ...retry } });
}

const conversation: Message[] = [createMessage('system', 'You are fence.'), createMessage('user', 'Say hello.')];
const types = (events: StreamEvent[]) => events.map((event) => event.type);
const tools: ToolSchema[] = [
  { name: 'shell', description: 'Runs a command', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
  { name: 'read', description: 'Reads a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
];

/**
 * The assistant message a reply's events make, as the agent keeps it: the text and a line per
 * call, the calls in `meta.toolCalls`, and the reasoning parts in order, each naming the call
 * that came after it.
 */
function replyMessage(events: readonly StreamEvent[]): Message {
  let text = '';
  const reasoning: ReasoningPart[] = [];
  const pending: ReasoningPart[] = [];
  let calls = 0;
  for (const event of events) {
    if (event.type === 'text') text += event.text;
    if (event.type === 'reasoning') pending.push({ ...event.part });
    if (event.type === 'tool_call' && event.id !== undefined) {
      for (const part of pending.splice(0)) reasoning.push({ ...part, beforeCall: calls });
      calls++;
    }
  }
  reasoning.push(...pending);
  const toolCalls = assembleToolCalls(events).map((call) => ({ id: call.id ?? '', name: call.name ?? '', arguments: call.arguments }));
  const content = [text, ...toolCalls.map(formatNativeCall)].filter((line) => line !== '').join('\n');
  return createMessage('assistant', content, { meta: { toolCalls, reasoning } });
}

function results(message: Message): Message[] {
  return (message.meta?.toolCalls ?? []).map((call) =>
    createMessage('system', `output of ${call.id}`, { callId: call.id, meta: { toolResult: true, tool: call.name } }),
  );
}

describe('Responses adapter streaming', () => {
  it('streams text, reads usage, and sends a stateless request', async () => {
    server.reply((r) => r.text('Hello ').text('world').usage({ input: 12, output: 3 }));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation, maxTokens: 100 }));
    expect(events).toEqual([
      { type: 'text', text: 'Hello ' },
      { type: 'text', text: 'world' },
      { type: 'usage', usage: { inputTokens: 12, outputTokens: 3 } },
      { type: 'done', stopReason: 'end' },
    ]);
    const [request] = server.requests;
    expect(request?.path).toBe('/v1/responses');
    expect(request?.headers.authorization).toBe('Bearer test-key');
    expect(request?.body).toMatchObject({
      model: 'gpt-test',
      stream: true,
      store: false,
      instructions: 'You are fence.',
      input: [{ role: 'user', content: 'Say hello.' }],
      max_output_tokens: 100,
    });
    expect(request?.body).not.toHaveProperty('reasoning');
    expect(request?.body).not.toHaveProperty('previous_response_id');
    // No reasoning level, so no encrypted reasoning asked for: a model that does not reason refuses the request for it.
    expect(request?.body).not.toHaveProperty('include');
  });

  it('asks for encrypted reasoning only with a reasoning level: gpt-4o answers, gpt-5 keeps its reasoning', async () => {
    server.reply((r) => r.text('Hello.'));
    const plain = await collect(provider().stream({ model: 'gpt-4o', messages: conversation }));
    expect(plain.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
    server.reply((r) => r.thinking('plan').text('Hi.'));
    const reasoned = await collect(provider().stream({ model: 'gpt-5', messages: conversation, reasoning: 'medium' }));
    expect(server.requests[1]?.body.include).toEqual([ENCRYPTED_REASONING]);
    expect(reasoned.find((event) => event.type === 'reasoning')).toMatchObject({ part: { raw: { encrypted_content: expect.any(String) } } });
  });

  it('does not send back a reasoning item that came without its encrypted content', async () => {
    const reply = createMessage('assistant', 'Hi.', {
      meta: { reasoning: [{ api: 'openai-responses', raw: { id: 'rs_bare', type: 'reasoning', summary: [{ type: 'summary_text', text: 'plan' }] } }] },
    });
    server.reply((r) => r.text('ok'));
    const events = await collect(provider().stream({ model: 'gpt-5.1', messages: [...conversation, reply, createMessage('user', 'again')] }));
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
    expect(inputItems(server.requests[0]!.body).some((item) => item.type === 'reasoning')).toBe(false);
  });

  it('reads cached and reasoning tokens as the Chat Completions adapter counts them', async () => {
    server.reply((r) => r.text('ok').usage({ input: 12, output: 30, cacheRead: 4, reasoning: 20 }));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(events.find((event) => event.type === 'usage')).toEqual({
      type: 'usage',
      usage: { inputTokens: 12, outputTokens: 30, cacheReadTokens: 4, reasoningTokens: 20 },
    });
  });

  it('maps an incomplete reply (max_output_tokens) to max_tokens', async () => {
    server.reply((r) => r.text('cut short').stop('max_tokens'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'max_tokens' });
  });

  it('joins the texts of successive message items with a blank line, the first message alone unchanged', async () => {
    server.reply((r) => r.text('Checked.').endMessage().thinking('Now the rest.').text('All fine.\n').endMessage().text('Done.'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation, reasoning: 'low' }));
    const text = events.flatMap((event) => (event.type === 'text' ? [event.text] : [])).join('');
    expect(text).toBe('Checked.\n\nAll fine.\n\nDone.');
    server.reply((r) => r.text('Just one.'));
    const single = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(single.filter((event) => event.type === 'text')).toEqual([{ type: 'text', text: 'Just one.' }]);
  });

  it('closes the HTTP request when the caller stops reading', async () => {
    server.reply((r) => r.text('first').hang());
    for await (const event of provider().stream({ model: 'gpt-test', messages: conversation })) {
      if (event.type === 'text') break;
    }
    await server.responseClosed(0);
  });
});

describe('Responses adapter tool calls', () => {
  it('streams two calls in one reply and answers both by call_id in the next request', async () => {
    server.reply((r) => r.text('Let me look.').toolCall('shell', { command: 'ls -la' }, 'call_a').toolCall('read', { path: 'src/x.ts' }, 'call_b'));
    const first = await collect(provider().stream({ model: 'gpt-test', messages: conversation, tools }));
    expect(assembleToolCalls(first)).toEqual([
      { id: 'call_a', name: 'shell', arguments: '{"command":"ls -la"}' },
      { id: 'call_b', name: 'read', arguments: '{"path":"src/x.ts"}' },
    ]);
    expect(first.filter((event) => event.type === 'tool_call' && event.name !== undefined)).toHaveLength(2);
    expect(first.at(-1)).toEqual({ type: 'done', stopReason: 'tool_use' });
    expect(server.requests[0]?.body.tools).toEqual(tools.map((tool) => ({ type: 'function', ...tool, strict: false })));

    const reply = replyMessage(first);
    server.reply((r) => r.text('Two files.'));
    const second = await collect(provider().stream({ model: 'gpt-test', messages: [...conversation, reply, ...results(reply)], tools }));
    expect(second.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
    const request = server.requests[1]!;
    expect(request.body.input).toEqual([
      { role: 'user', content: 'Say hello.' },
      { role: 'assistant', content: 'Let me look.' },
      { type: 'function_call', call_id: 'call_a', name: 'shell', arguments: '{"command":"ls -la"}' },
      { type: 'function_call', call_id: 'call_b', name: 'read', arguments: '{"path":"src/x.ts"}' },
      { type: 'function_call_output', call_id: 'call_a', output: 'output of call_a' },
      { type: 'function_call_output', call_id: 'call_b', output: 'output of call_b' },
    ]);
    expect(checkToolCallPairing(request)).toEqual([]);
  });

  it('leaves a call without its result in the text, so the server never sees an unanswered call', async () => {
    const reply = createMessage('assistant', 'Looking.\n@shell(call_x): {"command":"ls"}', {
      meta: { toolCalls: [{ id: 'call_x', name: 'shell', arguments: '{"command":"ls"}' }] },
    });
    server.reply((r) => r.text('ok'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: [...conversation, reply, createMessage('user', 'go on')], tools }));
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
    expect(server.requests[0]?.body.input).toEqual([
      { role: 'user', content: 'Say hello.' },
      { role: 'assistant', content: 'Looking.\n@shell(call_x): {"command":"ls"}' },
      { role: 'user', content: 'go on' },
    ]);
  });

  it('sends later system messages as system to openai, wrapped as user to local servers', async () => {
    const history = [...conversation, createMessage('assistant', 'Hi.'), createMessage('system', 'Budget: 3 steps left.')];
    server.reply((r) => r.text('ok')).reply((r) => r.text('ok'));
    await collect(provider('openai').stream({ model: 'm', messages: history }));
    await collect(provider('local').stream({ model: 'm', messages: history }));
    expect(server.requests[0]?.body.input?.at(-1)).toEqual({ role: 'system', content: 'Budget: 3 steps left.' });
    expect(server.requests[1]?.body.input?.at(-1)).toEqual({ role: 'user', content: '<system>\nBudget: 3 steps left.\n</system>' });
  });
});

describe('Responses adapter reasoning', () => {
  it('sends reasoning items back byte for byte, each before the call it led to', async () => {
    server.reply((r) =>
      r
        .thinking('First list the files.')
        .text('Looking.')
        .toolCall('shell', { command: 'ls' }, 'call_a')
        .redactedThinking('c2VjcmV0IHBsYW4=')
        .toolCall('read', { path: 'a.txt' }, 'call_b')
        .usage({ reasoning: 3 }),
    );
    const request: StreamRequest = { model: 'gpt-test', messages: conversation, tools, reasoning: 'high' };
    const first = await collect(provider().stream(request));
    expect(server.requests[0]?.body.reasoning).toEqual({ effort: 'high', summary: 'auto' });
    expect(first.filter((event) => event.type === 'thinking').map((event) => event.text).join('')).toBe('First list the files.');
    const parts = first.flatMap((event) => (event.type === 'reasoning' ? [event.part] : []));
    expect(parts).toHaveLength(2);
    expect(parts[0]).toMatchObject({ api: 'openai-responses', text: 'First list the files.', raw: { type: 'reasoning', encrypted_content: server.issued[0]?.value } });
    expect(parts[1]).toEqual({ api: 'openai-responses', raw: expect.objectContaining({ type: 'reasoning', summary: [], encrypted_content: 'c2VjcmV0IHBsYW4=' }) });
    // In stream order: each reasoning item comes before the call it led to.
    const order = first.flatMap((event) => (event.type === 'reasoning' ? ['reasoning'] : event.type === 'tool_call' && event.id ? [event.id] : []));
    expect(order).toEqual(['reasoning', 'call_a', 'reasoning', 'call_b']);

    const reply = replyMessage(first);
    server.reply((r) => r.text('Done.'));
    const second = await collect(provider().stream({ ...request, messages: [...conversation, reply, ...results(reply)] }));
    expect(second.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
    expect(server.issued).toHaveLength(2);
    expect(checkThinkingReturned(server.requests[1]!, server.issued)).toEqual([]);
    const sent = inputItems(server.requests[1]!.body);
    expect(sent.filter((item) => item.type === 'reasoning')).toEqual(parts.map((part) => part.raw));
    // The first item led to call_a (beforeCall 0), so it goes right before that call.
    expect(sent.map((item) => item.type ?? item.role)).toEqual([
      'user',
      'assistant',
      'reasoning',
      'function_call',
      'reasoning',
      'function_call',
      'function_call_output',
      'function_call_output',
    ]);
  });

  it('fails the check when reasoning is left out (the check can fail)', async () => {
    server.reply((r) => r.thinking('plan').toolCall('shell', { command: 'ls' }, 'call_a'));
    const first = await collect(provider().stream({ model: 'gpt-test', messages: conversation, tools, reasoning: 'low' }));
    const reply = replyMessage(first);
    delete reply.meta?.reasoning;
    server.reply((r) => r.text('Done.'));
    await collect(provider().stream({ model: 'gpt-test', messages: [...conversation, reply, ...results(reply)], tools }));
    expect(checkThinkingReturned(server.requests[1]!, server.issued)).toHaveLength(1);
  });

  it('sends back only its own reasoning parts', async () => {
    const reply = createMessage('assistant', 'Hi.', {
      meta: {
        reasoning: [
          { api: 'anthropic', raw: { type: 'thinking', thinking: 'x', signature: 'sig' } },
          { api: 'openai-responses', raw: { id: 'rs_1', type: 'reasoning', summary: [], encrypted_content: 'enc' } },
        ],
      },
    });
    server.reply((r) => r.text('ok'));
    await collect(provider().stream({ model: 'gpt-test', messages: [...conversation, reply, createMessage('user', 'again')] }));
    expect(server.requests[0]?.body.input).toEqual([
      { role: 'user', content: 'Say hello.' },
      { id: 'rs_1', type: 'reasoning', summary: [], encrypted_content: 'enc' },
      { role: 'assistant', content: 'Hi.' },
      { role: 'user', content: 'again' },
    ]);
  });

  it('keeps the order of reasoning whose call is not replayed: with the next replayed call, else after the text', () => {
    const item = (n: number) => ({ id: `rs_${n}`, type: 'reasoning', summary: [], encrypted_content: `enc${n}` });
    const calls = [
      { id: 'call_a', name: 'shell', arguments: '{}' },
      { id: 'call_b', name: 'shell', arguments: '{}' },
    ];
    const reply = createMessage('assistant', 'Two.\n@shell(call_a): {}\n@shell(call_b): {}', {
      meta: {
        toolCalls: calls,
        reasoning: [
          { api: 'openai-responses', raw: item(1), beforeCall: 0 },
          { api: 'openai-responses', raw: item(2), beforeCall: 1 },
        ],
      },
    });
    const onlyB = createMessage('system', 'b ran', { callId: 'call_b', meta: { toolResult: true, tool: 'shell' } });
    const kinds = (messages: Message[]) =>
      toResponsesInput(messages, OPENAI_COMPAT.openai, true).input.map((entry) =>
        'type' in entry && entry.type !== 'message' ? `${entry.type}${'id' in entry && entry.id ? `:${entry.id}` : ''}` : (entry as { role: string }).role,
      );
    expect(kinds([reply, onlyB])).toEqual(['assistant', 'reasoning:rs_1', 'reasoning:rs_2', 'function_call', 'function_call_output']);
    expect(kinds([reply, createMessage('user', 'go on')])).toEqual(['assistant', 'reasoning:rs_1', 'reasoning:rs_2', 'user']);
    const shaped = toResponsesInput([reply, onlyB], OPENAI_COMPAT.openai, true).input;
    expect(shaped[1]).toBe(reply.meta?.reasoning?.[0]?.raw);
  });

  it('maps each --reasoning level to an effort the model takes', async () => {
    expect(reasoningEffort('medium', 'gpt-5')).toBe('medium');
    expect(reasoningEffort('off', 'gpt-5')).toBe('minimal');
    expect(reasoningEffort('off', 'gpt-5-mini')).toBe('minimal');
    expect(reasoningEffort('off', 'gpt-5.1')).toBe('none');
    expect(reasoningEffort('off', 'o4-mini')).toBe('low');
    server.reply((r) => r.text('ok'));
    await collect(provider().stream({ model: 'gpt-5', messages: conversation, reasoning: 'off' }));
    expect(server.requests[0]?.body.reasoning).toEqual({ effort: 'minimal' });
  });
});

describe('Responses adapter failures', () => {
  it('restarts a reply whose connection dropped after some text', async () => {
    server.reply((r) => r.text('partial').cut()).reply((r) => r.text('complete'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(types(events)).toEqual(['text', 'restart', 'retry', 'text', 'usage', 'done']);
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
    expect(server.requests).toHaveLength(2);
  });

  it('restarts when the connection dropped after reasoning only, so the lost item is dropped', async () => {
    server.reply((r) => r.redactedThinking('bG9zdA==').cut()).reply((r) => r.text('complete'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(types(events)).toEqual(['reasoning', 'restart', 'retry', 'text', 'usage', 'done']);
  });

  it('does not retry a 401 and says why', async () => {
    server.reply((r) => r.status(401, { message: 'invalid api key' }));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(events).toEqual([{ type: 'done', stopReason: 'error', error: 'HTTP 401 from openai: invalid api key', errorKind: 'auth' }]);
  });

  it('retries a 429 after the wait the server asked for', async () => {
    server.reply((r) => r.status(429, { retryAfter: 0, message: 'slow down' })).reply((r) => r.text('ok'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(events[0]).toEqual({ type: 'retry', attempt: 2, delayMs: 0, reason: 'HTTP 429 from openai: slow down' });
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });
  });

  it('retries a failed response (response.failed), then gives up with one line', async () => {
    server.reply((r) => r.streamError('server_error', 'The server had an error')).reply((r) => r.text('recovered'));
    const events = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(events[0]).toMatchObject({ type: 'retry', reason: 'openai stream error: server_error: The server had an error' });
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'end' });

    server.reply((r) => r.streamError('invalid_prompt', 'Bad prompt'));
    const failed = await collect(provider().stream({ model: 'gpt-test', messages: conversation }));
    expect(failed).toEqual([{ type: 'done', stopReason: 'error', error: 'openai stream error: invalid_prompt: Bad prompt' }]);
  });
});

describe('choosing the API', () => {
  function resolved(id: string): ResolvedModel {
    const result = resolveModel(id, { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: server.openaiBaseURL });
    if ('error' in result) throw new Error(result.error);
    return result;
  }
  const paths = () => server.requests.map((request) => request.path);
  const send = async (model: { provider: { stream: (request: StreamRequest) => AsyncIterable<StreamEvent> } }) => {
    server.reply((r) => r.text('ok'));
    await collect(model.provider.stream({ model: 'm', messages: conversation }));
  };

  it('speaks Responses to openai/ by default and Chat Completions to local/', async () => {
    await send({ provider: await createProvider(resolved('openai/gpt-test')) });
    await send({ provider: await createProvider(resolved('local/qwen')) });
    await send({ provider: await createProvider(resolved('local/qwen'), { api: 'responses' }) });
    expect(paths()).toEqual(['/v1/responses', '/v1/chat/completions', '/v1/responses']);
  });

  it('follows [providers.<name>] api from the configuration', async () => {
    const user = parseConfigText('[providers.openai]\napi = "chat"\n', 'config.toml');
    const project = parseConfigText('[providers.local]\napi = "responses"\n', 'fence.toml');
    if ('error' in user || 'error' in project) throw new Error('config refused');
    const { providers } = mergeConfigFiles(user.file, project.file);
    expect(providers).toEqual({ openai: { api: 'chat' }, local: { api: 'responses' } });
    await send(await loadAgentModel(resolved('openai/gpt-test'), {}, undefined, providers));
    await send(await loadAgentModel(resolved('local/qwen'), {}, undefined, providers));
    await send(await loadAgentModel(resolved('openai/gpt-test'), {}));
    expect(paths()).toEqual(['/v1/chat/completions', '/v1/responses', '/v1/responses']);
  });

  it('lets a project override the user key by key', () => {
    const user = parseConfigText('[providers.openai]\napi = "chat"\n', 'config.toml');
    const project = parseConfigText('[providers.openai]\napi = "responses"\n', 'fence.toml');
    if ('error' in user || 'error' in project) throw new Error('config refused');
    expect(mergeConfigFiles(user.file, project.file).providers).toEqual({ openai: { api: 'responses' } });
  });

  it.each([
    ['[providers.openai]\napi = "grpc"\n', 'config.toml: providers.openai.api: expected "responses" or "chat", got "grpc"'],
    ['[providers.openai]\nmode = "chat"\n', 'config.toml: providers.openai: unknown key "mode" (known keys: api)'],
    ['[providers.anthropic]\napi = "chat"\n', 'config.toml: providers: unknown key "anthropic" (known keys: openai, openrouter, local)'],
    ['providers = "chat"\n', 'config.toml: providers: expected a table, got "chat"'],
  ])('refuses a bad [providers] table with one line: %j', (text, error) => {
    expect(parseConfigText(text, 'config.toml')).toEqual({ error });
  });
});
