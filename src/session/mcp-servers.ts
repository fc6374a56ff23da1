import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { FenceConfig } from '../config/config';
import { BUILTIN_TOOL_NAMES, OCCASIONAL_TOOL_NAMES, type McpServerConfig } from '../config/config-schema';
import { fenceHome } from '../config/paths';
import type { McpConnection, McpConnectionOptions, McpListResult, McpToolInfo } from '../processes/mcp-connection';
import type { OsSandbox } from '../os-sandbox/os-sandbox';
import type { ToolSpec } from '../tools/define-tool';
import type { AbsentTools } from '../tools/registry';

/** How long a server's listed tools are taken from the cache before it is asked again. */
export const MCP_TOOL_CACHE_MS = 24 * 60 * 60 * 1000;

/** Where listed tools are cached: `$FENCE_HOME/mcp-tools`. */
export function mcpToolCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(fenceHome(env), 'mcp-tools');
}

/** What a session needs of a server's connection: calling its tools, and stopping it. */
export type McpLink = Pick<McpConnection, 'callTool' | 'close'> & Partial<Pick<McpConnection, 'stopStarting'>>;

/** A connection that can also list the server's tools again (when it says they changed). */
type ListingLink = McpLink & Pick<McpConnection, 'listTools'>;

/** One MCP server after its start: its connection, and its tools or why it has none. */
export interface McpServerStart {
  name: string;
  config: McpServerConfig;
  connection: McpLink;
  /** The tools it listed; absent when it did not start or list. */
  listed?: McpToolInfo[];
  /** Why it did not start or list. */
  error?: string;
  /** The tools came from the cache: the server has not been started, and starts on its first call. */
  cached?: boolean;
}

/** Where the lists of servers' tools are kept between sessions, and whether to ask the servers anyway. */
export interface McpCacheOptions {
  /** The cache's folder (`$FENCE_HOME/mcp-tools`); absent: no cache, every server is started. */
  dir?: string;
  /** Start and list every server, and write what they list (`fence mcp list`). */
  refresh?: boolean;
  now?: () => number;
}

/** A cached listing, as its file holds it. */
interface CachedTools {
  listedAt: number;
  tools: McpToolInfo[];
}

/** One server as a session opens: its connection, and its tools from the cache or the listing under way. */
interface PreparedServer {
  name: string;
  config: McpServerConfig;
  connection: McpLink;
  /** The tools from the cache: the server has not been started, and starts on its first call. */
  cached?: McpToolInfo[];
  /** The first listing of a server started now; its tools are cached when it succeeds. */
  listing?: Promise<McpListResult>;
}

/**
 * Gets one server ready without waiting for it: from the cache (see `connectMcpServers`), or
 * started now with its listing under way. `onRelisted` gets the tools of a running server that
 * said its tools changed, once they are listed again (and cached).
 */
function prepareServer(
  name: string,
  config: McpServerConfig,
  cwd: string,
  cache: McpCacheOptions,
  sandbox: Pick<OsSandbox, 'wrap'> | undefined,
  onRelisted?: (tools: McpToolInfo[]) => void,
): PreparedServer {
  const file = cache.dir === undefined ? undefined : join(cache.dir, cacheFileName(name, config, cwd));
  const now = cache.now ?? Date.now;
  // A server that says its tools changed is listed again, for the session and the ones that follow.
  const onToolsChanged = () => {
    void relist(connection, file, now).then((tools) => {
      if (tools) onRelisted?.(tools);
    });
  };
  const connection = lazyConnection({ name, config, cwd, onToolsChanged, ...(sandbox ? { sandbox } : {}) });
  const cached = file && !cache.refresh ? readCache(file, now()) : undefined;
  if (cached) return { name, config, connection, cached };
  const listing = connection.listTools().then(
    (listed) => {
      if (listed.ok && file) writeCache(file, { listedAt: now(), tools: listed.tools });
      return listed;
    },
    // Failures come back as results; anything thrown (the SDK failing to load) is one too.
    (error: unknown): McpListResult => ({ ok: false, error: error instanceof Error ? error.message : String(error) }),
  );
  return { name, config, connection, listing };
}

/**
 * Gets every server of `servers` ready (stdio servers run in `cwd`), all at the same time,
 * and waits for them: a server whose tools were listed in the last 24 hours under the same
 * configuration, folder and script files is not started — its tools come from the cache and
 * it starts on its first call. Any other server is started and its tools listed (and
 * cached). A running server that says its tools changed is listed again and the cache
 * rewritten. Never throws: a server that fails has `error`. The SDK is loaded only when a
 * server is started. (A session does not wait: see `openMcpServers`.)
 */
