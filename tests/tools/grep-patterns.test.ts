import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ToolContext } from '../../src/tools/define-tool';
import { grepTool } from '../../src/tools/grep';
import { lineMatcher, MAIN_THREAD_LINE_CHARS, PatternTooSlowError } from '../../src/tools/grep-match';
import { runsInLinearTime } from '../../src/tools/linear-regexp';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspaceDir = useTempWorkspace();

/** The line `^(a+)+$` backtracks on without end in a backtracking engine. */
const EVIL_LINE = `${'a'.repeat(36)}!`;

async function file(path: string, content: string): Promise<void> {
  const absolute = join(workspaceDir(), path);
  await mkdir(dirname(absolute), { recursive: true });
  await writeFile(absolute, content);
}

function grep(pattern: string, path?: string, ctx: ToolContext = makeToolContext(workspaceDir())) {
  return grepTool.execute(grepTool.parameters.parse({ pattern, path }), ctx);
}

describe('grep with patterns that backtrack', () => {
  it('ends a nested quantifier over a line that defeats it, with the right answer', async () => {
    await file('evil.txt', `${EVIL_LINE}\naaaa\n`);
    const result = await grep('^(a+)+$');
    expect(result.isError).toBeUndefined();
    expect(result.value).toEqual([{ path: 'evil.txt', line: 2, text: 'aaaa' }]);
  });

  it('ends on a line longer than the main thread matches, in the worker', async () => {
    await file('long.txt', `${'a'.repeat(MAIN_THREAD_LINE_CHARS * 2)}!\nb\n`);
    const result = await grep('^(a+)+$|^b$');
    expect(result.value).toEqual([{ path: 'long.txt', line: 2, text: 'b' }]);
  });

  it('still runs lookaround and backreferences, off the main thread', async () => {
    await file('src/a.ts', 'const alpha = 1;\nlet beta = 2;\nconst  delta = 3;\n');
    await file('src/b.txt', 'hello\nhelo\n');
    expect((await grep('(?<=const )\\w+', 'src')).value).toEqual([{ path: 'src/a.ts', line: 1, text: 'const alpha = 1;' }]);
    expect((await grep('(\\w)\\1', 'src')).value).toEqual([{ path: 'src/b.txt', line: 1, text: 'hello' }]);
    expect((await grep('[0-9a-f]{20}', 'src')).output).toBe('no matches for [0-9a-f]{20} in src');
  });

  it('stops a pattern the linear engine cannot run once it takes too long, saying what to do instead', async () => {
    await file('evil.txt', `${EVIL_LINE}\n`);
    const result = await grep('(?=a)(a+)+$');
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/^grep stopped: the pattern \(\?=a\)\(a\+\)\+\$ ran over 3 s on evil\.txt .*grep -P/);
  });

  it('is stopped at once by its signal while the worker backtracks', async () => {
    await file('evil.txt', `${EVIL_LINE}\n`);
    const controller = new AbortController();
    const running = grep('(a)(?!b)(a+)+\\1$', undefined, makeToolContext(workspaceDir(), controller.signal));
    setTimeout(() => controller.abort(new Error('stopped by the test')), 50);
    await expect(running).rejects.toThrow('stopped by the test');
  });
});

describe('lineMatcher', () => {
  it('lets the event loop run during a long file on the main thread, so an abort takes effect', async () => {
    const controller = new AbortController();
    const matcher = lineMatcher(/(a|b)*c/, controller.signal);
    const text = Array.from({ length: 200_000 }, (_, index) => `line ${index} abababababababababab`).join('\n');
    setTimeout(() => controller.abort(new Error('stopped mid-file')), 0);
    await expect(matcher.matchLines(text, 'big.txt')).rejects.toThrow('stopped mid-file');
    await matcher.close();
  });

  it('rejects with PatternTooSlowError past its budget', async () => {
    const matcher = lineMatcher(/(?=a)(a+)+$/, new AbortController().signal, 100);
    await expect(matcher.matchLines(EVIL_LINE, 'evil.txt')).rejects.toBeInstanceOf(PatternTooSlowError);
    // A new worker takes over for the next file.
    expect(await matcher.matchLines('ab\naaa', 'next.txt')).toEqual([1]);
    await matcher.close();
  });
});

describe('runsInLinearTime', () => {
  it('tells the patterns the linear engine can run', () => {
    expect(runsInLinearTime('^(a+)+$')).toBe(true);
    expect(runsInLinearTime('\\d{1,3}\\.\\w+')).toBe(true);
    for (const source of ['(a)\\1', '(?=a)a', '(?!a)b', 'x{40}', '(']) expect(runsInLinearTime(source), source).toBe(false);
  });
});

describe('lookbehind, which newer V8s (Node 22\'s and 24\'s) run in the linear engine and Node 20\'s does not', () => {
  it('is answered on a line that makes it backtrack, whichever engine runs it', async () => {
    await file('evil.txt', `${'b'.repeat(36)}!\nab\ncb\n`);
    const pattern = '^(?<!a)(b+)+$|(?<!a)b$';
    const result = await grep(pattern);
    if (runsInLinearTime(pattern)) {
      expect(result.isError).toBeUndefined();
      expect(result.value).toEqual([{ path: 'evil.txt', line: 3, text: 'cb' }]);
    } else {
      expect(result.isError).toBe(true);
      expect(result.output).toMatch(/^grep stopped: the pattern .* ran over 3 s on evil\.txt /);
    }
  });
});
