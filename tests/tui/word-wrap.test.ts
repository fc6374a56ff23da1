import { describe, expect, it } from 'vitest';
import { wrapHanging, wrapUnder, wrapWords } from '../../src/tui/word-wrap';

describe('wrapWords', () => {
  it('breaks at spaces, never inside a word that fits a line', () => {
    expect(wrapWords('take back the last n prompts', 12)).toEqual(['take back', 'the last n', 'prompts']);
    expect(wrapWords('one two', 7)).toEqual(['one two']);
  });

  it('gives the first line and the others their own widths', () => {
    expect(wrapWords('aa bb cc dd', 5, 2)).toEqual(['aa bb', 'cc', 'dd']);
  });

  it('cuts a word wider than a line between grapheme clusters, and counts wide characters as two columns', () => {
    expect(wrapWords('a 20261207-214539-0dc045', 10)).toEqual(['a', '20261207-2', '14539-0dc0', '45']);
    expect(wrapWords('日本語の文', 4)).toEqual(['日本', '語の', '文']);
    expect(wrapWords('e\u0301e\u0301e\u0301', 2)).toEqual(['e\u0301e\u0301', 'e\u0301']);
  });

  it('keeps spaces inside a line and drops them where it breaks', () => {
    expect(wrapWords('a  b   c', 4)).toEqual(['a  b', 'c']);
    expect(wrapWords('', 10)).toEqual(['']);
  });
});

describe('wrapUnder and wrapHanging', () => {
  it('indent continuation lines under the text, or by the hanging indent', () => {
    expect(wrapUnder('> ', 2, 'one two three', 9)).toEqual(['> one two', '  three']);
    expect(wrapHanging('one two three', 9, 2)).toEqual(['one two', '  three']);
  });
});
