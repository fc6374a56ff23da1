import { describe, expect, it } from 'vitest';
import { applyPatch, parsePatch, type Hunk } from '../../src/tools/patch-hunks';

function hunk(original: string[], updated: string[]): string {
  return ['<<<<<<< ORIGINAL', ...original, '=======', ...updated, '>>>>>>> UPDATED'].join('\n');
}

function parsed(patch: string): Hunk[] {
  const result = parsePatch(patch);
  if (!result.ok) throw new Error(result.error);
  return result.hunks;
}

function apply(text: string, patch: string): string {
  const result = applyPatch(text, parsed(patch), 'f.txt');
  if (!result.ok) throw new Error(result.error);
  return result.text;
}

function failure(text: string, patch: string): string {
  const result = applyPatch(text, parsed(patch), 'f.txt');
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.text)}`);
  return result.error;
}

describe('parsePatch', () => {
  it('reads hunks separated by blank lines, with CRLF patch text too', () => {
    const hunks = parsed(`${hunk(['a'], ['b'])}\n\n${hunk(['c', ''], [])}\n`.replace(/\n/g, '\r\n'));
    expect(hunks).toEqual([
      { number: 1, readings: [{ original: ['a'], updated: ['b'] }] },
      { number: 2, readings: [{ original: ['c', ''], updated: [] }] },
    ]);
  });

  it('accepts SEARCH/REPLACE markers', () => {
    const hunks = parsed('<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE');
    expect(hunks[0]?.readings).toEqual([{ original: ['x'], updated: ['y'] }]);
  });

  it('gives one reading per ======= line', () => {
    const hunks = parsed(hunk(['a', '======='], ['b']));
    expect(hunks[0]?.readings).toEqual([
      { original: ['a'], updated: ['=======', 'b'] },
      { original: ['a', '======='], updated: ['b'] },
    ]);
  });

  it.each([
    ['no hunks', '', /the patch has no hunks/],
    ['text outside a hunk', `oops\n${hunk(['a'], ['b'])}`, /line 1 \("oops"\) is outside any hunk/],
    ['no separator', '<<<<<<< ORIGINAL\na\n>>>>>>> UPDATED', /hunk 1 \(opened at line 1\) has no ======= line/],
    ['unclosed hunk', '<<<<<<< ORIGINAL\na\n=======\nb', /hunk 1 \(opened at line 1\) is not closed/],
    ['a hunk opened inside another', `<<<<<<< ORIGINAL\na\n=======\nb\n${hunk(['c'], ['d'])}`, /hunk 1 .* is not closed before line 5/],
    ['a stray separator', `${hunk(['a'], ['b'])}\n=======`, /line 6 \("======="\) is outside any hunk/],
  ])('rejects a patch with %s, showing the expected form', (_name, patch, message) => {
    const result = parsePatch(patch);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatch(message);
    expect(result.error).toMatch(/^Malformed patch: /);
    expect(result.error).toContain('<<<<<<< ORIGINAL\nlines exactly as they are in the file\n=======');
  });
});

describe('applyPatch', () => {
  it('replaces, inserts and deletes lines', () => {
    const text = 'one\ntwo\nthree\nfour\n';
    expect(apply(text, hunk(['two'], ['2', 'two-and-a-half']))).toBe('one\n2\ntwo-and-a-half\nthree\nfour\n');
    expect(apply(text, hunk(['two', 'three'], []))).toBe('one\nfour\n');
    expect(apply(text, hunk(['four'], ['four', 'five']))).toBe('one\ntwo\nthree\nfour\nfive\n');
  });

  it('matches whole lines only', () => {
    expect(failure('xx = 10\n', hunk(['x = 1'], ['x = 2']))).toMatch(/not found/);
  });

  it('checks every hunk against the original text and reports line ranges', () => {
    const result = applyPatch('a\nb\nc\nd\ne\n', parsed(`${hunk(['d'], ['D1', 'D2'])}\n${hunk(['a', 'b'], ['AB'])}`), 'f.txt');
    expect(result).toEqual({
      ok: true,
      text: 'AB\nc\nD1\nD2\ne\n',
      changes: [
        { hunk: 2, oldStart: 1, oldLines: 2, newStart: 1, newLines: 1 },
        { hunk: 1, oldStart: 4, oldLines: 1, newStart: 3, newLines: 2 },
      ],
    });
  });

  it('numbers an empty range like a unified diff does', () => {
    const result = applyPatch('a\nb\n', parsed(hunk(['b'], [])), 'f.txt');
    expect(result.ok && result.changes).toEqual([{ hunk: 1, oldStart: 2, oldLines: 1, newStart: 1, newLines: 0 }]);
  });

  it('names the hunk and the places when ORIGINAL matches several times', () => {
    const error = failure('def foo():\n  pass\ndef foo():\n  pass\n', hunk(['def foo():', '  pass'], ['x']));
    expect(error).toBe('hunk 1 ("def foo():") matches 2 places in f.txt (lines 1, 3); include more surrounding lines so it matches once');
  });

  it('hints at trailing whitespace, then indentation, then a first line found elsewhere', () => {
    expect(failure('a\nx = 1   \n', hunk(['x = 1'], ['x = 2']))).toBe(
      'hunk 1 ("x = 1") not found in f.txt; it matches at line 2 if trailing whitespace is ignored: copy the lines exactly as they are in the file',
    );
    expect(failure('if a:\n\tx = 1\n', hunk(['if a:', '    x = 1'], ['y']))).toMatch(/matches at line 1 if indentation is ignored/);
    expect(failure('if a:\n  y = 1\n', hunk(['if a:', '  x = 1'], ['z']))).toMatch(/its line "if a:" is at line 1 but the lines around it differ/);
    expect(failure('nothing\n', hunk(['x = 1'], ['z']))).toBe('hunk 1 ("x = 1") not found in f.txt; read the file and copy the lines exactly');
  });

  it('fails as a whole when a later hunk fails', () => {
    expect(failure('a\nb\n', `${hunk(['a'], ['A'])}\n${hunk(['zzz'], ['Z'])}`)).toMatch(/^hunk 2 \("zzz"\) not found/);
  });

  it('rejects overlapping hunks', () => {
    expect(failure('a\nb\nc\n', `${hunk(['b', 'c'], ['x'])}\n${hunk(['a', 'b'], ['y'])}`)).toBe(
      'hunks 1 and 2 overlap in f.txt; merge them into one hunk',
    );
  });

  it('keeps untouched line breaks and gives new lines the dominant one', () => {
    expect(apply('a\r\nb\r\nc\r\n', hunk(['b'], ['B1', 'B2']))).toBe('a\r\nB1\r\nB2\r\nc\r\n');
    expect(apply('a\r\nb\nc\r\nd\r\n', hunk(['c'], ['C']))).toBe('a\r\nb\nC\r\nd\r\n');
  });

  it('keeps a missing final line break missing, and a present one present', () => {
    expect(apply('a\nb', hunk(['b'], ['B', 'C']))).toBe('a\nB\nC');
    expect(apply('a\nb', hunk(['b'], []))).toBe('a');
    expect(apply('a\nb\n', hunk(['b'], ['B']))).toBe('a\nB\n');
    expect(apply('a\n', hunk(['a'], []))).toBe('');
  });

  it('accepts an empty ORIGINAL only as the sole hunk of an empty text', () => {
    expect(apply('', hunk([], ['first', 'second']))).toBe('first\nsecond\n');
    expect(failure('a\n', hunk([], ['b']))).toMatch(/^hunk 1 has an empty ORIGINAL, which only works on an empty or missing file; f.txt has 1 line/);
    expect(failure('', `${hunk([], ['b'])}\n${hunk([], ['c'])}`)).toMatch(/must be the only hunk/);
  });

  it('picks the one split of a hunk with several ======= lines that fits the text', () => {
    const text = 'title\n=======\nbody\n';
    expect(apply(text, hunk(['=======', 'body'], ['-------', 'body']))).toBe('title\n-------\nbody\n');
    expect(apply(text, hunk(['body'], ['=======', 'more']))).toBe('title\n=======\n=======\nmore\n');
  });

  it('splits at the last ======= line that fits when several do', () => {
    expect(apply('Title\n=======\n\nText\n', hunk(['Title', '=======', '', 'Text'], ['Fence', '=======', '', 'Text']))).toBe(
      'Fence\n=======\n\nText\n',
    );
    expect(apply('a\n=======\nb\n', hunk(['a'], ['=======', 'b']))).toBe('b\nb\n');
  });

  it('refuses a hunk with several ======= lines when no split fits', () => {
    expect(failure('q\n', hunk(['a', '======='], ['b']))).toMatch(/not found in f.txt \(its body has 2 ======= lines/);
  });
});

describe('applyPatch on an empty text', () => {
  it('says the text is empty when a hunk looks for lines in it', () => {
    expect(failure('', hunk(['a'], ['b']))).toBe('hunk 1 ("a") not found in f.txt; f.txt is empty (a single hunk with an empty ORIGINAL fills it)');
  });
});

describe('markers inside hunks', () => {
  it('treats git conflict markers as ordinary lines', () => {
    const text = 'a\n<<<<<<< HEAD\nb\n>>>>>>> main\n';
    expect(apply(text, hunk(['<<<<<<< HEAD', 'b', '>>>>>>> main'], ['b']))).toBe('a\nb\n');
  });

  it('cannot hold a line that is exactly >>>>>>> UPDATED: the hunk ends there', () => {
    const result = parsePatch(hunk(['a', '>>>>>>> UPDATED', 'b'], ['c']));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatch(/^Malformed patch: hunk 1 \(opened at line 1\) has no ======= line/);
  });
});
