import { stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { realPathOf } from '../os-sandbox/policy';
import { workspaceResource } from '../policy/workspace-resource';
import { defineTool, type ToolContext } from './define-tool';
import { walkBoundary } from './file-boundary';
import { compileGlob } from './glob-match';
import { plural } from './text-file';
import { sandboxPlaceholders } from './sandbox-placeholders';
import { ToolInputError } from './tool-error';
import { resolveWorkspacePath } from './workspace-path';

/** Most paths `glob` returns; the rest are counted, not listed. */
export const GLOB_LIMIT = 1000;

/** Folders a search skips unless its pattern or path names them. */
export const SKIPPED_FOLDERS: readonly string[] = ['node_modules', '.git'];

/**
 * The files under `cwd` that `pattern` matches, as `/`-separated paths relative to `cwd`,
 * sorted by code unit. Hidden entries (a name starting with `.`) match only where the pattern
 * spells the dot; folders of `SKIPPED_FOLDERS` are skipped unless a segment of the pattern
 * names them; the paths of `leftOut` (relative to `cwd`, `/`-separated), folders or files,
 * are neither entered nor listed; the symbolic links met on the walk are neither listed nor
 * followed, so a search never loops, and no path outside `cwd` is ever returned. A link on
 * the pattern's fixed leading part (`linked/*`, or `cwd` itself) is where the walk starts,
 * though: the files under it are inside `cwd` as written, not always as real paths. A folder
 * name alone matches nothing (write `src/**`). The pattern is matched in time linear in each
 * path (see `compileGlob`, whose `ToolInputError` for a pattern it refuses this throws).
 * Never checks access.
 */
export async function findFiles(cwd: string, pattern: string, signal?: AbortSignal, leftOut: readonly string[] = []): Promise<string[]> {
  // Loaded on first use: tinyglobby sets up its matcher when loaded, which every session would pay for.
  const { glob: matchFiles, escapePath } = await import('tinyglobby');
  const matcher = compileGlob(pattern, escapePath);
  const segments = pattern.split('/');
  const ignore = SKIPPED_FOLDERS.filter((folder) => !segments.includes(folder))
    .map((folder) => `**/${folder}/**`)
    .concat(leftOut.map((path) => `${escapePath(path)}/**`));
  // tinyglobby walks with coarse patterns its own matcher runs fast; the linear matcher decides.
  const found = await matchFiles(matcher.walk, {
    cwd,
    dot: matcher.dot,
    ignore,
    followSymbolicLinks: false,
    expandDirectories: false,
    onlyFiles: true,
    ...(signal ? { signal } : {}),
  });
  // A pattern can reach `..` in ways a segment check misses (braces, extglobs): keep `cwd`'s own files only.
  return found.filter((path) => !path.startsWith('../') && !isAbsolute(path) && matcher.matches(path)).sort(compareCodeUnits);
}

/**
 * Checks a glob pattern written by the model and returns it in the form `findFiles` takes:
 * trimmed, without a leading `./`. Throws `ToolInputError` for an empty pattern, an absolute
 * one (`/…`, `~/…`) and one with a `..` segment: patterns stay inside the workspace.
 */
export function normaliseGlobPattern(pattern: string): string {
  const written = pattern.trim();
  if (written === '') throw new ToolInputError('The pattern is empty: write a glob such as src/**/*.ts');
  if (isAbsolute(written) || written.startsWith('~')) {
    throw new ToolInputError(`Glob patterns are relative to the workspace: write e.g. src/**/*.ts, not ${written}`);
  }
  const segments = written.split('/');
  if (segments.includes('..')) {
    throw new ToolInputError(`Glob patterns cannot go up with "..": ${written} would leave the workspace`);
  }
  let relative = written;
  while (relative.startsWith('./')) relative = relative.slice(2);
  return relative === '' || relative === '.' ? '**' : relative;
}

/** Compares two strings by UTF-16 code units: the order that never depends on a locale. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * `glob`: lists the workspace's files that match a glob pattern (`src/**\/*.ts`,
 * `*.{md,txt}`), as sorted workspace-relative paths, at most `GLOB_LIMIT` of them (the count
 * of the others is given). Files the caller's rules keep from `glob` or from `read`
 * (`ctx.canAccess`, the resource as `workspaceResource` gives it) are left out and counted; files the session's
 * sandbox denies are left out silently, and its denied folders are not entered (see
 * `walkBoundary`), also when the pattern leads through a link. Folders are never
 * listed, only files. `value` is the array of paths. The call's own `resource` is the pattern.
 * It never reads or writes a file's content.
 */
export const globTool = defineTool({
  name: 'glob',
  description: 'Find the files of the workspace whose path matches a glob pattern.',
  instructions: [
    'In `pattern`, * matches within one folder name, ** any number of folders, {a,b} either word.',
    'You get matching files (not folders), one workspace-relative path per line, sorted; hidden files only when the pattern spells the dot (.github/**).',
    'node_modules/ and .git/ are skipped unless the pattern names them.',
  ].join('\n'),
  example: { pattern: 'src/**/*.test.ts' },
  blockTypes: ['glob'],
  parameters: z.object({
    pattern: z.string().describe('Glob pattern of the files to find, such as *.md, src/** or docs/*.txt'),
  }),
  block: { args: ['pattern'], content: 'pattern' },
  callers: ['direct', 'program'],
  mutating: false,
  returns: 'string[]',
  resource: ({ pattern }) => pattern.trim(),
  async execute({ pattern }, ctx) {
    let relative: string;
    try {
      relative = normaliseGlobPattern(pattern);
    } catch (error) {
      if (error instanceof ToolInputError) return { output: error.message, isError: true };
      throw error;
    }
    const boundary = walkBoundary(ctx, ctx.workspace);
    let walked: string[];
    try {
      walked = await findFiles(ctx.workspace, relative, ctx.signal, boundary?.leftOut);
    } catch (error) {
      if (error instanceof ToolInputError) return { output: error.message, isError: true };
      throw error;
    }
    // What the sandbox denies is left out without a word, as if it were not there (the shell sees no more).
    const found = boundary ? walked.filter((path) => boundary.shows(join(ctx.workspace, path))) : walked;
    const { canAccess } = ctx;
    // Each file passes the caller's rules for glob itself and for read (a name can tell as much as a text).
    const allowed = canAccess
      ? found.filter((path) => {
          const resource = workspaceResource(ctx.workspace, path);
          return canAccess('glob', resource) && canAccess('read', resource);
        })
      : found;
    const refused = found.length - allowed.length;
    const paths = allowed.slice(0, GLOB_LIMIT);
    const details = { pattern: relative, matched: allowed.length, shown: paths.length, refused };
    if (paths.length === 0) {
      return { output: await describeNoMatch(relative, refused, ctx), value: paths, details };
    }
    const notes: string[] = [];
    if (allowed.length > paths.length) {
      notes.push(`… and ${plural(allowed.length - paths.length, 'more file')} not listed: narrow the pattern to see them`);
    }
    if (refused > 0) notes.push(`(${plural(refused, 'matching file')} you may not read left out)`);
    return { output: [...paths, ...notes].join('\n'), value: paths, details };
  },
});

async function describeNoMatch(pattern: string, refused: number, ctx: ToolContext): Promise<string> {
  if (refused > 0) return `no files you may read match ${pattern} (${plural(refused, 'file')} left out)`;
  const { isDynamicPattern } = await import('tinyglobby');
  const named = resolveWorkspacePath(ctx.workspace, pattern);
  // The sandbox's placeholder for a protected path is no folder of the workspace's.
  if (!isDynamicPattern(pattern) && (await isFolder(named)) && !sandboxPlaceholders(ctx.sandboxPolicy)(realPathOf(named))) {
    return `no files match ${pattern}: it is a folder; write ${pattern.replace(/\/+$/, '')}/** for the files in it`;
  }
  return `no files match ${pattern}`;
}

async function isFolder(absolute: string): Promise<boolean> {
  try {
    return (await stat(absolute)).isDirectory();
  } catch {
    return false;
  }
}
