import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, relative } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { Message } from '../../src/conversation/message';
import { packageCacheRoot, workspaceCacheFolder } from '../../src/os-sandbox/package-caches';
import { startFakeLlm, type FakeLlm } from './fake-llm';
import { runFence } from './run-cli';
import { snapshot } from './sandbox-machine';

/**
 * A machine for running the built CLI in its OS sandbox end to end: a fake home with a key,
 * fence's data and configuration folders, a git workspace, a folder outside it, the fake model
 * server and a host HTTP server that nothing in the sandbox should reach.
 *
 * It lives under /var/tmp, not /tmp: inside the sandbox /tmp is the session's private folder,
 * so a target under the host's /tmp would look writable (the write lands in the private one).
 */
export interface SandboxRig {
  root: string;
  /** The fake HOME: `.ssh/id_ed25519` holds `KEY_MARKER`. */
  home: string;
  /** FENCE_HOME: `sessions/older-session` is another session, whose log holds `OLD_LOG_MARKER`. */
  fenceHome: string;
  /** A git repository (`git init`), with no fence.toml nor .fence. */
  workspace: string;
  /** An empty folder outside the workspace, where nothing may be written. */
  outside: string;
  /** The user's config.toml (`$XDG_CONFIG_HOME/fence/config.toml`): holds `CONFIG_MARKER`. */
  userConfig: string;
  /** The other session's log, and its saved tool outputs folder. */
  otherLog: string;
  otherOutputs: string;
  server: FakeLlm;
  /** The host HTTP server on 127.0.0.1: its URL, and the requests it got. */
  host: { url: string; hits: number };
  env: Record<string, string>;
}

/**
 * No bubblewrap on this machine (or not Linux): the tests that need the sandbox are skipped.
 * Only then: where bwrap is installed but cannot sandbox, they fail, as fence would.
 */
export const bubblewrapMissing = process.platform !== 'linux' || spawnSync('bwrap', ['--version']).error !== undefined;

/** What the fake private key holds: it must never reach the model through the sandbox. */
export const KEY_MARKER = 'fence-test-private-key-8c41f2';
/** What the other session's log holds. */
export const OLD_LOG_MARKER = 'fence-test-other-session-d07e93';
/** What the user's config.toml holds. */
export const CONFIG_MARKER = 'fence-test-user-config-41b7a0';
/** What the host HTTP server answers. */
export const HOST_REPLY = 'host-server-reached';

