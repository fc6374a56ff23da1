import OpenAI from 'openai';
import type { ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkThinkingReturned, checkToolCallPairing, collect, startFakeLlm, type FakeLlm, type WireItem } from '../support/fake-llm';

let server: FakeLlm;
let client: OpenAI;
beforeEach(async () => {
  server = await startFakeLlm();
  client = new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'test', maxRetries: 0 });
});
afterEach(async () => {
  await server.close();
});

/** A stateless request as a frontier model is best run: encrypted reasoning back, summaries on. */
const stateless = {
  model: 'gpt-test',
  store: false,
  include: ['reasoning.encrypted_content' as const],
  reasoning: { effort: 'high' as const, summary: 'auto' as const },
};

const user = (text: string): ResponseInputItem => ({ role: 'user', content: text });

async function events(input: ResponseInputItem[] | string, options: Partial<typeof stateless> = stateless): Promise<ResponseStreamEvent[]> {
  return collect(await client.responses.create({ model: 'gpt-test', ...options, input, stream: true }));
}

describe('the fake model server, Responses API', () => {
  it('streams a text reply as the real event sequence, numbered from 0, and records the raw body', async () => {
    server.reply((r) => r.text('Hello ').text('world'));
    const stream = await events('Say hello.', { model: 'gpt-test' });
    expect(stream.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(stream.map((event) => event.sequence_number)).toEqual([...stream.keys()]);
    expect(stream.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)).toEqual(['Hello ', 'world']);
    const last = stream.at(-1);
    expect(last?.type === 'response.completed' && last.response).toMatchObject({
      status: 'completed',
      model: 'gpt-test',
      output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello world', annotations: [] }] }],
    });
    expect(server.requests[0]).toMatchObject({ path: '/v1/responses', format: 'responses', body: { model: 'gpt-test', input: 'Say hello.', stream: true } });
  });

  it("gives the SDK's stream helper a final response with the text", async () => {
    server.reply((r) => r.text('Hello ').text('world'));
    const stream = client.responses.stream({ model: 'gpt-test', input: [user('Say hello.')] });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (event) => deltas.push(event.snapshot));
    const response = await stream.finalResponse();
    expect(deltas).toEqual(['Hello ', 'Hello world']);
    expect(response).toMatchObject({ status: 'completed', output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello world' }] }] });
  });

  it('streams thinking as a reasoning item: the summary part by part, and encrypted content on the done item, issued', async () => {
    server.reply((r) => r.thinking('Read a.ts first.').toolCall('read', { path: 'a.ts' }, 'call_a'));
    const stream = await events([user('Fix a.ts.')]);
    const summary = stream.filter((event) => event.type.startsWith('response.reasoning_summary'));
    expect(summary.map((event) => event.type)).toEqual([
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
    ]);
    expect(summary.map((event) => ('delta' in event ? event.delta : '')).join('')).toBe('Read a.ts first.');
    const [issued] = server.issued;
    expect(server.issued).toEqual([{ request: 0, format: 'responses', kind: 'reasoning', value: issued?.value, itemId: 'rs_fake_0_0', before: 'call_a' }]);
    expect(issued?.value).toMatch(/^[A-Za-z0-9+/=]{8,}$/);
    const added = stream.find((event) => event.type === 'response.output_item.added');
    expect(added?.type === 'response.output_item.added' && added.item).toEqual({ id: 'rs_fake_0_0', type: 'reasoning', summary: [] });
    const done = stream.find((event) => event.type === 'response.output_item.done');
    expect(done?.type === 'response.output_item.done' && done.item).toEqual({
      id: 'rs_fake_0_0',
      type: 'reasoning',
      summary: [{ type: 'summary_text', text: 'Read a.ts first.' }],
      encrypted_content: issued?.value,
    });
  });

  it('sends no encrypted content and issues none unless asked in include, and no summary unless asked', async () => {
    server.reply((r) => r.thinking('Hidden.').text('Done.'));
    const response = await client.responses.stream({ model: 'gpt-test', input: [user('Go.')], reasoning: { effort: 'low' } }).finalResponse();
    expect(response.output[0]).toEqual({ id: 'rs_fake_0_0', type: 'reasoning', summary: [] });
    expect(server.issued).toEqual([]);
  });

  it('gives each thinking step its own encrypted content, and a redacted one its data', async () => {
    server.reply((r) => r.thinking('same').thinking('same').redactedThinking('opaque==').text('ok'));
    const response = await client.responses.stream({ ...stateless, input: [user('Go.')] }).finalResponse();
    const values = server.issued.map((state) => state.value);
    expect(new Set(values).size).toBe(3);
    expect(values[2]).toBe('opaque==');
    expect(response.output.map((item) => (item.type === 'reasoning' ? item.encrypted_content : item.type))).toEqual([...values, 'message']);
    expect(response.output[2]).toMatchObject({ type: 'reasoning', summary: [] });
  });

  it('streams two function calls in one reply, their arguments in deltas, after the text', async () => {
    server.reply((r) => r.text('Reading both.').toolCall('read', { path: 'a.ts' }, 'call_a').toolCall('read', { path: 'b.ts' }, 'call_b'));
    const stream = await events([user('Read a and b.')]);
    const deltas = stream.filter((event) => event.type === 'response.function_call_arguments.delta');
    expect(deltas.filter((event) => event.output_index === 1).map((event) => event.delta).join('')).toBe('{"path":"a.ts"}');
    const argsDone = stream.filter((event) => event.type === 'response.function_call_arguments.done');
    expect(argsDone.map((event) => [event.output_index, event.name, event.arguments])).toEqual([
      [1, 'read', '{"path":"a.ts"}'],
      [2, 'read', '{"path":"b.ts"}'],
    ]);
    const last = stream.at(-1);
    expect(last?.type === 'response.completed' && last.response.output).toEqual([
      expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: 'Reading both.' })] }),
      { id: 'fc_fake_0_1', type: 'function_call', status: 'completed', call_id: 'call_a', name: 'read', arguments: '{"path":"a.ts"}' },
      { id: 'fc_fake_0_2', type: 'function_call', status: 'completed', call_id: 'call_b', name: 'read', arguments: '{"path":"b.ts"}' },
    ]);
  });

  it('reports usage with cached tokens counted in the input and reasoning tokens in the output', async () => {
    server.reply((r) => r.text('ok').usage({ input: 100, cacheRead: 60, output: 40, reasoning: 30 }));
    const response = await client.responses.stream({ ...stateless, input: [user('Go.')] }).finalResponse();
    expect(response.usage).toEqual({
      input_tokens: 160,
      input_tokens_details: { cached_tokens: 60 },
      output_tokens: 40,
      output_tokens_details: { reasoning_tokens: 30 },
      total_tokens: 200,
    });
  });

  it('ends with response.incomplete when the reply hit its token limit', async () => {
    server.reply((r) => r.text('cut sh').stop('max_tokens'));
    const last = (await events([user('Go.')])).at(-1);
    expect(last?.type).toBe('response.incomplete');
    expect(last?.type === 'response.incomplete' && last.response).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      output: [{ type: 'message', status: 'incomplete' }],
    });
  });

  it('ends with response.failed, numbered next, for an in-stream error', async () => {
    server.reply((r) => r.text('partial').streamError('server_error', 'The model fell over.'));
    const stream = await events([user('Go.')]);
    const last = stream.at(-1);
    expect(last?.type).toBe('response.failed');
    expect(last?.sequence_number).toBe(stream.length - 1);
    expect(last?.type === 'response.failed' && last.response).toMatchObject({ status: 'failed', error: { code: 'server_error', message: 'The model fell over.' } });
  });

  it('answers an HTTP error in the OpenAI error body, which the SDK reads', async () => {
    server.reply((r) => r.status(429, { message: 'Slow down.', retryAfter: 0 }));
    const error = await client.responses.create({ ...stateless, input: [user('Go.')], stream: true }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error).toMatchObject({ status: 429, error: { message: 'Slow down.', type: 'rate_limit_exceeded' } });
  });

  it('breaks off mid-stream when cut, and the SDK sees no completed response', async () => {
    server.reply((r) => r.text('partial').cut());
    await expect(client.responses.stream({ ...stateless, input: [user('Go.')] }).finalResponse()).rejects.toThrow();
  });
});

