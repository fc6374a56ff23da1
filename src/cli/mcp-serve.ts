import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { PolicyRule } from '../policy/admit';
import type { ProgramRun } from '../ptc/run-program';
import { parseSignature, returnSchema, type ReturnSchema } from '../ptc/program-params';
import { programLabel, type SavedProgram } from '../ptc/saved-programs';
import type { ToolContext, ToolResult, ToolSpec } from '../tools/define-tool';
import { invokeTool } from '../tools/invoke-tool';

/** One approved program as it is served: the program and the tool it runs as in a session. */
export interface ServedProgram {
  program: SavedProgram;
  /** Its tool (see `createProgramTool`): calls run through it exactly as the model's do. */
  tool: ToolSpec;
}

/**
 * What a server of approved programs needs, asked afresh for each request so the programs can
 * change while it serves (see `ProgramServer.listChanged`).
 */
export interface ProgramServerOptions {
  /** The programs served now. */
  programs(): readonly ServedProgram[];
  /** The policy rules calls are admitted under. */
  rules(): readonly PolicyRule[];
  /** The context a call runs in, stopped by `signal` (the client's cancellation). */
  context(signal: AbortSignal): ToolContext;
  /** fence's version, told to clients. */
  version: string;
}

/** A server of approved programs, ready for any transport (`server.connect(transport)`). */
export interface ProgramServer {
  server: Server;
  /** Tells the client the list of tools changed (after `initialize`; otherwise does nothing). */
  listChanged(): Promise<void>;
}

/** The principal of calls from a client without a usable name. */
const UNNAMED_CLIENT = 'client';

/**
 * The principal an MCP client's calls are admitted as: `mcp:` and its `clientInfo.name`,
 * lowercased, with every run of characters other than letters, digits, `.`, `_` and `-` made
 * one `-` (so no name can carry a glob's `*` or `/` into policy matching), at most 64
 * characters; `mcp:client` when nothing is left.
 */
export function clientPrincipal(name: string | undefined): string {
  const clean = (name ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 64);
  return `mcp:${clean || UNNAMED_CLIENT}`;
}

/** A zod schema as the JSON schema MCP carries, without the `$schema` dialect line. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return rest;
}

/**
 * A program as an MCP tool: its name, its intent as the description, its declared parameters
 * as the JSON schema of its input (an object with no properties when it declares none), and,
 * when its `returns:` type is one fence reads (see `returnSchema`), the JSON schema of its
 * `structuredContent` as `outputSchema`: the type itself for an object type, otherwise
 * `{ result: <type> }`, the way `mcpResult` wraps such values.
 */
export function programAsMcpTool({ program, tool }: ServedProgram): Tool {
  const input = jsonSchema(tool.parameters, 'input');
  // Arguments it does not declare are dropped, not refused: the schema does not forbid them.
  if (input.additionalProperties === false) delete input.additionalProperties;
  const intent = program.record.intent ?? `the saved program ${programLabel(program.record)}`;
  const served: Tool = {
    name: program.record.name,
    title: programLabel(program.record),
    description: `${intent.charAt(0).toUpperCase()}${intent.slice(1)}`,
    inputSchema: { ...input, type: 'object' } as Tool['inputSchema'],
  };
  const returns = declaredReturn(program);
  if (returns) {
    const output = jsonSchema(returns.schema, 'output');
    served.outputSchema = (returns.object ? { ...output, type: 'object' } : { type: 'object', properties: { result: output }, required: ['result'] }) as Tool['outputSchema'];
  }
  return served;
}

/** The checked type of what a served program returns, when it declares one fence reads. */
function declaredReturn(program: SavedProgram): ReturnSchema | undefined {
  return returnSchema(parseSignature(program.code).returns);
}

/**
 * The MCP result of one served call: what the program printed as text, its return value as
 * `structuredContent` and as JSON text too (for clients that read only text), the trace's id
 * in `_meta`. An object is the structured content as it is, any other value is
 * `{ result: value }`; when the program declares a type fence reads (`returns`), the type
 * decides that, and a value of another type, or none, is an error naming the type: a client
 * was promised that shape. A failed run, invalid arguments or a refusal are `isError` with
 * the message.
 */
export function mcpResult(result: ToolResult, returns?: ReturnSchema): CallToolResult {
  const run = result.details as ProgramRun | undefined;
  if (!run?.trace) return { content: [{ type: 'text', text: result.output }], ...(result.isError ? { isError: true } : {}) };
  const { trace } = run;
  const content: CallToolResult['content'] = [];
  if (trace.stdout) content.push({ type: 'text', text: trace.stdout.replace(/\n+$/, '') });
  if (trace.droppedOutputBytes > 0) content.push({ type: 'text', text: `[${trace.droppedOutputBytes} more bytes of output were dropped]` });
  if (trace.error) {
    const where = trace.error.line === undefined ? '' : ` at line ${trace.error.line}`;
    content.push({ type: 'text', text: `Program failed (${trace.error.kind})${where}: ${trace.error.message}` });
  }
  const meta = { _meta: { 'fence/trace': trace.id } };
  if (!trace.ok) return { content, ...meta, isError: true };
  if (trace.result !== undefined) content.push({ type: 'text', text: JSON.stringify(trace.result, null, 2) });
  if (returns) {
    const checked = trace.result === undefined ? undefined : returns.schema.safeParse(trace.result);
    if (!checked?.success) {
      const problems = checked?.error.issues.map((issue) => `${issue.path.join('.') || 'the value'}: ${issue.message}`).join('; ');
      const what = checked ? `a value that is not its declared type ${returns.type} (${problems})` : `nothing, though it declares the type ${returns.type}`;
      content.push({ type: 'text', text: `The program returned ${what}.` });
      return { content, ...meta, isError: true };
    }
  } else if (trace.result === undefined) return { content, ...meta };
  const isObject = returns ? returns.object : typeof trace.result === 'object' && trace.result !== null && !Array.isArray(trace.result);
  const structuredContent = isObject ? (trace.result as Record<string, unknown>) : { result: trace.result };
  return { content, structuredContent, ...meta };
}

/**
 * An MCP server (the SDK's low-level `Server`, which takes JSON schemas as they are) whose
 * tools are the approved programs. A call is validated against the program's parameters,
 * admitted and run through `invokeTool` as principal `mcp:<client name>` (see
 * `clientPrincipal`) with the program's intent, the program's own tool calls admitted as the
 * same principal; every outcome, a bad argument or a refusal among them, is a tool result,
 * never a protocol error. The request's abort signal (the client's `notifications/cancelled`)
 * stops the run.
 */
export function createProgramServer(options: ProgramServerOptions): ProgramServer {
  const server = new Server({ name: 'fence', version: options.version }, { capabilities: { tools: { listChanged: true } } });
  let initialized = false;
  server.oninitialized = () => {
    initialized = true;
  };
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: options.programs().map(programAsMcpTool) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params;
    const served = options.programs().find((entry) => entry.program.record.name === name);
    if (!served) return { content: [{ type: 'text', text: `no approved program named ${name} is served here` }], isError: true };
    const principal = clientPrincipal(server.getClientVersion()?.name);
    const intent = served.program.record.intent;
    const ctx = { ...options.context(extra.signal), principal };
    const { result } = await invokeTool(served.tool, args ?? {}, ctx, { principal, rules: options.rules(), notation: 'tool', ...(intent ? { intent } : {}) });
    return mcpResult(result, declaredReturn(served.program));
  });
  return {
    server,
    async listChanged() {
      if (initialized) await server.sendToolListChanged().catch(() => undefined);
    },
  };
}
