import { mkdir, symlink, truncate, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolContext } from '../../src/tools/define-tool';
import { GREP_FILE_LIMIT_BYTES, GREP_LINE_CHARS, GREP_MATCH_LIMIT, compileGrepPattern, grepTool } from '../../src/tools/grep';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import { renderCall } from '../../src/tools/notation';
import { blockInput } from '../../src/tools/run-tool-use';
import { ToolInputError } from '../../src/tools/tool-error';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspaceDir = useTempWorkspace();

async function file(path: string, content: string | Buffer): Promise<void> {
  const absolute = join(workspaceDir(), path);
  await mkdir(dirname(absolute), { recursive: true });
  await writeFile(absolute, content);
}

function grep(pattern: string, path?: string, ctx: ToolContext = makeToolContext(workspaceDir())) {
  return grepTool.execute(grepTool.parameters.parse({ pattern, path }), ctx);
}

describe('grep', () => {
  it('lists matching lines as path:line: text, files in path order, in output and value', async () => {
    await file('src/b.ts', 'const a = 1;\n// TODO: more\n');
    await file('src/a.ts', '// TODO first\nfine\r\n  // TODO: indented\r\n');
    await file('notes.md', 'nothing to do\n');
    const result = await grep('TODO');
    expect(result.output).toBe(['src/a.ts:1: // TODO first', 'src/a.ts:3:   // TODO: indented', 'src/b.ts:2: // TODO: more'].join('\n'));
    expect(result.value).toEqual([
      { path: 'src/a.ts', line: 1, text: '// TODO first' },
      { path: 'src/a.ts', line: 3, text: '  // TODO: indented' },
      { path: 'src/b.ts', line: 2, text: '// TODO: more' },
    ]);
    expect(result.isError).toBeUndefined();
  });

  it('takes a JavaScript regular expression, spaces included, case-sensitive', async () => {
    await file('a.txt', 'function readTool() {}\nfunction  saveTool () {}\nFunction Other()\n');
    expect((await grep('^function \\w+Tool\\(')).value).toEqual([{ path: 'a.txt', line: 1, text: 'function readTool() {}' }]);
    expect((await grep('[Ff]unction\\s+O')).value).toEqual([{ path: 'a.txt', line: 3, text: 'Function Other()' }]);
  });

  it('searches one file or one folder when given a path', async () => {
    await file('src/app.ts', 'hit\n');
    await file('docs/guide.md', 'hit\n');
    expect((await grep('hit', 'docs')).output).toBe('docs/guide.md:1: hit');
    expect((await grep('hit', 'src/app.ts')).output).toBe('src/app.ts:1: hit');
  });

  it('says when nothing matches, naming where it looked', async () => {
    await file('src/app.ts', 'nothing\n');
    expect(await grep('absent')).toMatchObject({ output: 'no matches for absent in the workspace', value: [] });
    expect(await grep('absent', 'src')).toMatchObject({ output: 'no matches for absent in src', value: [] });
  });

  it('reports a missing path like read does', async () => {
    await file('src/app.ts', 'x\n');
    expect(await grep('x', 'src/ap.ts')).toEqual({ output: 'src/ap.ts does not exist; did you mean src/app.ts?', isError: true });
  });

  it('skips binary files, hidden files, node_modules and .git in a folder', async () => {
    await file('text.txt', 'needle\n');
    await file('image.bin', Buffer.concat([Buffer.from('needle\n'), Buffer.from([0, 1, 2])]));
    await file('.env', 'needle\n');
    await file('node_modules/dep/index.js', 'needle\n');
    await file('.git/config', 'needle\n');
    const result = await grep('needle');
    expect(result.output).toBe('text.txt:1: needle');
    expect(result.details).toMatchObject({ binary: 1, searched: 1 });
  });

  it('searches inside node_modules or a hidden folder when the path names it', async () => {
    await file('node_modules/dep/index.js', 'needle\n');
    await file('.github/ci.yml', 'needle\n');
    expect((await grep('needle', 'node_modules/dep')).output).toBe('node_modules/dep/index.js:1: needle');
    expect((await grep('needle', '.github')).output).toBe('.github/ci.yml:1: needle');
  });

  it('skips files over the size limit and says so', async () => {
    await file('small.log', 'needle\n');
    await file('huge.log', 'needle\n');
    await truncate(join(workspaceDir(), 'huge.log'), GREP_FILE_LIMIT_BYTES + 1);
    const result = await grep('needle');
    expect(result.output).toBe('small.log:1: needle\n(1 file over 2 MB not searched)');
  });

  it('refuses a binary or huge file named on its own', async () => {
    await file('image.bin', Buffer.from([0x89, 0, 1]));
    await file('huge.log', '');
    await truncate(join(workspaceDir(), 'huge.log'), GREP_FILE_LIMIT_BYTES + 1);
    expect(await grep('x', 'image.bin')).toEqual({
      output: 'image.bin is a binary file (3 bytes); grep searches text files only. Inspect it with the shell (e.g. file image.bin)',
      isError: true,
    });
    expect(await grep('x', 'huge.log')).toMatchObject({ isError: true, output: expect.stringMatching(/^huge.log is over 2 MB/) });
  });

  it('caps the matches and says how many more there were', async () => {
    await file('many.txt', 'hit\n'.repeat(GREP_MATCH_LIMIT + 7));
    const result = await grep('hit');
    expect(result.value).toHaveLength(GREP_MATCH_LIMIT);
    const lines = result.output.split('\n');
    expect(lines).toHaveLength(GREP_MATCH_LIMIT + 1);
    expect(lines.at(-2)).toBe(`many.txt:${GREP_MATCH_LIMIT}: hit`);
    expect(lines.at(-1)).toBe('… and 7 more matches not shown: narrow the pattern or the path');
  });

  it('cuts long lines, never inside a surrogate pair', async () => {
    const long = `${'x'.repeat(GREP_LINE_CHARS - 1)}😀tail`;
    await file('long.txt', `${long}\n`);
    const [match] = (await grep('tail')).value as { text: string }[];
    expect(match?.text).toBe(`${'x'.repeat(GREP_LINE_CHARS - 1)}…`);
    await file('long.txt', `${'y'.repeat(GREP_LINE_CHARS + 50)}\n`);
    const [plain] = (await grep('y')).value as { text: string }[];
    expect(plain?.text).toBe(`${'y'.repeat(GREP_LINE_CHARS)}…`);
  });

  it('leaves out files the caller may not read', async () => {
    await file('public/a.txt', 'needle\n');
    await file('secret/b.txt', 'needle\n');
    const asked: string[] = [];
    const ctx: ToolContext = {
      ...makeToolContext(workspaceDir()),
      canAccess: (tool, resource) => {
        asked.push(`${tool} ${resource}`);
        return !resource.startsWith('secret/');
      },
    };
    const result = await grep('needle', undefined, ctx);
    expect(result.output).toBe('public/a.txt:1: needle\n(1 file you may not read left out)');
    expect(asked.sort()).toEqual(['grep public/a.txt', 'grep secret/b.txt', 'read public/a.txt']);
  });

  it('applies the caller’s rules for grep itself to each file, not only those for read', async () => {
    await file('public/a.txt', 'needle\n');
    await file('secret/b.txt', 'needle\n');
    // A rule on grep alone (tool = "grep", resource = "secret/**"): read may, grep may not.
    const ctx: ToolContext = { ...makeToolContext(workspaceDir()), canAccess: (tool, resource) => tool !== 'grep' || !resource.startsWith('secret/') };
    const result = await grep('needle', undefined, ctx);
    expect(result.output).toBe('public/a.txt:1: needle\n(1 file you may not read left out)');
  });

  it('asks about the real path of a file reached through a symbolic link', async () => {
    await file('secret/b.txt', 'needle\n');
    await symlink(join(workspaceDir(), 'secret'), join(workspaceDir(), 'alias'));
    const asked: string[] = [];
    const ctx: ToolContext = {
      ...makeToolContext(workspaceDir()),
      canAccess: (_tool, resource) => {
        asked.push(resource);
        return !resource.startsWith('secret/');
      },
    };
    expect(grepTool.resource?.({ pattern: 'needle', path: 'alias' }, ctx)).toBe('secret');
    expect((await grep('needle', 'alias', ctx)).output).toBe('no matches for needle in alias\n(1 file you may not read left out)');
    expect(asked).toEqual(['secret/b.txt']);
  });

  it('turns an invalid regular expression into a clear error', async () => {
    const result = await grep('foo(');
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/^Invalid regular expression: .*foo\(.*Unterminated group\. The pattern is a JavaScript regular expression/);
  });

  it('refuses an empty pattern and one spanning lines', async () => {
    expect(await grep('')).toMatchObject({ isError: true, output: expect.stringMatching(/^The pattern is empty/) });
    expect(await grep('a\nb')).toEqual({
      output: 'grep searches line by line: write the pattern on one line (join alternatives with |)',
      isError: true,
    });
  });

  it('drops line breaks around a pattern', () => {
    expect(compileGrepPattern('\nTODO\n').source).toBe('TODO');
    expect(() => compileGrepPattern('[')).toThrow(ToolInputError);
  });
});

