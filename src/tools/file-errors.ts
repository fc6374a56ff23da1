import { readdir } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import type { ToolContext, ToolResult } from './define-tool';
import { boundaryRefusal, inSandboxView, sandboxShownPath, type FileUse } from './file-boundary';
import { sandboxPlaceholders } from './sandbox-placeholders';
import { plural } from './text-file';
import { ToolInputError } from './tool-error';
import { displayPath, locateFile, type WorkspaceFile } from './workspace-path';

/**
 * Runs a file tool's body on the file `path` names, once the session's sandbox allows the tool
 * to `use` it (see `boundaryRefusal`: a refusal is the error result, and the body never runs),
 * turning the failures the model can act on into error results: a `ToolInputError` (bad path,
 * bad input) and the usual file-system errors (missing file, no permission, a folder where a
 * file was expected, …), each named with the workspace-relative path. A missing path is
 * reported with similarly named entries of its folder, when there are any. Any other error is
 * a bug and is rethrown.
 */
export async function runOnFile(
  ctx: Pick<ToolContext, 'workspace' | 'sandboxPolicy'>,
  path: string,
  use: FileUse,
  body: (file: WorkspaceFile) => Promise<ToolResult>,
): Promise<ToolResult> {
  const { workspace } = ctx;
  let file: WorkspaceFile;
  try {
    file = inSandboxView(ctx, locateFile(workspace, path));
  } catch (error) {
    if (error instanceof ToolInputError) return { output: error.message, isError: true };
    throw error;
  }
  const refusal = boundaryRefusal(ctx, file, use);
  if (refusal !== undefined) return { output: refusal, isError: true };
  try {
    return await body(file);
  } catch (error) {
    if (error instanceof ToolInputError) return { output: error.message, isError: true };
    const code = errorCode(error);
    if (code === 'ENOENT') {
      const output = await describeMissingPath(workspace, file.absolute, (absolute) => sandboxShownPath(ctx, absolute), sandboxPlaceholders(ctx.sandboxPolicy));
      return { output, isError: true };
    }
    const message = code === undefined ? undefined : fileErrorMessage(code, file.shown);
    if (message !== undefined) return { output: message, isError: true };
    throw error;
  }
}

/**
 * The error result of a file tool handed a binary file (see `isBinary`), in one form for
 * every tool: `"logo.png is a binary file (6 bytes); read shows text only. Inspect it with the
 * shell (e.g. file logo.png)"`, where `refusal` is the tool's own clause.
 */
export function binaryFileRefusal(shown: string, size: number, refusal: string): ToolResult {
  return { output: `${shown} is a binary file (${plural(size, 'byte')}); ${refusal}. Inspect it with the shell (e.g. file ${shown})`, isError: true };
}

/**
 * Says that `absolute` does not exist, naming up to three entries of its folder with a
 * similar name (same name in another case, same name with another extension, or a name a
 * couple of typos away), or saying that the folder itself is missing. Entries `hidden` says
 * are not there for the model (the sandbox's placeholders) are never named.
 */
export async function describeMissingPath(
  workspace: string,
  absolute: string,
  show = (path: string) => displayPath(workspace, path),
  hidden: (path: string) => boolean = () => false,
): Promise<string> {
  const shown = show(absolute);
  const folder = dirname(absolute);
  let names: string[];
  try {
    names = await readdir(folder);
  } catch {
    return `${shown} does not exist (nor does the folder ${show(folder)})`;
  }
  const visible = names.filter((name) => !hidden(join(folder, name)));
  const similar = similarNames(basename(absolute), visible).map((name) => show(join(folder, name)));
  if (similar.length === 0) return `${shown} does not exist`;
  return `${shown} does not exist; did you mean ${similar.join(' or ')}?`;
}

/** Up to three of `names` that look like `wanted`, the closest first. */
export function similarNames(wanted: string, names: readonly string[]): string[] {
  const target = wanted.toLowerCase();
  const targetStem = stem(target);
  const allowed = Math.max(1, Math.floor(target.length / 4));
  const scored: { name: string; score: number }[] = [];
  for (const name of names) {
    const lower = name.toLowerCase();
    if (name === wanted) continue;
    if (lower === target) scored.push({ name, score: 0 });
    else if (stem(lower) === targetStem && targetStem !== '') scored.push({ name, score: 1 });
    else {
      const distance = editDistance(lower, target, allowed);
      if (distance <= allowed) scored.push({ name, score: 1 + distance });
    }
  }
  scored.sort((a, b) => a.score - b.score || (a.name < b.name ? -1 : 1));
  return scored.slice(0, 3).map((entry) => entry.name);
}

function fileErrorMessage(code: string, shown: string): string | undefined {
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return `Permission denied: ${shown}`;
    case 'EISDIR':
      return `${shown} is a folder, not a file`;
    case 'ENOTDIR':
    case 'EEXIST':
      return `A part of ${shown} is a file where a folder is needed`;
    case 'EROFS':
      return `${shown} is on a read-only file system`;
    case 'ENOSPC':
      return `No space left on the device to write ${shown}`;
    case 'ENAMETOOLONG':
      return `The path ${shown} is too long`;
    case 'ELOOP':
      return `${shown} is a symbolic link loop`;
    default:
      return undefined;
  }
}

function errorCode(error: unknown): string | undefined {
  if (!(error instanceof Error) || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

function stem(name: string): string {
  return name.slice(0, name.length - extname(name).length);
}

/**
 * Edit distance between `a` and `b` counting an insertion, a deletion, a substitution or a
 * swap of two neighbouring characters as one edit; gives up (returning `limit + 1`) once the
 * distance must exceed `limit`.
 */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, (before[j - 2] ?? 0) + 1);
      current.push(value);
    }
    if (Math.min(...current) > limit) return limit + 1;
    before = previous;
    previous = current;
  }
  return previous[b.length] ?? limit + 1;
}
