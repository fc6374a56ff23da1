import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  findTrace,
  listTraces,
  newTraceId,
  TRACE_RESULT_MAX_BYTES,
  traceValue,
  writeTrace,
  type ProgramTrace,
} from '../../src/ptc/trace';
import { sampleTrace } from '../support/sample-trace';
import { useTempWorkspace } from '../support/tool-context';

const home = useTempWorkspace('fence-trace-home-');
const sessionDir = (id: string) => join(home(), 'sessions', id);

/** Writes a trace with `id`, made at `createdAt`, into session `session`. */
function put(session: string, id: string, createdAt: string, extra: Partial<ProgramTrace> = {}): string {
  return writeTrace(sessionDir(session), sampleTrace({ id, sessionId: session, createdAt, ...extra }));
}

describe('newTraceId', () => {
  it('is the UTC time, to the second, then six hex digits', () => {
    const id = newTraceId(new Date('2026-11-29T21:15:00.123Z'));
    expect(id).toMatch(/^20261129-211500-[0-9a-f]{6}$/);
    expect(newTraceId()).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
  });

  it('sorts in the order of time', () => {
    const earlier = newTraceId(new Date('2026-01-02T03:04:05Z'));
    const later = newTraceId(new Date('2026-01-02T03:04:06Z'));
    expect([later, earlier].sort()).toEqual([earlier, later]);
  });
});

describe('writeTrace', () => {
  it('writes <session>/traces/<id>.json, creating the folder, and returns its path', () => {
    const trace = sampleTrace({ calls: [{ seq: 1, tool: 'read', args: { path: 'a' }, decision: { action: 'allow' }, start: 0, durationMs: 1, ok: true, result: 'text' }] });
    const path = writeTrace(sessionDir('s1'), trace);
    expect(path).toBe(join(sessionDir('s1'), 'traces', `${trace.id}.json`));
    const text = readFileSync(path, 'utf8');
    expect(text.endsWith('}\n')).toBe(true);
    expect(JSON.parse(text)).toEqual(trace);
  });

  it('overwrites nothing else in the folder', () => {
    const first = put('s1', '20260101-000000-000001', '2026-01-01T00:00:00.000Z');
    const second = put('s1', '20260101-000000-000002', '2026-01-01T00:00:01.000Z');
    expect(first).not.toBe(second);
    expect(JSON.parse(readFileSync(first, 'utf8')).id).toBe('20260101-000000-000001');
  });
});

describe('listTraces', () => {
  it('lists the traces of every session, newest first', () => {
    put('s1', 'id-old', '2026-01-01T10:00:00.000Z');
    put('s2', 'id-mid', '2026-01-01T11:00:00.000Z');
    put('s1', 'id-new', '2026-01-02T09:00:00.000Z');
    const listed = listTraces(home());
    expect(listed.map((t) => t.trace.id)).toEqual(['id-new', 'id-mid', 'id-old']);
    expect(listed[0]?.path).toBe(join(sessionDir('s1'), 'traces', 'id-new.json'));
    expect(listed[1]?.trace.sessionId).toBe('s2');
  });

  it('is empty when there are no sessions, or sessions without traces', () => {
    expect(listTraces(join(home(), 'nowhere'))).toEqual([]);
    mkdirSync(sessionDir('quiet'), { recursive: true });
    expect(listTraces(home())).toEqual([]);
  });

  it('skips files it cannot read as JSON and files that are not .json', () => {
    put('s1', 'good', '2026-01-01T10:00:00.000Z');
    writeFileSync(join(sessionDir('s1'), 'traces', 'torn.json'), '{"id": "torn", "createdAt": "2026');
    writeFileSync(join(sessionDir('s1'), 'traces', 'notes.txt'), '{}');
    mkdirSync(join(sessionDir('s1'), 'traces', 'folder.json'));
    expect(listTraces(home()).map((t) => t.trace.id)).toEqual(['good']);
  });

  it('skips a JSON file that is not a trace instead of failing', () => {
    put('s1', 'first', '2026-01-01T10:00:00.000Z');
    put('s1', 'second', '2026-01-01T11:00:00.000Z');
    writeFileSync(join(sessionDir('s1'), 'traces', 'stray.json'), '{}\n');
    writeFileSync(join(sessionDir('s1'), 'traces', 'null.json'), 'null\n');
    expect(listTraces(home()).map((t) => t.trace.id)).toEqual(['second', 'first']);
  });
});

