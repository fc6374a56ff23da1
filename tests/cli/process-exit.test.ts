import { resolve } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';

const PROCESS_EXIT = resolve(import.meta.dirname, '../../src/cli/process-exit.ts');

/** Runs `body` in a fresh Node process with `exitOnceWritten` in scope. */
function run(body: string, options: { stdout?: 'pipe' | 'ignore' } = {}) {
  const script = `import { exitOnceWritten } from ${JSON.stringify(PROCESS_EXIT)};\n${body}`;
  return execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    reject: false,
    stripFinalNewline: false,
    stdout: options.stdout ?? 'pipe',
    timeout: 20_000,
  });
}

describe('exitOnceWritten', () => {
  it('ends the process with the code once all it wrote to stdout and stderr is out, even what a slow reader has not taken yet', async () => {
    // 4 MB is far more than a pipe holds: most of it is still queued in the process when exit is asked for.
    const result = await run("process.stdout.write('x'.repeat(4 * 1024 * 1024)); process.stderr.write('done\\n'); await exitOnceWritten(3);");
    expect(result.exitCode).toBe(3);
    expect(String(result.stdout).length).toBe(4 * 1024 * 1024);
    expect(result.stderr).toBe('done\n');
  });

  it('does not wait for a timer or an open handle that would keep the process alive', async () => {
    const result = await run("setInterval(() => undefined, 1000); process.stdin.resume(); process.stdout.write('answer\\n'); await exitOnceWritten(0);");
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('answer\n');
  });

  it('exits when stdout is gone (a reader that went away)', async () => {
    const result = await run("process.stdout.destroy(); await exitOnceWritten(5);", { stdout: 'ignore' });
    expect(result.exitCode).toBe(5);
  });
});
