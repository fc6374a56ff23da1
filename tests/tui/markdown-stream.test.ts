import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MarkdownStream } from '../../src/tui/markdown-stream';
import { createStyle, stripAnsi, visibleWidth } from '../../src/tui/terminal-style';
import { cut } from '../support/chunks';

const plain = createStyle(false);
const color = createStyle(true);

/** Renders a whole reply in chunks (the whole text as one chunk by default), `finish()` included. */
function render(text: string | string[], options: { color?: boolean; width?: number } = {}): string {
  const stream = new MarkdownStream({ style: options.color ? color : plain, width: options.width ?? 60 });
  const chunks = typeof text === 'string' ? [text] : text;
  return chunks.map((chunk) => stream.push(chunk)).join('') + stream.finish();
}

const reply = [
  '# Plan',
  '',
  'First **read** the *config* with `cat`, see [the docs](https://example.com/docs).',
  '- check the `PATH`',
  '  - then the shell',
  '1. build',
  '2. test',
  '> Note: this is **quoted**',
  '---',
  '| name | size |',
  '|:-----|-----:|',
  '| a.txt | 12 |',
  '| b.txt | 3400 |',
  'Now run:',
  '```shell',
  'ls -la # list',
  '```',
  '```save README.md',
  '# Readme',
  '```bash',
  'npm install',
  '```',
  'The end.',
  '```',
  'Done.',
].join('\n');

