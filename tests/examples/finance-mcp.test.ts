import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runFence } from '../support/run-cli';

const exampleDir = fileURLToPath(new URL('../../examples/finance', import.meta.url));

/** `fence trust`, then `fence <args>`, in `workspace`, with a FENCE_HOME of their own. */
async function fenceTrusted(workspace: string, args: string[]) {
  const env = { FENCE_HOME: mkdtempSync(join(tmpdir(), 'fence-finance-mcp-')) };
  const trusted = await runFence(['trust'], { cwd: workspace, env });
  expect(trusted.exitCode).toBe(0);
  return runFence(args, { cwd: workspace, env });
}

/** `fence run <program>` in a trusted `workspace`. */
function fenceRun(workspace: string, program: string) {
  return fenceTrusted(workspace, ['run', program]);
}

describe('the finance example served by an MCP server', () => {
  it('lists the three tools under the server name', async () => {
    const run = await fenceTrusted(join(exampleDir, 'mcp'), ['mcp', 'list']);
    expect(run.exitCode).toBe(0);
    for (const name of ['finance_get_members', 'finance_get_expenses', 'finance_get_limits']) expect(run.stdout).toContain(name);
  });

  it('starts nothing until the folder is trusted, and says how to trust it', async () => {
    const run = await runFence(['mcp', 'list'], { cwd: join(exampleDir, 'mcp'), env: { FENCE_HOME: mkdtempSync(join(tmpdir(), 'fence-finance-mcp-')) } });
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('no MCP servers to list: this folder is not trusted, and your own config.toml names none');
    expect(run.stderr).toContain('this folder is not trusted on this machine, so its fence.toml is not used');
    expect(run.stderr).toContain('To use them: fence trust');
  });

  it('gives a program the same answer as the command tools do', { timeout: 60_000 }, async () => {
    const [viaMcp, viaCommands] = await Promise.all([fenceRun(join(exampleDir, 'mcp'), 'over-limit.js'), fenceRun(exampleDir, 'over-limit.js')]);
    expect(viaMcp.exitCode).toBe(0);
    expect(viaCommands.exitCode).toBe(0);
    const names = JSON.parse(viaMcp.stdout.trim()) as string[];
    expect(names.length).toBeGreaterThan(0);
    expect(names).toEqual(JSON.parse(viaCommands.stdout.trim()));
    expect(viaMcp.stderr).toMatch(/trace \S+ \(17 tool calls\)/);
  });
});