describe('the fake Responses API checks the input like the real one', () => {
  const call: ResponseInputItem = { type: 'function_call', call_id: 'call_x', name: 'read', arguments: '{}' };
  const output: ResponseInputItem = { type: 'function_call_output', call_id: 'call_x', output: 'ok' };

  it('refuses with a 400 naming the call a function call without its output, records it, and keeps the queue', async () => {
    server.reply((r) => r.text('kept'));
    const error = await client.responses.create({ ...stateless, input: [user('Go.'), call], stream: true }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({
      status: 400,
      error: { message: 'No tool output found for function call call_x.', type: 'invalid_request_error', param: 'input', code: null },
    });
    expect(server.requests[0]?.body.input).toEqual([{ role: 'user', content: 'Go.' }, call]);
    expect(server.pending).toBe(1);
  });

  it('refuses a function call output without its call', async () => {
    const error = await client.responses.create({ ...stateless, input: [user('Go.'), output], stream: true }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 400, error: { message: 'No tool call found for function call output with call_id call_x.' } });
  });

  it('refuses to send encrypted reasoning for a model that does not reason, and takes it for one that does', async () => {
    const asked = { ...stateless, include: ['reasoning.encrypted_content' as const], input: [user('Go.')], stream: true as const };
    const error = await client.responses.create({ ...asked, model: 'gpt-4o' }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 400, error: { message: 'Encrypted content is not supported with this model.', param: 'include' } });
    server.reply((r) => r.text('ok'));
    const stream = await client.responses.create({ ...asked, model: 'gpt-5' });
    for await (const _event of stream) void _event;
    expect(server.requests.at(-1)?.body.model).toBe('gpt-5');
  });

  it('refuses a reasoning item without its encrypted content when nothing is stored', async () => {
    const bare: ResponseInputItem = { id: 'rs_1', type: 'reasoning', summary: [] };
    const error = await client.responses.create({ ...stateless, input: [user('Go.'), bare], stream: true }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 400, error: { message: expect.stringContaining("Item with id 'rs_1' not found"), param: 'input' } });
  });

  it('accepts a call followed by its output', async () => {
    server.reply((r) => r.text('ok'));
    await expect(events([user('Go.'), call, output])).resolves.toContainEqual(expect.objectContaining({ type: 'response.completed' }));
  });
});

