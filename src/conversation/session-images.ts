import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ImageMediaType, ImageRef } from './message';

/** The folder of a session's images, relative to the session folder. */
export const IMAGES_FOLDER = 'images';

/** What `storeImage` keeps: an image's bytes, their SHA-256 (hex) and what they are. */
export interface ImageToStore {
  bytes: Buffer;
  sha256: string;
  mediaType: ImageMediaType;
  width: number;
  height: number;
  name?: string;
}

const EXTENSIONS: Record<ImageMediaType, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };

/** What an `ImageRef.file` may be: nothing but a hashed name in the images folder. */
const STORED_NAME = /^images\/[0-9a-f]{64}\.(png|jpg|gif|webp)$/;

/**
 * Keeps an image in the session folder `dir` as `images/<sha256>.<ext>` (readable by the user
 * alone; written once: the same image attached again is the same file) and returns the
 * reference a message carries. Throws when the file cannot be written.
 */
export function storeImage(dir: string, image: ImageToStore): ImageRef {
  if (!/^[0-9a-f]{64}$/.test(image.sha256)) throw new Error(`not a SHA-256: ${image.sha256}`);
  const file = `${IMAGES_FOLDER}/${image.sha256}.${EXTENSIONS[image.mediaType]}`;
  const path = join(dir, file);
  if (!existsSync(path)) {
    mkdirSync(join(dir, IMAGES_FOLDER), { recursive: true, mode: 0o700 });
    const temp = `${path}.${process.pid}.new`;
    writeFileSync(temp, image.bytes, { mode: 0o600 });
    renameSync(temp, path);
  }
  return { file, mediaType: image.mediaType, width: image.width, height: image.height, ...(image.name ? { name: image.name } : {}) };
}

/**
 * The bytes of a referenced image, base64, read from the session folder `dir`; undefined when
 * the reference names anything but a file of the images folder, or it cannot be read. Never
 * throws.
 */
export function readStoredImage(dir: string, ref: Pick<ImageRef, 'file'>): string | undefined {
  if (!STORED_NAME.test(ref.file)) return undefined;
  try {
    return readFileSync(join(dir, ref.file)).toString('base64');
  } catch {
    return undefined;
  }
}

/**
 * Copies the images folder of the session folder `from` into the session folder `to` (a
 * forked session), each file hard-linked when the file system allows (they are never changed)
 * and copied otherwise. Nothing to copy is no error; a file that cannot be copied is left out
 * (its message then says it could not be read).
 */
export function copyImages(from: string, to: string): void {
  let names: string[];
  try {
    names = readdirSync(join(from, IMAGES_FOLDER));
  } catch {
    return;
  }
  mkdirSync(join(to, IMAGES_FOLDER), { recursive: true, mode: 0o700 });
  for (const name of names) {
    if (!STORED_NAME.test(`${IMAGES_FOLDER}/${name}`)) continue;
    const source = join(from, IMAGES_FOLDER, name);
    const target = join(to, IMAGES_FOLDER, name);
    try {
      linkSync(source, target);
    } catch {
      try {
        copyFileSync(source, target);
      } catch {
        // Left out: the request says the image could not be read.
      }
    }
  }
}
