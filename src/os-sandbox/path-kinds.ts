import { lstatSync, readdirSync, statSync } from 'node:fs';

/**
 * What is at a path, asked without an exception reaching the caller: a missing path, one
 * that cannot be read, or a loop of links answers `false`. The sandbox's planning and the git
 * guard ask these of many paths, most of them missing.
 */

/** Whether anything is at `path` itself: a file, a folder, a link (a dangling one too). */
export function isPresent(path: string): boolean {
  try {
    // No exception for a missing path: most of them are, and an exception costs more than the call.
    return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false;
  }
}

/** Whether `path` leads to a regular file (links followed). */
export function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Whether `path` leads to a folder (links followed). */
export function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Whether `path` itself is a folder, not a link to one. */
export function isOwnFolder(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Whether `path` itself is a link. */
export function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Whether `path` leads to a folder with nothing in it. */
export function isEmptyFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory() && readdirSync(path).length === 0;
  } catch {
    return false;
  }
}
