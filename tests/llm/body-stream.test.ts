import { describe, expect, it } from 'vitest';
import { BodyStream, type BodySource } from '../../src/llm/body-stream';
import { FetchHeaders } from '../../src/llm/fetch-headers';
import { FetchResponse } from '../../src/llm/fetch-response';

const bytes = (text: string) => new TextEncoder().encode(text);

/** A source over `parts`, failing with `failure` after them when given; records cancels. */
function source(parts: string[], failure?: Error): BodySource & { cancelled: number } {
  const left = [...parts];
  return {
    cancelled: 0,
    async next() {
      const part = left.shift();
      if (part !== undefined) return { done: false, value: bytes(part) };
      if (failure) throw failure;
      return { done: true, value: undefined };
    },
    cancel() {
      this.cancelled++;
    },
  };
}

const response = (body: BodyStream | null, status = 200) =>
  new FetchResponse(body, { status, statusText: 'OK', headers: new FetchHeaders({ 'content-type': 'text/plain' }), url: 'http://127.0.0.1/x' });

describe('BodyStream', () => {
  it('is read with for await, locked meanwhile, and unlocked at its end', async () => {
    const body = new BodyStream(source(['a', 'b']));
    const read: string[] = [];
    for await (const chunk of body) {
      expect(body.locked).toBe(true);
      read.push(new TextDecoder().decode(chunk));
    }
    expect(read).toEqual(['a', 'b']);
    expect(body.locked).toBe(false);
  });

  it('stops its source when a reader leaves early, and reads as ended afterwards', async () => {
    const from = source(['a', 'b', 'c']);
    const body = new BodyStream(from);
    for await (const chunk of body) if (chunk.length > 0) break;
    expect(from.cancelled).toBe(1);
    const reader = body.getReader();
    expect(await reader.read()).toEqual({ done: true, value: undefined });
  });

  it('gives one reader at a time, and a failure after the chunks that came before it', async () => {
    const failure = Object.assign(new Error('reset'), { code: 'ECONNRESET' });
    const body = new BodyStream(source(['kept'], failure));
    const reader = body.getReader();
    expect(() => body.getReader()).toThrow(/locked/);
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('kept');
    await expect(reader.read()).rejects.toBe(failure);
    await expect(reader.closed).rejects.toBe(failure);
    reader.releaseLock();
    expect(body.locked).toBe(false);
  });

  it('cancels from a reader, which settles the reader as closed', async () => {
    const from = source(['a']);
    const reader = new BodyStream(from).getReader();
    await reader.cancel();
    await expect(reader.closed).resolves.toBeUndefined();
    expect(from.cancelled).toBe(1);
  });
});

describe('FetchResponse', () => {
  it('reads its body once as text or JSON, and says it was used', async () => {
    const text = response(new BodyStream(source(['{"a":', '1}'])));
    expect(text.ok).toBe(true);
    expect(text.bodyUsed).toBe(false);
    expect(await text.json()).toEqual({ a: 1 });
    expect(text.bodyUsed).toBe(true);
    await expect(text.text()).rejects.toThrow(TypeError);
  });

  it('gives bytes and a typed blob, and an empty body for none', async () => {
    const blob = await response(new BodyStream(source(['hi']))).blob();
    expect(blob.type).toBe('text/plain');
    expect(await blob.text()).toBe('hi');
    expect((await response(null, 204).arrayBuffer()).byteLength).toBe(0);
  });

  it('refuses a body a reader holds, and says plainly that it cannot clone or give forms', async () => {
    const held = response(new BodyStream(source(['x'])));
    held.body?.getReader();
    await expect(held.text()).rejects.toThrow(TypeError);
    expect(() => held.clone()).toThrow(/not supported/);
    await expect(held.formData()).rejects.toThrow(/not supported/);
    expect(response(null, 503).ok).toBe(false);
  });
});
