import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import { linearGlob, linearWildcard } from '../../src/policy/linear-glob';

describe('linearGlob', () => {
  const cases: [string, string, boolean][] = [
    ['secrets/**', 'secrets', true],
    ['secrets/**', 'secrets/.env', true],
    ['secrets/**', 'secrets/a/b.txt', true],
    ['secrets/**', 'secretsX/a', false],
    ['src/*.ts', 'src/a.ts', true],
    ['src/*.ts', 'src/a/b.ts', false],
    ['src/*.ts', 'src/.hidden.ts', true],
    ['a/**/b', 'a/b', true],
    ['a/**/b', 'a/x/y/b', true],
    ['a/**/b', 'a/xb', false],
    ['**/k.txt', 'k.txt', true],
    ['**/k.txt', 'deep/down/k.txt', true],
    ['*.{js,ts}', 'a.ts', true],
    ['*.{js,ts}', 'a.py', false],
    ['{a,b{c,d}}', 'bd', true],
    ['file[0-9].txt', 'file7.txt', true],
    ['file[^0-9].txt', 'file7.txt', false],
    ['file?.txt', 'file/.txt', false],
    ['read', 'read', true],
    ['*', 'shell', true],
    ['program:*', 'program:abc123', true],
  ];
  it.each(cases)('%s against %s: %s, as picomatch says', (pattern, text, expected) => {
    expect(linearGlob(pattern)(text)).toBe(expected);
    expect(picomatch(pattern, { dot: true })(text)).toBe(expected);
  });

  it('takes [!…] as a negated class too', () => {
    expect(linearGlob('file[!0-9].txt')('file7.txt')).toBe(false);
    expect(linearGlob('file[!0-9].txt')('fileA.txt')).toBe(true);
  });

  it('matches a 20 KB command line against many stars without backtracking', () => {
    const text = `echo ${'rm -rf x '.repeat(2300)}`;
    // picomatch took 22 s for this; a state set read once over the text takes milliseconds.
    expect(linearGlob('*rm*-rf*/*')(text)).toBe(false);
    expect(linearGlob('*a*a*a*a*a*a*a*b')('a'.repeat(20_000))).toBe(false);
    expect(linearGlob('**x**y**z**!')('xyz'.repeat(7000))).toBe(false);
  });
});

describe('linearWildcard', () => {
  it('takes * across slashes and lines, ? as one character, the rest literally, whole text', () => {
    expect(linearWildcard('rm *')('rm -rf /tmp/x\nmore')).toBe(true);
    expect(linearWildcard('*rm*-rf*/*')('sudo rm -rf /')).toBe(true);
    expect(linearWildcard('a?c')('abc')).toBe(true);
    expect(linearWildcard('a?c')('ac')).toBe(false);
    expect(linearWildcard('a.c')('abc')).toBe(false);
    expect(linearWildcard('(x)+[y]')('(x)+[y]')).toBe(true);
    expect(linearWildcard('Read *', { ignoreCase: true })('READ THE NOTES')).toBe(true);
    expect(linearWildcard('Read *')('READ THE NOTES')).toBe(false);
  });

  it('stays linear on the inputs that made the regular expression backtrack', () => {
    expect(linearWildcard('*rm*-rf*/*x')(`echo ${'rm -rf / '.repeat(2300)}`)).toBe(false);
    expect(linearWildcard('*a*a*a*a*a*a*a*b')('a'.repeat(20_000))).toBe(false);
  });
});
