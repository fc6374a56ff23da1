import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { afterEach, describe, expect, it } from 'vitest';
import { runFence } from '../support/run-cli';
import { block, bubblewrapMissing, fenceIn, KEY_MARKER, script, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';
import { registryEnv, startFakeRegistry, WHERE_PACKAGE, whereReport, whereServerSource, writeWhereServer, type FakeRegistry } from '../support/mcp-where-server';

/**
 * Where a stdio MCP server of the user's own config.toml runs, on the default settings (the
 * sandbox on): outside the sandbox, as the person's own program, when nothing it runs can be
 * written from the sandbox — `npx -y <package>` from a registry, a program on the PATH, a
 * script under /var/tmp or the host's /tmp — and inside when it runs code from the workspace.
 * The server's `where` tool tells: outside it reads the fake home's key, inside it cannot.
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

/** Writes the user's config.toml with one server, `where`. */
function userServer(rig: SandboxRig, server: Record<string, unknown>): void {
  writeFileSync(rig.userConfig, stringify({ mcp: { servers: { where: server } } }));
}

/**
 * Lists the server's tools with `fence mcp list` (which waits for them and caches them), then
 * runs one session in which the model calls `where_where`: the server is started for that
 * call. Gives the session's run and what the tool answered.
 */
async function callWhere(rig: SandboxRig, env: Record<string, string> = {}) {
  const listed = await runFence(['mcp', 'list'], { cwd: rig.workspace, env: { ...rig.env, ...env } });
  expect(listed.stdout, listed.stderr).toContain('where_where');
  script(rig, [block('call where_where', '{}'), 'Done.']);
  // One new session at a time: an earlier one of the same test goes.
  const sessions = join(rig.fenceHome, 'sessions');
  for (const id of readdirSync(sessions)) if (id !== 'older-session') rmSync(join(sessions, id), { recursive: true, force: true });
  const run = await fenceIn(rig, ['-n', 'where does the server run?'], env);
  const result = toolResults(rig).at(-1);
  return { run, result, report: () => whereReport(result?.content) };
}

describe.skipIf(bubblewrapMissing)("a stdio MCP server of the user's own config, on the default settings", () => {
  it('runs npx -y <package> outside the sandbox: npx fetches it from the registry, caches it in ~/.npm, and its tool answers', { timeout: 180_000 }, async () => {
    registry = await startFakeRegistry(join(rig().root, 'registry'));
    userServer(rig(), { command: 'npx', args: ['-y', WHERE_PACKAGE], env: registryEnv(registry) });
    const { run, result, report } = await callWhere(rig());

    expect(run.exitCode, run.stderr).toBe(0);
    expect(result?.meta?.isError ?? false, result?.content).toBe(false);
    expect(report()).toMatchObject({ tag: 'registry', cwd: rig().home, workspace: rig().workspace });
    // Outside the sandbox it has the person's access: the fake home's key is readable to it.
    expect(report().key).toContain(KEY_MARKER);
    expect(registry.requests).toContain(`/${WHERE_PACKAGE}`);
    expect(readdirSync(join(rig().home, '.npm', '_npx')).length).toBeGreaterThan(0);
    expect(run.stderr).not.toContain('runs inside the sandbox');
  });

  it('runs a program found on the PATH outside, in the home folder, with ${workspace} expanded in its arguments', { timeout: 120_000 }, async () => {
    const bin = join(rig().root, 'bin');
    writeWhereServer(join(bin, 'fence-where'), 'on-path');
    userServer(rig(), { command: 'fence-where', args: ['--root', '${workspace}', '--files=${workspace}'] });
    const { run, report } = await callWhere(rig(), { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` });

    expect(run.exitCode, run.stderr).toBe(0);
    expect(report()).toMatchObject({ tag: 'on-path', cwd: rig().home, workspace: rig().workspace, args: ['--root', rig().workspace, `--files=${rig().workspace}`] });
    expect(report().key).toContain(KEY_MARKER);
  });

  it('runs a script named by its absolute path under /var/tmp outside', { timeout: 120_000 }, async () => {
    const server = writeWhereServer(join(rig().root, 'servers', 'where.js'), 'var-tmp');
    userServer(rig(), { command: 'node', args: [server] });
    const { run, report } = await callWhere(rig());

    expect(run.exitCode, run.stderr).toBe(0);
    expect(report()).toMatchObject({ tag: 'var-tmp', cwd: rig().home });
    expect(report().key).toContain(KEY_MARKER);
  });

  it("runs a script under the host's /tmp outside, where that path exists (the sandbox's /tmp is its own)", { timeout: 120_000 }, async () => {
    hostTmp = mkdtempSync('/tmp/fence-mcp-server-');
    const server = writeWhereServer(join(hostTmp, 'where.js'), 'host-tmp');
    userServer(rig(), { command: 'node', args: [server] });
    const { run, result, report } = await callWhere(rig());

    expect(run.exitCode, run.stderr).toBe(0);
    expect(result?.meta?.isError ?? false, result?.content).toBe(false);
    expect(report()).toMatchObject({ tag: 'host-tmp', cwd: rig().home });
  });

  it('runs in the folder its entry names with cwd', { timeout: 120_000 }, async () => {
    const server = writeWhereServer(join(rig().root, 'servers', 'where.js'), 'named-cwd');
    userServer(rig(), { command: 'node', args: [server], cwd: rig().outside });
    const { run, report } = await callWhere(rig());

    expect(run.exitCode, run.stderr).toBe(0);
    expect(report()).toMatchObject({ tag: 'named-cwd', cwd: rig().outside });
  });

  it('runs a script that lies in the workspace inside the sandbox, says why, and it still answers: no key', { timeout: 120_000 }, async () => {
    const server = writeWhereServer(join(rig().workspace, 'tools', 'where.js'), 'workspace');
    userServer(rig(), { command: 'node', args: [server] });
    const { run, result, report } = await callWhere(rig());

    expect(run.exitCode, run.stderr).toBe(0);
    expect(result?.meta?.isError ?? false, result?.content).toBe(false);
    expect(report()).toMatchObject({ tag: 'workspace', cwd: rig().workspace, workspace: rig().workspace });
    expect(report().key).toMatch(/^failed: /);
    expect(JSON.stringify(rig().server.requests.map((request) => request.body))).not.toContain(KEY_MARKER);
    expect(run.stderr).toContain(`fence: MCP server where runs inside the sandbox: its argument "${server}" names ${server}, where the sandbox can write.`);
  });

  it('runs a script named relative to the workspace, or a program reached through a link into it, inside', { timeout: 180_000 }, async () => {
    writeWhereServer(join(rig().workspace, 'where.js'), 'relative');
    userServer(rig(), { command: 'node', args: ['where.js'] });
    const relative = await callWhere(rig());
    expect(relative.run.exitCode, relative.run.stderr).toBe(0);
    expect(relative.report().key).toMatch(/^failed: /);
    expect(relative.run.stderr).toContain('MCP server where runs inside the sandbox');

    // A program on the PATH, outside the workspace, that is a link to a script in it.
    const bin = join(rig().root, 'bin');
    writeWhereServer(join(rig().workspace, 'linked.js'), 'linked');
    mkdirSync(bin, { recursive: true });
    symlinkSync(join(rig().workspace, 'linked.js'), join(bin, 'fence-where'));
    userServer(rig(), { command: 'fence-where' });
    const linked = await callWhere(rig(), { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` });
    expect(linked.run.exitCode, linked.run.stderr).toBe(0);
    expect(linked.report()).toMatchObject({ tag: 'linked' });
    expect(linked.report().key).toMatch(/^failed: /);
    expect(linked.run.stderr).toContain(`its program ${join(bin, 'fence-where')} lies where the sandbox can write`);
  });

  it('keeps npx from running a package or settings the model planted in the workspace, at the next start', { timeout: 240_000 }, async () => {
    registry = await startFakeRegistry(join(rig().root, 'registry'));
    const planted = join(rig().outside, 'planted-ran');
    const npmrcRan = join(rig().outside, 'npmrc-ran');
    // Session 1: the model plants a package of the server's name in node_modules, with its
    // .bin link, and an .npmrc whose node-options load its code into every node npm starts.
    const [shebang, ...body] = whereServerSource('planted').split('\n');
    const plantedServer = [shebang, `require('node:fs').writeFileSync(${JSON.stringify(planted)}, 'ran');`, ...body].join('\n');
    script(rig(), [
      block(
        'shell',
        [
          `mkdir -p node_modules/${WHERE_PACKAGE} node_modules/.bin`,
          `printf '%s' '${JSON.stringify({ name: WHERE_PACKAGE, version: '1.0.0', bin: { [WHERE_PACKAGE]: 'server.js' } })}' > node_modules/${WHERE_PACKAGE}/package.json`,
          `cat > node_modules/${WHERE_PACKAGE}/server.js <<'EOF'\n${plantedServer}\nEOF`,
          `chmod +x node_modules/${WHERE_PACKAGE}/server.js`,
          `ln -sf ../${WHERE_PACKAGE}/server.js node_modules/.bin/${WHERE_PACKAGE}`,
          `printf 'require("node:fs").writeFileSync(%s, "ran")\\n' '${JSON.stringify(npmrcRan)}' > evil.cjs`,
          `printf 'node-options=--require=%s/evil.cjs\\n' "$PWD" > .npmrc`,
          'ls node_modules/.bin && cat .npmrc',
        ].join('\n'),
      ),
      'Planted.',
    ]);
    const first = await fenceIn(rig(), ['-n', 'set up the project']);
    expect(first.exitCode, first.stderr).toBe(0);
    expect(toolResults(rig())[0]?.content).toContain('node-options=');
    expect(existsSync(join(rig().workspace, 'node_modules', '.bin', WHERE_PACKAGE))).toBe(true);

    // Session 2: the person's npx server starts; it runs the registry's package, from the home folder.
    userServer(rig(), { command: 'npx', args: ['-y', WHERE_PACKAGE], env: registryEnv(registry) });
    const { run, report } = await callWhere(rig());
    expect(run.exitCode, run.stderr).toBe(0);
    expect(report()).toMatchObject({ tag: 'registry', cwd: rig().home });
    expect(existsSync(planted)).toBe(false);
    expect(existsSync(npmrcRan)).toBe(false);
  });
});
