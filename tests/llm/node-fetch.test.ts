import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createNodeFetch, ResponseBody } from '../../src/llm/node-fetch';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm';

let server: FakeLlm;
beforeEach(async () => {
  server = await startFakeLlm();
});
afterEach(async () => {
  await server.close();
});

const streamRequest = (signal?: AbortSignal): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'm', stream: true, stream_options: { include_usage: true } }),
  signal,
});

async function listen(server: Server | ReturnType<typeof createHttpServer>): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('createNodeFetch', () => {
  it('posts a string body and streams the response body', async () => {
    server.reply((r) => r.text('Hello').text(' there'));
    const fetch = createNodeFetch();
    const response = await fetch(`${server.openaiBaseURL}/chat/completions`, streamRequest());
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(typeof response.body?.[Symbol.asyncIterator]).toBe('function');
    const text = await response.text();
    expect(text).toContain('"content":"Hello"');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(server.requests[0]?.body).toMatchObject({ model: 'm', stream: true });
    expect(server.requests[0]?.headers['content-length']).toBe(String(Buffer.byteLength(JSON.stringify({ model: 'm', stream: true, stream_options: { include_usage: true } }))));
  });

  it('sends a string body as UTF-8 with its length in bytes', async () => {
    const received: { length?: string; body: string }[] = [];
    const plain = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ length: req.headers['content-length'], body: Buffer.concat(chunks).toString('utf8') });
        res.end('ok');
      });
    });
    const url = await listen(plain);
    try {
      const body = JSON.stringify({ text: 'café ✓ 😀' });
      const response = await createNodeFetch()(url, { method: 'POST', body });
      expect(await response.text()).toBe('ok');
      expect(received).toEqual([{ length: String(Buffer.byteLength(body)), body }]);
    } finally {
      plain.close();
    }
  });

  it('keeps the connection alive between requests', async () => {
    server.reply((r) => r.text('one')).reply((r) => r.text('two'));
    const fetch = createNodeFetch();
    await (await fetch(`${server.openaiBaseURL}/chat/completions`, streamRequest())).text();
    await (await fetch(`${server.openaiBaseURL}/chat/completions`, streamRequest())).text();
    expect(server.requests).toHaveLength(2);
    expect(server.connections).toBe(1);
  });

  it('rejects with an AbortError when aborted before the response arrives', async () => {
    const silent = createTcpServer(() => undefined);
    const url = await listen(silent);
    try {
      const controller = new AbortController();
      const pending = createNodeFetch()(url, { signal: controller.signal });
      controller.abort();
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    } finally {
      silent.close();
    }
  });

  it('errors the body with an AbortError and closes the connection when aborted mid-body', async () => {
    server.reply((r) => r.text('first').hang());
    const controller = new AbortController();
    const response = await createNodeFetch()(`${server.openaiBaseURL}/chat/completions`, streamRequest(controller.signal));
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    controller.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });
    await server.responseClosed(0);
  });

  it('delivers the bytes that came before a dropped connection, then a connection error', async () => {
    server.reply((r) => r.text('before the cut').cut());
    const response = await createNodeFetch()(`${server.openaiBaseURL}/chat/completions`, streamRequest());
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    const failure = await (async () => {
      for (;;) {
        try {
          const { done, value } = await reader.read();
          if (done) return undefined;
          received += decoder.decode(value, { stream: true });
        } catch (error) {
          return error;
        }
      }
    })();
    expect(received).toContain('before the cut');
    expect(failure).toMatchObject({ code: 'ECONNRESET' });
    expect(failure).not.toMatchObject({ name: 'AbortError' });
  });

  it('rejects with fetch failed and the socket error as cause when nothing listens', async () => {
    const deadURL = server.url;
    await server.close();
    server = await startFakeLlm();
    await expect(createNodeFetch()(deadURL)).rejects.toMatchObject({ name: 'TypeError', message: 'fetch failed', cause: { code: 'ECONNREFUSED' } });
  });

  it('decodes gzip bodies and gives no body for 204', async () => {
    const plain = createHttpServer((req, res) => {
      if (req.url === '/empty') {
        res.writeHead(204).end();
        return;
      }
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'text/plain' }).end(gzipSync('compressed hello'));
    });
    const url = await listen(plain);
    try {
      const fetch = createNodeFetch();
      expect(await (await fetch(`${url}/zipped`)).text()).toBe('compressed hello');
      const empty = await fetch(`${url}/empty`);
      expect(empty.status).toBe(204);
      expect(empty.body).toBeNull();
    } finally {
      plain.closeAllConnections();
      plain.close();
    }
  });
});

