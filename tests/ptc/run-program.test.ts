import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createProgramStore } from '../../src/ptc/program-store';
import { runProgram, type ProgramCall, type ProgramTool, type ProgramToolOutcome } from '../../src/ptc/run-program';
import { unreplayable } from '../../src/ptc/saved-programs';
import { TRACE_VALUES_MAX_BYTES, traceText, type ProgramTrace } from '../../src/ptc/trace';
import { DEFAULT_VM_LIMITS } from '../../src/program-vm/run-in-vm';
import { useTempSession } from '../support/temp-session';

const session = useTempSession();
const sessionRef = () => ({ id: session().id, dir: session().dir });

const sha256 = (code: string) => createHash('sha256').update(code).digest('hex');

/** A tool that always gives `value`, keeping each call it gets. */
function valueTool(value: (args: unknown) => unknown) {
  const calls: { args: unknown; call: ProgramCall }[] = [];
  const tool: ProgramTool = async (args, call) => {
    calls.push({ args, call });
    return { decision: { action: 'allow' }, ok: true, value: value(args) };
  };
  return { tool, calls };
}

const denied: ProgramToolOutcome = { decision: { action: 'deny', reason: 'no' }, ok: false, error: 'read denied: no' };

describe('runProgram', () => {
  it('records the code, its hash, the principal, the intent and the result', async () => {
    const code = '// intent: add two numbers\nprint("adding");\nreturn 1 + 2;';
    const { trace } = await runProgram({ code, tools: {}, session: sessionRef() });
    const hash = sha256(code);
    expect(trace).toMatchObject({
      sessionId: 'session-1',
      code,
      sha256: hash,
      principal: `program:${hash.slice(0, 12)}`,
      intent: 'add two numbers',
      calls: [],
      stdout: 'adding\n',
      droppedOutputBytes: 0,
      ok: true,
      result: 3,
    });
    expect(trace.principal).toMatch(/^program:[0-9a-f]{12}$/);
    expect(trace.id).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
    expect(Number.isNaN(Date.parse(trace.createdAt))).toBe(false);
    expect(trace.error).toBeUndefined();
    expect(trace.stats?.toolCalls).toBe(0);
  });

  it('leaves out the intent and the result when there are none', async () => {
    const { trace } = await runProgram({ code: 'print("no intent");', tools: {}, session: sessionRef() });
    expect(trace.ok).toBe(true);
    expect('intent' in trace).toBe(false);
    expect('result' in trace).toBe(false);
  });

  it('takes the principal given instead of the hash', async () => {
    const probe = valueTool(() => 1);
    const { trace } = await runProgram({ code: 'await probe({});', tools: { probe: probe.tool }, session: sessionRef(), principal: 'python' });
    expect(trace.principal).toBe('python');
    expect(probe.calls[0]?.call.principal).toBe('python');
  });

  it('merges the limits given over the defaults and records them', async () => {
    const { trace } = await runProgram({ code: 'return 1;', tools: {}, session: sessionRef(), limits: { maxToolCalls: 5, cpuTimeMs: 2000 } });
    expect(trace.limits).toEqual({ ...DEFAULT_VM_LIMITS, maxToolCalls: 5, cpuTimeMs: 2000 });
  });

  it('records each call in order with its arguments, decision, timing and value', async () => {
    const upper = valueTool((args) => String((args as { text: string }).text).toUpperCase());
    const count = valueTool((args) => (args as { items: unknown[] }).items.length);
    const code = [
      '// intent: shout and count',
      'const a = await upper({ text: "one" });',
      'const n = await count({ items: [1, 2, 3] });',
      'const [b, c] = await gather([upper({ text: "two" }), upper({ text: "three" })]);',
      'return [a, n, b, c];',
    ].join('\n');
    const { trace } = await runProgram({ code, tools: { upper: upper.tool, count: count.tool }, session: sessionRef() });
    expect(trace.ok).toBe(true);
    expect(trace.result).toEqual(['ONE', 3, 'TWO', 'THREE']);
    expect(trace.calls.map(({ seq, tool, args, decision, ok, result }) => ({ seq, tool, args, decision, ok, result }))).toEqual([
      { seq: 1, tool: 'upper', args: { text: 'one' }, decision: { action: 'allow' }, ok: true, result: 'ONE' },
      { seq: 2, tool: 'count', args: { items: [1, 2, 3] }, decision: { action: 'allow' }, ok: true, result: 3 },
      { seq: 3, tool: 'upper', args: { text: 'two' }, decision: { action: 'allow' }, ok: true, result: 'TWO' },
      { seq: 4, tool: 'upper', args: { text: 'three' }, decision: { action: 'allow' }, ok: true, result: 'THREE' },
    ]);
    for (const call of trace.calls) {
      expect(call.start).toBeGreaterThanOrEqual(0);
      expect(call.durationMs).toBeGreaterThanOrEqual(0);
      expect(call.error).toBeUndefined();
    }
    const starts = trace.calls.map((c) => c.start);
    expect([...starts].sort((x, y) => x - y)).toEqual(starts);
    expect(trace.stats?.toolCalls).toBe(4);
  });

  it('gives each tool the principal, the intent and a live signal', async () => {
    const probe = valueTool(() => 'ok');
    const code = '// intent: probe the tools\nawait probe({ n: 1 });';
    const { trace } = await runProgram({ code, tools: { probe: probe.tool }, session: sessionRef() });
    expect(probe.calls).toHaveLength(1);
    const [first] = probe.calls;
    expect(first?.args).toEqual({ n: 1 });
    expect(first?.call.principal).toBe(trace.principal);
    expect(first?.call.intent).toBe('probe the tools');
    expect(first?.call.signal).toBeInstanceOf(AbortSignal);
  });

  it('gives no intent to the tools of a program without one', async () => {
    const probe = valueTool(() => 'ok');
    await runProgram({ code: 'await probe({});', tools: { probe: probe.tool }, session: sessionRef() });
    expect(probe.calls[0]?.call).not.toHaveProperty('intent');
  });

  it('records the resource a tool reports', async () => {
    const read: ProgramTool = async () => ({ decision: { action: 'allow' }, resource: 'notes/a.txt', ok: true, value: 'hello' });
    const { trace } = await runProgram({ code: 'return await read({ path: "notes/../notes/a.txt" });', tools: { read }, session: sessionRef() });
    expect(trace.calls[0]).toMatchObject({ tool: 'read', args: { path: 'notes/../notes/a.txt' }, resource: 'notes/a.txt', ok: true, result: 'hello' });
    expect(trace.result).toBe('hello');
  });

  it('turns a denied call into an Error the program can catch, and records the decision', async () => {
    const read: ProgramTool = async () => ({ ...denied, resource: 'secrets/key.txt' });
    const code = [
      'try {',
      '  await read({ path: "secrets/key.txt" });',
      '  print("read it");',
      '} catch (error) {',
      '  print("caught " + (error instanceof Error) + ": " + error.message);',
      '}',
      'return "went on";',
    ].join('\n');
    const { trace } = await runProgram({ code, tools: { read }, session: sessionRef() });
    expect(trace.ok).toBe(true);
    expect(trace.stdout).toBe('caught true: read denied: no\n');
    expect(trace.result).toBe('went on');
    expect(trace.calls).toHaveLength(1);
    expect(trace.calls[0]).toMatchObject({
      seq: 1,
      tool: 'read',
      args: { path: 'secrets/key.txt' },
      resource: 'secrets/key.txt',
      decision: { action: 'deny', reason: 'no' },
      ok: false,
      error: 'read denied: no',
    });
    expect(trace.calls[0]).not.toHaveProperty('result');
  });

  it('ends the run when a refused call is not caught', async () => {
    const read: ProgramTool = async () => denied;
    const code = 'print("before");\nawait read({ path: "secrets/key.txt" });\nprint("after");';
    const { trace } = await runProgram({ code, tools: { read }, session: sessionRef() });
    expect(trace.ok).toBe(false);
    expect(trace.stdout).toBe('before\n');
    expect(trace.error).toMatchObject({ kind: 'thrown', message: 'Error: read denied: no' });
    expect(trace.calls[0]?.decision).toEqual({ action: 'deny', reason: 'no' });
  });

  it('gives the line of the call when a refused call ends the run', async () => {
    const read: ProgramTool = async () => denied;
    const code = 'const path = "secrets/key.txt";\nprint(path);\nawait read({ path });\nprint("after");';
    const { trace } = await runProgram({ code, tools: { read }, session: sessionRef() });
    expect(trace.error).toEqual({ kind: 'thrown', message: 'Error: read denied: no', line: 3 });
  });

  it('records a tool that rejects as a failed call the program sees', async () => {
    const broken: ProgramTool = async () => {
      throw new Error('disk on fire');
    };
    const code = 'try { await broken({}); } catch (e) { return e.message; }';
    const { trace } = await runProgram({ code, tools: { broken }, session: sessionRef() });
    expect(trace.result).toBe('disk on fire');
    expect(trace.calls[0]).toMatchObject({ tool: 'broken', decision: { action: 'allow' }, ok: false, error: 'disk on fire' });
  });

  it('keeps only the size of a value too large for the trace', async () => {
    const big = 'x'.repeat(1024 * 1024 + 10);
    const fetch = valueTool(() => big);
    const { trace } = await runProgram({ code: 'const text = await fetch({});\nreturn text.length;', tools: { fetch: fetch.tool }, session: sessionRef() });
    expect(trace.result).toBe(big.length);
    expect(trace.calls[0]).toMatchObject({ ok: true, resultBytes: big.length + 2 });
    expect(trace.calls[0]).not.toHaveProperty('result');
  });

  it('writes a failed run with its error kind and line', async () => {
    const code = '// intent: fail on purpose\nprint("partial");\nconst x = null;\nx.field;\nprint("never");';
    const { trace, tracePath } = await runProgram({ code, tools: {}, session: sessionRef() });
    expect(trace.ok).toBe(false);
    expect(trace.stdout).toBe('partial\n');
    expect(trace.error).toMatchObject({ kind: 'thrown', line: 4 });
    expect(trace.error?.message).toMatch(/^TypeError: /);
    expect(trace.intent).toBe('fail on purpose');
    expect(JSON.parse(readFileSync(tracePath, 'utf8'))).toEqual(trace);
  });

  it('writes a run that does not compile as a syntax error', async () => {
    const { trace } = await runProgram({ code: 'print("a");\nconst = 3;', tools: {}, session: sessionRef() });
    expect(trace.ok).toBe(false);
    expect(trace.error?.kind).toBe('syntax');
    expect(trace.stdout).toBe('');
  });

  it('writes the trace to <session>/traces/<id>.json, which parses to the same trace', async () => {
    const probe = valueTool(() => ({ n: 1, list: ['a'] }));
    const { trace, tracePath } = await runProgram({
      code: '// intent: write a trace\nprint(JSON.stringify(await probe({ q: "x" })));\nreturn { done: true };',
      tools: { probe: probe.tool },
      session: sessionRef(),
    });
    expect(dirname(tracePath)).toBe(join(session().dir, 'traces'));
    expect(tracePath).toBe(join(session().dir, 'traces', `${trace.id}.json`));
    expect(JSON.parse(readFileSync(tracePath, 'utf8'))).toEqual(trace);
  });

  it('gives the program its args as a global and keeps them in the trace', async () => {
    const { trace } = await runProgram({
      code: 'return typeof args === "undefined" ? "args is not defined" : args.department;',
      tools: {},
      session: sessionRef(),
      args: { department: 'sales' },
    });
    expect(trace.error).toBeUndefined();
    expect(trace.result).toBe('sales');
    expect(trace.args).toEqual({ department: 'sales' });
    const without = await runProgram({ code: 'return typeof args;', tools: {}, session: sessionRef() });
    expect(without.trace.result).toBe('undefined');
    expect('args' in without.trace).toBe(false);
  });

  it('returns the trace it wrote, even when a call the program left running settles later', async () => {
    let finish: (outcome: ProgramToolOutcome) => void = () => {};
    let settled: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      settled = resolve;
    });
    const slow: ProgramTool = () =>
      new Promise<ProgramToolOutcome>((resolve) => {
        finish = (outcome) => {
          resolve(outcome);
          settled();
        };
      });
    const { trace, tracePath } = await runProgram({ code: 'slow({});\nreturn "done";', tools: { slow }, session: sessionRef() });
    expect(trace.result).toBe('done');
    finish({ decision: { action: 'deny', reason: 'late' }, ok: false, error: 'slow denied: late' });
    await done;
    // Let the run's own bookkeeping of the late outcome happen (it is a few promise jobs away).
    await new Promise((resolve) => setImmediate(resolve));
    expect(JSON.parse(readFileSync(tracePath, 'utf8'))).toEqual(trace);
  });

  it('keeps values stored by one run for the next run of the session', async () => {
    const file = join(session().dir, 'program-store.json');
    const first = await runProgram({
      code: 'store("seen", ["a.txt"]);\nstore("count", 1);',
      tools: {},
      session: sessionRef(),
      store: createProgramStore(file),
    });
    expect(first.trace.ok).toBe(true);
    const second = await runProgram({
      code: 'const seen = load("seen");\nreturn { seen, count: load("count") + 1, missing: load("missing") === undefined };',
      tools: {},
      session: sessionRef(),
      store: createProgramStore(file),
    });
    expect(second.trace.result).toEqual({ seen: ['a.txt'], count: 2, missing: true });
  });

  it('lets the program catch the error of a full store', async () => {
    const store = createProgramStore(join(session().dir, 'program-store.json'), 32);
    const code = 'try { store("big", "x".repeat(100)); } catch (e) { print(e.message); }\nreturn load("big");';
    const { trace } = await runProgram({ code, tools: {}, session: sessionRef(), store });
    expect(trace.ok).toBe(true);
    expect(trace.stdout).toMatch(/^store is full/);
    expect(trace.result).toBeUndefined();
  });

  it('ends the run when its signal is aborted, and aborts the calls in flight', async () => {
    const controller = new AbortController();
    let sawAbort = false;
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const wait: ProgramTool = (_args, call) =>
      new Promise((resolve) => {
        call.signal.addEventListener('abort', () => {
          sawAbort = true;
          resolve({ decision: { action: 'allow' }, ok: false, error: 'cancelled' });
        });
        started();
      });
    const run = runProgram({ code: 'await wait({});\nprint("after");', tools: { wait }, session: sessionRef(), signal: controller.signal });
    await running;
    controller.abort();
    const { trace } = await run;
    expect(trace.ok).toBe(false);
    expect(trace.error?.kind).toBe('aborted');
    expect(trace.stdout).toBe('');
    expect(sawAbort).toBe(true);
  });
});

