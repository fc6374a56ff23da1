import { describe, expect, it } from 'vitest';
import { similarNames } from '../../src/tools/file-errors';

describe('similarNames', () => {
  const names = ['README.md', 'readme.txt', 'app.ts', 'apps.ts', 'main.ts', 'index.ts', 'a.py'];

  it('ranks a case change first, then another extension, then typos', () => {
    expect(similarNames('Readme.md', names)).toEqual(['README.md', 'readme.txt']);
    expect(similarNames('app.js', names)).toEqual(['app.ts']);
    expect(similarNames('apps.js', names)).toEqual(['apps.ts']);
    expect(similarNames('mian.ts', names)).toEqual(['main.ts']);
  });

  it('never suggests the name itself, nor names too far away', () => {
    expect(similarNames('index.ts', names)).toEqual([]);
    expect(similarNames('zzz.go', names)).toEqual([]);
  });

  it('suggests at most three names', () => {
    expect(similarNames('a.md', ['a.js', 'a.ts', 'a.py', 'a.rb'])).toHaveLength(3);
  });
});
