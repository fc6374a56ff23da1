import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { BashSession } from '../../src/runtime/bash-session';
import { hostAllowed } from '../../src/runtime/network-proxy';
import { bubblewrapSandbox, offPolicy, sandboxSupport, type OsSandbox } from '../../src/runtime/os-sandbox';

describe('hostAllowed', () => {
  it('matches hosts exactly, subdomains by *., ports when given, without case', () => {
    const allowed = ['registry.npmjs.org', '*.pythonhosted.org', 'github.com:443'];
    expect(hostAllowed(allowed, 'registry.npmjs.org', 443)).toBe(true);
    expect(hostAllowed(allowed, 'REGISTRY.npmjs.org', 80)).toBe(true);
    expect(hostAllowed(allowed, 'evil-registry.npmjs.org', 443)).toBe(false);
    expect(hostAllowed(allowed, 'registry.npmjs.org.evil.example', 443)).toBe(false);
    expect(hostAllowed(allowed, 'files.pythonhosted.org', 443)).toBe(true);
    expect(hostAllowed(allowed, 'pythonhosted.org', 443)).toBe(false);
    expect(hostAllowed(allowed, 'evilpythonhosted.org', 443)).toBe(false);
    expect(hostAllowed(allowed, 'github.com', 443)).toBe(true);
    expect(hostAllowed(allowed, 'github.com', 22)).toBe(false);
    expect(hostAllowed([], 'github.com', 443)).toBe(false);
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
