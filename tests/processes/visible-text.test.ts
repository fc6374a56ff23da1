import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { VisibleTextStream, visibleControls, visibleLine, visibleName, visibleText } from '../../src/processes/visible-text';

/** Anything a terminal would act on rather than show, bidirectional controls included. */
const LIVE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe('visibleText', () => {
  const cases: { name: string; input: string; shown: string }[] = [
    { name: 'plain text', input: 'hello\n\tworld', shown: 'hello\n\tworld' },
    { name: 'colours', input: '\x1b[1;31mred\x1b[0m text', shown: 'red text' },
    { name: 'OSC 52 clipboard write (BEL)', input: 'a\x1b]52;c;Y3VybCB4IHwgc2g=\x07b', shown: 'ab' },
    { name: 'window title (ST)', input: 'a\x1b]0;pwned\x1b\\b', shown: 'ab' },
    { name: 'DCS string', input: 'a\x1bP1$qm\x1b\\b', shown: 'ab' },
    { name: 'APC, PM and SOS strings', input: '\x1b_x\x1b\\a\x1b^y\x1b\\b\x1bXz\x1b\\c', shown: 'abc' },
    { name: 'full reset and charset selection', input: 'a\x1bcb\x1b(Bc', shown: 'abc' },
    { name: 'ESC ESC then OSC', input: '\x1b\x1b]52;c;eA==\x07done', shown: '␛done' },
    { name: 'CSI cut by an OSC', input: '\x1b[\x1b]0;title\x072J', shown: '␛[2J' },
    { name: 'OSC inside an OSC', input: '\x1b]0;a\x1b]0;b\x07c', shown: '␛]0;ac' },
    { name: 'nested sequences that a second pass would join', input: '\x1b\x1b[31m[2J', shown: '␛[2J' },
    { name: 'OSC cut by a line feed', input: '\x1b]0;title\nrest\x07', shown: '␛]0;title\nrest␇' },
    { name: 'unterminated OSC at the end', input: 'ok\x1b]52;c;eA==', shown: 'ok␛]52;c;eA==' },
    { name: '8-bit CSI and OSC', input: 'a\x9b2Jb\x9d0;t\x9cc', shown: 'abc' },
    { name: 'lone C1 control', input: 'a\x85b\x9cc', shown: 'a<U+0085>b<U+009C>c' },
    { name: 'bare carriage return overwriting a line', input: 'curl x | sh\recho done', shown: 'curl x | sh␍echo done' },
    { name: 'CR LF', input: 'one\r\ntwo\r\n', shown: 'one\ntwo\n' },
    { name: 'backspaces, bell, NUL and DEL', input: 'rm -rf /\b\b\b\bls\x07\x00\x7f', shown: 'rm -rf /␈␈␈␈ls␇␀␡' },
    { name: 'bidi override (Trojan Source)', input: 'if (a) {\u202e } \u2066// x\u2069', shown: 'if (a) {<U+202E> } <U+2066>// x<U+2069>' },
    { name: 'bidi marks', input: 'a\u200fb\u200ec\u061cd', shown: 'a<U+200F>b<U+200E>c<U+061C>d' },
    { name: 'CSI without a final byte', input: 'x\x1b[12', shown: 'x␛[12' },
    { name: 'lone ESC at the end', input: 'x\x1b', shown: 'x␛' },
    { name: 'wide and combining characters', input: '界 é 😀', shown: '界 é 😀' },
  ];

  for (const { name, input, shown } of cases) {
    it(`shows ${name} without anything live`, () => {
      const out = visibleText(input);
      expect(out).toBe(shown);
      expect(out).not.toMatch(LIVE);
    });
  }

  it('leaves nothing live in any mix of escape pieces, and is stable', () => {
    const piece = fc.constantFrom('\x1b', '[', ']', '0;', '52;c;', 'P', '_', '\\', '\x07', '\x9b', '\x9c', '\x9d', '\r', '\n', '\t', '2J', 'm', 'a', '\u202e', '\u2069', '\x00', '\x7f', 'é');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const out = visibleText(pieces.join(''));
        expect(out).not.toMatch(LIVE);
        expect(visibleText(out)).toBe(out);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps the letters of text that holds no complete sequence', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (text) => {
        fc.pre(!/[\x1b\x90\x98\x9b\x9d-\x9f]/.test(text));
        const letters = (s: string) => s.replace(/[^a-zA-Z0-9]/g, '');
        const out = visibleText(text);
        expect(letters(out.replace(/<U\+[0-9A-F]{4}>/g, ''))).toBe(letters(text));
      }),
    );
  });

  it('stays linear on many unterminated string sequences', () => {
    const text = '\x1b]'.repeat(200_000);
    const out = visibleText(text);
    expect(out).toBe('␛]'.repeat(200_000));
  });
});

describe('visibleLine', () => {
  it('puts the text on one line', () => {
    expect(visibleLine('a\nb\tc\x1b]0;t\x07\rd')).toBe('a b c␍d');
  });
});

describe('visibleControls', () => {
  it('shows sequences whole instead of removing them', () => {
    expect(visibleControls('\x1b[31mred\x1b]0;t\x07\r\n\u202e')).toBe('␛[31mred␛]0;t␇\n<U+202E>');
  });
});

describe('VisibleTextStream', () => {
  const pieces = fc.constantFrom('\x1b', '[', ']', '0;', '52;c;', 'P', '\\', '\x07', '\x9b', '\x9c', '\x9d', '\r', '\n', '2J', 'm', 'a', '\u202e');

  it('gives what visibleText gives for the whole, however the text is cut', () => {
    fc.assert(
      fc.property(fc.array(fc.array(pieces, { maxLength: 8 }), { maxLength: 8 }), (chunks) => {
        const stream = new VisibleTextStream();
        const texts = chunks.map((chunk) => chunk.join(''));
        const out = texts.map((text) => stream.push(text)).join('') + stream.end();
        expect(out).toBe(visibleText(texts.join('')));
      }),
      { numRuns: 2000 },
    );
  });

  it('holds back a sequence cut in two, and a CR before its LF', () => {
    const stream = new VisibleTextStream();
    expect(stream.push('a\x1b]0;ti')).toBe('a');
    expect(stream.push('tle\x07b\r')).toBe('b');
    expect(stream.push('\nc')).toBe('\nc');
    expect(stream.end()).toBe('');
  });

  it('shows a sequence that never ends once the stream ends', () => {
    const stream = new VisibleTextStream();
    expect(stream.push('a\x1b]52;c;')).toBe('a');
    expect(stream.end()).toBe('␛]52;c;');
  });
});

describe('visibleName', () => {
  it('shows every character of a name on one line', () => {
    expect(visibleName('run\x1b]0;t\x07\n\t.sh\u202e')).toBe('run␛]0;t␇␊␉.sh<U+202E>');
  });
});
