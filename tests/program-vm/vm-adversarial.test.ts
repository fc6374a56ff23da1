import { afterEach, describe, expect, it } from 'vitest';
import { runInVm, type HostFunction, type VmErrorKind, type VmResult, type VmRunOptions } from '../../src/program-vm/run-in-vm';

/**
 * Programs that try to hurt the host. Each must end with a clear error kind and leave the
 * host able to run a normal program in a fresh sandbox (checked after every test).
 */

const MIB = 1024 * 1024;
const TEST_LIMITS = { memoryBytes: 32 * MIB, cpuTimeMs: 300, wallTimeMs: 2000 };
/**
 * CPU time is the time the sandbox holds the host thread, so a loaded machine counts slower:
 * tests about another limit give the CPU room enough that theirs is reached first.
 */
const ROOMY_CPU = { cpuTimeMs: 10_000, wallTimeMs: 20_000 };

function run(code: string, options: Omit<Partial<VmRunOptions>, 'code'> = {}): Promise<VmResult> {
  return runInVm({ code, functions: {}, ...options, limits: { ...TEST_LIMITS, ...options.limits } });
}

async function expectFailure(result: VmResult, kind: VmErrorKind, message?: RegExp): Promise<void> {
  expect(result.ok).toBe(false);
  expect(result.error?.kind).toBe(kind);
  if (message) expect(result.error?.message).toMatch(message);
  expect('result' in result).toBe(false);
}

afterEach(async () => {
  const healthy = await run('const parts = await gather([1, 2].map((n) => twice(n)));\nprint("fine");\nreturn parts;', {
    functions: { twice: async (n) => Number(n) * 2 },
  });
  expect(healthy).toMatchObject({ ok: true, result: [2, 4], stdout: 'fine\n' });
});

describe('CPU', () => {
  it('stops an infinite loop before any await', async () => {
    await expectFailure(await run('while (true) {}'), 'cpu_time', /300 ms of CPU time/);
  });

  it('stops an infinite loop after an awaited host call', async () => {
    const result = await run('await tick({});\nfor (;;) {}', { functions: { tick: async () => 1 } });
    await expectFailure(result, 'cpu_time');
    expect(result.stats.toolCalls).toBe(1);
  });

  it('stops a loop inside a .then callback', async () => {
    await expectFailure(await run('Promise.resolve().then(() => { while (true) {} });\nawait new Promise(() => {});'), 'cpu_time');
  });

  it('stops a loop that catches the interrupt, and one that hides it in async functions', async () => {
    await expectFailure(await run('for (;;) { try { while (true) {} } catch (e) {} }'), 'cpu_time');
    await expectFailure(await run('async function spin() { for (;;) {} }\nfor (;;) spin();'), 'cpu_time');
  });

  it('stops an endless chain of microtasks', async () => {
    // Each job queues the next and keeps nothing, so only the CPU limit can end it.
    await expectFailure(await run('const again = () => { Promise.resolve().then(again); };\nagain();\nawait new Promise(() => {});'), 'cpu_time');
  });

  it('says memory when a chain of promises that holds on to each other fills it', async () => {
    // Each promise waits on the next: the chain grows until an allocation fails in a job.
    const code = 'const again = () => Promise.resolve().then(again);\nagain();\nawait new Promise(() => {});';
    const result = await run(code, { limits: { cpuTimeMs: 10_000, wallTimeMs: 20_000, memoryBytes: 24 * MIB } });
    await expectFailure(result, 'memory', /memory was full/);
  });

  it('stops a program made of few but slow native operations', async () => {
    const code =
      'const rows = Array.from({ length: 100000 }, (_, i) => ({ i, name: "row" + i }));\n' +
      'for (;;) JSON.parse(JSON.stringify(rows));';
    await expectFailure(await run(code, { limits: { memoryBytes: 64 * MIB } }), 'cpu_time');
  });

  it('stops catastrophic regular-expression backtracking', async () => {
    await expectFailure(await run('return /(a+)+b/.test("a".repeat(40));'), 'cpu_time');
  });
});

