import { lstat, mkdir, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { DENIED_IN_HOME, protectedPaths, type SandboxMode, type SandboxPolicy } from '../../src/os-sandbox/policy';
import type { ToolContext } from '../../src/tools/define-tool';
import { makeTempWorkspace, makeToolContext } from './tool-context';

/**
 * A small machine in a temp folder, for testing the sandbox's boundary with real files: a
 * fake home with keys and fence's data in it, a workspace, a folder outside the workspace,
 * and an extra writable folder. Nothing outside the temp folder is ever touched.
 */
export interface SandboxMachine {
  /** The temp folder everything is in. */
  root: string;
  /** The fake home: `.ssh/id_ed25519` (denied), `.bashrc` (readable), `.fence/` (denied). */
  home: string;
  /** A git repository's worth of workspace: `fence.toml`, `.fence/`, `.git/hooks`, `.git/config`, `src/app.ts`. */
  workspace: string;
  /** A readable folder outside the workspace, with `notes.txt`. */
  outside: string;
  /** A folder `[sandbox] writable` adds, with `cache.txt`. */
  extra: string;
  /** fence's data folder in the home (denied). */
  fenceHome: string;
  /** The running session's saved tool outputs: the readable exception inside `fenceHome`. */
  outputs: string;
  /** The private key, denied. */
  key: string;
}

/** What the key holds: a test fails if this text ever shows up in a result. */
export const KEY_TEXT = 'PRIVATE KEY 0123456789';

/** Makes a `SandboxMachine` under a fresh temp folder. */
export async function makeSandboxMachine(): Promise<SandboxMachine> {
  const root = await makeTempWorkspace('fence-boundary-');
  const home = join(root, 'home');
  const workspace = join(root, 'workspace');
  const fenceHome = join(home, '.fence');
  const outputs = join(fenceHome, 'sessions', 'session-1', 'tool-outputs');
  const machine: SandboxMachine = {
    root,
    home,
    workspace,
    outside: join(root, 'outside'),
    extra: join(root, 'extra'),
    fenceHome,
    outputs,
    key: join(home, '.ssh', 'id_ed25519'),
  };
  const files: Record<string, string> = {
    [machine.key]: `${KEY_TEXT}\n`,
    [join(home, '.ssh', 'config')]: 'Host *\n',
    [join(home, '.bashrc')]: 'export EDITOR=vi\n',
    [join(fenceHome, 'config.toml')]: 'model = "x"\n',
    [join(fenceHome, 'sessions', 'session-1', 'log.jsonl')]: '{"secret":"session log"}\n',
    [join(outputs, 'cut-output.txt')]: 'the whole output\nline two\n',
    [join(workspace, 'fence.toml')]: '[sandbox]\nmode = "workspace-write"\n',
    [join(workspace, '.fence', 'programs', 'p.js')]: 'return 1;\n',
    [join(workspace, '.git', 'hooks', 'pre-commit')]: '#!/bin/sh\nexit 0\n',
    [join(workspace, '.git', 'config')]: '[core]\n',
    [join(workspace, '.git', 'HEAD')]: 'ref: refs/heads/main\n',
    [join(workspace, 'src', 'app.ts')]: 'export const app = 1;\n',
    [join(machine.outside, 'notes.txt')]: 'outside notes\n',
    [join(machine.extra, 'cache.txt')]: 'cached\n',
  };
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
  }
  return machine;
}

/**
 * The sandbox policy fence would build for `machine`: the workspace (and `extra`, as
 * `[sandbox] writable`) writable in `workspace-write`, the fake home's keys and fence's data
 * denied, the session's saved outputs readable, the workspace's protected paths (`.git/…` as
 * it exists now).
 */
export function machinePolicy(machine: SandboxMachine, mode: SandboxMode = 'workspace-write'): SandboxPolicy {
  return {
    mode,
    workspace: machine.workspace,
    writable: mode === 'workspace-write' ? [machine.workspace, machine.extra] : [],
    denied: [...DENIED_IN_HOME.map((name) => join(machine.home, name)), machine.fenceHome],
    readable: [machine.outputs],
    protected: protectedPaths(machine.workspace, existsSync(join(machine.workspace, '.git'))),
    network: false,
  };
}

/** A tool context in `machine`'s workspace bounded by `policy` (by default `machinePolicy(machine)`). */
export function machineContext(machine: SandboxMachine, policy: SandboxPolicy = machinePolicy(machine)): ToolContext {
  return { ...makeToolContext(machine.workspace), sandboxPolicy: policy };
}

/** Gives every test of the calling file a fresh `SandboxMachine`, removed after the test. */
export function useSandboxMachine(): () => SandboxMachine {
  let machine: SandboxMachine | undefined;
  beforeEach(async () => {
    machine = await makeSandboxMachine();
  });
  afterEach(async () => {
    if (machine) await rm(machine.root, { recursive: true, force: true });
    machine = undefined;
  });
  return () => {
    if (!machine) throw new Error('useSandboxMachine: the machine exists only inside a test');
    return machine;
  };
}

/**
 * Everything under `root`, as `relative path → what it is`: `dir`, `link → target`, or
 * `file: content`. Two snapshots are equal when nothing was created, removed or changed.
 */
export async function snapshot(root: string): Promise<Record<string, string>> {
  const entries: Record<string, string> = {};
  const visit = async (folder: string): Promise<void> => {
    for (const name of (await readdir(folder)).sort()) {
      const path = join(folder, name);
      const info = await lstat(path);
      const key = relative(root, path);
      if (info.isSymbolicLink()) entries[key] = `link → ${await readlink(path)}`;
      else if (info.isDirectory()) {
        entries[key] = 'dir';
        await visit(path);
      } else entries[key] = `file: ${await readFile(path, 'utf8')}`;
    }
  };
  await visit(root);
  return entries;
}
