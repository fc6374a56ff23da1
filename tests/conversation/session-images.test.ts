import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMessage } from '../../src/conversation/message';
import { readStoredImage, storeImage } from '../../src/conversation/session-images';
import { SessionStore } from '../../src/conversation/session-store';
import { makeTempWorkspace } from '../support/tool-context';

let home: string;
const opened: SessionStore[] = [];
beforeEach(async () => {
  home = await makeTempWorkspace('fence-session-images-');
});
afterEach(async () => {
  for (const store of opened.splice(0)) store.close();
  await rm(home, { recursive: true, force: true });
});

const bytes = Buffer.from('not really a png, the store does not look');
const image = { bytes, sha256: createHash('sha256').update(bytes).digest('hex'), mediaType: 'image/png' as const, width: 3, height: 2, name: 'a.png' };

function create(id: string): SessionStore {
  const store = SessionStore.create(home, { id, model: 'local/test', workspace: '/w', toolFormat: 'markdown', tools: ['read'] });
  opened.push(store);
  return store;
}

describe('session images', () => {
  it('stores an image once by its hash, private, and reads it back as base64', () => {
    const store = create('one');
    const ref = storeImage(store.dir, image);
    expect(ref).toEqual({ file: `images/${image.sha256}.png`, mediaType: 'image/png', width: 3, height: 2, name: 'a.png' });
    expect(storeImage(store.dir, image)).toEqual(ref);
    expect(readdirSync(join(store.dir, 'images'))).toEqual([`${image.sha256}.png`]);
    expect(statSync(join(store.dir, ref.file)).mode & 0o777).toBe(0o600);
    expect(statSync(join(store.dir, 'images')).mode & 0o777).toBe(0o700);
    expect(readStoredImage(store.dir, ref)).toBe(bytes.toString('base64'));
  });

  it('reads nothing but a hashed file of the images folder, whatever a damaged log names', () => {
    const store = create('one');
    writeFileSync(join(store.dir, 'secret.png'), 'secret');
    for (const file of ['secret.png', '../one/secret.png', 'images/../secret.png', `images/${'a'.repeat(64)}.png/../../secret.png`, 'conversation.jsonl', '/etc/passwd']) {
      expect(readStoredImage(store.dir, { file })).toBeUndefined();
    }
    expect(readStoredImage(store.dir, { file: `images/${'0'.repeat(64)}.png` })).toBeUndefined();
  });

  it('goes with a forked session, which sends it again', () => {
    const store = create('one');
    const ref = storeImage(store.dir, image);
    store.append(createMessage('user', 'look', { meta: { images: [ref] } }));
    const forked = store.fork(home, 'two');
    opened.push(forked);
    expect(forked.log[0]?.meta?.images).toEqual([ref]);
    expect(readStoredImage(forked.dir, ref)).toBe(bytes.toString('base64'));
    // The log names the file; it never holds the bytes.
    expect(readFileSync(join(forked.dir, 'conversation.jsonl'), 'utf8')).not.toContain(bytes.toString('base64'));
  });

  it('forks a session without images without making an images folder', () => {
    const forked = create('one').fork(home, 'two');
    opened.push(forked);
    expect(existsSync(join(forked.dir, 'images'))).toBe(false);
  });
});
