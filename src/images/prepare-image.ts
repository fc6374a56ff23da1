import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Sharp } from 'sharp';
import type { ImageMediaType } from '../conversation/message';
import { detectImageType, imageTypeName } from './image-type';

/** Image files larger than this are refused before they are decoded. */
export const IMAGE_FILE_LIMIT_BYTES = 20 * 1024 * 1024;

/**
 * The longest edge, in pixels, of an image sent to a model: larger ones are scaled down to it.
 * Anthropic recommends at most 1568 px (it scales larger ones itself, and refuses over 8000);
 * OpenAI fits high-detail images into 2048 px then 768 px on the short side. One target fits
 * both, so the same stored image serves every provider.
 */
export const IMAGE_LONG_EDGE = 1568;

/**
 * The most bytes of a sent image: Anthropic takes at most 5 MB of base64 per image (3.75 MB of
 * bytes). A larger result is encoded again as JPEG, at lower quality until it fits.
 */
export const IMAGE_SENT_LIMIT_BYTES = 3_750_000;

/**
 * The most pixels an image may have to be decoded at all: a small file can claim (and
 * compress) a huge image, whose decoding would take gigabytes. 128 million pixels still takes
 * the photos of a 108-megapixel phone camera.
 */
export const IMAGE_PIXEL_LIMIT = 128_000_000;

/** An image checked, decoded and made ready to send (see `prepareImage`). */
export interface PreparedImage {
  /** The bytes to send: the file's own when it needed no change, else the scaled or re-encoded image. */
  bytes: Buffer;
  mediaType: ImageMediaType;
  width: number;
  height: number;
  /** Hex SHA-256 of `bytes`: the image's name in the session folder. */
  sha256: string;
  /** What the file was: its type, size in pixels (as displayed, after any EXIF rotation) and bytes. */
  original: { mediaType: ImageMediaType; width: number; height: number; bytes: number };
  /** What the user or the tool called it (the path as given), for messages. */
  name: string;
}

/**
 * Reads the image file at `path` (absolute) and prepares it (see `prepareImageBytes`). `name`
 * is how messages call it (default: `path`). Never throws: a missing, unreadable, empty or
 * oversized file, or one that is not a whole PNG, JPEG, GIF or WebP image, gives
 * `{ error }`, one sentence naming the file.
 */
export async function prepareImage(path: string, options: { name?: string } = {}): Promise<PreparedImage | { error: string }> {
  const name = options.name ?? path;
  let handle;
  try {
    // Without blocking: a named pipe would otherwise wait for a writer forever.
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { error: `${name} does not exist.` };
    if (code === 'EACCES' || code === 'EPERM') return { error: `${name} cannot be read (permission denied).` };
    if (code === 'EISDIR') return { error: `${name} is a folder, not an image.` };
    return { error: `${name} cannot be read (${code ?? String(error)}).` };
  }
  try {
    const info = await handle.stat();
    if (info.isDirectory()) return { error: `${name} is a folder, not an image.` };
    if (!info.isFile()) return { error: `${name} is not a regular file.` };
    const tooLarge = sizeProblem(name, info.size);
    if (tooLarge) return { error: tooLarge };
    return await prepareImageBytes(await handle.readFile(), name);
  } catch (error) {
    return { error: `${name} cannot be read (${error instanceof Error ? error.message : String(error)}).` };
  } finally {
    await handle.close();
  }
}

/**
 * Prepares an image's bytes to be sent to a model: its type is told by its first bytes (not
 * its name), it is decoded whole (so a damaged or truncated file is refused here, not by the
 * model's API), turned upright when its EXIF data says so, scaled down to `IMAGE_LONG_EDGE`
 * on its longest edge, and encoded again when it changed (PNG stays PNG, JPEG stays JPEG, WebP
 * stays WebP; a GIF sends its first frame as PNG), when it carries metadata (EXIF, XMP, IPTC:
 * dropped, so a photo's location is not sent), or when it is over
 * `IMAGE_SENT_LIMIT_BYTES` (then JPEG). An image needing none of that is sent as it is.
 * `sharp` is loaded only here, on the first image. Never throws: `{ error }` is one sentence
 * naming the image by `name`.
 */