export async function connectMcpServers(
  servers: Record<string, McpServerConfig>,
  cwd: string,
  cache: McpCacheOptions = {},
  sandbox?: Pick<OsSandbox, 'wrap'>,
): Promise<McpServerStart[]> {
  return Promise.all(
    Object.entries(servers).map(async ([name, config]): Promise<McpServerStart> => {
      const server = prepareServer(name, config, cwd, cache, sandbox);
      const { connection } = server;
      if (server.cached) return { name, config, connection, listed: server.cached, cached: true };
      const listed = await (server.listing as Promise<McpListResult>);
      return listed.ok ? { name, config, connection, listed: listed.tools } : { name, config, connection, error: listed.error };
    }),
  );
}

/** The MCP servers of a session, once all have listed their tools or failed: their tools, what went wrong, and how to stop them. */
export interface McpServers {
  /** Fence tools of every server that started, in config order. */
  tools: ToolSpec[];
  /** One line per server that did not start and per tool left out (no `fence:` prefix). */
  problems: string[];
  /** Stops every server; safe to call more than once. */
  close(): Promise<void>;
}

/**
 * Gets the config's MCP servers ready and waits for every one to list its tools or fail (see
 * `openMcpServers`): for `fence mcp serve` and `fence run`, whose programs are given their
 * tools once, when they start. The tools are those listed at the start; `problems` has the
 * lines `openMcpServers` reports (`MCP server finance did not start: …`).
 */
export async function startMcpServers(config: FenceConfig, cwd: string, cache: McpCacheOptions = {}, sandbox?: Pick<OsSandbox, 'wrap'>): Promise<McpServers> {
  const problems: string[] = [];
  const servers = await openMcpServers(config, cwd, cache, sandbox, (line) => problems.push(line));
  await servers.settled;
  return { tools: [...servers.tools], problems, close: servers.close };
}

/** What changed in a session's MCP tools: a server joined (listed its tools after the session opened), or listed them again. */
export interface McpToolChange {
  server: string;
  kind: 'joined' | 'relisted';
}

/** The MCP servers of a session while they start: the tools listed so far, and the servers still starting. */
export interface LiveMcpServers {
  /** Fence tools of every server that has listed (or was cached), in config order; grows as servers join. */
  readonly tools: readonly ToolSpec[];
  /** Names of the servers still starting. */
  readonly starting: readonly string[];
  /** Whether a server still starting may list a tool named `name` (its name starts with the server's). */
  mayList(name: string): boolean;
  /** Resolves once every server started has listed its tools or failed (never rejects). */
  readonly settled: Promise<void>;
  /**
   * Calls `listener` for each change to `tools` (see `McpToolChange`): at once for the changes
   * made before it was set, then as they come. One listener; a second replaces the first.
   */
  onChange(listener: (change: McpToolChange) => void): void;
  /** What a session's registry is told of the tools of servers still starting, failed, or that dropped them. */
  readonly absent: AbsentTools;
  /**
   * Stops every server; safe to call more than once. A server still starting is told to stop
   * and not waited for, with a line saying it did not start before the session ended.
   */
  close(): Promise<void>;
}

/** A server of a live session and where it stands. */
interface ServerState {
  name: string;
  prepared: PreparedServer;
  state: 'starting' | 'ready' | 'failed';
  /** Why it failed. */
  error?: string;
  /** Its fence tools now. */
  tools: ToolSpec[];
  /** What its tools' names start with (`finance_`). */
  prefix: string;
  /** Resolves when it has listed or failed. */
  done: Promise<void>;
}

/**
 * Gets the config's MCP servers ready without waiting for any: the servers whose tools are
 * cached are lazy (they start on their first call, see `connectMcpServers`); every other one
 * starts now, in parallel with whatever the session does meanwhile, and its tools **join**
 * (see `LiveMcpServers.onChange`) when it has listed them. A server that fails is reported
 * through `problem` when it fails (`MCP server finance did not start: …`), as is a tool whose
 * fence name another tool has (the tool that was there first keeps it). A running server that
 * says its tools changed is listed again: its tools are replaced by the new list and
 * `onChange` told. Resolves once the cached servers' tools are made; never throws.
 */
