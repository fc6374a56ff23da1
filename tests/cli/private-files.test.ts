import { chmodSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { FENCE_BIN, runFence, useCliRun } from '../support/run-cli';

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

/** Runs the built CLI as `runFence` does, under a umask of 022 (what most shells have). */
function fenceUmask022(args: string[], options: { cwd: string; env: Record<string, string> }) {
  return execa('sh', ['-c', 'umask 022; exec "$0" "$@"', process.execPath, FENCE_BIN, ...args], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dirname(options.cwd), LANG: 'C.UTF-8', ...options.env },
    extendEnv: false,
    input: '',
    reject: false,
    timeout: 60_000,
  });
}

/** The entries under `root` (and `root` itself) that others may read or enter: each with its mode. */
function notPrivate(root: string): string[] {
  const own = (statSync(root).mode & 0o777) === 0o700 ? [] : [`. ${(statSync(root).mode & 0o777).toString(8)}`];
  return [...own, ...modes(root).filter((entry) => entry.mode !== (entry.folder ? 0o700 : 0o600)).map((entry) => `${entry.path} ${entry.mode.toString(8)}`)];
}

describe("fence's data folder", () => {
  it('holds only 0700 folders and 0600 files, whichever command made it, under a umask of 022', { timeout: 120_000 }, async () => {
    const env = (home: string) => ({ FENCE_HOME: join(cli.dirs.home, home), OPENAI_BASE_URL: cli.server.openaiBaseURL });
    const cwd = cli.dirs.workspace;
    writeFileSync(join(cwd, 'a.txt'), 'alpha\n');
    writeFileSync(join(cwd, 'program.js'), '// intent: read a file\nreturn await read({ path: "a.txt" });\n');

    // A session: the sandbox's probe, the session, its outputs, a program's trace and store.
    cli.server.reply((r) => r.text('```shell\necho hello\n```\n'));
    cli.server.reply((r) => r.text('```ptc\nstore("k", 1);\nprint(await read({ path: "a.txt" }))\n```\n'));
    cli.server.reply((r) => r.text('Done.'));
    const session = await fenceUmask022(['-n', '-m', 'local/test', 'go'], { cwd, env: env('session') });
    expect(session.exitCode).toBe(0);

    // A program run, then saved and approved.
    const run = await fenceUmask022(['run', 'program.js'], { cwd, env: env('programs') });
    expect(run.exitCode).toBe(0);
    const trace = /^trace (\S+)/m.exec(run.stderr)?.[1] ?? '';
    const save = await fenceUmask022(['programs', 'save', 'read_a', '--from-trace', trace], { cwd, env: env('programs') });
    expect(save.exitCode).toBe(0);
    const approve = await fenceUmask022(['programs', 'approve', 'read_a@1'], { cwd, env: env('programs') });
    expect(approve.exitCode).toBe(0);

    writeFileSync(join(cwd, 'fence.toml'), '[sandbox]\nmode = "read-only"\n');
    const trust = await fenceUmask022(['trust'], { cwd, env: env('trust') });
    expect(trust.exitCode).toBe(0);
    const check = await fenceUmask022(['sandbox', 'check'], { cwd, env: env('check') });
    expect(check.stderr).not.toMatch(/\n\s+at /);

    for (const home of ['session', 'programs', 'trust']) {
      const root = join(cli.dirs.home, home);
      expect(modes(root).length, home).toBeGreaterThan(0);
      expect(notPrivate(root), home).toEqual([]);
    }
    expect(modes(join(cli.dirs.home, 'session')).some((entry) => entry.path === 'sandbox-probe.json')).toBe(true);
    expect(modes(join(cli.dirs.home, 'programs')).some((entry) => entry.path.startsWith('programs/read_a/'))).toBe(true);
  });

  it('is made 0700 again when an earlier version left it open to others, but a folder of other things is left alone', async () => {
    const home = join(cli.dirs.home, 'old');
    mkdirSync(join(home, 'sessions'), { recursive: true });
    writeFileSync(join(home, 'sandbox-probe.json'), '{}');
    chmodSync(home, 0o755);
    const list = await fenceUmask022(['sessions', 'list'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: home } });
    expect(list.exitCode).toBe(0);
    expect((statSync(home).mode & 0o777).toString(8)).toBe('700');

    const shared = join(cli.dirs.home, 'shared');
    mkdirSync(join(shared, 'sessions'), { recursive: true });
    writeFileSync(join(shared, 'notes.txt'), 'not fence\'s\n');
    chmodSync(shared, 0o755);
    await fenceUmask022(['sessions', 'list'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: shared } });
    expect((statSync(shared).mode & 0o777).toString(8)).toBe('755');
  });
});
