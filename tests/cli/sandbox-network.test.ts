import { appendFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createSocketServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { block, bubblewrapMissing, fenceIn, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';

/**
 * The network of a sandbox, through the built CLI: with the network on, the sandbox still has
 * a network namespace of its own and reaches out through fence's proxy; the proxy refuses an
 * allowed name that resolves to this machine unless it is listed as private, and sends a
 * request's `Host` as the host it was sent to.
 */

const rig = useSandboxRig();
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Sets `[sandbox] network` in the user's own config.toml. */
function allowNetwork(rig: SandboxRig, value: string): void {
  appendFileSync(rig.userConfig, `[sandbox]\nnetwork = ${value}\n`);
}

/** An HTTP server on the host's 127.0.0.1 that answers with the `Host` it was sent. */
async function hostEcho(): Promise<{ port: number; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    seen.push(request.headers);
    response.end(`host header: ${request.headers.host}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return { port: (server.address() as AddressInfo).port, seen };
}

/**
 * A shell line that connects to the abstract Unix socket `name` with fence's own Node (the one
 * that listens: Node and Python spell an abstract address's length differently) and prints
 * what it reads, or why it failed.
 */
const connectAbstract = (name: string) =>
  `"${process.execPath}" -e "require('net').connect('\\0${name}').on('data', (d) => console.log(String(d))).on('error', (e) => console.log('failed: ' + e.code))"`;

/** curl through the sandbox's proxy even for `localhost` (which NO_PROXY leaves out of it). */
const throughProxy = (url: string, extra = '') => `curl -sS --max-time 20 --noproxy '' -x "$HTTP_PROXY" ${extra} ${url}; echo " exit=$?"`;

/** A listener on a fresh abstract Unix socket of the host, closed after the test; counts who reached it. */
async function listenAbstract(): Promise<{ name: string; connections: number }> {
  const socket = { name: `fence-test-abstract-${process.pid}-${Date.now()}`, connections: 0 };
  const listener = createSocketServer((client) => {
    socket.connections++;
    client.end('abstract socket answered\n');
  });
  await new Promise<void>((resolve) => listener.listen(`\0${socket.name}`, resolve));
  cleanups.push(() => new Promise((resolve) => listener.close(resolve)));
  return socket;
}

describe.skipIf(bubblewrapMissing)('the sandbox network', () => {
  it("with the network on, keeps the host's abstract Unix sockets out of reach", { timeout: 120_000 }, async () => {
    const socket = await listenAbstract();
    allowNetwork(rig(), 'true');
    const probe = block('shell', connectAbstract(socket.name));

    script(rig(), [probe, 'Done.']);
    const inside = await fenceIn(rig(), ['-n', 'connect']);
    expect(inside.exitCode).toBe(0);
    const [refused] = toolResults(rig()).map((message) => message.content);
    expect(refused).toContain('failed: ECONNREFUSED');
    expect(socket.connections).toBe(0);
  });

  it('reaches the abstract socket without the sandbox (the probe works)', { timeout: 120_000 }, async () => {
    const socket = await listenAbstract();
    script(rig(), [block('shell', connectAbstract(socket.name)), 'Done.']);
    const outside = await fenceIn(rig(), ['-n', '--sandbox', 'off', 'connect']);
    expect(outside.exitCode).toBe(0);
    expect(toolResults(rig())[0]?.content).toContain('abstract socket answered');
    expect(socket.connections).toBe(1);
  });

  it('refuses an allowed name that resolves to this machine, naming the address', { timeout: 120_000 }, async () => {
    const echo = await hostEcho();
    allowNetwork(rig(), '["localhost"]');
    script(rig(), [block('shell', throughProxy(`http://localhost:${echo.port}/`)), block('shell', throughProxy(`https://localhost:${echo.port}/`)), 'Done.']);
    const run = await fenceIn(rig(), ['-n', 'fetch']);
    expect(run.exitCode).toBe(0);
    const [plain, tunnel] = toolResults(rig()).map((message) => message.content);
    expect(plain).toContain('fence sandbox: localhost resolves to 127.0.0.1, an address of this machine or of a private network');
    expect(tunnel).toMatch(/CONNECT tunnel failed, response 403|403/);
    expect(echo.seen).toEqual([]);
  });

  it('lets a name listed as private reach this machine, and sends the Host it was sent to whatever the request said', { timeout: 120_000 }, async () => {
    const echo = await hostEcho();
    allowNetwork(rig(), '["private:localhost"]');
    script(rig(), [block('shell', throughProxy(`http://localhost:${echo.port}/`, "-H 'Host: metadata.google.internal'")), 'Done.']);
    const run = await fenceIn(rig(), ['-n', 'fetch']);
    expect(run.exitCode).toBe(0);
    expect(toolResults(rig())[0]?.content).toContain(`host header: localhost:${echo.port}`);
    expect(echo.seen.map((headers) => headers.host)).toEqual([`localhost:${echo.port}`]);
  });
});
