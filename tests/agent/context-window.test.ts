import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FIT_OPTIONS, fitToWindow, type FitOptions } from '../../src/agent/context-window';
import { createMessage, type Message, type NativeToolCall } from '../../src/conversation/message';
import { planHistory } from '../../src/llm/history';
import { formatNativeCall } from '../../src/llm/native-calls';

/** One token per character: easy to reckon with by hand. */
const chars = (text: string): number => text.length;
/** What a message costs with `chars` and the default 4 tokens per message. */
const cost = (message: Message): number => message.content.length + 4;
const sum = (messages: readonly Message[]): number => messages.reduce((total, message) => total + cost(message), 0);

const system = (text = 'You are fence.') => createMessage('system', text, { pinned: true });
const user = (text: string) => createMessage('user', text);

/** An assistant message with native calls (shown as their lines in its text). */
function assistant(text: string, calls: NativeToolCall[] = []): Message {
  const content = [text, ...calls.map(formatNativeCall)].join('\n');
  return createMessage('assistant', content, calls.length > 0 ? { meta: { toolCalls: calls } } : {});
}

function result(content: string, callId?: string, meta: Message['meta'] = {}): Message {
  return createMessage('system', content, { ...(callId ? { callId } : {}), meta: { toolResult: true, tool: 'shell', ...meta } });
}

/** An assistant message with one native call and its result. */
function step(n: number, output = `output ${n}`): [Message, Message] {
  const call = { id: `c${n}`, name: 'shell', arguments: `{"command":"step ${n}"}` };
  return [assistant(`Step ${n}.`, [call]), result(output, call.id)];
}

const note = (count: number) => `[${count} earlier messages were left out to fit the context window; the full log is kept in the session.]`;

/** `count` numbered lines: `output line 1` … */
const numbered = (count: number, width = 0) =>
  Array.from({ length: count }, (_, i) => `output line ${i + 1}`.padEnd(width, '.') + '\n').join('');

/** The native calls that planHistory replays with their results, by call id, in order. */
function nativePairs(messages: readonly Message[]): string[] {
  const { entries } = planHistory(messages, { nativeCalls: true });
  const pairs: string[] = [];
  entries.forEach((entry, index) => {
    if (entry.kind !== 'assistant') return;
    entry.calls.forEach((call, offset) => {
      const next = entries[index + 1 + offset];
      expect(next).toMatchObject({ kind: 'tool_result', callId: call.id });
      pairs.push(call.id);
    });
  });
  return pairs;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value as Record<string, unknown>)) deepFreeze(item);
  }
  return value;
}

describe('fitToWindow: under budget', () => {
  it('returns the log as it is: the same message objects, nothing shrunk or dropped', () => {
    const log = [system(), user('Fix the build.'), ...step(1), ...step(2), assistant('Done.')];
    const fit = fitToWindow(log, { budget: sum(log), countTokens: chars });
    expect(fit).toEqual({ messages: log, tokens: sum(log), shrunk: 0, dropped: 0, fits: true });
    fit.messages.forEach((message, i) => expect(message).toBe(log[i]));
    expect(fit.messages).not.toBe(log);
  });

  it('counts each message as its text plus perMessage', () => {
    const log = [system('abc'), user('hello')];
    expect(fitToWindow(log, { budget: 100, countTokens: chars, perMessage: 10 }).tokens).toBe(3 + 10 + 5 + 10);
    expect(fitToWindow(log, { budget: 100, countTokens: chars }).tokens).toBe(3 + 4 + 5 + 4);
    expect(DEFAULT_FIT_OPTIONS).toEqual({ perMessage: 4, keepRecent: 6, shrinkAbove: 1000 });
  });

  it('returns an empty log as fitting', () => {
    expect(fitToWindow([], { budget: 0, countTokens: chars })).toEqual({ messages: [], tokens: 0, shrunk: 0, dropped: 0, fits: true });
  });
});

