import { mkdir, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { trustWorkspace } from '../../src/config/trust';
import { openSession } from '../../src/session/open-session';
import { startShellForCommand } from '../../src/session/starting-shell';
import { useTempWorkspace } from '../support/tool-context';

const root = useTempWorkspace('fence-child-env-');

/** Set in this process for each test, as they would be in the user's terminal. */
const SECRETS: Record<string, string> = {
  OPENAI_API_KEY: 'sk-openai-value-1234',
  GITHUB_TOKEN: 'ghp-github-value-5678',
  MY_SECRET: 'my-secret-value-9012',
  DB_PASSWORD: 'db-password-value-3456',
};
let saved: Record<string, string | undefined> = {};
let savedXdg: string | undefined;
beforeEach(() => {
  saved = Object.fromEntries(Object.keys(SECRETS).map((key) => [key, process.env[key]]));
  savedXdg = process.env.XDG_CONFIG_HOME;
  Object.assign(process.env, SECRETS);
});
afterEach(() => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  if (savedXdg === undefined) delete process.env.XDG_CONFIG_HOME;
  else process.env.XDG_CONFIG_HOME = savedXdg;
});

/** A workspace, and the user's config.toml passing GITHUB_TOKEN through; `project` is the workspace's fence.toml. */
async function setUp(project?: string) {
  const base = await realpath(root());
  const workspace = join(base, 'work');
  await mkdir(join(base, 'xdg', 'fence'), { recursive: true });
  await mkdir(workspace, { recursive: true });
  await writeFile(join(base, 'xdg', 'fence', 'config.toml'), '[sandbox]\nmode = "off"\npass_env = ["GITHUB_TOKEN"]\n');
  if (project) await writeFile(join(workspace, 'fence.toml'), project);
  process.env.XDG_CONFIG_HOME = join(base, 'xdg');
  // Trusted: even a trusted project's file cannot pass a credential through.
  trustWorkspace(workspace, join(base, 'home'));
  return { workspace, home: join(base, 'home') };
}

function expectOnlyPassed(seen: string) {
  expect(seen).not.toContain(SECRETS.OPENAI_API_KEY);
  expect(seen).not.toContain(SECRETS.MY_SECRET);
  expect(seen).not.toContain(SECRETS.DB_PASSWORD);
  expect(seen).toContain(`GITHUB_TOKEN=${SECRETS.GITHUB_TOKEN}`);
  expect(seen).toMatch(/^PATH=/m);
  expect(seen).toMatch(/^HOME=/m);
  expect(seen).toMatch(/^LANG=/m);
}

describe('secrets in the processes the model drives', () => {
  it('the shell started for a prompt command sees neither the keys nor credentials, only what pass_env names', async () => {
    const { workspace } = await setUp();
    const shell = startShellForCommand({ workspace });
    try {
      const bash = await shell?.get();
      const seen = (await bash?.run('env'))?.output ?? '';
      expectOnlyPassed(seen);
    } finally {
      await shell?.close();
    }
  });

  it('the shell and the Python kernel of an opened session see neither, only what pass_env names', async () => {
    const { workspace, home } = await setUp();
    const loaded = loadConfig({ workspace, env: { ...process.env, FENCE_HOME: home } });
    if ('error' in loaded) throw new Error(loaded.error);
    const session = await openSession({ home, workspace, modelId: 'local/test', config: loaded.config, signal: new AbortController().signal, warn: () => {} });
    try {
      const bash = await session.toolContext.bash();
      expectOnlyPassed((await bash.run('env')).output);
      const python = await session.toolContext.python?.();
      const cell = await python?.run('import os\nprint("\\n".join(f"{k}={v}" for k, v in os.environ.items()))');
      expect(cell?.error).toBeUndefined();
      expectOnlyPassed(cell?.output ?? '');
    } finally {
      await session.close();
    }
  });

  it('a project’s fence.toml cannot pass a credential through, and is told so', async () => {
    const { workspace, home } = await setUp('[sandbox]\npass_env = ["OPENAI_API_KEY", "MY_SECRET"]\n');
    const loaded = loadConfig({ workspace, env: { ...process.env, FENCE_HOME: home } });
    if ('error' in loaded) throw new Error(loaded.error);
    expect(loaded.config.sandbox.passEnv).toEqual(['GITHUB_TOKEN']);
    const warnings: string[] = [];
    const session = await openSession({ home, workspace, modelId: 'local/test', config: loaded.config, signal: new AbortController().signal, warn: (line) => warnings.push(line) });
    try {
      expect(warnings).toContain('fence: fence.toml: [sandbox] pass_env ignored: only your own config.toml can pass credentials to the shell and Python');
      const bash = await session.toolContext.bash();
      expectOnlyPassed((await bash.run('env')).output);
    } finally {
      await session.close();
    }
  });
});
