import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMessage } from '../../src/conversation/message';
import { createProvider } from '../../src/llm/create-provider';
import { resolveModel, type ResolvedModel } from '../../src/llm/models';
import { collect, startFakeLlm, type FakeLlm } from '../support/fake-llm';

let server: FakeLlm;
beforeEach(async () => {
  server = await startFakeLlm();
});
afterEach(async () => {
  await server.close();
});

function resolved(id: string, env: NodeJS.ProcessEnv): ResolvedModel {
  const result = resolveModel(id, env);
  if ('error' in result) throw new Error(result.error);
  return result;
}

describe('createProvider', () => {
  it('creates the adapter of each provider from a resolved model', async () => {
    const local = await createProvider(resolved('local/qwen', { OPENAI_BASE_URL: server.openaiBaseURL }));
    const anthropic = await createProvider(resolved('anthropic/claude-test', { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: server.anthropicBaseURL }));
    expect([local.name, anthropic.name]).toEqual(['local', 'anthropic']);

    server.reply((r) => r.text('from local')).reply((r) => r.text('from anthropic'));
    const messages = [createMessage('user', 'hi')];
    const texts = async (events: AsyncIterable<{ type: string; text?: string }>) =>
      (await collect(events)).flatMap((event) => (event.type === 'text' ? [event.text] : []));
    expect(await texts(local.stream({ model: 'qwen', messages }))).toEqual(['from local']);
    expect(await texts(anthropic.stream({ model: 'claude-test', messages }))).toEqual(['from anthropic']);
    expect(server.requests.map((request) => [request.format, request.body.model, request.headers.authorization])).toEqual([
      ['openai', 'qwen', 'Bearer local'],
      ['anthropic', 'claude-test', 'Bearer k'],
    ]);
  });
});
