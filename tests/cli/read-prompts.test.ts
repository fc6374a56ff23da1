import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { splitPrompts, withPipedInput } from '../../src/cli/read-prompts';

/** A standard input that yields `chunks`, as a pipe (or a terminal, with `isTTY`). */
function stdin(chunks: (string | Buffer)[], isTTY = false): NodeJS.ReadStream {
  return Object.assign(Readable.from(chunks), { isTTY }) as unknown as NodeJS.ReadStream;
}

describe('splitPrompts', () => {
  it('joins words with spaces and splits at each lone -', () => {
    expect(splitPrompts(['fix', 'the', 'bug', '-', 'run', 'the', 'tests'])).toEqual(['fix the bug', 'run the tests']);
  });

  it('keeps a single prompt whole', () => {
    expect(splitPrompts(['explain this repo'])).toEqual(['explain this repo']);
  });

  it('drops empty prompts', () => {
    expect(splitPrompts(['-', 'a', '-', '-', 'b', '-'])).toEqual(['a', 'b']);
    expect(splitPrompts(['  ', '-', ''])).toEqual([]);
    expect(splitPrompts([])).toEqual([]);
  });

  it('splits only at a lone -, not at words holding dashes', () => {
    expect(splitPrompts(['use', '--force', 'and', '-n', '-', 'a-b', '--', ' - '])).toEqual(['use --force and -n', 'a-b --  -']);
  });
});

describe('withPipedInput', () => {
  it('appends piped input to the first prompt after a blank line', async () => {
    const prompts = await withPipedInput(['summarise this', 'then shorten it'], stdin(['line one\n', Buffer.from('line two\n\n')]));
    expect(prompts).toEqual(['summarise this\n\nline one\nline two', 'then shorten it']);
  });

  it('makes piped input the whole prompt when none was given', async () => {
    expect(await withPipedInput([], stdin(['  what does this do?\n']))).toEqual(['what does this do?']);
  });

  it('leaves the prompts alone when the pipe is empty or blank', async () => {
    expect(await withPipedInput(['hello'], stdin([]))).toEqual(['hello']);
    expect(await withPipedInput(['hello'], stdin([' \n\n']))).toEqual(['hello']);
  });

  it('decodes UTF-8 split across chunks', async () => {
    const bytes = Buffer.from('café ✓');
    const prompts = await withPipedInput([], stdin([bytes.subarray(0, 4), bytes.subarray(4, 8), bytes.subarray(8)]));
    expect(prompts).toEqual(['café ✓']);
  });

  it('does not read a terminal', async () => {
    let reads = 0;
    const terminal = Object.assign(
      new Readable({
        read() {
          reads++;
          this.push('typed text');
          this.push(null);
        },
      }),
      { isTTY: true },
    ) as unknown as NodeJS.ReadStream;

    expect(await withPipedInput(['hello'], terminal)).toEqual(['hello']);
    expect(reads).toBe(0);
  });
});

describe('withPipedInput on a pipe left open', () => {
  it('says once that it is waiting, and how to end the wait, then reads what comes', async () => {
    const pipe = Object.assign(new PassThrough(), { isTTY: false }) as unknown as NodeJS.ReadStream & PassThrough;
    const notices: string[] = [];
    const reading = withPipedInput(['task'], pipe, { notice: (text) => notices.push(text), noticeAfterMs: 50 });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(notices).toEqual(['fence: waiting for standard input to end (it is not a terminal); close it, or run fence with </dev/null\n']);
    pipe.end('late input\n');
    expect(await reading).toEqual(['task\n\nlate input']);
    expect(notices).toHaveLength(1);
  });

  it('says nothing when input arrives in time', async () => {
    const notices: string[] = [];
    expect(await withPipedInput(['task'], stdin(['quick\n']), { notice: (text) => notices.push(text), noticeAfterMs: 50 })).toEqual(['task\n\nquick']);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(notices).toEqual([]);
  });
});
