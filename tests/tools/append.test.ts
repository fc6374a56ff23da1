import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appendTool } from '../../src/tools/append';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspaceDir = useTempWorkspace();

function append(input: unknown) {
  return appendTool.execute(appendTool.parameters.parse(input), makeToolContext(workspaceDir()));
}

const contentOf = (name: string) => readFile(join(workspaceDir(), name), 'utf8');

describe('append', () => {
  it('creates a missing file and its folders', async () => {
    const result = await append({ path: 'logs/today.md', content: '- one' });
    expect(result.output).toBe('Created logs/today.md (1 line, 6 bytes)');
    expect(await contentOf('logs/today.md')).toBe('- one\n');
  });

  it('adds lines after an existing file that ends with a line break', async () => {
    await writeFile(join(workspaceDir(), 'a.md'), 'first\n');
    const result = await append({ path: 'a.md', content: 'second\nthird' });
    expect(result.output).toBe('Appended 2 lines to a.md (now 3 lines, 19 bytes)');
    expect(await contentOf('a.md')).toBe('first\nsecond\nthird\n');
  });

  it('starts on a new line when the file lacks a final line break', async () => {
    await writeFile(join(workspaceDir(), 'a.md'), 'first');
    const result = await append({ path: 'a.md', content: 'second\n' });
    expect(result.output).toBe('Appended 1 line to a.md (now 2 lines, 13 bytes)');
    expect(await contentOf('a.md')).toBe('first\nsecond\n');
  });

  it('appends to an empty file without a blank first line', async () => {
    await writeFile(join(workspaceDir(), 'empty.md'), '');
    await append({ path: 'empty.md', content: 'x' });
    expect(await contentOf('empty.md')).toBe('x\n');
  });

  it("uses the file's CRLF line breaks", async () => {
    await writeFile(join(workspaceDir(), 'win.txt'), 'a\r\nb');
    await append({ path: 'win.txt', content: 'c\nd' });
    expect(await contentOf('win.txt')).toBe('a\r\nb\r\nc\r\nd\r\n');
  });

  it('never rewrites existing bytes, even when they are not UTF-8', async () => {
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]);
    await writeFile(join(workspaceDir(), 'old.txt'), latin1);
    await append({ path: 'old.txt', content: 'ok' });
    expect(await readFile(join(workspaceDir(), 'old.txt'))).toEqual(Buffer.concat([latin1, Buffer.from('ok\n')]));
  });

  it('returns an error result for empty content and leaves the file alone', async () => {
    await writeFile(join(workspaceDir(), 'a.md'), 'first');
    expect(await append({ path: 'a.md', content: '' })).toEqual({ output: 'Nothing to append to a.md: the content is empty', isError: true });
    expect(await contentOf('a.md')).toBe('first');
  });

  it('is a mutating tool for direct use, mapped like save', () => {
    expect(appendTool).toMatchObject({ mutating: true, callers: ['direct'], blockTypes: ['append'], block: { args: ['path'], content: 'content' } });
  });
});
