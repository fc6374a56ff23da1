import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Agent, type AgentEvent } from '../../src/agent/agent';
import { createStreamJsonWriter, jsonResult, resultBeforeRun, usageTotals, type RunSummary, type SessionStart } from '../../src/cli/output-format';
import { createMessage, type Message } from '../../src/conversation/message';
import type { ToolUse } from '../../src/parse/tool-use';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import type { ToolRunOutcome } from '../../src/tools/run-tool-use';
import { saveTool } from '../../src/tools/save';
import { useAgentRig } from '../support/agent-session';
import { fakeProvider } from '../support/fake-provider';
import { makeToolContext } from '../support/tool-context';

/** A stream-json writer whose lines are collected, each checked to be one line of JSON. */
function collect() {
  const raw: string[] = [];
  const writer = createStreamJsonWriter((line) => raw.push(line));
  const lines = (): unknown[] =>
    raw.map((line) => {
      expect(line.endsWith('\n')).toBe(true);
      expect(line.slice(0, -1)).not.toMatch(/[\n\r\u2028\u2029]/);
      return JSON.parse(line) as unknown;
    });
  return { writer, raw, lines };
}

const start: SessionStart = { session_id: 's1', model: 'anthropic/claude-test', tool_format: 'markdown', tools: ['shell', 'read', 'save'], cwd: '/repo', sandbox: 'workspace-write (bubblewrap)' };

const summary: RunSummary = {
  result: 'There are 2 files.',
  session_id: 's1',
  stop_reason: 'done',
  is_error: false,
  turns: 2,
  usage: { input_tokens: 250, output_tokens: 32, cache_read_tokens: 100, cache_write_tokens: 0, estimated: true },
  cost_usd: 0.0123,
  duration_ms: 4210,
};

const shellText = 'Listing the files.\n```shell\nls\n```\n';
const shellUse: ToolUse = { tool: 'shell', args: [], content: 'ls', format: 'markdown', start: 19, end: shellText.length };
const shellOutcome: ToolRunOutcome = {
  tool: 'shell',
  result: { output: 'a.txt\nb.txt\n[exit code 0]' },
  decision: { action: 'allow' },
};

