import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { BashSession } from '../../src/processes/bash-session';
import { startNetworkProxy } from '../../src/os-sandbox/network-proxy';
import { addressAllowed, networkRules } from '../../src/os-sandbox/network-rules';
import { bubblewrapSandbox, offPolicy, sandboxSupport, type OsSandbox } from '../../src/os-sandbox/os-sandbox';

describe('networkRules', () => {
  it('matches hosts exactly, subdomains by *., ports when given, without case', () => {
    const rules = networkRules(['registry.npmjs.org', '*.pythonhosted.org', 'github.com:443']);
    expect(rules.hostAllowed('registry.npmjs.org', 443)).toBe(true);
    expect(rules.hostAllowed('REGISTRY.npmjs.org', 80)).toBe(true);
    expect(rules.hostAllowed('evil-registry.npmjs.org', 443)).toBe(false);
    expect(rules.hostAllowed('registry.npmjs.org.evil.example', 443)).toBe(false);
    expect(rules.hostAllowed('files.pythonhosted.org', 443)).toBe(true);
    expect(rules.hostAllowed('pythonhosted.org', 443)).toBe(false);
    expect(rules.hostAllowed('evilpythonhosted.org', 443)).toBe(false);
    expect(rules.hostAllowed('github.com', 443)).toBe(true);
    expect(rules.hostAllowed('github.com', 22)).toBe(false);
    expect(networkRules([]).hostAllowed('github.com', 443)).toBe(false);
    expect(networkRules(true).hostAllowed('anything.example', 22)).toBe(true);
  });

  it('refuses a listed name whose addresses are not all public, unless it is marked private or the address is listed', () => {
    const rules = networkRules(['pypi.org', 'private:git.corp.example:443', '10.1.2.3', '[fd00::7]:8080']);
    expect(rules.decide('pypi.org', 443, ['151.101.0.223'])).toEqual({ allowed: true });
    expect(rules.decide('pypi.org', 443, ['151.101.0.223', '127.0.0.1'])).toEqual({ allowed: false, rule: 'address', host: 'pypi.org', address: '127.0.0.1' });
    expect(rules.decide('pypi.org', 443, [])).toMatchObject({ allowed: false, rule: 'address' });
    expect(rules.decide('git.corp.example', 443, ['10.0.0.9'])).toEqual({ allowed: true });
    expect(rules.decide('git.corp.example', 22, ['10.0.0.9'])).toMatchObject({ allowed: false, rule: 'host' });
    expect(rules.decide('10.1.2.3', 5432, ['10.1.2.3'])).toEqual({ allowed: true });
    expect(rules.decide('10.1.2.4', 5432, ['10.1.2.4'])).toMatchObject({ allowed: false, rule: 'host' });
    expect(rules.decide('fd00::7', 8080, ['fd00::7'])).toEqual({ allowed: true });
    expect(rules.decide('[FD00:0::7]', 8080, ['fd00::7'])).toEqual({ allowed: true });
    expect(networkRules(true).decide('rebound.example', 80, ['169.254.169.254'])).toMatchObject({ allowed: false, rule: 'address', address: '169.254.169.254' });
  });

  it('counts loopback, link-local, private, CGNAT, unspecified and their IPv4-mapped forms as not public', () => {
    const notPublic = ['127.0.0.1', '127.9.9.9', '::1', '169.254.169.254', 'fe80::1', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', 'fc00::1', 'fd12::1', '100.64.0.1', '0.0.0.0', '::', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:169.254.169.254', '::ffff:10.0.0.1', '224.0.0.1', '255.255.255.255', 'not an address'];
    for (const address of notPublic) expect(addressAllowed(address), address).toBe(false);
    const publicOnes = ['1.1.1.1', '151.101.0.223', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:1.1.1.1'];
    for (const address of publicOnes) expect(addressAllowed(address), address).toBe(true);
  });
});

describe('the proxy', () => {
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** A proxy on a socket in a fresh folder, with `resolve` for names; and a loopback server that echoes the Host it got. */
  async function proxyAndServer(allowed: string[], resolve: (host: string) => Promise<string[]>) {
    const dir = await mkdtemp('/var/tmp/fence-proxy-unit-');
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const proxy = startNetworkProxy(dir, networkRules(allowed), resolve);
    closers.push(() => proxy.close());
    const server = createServer((request, response) => response.end(`host ${request.headers.host}`));
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    closers.push(() => new Promise((done) => server.close(done)));
    return { proxy, port: (server.address() as AddressInfo).port };
  }

  /** A plain request through the proxy's socket, as the forwarder passes it: the whole URL, and a Host header of the client's choice. */
  function viaProxy(socket: string, url: string, host: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: socket, path: url, headers: { host } }, (answer) => {
        let body = '';
        answer.on('data', (chunk: Buffer) => (body += String(chunk)));
        answer.on('end', () => resolve({ status: answer.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('resolves a name once, connects to the address it checked, and sends the Host of the URL', async () => {
    const asked: string[] = [];
    const { proxy, port } = await proxyAndServer(['private:registry.test'], async (host) => {
      asked.push(host);
      return asked.length === 1 ? ['127.0.0.1'] : ['203.0.113.9'];
    });
    const answer = await viaProxy(proxy.socket, `http://registry.test:${port}/x`, 'internal-admin.test');
    expect(answer).toEqual({ status: 200, body: `host registry.test:${port}` });
    expect(asked).toEqual(['registry.test']);
  });

  it('refuses a listed name that resolves to loopback, and one with any address that is not public', async () => {
    const { proxy, port } = await proxyAndServer(['registry.test', 'mixed.test'], async (host) => (host === 'mixed.test' ? ['203.0.113.9', '127.0.0.1'] : ['127.0.0.1']));
    const loopback = await viaProxy(proxy.socket, `http://registry.test:${port}/`, 'registry.test');
    expect(loopback.status).toBe(403);
    expect(loopback.body).toContain('registry.test resolves to 127.0.0.1');
    const mixed = await viaProxy(proxy.socket, `http://mixed.test:${port}/`, 'mixed.test');
    expect(mixed.status).toBe(403);
    expect(mixed.body).toContain('mixed.test resolves to 127.0.0.1');
    const unlisted = await viaProxy(proxy.socket, `http://other.test:${port}/`, 'other.test');
    expect(unlisted.body).toContain('other.test is not among the hosts');
  });
});

const support = sandboxSupport();

describe.skipIf(support.kind === 'none')('a sandbox that may reach some hosts', () => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A server on a loopback address of the host (127.0.0.2, .3: not in NO_PROXY, so the proxy carries them). */
  async function serve(host: string, body: string): Promise<{ server: Server; url: string; hits: () => number }> {
    let hits = 0;
    const server = createServer((_request, response) => {
      hits++;
      response.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const { port } = server.address() as { port: number };
    return { server, url: `http://${host}:${port}/`, hits: () => hits };
  }

  async function sandboxedShell(network: string[]): Promise<{ bash: BashSession; sandbox: OsSandbox }> {
    if (support.kind === 'none') throw new Error('no sandbox');
    const workspace = await mkdtemp('/var/tmp/fence-proxy-test-');
    cleanups.push(() => rm(workspace, { recursive: true, force: true }));
    const sandbox = bubblewrapSandbox({ ...offPolicy(workspace), mode: 'workspace-write', network }, support.path);
    cleanups.push(() => sandbox.close());
    const bash = await BashSession.start({ cwd: workspace, sandbox });
    cleanups.push(() => bash.close());
    return { bash, sandbox };
  }

  it('lets the allowed host through the proxy, refuses another with a line naming it, and has no network around the proxy', async () => {
    const allowed = await serve('127.0.0.2', 'allowed answer');
    const other = await serve('127.0.0.3', 'must not be seen');
    const { bash } = await sandboxedShell(['127.0.0.2']);

    // Python is on every machine fence runs on; curl may not be.
    const fetch = (url: string, proxy = true) =>
      bash.run(
        `python3 - <<'EOF'\nimport urllib.request, urllib.error\nopener = urllib.request.build_opener(${proxy ? '' : 'urllib.request.ProxyHandler({})'})\ntry:\n    print(opener.open('${url}', timeout=10).read().decode())\nexcept urllib.error.HTTPError as e:\n    print(e.code, e.read().decode())\nexcept Exception as e:\n    print('failed:', type(e).__name__)\nEOF`,
        { timeoutMs: 30_000 },
      );
    expect((await fetch(allowed.url)).output).toContain('allowed answer');
    expect(allowed.hits()).toBe(1);

    const refused = await fetch(other.url);
    expect(refused.output).toContain('403 fence sandbox: 127.0.0.3 is not among the hosts this session may reach');
    const tunnel = await fetch(`https://127.0.0.3:${new URL(other.url).port}/`);
    expect(tunnel.output).toMatch(/failed: URLError|403/);
    const direct = await fetch(allowed.url, false);
    expect(direct.output).toContain('failed:');
    expect(other.hits()).toBe(0);
    expect(allowed.hits()).toBe(1);
  });

  it('serves Python through the same proxy', async () => {
    const allowed = await serve('127.0.0.2', 'from python');
    const { bash } = await sandboxedShell(['127.0.0.2']);
    const run = await bash.run(`python3 -c "import urllib.request; print(urllib.request.urlopen('${allowed.url}').read().decode())"`, { timeoutMs: 20_000 });
    expect(run.output).toContain('from python');
  });
});
