import { setMaxListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { runInVm, type HostFunction, type VmResult, type VmRunOptions } from '../../src/program-vm/run-in-vm';
import { VmBudget } from '../../src/program-vm/vm-budget';
import { MIN_VM_MEMORY_BYTES } from '../../src/program-vm/quickjs-vm';

const MIB = 1024 * 1024;
const TEST_LIMITS = { memoryBytes: 32 * MIB, cpuTimeMs: 1000, wallTimeMs: 10_000 };

function run(code: string, options: Omit<Partial<VmRunOptions>, 'code'> = {}): Promise<VmResult> {
  return runInVm({ code, functions: {}, ...options, limits: { ...TEST_LIMITS, ...options.limits } });
}

/** A promise the test settles when it chooses: host functions wait on it. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = (): void => {};
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

/** A host function that starts a nested run of `code` from its caller's budget and gives its result or throws its error. */
function child(code: string, functions: Record<string, HostFunction> = {}, memoryBytes = TEST_LIMITS.memoryBytes): HostFunction {
  return async (_args, signal, host) => {
    setMaxListeners(0, signal);
    const result = await run(code, { functions, signal, nested: true, limits: { memoryBytes }, ...(host ? { budget: host.budget } : {}) });
    if (!result.ok) throw new Error(`${result.error?.kind}: ${result.error?.message}`);
    return result.result;
  };
}

/** The program's calls of `child`, `n` at once, each answered with 'ran' or its error's message. */
function wide(n: number): string {
  return `return await gather(Array.from({ length: ${n} }, () => child({}).then(() => "ran", (e) => e.message)));`;
}

describe('a budget of sandboxes', () => {
  it('lets runs that hold no place wait their turn, and never has more alive than its cap', async () => {
    const budget = new VmBudget({ maxLive: 2 });
    const held = gate();
    const runs = Array.from({ length: 5 }, (_, i) => run(`await hold({}); return ${i};`, { budget, functions: { hold: () => held.wait } }));
    await vi.waitFor(() => expect([budget.live, budget.waiting]).toEqual([2, 3]));
    held.open();
    const results = await Promise.all(runs);
    expect(results.map((r) => r.result)).toEqual([0, 1, 2, 3, 4]);
    expect(budget.peakLive).toBe(2);
    expect([budget.live, budget.reservedBytes, budget.waiting]).toEqual([0, 0, 0]);
  });

  it('answers a program calling a program at once when no place is free: an error it can catch, not a deadlock', async () => {
    const budget = new VmBudget({ maxLive: 1 });
    const code = 'try { return await child({}); } catch (e) { return e.message; }';
    const result = await run(code, { budget, functions: { child: child('return "inner"') } });
    expect(result.ok).toBe(true);
    expect(result.result).toBe(
      'budget: no sandbox was free for a program called from a program: 1 sandboxes are running, the most this session allows at once; call fewer programs in parallel',
    );
    expect([budget.live, budget.peakLive]).toEqual([0, 1]);
  });

  it('gives a wide gather in one program as many places as are free and refuses the rest', async () => {
    const budget = new VmBudget({ maxLive: 4 });
    const held = gate();
    const parent = run(wide(16), { budget, functions: { child: child('await hold({}); return 1;', { hold: () => held.wait }) } });
    await vi.waitFor(() => expect(budget.live).toBe(4));
    held.open();
    const result = await parent;
    const answers = result.result as string[];
    expect(answers.filter((a) => a === 'ran')).toHaveLength(3);
    expect(answers.filter((a) => a.includes('4 sandboxes are running, the most this session allows at once'))).toHaveLength(13);
    expect([budget.live, budget.peakLive]).toEqual([0, 4]);
  });

  it('reserves each sandbox its memory cap as applied, and refuses what does not fit', async () => {
    const budget = new VmBudget({ memoryBytes: 100 * MIB });
    const held = gate();
    const parent = run(wide(4), { budget, functions: { child: child('await hold({}); return 1;', { hold: () => held.wait }) } });
    await vi.waitFor(() => expect(budget.live).toBe(3));
    held.open();
    const answers = (await parent).result as string[];
    expect(answers.filter((a) => a === 'ran')).toHaveLength(2);
    expect(answers.filter((a) => a.includes('the running sandboxes hold 96 of the 100 MiB all may reserve, and this one needs 32 MiB'))).toHaveLength(2);
    expect(budget.peakReservedBytes).toBe(96 * MIB);

    // A cap below the least a sandbox can have is raised, and so is its reservation.
    const small = new VmBudget();
    expect((await run('return 1', { budget: small, limits: { memoryBytes: 1 * MIB } })).ok).toBe(true);
    expect(small.peakReservedBytes).toBe(MIN_VM_MEMORY_BYTES);

    const tooBig = await run('return 1', { budget, limits: { memoryBytes: 200 * MIB } });
    expect(tooBig.error).toEqual({ kind: 'budget', message: "the sandbox's memory cap of 200 MiB is more than the 100 MiB all sandboxes may reserve together" });
    expect([budget.live, budget.reservedBytes]).toEqual([0, 0]);
  });

  it('gives the place back however the run ends', async () => {
    const never: HostFunction = () => new Promise(() => {});
    const aborting = new AbortController();
    const endings: [string, Omit<Partial<VmRunOptions>, 'code'>, string | undefined][] = [
      ['return 1', {}, undefined],
      ['throw new Error("boom")', {}, 'thrown'],
      ['return (', {}, 'syntax'],
      ['for (;;) {}', { limits: { cpuTimeMs: 100 } }, 'cpu_time'],
      ['await never({});', { functions: { never }, limits: { wallTimeMs: 200 } }, 'wall_time'],
      ['const a = []; for (;;) a.push("x".repeat(1000) + a.length);', {}, 'memory'],
      ['function f() { return f() + 1; } f();', {}, 'stack'],
      ['never({}); await never({});', { functions: { never } }, 'tool_calls'],
      ['await never({});', { functions: { never: () => (aborting.abort(), new Promise(() => {})) }, signal: aborting.signal }, 'aborted'],
    ];
    for (const [code, options, kind] of endings) {
      const budget = new VmBudget();
      const limits = { ...TEST_LIMITS, wallTimeMs: 10_000, maxToolCalls: 1, ...options.limits };
      const result = await run(code, { ...options, budget, limits });
      expect(result.error?.kind, code).toBe(kind);
      expect([budget.peakLive, budget.live, budget.reservedBytes], code).toEqual([1, 0, 0]);
    }
  });

  it('ends a wait for a place when the run is stopped or its wall time is up', async () => {
    const budget = new VmBudget({ maxLive: 1 });
    const held = gate();
    const holder = run('await hold({}); return 1;', { budget, functions: { hold: () => held.wait } });
    await vi.waitFor(() => expect(budget.live).toBe(1));

    const stopping = new AbortController();
    const stopped = run('return 2', { budget, signal: stopping.signal });
    await vi.waitFor(() => expect(budget.waiting).toBe(1));
    stopping.abort();
    expect((await stopped).error).toEqual({ kind: 'aborted', message: 'the run was aborted' });

    const late = await run('return 3', { budget, limits: { wallTimeMs: 200 } });
    expect(late.error).toEqual({ kind: 'budget', message: "no sandbox became free within the program's 200 ms wall-time limit (1 are running)" });
    expect(budget.waiting).toBe(0);

    held.open();
    expect((await holder).result).toBe(1);
    expect([budget.live, budget.peakLive]).toEqual([0, 1]);
  });
});
