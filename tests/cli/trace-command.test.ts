import { describe, expect, it } from 'vitest';
import { formatTrace } from '../../src/cli/trace-command';
import type { TraceCall } from '../../src/ptc/trace';
import { sampleTrace } from '../support/sample-trace';

const PATH = '/home/fence/sessions/session-1/traces/20260301-120000-aaaaaa.json';
const SHA = 'c0ffee'.padEnd(64, '0');

const calls: TraceCall[] = [
  { seq: 1, tool: 'glob', args: { pattern: 'notes/*.txt' }, decision: { action: 'allow' }, start: 0, durationMs: 1.5, ok: true, result: ['notes/a.txt', 'notes/b.txt'] },
  {
    seq: 2,
    tool: 'read',
    args: { path: 'secrets/key.txt' },
    resource: 'secrets/key.txt',
    decision: { action: 'deny', reason: 'secrets stay out', rule: 0 },
    start: 2,
    durationMs: 0.2,
    ok: false,
    error: 'read denied: secrets stay out',
  },
  { seq: 3, tool: 'read', args: { path: 'notes/a.txt' }, decision: { action: 'allow', rule: 1 }, start: 3, durationMs: 0.4, ok: true, result: 'alpha\nTODO: x' },
  { seq: 4, tool: 'fetch', args: {}, decision: { action: 'allow' }, start: 4, durationMs: 9, ok: true, resultBytes: 2_000_000 },
  { seq: 5, tool: 'lookup', args: { id: 'e1' }, decision: { action: 'allow' }, start: 14, durationMs: 30, ok: true, result: { id: 'e1', name: 'Ada' } },
  { seq: 6, tool: 'notify', args: { to: 'ops' }, decision: { action: 'ask', reason: 'confirm first' }, start: 45, durationMs: 0, ok: false, error: 'notify needs confirmation' },
];

describe('formatTrace', () => {
  it('renders a failed run: header, principal and intent, status with the error line, each call, output and numbered code', () => {
    const trace = sampleTrace({
      intent: 'count notes',
      code: '// intent: count notes\nconst files = await glob({ pattern: "notes/*.txt" });\nthrow new Error("boom");',
      calls,
      stdout: 'line one\nline two\n',
      droppedOutputBytes: 10,
      ok: false,
      error: { kind: 'thrown', message: 'Error: boom', line: 3 },
      stats: { cpuTimeMs: 3, wallTimeMs: 52, toolCalls: 6 },
    });
    expect(formatTrace(trace, PATH)).toBe(
      [
        'trace 20260301-120000-aaaaaa · session session-1 · 2026-03-01 12:00:00',
        `file ${PATH}`,
        'principal program:c0ffee000000 · intent: count notes',
        `code sha256 ${SHA}`,
        'limits: memory 64 MiB, cpu 10 s, wall 30 s, stack 256 KiB, 1000 calls, 16 at once, output 1 MiB',
        'status: failed (thrown) at line 3: Error: boom',
        'time: 52 ms wall, 3 ms in the sandbox',
        '',
        'calls (6):',
        '  #1 +0 ms  glob {"pattern":"notes/*.txt"}  [allow]  1.5 ms  ok → 2 items',
        '  #2 +2 ms  read {"path":"secrets/key.txt"}  [deny: secrets stay out]  0.2 ms  error: read denied: secrets stay out',
        '  #3 +3 ms  read {"path":"notes/a.txt"}  [allow by a policy rule]  0.4 ms  ok → 13 characters',
        '  #4 +4 ms  fetch {}  [allow]  9 ms  ok (2000000 bytes, not kept)',
        '  #5 +14 ms  lookup {"id":"e1"}  [allow]  30 ms  ok → {"id":"e1","name":"Ada"}',
        '  #6 +45 ms  notify {"to":"ops"}  [ask: confirm first]  0 ms  error: notify needs confirmation',
        '',
        'output:',
        '  line one',
        '  line two',
        '  [10 bytes dropped]',
        '',
        'code:',
        '    1 | // intent: count notes',
        '    2 | const files = await glob({ pattern: "notes/*.txt" });',
        '    3 | throw new Error("boom");',
        '',
      ].join('\n'),
    );
  });

  it('renders a finished run with its result, no intent and no output', () => {
    const trace = sampleTrace({
      code: 'return { total: 3, names: ["a"] };',
      stdout: '',
      result: { total: 3, names: ['a'] },
      limits: { memoryBytes: 32 * 1024 * 1024, cpuTimeMs: 500, wallTimeMs: 2000, stackBytes: 128 * 1024, maxToolCalls: 5, maxConcurrentCalls: 2, maxOutputBytes: 4096 },
    });
    expect(formatTrace(trace, PATH)).toBe(
      [
        'trace 20260301-120000-aaaaaa · session session-1 · 2026-03-01 12:00:00',
        `file ${PATH}`,
        'principal program:c0ffee000000',
        `code sha256 ${SHA}`,
        'limits: memory 32 MiB, cpu 0.5 s, wall 2 s, stack 128 KiB, 5 calls, 2 at once, output 4 KiB',
        'status: ok',
        'time: 5 ms wall, 3 ms in the sandbox',
        '',
        'calls (0):',
        '',
        'output:',
        '  (none)',
        '',
        'result:',
        '  {',
        '    "total": 3,',
        '    "names": [',
        '      "a"',
        '    ]',
        '  }',
        '',
        'code:',
        '    1 | return { total: 3, names: ["a"] };',
        '',
      ].join('\n'),
    );
  });

  it('shortens long arguments and errors to one line', () => {
    const long = 'x'.repeat(200);
    const trace = sampleTrace({
      calls: [{ seq: 1, tool: 'grep', args: { pattern: long }, decision: { action: 'allow' }, start: 0, durationMs: 1, ok: false, error: `first line\nsecond ${long}` }],
    });
    const line = formatTrace(trace, PATH).split('\n').find((l) => l.startsWith('  #1 '));
    const argsText = `{"pattern":"${long}"}`.slice(0, 79);
    const errorText = `first line second ${long}`.slice(0, 119);
    expect(line).toBe(`  #1 +0 ms  grep ${argsText}…  [allow]  1 ms  error: ${errorText}…`);
  });

  it('names the saved program that ran and how the call that ran it was admitted', () => {
    const served = formatTrace(sampleTrace({ principal: 'mcp:claude-code', program: 'count_notes@2', admission: { action: 'allow' } }), PATH).split('\n');
    expect(served.slice(2, 5)).toEqual(['program count_notes@2', 'principal mcp:claude-code', 'admitted: allow']);
    const byRule = formatTrace(sampleTrace({ program: 'count_notes@2', admission: { action: 'allow', rule: 3 } }), PATH);
    expect(byRule).toContain('\nadmitted: allow by a policy rule\n');
    expect(formatTrace(sampleTrace({}), PATH)).not.toMatch(/^(program|admitted)/m);
  });

  it('says when a failed run has no line for its error', () => {
    const trace = sampleTrace({ ok: false, error: { kind: 'cpu_time', message: 'the program used more than its 300 ms of CPU time' } });
    expect(formatTrace(trace, PATH)).toContain('\nstatus: failed (cpu_time): the program used more than its 300 ms of CPU time\n');
  });
});
