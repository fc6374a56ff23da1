import { isUtf8 } from 'node:buffer';
import { z } from 'zod';
import { defineTool } from './define-tool';
import { binaryFileRefusal, describeMissingPath, runOnFile } from './file-errors';
import { previewFileChange } from './file-preview';
import { createAdmitted, openAdmitted, readOpened, rewriteOpened, type OpenedFile } from './opened-file';
import { applyPatch, parsePatch, type LineChange } from './patch-hunks';
import { isBinary, plural } from './text-file';
import { sandboxPlaceholders } from './sandbox-placeholders';
import { pathResource } from './workspace-path';

const BOM = '\uFEFF';

/**
 * `patch`: replaces parts of a text file, described by ORIGINAL/UPDATED hunks (see
 * `parsePatch` and `applyPatch`). All hunks are checked before anything is written: the file
 * is either fully patched or left untouched. A missing file is created only by a single hunk
 * with an empty ORIGINAL. Line breaks (LF or CRLF) and a leading byte-order mark are kept.
 * Binary files and files that are not valid UTF-8 are refused rather than risk rewriting
 * their bytes. Every failure the model can fix (no match, several matches, malformed patch)
 * is an error result naming the hunk. The file is opened (or created) and judged by where it
 * really is before it is read or written, through that descriptor (see `openAdmitted`).
 */
export const patchTool = defineTool({
  name: 'patch',
  description: 'Change parts of a text file by replacing exact lines.',
  instructions: [
    '`patch` holds one or more hunks for the file at `path`:',
    '<<<<<<< ORIGINAL',
    'lines copied exactly from the file',
    '=======',
    'the lines to put in their place',
    '>>>>>>> UPDATED',
    'Each ORIGINAL must match whole lines of the file exactly once (indentation included); add neighbouring lines when it would match more than once. Keep hunks short and apart.',
    'To insert lines, include a neighbouring line in ORIGINAL and repeat it in UPDATED; to delete lines, leave UPDATED empty.',
    'If any hunk fails, nothing is written. An empty ORIGINAL may only be the sole hunk of an empty or missing file. Line breaks (LF or CRLF) are kept.',
  ].join('\n'),
  example: {
    path: 'src/greet.py',
    patch: [
      '<<<<<<< ORIGINAL',
      'def greet(name):',
      '    print("Hello " + name)',
      '=======',
      'def greet(name: str) -> None:',
      '    print(f"Hello, {name}!")',
      '>>>>>>> UPDATED',
    ].join('\n'),
  },
  blockTypes: ['patch'],
  parameters: z.object({
    path: z.string().describe('Path of the file to change'),
    patch: z.string().describe('One or more <<<<<<< ORIGINAL / ======= / >>>>>>> UPDATED hunks'),
  }),
  block: { args: ['path'], content: 'patch' },
  callers: ['direct'],
  mutating: true,
  resource: pathResource,
  preview: ({ path, patch }, ctx) =>
    previewFileChange(ctx, 'patch', path, (existing) => {
      const parsed = parsePatch(patch);
      if (!parsed.ok) return { error: parsed.error };
      const decoded = existing?.toString('utf8') ?? '';
      const bom = decoded.startsWith(BOM) ? BOM : '';
      const applied = applyPatch(decoded.slice(bom.length), parsed.hunks, path);
      return applied.ok ? { after: bom + applied.text } : { error: applied.error };
    }),
  async execute({ path, patch }, ctx) {
    return runOnFile(ctx, path, 'write', async (file) => {
      const parsed = parsePatch(patch);
      if (!parsed.ok) return { output: parsed.error, isError: true };
      const opened = await openAdmitted(ctx, file, 'write', 'patch', 'ok');
      let created: OpenedFile | undefined;
      try {
        const existing = opened && (await readOpened(opened, file));
        if (existing !== undefined && isBinary(existing)) return binaryFileRefusal(file.shown, existing.length, 'patch edits text files only');
        if (existing !== undefined && !isUtf8(existing)) {
          return { output: `${file.shown} is not valid UTF-8 text; patch cannot edit it safely`, isError: true };
        }
        const decoded = existing?.toString('utf8') ?? '';
        const bom = decoded.startsWith(BOM) ? BOM : '';
        const before = decoded.slice(bom.length);
        const applied = applyPatch(before, parsed.hunks, file.shown);
        if (!applied.ok) {
          if (existing === undefined) {
            const missing = await describeMissingPath(ctx.workspace, file.absolute, undefined, sandboxPlaceholders(ctx.sandboxPolicy));
            return { output: `${missing} (to create a new file, use save)`, isError: true };
          }
          return { output: applied.error, isError: true };
        }
        const count = plural(parsed.hunks.length, 'hunk');
        const details = { path: file.shown, created: existing === undefined, changes: applied.changes };
        if (existing !== undefined && applied.text === before) {
          return { output: `${file.shown} unchanged: the UPDATED lines of ${count} equal their ORIGINAL`, details };
        }
        ctx.signal.throwIfAborted();
        ctx.beforeWrite?.(file.absolute, existing);
        await rewriteOpened(opened ?? (created = await createAdmitted(ctx, file, 'patch')), bom + applied.text);
        const verb = existing === undefined ? 'Created' : 'Patched';
        return { output: [`${verb} ${file.shown}: ${count} applied`, ...applied.changes.map(describeChange)].join('\n'), details };
      } finally {
        await opened?.handle.close();
        await created?.handle.close();
      }
    });
  },
});

/** A unified-diff style range header: `@@ -12,3 +12,4 @@`. */
function describeChange(change: LineChange): string {
  return `@@ -${change.oldStart},${change.oldLines} +${change.newStart},${change.newLines} @@`;
}
