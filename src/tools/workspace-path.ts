import { homedir } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ToolInputError } from './tool-error';
import { workspaceResource } from '../policy/workspace-resource';
import type { ToolContext } from './define-tool';

/** A file a tool works on: where it is, and how to name it to the model. */
export interface WorkspaceFile {
  /** Absolute, normalised path. */
  absolute: string;
  /** Workspace-relative when inside the workspace, absolute otherwise (see `displayPath`). */
  shown: string;
}

/**
 * Resolves a path written by the model to an absolute, normalised path.
 *
 * - Surrounding whitespace is ignored, and so is one pair of matching quotes around the
 *   whole path (`"my notes.md"`).
 * - `~` and `~/…` are expanded to `home` (the user's home folder by default); `~user` is not.
 * - Relative paths are resolved against `workspace`; `..` segments are resolved too.
 * - Absolute paths are allowed, inside the workspace or not: this function never decides
 *   what may be touched, admission does.
 *
 * Throws `ToolInputError` for an empty path or one containing a NUL character. Never touches
 * the file system.
 */
export function resolveWorkspacePath(workspace: string, path: string, home: string = homedir()): string {
  const written = unquote(path.trim());
  if (written === '') throw new ToolInputError('The path is empty: write the file path, e.g. src/app.ts');
  if (written.includes('\0')) throw new ToolInputError('The path contains a NUL character');
  if (written === '~') return resolve(home);
  if (written.startsWith('~/')) return join(resolve(home), written.slice(2));
  if (isAbsolute(written)) return resolve(written);
  return resolve(workspace, written);
}

/**
 * How to name `absolute` to the model: relative to `workspace` when it is inside it (`.` for
 * the workspace itself), the absolute path otherwise. Pure: never touches the file system.
 */
export function displayPath(workspace: string, absolute: string): string {
  const inside = relative(resolve(workspace), absolute);
  if (inside === '') return '.';
  if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) return absolute;
  return inside;
}

/** `resolveWorkspacePath` and `displayPath` together. Throws `ToolInputError` like the former. */
export function locateFile(workspace: string, path: string): WorkspaceFile {
  const absolute = resolveWorkspacePath(workspace, path);
  return { absolute, shown: displayPath(workspace, absolute) };
}

function unquote(text: string): string {
  const first = text[0];
  if (text.length >= 2 && (first === '"' || first === "'") && text.endsWith(first)) {
    return text.slice(1, -1).trim();
  }
  return text;
}

/** The `resource` of a tool whose input names one file: its path as policy sees it (see `workspaceResource`). */
export function pathResource(input: { path: string }, ctx: Pick<ToolContext, 'workspace'>): string {
  return workspaceResource(ctx.workspace, input.path);
}
