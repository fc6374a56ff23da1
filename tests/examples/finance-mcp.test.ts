import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runFence } from '../support/run-cli';

const exampleDir = fileURLToPath(new URL('../../examples/finance', import.meta.url));

/** `fence run <program>` in `workspace`, with a FENCE_HOME of its own. */
function fenceRun(workspace: string, program: string) {
  return runFence(['run', program], { cwd: workspace, env: { FENCE_HOME: mkdtempSync(join(tmpdir(), 'fence-finance-mcp-')) } });
}

describe('the finance example served by an MCP server', () => {
  it('lists the three tools under the server name', async () => {
    const run = await runFence(['mcp', 'list'], { cwd: join(exampleDir, 'mcp'), env: { FENCE_HOME: mkdtempSync(join(tmpdir(), 'fence-finance-mcp-')) } });
    expect(run.exitCode).toBe(0);
    for (const name of ['finance_get_members', 'finance_get_expenses', 'finance_get_limits']) expect(run.stdout).toContain(name);
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
