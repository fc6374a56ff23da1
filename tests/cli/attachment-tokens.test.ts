import { describe, expect, it } from 'vitest';
import { findAttachmentTokens, wholePromptPath } from '../../src/cli/attachment-tokens';

/** Each token as its kind and the paths of its readings. */
function tokens(prompt: string): [string, ...string[]][] {
  return findAttachmentTokens(prompt).map((token) => [token.kind, ...token.readings.map((reading) => reading.path)]);
}

describe('findAttachmentTokens', () => {
  it('finds @path mentions: relative, absolute, home, quoted and escaped', () => {
    expect(tokens('what is wrong here @shot.png')).toEqual([['mention', 'shot.png']]);
    expect(tokens('@docs/notes.md and @/var/x.log and @~/a.png')).toEqual([
      ['mention', 'docs/notes.md'],
      ['mention', '/var/x.log'],
      ['mention', '~/a.png'],
    ]);
    expect(tokens('see @"Shot 1.png" now')).toEqual([['mention', 'Shot 1.png']]);
    expect(tokens("see @'Shot 1.png'")).toEqual([['mention', 'Shot 1.png']]);
    expect(tokens('see @Shot\\ 1.png now')).toEqual([['mention', 'Shot 1.png']]);
    expect(tokens('(see @notes.md)')).toEqual([['mention', 'notes.md)', 'notes.md']]);
  });

  it('offers the path without the punctuation prose puts after it, leaving that in the text', () => {
    const [token] = findAttachmentTokens('read @notes.md, then @b.txt.');
    expect(token?.readings).toEqual([
      { path: 'notes.md,', end: 15 },
      { path: 'notes.md', end: 14 },
    ]);
    expect(tokens('read @notes.md, then @b.txt.')).toEqual([
      ['mention', 'notes.md,', 'notes.md'],
      ['mention', 'b.txt.', 'b.txt'],
    ]);
  });

  it('takes no @ inside a word, a code span or a code block', () => {
    expect(tokens('mail me@example.com or ping @user')).toEqual([['mention', 'user']]);
    expect(tokens('run `npm i @types/node` then')).toEqual([]);
    expect(tokens('```\ngit log --author @me.txt\n```\nand @real.md')).toEqual([['mention', 'real.md']]);
    expect(tokens('an unclosed ` then @a.md')).toEqual([['mention', 'a.md']]);
    expect(tokens('a lone @ and @"unclosed')).toEqual([]);
  });

  it('finds pasted paths as terminals paste a dragged file', () => {
    expect(tokens("'/home/me/Shot 1.png'")).toEqual([['pasted', '/home/me/Shot 1.png']]);
    expect(tokens('/home/me/Shot\\ 1.png what is this')).toEqual([['pasted', '/home/me/Shot 1.png']]);
    expect(tokens('what is this "/home/me/a b.png" and "/x/c.png"')).toEqual([
      ['pasted', '/home/me/a b.png'],
      ['pasted', '/x/c.png'],
    ]);
    expect(tokens('file:///home/me/Shot%201.png')).toEqual([['pasted', '/home/me/Shot 1.png']]);
    expect(tokens('~/Pictures/a.png')).toEqual([['pasted', '~/Pictures/a.png']]);
  });

  it('takes as pasted only what has the form of a path, after whitespace', () => {
    expect(tokens('and/or the "quoted words" and / alone and ~ alone')).toEqual([]);
    expect(tokens('x/home/me/a.png')).toEqual([]);
    expect(tokens("'/a.png'x")).toEqual([]);
    expect(tokens('file://not a url')).toEqual([]);
  });

  it('marks tokens written as paths on purpose', () => {
    expect(findAttachmentTokens('@a.png @"a.png" @a\\ b.png').map((token) => token.deliberate)).toEqual([false, true, true]);
  });

  it('gives the span each token covers', () => {
    const prompt = "look '/x/a b.png' then @c.md.";
    const [pasted, mention] = findAttachmentTokens(prompt);
    expect(prompt.slice(pasted?.start, pasted?.readings[0]?.end)).toBe("'/x/a b.png'");
    expect(prompt.slice(mention?.start, mention?.readings[1]?.end)).toBe('@c.md');
  });
});

describe('wholePromptPath', () => {
  it('reads a whole prompt with spaces as one pasted path', () => {
    expect(wholePromptPath(' /home/me/Shot 1.png\n')).toEqual({ kind: 'pasted', start: 1, readings: [{ path: '/home/me/Shot 1.png', end: 20 }], deliberate: false });
    expect(wholePromptPath('~/Pictures/a b.png')?.readings[0]?.path).toBe('~/Pictures/a b.png');
  });

  it('leaves one word, quoted or escaped forms, several lines and prose to the tokens', () => {
    expect(wholePromptPath('/home/me/a.png')).toBeUndefined();
    expect(wholePromptPath("'/home/me/a b.png'")).toBeUndefined();
    expect(wholePromptPath('/home/me/a\\ b.png')).toBeUndefined();
    expect(wholePromptPath('/home/me/a b.png\nwhat is it')).toBeUndefined();
    expect(wholePromptPath('what is /home/me/a b.png')).toBeUndefined();
  });
});
