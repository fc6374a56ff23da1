import { loadConfig } from '../config/config';
import { trustNotice } from '../config/trust';
import type { McpServerConfig } from '../config/config-schema';
import { visibleLine, visibleText } from '../processes/visible-text';
import { createMcpTools } from '../tools/mcp-tool';
import { connectMcpServers, mcpToolCacheDir, whyNotStarted } from '../session/mcp-servers';
import { resolveWorkspace } from '../session/workspace';

/** Options of `fence mcp list`; the streams and environment are there for tests. */
export interface McpListOptions {
  workspace?: string;
  env?: NodeJS.ProcessEnv;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
}

/**
 * `fence mcp list`: starts every MCP server of the workspace's config at once (never from the
 * cache of listed tools, which it writes afresh for later sessions), prints each
 * server with its transport and, below it, each of its tools by fence name with its one-line
 * description (or why the server did not start), then stops them all. Returns the exit code:
 * 0 when no server is configured or at least one started, 1 when the config cannot be read,
 * the workspace does not exist, or every configured server failed.
 */
export async function mcpListCommand(options: McpListOptions = {}): Promise<number> {
  const out = options.stdout ?? ((text: string) => process.stdout.write(text));
  const err = options.stderr ?? ((text: string) => process.stderr.write(text));
  const workspace = resolveWorkspace(options.workspace);
  if ('error' in workspace) {
    err(`fence: ${workspace.error}\n`);
    return 1;
  }
  const loaded = loadConfig({ workspace: workspace.path, env: options.env ?? process.env });
  if ('error' in loaded) {
    err(`fence: ${loaded.error}\n`);
    return 1;
  }
  const untrusted = loaded.config.trust && trustNotice(loaded.config.trust);
  if (untrusted) err(`${untrusted}\n`);
  if (Object.keys(loaded.config.mcpServers).length === 0) {
    out(untrusted ? 'no MCP servers to list: this folder is not trusted, and your own config.toml names none\n' : 'no MCP servers configured (add an [mcp.servers.<name>] table to fence.toml)\n');
    return 0;
  }
  // Always asks the servers, and keeps what they list for the sessions that follow.
  const started = await connectMcpServers(loaded.config.mcpServers, workspace.path, { dir: mcpToolCacheDir(options.env), refresh: true });
  try {
    const blocks = started.map((server) => {
      // Names, descriptions and errors come from the configuration and the servers: shown, never acted on by the terminal.
      const head = visibleLine(`${server.name} (${transportText(server.config)})`);
      if (!server.listed) return [head, `  did not start: ${visibleText(whyNotStarted(server.name, server.error ?? 'unknown error'))}`.replace(/\n/g, '\n    ')];
      const tools = createMcpTools(server.name, server.config, server.connection, server.listed);
      if (tools.length === 0) return [head, '  (no tools)'];
      const width = Math.max(...tools.map((tool) => tool.name.length));
      return [head, ...tools.map((tool) => `  ${visibleLine(tool.name.padEnd(width))}  ${visibleText(tool.description)}`)];
    });
    out(`${blocks.map((lines) => lines.join('\n')).join('\n\n')}\n`);
    return started.some((server) => server.listed) ? 0 : 1;
  } finally {
    await Promise.all(started.map((server) => server.connection.close()));
  }
}

/** `stdio: node server.js --flag` or `http: https://…`. */
function transportText(config: McpServerConfig): string {
  if ('url' in config) return `http: ${config.url}`;
  return `stdio: ${[config.command, ...(config.args ?? [])].join(' ')}`;
}
