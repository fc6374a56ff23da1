import { afterEach, describe, expect, it, vi } from 'vitest';
import { asMcpTool, clientPrincipal, progressReporter, PROGRESS_BEAT_MS, PROGRESS_INTERVAL_MS } from '../../src/cli/mcp-serve';
import { parametersSchema, parseSignature } from '../../src/ptc/program-params';
import type { SavedProgram } from '../../src/ptc/saved-programs';
import type { ToolSpec } from '../../src/tools/define-tool';

afterEach(() => {
  vi.useRealTimers();
});

describe('clientPrincipal', () => {
  it('makes a client name a principal no policy glob can be smuggled through', () => {
    expect(clientPrincipal('Claude Code')).toBe('mcp:claude-code');
    expect(clientPrincipal('evil/*/name**')).toBe('mcp:evil-name');
    expect(clientPrincipal('..')).toBe('mcp:client');
    expect(clientPrincipal(undefined)).toBe('mcp:client');
    expect(clientPrincipal('x'.repeat(100))).toBe(`mcp:${'x'.repeat(64)}`);
  });
});

describe('progressReporter', () => {
  function reporter() {
    const sent: { progress: number; message: string }[] = [];
    const progress = progressReporter(async (params) => {
      sent.push(params);
    });
    return { sent, progress };
  }

  it('tells the first call at once and a run of quick calls once, by its last', () => {
    vi.useFakeTimers();
    const { sent, progress } = reporter();
    progress.called({ tool: 'read', ok: true });
    expect(sent).toEqual([{ progress: 1, message: 'read: ok (1 tool call so far)' }]);
    progress.called({ tool: 'glob', ok: true });
    progress.called({ tool: 'read', ok: false, decision: { action: 'deny' } });
    expect(sent).toHaveLength(1);
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS);
    expect(sent).toEqual([
      { progress: 1, message: 'read: ok (1 tool call so far)' },
      { progress: 3, message: 'read: denied (3 tool calls so far)' },
    ]);
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS * 5);
    expect(sent).toHaveLength(2);
  });

  it('never tells one count twice, when a call ends after the pending time came but before its timer ran', () => {
    vi.useFakeTimers();
    const { sent, progress } = reporter();
    progress.called({ tool: 'a', ok: true });
    progress.called({ tool: 'b', ok: true });
    // The clock passes the pending time without running timers, as a busy event loop would.
    vi.setSystemTime(Date.now() + PROGRESS_INTERVAL_MS + 1);
    progress.called({ tool: 'c', ok: false, decision: { action: 'ask' } });
    vi.advanceTimersByTime(PROGRESS_INTERVAL_MS * 2);
    expect(sent.map((note) => note.progress)).toEqual([1, 3]);
    expect(sent[1]?.message).toBe('c: refused (needs a yes) (3 tool calls so far)');
  });

  it('says a call is still running when it goes on without a notification, each time with a greater progress', () => {
    vi.useFakeTimers();
    const { sent, progress } = reporter();
    progress.called({ tool: 'shell', ok: true });
    // A long tool call: nothing ends for 25 s.
    vi.advanceTimersByTime(25_000);
    expect(sent.map((note) => note.progress)).toEqual([1, 2, 3]);
    expect(sent[1]?.message).toMatch(/^still running: 1 tool call so far, 1\d s$/);
    expect(sent[2]?.message).toMatch(/^still running: 1 tool call so far, 2\d s$/);
    // Calls ending often leave no room for a beat.
    for (let i = 0; i < 40; i++) {
      progress.called({ tool: 'read', ok: true });
      vi.advanceTimersByTime(PROGRESS_BEAT_MS / 4);
    }
    expect(sent.slice(3).every((note) => note.message.startsWith('read: ok'))).toBe(true);
    progress.stop();
    vi.advanceTimersByTime(PROGRESS_BEAT_MS * 3);
    expect(sent.at(-1)?.message.startsWith('read: ok')).toBe(true);
    const values = sent.map((note) => note.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(new Set(values).size).toBe(values.length);
  });

  it('sends nothing once stopped, and a failed send does not reach the call', async () => {
    vi.useFakeTimers();
    const { sent, progress } = reporter();
    progress.called({ tool: 'a', ok: true });
    progress.called({ tool: 'b', ok: false });
    progress.stop();
    progress.called({ tool: 'c', ok: true });
    vi.runAllTimers();
    expect(sent).toHaveLength(1);

    const failing = progressReporter(() => Promise.reject(new Error('the client went away')));
    expect(() => failing.called({ tool: 'a', ok: true })).not.toThrow();
    await Promise.resolve();
  });
});

describe('asMcpTool', () => {
  /** A served program with `code`, as far as listing it needs. */
  function listed(code: string) {
    const program = { record: { name: 'p', version: 1, intent: 'do it' }, code } as unknown as SavedProgram;
    const tool = { name: 'p', parameters: parametersSchema(parseSignature(code).parameters) } as unknown as ToolSpec;
    return asMcpTool({ program, tool });
  }

  it('leaves out the empty additionalProperties of open objects, and nothing that is data or a name', () => {
    const tool = listed(
      [
        '// param row: { name: string; tags: { label: string }[] } = {"name": "a", "tags": [], "additionalProperties": {}}',
        '// param additionalProperties?: { x: number }',
        '// returns: { rows: { id: string }[] }',
        'return { rows: [] };',
      ].join('\n'),
    );
    type Schema = { default?: unknown; properties?: Record<string, Schema>; items?: Schema; additionalProperties?: unknown };
    const properties = tool.inputSchema.properties as Record<string, Schema>;
    const output = tool.outputSchema as Schema;
    for (const schema of [properties.row, properties.row?.properties?.tags?.items, output, output.properties?.rows?.items]) {
      expect(schema).toBeDefined();
      expect(schema).not.toHaveProperty('additionalProperties');
    }
    // A default is data, and a parameter may be named like the keyword.
    expect(properties.row?.default).toEqual({ name: 'a', tags: [], additionalProperties: {} });
    expect(properties.additionalProperties?.properties).toEqual({ x: { type: 'number' } });
    expect(tool.outputSchema).toMatchObject({ type: 'object', properties: { rows: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' } } } } } });
  });
});
