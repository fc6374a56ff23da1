import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

const block = (tag: string, code: string) => `\`\`\`${tag}\n${code}\n\`\`\`\n`;

describe('python in a scripted session', () => {
  it('keeps a function defined in one block for the next, and shows a final value', async () => {
    cli.server.reply((r) => r.text(block('python', 'def area(w, h):\n    return w * h\nprint("defined")')));
    cli.server.reply((r) => r.text(block('python', 'area(6, 7)')));
    cli.server.reply((r) => r.text('The area is 42.'));
    const result = await runFence(['-n', '-m', 'local/test', 'compute an area'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('The area is 42.');
    const results = readOnlySessionLog(cli.dirs.home).filter((m) => m.meta?.toolResult);
    expect(results.map((m) => m.meta?.tool)).toEqual(['python', 'python']);
    expect(results[0]?.content).toContain('defined');
    expect(results[1]?.content).toContain('Out: 42');
  });

  it('calls tools from Python under the same policy as programs, and leaves a trace', async () => {
    mkdirSync(join(cli.dirs.workspace, 'secrets'));
    writeFileSync(join(cli.dirs.workspace, 'secrets', 'key.txt'), 'hunter2\n');
    writeFileSync(join(cli.dirs.workspace, 'notes.txt'), 'public notes\n');
    writeFileSync(
      join(cli.dirs.workspace, 'fence.toml'),
      '[[policy]]\ntool = "read"\nresource = "secrets/**"\nprincipal = "python"\naction = "deny"\nreason = "no secrets in Python"\n',
    );
    cli.trust();
    const code = [
      'print(read(path="notes.txt").strip())',
      'try:',
      '    read(path="secrets/key.txt")',
      'except ToolError as error:',
      '    print("refused:", error)',
    ].join('\n');
    cli.server.reply((r) => r.text(block('python', code)));
    cli.server.reply((r) => r.text('Done.'));
    const result = await runFence(['-n', '-m', 'local/test', 'read'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    const output = readOnlySessionLog(cli.dirs.home).find((m) => m.meta?.toolResult)?.content ?? '';
    expect(output).toContain('public notes');
    expect(output).toContain('refused: read denied: no secrets in Python');
    expect(output).not.toContain('hunter2');

    const [session] = readdirSync(join(cli.dirs.home, 'sessions'));
    const traces = readdirSync(join(cli.dirs.home, 'sessions', session!, 'traces'));
    expect(traces).toHaveLength(1);
    const shown = await runFence(['trace', 'show', traces[0]!.replace(/\.json$/, '')], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(shown.stdout).toContain('principal python');
    expect(shown.stdout).toContain('[deny: no secrets in Python]');
  });
});
