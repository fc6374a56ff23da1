import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LOOP_LIMITS, LoopDetector, normaliseOutput, type LoopDetectorOptions, type LoopVerdict, type ObservedCall } from '../../src/agent/loop-detector';

const ok = (tool: string, input: unknown, output = 'done'): ObservedCall => ({ tool, input, output, isError: false });
const fail = (tool: string, input: unknown, output: string): ObservedCall => ({ tool, input, output, isError: true });

/** The verdicts for a sequence of calls, observed by one fresh detector. */
function run(calls: readonly ObservedCall[], options?: LoopDetectorOptions): LoopVerdict[] {
  const detector = new LoopDetector(options);
  return calls.map((call) => detector.observe(call));
}

const times = <T>(n: number, item: T): T[] => Array.from({ length: n }, () => item);

const CONTINUE: LoopVerdict = { action: 'continue' };
const repeatNudge = (tool: string, n: number, what: 'result' | 'error', stop = 5): LoopVerdict => ({
  action: 'nudge',
  message:
    `You have made the same ${tool} call ${n} times in a row, with the same ${what} each time. ` +
    `Stop repeating it: read the ${what}, change the input or take another approach, or explain what blocks you. ` +
    `The run stops if the same call comes ${stop} times in a row.`,
});
const errorNudge = (tool: string, n: number, stop = 5): LoopVerdict => ({
  action: 'nudge',
  message:
    `Your last ${n} ${tool} calls failed with the same error. ` +
    'Stop retrying the same way: read the error and fix its cause (change the code, the command or the input), or explain what blocks you. ' +
    `The run stops if the same error comes ${stop} times in a row.`,
});
const repeatStop = (tool: string, n: number): LoopVerdict => ({ action: 'stop', reason: `the same ${tool} call ${n} times in a row` });
const errorStop = (tool: string, n: number): LoopVerdict => ({ action: 'stop', reason: `the same ${tool} error ${n} times in a row` });

