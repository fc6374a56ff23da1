import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/agent/agent';
import { createStreamJsonWriter, jsonResult, usageTotals, type RunSummary } from '../../src/cli/output-format';
import { createMessage } from '../../src/conversation/message';
import { createProgressRenderer } from '../../src/tui/progress-renderer';

/** The lines a stream-json writer wrote for `events`, parsed. */
function streamJson(events: readonly AgentEvent[], reasoning?: string): Record<string, unknown>[] {
  const raw: string[] = [];
  const writer = createStreamJsonWriter((line) => raw.push(line));
  writer.start({ session_id: 's1', model: 'openai/gpt-5', tool_format: 'markdown', tools: ['shell'], cwd: '/repo', sandbox: 'off', ...(reasoning ? { reasoning } : {}) });
  for (const event of events) writer.event(event);
  writer.result({ result: 'Done.', session_id: 's1', stop_reason: 'done', is_error: false, turns: 1, usage: usageTotals([]), cost_usd: null, duration_ms: 1 });
  return raw.map((line) => JSON.parse(line) as Record<string, unknown>);
}

const reply = (text: string, reasoningTokens?: number) =>
  createMessage('assistant', text, { meta: { usage: { inputTokens: 10, outputTokens: 40, ...(reasoningTokens ? { reasoningTokens } : {}) }, stopReason: 'end' } });

describe('thinking in stream-json', () => {
  it('writes the thinking of a reply as one line before its assistant line, and the level in init', () => {
    const lines = streamJson(
      [
        { type: 'turn', turn: 1 },
        { type: 'thinking', text: 'Let me ' },
        { type: 'thinking', text: 'count.' },
        { type: 'text', text: 'Done.' },
        { type: 'reply_end', message: reply('Done.', 25) },
      ],
      'high',
    );
    expect(lines.map((line) => line.type)).toEqual(['init', 'thinking', 'assistant', 'result']);
    expect(lines[0]).toMatchObject({ reasoning: 'high' });
    expect(lines[1]).toEqual({ type: 'thinking', session_id: 's1', text: 'Let me count.' });
    expect(lines[2]).toMatchObject({ usage: { output_tokens: 40, reasoning_tokens: 25 } });
  });

  it('drops the thinking of a reply started over, and still writes that of a reply that failed', () => {
    const lines = streamJson([
      { type: 'turn', turn: 1 },
      { type: 'thinking', text: 'lost' },
      { type: 'restart', attempt: 2, reason: 'socket hang up' },
      { type: 'retry', attempt: 2, delayMs: 10, reason: 'socket hang up' },
      { type: 'thinking', text: 'kept' },
    ]);
    expect(lines.map((line) => line.type)).toEqual(['init', 'retry', 'thinking', 'result']);
    expect(lines[2]).toMatchObject({ text: 'kept' });
    expect(lines[0]).not.toHaveProperty('reasoning');
  });
});

describe('reasoning tokens in the JSON usage', () => {
  it('sums them over the replies and writes them after the cache counts; leaves them out when there are none', () => {
    const usage = usageTotals([reply('a', 25), reply('b'), reply('c', 5)]);
    expect(usage).toMatchObject({ output_tokens: 120, reasoning_tokens: 30 });
    const summary: RunSummary = { result: 'c', session_id: 's1', stop_reason: 'done', is_error: false, turns: 3, usage, cost_usd: null, duration_ms: 1 };
    expect(jsonResult(summary)).toContain('"cache_write_tokens":0,"reasoning_tokens":30,"estimated":false');
    expect(jsonResult({ ...summary, usage: usageTotals([reply('b')]) })).not.toContain('reasoning_tokens');
  });
});

describe('thinking in the progress on stderr', () => {
  it('writes it after a [thinking] mark, the reply starting on a line of its own', () => {
    const out = new PassThrough();
    let written = '';
    out.on('data', (chunk: Buffer) => (written += chunk.toString()));
    const progress = createProgressRenderer(out);
    progress({ type: 'turn', turn: 1 });
    progress({ type: 'thinking', text: 'The user wants ' });
    progress({ type: 'thinking', text: 'a count.' });
    progress({ type: 'text', text: 'There are 2.' });
    progress({ type: 'reply_end', message: reply('There are 2.') });
    expect(written).toBe('[thinking] The user wants a count.\nThere are 2.\n');
  });
});
