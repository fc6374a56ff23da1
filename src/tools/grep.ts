import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { realPathOf } from '../os-sandbox/policy';
import { workspaceResource } from '../policy/workspace-resource';
import { defineTool, type ToolContext, type ToolResult } from './define-tool';
import { sandboxShownPath, walkBoundary, type WalkBoundary } from './file-boundary';
import { binaryFileRefusal, runOnFile } from './file-errors';
import { compareCodeUnits, findFiles } from './glob';
import { lineMatcher, type LineMatcher } from './grep-match';
import { openAdmitted, type OpenedFile } from './opened-file';
import { sandboxPlaceholders } from './sandbox-placeholders';
import { isBinary, plural } from './text-file';
import { ToolInputError } from './tool-error';
import type { WorkspaceFile } from './workspace-path';

/** Most matching lines `grep` returns; the rest are counted, not listed. */
export const GREP_MATCH_LIMIT = 500;

/** Longest line text a match carries; longer lines are cut and end with `…`. */
export const GREP_LINE_CHARS = 300;

/** Files larger than this are not searched (they are counted). */
export const GREP_FILE_LIMIT_BYTES = 2 * 1024 * 1024;

/** One matching line, as a program receives it. `line` counts from 1. */
export interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

/** What searching a list of files found, before it is written up. */
interface SearchTally {
  matches: GrepMatch[];
  /** Matching lines beyond `GREP_MATCH_LIMIT`. */
  more: number;
  searched: number;
  refused: number;
  binary: number;
  large: number;
}

/**
 * Compiles the pattern of a `grep` call: a JavaScript regular expression source, without
 * flags. Line breaks around it (a block body's) are dropped. Throws `ToolInputError` for an
 * empty pattern, one spanning several lines (the search is line by line) and one that is not
 * a valid regular expression, saying how to write it.
 */
export function compileGrepPattern(pattern: string): RegExp {
  const source = pattern.replace(/^[\r\n]+|[\r\n]+$/g, '');
  if (source === '') {
    throw new ToolInputError('The pattern is empty: write the regular expression to look for, e.g. TODO');
  }
  if (/[\r\n]/.test(source)) {
    throw new ToolInputError('grep searches line by line: write the pattern on one line (join alternatives with |)');
  }
  try {
    return new RegExp(source);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ToolInputError(`${reason}. The pattern is a JavaScript regular expression: escape special characters with a backslash (\\( \\. \\[)`);
  }
}

/**
 * `grep`: searches the text files under a path of the workspace (the whole workspace by
 * default) for lines matching a JavaScript regular expression, and lists them as
 * `path:line: text`, files in path order and lines in file order. Folders are searched like
 * `glob` walks them (hidden entries, `node_modules/` and `.git/` skipped unless the path is
 * inside them, symbolic links not followed); binary files and files over
 * `GREP_FILE_LIMIT_BYTES` are skipped; files the caller's rules keep from `grep` or from
 * `read` (`ctx.canAccess`, the resource as `workspaceResource` gives it) are left out and
 * counted; what the session's sandbox denies is refused when named as `path`, and
 * otherwise left out silently, its folders not entered (see `walkBoundary`). The call's own
 * `resource` is the searched path, given the same way. The sandbox's placeholder for a
 * protected path (see `sandboxPlaceholders`) named as `path` reads as missing. At most `GREP_MATCH_LIMIT` lines are
 * listed and each is cut to `GREP_LINE_CHARS`. `value` holds the same matches as objects. It
 * never writes anything.
 */
