import { describe, expect, it } from 'vitest';
import {
  DEFAULT_VM_LIMITS,
  runInVm,
  type HostFunction,
  type VmResult,
  type VmRunOptions,
} from '../../src/program-vm/run-in-vm';

/** Small limits keep the suite quick; each test overrides what it is about. */
const TEST_LIMITS = { memoryBytes: 32 * 1024 * 1024, cpuTimeMs: 500, wallTimeMs: 2000 };

function run(code: string, options: Omit<Partial<VmRunOptions>, 'code'> = {}): Promise<VmResult> {
  return runInVm({ code, functions: {}, ...options, limits: { ...TEST_LIMITS, ...options.limits } });
}

/** Resolves after `ms` on a host timer. */
function later<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms));
}

/** A host function that records how many of its calls are in flight at once. */
function concurrencyProbe(delayMs: number): { fn: HostFunction; maxInFlight: () => number; calls: unknown[] } {
  let inFlight = 0;
  let max = 0;
  const calls: unknown[] = [];
  const fn: HostFunction = async (args) => {
    calls.push(args);
    inFlight += 1;
    max = Math.max(max, inFlight);
    try {
      return await later(delayMs, args);
    } finally {
      inFlight -= 1;
    }
  };
  return { fn, maxInFlight: () => max, calls };
}

describe('runInVm: values', () => {
  it('returns the top-level return value as plain data', async () => {
    expect((await run('return 1 + 2')).result).toBe(3);
    expect((await run('return "text"')).result).toBe('text');
    expect((await run('return null')).result).toBeNull();
    expect((await run('return { a: [1, { b: true }], c: "x" }')).result).toEqual({ a: [1, { b: true }], c: 'x' });
  });

  it('has no result when the program returns nothing, and turns BigInt into strings', async () => {
    const none = await run('const x = 1;');
    expect(none.ok).toBe(true);
    expect('result' in none).toBe(false);
    expect((await run('return { n: 12345678901234567890n, list: [1n] }')).result).toEqual({
      n: '12345678901234567890',
      list: ['1'],
    });
  });

  it('supports top-level await', async () => {
    const result = await run('const x = await Promise.resolve(20);\nconst y = await new Promise((r) => r(1));\nreturn x * 2 + y');
    expect(result).toMatchObject({ ok: true, result: 41 });
  });

  it('reports a result that cannot be serialised as an error, not a crash', async () => {
    const cyclic = await run('const a = {}; a.self = a; return a');
    expect(cyclic.ok).toBe(false);
    expect(cyclic.error?.kind).toBe('thrown');
    expect(cyclic.error?.message).toMatch(/not JSON-compatible/);
    const fn = await run('return () => 1');
    expect(fn.error?.message).toMatch(/function cannot leave the sandbox/);
  });

  it('defines the given globals as data', async () => {
    const result = await run('return [args.department, typeof args, limit];', {
      globals: { args: { department: 'sales' }, limit: 3 },
    });
    expect(result.result).toEqual(['sales', 'object', 3]);
  });

  it('gives the program a clock rounded to 100 ms', async () => {
    const result = await run(
      'class Later extends Date {}\n' +
        'return [Date.now() % 100, new Date().getTime() % 100, new Date(5).getTime(), typeof Date(), new Later() instanceof Date, typeof performance]',
    );
    expect(result.result).toEqual([0, 0, 5, 'string', true, 'undefined']);
  });
});

describe('runInVm: output', () => {
  it('prints arguments joined by spaces, objects as JSON, a line per call', async () => {
    const result = await run(
      'print("a", 1, { b: 2 }, [3], null, undefined, true);\nconsole.log("log");\nconsole.info("info");\nconsole.warn("warn");\nconsole.error(new TypeError("bad"));\nprint();',
    );
    expect(result.stdout).toBe('a 1 {"b":2} [3] null undefined true\nlog\ninfo\nwarn\nTypeError: bad\n\n');
  });

  it('keeps the head of the output up to the cap and counts the rest', async () => {
    const result = await run('print("0123456789abcdef");\nprint("more");', { limits: { maxOutputBytes: 10 } });
    expect(result.ok).toBe(true);
    expect(result.stdout).toBe('0123456789');
    expect(result.droppedOutputBytes).toBe(17 + 5 - 10);
  });

  it('never cuts a multi-byte character in two', async () => {
    const result = await run('print("ééééé")', { limits: { maxOutputBytes: 5 } });
    expect(result.stdout).toBe('éé');
    expect(result.droppedOutputBytes).toBe(11 - 4);
  });
});

