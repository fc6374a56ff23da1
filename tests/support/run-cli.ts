import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach } from 'vitest';
import { startFakeLlm, type FakeLlm } from './fake-llm';
import { trustWorkspace } from '../../src/config/trust';
import type { Message } from '../../src/conversation/message';

/** Path of the built CLI entry (`npm test` builds before running the tests). */
export const FENCE_BIN = resolve(import.meta.dirname, '../../bin/fence.js');

/** A temp workspace and a temp FENCE_HOME for one CLI run. */
export interface CliDirs {
  workspace: string;
  home: string;
}

/** Makes fresh temp folders for a workspace and FENCE_HOME. */
export function makeCliDirs(): CliDirs {
  const root = mkdtempSync(join(tmpdir(), 'fence-cli-'));
  const workspace = join(root, 'work');
  mkdirSync(workspace);
  return { workspace, home: join(root, 'home') };
}

/**
 * Runs the built `fence` as a subprocess with a clean environment: no API keys or base URLs
 * from the machine leak in, only `env` and what a shell needs.
 */
export function runFence(args: string[], options: { cwd: string; env: Record<string, string>; input?: string; timeoutMs?: number }) {
  return execa(process.execPath, [FENCE_BIN, ...args], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dirname(options.cwd), LANG: 'C.UTF-8', ...options.env },
    extendEnv: false,
    input: options.input ?? '',
    reject: false,
    timeout: options.timeoutMs ?? 60_000,
  });
}

/** The messages of the only session under `home` (the CLI run of a test). */
export function readOnlySessionLog(home: string): Message[] {
  const sessions = join(home, 'sessions');
  const ids = readdirSync(sessions);
  if (ids.length !== 1) throw new Error(`expected one session in ${sessions}, found ${ids.length}`);
  return readFileSync(join(sessions, ids[0] ?? '', 'conversation.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Message);
}

/** What `useCliRun` gives each test: a fake model server and fresh folders. */
export interface CliRun {
  server: FakeLlm;
  dirs: CliDirs;
  /** FENCE_HOME and OPENAI_BASE_URL for a run against the fake server. */
  env(): Record<string, string>;
  /**
   * Trusts a folder (the workspace by default) as its files are now, in the test's FENCE_HOME,
   * as `fence trust` does: call it after writing the fence.toml or AGENTS.md a run should use.
   */
  trust(dir?: string): void;
}

/**
 * Gives every test of the calling file a fresh fake model server and fresh workspace and
 * FENCE_HOME folders; the server is closed after each test. Read them inside a test.
 */
export function useCliRun(): CliRun {
  let server: FakeLlm | undefined;
  let dirs: CliDirs | undefined;
  beforeEach(async () => {
    server = await startFakeLlm();
    dirs = makeCliDirs();
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  const inTest = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useCliRun: the server and folders exist only inside a test');
    return value;
  };
  return {
    get server() {
      return inTest(server);
    },
    get dirs() {
      return inTest(dirs);
    },
    env: () => ({ FENCE_HOME: inTest(dirs).home, OPENAI_BASE_URL: inTest(server).openaiBaseURL }),
    trust: (dir) => {
      trustWorkspace(dir ?? inTest(dirs).workspace, inTest(dirs).home);
    },
  };
}

/**
 * The two wire formats a run can speak, each with a model id and the environment that points
 * it at the test's fake server: for `describe.each` over both.
 */
export function cliProviders(cli: CliRun): { name: string; model: string; env: () => Record<string, string> }[] {
  return [
    { name: 'OpenAI-compatible', model: 'openai/gpt-test', env: () => ({ OPENAI_BASE_URL: `${cli.server.url}/v1` }) },
    {
      name: 'Anthropic-compatible',
      model: 'anthropic/claude-test',
      env: () => ({ ANTHROPIC_BASE_URL: cli.server.url, ANTHROPIC_API_KEY: 'test-key' }),
    },
  ];
}
