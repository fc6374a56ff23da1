import { isUtf8 } from 'node:buffer';
import type { ToolContext, ToolPreview } from './define-tool';
import { boundaryRefusal, inSandboxView } from './file-boundary';
import { openAdmitted, readOpened } from './opened-file';
import { isBinary, plural } from './text-file';
import { ToolInputError } from './tool-error';
import { locateFile } from './workspace-path';

/**
 * The preview of a file tool's call: the file's text now and after the call, as `change`
 * computes it from the current bytes (undefined for a missing file) — the same computation the
 * tool's `execute` makes, so what a person approves is what gets written. A path that cannot be
 * read, a binary file, a file that is not UTF-8 text, or a change that would fail gives a
 * `note` instead; so does a path the session's sandbox does not let the tool write (the note is
 * the refusal the call will get, and the file is not read). The file is read as the tools read
 * it (see `openAdmitted`): opened first, then judged by where it really is, so a link swapped
 * in after the check cannot put a file the sandbox or the caller's rules keep from `tool` on
 * the screen. Reads only; never throws for a file-system failure.
 */
export async function previewFileChange(
  ctx: Pick<ToolContext, 'workspace' | 'sandboxPolicy' | 'canAccess'>,
  tool: string,
  path: string,
  change: (existing: Buffer | undefined) => { after: string } | { error: string },
): Promise<ToolPreview> {
  let file;
  try {
    file = inSandboxView(ctx, locateFile(ctx.workspace, path));
  } catch (error) {
    if (error instanceof ToolInputError) return { kind: 'note', text: error.message };
    throw error;
  }
  const refusal = boundaryRefusal(ctx, file, 'write');
  if (refusal !== undefined) return { kind: 'note', text: refusal };
  let existing: Buffer | undefined;
  try {
    const opened = await openAdmitted(ctx, file, 'read', tool, 'ok');
    try {
      existing = opened && (await readOpened(opened, file));
    } finally {
      await opened?.handle.close();
    }
  } catch (error) {
    if (error instanceof ToolInputError) return { kind: 'note', text: error.message };
    return { kind: 'note', text: `${file.shown} cannot be read (${error instanceof Error ? error.message : String(error)})` };
  }
  if (existing !== undefined && isBinary(existing)) return { kind: 'note', text: `${file.shown} is a binary file (${plural(existing.length, 'byte')}); no diff to show` };
  if (existing !== undefined && !isUtf8(existing)) return { kind: 'note', text: `${file.shown} is not UTF-8 text; no diff to show` };
  const outcome = change(existing);
  if ('error' in outcome) return { kind: 'note', text: outcome.error };
  return { kind: 'diff', path: file.shown, before: existing?.toString('utf8') ?? '', after: outcome.after, created: existing === undefined };
}
