import { describe, expect, it } from 'vitest';
import { CellOutput } from '../../src/processes/cell-output';

const sentinel = `\x1e${'ab12'.repeat(8)}\x1e`;

function capture(chunks: readonly string[], maxBytes = 1 << 20) {
  const streamed: string[] = [];
  const output = new CellOutput({ sentinel, maxBytes, onOutput: (chunk) => streamed.push(chunk) });
  for (const chunk of chunks) output.push(chunk);
  return { done: output.done, ...output.finish(), streamed: streamed.join('') };
}

describe('CellOutput', () => {
  it('ends at the sentinel, wherever the chunks are cut, and never shows a part of it', () => {
    const raw = `hello\nwor\x1eld\n${sentinel}after`;
    for (let cut = 0; cut <= raw.length; cut++) {
      const result = capture([raw.slice(0, cut), raw.slice(cut)]);
      expect(result).toMatchObject({ done: true, output: 'hello\nwor\uFFFDld\n', droppedBytes: 0 });
      expect(result.streamed).toBe('hello\nwor\uFFFDld\n');
    }
  });

  it('keeps held text when the sentinel never comes', () => {
    const result = capture(['partial', sentinel.slice(0, 5)]);
    expect(result.done).toBe(false);
    expect(result.output).toBe('partial\uFFFDab12');
  });

  it('strips escape sequences, resolves overwrites and replaces junk controls', () => {
    const result = capture(['\x1b[31mred\x1b[0m\r\n', 'progress 10%\rprogress 100%\n', 'a\x00b\x7f\n', sentinel]);
    expect(result.output).toBe('red\nprogress 100%\na\uFFFDb\uFFFD\n');
  });

  it('bounds what it keeps, counting the dropped bytes', () => {
    const result = capture([...Array.from({ length: 100 }, (_, i) => `${String(i).padStart(9, '0')}\n`), sentinel], 100);
    expect(result.droppedBytes).toBe(900);
    expect(result.output.startsWith('000000000\n')).toBe(true);
    expect(result.output.endsWith('000000099\n')).toBe(true);
  });
});
