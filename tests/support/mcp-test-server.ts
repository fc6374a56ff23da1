/**
 * A small MCP server over stdio, for tests of fence's MCP client. Run it with
 * `node --import <tsx> tests/support/mcp-test-server.ts [options]` (see `mcpTestServer`).
 *
 * Tools: `get-sum` (text and structured content), `echo`, `fail` (an `isError` result),
 * `crash` (writes to stderr and exits with code 1 mid-call), `sleep` (answers after `ms`),
 * `env-keys` (the names of its environment variables), `delete-all` (annotated destructive) and
 * `add-tool` (registers `added-<n>`, so the server tells its client that its tools changed).
 *
 * Options: `--many <n>` also registers `tool-1` … `tool-<n>`; `--fail-start` writes a line to
 * stderr and exits with code 3 before speaking MCP. With `STARTED_FILE` set, it appends its pid
 * to that file when it starts.
 */
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const argv = process.argv.slice(2);

if (argv.includes('--fail-start')) {
  process.stderr.write('finance: no FINANCE_TOKEN given\n');
  process.exit(3);
}

// STARTED_FILE names a file the server appends a line to each time it starts, so tests can
// count starts (a variable, not an argument: fence stamps the files a server's arguments name).
if (process.env.STARTED_FILE) appendFileSync(process.env.STARTED_FILE, `${process.pid}\n`);

const server = new McpServer({ name: 'fence-test-server', version: '1.0.0' });

server.registerTool(
  'get-sum',
  {
    description: 'Adds two numbers.\nBoth must be finite.',
    inputSchema: { a: z.number().describe('the first number'), b: z.number().describe('the second number') },
    outputSchema: { sum: z.number() },
    annotations: { readOnlyHint: true },
  },
  async ({ a, b }) => ({ content: [{ type: 'text', text: `The sum is ${a + b}` }], structuredContent: { sum: a + b } }),
);

server.registerTool('echo', { description: 'Says the text back.', inputSchema: { text: z.string() } }, async ({ text }) => ({
  content: [{ type: 'text', text }],
}));

server.registerTool('fail', { description: 'Always fails.' }, async () => ({
  content: [{ type: 'text', text: 'the ledger is locked' }],
  isError: true,
}));

server.registerTool('crash', { description: 'Exits in the middle of the call.' }, async () => {
  process.stderr.write('panic: ledger corrupted\n');
  setTimeout(() => process.exit(1), 10);
  return new Promise<never>(() => undefined);
});

server.registerTool('sleep', { description: 'Answers after a while.', inputSchema: { ms: z.number() } }, async ({ ms }) => {
  await new Promise((resolve) => setTimeout(resolve, ms));
  return { content: [{ type: 'text', text: `slept ${ms} ms` }] };
});

server.registerTool('env-keys', { description: 'Names of the environment variables the server sees.' }, async () => ({
  content: [{ type: 'text', text: JSON.stringify(Object.keys(process.env).sort()) }],
}));

server.registerTool(
  'delete-all',
  { description: 'Deletes every record.', annotations: { destructiveHint: true, readOnlyHint: false } },
  async () => ({ content: [{ type: 'text', text: 'deleted' }] }),
);

// Registers one more tool each call; the SDK then tells the client its tool list changed.
let added = 0;
server.registerTool('add-tool', { description: 'Adds a tool named added-<n>.' }, async () => {
  added += 1;
  const name = `added-${added}`;
  server.registerTool(name, { description: `Added tool ${added}.` }, async () => ({ content: [{ type: 'text', text: name }] }));
  return { content: [{ type: 'text', text: `added ${name}` }] };
});

const manyAt = argv.indexOf('--many');
const many = manyAt >= 0 ? Number(argv[manyAt + 1]) : 0;
for (let i = 1; i <= many; i++) {
  server.registerTool(`tool-${i}`, { description: `Tool number ${i}.`, inputSchema: { x: z.string().optional() } }, async () => ({
    content: [{ type: 'text', text: `tool ${i}` }],
  }));
}

await server.connect(new StdioServerTransport());