export const grepTool = defineTool({
  name: 'grep',
  description: 'Search the text files of the workspace for lines matching a regular expression.',
  instructions: [
    '`pattern` is a JavaScript regular expression on one line (spaces are part of it), case-sensitive: write [Tt]odo for either case; escape ( . [ with a backslash.',
    'You get one `path:line: text` line per match in `path` (a file or folder; leave it out for the whole workspace).',
    `Skips binary files, files over 2 MB, hidden files, node_modules/ and .git/ unless \`path\` is inside them; lines are cut to ${GREP_LINE_CHARS} characters.`,
  ].join('\n'),
  example: { path: 'src', pattern: 'function \\w+Tool\\(' },
  blockTypes: ['grep'],
  parameters: z.object({
    pattern: z.string().describe('JavaScript regular expression to look for in each line, without slashes or flags'),
    path: z.string().optional().describe('File or folder to search; default the whole workspace'),
  }),
  block: { args: ['path'], content: 'pattern' },
  callers: ['direct', 'program'],
  mutating: false,
  returns: '{ path: string; line: number; text: string }[]',
  resource: ({ path }, ctx) => workspaceResource(ctx.workspace, searchPath(path)),
  async execute({ pattern, path }, ctx) {
    let regex: RegExp;
    try {
      regex = compileGrepPattern(pattern);
    } catch (error) {
      if (error instanceof ToolInputError) return { output: error.message, isError: true };
      throw error;
    }
    return runOnFile(ctx, searchPath(path), 'read', async (root) => {
      const info = await stat(root.absolute);
      if (info.isFile()) {
        const refusal = await refuseSingleFile(root, ctx);
        if (refusal !== undefined) return refusal;
        return report(regex, root, await searchFiles(regex, [root], ctx, undefined, true));
      }
      if (!info.isDirectory()) return { output: `${root.shown} is neither a file nor a folder`, isError: true };
      // The sandbox's placeholder for a protected path is no folder of the workspace's.
      if (sandboxPlaceholders(ctx.sandboxPolicy)(realPathOf(root.absolute))) return { output: `${root.shown} does not exist`, isError: true };
      const boundary = walkBoundary(ctx, root.absolute);
      const found = await findFiles(root.absolute, '**', ctx.signal, boundary?.leftOut);
      const files: WorkspaceFile[] = [];
      for (const relative of found) {
        const absolute = join(root.absolute, relative);
        // What the sandbox denies is left out without a word, as if it were not there (the shell sees no more).
        if (boundary && !boundary.shows(absolute)) continue;
        files.push({ absolute, shown: sandboxShownPath(ctx, absolute) });
      }
      return report(regex, root, await searchFiles(regex, files, ctx, boundary));
    });
  },
});

function searchPath(path: string | undefined): string {
  return path === undefined || path.trim() === '' ? '.' : path;
}

/** A file named on its own is refused with a reason when it is too large or binary (judged as it is opened, see `openAdmitted`). */
async function refuseSingleFile(file: WorkspaceFile, ctx: ToolContext): Promise<ToolResult | undefined> {
  const opened = (await openAdmitted(ctx, file, 'read', 'grep')) as OpenedFile;
  try {
    const { size } = await opened.handle.stat();
    if (size > GREP_FILE_LIMIT_BYTES) {
      return { output: `${file.shown} is over 2 MB (${plural(size, 'byte')}); search it with the shell (grep -n)`, isError: true };
    }
    const bytes = await opened.handle.readFile();
    if (isBinary(bytes)) return binaryFileRefusal(file.shown, bytes.length, 'grep searches text files only');
    return undefined;
  } finally {
    await opened.handle.close();
  }
}

/**
 * Searches `files` in path order. The pattern runs where it cannot keep fence busy (see
 * `lineMatcher`); a pattern too slow for one file ends the search with `PatternTooSlowError`.
 */
async function searchFiles(regex: RegExp, files: readonly WorkspaceFile[], ctx: ToolContext, boundary?: WalkBoundary, named = false): Promise<SearchTally> {
  const matcher = lineMatcher(regex, ctx.signal);
  try {
    return await searchEach(matcher, files, ctx, boundary, named);
  } finally {
    await matcher.close();
  }
}

async function searchEach(matcher: LineMatcher, files: readonly WorkspaceFile[], ctx: ToolContext, boundary: WalkBoundary | undefined, named: boolean): Promise<SearchTally> {
  const tally: SearchTally = { matches: [], more: 0, searched: 0, refused: 0, binary: 0, large: 0 };
  const ordered = [...files].sort((a, b) => compareCodeUnits(a.shown, b.shown));
  for (const file of ordered) {
    ctx.signal.throwIfAborted();
    const resource = workspaceResource(ctx.workspace, file.absolute);
    // The caller's rules for grep itself and for read both apply to each file it opens.
    if (ctx.canAccess && !(ctx.canAccess('grep', resource) && ctx.canAccess('read', resource))) {
      tally.refused += 1;
      continue;
    }
    const text = await readSearchable(file, tally, ctx, boundary, named);
    if (text === undefined) continue;
    tally.searched += 1;
    record(file.shown, text, await matcher.matchLines(text, file.shown), tally);
  }
  return tally;
}

