import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { projectCommandFiles } from '../../src/config/command-files';

let root: string;
let workspace: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync('/var/tmp/fence-command-files-test-'));
  workspace = join(root, 'work');
  mkdirSync(join(workspace, 'tools'), { recursive: true });
  for (const file of ['server.mjs', 'node', 'settings.json', 'tools/run.sh', 'tools/lib.py']) writeFileSync(join(workspace, file), 'x');
  writeFileSync(join(root, 'outside.sh'), 'x');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('the workspace files a project configuration runs', () => {
  it("finds a server's script and argument files, and a tool's command from its own folder", () => {
    const toml = [
      '[mcp.servers.a]',
      'command = "node"',
      'args = ["./server.mjs", "--config=settings.json", "--verbose"]',
      '[tools.t]',
      'description = "d"',
      'command = ["./run.sh", "lib.py"]',
      'cwd = "tools"',
    ].join('\n');
    // `node` is looked up on the PATH, not taken from the workspace's file of that name.
    expect(projectCommandFiles(toml, workspace)).toEqual(['server.mjs', 'settings.json', 'tools/lib.py', 'tools/run.sh']);
  });

  it('leaves out what is outside the workspace, links leading out, folders and missing files', () => {
    symlinkSync(join(root, 'outside.sh'), join(workspace, 'link.sh'));
    const toml = ['[mcp.servers.a]', 'command = "./link.sh"', 'args = ["../outside.sh", "tools", "missing.js", "."]'].join('\n');
    expect(projectCommandFiles(toml, workspace)).toEqual([]);
  });

  it('names nothing for text that is not TOML or tables of the wrong shape', () => {
    expect(projectCommandFiles('[mcp.servers.a\ncommand = ', workspace)).toEqual([]);
    expect(projectCommandFiles('tools = 3\n[mcp]\nservers = "x"', workspace)).toEqual([]);
  });
});
