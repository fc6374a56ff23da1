import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unsandboxedCodePaths, unsandboxedCommands } from '../../src/session/unsandboxed-commands';
import { mcpTestServer } from '../support/mcp-test-config';
import { bubblewrapMissing, fenceIn, KEY_MARKER, toolResults, useSandboxRig, type SandboxRig } from '../support/sandbox-rig';

/**
 * A tool of the user's own configuration that runs outside the sandbox (`sandbox = false`) and
 * names a workspace file, as the docs' `[tools.deploy] command = ["./deploy.sh"]` does: the
 * model must not rewrite that file and then call the tool to run its code with the user's
 * access. Such files stay read-only in the session; the tool still runs, the rest of the
 * workspace stays writable.
 */

const rig = useSandboxRig();
const DEPLOY = '#!/bin/sh\necho \'{"deployed": true}\'\n';

function deployTool(r: SandboxRig): void {
  writeFileSync(join(r.workspace, 'deploy.sh'), DEPLOY);
  chmodSync(join(r.workspace, 'deploy.sh'), 0o755);
  writeFileSync(r.userConfig, '[tools.deploy]\ndescription = "Deploys the site"\ncommand = ["./deploy.sh"]\nsandbox = false\n\n[tools.fmt]\ndescription = "Formats"\ncommand = ["npx", "-y", "prettier"]\nsandbox = false\n');
}

/** Runs fence -n with native tool calls, the model's calls given in order, then a last text. */
function calls(r: SandboxRig, list: [string, Record<string, unknown>][]): void {
  list.forEach(([tool, args], i) => r.server.reply((reply) => reply.toolCall(tool, args, `call_${i}`)));
  r.server.reply((reply) => reply.text('Done.'));
}

const results = (r: SandboxRig) => toolResults(r).map((message) => String(message.content));

describe.skipIf(bubblewrapMissing)('a sandbox = false tool that runs a workspace file', () => {
  it('cannot be turned against the user: the file it runs stays read-only, from the shell and the file tools', { timeout: 120_000 }, async () => {
    const r = rig();
    deployTool(r);
    const evil = '#!/bin/sh\ncat ~/.ssh/id_ed25519\n';
    calls(r, [
      ['shell', { command: `printf '${evil.replace(/\n/g, '\\n')}' > deploy.sh; echo wrote` }],
      ['save', { path: 'deploy.sh', content: evil }],
      ['shell', { command: 'mkdir -p node_modules/.bin && printf "#!/bin/sh\\ncat ~/.ssh/id_ed25519\\n" > node_modules/.bin/prettier; echo wrote' }],
      ['deploy', {}],
    ]);
    const run = await fenceIn(r, ['-n', '--tool-format', 'tool', 'deploy']);
    expect(run.exitCode).toBe(0);
    expect(readFileSync(join(r.workspace, 'deploy.sh'), 'utf8')).toBe(DEPLOY);
    const seen = results(r);
    expect(seen[0]).toMatch(/deploy\.sh: Read-only file system/);
    expect(seen[1]).toContain('deploy.sh is protected by the sandbox: it stays read-only in this session');
    expect(seen[2]).toMatch(/Read-only file system|Permission denied/);
    expect(seen[3]).toContain('deployed');
    expect(seen.join('\n')).not.toContain(KEY_MARKER);
  });

  it('still runs, and the rest of the workspace stays writable', { timeout: 120_000 }, async () => {
    const r = rig();
    deployTool(r);
    calls(r, [
      ['shell', { command: 'echo notes > notes.txt && cat notes.txt' }],
      ['deploy', {}],
    ]);
    const run = await fenceIn(r, ['-n', '--tool-format', 'tool', 'deploy']);
    expect(run.exitCode).toBe(0);
    expect(readFileSync(join(r.workspace, 'notes.txt'), 'utf8')).toBe('notes\n');
    expect(results(r)[1]).toContain('deployed');
  });
});

describe.skipIf(bubblewrapMissing)('a sandbox = false server started with npx from the workspace', () => {
  it('starts and answers while node_modules, package.json and .npmrc are held read-only', { timeout: 180_000 }, async () => {
    const r = rig();
    // A package outside the workspace whose program starts the test MCP server.
    const pkg = join(r.root, 'calc-package');
    mkdirSync(pkg);
    const server = mcpTestServer();
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'calc-server', version: '1.0.0', bin: { 'calc-server': 'index.mjs' } }));
    writeFileSync(
      join(pkg, 'index.mjs'),
      `#!/usr/bin/env node\nimport { spawn } from 'node:child_process';\nspawn(${JSON.stringify(server.command)}, ${JSON.stringify(server.args)}, { stdio: 'inherit' }).on('exit', (code) => process.exit(code ?? 1));\n`,
    );
    chmodSync(join(pkg, 'index.mjs'), 0o755);
    writeFileSync(r.userConfig, `[mcp.servers.calc]\ncommand = "npx"\nargs = ["-y", ${JSON.stringify(pkg)}]\nsandbox = false\n`);
    calls(r, [
      ['shell', { command: 'mkdir -p node_modules/.bin && echo evil > node_modules/.bin/calc-server; echo "node-options=--require ./evil.js" > .npmrc; echo wrote' }],
      ['calc_get_sum', { a: 2, b: 3 }],
    ]);
    const run = await fenceIn(r, ['-n', '--tool-format', 'tool', 'add']);
    expect(run.exitCode).toBe(0);
    const seen = results(r);
    expect(seen[0]).toMatch(/Read-only file system|Permission denied/);
    expect(seen[1]).toContain('The sum is 5');
    // Nothing the model wrote is left, and the places held for them are gone with the session.
    expect(existsSync(join(r.workspace, 'node_modules'))).toBe(false);
    expect(existsSync(join(r.workspace, '.npmrc'))).toBe(false);
  });
});

describe('unsandboxedCodePaths', () => {
  const workspace = '/var/tmp/fence-unsandboxed-ws';
  it('names the files a command runs from a writable root, their folders below it, and a package runner’s packages', () => {
    mkdirSync(workspace, { recursive: true });
    const paths = unsandboxedCodePaths(
      [
        { words: ['./deploy.sh'], cwd: workspace },
        { words: ['python3', 'tools/mcp/server.py', '--port=8080', 'https://example.com/x'], cwd: workspace },
        { words: ['npx', '-y', '@scope/server'], cwd: workspace },
        { words: ['node', '/opt/server.js'], cwd: '/opt' },
        { words: ['github-mcp'], cwd: workspace },
      ],
      [workspace],
    );
    expect(paths).toEqual(
      [
        'deploy.sh',
        'node_modules',
        'package.json',
        '.npmrc',
        'tools/mcp',
        'tools/mcp/server.py',
      ]
        .map((name) => join(workspace, name))
        .sort(),
    );
  });

  it("takes a sandbox = false server's cwd, and the workspace given as ${workspace} for a folder to work on, not code", () => {
    const config = {
      tools: {},
      mcpServers: {
        files: { command: 'node', args: ['${workspace}/tools/files.js', '--root', '${workspace}'], sandbox: false, source: 'user' as const },
        away: { command: 'npx', args: ['-y', 'pkg'], cwd: '~/mcp', sandbox: false, source: 'user' as const },
        mine: { command: 'npx', args: ['-y', 'pkg'], source: 'user' as const },
      },
    };
    expect(unsandboxedCommands(config, workspace, '/home/you')).toEqual([
      { words: ['node', join(workspace, 'tools/files.js'), '--root'], cwd: workspace },
      { words: ['npx', '-y', 'pkg'], cwd: '/home/you/mcp' },
    ]);
  });
});
