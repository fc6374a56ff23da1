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
  withFinalNewline,
} from './text-file';
import { pathResource } from './workspace-path';

/**
 * `save`: writes a whole file, creating it and its parent folders when missing, replacing it
 * otherwise. The written text always ends with a line break (unless it is empty), and a file
 * that is replaced keeps its line-break style (LF or CRLF). Writes nothing when the content
 * is already there. A binary file (see `isBinary`) is never replaced: the model cannot have
 * read it, so writing text over it is most likely a wrong path. Failures the model can fix
 * (a binary file, a folder in the way, no permission, an empty path) come back as error results.
 * The file is opened (or created) and judged by where it really is before it is read or
 * written, and both go through that descriptor (see `openAdmitted`).
 */
export const saveTool = defineTool({
  name: 'save',
  description: 'Write a whole file, creating it or replacing its content.',
  instructions: [
    '`content` becomes the whole new content of the file at `path`; missing folders are created.',
    'An existing file is replaced entirely, so never save a partial file: to change part of a file, use patch.',
  ].join('\n'),
  example: { path: 'notes/todo.md', content: '# Todo\n- write the tests\n' },
  blockTypes: ['save'],
  parameters: z.object({
    path: z.string().describe('Path of the file to write'),
    content: z.string().describe('The complete new content of the file'),
  }),
  block: { args: ['path'], content: 'content' },
  callers: ['direct'],
  mutating: true,
  resource: pathResource,
  preview: ({ path, content }, ctx) => previewFileChange(ctx, 'save', path, (existing) => ({ after: savedText(existing, content) })),
  async execute({ path, content }, ctx) {
    return runOnFile(ctx, path, 'write', async (file) => {
      const opened = await openAdmitted(ctx, file, 'write', 'save', 'ok');
      let created: OpenedFile | undefined;
      try {
        const existing = opened && (await readOpened(opened, file));
        if (existing !== undefined && isBinary(existing)) return binaryFileRefusal(file.shown, existing.length, 'save replaces text files only');
        const text = savedText(existing, content);
        const bytes = Buffer.from(text, 'utf8');
        const size = describeSize(countLines(text), bytes.length);
        const details = { path: file.shown, created: existing === undefined, bytes: bytes.length };
        if (existing?.equals(bytes)) return { output: `${file.shown} already has this content (${size})`, details };
        ctx.signal.throwIfAborted();
        ctx.beforeWrite?.(file.absolute, existing);
        await rewriteOpened(opened ?? (created = await createAdmitted(ctx, file, 'save')), bytes);
        const verb = existing === undefined ? 'Created' : 'Saved';
        return { output: `${verb} ${file.shown} (${size})`, details };
      } finally {
        await opened?.handle.close();
        await created?.handle.close();
      }
    });
  },
});

/** The text a save writes over `existing`: the content in the file's line-break style, ending with a line break. */
function savedText(existing: Buffer | undefined, content: string): string {
  const before = existing?.toString('latin1');
  const converted = before !== undefined && hasLineBreak(before) ? convertLineEndings(content, dominantLineEnding(before)) : content;
  return withFinalNewline(converted, dominantLineEnding(converted));
}
