import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { McpStdioServerConfig } from '../../src/config/config-schema';

/** Path of the test MCP server (see `mcp-test-server.ts`). */
export const MCP_TEST_SERVER = resolve(import.meta.dirname, 'mcp-test-server.ts');

/** The tsx loader as a file URL, so the server starts in any working folder. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/**
 * The `[mcp.servers.<name>]` config of the test server, started with node and tsx; `args` go
 * to the server (`--many 50`, `--fail-start`).
 */
export function mcpTestServer(args: string[] = [], extra: Partial<McpStdioServerConfig> = {}): McpStdioServerConfig {
  return { command: process.execPath, args: ['--import', TSX_LOADER, MCP_TEST_SERVER, ...args], ...extra };
}