export async function openMcpServers(
  config: FenceConfig,
  cwd: string,
  cache: McpCacheOptions,
  sandbox: Pick<OsSandbox, 'wrap'> | undefined,
  problem: (line: string) => void,
): Promise<LiveMcpServers> {
  const entries = Object.entries(config.mcpServers);
  if (entries.length === 0) return noServers;
  const { createMcpTools, mcpToolName } = await import('../tools/mcp-tool');
  const fixed = new Set<string>([...BUILTIN_TOOL_NAMES, ...OCCASIONAL_TOOL_NAMES, ...Object.keys(config.tools)]);
  const servers: ServerState[] = [];
  const changes: McpToolChange[] = [];
  let listener: ((change: McpToolChange) => void) | undefined;
  /** Tools a server no longer lists, by fence name: the server's name. */
  const dropped = new Map<string, string>();
  /** Lines about tools left out, each said once. */
  const said = new Set<string>();
  let closed = false;

  const tell = (change: McpToolChange) => {
    if (listener) listener(change);
    else changes.push(change);
  };
  /** Makes a server's tools from what it listed, leaving out names other tools have. */
  const take = (server: ServerState, listed: readonly McpToolInfo[]) => {
    const others = new Set([...fixed, ...servers.filter((other) => other !== server).flatMap((other) => other.tools.map((tool) => tool.name))]);
    const before = server.tools.map((tool) => tool.name);
    server.tools = [];
    for (const tool of createMcpTools(server.name, server.prepared.config, server.prepared.connection, listed)) {
      if (others.has(tool.name) || server.tools.some((mine) => mine.name === tool.name)) {
        const line = `MCP server ${server.name}: tool ${tool.name} left out, another tool has that name`;
        if (!said.has(line)) problem(line);
        said.add(line);
        continue;
      }
      server.tools.push(tool);
      dropped.delete(tool.name);
    }
    for (const name of before) if (!server.tools.some((tool) => tool.name === name)) dropped.set(name, server.name);
  };

  for (const [name, serverConfig] of entries) {
    let relisted: ((tools: McpToolInfo[]) => void) | undefined;
    const prepared = prepareServer(name, serverConfig, cwd, cache, sandbox, (tools) => relisted?.(tools));
    const { cached, listing } = prepared;
    const server: ServerState = { name, prepared, state: listing ? 'starting' : 'ready', tools: [], prefix: mcpToolName(name, ''), done: Promise.resolve() };
    relisted = (tools) => {
      if (closed || server.state !== 'ready') return;
      take(server, tools);
      tell({ server: name, kind: 'relisted' });
    };
    servers.push(server);
    if (cached) take(server, cached);
    if (!listing) continue;
    server.done = listing.then((listed) => {
      if (closed) return;
      if (!listed.ok) {
        server.state = 'failed';
        server.error = oneLine(listed.error);
        problem(`MCP server ${name} did not start: ${indentedBelow(whyNotStarted(name, listed.error))}`);
        return;
      }
      server.state = 'ready';
      take(server, listed.tools);
      tell({ server: name, kind: 'joined' });
    });
  }

  const matching = (name: string, state: ServerState['state']) => servers.filter((server) => server.state === state && name.startsWith(server.prefix));
  let closing: Promise<void> | undefined;
  return {
    get tools() {
      return servers.flatMap((server) => server.tools);
    },
    get starting() {
      return servers.filter((server) => server.state === 'starting').map((server) => server.name);
    },
    mayList: (name) => matching(name, 'starting').length > 0,
    settled: Promise.all(servers.map((server) => server.done)).then(() => undefined),
    onChange(next) {
      listener = next;
      for (const change of changes.splice(0)) next(change);
    },
    absent: {
      arrival(name, signal) {
        const waiting = matching(name, 'starting');
        if (waiting.length === 0) return undefined;
        return untilAborted(Promise.all(waiting.map((server) => server.done)), signal);
      },
      whyAbsent(name) {
        const gone = dropped.get(name);
        if (gone !== undefined) return `${name} is no longer offered: MCP server ${gone} no longer lists it.`;
        const failed = matching(name, 'failed')[0];
        if (failed) return `There is no tool ${name}: MCP server ${failed.name} did not start (${failed.error}), so none of its tools can be called in this session.`;
        return undefined;
      },
    },
    close: () =>
      (closing ??= (async () => {
        const starting = servers.filter((server) => server.state === 'starting');
        closed = true;
        for (const server of starting) problem(`MCP server ${server.name} did not start: it was still starting when the session ended`);
        // A server still starting is stopped without waiting: its connection ends once the start does.
        for (const server of starting) {
          // Killed now: fence may exit before an asynchronous stop would have run.
          server.prepared.connection.stopStarting?.();
          void server.prepared.connection.close().catch(() => undefined);
        }
        const ready = servers.filter((server) => !starting.includes(server));
        await Promise.all(ready.map((server) => server.prepared.connection.close()));
      })()),
  };
}