describe('fitToWindow: shrinking long tool results', () => {
  const long = numbered(200);
  /** The text a 200-line `numbered` output becomes: 40 lines each way, the cut marker, and the file line. */
  function expectedShrunk(text: string, path?: string): string {
    const lines = text.split('\n').slice(0, -1).map((line) => `${line}\n`);
    const omitted = lines.slice(40, lines.length - 40).join('');
    const marker = `[… ${lines.length - 80} lines (${omitted.length} characters) left out …]\n`;
    return lines.slice(0, 40).join('') + marker + lines.slice(-40).join('') + (path ? `The full output is in ${path}.` : '');
  }

  it('cuts the oldest long result to head and tail and stops as soon as the request fits', () => {
    const [a1, r1] = step(1, long);
    (r1.meta as NonNullable<Message['meta']>).fullOutput = '/outputs/shell-1.txt';
    const [a2, r2] = step(2, long);
    const recent = [...step(3), ...step(4), ...step(5)];
    const log = [system(), user('Fix the build.'), a1, r1, a2, r2, ...recent];
    const shrunkText = expectedShrunk(long, '/outputs/shell-1.txt');
    const budget = sum(log) - long.length + shrunkText.length;
    const fit = fitToWindow(log, { budget, countTokens: chars, shrinkAbove: 500 });
    expect(fit.messages.map((m) => m.content)).toEqual(log.map((m) => (m === r1 ? shrunkText : m.content)));
    expect(fit).toMatchObject({ tokens: budget, shrunk: 1, dropped: 0, fits: true });
    const copy = fit.messages[3];
    expect(copy).not.toBe(r1);
    expect(copy).toEqual({ ...r1, content: shrunkText });
    expect(r1.content).toBe(long);
    fit.messages.forEach((message, i) => {
      if (i !== 3) expect(message).toBe(log[i]);
    });
    expect(nativePairs(fit.messages)).toEqual(['c1', 'c2', 'c3', 'c4', 'c5']);
  });

  it('shrinks the next one when the first is not enough, and skips results at or below shrinkAbove', () => {
    const small = numbered(60);
    const [a1, r1] = step(1, small);
    const [a2, r2] = step(2, long);
    const [a3, r3] = step(3, long);
    const log = [system(), user('Go.'), a1, r1, a2, r2, a3, r3, ...step(4), ...step(5), ...step(6)];
    const shrunkText = expectedShrunk(long);
    const fit = fitToWindow(log, { budget: sum(log) - long.length + shrunkText.length - 1, countTokens: chars, shrinkAbove: small.length });
    expect(fit.messages.map((m) => m.content)).toEqual(log.map((m) => (m === r2 || m === r3 ? shrunkText : m.content)));
    expect(fit).toMatchObject({ shrunk: 2, dropped: 0, fits: true, tokens: sum(log) - 2 * (long.length - shrunkText.length) });
  });

  it('keeps at most 2,000 characters each way, cut at line breaks', () => {
    const wide = numbered(100, 99);
    const [a1, r1] = step(1, wide);
    const log = [system(), user('Go.'), a1, r1, ...step(2), ...step(3), ...step(4)];
    const fit = fitToWindow(log, { budget: sum(log) - 1, countTokens: chars });
    const lines = wide.split('\n').slice(0, -1).map((line) => `${line}\n`);
    const omitted = lines.slice(20, 81).join('');
    expect(fit.messages[3]?.content).toBe(`${lines.slice(0, 20).join('')}[… 61 lines (${omitted.length} characters) left out …]\n${lines.slice(81).join('')}`);
    expect(fit.shrunk).toBe(1);
  });

  it('does not add the file line twice when the result already ends with it', () => {
    const path = '/outputs/shell-7.txt';
    const text = `${numbered(200)}The full output is in ${path}.`;
    const [a1, r1] = step(1, text);
    (r1.meta as NonNullable<Message['meta']>).fullOutput = path;
    const log = [system(), user('Go.'), a1, r1, ...step(2), ...step(3), ...step(4)];
    const content = fitToWindow(log, { budget: sum(log) - 1, countTokens: chars }).messages[3]?.content ?? '';
    expect(content.endsWith(`output line 200\nThe full output is in ${path}.`)).toBe(true);
    expect(content.split('The full output is in').length).toBe(2);
    expect(content.split('\n').length).toBe(40 + 1 + 39 + 1);
  });

  it('never shrinks the last keepRecent messages, pinned results or results that would not get shorter', () => {
    const [a1, r1] = step(1, long);
    r1.pinned = true;
    const [a2, r2] = step(2, 'x'.repeat(3000));
    const [a3, r3] = step(3, long);
    const log = [system(), user('Go.'), a1, r1, a2, r2, a3, r3];
    const fit = fitToWindow(log, { budget: 10, countTokens: chars, keepRecent: 2, shrinkAbove: 10 });
    // r2 is one line of 3,000 characters: 2,000 each way would keep it all. Nothing shrinks;
    // steps 2 and the assistant of step 1 may not go (r1 is pinned), so step 2 is dropped.
    expect(fit.messages).toEqual([log[0], log[1], a1, r1, { role: 'system', content: note(2), timestamp: a2.timestamp }, a3, r3]);
    expect(fit).toMatchObject({ shrunk: 0, dropped: 2, fits: false });
  });
});

