import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** The plain-script MCP server whose start is slow, endless or failing (see the file). */
const LATE_SERVER = resolve(import.meta.dirname, '../support/mcp-late-server.mjs');

/** A trusted fence.toml naming the late server as `calc` with `env`, and `program.js` holding `code`. */
function configure(env: Record<string, string>, code: string, extra: Record<string, unknown> = {}): void {
  const marks = join(cli.dirs.workspace, 'marks');
  mkdirSync(marks, { recursive: true });
  const calc = { command: process.execPath, args: [LATE_SERVER, `late-${randomUUID()}`], env: { MARKS: marks, ...env }, ...extra };
  writeFileSync(join(cli.dirs.workspace, 'fence.toml'), stringify({ mcp: { servers: { calc } } }));
  writeFileSync(join(cli.dirs.workspace, 'program.js'), code);
  cli.trust();
}

const fenceRun = () => runFence(['run', 'program.js'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home }, timeoutMs: 90_000 });

describe('fence run with an MCP server that starts late', () => {
  it('does not wait for a server the program does not name: the program runs, and the server costs one line after it', { timeout: 90_000 }, async () => {
    configure({ NEVER_ANSWER: '1' }, '// intent: say hello\nprint("hello");\n', { timeout: 2 });
    const run = await fenceRun();
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('hello');
    const lines = run.stderr.split('\n');
    const said = lines.filter((line) => line.startsWith('fence: MCP server calc'));
    expect(said).toEqual(['fence: MCP server calc did not start: it was still starting when the session ended']);
    // The line came after the run's own last line, not before the program ran.
    expect(lines.indexOf(said[0] ?? '')).toBeGreaterThan(lines.findIndex((line) => line.startsWith('trace ')));
  });

  it('waits for a server whose tool the program calls, and the call answers', { timeout: 90_000 }, async () => {
    configure({ ANSWER_AFTER_MS: '1500' }, '// intent: add\nprint(await calc_get_sum({ a: 2, b: 40 }));\n');
    const run = await fenceRun();
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('The sum is 42');
    expect(run.stderr).not.toContain('MCP server calc');
  });
});
