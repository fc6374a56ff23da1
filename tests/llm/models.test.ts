import { describe, expect, it } from 'vitest';
import { OPENROUTER_BASE_URL, resolveModel } from '../../src/llm/models';

describe('resolveModel', () => {
  it('picks the default of the first key present: Anthropic, then OpenAI, then OpenRouter', () => {
    expect(resolveModel(undefined, { OPENROUTER_API_KEY: 'r', OPENAI_API_KEY: 'o', ANTHROPIC_API_KEY: 'a' })).toEqual({
      id: 'anthropic/claude-sonnet-4-6',
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      apiKey: 'a',
      keySource: { variable: 'ANTHROPIC_API_KEY', set: true },
      defaulted: true,
    });
    expect(resolveModel(undefined, { OPENROUTER_API_KEY: 'r', OPENAI_API_KEY: 'o' })).toMatchObject({ id: 'openai/gpt-5', apiKey: 'o', defaulted: true });
    expect(resolveModel('', { OPENROUTER_API_KEY: 'r' })).toEqual({
      id: 'openrouter/anthropic/claude-sonnet-4.6',
      provider: 'openrouter',
      model: 'anthropic/claude-sonnet-4.6',
      apiKey: 'r',
      keySource: { variable: 'OPENROUTER_API_KEY', set: true },
      baseURL: OPENROUTER_BASE_URL,
      defaulted: true,
    });
  });

  it('treats empty variables as unset', () => {
    expect(resolveModel(undefined, { ANTHROPIC_API_KEY: '  ', OPENAI_API_KEY: 'o' })).toMatchObject({ provider: 'openai' });
  });

  it('says how to configure when there is no key at all', () => {
    expect(resolveModel(undefined, {})).toEqual({
      error: 'no API key: set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY, or point OPENAI_BASE_URL at a local server and use -m local/<model>',
    });
  });

  it('asks for -m local/<model> when only OPENAI_BASE_URL is set', () => {
    const result = resolveModel(undefined, { OPENAI_BASE_URL: 'http://localhost:11434/v1' });
    expect(result).toHaveProperty('error');
    expect('error' in result && result.error).toContain('-m local/<model>');
  });

  it('names the accepted prefixes for an id without one, or with an unknown one, and marks the id as bad', () => {
    for (const id of ['gpt-5', 'mistral/large', 'openai/']) {
      const result = resolveModel(id, { OPENAI_API_KEY: 'o' });
      expect('error' in result && result.error).toContain('openai/<model>, anthropic/<model>, openrouter/<vendor>/<model> or local/<model>');
      expect(result).toMatchObject({ badId: true });
    }
  });

  it('refuses an id with a space or a line break inside, as a paste of two lines gives', () => {
    for (const id of ['openai/gpt-5\n/reasoning', 'openai/gpt 5', 'local/qwen3\tx']) {
      const result = resolveModel(id, { OPENAI_API_KEY: 'o', OPENAI_BASE_URL: 'http://localhost:1/v1' });
      expect('error' in result && result.error, JSON.stringify(id)).toContain('holds a space or a line break');
      expect(result).toMatchObject({ badId: true });
    }
    // Around it, spaces are only trimmed.
    expect(resolveModel('  openai/gpt-5  ', { OPENAI_API_KEY: 'o' })).not.toHaveProperty('error');
  });

  it('needs the provider key, or a base URL for a compatible server', () => {
    const missing = resolveModel('anthropic/claude-opus-4-1', { OPENAI_API_KEY: 'o' });
    expect(missing).toEqual({ error: 'no API key for anthropic/claude-opus-4-1: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a compatible server)' });
    expect(resolveModel('openrouter/x/y', {})).toEqual({ error: 'no API key for openrouter/x/y: set OPENROUTER_API_KEY' });
    expect(resolveModel('openai/gpt-5', { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' })).toEqual({
      id: 'openai/gpt-5',
      provider: 'openai',
      model: 'gpt-5',
      apiKey: 'local',
      keySource: { variable: 'OPENAI_API_KEY', set: false },
      baseURL: 'http://127.0.0.1:9/v1',
    });
    expect(resolveModel('anthropic/claude-x', { ANTHROPIC_API_KEY: 'a', ANTHROPIC_BASE_URL: 'http://proxy' })).toMatchObject({
      apiKey: 'a',
      keySource: { variable: 'ANTHROPIC_API_KEY', set: true },
      baseURL: 'http://proxy',
    });
    expect(resolveModel('local/q', { OPENAI_API_KEY: 'o', OPENAI_BASE_URL: 'http://x/v1' })).toMatchObject({ apiKey: 'o', keySource: { variable: 'OPENAI_API_KEY', set: true } });
  });

  it('resolves local/<model> with only OPENAI_BASE_URL, and refuses it without', () => {
    expect(resolveModel('local/qwen2.5-coder:7b', { OPENAI_BASE_URL: 'http://localhost:11434/v1' })).toEqual({
      id: 'local/qwen2.5-coder:7b',
      provider: 'local',
      model: 'qwen2.5-coder:7b',
      apiKey: 'local',
      keySource: { variable: 'OPENAI_API_KEY', set: false },
      baseURL: 'http://localhost:11434/v1',
    });
    const refused = resolveModel('local/qwen', { OPENAI_API_KEY: 'o' });
    expect('error' in refused && refused.error).toContain('OPENAI_BASE_URL');
  });

  it('keeps the vendor in OpenRouter model names', () => {
    expect(resolveModel('openrouter/meta-llama/llama-3.3-70b-instruct', { OPENROUTER_API_KEY: 'r' })).toMatchObject({
      provider: 'openrouter',
      model: 'meta-llama/llama-3.3-70b-instruct',
    });
  });
});
