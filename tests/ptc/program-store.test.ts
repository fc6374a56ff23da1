import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createProgramStore, DEFAULT_STORE_MAX_BYTES } from '../../src/ptc/program-store';
import { useTempWorkspace } from '../support/tool-context';

const folder = useTempWorkspace('fence-program-store-');
const storeFile = () => join(folder(), 'program-store.json');
const onDisk = (): unknown => JSON.parse(readFileSync(storeFile(), 'utf8'));

describe('createProgramStore', () => {
  it('gives back what was set, and undefined for keys never set', () => {
    const store = createProgramStore(storeFile());
    store.set('count', 3);
    store.set('names', ['Ada', 'Lin']);
    store.set('limits', { L3: 1500, nested: { ok: true, none: null } });
    expect(store.get('count')).toBe(3);
    expect(store.get('names')).toEqual(['Ada', 'Lin']);
    expect(store.get('limits')).toEqual({ L3: 1500, nested: { ok: true, none: null } });
    expect(store.get('missing')).toBeUndefined();
  });

  it('writes through to its file, which a new store reads back', () => {
    const first = createProgramStore(storeFile());
    first.set('a', 'one');
    first.set('b', [1, 2]);
    expect(onDisk()).toEqual({ a: 'one', b: [1, 2] });
    const second = createProgramStore(storeFile());
    expect(second.get('a')).toBe('one');
    expect(second.get('b')).toEqual([1, 2]);
  });

  it('replaces the value of a key set again', () => {
    const store = createProgramStore(storeFile());
    store.set('a', 1);
    store.set('a', 2);
    expect(store.get('a')).toBe(2);
    expect(onDisk()).toEqual({ a: 2 });
  });

  it('removes a key set to undefined, in memory and on disk', () => {
    const store = createProgramStore(storeFile());
    store.set('keep', 1);
    store.set('drop', 2);
    store.set('drop', undefined);
    expect(store.get('drop')).toBeUndefined();
    expect(onDisk()).toEqual({ keep: 1 });
    expect(createProgramStore(storeFile()).get('drop')).toBeUndefined();
  });

  it('writes nothing until a value is set', () => {
    const store = createProgramStore(storeFile());
    expect(store.get('a')).toBeUndefined();
    expect(existsSync(storeFile())).toBe(false);
  });

  it('allows exactly maxBytes of JSON and throws past it, keeping the old values', () => {
    // {"a":1} is 7 bytes of JSON.
    const exact = createProgramStore(storeFile(), 7);
    exact.set('a', 1);
    expect(exact.get('a')).toBe(1);

    const store = createProgramStore(join(folder(), 'small.json'), 64);
    store.set('a', 'small');
    expect(() => store.set('b', 'x'.repeat(100))).toThrow(/store is full/);
    expect(() => store.set('a', 'x'.repeat(100))).toThrow(/store is full/);
    expect(store.get('a')).toBe('small');
    expect(store.get('b')).toBeUndefined();
    expect(JSON.parse(readFileSync(join(folder(), 'small.json'), 'utf8'))).toEqual({ a: 'small' });
  });

  it('counts the cap in bytes of UTF-8, not in characters', () => {
    // {"k":"éé"} is 10 characters but 12 bytes.
    const store = createProgramStore(storeFile(), 11);
    expect(() => store.set('k', 'éé')).toThrow(/store is full/);
    store.set('k', 'ee');
    expect(store.get('k')).toBe('ee');
  });

  it('names the cap in KiB when full', () => {
    const store = createProgramStore(storeFile(), 2048);
    expect(() => store.set('big', 'x'.repeat(4096))).toThrow('store is full: it may hold 2 KiB of JSON in a session');
  });

  it('refuses a value that is not JSON, keeping the old values', () => {
    const store = createProgramStore(storeFile());
    store.set('a', 1);
    expect(() => store.set('b', 10n)).toThrow();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => store.set('c', cyclic)).toThrow();
    expect(onDisk()).toEqual({ a: 1 });
    expect(store.get('b')).toBeUndefined();
  });

  it('starts empty from a file that is not JSON, or not a JSON object, and then overwrites it', () => {
    for (const text of ['{ torn', '', '[1,2,3]', '"text"', 'null', '42']) {
      writeFileSync(storeFile(), text);
      const store = createProgramStore(storeFile());
      expect(store.get('0'), text).toBeUndefined();
      store.set('fresh', true);
      expect(onDisk(), text).toEqual({ fresh: true });
    }
  });

  it('defaults to a 256 KiB cap', () => {
    expect(DEFAULT_STORE_MAX_BYTES).toBe(256 * 1024);
    const store = createProgramStore(storeFile());
    store.set('k', 'x'.repeat(200 * 1024));
    expect(() => store.set('k', 'x'.repeat(257 * 1024))).toThrow(/store is full: it may hold 256 KiB/);
  });
});