describe('MarkdownStream', () => {
  it('renders headings, lists, quotes, rules, inline styles, a table and code blocks', () => {
    expect(render(reply, { width: 40 })).toBe(
      [
        'Plan',
        '',
        'First read the config with cat, see the docs (https://example.com/docs).',
        '• check the PATH',
        '  • then the shell',
        '1. build',
        '2. test',
        '│ Note: this is quoted',
        '─'.repeat(40),
        '┌───────┬──────┐',
        '│ name  │ size │',
        '├───────┼──────┤',
        '│ a.txt │   12 │',
        '│ b.txt │ 3400 │',
        '└───────┴──────┘',
        'Now run:',
        '┌ shell',
        '  ls -la # list',
        '└',
        '┌ save README.md',
        '  # Readme',
        '  ```bash',
        '  npm install',
        '  ```',
        '  The end.',
        '└',
        'Done.',
        '',
      ].join('\n'),
    );
  });

  it('gives the same output whole, in 1-character chunks and in any chunking', () => {
    for (const useColor of [false, true]) {
      const whole = render(reply, { color: useColor });
      expect(render([...reply], { color: useColor })).toBe(whole);
      fc.assert(
        fc.property(fc.array(fc.nat(), { maxLength: 40 }), (cuts) => {
          expect(render(cut(reply, cuts), { color: useColor })).toBe(whole);
        }),
        { numRuns: 60 },
      );
    }
  });

  it('emits nothing for a line until its line break arrives', () => {
    const stream = new MarkdownStream({ style: plain, width: 60 });
    expect(stream.push('Hello **wor')).toBe('');
    expect(stream.push('ld**')).toBe('');
    expect(stream.push('\nnext')).toBe('Hello world\n');
    expect(stream.push(' line')).toBe('');
    expect(stream.finish()).toBe('next line\n');
    expect(stream.finish()).toBe('');
  });

  it('returns each completed line with its line break, several lines per chunk too', () => {
    const stream = new MarkdownStream({ style: plain, width: 60 });
    expect(stream.push('a\nb\n\nc')).toBe('a\nb\n\n');
    expect(stream.push('\n')).toBe('c\n');
  });

  it('follows a fence split across chunks', () => {
    const stream = new MarkdownStream({ style: plain, width: 60 });
    const outputs = ['``', '`python\nprint(1)\n', '``', '`', '\n', '\nafter\n'].map((chunk) => stream.push(chunk));
    // The closing fence is drawn once the line after it shows that it closes the block.
    expect(outputs).toEqual(['', '┌ python\n  print(1)\n', '', '', '', '└\n\nafter\n']);
  });

  describe('where a code block ends (the tool parser\'s rule)', () => {
    const readme = 'Saving.\n```save README.md\n# Tool\n\nInstall:\n```\nnpm install\n```\n\nDone!\n```\n\nSaved.\n';

    it('draws a README with bare inner blocks as one code block', () => {
      expect(render(readme)).toBe('Saving.\n┌ save README.md\n  # Tool\n\n  Install:\n  ```\n  npm install\n  ```\n\n  Done!\n└\n\nSaved.\n');
      expect(render([...readme])).toBe(render(readme));
    });

    it('holds the lines after a bare fence followed by text until the nested block closes', () => {
      const stream = new MarkdownStream({ style: plain, width: 60 });
      expect(stream.push('```save a.md\nInstall:\n```\nnpm install\n')).toBe('┌ save a.md\n  Install:\n');
      expect(stream.push('```\nDone.\n')).toBe('  ```\n  npm install\n  ```\n  Done.\n');
    });

    it('draws prose written against the closing fence as text after the block', () => {
      expect(render('```shell\nls\n```\nThat lists the files.\n')).toBe('┌ shell\n  ls\n└\nThat lists the files.\n');
      const stream = new MarkdownStream({ style: plain, width: 60 });
      expect(stream.push('```shell\nls\n```\nThat **lists** them.\n')).toBe('┌ shell\n  ls\n');
      expect(stream.push('```read a.txt\n')).toBe('└\nThat lists them.\n┌ read a.txt\n');
    });

    it('ends a block at a closing fence followed directly by the next block', () => {
      expect(render('```ts\nlet a;\n```\n```shell\nls\n```\n')).toBe('┌ ts\n  let a;\n└\n┌ shell\n  ls\n└\n');
    });

    it('draws the end mark of a block left open after its nested blocks', () => {
      expect(render('```save a.md\nA\n```\nb\n```\nC')).toBe('┌ save a.md\n  A\n  ```\n  b\n  ```\n  C\n└\n');
    });
  });

  it('treats CRLF as a line break, also when split between chunks', () => {
    expect(render(['# Title\r', '\n```js\r\nx = 1\r\n```\r\n'])).toBe('Title\n┌ js\n  x = 1\n└\n');
  });

  describe('inline markup', () => {
    it('drops the markup characters without colour', () => {
      expect(render('**bold** *em* _em_ ~~gone~~ `code` \\*not em\\* a &amp; b &lt;tag&gt; &#39;q&#39;\n')).toBe("bold em em gone code *not em* a & b <tag> 'q'\n");
    });

    it('paints strong bold, em italic, code cyan and deleted text dim', () => {
      const out = render('**bold** and *em* and `x = 1` and ~~old~~\n', { color: true });
      expect(out).toContain(color.bold('bold'));
      expect(out).toContain(color.italic('em'));
      expect(out).toContain(color.cyan('x = 1'));
      expect(out).toContain(color.dim('old'));
      expect(stripAnsi(out)).toBe('bold and em and x = 1 and old\n');
    });

    it('shows links as text and a dim url, or only the url when that is the text', () => {
      expect(render('[docs](https://x.dev/d) <https://x.dev> https://y.dev [https://z.dev](https://z.dev)\n')).toBe(
        'docs (https://x.dev/d) https://x.dev https://y.dev https://z.dev\n',
      );
      expect(render('see [docs](https://x.dev/d)\n', { color: true })).toBe(`see docs ${color.dim('(https://x.dev/d)')}\n`);
    });
  });

  describe('blocks', () => {
    it('shows headings bold without their marks, level 1 also underlined', () => {
      expect(render('# One\n## Two ##\n### Three\n')).toBe('One\nTwo\nThree\n');
      const out = render('# One\n## Two\n', { color: true });
      expect(out).toBe(`${color.bold(color.underline('One'))}\n${color.bold('Two')}\n`);
      expect(out).toContain('\x1b[1m');
      expect(out).toContain('\x1b[4m');
    });

    it('shows list items with bullets or numbers, nested by indentation, tasks with boxes', () => {
      const text = ['- a', '* b', '  - b1', '    - b2', '      more of b2', '  - b3', '- c', '', '3. three', '4. four', '- [ ] todo', '- [x] done', 'text', '  indented text'].join('\n');
      expect(render(text)).toBe(
        ['• a', '• b', '  • b1', '    • b2', '      more of b2', '  • b3', '• c', '', '3. three', '4. four', '• [ ] todo', '• [x] done', 'text', '  indented text', ''].join('\n'),
      );
    });

    it('shows nested lists indented with four spaces or tabs', () => {
      expect(render('- a\n    - b\n\t- c\n')).toBe('• a\n  • b\n  • c\n');
    });

    it('shows quotes behind a dim bar', () => {
      expect(render('> quoted *text*\n>\n> - item\n> > deeper\n')).toBe('│ quoted text\n│\n│ • item\n│ │ deeper\n');
      expect(render('> quoted\n', { color: true })).toBe(`${color.dim('│')} quoted\n`);
    });

    it('draws rules dim across the width, at most 80 columns', () => {
      expect(render('---\n', { width: 30 })).toBe(`${'─'.repeat(30)}\n`);
      expect(render('***\n', { width: 200 })).toBe(`${'─'.repeat(80)}\n`);
      expect(render('---\n', { width: 30, color: true })).toBe(`${color.dim('─'.repeat(30))}\n`);
    });

    it('never leaves blanks at the end of a line', () => {
      const out = render('text   \n-   \n**bold** `a `  \n```\ncode   \n\t\n```\n', { color: true });
      for (const line of out.split('\n')) expect(stripAnsi(line)).toBe(stripAnsi(line).trimEnd());
      expect(stripAnsi(out)).toBe('text\n•\nbold a\n┌\n  code\n\n└\n');
    });
  });

  describe('tables', () => {
    const table = '| Tool | What it does |\n|---|:---:|\n| `read` | reads **files** |\n| shell | runs |\n';

    it('draws a table with aligned columns once the group ends', () => {
      const stream = new MarkdownStream({ style: plain, width: 60 });
      expect(stream.push(table)).toBe('');
      expect(stream.push('after\n')).toBe(
        ['┌───────┬──────────────┐', '│ Tool  │ What it does │', '├───────┼──────────────┤', '│ read  │ reads files  │', '│ shell │     runs     │', '└───────┴──────────────┘', 'after', ''].join('\n'),
      );
    });

    it('paints the header bold, the borders dim and keeps inline styles in cells', () => {
      const out = render(table, { color: true });
      expect(out).toContain(color.bold('Tool'));
      expect(out).toContain(color.dim('│'));
      expect(out).toContain(color.cyan('read'));
      expect(out).toContain(color.bold('files'));
    });

    it('cuts cells to fit a narrow width', () => {
      const wide = '| name | description |\n|---|---|\n| x | a rather long description of the thing |\n| yy | short |\n';
      const out = render(wide, { width: 24 });
      const lines = out.trimEnd().split('\n');
      for (const line of lines) expect(visibleWidth(line)).toBeLessThanOrEqual(24);
      expect(out).toContain('…');
      expect(lines[3]).toBe('│ x    │ a rather lon… │');
    });

    it('renders lines starting with | that are no table as text', () => {
      expect(render('| not a table\n| either\nend\n')).toBe('| not a table\n| either\nend\n');
    });

    it('draws a table still open at the end of the reply', () => {
      expect(render('| a |\n|---|\n| 1 |')).toBe('┌───┐\n│ a │\n├───┤\n│ 1 │\n└───┘\n');
    });
  });

  describe('code blocks', () => {
    it('shows a dim header, code indented by two columns and a dim end mark', () => {
      expect(render('```python\nif x:\n\treturn 1\n\n```\n')).toBe('┌ python\n  if x:\n      return 1\n\n└\n');
      const out = render('```python\nprint("hi")\n```\n', { color: true });
      expect(out).toBe(`${color.dim('┌ python')}\n  print(${color.green('"hi"')})\n${color.dim('└')}\n`);
    });

    it('highlights by language, and by the file extension of a tool block', () => {
      const out = render('```ts\nconst a = 1;\n```\n```save src/app.py\ndef main():\n```\n', { color: true });
      expect(out).toContain(color.magenta('const'));
      expect(out).toContain(color.magenta('def'));
    });

    it('colours diff blocks by line', () => {
      const out = render('```diff\n@@ -1 +1 @@\n-old\n+new\n same\n```\n', { color: true });
      expect(out).toContain(`  ${color.cyan('@@ -1 +1 @@')}\n  ${color.red('-old')}\n  ${color.green('+new')}\n   same\n`);
    });

    it('uses tildes too, and closes only on a bare fence of the same character at least as long', () => {
      expect(render('~~~\n```\n~~\n```\n~~~~\nafter\n')).toBe('┌\n  ```\n  ~~\n  ```\n└\nafter\n');
      expect(render('````\n```\n````\n')).toBe('┌\n  ```\n└\n');
    });

    it('keeps a fence-looking line whose info holds a backtick as text', () => {
      expect(render('``` not `a` fence\n')).toBe('``` not a fence\n');
    });

    it('keeps a nested fence inside a save block as its content', () => {
      const text = '```save README.md\n# Title\n```bash\nnpm test\n```\nmore\n```\n# After\n';
      expect(render(text)).toBe('┌ save README.md\n  # Title\n  ```bash\n  npm test\n  ```\n  more\n└\nAfter\n');
    });

    it('removes the opening fence indentation from the code lines', () => {
      expect(render('1. step\n   ```sh\n   make\n     indented\n   ```\n')).toBe('1. step\n┌ sh\n  make\n    indented\n└\n');
    });

    it('does not cut code lines longer than the width', () => {
      const long = 'x'.repeat(100);
      expect(render(`\`\`\`\n${long}\n\`\`\`\n`, { width: 20 })).toBe(`┌\n  ${long}\n└\n`);
    });

    it('closes an unterminated fence at finish, with its last line', () => {
      const stream = new MarkdownStream({ style: plain, width: 60 });
      expect(stream.push('```js\nlet a = 1;\nlet b')).toBe('┌ js\n  let a = 1;\n');
      expect(stream.finish()).toBe('  let b\n└\n');
    });

    it('renders a closing fence without a line break at finish', () => {
      expect(render('```\ncode\n```')).toBe('┌\n  code\n└\n');
    });
  });

  it('resets on finish, so the next reply renders independently', () => {
    const stream = new MarkdownStream({ style: plain, width: 60 });
    stream.push('```python\nprint(1)\n| a |\n- item\n  - sub');
    expect(stream.finish()).toBe('    - sub\n└\n');
    expect(stream.push('*text*\n```\n')).toBe('text\n┌\n');
    expect(stream.finish()).toBe('└\n');
    stream.push('- a\n  - b\n| x |');
    stream.finish();
    expect(stream.push('  - c\n')).toBe('• c\n');
  });

  it('shows control characters as symbols instead of passing them to the terminal', () => {
    expect(render('\x1b[31mred\x07\n```\n\x1b[2J\n```\n')).toBe('␛[31mred␇\n┌\n  ␛[2J\n└\n');
    expect(render('a\x1b]0;title\x07b\n', { color: true })).not.toContain('\x1b]');
    expect(render('a &#27;[2J b &#10; `&#27;`\n')).toBe('a ␛[2J b   &#27;\n');
  });

  it('shows bidirectional controls and C1 controls as code points, so a line reads in the order it is stored', () => {
    expect(render('access \u202eeurt\u202c = admin\n```\nif (a) {\u2067 } \u2066\n```\n')).toBe('access <U+202E>eurt<U+202C> = admin\n┌\n  if (a) {<U+2067> } <U+2066>\n└\n');
    expect(render('a\x9b2Jb\n')).toBe('a<U+009B>2Jb\n');
  });

  it('does not crash at narrow or odd widths, and fits rules and tables when it can', () => {
    const text = '---\n| a | b |\n|---|---|\n| long cell | another long cell |\n# heading\n';
    for (const width of [20, 10, 5, 1, 0, -3, Number.NaN]) {
      const out = render(text, { width });
      expect(out).toContain('heading');
      if (width >= 10) for (const line of out.trimEnd().split('\n')) expect(visibleWidth(line)).toBeLessThanOrEqual(width);
    }
    expect(render('---\n', { width: 20 })).toBe(`${'─'.repeat(20)}\n`);
  });

  it('never throws, writes no escape sequence without colour, and colour only adds escapes', () => {
    const piece = fc.constantFrom('```', '~~~', '````', '`', '|', '| a |', '|---|', '\n', '\r\n', '\r', ' ', '  ', '\t', '#', '# ', '- ', '1. ', '> ', '*', '**', '_', '~~', '[', '](', ')', '<', '>', '&amp;', '&#', '&#27;', '&#10;', '&#x3000;', '\\', '\x1b', 'x', 'py', 'save a.ts', 'é', '界', '😀', '---');
    const text = fc.oneof(fc.array(piece, { maxLength: 60 }).map((parts) => parts.join('')), fc.string({ unit: 'binary', maxLength: 200 }));
    fc.assert(
      fc.property(text, fc.array(fc.nat(), { maxLength: 10 }), fc.integer({ min: -5, max: 120 }), (source, cuts, width) => {
        const chunks = cut(source, cuts);
        const out = render(chunks, { width });
        expect(out).not.toContain('\x1b');
        expect(out === '' || out.endsWith('\n')).toBe(true);
        for (const line of out.split('\n')) expect(line).toBe(line.trimEnd());
        expect(stripAnsi(render(chunks, { width, color: true }))).toBe(out);
        expect(render(source, { width })).toBe(out);
      }),
      { numRuns: 300 },
    );
  });

  it('takes time linear in the reply length, however it is chunked', () => {
    const long = `${'word *em* `code` '.repeat(6_000)}\n${reply}\n`.repeat(2);
    const stream = new MarkdownStream({ style: color, width: 80 });
    const started = performance.now();
    for (const char of long) stream.push(char);
    stream.finish();
    expect(performance.now() - started).toBeLessThan(5000);
  });
});

