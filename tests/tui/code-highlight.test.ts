import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { highlighterFor, isKnownLanguage } from '../../src/tui/code-highlight';
import { createStyle, stripAnsi } from '../../src/tui/terminal-style';

const color = createStyle(true);
const plain = createStyle(false);

/** Highlights the lines as one block of `language`, with colour on. */
function highlight(language: string, ...lines: string[]): string[] {
  const highlighter = highlighterFor(language, color);
  return lines.map((line) => highlighter.line(line));
}

describe('highlighterFor', () => {
  it('colours keywords, strings, comments and numbers in C-like code', () => {
    const [line] = highlight('ts', 'const answer = "forty" + 2; // note');
    expect(line).toContain(color.magenta('const'));
    expect(line).toContain(color.green('"forty"'));
    expect(line).toContain(color.yellow('2'));
    expect(line).toContain(color.gray('// note'));
    expect(stripAnsi(line ?? '')).toBe('const answer = "forty" + 2; // note');
  });

  it('does not take // inside a JS string for a comment', () => {
    const [line] = highlight('js', 'fetch("http://example.com"); // real');
    expect(line).toContain(color.green('"http://example.com"'));
    expect(line).toContain(color.gray('// real'));
    expect(line).not.toContain(color.gray('//example.com"); // real'));
  });

  it('keeps a block comment a comment across lines', () => {
    const [first, middle, last] = highlight('c', 'int x; /* starts here', 'return "not code";', 'ends */ int y;');
    expect(first).toContain(color.gray('/* starts here'));
    expect(middle).toBe(color.gray('return "not code";'));
    expect(last).toContain(color.gray('ends */'));
    expect(last).toContain(color.magenta('int'));
  });

  it('keeps a JS template literal a string across lines', () => {
    const [, middle, last] = highlight('typescript', 'const text = `first', 'if (x) // still text', 'end`; return text;');
    expect(middle).toBe(color.green('if (x) // still text'));
    expect(last).toContain(color.green('end`'));
    expect(last).toContain(color.magenta('return'));
  });

  it('keeps a Python triple-quoted string a string across lines', () => {
    const [first, middle, last] = highlight('python', 'doc = """First line', 'def not_code():  # not a comment', 'end""" + x  # comment');
    expect(first).toContain(color.green('"""First line'));
    expect(middle).toBe(color.green('def not_code():  # not a comment'));
    expect(last).toContain(color.green('end"""'));
    expect(last).toContain(color.gray('# comment'));
  });

  it('does not take # inside a Python or shell string for a comment', () => {
    const [python] = highlight('py', 'tag = "a # b"  # real');
    expect(python).toContain(color.green('"a # b"'));
    expect(python).toContain(color.gray('# real'));
    const [shell] = highlight('bash', "echo 'a # b' \"c # d\" # real");
    expect(shell).toContain(color.green("'a # b'"));
    expect(shell).toContain(color.green('"c # d"'));
    expect(shell).toContain(color.gray('# real'));
  });

  it('starts a shell comment only at the start of a word, and colours variables', () => {
    const [line] = highlight('sh', 'curl http://host/page#top $HOME ${#list[@]}');
    expect(line).not.toContain('\x1b[90m');
    expect(line).toContain(color.cyan('$HOME'));
    expect(line).toContain(color.cyan('${#list[@]}'));
  });

  it('colours Python keywords, constants, decorators and defined names', () => {
    const [decorator, definition] = highlight('python', '@cached', 'def load(path=None):');
    expect(decorator).toBe(color.cyan('@cached'));
    expect(definition).toContain(color.magenta('def'));
    expect(definition).toContain(color.blue('load'));
    expect(definition).toContain(color.yellow('None'));
  });

  it('leaves Rust lifetimes plain but colours character literals', () => {
    const [line] = highlight('rust', "fn first<'a>(s: &'a str) -> char { 'x' }");
    expect(line).toContain(color.green("'x'"));
    expect(line).not.toContain(color.green("'a>"));
    expect(stripAnsi(line ?? '')).toBe("fn first<'a>(s: &'a str) -> char { 'x' }");
  });

  it('colours JSON keys apart from string values', () => {
    const [line] = highlight('json', '{ "name": "fence", "count": 3, "ok": true }');
    expect(line).toContain(color.blue('"name"'));
    expect(line).toContain(color.green('"fence"'));
    expect(line).toContain(color.yellow('3'));
    expect(line).toContain(color.yellow('true'));
  });

  it('colours YAML and TOML keys, tables and comments', () => {
    const [key, item, url] = highlight('yaml', 'name: fence # the name', '- port: 8080', 'home: http://host/#top');
    expect(key).toContain(color.blue('name'));
    expect(key).toContain(color.gray('# the name'));
    expect(item).toContain(color.blue('port'));
    expect(url).not.toContain('\x1b[90m');
    const [table, setting] = highlight('toml', '[tool.fence]', 'model = "claude" # default');
    expect(table).toBe(color.cyan('[tool.fence]'));
    expect(setting).toContain(color.blue('model'));
    expect(setting).toContain(color.green('"claude"'));
  });

  it('matches SQL keywords in any case', () => {
    const [line] = highlight('sql', "SELECT name from users WHERE id = 'x' -- pick");
    expect(line).toContain(color.magenta('SELECT'));
    expect(line).toContain(color.magenta('from'));
    expect(line).toContain(color.green("'x'"));
    expect(line).toContain(color.gray('-- pick'));
  });

  it('colours HTML tags, attribute values and comments across lines', () => {
    const [tag, open, inside] = highlight('html', '<a href="/docs">Docs</a>', '<!-- note', 'still note --> <br/>');
    expect(tag).toContain(color.blue('<a'));
    expect(tag).toContain(color.green('"/docs"'));
    expect(tag).toContain(color.blue('</a'));
    expect(tag).toContain('Docs');
    expect(open).toBe(color.gray('<!-- note'));
    expect(inside).toContain(color.gray('still note -->'));
    expect(inside).toContain(color.blue('<br'));
  });

  it('colours CSS property names, numbers and comments', () => {
    const [rule, declaration] = highlight('css', 'a:hover { /* link */', '  margin: 4px #fff;');
    expect(rule).not.toContain(color.blue('a'));
    expect(rule).toContain(color.gray('/* link */'));
    expect(declaration).toContain(color.blue('margin'));
    expect(declaration).toContain(color.yellow('4px'));
    expect(declaration).toContain(color.yellow('#fff'));
  });

  it('colours diff lines by their first character', () => {
    expect(highlight('diff', '+added', '-removed', '@@ -1 +1 @@', ' context', '--- a/file')).toEqual([
      color.green('+added'),
      color.red('-removed'),
      color.cyan('@@ -1 +1 @@'),
      ' context',
      color.bold('--- a/file'),
    ]);
  });

  it('colours only the commands of a console transcript', () => {
    const [command, output] = highlight('console', '$ echo "hi"', 'if this were shell it would be coloured');
    expect(command).toContain(color.dim('$'));
    expect(command).toContain(color.green('"hi"'));
    expect(output).toBe('if this were shell it would be coloured');
  });

  it('returns text as is for an unknown language or with colour off', () => {
    expect(highlight('brainfuck', 'const x = "y"; // z')).toEqual(['const x = "y"; // z']);
    const off = highlighterFor('ts', plain);
    expect(off.line('const x = "y"; // z')).toBe('const x = "y"; // z');
    expect(highlighterFor('diff', plain).line('+x')).toBe('+x');
  });

  it('knows languages by name and by file extension, case-insensitively', () => {
    for (const name of ['TS', 'python', 'rs', 'c++', '.py', 'yml', 'console', 'diff']) expect(isKnownLanguage(name)).toBe(true);
    for (const name of ['', 'save', 'md', 'brainfuck']) expect(isKnownLanguage(name)).toBe(false);
  });

  it('only ever adds escape codes, and never throws', () => {
    const languages = ['ts', 'c', 'go', 'rust', 'php', 'java', 'python', 'sh', 'console', 'json', 'yaml', 'toml', 'sql', 'html', 'css', 'diff', 'other'];
    const line = fc.array(fc.constantFrom('"', "'", '`', '"""', "'''", '/*', '*/', '//', '#', '--', '<!--', '-->', '<a ', '>', '$', '{', '}', ':', '=', '\\', 'x', '1', ' ', 'def', 'if', '@d', '\t'), { maxLength: 30 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(fc.constantFrom(...languages), fc.array(line, { maxLength: 8 }), (language, lines) => {
        const highlighter = highlighterFor(language, color);
        for (const text of lines) expect(stripAnsi(highlighter.line(text))).toBe(text);
      }),
    );
  });

  it('takes time linear in the line length', () => {
    const long = 'let s = "a" + \'b\' /* c */ + 12; '.repeat(5_000);
    const started = performance.now();
    const out = highlighterFor('js', color).line(long);
    expect(stripAnsi(out)).toBe(long);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
