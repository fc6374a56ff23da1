import { describe, expect, it } from 'vitest';
import { checkToolCallPairing, startFakeLlm, type RecordedRequest, type WireMessage } from '../support/fake-llm';

const recorded = (messages: WireMessage[]): RecordedRequest => ({
  method: 'POST',
  path: '/v1/chat/completions',
  format: 'openai',
  headers: {},
  body: { messages },
  scripted: true,
  receivedAt: 0,
  arrivedAt: 0,
});

describe('the fake model server', () => {
  it('answers an unscripted request with a plain text reply and records it as unscripted', async () => {
    const server = await startFakeLlm();
    try {
      const response = await fetch(`${server.openaiBaseURL}/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', stream: true }),
      });
      expect(await response.text()).toContain('(no scripted reply)');
      expect(server.requests[0]).toMatchObject({ format: 'openai', scripted: false });
    } finally {
      await server.close();
    }
  });

  it('refuses with a 400, as the real APIs do, a request whose tool calls are not each answered', async () => {
    const server = await startFakeLlm();
    try {
      server.reply((r) => r.text('kept for the next valid request'));
      const messages = [{ role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }] }];
      const response = await fetch(`${server.openaiBaseURL}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'm', stream: true, messages }) });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { message: 'invalid tool calls: tool call a has 0 results' } });
      expect(server.pending).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('records a client that left a reply before its end, and not one that read it whole or was cut', async () => {
    const server = await startFakeLlm();
    const ask = (signal?: AbortSignal) =>
      fetch(`${server.openaiBaseURL}/responses`, { method: 'POST', body: JSON.stringify({ model: 'm', stream: true }), ...(signal ? { signal } : {}) });
    try {
      server.reply((r) => r.text('whole'));
      await (await ask()).text();
      server.reply((r) => r.text('cut').cut());
      await ask().then((response) => response.text()).catch(() => undefined);
      server.reply((r) => r.text('left').hang());
      const controller = new AbortController();
      const reader = (await ask(controller.signal)).body!.getReader();
      await reader.read();
      controller.abort();
      await server.responseClosed(0);
      await server.responseClosed(1);
      await server.responseClosed(2);
      expect(server.requests.map((request) => request.leftEarly)).toEqual([undefined, undefined, true]);
    } finally {
      await server.close();
    }
  });

  it('closes promptly with a hung stream still open', async () => {
    const server = await startFakeLlm();
    server.reply((r) => r.text('never ends').hang());
    const response = await fetch(`${server.anthropicBaseURL}/v1/messages`, { method: 'POST', body: JSON.stringify({ stream: true }) });
    const reader = response.body!.getReader();
    await reader.read();
    await server.close();
    await expect(server.responseClosed(0)).resolves.toBeUndefined();
    await expect(reader.read().then(() => reader.read())).rejects.toThrow();
  });
});

describe('checkToolCallPairing', () => {
  it('accepts calls each answered once, in both formats', () => {
    const openai = recorded([
      { role: 'assistant', tool_calls: [{ id: 'a', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'a', content: 'ok' },
    ]);
    const anthropic = recorded([
      { role: 'assistant', content: [{ type: 'tool_use', id: 'b', name: 'f', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'b' }] },
    ]);
    expect(checkToolCallPairing(openai)).toEqual([]);
    expect(checkToolCallPairing(anthropic)).toEqual([]);
  });

  it('reports calls without results, results without calls, and double results', () => {
    const request = recorded([
      { role: 'tool', tool_call_id: 'early', content: '' },
      { role: 'assistant', tool_calls: [{ id: 'a', function: { name: 'f', arguments: '{}' } }, { id: 'b', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'b', content: '' },
      { role: 'tool', tool_call_id: 'b', content: '' },
    ]);
    expect(checkToolCallPairing(request)).toEqual(['result for early has no call before it', 'tool call a has 0 results', 'tool call b has 2 results']);
  });

  it('reads the function calls and outputs of a Responses input the same way', () => {
    const call = (id: string) => ({ type: 'function_call', call_id: id, name: 'f', arguments: '{}' });
    const output = (id: string) => ({ type: 'function_call_output', call_id: id, output: 'ok' });
    const paired = { body: { input: [{ role: 'user', content: 'go' }, { type: 'reasoning', summary: [] }, call('a'), call('b'), output('a'), output('b')] } };
    expect(checkToolCallPairing(paired)).toEqual([]);
    const unpaired = { body: { input: [output('early'), call('a'), call('b'), output('b'), output('b')] } };
    expect(checkToolCallPairing(unpaired)).toEqual(['result for early has no call before it', 'tool call a has 0 results', 'tool call b has 2 results']);
  });
});
