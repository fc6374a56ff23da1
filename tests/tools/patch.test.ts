import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { patchTool } from '../../src/tools/patch';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspaceDir = useTempWorkspace();

function patch(path: string, text: string) {
  return patchTool.execute(patchTool.parameters.parse({ path, patch: text }), makeToolContext(workspaceDir()));
}

function hunk(original: string[], updated: string[]): string {
  return ['<<<<<<< ORIGINAL', ...original, '=======', ...updated, '>>>>>>> UPDATED'].join('\n');
}

const app = ['import os', '', 'def foo():', '    return 1', '', 'def bar():', '    return 2', ''].join('\n');
const write = (name: string, text: string | Buffer) => writeFile(join(workspaceDir(), name), text);
const contentOf = (name: string) => readFile(join(workspaceDir(), name), 'utf8');

describe('patch', () => {
  it('applies one hunk and reports the changed lines', async () => {
    await write('app.py', app);
    const result = await patch('app.py', hunk(['def foo():', '    return 1'], ['def foo():', '    return 10', '    # done']));
    expect(result.output).toBe('Patched app.py: 1 hunk applied\n@@ -3,2 +3,3 @@');
    expect(result.isError).toBeUndefined();
    expect(await contentOf('app.py')).toBe(app.replace('    return 1\n', '    return 10\n    # done\n'));
  });

  it('applies several hunks', async () => {
    await write('app.py', app);
    const result = await patch('app.py', `${hunk(['    return 2'], ['    return 20'])}\n\n${hunk(['import os'], ['import sys'])}\n`);
    expect(result.output).toBe('Patched app.py: 2 hunks applied\n@@ -1,1 +1,1 @@\n@@ -7,1 +7,1 @@');
    expect(await contentOf('app.py')).toBe(app.replace('import os', 'import sys').replace('return 2', 'return 20'));
  });

  it('reports a hunk that is not found, leaving the file alone', async () => {
    await write('app.py', app);
    expect(await patch('app.py', hunk(['x = 1'], ['x = 2']))).toEqual({
      output: 'hunk 1 ("x = 1") not found in app.py; read the file and copy the lines exactly',
      isError: true,
    });
    expect(await contentOf('app.py')).toBe(app);
  });

  it('reports an ambiguous hunk', async () => {
    await write('app.py', app);
    const result = await patch('app.py', `${hunk(['import os'], ['import sys'])}\n${hunk([''], ['# blank'])}`);
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/^hunk 2 matches 3 places in app.py \(lines 2, 5, 8\)|^hunk 2 matches 2 places in app.py \(lines 2, 5\)/);
    expect(await contentOf('app.py')).toBe(app);
  });

  it('writes nothing when a later hunk fails', async () => {
    await write('app.py', app);
    const result = await patch('app.py', `${hunk(['import os'], ['import sys'])}\n${hunk(['def baz():'], ['def qux():'])}`);
    expect(result).toMatchObject({ isError: true, output: expect.stringMatching(/^hunk 2 \("def baz\(\):"\) not found in app.py/) });
    expect(await contentOf('app.py')).toBe(app);
  });

  it('hints when only indentation differs', async () => {
    await write('app.py', app);
    const result = await patch('app.py', hunk(['def foo():', '  return 1'], ['x']));
    expect(result.output).toMatch(/not found in app.py; it matches at line 3 if indentation is ignored/);
  });

  it('keeps CRLF line breaks and a byte-order mark', async () => {
    await write('win.txt', '\uFEFFone\r\ntwo\r\nthree\r\n');
    const result = await patch('win.txt', hunk(['one', 'two'], ['ONE', 'TWO', 'TWO AND A HALF']));
    expect(result.isError).toBeUndefined();
    expect(await contentOf('win.txt')).toBe('\uFEFFONE\r\nTWO\r\nTWO AND A HALF\r\nthree\r\n');
  });

  it('shows the expected form for a malformed patch', async () => {
    await write('app.py', app);
    const result = await patch('app.py', 'def foo():\n    return 1');
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/^Malformed patch: line 1 \("def foo\(\):"\) is outside any hunk/);
    expect(result.output).toContain('>>>>>>> UPDATED');
    expect(await contentOf('app.py')).toBe(app);
  });

  it('edits a file whose text holds a ======= line when only one split fits', async () => {
    await write('README.md', 'Title\n=======\n\nText\n');
    const result = await patch('README.md', hunk(['Title', '======='], ['Fence', '=======']));
    expect(result.isError).toBeUndefined();
    expect(await contentOf('README.md')).toBe('Fence\n=======\n\nText\n');
  });

  it('creates a missing file from a single hunk with an empty ORIGINAL', async () => {
    const result = await patch('new/file.txt', hunk([], ['hello']));
    expect(result.output).toBe('Created new/file.txt: 1 hunk applied\n@@ -0,0 +1,1 @@');
    expect(await contentOf('new/file.txt')).toBe('hello\n');
  });

  it('refuses an empty ORIGINAL on a file with content', async () => {
    await write('app.py', app);
    const result = await patch('app.py', hunk([], ['x']));
    expect(result.output).toMatch(/^hunk 1 has an empty ORIGINAL, which only works on an empty or missing file/);
  });

  it('reports a missing file with similar names and points to save', async () => {
    await write('app.py', app);
    expect(await patch('App.py', hunk(['import os'], ['import sys']))).toEqual({
      output: 'App.py does not exist; did you mean app.py? (to create a new file, use save)',
      isError: true,
    });
  });

  it('refuses files that are not UTF-8', async () => {
    await write('old.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    expect(await patch('old.txt', hunk(['x'], ['y']))).toEqual({
      output: 'old.txt is not valid UTF-8 text; patch cannot edit it safely',
      isError: true,
    });
  });

  it('says when the patch changes nothing', async () => {
    await write('app.py', app);
    const result = await patch('app.py', hunk(['import os'], ['import os']));
    expect(result.output).toBe('app.py unchanged: the UPDATED lines of 1 hunk equal their ORIGINAL');
  });

  it('is a mutating tool for direct use whose block body is the patch', () => {
    expect(patchTool).toMatchObject({ mutating: true, callers: ['direct'], blockTypes: ['patch'], block: { args: ['path'], content: 'patch' } });
  });
});