describe('checkThinkingReturned, Responses', () => {
  /** Runs a first turn that thinks then calls two tools, and returns the input of a correct next turn. */
  async function firstTurn(): Promise<WireItem[]> {
    server.reply((r) => r.thinking('Read both.').toolCall('read', { path: 'a.ts' }, 'call_a').thinking('And b.').toolCall('read', { path: 'b.ts' }, 'call_b'));
    const response = await client.responses.stream({ ...stateless, input: [user('Read a and b.')] }).finalResponse();
    const outputs = ['call_a', 'call_b'].map((id) => ({ type: 'function_call_output', call_id: id, output: 'text' }));
    return [{ role: 'user', content: 'Read a and b.' }, ...(response.output as WireItem[]), ...outputs];
  }

  it('passes for a follow-up request that sends every reasoning item back in place, which the server accepts', async () => {
    const input = await firstTurn();
    server.reply((r) => r.text('Both read.'));
    await events(input as ResponseInputItem[]);
    expect(server.requests[1]?.scripted).toBe(true);
    expect(server.issued.map((state) => state.before)).toEqual(['call_a', 'call_b']);
    expect(checkThinkingReturned(server.requests[1]!, server.issued)).toEqual([]);
    expect(checkToolCallPairing(server.requests[1]!)).toEqual([]);
  });

  it('fails for encrypted content changed by one character', async () => {
    const input = await firstTurn();
    const reasoning = input.find((item) => item.type === 'reasoning')!;
    reasoning.encrypted_content = `${reasoning.encrypted_content!.slice(0, -1)}#`;
    expect(checkThinkingReturned({ body: { input } }, server.issued)).toEqual([expect.stringMatching(/^reasoning .* \(reply 0\) did not come back unchanged$/)]);
  });

  it('fails for a reasoning item moved after its function call', async () => {
    const input = await firstTurn();
    const [reasoning] = input.splice(1, 1);
    input.splice(2, 0, reasoning!);
    expect(checkThinkingReturned({ body: { input } }, server.issued)).toEqual([expect.stringMatching(/^reasoning .* \(reply 0\) comes after function call call_a$/)]);
  });

  it('fails for two reasoning items of one reply swapped', async () => {
    server.reply((r) => r.thinking('First.').thinking('Second.').toolCall('read', { path: 'a.ts' }, 'call_a'));
    const response = await client.responses.stream({ ...stateless, input: [user('Go.')] }).finalResponse();
    const [first, second, call] = response.output as WireItem[];
    const output = { type: 'function_call_output', call_id: 'call_a', output: 'text' };
    expect(checkThinkingReturned({ body: { input: [first!, second!, call!, output] } }, server.issued)).toEqual([]);
    expect(checkThinkingReturned({ body: { input: [second!, first!, call!, output] } }, server.issued)).toEqual([expect.stringMatching(/came back out of order$/)]);
  });

  it('fails for a reasoning item cut off from its call by another turn', async () => {
    const input = await firstTurn();
    input.splice(2, 0, { role: 'user', content: 'Wait.' });
    expect(checkThinkingReturned({ body: { input } }, server.issued)).toEqual([expect.stringMatching(/is separated from function call call_a by a message item$/)]);
  });

  it('fails for reasoning left out', async () => {
    const input = (await firstTurn()).filter((item) => item.type !== 'reasoning');
    expect(checkThinkingReturned({ body: { input } }, server.issued)).toHaveLength(2);
  });
});