describe('LoopDetector: the same call again and again', () => {
  it('nudges once at the 3rd identical call and stops from the 5th', () => {
    const call = ok('read', { path: 'src/a.ts' }, 'export const a = 1;');
    expect(run(times(7, call))).toEqual([
      CONTINUE,
      CONTINUE,
      repeatNudge('read', 3, 'result'),
      CONTINUE,
      repeatStop('read', 5),
      repeatStop('read', 6),
      repeatStop('read', 7),
    ]);
  });

  it('treats inputs with keys in another order as the same call, at every depth', () => {
    const verdicts = run([
      ok('shell', { command: 'npm test', options: { env: { A: '1', B: '2' }, timeout: 60 } }),
      ok('shell', { options: { timeout: 60, env: { B: '2', A: '1' } }, command: 'npm test' }),
      ok('shell', { options: { env: { A: '1', B: '2' }, timeout: 60 }, command: 'npm test' }),
    ]);
    expect(verdicts).toEqual([CONTINUE, CONTINUE, repeatNudge('shell', 3, 'result')]);
  });

  it('keeps array order: the same items in another order are another call', () => {
    const verdicts = run([ok('t', { args: ['a', 'b'] }), ok('t', { args: ['b', 'a'] }), ok('t', { args: ['a', 'b'] })]);
    expect(verdicts).toEqual([CONTINUE, CONTINUE, CONTINUE]);
  });

  it('tells apart calls that differ in tool, in input or in a value type', () => {
    const verdicts = run([
      ok('read', { path: 'a' }),
      ok('grep', { path: 'a' }),
      ok('read', { path: 'a' }),
      ok('read', { path: 'b' }),
      ok('read', { path: 'a' }),
      ok('t', { n: 1 }),
      ok('t', { n: '1' }),
      ok('t', { n: 1 }),
      ok('t', null),
      ok('t', {}),
      ok('t', undefined),
      ok('t', []),
    ]);
    expect(verdicts).toEqual(times(12, CONTINUE));
  });

  it('starts again after any other call: a test run, a save, the same test run is no loop', () => {
    const test = fail('shell', { command: 'npm test' }, '1 failed');
    const calls: ObservedCall[] = [];
    for (let i = 0; i < 10; i++) calls.push(test, ok('save', { path: 'src/a.ts', content: `v${i}` }));
    expect(run(calls)).toEqual(times(20, CONTINUE));
  });

  it('does not count a call whose result changed: polling a log while it grows is no loop', () => {
    const poll = (output: string) => ok('shell', { command: 'sleep 5; tail -3 build.log' }, output);
    const verdicts = run([poll('compiling 1/4'), poll('compiling 2/4'), poll('compiling 3/4'), poll('compiling 4/4'), poll('done'), poll('done'), poll('done')]);
    expect(verdicts).toEqual([CONTINUE, CONTINUE, CONTINUE, CONTINUE, CONTINUE, CONTINUE, repeatNudge('shell', 3, 'result')]);
  });

  it('counts results equal after normalising as the same: only the timing changed', () => {
    const test = (ms: number) => ok('shell', { command: 'npm test' }, `✓ 12 tests passed (${ms}ms)\nExit code 0.  \r\n`);
    expect(run([test(812), test(790), test(1204), test(95), test(100)])).toEqual([
      CONTINUE,
      CONTINUE,
      repeatNudge('shell', 3, 'result'),
      CONTINUE,
      repeatStop('shell', 5),
    ]);
  });

  it('nudges again for a new streak after the old one ended', () => {
    const a = ok('read', { path: 'a' });
    const b = ok('read', { path: 'b' });
    expect(run([a, a, a, a, b, a, a, a])).toEqual([
      CONTINUE,
      CONTINUE,
      repeatNudge('read', 3, 'result'),
      CONTINUE,
      CONTINUE,
      CONTINUE,
      CONTINUE,
      repeatNudge('read', 3, 'result'),
    ]);
  });

  it('speaks of the error when the repeated call failed, and gives one verdict when both streaks are due', () => {
    const call = fail('shell', { command: 'npm run build' }, 'error TS2322 at src/a.ts:4:7\nExit code 2.');
    // The repeat streak and the error streak reach 3 and 5 together: one nudge, one stop, the repeat's.
    expect(run(times(6, call))).toEqual([CONTINUE, CONTINUE, repeatNudge('shell', 3, 'error'), CONTINUE, repeatStop('shell', 5), repeatStop('shell', 6)]);
  });
});

