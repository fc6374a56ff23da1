import Anthropic from '@anthropic-ai/sdk';
import type { ContentBlockParam, MessageParam, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkThinkingReturned, collect, startFakeLlm, type FakeLlm, type WireMessage } from '../support/fake-llm';

let server: FakeLlm;
let anthropic: Anthropic;
beforeEach(async () => {
  server = await startFakeLlm();
  anthropic = new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'test', maxRetries: 0 });
});
afterEach(async () => {
  await server.close();
});

const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
const ask: MessageParam = { role: 'user', content: 'Fix a.ts.' };

/** Streams one request with thinking on, and returns the SDK's events and final message. */
async function turn(messages: MessageParam[]) {
  const stream = anthropic.messages.stream({ model: 'claude-test', max_tokens: 4096, thinking, messages });
  const events: RawMessageStreamEvent[] = [];
  stream.on('streamEvent', (event) => events.push(event));
  return { message: await stream.finalMessage(), events };
}

/** The messages of a correct next turn: the assistant's content as received, then the tool's result. */
function followUp(content: ContentBlockParam[], callId = 'toolu_1'): MessageParam[] {
  return [ask, { role: 'assistant', content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: callId, content: 'text' }] }];
}

describe('the fake model server, Anthropic thinking', () => {
  it("streams thinking then one signature, and a redacted block whole, into the SDK's final message", async () => {
    server.reply((r) => r.thinking('Look at a.ts first.').redactedThinking('RkFLRQ==').toolCall('read', { path: 'a.ts' }, 'toolu_1'));
    const { message, events } = await turn([ask]);
    const signature = server.issued[0]?.value;
    expect(signature).toMatch(/^[A-Za-z0-9+/=]{8,}$/);
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'Look at a.ts first.', signature },
      { type: 'redacted_thinking', data: 'RkFLRQ==' },
      { type: 'tool_use', id: 'toolu_1', name: 'read', input: { path: 'a.ts' } },
    ]);
    const deltas = events.flatMap((event) => (event.type === 'content_block_delta' && event.index === 0 ? [event.delta.type] : []));
    expect(deltas).toEqual(['thinking_delta', 'thinking_delta', 'signature_delta']);
    const starts = events.flatMap((event) => (event.type === 'content_block_start' ? [event.content_block] : []));
    expect(starts.slice(0, 2)).toEqual([
      { type: 'thinking', thinking: '', signature: '' },
      { type: 'redacted_thinking', data: 'RkFLRQ==' },
    ]);
    expect(server.requests[0]?.body.thinking).toEqual(thinking);
  });

  it('records each signature and redacted block it issued, with the call it preceded', async () => {
    server.reply((r) => r.thinking('Plan.', 'sig-given').redactedThinking('RkFLRQ==').toolCall('read', { path: 'a.ts' }, 'toolu_1'));
    server.reply((r) => r.thinking('Nothing to call.').text('Done.'));
    await turn([ask]);
    await turn(followUp([{ type: 'thinking', thinking: 'Plan.', signature: 'sig-given' }, { type: 'redacted_thinking', data: 'RkFLRQ==' }, { type: 'tool_use', id: 'toolu_1', name: 'read', input: {} }]));
    expect(server.issued).toEqual([
      { request: 0, format: 'anthropic', kind: 'thinking', value: 'sig-given', text: 'Plan.', before: 'toolu_1' },
      { request: 0, format: 'anthropic', kind: 'redacted_thinking', value: 'RkFLRQ==', before: 'toolu_1' },
      { request: 1, format: 'anthropic', kind: 'thinking', value: expect.any(String), text: 'Nothing to call.' },
    ]);
  });
});

