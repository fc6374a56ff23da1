import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { replayTest } from '../../src/ptc/replay-test';
import { runProgram, type ProgramTool, type ProgramToolOutcome } from '../../src/ptc/run-program';
import {
  findProgram,
  programRoots,
  saveProgram,
  testFromTrace,
  unreplayable,
  type ProgramRecord,
  type ProgramRoot,
  type ProgramTest,
  type RecordedCall,
} from '../../src/ptc/saved-programs';
import type { ProgramTrace } from '../../src/ptc/trace';
import type { VmLimits } from '../../src/program-vm/run-in-vm';

let base = '';
beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'fence-replay-')));
});
afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

const home = () => join(base, 'home');

/** A real tool: answers with `value(args)` after `delayMs`, counting the calls it really gets. */
function realTool(value: (args: unknown) => unknown, delayMs: (args: unknown) => number = () => 0) {
  const seen: unknown[] = [];
  const tool: ProgramTool = async (args) => {
    seen.push(args);
    const wait = delayMs(args);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    return { decision: { action: 'allow' }, ok: true, value: value(args) };
  };
  return { tool, seen };
}

const DIRECTORY: Record<string, { name: string; spent: number }[]> = {
  engineering: [
    { name: 'ada', spent: 1200 },
    { name: 'linus', spent: 300 },
  ],
  sales: [{ name: 'grace', spent: 1900 }],
};