describe('LoopDetector: the same error again and again', () => {
  const error = 'Error: Cannot find module "left-pad"';

  it('nudges once at the 3rd same error from the same tool, whatever the inputs, and stops from the 5th', () => {
    const calls = ['node a.js', 'node ./a.js', 'node a', 'NODE_PATH=. node a.js', 'node --trace a.js', 'node -r x a.js'].map((command) =>
      fail('shell', { command }, error),
    );
    expect(run(calls)).toEqual([CONTINUE, CONTINUE, errorNudge('shell', 3), CONTINUE, errorStop('shell', 5), errorStop('shell', 6)]);
  });

  it('starts again after a success, from any tool', () => {
    const e = (i: number) => fail('shell', { command: `try ${i}` }, error);
    const verdicts = run([e(1), e(2), ok('read', { path: 'package.json' }), e(3), e(4), ok('shell', { command: 'ls' }), e(5), e(6), e(7)]);
    expect(verdicts).toEqual([CONTINUE, CONTINUE, CONTINUE, CONTINUE, CONTINUE, CONTINUE, CONTINUE, CONTINUE, errorNudge('shell', 3)]);
  });

  it('starts again on another error, or the same error text from another tool', () => {
    const verdicts = run([
      fail('shell', { command: '1' }, error),
      fail('shell', { command: '2' }, error),
      fail('shell', { command: '3' }, 'Error: Cannot find module "right-pad"'),
      fail('shell', { command: '4' }, 'Error: Cannot find module "right-pad"'),
      fail('python', { code: '5' }, 'Error: Cannot find module "right-pad"'),
      fail('python', { code: '6' }, 'Error: Cannot find module "right-pad"'),
      fail('shell', { command: '7' }, error),
    ]);
    expect(verdicts).toEqual(times(7, CONTINUE));
  });

  it('does not count the same text as an error when it was a success', () => {
    const verdicts = run([
      fail('shell', { command: '1' }, error),
      ok('shell', { command: '2' }, error),
      fail('shell', { command: '3' }, error),
      fail('shell', { command: '4' }, error),
      fail('shell', { command: '5' }, error),
    ]);
    expect(verdicts).toEqual([CONTINUE, CONTINUE, CONTINUE, CONTINUE, errorNudge('shell', 3)]);
  });

  it('sees through timings, clock times, pids and fence’s saved-output line', () => {
    const outputs = [
      'FAIL tests/a.test.ts (3 tests | 1 failed) 412ms\nStart at 12:30:45\nDuration 1.52s\n',
      'FAIL tests/a.test.ts (3 tests | 1 failed) 398ms\r\nStart at 12:31:02\r\nDuration 1.49s   \r\n',
      'FAIL tests/a.test.ts (3 tests | 1 failed) 1204ms\nStart at 12:31:40\nDuration 2.1s',
    ].map((text, i) => fail('shell', { command: `npx vitest run -t case${i}` }, text));
    expect(run(outputs)).toEqual([CONTINUE, CONTINUE, errorNudge('shell', 3)]);

    const saved = (stamp: string, suffix: string) =>
      fail('shell', { command: stamp }, `[… 40 lines (2210 characters) left out …]\nkilled pid ${suffix.length * 1000}\nThe full output is in /w/.fence/tool-outputs/${stamp}-shell-${suffix}.txt.`);
    expect(run([saved('2024-05-01T12-30-45-123Z', 'ab12'), saved('2024-05-01T12-31-02-007Z', '9f0c7'), saved('2024-05-01T12-33-10-950Z', '00e')])).toEqual([
      CONTINUE,
      CONTINUE,
      errorNudge('shell', 3),
    ]);
  });

  it('keeps errors at other lines, with other exit codes or other counts apart', () => {
    const variants = [
      'src/a.ts:12:5 - error TS2322: Type string is not assignable to type number.',
      'src/a.ts:14:5 - error TS2322: Type string is not assignable to type number.',
      'src/a.ts:14:9 - error TS2322: Type string is not assignable to type number.',
      'make: *** [all] Error 1',
      'make: *** [all] Error 2',
      'Tests: 3 failed, 10 passed',
      'Tests: 2 failed, 11 passed',
      'unexpected byte 0x1F',
      'unexpected byte 0x20',
    ];
    expect(run(variants.map((text, i) => fail('shell', { command: `step ${i}` }, text)))).toEqual(times(variants.length, CONTINUE));
  });
});

