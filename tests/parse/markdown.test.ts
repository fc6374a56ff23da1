import { describe, it, expect } from 'vitest';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import type { ToolUse } from '../../src/parse/tool-use';

const tools = new Set(['shell', 'save', 'python']);
const isTool = (tag: string): boolean => tools.has(tag);
const parse = (text: string): ToolUse[] => parseMarkdownToolUses(text, isTool);

/** The expected use for the block that spans `text.slice(start, end)`. */
function use(tool: string, args: string[], content: string, start: number, end: number): ToolUse {
  return { tool, args, content, format: 'markdown', start, end };
}

describe('parseMarkdownToolUses', () => {
  it('turns a tagged block into a tool use: tag, args, content, offsets', () => {
    const text = 'I will save it.\n```save path/to/file\nhello\nworld\n```\nDone.';
    const start = text.indexOf('```save');
    const end = text.indexOf('Done.');
    expect(parse(text)).toEqual([use('save', ['path/to/file'], 'hello\nworld', start, end)]);
  });

  it('splits the info string on whitespace: first word is the tool, the rest are args', () => {
    expect(parse('```save  a.txt\tb.txt  \nx\n```\n')[0]?.args).toEqual(['a.txt', 'b.txt']);
    expect(parse('```shell\nls\n```\n')[0]?.args).toEqual([]);
  });

  it('asks isTool about the first word of the tag only', () => {
    const asked: string[] = [];
    parseMarkdownToolUses('```save a b\nx\n```\n', (tag) => {
      asked.push(tag);
      return true;
    });
    expect(asked).toEqual(['save']);
  });

  it('returns every complete use in text order, with prose between them', () => {
    const text = 'first\n```shell\nls\n```\nthen\n```python\nprint(1)\n```\nlast\n';
    const uses = parse(text);
    expect(uses.map((u) => [u.tool, u.content])).toEqual([
      ['shell', 'ls'],
      ['python', 'print(1)'],
    ]);
    expect(uses[0]?.start).toBe(6);
    expect(text.slice(uses[1]?.start, uses[1]?.end)).toBe('```python\nprint(1)\n```\n');
  });

  it('keeps prose that follows the closing fence on the next line out of the block', () => {
    const text = '```shell\nls\n```\nThat lists the files.\n';
    expect(parse(text)).toEqual([use('shell', [], 'ls', 0, 16)]);
  });

  it('completes a block whose closing fence ends the text without a line break', () => {
    const text = '```shell\nls\n```';
    expect(parse(text)).toEqual([use('shell', [], 'ls', 0, text.length)]);
  });

  it('gives an empty content for an empty body', () => {
    expect(parse('```shell\n```\n')).toEqual([use('shell', [], '', 0, 13)]);
  });

  it('never returns an unterminated block', () => {
    expect(parse('```shell\nls\n')).toEqual([]);
    expect(parse('```shell\nls\n``')).toEqual([]);
    expect(parse('```shell\nls\n```\n```save a\nhalf')).toHaveLength(1);
  });

  describe('fence shapes', () => {
    it('accepts opening and closing fences indented up to three spaces', () => {
      const text = 'x\n   ```shell\nls\n  ```\n';
      expect(parse(text)).toEqual([use('shell', [], 'ls', 2, text.length)]);
    });

    it('does not treat a fence indented four spaces as a fence', () => {
      expect(parse('    ```shell\nls\n```\n')).toEqual([]);
    });

    it('does not treat a fence run in the middle of a line as a fence', () => {
      expect(parse('run this: ```shell\nls\n```\n')).toEqual([]);
    });

    it('accepts trailing spaces after a closing fence', () => {
      expect(parse('```shell\nls\n```  \t\n')[0]?.content).toBe('ls');
    });

    it('reads tilde fences, closed only by tildes', () => {
      const text = '~~~shell\necho a\n```\necho b\n~~~\n';
      expect(parse(text)).toEqual([use('shell', [], 'echo a\n```\necho b', 0, text.length)]);
    });

    it('lets a longer fence hold shorter fences', () => {
      const text = '````save doc.md\nExample:\n```\nplain\n```\n````\n';
      expect(parse(text)).toEqual([use('save', ['doc.md'], 'Example:\n```\nplain\n```', 0, text.length)]);
    });

    it('closes only with a fence at least as long as the opening one', () => {
      const text = '````shell\necho 1\n```\necho 2\n`````\n';
      expect(parse(text)[0]?.content).toBe('echo 1\n```\necho 2');
    });

    it('does not take a backtick line whose info string holds a backtick for a fence', () => {
      const text = '```ls``` is inline code\n```shell\nls\n```\n';
      expect(parse(text)).toEqual([use('shell', [], 'ls', 24, text.length)]);
    });

    it('allows backticks in the info string of a tilde fence', () => {
      expect(parse('~~~save a`b\nx\n~~~\n')[0]?.args).toEqual(['a`b']);
    });
  });

  describe('nested fences (a tagged fence opens a level, a bare one closes the innermost nested level)', () => {
    it('keeps a tagged inner block in the content of the outer block', () => {
      const body = '# Tool\n\nInstall:\n\n```bash\nnpm install\n```\n\nThen run it.';
      const text = `Saving.\n\`\`\`save README.md\n${body}\n\`\`\`\nSaved.\n`;
      expect(parse(text)).toEqual([use('save', ['README.md'], body, 8, text.indexOf('Saved.'))]);
    });

    it('follows several nested levels', () => {
      const body = '```markdown\n```python\nx = 1\n```\n```\nafter';
      const text = '```save a.md\n' + body + '\n```\n';
      expect(parse(text)[0]?.content).toBe(body);
    });

    it('leaves the outer block open while a nested tagged fence is unclosed', () => {
      expect(parse('```save a.md\n```python\nx = 1\n```\n')).toEqual([]);
    });

    it('does not nest a shorter inner fence inside a longer outer fence', () => {
      // The inner ``` could never close a ```` block, so CommonMark's reading stands.
      const text = '````save a.md\n```python\nx = 1\n````\n';
      expect(parse(text)[0]?.content).toBe('```python\nx = 1');
    });

    it('does not nest a fence of the other character', () => {
      const text = '~~~save a.md\n```python\nx = 1\n~~~\n';
      expect(parse(text)[0]?.content).toBe('```python\nx = 1');
    });
  });

  describe('blocks that are text', () => {
    it('yields nothing for a tag that is not a tool', () => {
      expect(parse('```ts\nconst a = 1;\n```\n')).toEqual([]);
    });

    it('skips the body of a non-tool block, including fences inside it', () => {
      const text = '```ts\n```shell\nrm -rf /\n```\n```\n```shell\nls\n```\n';
      const uses = parse(text);
      expect(uses.map((u) => u.content)).toEqual(['ls']);
      expect(uses[0]?.start).toBe(text.lastIndexOf('```shell'));
    });

    it('yields nothing for a block without a language tag, and skips its body', () => {
      expect(parse('```\nshell\n```\n')).toEqual([]);
      expect(parse('```\n~~~shell\nls\n~~~\n```\n')).toEqual([]);
    });
  });

  describe('CRLF line breaks', () => {
    it('keeps inner CRLF as written and strips only the final one', () => {
      const text = 'go\r\n```save a.txt\r\none\r\ntwo\r\n```\r\nok\r\n';
      expect(parse(text)).toEqual([use('save', ['a.txt'], 'one\r\ntwo', 4, text.indexOf('ok'))]);
    });

    it('strips a plain LF before the closing fence the same way', () => {
      const text = '```save a.txt\none\ntwo\n```\n';
      expect(parse(text)).toEqual([use('save', ['a.txt'], 'one\ntwo', 0, text.length)]);
    });

    it('does not take a lone CR for a line break', () => {
      expect(parse('```shell\nls\n```\rnot a close\n')).toEqual([]);
    });

    it('understands nested fences written with CRLF', () => {
      const text = '```save r.md\r\n```bash\r\nls\r\n```\r\n```\r\n';
      expect(parse(text)[0]?.content).toBe('```bash\r\nls\r\n```');
    });
  });
});
