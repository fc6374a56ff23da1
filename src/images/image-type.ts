import type { ImageMediaType } from '../conversation/message';

/**
 * The image type a file's first bytes say it is: PNG, JPEG, GIF or WebP, whatever the file's
 * name says; undefined for anything else (another image type, text, a truncated header).
 */
export function detectImageType(bytes: Uint8Array): ImageMediaType | undefined {
  const starts = (offset: number, ...expected: number[]) => expected.every((byte, index) => bytes[offset + index] === byte);
  if (starts(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0, 0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(0, 0x47, 0x49, 0x46, 0x38) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) return 'image/gif';
  if (starts(0, 0x52, 0x49, 0x46, 0x46) && starts(8, 0x57, 0x45, 0x42, 0x50)) return 'image/webp';
  return undefined;
}

/** The file name extension fence stores an image type under. */
export function imageExtension(type: ImageMediaType): 'png' | 'jpg' | 'gif' | 'webp' {
  return type === 'image/jpeg' ? 'jpg' : type === 'image/png' ? 'png' : type === 'image/gif' ? 'gif' : 'webp';
}

/** The short name of an image type for people: `PNG`, `JPEG`, `GIF`, `WebP`. */
export function imageTypeName(type: ImageMediaType): string {
  return type === 'image/jpeg' ? 'JPEG' : type === 'image/png' ? 'PNG' : type === 'image/gif' ? 'GIF' : 'WebP';
}
