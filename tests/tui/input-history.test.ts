import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InputHistory } from '../../src/tui/input-history';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'fence-history-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('InputHistory', () => {
  it('starts empty when the file is missing, and creates the file and its folder on the first add', () => {
    const path = join(dir, 'nested', 'deeper', 'history');
    const history = InputHistory.load(path);
    expect(history.entries).toEqual([]);
    history.add('hello');
    expect(history.entries).toEqual(['hello']);
    expect(readFileSync(path, 'utf8')).toBe('"hello"\n');
  });

  it('keeps entries across loads of the same file, multi-line ones whole', () => {
    const path = join(dir, 'history');
    const first = InputHistory.load(path);
    first.add('fix the bug');
    first.add('line one\nline two\n  indented "quoted" \\ backslash');
    first.add('last');
    const second = InputHistory.load(path);
    expect(second.entries).toEqual(['fix the bug', 'line one\nline two\n  indented "quoted" \\ backslash', 'last']);
    expect(readFileSync(path, 'utf8').split('\n')).toHaveLength(4); // three lines and the final newline
  });

  it('ignores blank entries and a repeat of the newest', () => {
    const path = join(dir, 'history');
    const history = InputHistory.load(path);
    history.add('');
    history.add('   \n\t');
    history.add('a');
    history.add('a');
    history.add('b');
    history.add('a');
    expect(history.entries).toEqual(['a', 'b', 'a']);
    expect(InputHistory.load(path).entries).toEqual(['a', 'b', 'a']);
  });

  it('skips torn and non-JSON lines on load, and keeps a new entry apart from a torn last line', () => {
    const path = join(dir, 'history');
    writeFileSync(path, '"one"\nnot json\n{"a":1}\n42\n\n"two"\n"thr');
    const history = InputHistory.load(path);
    expect(history.entries).toEqual(['one', 'two']);
    history.add('three');
    expect(InputHistory.load(path).entries).toEqual(['one', 'two', 'three']);
  });

  it('keeps the newest max entries in memory', () => {
    const path = join(dir, 'history');
    const history = InputHistory.load(path, { max: 3 });
    for (const e of ['1', '2', '3', '4', '5']) history.add(e);
    expect(history.entries).toEqual(['3', '4', '5']);
    expect(InputHistory.load(path, { max: 3 }).entries).toEqual(['3', '4', '5']);
  });

  it('rewrites the file with the newest max entries once it passes twice max lines', () => {
    const path = join(dir, 'history');
    const history = InputHistory.load(path, { max: 3 });
    for (let i = 1; i <= 6; i++) history.add(`e${i}`);
    expect(readFileSync(path, 'utf8').trim().split('\n')).toHaveLength(6);
    history.add('e7');
    expect(readFileSync(path, 'utf8')).toBe('"e5"\n"e6"\n"e7"\n');
  });

  it('keeps entries another process appended when it rewrites the file', () => {
    const path = join(dir, 'history');
    const mine = InputHistory.load(path, { max: 3 });
    for (const e of ['a', 'b', 'c', 'd', 'e', 'f']) mine.add(e);
    appendFileSync(path, '"from another process"\n');
    mine.add('g'); // past 2 × max lines as this process counts them: rewritten from the file as it is now
    expect(readFileSync(path, 'utf8')).toBe('"f"\n"from another process"\n"g"\n');
    expect(InputHistory.load(path).entries).toEqual(['f', 'from another process', 'g']);
  });

  it('never throws: an unreadable path loads empty and a failed write is ignored', () => {
    const blocker = join(dir, 'file');
    writeFileSync(blocker, 'not a folder');
    const history = InputHistory.load(join(blocker, 'history'));
    expect(history.entries).toEqual([]);
    expect(() => history.add('still kept in memory')).not.toThrow();
    expect(history.entries).toEqual(['still kept in memory']);
    expect(InputHistory.load(dir).entries).toEqual([]); // a folder, not a file
  });
});
