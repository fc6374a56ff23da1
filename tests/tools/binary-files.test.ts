import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ToolSpec } from '../../src/tools/define-tool';
import { appendTool } from '../../src/tools/append';
import { grepTool } from '../../src/tools/grep';
import { patchTool } from '../../src/tools/patch';
import { readTool } from '../../src/tools/read';
import { saveTool } from '../../src/tools/save';
import { isBinary } from '../../src/tools/text-file';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspaceDir = useTempWorkspace();

/**
 * The first bytes of an ELF program: NULs among them, as in any executable. (An image's first
 * bytes would make `read` take it for an image: see tests/cli/read-image.test.ts.)
 */
const elf = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00]);

/**
 * Text in UTF-16: every byte is valid UTF-8 (ASCII letters and NULs), so a check for UTF-8
 * alone would let a tool rewrite it as if it were UTF-8 text.
 */
const utf16 = Buffer.from('a = 1\nb = 2\n', 'utf16le');

function run(spec: ToolSpec, input: Record<string, unknown>) {
  return spec.execute(spec.parameters.parse(input), makeToolContext(workspaceDir()));
}

const calls: { tool: ToolSpec; input: (path: string) => Record<string, unknown>; refusal: string }[] = [
  { tool: readTool as ToolSpec, input: (path) => ({ path }), refusal: 'read shows text only' },
  { tool: grepTool as ToolSpec, input: (path) => ({ pattern: 'a', path }), refusal: 'grep searches text files only' },
  { tool: appendTool as ToolSpec, input: (path) => ({ path, content: 'b = 3' }), refusal: 'append adds to text files only' },
  {
    tool: patchTool as ToolSpec,
    input: (path) => ({ path, patch: '<<<<<<< ORIGINAL\na = 1\n=======\na = 5\n>>>>>>> UPDATED' }),
    refusal: 'patch edits text files only',
  },
  { tool: saveTool as ToolSpec, input: (path) => ({ path, content: 'b = 3\n' }), refusal: 'save replaces text files only' },
];

describe.each(calls)('$tool.name on a binary file', ({ tool, input, refusal }) => {
  it.each([
    { name: 'app.bin', bytes: elf },
    { name: 'vars.txt', bytes: utf16 },
  ])('refuses $name in the words every file tool uses, and leaves it as it was', async ({ name, bytes }) => {
    const file = join(workspaceDir(), name);
    await writeFile(file, bytes);
    expect(await run(tool, input(name))).toEqual({
      output: `${name} is a binary file (${bytes.length} bytes); ${refusal}. Inspect it with the shell (e.g. file ${name})`,
      isError: true,
    });
    expect(await readFile(file)).toEqual(bytes);
  });

  it('still works on a text file of the same name', async () => {
    const file = join(workspaceDir(), 'vars.txt');
    await writeFile(file, 'a = 1\n');
    expect((await run(tool, input('vars.txt'))).isError).toBeUndefined();
  });
});

describe('isBinary', () => {
  it('takes a NUL byte in the first 8 KB as the sign of a binary file', () => {
    expect(isBinary(elf)).toBe(true);
    expect(isBinary(Buffer.concat([Buffer.alloc(8191, 0x61), Buffer.from([0])]))).toBe(true);
  });

  it('takes text in any 8-bit encoding as text, and looks no further than 8 KB', () => {
    expect(isBinary(Buffer.from('café\n', 'latin1'))).toBe(false);
    expect(isBinary(Buffer.from(''))).toBe(false);
    expect(isBinary(Buffer.concat([Buffer.alloc(8192, 0x61), Buffer.from([0])]))).toBe(false);
  });
});