/** Runs `code` for real in the sandbox and gives its trace. */
async function traceOf(
  code: string,
  tools: Record<string, ProgramTool>,
  options: { args?: unknown; limits?: Partial<VmLimits> } = {},
): Promise<ProgramTrace> {
  const { trace } = await runProgram({
    code,
    tools,
    session: { id: 'session-1', dir: join(home(), 'sessions', 'session-1') },
    ...(options.args !== undefined ? { args: options.args } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
  });
  expect(unreplayable(trace)).toBeUndefined();
  return trace;
}

/** The recorded test of a real run, as it reads back from disk (through JSON). */
async function recorded(code: string, tools: Record<string, ProgramTool>, options: { args?: unknown; limits?: Partial<VmLimits> } = {}) {
  const trace = await traceOf(code, tools, options);
  const test = JSON.parse(JSON.stringify(testFromTrace(trace))) as ProgramTest;
  return { trace, test };
}

const OVER_LIMIT = [
  '// intent: find the staff of a department over their travel limit',
  '// param department: string = "engineering" — the department to check',
  'const people = await lookup({ department: args.department });',
  'print("checked " + people.length + " people");',
  'const over = people.filter((p) => p.spent > 1000).map((p) => p.name);',
  'print("over: " + over.join(", "));',
  'return over;',
].join('\n');

describe('replayTest', () => {
  it('passes for a saved program replayed from its files, without calling the real tool', async () => {
    const lookup = realTool((args) => DIRECTORY[(args as { department: string }).department] ?? []);
    const trace = await traceOf(OVER_LIMIT, { lookup: lookup.tool }, { args: { department: 'engineering' } });
    const roots = programRoots(home(), join(base, 'workspace'));
    const saved = saveProgram(roots, roots[1] as ProgramRoot, 'over_limit', trace, ['lookup', 'write']);
    if ('error' in saved) throw new Error(saved.error);
    expect(lookup.seen).toHaveLength(1);

    const found = findProgram(roots, 'over_limit@1');
    if ('error' in found) throw new Error(found.error);
    const record = JSON.parse(readFileSync(join(found.dir, 'v1.json'), 'utf8')) as ProgramRecord;
    const code = readFileSync(join(found.dir, 'v1.js'), 'utf8');
    const outcome = await replayTest(code, record.tests[0] as ProgramTest, { tools: record.tools });
    expect(outcome.problems).toEqual([]);
    expect(outcome.passed).toBe(true);
    expect(outcome.run.ok).toBe(true);
    expect(outcome.run.stdout).toBe('checked 2 people\nover: ada\n');
    expect(outcome.run.result).toEqual(['ada']);
    expect(outcome.run.stats.toolCalls).toBe(1);
    // The real tool was not called again.
    expect(lookup.seen).toHaveLength(1);
  });

  it('gives the program the recorded arguments as args', async () => {
    const lookup = realTool((args) => DIRECTORY[(args as { department: string }).department] ?? []);
    const { test } = await recorded(OVER_LIMIT, { lookup: lookup.tool }, { args: { department: 'sales' } });
    expect(test.args).toEqual({ department: 'sales' });
    const outcome = await replayTest(OVER_LIMIT, test, { tools: ['lookup'] });
    expect(outcome.problems).toEqual([]);
    expect(outcome.run.result).toEqual(['grace']);

    // Other arguments lead the program to another call, which the recording does not have.
    const other = await replayTest(OVER_LIMIT, { ...test, args: { department: 'engineering' } }, { tools: ['lookup'] });
    expect(other.passed).toBe(false);
    expect(other.problems[0]).toBe('the code called lookup({"department":"engineering"}), which the recording does not have');
  });

  it('leaves args undefined when the recording has none', async () => {
    const { test } = await recorded('print(typeof args);\nreturn typeof args;', {});
    expect(test).not.toHaveProperty('args');
    const outcome = await replayTest('print(typeof args);\nreturn typeof args;', test, { tools: [] });
    expect(outcome.problems).toEqual([]);
    expect(outcome.run.result).toBe('undefined');
  });

  it('passes when parallel calls finish in another order than they were recorded in', async () => {
    // Recorded: the first call is the slowest, so the calls finished in reverse.
    const finished: number[] = [];
    const square = realTool(
      (args) => {
        const { n } = args as { n: number };
        finished.push(n);
        return n * n;
      },
      (args) => 60 - (args as { n: number }).n * 15,
    );
    const code = [
      '// intent: square in parallel',
      'const squares = await gather([1, 2, 3].map((n) => square({ n })));',
      'print(squares.join(" "));',
      'return squares;',
    ].join('\n');
    const { trace, test } = await recorded(code, { square: square.tool });
    expect(finished).toEqual([3, 2, 1]);
    expect(trace.calls.map((c) => (c.args as { n: number }).n)).toEqual([1, 2, 3]);

    const outcome = await replayTest(code, test, { tools: ['square'] });
    expect(outcome.problems).toEqual([]);
    expect(outcome.passed).toBe(true);

    // The recording in another order still matches each call to its own outcome.
    const shuffled: ProgramTest = { ...test, calls: [2, 0, 1].map((i) => test.calls[i] as RecordedCall) };
    const again = await replayTest(code, shuffled, { tools: ['square'] });
    expect(again.problems).toEqual([]);
    expect(again.run.result).toEqual([1, 4, 9]);

    // So does code that starts the same calls in another order.
    const reordered = [
      '// intent: square in parallel',
      'const squares = (await gather([3, 2, 1].map((n) => square({ n })))).reverse();',
      'print(squares.join(" "));',
      'return squares;',
    ].join('\n');
    const third = await replayTest(reordered, test, { tools: ['square'] });
    expect(third.problems).toEqual([]);
    expect(square.seen).toHaveLength(3);
  });

  it('gives equal calls their recorded outcomes in the order they were made', async () => {
    let counter = 0;
    const next = realTool(() => ++counter);
    const code = 'const a = await next({});\nconst b = await next({});\nconst c = await next({});\nprint([a, b, c].join(","));\nreturn [a, b, c];';
    const { test } = await recorded(code, { next: next.tool });
    expect(test.calls.map((c) => c.result)).toEqual([1, 2, 3]);
    const outcome = await replayTest(code, test, { tools: ['next'] });
    expect(outcome.problems).toEqual([]);
    expect(outcome.run.result).toEqual([1, 2, 3]);
    expect(counter).toBe(3);
  });

  it('matches arguments whatever the order of their keys', async () => {
    const echo = realTool((args) => args);
    const { test } = await recorded('return await echo({ a: 1, b: { c: [1, 2], d: "x" } });', { echo: echo.tool });
    const outcome = await replayTest('return await echo({ b: { d: "x", c: [1, 2] }, a: 1 });', test, { tools: ['echo'] });
    expect(outcome.problems).toEqual([]);
  });

  it('fails when changed code prints something else, naming the first line that differs', async () => {
    const lookup = realTool((args) => DIRECTORY[(args as { department: string }).department] ?? []);
    const { test } = await recorded(OVER_LIMIT, { lookup: lookup.tool }, { args: { department: 'engineering' } });
    const changed = OVER_LIMIT.replace('print("over: " + over.join(", "));', 'print("over the limit: " + over.join(", "));');
    const outcome = await replayTest(changed, test, { tools: ['lookup'] });
    expect(outcome.passed).toBe(false);
    expect(outcome.problems).toEqual(['the output differs:\n  line 2: recorded "over: ada"\n  line 2: now      "over the limit: ada"']);

    const more = await replayTest(`${OVER_LIMIT.replace('return over;', '')}print("extra");\nreturn over;`, test, { tools: ['lookup'] });
    expect(more.problems).toHaveLength(1);
    expect(more.problems[0]).toMatch(/^the output differs:\n {2}line 3: recorded ""\n {2}line 3: now {6}"extra"$/);

    const silent = await replayTest(OVER_LIMIT.replace(/print\([^\n]*\n/g, ''), test, { tools: ['lookup'] });
    expect(silent.problems).toEqual(['the output differs:\n  line 1: recorded "checked 2 people"\n  line 1: now      ""']);
  });

  it('shows "(no line)" where one output has fewer lines', async () => {
    const { test } = await recorded('print("a");\nprint("b");', {});
    const outcome = await replayTest('print("a");\nprint("b");\nconsole.log("c");', { ...test, expect: { ...test.expect, stdout: 'a\nb' } }, { tools: [] });
    expect(outcome.problems).toEqual(['the output differs:\n  line 3: recorded (no line)\n  line 3: now      "c"']);
  });

  it('fails when changed code returns something else', async () => {
    const lookup = realTool((args) => DIRECTORY[(args as { department: string }).department] ?? []);
    const { test } = await recorded(OVER_LIMIT, { lookup: lookup.tool }, { args: { department: 'engineering' } });
    const outcome = await replayTest(OVER_LIMIT.replace('return over;', 'return people.map((p) => p.name);'), test, { tools: ['lookup'] });
    expect(outcome.problems).toEqual(['the result differs: recorded ["ada"], now ["ada","linus"]']);
    const none = await replayTest(OVER_LIMIT.replace('return over;', ''), test, { tools: ['lookup'] });
    expect(none.problems).toEqual(['the result differs: recorded ["ada"], now undefined']);
  });

  it('fails on an extra call, which the program sees as an error', async () => {
    const lookup = realTool((args) => DIRECTORY[(args as { department: string }).department] ?? []);
    const { test } = await recorded(OVER_LIMIT, { lookup: lookup.tool }, { args: { department: 'engineering' } });
    const extra = OVER_LIMIT.replace(
      'return over;',
      'try { await lookup({ department: "sales" }); } catch (e) { print("caught: " + e.message); }\nreturn over;',
    );
    const outcome = await replayTest(extra, test, { tools: ['lookup'] });
    expect(outcome.passed).toBe(false);
    expect(outcome.problems[0]).toBe('the code called lookup({"department":"sales"}), which the recording does not have');
    expect(outcome.run.stdout).toContain('caught: no recorded result for lookup({"department":"sales"})');
    expect(outcome.problems[1]).toMatch(/^the output differs:\n {2}line 3: recorded ""\n {2}line 3: now {6}"caught: no recorded result/);
    expect(outcome.problems).toHaveLength(2);
    expect(lookup.seen).toHaveLength(1);

    // Uncaught, it ends the run.
    const uncaught = await replayTest(OVER_LIMIT.replace('return over;', 'await lookup({ department: "sales" });\nreturn over;'), test, { tools: ['lookup'] });
    expect(uncaught.problems[0]).toContain('which the recording does not have');
    expect(uncaught.problems[1]).toBe('the run failed (thrown: Error: no recorded result for lookup({"department":"sales"}))');
  });

  it('fails on a call to a tool the recording never called', async () => {
    const lookup = realTool((args) => DIRECTORY[(args as { department: string }).department] ?? []);
    const write = realTool(() => 'written');
    const code = OVER_LIMIT.replace('return over;', 'if (over.length > 5) await write({ path: "report.txt" });\nreturn over;');
    const { test } = await recorded(code, { lookup: lookup.tool, write: write.tool }, { args: { department: 'engineering' } });
    expect(test.calls.map((c) => c.tool)).toEqual(['lookup']);
    // The branch now taken calls write: the replay has it (it is among the program's tools), but no recording of it.
    const outcome = await replayTest(code.replace('over.length > 5', 'over.length > 0'), test, { tools: ['lookup', 'write'] });
    expect(outcome.problems[0]).toBe('the code called write({"path":"report.txt"}), which the recording does not have');
    expect(outcome.run.error?.message).toBe('Error: no recorded result for write({"path":"report.txt"})');
    expect(write.seen).toEqual([]);
  });

  it('fails on a missing call, naming it', async () => {
    const lookup = realTool((args) => DIRECTORY[(args as { department: string }).department] ?? []);
    const code = 'const a = await lookup({ department: "engineering" });\nconst b = await lookup({ department: "sales" });\nreturn a.length;';
    const { test } = await recorded(code, { lookup: lookup.tool });
    const outcome = await replayTest('const a = await lookup({ department: "engineering" });\nreturn a.length;', test, { tools: ['lookup'] });
    expect(outcome.passed).toBe(false);
    expect(outcome.problems).toEqual(['the recorded call #2 lookup({"department":"sales"}) was not made']);
  });

  it('fails on changed arguments, naming both the new call and the recorded one', async () => {
    const lookup = realTool((args) => DIRECTORY[(args as { department: string }).department] ?? []);
    const { test } = await recorded(OVER_LIMIT, { lookup: lookup.tool }, { args: { department: 'engineering' } });
    const changed = OVER_LIMIT.replace('lookup({ department: args.department })', 'lookup({ department: args.department, active: true })');
    const outcome = await replayTest(changed, test, { tools: ['lookup'] });
    expect(outcome.passed).toBe(false);
    expect(outcome.problems).toContain('the code called lookup({"department":"engineering","active":true}), which the recording does not have');
    expect(outcome.problems).toContain('the recorded call #1 lookup({"department":"engineering"}) was not made');
    expect(outcome.problems).toContain('the run failed (thrown: Error: no recorded result for lookup({"department":"engineering","active":true}))');
  });

  it('shortens long arguments in its problems', async () => {
    const echo = realTool(() => 'ok');
    const { test } = await recorded('return await echo({ text: "short" });', { echo: echo.tool });
    const outcome = await replayTest(`return await echo({ text: "${'y'.repeat(500)}" });`, test, { tools: ['echo'] });
    const first = outcome.problems[0] ?? '';
    expect(first.length).toBeLessThan(250);
    expect(first).toContain('…');
  });

  it('throws a recorded failed call into the program again, which can catch it', async () => {
    const read: ProgramTool = async () => ({ decision: { action: 'deny', reason: 'secret' }, ok: false, error: 'read denied: secret' });
    const code = [
      'let text;',
      'try {',
      '  text = await read({ path: "secrets/key.txt" });',
      '} catch (e) {',
      '  print("caught " + (e instanceof Error) + " " + e.name + ": " + e.message);',
      '  text = "fallback";',
      '}',
      'return text;',
    ].join('\n');
    const { test } = await recorded(code, { read });
    expect(test.calls).toEqual([{ tool: 'read', args: { path: 'secrets/key.txt' }, ok: false, error: 'read denied: secret' }]);
    const outcome = await replayTest(code, test, { tools: ['read'] });
    expect(outcome.problems).toEqual([]);
    expect(outcome.run.stdout).toBe('caught true Error: read denied: secret\n');
    expect(outcome.run.result).toBe('fallback');

    // Code that no longer catches it fails where the recording worked.
    const uncaught = await replayTest('return await read({ path: "secrets/key.txt" });', test, { tools: ['read'] });
    expect(uncaught.problems).toContain('the run failed (thrown: Error: read denied: secret)');
  });

  it('throws "failed" for a recorded failure that kept no message', async () => {
    const test: ProgramTest = {
      fromTrace: 'hand-made',
      recordedAt: '2026-03-01T12:00:00.000Z',
      calls: [{ tool: 'read', args: {}, ok: false }],
      expect: { ok: true, stdout: 'failed\n' },
    };
    const outcome = await replayTest('try { await read({}); } catch (e) { print(e.message); }', test, { tools: [] });
    expect(outcome.problems).toEqual([]);
  });

  it('gives a recorded call that returned nothing undefined again', async () => {
    const ping = realTool(() => undefined);
    const code = 'const r = await ping({});\nprint(String(r));\nreturn r === undefined;';
    const { test } = await recorded(code, { ping: ping.tool });
    expect(test.calls[0]).toEqual({ tool: 'ping', args: {}, ok: true });
    const outcome = await replayTest(code, test, { tools: ['ping'] });
    expect(outcome.problems).toEqual([]);
    expect(outcome.run.result).toBe(true);
  });

  it('compares the kind and the message of a recorded failed run', async () => {
    const code = 'print("start");\nthrow new Error("boom");';
    const { test } = await recorded(code, {});
    expect(test.expect).toMatchObject({ ok: false, stdout: 'start\n', error: { kind: 'thrown', message: 'Error: boom' } });

    expect((await replayTest(code, test, { tools: [] })).problems).toEqual([]);
    // The line is not compared: moving the throw down keeps the test passing.
    expect((await replayTest(`print("start");\n\n\nthrow new Error("boom");`, test, { tools: [] })).problems).toEqual([]);

    const otherMessage = await replayTest('print("start");\nthrow new Error("bang");', test, { tools: [] });
    expect(otherMessage.problems).toEqual(['the run failed with thrown: Error: bang, the recorded one with thrown: Error: boom']);

    const otherKind = await replayTest('print("start");\nconst = 1;', test, { tools: [] });
    expect(otherKind.passed).toBe(false);
    expect(otherKind.problems[0]).toMatch(/^the run failed with syntax: .*, the recorded one with thrown: Error: boom$/);

    const worked = await replayTest('print("start");\nreturn 1;', test, { tools: [] });
    expect(worked.problems).toEqual(['the run worked where the recorded one failed', 'the result differs: recorded undefined, now 1']);
  });

  it('runs under the recorded limits', async () => {
    const lookup = realTool(() => []);
    const code = 'for (let i = 0; i < 5; i++) await lookup({ i });\nreturn "all";';
    const { test } = await recorded(code, { lookup: lookup.tool }, { limits: { maxToolCalls: 2 } });
    expect(test.limits?.maxToolCalls).toBe(2);
    expect(test.expect.ok).toBe(false);
    expect(test.expect.error?.kind).toBe('tool_calls');
    expect(test.calls).toHaveLength(2);

    const outcome = await replayTest(code, test, { tools: ['lookup'] });
    expect(outcome.problems).toEqual([]);
    expect(outcome.run.error?.kind).toBe('tool_calls');

    // Without the recorded limits the run would go on and make calls the recording lacks.
    const { limits: _limits, ...unlimited } = test;
    const loose = await replayTest(code, unlimited, { tools: ['lookup'] });
    expect(loose.passed).toBe(false);
    expect(loose.problems[0]).toBe('the code called lookup({"i":2}), which the recording does not have');
  });

  it('gives each replay a store of its own that starts empty and keeps what the run stores, as a session does', async () => {
    const code = 'const before = load("seen");\nstore("seen", [1]);\nreturn [before === undefined ? "empty" : "kept", load("seen")];';
    const test: ProgramTest = { fromTrace: 'hand-made', recordedAt: '2026-03-01T12:00:00.000Z', calls: [], expect: { ok: true, stdout: '', result: ['empty', [1]] } };
    expect((await replayTest(code, test, { tools: [] })).problems).toEqual([]);
    expect((await replayTest(code, test, { tools: [] })).problems).toEqual([]);
  });

  it('has no function but the recorded tools and those it is told of', async () => {
    const { test } = await recorded('return 1;', {});
    const code = 'return [typeof lookup, typeof write, typeof tools.write, typeof require, typeof process, typeof fetch];';
    const outcome = await replayTest(code, { ...test, expect: { ...test.expect, result: ['undefined', 'function', 'function', 'undefined', 'undefined', 'undefined'] } }, { tools: ['write'] });
    expect(outcome.problems).toEqual([]);

    const unknown = await replayTest('return await lookup({});', test, { tools: [] });
    expect(unknown.passed).toBe(false);
    expect(unknown.run.error?.message).toMatch(/^ReferenceError: .*lookup/);
  });

  it('ends when its signal is aborted', async () => {
    const { test } = await recorded('return 1;', {});
    const controller = new AbortController();
    controller.abort();
    const outcome = await replayTest('while (true) {}', test, { tools: [], signal: controller.signal });
    expect(outcome.passed).toBe(false);
    expect(outcome.run.error?.kind).toBe('aborted');
  });

  it('replays parallel calls of which one failed and one answered', async () => {
    // A recording of two calls in flight at once: one failed, one answered.
    const flaky: ProgramTool = async (args): Promise<ProgramToolOutcome> =>
      (args as { n: number }).n === 1
        ? { decision: { action: 'allow' }, ok: false, error: 'timed out' }
        : { decision: { action: 'allow' }, ok: true, value: 'fine' };
    const code = [
      'const results = await Promise.allSettled([flaky({ n: 1 }), flaky({ n: 2 })]);',
      'return results.map((r) => r.status === "fulfilled" ? r.value : r.reason.message);',
    ].join('\n');
    const { test } = await recorded(code, { flaky });
    const outcome = await replayTest(code, test, { tools: ['flaky'] });
    expect(outcome.problems).toEqual([]);
    expect(outcome.run.result).toEqual(['timed out', 'fine']);
  });
});