describe('fitToWindow: dropping whole steps', () => {
  const prompt = system();
  const task = user('Fix the failing test in src/a.ts.');
  const steps = Array.from({ length: 8 }, (_, i) => step(i + 1));
  const log = [prompt, task, ...steps.flat()];

  it('leaves out the oldest steps, call and result together, with one note where they were', () => {
    const kept = [prompt, task, ...steps.slice(3).flat()];
    const marker = createMessage('system', note(6));
    const budget = sum(kept) + cost(marker);
    const fit = fitToWindow(log, { budget, countTokens: chars });
    expect(fit.messages).toEqual([prompt, task, { role: 'system', content: note(6), timestamp: steps[0]?.[0].timestamp }, ...steps.slice(3).flat()]);
    expect(fit).toMatchObject({ tokens: budget, shrunk: 0, dropped: 6, fits: true });
    expect(nativePairs(fit.messages)).toEqual(['c4', 'c5', 'c6', 'c7', 'c8']);

    // One token less: one more step goes.
    const tighter = fitToWindow(log, { budget: budget - 1, countTokens: chars });
    expect(tighter.messages.map((m) => m.content)).toEqual([prompt.content, task.content, note(8), ...steps.slice(4).flat().map((m) => m.content)]);
    expect(tighter).toMatchObject({ dropped: 8, fits: true });
    expect(nativePairs(tighter.messages)).toEqual(['c5', 'c6', 'c7', 'c8']);
  });

  it('keeps the whole step the last keepRecent messages start in', () => {
    const [a, r1, r2, r3] = [
      assistant('Three at once.', [
        { id: 'x1', name: 'read', arguments: '{}' },
        { id: 'x2', name: 'read', arguments: '{}' },
        { id: 'x3', name: 'read', arguments: '{}' },
      ]),
      result('one', 'x1'),
      result('two', 'x2'),
      result('three', 'x3'),
    ];
    const longLog = [prompt, task, ...steps.slice(0, 2).flat(), a, r1, r2, r3];
    const fit = fitToWindow(longLog, { budget: 0, countTokens: chars, keepRecent: 2 });
    expect(fit.messages.map((m) => m.content)).toEqual([prompt.content, task.content, note(4), a.content, 'one', 'two', 'three']);
    expect(fit).toMatchObject({ dropped: 4, fits: false, tokens: sum(fit.messages) });
    expect(nativePairs(fit.messages)).toEqual(['x1', 'x2', 'x3']);
  });

  it('keeps the task even when it comes after droppable messages, and drops later user messages', () => {
    const early = createMessage('system', 'tool result before any task', { meta: { toolResult: true } });
    const followUp = user('Also update the README.');
    const withFollowUp = [prompt, early, task, ...steps[0]!, followUp, ...steps[1]!, ...steps[2]!];
    const fit = fitToWindow(withFollowUp, { budget: 0, countTokens: chars, keepRecent: 2 });
    expect(fit.messages.map((m) => m.content)).toEqual([prompt.content, note(6), task.content, ...steps[2]!.map((m) => m.content)]);
    expect(fit.messages[2]).toBe(task);
    expect(fit.dropped).toBe(6);
  });

  it('keeps a step that holds a pinned message', () => {
    const [a, r] = step(20);
    a.pinned = true;
    const pinnedLog = [prompt, task, ...steps[0]!, a, r, ...steps[1]!, ...steps[2]!];
    const fit = fitToWindow(pinnedLog, { budget: 0, countTokens: chars, keepRecent: 1 });
    expect(fit.messages).toEqual([prompt, task, { role: 'system', content: note(4), timestamp: steps[0]![0].timestamp }, a, r, ...steps[2]!]);
    expect(nativePairs(fit.messages)).toEqual(['c20', 'c3']);
  });

  it('treats every leading system message that is not a tool result as the prompt', () => {
    const second = createMessage('system', 'Project notes.');
    const fit = fitToWindow([system('Base.'), second, task, ...steps.slice(0, 3).flat()], { budget: 0, countTokens: chars, keepRecent: 0 });
    expect(fit.messages.map((m) => m.content)).toEqual(['Base.', 'Project notes.', task.content, note(6)]);
    expect(fit).toMatchObject({ dropped: 6, fits: false });
  });

  it('leaves a summary of earlier turns out last', () => {
    const summary = createMessage('system', 'Summary: the test fails on a missing import.', { meta: { compaction: { through: 12 } } });
    const view = [prompt, task, summary, ...steps[0]!, ...steps[1]!, ...steps[2]!];
    const kept = [prompt, task, summary, ...steps[2]!];
    const budget = sum(kept) + cost(createMessage('system', note(4)));
    const fit = fitToWindow(view, { budget, countTokens: chars, keepRecent: 2 });
    expect(fit.messages).toEqual([prompt, task, summary, { role: 'system', content: note(4), timestamp: steps[0]![0].timestamp }, ...steps[2]!]);
    expect(fit).toMatchObject({ tokens: budget, dropped: 4, fits: true });

    const tight = fitToWindow(view, { budget: budget - 1, countTokens: chars, keepRecent: 2 });
    expect(tight.messages).toEqual([prompt, task, { role: 'system', content: note(5), timestamp: summary.timestamp }, ...steps[2]!]);
    expect(tight).toMatchObject({ dropped: 5, fits: true });
  });

  it('drops a notice with the step it follows', () => {
    const [a, r] = step(30);
    const loopNotice = createMessage('system', 'You have made the same shell call 3 times in a row.', { meta: { notice: 'loop' } });
    const fit = fitToWindow([prompt, task, a, r, loopNotice, ...steps[0]!], { budget: 0, countTokens: chars, keepRecent: 2 });
    expect(fit.messages.map((m) => m.content)).toEqual([prompt.content, task.content, note(3), ...steps[0]!.map((m) => m.content)]);
  });

  it('shrinks before it drops, and counts only the shrunk results it sends', () => {
    const long = numbered(300);
    const [a1, r1] = step(1, long);
    const [a2, r2] = step(2, long);
    const mixed = [prompt, task, a1, r1, a2, r2, ...steps.slice(2, 5).flat()];
    const fit = fitToWindow(mixed, { budget: 0, countTokens: chars });
    expect(fit.messages.map((m) => m.content)).toEqual([prompt.content, task.content, note(4), ...steps.slice(2, 5).flat().map((m) => m.content)]);
    expect(fit).toMatchObject({ shrunk: 0, dropped: 4, fits: false });

    const roomy = fitToWindow(mixed, { budget: sum(mixed) - 2 * long.length + 2 * 1400, countTokens: chars });
    expect(roomy).toMatchObject({ dropped: 0, fits: true });
    expect(roomy.shrunk).toBe(2);
  });
});