describe('runInVm: host functions', () => {
  it('calls host functions as globals and as tools.<name> with JSON arguments and results', async () => {
    const seen: unknown[] = [];
    const functions: Record<string, HostFunction> = {
      lookup: async (args) => {
        seen.push(args);
        return { found: true, echo: args };
      },
      nothing: async () => undefined,
    };
    const result = await run(
      'const a = await lookup({ path: "a.txt", n: [1, 2] });\n' +
        'const b = await tools.lookup({ path: "b.txt" });\n' +
        'const c = await nothing();\n' +
        'return [a, b.echo.path, c === undefined, typeof tools.nothing]',
      { functions },
    );
    expect(result.result).toEqual([{ found: true, echo: { path: 'a.txt', n: [1, 2] } }, 'b.txt', true, 'function']);
    expect(seen).toEqual([{ path: 'a.txt', n: [1, 2] }, { path: 'b.txt' }]);
    expect(result.stats.toolCalls).toBe(3);
  });

  it('runs host calls in parallel: five timers are all in flight at once', async () => {
    const probe = concurrencyProbe(50);
    const result = await run('return await gather([1, 2, 3, 4, 5].map((i) => wait({ i })))', {
      functions: { wait: probe.fn },
    });
    expect(result.result).toEqual([1, 2, 3, 4, 5].map((i) => ({ i })));
    expect(probe.maxInFlight()).toBe(5);
  });

  it('queues calls beyond maxConcurrentCalls instead of failing them', async () => {
    const probe = concurrencyProbe(20);
    const result = await run('return await gather([1, 2, 3, 4, 5, 6, 7].map((i) => wait(i)))', {
      functions: { wait: probe.fn },
      limits: { maxConcurrentCalls: 2 },
    });
    expect(result.result).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(probe.maxInFlight()).toBe(2);
    expect(probe.calls).toHaveLength(7);
  });

  it('turns a host rejection into a catchable Error with the same message and name', async () => {
    const functions: Record<string, HostFunction> = {
      missing: async () => {
        throw new Error('no such file: a.txt');
      },
      picky: async () => {
        throw new TypeError('path must be a string');
      },
      odd: () => Promise.reject('plain reason'),
    };
    const result = await run(
      'const out = [];\n' +
        'for (const f of [missing, picky, odd]) {\n' +
        '  try { await f({}); } catch (e) { out.push([e instanceof Error, e.name, e.message]); }\n' +
        '}\n' +
        'return out;',
      { functions },
    );
    expect(result.result).toEqual([
      [true, 'Error', 'no such file: a.txt'],
      [true, 'TypeError', 'path must be a string'],
      [true, 'Error', 'plain reason'],
    ]);
  });

  it('ends the run with the host error, at the line of the call, when the program does not catch it', async () => {
    const result = await run('const path = "a";\nprint(path);\nawait fail({ path });\nprint("after");', {
      functions: { fail: async () => Promise.reject(new RangeError('out of range')) },
    });
    expect(result.ok).toBe(false);
    expect(result.error).toEqual({ kind: 'thrown', message: 'RangeError: out of range', line: 3 });
    expect(result.stdout).toBe('a\n');
  });

  it('rejects a host result that is not JSON-compatible with a catchable error', async () => {
    const result = await run('try { await big({}); return "no error"; } catch (e) { return e.message; }', {
      functions: { big: async () => ({ n: 10n }) },
    });
    expect(result.result).toMatch(/result of big is not JSON-compatible/);
  });

  it('exposes a tool named like a built-in only under tools.<name>', async () => {
    const result = await run('print("still printing");\nreturn await tools.print({ x: 1 });', {
      functions: { print: async (args) => ({ printed: args }) },
    });
    expect(result.stdout).toBe('still printing\n');
    expect(result.result).toEqual({ printed: { x: 1 } });
  });

  it('reaches a tool whose name is not an identifier through tools[name]', async () => {
    const result = await run('return await tools["web-search"]({ q: "x" });', {
      functions: { 'web-search': async (args) => ({ searched: args }) },
    });
    expect(result.result).toEqual({ searched: { q: 'x' } });
  });

  it('keeps concurrent runs apart', async () => {
    const functions: Record<string, HostFunction> = { slow: (args) => later(20, args) };
    const [a, b] = await Promise.all([
      run('globalThis.mark = "a";\nconst r = await slow("a");\nreturn [r, mark];', { functions }),
      run('globalThis.mark = "b";\nconst r = await slow("b");\nreturn [r, mark];', { functions }),
    ]);
    expect(a.result).toEqual(['a', 'a']);
    expect(b.result).toEqual(['b', 'b']);
  });

  it('aborts a host call still in flight when the program finishes without awaiting it', async () => {
    let signal: AbortSignal | undefined;
    const result = await run('slow({}); return "done";', {
      functions: {
        slow: (_args, callSignal) => {
          signal = callSignal;
          return new Promise(() => {});
        },
      },
    });
    expect(result.result).toBe('done');
    expect(signal?.aborted).toBe(true);
  });
});