describe('findTrace', () => {
  it('finds a trace by its whole id, or by a prefix only it has', () => {
    put('s1', '20260101-100000-aaaaaa', '2026-01-01T10:00:00.000Z');
    put('s2', '20260101-110000-bbbbbb', '2026-01-01T11:00:00.000Z');
    expect(findTrace(home(), '20260101-100000-aaaaaa')).toMatchObject({ trace: { id: '20260101-100000-aaaaaa', sessionId: 's1' } });
    const byPrefix = findTrace(home(), '20260101-11');
    expect(byPrefix).toMatchObject({ trace: { id: '20260101-110000-bbbbbb' } });
    expect(byPrefix).toHaveProperty('path', join(sessionDir('s2'), 'traces', '20260101-110000-bbbbbb.json'));
  });

  it('says a prefix is ambiguous when several ids start with it', () => {
    put('s1', '20260101-100000-aaaaaa', '2026-01-01T10:00:00.000Z');
    put('s1', '20260101-100000-abbbbb', '2026-01-01T10:00:00.500Z');
    put('s2', '20260101-100000-accccc', '2026-01-01T10:00:00.900Z');
    expect(findTrace(home(), '20260101-100000-a')).toEqual({ error: '"20260101-100000-a" matches 3 traces; give more of the id' });
    expect(findTrace(home(), '20260101-100000-ab')).toMatchObject({ trace: { id: '20260101-100000-abbbbb' } });
  });

  it('prefers the exact id over longer ids that start with it', () => {
    put('s1', 'run-1', '2026-01-01T10:00:00.000Z');
    put('s1', 'run-10', '2026-01-01T11:00:00.000Z');
    expect(findTrace(home(), 'run-1')).toMatchObject({ trace: { id: 'run-1' } });
  });

  it('says when no trace has that id', () => {
    expect(findTrace(home(), 'nothing')).toEqual({ error: 'no trace "nothing"' });
    put('s1', '20260101-100000-aaaaaa', '2026-01-01T10:00:00.000Z');
    expect(findTrace(home(), '2027')).toEqual({ error: 'no trace "2027"' });
  });
});

describe('traceValue', () => {
  it('keeps a small value whole', () => {
    expect(traceValue('text')).toEqual({ result: 'text' });
    expect(traceValue([{ path: 'a', line: 1, text: 'x' }])).toEqual({ result: [{ path: 'a', line: 1, text: 'x' }] });
    expect(traceValue(0)).toEqual({ result: 0 });
    expect(traceValue(null)).toEqual({ result: null });
    expect(traceValue(false)).toEqual({ result: false });
  });

  it('keeps a value of exactly the cap, and only the size of a larger one', () => {
    // A string's JSON is its text plus two quotes.
    expect(traceValue('x'.repeat(TRACE_RESULT_MAX_BYTES - 2))).toEqual({ result: 'x'.repeat(TRACE_RESULT_MAX_BYTES - 2) });
    expect(traceValue('x'.repeat(TRACE_RESULT_MAX_BYTES - 1))).toEqual({ resultBytes: TRACE_RESULT_MAX_BYTES + 1 });
    expect(TRACE_RESULT_MAX_BYTES).toBe(1024 * 1024);
  });

  it('measures the size in bytes of UTF-8', () => {
    const text = 'é'.repeat(TRACE_RESULT_MAX_BYTES / 2);
    expect(traceValue(text)).toEqual({ resultBytes: TRACE_RESULT_MAX_BYTES + 2 });
  });

  it('gives size -1 for a value that cannot be JSON', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    expect(traceValue(cyclic)).toEqual({ resultBytes: -1 });
    expect(traceValue({ big: 1n })).toEqual({ resultBytes: -1 });
  });

  it('gives nothing for undefined', () => {
    expect(traceValue(undefined)).toEqual({});
  });
});