describe('fitToWindow: the plan of left-out steps', () => {
  const prompt = system();
  const task = user('Fix the failing test in src/a.ts.');
  const plan = [
    { text: 'read the test', status: 'done' as const },
    { text: 'fix src/a.ts', status: 'in_progress' as const },
    { text: 'run the tests', status: 'pending' as const },
  ];
  const planCall = { id: 'p1', name: 'plan', arguments: '{"items":[]}' };
  const planStep = [assistant('A plan.', [planCall]), result('Plan (1 of 3 done)', 'p1', { tool: 'plan', plan })];
  const steps = Array.from({ length: 6 }, (_, i) => step(i + 1));

  it('carries the latest checklist in the note when its step is left out', () => {
    const log = [prompt, task, ...planStep, ...steps.flat()];
    const fit = fitToWindow(log, { budget: 0, countTokens: chars });
    const shown = fit.messages.find((message) => message.content.startsWith('['))?.content ?? '';
    expect(shown).toBe(`${note(fit.dropped)}\nYour plan (the checklist of your last plan call, which was among them):\n[x] read the test\n[~] fix src/a.ts\n[ ] run the tests`);
    expect(fit.messages).not.toContain(planStep[1]);
    // Counted: the note's own cost is in the total.
    expect(fit.tokens).toBe(sum(fit.messages));
  });

  it('leaves the note plain when the checklist is kept, or was replaced by a later one that is', () => {
    const kept = fitToWindow([prompt, task, ...steps.flat(), ...planStep], { budget: 0, countTokens: chars });
    expect(kept.messages.find((message) => message.content.startsWith('['))?.content).toBe(note(kept.dropped));
    const cleared = [assistant('Cleared.', [{ id: 'p2', name: 'plan', arguments: '{"items":[]}' }]), result('Plan cleared.', 'p2', { tool: 'plan', plan: [] })];
    const replaced = fitToWindow([prompt, task, ...planStep, ...steps.flat(), ...cleared], { budget: 0, countTokens: chars });
    expect(replaced.messages.find((message) => message.content.startsWith('['))?.content).toBe(note(replaced.dropped));
  });
});

