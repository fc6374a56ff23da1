import { describe, expect, it } from 'vitest';
import { parseIntent } from '../../src/ptc/intent';

describe('parseIntent', () => {
  it('reads the intent of a first-line comment, trimmed', () => {
    expect(parseIntent('// intent: find engineering staff over their travel limit\nprint(1);')).toBe(
      'find engineering staff over their travel limit',
    );
    expect(parseIntent('//intent:count files   \nprint(1);')).toBe('count files');
    expect(parseIntent('  //   intent  :   spaced out  \t\nprint(1);')).toBe('spaced out');
  });

  it('matches the key whatever its case', () => {
    expect(parseIntent('// INTENT: shout\nx();')).toBe('shout');
    expect(parseIntent('// Intent: Keep The Case Of The Text\nx();')).toBe('Keep The Case Of The Text');
  });

  it('looks past blank lines and other leading comments', () => {
    const code = ['', '// a program about notes', '   ', '// written for the weekly report', '// intent: sum the notes', 'print(1);'].join('\n');
    expect(parseIntent(code)).toBe('sum the notes');
  });

  it('lets the first intent line win', () => {
    expect(parseIntent('// intent: first\n// intent: second\nx();')).toBe('first');
  });

  it('does not take a word that merely starts with "intent" for the key', () => {
    expect(parseIntent('// intentionally short\n// intents: many\n// intent: the real one\nx();')).toBe('the real one');
  });

  it('reads lines ending in CRLF', () => {
    expect(parseIntent('// intent: windows line\r\nprint(1);\r\n')).toBe('windows line');
  });

  it('cuts the intent to 200 characters', () => {
    const long = 'a'.repeat(150) + 'b'.repeat(100);
    const intent = parseIntent(`// intent: ${long}\nx();`);
    expect(intent).toHaveLength(200);
    expect(intent).toBe(long.slice(0, 200));
    expect(parseIntent(`// intent: ${'c'.repeat(200)}`)).toBe('c'.repeat(200));
  });

  it('gives undefined when there is no intent line', () => {
    expect(parseIntent('print(1);')).toBeUndefined();
    expect(parseIntent('// just a comment\nprint(1);')).toBeUndefined();
    expect(parseIntent('')).toBeUndefined();
    expect(parseIntent('\n\n  \n')).toBeUndefined();
  });

  it('gives undefined for an intent line with no text', () => {
    expect(parseIntent('// intent:\nx();')).toBeUndefined();
    expect(parseIntent('// intent:    \nx();')).toBeUndefined();
  });

  it('ignores an intent comment that comes after code', () => {
    expect(parseIntent('const a = 1;\n// intent: too late\nprint(a);')).toBeUndefined();
    expect(parseIntent('print(1); // intent: on a line of code')).toBeUndefined();
    expect(parseIntent('/* header */\n// intent: after a block comment\nx();')).toBeUndefined();
  });
});