/**
 * The file's text, or `undefined` (counted in `tally`) when it is too large, binary or gone,
 * or (silently) when what was opened is not what may be shown: a link the sandbox does not let
 * the search follow, or a file swapped in since the walk. The file is opened first and judged
 * by its real path when that is not the path the walk judged (see `openAdmitted`); a file
 * `named` as the call's path is judged as `read` judges it, a refusal being the call's error.
 */
async function readSearchable(file: WorkspaceFile, tally: SearchTally, ctx: ToolContext, boundary: WalkBoundary | undefined, named: boolean): Promise<string | undefined> {
  let opened: OpenedFile | undefined;
  try {
    opened = await openAdmitted(named ? ctx : {}, file, 'read', 'grep');
    if (opened === undefined) return undefined;
    const real = opened.real;
    if (real !== file.absolute) {
      if (boundary && !boundary.followsLink(real)) return undefined;
      if (ctx.canAccess && !(ctx.canAccess('grep', real) && ctx.canAccess('read', real))) {
        tally.refused += 1;
        return undefined;
      }
    }
    const info = await opened.handle.stat();
    if (!info.isFile()) return undefined;
    if (info.size > GREP_FILE_LIMIT_BYTES) {
      tally.large += 1;
      return undefined;
    }
    const bytes = await opened.handle.readFile({ signal: ctx.signal });
    if (isBinary(bytes)) {
      tally.binary += 1;
      return undefined;
    }
    return bytes.toString('utf8').replace(/^\uFEFF/, '');
  } catch (error) {
    // A file removed or made unreadable while the search runs is passed over, like grep -s.
    if (error instanceof Error && 'code' in error && typeof error.code === 'string') return undefined;
    throw error;
  } finally {
    await opened?.handle.close();
  }
}

/** Adds the lines of `text` at `found` (indices from 0) to the tally, up to `GREP_MATCH_LIMIT`. */
function record(path: string, text: string, found: readonly number[], tally: SearchTally): void {
  if (found.length === 0) return;
  const lines = text.split('\n');
  for (const index of found) {
    if (tally.matches.length >= GREP_MATCH_LIMIT) {
      tally.more += 1;
      continue;
    }
    const raw = lines[index] ?? '';
    tally.matches.push({ path, line: index + 1, text: cutLine(raw.endsWith('\r') ? raw.slice(0, -1) : raw) });
  }
}

function report(regex: RegExp, root: WorkspaceFile, tally: SearchTally): ToolResult {
  const { matches, more, searched, refused, binary, large } = tally;
  const details = { pattern: regex.source, path: root.shown, searched, matches: matches.length + more, refused, binary, large };
  const notes: string[] = [];
  if (more > 0) notes.push(`… and ${plural(more, 'more match', 'more matches')} not shown: narrow the pattern or the path`);
  if (large > 0) notes.push(`(${plural(large, 'file')} over 2 MB not searched)`);
  if (refused > 0) notes.push(`(${plural(refused, 'file')} you may not read left out)`);
  if (matches.length === 0) {
    const where = root.shown === '.' ? 'the workspace' : root.shown;
    return { output: [`no matches for ${regex.source} in ${where}`, ...notes].join('\n'), value: matches, details };
  }
  const lines = matches.map((match) => `${match.path}:${match.line}: ${match.text}`);
  return { output: [...lines, ...notes].join('\n'), value: matches, details };
}

function cutLine(line: string): string {
  if (line.length <= GREP_LINE_CHARS) return line;
  const code = line.charCodeAt(GREP_LINE_CHARS - 1);
  // Never cut between the two halves of a surrogate pair.
  const end = code >= 0xd800 && code <= 0xdbff ? GREP_LINE_CHARS - 1 : GREP_LINE_CHARS;
  return `${line.slice(0, end)}…`;
}