describe('memory', () => {
  const limits = ROOMY_CPU;

  it('contains string doubling, with and without flattening', async () => {
    await expectFailure(await run('let s = "x";\nwhile (true) s = s + s;', { limits }), 'memory', /memory limit 32 MiB/);
    await expectFailure(await run('let s = "x";\nwhile (true) { s = s + s; s.indexOf("y"); }', { limits }), 'memory', /out of memory/);
  });

  it('contains growing arrays and objects', async () => {
    await expectFailure(await run('const a = [];\nwhile (true) a.push([1, 2, 3, 4, 5, 6, 7, 8]);', { limits }), 'memory');
    await expectFailure(await run('const o = {};\nlet i = 0;\nwhile (true) o["key" + i] = i++;', { limits }), 'memory');
  });

  it('contains typed arrays: one too large and many of 16 MB', async () => {
    await expectFailure(await run('new Uint8Array(2 ** 31);', { limits }), 'thrown', /RangeError/);
    await expectFailure(await run('new Uint8Array(2 ** 30);', { limits }), 'memory');
    await expectFailure(await run('const kept = [];\nwhile (true) kept.push(new Uint8Array(16 * 1024 * 1024));', { limits }), 'memory');
  });

  it('keeps the host process small under every bomb', async () => {
    const bombs = [
      'let s = "x"; while (true) { s = s + s; s.indexOf("y"); }',
      'const a = []; while (true) a.push(new Array(100000).fill(1));',
      'const kept = []; while (true) kept.push(new Uint8Array(16 * 1024 * 1024));',
    ];
    for (const code of bombs) await expectFailure(await run(code, { limits: { ...limits, memoryBytes: 64 * MIB } }), 'memory');
    // Peak resident memory of this whole test process: bombs that escaped the cap would take gigabytes.
    expect(process.resourceUsage().maxRSS * 1024).toBeLessThan(1024 * MIB);
  });
});

describe('stack', () => {
  const limits = ROOMY_CPU;

  it('stops deep recursion', async () => {
    await expectFailure(await run('function down(n) { return down(n + 1) + 1; }\ndown(0);', { limits }), 'stack');
    await expectFailure(await run('function down(n) { return [n].map(down); }\ndown(0);', { limits }), 'stack');
  });

  it('stops a result nested too deeply to serialise', async () => {
    await expectFailure(await run('let a = [];\nfor (let i = 0; i < 100000; i++) a = [a];\nreturn a;', { limits }), 'stack');
  });
});

describe('floods', () => {
  it('stops 100k tool calls made in a loop without await', async () => {
    let calls = 0;
    const result = await run('for (let i = 0; i < 100000; i++) f({ i });', { functions: { f: async () => ++calls }, limits: ROOMY_CPU });
    await expectFailure(result, 'tool_calls', /more than 1000 tool calls/);
    expect(calls).toBeLessThanOrEqual(1000);
    expect(result.stats.toolCalls).toBe(1000);
  });

  it('stops 100k tool calls gathered at once', async () => {
    let calls = 0;
    const result = await run('await gather(Array.from({ length: 100000 }, (_, i) => f({ i })));', {
      functions: { f: async () => ++calls },
      limits: ROOMY_CPU,
    });
    await expectFailure(result, 'tool_calls');
    expect(calls).toBeLessThanOrEqual(1000);
  });

  it('keeps the head of 50 MB of output and counts the rest', async () => {
    const result = await run('const line = "x".repeat(1024 * 1024);\nfor (let i = 0; i < 50; i++) print(line);\nreturn "printed";', {
      limits: { ...ROOMY_CPU, maxOutputBytes: 64 * 1024 },
    });
    expect(result).toMatchObject({ ok: true, result: 'printed' });
    expect(result.stdout).toBe('x'.repeat(64 * 1024));
    expect(result.droppedOutputBytes).toBe(50 * (MIB + 1) - 64 * 1024);
  });
});

describe('escapes', () => {
  it('has no process, require, fetch, timers or performance', async () => {
    const result = await run(
      'return [typeof process, typeof require, typeof module, typeof fetch, typeof setTimeout, typeof performance, typeof Buffer, typeof WebAssembly];',
    );
    expect(result.result).toEqual(Array(8).fill('undefined'));
  });

  it('cannot import modules', async () => {
    await expectFailure(await run('await import("fs");'), 'thrown', /could not load module/);
    await expectFailure(await run('import fs from "fs";'), 'syntax');
  });

  it('reaches only its own global through constructors, eval and Function', async () => {
    const functions: Record<string, HostFunction> = { echo: async (args) => args };
    const result = await run(
      'const fromFunction = Function("return this")();\n' +
        'const fromCtor = globalThis.constructor.constructor("return this")();\n' +
        'const fromStub = echo.constructor.constructor("return this")();\n' +
        'const reply = await echo({ a: 1 });\n' +
        'const fromReply = reply.constructor.constructor("return this")();\n' +
        'return [fromFunction === globalThis, fromCtor === globalThis, fromStub === globalThis, fromReply === globalThis,\n' +
        '  eval("typeof process"), typeof fromFunction.process, typeof fromReply.require];',
      { functions },
    );
    expect(result.result).toEqual([true, true, true, true, 'undefined', 'undefined', 'undefined']);
  });

  it('shows no host paths in stack traces', async () => {
    const result = await run('return new Error("where").stack;');
    expect(String(result.result)).not.toContain(process.cwd());
    expect(String(result.result)).toContain('program.js');
  });
});

