import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig, McpStdioServerConfig } from '../config/config-schema';
import type { OsSandbox } from '../os-sandbox/os-sandbox';
import { DetachedStdioTransport } from './detached-stdio-transport';
import { placeServer, type Placement } from './mcp-server-placement';
import { failureHint, stderrTail } from './server-failure';
import { visibleText } from './visible-text';

/** Seconds a call (and start-up, and listing) may take when the server's config names no `timeout`. */
export const DEFAULT_MCP_TIMEOUT_SECONDS = 60;

/** A tool as an MCP server lists it (name, description, input schema, annotations…). */
export type McpToolInfo = Tool;

/** One piece of a call's result, as MCP gives it (`{ type: 'text', text }`, images, resources…). */
export interface McpContent {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/**
 * The result of one call. `failure` is set when the call did not complete (the server could
 * not be reached, exited, timed out, or the call was aborted): `content` then holds the same
 * message as text and `isError` is true.
 */
export interface McpCallResult {
  content: McpContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  failure?: string;
}

/** Started and listening, or why not. */
export type McpConnectResult = { ok: true } | { ok: false; error: string };

/** The server's tools, or why they could not be listed. */
export type McpListResult = { ok: true; tools: McpToolInfo[] } | { ok: false; error: string };

/**
 * The session's OS sandbox as a connection uses it: `wrap` starts a server inside; `policy`
 * (its writable paths) and `tempDir` tell where a server of the user's own may run outside
 * (see `placeServer`). Without `policy`, every stdio server runs inside.
 */
export type McpSandbox = Pick<OsSandbox, 'wrap'> & Partial<Pick<OsSandbox, 'policy' | 'tempDir'>>;

/** Where and how to start a server. */
export interface McpConnectionOptions {
  /** The server's name in the config, for messages. */
  name: string;
  config: McpServerConfig;
  /**
   * The workspace: a stdio server inside the sandbox (or with no sandbox) runs there unless its
   * entry names a `cwd`; every stdio server gets it as `FENCE_WORKSPACE` and for `${workspace}`.
   */
  cwd: string;
  /** Told when the server says its list of tools changed (MCP's `notifications/tools/list_changed`). */
  onToolsChanged?: () => void;
  /** The session's OS sandbox (see `McpSandbox` and `placeServer`); absent: every server runs as it is, in the workspace. */
  sandbox?: McpSandbox;
  /** The person's home folder, where a server outside the sandbox runs by default. Absent: the process's. */
  home?: string;
  /**
   * Told, once per connection, why a server of the user's own runs inside the sandbox after
   * all (one sentence, no `fence:` prefix). Absent: written to stderr.
   */
  onNote?: (line: string) => void;
}

/** Variables a stdio server gets from fence's environment; anything else only from its `env` table. */
const BASE_ENV = ['PATH', 'HOME', 'LANG', 'TMPDIR'] as const;

/** Characters of a server's stderr kept for messages. */
const STDERR_KEEP_CHARS = 8192;

/** Pages of `tools/list` read at most, so a server that always gives a cursor cannot loop us. */
const MAX_LIST_PAGES = 100;

/** Start-up and listing get at least this long, whatever the per-call `timeout` (a server may be slow to start). */
const MIN_START_TIMEOUT_MS = 30_000;

/** How long `close` waits for a stdio server's process to be gone after the SDK stopped it. */
const EXIT_WAIT_MS = 3000;

/** One live connection: the client, and for a stdio server its process and how it ended. */
interface Live {
  client: Client;
  closed: boolean;
  pid?: number;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  exited?: Promise<void>;
  onExit?: () => void;
}

/**
 * A connection to one MCP server, over stdio (a subprocess fence starts) or streamable HTTP.
 *
 * - `connect()` starts the server (or reaches it) and runs MCP's initialisation; calls made at
 *   the same time share one attempt, and a connected server is not started again.
 * - A stdio server runs inside the session's sandbox or outside it, as `placeServer` decides at
 *   each start, in a session of its own on pipes (no controlling terminal), with a minimal
 *   environment (`PATH`, `HOME`, `LANG`, `TMPDIR`, `TERM=dumb`, its `env` table, then
 *   `FENCE_WORKSPACE`); its stderr is never shown on the terminal, only its last lines are kept
 *   for messages, with a hint when the cause is recognised (see `failureHint`).
 * - A server that exits or closes the connection fails the calls in flight with a message that
 *   says so (`server finance exited (code 1) during get_members: <stderr tail>`); the next call
 *   starts it again.
 * - Each call has the config's `timeout` (default 60 s; start-up and listing get at least 30 s);
 *   a call also ends when its signal aborts.
 * - A server's `notifications/tools/list_changed` is passed on to `onToolsChanged`.
 * - `close()` ends the connection for good (a stdio server's process is gone when it resolves);
 *   it may be called more than once, and later calls fail.
 *
 * No method throws for an expected failure: they return the error as a result.
 */
export class McpConnection {
  readonly name: string;
  private readonly config: McpServerConfig;
  private readonly cwd: string;
  private readonly sandbox: McpSandbox | undefined;
  private readonly home: string;
  private readonly onNote: (line: string) => void;
  private noted = false;
  /** Where the current or last stdio server ran. */
  private placement: Placement | undefined;
  private readonly timeoutMs: number;
  private readonly startTimeoutMs: number;
  private attempt: Promise<{ live: Live } | { error: string }> | undefined;
  private current: Live | undefined;
  /** The connection being made, until its server answered or failed: what `close` stops at once. */
  private connecting: Live | undefined;
  private stderr = '';
  private closing: Promise<void> | undefined;
  private readonly onToolsChanged: (() => void) | undefined;

