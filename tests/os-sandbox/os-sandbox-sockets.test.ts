import { createServer, type Server } from 'node:net';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BashSession } from '../../src/processes/bash-session';
import { bubblewrapSandbox, offPolicy, sandboxSupport } from '../../src/os-sandbox/os-sandbox';

const support = sandboxSupport();
const runWritable = (() => {
  try {
    accessSync('/run', constants.W_OK);
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(support.kind === 'none' || !runWritable)('the host’s Unix sockets', () => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('in /run cannot be reached from the sandbox (a Docker or database socket would be a way out); outside it they can', async () => {
    if (support.kind === 'none') return;
    const socket = join('/run', `fence-sandbox-test-${process.pid}.sock`);
    let connections = 0;
    const server: Server = createServer((client) => {
      connections++;
      client.end('host socket answered\n');
    });
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const workspace = mkdtempSync('/var/tmp/fence-sockets-test-');
    cleanups.push(() => rmSync(workspace, { recursive: true, force: true }));
    const sandbox = bubblewrapSandbox({ ...offPolicy(workspace), mode: 'workspace-write', network: true }, support.path);
    cleanups.push(() => sandbox.close());
    const probe = `python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('${socket}'); print(s.recv(100).decode())"`;

    const inside = await BashSession.start({ cwd: workspace, sandbox });
    cleanups.push(() => inside.close());
    const refused = await inside.run(`${probe} 2>&1 | tail -1`, { timeoutMs: 20_000 });
    expect(refused.output).toMatch(/FileNotFoundError|No such file/);
    const listing = await inside.run('ls -A /run');
    expect(listing.output.trim()).toBe('shm');

    const outside = await BashSession.start({ cwd: workspace });
    cleanups.push(() => outside.close());
    expect((await outside.run(probe, { timeoutMs: 20_000 })).output).toContain('host socket answered');
    expect(connections).toBe(1);
  });
});
