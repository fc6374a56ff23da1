import type { ChildProcess } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../config/config-schema';
import type { OsSandbox } from '../os-sandbox/os-sandbox';
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

/** Where and how to start a server. */
export interface McpConnectionOptions {
  /** The server's name in the config, for messages. */
  name: string;
  config: McpServerConfig;
  /** Working folder of a stdio server (the workspace). */
  cwd: string;
  /** Told when the server says its list of tools changed (MCP's `notifications/tools/list_changed`). */
  onToolsChanged?: () => void;
  /** The session's OS sandbox: a stdio server runs inside it unless its entry says `sandbox = false`. */
  sandbox?: Pick<OsSandbox, 'wrap'>;
}

/** Variables a stdio server gets from fence's environment; anything else only from its `env` table. */
const BASE_ENV = ['PATH', 'HOME', 'LANG', 'TMPDIR'] as const;

/** Variables the SDK would add on its own; set to undefined so that spawn leaves them out. */
const SDK_DEFAULT_ENV = ['LOGNAME', 'SHELL', 'USER'] as const;

/** Characters of a server's stderr kept for messages, and the lines of it quoted. */
const STDERR_KEEP_CHARS = 8192;
const STDERR_TAIL_LINES = 5;

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
}

/**
 * A connection to one MCP server, over stdio (a subprocess fence starts) or streamable HTTP.
 *
 * - `connect()` starts the server (or reaches it) and runs MCP's initialisation; calls made at
 *   the same time share one attempt, and a connected server is not started again.
 * - A stdio server runs in `cwd` with a minimal environment (`PATH`, `HOME`, `LANG`, `TMPDIR`,
 *   `TERM=dumb`, then its `env` table); its stderr is never shown on the terminal, only its
 *   last lines are kept for messages.
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
  private readonly sandbox: Pick<OsSandbox, 'wrap'> | undefined;
  private readonly timeoutMs: number;
  private readonly startTimeoutMs: number;
  private attempt: Promise<{ live: Live } | { error: string }> | undefined;
  private current: Live | undefined;
  private stderr = '';
  private closing: Promise<void> | undefined;
  private readonly onToolsChanged: (() => void) | undefined;

  constructor(options: McpConnectionOptions) {
    this.name = options.name;
    this.config = options.config;
    this.cwd = options.cwd;
    this.onToolsChanged = options.onToolsChanged;
    this.sandbox = options.config.sandbox === false ? undefined : options.sandbox;
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
      return { ok: false, error: this.describeFailure(error, outcome.live, 'while listing its tools') };
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
      return failed(this.describeFailure(error, outcome.live, `during ${name}`));
    }
  }

  /** Ends the connection and stops a stdio server; see the class. */
  close(): Promise<void> {
    this.closing ??= (async () => {
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
    const transport = this.makeTransport(live);
    try {
      await client.connect(transport, { timeout: this.startTimeoutMs });
    } catch (error) {
      const message = this.describeFailure(error, live, 'before it answered');
      await client.close().catch(() => undefined);
      this.attempt = undefined; // the next call tries again
      return { error: message };
    }
    this.current = live;
    return { live };
  }

  private makeTransport(live: Live): Transport {
    if ('url' in this.config) {
      const headers = this.config.headers ?? {};
      return new StreamableHTTPClientTransport(new URL(this.config.url), { requestInit: { headers } });
    }
    const args = this.config.args ?? [];
    const line = this.sandbox ? this.sandbox.wrap(this.config.command, args, { cwd: this.cwd, terminal: 'none' }) : { command: this.config.command, args };
    const transport = new StdioClientTransport({
      command: line.command,
      args: line.args,
      env: stdioEnv(this.config.env ?? {}),
      cwd: this.cwd,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_KEEP_CHARS);
    });
    // The SDK does not tell how the process ended; its child is watched right after the spawn.
    const start = transport.start.bind(transport);
    transport.start = async () => {
      await start();
      const child = (transport as unknown as { _process?: ChildProcess })._process;
      if (!child) return;
      if (child.pid !== undefined) live.pid = child.pid;
      live.exited = new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          live.exit = { code: child.exitCode, signal: child.signalCode };
          resolve();
          return;
        }
        child.once('exit', (code, signal) => {
          live.exit = { code, signal };
          resolve();
        });
      });
    };
    return transport;
  }

  /** One message for a request that failed, saying whether the server went away. */
  private describeFailure(error: unknown, live: Live, when: string): string {
    const tail = this.stderrTail();
    const quoted = tail ? `: ${tail}` : '';
    if (live.exit) {
      const how = live.exit.signal ? `was killed by ${live.exit.signal}` : `exited (code ${live.exit.code})`;
      return `server ${this.name} ${how} ${when}${quoted}`;
    }
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
      const limit = when === `before it answered` || when === 'while listing its tools' ? this.startTimeoutMs : this.timeoutMs;
      return `server ${this.name} did not answer within ${limit / 1000} s ${when}`;
    }
    if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
      return `server ${this.name} closed the connection ${when}${quoted}`;
    }
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ENOENT' && 'command' in this.config) return `server ${this.name}: command "${this.config.command}" not found`;
    if (code === 'EACCES' && 'command' in this.config) return `server ${this.name}: command "${this.config.command}" cannot be run (permission denied)`;
    return `server ${this.name} failed ${when}: ${visibleText(errorText(error))}${quoted}`;
  }

  /** The last lines of the server's stderr, made visible: messages quote them, and they reach the terminal. */
  private stderrTail(): string {
    const lines = this.stderr.split('\n').map((line) => line.trimEnd()).filter((line) => line !== '');
    return visibleText(lines.slice(-STDERR_TAIL_LINES).join('\n'));
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
 * The environment of a stdio server: the base variables that are set, `TERM=dumb`, then its
 * own table. The SDK adds a few variables of its own (`LOGNAME`, `SHELL`, `USER`); they are
 * given as undefined, which `child_process.spawn` leaves out.
 */
function stdioEnv(own: Record<string, string>): Record<string, string> {
  const env: Record<string, string | undefined> = {};
  for (const key of SDK_DEFAULT_ENV) env[key] = undefined;
  for (const key of BASE_ENV) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  env.TERM = 'dumb';
  Object.assign(env, own);
  return env as Record<string, string>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
