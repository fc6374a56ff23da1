import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { McpStdioServerConfig } from '../../src/config/config-schema';
import { placeServer, type PlacementInput } from '../../src/processes/mcp-server-placement';

/**
 * Where a stdio MCP server runs, decided on real folders: a home folder, a workspace, a folder
 * of programs outside and one inside the workspace.
 */

let root = '';
let home = '';
let workspace = '';
let bin = '';
let workspaceBin = '';

beforeEach(() => {
  root = mkdtempSync('/var/tmp/fence-placement-');
  home = join(root, 'home');
  workspace = join(root, 'work');
  bin = join(root, 'bin');
  workspaceBin = join(workspace, 'node_modules', '.bin');
  for (const folder of [home, workspace, bin, workspaceBin]) mkdirSync(folder, { recursive: true });
  for (const program of [join(bin, 'serve'), join(bin, 'npx'), join(workspaceBin, 'planted')]) writeFileSync(program, '#!/bin/sh\n', { mode: 0o755 });
  writeFileSync(join(workspace, 'server.js'), '');
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

/** The decision for `config` (a user's entry unless it says otherwise), with the workspace writable. */
function place(config: Partial<McpStdioServerConfig> & { command: string }, input: Partial<PlacementInput> = {}) {
  return placeServer({
    config: { source: 'user', ...config },
    workspace,
    home,
    writable: [workspace],
    path: `${workspaceBin}:relative/bin::${bin}`,
    ...input,
  });
}

describe('placeServer', () => {
  it('runs a program found outside the writable paths outside, in the home folder, with a PATH the sandbox cannot write', () => {
    expect(place({ command: 'serve', args: ['--stdio'] })).toEqual({ where: 'outside', command: join(bin, 'serve'), args: ['--stdio'], cwd: home, path: bin });
  });

  it('keeps a project\'s server, and an entry of no known file, inside in the workspace', () => {
    expect(place({ command: 'serve', source: 'project' })).toEqual({ where: 'inside', command: 'serve', args: [], cwd: workspace });
    expect(placeServer({ config: { command: 'serve' }, workspace, home, writable: [workspace], path: bin })).toMatchObject({ where: 'inside' });
  });

  it('keeps sandbox = true inside without a reason, and runs sandbox = false outside as written, in the workspace', () => {
    expect(place({ command: 'node', args: ['server.js'], sandbox: true })).toEqual({ where: 'inside', command: 'node', args: ['server.js'], cwd: workspace });
    expect(place({ command: 'node', args: ['server.js'], sandbox: false })).toMatchObject({ where: 'outside', command: 'node', cwd: workspace });
  });

  it('runs a program the PATH finds in a writable folder inside, saying so', () => {
    expect(place({ command: 'planted' })).toMatchObject({ where: 'inside', reason: `its program ${join(workspaceBin, 'planted')} lies where the sandbox can write` });
  });

  it('runs a script whose #! interpreter lies in a writable folder inside', () => {
    writeFileSync(join(workspace, 'python'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(bin, 'tool-mcp'), `#!${join(workspace, 'python')} -u\nprint()\n`, { mode: 0o755 });
    expect(place({ command: 'tool-mcp' })).toMatchObject({ where: 'inside', reason: `its program ${join(bin, 'tool-mcp')} is run by ${join(workspace, 'python')}, where the sandbox can write` });
    writeFileSync(join(bin, 'env-mcp'), '#!/usr/bin/env node\n', { mode: 0o755 });
    expect(place({ command: 'env-mcp' })).toMatchObject({ where: 'outside', path: bin });
  });

  it('runs a server whose argument or env value names a writable path inside, by its real path', () => {
    expect(place({ command: 'node', args: ['server.js'] })).toMatchObject({ where: 'inside', reason: `its argument "server.js" names ${join(workspace, 'server.js')}, where the sandbox can write` });
    // Absolute, before it exists; relative, where it exists (the server runs from the home folder, not the workspace).
    expect(place({ command: 'node', args: [`--config=${join(workspace, 'conf.json')}`] })).toMatchObject({ where: 'inside' });
    expect(place({ command: 'node', args: ['tools/not-yet.js'] })).toMatchObject({ where: 'outside', cwd: home });
    expect(place({ command: 'serve', env: { PLUGINS: join(workspace, 'plugins') } })).toMatchObject({ where: 'inside' });
    // A link outside the workspace that leads into it.
    symlinkSync(join(workspace, 'server.js'), join(root, 'linked.js'));
    expect(place({ command: 'node', args: [join(root, 'linked.js')] })).toMatchObject({ where: 'inside' });
  });

  it('takes the workspace given as ${workspace} for the folder the server works on, and a path below it for code', () => {
    expect(place({ command: 'serve', args: ['--root', '${workspace}', '--dir=${workspace}'] })).toMatchObject({ where: 'outside', args: ['--root', workspace, `--dir=${workspace}`] });
    expect(place({ command: 'serve', args: ['${workspace}/server.js'] })).toMatchObject({ where: 'inside', args: [join(workspace, 'server.js')] });
  });

  it('reads URLs, scoped packages, image names and text with spaces as no path', () => {
    expect(place({ command: 'npx', args: ['-y', '@scope/server', 'https://example.com/a/b', 'say a/b to it', 'ghcr.io/org/image'] })).toMatchObject({ where: 'outside', cwd: home });
  });

  it('runs a server whose folder the sandbox can write inside: a cwd in the workspace, or a home folder made writable', () => {
    expect(place({ command: 'serve', cwd: 'sub' })).toMatchObject({ where: 'inside', cwd: join(workspace, 'sub'), reason: `its working folder ${join(workspace, 'sub')} is one the sandbox can write` });
    expect(place({ command: 'serve' }, { writable: [workspace, home] })).toMatchObject({ where: 'inside' });
    expect(place({ command: 'serve', cwd: '~/servers' })).toMatchObject({ where: 'outside', cwd: join(home, 'servers') });
  });

  it("runs a package runner inside when the cache it runs packages from can be written", () => {
    expect(place({ command: 'npx', args: ['-y', 'pkg'] }, { writable: [workspace, join(home, '.npm')] })).toMatchObject({
      where: 'inside',
      reason: `npx runs packages from ${join(home, '.npm')}, where the sandbox can write`,
    });
    expect(place({ command: 'npx', args: ['-y', 'pkg'], env: { npm_config_cache: join(workspace, 'cache') } })).toMatchObject({ where: 'inside' });
    expect(place({ command: 'npx', args: ['-y', 'pkg'] })).toMatchObject({ where: 'outside', command: join(bin, 'npx') });
  });

  it('runs uvx, pipx and docker as any program on the PATH: outside, unless their cache can be written', () => {
    for (const program of ['uvx', 'pipx', 'docker']) writeFileSync(join(bin, program), '#!/bin/sh\n', { mode: 0o755 });
    expect(place({ command: 'uvx', args: ['mcp-server-git', '--repository', '${workspace}'] })).toMatchObject({ where: 'outside', command: join(bin, 'uvx'), cwd: home });
    expect(place({ command: 'pipx', args: ['run', 'mcp-server-fetch'] })).toMatchObject({ where: 'outside', command: join(bin, 'pipx') });
    expect(place({ command: 'docker', args: ['run', '-i', '--rm', 'mcp/fetch'] })).toMatchObject({ where: 'outside', command: join(bin, 'docker') });
    expect(place({ command: 'uvx', args: ['mcp-server-git'] }, { writable: [workspace, join(home, '.cache')] })).toMatchObject({ where: 'inside', reason: `uvx runs packages from ${join(home, '.cache', 'uv')}, where the sandbox can write` });
    expect(place({ command: 'pipx', args: ['run', 'x'] }, { writable: [workspace, join(home, '.local', 'share')] })).toMatchObject({ where: 'inside' });
  });
});
