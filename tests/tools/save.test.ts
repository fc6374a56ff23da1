import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { saveTool } from '../../src/tools/save';
import { makeTempWorkspace, makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspaceDir = useTempWorkspace();

function save(input: unknown) {
  return saveTool.execute(saveTool.parameters.parse(input), makeToolContext(workspaceDir()));
}

describe('save', () => {
  it('creates a file in folders that do not exist yet, ending it with a line break', async () => {
    const result = await save({ path: 'notes/deep/a.md', content: '# A\nbody' });
    expect(result).toMatchObject({ output: 'Created notes/deep/a.md (2 lines, 9 bytes)' });
    expect(result.isError).toBeUndefined();
    expect(await readFile(join(workspaceDir(), 'notes/deep/a.md'), 'utf8')).toBe('# A\nbody\n');
  });

  it('replaces an existing file entirely', async () => {
    await writeFile(join(workspaceDir(), 'a.txt'), 'old\nold\nold\n');
    const result = await save({ path: 'a.txt', content: 'new\n' });
    expect(result.output).toBe('Saved a.txt (1 line, 4 bytes)');
    expect(await readFile(join(workspaceDir(), 'a.txt'), 'utf8')).toBe('new\n');
  });

  it('writes an empty file for empty content', async () => {
    expect((await save({ path: 'pkg/__init__.py', content: '' })).output).toBe('Created pkg/__init__.py (0 lines, 0 bytes)');
    expect(await readFile(join(workspaceDir(), 'pkg/__init__.py'), 'utf8')).toBe('');
  });

  it('keeps the CRLF line breaks of the file it replaces', async () => {
    await writeFile(join(workspaceDir(), 'win.txt'), 'a\r\nb\r\n');
    await save({ path: 'win.txt', content: 'x\ny' });
    expect(await readFile(join(workspaceDir(), 'win.txt'), 'utf8')).toBe('x\r\ny\r\n');
  });

  it('says so and writes nothing when the content is already there', async () => {
    const file = join(workspaceDir(), 'same.txt');
    await writeFile(file, 'same\n');
    const result = await save({ path: 'same.txt', content: 'same' });
    expect(result.output).toBe('same.txt already has this content (1 line, 5 bytes)');
  });

  it('accepts absolute paths and names them absolutely when outside the workspace', async () => {
    const outside = await makeTempWorkspace();
    try {
      const result = await save({ path: join(outside, 'x.txt'), content: 'x' });
      expect(result.output).toBe(`Created ${join(outside, 'x.txt')} (1 line, 2 bytes)`);
      expect(await readFile(join(outside, 'x.txt'), 'utf8')).toBe('x\n');
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('returns an error result when a folder is in the way', async () => {
    await mkdir(join(workspaceDir(), 'taken'));
    expect(await save({ path: 'taken', content: 'x' })).toEqual({ output: 'taken is a folder, not a file', isError: true });
    await writeFile(join(workspaceDir(), 'file'), 'x');
    expect(await save({ path: 'file/inner.txt', content: 'x' })).toEqual({
      output: 'A part of file/inner.txt is a file where a folder is needed',
      isError: true,
    });
  });

  it('writes nothing once the signal is aborted, leaving the abort to the caller', async () => {
    const controller = new AbortController();
    controller.abort();
    const input = saveTool.parameters.parse({ path: 'late.txt', content: 'x' });
    await expect(saveTool.execute(input, makeToolContext(workspaceDir(), controller.signal))).rejects.toThrow(/abort/i);
    await expect(readFile(join(workspaceDir(), 'late.txt'))).rejects.toThrow(/ENOENT/);
  });

  it('returns an error result for an empty path', async () => {
    expect(await save({ path: ' ', content: 'x' })).toMatchObject({ isError: true, output: expect.stringMatching(/path is empty/) });
  });

  it('maps a markdown block: path from the args, content from the body', () => {
    expect(saveTool.block).toEqual({ args: ['path'], content: 'content' });
    expect(saveTool.blockTypes).toEqual(['save']);
    expect(saveTool).toMatchObject({ mutating: true, callers: ['direct'] });
  });
});