describe('runInVm: errors', () => {
  it('reports a syntax error with its line in the program', async () => {
    const result = await run('const a = 1;\nconst b = 2;\nlet x = ;\nreturn a;');
    expect(result.ok).toBe(false);
    expect(result.error?.kind).toBe('syntax');
    expect(result.error?.message).toMatch(/^SyntaxError: /);
    expect(result.error?.line).toBe(3);
  });

  it('reports a thrown error with the line it was thrown on', async () => {
    const result = await run('const a = 1;\nfunction check(n) {\n  if (n > 0) throw new Error("bad value " + n);\n}\ncheck(a);');
    expect(result.error).toEqual({ kind: 'thrown', message: 'Error: bad value 1', line: 3 });
  });

  it('reports the line of an error thrown after an await', async () => {
    const result = await run('await later({});\nconst x = null;\nx.field;', { functions: { later: async () => 1 } });
    expect(result.error?.kind).toBe('thrown');
    expect(result.error?.message).toMatch(/^TypeError: /);
    expect(result.error?.line).toBe(3);
  });

  it('fails on a rejected top-level promise whatever the value', async () => {
    expect((await run('throw 1')).error).toMatchObject({ kind: 'thrown', message: 'Uncaught 1' });
    expect((await run('throw "oops"')).error).toMatchObject({ kind: 'thrown', message: 'Uncaught "oops"' });
    expect((await run('throw { code: 7 }')).error).toMatchObject({ kind: 'thrown', message: 'Uncaught {"code":7}' });
    expect((await run('await Promise.reject(new Error("late"))')).error).toMatchObject({ kind: 'thrown', message: 'Error: late' });
  });
});

describe('runInVm: helpers', () => {
  it('gather is Promise.all and unique deduplicates values and objects by JSON', async () => {
    const result = await run(
      'const all = await gather([1, Promise.resolve(2), tools.three()]);\n' +
        'return [all, unique([1, 1, "1", null, null, { a: 1 }, { a: 1 }, [1], [1], { a: 2 }])];',
      { functions: { three: async () => 3 } },
    );
    expect(result.result).toEqual([[1, 2, 3], [1, '1', null, { a: 1 }, [1], { a: 2 }]]);
  });

  it('store and load go through the given store, and its errors reach the program', async () => {
    const backing = new Map<string, unknown>();
    const store = {
      get: (key: string) => backing.get(key),
      set: (key: string, value: unknown) => {
        if (key === 'huge') throw new Error('store is full');
        backing.set(key, value);
      },
    };
    const result = await run(
      'store("k", { list: [1, 2], n: 5n });\n' +
        'let error = "";\n' +
        'try { store("huge", 1); } catch (e) { error = e.message; }\n' +
        'return [load("k"), load("missing") === undefined, error];',
      { store },
    );
    expect(result.result).toEqual([{ list: [1, 2], n: '5' }, true, 'store is full']);
    expect(backing.get('k')).toEqual({ list: [1, 2], n: '5' });
  });

  it('store and load fail clearly when the run has no store', async () => {
    const result = await run('try { store("k", 1); } catch (e) { return e.message; }');
    expect(result.result).toMatch(/store\(\) is not available/);
  });
});