describe('NodeFetch.preconnect', () => {
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  it('opens the connection before the request, and the request goes out on it', async () => {
    server.reply((r) => r.text('on the early connection'));
    const fetch = createNodeFetch();
    fetch.preconnect(server.openaiBaseURL);
    await until(() => server.connections === 1);
    expect(server.connections).toBe(1);
    expect(server.requests).toHaveLength(0);
    const text = await (await fetch(`${server.openaiBaseURL}/chat/completions`, streamRequest())).text();
    expect(text).toContain('on the early connection');
    expect(server.connections).toBe(1);
  });

  it('opens one connection per server however often it is asked, and none for other protocols', async () => {
    const fetch = createNodeFetch();
    fetch.preconnect(server.openaiBaseURL);
    fetch.preconnect(`${server.url}/other/path`);
    fetch.preconnect('file:///etc/passwd');
    fetch.preconnect('not a url');
    await until(() => server.connections === 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(server.connections).toBe(1);
  });

  it('leaves a refused early connection out: the request makes its own and reports what happens to it', async () => {
    const deadURL = server.url;
    await server.close();
    const fetch = createNodeFetch();
    fetch.preconnect(deadURL);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await expect(fetch(deadURL)).rejects.toMatchObject({ message: 'fetch failed', cause: { code: 'ECONNREFUSED' } });
    server = await startFakeLlm();
  });

  it('closes an early connection nobody took after the idle time; the next request connects anew', async () => {
    server.reply((r) => r.text('later'));
    const fetch = createNodeFetch({ idleSocketMs: 30 });
    fetch.preconnect(server.openaiBaseURL);
    await until(() => server.connections === 1);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await (await fetch(`${server.openaiBaseURL}/chat/completions`, streamRequest())).text()).toContain('later');
    expect(server.connections).toBe(2);
  });

  it('does not keep a process alive', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const module = new URL('../../src/llm/node-fetch.ts', import.meta.url).href;
    const script = `
      const { createNodeFetch } = await import(${JSON.stringify(module)});
      createNodeFetch({ idleSocketMs: 60000 }).preconnect(${JSON.stringify(server.openaiBaseURL)});
      setTimeout(() => undefined, 50);
    `;
    // With the connection open for a minute, only an unreferenced socket lets the process end in time.
    await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 15_000 });
    await until(() => server.connections === 1);
    expect(server.connections).toBe(1);
  });
});

describe('ResponseBody', () => {
  const reset = () => Object.assign(new Error('aborted'), { code: 'ECONNRESET' });

  it('delivers what arrived before a failure, then the failure', async () => {
    const source = new PassThrough();
    let settled = 0;
    const body = new ResponseBody(source, () => settled++, () => undefined);
    const closed = new Promise((resolve) => source.on('close', resolve));
    source.write('kept');
    source.destroy(reset());
    await closed;
    const reader = body.stream.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value ?? []).toString()).toBe('kept');
    await expect(reader.read()).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(settled).toBe(1);
  });

  it('drops what is buffered when failed with discard', async () => {
    const source = new PassThrough();
    const body = new ResponseBody(source, () => undefined, () => undefined);
    const arrived = once(source, 'data');
    source.write('dropped');
    await arrived;
    body.fail(new DOMException('This operation was aborted', 'AbortError'), { discard: true });
    await expect(body.stream.getReader().read()).rejects.toMatchObject({ name: 'AbortError' });
  });
});
