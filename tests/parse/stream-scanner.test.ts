import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { MarkdownStreamScanner } from '../../src/parse/stream-scanner';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import type { ToolUse } from '../../src/parse/tool-use';
import { cut, scanChunks } from '../support/chunks';

const tools = new Set(['shell', 'save', 'python']);
const isTool = (tag: string): boolean => tools.has(tag);

/** Feeds `chunks` in order and returns the first tool use the scanner reports, and when. */
function scan(chunks: string[]): { use: ToolUse | undefined; at: number | 'finish' | 'none' } {
  return scanChunks(new MarkdownStreamScanner(isTool), chunks);
}

describe('MarkdownStreamScanner', () => {
  it('reports the use once the line after the closing fence shows that it closes', () => {
    const scanner = new MarkdownStreamScanner(isTool);
    expect(scanner.push('Listing.\n```sh')).toBeUndefined();
    expect(scanner.push('ell\nls -la\n`')).toBeUndefined();
    expect(scanner.push('``')).toBeUndefined();
    // The fence line is complete, but a bare fence followed by text would open a nested block.
    expect(scanner.push('\n')).toBeUndefined();
    expect(scanner.push('  ')).toBeUndefined();
    const use = scanner.push('\nmore prose');
    expect(use).toEqual({ tool: 'shell', args: [], content: 'ls -la', format: 'markdown', start: 9, end: 29 });
    expect(scanner.text).toBe('Listing.\n```shell\nls -la\n```\n  \nmore prose');
  });

  it('reports nothing after the first use, though it keeps recording text', () => {
    const scanner = new MarkdownStreamScanner(isTool);
    expect(scanner.push('```shell\nls\n```\n\n')?.content).toBe('ls');
    expect(scanner.push('```shell\npwd\n```\n\n')).toBeUndefined();
    expect(scanner.finish()).toBeUndefined();
    expect(scanner.text).toBe('```shell\nls\n```\n\n```shell\npwd\n```\n\n');
  });

  it('reports a use closed by the next block\'s opening fence as soon as that line is complete', () => {
    const scanner = new MarkdownStreamScanner(isTool);
    expect(scanner.push('```shell\nls\n```\n```pyth')).toBeUndefined();
    expect(scanner.push('on\nprint(1)')).toEqual({ tool: 'shell', args: [], content: 'ls', format: 'markdown', start: 0, end: 16 });
  });

  it('reports a use whose closing fence has prose written against it at the next fence line, or at the end', () => {
    const reply = '```shell\nls\n```\nThat lists the files.\nThen:\n~~~python\n';
    const scanner = new MarkdownStreamScanner(isTool);
    expect(scanner.push(reply.slice(0, -1))).toBeUndefined();
    expect(scanner.push('\n')).toEqual({ tool: 'shell', args: [], content: 'ls', format: 'markdown', start: 0, end: 16 });
    const atEnd = new MarkdownStreamScanner(isTool);
    expect(atEnd.push('```shell\nls\n```\nThat lists the files.\n')).toBeUndefined();
    expect(atEnd.finish()).toEqual({ tool: 'shell', args: [], content: 'ls', format: 'markdown', start: 0, end: 16 });
  });

  it('returns the first of several uses that complete in one chunk', () => {
    const scanner = new MarkdownStreamScanner(isTool);
    expect(scanner.push('```shell\na\n```\n```shell\nb\n```\n')?.content).toBe('a');
  });

  it('returns a use that completes only at the end of input from finish', () => {
    const scanner = new MarkdownStreamScanner(isTool);
    expect(scanner.push('```save a.txt\nhi\n```')).toBeUndefined();
    expect(scanner.finish()).toEqual({
      tool: 'save', args: ['a.txt'], content: 'hi', format: 'markdown', start: 0, end: 20,
    });
    expect(scanner.finish()).toBeUndefined();
  });

  it('waits for the LF of a CRLF split across chunks', () => {
    const scanner = new MarkdownStreamScanner(isTool);
    expect(scanner.push('```shell\r\nls\r\n```\r')).toBeUndefined();
    expect(scanner.push('\n\r')).toBeUndefined();
    expect(scanner.push('\n')).toEqual({
      tool: 'shell', args: [], content: 'ls', format: 'markdown', start: 0, end: 19,
    });
  });

  it('never returns an unterminated block', () => {
    const scanner = new MarkdownStreamScanner(isTool);
    expect(scanner.push('```shell\nls\n')).toBeUndefined();
    expect(scanner.push('``')).toBeUndefined();
    expect(scanner.finish()).toBeUndefined();
  });

  it('returns an empty text before anything is fed', () => {
    expect(new MarkdownStreamScanner(isTool).text).toBe('');
  });

  describe('chunk boundaries', () => {
    const replies = [
      'Let me look.\n```shell\nls -la\n```\nNow the next step.\n',
      'x\r\n```save notes/a.md\r\n# A\r\n\r\n```bash\r\nls\r\n```\r\n```\r\nok',
      '```ts\n```shell\nno\n```\n```\n~~~python\nprint("~~~")\n~~~',
      '````save d.md\n```\ninner\n```\n````',
      '```shell\nunterminated\n``',
      'Saving.\n```save README.md\n# Tool\n\nInstall:\n```\nnpm install\n```\n\nDone!\n```\n',
      '```shell\nls\n```\nThat lists them.\n```read a\n```',
    ];

    it.each(replies)('gives the whole-text result for every pair of split points: %j', (reply) => {
      const expected = parseMarkdownToolUses(reply, isTool)[0];
      for (let i = 0; i <= reply.length; i++) {
        for (let j = i; j <= reply.length; j++) {
          expect(scan(cut(reply, [i, j])).use).toEqual(expected);
        }
      }
    });

    it.each(replies)('gives the whole-text result when fed one character at a time: %j', (reply) => {
      expect(scan([...reply]).use).toEqual(parseMarkdownToolUses(reply, isTool)[0]);
    });

    it('reports the use in the chunk that carries the line break of the blank line after the closing fence', () => {
      const reply = 'a\n```shell\nls\n```\n\nb\n';
      const blankBreak = reply.indexOf('```\n') + 4;
      for (let i = 1; i < reply.length; i++) {
        expect(scan([reply.slice(0, i), reply.slice(i)]).at).toBe(i > blankBreak ? 0 : 1);
      }
    });
  });

  it('scans a reply of about 1 MB fed in 16-byte chunks', () => {
    const prose = 'Some words about the code below.\n```ts\nconst shell = "```shell";\n```\n'.repeat(12_000);
    const body = 'line of the saved file\r\n'.repeat(10_000);
    const reply = `${prose}\`\`\`save big.txt\r\n${body}\`\`\`\r\nDone.\n${'tail\n'.repeat(1000)}`;
    expect(reply.length).toBeGreaterThan(1_000_000);
    const chunks: string[] = [];
    for (let i = 0; i < reply.length; i += 16) chunks.push(reply.slice(i, i + 16));
    const { use } = scan(chunks);
    expect(use).toEqual({
      tool: 'save',
      args: ['big.txt'],
      content: body.slice(0, -2),
      format: 'markdown',
      start: prose.length,
      end: reply.indexOf('Done.'),
    });
    expect(parseMarkdownToolUses(reply, isTool)).toEqual([use]);
  });

  describe('properties', () => {
    const fragments = [
      '`', '``', '```', '````', '~', '~~~', '~~~~', '\n', '\r', '\r\n', ' ', '   ', '    ', '\t',
      'shell', 'save x', 'save a b', 'python', 'ts', 'ls', 'text', '```shell\n', '```\n', '~~~save y\n',
    ];
    // Whole lines make complete blocks likely; fragments and raw strings find odd shapes.
    // Bare fences, blank lines and prose are frequent so that closing fences are often in doubt.
    const lines = [
      '```shell', '```shell', '```', '```', '```', '```', '````', '````shell', '~~~', '~~~save y', '```save a b',
      '```ts', '```python', '```bash', '  ```', '    ```', '```  ', '``` x`', 'text ```shell', 'ls', 'Install:', '', '', ' \t',
    ];
    const lineArb = fc
      .array(fc.tuple(fc.constantFrom(...lines), fc.constantFrom('\n', '\n', '\r\n', '\r', '')), { maxLength: 14 })
      .map((parts) => parts.map(([line, lineBreak]) => line + lineBreak).join(''));
    const replyArb = fc.oneof(
      { arbitrary: lineArb, weight: 3 },
      { arbitrary: fc.array(fc.constantFrom(...fragments), { maxLength: 60 }).map((parts) => parts.join('')), weight: 1 },
      { arbitrary: fc.string({ maxLength: 200 }), weight: 1 },
    );
    const cutsArb = fc.array(fc.nat(), { maxLength: 12 });

    it('never throws and returns well-formed uses in order', () => {
      fc.assert(
        fc.property(replyArb, (reply) => {
          const uses = parseMarkdownToolUses(reply, isTool);
          let previousEnd = 0;
          for (const use of uses) {
            expect(use.start).toBeGreaterThanOrEqual(previousEnd);
            expect(use.end).toBeGreaterThan(use.start);
            expect(use.end).toBeLessThanOrEqual(reply.length);
            expect(reply.slice(use.start, use.end)).toContain(use.content);
            expect(isTool(use.tool)).toBe(true);
            // A block read alone, from its own opening to its own close, is the same use.
            const alone = parseMarkdownToolUses(reply.slice(use.start, use.end), isTool);
            expect(alone).toEqual([{ ...use, start: 0, end: use.end - use.start }]);
            previousEnd = use.end;
          }
        }),
        { numRuns: 2000 },
      );
    });

    it('agrees with the parser on the first use for any chunking', () => {
      fc.assert(
        fc.property(replyArb, cutsArb, (reply, cuts) => {
          const chunks = cut(reply, cuts);
          expect(scan(chunks).use).toEqual(parseMarkdownToolUses(reply, isTool)[0]);
          const scanner = new MarkdownStreamScanner(isTool);
          for (const chunk of chunks) scanner.push(chunk);
          expect(scanner.text).toBe(reply);
        }),
        { numRuns: 2000 },
      );
    });
  });
});
