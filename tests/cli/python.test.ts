import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm';
import { makeCliDirs, readOnlySessionLog, runFence, type CliDirs } from '../support/run-cli';

let server: FakeLlm;
let dirs: CliDirs;

beforeEach(async () => {
  server = await startFakeLlm();
  dirs = makeCliDirs();
});
afterEach(async () => {
  await server.close();
});

const env = () => ({ FENCE_HOME: dirs.home, OPENAI_BASE_URL: server.openaiBaseURL });
const block = (tag: string, code: string) => `\`\`\`${tag}\n${code}\n\`\`\`\n`;

describe('python in a scripted session', () => {
  it('keeps a function defined in one block for the next, and shows a final value', async () => {
    server.reply((r) => r.text(block('python', 'def area(w, h):\n    return w * h\nprint("defined")')));
    server.reply((r) => r.text(block('python', 'area(6, 7)')));
    server.reply((r) => r.text('The area is 42.'));
    const result = await runFence(['-n', '-m', 'local/test', 'compute an area'], { cwd: dirs.workspace, env: env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('The area is 42.');
    const results = readOnlySessionLog(dirs.home).filter((m) => m.meta?.toolResult);
    expect(results.map((m) => m.meta?.tool)).toEqual(['python', 'python']);
    expect(results[0]?.content).toContain('defined');
    expect(results[1]?.content).toContain('Out: 42');
  });

  it('calls tools from Python under the same policy as programs, and leaves a trace', async () => {
    mkdirSync(join(dirs.workspace, 'secrets'));
    writeFileSync(join(dirs.workspace, 'secrets', 'key.txt'), 'hunter2\n');
    writeFileSync(join(dirs.workspace, 'notes.txt'), 'public notes\n');
    writeFileSync(
      join(dirs.workspace, 'fence.toml'),
      '[[policy]]\ntool = "read"\nresource = "secrets/**"\nprincipal = "python"\naction = "deny"\nreason = "no secrets in Python"\n',
    );
    const code = [
      'print(read(path="notes.txt").strip())',
      'try:',
      '    read(path="secrets/key.txt")',
      'except ToolError as error:',
      '    print("refused:", error)',
    ].join('\n');
    server.reply((r) => r.text(block('python', code)));
    server.reply((r) => r.text('Done.'));
    const result = await runFence(['-n', '-m', 'local/test', 'read'], { cwd: dirs.workspace, env: env() });
    expect(result.exitCode).toBe(0);
    const output = readOnlySessionLog(dirs.home).find((m) => m.meta?.toolResult)?.content ?? '';
    expect(output).toContain('public notes');
    expect(output).toContain('refused: read denied: no secrets in Python');
    expect(output).not.toContain('hunter2');

    const [session] = readdirSync(join(dirs.home, 'sessions'));
    const traces = readdirSync(join(dirs.home, 'sessions', session!, 'traces'));
    expect(traces).toHaveLength(1);
    const shown = await runFence(['trace', 'show', traces[0]!.replace(/\.json$/, '')], { cwd: dirs.workspace, env: { FENCE_HOME: dirs.home } });
    expect(shown.stdout).toContain('principal python');
    expect(shown.stdout).toContain('[deny: no secrets in Python]');
  });
});
