import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import { renderCall } from '../../src/tools/notation';
import { blockInput } from '../../src/tools/run-tool-use';
import { GLOB_LIMIT, findFiles, globTool, normaliseGlobPattern } from '../../src/tools/glob';
import type { ToolContext } from '../../src/tools/define-tool';
import { makeTempWorkspace, makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspaceDir = useTempWorkspace();

async function files(...paths: string[]): Promise<void> {
  for (const path of paths) {
    const absolute = join(workspaceDir(), path);
    await mkdir(dirname(absolute), { recursive: true });
    await writeFile(absolute, `content of ${path}\n`);
  }
}

function glob(pattern: string, ctx: ToolContext = makeToolContext(workspaceDir())) {
  return globTool.execute(globTool.parameters.parse({ pattern }), ctx);
}

describe('glob', () => {
  it('lists matching files as sorted workspace-relative paths, in output and value', async () => {
    await files('src/b.ts', 'src/a.ts', 'src/deep/c.ts', 'src/deep/readme.md', 'top.ts', 'src/Z.ts');
    const result = await glob('src/**/*.ts');
    expect(result.value).toEqual(['src/Z.ts', 'src/a.ts', 'src/b.ts', 'src/deep/c.ts']);
    expect(result.output).toBe('src/Z.ts\nsrc/a.ts\nsrc/b.ts\nsrc/deep/c.ts');
    expect(result.isError).toBeUndefined();
  });

  it('matches within one folder with * and across folders with **, with braces', async () => {
    await files('a.md', 'b.txt', 'c.ts', 'docs/d.md');
    expect((await glob('*.{md,txt}')).value).toEqual(['a.md', 'b.txt']);
    expect((await glob('**/*.md')).value).toEqual(['a.md', 'docs/d.md']);
    expect((await glob('./docs/*.md')).value).toEqual(['docs/d.md']);
  });

  it('lists only files, never folders', async () => {
    await files('src/app.ts', 'src/lib/util.ts');
    expect((await glob('src/*')).value).toEqual(['src/app.ts']);
  });

  it('says when nothing matches, with an empty value', async () => {
    await files('a.md');
    expect(await glob('**/*.rs')).toMatchObject({ output: 'no files match **/*.rs', value: [] });
  });

  it('hints at ** when the pattern names a folder', async () => {
    await files('src/app.ts');
    const result = await glob('src');
    expect(result.output).toBe('no files match src: it is a folder; write src/** for the files in it');
    expect(result.value).toEqual([]);
  });

  it('skips hidden files unless the pattern spells the dot', async () => {
    await files('.env', '.github/ci.yml', 'visible.yml');
    expect((await glob('**/*')).value).toEqual(['visible.yml']);
    expect((await glob('.github/*.yml')).value).toEqual(['.github/ci.yml']);
    expect((await glob('.env')).value).toEqual(['.env']);
  });

  it('skips node_modules and .git unless the pattern names them', async () => {
    await files('index.js', 'node_modules/dep/index.js', 'pkg/node_modules/x/index.js', '.git/hooks/pre.js');
    expect((await glob('**/*.js')).value).toEqual(['index.js']);
    expect((await glob('.*/**/*.js')).value).toEqual([]);
    expect((await glob('node_modules/**/*.js')).value).toEqual(['node_modules/dep/index.js']);
    expect((await glob('.git/**')).value).toEqual(['.git/hooks/pre.js']);
  });

  it('does not follow symbolic links, out of the workspace or round in a loop', async () => {
    const outside = await makeTempWorkspace('fence-glob-outside-');
    try {
      await writeFile(join(outside, 'secret.ts'), 'x');
      await files('src/a.ts');
      await symlink(outside, join(workspaceDir(), 'src/linked'));
      await symlink(workspaceDir(), join(workspaceDir(), 'src/loop'));
      expect((await glob('**/*.ts')).value).toEqual(['src/a.ts']);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('caps the list and says how many more matched', async () => {
    const names = Array.from({ length: GLOB_LIMIT + 3 }, (_, i) => `f/${String(i).padStart(4, '0')}.txt`);
    await files(...names);
    const result = await glob('f/*.txt');
    expect(result.value).toHaveLength(GLOB_LIMIT);
    expect((result.value as string[])[0]).toBe('f/0000.txt');
    const lines = result.output.split('\n');
    expect(lines).toHaveLength(GLOB_LIMIT + 1);
    expect(lines.at(-1)).toBe('… and 3 more files not listed: narrow the pattern to see them');
  });

  it('leaves out the files the caller may not read, asking with their workspace-relative path', async () => {
    await files('public/a.txt', 'secret/b.txt', 'public/c.txt');
    const asked: [string, string][] = [];
    const ctx: ToolContext = {
      ...makeToolContext(workspaceDir()),
      canAccess: (tool, resource) => {
        asked.push([tool, resource]);
        return !resource.startsWith('secret/');
      },
    };
    const result = await glob('**/*.txt', ctx);
    expect(result.value).toEqual(['public/a.txt', 'public/c.txt']);
    expect(result.output).toBe('public/a.txt\npublic/c.txt\n(1 matching file you may not read left out)');
    expect(asked).toContainEqual(['glob', 'secret/b.txt']);
    expect(asked).toContainEqual(['read', 'public/a.txt']);
    expect(asked.every(([tool]) => tool === 'read' || tool === 'glob')).toBe(true);
  });

  it('applies the caller’s rules for glob itself to each file, not only those for read', async () => {
    await files('public/a.txt', 'secret/k.txt');
    const ctx: ToolContext = { ...makeToolContext(workspaceDir()), canAccess: (tool, resource) => tool !== 'glob' || !resource.startsWith('secret/') };
    const result = await glob('**/k.txt', ctx);
    expect(result.value).toEqual([]);
  });

  it('says so when every match is refused', async () => {
    await files('secret/b.txt');
    const ctx: ToolContext = { ...makeToolContext(workspaceDir()), canAccess: () => false };
    expect(await glob('**/*.txt', ctx)).toMatchObject({ output: 'no files you may read match **/*.txt (1 file left out)', value: [] });
  });

  it.each([
    ['/etc/*', 'Glob patterns are relative to the workspace: write e.g. src/**/*.ts, not /etc/*'],
    ['~/notes/*', 'Glob patterns are relative to the workspace: write e.g. src/**/*.ts, not ~/notes/*'],
    ['../other/**', 'Glob patterns cannot go up with "..": ../other/** would leave the workspace'],
    ['src/../../x', 'Glob patterns cannot go up with "..": src/../../x would leave the workspace'],
    ['  ', 'The pattern is empty: write a glob such as src/**/*.ts'],
  ])('refuses the pattern %j with a clear error', async (pattern, message) => {
    expect(await glob(pattern)).toEqual({ output: message, isError: true });
  });

  it('never returns a file outside the folder it searches, however the pattern reaches up', async () => {
    const outside = await makeTempWorkspace('fence-glob-outside-');
    try {
      await writeFile(join(outside, 'secret.txt'), 'x');
      await files('src/a.txt');
      expect(await findFiles(join(workspaceDir(), 'src'), `../../${basename(outside)}/*`)).toEqual([]);
      expect(await findFiles(workspaceDir(), `src/../../${basename(outside)}/*`)).toEqual([]);
      expect((await findFiles(workspaceDir(), '{..,src}/*')).filter((path) => path.startsWith('..'))).toEqual([]);
      expect(await findFiles(workspaceDir(), 'src/*')).toEqual(['src/a.txt']);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('normalises a pattern: trimmed, without ./, the workspace itself as **', () => {
    expect(normaliseGlobPattern('  ./src/*.ts ')).toBe('src/*.ts');
    expect(normaliseGlobPattern('./')).toBe('**');
    expect(normaliseGlobPattern('a..b/*.ts')).toBe('a..b/*.ts');
  });
});

describe('glob spec', () => {
  it('prompt text and JSON schema', () => {
    const { name, description, instructions, example } = globTool;
    expect({ name, description, instructions, example, schema: z.toJSONSchema(globTool.parameters) }).toMatchSnapshot();
  });

  it('is a read-only tool for direct and program callers, returning string[]', () => {
    expect(globTool).toMatchObject({ name: 'glob', blockTypes: ['glob'], callers: ['direct', 'program'], mutating: false, returns: 'string[]' });
  });

  it('names the pattern as the resource it touches', () => {
    expect(globTool.resource?.({ pattern: ' src/**/*.ts ' }, makeToolContext('/w'))).toBe('src/**/*.ts');
  });

  it('takes the pattern from the language tag or from the body', () => {
    const use = { tool: 'glob', args: ['src/**/*.ts'], content: '', format: 'markdown' as const, start: 0, end: 0 };
    expect(blockInput(globTool, use)).toEqual({ pattern: 'src/**/*.ts' });
    expect(blockInput(globTool, { ...use, args: [], content: '*.md\n' })).toEqual({ pattern: '*.md' });
  });

  it('has an example that, written as a block, maps back onto the same valid input', () => {
    const text = renderCall(globTool, globTool.example, 'markdown');
    expect(text).toBe('```glob src/**/*.test.ts\n```');
    const [use, ...rest] = parseMarkdownToolUses(text, (tag) => tag === 'glob');
    expect(rest).toEqual([]);
    expect(globTool.parameters.parse(blockInput(globTool, use!))).toEqual({ pattern: 'src/**/*.test.ts' });
  });
});
