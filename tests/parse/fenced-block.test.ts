import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FencedBlock, type BlockLine } from '../../src/parse/fenced-block';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import { MarkdownStreamScanner } from '../../src/parse/stream-scanner';
import type { ToolUse } from '../../src/parse/tool-use';
import { cut, scanChunks } from '../support/chunks';

const tools = new Set(['shell', 'save', 'append', 'python', 'read']);
const isTool = (tag: string): boolean => tools.has(tag);
const parse = (text: string): ToolUse[] => parseMarkdownToolUses(text, isTool);

/** The verdict on each line of `lines`, read inside a block opened by ```` ``` ```` (or `opening`). */
function verdicts(lines: string[], opening = '```'): BlockLine[] {
  const block = new FencedBlock({ char: opening[0] === '~' ? '~' : '`', length: opening.length });
  return lines.map((line) => block.read(`${line}\n`));
}

/** The text between the opening fence line and the closing one, as a tool's content. */
function body(...lines: string[]): string {
  return lines.join('\n');
}

/** The reply `before`, then a block tagged `tag` around `content`, then `after`; and the expected use. */
function reply(before: string, tag: string, content: string, after: string): { text: string; use: ToolUse } {
  const [tool = '', ...args] = tag.split(' ');
  const opening = `${before}\`\`\`${tag}\n`;
  const closing = `${opening}${content}\n\`\`\`\n`;
  return {
    text: `${closing}${after}`,
    use: { tool, args, content, format: 'markdown', start: before.length, end: closing.length },
  };
}

/** Every way of cutting `text` into two chunks, and one character at a time, agrees with the whole-text parse. */
function expectSameInAnyChunking(text: string): void {
  const expected = parse(text)[0];
  for (let i = 0; i <= text.length; i++) {
    expect(scanChunks(new MarkdownStreamScanner(isTool), cut(text, [i])).use).toEqual(expected);
  }
  expect(scanChunks(new MarkdownStreamScanner(isTool), [...text]).use).toEqual(expected);
}

describe('FencedBlock', () => {
  it('keeps plain lines and nested tagged blocks inside', () => {
    expect(verdicts(['x = 1', '```bash', 'ls', '```', '', '~~~', '```python x'])).toEqual(
      ['inside', 'inside', 'inside', 'inside', 'inside', 'inside', 'inside'],
    );
  });

  it('holds a bare fence at its own level and ends at it when a blank line, a fence line or nothing follows', () => {
    expect(verdicts(['x', '```', ''])).toEqual(['inside', 'held', 'ended']);
    expect(verdicts(['x', '```', ' \t'])).toEqual(['inside', 'held', 'ended']);
    expect(verdicts(['x', '```', '```shell'])).toEqual(['inside', 'held', 'ended']);
    expect(verdicts(['x', '```', '```'])).toEqual(['inside', 'held', 'ended']);
    expect(verdicts(['x', '```', '~~~'])).toEqual(['inside', 'held', 'ended']);
    const block = new FencedBlock({ char: '`', length: 3 });
    expect(block.read('```')).toBe('held');
    expect(block.end()).toBe(true);
  });

  it('reads a bare fence followed by text as a nested block, held until it closes', () => {
    expect(verdicts(['Install:', '```', 'npm install', 'npm test', '```', 'Done.'])).toEqual(
      ['inside', 'held', 'held', 'held', 'inside', 'inside'],
    );
  });

  it('ends at the held fence when another fence line turns up before the nested block closes', () => {
    expect(verdicts(['ls', '```', 'That lists them.', '```shell'])).toEqual(['inside', 'held', 'held', 'ended']);
    expect(verdicts(['ls', '```', 'That lists them.', '~~~'])).toEqual(['inside', 'held', 'held', 'ended']);
    // A fence that could not close the nested level (shorter than it) is not its close either.
    expect(verdicts(['ls', '````', 'text', '```'], '```')).toEqual(['inside', 'held', 'held', 'ended']);
  });

  it('ends at the held fence when the text ends inside the nested block it would open', () => {
    const block = new FencedBlock({ char: '`', length: 3 });
    for (const line of ['ls', '```', 'That lists them.', '', 'More.']) block.read(line);
    expect(block.end()).toBe(true);
  });

  it('is left open when the text ends at its own level or inside a tagged nested block', () => {
    const balanced = new FencedBlock({ char: '`', length: 3 });
    for (const line of ['a', '```', 'b', '```', 'c']) balanced.read(line);
    expect(balanced.end()).toBe(false);
    const tagged = new FencedBlock({ char: '`', length: 3 });
    for (const line of ['a', '```bash', 'b']) tagged.read(line);
    expect(tagged.end()).toBe(false);
  });

  it('only doubts fences that could close the block: the same character, at least as long', () => {
    expect(verdicts(['a', '```', 'b'], '````')).toEqual(['inside', 'inside', 'inside']);
    expect(verdicts(['a', '```', 'b'], '~~~')).toEqual(['inside', 'inside', 'inside']);
    expect(verdicts(['a', '~~~~', 'b', '~~~~', ''], '~~~')).toEqual(['inside', 'held', 'held', 'inside', 'inside']);
  });

  it('closes a nested level only with a bare fence that could close it, whatever follows', () => {
    expect(verdicts(['```bash', 'ls', '```', 'prose right after'])).toEqual(['inside', 'inside', 'inside', 'inside']);
    expect(verdicts(['````bash', 'ls', '```', '````', ''])).toEqual(['inside', 'inside', 'inside', 'inside', 'inside']);
  });
});