/** Gives every test of the calling file a fresh `SandboxRig`, removed after it. */
export function useSandboxRig(): () => SandboxRig {
  let rig: SandboxRig | undefined;
  let closeHost: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    const root = mkdtempSync('/var/tmp/fence-sandbox-test-');
    const home = join(root, 'home');
    const fenceHome = join(root, 'fence-home');
    const workspace = join(root, 'work');
    const otherSession = join(fenceHome, 'sessions', 'older-session');
    const files: Record<string, string> = {
      [join(home, '.ssh', 'id_ed25519')]: `-----BEGIN OPENSSH PRIVATE KEY-----\n${KEY_MARKER}\n-----END OPENSSH PRIVATE KEY-----\n`,
      [join(otherSession, 'conversation.jsonl')]: `${JSON.stringify({ role: 'user', content: OLD_LOG_MARKER })}\n`,
      [join(otherSession, 'tool-outputs', 'old-output.txt')]: `${OLD_LOG_MARKER}\n`,
      [join(root, 'config', 'fence', 'config.toml')]: `# ${CONFIG_MARKER}\n`,
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(path, '..'), { recursive: true });
      writeFileSync(path, text);
    }
    mkdirSync(join(root, 'outside'));
    execFileSync('git', ['init', '-q', workspace]);
    const server = await startFakeLlm();
    const host = { url: '', hits: 0 };
    const http = createServer((_request, response) => {
      host.hits += 1;
      response.end(HOST_REPLY);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    host.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/`;
    closeHost = () => {
      http.closeAllConnections();
      return new Promise((resolve) => http.close(() => resolve()));
    };
    rig = {
      root,
      home,
      fenceHome,
      workspace,
      outside: join(root, 'outside'),
      userConfig: join(root, 'config', 'fence', 'config.toml'),
      otherLog: join(otherSession, 'conversation.jsonl'),
      otherOutputs: join(otherSession, 'tool-outputs'),
      server,
      host,
      env: { HOME: home, FENCE_HOME: fenceHome, XDG_CONFIG_HOME: join(root, 'config'), OPENAI_BASE_URL: server.openaiBaseURL },
    };
  });
  afterEach(async () => {
    await rig?.server.close();
    await closeHost?.();
    if (rig) rmSync(rig.root, { recursive: true, force: true });
    rig = undefined;
  });
  return () => {
    if (!rig) throw new Error('useSandboxRig: the rig exists only inside a test');
    return rig;
  };
}

/** Runs the built fence in the rig's workspace with `-m local/test` (the child's `pid` is known at once); `env` adds to the rig's. */
export function fenceIn(rig: SandboxRig, args: string[], env: Record<string, string> = {}) {
  return runFence(['-m', 'local/test', ...args], { cwd: rig.workspace, env: { ...rig.env, ...env }, timeoutMs: 150_000 });
}

/** Queues one scripted reply per block, in order. */
export function script(rig: SandboxRig, replies: readonly string[]): void {
  for (const text of replies) rig.server.reply((r) => r.text(text));
}

/** A fenced block: `block('shell', 'ls')`, `block('save notes.txt', 'text')`. */
export const block = (head: string, body: string) => `\`\`\`${head}\n${body}\n\`\`\`\n`;

/** A shell block's body that fetches `url`: with curl, or without it through bash's /dev/tcp. */
export function fetchFromShell(url: string): string {
  return [
    `if command -v curl >/dev/null; then curl -sS --max-time 20 ${url}`,
    `else (exec 3<>/dev/tcp/127.0.0.1/${new URL(url).port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3); fi`,
  ].join('\n');
}

/** The id of the session the run made (the rig's other session aside). */
export function sessionId(rig: SandboxRig): string {
  const ids = readdirSync(join(rig.fenceHome, 'sessions')).filter((id) => id !== 'older-session');
  if (ids.length !== 1) throw new Error(`expected one new session, found ${ids.length}`);
  return ids[0] as string;
}

/** The messages of the session the run made. */
export function sessionLog(rig: SandboxRig): Message[] {
  const file = join(rig.fenceHome, 'sessions', sessionId(rig), 'conversation.jsonl');
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Message);
}

/** The session's tool results, in order: what the model read after each block. */
export function toolResults(rig: SandboxRig): Message[] {
  return sessionLog(rig).filter((message) => message.meta?.toolResult);
}

/** What `session.json` of the run's session says. */
export function sessionInfo(rig: SandboxRig, id = sessionId(rig)): Record<string, unknown> {
  return JSON.parse(readFileSync(join(rig.fenceHome, 'sessions', id, 'session.json'), 'utf8')) as Record<string, unknown>;
}

/** Every request body the fake model server got, as one text. */
export function everythingSent(rig: SandboxRig): string {
  return rig.server.requests.map((request) => JSON.stringify(request.body)).join('\n');
}

/**
 * Everything under the rig's root but the workspace and what this run's session may write
 * (fence's data folder, but for the other session; fence's package cache for the workspace,
 * and the empty folders made to hold it): two equal snapshots mean the run changed nothing
 * outside the workspace.
 */
export async function outsideWorkspace(rig: SandboxRig): Promise<Record<string, string>> {
  const under = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);
  const cache = relative(rig.root, workspaceCacheFolder(rig.workspace, packageCacheRoot({}, rig.home)));
  const holders = new Set<string>();
  for (let folder = dirname(cache); folder !== 'home' && folder !== '.'; folder = dirname(folder)) holders.add(folder);
  const all = await snapshot(rig.root);
  return Object.fromEntries(
    Object.entries(all).filter(
      ([path, entry]) =>
        !under(path, 'work') && (!under(path, 'fence-home') || under(path, 'fence-home/sessions/older-session')) && !under(path, cache) && !(holders.has(path) && entry === 'dir'),
    ),
  );
}