describe('checkThinkingReturned, Anthropic', () => {
  /** A first turn that thinks twice, redacted once, then calls a tool; returns its content as the SDK gave it. */
  async function firstTurn(): Promise<ContentBlockParam[]> {
    server.reply((r) => r.thinking('First.').redactedThinking('RkFLRQ==').thinking('Second.').toolCall('read', { path: 'a.ts' }, 'toolu_1'));
    const { message } = await turn([ask]);
    return message.content as ContentBlockParam[];
  }

  const body = (messages: MessageParam[]) => ({ body: { messages: messages as WireMessage[] } });

  it('passes for the next turn sending the blocks back as received, which the server accepts', async () => {
    const content = await firstTurn();
    server.reply((r) => r.text('Read.'));
    await turn(followUp(content));
    expect(server.requests[1]?.scripted).toBe(true);
    expect(checkThinkingReturned(server.requests[1]!, server.issued)).toEqual([]);
  });

  it('fails for a signature changed by one character', async () => {
    const content = await firstTurn();
    const block = content[0] as { signature: string };
    block.signature = `${block.signature.slice(0, -1)}#`;
    expect(checkThinkingReturned(body(followUp(content)), server.issued)).toEqual([expect.stringMatching(/^thinking .* \(reply 0\) did not come back unchanged$/)]);
  });

  it('fails for thinking text changed under an intact signature, and for redacted data changed', async () => {
    const content = await firstTurn();
    (content[2] as { thinking: string }).thinking = 'Second!';
    (content[1] as { data: string }).data = 'RkFLRQ';
    expect(checkThinkingReturned(body(followUp(content)), server.issued)).toEqual([
      expect.stringMatching(/^redacted_thinking RkFLRQ== \(reply 0\) did not come back unchanged$/),
      expect.stringMatching(/^thinking .* did not come back unchanged$/),
    ]);
  });

  it('fails for blocks of one reply swapped', async () => {
    const [first, redacted, second, call] = await firstTurn();
    expect(checkThinkingReturned(body(followUp([second!, redacted!, first!, call!])), server.issued)).toEqual([
      expect.stringMatching(/^thinking .* and redacted_thinking RkFLRQ== \(reply 0\) came back out of order$/),
      expect.stringMatching(/^redacted_thinking RkFLRQ== \(reply 0\) and thinking .* came back out of order$/),
    ]);
    expect(checkThinkingReturned(body(followUp([redacted!, first!, second!, call!])), server.issued)).toHaveLength(1);
  });

  it('fails for a thinking block after its tool_use, or in another message', async () => {
    const [first, redacted, second, call] = await firstTurn();
    expect(checkThinkingReturned(body(followUp([first!, redacted!, call!, second!])), server.issued)).toEqual([
      expect.stringMatching(/^thinking .* comes after tool call toolu_1$/),
    ]);
    const split: MessageParam[] = [ask, { role: 'assistant', content: [first!] }, ...followUp([redacted!, second!, call!]).slice(1)];
    expect(checkThinkingReturned(body(split), server.issued)).toEqual([expect.stringMatching(/^thinking .* is not in the assistant message with tool call toolu_1$/)]);
  });

  it('fails for thinking left out', async () => {
    const content = (await firstTurn()).filter((block) => block.type === 'tool_use');
    expect(checkThinkingReturned(body(followUp(content)), server.issued)).toHaveLength(3);
  });
});

describe('the fake model server, thinking in Chat Completions', () => {
  it('sends thinking as reasoning_content deltas, leaves redacted thinking out, and reports reasoning tokens', async () => {
    server.reply((r) => r.thinking('Hmm.').redactedThinking('RkFLRQ==').text('Hi').usage({ output: 9, reasoning: 4 }));
    const openai = new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'test', maxRetries: 0 });
    const chunks = await collect(
      await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true, stream_options: { include_usage: true } }),
    );
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta as Record<string, unknown>));
    expect(deltas.flatMap((delta) => (typeof delta.reasoning_content === 'string' ? [delta.reasoning_content] : [])).join('')).toBe('Hmm.');
    expect(JSON.stringify(chunks)).not.toContain('RkFLRQ==');
    expect(deltas.map((delta) => delta.content ?? '').join('')).toBe('Hi');
    expect(chunks.at(-1)?.usage?.completion_tokens_details).toEqual({ reasoning_tokens: 4 });
    expect(server.issued).toEqual([]);
  });
});