describe('bare fences inside a block, in replies as models write them', () => {
  it('saves a README with bare inner blocks whole', () => {
    const content = body('# Tool', '', 'Install:', '```', 'npm install', '```', '', 'Done!');
    const { text, use } = reply("I'll write the README.\n\n", 'save README.md', content, '');
    expect(parse(text)).toEqual([use]);
    expectSameInAnyChunking(text);
  });

  it('saves notes with several bare and tagged inner blocks, prose written against their fences', () => {
    const content = body(
      '# Setup notes',
      '',
      'Clone and install:',
      '```',
      'git clone https://example.com/tool.git',
      'cd tool',
      'npm ci',
      '```',
      'Then build:',
      '```bash',
      'npm run build',
      '```',
      'The output goes to `dist/`. Check it with:',
      '```',
      'ls dist',
      '```',
      'If the tests fail, keep the log:',
      '```',
      'npm test 2>&1 | tee test.log',
      '```',
      '',
      "That's all.",
    );
    const { text, use } = reply('Writing the notes.\n', 'save notes/setup.md', content, "\nNow I'll run the tests.\n```shell\nnpm test\n```\n");
    expect(parse(text)).toEqual([use, expect.objectContaining({ tool: 'shell', content: 'npm test' })]);
    expectSameInAnyChunking(text);
  });

  it('keeps consecutive inner blocks, bare and tagged, in an append', () => {
    const content = body('## 1.2.0', '```', 'before', '```', '```', 'after', '```', '```js', 'migrate()', '```', '~~~', 'tilde', '~~~');
    const { text, use } = reply('', 'append CHANGELOG.md', content, '');
    expect(parse(text)).toEqual([use]);
    expectSameInAnyChunking(text);
  });

  it('follows three levels: a markdown example holding a bash block inside a saved guide', () => {
    const content = body(
      '# Writing docs',
      '',
      'Show commands in a fenced block:',
      '',
      '```markdown',
      'Run:',
      '```bash',
      'make docs',
      '```',
      '```',
      '',
      'Plain output blocks have no tag:',
      '```',
      'built 12 pages',
      '```',
    );
    const { text, use } = reply('', 'save docs/guide.md', content, '\nSaved.\n');
    expect(parse(text)).toEqual([use]);
    expectSameInAnyChunking(text);
  });

  it('keeps a fence inside a Python triple-quoted string', () => {
    const content = body(
      'README = """# Demo',
      '',
      'Usage:',
      '```',
      'demo --help',
      '```',
      '"""',
      'with open("README.md", "w") as f:',
      '    f.write(README)',
      'print("written")',
    );
    const { text, use } = reply('Let me write it from Python.\n', 'python', content, '');
    expect(parse(text)).toEqual([use]);
    expectSameInAnyChunking(text);
  });

  it('keeps a same-language fence inside a string: a fence run followed by quotes neither closes nor opens', () => {
    // The reply as the model wrote it: the string's closing quotes stand right after the inner fence.
    const content = body("code = \'\'\'```python", 'print("inner")', "```\'\'\'", 'print(code.splitlines()[0])');
    const { text, use } = reply('Here it is:\n', 'python', content, '\nThat prints the first line.\n');
    expect(parse(text)).toEqual([use]);
    expectSameInAnyChunking(text);
    expect(verdicts(["```\'\'\'", '```)', '```"', '```'])).toEqual(['inside', 'inside', 'inside', 'held']);
  });

  it('keeps a README written by a shell heredoc whole', () => {
    const content = body(
      "cat > README.md <<'EOF'",
      '# Tool',
      '',
      'Install:',
      '```',
      'npm install',
      '```',
      'Run `tool --help` for the options.',
      'EOF',
      'wc -l README.md',
    );
    const { text, use } = reply('', 'shell', content, '\n');
    expect(parse(text)).toEqual([use]);
    expectSameInAnyChunking(text);
  });

  it('keeps a patch of a README whose hunks hold bare fences whole', () => {
    const content = body('<<<<<<< ORIGINAL', 'Install:', '```', 'npm i', '```', '=======', 'Install:', '```', 'npm install', '```', '>>>>>>> UPDATED');
    const { text, use } = reply('Fixing the command.\n', 'patch README.md', content, 'Patched.\n');
    expect(parseMarkdownToolUses(text, (tag) => tag === 'patch')).toEqual([use]);
  });

  it('keeps CRLF line breaks as written in a README with bare inner blocks', () => {
    const text = '```save README.md\r\n# Tool\r\n```\r\nnpm install\r\n```\r\nDone!\r\n```\r\n\r\nok\r\n';
    expect(parse(text)).toEqual([
      { tool: 'save', args: ['README.md'], content: '# Tool\r\n```\r\nnpm install\r\n```\r\nDone!', format: 'markdown', start: 0, end: text.indexOf('\r\n\r\nok') + 2 },
    ]);
    expectSameInAnyChunking(text);
  });

  describe('prose written against the closing fence', () => {
    it('still runs the block when the reply ends in that prose', () => {
      const { text, use } = reply('', 'shell', 'npm test', 'This runs the whole suite.\nIt takes a minute.\n');
      expect(parse(text)).toEqual([use]);
      expectSameInAnyChunking(text);
    });

    it('ends the block there when a later block follows the prose', () => {
      const { text, use } = reply('', 'shell', 'npm test', "This runs the suite; then I'll read the log:\n```read test.log\n```\n");
      expect(parse(text)).toEqual([use, expect.objectContaining({ tool: 'read', args: ['test.log'], content: '' })]);
      expectSameInAnyChunking(text);
    });

    it('reads on past a block that is not a tool, to the tool block after it', () => {
      const text = 'The type:\n```ts\ntype A = number;\n```\nSaving it:\n```save a.ts\ntype A = number;\n```\n';
      expect(parse(text)).toEqual([
        { tool: 'save', args: ['a.ts'], content: 'type A = number;', format: 'markdown', start: text.indexOf('```save'), end: text.length },
      ]);
      expectSameInAnyChunking(text);
    });

    it('ends the block at a closing fence followed directly by the next block', () => {
      const text = '```shell\nls\n```\n```python\nprint(1)\n```\n';
      expect(parse(text).map((use) => [use.tool, use.content])).toEqual([
        ['shell', 'ls'],
        ['python', 'print(1)'],
      ]);
      expectSameInAnyChunking(text);
    });
  });

  describe('tildes and longer fences', () => {
    it('doubts only fences that could close the block', () => {
      const longer = '````save a.md\nX\n```\nY\n````\nSaved.\n';
      expect(parse(longer)[0]?.content).toBe('X\n```\nY');
      const tilde = '~~~save a.md\nX\n```\nY\n~~~\n';
      expect(parse(tilde)[0]?.content).toBe('X\n```\nY');
      expectSameInAnyChunking(longer);
    });

    it('nests bare tilde blocks in a tilde block the same way', () => {
      const text = '~~~save a.md\nInstall:\n~~~\nnpm install\n~~~\nDone.\n~~~\n';
      expect(parse(text)[0]?.content).toBe('Install:\n~~~\nnpm install\n~~~\nDone.');
    });
  });

  describe('unfinished replies run nothing', () => {
    it.each([
      ['ending after a closed inner block', '```save README.md\n# Tool\n\nInstall:\n```\nnpm install\n```\n\nDone'],
      ['ending inside a tagged inner block', '```save README.md\n# Tool\n```bash\nnpm'],
      ['ending just after the opening fence', 'Saving.\n```save README.md\n'],
      ['ending at its own level after nested blocks', '```python\nX = """\n```\ncode\n```\n"""\nprint(X)\n'],
    ])('%s', (_, text) => {
      expect(parse(text)).toEqual([]);
      expectSameInAnyChunking(text);
    });

    it('runs nothing from a reply cut short while its block is undecided (the stream is not finished)', () => {
      for (const text of ['```shell\nls\n```\n', '```shell\nls\n```', '```save README.md\nInstall:\n```\nnpm install\n']) {
        const scanner = new MarkdownStreamScanner(isTool);
        expect(scanner.push(text)).toBeUndefined();
      }
    });

    it('reads a reply that ends inside a bare inner block as prose after the closing fence (the rule cannot tell them apart)', () => {
      const text = '```save README.md\nInstall:\n```\nnpm install\n';
      expect(parse(text)).toEqual([{ tool: 'save', args: ['README.md'], content: 'Install:', format: 'markdown', start: 0, end: 31 }]);
    });
  });

  it('saves any document whose inner blocks are closed whole, whatever follows the closing fence', () => {
    const prose = fc.constantFrom('# Title', 'Some words.', 'Install:', '- a list item', '    indented code', '| a | b |', 'text ```not a fence');
    const code = fc.constantFrom('npm install', 'ls -la', 'print("```")', '  x = 1', '', '\t');
    // An inner block starts with a line of text: a bare fence followed by a blank line closes the outer block.
    const innerBlock = fc
      .tuple(fc.constantFrom('```', '```', '```bash', '```python', '~~~', '````'), fc.constantFrom('npm test', 'x = 1', 'EOF'), fc.array(code, { maxLength: 3 }))
      .map(([fence, first, rest]) => [fence, first, ...rest, fence.startsWith('`') ? '`'.repeat(fence.replace(/[^`]/g, '').length) : '~~~']);
    const item = fc.oneof(prose.map((line) => [line]), fc.constant(['']), innerBlock);
    const document = fc.array(item, { minLength: 1, maxLength: 12 }).map((items) => items.flat().join('\n'));
    const after = fc.constantFrom('', '\n', '\nSaved it.\n', 'Saved it.\n', 'Saved it.', '```shell\nls\n```\n', ' \n```\n');
    fc.assert(
      fc.property(document, after, fc.array(fc.nat(), { maxLength: 6 }), (content, rest, cuts) => {
        const text = `Writing it.\n\`\`\`save doc.md\n${content}\n\`\`\`\n${rest}`;
        const expected = { tool: 'save', args: ['doc.md'], content, format: 'markdown', start: 12, end: 12 + 15 + content.length + 5 };
        expect(parse(text)[0]).toEqual(expected);
        expect(scanChunks(new MarkdownStreamScanner(isTool), cut(text, cuts)).use).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('reads a reply of 100,000 lines of nested blocks in one pass', () => {
    const section = (i: number) => `## Step ${i}\nRun:\n\`\`\`\nmake step-${i}\n\`\`\`\nThen check:\n\`\`\`bash\ntest -f out/${i}\n\`\`\`\n`;
    const parts: string[] = [];
    for (let i = 0; i < 12_000; i++) parts.push(section(i));
    const content = parts.join('').slice(0, -1);
    const text = `\`\`\`save STEPS.md\n${content}\n\`\`\`\n`;
    expect(text.split('\n').length).toBeGreaterThan(100_000);
    const chunks: string[] = [];
    for (let i = 0; i < text.length; i += 64) chunks.push(text.slice(i, i + 64));
    const { use } = scanChunks(new MarkdownStreamScanner(isTool), chunks);
    expect(use?.content).toBe(content);
    expect(parse(text)).toEqual([use]);
  });
});