describe('tampering', () => {
  it('gives the host sane data when prototypes of returned values are tampered with', async () => {
    const result = await run(
      'Array.prototype.map = () => { throw new Error("map"); };\n' +
        'JSON.stringify = () => "forged";\n' +
        'Object.defineProperty(Object.prototype, "toJSON", { value: undefined, writable: true });\n' +
        'return { list: [1, { b: 2 }], text: "ok" };',
    );
    expect(result.result).toEqual({ list: [1, { b: 2 }], text: 'ok' });
  });

  it('a toJSON on Object.prototype decides what the program returns, and nothing more', async () => {
    const result = await run('Object.prototype.toJSON = function () { return "replaced"; };\nreturn { secret: 1 };');
    expect(result).toMatchObject({ ok: true, result: 'replaced' });
  });

  it('tampering with then only hangs the program itself', async () => {
    const result = await run('Object.prototype.then = function () {};\nreturn await echo({ a: 1 });', {
      functions: { echo: async (args) => args },
    });
    await expectFailure(result, 'thrown', /never finished/);
  });
});

describe('hostile errors', () => {
  it('fails on throw null, undefined and numbers', async () => {
    await expectFailure(await run('throw null;'), 'thrown', /^Uncaught null$/);
    await expectFailure(await run('throw undefined;'), 'thrown', /^Uncaught undefined$/);
    await expectFailure(await run('throw 1;'), 'thrown', /^Uncaught 1$/);
  });

  it('fails on thrown objects whose getters, toString and toJSON throw, and on a Proxy', async () => {
    await expectFailure(await run('throw { get message() { throw new Error("no"); }, toString() { throw 1; }, toJSON() { throw 2; } };'), 'thrown');
    await expectFailure(
      await run('throw new Proxy({}, { get() { throw new Error("trap"); }, getPrototypeOf() { throw new Error("trap"); }, ownKeys() { throw 1; } });'),
      'thrown',
    );
  });

  it('stops a thrown object whose getter never returns', async () => {
    await expectFailure(await run('throw { get message() { for (;;) {} } };'), 'cpu_time');
  });
});

describe('time and abort', () => {
  it('ends a run whose host call never settles at the wall-time limit, and aborts the call', async () => {
    let signal: AbortSignal | undefined;
    const hang: HostFunction = (_args, callSignal) => {
      signal = callSignal;
      return new Promise(() => {});
    };
    const result = await run('await hang({});', { functions: { hang }, limits: { wallTimeMs: 300 } });
    await expectFailure(result, 'wall_time', /300 ms wall-time limit/);
    expect(signal?.aborted).toBe(true);
  });

  it('ends the run when the outer signal is aborted mid-run, and aborts in-flight calls', async () => {
    const controller = new AbortController();
    let signal: AbortSignal | undefined;
    const hang: HostFunction = (_args, callSignal) => {
      signal = callSignal;
      controller.abort();
      return new Promise(() => {});
    };
    const result = await run('print("started");\nawait hang({});', { functions: { hang }, signal: controller.signal });
    await expectFailure(result, 'aborted');
    expect(result.stdout).toBe('started\n');
    expect(signal?.aborted).toBe(true);
  });

  it('ends a program that awaits its own promise that never settles', async () => {
    await expectFailure(await run('await new Promise(() => {});'), 'thrown', /never finished/);
  });
});

describe('leaks', () => {
  it('runs 200 small programs without resident memory growing without bound', { timeout: 120_000 }, async () => {
    const functions: Record<string, HostFunction> = { echo: async (args) => args };
    const code = 'const r = await echo({ n: [1, 2, 3] });\nprint(r.n.length);\nreturn unique([...r.n, ...r.n]);';
    for (let i = 0; i < 20; i++) await run(code, { functions });
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 200; i++) {
      const result = await run(code, { functions });
      expect(result.ok).toBe(true);
    }
    const grown = process.memoryUsage().rss - before;
    expect(grown).toBeLessThan(256 * MIB);
  });
});