describe('LoopDetector thresholds', () => {
  it('uses 3 and 5 by default', () => {
    expect(DEFAULT_LOOP_LIMITS).toEqual({ repeatNudge: 3, repeatStop: 5, errorNudge: 3, errorStop: 5 });
  });

  it('takes other thresholds for repeats', () => {
    const call = ok('glob', { pattern: '**/*.ts' });
    expect(run(times(5, call), { repeatNudge: 2, repeatStop: 4 })).toEqual([
      CONTINUE,
      repeatNudge('glob', 2, 'result', 4),
      CONTINUE,
      repeatStop('glob', 4),
      repeatStop('glob', 5),
    ]);
  });

  it('takes other thresholds for errors, and gives each streak its own nudge', () => {
    const call = fail('patch', { path: 'a.ts', diff: 'x' }, 'The hunk does not match.');
    expect(run(times(7, call), { errorNudge: 1, errorStop: 10 })).toEqual([
      errorNudge('patch', 1, 10),
      CONTINUE,
      repeatNudge('patch', 3, 'error'),
      CONTINUE,
      repeatStop('patch', 5),
      repeatStop('patch', 6),
      repeatStop('patch', 7),
    ]);
    const varied = [1, 2, 3].map((i) => fail('patch', { path: 'a.ts', diff: `v${i}` }, 'The hunk does not match.'));
    expect(run(varied, { errorNudge: 1, errorStop: 3 })).toEqual([errorNudge('patch', 1, 3), CONTINUE, errorStop('patch', 3)]);
  });

  it('never nudges or stops at Infinity, and leaves the stop out of the nudge when there is none', () => {
    const call = ok('read', { path: 'a' });
    const verdicts = run(times(100, call), { repeatStop: Infinity });
    expect(verdicts[2]).toEqual({
      action: 'nudge',
      message:
        'You have made the same read call 3 times in a row, with the same result each time. ' +
        'Stop repeating it: read the result, change the input or take another approach, or explain what blocks you.',
    });
    expect(verdicts.filter((v) => v.action !== 'continue')).toHaveLength(1);
    expect(run(times(100, call), { repeatNudge: Infinity, repeatStop: Infinity }).every((v) => v.action === 'continue')).toBe(true);
  });

  it('refuses thresholds that are not whole numbers from 1, and a nudge not below its stop', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, -Infinity]) {
      expect(() => new LoopDetector({ repeatNudge: bad })).toThrow(RangeError);
      expect(() => new LoopDetector({ errorStop: bad })).toThrow(RangeError);
    }
    expect(() => new LoopDetector({ repeatNudge: 5 })).toThrow('repeatNudge (5) must be below repeatStop (5)');
    expect(() => new LoopDetector({ errorNudge: 4, errorStop: 3 })).toThrow('errorNudge (4) must be below errorStop (3)');
    expect(() => new LoopDetector({ errorNudge: 1, errorStop: 2, repeatNudge: 9, repeatStop: 10 })).not.toThrow();
  });
});

describe('LoopDetector over long runs', () => {
  it('forgets everything but the current streaks after 10,000 calls', () => {
    const detector = new LoopDetector();
    const early = ok('read', { path: 'early.ts' });
    expect([detector.observe(early), detector.observe(early)]).toEqual([CONTINUE, CONTINUE]);
    let stops = 0;
    for (let i = 0; i < 10_000; i++) {
      const verdict = detector.observe(i % 2 === 0 ? ok('read', { path: `f${i}.ts` }) : fail('shell', { command: `c${i}` }, `error ${i}`));
      if (verdict.action !== 'continue') stops++;
    }
    expect(stops).toBe(0);
    // Had anything of the first two calls been kept, the third would complete a streak of three.
    expect([detector.observe(early), detector.observe(early), detector.observe(early)]).toEqual([CONTINUE, CONTINUE, repeatNudge('read', 3, 'result')]);
  });

  it('nudges once and keeps stopping over a streak of 10,000', () => {
    const detector = new LoopDetector();
    const verdicts = Array.from({ length: 10_000 }, (_, i) => detector.observe(fail('shell', { command: `try ${i}` }, 'Permission denied')));
    expect(verdicts.filter((v) => v.action === 'nudge')).toEqual([errorNudge('shell', 3)]);
    expect(verdicts.filter((v) => v.action === 'stop')).toHaveLength(10_000 - 4);
    expect(verdicts[9_999]).toEqual(errorStop('shell', 10_000));
  });

  it('takes large inputs and outputs', () => {
    const big = 'x'.repeat(5_000_000);
    const call = fail('save', { path: 'big.txt', content: big }, `${big}\nNo space left on device`);
    expect(run(times(3, call))).toEqual([CONTINUE, CONTINUE, repeatNudge('save', 3, 'error')]);
  });
});

