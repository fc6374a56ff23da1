import { constants, readlinkSync } from 'node:fs';
import { mkdir, open, realpath, stat, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { readRefusal, writeRefusal } from '../os-sandbox/policy';
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
export async function openAdmitted(ctx: Pick<ToolContext, 'sandboxPolicy' | 'canAccess'>, file: WorkspaceFile, use: FileUse, tool: string, missing: 'ok' | 'throw' = 'throw'): Promise<OpenedFile | undefined> {
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
 * may not be is removed again before the refusal is thrown. The missing folders are made one
 * at a time (see `makeFolders`), each judged by the sandbox before it is made, so none is made
 * where nothing may be written, even by a link swapped in while they are made.
 */
export async function createAdmitted(ctx: Pick<ToolContext, 'sandboxPolicy' | 'canAccess'>, file: WorkspaceFile, tool: string): Promise<OpenedFile> {
  const parent = await makeFolders(ctx, file);
  // Under the folder held open, by the kernel's name for it: no link on the way can move the file elsewhere.
  const where = parent ? join(parent.here, basename(file.absolute)) : file.absolute;
  let handle: FileHandle;
  try {
    handle = await open(where, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o666);
  } finally {
    await parent?.handle.close();
  }
  return (await judged(ctx, file, 'write', tool, handle, true)) as OpenedFile;
}

/**
 * Makes the folders `file` lacks, from the nearest one that exists, and returns the last (its
 * folder) held open, named by the kernel (`/proc/self/fd/<n>`); undefined without `/proc`, where
 * the folders are made by path. Each folder is made inside the one before, through that
 * folder's descriptor rather than its path, and only once the sandbox lets its real path (the
 * parent's real path and its name) be written: a refusal names the folder, and nothing is made
 * there.
 */
async function makeFolders(ctx: Pick<ToolContext, 'sandboxPolicy'>, file: WorkspaceFile): Promise<{ handle: FileHandle; here: string } | undefined> {
  const missing: string[] = [];
  let existing = dirname(file.absolute);
  let parent: FileHandle | undefined;
  for (;;) {
    try {
      parent = await open(existing, constants.O_RDONLY | constants.O_DIRECTORY);
      break;
    } catch (error) {
      const up = dirname(existing);
      if (codeOf(error) !== 'ENOENT' || up === existing) throw error;
      missing.unshift(basename(existing));
      existing = up;
    }
  }
  let here = `/proc/self/fd/${parent.fd}`;
  let real: string;
  try {
    real = readlinkSync(here);
  } catch {
    await parent.close();
    await mkdir(dirname(file.absolute), { recursive: true });
    return undefined;
  }
  // Each missing folder as the file's own path names it (`notes/2026` of `notes/2026/a.md`).
  const shownFolders: string[] = [];
  let shownDir = dirname(file.shown);
  for (let i = missing.length - 1; i >= 0; i--) {
    shownFolders[i] = shownDir;
    shownDir = dirname(shownDir);
  }
  try {
    const sandbox = activeSandbox(ctx);
    for (const [i, name] of missing.entries()) {
      const next = join(real, name);
      const shown = shownFolders[i] ?? next;
      // The sandbox's rules are about places; the policy's are about the files tools touch, and judge the file.
      const refusal = sandbox && writeRefusal(sandbox, next, shown);
      if (refusal !== undefined) throw new ToolInputError(refusal);
      try {
        await mkdir(join(here, name));
      } catch (error) {
        if (codeOf(error) !== 'EEXIST') throw error;
      }
      // Not following a link: one made in its place since is refused here.
      const child = await open(join(here, name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      await parent.close();
      parent = child;
      here = `/proc/self/fd/${child.fd}`;
      real = next;
    }
    return { handle: parent, here };
  } catch (error) {
    await parent.close();
    throw error;
  }
}

/**
 * Reads an opened file's real path, and judges it for `use`. With the sandbox's sentence for
 * a denied file, or a sentence naming the caller's rules, the file is closed (and removed if
 * `created`) and a `ToolInputError` thrown.
 */
async function judged(ctx: Pick<ToolContext, 'sandboxPolicy' | 'canAccess'>, file: WorkspaceFile, use: FileUse, tool: string, handle: FileHandle, created: boolean): Promise<OpenedFile> {
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
