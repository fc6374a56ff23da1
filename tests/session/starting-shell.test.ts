import { mkdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { openSession } from '../../src/session/open-session';
import { startShell, startShellForCommand } from '../../src/session/starting-shell';
import { isAlive, waitUntilDead } from '../support/bash-sessions';
import { useTempWorkspace } from '../support/tool-context';

const root = useTempWorkspace('fence-starting-shell-');

async function folder(name: string): Promise<string> {
  const path = join(await realpath(root()), name);
  await mkdir(path, { recursive: true });
  return path;
}

/** A session opened in `workspace` with the defaults and, when given, a shell started before. */
async function open(workspace: string, shell?: ReturnType<typeof startShell>) {
  const loaded = loadConfig({ workspace, env: { XDG_CONFIG_HOME: join(root(), 'xdg') } });
  if ('error' in loaded) throw new Error(loaded.error);
  return openSession({
    home: join(root(), 'home'),
    workspace,
    modelId: 'local/test',
    config: loaded.config,
    signal: new AbortController().signal,
    ...(shell ? { shell } : {}),
  });
}

describe('startShellForCommand', () => {
  it('starts bash in the workspace the command line names, ready for commands, and stops it', async () => {
    const workspace = await folder('work');
    const shell = startShellForCommand({ workspace });
    expect(shell?.cwd).toBe(workspace);
    const bash = await shell?.get();
    expect((await bash?.run('pwd'))?.output).toBe(`${workspace}\n`);
    const pid = bash?.pid ?? 0;
    await shell?.close();
    expect(await waitUntilDead([pid])).toEqual([]);
  });

  it('starts none for a resumed session without -w, nor in a folder that is not there', async () => {
    expect(startShellForCommand({ resume: true })).toBeUndefined();
    expect(startShellForCommand({ resume: 'a-session' })).toBeUndefined();
    expect(startShellForCommand({ workspace: join(root(), 'missing') })).toBeUndefined();
  });

  it('keeps a failed start as the error of every get, and closes quietly', async () => {
    const shell = startShell(join(root(), 'missing'));
    await expect(shell.get()).rejects.toThrow();
    await expect(shell.close()).resolves.toBeUndefined();
  });
});

describe('openSession with a shell started before', () => {
  it('takes the shell of its workspace as its own, and closes it with the session', async () => {
    const workspace = await folder('work');
    const shell = startShell(workspace);
    const session = await open(workspace, shell);
    const bash = await session.toolContext.bash();
    expect(bash).toBe(await shell.get());
    await session.close();
    expect(await waitUntilDead([bash.pid])).toEqual([]);
  });

  it('stops a shell started for another folder and starts its own in the workspace', async () => {
    const workspace = await folder('work');
    const elsewhere = startShell(await folder('elsewhere'));
    const stray = await elsewhere.get();
    const session = await open(workspace, elsewhere);
    try {
      const bash = await session.toolContext.bash();
      expect(bash).not.toBe(stray);
      expect((await bash.run('pwd')).output).toBe(`${workspace}\n`);
      expect(await waitUntilDead([stray.pid])).toEqual([]);
    } finally {
      await session.close();
    }
  });

  it('kills the shell at once and does not wait for it when the process is exiting', async () => {
    const workspace = await folder('work');
    const session = await open(workspace);
    const bash = await session.toolContext.bash();
    expect(isAlive(bash.pid)).toBe(true);
    await session.close({ exiting: true });
    expect(await waitUntilDead([bash.pid])).toEqual([]);
  });
});
