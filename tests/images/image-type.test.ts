import { describe, expect, it } from 'vitest';
import { detectImageType, imageExtension, imageTypeName } from '../../src/images/image-type';

const bytes = (...values: (number | string)[]) =>
  Buffer.concat(values.map((value) => (typeof value === 'string' ? Buffer.from(value, 'latin1') : Buffer.from([value]))));

describe('detectImageType', () => {
  it('tells the four types by their first bytes', () => {
    expect(detectImageType(bytes(0x89, 'PNG\r\n', 0x1a, '\n', 0, 0))).toBe('image/png');
    expect(detectImageType(bytes(0xff, 0xd8, 0xff, 0xe0))).toBe('image/jpeg');
    expect(detectImageType(bytes('GIF89a', 1, 0))).toBe('image/gif');
    expect(detectImageType(bytes('GIF87a'))).toBe('image/gif');
    expect(detectImageType(bytes('RIFF', 0, 0, 0, 0, 'WEBPVP8 '))).toBe('image/webp');
  });

  it('refuses what only looks like one: another RIFF file, a GIF of no known version, text, a cut header', () => {
    expect(detectImageType(bytes('RIFF', 0, 0, 0, 0, 'WAVEfmt '))).toBeUndefined();
    expect(detectImageType(bytes('GIF88a'))).toBeUndefined();
    expect(detectImageType(bytes('PNG file, honestly'))).toBeUndefined();
    expect(detectImageType(bytes(0x89, 'PN'))).toBeUndefined();
    expect(detectImageType(bytes(0xff, 0xd8))).toBeUndefined();
    expect(detectImageType(new Uint8Array())).toBeUndefined();
    expect(detectImageType(bytes('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeUndefined();
  });

  it('names and files each type', () => {
    expect(['image/png', 'image/jpeg', 'image/gif', 'image/webp'].map((type) => imageExtension(type as never))).toEqual(['png', 'jpg', 'gif', 'webp']);
    expect(imageTypeName('image/webp')).toBe('WebP');
  });
});