describe('fitToWindow: when it cannot fit', () => {
  it('returns the pinned messages and the kept recent ones, with fits false', () => {
    const prompt = system('p'.repeat(500));
    const task = user('t');
    const steps = [...step(1), ...step(2), ...step(3), ...step(4)];
    const fit = fitToWindow([prompt, task, ...steps], { budget: 100, countTokens: chars });
    expect(fit.messages).toEqual([prompt, task, { role: 'system', content: note(2), timestamp: steps[0]!.timestamp }, ...steps.slice(2)]);
    expect(fit).toEqual({ messages: fit.messages, tokens: sum(fit.messages), shrunk: 0, dropped: 2, fits: false });
  });

  it('never throws on a tokenizer that throws or returns nonsense; it estimates a token per four characters', () => {
    const log = [system('abcdefgh'), user('abcd')];
    const throwing = () => {
      throw new Error('tokenizer down');
    };
    expect(fitToWindow(log, { budget: 100, countTokens: throwing })).toMatchObject({ tokens: 2 + 4 + 1 + 4, fits: true });
    expect(fitToWindow(log, { budget: 100, countTokens: () => Number.NaN }).tokens).toBe(11);
    expect(fitToWindow(log, { budget: 100, countTokens: () => -3 }).tokens).toBe(11);
    expect(fitToWindow(log, { budget: Number.NaN, countTokens: chars })).toMatchObject({ fits: false, dropped: 0 });
    expect(fitToWindow(log, { budget: 100, countTokens: chars, perMessage: -1, keepRecent: -2, shrinkAbove: Number.NaN }).tokens).toBe(8 + 4 + 4 + 4);
  });
});

describe('fitToWindow: the input', () => {
  it('is never mutated', () => {
    const long = numbered(300);
    const [a1, r1] = step(1, long);
    (r1.meta as NonNullable<Message['meta']>).fullOutput = '/outputs/a.txt';
    const log = deepFreeze([system(), user('Go.'), a1, r1, ...step(2), ...step(3), ...step(4), ...step(5)]);
    const before = structuredClone(log);
    for (const budget of [0, 300, 700, 2000, 100_000]) fitToWindow(log, { budget, countTokens: chars, shrinkAbove: 100 });
    expect(log).toEqual(before);
  });
});

