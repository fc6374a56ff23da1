import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TRUNCATE_LIMITS, truncateOutput, type TruncateLimits } from '../../src/tools/truncate-output';

const MARKER = /\[… (\d+) lines \((\d+) characters\) left out …\]\n/;

/** `count` lines of ten characters each: `line 0001\n`, `line 0002\n`, ... */
const tenCharLines = (count: number) => Array.from({ length: count }, (_, i) => `line ${String(i + 1).padStart(4, '0')}\n`).join('');

describe('truncateOutput', () => {
  it('returns a text within maxChars unchanged', () => {
    const limits: TruncateLimits = { maxChars: 20, headChars: 5, tailChars: 5 };
    expect(truncateOutput('short', limits)).toEqual({ text: 'short', omittedChars: 0, omittedLines: 0 });
    const exact = 'x'.repeat(20);
    expect(truncateOutput(exact, limits)).toEqual({ text: exact, omittedChars: 0, omittedLines: 0 });
    expect(truncateOutput('', limits)).toEqual({ text: '', omittedChars: 0, omittedLines: 0 });
  });

  it('keeps the defaults: 16,000 characters whole', () => {
    const text = 'y'.repeat(DEFAULT_TRUNCATE_LIMITS.maxChars);
    expect(truncateOutput(text).text).toBe(text);
    expect(truncateOutput(`${text}y`).omittedChars).toBeGreaterThan(0);
  });

  it('cuts a long text at line boundaries and counts what it left out', () => {
    const text = tenCharLines(100);
    const result = truncateOutput(text, { maxChars: 200, headChars: 55, tailChars: 55 });
    expect(result).toEqual({
      text: `${tenCharLines(5)}[… 90 lines (900 characters) left out …]\n${tenCharLines(100).slice(950)}`,
      omittedChars: 900,
      omittedLines: 90,
    });
    expect(result.text.endsWith('line 0096\nline 0097\nline 0098\nline 0099\nline 0100\n')).toBe(true);
  });

  it('cuts inside a line when no line break is near the cut', () => {
    const text = `short\n${'a'.repeat(300)}\n${'b'.repeat(300)}`;
    const result = truncateOutput(text, { maxChars: 200, headChars: 100, tailChars: 100 });
    expect(result.text).toBe(`short\n${'a'.repeat(94)}\n[… 1 lines (407 characters) left out …]\n${'b'.repeat(100)}`);
    expect(result.omittedChars).toBe(407);
    expect(result.omittedLines).toBe(1);
  });

  it('cuts a text with no line breaks by characters', () => {
    const result = truncateOutput('x'.repeat(1000), { maxChars: 100, headChars: 30, tailChars: 40 });
    expect(result).toEqual({
      text: `${'x'.repeat(30)}\n[… 0 lines (930 characters) left out …]\n${'x'.repeat(40)}`,
      omittedChars: 930,
      omittedLines: 0,
    });
  });

  it('keeps head and tail of the original, marks the middle, and stays within its bound', () => {
    const limitsArb = fc
      .record({ headChars: fc.integer({ min: 1, max: 60 }), tailChars: fc.integer({ min: 0, max: 60 }), slack: fc.integer({ min: 0, max: 40 }) })
      .map(({ headChars, tailChars, slack }) => ({ headChars, tailChars, maxChars: headChars + tailChars + slack }));
    // Mostly longer than maxChars, with line breaks both near and far from the cuts.
    const textArb = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd', ' ', '\n'), minLength: 0, maxLength: 300, size: 'max' });

    fc.assert(
      fc.property(textArb, limitsArb, (text, limits) => {
        const result = truncateOutput(text, limits);
        if (text.length <= limits.maxChars) {
          expect(result).toEqual({ text, omittedChars: 0, omittedLines: 0 });
          return;
        }
        const match = MARKER.exec(result.text);
        expect(match).not.toBeNull();
        const marker = match![0];
        const shownHead = result.text.slice(0, match!.index);
        const tail = result.text.slice(match!.index + marker.length);
        // The head is a prefix of the text, followed by a line break of its own or an added one.
        const head = text.startsWith(shownHead) ? shownHead : shownHead.slice(0, -1);
        expect(text.startsWith(head)).toBe(true);
        expect(shownHead.endsWith('\n')).toBe(true);
        expect(text.endsWith(tail)).toBe(true);
        const omitted = text.slice(head.length, text.length - tail.length);
        expect(result.omittedChars).toBe(omitted.length);
        expect(result.omittedLines).toBe(omitted.split('\n').length - 1);
        expect(match![1]).toBe(String(result.omittedLines));
        expect(match![2]).toBe(String(result.omittedChars));
        // At most one line break beyond headChars + tailChars besides the marker.
        expect(result.text.length).toBeLessThanOrEqual(limits.headChars + limits.tailChars + marker.length + 1);
      }),
      { numRuns: 500 },
    );
  });
});