describe('grep spec', () => {
  it('prompt text and JSON schema', () => {
    const { name, description, instructions, example } = grepTool;
    expect({ name, description, instructions, example, schema: z.toJSONSchema(grepTool.parameters) }).toMatchSnapshot();
  });

  it('has an example block that maps onto valid input', () => {
    const text = renderCall(grepTool, grepTool.example, 'markdown');
    expect(text).toBe('```grep src\nfunction \\w+Tool\\(\n```');
    const [use, ...rest] = parseMarkdownToolUses(text, (tag) => tag === 'grep');
    expect(rest).toEqual([]);
    const input = blockInput(grepTool, use!);
    expect(input).toEqual({ path: 'src', pattern: 'function \\w+Tool\\(' });
    expect(() => compileGrepPattern(grepTool.parameters.parse(input).pattern)).not.toThrow();
  });

  it('is a read-only tool for direct and program callers with a typed value', () => {
    expect(grepTool).toMatchObject({
      name: 'grep',
      blockTypes: ['grep'],
      callers: ['direct', 'program'],
      mutating: false,
      returns: '{ path: string; line: number; text: string }[]',
    });
  });

  it('names the searched path, workspace-relative, as the resource', () => {
    const ctx = makeToolContext('/w');
    expect(grepTool.resource?.({ pattern: 'x', path: 'src/app.ts' }, ctx)).toBe('src/app.ts');
    expect(grepTool.resource?.({ pattern: 'x', path: '/w/src' }, ctx)).toBe('src');
    expect(grepTool.resource?.({ pattern: 'x' }, ctx)).toBe('.');
  });

  it('takes the path from the language tag and the pattern from the body', () => {
    const use = { tool: 'grep', args: ['src'], content: 'TODO: fix (later)', format: 'markdown' as const, start: 0, end: 0 };
    expect(blockInput(grepTool, use)).toEqual({ path: 'src', pattern: 'TODO: fix (later)' });
    expect(blockInput(grepTool, { ...use, args: [] })).toEqual({ pattern: 'TODO: fix (later)' });
  });
});
