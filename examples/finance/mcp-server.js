#!/usr/bin/env node
// The finance example's three tools served by an MCP server over stdio, for fence's
// [mcp.servers.<name>] (see mcp/fence.toml). Each answers with its result as JSON text and as
// structured content; a bad argument is an error result with the same message the command
// tools print. Run from a checkout of fence, whose node_modules hold the MCP SDK and zod.

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { getExpenses, getLimits, getMembers } from './tools/finance.js';
import { ToolError } from './tools/tool-io.js';

const server = new McpServer({ name: 'finance', version: '1.0.0' });

/** Registers one query; its value travels as JSON text and, wrapped in `{ result }`, as structured content. */
function query(name, description, inputSchema, run) {
  server.registerTool(name, { description, inputSchema, annotations: { readOnlyHint: true } }, async (args) => {
    try {
      const result = run(args);
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: { result } };
    } catch (error) {
      const message = error instanceof ToolError ? error.message : `unexpected failure: ${error}`;
      return { content: [{ type: 'text', text: `${name}: ${message}` }], isError: true };
    }
  });
}

query('get_members', 'Staff of one department', { department: z.string().describe('Department name: engineering, sales, marketing, finance or operations') }, getMembers);
query('get_expenses', 'Travel expenses of one staff member, oldest first', { id: z.string().describe('Staff id, as get_members gives it (S001)') }, getExpenses);
query('get_limits', 'Yearly travel limit of each staff level asked for', { levels: z.array(z.string()).describe('Levels such as L1 to L5') }, getLimits);

await server.connect(new StdioServerTransport());
