import { describe, expect, it } from 'vitest';
import { createMessage } from '../../src/conversation/message';
import { describeFailure, parseRetryAfter } from '../../src/llm/failure';
import type { StreamEvent } from '../../src/llm/provider';
import { backoffDelay, streamWithRetries, type AttemptEvent } from '../../src/llm/retry';
import { collect } from '../support/fake-llm';

const request = { model: 'm', messages: [createMessage('user', 'hi')] };

describe('backoffDelay', () => {
  it('doubles from the base delay, jittered by a quarter either way, and is capped', () => {
    const options = { baseDelayMs: 1000, maxDelayMs: 30_000 };
    expect([1, 2, 3, 4].map((retry) => backoffDelay(retry, options, () => 0.5))).toEqual([1000, 2000, 4000, 8000]);
    expect(backoffDelay(1, options, () => 0)).toBe(750);
    expect(backoffDelay(1, options, () => 0.999_999)).toBe(1250);
    expect(backoffDelay(10, options, () => 0.5)).toBe(30_000);
  });
});

describe('parseRetryAfter', () => {
  it('prefers retry-after-ms, reads seconds and HTTP dates, ignores nonsense', () => {
    expect(parseRetryAfter('250', '9')).toBe(250);
    expect(parseRetryAfter(undefined, '2')).toBe(2000);
    expect(parseRetryAfter(undefined, '0.5')).toBe(500);
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter(undefined, 'Wed, 01 Jan 2025 00:00:03 GMT', now)).toBe(3000);
    expect(parseRetryAfter(undefined, 'soon')).toBeUndefined();
    expect(parseRetryAfter('-1', undefined)).toBeUndefined();
    expect(parseRetryAfter(undefined, undefined)).toBeUndefined();
  });
});

describe('describeFailure', () => {
  const headers = (values: Record<string, string>) => new Headers(values);

  it('retries 408, 409, 429 and 5xx but no other 4xx', () => {
    for (const status of [408, 409, 429, 500, 502, 529]) expect(describeFailure({ status, headers: headers({}) }, 'x').retryable).toBe(true);
    for (const status of [400, 401, 403, 404, 422]) expect(describeFailure({ status, headers: headers({}) }, 'x').retryable).toBe(false);
  });

  it('tells a refused key and a rate limit apart from other failures', () => {
    expect(describeFailure({ status: 401, headers: headers({}) }, 'openai').kind).toBe('auth');
    expect(describeFailure({ status: 403, headers: headers({}) }, 'anthropic').kind).toBe('auth');
    expect(describeFailure({ status: 429, headers: headers({}) }, 'openai').kind).toBe('rate_limited');
    expect(describeFailure({ status: 500, headers: headers({}) }, 'openai').kind).toBeUndefined();
    expect(describeFailure({ error: { type: 'rate_limit_error' } }, 'anthropic').kind).toBe('rate_limited');
  });

  it('lets x-should-retry decide, and does not retry an exhausted quota', () => {
    expect(describeFailure({ status: 400, headers: headers({ 'x-should-retry': 'true' }) }, 'x').retryable).toBe(true);
    expect(describeFailure({ status: 503, headers: headers({ 'x-should-retry': 'false' }) }, 'x').retryable).toBe(false);
    const quota = describeFailure({ status: 429, headers: headers({}), error: { message: 'You exceeded your current quota', code: 'insufficient_quota' } }, 'openai');
    expect(quota).toEqual({ message: 'HTTP 429 from openai: You exceeded your current quota', retryable: false, connection: false });
  });

  it('reads the retry-after headers', () => {
    expect(describeFailure({ status: 429, headers: headers({ 'retry-after': '3' }) }, 'x').retryAfterMs).toBe(3000);
  });

  it('treats socket errors as connection failures, except an unknown host', () => {
    const refused = describeFailure(new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }) }), 'local');
    expect(refused).toEqual({ message: 'connection to local failed: connect ECONNREFUSED 127.0.0.1:9', retryable: true, connection: true });
    expect(describeFailure(new Error('socket hang up'), 'x')).toMatchObject({ retryable: true, connection: true });
    const unknownHost = describeFailure(new TypeError('fetch failed', { cause: Object.assign(new Error('getaddrinfo ENOTFOUND nowhere'), { code: 'ENOTFOUND' }) }), 'openai');
    expect(unknownHost).toEqual({ message: 'cannot reach openai: getaddrinfo ENOTFOUND nowhere', retryable: false, connection: true });
  });

  it('keeps messages on one short line', () => {
    const failure = describeFailure(new Error(`line one\nline two ${'x'.repeat(500)}`), 'x');
    expect(failure.message).not.toContain('\n');
    expect(failure.message.length).toBeLessThanOrEqual(300);
    expect(failure.retryable).toBe(false);
  });
});

describe('streamWithRetries', () => {
  const failing = (error: unknown) =>
    async function* (): AsyncGenerator<AttemptEvent> {
      yield* [];
      throw error;
    };

  it('ends a long backoff wait at once when aborted', async () => {
    const controller = new AbortController();
    const events: StreamEvent[] = [];
    const attempt = failing(Object.assign(new Error('reset'), { code: 'ECONNRESET' }));
    for await (const event of streamWithRetries('x', { ...request, signal: controller.signal }, attempt, { baseDelayMs: 600_000, maxDelayMs: 600_000 })) {
      events.push(event);
      if (event.type === 'retry') controller.abort();
    }
    expect(events.map((event) => event.type)).toEqual(['retry', 'done']);
    expect(events.at(-1)).toEqual({ type: 'done', stopReason: 'aborted' });
  });

  it('never throws, whatever the attempt throws', async () => {
    const events = await collect(streamWithRetries('x', request, failing('a plain string'), { maxAttempts: 1 }));
    expect(events).toEqual([{ type: 'done', stopReason: 'error', error: 'x: a plain string' }]);
    const broken = () => {
      throw new Error('cannot build the request');
    };
    expect(await collect(streamWithRetries('x', request, broken))).toEqual([{ type: 'done', stopReason: 'error', error: 'x: cannot build the request' }]);
  });

  it('estimates usage when a finished reply reported none', async () => {
    async function* quiet(): AsyncGenerator<AttemptEvent> {
      yield { type: 'text', text: 'eight ch' };
      yield { type: 'finish', stopReason: 'end' };
    }
    expect(await collect(streamWithRetries('x', request, quiet))).toEqual([
      { type: 'text', text: 'eight ch' },
      { type: 'usage', usage: { inputTokens: 1, outputTokens: 2, estimated: true } },
      { type: 'done', stopReason: 'end' },
    ]);
  });
});