describe('stream-json writer', () => {
  it('writes init, one assistant line per reply, tool uses and results, retries and the result, leaving out text and turns', () => {
    const { writer, lines } = collect();
    const first = createMessage('assistant', shellText, {
      meta: { model: 'anthropic/claude-test', usage: { inputTokens: 120, outputTokens: 20, cacheReadTokens: 100 }, stopReason: 'tool_use' },
    });
    const last = createMessage('assistant', 'There are 2 files.', {
      meta: { model: 'anthropic/claude-test', usage: { inputTokens: 130, outputTokens: 12, estimated: true }, stopReason: 'end' },
    });
    const events: AgentEvent[] = [
      { type: 'turn', turn: 1 },
      { type: 'retry', attempt: 2, delayMs: 1000, reason: 'HTTP 529 from anthropic: Overloaded' },
      { type: 'text', text: 'Listing' },
      { type: 'restart', attempt: 3, reason: 'connection to anthropic failed: socket hang up' },
      { type: 'retry', attempt: 3, delayMs: 2000, reason: 'connection to anthropic failed: socket hang up' },
      { type: 'text', text: shellText },
      { type: 'reply_end', message: first },
      { type: 'tool_start', use: shellUse },
      { type: 'tool_end', use: shellUse, outcome: shellOutcome },
      { type: 'turn', turn: 2 },
      { type: 'text', text: 'There are 2 files.' },
      { type: 'reply_end', message: last },
    ];

    writer.start(start);
    for (const event of events) writer.event(event);
    writer.result(summary);

    expect(lines()).toEqual([
      { type: 'init', session_id: 's1', model: 'anthropic/claude-test', tool_format: 'markdown', tools: ['shell', 'read', 'save'], cwd: '/repo', sandbox: 'workspace-write (bubblewrap)' },
      { type: 'retry', session_id: 's1', attempt: 2, delay_ms: 1000, reason: 'HTTP 529 from anthropic: Overloaded' },
      { type: 'retry', session_id: 's1', attempt: 3, delay_ms: 2000, reason: 'connection to anthropic failed: socket hang up', restart: true },
      {
        type: 'assistant',
        session_id: 's1',
        text: shellText,
        usage: { input_tokens: 120, output_tokens: 20, cache_read_tokens: 100, cache_write_tokens: 0, estimated: false },
        stop_reason: 'tool_use',
      },
      { type: 'tool_use', session_id: 's1', tool: 'shell', input: { args: [], content: 'ls' } },
      { type: 'tool_result', session_id: 's1', tool: 'shell', output: 'a.txt\nb.txt\n[exit code 0]', is_error: false },
      {
        type: 'assistant',
        session_id: 's1',
        text: 'There are 2 files.',
        usage: { input_tokens: 130, output_tokens: 12, cache_read_tokens: 0, cache_write_tokens: 0, estimated: true },
        stop_reason: 'end',
      },
      {
        type: 'result',
        result: 'There are 2 files.',
        session_id: 's1',
        stop_reason: 'done',
        is_error: false,
        turns: 2,
        usage: { input_tokens: 250, output_tokens: 32, cache_read_tokens: 100, cache_write_tokens: 0, estimated: true },
        cost_usd: 0.0123,
        duration_ms: 4210,
      },
    ]);
  });

  it('writes type and session_id first on every line', () => {
    const { writer, raw } = collect();
    writer.start(start);
    writer.event({ type: 'tool_start', use: shellUse });
    writer.event({ type: 'tool_end', use: shellUse, outcome: shellOutcome });
    writer.result(summary);
    expect(raw.map((line) => Object.keys(JSON.parse(line) as object).slice(0, 2))).toEqual([
      ['type', 'session_id'],
      ['type', 'session_id'],
      ['type', 'session_id'],
      ['type', 'result'],
    ]);
    expect(raw[3]).toBe(jsonResult(summary));
  });

  it('reports native calls with their ids and arguments, an XML block with its words and body, and cut output with where the rest is', () => {
    const { writer, lines } = collect();
    const native: ToolUse = { tool: 'read', args: [], content: '', format: 'tool', callId: 'call_7', kwargs: { path: 'src/a.ts', offset: 10 }, start: 0, end: 0 };
    const xml: ToolUse = { tool: 'save', args: ['notes/a.md'], content: '# A\n', format: 'xml', start: 0, end: 40 };
    writer.start({ ...start, tool_format: 'tool' });
    writer.event({ type: 'tool_start', use: native });
    writer.event({
      type: 'tool_end',
      use: native,
      outcome: {
        tool: 'read',
        result: { output: '1\thead\n… 900 lines cut …\nThe full output is in tool-outputs/read-ab12.txt.' },
        fullOutputPath: 'tool-outputs/read-ab12.txt',
      },
    });
    writer.event({ type: 'tool_start', use: xml });
    writer.event({ type: 'tool_end', use: xml, outcome: { tool: 'save', result: { output: 'notes/a.md is outside the workspace', isError: true } } });
    expect(lines().slice(1)).toEqual([
      { type: 'tool_use', session_id: 's1', tool: 'read', call_id: 'call_7', input: { path: 'src/a.ts', offset: 10 } },
      {
        type: 'tool_result',
        session_id: 's1',
        tool: 'read',
        call_id: 'call_7',
        output: '1\thead\n… 900 lines cut …\nThe full output is in tool-outputs/read-ab12.txt.',
        is_error: false,
        full_output: 'tool-outputs/read-ab12.txt',
      },
      { type: 'tool_use', session_id: 's1', tool: 'save', input: { args: ['notes/a.md'], content: '# A\n' } },
      { type: 'tool_result', session_id: 's1', tool: 'save', output: 'notes/a.md is outside the workspace', is_error: true },
    ]);
  });

  it('marks where each prompt starts with a prompt line, in run order', () => {
    const { writer, lines } = collect();
    writer.start(start);
    writer.event({ type: 'prompt', message: createMessage('user', 'summarise this:\n\npiped text') });
    writer.event({ type: 'reply_end', message: createMessage('assistant', 'first answer') });
    writer.event({ type: 'prompt', message: createMessage('user', 'and now this') });
    writer.event({ type: 'reply_end', message: createMessage('assistant', 'second answer') });
    expect(lines().slice(1)).toEqual([
      { type: 'prompt', session_id: 's1', text: 'summarise this:\n\npiped text' },
      { type: 'assistant', session_id: 's1', text: 'first answer' },
      { type: 'prompt', session_id: 's1', text: 'and now this' },
      { type: 'assistant', session_id: 's1', text: 'second answer' },
    ]);
  });

  it('marks only the retry that follows a restart, not a later request with the same attempt number', () => {
    const { writer, lines } = collect();
    writer.start(start);
    writer.event({ type: 'restart', attempt: 2, reason: 'cut' });
    writer.event({ type: 'retry', attempt: 2, delayMs: 5, reason: 'cut' });
    writer.event({ type: 'turn', turn: 2 });
    writer.event({ type: 'retry', attempt: 2, delayMs: 7, reason: 'busy' });
    expect(lines().slice(1)).toEqual([
      { type: 'retry', session_id: 's1', attempt: 2, delay_ms: 5, reason: 'cut', restart: true },
      { type: 'retry', session_id: 's1', attempt: 2, delay_ms: 7, reason: 'busy' },
    ]);
  });

  it('leaves out usage and stop_reason of a reply that has none, and ignores event types it does not know', () => {
    const { writer, lines } = collect();
    writer.start(start);
    writer.event({ type: 'reply_end', message: createMessage('assistant', 'partial') });
    writer.event({ type: 'compacted', before: 1000, after: 200 } as unknown as AgentEvent);
    writer.event({ type: 'text', text: 'ignored' });
    writer.event({ type: 'turn', turn: 3 });
    expect(lines().slice(1)).toEqual([{ type: 'assistant', session_id: 's1', text: 'partial' }]);
  });

  it('reports a summary written to fit the context window, and a summary that failed', () => {
    const { writer, lines } = collect();
    writer.start(start);
    const message = createMessage('system', 'Summary of the earlier conversation:\n\nRead 6 files.', { meta: { compaction: { through: 14 } } });
    writer.event({ type: 'compaction', message });
    writer.event({ type: 'compaction_failed', error: 'no summary within 120 s' });
    expect(lines().slice(1)).toEqual([
      { type: 'compaction', session_id: 's1', ok: true, through: 14, summary: 'Summary of the earlier conversation:\n\nRead 6 files.' },
      { type: 'compaction', session_id: 's1', ok: false, error: 'no summary within 120 s' },
    ]);
  });

  it('follows a plan call that set the checklist with a plan line of all its items, and a refused one with none', () => {
    const { writer, lines } = collect();
    writer.start(start);
    const use: ToolUse = { tool: 'plan', args: [], content: '[~] Fix it', format: 'markdown', start: 0, end: 0 };
    const plan = [{ text: 'Fix it', status: 'in_progress' }];
    writer.event({ type: 'tool_end', use, outcome: { tool: 'plan', result: { output: 'Plan (0 of 1 done):\n[~] Fix it', value: plan, details: { plan } } } });
    writer.event({ type: 'tool_end', use, outcome: { tool: 'plan', result: { output: 'Invalid input for plan: …', isError: true } } });
    // Another tool's details never make a plan line.
    writer.event({ type: 'tool_end', use: { ...use, tool: 'read' }, outcome: { tool: 'read', result: { output: 'x', details: { plan } } } });
    expect(lines().slice(1).map((line) => (line as { type: string }).type)).toEqual(['tool_result', 'plan', 'tool_result', 'tool_result']);
    expect(lines()[2]).toEqual({ type: 'plan', session_id: 's1', items: [{ text: 'Fix it', status: 'in_progress' }] });
  });

  it('keeps every line one line of valid JSON whatever the tool wrote: lone surrogates, line separators, control characters', () => {
    const { writer, raw, lines } = collect();
    const odd = 'bad \ud800 half \udfff\r\nnext\u2028para\u2029\u0000\u001b[31mred\u007f';
    const use: ToolUse = { tool: 'shell', args: ['-t', '\ud83d'], content: odd, format: 'markdown', start: 0, end: 0 };
    writer.start(start);
    writer.event({ type: 'tool_start', use });
    writer.event({ type: 'tool_end', use, outcome: { tool: 'shell', result: { output: odd } } });
    writer.result({ ...summary, result: odd, error: odd });
    expect(raw).toHaveLength(4);
    const [, started, ended, result] = lines() as [unknown, { input: { args: string[]; content: string } }, { output: string }, RunSummary];
    expect(started.input).toEqual({ args: ['-t', '\ud83d'], content: odd });
    expect(ended.output).toBe(odd);
    expect(result.result).toBe(odd);
    expect(result.error).toBe(odd);
    expect(raw[2]).toContain('\\ud800');
    expect(raw[2]).toContain('\\u2028');
  });

  it('writes values JSON cannot hold instead of throwing', () => {
    const { writer, lines } = collect();
    const cyclic: Record<string, unknown> = { path: 'a.txt' };
    cyclic.self = cyclic;
    writer.start(start);
    writer.event({ type: 'tool_start', use: { ...shellUse, format: 'tool', kwargs: { size: 10n } } });
    writer.event({ type: 'tool_start', use: { ...shellUse, format: 'tool', kwargs: cyclic } });
    writer.event({ type: 'tool_start', use: { ...shellUse, format: 'tool', kwargs: { toJSON: () => { throw new Error('no'); } } } });
    expect(lines().slice(1)).toEqual([
      { type: 'tool_use', session_id: 's1', tool: 'shell', input: { size: '10' } },
      { type: 'tool_use', session_id: 's1', tool: 'shell', input: { path: 'a.txt', self: '[repeated]' } },
      { type: 'tool_use', session_id: 's1', error: 'this line could not be written as JSON' },
    ]);
  });

  it('writes any tool output as exactly one line that reads back to the same text', () => {
    const unit = fc.oneof(fc.string({ unit: 'binary', maxLength: 1 }), fc.constantFrom('\n', '\r', '\u2028', '\u2029', '\ud800', '\udc00', '"', '\\', '\u0000'));
    fc.assert(
      fc.property(fc.string({ unit }), fc.string({ unit }), (output, tool) => {
        const raw: string[] = [];
        const writer = createStreamJsonWriter((line) => raw.push(line));
        const use: ToolUse = { tool, args: [output], content: output, format: 'markdown', start: 0, end: 0 };
        writer.event({ type: 'tool_start', use });
        writer.event({ type: 'tool_end', use, outcome: { tool, result: { output } } });
        expect(raw).toHaveLength(2);
        for (const line of raw) expect(line.indexOf('\n')).toBe(line.length - 1);
        expect(JSON.parse(raw[1] ?? '')).toEqual({ type: 'tool_result', session_id: '', tool, output, is_error: false });
      }),
    );
  });
});

