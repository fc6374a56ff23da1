import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { FenceConfig } from '../config/config';
import { BUILTIN_TOOL_NAMES, OCCASIONAL_TOOL_NAMES, type McpServerConfig } from '../config/config-schema';
import { fenceHome } from '../config/paths';
import type { McpConnection, McpConnectionOptions, McpToolInfo } from '../processes/mcp-connection';
import type { OsSandbox } from '../os-sandbox/os-sandbox';
import type { ToolSpec } from '../tools/define-tool';

/** How long a server's listed tools are taken from the cache before it is asked again. */
export const MCP_TOOL_CACHE_MS = 24 * 60 * 60 * 1000;

/** Where listed tools are cached: `$FENCE_HOME/mcp-tools`. */
export function mcpToolCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(fenceHome(env), 'mcp-tools');
}

/** What a session needs of a server's connection: calling its tools, and stopping it. */
export type McpLink = Pick<McpConnection, 'callTool' | 'close'>;

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

/**
 * Gets every server of `servers` ready (stdio servers run in `cwd`), all at the same time,
 * lazily where it can: a server whose tools were listed in the last 24 hours under the same
 * configuration, folder and script files is not started — its tools come from the cache and
 * it starts on its first call. Any other server is started and its tools listed (and
 * cached). A running server that says its tools changed is listed again and the cache
 * rewritten (the session goes on with the tools it began with). Never throws: a server that
 * fails has `error`. The SDK is loaded only when a server is started.
 */
export async function connectMcpServers(
  servers: Record<string, McpServerConfig>,
  cwd: string,
  cache: McpCacheOptions = {},
  sandbox?: Pick<OsSandbox, 'wrap'>,
): Promise<McpServerStart[]> {
  const entries = Object.entries(servers);
  const now = cache.now ?? Date.now;
  return Promise.all(
    entries.map(async ([name, config]): Promise<McpServerStart> => {
      const file = cache.dir === undefined ? undefined : join(cache.dir, cacheFileName(name, config, cwd));
      // A server that says its tools changed is listed again, for the sessions that follow.
      let connection: ListingLink | undefined;
      const onToolsChanged = () => {
        if (connection && file) void relist(connection, file, now);
      };
      const cached = file && !cache.refresh ? readCache(file, now()) : undefined;
      if (cached) {
        connection = lazyConnection({ name, config, cwd, onToolsChanged, ...(sandbox ? { sandbox } : {}) });
        return { name, config, connection, listed: cached, cached: true };
      }
      const { McpConnection } = await import('../processes/mcp-connection');
      connection = new McpConnection({ name, config, cwd, onToolsChanged, ...(sandbox ? { sandbox } : {}) });
      const listed = await connection.listTools();
      if (!listed.ok) return { name, config, connection, error: listed.error };
      if (file) writeCache(file, { listedAt: now(), tools: listed.tools });
      return { name, config, connection, listed: listed.tools };
    }),
  );
}

/** The MCP servers of a session: their tools, what went wrong, and how to stop them. */
export interface McpServers {
  /** Fence tools of every server that started, in config order. */
  tools: ToolSpec[];
  /** One line per server that did not start and per tool left out (no `fence:` prefix). */
  problems: string[];
  /** Stops every server; safe to call more than once. */
  close(): Promise<void>;
}

/**
 * Gets the config's MCP servers ready (see `connectMcpServers`) and makes their tools (see
 * `createMcpTools`). A server that fails is left out with a line in `problems`
 * (`MCP server finance did not start: …`), as is a tool whose fence name another tool has.
 */
export async function startMcpServers(config: FenceConfig, cwd: string, cache: McpCacheOptions = {}, sandbox?: Pick<OsSandbox, 'wrap'>): Promise<McpServers> {
  const started = await connectMcpServers(config.mcpServers, cwd, cache, sandbox);
  const problems: string[] = [];
  const tools: ToolSpec[] = [];
  const taken = new Set<string>([...BUILTIN_TOOL_NAMES, ...OCCASIONAL_TOOL_NAMES, ...Object.keys(config.tools)]);
  const { createMcpTools } = started.length > 0 ? await import('../tools/mcp-tool') : { createMcpTools: undefined };
  for (const server of started) {
    if (!server.listed || !createMcpTools) {
      problems.push(`MCP server ${server.name} did not start: ${oneLine(server.error ?? 'unknown error')}`);
      continue;
    }
    for (const tool of createMcpTools(server.name, server.config, server.connection, server.listed)) {
      if (taken.has(tool.name)) {
        problems.push(`MCP server ${server.name}: tool ${tool.name} left out, another tool has that name`);
        continue;
      }
      taken.add(tool.name);
      tools.push(tool);
    }
  }
  let closing: Promise<void> | undefined;
  return {
    tools,
    problems,
    close: () => (closing ??= Promise.all(started.map((server) => server.connection.close())).then(() => undefined)),
  };
}

/**
 * A connection made on its first call: the SDK is loaded and the server started then, not
 * before. Closing one that never started does nothing.
 */
function lazyConnection(options: McpConnectionOptions): ListingLink {
  let real: Promise<McpConnection> | undefined;
  const connect = () => (real ??= import('../processes/mcp-connection').then(({ McpConnection }) => new McpConnection(options)));
  return {
    callTool: async (tool, args, signal) => (await connect()).callTool(tool, args, signal),
    listTools: async () => (await connect()).listTools(),
    close: async () => {
      if (real) await (await real).close();
    },
  };
}

/** Lists a running server's tools again and caches them; a listing that fails changes nothing. */
async function relist(connection: Pick<McpConnection, 'listTools'>, file: string, now: () => number): Promise<void> {
  const listed = await connection.listTools().catch(() => undefined);
  if (listed?.ok) writeCache(file, { listedAt: now(), tools: listed.tools });
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

/** A message on one line: its lines joined with " | ". */
function oneLine(text: string): string {
  return text.split(/\s*\n\s*/).filter((line) => line !== '').join(' | ');
}
