import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** Every path under `root`, with its permission bits. */
function modes(root: string): { path: string; mode: number; folder: boolean }[] {
  const found: { path: string; mode: number; folder: boolean }[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stat = statSync(path);
      found.push({ path: path.slice(root.length + 1), mode: stat.mode & 0o777, folder: stat.isDirectory() });
      if (stat.isDirectory()) walk(path);
    }
  };
  walk(root);
  return found;
}

describe('what fence keeps of a session', () => {
  it('is readable by the user alone: folders 0700, files 0600 (log, info, saved outputs, traces)', async () => {
    cli.server.reply((r) => r.text('```shell\nseq 1 20000\n```\n'));
    cli.server.reply((r) => r.text('```ptc\nprint(await read({ path: "none.txt" }).catch(() => "no file"))\n```\n'));
    cli.server.reply((r) => r.text('Done.'));
    const run = await runFence(['-n', '-m', 'local/test', 'go'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(run.exitCode).toBe(0);
    const kept = modes(join(cli.dirs.home, 'sessions'));
    const files = kept.filter((entry) => !entry.folder).map((entry) => entry.path);
    expect(files.some((path) => path.endsWith('conversation.jsonl'))).toBe(true);
    expect(files.some((path) => path.includes('tool-outputs/'))).toBe(true);
    expect(files.some((path) => path.includes('traces/'))).toBe(true);
    for (const entry of kept) expect({ path: entry.path, mode: entry.mode.toString(8) }).toEqual({ path: entry.path, mode: entry.folder ? '700' : '600' });
    expect((statSync(join(cli.dirs.home, 'sessions')).mode & 0o777).toString(8)).toBe('700');
  });
});