describe('jsonResult', () => {
  it('is one line: the result object with its keys in a fixed order', () => {
    const shuffled = {
      duration_ms: 4210,
      cost_usd: null,
      usage: { estimated: false, cache_write_tokens: 3, cache_read_tokens: 2, output_tokens: 1, input_tokens: 9 },
      turns: 50,
      is_error: true,
      stop_reason: 'max_turns',
      session_id: 's2',
      result: 'Half done.',
      error: 'stopped after 50 model requests (--max-turns)',
    } satisfies RunSummary;
    expect(jsonResult(shuffled)).toBe(
      '{"type":"result","result":"Half done.","session_id":"s2","stop_reason":"max_turns","is_error":true,"turns":50,' +
        '"usage":{"input_tokens":9,"output_tokens":1,"cache_read_tokens":2,"cache_write_tokens":3,"estimated":false},' +
        '"cost_usd":null,"duration_ms":4210,"error":"stopped after 50 model requests (--max-turns)"}\n',
    );
  });

  it('ends with the plan when the session has one, each item as text and status', () => {
    const line = jsonResult({ ...summary, error: 'x', plan: [{ text: 'Add a test', status: 'pending' }] });
    expect(line.endsWith(',"error":"x","plan":[{"text":"Add a test","status":"pending"}]}\n')).toBe(true);
    expect(JSON.parse(jsonResult(summary))).not.toHaveProperty('plan');
  });

  it('leaves error out when there is none', () => {
    expect(JSON.parse(jsonResult(summary))).not.toHaveProperty('error');
    expect(jsonResult({ ...summary, result: 'line one\nline two' }).split('\n')).toHaveLength(2);
  });

  it('writes the cost rounded to a billionth of a dollar, without the noise of summed prices', () => {
    const written = (cost: number | null) => jsonResult({ ...summary, cost_usd: cost });
    // 0.0003 + 0.00129, as a sum of per-reply costs comes out.
    expect(written(0.0003 + 0.00129)).toContain('"cost_usd":0.00159,');
    expect(written(0.1 + 0.2)).toContain('"cost_usd":0.3,');
    expect(written(3.5e-7)).toContain('"cost_usd":3.5e-7,');
    expect(written(1234.5678901234)).toContain('"cost_usd":1234.567890123,');
    expect(written(0)).toContain('"cost_usd":0,');
    expect(written(null)).toContain('"cost_usd":null,');
  });
});

