import { constants, readlinkSync } from 'node:fs';
import { mkdir, open, realpath, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { readRefusal, writeRefusal } from '../runtime/sandbox-policy';
import type { ToolContext } from './define-tool';
import { activeSandbox, type FileUse } from './file-boundary';
import { ToolInputError } from './tool-error';
import type { WorkspaceFile } from './workspace-path';

/**
 * The file tools check a path and then open it; a link swapped in between would lead the
 * open elsewhere. So they open first, then ask the system which file they opened (its real
 * path, from `/proc/self/fd` where there is one) and judge that file as the path was judged:
 * by the session's sandbox and by the caller's rules. Only then do they read or write, and
 * only through the descriptor they judged.
 */

/** A file opened and judged: read and write through `handle`; `real` is the path it was judged by. */
export interface OpenedFile {
  handle: FileHandle;
  real: string;
  /** A path that names the opened file itself, whatever happens to `real` meanwhile (for listing a folder). */
  here: string;
}

const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;
const WRITE_FLAGS = constants.O_RDWR | constants.O_NONBLOCK;

/**
 * Opens `file` for `use` by `tool` (following links, as the check did) and judges the file
 * opened (see above). Returns undefined when nothing is there and `missing` is `'ok'`; otherwise
 * a missing file throws as the file system reports it. A refusal throws `ToolInputError` with
 * the sentence the check would have given. `O_NONBLOCK`: a named pipe never blocks the open.
 */
export async function openAdmitted(ctx: Pick<ToolContext, 'sandbox' | 'canAccess'>, file: WorkspaceFile, use: FileUse, tool: string, missing: 'ok' | 'throw' = 'throw'): Promise<OpenedFile | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file.absolute, use === 'read' ? READ_FLAGS : WRITE_FLAGS);
  } catch (error) {
    if (missing === 'ok' && codeOf(error) === 'ENOENT') return undefined;
    throw error;
  }
  return judged(ctx, file, use, tool, handle, false);
}

/**
 * Creates `file`, which must not exist yet (`O_EXCL`: nor be a link), with its missing
 * folders, for `tool` to write, and judges it as `openAdmitted` does; a file created where it
 * may not be is removed again before the refusal is thrown.
 */
export async function createAdmitted(ctx: Pick<ToolContext, 'sandbox' | 'canAccess'>, file: WorkspaceFile, tool: string): Promise<OpenedFile> {
  await mkdir(dirname(file.absolute), { recursive: true });
  const handle = await open(file.absolute, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o666);
  return (await judged(ctx, file, 'write', tool, handle, true)) as OpenedFile;
}

/**
 * Reads an opened file's real path, and judges it for `use`. With the sandbox's sentence for
 * a denied file, or a sentence naming the caller's rules, the file is closed (and removed if
 * `created`) and a `ToolInputError` thrown.
 */
async function judged(ctx: Pick<ToolContext, 'sandbox' | 'canAccess'>, file: WorkspaceFile, use: FileUse, tool: string, handle: FileHandle, created: boolean): Promise<OpenedFile> {
  try {
    const { real, here } = await whereOpened(handle, file);
    const sandbox = activeSandbox(ctx);
    const refusal =
      (sandbox && (use === 'write' ? writeRefusal(sandbox, real, file.shown) : readRefusal(sandbox, real, file.shown))) ||
      (ctx.canAccess && !ctx.canAccess(tool, real) ? `${tool} denied: ${file.shown} leads to ${real}, which the policy keeps from ${tool}` : undefined);
    if (refusal !== undefined) {
      if (created) await removeCreated(handle, real);
      throw new ToolInputError(refusal);
    }
    return { handle, real, here };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * The real path of the file `handle` holds. From `/proc/self/fd`, which names the very file
 * opened; elsewhere the real path of `file` now, checked to be the same file (device and inode)
 * as the one opened, else the open raced with a change and the call is refused.
 */
async function whereOpened(handle: FileHandle, file: WorkspaceFile): Promise<{ real: string; here: string }> {
  const here = `/proc/self/fd/${handle.fd}`;
  try {
    // The kernel answers from memory, at once: no need to wait on the thread pool.
    const real = readlinkSync(here);
    if (real.startsWith('/') && !real.endsWith(' (deleted)')) return { real, here };
  } catch {
    // No /proc: judged by the real path, checked below.
  }
  const real = await realpath(file.absolute);
  const [opened, named] = await Promise.all([handle.stat(), stat(real)]);
  if (opened.dev !== named.dev || opened.ino !== named.ino) {
    throw new ToolInputError(`${file.shown} changed while it was being opened; try again`);
  }
  return { real, here: real };
}

async function removeCreated(handle: FileHandle, real: string): Promise<void> {
  try {
    const [opened, named] = await Promise.all([handle.stat(), stat(real)]);
    if (opened.dev === named.dev && opened.ino === named.ino) await unlink(real);
  } catch {
    // Gone already.
  }
}

function codeOf(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** The whole content of an opened regular file; anything else (a pipe, a device) is refused with a `ToolInputError`. */
export async function readOpened(opened: OpenedFile, file: WorkspaceFile): Promise<Buffer> {
  if (!(await opened.handle.stat()).isFile()) throw new ToolInputError(`${file.shown} is not a regular file`);
  return opened.handle.readFile();
}

/** Replaces the whole content of an opened file by `data`. */
export async function rewriteOpened(opened: OpenedFile, data: string | Buffer): Promise<void> {
  await opened.handle.truncate(0);
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  await opened.handle.write(bytes, 0, bytes.length, 0);
}