describe('fitToWindow: counting', () => {
  /** A tokenizer that records every text it is asked to count. */
  function recorder(): { countTokens: (text: string) => number; seen: string[] } {
    const seen: string[] = [];
    return { seen, countTokens: (text) => (seen.push(text), text.length) };
  }

  it('counts each message once for a growing log, then only the new messages and the new note', () => {
    const { countTokens, seen } = recorder();
    let log: Message[] = [system(), user('Go.')];
    for (let n = 10; n < 30; n++) log.push(...step(n));
    const budget = sum(log.slice(0, 2)) + sum(log.slice(-20)) + 200;
    const options: FitOptions = { budget, countTokens };

    const first = fitToWindow(log, options);
    expect(first).toMatchObject({ fits: true, dropped: 18 });
    expect(seen.slice(0, log.length)).toEqual(log.map((m) => m.content));
    // The note is counted for each count of left-out messages at which it could fit (its
    // text changes with the count): here after 14, 16 and 18 messages.
    expect(seen.slice(log.length)).toEqual([note(14), note(16), note(18)]);

    seen.length = 0;
    expect(fitToWindow(log, options)).toEqual(first);
    expect(seen).toEqual([]);

    const added = step(30);
    log = [...log, ...added];
    seen.length = 0;
    const second = fitToWindow(log, options);
    expect(second).toMatchObject({ fits: true, dropped: 20 });
    expect(seen).toEqual([added[0].content, added[1].content, note(20)]);
  });

  it('counts a shrunk copy once, and not again on the next call', () => {
    const { countTokens, seen } = recorder();
    const long = numbered(300);
    const [a1, r1] = step(1, long);
    const log = [system(), user('Go.'), a1, r1, ...step(2), ...step(3), ...step(4)];
    const options: FitOptions = { budget: sum(log) - 1, countTokens };
    const first = fitToWindow(log, options);
    expect(first.shrunk).toBe(1);
    expect(seen).toEqual([...log.map((m) => m.content), first.messages[3]?.content]);
    seen.length = 0;
    const again = fitToWindow(log, options);
    expect(again.messages[3]).toBe(first.messages[3]);
    expect(seen).toEqual([]);
  });

  it('keeps counts apart for different tokenizers', () => {
    const log = [system('abcd'), user('abcdefgh')];
    expect(fitToWindow(log, { budget: 100, countTokens: chars, perMessage: 0 }).tokens).toBe(12);
    expect(fitToWindow(log, { budget: 100, countTokens: (text) => Math.ceil(text.length / 4), perMessage: 0 }).tokens).toBe(3);
  });

  it('stays linear on a 500-step session fitted after every step', () => {
    const { countTokens, seen } = recorder();
    const log: Message[] = [system(), user('Go.')];
    let dropped = 0;
    for (let n = 1; n <= 500; n++) {
      log.push(...step(n, numbered(n % 7 === 0 ? 120 : 3)));
      const fit = fitToWindow(log, { budget: 6000, countTokens, shrinkAbove: 300 });
      expect(fit.fits).toBe(true);
      expect(fit.tokens).toBeLessThanOrEqual(6000);
      dropped = fit.dropped;
    }
    expect(dropped).toBeGreaterThan(800);
    const isNote = (text: string) => text.startsWith('[') && text.endsWith('kept in the session.]');
    const isCopy = (text: string) => /^\[… \d+ lines \(\d+ characters\) left out …\]$/m.test(text);
    const contents = new Set(log.map((m) => m.content));
    // Every message once (equal texts are counted once per object), shrunk copies at most once
    // per long result, and the note about once per call.
    expect(seen.filter((text) => contents.has(text)).length).toBe(log.length);
    expect(seen.filter(isCopy).length).toBeLessThanOrEqual(log.filter((m) => m.content.length > 1000).length);
    expect(seen.filter(isCopy).length).toBeGreaterThan(60);
    expect(seen.length).toBe(log.length + seen.filter(isCopy).length + seen.filter(isNote).length);
    const notes = seen.filter(isNote).length;
    expect(notes).toBeLessThanOrEqual(2 * 500);
  });
});

