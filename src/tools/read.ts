import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { defineTool, type ToolResult } from './define-tool';
import { binaryFileRefusal, runOnFile } from './file-errors';
import { openAdmitted, type OpenedFile } from './opened-file';
import type { WorkspaceFile } from './workspace-path';
import { countLines, isBinary, plural } from './text-file';
import { pathResource } from './workspace-path';
import { sandboxPlaceholders } from './sandbox-placeholders';
import { detectImageType } from '../images/image-type';
import { describeImage, IMAGE_FILE_LIMIT_BYTES, isPrepared, prepareImageBytes } from '../images/prepare-image';

/** Files larger than this are refused: reading them whole would only be cut down afterwards. */
export const READ_LIMIT_BYTES = 10 * 1024 * 1024;

/**
 * `read`: returns a text file's content exactly (no line numbers; a leading byte-order mark
 * dropped; invalid UTF-8 shown as U+FFFD), so that it can be copied into a patch. `value` is
 * the same string, for programs. A folder is listed instead: one entry per line, folders
 * ending with `/`, and `value` is the array of those entries. A binary file, a file over
 * `READ_LIMIT_BYTES` or a missing path is an error result (the latter naming similarly named
 * entries when there are any). An image file (PNG, JPEG, GIF or WebP by its first bytes, up to
 * `IMAGE_FILE_LIMIT_BYTES`) is prepared for the model (see `prepareImageBytes`): the result
 * carries it in `images`, and `output` and `value` are one line saying what it is; a damaged
 * image is an error result. A program gets that line only. The sandbox's placeholders (see `sandboxPlaceholders`) are not
 * listed, and one named itself reads as missing. The file or folder is opened, then judged by
 * where it really is (see `openAdmitted`), and read through that descriptor. It never writes
 * anything.
 */
export const readTool = defineTool({
  name: 'read',
  description: 'Read a text file or an image, or list the entries of a folder.',
  instructions: [
    'You get the exact text of the file at `path`, without line numbers, ready to copy into a patch ORIGINAL.',
    'A folder lists its entries instead, folders ending with /. An image (PNG, JPEG, GIF, WebP) is shown to you. Other binary files and files over 10 MB are refused: use the shell.',
  ].join('\n'),
  example: { path: 'src/app.ts' },
  blockTypes: ['read'],
  parameters: z.object({
    path: z.string().describe('Path of the file or folder to read'),
  }),
  block: { args: ['path'], content: 'path' },
  callers: ['direct', 'program'],
  mutating: false,
  resource: pathResource,
  returns: 'string | string[]',
  async execute({ path }, ctx) {
    return runOnFile(ctx, path, 'read', async (file) => {
      const opened = (await openAdmitted(ctx, file, 'read', 'read')) as OpenedFile;
      try {
        const info = await opened.handle.stat();
        const isPlaceholder = sandboxPlaceholders(ctx.sandboxPolicy);
        if (info.isDirectory() && isPlaceholder(opened.real)) return { output: `${file.shown} does not exist`, isError: true };
        if (info.isDirectory()) return await listFolder(file, opened, isPlaceholder);
        if (!info.isFile()) return { output: `${file.shown} is not a regular file`, isError: true };
        const head = Buffer.alloc(12);
        const { bytesRead } = await opened.handle.read(head, 0, head.length, 0);
        if (detectImageType(head.subarray(0, bytesRead))) return await readImage(file, opened, info.size, ctx.signal);
        if (info.size > READ_LIMIT_BYTES) {
          return {
            output: `${file.shown} is too large to read whole (${plural(info.size, 'byte')}); use the shell (head, sed -n, grep) to read parts of it`,
            isError: true,
          };
        }
        const bytes = await opened.handle.readFile({ signal: ctx.signal });
        if (isBinary(bytes)) return binaryFileRefusal(file.shown, bytes.length, 'read shows text only');
        const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
        const details = { path: file.shown, bytes: bytes.length, lines: countLines(text) };
        if (text === '') return { output: `${file.shown} is empty`, value: text, details };
        return { output: text, value: text, details };
      } finally {
        await opened.handle.close();
      }
    });
  },
});

/** The image file `opened` holds, prepared for the model, with a line saying what it is. */
async function readImage(file: WorkspaceFile, opened: OpenedFile, size: number, signal: AbortSignal): Promise<ToolResult> {
  if (size > IMAGE_FILE_LIMIT_BYTES) {
    return { output: `${file.shown} is too large to show (${plural(size, 'byte')}); images up to ${IMAGE_FILE_LIMIT_BYTES / 1024 / 1024} MB are taken`, isError: true };
  }
  const image = await prepareImageBytes(await opened.handle.readFile({ signal }), file.shown);
  if (!isPrepared(image)) return { output: image.error, isError: true };
  const line = describeImage(image);
  const details = { path: file.shown, bytes: size, image: { mediaType: image.mediaType, width: image.width, height: image.height } };
  return { output: line, value: line, details, images: [image] };
}

/**
 * The entries of the folder `opened` holds (listed through its descriptor where the system
 * names one), but the sandbox's placeholders.
 */
async function listFolder(folder: WorkspaceFile, opened: OpenedFile, isPlaceholder: (realPath: string) => boolean): Promise<ToolResult> {
  const entries = await readdir(opened.here, { withFileTypes: true });
  const names = entries
    .filter((entry) => !(entry.isDirectory() && isPlaceholder(join(opened.real, entry.name))))
    .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const heading = folder.shown.endsWith('/') ? folder.shown : `${folder.shown}/`;
  if (names.length === 0) return { output: `${heading} is an empty folder`, value: names, details: { path: folder.shown } };
  return {
    output: [`${heading} is a folder with ${plural(names.length, 'entry', 'entries')}:`, ...names].join('\n'),
    value: names,
    details: { path: folder.shown, entries: names.length },
  };
}
