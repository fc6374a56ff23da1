import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import picomatch from 'picomatch';
import { escapePath } from 'tinyglobby';
import { describe, expect, it } from 'vitest';
import { globTool } from '../../src/tools/glob';
import { compileGlob } from '../../src/tools/glob-match';
import { ToolInputError } from '../../src/tools/tool-error';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspaceDir = useTempWorkspace();

async function file(path: string): Promise<void> {
  const absolute = join(workspaceDir(), path);
  await mkdir(dirname(absolute), { recursive: true });
  await writeFile(absolute, 'x\n');
}

function glob(pattern: string) {
  return globTool.execute(globTool.parameters.parse({ pattern }), makeToolContext(workspaceDir()));
}

const PATHS = [
  'a.ts', '.env', 'src/app.ts', 'src/.hidden.ts', 'src/deep/x.test.ts', 'src/deep/.cache/y.ts', '.github/workflows/ci.yml',
  'docs/readme.md', 'docs/notes.txt', 'x.tsx', 'lib/a.b.c', 'node/src/app.ts', 'src', 'a1', 'ab', 'a/b/c/d.md', 'file[1].md',
];

const PATTERNS = [
  '*', '**', '*.ts', 'src/*', 'src/**', 'src/**/*.ts', '**/*.ts', '**/.cache/*', '.github/**', '*.{md,txt}', 'docs/*.{md,txt}',
  '{src,docs}/**', 'a?', 'a[0-9]', 'a[!0-9]', '**/x.*.ts', 'src/**/x.test.ts', '*/*', '**/a*', '.*', 'lib/*.*.*', '{a,b}/**/*.md',
  'src/{app,deep/{x,y}}.ts', '**/*.{ts,yml}', 'a/**/d.md', 'a/**/b/**/d.md', 'file\\[1\\].md',
];

describe('compileGlob', () => {
  it('matches what picomatch matches for the patterns glob promises', () => {
    for (const pattern of PATTERNS) {
      const ours = compileGlob(pattern, escapePath);
      const theirs = picomatch(pattern, { dot: false, posix: true });
      for (const path of PATHS) expect(ours.matches(path), `${pattern} on ${path}`).toBe(theirs(path));
    }
  });

  it('walks with coarse patterns that cover every match', () => {
    for (const pattern of PATTERNS) {
      const { walk, matches, dot } = compileGlob(pattern, escapePath);
      const covers = picomatch(walk, { dot, posix: true });
      for (const path of PATHS.filter(matches)) expect(covers(path), `${walk.join(' ')} covers ${path}`).toBe(true);
      for (const coarse of walk) expect(coarse.split('**').length, coarse).toBeLessThanOrEqual(2);
    }
  });

  it('finds a hidden folder named below **', async () => {
    await file('src/deep/.cache/y.ts');
    await file('src/deep/z.ts');
    expect((await glob('**/.cache/*')).value).toEqual(['src/deep/.cache/y.ts']);
  });

  it('refuses extglobs and braces that expand without end', () => {
    expect(() => compileGlob('+(a|aa)', escapePath)).toThrow(ToolInputError);
    expect(() => compileGlob('src/*(x)', escapePath)).toThrow(/Extglobs such as \+\(a\|b\) are not supported/);
    expect(() => compileGlob('{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}', escapePath)).toThrow(/more than 256 alternatives/);
  });
});

describe('glob with patterns that backtrack', () => {
  it('ends many stars against a long file name', async () => {
    await file(`${'a'.repeat(200)}`);
    await file(`deep/${'a/'.repeat(60)}b.txt`);
    expect((await glob('*a*a*a*a*a*a*a*a*a*a*a*b')).output).toBe('no files match *a*a*a*a*a*a*a*a*a*a*a*b');
    expect((await glob('**/a*/**/a*/**/a*/**/a*/**/c')).output).toBe('no files match **/a*/**/a*/**/a*/**/a*/**/c');
    expect((await glob('*a*a*a*a*a*a')).value).toEqual(['a'.repeat(200)]);
  });

  it('refuses an extglob with a clear error', async () => {
    await file(`${'a'.repeat(60)}b`);
    const result = await glob('+(a|aa)c');
    expect(result).toEqual({ output: 'Extglobs such as +(a|b) are not supported in +(a|aa)c: write alternatives with braces, e.g. *.{ts,tsx}', isError: true });
  });
});