describe('resultBeforeRun', () => {
  it('is a result with no session, no turns and nothing spent, the stop reason and the error', () => {
    expect(JSON.parse(jsonResult(resultBeforeRun('usage', 'a session named "x" exists already', 12)))).toEqual({
      type: 'result',
      result: '',
      session_id: '',
      stop_reason: 'usage',
      is_error: true,
      turns: 0,
      usage: { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, estimated: false },
      cost_usd: 0,
      duration_ms: 12,
      error: 'a session named "x" exists already',
    });
  });
});

describe('usageTotals', () => {
  it('sums the usage of assistant messages, cache counts defaulting to 0', () => {
    const log: Message[] = [
      createMessage('system', 'You are fence.', { pinned: true }),
      createMessage('user', 'go'),
      createMessage('assistant', 'a', { meta: { usage: { inputTokens: 1200, outputTokens: 85, cacheReadTokens: 1000, cacheWriteTokens: 200 } } }),
      createMessage('system', 'result', { meta: { toolResult: true, usage: { inputTokens: 999, outputTokens: 999 } } }),
      createMessage('assistant', 'b', { meta: { usage: { inputTokens: 40, outputTokens: 7, cacheReadTokens: 1400 } } }),
      createMessage('assistant', 'interrupted', { meta: { interrupted: true } }),
      createMessage('assistant', 'c'),
    ];
    expect(usageTotals(log)).toEqual({ input_tokens: 1240, output_tokens: 92, cache_read_tokens: 2400, cache_write_tokens: 200, estimated: false });
  });

  it('is estimated when any reply was', () => {
    const log = [
      createMessage('assistant', 'a', { meta: { usage: { inputTokens: 10, outputTokens: 5, estimated: false } } }),
      createMessage('assistant', 'b', { meta: { usage: { inputTokens: 3, outputTokens: 4, estimated: true } } }),
    ];
    expect(usageTotals(log)).toEqual({ input_tokens: 13, output_tokens: 9, cache_read_tokens: 0, cache_write_tokens: 0, estimated: true });
  });

  it('is all zeros for no replies', () => {
    expect(usageTotals([])).toEqual({ input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, estimated: false });
  });
});