describe('LoopDetector inputs and names', () => {
  it('does not throw on cycles, bigints, dates or functions, and compares them by value', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const cyclic2: Record<string, unknown> = { a: 1 };
    cyclic2.self = cyclic2;
    expect(run([ok('t', cyclic), ok('t', cyclic2), ok('t', { self: '[circular]', a: 1 })])).toEqual([CONTINUE, CONTINUE, repeatNudge('t', 3, 'result')]);

    const odd = (n: bigint, when: string) => ({ n, at: new Date(when), skip: () => 1, list: [undefined, () => 2] });
    expect(run([ok('t', odd(1n, '2024-01-01')), ok('t', odd(1n, '2024-01-01')), ok('t', odd(2n, '2024-01-01'))])).toEqual([CONTINUE, CONTINUE, CONTINUE]);
    expect(run([ok('t', odd(1n, '2024-01-01')), ok('t', odd(1n, '2024-01-02'))])).toEqual([CONTINUE, CONTINUE]);
    expect(run([ok('t', odd(1n, '2024-01-01')), ok('t', odd(1n, '2024-01-01')), ok('t', { at: '2024-01-01T00:00:00.000Z', n: 1n, list: [null, null] })])).toEqual([
      CONTINUE,
      CONTINUE,
      repeatNudge('t', 3, 'result'),
    ]);
  });

  it('writes any tool name on one short line', () => {
    const long = `made\nup  ${'y'.repeat(100)}`;
    const verdicts = run(times(5, fail(long, {}, 'There is no tool named that.')));
    expect(verdicts[4]).toEqual({ action: 'stop', reason: `the same made up ${'y'.repeat(51)}… call 5 times in a row` });
    expect(run(times(5, fail(' ', {}, 'no name')))[4]).toEqual(repeatStop('(unnamed)', 5));
  });
});

describe('LoopDetector against a model that keeps the whole history', () => {
  /** Deep equality of JSON values, as JSON sees them (0 and -0 alike). */
  function sameJson(a: unknown, b: unknown): boolean {
    if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return a === b;
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }

  /** The rules computed from the whole list of calls, by counting back from the last one. */
  function expected(history: readonly ObservedCall[], limits = DEFAULT_LOOP_LIMITS): LoopVerdict {
    const last = history[history.length - 1]!;
    let repeats = 0;
    for (let i = history.length - 1; i >= 0; i--) {
      const c = history[i]!;
      if (c.tool !== last.tool || c.isError !== last.isError || c.output !== last.output || !sameJson(c.input, last.input)) break;
      repeats++;
    }
    let errors = 0;
    for (let i = history.length - 1; i >= 0 && last.isError; i--) {
      const c = history[i]!;
      if (!c.isError || c.tool !== last.tool || c.output !== last.output) break;
      errors++;
    }
    if (repeats >= limits.repeatStop) return repeatStop(last.tool, repeats);
    if (errors >= limits.errorStop) return errorStop(last.tool, errors);
    if (repeats === limits.repeatNudge) return repeatNudge(last.tool, repeats, last.isError ? 'error' : 'result', limits.repeatStop);
    if (errors === limits.errorNudge) return errorNudge(last.tool, errors, limits.errorStop);
    return CONTINUE;
  }

  const callArb: fc.Arbitrary<ObservedCall> = fc.record({
    tool: fc.constantFrom('shell', 'read'),
    input: fc.constantFrom<unknown>({ command: 'a' }, { command: 'b' }, { path: 'a', n: 1 }, { n: 1, path: 'a' }),
    output: fc.constantFrom('ok', 'Error: A', 'Error: B'),
    isError: fc.boolean(),
  });

  it('gives the same verdicts for any sequence of calls', () => {
    fc.assert(
      fc.property(fc.array(callArb, { maxLength: 60 }), (calls) => {
        const detector = new LoopDetector();
        calls.forEach((call, i) => {
          expect(detector.observe(call)).toEqual(expected(calls.slice(0, i + 1)));
        });
      }),
      { numRuns: 300 },
    );
  });

  it('gives the same verdicts with other thresholds', () => {
    const limitsArb = fc
      .tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4 }))
      .map(([rn, rs, en, es]) => ({ repeatNudge: rn, repeatStop: rn + rs, errorNudge: en, errorStop: en + es }));
    fc.assert(
      fc.property(limitsArb, fc.array(callArb, { maxLength: 40 }), (limits, calls) => {
        const detector = new LoopDetector(limits);
        calls.forEach((call, i) => {
          expect(detector.observe(call)).toEqual(expected(calls.slice(0, i + 1), limits));
        });
      }),
      { numRuns: 200 },
    );
  });

  /** The same value with the keys of every object in reverse order. */
  function reverseKeys(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(reverseKeys);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(Object.keys(value).reverse().map((k) => [k, reverseKeys((value as Record<string, unknown>)[k])]));
  }

  it('matches any JSON input with its keys reordered, and never two different ones', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        expect(run([ok('t', a), ok('t', reverseKeys(a)), ok('t', a)])[2]).toEqual(repeatNudge('t', 3, 'result'));
        expect(run([ok('t', a), ok('t', a), ok('t', b)])[2]).toEqual(sameJson(a, b) ? repeatNudge('t', 3, 'result') : CONTINUE);
      }),
      { numRuns: 300 },
    );
  });
});

