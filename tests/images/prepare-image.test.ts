import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { describeImage, IMAGE_SENT_LIMIT_BYTES, isPrepared, prepareImage, prepareImageBytes, type PreparedImage } from '../../src/images/prepare-image';

let dir: string;
beforeAll(() => {
  mkdirSync('/var/tmp/fence-tests', { recursive: true });
  dir = mkdtempSync('/var/tmp/fence-tests/prepare-image-');
});

function prepared(result: PreparedImage | { error: string }): PreparedImage {
  if (!isPrepared(result)) throw new Error(result.error);
  return result;
}

const noise = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } });

describe('prepareImage', () => {
  it('sends a small image as it is', async () => {
    const png = await sharp({ create: { width: 30, height: 20, channels: 4, background: '#ff000080' } }).png().toBuffer();
    const image = prepared(await prepareImageBytes(png, 'dot.png'));
    expect(image.bytes.equals(png)).toBe(true);
    expect(image).toMatchObject({ mediaType: 'image/png', width: 30, height: 20, name: 'dot.png', original: { width: 30, height: 20, bytes: png.length } });
    expect(image.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(describeImage(image)).toBe('dot.png: PNG 30×20.');
  });

  it('tells the type by the bytes, not the name', async () => {
    const jpeg = await sharp({ create: { width: 10, height: 10, channels: 3, background: '#00ff00' } }).jpeg().toBuffer();
    const image = prepared(await prepareImageBytes(jpeg, 'looks-like.png'));
    expect(image.mediaType).toBe('image/jpeg');
    expect((await prepareImageBytes(Buffer.from('not an image at all'), 'notes.png'))).toEqual({ error: 'notes.png is not a PNG, JPEG, GIF or WebP image.' });
  });

  it('scales a large WebP to 1568 px on its long edge, staying WebP', async () => {
    const webp = await sharp({ create: { width: 500, height: 2000, channels: 3, background: '#336699' } }).webp().toBuffer();
    const image = prepared(await prepareImageBytes(webp, 'tall.webp'));
    expect(image).toMatchObject({ mediaType: 'image/webp', width: 392, height: 1568 });
    expect((await sharp(image.bytes).metadata()).format).toBe('webp');
    expect(describeImage(image)).toBe('tall.webp: WebP 500×2000, sent scaled to 392×1568.');
  });

  it('sends the first frame of a GIF as PNG', async () => {
    const gif = await sharp({ create: { width: 40, height: 40, channels: 3, background: '#0000ff' } }).gif().toBuffer();
    const image = prepared(await prepareImageBytes(gif, 'anim.gif'));
    expect(image).toMatchObject({ mediaType: 'image/png', width: 40, height: 40 });
    expect(describeImage(image)).toBe('anim.gif: GIF 40×40, sent as PNG (first frame).');
  });

  it('turns a JPEG upright as its EXIF orientation says', async () => {
    const jpeg = await sharp({ create: { width: 60, height: 20, channels: 3, background: '#123456' } }).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const image = prepared(await prepareImageBytes(jpeg, 'phone.jpg'));
    expect(image).toMatchObject({ mediaType: 'image/jpeg', width: 20, height: 60, original: { width: 20, height: 60 } });
  });

  it("never sends a photo's metadata: where and with what it was taken", async () => {
    const marker = 'fence-test-exif-marker-5e1d';
    const jpeg = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#445566' } })
      .jpeg()
      .withExif({ IFD0: { Copyright: marker, Make: marker } })
      .toBuffer();
    expect(jpeg.includes(marker)).toBe(true);
    const image = prepared(await prepareImageBytes(jpeg, 'photo.jpg'));
    expect(image).toMatchObject({ mediaType: 'image/jpeg', width: 40, height: 30 });
    expect(image.bytes.includes(marker)).toBe(false);
    expect((await sharp(image.bytes).metadata()).exif).toBeUndefined();
  });

  it('encodes an image still too large after scaling as JPEG, within the limit', async () => {
    const png = await noise(1568, 1568).png({ compressionLevel: 0 }).toBuffer();
    expect(png.length).toBeGreaterThan(IMAGE_SENT_LIMIT_BYTES);
    const image = prepared(await prepareImageBytes(png, 'noise.png'));
    expect(image.mediaType).toBe('image/jpeg');
    expect(image.bytes.length).toBeLessThanOrEqual(IMAGE_SENT_LIMIT_BYTES);
    expect(describeImage(image)).toBe('noise.png: PNG 1568×1568, sent as JPEG.');
  });

  it('refuses a damaged image with one sentence, and never throws', async () => {
    const png = await noise(200, 200).png().toBuffer();
    expect(await prepareImageBytes(png.subarray(0, png.length - 200), 'cut.png')).toEqual({
      error: 'cut.png cannot be read as a PNG image: the file is damaged or incomplete.',
    });
    const header = Buffer.concat([png.subarray(0, 16), Buffer.alloc(100, 0xab)]);
    expect(await prepareImageBytes(header, 'garbled.png')).toEqual({ error: 'garbled.png cannot be read as a PNG image: the file is damaged or incomplete.' });
    expect(await prepareImageBytes(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]), 'stub.jpg')).toEqual({
      error: 'stub.jpg cannot be read as a JPEG image: the file is damaged or incomplete.',
    });
  });

  it('refuses a missing, empty, folder, named pipe or oversized file by name before decoding it', async () => {
    expect(await prepareImage(join(dir, 'nope.png'), { name: 'nope.png' })).toEqual({ error: 'nope.png does not exist.' });
    writeFileSync(join(dir, 'empty.png'), '');
    expect(await prepareImage(join(dir, 'empty.png'), { name: 'empty.png' })).toEqual({ error: 'empty.png is empty.' });
    expect(await prepareImage(dir, { name: 'shots' })).toEqual({ error: 'shots is a folder, not an image.' });
    writeFileSync(join(dir, 'huge.png'), '');
    truncateSync(join(dir, 'huge.png'), 21 * 1024 * 1024);
    execFileSync('mkfifo', [join(dir, 'pipe.png')]);
    expect(await prepareImage(join(dir, 'pipe.png'), { name: 'pipe.png' })).toEqual({ error: 'pipe.png is not a regular file.' });
    expect(await prepareImage(join(dir, 'huge.png'), { name: 'huge.png' })).toEqual({ error: 'huge.png is too large (21 MB; images up to 20 MB are taken).' });
  });
});

/** A PNG chunk: length, type, data and the CRC of type and data. */
function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

describe('an image that claims more pixels than it is worth decoding', () => {
  it('is refused from its header, before it is decoded', async () => {
    const header = Buffer.alloc(13);
    header.writeUInt32BE(12_000, 0);
    header.writeUInt32BE(12_000, 4);
    header.set([8, 2, 0, 0, 0], 8);
    const bomb = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk('IHDR', header),
      chunk('IDAT', deflateSync(Buffer.alloc(12_000 * 3 + 1))),
      chunk('IEND', Buffer.alloc(0)),
    ]);
    expect(bomb.length).toBeLessThan(10_000);
    expect(await prepareImageBytes(bomb, 'bomb.png')).toEqual({
      error: 'bomb.png is 12000×12000 pixels, too many to decode (at most 128 million are taken).',
    });
  });
});
