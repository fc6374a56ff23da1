import { mkdir, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { READ_LIMIT_BYTES, readTool } from '../../src/tools/read';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspaceDir = useTempWorkspace();

function read(path: string) {
  return readTool.execute(readTool.parameters.parse({ path }), makeToolContext(workspaceDir()));
}

describe('read', () => {
  it('returns the exact text as output and value', async () => {
    const text = 'line one\n\ttabbed  \r\nlast without break';
    await writeFile(join(workspaceDir(), 'a.txt'), text);
    const result = await read('a.txt');
    expect(result).toMatchObject({ output: text, value: text, details: { path: 'a.txt', lines: 3 } });
    expect(result.isError).toBeUndefined();
  });

  it('drops a leading byte-order mark', async () => {
    await writeFile(join(workspaceDir(), 'bom.txt'), '\uFEFFhello\n');
    expect((await read('bom.txt')).value).toBe('hello\n');
  });

  it('says when a file is empty, with an empty value', async () => {
    await writeFile(join(workspaceDir(), 'empty.txt'), '');
    expect(await read('empty.txt')).toMatchObject({ output: 'empty.txt is empty', value: '' });
  });

  it('reports a missing file with similarly named files', async () => {
    await mkdir(join(workspaceDir(), 'src'));
    await writeFile(join(workspaceDir(), 'src/app.ts'), '');
    await writeFile(join(workspaceDir(), 'src/App.tsx'), '');
    await writeFile(join(workspaceDir(), 'src/unrelated.md'), '');
    expect(await read('src/app.js')).toEqual({ output: 'src/app.js does not exist; did you mean src/App.tsx or src/app.ts?', isError: true });
    expect(await read('src/apps.ts')).toEqual({ output: 'src/apps.ts does not exist; did you mean src/app.ts?', isError: true });
  });

  it('reports a missing file and a missing folder', async () => {
    expect(await read('nothing.txt')).toEqual({ output: 'nothing.txt does not exist', isError: true });
    expect(await read('no/such/file.txt')).toEqual({ output: 'no/such/file.txt does not exist (nor does the folder no/such)', isError: true });
  });

  it('refuses a binary file, giving its size', async () => {
    await writeFile(join(workspaceDir(), 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    expect(await read('logo.png')).toEqual({
      output: 'logo.png is a binary file (6 bytes); read shows text only. Inspect it with the shell (e.g. file logo.png)',
      isError: true,
    });
  });

  it('refuses a file over the size limit', async () => {
    const file = join(workspaceDir(), 'huge.log');
    await writeFile(file, '');
    await truncate(file, READ_LIMIT_BYTES + 1);
    expect(await read('huge.log')).toMatchObject({ isError: true, output: expect.stringMatching(/^huge.log is too large to read whole/) });
  });

  it('lists a folder, folders first marked with a slash', async () => {
    await mkdir(join(workspaceDir(), 'docs/guides'), { recursive: true });
    await writeFile(join(workspaceDir(), 'docs/b.md'), '');
    await writeFile(join(workspaceDir(), 'docs/a.md'), '');
    expect(await read('docs')).toMatchObject({
      output: 'docs/ is a folder with 3 entries:\na.md\nb.md\nguides/',
      value: ['a.md', 'b.md', 'guides/'],
    });
    expect(await read('docs/guides')).toMatchObject({ output: 'docs/guides/ is an empty folder', value: [] });
  });

  it('resolves .. and absolute paths', async () => {
    await mkdir(join(workspaceDir(), 'sub'));
    await writeFile(join(workspaceDir(), 'top.txt'), 'top\n');
    expect((await readTool.execute({ path: '../top.txt' }, makeToolContext(join(workspaceDir(), 'sub')))).value).toBe('top\n');
    expect((await read(join(workspaceDir(), 'top.txt'))).value).toBe('top\n');
  });

  it('returns an error result for an empty path', async () => {
    expect(await read('')).toEqual({ output: 'The path is empty: write the file path, e.g. src/app.ts', isError: true });
  });

  it('is a read-only tool that programs may call, taking the path from the args or the body', () => {
    expect(readTool).toMatchObject({
      mutating: false,
      callers: ['direct', 'program'],
      blockTypes: ['read'],
      block: { args: ['path'], content: 'path' },
    });
  });
});