  constructor(options: McpConnectionOptions) {
    this.name = options.name;
    this.config = options.config;
    this.cwd = options.cwd;
    this.onToolsChanged = options.onToolsChanged;
    this.sandbox = options.sandbox;
    this.home = options.home ?? homedir();
    this.onNote = options.onNote ?? ((line) => process.stderr.write(`fence: ${line}\n`));
    this.timeoutMs = (options.config.timeout ?? DEFAULT_MCP_TIMEOUT_SECONDS) * 1000;
    this.startTimeoutMs = Math.max(this.timeoutMs, MIN_START_TIMEOUT_MS);
  }

  /** `stdio` or `http`, for listings. */
  get transport(): 'stdio' | 'http' {
    return 'url' in this.config ? 'http' : 'stdio';
  }

  /** The process id of a running stdio server; undefined when none runs. */
  get pid(): number | undefined {
    return this.current && !this.current.closed ? this.current.pid : undefined;
  }

  /** Starts or reaches the server once; see the class. */
  async connect(): Promise<McpConnectResult> {
    const outcome = await this.live();
    return 'error' in outcome ? { ok: false, error: outcome.error } : { ok: true };
  }

  /** Every tool the server lists (all pages). */
  async listTools(): Promise<McpListResult> {
    const outcome = await this.live();
    if ('error' in outcome) return { ok: false, error: outcome.error };
    const tools: McpToolInfo[] = [];
    try {
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const listed = await outcome.live.client.listTools(cursor === undefined ? {} : { cursor }, { timeout: this.startTimeoutMs });
        tools.push(...listed.tools);
        cursor = listed.nextCursor;
        if (cursor === undefined) break;
      }
      return { ok: true, tools };
    } catch (error) {
      return { ok: false, error: this.describeFailure(error, outcome.live, 'list') };
    }
  }

  /** Calls one tool with `args`; see `McpCallResult` for how failures come back. */
  async callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult> {
    if (signal.aborted) return failed(`${name} was interrupted before it started`);
    const outcome = await this.live();
    if ('error' in outcome) return failed(`server ${this.name} is not available: ${outcome.error}`);
    if (signal.aborted) return failed(`${name} was interrupted before it started`);
    try {
      const result = await outcome.live.client.callTool({ name, arguments: args }, undefined, { signal, timeout: this.timeoutMs });
      const content = Array.isArray(result.content) ? (result.content as McpContent[]) : [];
      const structured = result.structuredContent;
      return {
        content,
        ...(isRecord(structured) ? { structuredContent: structured } : {}),
        ...(result.isError === true ? { isError: true } : {}),
      };
    } catch (error) {
      if (signal.aborted) return failed(`${name} was interrupted`);
      return failed(this.describeFailure(error, outcome.live, { call: name }));
    }
  }