describe('runInVm: limits and stats', () => {
  it('counts tool calls and time', async () => {
    const result = await run('await a({}); await a({}); return 1;', { functions: { a: async () => 0 } });
    expect(result.stats.toolCalls).toBe(2);
    expect(result.stats.cpuTimeMs).toBeGreaterThanOrEqual(0);
    expect(result.stats.wallTimeMs).toBeGreaterThanOrEqual(result.stats.cpuTimeMs);
  });

  it('does not count time spent waiting for host calls as CPU time', async () => {
    // A 600 ms wait under a 200 ms CPU limit: it would fail if waiting counted.
    const result = await run('await wait(600); return "waited";', {
      functions: { wait: (ms) => later(Number(ms), 'ok') },
      limits: { cpuTimeMs: 200, wallTimeMs: 5000 },
    });
    expect(result).toMatchObject({ ok: true, result: 'waited' });
  });

  it('ends the run with tool_calls when the program makes one call too many', async () => {
    let calls = 0;
    const result = await run('for (let i = 0; i < 5; i++) await f(i);\nreturn "finished";', {
      functions: { f: async () => ++calls },
      limits: { maxToolCalls: 3 },
    });
    expect(result.error?.kind).toBe('tool_calls');
    expect(result.error?.message).toMatch(/more than 3 tool calls/);
    expect(calls).toBe(3);
    expect(result.stats.toolCalls).toBe(3);
  });

  it('documents its defaults', () => {
    expect(DEFAULT_VM_LIMITS).toMatchObject({
      memoryBytes: 64 * 1024 * 1024,
      cpuTimeMs: 10_000,
      wallTimeMs: 30_000,
      maxToolCalls: 1000,
      maxConcurrentCalls: 16,
      maxOutputBytes: 1024 * 1024,
    });
  });

  it('ends as aborted at once when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await run('return 1', { signal: controller.signal });
    expect(result.error?.kind).toBe('aborted');
  });
});

describe('runInVm: the wall clock held by a host function', () => {
  /** A host function that waits `ms`, holding the clock while it does when `hold` is set. */
  const waiter = (hold: boolean): HostFunction => async (args, _signal, host) => {
    const release = hold ? host?.holdClock() : undefined;
    try {
      return await later((args as { ms: number }).ms, 'answered');
    } finally {
      release?.();
    }
  };

  it('does not count time a host function held against the wall-time limit', async () => {
    // Margins of several hundred ms, so a busy machine's slow sandbox start changes nothing.
    const code = 'const a = await ask({ ms: 400 });\nconst b = await ask({ ms: 400 });\nreturn [a, b];';
    const held = await run(code, { functions: { ask: waiter(true) }, limits: { wallTimeMs: 600 } });
    expect(held.error).toBeUndefined();
    expect(held.result).toEqual(['answered', 'answered']);
    expect(held.stats.wallTimeMs).toBeGreaterThanOrEqual(800);

    const unheld = await run(code, { functions: { ask: waiter(false) }, limits: { wallTimeMs: 600 } });
    expect(unheld.error?.kind).toBe('wall_time');
  });

  it('counts the time around the holds, and overlapping holds release the clock once all are done', async () => {
    const functions = { ask: waiter(true), wait: waiter(false) };
    const overlapping = await run('return await gather([ask({ ms: 700 }), ask({ ms: 300 })]);', { functions, limits: { wallTimeMs: 400 } });
    expect(overlapping.error).toBeUndefined();
    // Unheld waiting still counts: 700 ms of it is over the 400 ms limit.
    const mixed = await run('await ask({ ms: 300 });\nawait wait({ ms: 700 });\nreturn 1;', { functions, limits: { wallTimeMs: 400 } });
    expect(mixed.error?.kind).toBe('wall_time');
  });

  it('lets a release be called twice without freeing another hold', async () => {
    const twice: HostFunction = async (_args, _signal, host) => {
      const first = host?.holdClock();
      const second = host?.holdClock();
      first?.();
      first?.();
      await later(700, 0);
      second?.();
      return 'ok';
    };
    const result = await run('return await twice({});', { functions: { twice }, limits: { wallTimeMs: 400 } });
    expect(result.error).toBeUndefined();
  });
});