describe('stream-json of a real run', () => {
  const rig = useAgentRig({ toolFormat: 'tool', tools: ['read', 'save'], system: 'You are fence.' });

  it('reports a retried and a restarted request, native calls (one refused) and the answer, matching the session log', async () => {
    rig.server.reply((r) => r.status(503));
    rig.server.reply((r) => r.text('Sav').cut());
    rig.server.reply((r) =>
      r
        .text('Saving.')
        .toolCall('save', { path: 'a.txt', content: 'hi\n' }, 'call_save')
        .rawToolCall('read', '[1, 2]', 'call_bad')
        .usage({ input: 100, output: 20, cacheRead: 50 }),
    );
    rig.server.reply((r) => r.text('Saved a.txt.').usage({ input: 160, output: 6 }));
    const { provider, model, modelId } = await fakeProvider(rig.server, 'openai');
    const { writer, lines } = collect();
    const agent = new Agent({
      provider,
      model,
      modelId,
      registry: new ToolRegistry([readTool, saveTool]),
      store: rig.store,
      toolContext: makeToolContext(rig.workspace),
      format: 'tool',
      onEvent: (event) => writer.event(event),
    });

    writer.start({ session_id: 'run-1', model: modelId, tool_format: 'tool', tools: ['read', 'save'], cwd: rig.workspace, sandbox: 'off' });
    const outcome = await agent.run('Save a.txt.');
    writer.result({
      result: outcome.status === 'done' ? outcome.answer : '',
      session_id: 'run-1',
      stop_reason: 'done',
      is_error: false,
      turns: agent.turnCount,
      usage: usageTotals(rig.store.log),
      cost_usd: null,
      duration_ms: 0,
    });

    const written = lines() as Record<string, unknown>[];
    expect(written.map((line) => line.type)).toEqual(['init', 'prompt', 'retry', 'retry', 'assistant', 'tool_use', 'tool_result', 'tool_use', 'tool_result', 'assistant', 'result']);
    expect(written.every((line) => line.session_id === 'run-1')).toBe(true);
    const [, prompt, retry, restart, firstReply, save, saved, bad, refused, answer, result] = written;
    expect(prompt).toEqual({ type: 'prompt', session_id: 'run-1', text: 'Save a.txt.' });
    expect(retry).toEqual({ type: 'retry', session_id: 'run-1', attempt: 2, delay_ms: expect.any(Number) as number, reason: expect.stringContaining('503') as string });
    expect(restart).toEqual({ type: 'retry', session_id: 'run-1', attempt: 3, delay_ms: expect.any(Number) as number, reason: expect.any(String) as string, restart: true });
    const assistants = rig.store.log.filter((message) => message.role === 'assistant');
    expect(firstReply).toEqual({
      type: 'assistant',
      session_id: 'run-1',
      text: assistants[0]?.content,
      usage: { input_tokens: 100, output_tokens: 20, cache_read_tokens: 50, cache_write_tokens: 0, estimated: false },
      stop_reason: 'tool_use',
    });
    expect(save).toEqual({ type: 'tool_use', session_id: 'run-1', tool: 'save', call_id: 'call_save', input: { path: 'a.txt', content: 'hi\n' } });
    expect(bad).toEqual({ type: 'tool_use', session_id: 'run-1', tool: 'read', call_id: 'call_bad', input: {} });
    const toolResults = rig.store.log.filter((message) => message.meta?.toolResult);
    expect(saved).toEqual({ type: 'tool_result', session_id: 'run-1', tool: 'save', call_id: 'call_save', output: toolResults[0]?.content, is_error: false });
    expect(refused).toEqual({ type: 'tool_result', session_id: 'run-1', tool: 'read', call_id: 'call_bad', output: toolResults[1]?.content, is_error: true });
    expect(answer).toEqual({
      type: 'assistant',
      session_id: 'run-1',
      text: 'Saved a.txt.',
      usage: { input_tokens: 160, output_tokens: 6, cache_read_tokens: 0, cache_write_tokens: 0, estimated: false },
      stop_reason: 'end',
    });
    expect(result).toEqual({
      type: 'result',
      result: 'Saved a.txt.',
      session_id: 'run-1',
      stop_reason: 'done',
      is_error: false,
      turns: 2,
      usage: { input_tokens: 260, output_tokens: 26, cache_read_tokens: 50, cache_write_tokens: 0, estimated: false },
      cost_usd: null,
      duration_ms: 0,
    });
  });
});
