import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fetchPage } from '../../src/web/fetch-page';
import { webHosts } from '../../src/web/web-hosts';
import { startPageServer, type PageServer } from '../support/page-server';

let pages: PageServer;
beforeEach(async () => {
  pages = await startPageServer();
});
afterEach(async () => {
  await pages.close();
});

/** A resolver that answers every name with `addresses`, as a hostile DNS server would. */
const answering = (...addresses: string[]) => async () => addresses;

describe('fetchPage', () => {
  it('refuses a listed name that DNS points at this machine, and connects nowhere', async () => {
    pages.page('/', { body: 'inside' });
    const hosts = webHosts([`docs.example.org:${pages.port}`]);
    await expect(fetchPage(`http://docs.example.org:${pages.port}/`, { hosts, resolve: answering('127.0.0.1') })).rejects.toThrow(
      'docs.example.org resolves to 127.0.0.1, an address of this machine or of a private network',
    );
    expect(pages.requests).toEqual([]);
  });

  it('connects to the address it checked, naming the host it was asked for', async () => {
    pages.page('/doc', { headers: { 'content-type': 'text/plain' }, body: 'the wiki' });
    let asked = 0;
    const resolve = async () => {
      asked++;
      // A second answer would point elsewhere; fence must not ask again.
      return asked === 1 ? ['127.0.0.1'] : ['10.9.9.9'];
    };
    const page = await fetchPage(`http://wiki.corp.example:${pages.port}/doc`, { hosts: webHosts(['private:wiki.corp.example']), resolve });
    expect(page.body.toString()).toBe('the wiki');
    expect(asked).toBe(1);
    expect(pages.requests[0]?.headers.host).toBe(`wiki.corp.example:${pages.port}`);
  });

  it('refuses this machine however its address is written, even under a wildcard', async () => {
    pages.page('/', { body: 'inside' });
    const hosts = webHosts(['*']);
    for (const host of ['2130706433', '0x7f.1', '127.1', '[::ffff:127.0.0.1]', '[::1]', '0', '[::]']) {
      await expect(fetchPage(`http://${host}:${pages.port}/`, { hosts })).rejects.toThrow(/an address of this machine or of a private network/);
    }
    expect(pages.requests).toEqual([]);
  });

  it('refuses schemes other than http and https, URLs with credentials, and text that is no URL', async () => {
    const hosts = webHosts(['*']);
    await expect(fetchPage('file:///etc/passwd', { hosts })).rejects.toThrow('only http and https URLs are fetched, not file');
    await expect(fetchPage('ftp://example.org/x', { hosts })).rejects.toThrow('only http and https URLs are fetched, not ftp');
    await expect(fetchPage('https://user:secret@example.org/', { hosts })).rejects.toThrow('a URL with a user or password is not fetched');
    await expect(fetchPage('docs.example.org/page', { hosts })).rejects.toThrow('"docs.example.org/page", which is not a URL');
  });

  it('refuses a redirect to another scheme', async () => {
    pages.page('/go', { status: 302, headers: { location: 'file:///etc/passwd' } });
    await expect(fetchPage(`${pages.url}/go`, { hosts: webHosts([`127.0.0.1:${pages.port}`]) })).rejects.toThrow(
      `${pages.url}/go redirected to file:///etc/passwd: only http and https URLs are fetched, not file`,
    );
  });

  it('stops after five redirects', async () => {
    pages.page('/loop', { status: 302, headers: { location: '/loop' } });
    await expect(fetchPage(`${pages.url}/loop`, { hosts: webHosts([`127.0.0.1:${pages.port}`]) })).rejects.toThrow(`${pages.url}/loop redirected more than 5 times`);
    expect(pages.requests).toHaveLength(6);
  });

  it('stops when the run is stopped, dropping the connection', async () => {
    pages.page('/slow', 'hang');
    const stop = new AbortController();
    const fetching = fetchPage(`${pages.url}/slow`, { hosts: webHosts([`127.0.0.1:${pages.port}`]), signal: stop.signal });
    while (pages.requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
    stop.abort();
    await expect(fetching).rejects.toThrow('the fetch was stopped');
  });

  it('reads a compressed body, and cuts it at the byte cap after decompression', async () => {
    const { gzipSync } = await import('node:zlib');
    pages.page('/z', { headers: { 'content-type': 'text/plain', 'content-encoding': 'gzip' }, body: gzipSync('a'.repeat(10_000)) });
    const page = await fetchPage(`${pages.url}/z`, { hosts: webHosts([`127.0.0.1:${pages.port}`]), limits: { maxBytes: 1000 } });
    expect(page.body.toString()).toBe('a'.repeat(1000));
    expect(page.cut).toBe(true);
  });
});
