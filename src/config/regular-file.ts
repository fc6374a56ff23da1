import { closeSync, constants, fstatSync, openSync, readSync, realpathSync } from 'node:fs';

/**
 * What reading a file fence reads on its own (`fence.toml`, `AGENTS.md`, the files trust
 * hashes) came to. Such a file sits in a folder someone else wrote, so it may be a link to
 * `/dev/zero`, a named pipe nobody writes to, or a file of gigabytes: each of those is told
 * apart here, before anything is read.
 */
export type RegularFileRead =
  | { kind: 'read'; bytes: Buffer }
  /** Nothing there (or a folder on the way is missing). */
  | { kind: 'absent' }
  /** A link, or something other than a regular file (`what`: `a folder`, `a named pipe`, `a device`, …). */
  | { kind: 'not-regular'; what: string }
  /** Larger than the cap; `size` is at least the cap plus one. */
  | { kind: 'too-large'; size: number; limitBytes: number }
  /** The system refused to open or read it (`code`: `EACCES`, …). */
  | { kind: 'unreadable'; code: string };

/**
 * Reads the regular file at `path`, at most `limitBytes` of it. The open follows no link (a
 * link as the last part of `path` is `not-regular`, unless `links` is `'follow'`: then `path`
 * is resolved to its real path first, and that is opened without following a link swapped in
 * since; a link to nothing is `absent`) and never blocks (`O_NONBLOCK`: a named pipe opens at once); the file opened is judged by
 * its descriptor (`fstat`), and only a regular file is read. The size is checked before
 * reading, and the read stops after `limitBytes + 1` bytes, so a file that grows meanwhile
 * costs no more than the cap either. Never throws.
 */
export function readRegularFile(path: string, limitBytes: number, links: 'follow' | 'refuse' = 'refuse'): RegularFileRead {
  let fd: number;
  try {
    fd = openSync(links === 'follow' ? realpathSync.native(path) : path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = codeOf(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'absent' };
    if (code === 'ELOOP') return { kind: 'not-regular', what: 'a link' };
    return { kind: 'unreadable', code };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { kind: 'not-regular', what: kindOf(stat) };
    if (stat.size > limitBytes) return { kind: 'too-large', size: stat.size, limitBytes };
    const chunks: Buffer[] = [];
    let length = 0;
    // Until the end, or one byte past the cap: enough to tell a file that grew since `fstat` is too large.
    while (length <= limitBytes) {
      const chunk = Buffer.alloc(Math.min(Math.max(stat.size - length, 0), limitBytes - length) + 1);
      const count = readSync(fd, chunk, 0, chunk.length, null);
      if (count === 0) break;
      chunks.push(chunk.subarray(0, count));
      length += count;
    }
    return length > limitBytes ? { kind: 'too-large', size: length, limitBytes } : { kind: 'read', bytes: Buffer.concat(chunks, length) };
  } catch (error) {
    return { kind: 'unreadable', code: codeOf(error) };
  } finally {
    closeSync(fd);
  }
}

/** How a file that is not regular is named in a message. */
function kindOf(stat: ReturnType<typeof fstatSync>): string {
  if (stat.isDirectory()) return 'a folder';
  if (stat.isFIFO()) return 'a named pipe';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device';
  if (stat.isSocket()) return 'a socket';
  return 'not a regular file';
}

function codeOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error);
}

/** A sentence part saying why a read gave no text: `it is a named pipe`, `it is larger than 1024 KB`. */
export function describeUnread(read: Exclude<RegularFileRead, { kind: 'read' }>): string {
  switch (read.kind) {
    case 'absent':
      return 'it does not exist';
    case 'not-regular':
      return read.what === 'not a regular file' ? 'it is not a regular file' : `it is ${read.what}, not a regular file`;
    case 'too-large':
      return `it is larger than ${Math.floor(read.limitBytes / 1024)} KB`;
    case 'unreadable':
      return `it cannot be read (${read.code})`;
  }
}