/** The live servers of a configuration that names none. */
const noServers: LiveMcpServers = {
  tools: [],
  starting: [],
  mayList: () => false,
  settled: Promise.resolve(),
  onChange: () => undefined,
  absent: { arrival: () => undefined, whyAbsent: () => undefined },
  close: () => Promise.resolve(),
};

/** Resolves when `promise` settles or `signal` aborts, whichever comes first. */
function untilAborted(promise: Promise<unknown>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void promise.then(done, done);
  });
}

/**
 * A connection made on its first use: the SDK is loaded and the server started then, not
 * before. Closing one that never started does nothing.
 */
function lazyConnection(options: McpConnectionOptions): ListingLink {
  let real: Promise<McpConnection> | undefined;
  let made: McpConnection | undefined;
  const connect = () => (real ??= import('../processes/mcp-connection').then(({ McpConnection }) => (made = new McpConnection(options))));
  return {
    stopStarting: () => made?.stopStarting(),
    callTool: async (tool, args, signal) => (await connect()).callTool(tool, args, signal),
    listTools: async () => (await connect()).listTools(),
    close: async () => {
      if (real) await (await real).close();
    },
  };
}

/** Lists a running server's tools again and caches them; undefined when the listing fails (nothing changes then). */
async function relist(connection: Pick<McpConnection, 'listTools'>, file: string | undefined, now: () => number): Promise<McpToolInfo[] | undefined> {
  const listed = await connection.listTools().catch(() => undefined);
  if (!listed?.ok) return undefined;
  if (file) writeCache(file, { listedAt: now(), tools: listed.tools });
  return listed.tools;
}

/**
 * The cache file of a server: its name and a hash of its configuration and folder, so a
 * change to either (another command, argument, variable, URL or header) lists it afresh; for
 * a stdio server also of the size and time of each file its command and arguments name (its
 * script), so editing the server lists it afresh too. Only the hash is written, never the
 * configuration's values.
 */
function cacheFileName(name: string, config: McpServerConfig, cwd: string): string {
  const files = 'command' in config ? [config.command, ...(config.args ?? [])].map((word) => fileStamp(resolve(cwd, word))) : [];
  const hash = createHash('sha256').update(JSON.stringify({ config, cwd, files })).digest('hex').slice(0, 16);
  return `${name.replace(/[^\w-]/g, '_')}-${hash}.json`;
}

/** `size:mtime` of a file, or null when the word names none. */
function fileStamp(path: string): string | null {
  try {
    const stat = statSync(path);
    return stat.isFile() ? `${stat.size}:${stat.mtimeMs}` : null;
  } catch {
    return null;
  }
}

/** The cached tools when the file is readable and young enough; undefined otherwise. */
function readCache(file: string, now: number): McpToolInfo[] | undefined {
  try {
    const cached = JSON.parse(readFileSync(file, 'utf8')) as Partial<CachedTools>;
    if (typeof cached.listedAt !== 'number' || !Array.isArray(cached.tools)) return undefined;
    if (now - cached.listedAt > MCP_TOOL_CACHE_MS || cached.listedAt > now) return undefined;
    return cached.tools;
  } catch {
    return undefined;
  }
}

/** Writes a listing through a temporary file; a cache that cannot be written is only a slower next start. */
function writeCache(file: string, cached: CachedTools): void {
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(cached), { mode: 0o600 });
    renameSync(temporary, file);
  } catch {
    // Nothing lost: the server is listed again next time.
  }
}

/**
 * Why the server `name` did not start, for a line that names it already: the connection's
 * error without its own leading `server <name>` and `did not start:`.
 */
export function whyNotStarted(name: string, error: string): string {
  const named = `server ${name} `;
  const text = error.startsWith(named) ? error.slice(named.length) : error;
  return text.startsWith('did not start: ') ? text.slice('did not start: '.length) : text;
}

/** `text` with its lines after the first indented by two spaces, under the line they belong to; blank lines dropped. */
function indentedBelow(text: string): string {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => (index === 0 ? line : `  ${line.trim()}`))
    .join('\n');
}

/** A message on one line: its lines joined with " | ". */
function oneLine(text: string): string {
  return text.split(/\s*\n\s*/).filter((line) => line !== '').join(' | ');
}