export async function prepareImageBytes(bytes: Buffer, name: string): Promise<PreparedImage | { error: string }> {
  const tooLarge = sizeProblem(name, bytes.length);
  if (tooLarge) return { error: tooLarge };
  const type = detectImageType(bytes);
  if (type === undefined) return { error: `${name} is not a PNG, JPEG, GIF or WebP image.` };
  const damaged = `${name} cannot be read as a ${imageTypeName(type)} image: the file is damaged or incomplete.`;
  let sharp;
  try {
    sharp = (await import('sharp')).default;
  } catch (error) {
    return { error: `${name} cannot be read: the image library did not load (${error instanceof Error ? error.message : String(error)}).` };
  }
  try {
    const input = () => sharp(bytes, { failOn: 'error', animated: false, limitInputPixels: IMAGE_PIXEL_LIMIT });
    // The header alone, whatever size it claims: the limit is checked just below, with the size named.
    const meta = await sharp(bytes, { failOn: 'error', limitInputPixels: false }).metadata();
    if (!meta.width || !meta.height) return { error: damaged };
    if (meta.width * meta.height > IMAGE_PIXEL_LIMIT) return { error: tooManyPixels(name, meta.width, meta.height) };
    const turned = meta.orientation !== undefined && meta.orientation >= 5;
    const width = turned ? meta.height : meta.width;
    const height = turned ? meta.width : meta.height;
    const original = { mediaType: type, width, height, bytes: bytes.length };
    const scale = Math.min(1, IMAGE_LONG_EDGE / Math.max(width, height));
    // Metadata (EXIF: the camera, where and when a photo was taken) is never sent: encoding again drops it.
    const hasMetadata = meta.exif !== undefined || meta.xmp !== undefined || meta.iptc !== undefined;
    const mustChange = scale < 1 || type === 'image/gif' || (meta.orientation ?? 1) > 1 || hasMetadata || bytes.length > IMAGE_SENT_LIMIT_BYTES;
    if (!mustChange) {
      // Decoding the whole image is the only way to know it is not cut short.
      await input().raw().toBuffer();
      return finish(bytes, type, width, height, original, name);
    }
    const size = { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
    const pipeline = () => input().rotate().resize({ ...size, fit: 'fill' });
    const outType: ImageMediaType = type === 'image/gif' ? 'image/png' : type;
    let out = await encode(pipeline(), outType, 85);
    let mediaType = outType;
    for (const quality of [85, 70, 55, 40]) {
      if (out.data.length <= IMAGE_SENT_LIMIT_BYTES) break;
      out = await encode(pipeline().flatten({ background: '#ffffff' }), 'image/jpeg', quality);
      mediaType = 'image/jpeg';
    }
    if (out.data.length > IMAGE_SENT_LIMIT_BYTES) return { error: `${name} is still over ${megabytes(IMAGE_SENT_LIMIT_BYTES)} after scaling it down.` };
    return finish(out.data, mediaType, out.info.width, out.info.height, original, name);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/pixel limit/i.test(message)) return { error: `${name} has too many pixels to decode (at most ${IMAGE_PIXEL_LIMIT / 1_000_000} million are taken).` };
    return { error: damaged };
  }
}

/** One line about a prepared image for the model and the person: `shot.png: PNG 3000×2000, sent scaled to 1568×1045.` */
export function describeImage(image: PreparedImage): string {
  const { original } = image;
  const was = `${imageTypeName(original.mediaType)} ${original.width}×${original.height}`;
  const same = image.width === original.width && image.height === original.height;
  if (same && image.mediaType === original.mediaType) return `${image.name}: ${was}.`;
  const as = image.mediaType === original.mediaType ? '' : ` as ${imageTypeName(image.mediaType)}`;
  const frame = original.mediaType === 'image/gif' ? ' (first frame)' : '';
  return same ? `${image.name}: ${was}, sent${as}${frame}.` : `${image.name}: ${was}, sent scaled to ${image.width}×${image.height}${as}${frame}.`;
}

/** Whether `result` is a prepared image rather than an error. */
export function isPrepared(result: PreparedImage | { error: string }): result is PreparedImage {
  return !('error' in result);
}

async function encode(pipeline: Sharp, type: ImageMediaType, quality: number) {
  const encoded =
    type === 'image/jpeg' ? pipeline.jpeg({ quality }) : type === 'image/webp' ? pipeline.webp({ quality }) : pipeline.png({ compressionLevel: 9 });
  return encoded.toBuffer({ resolveWithObject: true });
}

function finish(bytes: Buffer, mediaType: ImageMediaType, width: number, height: number, original: PreparedImage['original'], name: string): PreparedImage {
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  return { bytes, mediaType, width, height, sha256, original, name };
}

function tooManyPixels(name: string, width: number, height: number): string {
  return `${name} is ${width}×${height} pixels, too many to decode (at most ${IMAGE_PIXEL_LIMIT / 1_000_000} million are taken).`;
}

function sizeProblem(name: string, size: number): string | undefined {
  if (size === 0) return `${name} is empty.`;
  if (size > IMAGE_FILE_LIMIT_BYTES) return `${name} is too large (${megabytes(size)}; images up to ${megabytes(IMAGE_FILE_LIMIT_BYTES)} are taken).`;
  return undefined;
}

function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1).replace(/\.0$/, '')} MB`;
}

