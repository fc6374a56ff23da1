import { z } from 'zod';
import { defineTool } from './define-tool';
import { binaryFileRefusal, runOnFile } from './file-errors';
import { previewFileChange } from './file-preview';
import { createAdmitted, openAdmitted, readOpened, rewriteOpened, type OpenedFile } from './opened-file';
import {
  convertLineEndings,
  countLines,
  describeSize,
  dominantLineEnding,
  hasLineBreak,
  isBinary,
  plural,
  withFinalNewline,
} from './text-file';
import { pathResource } from './workspace-path';

/**
 * `append`: adds text at the end of a file, creating the file and its parent folders when
 * missing. The appended text always starts on a new line (a line break is added first when
 * the file does not end with one) and ends with a line break; it takes the file's line-break
 * style. The existing bytes are never rewritten, so files in any encoding are safe; a binary
 * file (see `isBinary`) is refused, as read and patch refuse it. Empty content is an error
 * result, as are the failures the model can fix. The file is opened (or created) and judged by
 * where it really is before it is read or written, through that descriptor (see `openAdmitted`).
 */
export const appendTool = defineTool({
  name: 'append',
  description: 'Add lines at the end of a file, creating it if missing.',
  instructions: [
    '`content` is added at the end of the file at `path`, on a new line and ending with a line break.',
    'To change existing lines, use patch.',
  ].join('\n'),
  example: { path: 'notes/log.md', content: '- 14:02 tests pass again\n' },
  blockTypes: ['append'],
  parameters: z.object({
    path: z.string().describe('Path of the file to append to'),
    content: z.string().describe('The text to add at the end of the file'),
  }),
  block: { args: ['path'], content: 'content' },
  callers: ['direct'],
  mutating: true,
  resource: pathResource,
  preview: ({ path, content }, ctx) =>
    previewFileChange(ctx, 'append', path, (existing) => {
      const before = existing?.toString('utf8') ?? '';
      return content === '' ? { error: 'the content is empty: nothing to append' } : { after: before + appendedText(before, content).added };
    }),
  async execute({ path, content }, ctx) {
    return runOnFile(ctx, path, 'write', async (file) => {
      if (content === '') return { output: `Nothing to append to ${file.shown}: the content is empty`, isError: true };
      const opened = await openAdmitted(ctx, file, 'write', 'append', 'ok');
      let created: OpenedFile | undefined;
      try {
        const existing = opened && (await readOpened(opened, file));
        if (existing !== undefined && isBinary(existing)) return binaryFileRefusal(file.shown, existing.length, 'append adds to text files only');
        const before = existing?.toString('latin1') ?? '';
        const { added, separator } = appendedText(before, content);
        const addedBytes = Buffer.byteLength(added, 'utf8');
        ctx.signal.throwIfAborted();
        ctx.beforeWrite?.(file.absolute, existing);
        if (opened === undefined || existing === undefined) {
          await rewriteOpened((created = await createAdmitted(ctx, file, 'append')), added);
          return {
            output: `Created ${file.shown} (${describeSize(countLines(added), addedBytes)})`,
            details: { path: file.shown, created: true, bytes: addedBytes },
          };
        }
        await opened.handle.write(Buffer.from(added, 'utf8'), 0, addedBytes, existing.length);
        const total = describeSize(countLines(before + added), existing.length + addedBytes);
        return {
          output: `Appended ${plural(countLines(added.slice(separator.length)), 'line')} to ${file.shown} (now ${total})`,
          details: { path: file.shown, created: false, bytes: addedBytes },
        };
      } finally {
        await opened?.handle.close();
        await created?.handle.close();
      }
    });
  },
});

/**
 * What an append adds after `before` (the file's text, latin1 will do): a line break first when
 * the file does not end with one, then the content in the file's line-break style, ending with one.
 */
function appendedText(before: string, content: string): { added: string; separator: string } {
  const eol = hasLineBreak(before) ? dominantLineEnding(before) : dominantLineEnding(content);
  const separator = before === '' || before.endsWith('\n') ? '' : eol;
  return { added: separator + withFinalNewline(hasLineBreak(before) ? convertLineEndings(content, eol) : content, eol), separator };
}
