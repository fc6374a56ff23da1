import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { XmlStreamScanner } from '../../src/parse/xml-stream-scanner';
import { parseXmlToolUses } from '../../src/parse/xml';
import type { ToolUse } from '../../src/parse/tool-use';
import { cut, scanChunks } from '../support/chunks';

/** Feeds `chunks` in order and returns the first tool use the scanner reports, and when. */
function scan(chunks: Iterable<string>): { use: ToolUse | undefined; at: number | 'finish' | 'none' } {
  return scanChunks(new XmlStreamScanner(), chunks);
}

/** `text` in pieces of `size` characters (the last one shorter), produced lazily. */
function* pieces(text: string, size: number): Generator<string> {
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

describe('XmlStreamScanner', () => {
  it('reports the use only once the > of </tool-use> has arrived', () => {
    const scanner = new XmlStreamScanner();
    expect(scanner.push('Listing.\n<tool-')).toBeUndefined();
    expect(scanner.push('use><shell>ls -la</shell></tool-')).toBeUndefined();
    expect(scanner.push('use')).toBeUndefined();
    expect(scanner.push(' \n')).toBeUndefined();
    const use = scanner.push('>more prose');
    expect(use).toEqual({ tool: 'shell', args: [], content: 'ls -la', format: 'xml', start: 9, end: 53 });
    expect(scanner.text).toBe('Listing.\n<tool-use><shell>ls -la</shell></tool-use \n>more prose');
  });

  it('reports nothing after the first use, though it keeps recording text', () => {
    const scanner = new XmlStreamScanner();
    expect(scanner.push('<tool-use><shell>ls</shell></tool-use>\n')?.content).toBe('ls');
    expect(scanner.push('<tool-use><shell>pwd</shell></tool-use>\n')).toBeUndefined();
    expect(scanner.finish()).toBeUndefined();
    expect(scanner.push('more')).toBeUndefined();
    expect(scanner.text).toBe('<tool-use><shell>ls</shell></tool-use>\n<tool-use><shell>pwd</shell></tool-use>\nmore');
  });

  it('returns the first of several uses that complete in one chunk', () => {
    const scanner = new XmlStreamScanner();
    expect(scanner.push('<tool-use><a>1</a></tool-use><tool-use><b>2</b></tool-use>')).toEqual({
      tool: 'a', args: [], content: '1', format: 'xml', start: 0, end: 29,
    });
  });

  it('returns a use completed by the last chunk from push, so finish has nothing to add', () => {
    const scanner = new XmlStreamScanner();
    expect(scanner.push('<tool-use><read args="a.txt"/></tool-use')).toBeUndefined();
    expect(scanner.push('>')).toEqual({ tool: 'read', args: ['a.txt'], content: '', format: 'xml', start: 0, end: 41 });
    expect(scanner.finish()).toBeUndefined();
  });

  it('never returns an unterminated call, from push or finish', () => {
    const scanner = new XmlStreamScanner();
    expect(scanner.push('<tool-use><shell>ls</shell>\n')).toBeUndefined();
    expect(scanner.push('</tool-')).toBeUndefined();
    expect(scanner.finish()).toBeUndefined();
  });

  it('reports nothing after finish, even a call completed later', () => {
    const scanner = new XmlStreamScanner();
    expect(scanner.push('<tool-use><shell>ls</shell>')).toBeUndefined();
    expect(scanner.finish()).toBeUndefined();
    expect(scanner.push('</tool-use>')).toBeUndefined();
    expect(scanner.finish()).toBeUndefined();
    expect(scanner.text).toBe('<tool-use><shell>ls</shell></tool-use>');
  });

  it('returns an empty text before anything is fed, and ignores empty chunks', () => {
    const scanner = new XmlStreamScanner();
    expect(scanner.text).toBe('');
    expect(scanner.push('')).toBeUndefined();
    expect(scanner.text).toBe('');
  });

  describe('chunk boundaries', () => {
    const replies = [
      'Let me look.\n<tool-use>\n<shell>\nls -la\n</shell>\n</tool-use>\nNow the next step.\n',
      'x\r\n<tool-use >\r\n<save args="a&amp;b.txt \'c\'">\r\n&lt;p&gt; a && b &#x3c;\r\n</save >\r\n</tool-use>\r\nok',
      '<tool-use><py><![CDATA[print("</py></tool-use>]]")]]>&amp;<![CDATA[x]]></py></tool-use>',
      '```xml\n<tool-use><a>no</a></tool-use>\n```\nUse `<tool-use>`:\n~~~\n~~~\n<tool-use><read args="r"/></tool-use>',
      '<tool-u <tool-use\n><tool-use><![CDATA[</tool-use>]]></tool-use><tool-use><b>2</tool-use>',
      '<tool-use><save args="a>b"><save>x</save>\n</save></tool-use>',
      '<tool-use><shell>unterminated</shell></tool-',
    ];

    it.each(replies)('gives the whole-text result for every pair of split points: %j', (reply) => {
      const expected = parseXmlToolUses(reply)[0];
      for (let i = 0; i <= reply.length; i++) {
        for (let j = i; j <= reply.length; j++) {
          expect(scan(cut(reply, [i, j])).use).toEqual(expected);
        }
      }
    });

    it.each(replies)('gives the whole-text result when fed one character at a time: %j', (reply) => {
      expect(scan([...reply]).use).toEqual(parseXmlToolUses(reply)[0]);
    });

    it('has a use for every reply that should have one', () => {
      expect(replies.map((reply) => parseXmlToolUses(reply)[0]?.tool)).toEqual([
        'shell', 'save', 'py', 'read', 'b', 'save', undefined,
      ]);
    });

    it('reports the use in the chunk that carries the > of </tool-use>', () => {
      const reply = 'a\n<tool-use><shell>ls</shell></tool-use>\nb\n';
      const last = reply.indexOf('</tool-use>') + '</tool-use>'.length - 1;
      for (let i = 1; i < reply.length; i++) {
        expect(scan([reply.slice(0, i), reply.slice(i)]).at).toBe(i > last ? 0 : 1);
      }
    });
  });

  describe('large input', () => {
    /** A body of about 2 MB that walks every path: text, entities, markup, CDATA, fences. */
    const line = 'if (a < b && c > d) { x = "&amp;&lt;</sav"; } <![CDATA[</save>]] ]]>\n```\n`x`\r\n';
    const rawBody = line.repeat(Math.ceil(2_000_000 / line.length));
    const content = rawBody
      .replace(/&amp;/g, '&')
      .replace(/&lt;/g, '<')
      .replace(/<!\[CDATA\[([^\]]*\]\] )\]\]>/g, '$1')
      .slice(0, -2); // the CRLF before </save>
    const prose = 'Some words.\n```xml\n<tool-use><no/></tool-use>\n```\nInline `<tool-use>`.\n'.repeat(2000);
    const reply = `${prose}<tool-use>\n<save args="big.txt">\n${rawBody}</save>\n</tool-use>\nDone.\n`;
    const expected: ToolUse = {
      tool: 'save',
      args: ['big.txt'],
      content,
      format: 'xml',
      start: prose.length,
      end: reply.indexOf('\nDone.'),
    };

    it('is built as intended', () => {
      expect(rawBody.length).toBeGreaterThan(2_000_000);
      expect(content.startsWith('if (a < b && c > d) { x = "&<</sav"; } </save>]] \n```\n`x`\r\nif')).toBe(true);
      expect(content.endsWith('`x`')).toBe(true);
      expect(parseXmlToolUses(reply)).toEqual([expected]);
    });

    it('scans a reply with a 2 MB body fed in 7-byte chunks', () => {
      expect(scan(pieces(reply, 7)).use).toEqual(expected);
    });

    it('scans a reply with a 2 MB body fed one character at a time', () => {
      expect(scan(pieces(reply, 1)).use).toEqual(expected);
    });

    it('scans long runs of what may be markup, one character at a time', () => {
      const n = 100_000;
      const x = 'x'.repeat(n);
      /** The use a whole reply makes, from `start` to its end. */
      const whole = (reply: string, tool: string, args: string[], content: string, start = 0): [string, ToolUse] => [
        reply,
        { tool, args, content, format: 'xml', start, end: reply.length },
      ];
      const shapes: Array<[string, ToolUse | undefined]> = [
        whole(`<tool-use${' '.repeat(n)}><a>x</a></tool-use>`, 'a', [], 'x'),
        whole(`<tool-use${' \n'.repeat(n)}x<tool-use><a>x</a></tool-use>`, 'a', [], 'x', 2 * n + 10),
        whole(`<tool-use><a>x</a${'\t'.repeat(n)}></tool-use>`, 'a', [], 'x'),
        whole(`<tool-use><a><![CDATA[${']'.repeat(n)}>]]></a></tool-use>`, 'a', [], `${']'.repeat(n - 2)}]]>`),
        whole(`<tool-use><a args="${'x '.repeat(n)}"/></tool-use>`, 'a', Array<string>(n).fill('x'), ''),
        whole(`<tool-use><a ${x} args="b"/></tool-use>`, 'a', ['b'], ''),
        whole(`<tool-use><a ${'x="" '.repeat(n)}args="b"/></tool-use>`, 'a', ['b'], ''),
        whole(`<tool-use><${x}>x</${x}></tool-use>`, x, [], 'x'),
        whole(`<tool-use><a>${'&#'.repeat(n)}x</a></tool-use>`, 'a', [], `${'&#'.repeat(n)}x`),
        [`${'`'.repeat(n)} <tool-use><a>x</a></tool-use>`, undefined],
        [`${'~'.repeat(n)}\n<tool-use><a>x</a></tool-use>`, undefined],
      ];
      for (const [reply, expected] of shapes) {
        expect(parseXmlToolUses(reply)[0]).toEqual(expected);
        expect(scan(pieces(reply, 1)).use).toEqual(expected);
      }
    });
  });

  describe('properties', () => {
    // Building blocks of replies: whole calls of every shape, code around them, and broken bits.
    const blocks = [
      'Some prose.\n', 'a < b && c; ', '\n', '\r\n', ' ', '`', '``', '```', '~~~', '`<tool-use>`', '```xml\n', '```\n',
      '~~~~\n', '    ```\n', '<tool-use><shell>ls</shell></tool-use>', '<tool-use>\n<save args="a b">\nx\n</save>\n</tool-use>',
      '<tool-use><read args=\'r\'/></tool-use>', '<tool-use><py><![CDATA[</py></tool-use>]]>&lt;&#x3c;</py>\n</tool-use>',
      '<tool-use>', '</tool-use>', '</tool-use >', '<tool-use \n>', '<shell>', '</shell>', '<save args="q>r">', '</save>',
      '<![CDATA[', ']]>', ']', '&amp;', '&lt;', '&#60;', '&', '<', '>', '"', 'é', '😀',
    ];
    const replyArb = fc.oneof(
      { arbitrary: fc.array(fc.constantFrom(...blocks), { maxLength: 40 }).map((parts) => parts.join('')), weight: 4 },
      { arbitrary: fc.string({ unit: 'binary', maxLength: 200 }), weight: 1 },
      { arbitrary: fc.string({ maxLength: 200 }), weight: 1 },
    );
    const cutsArb = fc.array(fc.nat(), { maxLength: 12 });

    it('agrees with the parser on the first use for any chunking, and records all text', () => {
      fc.assert(
        fc.property(replyArb, cutsArb, (reply, cuts) => {
          const chunks = cut(reply, cuts);
          expect(scan(chunks).use).toEqual(parseXmlToolUses(reply)[0]);
          const scanner = new XmlStreamScanner();
          for (const chunk of chunks) scanner.push(chunk);
          scanner.finish();
          expect(scanner.text).toBe(reply);
        }),
        { numRuns: 3000 },
      );
    });

    it('agrees with the parser when fed one character at a time', () => {
      fc.assert(
        fc.property(replyArb, (reply) => {
          expect(scan(reply.split('')).use).toEqual(parseXmlToolUses(reply)[0]);
        }),
        { numRuns: 1000 },
      );
    });

    it('finds a use in a good share of generated replies', () => {
      const samples = fc.sample(replyArb, { numRuns: 500, seed: 7 });
      const withUse = samples.filter((reply) => parseXmlToolUses(reply).length > 0).length;
      expect(withUse).toBeGreaterThan(100);
    });
  });
});
