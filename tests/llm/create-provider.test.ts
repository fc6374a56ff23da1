import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMessage } from '../../src/conversation/message';
import { createProvider } from '../../src/llm/create-provider';
import { resolveModel, type ResolvedModel } from '../../src/llm/models';
import type { Provider } from '../../src/llm/provider';
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

describe('a refused key', () => {
  const messages = [createMessage('user', 'hi')];
  const ending = async (provider: Provider) => (await collect(provider.stream({ model: 'm', messages }))).at(-1);

  it.each([
    { id: 'anthropic/claude-test', env: () => ({ ANTHROPIC_API_KEY: 'bad', ANTHROPIC_BASE_URL: server.anthropicBaseURL }), variable: 'ANTHROPIC_API_KEY' },
    { id: 'openai/gpt-test', env: () => ({ OPENAI_API_KEY: 'bad', OPENAI_BASE_URL: server.openaiBaseURL }), variable: 'OPENAI_API_KEY' },
    { id: 'openrouter/x/y', env: () => ({ OPENROUTER_API_KEY: 'bad', OPENROUTER_BASE_URL: server.openaiBaseURL }), variable: 'OPENROUTER_API_KEY' },
    { id: 'local/qwen', env: () => ({ OPENAI_API_KEY: 'bad', OPENAI_BASE_URL: server.openaiBaseURL }), variable: 'OPENAI_API_KEY' },
  ])('names the variable that holds the key of $id', async ({ id, env, variable }) => {
    server.reply((r) => r.status(401, { message: 'invalid api key' })).reply((r) => r.status(403, { message: 'not allowed' }));
    const provider = await createProvider(resolved(id, env()));
    expect(await ending(provider)).toEqual({
      type: 'done',
      stopReason: 'error',
      error: expect.stringMatching(new RegExp(`^HTTP 401 from .+: invalid api key \\(check ${variable}\\)$`)),
      errorKind: 'auth',
    });
    expect(await ending(provider)).toMatchObject({ error: `HTTP 403 from ${provider.name}: not allowed (check ${variable})`, errorKind: 'auth' });
  });

  it('says which variable to set when no key was sent to a server that wants one', async () => {
    server.reply((r) => r.status(401, { message: 'missing key' }));
    const provider = await createProvider(resolved('local/qwen', { OPENAI_BASE_URL: server.openaiBaseURL }));
    expect(await ending(provider)).toMatchObject({ error: 'HTTP 401 from local: missing key (no key was sent: set OPENAI_API_KEY)' });
  });

  it('leaves other failures as they are', async () => {
    server.reply((r) => r.status(400, { message: 'bad request' }));
    const provider = await createProvider(resolved('local/qwen', { OPENAI_BASE_URL: server.openaiBaseURL }));
    expect(await ending(provider)).toEqual({ type: 'done', stopReason: 'error', error: 'HTTP 400 from local: bad request' });
  });
});