describe('a trace no program value can keep from being written', () => {
  it('cuts a value nested a thousand deep, keeps the rest, and is no recorded test', async () => {
    const code = 'let v = 0; for (let i = 0; i < 1000; i++) v = [v]; const r = await tools.echo({ v }); return { r, fine: "kept" };';
    const { tool } = valueTool((args) => args);
    const { trace, tracePath } = await runProgram({ code, tools: { echo: tool }, session: sessionRef() });
    expect(trace.ok).toBe(true);
    const written = JSON.parse(readFileSync(tracePath, 'utf8')) as ProgramTrace;
    expect(written.calls).toHaveLength(1);
    expect(written.cut?.some((line) => line.startsWith('call #1 arguments: [cut: nested deeper than 64 levels]'))).toBe(true);
    expect(JSON.stringify(written.result)).toContain('"fine":"kept"');
    expect(unreplayable(written)).toMatch(/^its trace had to cut what it recorded/);
  });

  it('keeps values only up to its size cap, then their size', () => {
    const big = 'x'.repeat(TRACE_VALUES_MAX_BYTES / 2);
    const base = { id: 't', sessionId: 's', createdAt: '', code: '', sha256: '', principal: 'p', stdout: '', droppedOutputBytes: 0, ok: true };
    const calls = [1, 2, 3].map((seq) => ({ seq, tool: 'read', args: { big }, start: 0, durationMs: 0, ok: true, decision: { action: 'allow' as const }, result: 'r' }));
    const written = JSON.parse(traceText({ ...base, calls })) as ProgramTrace;
    expect(written.calls.map((call) => (call.argsBytes === undefined ? 'kept' : call.argsBytes))).toEqual(['kept', TRACE_VALUES_MAX_BYTES / 2 + 10, TRACE_VALUES_MAX_BYTES / 2 + 10]);
    expect(written.cut).toHaveLength(2);
  });
});