  /**
   * Kills at once, without waiting, the process group of a stdio server still starting: for a
   * session that ends now and will not wait for `close` (outside the sandbox nothing else would
   * stop a server that never answers). Does nothing once the server has answered.
   */
  stopStarting(): void {
    const pid = this.connecting?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Gone already, or not a group leader (it is: stdio servers start in a session of their own).
    }
  }

  /** Ends the connection and stops a stdio server; see the class. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      // A start under way is not waited for: closing its client stops the server's process
      // group, so a server that never answers cannot outlive the session (outside the sandbox
      // nothing else would stop it), and the start fails at once.
      await this.connecting?.client.close().catch(() => undefined);
      const outcome = await this.attempt;
      const live = outcome && 'live' in outcome ? outcome.live : undefined;
      if (!live) return;
      await live.client.close().catch(() => undefined);
      if (live.exited) await Promise.race([live.exited, new Promise((resolve) => setTimeout(resolve, EXIT_WAIT_MS).unref())]);
    })();
    return this.closing;
  }

  /** The connection, made now if there is none (or the last one ended). */
  private live(): Promise<{ live: Live } | { error: string }> {
    if (this.closing) return Promise.resolve({ error: `the connection to server ${this.name} is closed` });
    if (this.current?.closed) this.attempt = undefined;
    this.attempt ??= this.start();
    return this.attempt;
  }

  private async start(): Promise<{ live: Live } | { error: string }> {
    this.stderr = '';
    this.current = undefined;
    const client = new Client({ name: 'fence', version: '0.1.0' });
    const live: Live = { client, closed: false };
    client.onerror = () => undefined; // reported through the requests that fail
    client.onclose = () => {
      live.closed = true;
    };
    const onToolsChanged = this.onToolsChanged;
    if (onToolsChanged) client.setNotificationHandler(ToolListChangedNotificationSchema, () => onToolsChanged());
    let transport: Transport;
    try {
      transport = this.makeTransport(live);
    } catch (error) {
      // Its working folder is missing, or the sandbox could not be had (its filter cannot be made here).
      this.attempt = undefined;
      return { error: `server ${this.name} did not start: ${visibleText(errorText(error))}` };
    }
    this.connecting = live;
    try {
      await client.connect(transport, { timeout: this.startTimeoutMs });
    } catch (error) {
      const message = this.closing ? `server ${this.name} was stopped before it answered: the session ended` : this.describeFailure(error, live, 'start');
      await client.close().catch(() => undefined);
      this.attempt = undefined; // the next call tries again
      return { error: message };
    } finally {
      this.connecting = undefined;
    }
    this.current = live;
    return { live };
  }

  private makeTransport(live: Live): Transport {
    if ('url' in this.config) {
      const headers = this.config.headers ?? {};
      return new StreamableHTTPClientTransport(new URL(this.config.url), { requestInit: { headers } });
    }
    const env = stdioEnv(this.config.env ?? {}, this.cwd);
    const placement = this.place(this.config, env.PATH ?? '');
    this.placement = placement;
    if (placement.where === 'inside' && placement.reason !== undefined && !this.noted) {
      this.noted = true;
      this.onNote(`MCP server ${this.name} runs inside the sandbox: ${placement.reason}. Set sandbox = true in its entry to say so, or sandbox = false to run it outside anyway.`);
    }
    const wrapped = placement.where === 'inside' && this.sandbox !== undefined;
    const line = wrapped && this.sandbox ? this.sandbox.wrap(placement.command, placement.args, { cwd: placement.cwd, terminal: 'none' }) : { command: placement.command, args: placement.args };
    // Spawned there directly: a missing folder would read as a missing program.
    if (!wrapped && !isFolder(placement.cwd)) throw new Error(`its working folder ${placement.cwd} does not exist`);
    if (placement.where === 'outside') env.PATH = placement.path;
    return new DetachedStdioTransport({
      command: line.command,
      args: line.args,
      env,
      // bubblewrap itself starts in the workspace and moves to the server's folder inside.
      cwd: wrapped ? this.cwd : placement.cwd,
      onStderr: (chunk) => {
        this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_KEEP_CHARS);
      },
      onStart: (pid) => {
        live.pid = pid;
        live.exited = new Promise((resolve) => {
          live.onExit = resolve;
        });
      },
      onExit: (exit) => {
        live.exit = exit;
        live.onExit?.();
      },
    });
  }

  /**
   * Where the stdio server of `config` runs now (see `placeServer`). With no sandbox (mode
   * `off`, none available, `fence mcp list`) the same choice of folder is made against the
   * workspace, so a server of the user's own runs in the home folder there too, and one that
   * runs workspace code in the workspace, with no sandbox to run in. With a sandbox that does
   * not tell its writable paths: inside.
   */
  private place(config: McpStdioServerConfig, path: string): Placement {
    const input = { workspace: this.cwd, home: this.home, path };
    if (!this.sandbox) {
      const placement = placeServer({ ...input, config, writable: [this.cwd] });
      return placement.where === 'inside' ? { where: 'inside', command: placement.command, args: placement.args, cwd: placement.cwd } : { ...placement, path };
    }
    const policy = this.sandbox.policy;
    if (!policy) return placeServer({ ...input, config: { ...config, sandbox: true }, writable: [] });
    const writable = [...policy.writable, ...(this.sandbox.tempDir ? [this.sandbox.tempDir] : [])];
    return placeServer({ ...input, config, writable });
  }

  /**
   * One message for a request that failed, saying whether the server went away: a sentence,
   * the last lines of the server's stderr, and on a line of its own a hint when the cause is
   * recognised (see `failureHint`).
   */
  private describeFailure(error: unknown, live: Live, when: 'start' | 'list' | { call: string }): string {
    const during = when === 'start' ? 'before it answered' : when === 'list' ? 'while listing its tools' : `during ${when.call}`;
    const tail = stderrTail(this.stderr);
    const quoted = tail ? `: ${tail}` : '';
    const said = (text: string) => this.withHint(text, `${errorText(error)}\n${this.stderr}`);
    if (live.exit) {
      const how = live.exit.signal ? `was killed by ${live.exit.signal}` : `exited (code ${live.exit.code})`;
      return said(`server ${this.name} ${how} ${during}${quoted}`);
    }
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
      if (when === 'start') return said(`server ${this.name} did not answer within ${this.startTimeoutMs / 1000} s of starting${quoted}`);
      if (when === 'list') return said(`server ${this.name} did not list its tools within ${this.startTimeoutMs / 1000} s${quoted}`);
      return said(`server ${this.name} did not answer ${when.call} within ${this.timeoutMs / 1000} s`);
    }
    if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
      return said(`server ${this.name} closed the connection ${during}${quoted}`);
    }
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ENOENT' && 'command' in this.config) return `server ${this.name} did not start: command "${this.config.command}" not found`;
    if (code === 'EACCES' && 'command' in this.config) return `server ${this.name} did not start: command "${this.config.command}" cannot be run (permission denied)`;
    return said(`server ${this.name} failed ${during}: ${visibleText(errorText(error))}${quoted}`);
  }

  /** `message`, with the hint for what was `said` (the error and the server's stderr) on a line of its own when there is one. */
  private withHint(message: string, said: string): string {
    const placement = this.placement;
    if (!placement || !('command' in this.config)) return message;
    const hint = failureHint(said, {
      command: placement.command,
      args: placement.args,
      inside: placement.where === 'inside' && this.sandbox !== undefined,
      fromProject: this.config.source !== 'user',
    });
    return hint ? `${message}\n${hint}` : message;
  }
}

/** An error's message, with the code of its cause when it has one (`fetch failed (ECONNREFUSED)`). */
function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error.cause as NodeJS.ErrnoException | undefined)?.code;
  return typeof cause === 'string' && !error.message.includes(cause) ? `${error.message} (${cause})` : error.message;
}

/** A call that did not complete, as a result. */
function failed(message: string): McpCallResult {
  return { content: [{ type: 'text', text: message }], isError: true, failure: message };
}

/**
 * The environment of a stdio server: the base variables that are set, `TERM=dumb`, its own
 * table, then `FENCE_WORKSPACE`, the session's workspace. Nothing else of fence's.
 */
function stdioEnv(own: Record<string, string>, workspace: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of BASE_ENV) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  env.TERM = 'dumb';
  Object.assign(env, own);
  env.FENCE_WORKSPACE = workspace;
  return env;
}

/** Whether `path` is a folder (links followed). */
function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