describe('normaliseOutput', () => {
  it('replaces only the parts that vary between runs of the same thing', () => {
    const cases: [string, string][] = [
      [' Duration  1.23s (transform 45ms, setup 0ms)\r\n Start at  12:30:45  \n\n', ' Duration  <duration> (transform <duration>, setup <duration>)\n Start at  <time>'],
      ['\n\nFAIL pkg 0.012s\t\n', 'FAIL pkg <duration>'],
      ['1 failed in 0.12s; took 1m 30s; Time: 2.345 s; waited 2 seconds', '1 failed in <duration>; took <duration>; Time: <duration>; waited <duration>'],
      ['at 2024-05-01T12:30:45.123Z and 2024-05-01 12:30:45+02:00', 'at <time> and <time>'],
      ['The full output is in /w/tool-outputs/2024-05-01T12-30-45-123Z-shell-ab12.txt.', 'The full output is in <file>.'],
      ['head\n[… 120 lines (4567 characters) left out …]\ntail', 'head\n[… <n> lines (<n> characters) left out …]\ntail'],
      ['<object at 0x7f3a2c1b9e40> byte 0x1F', '<object at 0x<hex>> byte 0x1F'],
      ['pid 4242, PID: 77, pid=3, rapid 5', 'pid <n>, pid <n>, pid <n>, rapid 5'],
      ['request 123e4567-e89b-12d3-a456-426614174000 at 1714567890123', 'request <uuid> at <number>'],
      ['src/a.ts:12:5 - error TS2322', 'src/a.ts:12:5 - error TS2322'],
      ['foo.py:12:34: error', 'foo.py:12:34: error'],
      ['Exit code 1. 3 failed | 10 passed, port 3000, 5 MB, 3 more, 2 h1, v1.2s', 'Exit code 1. 3 failed | 10 passed, port 3000, 5 MB, 3 more, 2 h1, v1.2s'],
      ['  PID TTY\n 1234 pts/0', '  PID TTY\n 1234 pts/0'],
      ['  indented\n\n  kept', '  indented\n\n  kept'],
    ];
    for (const [input, output] of cases) expect(normaliseOutput(input)).toBe(output);
  });

  it('is idempotent', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('1', '2', '0', ':', '.', ',', ' ', '\t', 's', 'ms', 'h', 'a', 'f', 'Z', '+', '\n', '\r', '-', 'T', 'x', 'pid ', '0x', 'The full output is in ', '[… ') }), (text) => {
        const once = normaliseOutput(text);
        expect(normaliseOutput(once)).toBe(once);
      }),
      { numRuns: 1000 },
    );
  });
});