describe('MarkdownStream.tail', () => {
  it('gives the end of the line still being written, as plain text, and nothing between lines', () => {
    const stream = new MarkdownStream({ style: plain, width: 60 });
    expect(stream.tail).toBe('');
    stream.push('Once upon');
    expect(stream.tail).toBe('Once upon');
    stream.push(' a\ttime,\x1b[2J and');
    expect(stream.tail).toBe('Once upon a time, [2J and');
    stream.push(' then\nthere');
    expect(stream.tail).toBe('there');
    stream.push(' was\n');
    expect(stream.tail).toBe('');
    stream.push('x');
    stream.finish();
    expect(stream.tail).toBe('');
  });

  it('keeps only the last 200 characters of a long line, whatever the chunking, in linear time', () => {
    const stream = new MarkdownStream({ style: plain, width: 60 });
    const words = Array.from({ length: 20_000 }, (_, i) => `w${i}`).join(' ');
    for (let i = 0; i < words.length; i += 7) stream.push(words.slice(i, i + 7));
    expect(stream.tail).toBe(words.slice(-200).trimStart());
    expect(stream.finish()).toContain('w19999');
  });
});

describe('MarkdownStream with XML tool uses', () => {
  const xml = (text: string | string[], xmlToolUse = true) => {
    const stream = new MarkdownStream({ style: plain, width: 60, xmlToolUse });
    const chunks = typeof text === 'string' ? [text] : text;
    return chunks.map((chunk) => stream.push(chunk)).join('') + stream.finish();
  };

  it('shows a call as a code block: the tool and its args as the head, the body as code', () => {
    const reply = 'I will save it.\n\n<tool-use><save args="notes/a &amp; b.txt">\nfirst line\n  second <b> & more\n</save></tool-use>\nDone.\n';
    expect(xml(reply)).toBe(['I will save it.', '', '┌ save notes/a & b.txt', '  first line', '    second <b> & more', '└', 'Done.', ''].join('\n'));
  });

  it('reads the whole call on one line, a self-closing element, CDATA, a missing inner close and text after the call', () => {
    expect(xml('<tool-use><read args="a.txt"/></tool-use>\n')).toBe('┌ read a.txt\n└\n');
    expect(xml('<tool-use><shell>ls -la</shell></tool-use> and then\n')).toBe('┌ shell\n  ls -la\n└\nand then\n');
    expect(xml('<tool-use><save args="x.md"><![CDATA[\n# </save> inside\n]]></save></tool-use>\n')).toBe('┌ save x.md\n  # </save> inside\n└\n');
    expect(xml('<tool-use><save args="y.md"><![CDATA[a </tool-use> b]]></save></tool-use>\n')).toBe('┌ save y.md\n  a </tool-use> b\n└\n');
    expect(xml('<tool-use>\n<shell>\necho hi\n</tool-use>\n')).toBe('┌ shell\n  echo hi\n└\n');
  });

  it('renders the same whatever the chunking', () => {
    const reply = 'Text.\n<tool-use><patch args="src/a.ts">\n<<<<<<< ORIGINAL\nold\n=======\nnew\n>>>>>>> UPDATED\n</patch></tool-use>\n';
    const whole = xml(reply);
    expect(xml(cut(reply, [3, 10, 21, 33, 47, 58]))).toBe(whole);
    expect(xml(reply.split(''))).toBe(whole);
    expect(whole).toContain('┌ patch src/a.ts\n');
  });

  it('leaves as text a call it cannot read, one inside a code block, one mid-line, and all of them when off', () => {
    expect(xml('<tool-use>not an element\n')).toBe('<tool-use>not an element\n');
    expect(xml('```\n<tool-use><shell>ls</shell></tool-use>\n```\n')).toBe('┌\n  <tool-use><shell>ls</shell></tool-use>\n└\n');
    expect(xml('Write <tool-use> blocks.\n')).toBe('Write <tool-use> blocks.\n');
    expect(xml('<tool-use><shell>ls</shell></tool-use>\n', false)).toBe('<tool-use><shell>ls</shell></tool-use>\n');
  });

  it('ends a block the reply left open', () => {
    expect(xml('<tool-use><shell>\nsleep 1')).toBe('┌ shell\n  sleep 1\n└\n');
  });
});
