import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { afterEach, describe, expect, it } from 'vitest';
import { runFence } from '../support/run-cli';
import { block, bubblewrapMissing, fenceIn, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';
import { registryEnv, startFakeRegistry, WHERE_PACKAGE, writeWhereServer, type FakeRegistry } from '../support/mcp-where-server';

/**
 * A stdio MCP server that fails, on either side of the sandbox, is named with a sentence, its
 * own last lines of stderr and, when the cause is recognisable, a hint; the session still
 * answers. `fence mcp list` waits for each server and prints why one failed; a session whose
 * server's tools were listed before starts the server on the model's call, whose result then
 * says why it failed, in the sandbox the session has.
 */

const rig = useSandboxRig();
let registry: FakeRegistry | undefined;
let hostTmp: string | undefined;

afterEach(async () => {
  await registry?.close();
  registry = undefined;
  if (hostTmp) rmSync(hostTmp, { recursive: true, force: true });
  hostTmp = undefined;
});

/** What `fence mcp list` printed (it waits for every server). */
async function listed(rig: SandboxRig): Promise<string> {
  const run = await runFence(['mcp', 'list'], { cwd: rig.workspace, env: rig.env });
  return run.stdout + run.stderr;
}

/** Runs a session whose model calls `tool` and then answers; gives the run and the call's result. */
async function call(rig: SandboxRig, tool: string) {
  script(rig, [block(`call ${tool}`, '{}'), 'Answered anyway.']);
  const run = await fenceIn(rig, ['-n', 'use the server']);
  return { run, result: toolResults(rig)[0]?.content ?? '' };
}

/** A script that writes `lines` lines to stderr and exits with code 2 before speaking MCP. */
function exitingServer(rig: SandboxRig, lines: number): string {
  const path = join(rig.root, 'servers', 'broken.js');
  writeWhereServer(path, 'unused');
  writeFileSync(path, `for (let i = 1; i <= ${lines}; i++) console.error('broken line ' + i + '\\u001b[31m');\nprocess.exit(2);\n`);
  return path;
}

/** A trusted project's fence.toml holding one server, `broken`. */
async function projectServer(rig: SandboxRig, server: Record<string, unknown>): Promise<void> {
  writeFileSync(join(rig.workspace, 'fence.toml'), stringify({ mcp: { servers: { broken: server } } }));
  const trusted = await fenceIn(rig, ['trust']);
  expect(trusted.exitCode, trusted.stderr).toBe(0);
}

describe.skipIf(bubblewrapMissing)('a stdio MCP server that fails', () => {
  it('is named with its last five lines of stderr, made safe to print, and a session still answers', { timeout: 120_000 }, async () => {
    const server = exitingServer(rig(), 7);
    writeFileSync(rig().userConfig, stringify({ mcp: { servers: { broken: { command: 'node', args: [server] } } } }));
    const said = await listed(rig());
    expect(said).toContain('did not start: exited (code 2) before it answered: broken line 3');
    expect(said).toContain('broken line 7');
    expect(said).not.toContain('broken line 2');
    // Its escape sequences do not reach the terminal.
    expect(said).not.toContain('\u001b');

    script(rig(), [block('shell', 'echo working'), 'Answered anyway.']);
    const run = await fenceIn(rig(), ['-n', 'use the server']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain('Answered anyway.');
    expect(run.stderr).toContain('fence: MCP server broken did not start');
  });

  it('that never answers is named with how long it was given, in a sentence', { timeout: 120_000 }, async () => {
    const path = join(rig().root, 'servers', 'silent.js');
    writeWhereServer(path, 'unused');
    writeFileSync(path, "console.error('waiting for a licence server');\nsetInterval(() => undefined, 1000);\n");
    writeFileSync(rig().userConfig, stringify({ mcp: { servers: { broken: { command: 'node', args: [path], timeout: 1 } } } }));
    expect(await listed(rig())).toContain('did not start: did not answer within 30 s of starting: waiting for a licence server');
  });

  it('whose program is not installed says so', { timeout: 120_000 }, async () => {
    writeFileSync(rig().userConfig, stringify({ mcp: { servers: { broken: { command: 'fence-no-such-server' } } } }));
    expect(await listed(rig())).toContain('did not start: command "fence-no-such-server" not found');
  });

  it("of a project, naming a script under the host's /tmp, gets the hint that the sandbox's /tmp is its own", { timeout: 120_000 }, async () => {
    hostTmp = mkdtempSync('/tmp/fence-mcp-failure-');
    const server = writeWhereServer(join(hostTmp, 'server.js'), 'host-tmp');
    await projectServer(rig(), { command: 'node', args: [server] });
    // Listed without a sandbox, where the script is found; the session runs it in its sandbox.
    expect(await listed(rig())).toContain('broken_where');
    const { run, result } = await call(rig(), 'broken_where');

    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain('Answered anyway.');
    expect(result).toContain('server broken exited (code 1) before it answered');
    expect(result).toContain('MODULE_NOT_FOUND');
    expect(result).toContain('It names a path under /tmp, and the sandbox has a /tmp of its own where that path does not exist.');
    expect(result).toContain("A project's server always runs in the sandbox; to run it outside, copy its entry into your own config.toml.");
  });

  it('of a project, run with npx, gets the hint that there is no network in the sandbox', { timeout: 180_000 }, async () => {
    registry = await startFakeRegistry(join(rig().root, 'registry'));
    await projectServer(rig(), { command: 'npx', args: ['-y', WHERE_PACKAGE], env: registryEnv(registry) });
    expect(await listed(rig())).toContain('broken_where');
    const asked = registry.requests.length;
    const { run, result } = await call(rig(), 'broken_where');

    expect(run.exitCode, run.stderr).toBe(0);
    // npm offline in the sandbox, or npm reaching for the registry there: either way, no network.
    expect(result).toMatch(/ENOTCACHED|ECONNREFUSED|EAI_AGAIN|ENOTFOUND/);
    expect(result).toContain('Inside the sandbox it has no network');
    expect(result).toContain('copy its entry into your own config.toml');
    expect(registry.requests.length).toBe(asked);
  });

  it('of the user, kept inside with sandbox = true, gets the hint to take that out', { timeout: 180_000 }, async () => {
    registry = await startFakeRegistry(join(rig().root, 'registry'));
    writeFileSync(rig().userConfig, stringify({ mcp: { servers: { broken: { command: 'npx', args: ['-y', WHERE_PACKAGE], env: registryEnv(registry), sandbox: true } } } }));
    expect(await listed(rig())).toContain('broken_where');
    const { run, result } = await call(rig(), 'broken_where');

    expect(run.exitCode, run.stderr).toBe(0);
    expect(result).toContain('Inside the sandbox it has no network');
    expect(result).toContain('remove sandbox = true from its entry');
  });
});
