import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { parseXmlToolUses as parse } from '../../src/parse/xml';
import type { ToolUse } from '../../src/parse/tool-use';

/** The expected use for the call that spans `text.slice(start, end)`. */
function use(tool: string, args: string[], content: string, start: number, end: number): ToolUse {
  return { tool, args, content, format: 'xml', start, end };
}

/** The one use expected when `call` is the only call in `text`: offsets from where it is. */
function only(text: string, call: string, tool: string, args: string[], content: string): ToolUse[] {
  const start = text.indexOf(call);
  expect(start).toBeGreaterThanOrEqual(0);
  return [use(tool, args, content, start, start + call.length)];
}

/** The content of the only call in `text`. */
function contentOf(text: string): string | undefined {
  const uses = parse(text);
  expect(uses).toHaveLength(1);
  return uses[0]?.content;
}

describe('parseXmlToolUses', () => {
  describe('calls', () => {
    it('reads a one-line call: tool from the element name, body as content, offsets', () => {
      const text = '<tool-use><shell>ls -la</shell></tool-use>';
      expect(parse(text)).toEqual([use('shell', [], 'ls -la', 0, 42)]);
    });

    it('reads a multi-line call with args, prose around it', () => {
      const call = '<tool-use>\n<save args="notes/hello.txt">\nHello\n</save>\n</tool-use>';
      const text = `I will save it.\n${call}\nDone.`;
      expect(parse(text)).toEqual([use('save', ['notes/hello.txt'], 'Hello', 16, 16 + call.length)]);
    });

    it('reads a self-closing element as a call with empty content', () => {
      const text = '<tool-use><read args="src/app.ts"/></tool-use>';
      expect(parse(text)).toEqual([use('read', ['src/app.ts'], '', 0, text.length)]);
      expect(parse('<tool-use><pwd/></tool-use>')).toEqual([use('pwd', [], '', 0, 27)]);
    });

    it('takes any name of letters, digits, _, - and . as the tool, as written', () => {
      const names = ['bash', 'py', 'Shell', 'my_tool-2.x', '9lives', 'unknown'];
      for (const name of names) {
        const text = `<tool-use><${name}>x</${name}></tool-use>`;
        expect(parse(text)).toEqual([use(name, [], 'x', 0, text.length)]);
      }
    });

    it('returns every call in text order, with prose before, between and after', () => {
      const a = '<tool-use><shell>ls</shell></tool-use>';
      const b = '<tool-use>\n<py>\nprint(1)\n</py>\n</tool-use>';
      const text = `First:\n${a}\nthen ${b} and finally.\n`;
      const aStart = text.indexOf(a);
      const bStart = text.indexOf(b);
      expect(parse(text)).toEqual([
        use('shell', [], 'ls', aStart, aStart + a.length),
        use('py', [], 'print(1)', bStart, bStart + b.length),
      ]);
    });

    it('reads calls that follow one another on one line', () => {
      const text = '<tool-use><a>1</a></tool-use><tool-use><b>2</b></tool-use>';
      expect(parse(text)).toEqual([use('a', [], '1', 0, 29), use('b', [], '2', 29, 58)]);
    });

    it('counts offsets in UTF-16 code units, as string indices', () => {
      const text = '😀 é <tool-use><shell>echo 😀</shell></tool-use>';
      expect(parse(text)).toEqual([use('shell', [], 'echo 😀', 5, text.length)]);
    });

    it('returns nothing for text without calls', () => {
      expect(parse('')).toEqual([]);
      expect(parse('Just an answer, <b>bold</b> and a < b.')).toEqual([]);
      expect(parse('</tool-use> <shell>ls</shell>')).toEqual([]);
    });
  });

  describe('args', () => {
    it('splits the args attribute on any whitespace', () => {
      const text = '<tool-use><save args="  a.txt\tb.txt\n c.txt ">x</save></tool-use>';
      expect(parse(text)[0]?.args).toEqual(['a.txt', 'b.txt', 'c.txt']);
    });

    it('accepts single quotes and whitespace around =', () => {
      const text = "<tool-use><save args = 'a b'>x</save></tool-use>";
      expect(parse(text)).toEqual([use('save', ['a', 'b'], 'x', 0, text.length)]);
    });

    it('gives no args without an args attribute, or with an empty one', () => {
      expect(parse('<tool-use><shell>ls</shell></tool-use>')[0]?.args).toEqual([]);
      expect(parse('<tool-use><shell args="">ls</shell></tool-use>')[0]?.args).toEqual([]);
      expect(parse('<tool-use><shell args="  ">ls</shell></tool-use>')[0]?.args).toEqual([]);
    });

    it('ignores other attributes, and attributes without a quoted value', () => {
      const text = '<tool-use><save mode="w" title=\'args="no"\' args="a.txt" force>x</save></tool-use>';
      expect(parse(text)).toEqual([use('save', ['a.txt'], 'x', 0, text.length)]);
      expect(parse('<tool-use><save args=a.txt>x</save></tool-use>')[0]?.args).toEqual([]);
    });

    it('takes the first args attribute when there are several', () => {
      expect(parse('<tool-use><save args="a" args="b">x</save></tool-use>')[0]?.args).toEqual(['a']);
    });

    it('decodes entities in each word after splitting', () => {
      const args = 'a&amp;b.txt &quot;q&quot; &lt;x&gt; it&apos;s my&#32;file &#x41;';
      const text = `<tool-use><save args="${args}">x</save></tool-use>`;
      expect(parse(text)[0]?.args).toEqual(['a&b.txt', '"q"', '<x>', "it's", 'my file', 'A']);
    });

    it('reads a > inside a quoted value as part of the value', () => {
      const text = '<tool-use><grep args="a>b src">x</grep></tool-use>';
      expect(parse(text)).toEqual([use('grep', ['a>b', 'src'], 'x', 0, text.length)]);
      const single = "<tool-use><grep args='a>b'>x</grep></tool-use>";
      expect(parse(single)).toEqual([use('grep', ['a>b'], 'x', 0, single.length)]);
    });

    it('reads args of a self-closing element, with or without a space before />', () => {
      expect(parse('<tool-use><read args="a b" /></tool-use>')[0]).toEqual(use('read', ['a', 'b'], '', 0, 40));
      expect(parse("<tool-use><read args='x/y'/></tool-use>")[0]).toEqual(use('read', ['x/y'], '', 0, 39));
    });

    it('does not take a / inside a quoted value for a self-closing tag', () => {
      const text = '<tool-use><save args="dir/">x</save></tool-use>';
      expect(parse(text)).toEqual([use('save', ['dir/'], 'x', 0, text.length)]);
    });
  });

  describe('content line breaks', () => {
    it('removes one line break after the opening tag and one before the closing tag', () => {
      expect(contentOf('<tool-use><s>\nabc\n</s></tool-use>')).toBe('abc');
      expect(contentOf('<tool-use><s>\r\nabc\r\n</s></tool-use>')).toBe('abc');
      expect(contentOf('<tool-use><s>\nabc</s></tool-use>')).toBe('abc');
      expect(contentOf('<tool-use><s>abc\n</s></tool-use>')).toBe('abc');
    });

    it('removes only one line break at each end, and keeps indentation', () => {
      expect(contentOf('<tool-use><s>\n\n  a\n    b\n\n</s></tool-use>')).toBe('\n  a\n    b\n');
      expect(contentOf('<tool-use><s>\r\n\r\nx\r\n\r\n</s></tool-use>')).toBe('\r\nx\r\n');
      expect(contentOf('<tool-use><s>  x  </s></tool-use>')).toBe('  x  ');
    });

    it('keeps inner line breaks as written, CRLF included', () => {
      expect(contentOf('<tool-use><s>\r\none\r\ntwo\nthree\r\n</s></tool-use>')).toBe('one\r\ntwo\nthree');
    });

    it('gives an empty content for an empty body or a body of line breaks only', () => {
      expect(contentOf('<tool-use><s></s></tool-use>')).toBe('');
      expect(contentOf('<tool-use><s>\n</s></tool-use>')).toBe('');
      expect(contentOf('<tool-use><s>\r\n</s></tool-use>')).toBe('');
      expect(contentOf('<tool-use><s>\n\n</s></tool-use>')).toBe('');
      expect(contentOf('<tool-use><s>\n\n\n</s></tool-use>')).toBe('\n');
    });

    it('does not take a lone CR for a line break', () => {
      expect(contentOf('<tool-use><s>\rx\r</s></tool-use>')).toBe('\rx\r');
    });

    it('removes only line breaks written as such, not &#10; nor one inside CDATA', () => {
      expect(contentOf('<tool-use><s>&#10;x&#10;</s></tool-use>')).toBe('\nx\n');
      expect(contentOf('<tool-use><s><![CDATA[\nx\n]]></s></tool-use>')).toBe('\nx\n');
      expect(contentOf('<tool-use><s>\n<![CDATA[\nx\n]]>\n</s></tool-use>')).toBe('\nx\n');
    });
  });

  describe('entities', () => {
    it('decodes the five named entities and numeric references in the body', () => {
      const text = '<tool-use><py>&lt;&gt;&amp;&quot;&apos; &#60;&#x3c;&#X3C;&#0060; &#128512;&#x1F600;</py></tool-use>';
      expect(contentOf(text)).toBe('<>&"\' <<<< 😀😀');
    });

    it('keeps every other & as written', () => {
      const body = 'a && b; &nbsp; &amp &#; &#x; &#xZZ; &#0; &#xD800; &#x110000; &#99999999999; & ; &LT;';
      expect(contentOf(`<tool-use><py>${body}</py></tool-use>`)).toBe(body);
    });

    it('decodes once: &amp;lt; gives &lt;', () => {
      expect(contentOf('<tool-use><py>&amp;lt; &amp;amp;</py></tool-use>')).toBe('&lt; &amp;');
    });

    it('keeps a < that does not start a closing tag as written', () => {
      const body = 'if a < b and c<d: <b>x</b> </sav </saved> </ py> <py> </py x> <!-- c --> <![CDATA x <<';
      expect(contentOf(`<tool-use><py>${body}</py></tool-use>`)).toBe(body);
    });

    it('decodes an entity written right before the closing tag', () => {
      expect(contentOf('<tool-use><py>a&amp;</py></tool-use>')).toBe('a&');
      expect(contentOf('<tool-use><py>a&amp</py></tool-use>')).toBe('a&amp');
    });
  });

  describe('CDATA', () => {
    it('keeps a CDATA section verbatim: no entity decoding inside', () => {
      expect(contentOf('<tool-use><py><![CDATA[a &lt; b && c]]></py></tool-use>')).toBe('a &lt; b && c');
    });

    it('takes closing tags inside CDATA as content, not structure', () => {
      const text = '<tool-use><save args="a.xml"><![CDATA[<x></save></tool-use></x>]]></save></tool-use>';
      expect(parse(text)).toEqual([use('save', ['a.xml'], '<x></save></tool-use></x>', 0, text.length)]);
    });

    it('mixes several sections with decoded text', () => {
      const text = '<tool-use><py>&amp;<![CDATA[&amp;]]> &lt; <![CDATA[<]]>&gt;<![CDATA[]]>!</py></tool-use>';
      expect(contentOf(text)).toBe('&&amp; < <>!');
    });

    it('ends a section at the first ]]>, keeping extra brackets', () => {
      expect(contentOf('<tool-use><py><![CDATA[a]]]>b<![CDATA[]]]]>]]></py></tool-use>')).toBe('a]b]]]]>');
      expect(contentOf('<tool-use><py><![CDATA[x] ]> ]]]]></py></tool-use>')).toBe('x] ]> ]]');
    });

    it('never ends a call inside an unterminated section', () => {
      expect(parse('<tool-use><py><![CDATA[x</py></tool-use>')).toEqual([]);
    });

    it('skips CDATA before the element and after a self-closing one, closing tags and all', () => {
      const text = '<tool-use><![CDATA[</tool-use>]]><read args="a"/><![CDATA[</tool-use>]]></tool-use>';
      expect(parse(text)).toEqual([use('read', ['a'], '', 0, text.length)]);
    });
  });

  describe('where the body and the call end', () => {
    it('ends the body at the last closing tag of the tool before </tool-use>', () => {
      const text = '<tool-use>\n<save args="a.xml">\n<save>x</save>\n</save>\n</tool-use>';
      expect(parse(text)).toEqual([use('save', ['a.xml'], '<save>x</save>', 0, text.length)]);
    });

    it('drops what comes between the last closing tag and </tool-use>', () => {
      expect(parse('<tool-use><shell>ls</shell> \n\t </tool-use>')).toEqual([use('shell', [], 'ls', 0, 42)]);
      expect(contentOf('<tool-use><shell>ls</shell> oops</tool-use>')).toBe('ls');
    });

    it('runs the body to </tool-use> when the closing tag of the tool is missing', () => {
      const text = '<tool-use>\n<shell>\nls -la\n</tool-use>';
      expect(parse(text)).toEqual([use('shell', [], 'ls -la', 0, text.length)]);
    });

    it('ends the call at the first </tool-use>, even with a later </tool>', () => {
      const text = '<tool-use><shell>a</tool-use>b</shell></tool-use>';
      expect(parse(text)).toEqual([use('shell', [], 'a', 0, 29)]);
    });

    it('allows whitespace before the > of closing tags', () => {
      const text = '<tool-use><shell>ls</shell\n></tool-use \r\n>';
      expect(parse(text)).toEqual([use('shell', [], 'ls', 0, text.length)]);
    });

    it('does not confuse a tool named like a prefix of tool-use with the wrapper', () => {
      const text = '<tool-use><tool>x</tool></tool-use>';
      expect(parse(text)).toEqual([use('tool', [], 'x', 0, text.length)]);
      const longer = '<tool-use><tool-user>x</tool-user></tool-use>';
      expect(parse(longer)).toEqual([use('tool-user', [], 'x', 0, longer.length)]);
    });

    it('keeps closing tags of other elements in the body', () => {
      expect(contentOf('<tool-use><save args="a"><p>x</p></br></save></tool-use>')).toBe('<p>x</p></br>');
    });
  });

  describe('the wrapper', () => {
    it('allows whitespace before the > of <tool-use>', () => {
      const text = '<tool-use \t\n><shell>ls</shell></tool-use>';
      expect(parse(text)).toEqual([use('shell', [], 'ls', 0, text.length)]);
    });

    it('skips stray text before the element', () => {
      const text = '<tool-use>\n  Here: <!-- note --> <  <shell>ls</shell></tool-use>';
      expect(parse(text)).toEqual([use('shell', [], 'ls', 0, text.length)]);
    });

    it('skips a repeated <tool-use> before the element, keeping the first start', () => {
      const text = 'x <tool-use>\n<tool-use>\n<shell>ls</shell>\n</tool-use>';
      expect(parse(text)).toEqual([use('shell', [], 'ls', 2, text.length)]);
    });

    it('yields nothing for a wrapper without an element, and reads on after it', () => {
      expect(parse('<tool-use></tool-use>')).toEqual([]);
      expect(parse('<tool-use> just text </ x> </tool-use>')).toEqual([]);
      const text = '<tool-use>\n</tool-use>\n<tool-use><shell>ls</shell></tool-use>';
      expect(parse(text)).toEqual([use('shell', [], 'ls', 23, text.length)]);
    });

    it('yields nothing when </tool-use> comes before the opening tag is finished', () => {
      expect(parse('<tool-use><save args="a.txt></tool-use>')).toEqual([]);
      expect(parse('<tool-use><save args="a.txt"</tool-use>')).toEqual([]);
      const text = '<tool-use><save args="x></tool-use> then <tool-use><shell>ls</shell></tool-use>';
      expect(parse(text)).toEqual(only(text, '<tool-use><shell>ls</shell></tool-use>', 'shell', [], 'ls'));
    });

    it('is not a wrapper when the tag name goes on or is self-closing', () => {
      expect(parse('<tool-user><shell>ls</shell></tool-user>')).toEqual([]);
      expect(parse('<tool-use/><shell>ls</shell></tool-use>')).toEqual([]);
      expect(parse('<Tool-Use><shell>ls</shell></Tool-Use>')).toEqual([]);
      expect(parse('< tool-use><shell>ls</shell></tool-use>')).toEqual([]);
    });

    it('starts a call at a <tool-use> right after a failed one', () => {
      const text = '<tool-u<tool-use><shell>ls</shell></tool-use>';
      expect(parse(text)).toEqual([use('shell', [], 'ls', 7, text.length)]);
    });

    it('never returns an unterminated call', () => {
      expect(parse('<tool-use><shell>ls</shell>')).toEqual([]);
      expect(parse('<tool-use><shell>ls</shell></tool-')).toEqual([]);
      expect(parse('<tool-use><shell>ls</shell></tool-use')).toEqual([]);
      expect(parse('<tool-use><save args="a.txt"')).toEqual([]);
      expect(parse('<tool-use><shell>a</shell></tool-use>\n<tool-use><shell>b</shell>')).toHaveLength(1);
    });
  });

  describe('code', () => {
    const call = '<tool-use><shell>ls</shell></tool-use>';

    it('takes a call inside a backtick or tilde fenced block for text', () => {
      expect(parse(`\`\`\`\n${call}\n\`\`\`\n`)).toEqual([]);
      expect(parse(`~~~xml\n${call}\n~~~\n`)).toEqual([]);
      expect(parse(`\`\`\`\`md\n\`\`\`\n${call}\n\`\`\`\n\`\`\`\`\n`)).toEqual([]);
    });

    it('reads a call after the fenced block is closed', () => {
      const text = `\`\`\`xml\n${call}\n\`\`\`\n${call}\n`;
      expect(parse(text)).toEqual([use('shell', [], 'ls', text.lastIndexOf(call), text.lastIndexOf(call) + call.length)]);
    });

    it('takes a call in the info string of an opening fence line for text', () => {
      expect(parse(`\`\`\` ${call}\n\`\`\`\n`)).toEqual([]);
      expect(parse(`~~~ ${call}\n~~~\n`)).toEqual([]);
    });

    it('opens fences indented up to three spaces, not four or a tab', () => {
      expect(parse(`   \`\`\`\n${call}\n   \`\`\`\n`)).toEqual([]);
      expect(parse(`    \`\`\`\n${call}\n`)).toHaveLength(1);
      expect(parse(`\t\`\`\`\n${call}\n`)).toHaveLength(1);
    });

    it('closes a fence only with a bare run of the same character at least as long', () => {
      expect(parse(`\`\`\`\`\n\`\`\`\n${call}\n\`\`\`\`\n`)).toEqual([]);
      expect(parse(`\`\`\`\n~~~\n${call}\n\`\`\`\n`)).toEqual([]);
      expect(parse(`\`\`\`\n\`\`\` x\n${call}\n\`\`\`\n`)).toEqual([]);
      expect(parse(`\`\`\`\n    \`\`\`\n${call}\n\`\`\`\n`)).toEqual([]);
      expect(parse(`\`\`\`\n\`\`\`\`\` \t\r\n${call}\n`)).toHaveLength(1);
      expect(parse(`~~~\n   ~~~~\n${call}\n`)).toHaveLength(1);
    });

    it('leaves everything after an unclosed fence as code', () => {
      expect(parse(`\`\`\`python\nprint(1)\n${call}\n`)).toEqual([]);
    });

    it('does not take a line of backticks with a backtick in its info for a fence', () => {
      // "```a```" is an inline code span: the line that follows is ordinary text.
      expect(parse(`\`\`\`a\`\`\`\n${call}\n`)).toHaveLength(1);
      expect(parse(`\`\`\`a\`\`\` ${call}\n`)).toHaveLength(1);
    });

    it('does not take a fence run in the middle of a line for a fence', () => {
      expect(parse(`run this: \`\`\`\n${call}\n`)).toHaveLength(1);
    });

    it('takes a <tool-use> inside an inline code span for text', () => {
      expect(parse('Wrap each call in `<tool-use>` tags.')).toEqual([]);
      expect(parse(`Like this: \`${call}\`.`)).toEqual([]);
      expect(parse(`Like this: \`\`a \` ${call}\`\`.`)).toEqual([]);
    });

    it('reads a call after an inline code span is closed on its line', () => {
      const text = `Run \`ls\` now: ${call}`;
      expect(parse(text)).toEqual(only(text, call, 'shell', [], 'ls'));
    });

    it('takes a call after an unclosed backtick on its line for text, but not on the next line', () => {
      expect(parse(`it's \`odd ${call}`)).toEqual([]);
      const text = `it's \`odd\n${call}`;
      expect(parse(text)).toEqual(only(text, call, 'shell', [], 'ls'));
    });

    it('ignores fences and backticks inside a call body', () => {
      const text = '<tool-use>\n<save args="README.md">\n```bash\nls `pwd`\n```\n~~~\n</save>\n</tool-use>\nok';
      expect(parse(text)).toEqual([
        use('save', ['README.md'], '```bash\nls `pwd`\n```\n~~~', 0, text.indexOf('\nok')),
      ]);
    });

    it('starts a line fresh after a call, so a fence after it still counts', () => {
      const text = `${call}\n\`\`\`\n${call}\n\`\`\`\n${call}`;
      expect(parse(text)).toEqual([
        use('shell', [], 'ls', 0, call.length),
        use('shell', [], 'ls', text.length - call.length, text.length),
      ]);
    });

    it('does not carry an inline span of the text before a call past it', () => {
      // The backtick in the body is no code span opener for the text after the call.
      const text = `${call.replace('ls', 'echo `a')} ${call}`;
      expect(parse(text)).toHaveLength(2);
    });

    it('reads line breaks in a failed <tool-use tag as line breaks', () => {
      expect(parse(`<tool-use\n\`\`\`\n${call}\n\`\`\`\n`)).toEqual([]);
      expect(parse(`<tool-use \n   ~~~\n${call}\n`)).toEqual([]);
    });
  });

  describe('properties', () => {
    const tokens = [
      '<tool-use>', '</tool-use>', '<tool-use', '</tool-', '<shell>', '</shell>', '<save args="a b">', "<save args='x'",
      '</save>', '<read/>', '<read args="r"/>', '<![CDATA[', ']]>', ']', '&amp;', '&lt;', '&#60;', '&#x3c;', '&', ';',
      '<', '>', '/', '"', "'", '=', '`', '```', '~~~', '\n', '\r\n', '\r', ' ', '   ', '\t', 'ls', 'text', 'é', '😀',
    ];
    const soupArb = fc.array(fc.constantFrom(...tokens), { maxLength: 60 }).map((parts) => parts.join(''));
    const anyArb = fc.oneof(
      { arbitrary: soupArb, weight: 3 },
      { arbitrary: fc.string({ unit: 'binary', maxLength: 200 }), weight: 1 },
      { arbitrary: fc.string({ unit: 'grapheme', maxLength: 200 }), weight: 1 },
      { arbitrary: fc.string({ maxLength: 200 }), weight: 1 },
    );

    it('never throws and returns well-formed calls in order, each the same read alone', () => {
      fc.assert(
        fc.property(anyArb, (text) => {
          const uses = parse(text);
          let previousEnd = 0;
          for (const found of uses) {
            expect(found.format).toBe('xml');
            expect(found.tool).toMatch(/^[A-Za-z0-9_.-]+$/);
            expect(found.start).toBeGreaterThanOrEqual(previousEnd);
            expect(found.end).toBeLessThanOrEqual(text.length);
            const slice = text.slice(found.start, found.end);
            expect(slice).toMatch(/^<tool-use\s*>[\s\S]*<\/tool-use\s*>$/);
            expect(parse(slice)).toEqual([{ ...found, start: 0, end: slice.length }]);
            previousEnd = found.end;
          }
        }),
        { numRuns: 3000 },
      );
    });

    // Writes content so that it reads back exactly: escaped with entities, or in CDATA. A raw
    // line break right after the opening tag or right before the closing tag would be removed,
    // so the escape writes CRs as references and, where nothing else separates the content
    // from its tags, a first or last LF too.
    const escape = (content: string, separated: boolean): string => {
      const escaped = content.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/\r/g, '&#13;');
      return separated ? escaped : escaped.replace(/^\n/, '&#10;').replace(/\n$/, '&#10;');
    };
    const cdata = (content: string): string => `<![CDATA[${content.replace(/]]>/g, ']]]]><![CDATA[>')}]]>`;
    const escapeWord = (word: string): string =>
      word.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

    const callArb = fc.record({
      tool: fc.stringMatching(/^[A-Za-z0-9_.-]{1,10}$/).filter((name) => name !== 'tool-use'),
      args: fc.array(fc.string({ maxLength: 8 }).filter((w) => w !== '' && !/\s/.test(w)), { maxLength: 3 }),
      content: fc.string({ unit: 'binary', maxLength: 60 }),
      inCdata: fc.boolean(),
      layout: fc.constantFrom('\n', '', '\r\n'),
    });
    // Prose with code that mentions calls, and stray markup that is not one. A fence line must
    // begin a line, and a call may end mid-line, so fenced blocks come after a line break.
    const proseArb = fc.constantFrom(
      '',
      'Let me look.\n',
      'Use `<tool-use>` tags, like ``<tool-use><x/></tool-use>``.\n',
      '\n```xml\n<tool-use><shell>no</shell></tool-use>\n```\n',
      '\n~~~~\n```\n<tool-use><a>no</a></tool-use>\n~~~~\n',
      'if a < b && c > d: </tool-use> <shell>\n',
      'Done. ',
      '\r\n',
    );

    it('reads back generated calls exactly, amid prose and code', () => {
      fc.assert(
        fc.property(fc.array(fc.tuple(proseArb, callArb), { maxLength: 4 }), proseArb, (parts, tail) => {
          let text = '';
          const expected: ToolUse[] = [];
          for (const [prose, call] of parts) {
            text += prose;
            const args = call.args.length > 0 ? ` args="${call.args.map(escapeWord).join(' ')}"` : '';
            const body = call.inCdata ? cdata(call.content) : escape(call.content, call.layout !== '');
            const written =
              `<tool-use>${call.layout}<${call.tool}${args}>${call.layout === '' ? '' : '\n'}${body}` +
              `${call.layout === '' ? '' : '\n'}</${call.tool}>${call.layout}</tool-use>`;
            expected.push(use(call.tool, call.args, call.content, text.length, text.length + written.length));
            text += written;
          }
          text += tail;
          expect(parse(text)).toEqual(expected);
        }),
        { numRuns: 2000 },
      );
    });
  });
});