describe('fitToWindow: properties', () => {
  type Kind = 'step' | 'user' | 'notice' | 'orphan' | 'summary';
  interface Part {
    kind: Kind;
    calls: number;
    answered: number;
    size: number;
    lines: number;
    pinned: boolean;
  }
  const kinds: fc.Arbitrary<Part[]> = fc.array(
    fc.record({
      kind: fc.constantFrom<Kind>('step', 'step', 'step', 'user', 'notice', 'orphan', 'summary'),
      calls: fc.integer({ min: 0, max: 3 }),
      answered: fc.integer({ min: 0, max: 3 }),
      size: fc.integer({ min: 0, max: 400 }),
      lines: fc.integer({ min: 1, max: 150 }),
      pinned: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    }),
    { maxLength: 40 },
  );

  /** A log from the generated parts: prompt, task, then steps with native calls (some unanswered), users, notices. */
  function buildLog(parts: readonly Part[], prompts: number): Message[] {
    const log: Message[] = [];
    for (let i = 0; i < prompts; i++) log.push(createMessage('system', `prompt ${i}`, i === 0 ? { pinned: true } : {}));
    log.push(user('The task.'));
    let id = 0;
    parts.forEach((part, index) => {
      const text = `${index}:`.padEnd(part.size, 'x');
      if (part.kind === 'user') log.push(user(text));
      else if (part.kind === 'notice') log.push(createMessage('system', text, { meta: { notice: 'nudge' } }));
      else if (part.kind === 'orphan') log.push(result(text, `orphan${index}`));
      else if (part.kind === 'summary') log.push(createMessage('system', text, { meta: { compaction: { through: index } } }));
      else {
        const calls = Array.from({ length: part.calls }, () => ({ id: `id${id++}`, name: 'shell', arguments: '{}' }));
        const message = assistant(text, calls);
        if (part.pinned) message.pinned = true;
        log.push(message);
        for (const call of calls.slice(0, part.answered)) log.push(result(numbered(part.lines), call.id));
      }
    });
    return log;
  }

  it('fits whenever it says so, keeps the pinned and recent messages, and keeps native calls paired', () => {
    fc.assert(
      fc.property(
        kinds,
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 20_000 }),
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 0, max: 2000 }),
        fc.integer({ min: 0, max: 6 }),
        (parts, prompts, budget, keepRecent, shrinkAbove, perMessage) => {
          const log = buildLog(parts, prompts);
          const before = structuredClone(log);
          const countTokens = (text: string) => Math.ceil(text.length / 3);
          const fit = fitToWindow(log, { budget, countTokens, keepRecent, shrinkAbove, perMessage });
          expect(log).toEqual(before);

          const recount = fit.messages.reduce((total, m) => total + countTokens(m.content) + perMessage, 0);
          expect(fit.tokens).toBe(recount);
          if (fit.fits) expect(fit.tokens).toBeLessThanOrEqual(budget);
          else expect(fit.tokens).toBeGreaterThan(budget);

          // The prompt and the task are there, unchanged, in front.
          expect(fit.messages.slice(0, prompts + 1)).toEqual(log.slice(0, prompts + 1));
          fit.messages.slice(0, prompts + 1).forEach((m, i) => expect(m).toBe(log[i]));
          // The last keepRecent messages are the same objects, at the end.
          const recent = log.slice(Math.max(prompts + 1, log.length - keepRecent));
          const tail = fit.messages.slice(fit.messages.length - recent.length);
          tail.forEach((m, i) => expect(m).toBe(recent[i]));
          // Pinned messages are never left out or changed.
          for (const m of log.filter((message) => message.pinned)) expect(fit.messages).toContain(m);

          // Every sent message is from the log (in order), a shrunk tool result, or the one note.
          const notes = fit.messages.filter((m) => !log.includes(m) && !m.meta?.toolResult);
          expect(notes.map((m) => m.content)).toEqual(fit.dropped > 0 ? [note(fit.dropped)] : []);
          const copies = fit.messages.filter((m) => !log.includes(m) && m.meta?.toolResult);
          expect(copies.length).toBe(fit.shrunk);
          expect(fit.messages.length).toBe(log.length - fit.dropped + (fit.dropped > 0 ? 1 : 0));
          if (fit.dropped === 0 && fit.shrunk === 0 && fit.fits) fit.messages.forEach((m, i) => expect(m).toBe(log[i]));

          // A native call keeps its result exactly when its assistant message is sent.
          const sent = new Set(fit.messages.filter((m) => m.role === 'assistant'));
          const assistants = new Map<string, Message>();
          for (const m of log) for (const call of m.meta?.toolCalls ?? []) assistants.set(call.id, m);
          const expected = nativePairs(log).filter((id) => sent.has(assistants.get(id)!));
          expect(nativePairs(fit.messages)).toEqual(expected);
          // Steps go whole: a result following an assistant message is sent exactly when that message is.
          const sentResults = new Set(fit.messages.filter((m) => m.meta?.toolResult).map((m) => m.callId));
          let owner: Message | undefined;
          for (const m of log) {
            if (m.role !== 'system') owner = m.role === 'assistant' ? m : undefined;
            else if (m.meta?.toolResult && owner !== undefined) expect(sentResults.has(m.callId)).toBe(sent.has(owner));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
