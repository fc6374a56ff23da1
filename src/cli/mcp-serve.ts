import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { PolicyRule } from '../policy/admit';
import { runProgram, type ProgramRun } from '../ptc/run-program';
import { parseSignature, returnSchema, type ReturnSchema } from '../ptc/program-params';
import { programLabel, type SavedProgram } from '../ptc/saved-programs';
import type { ToolContext, ToolResult, ToolSpec } from '../tools/define-tool';
import { invokeTool } from '../tools/invoke-tool';
import { describeRun, programTools, sessionRun, type PtcToolOptions } from '../tools/ptc';

/**
 * One tool as it is served: an approved program with the tool it runs as in a session (see
 * `createProgramTool`), or, with `--tools`, one of the session's tools programs may call, as
 * `oneCallTool` makes it. Calls run through `tool` exactly as the model's do.
 */
export type ServedTool = { program: SavedProgram; tool: ToolSpec } | { program?: undefined; tool: ToolSpec };

/** A tool served as one call of a program (see `oneCallTool`): the code of that program. */
export function oneCallCode(name: string): string {
  return `return await ${name}(args);`;
}

/**
 * `spec` as a served tool: a call runs the one-line program `return await <name>(args);` over
 * `spec` alone, with the session's program limits, budget and store, so a client's call is
 * admitted (with what it touches, as the client's principal), bounded and traced as a
 * program's call would be. The served tool itself is admitted on its name alone: a rule about
 * the resource decides the call inside, where the trace records it.
 */
export function oneCallTool(spec: ToolSpec, options: Pick<PtcToolOptions, 'rules' | 'limits' | 'store' | 'session' | 'budget'>): ToolSpec {
  const { resource: _resource, preview: _preview, ...rest } = spec;
  return {
    ...rest,
    async execute(input, ctx) {
      const { principal = 'mcp:client', admission, ...inner } = ctx;
      const run = await runProgram({
        code: oneCallCode(spec.name),
        tools: programTools([spec], inner, options.rules),
        principal,
        args: input,
        ...(admission ? { admission } : {}),
        ...sessionRun(options, ctx),
      });
      return { output: describeRun(run), value: run.trace.result, isError: !run.trace.ok, details: run };
    },
  };
}

/**
 * What a server of approved programs needs, asked afresh for each request so the programs can
 * change while it serves (see `ProgramServer.listChanged`).
 */
export interface ProgramServerOptions {
  /** The tools served now: the approved programs, and fence's own tools with `--tools`. */
  tools(): readonly ServedTool[];
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

/**
 * A zod schema as the JSON schema MCP carries, without the `$schema` dialect line, and without
 * the `additionalProperties: {}` an object that lets other properties through is written with
 * (JSON Schema lets them through by default; an empty schema there reads as a mistake to
 * clients that check schemas).
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return withoutEmptyAdditional(rest) as Record<string, unknown>;
}

/** Keywords whose value is one schema, and those whose value is a list of them. */
const SUBSCHEMA = new Set(['items', 'additionalProperties', 'not', 'propertyNames']);
const SUBSCHEMAS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);

/**
 * `schema` without `additionalProperties: {}`, at any depth of its subschemas. Values that are
 * data (`default`, `const`, `enum`) are kept as they are, and so are the names in `properties`.
 */
function withoutEmptyAdditional(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'additionalProperties' && typeof value === 'object' && value !== null && Object.keys(value).length === 0) continue;
    if (SUBSCHEMA.has(key)) out[key] = withoutEmptyAdditional(value);
    else if (SUBSCHEMAS.has(key) && Array.isArray(value)) out[key] = value.map(withoutEmptyAdditional);
    else if (key === 'properties' && typeof value === 'object' && value !== null) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, property]) => [name, withoutEmptyAdditional(property)]));
    } else out[key] = value;
  }
  return out;
}

/**
 * A served tool as an MCP tool. One of fence's tools: its name, description and parameters.
 * A program: its name, its intent as the description, its declared parameters
 * as the JSON schema of its input (an object with no properties when it declares none), and,
 * when its `returns:` type is one fence reads (see `returnSchema`), the JSON schema of its
 * `structuredContent` as `outputSchema`: the type itself for an object type, otherwise
 * `{ result: <type> }`, the way `mcpResult` wraps such values.
 */
export function asMcpTool({ program, tool }: ServedTool): Tool {
  const input = jsonSchema(tool.parameters, 'input');
  // Arguments it does not declare are dropped, not refused: the schema does not forbid them.
  if (input.additionalProperties === false) delete input.additionalProperties;
  if (!program) return { name: tool.name, description: tool.description, inputSchema: { ...input, type: 'object' } as Tool['inputSchema'] };
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
function declaredReturn(program: SavedProgram | undefined): ReturnSchema | undefined {
  return program && returnSchema(parseSignature(program.code).returns);
}

/**
 * The MCP result of one served call (a served tool's: see `oneCallResult`). A program's: what
 * it printed as text, its return value as
 * `structuredContent` and as JSON text too (for clients that read only text), the trace's id
 * in `_meta`. An object is the structured content as it is, any other value is
 * `{ result: value }`; when the program declares a type fence reads (`returns`), the type
 * decides that, and a value of another type, or none, is an error naming the type: a client
 * was promised that shape. A failed run, invalid arguments or a refusal are `isError` with
 * the message.
 */
export function mcpResult(result: ToolResult, served: ServedTool): CallToolResult {
  const run = result.details as ProgramRun | undefined;
  if (!run?.trace) return { content: [{ type: 'text', text: result.output }], ...(result.isError ? { isError: true } : {}) };
  const { trace } = run;
  if (!served.program) return oneCallResult(trace);
  const returns = declaredReturn(served.program);
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
 * The MCP result of a served tool's call (see `oneCallTool`): the tool's value as text (a
 * string as it is, anything else as JSON, and then also as `structuredContent` `{ result }`),
 * or the tool's own error; the trace's id in `_meta`.
 */
function oneCallResult(trace: ProgramRun['trace']): CallToolResult {
  const meta = { _meta: { 'fence/trace': trace.id } };
  const call = trace.calls[0];
  if (!trace.ok || !call?.ok) {
    const text = call?.error ?? `${call?.tool ?? 'the tool'} failed: ${trace.error?.message ?? 'it did not end'}`;
    return { content: [{ type: 'text', text }], ...meta, isError: true };
  }
  const value = trace.result;
  if (typeof value === 'string') return { content: [{ type: 'text', text: value }], ...meta };
  return { content: [{ type: 'text', text: JSON.stringify(value ?? null, null, 2) }], structuredContent: { result: value ?? null }, ...meta };
}

/** The least time between two progress notifications of one call; calls in between are counted in the next. */
export const PROGRESS_INTERVAL_MS = 200;

/** How long a call may go without a notification before one says it is still running. */
export const PROGRESS_BEAT_MS = 10_000;

/**
 * Turns a program's tool calls into progress notifications for one served call. `progress`
 * counts what happened so far (it must grow with each notification): each tool call ended, and
 * each beat. `message` names the last call (`read: ok (3 tool calls so far)`), or, when
 * `PROGRESS_BEAT_MS` passed without a notification (a command tool that runs for minutes),
 * says the call is still running (`still running: 3 tool calls so far, 40 s`), so a client that
 * resets its timeout on progress keeps waiting. At most one notification per
 * `PROGRESS_INTERVAL_MS`: a run of quick calls is told once, by its last. `stop` drops what is
 * not yet sent (the call has its answer) and ends the beats; what fails to send is dropped too:
 * progress is a courtesy, never a reason for a call to fail.
 */
export function progressReporter(send: (params: { progress: number; message: string }) => Promise<void>): {
  called: NonNullable<ToolContext['onToolCall']>;
  stop(): void;
} {
  const started = Date.now();
  let count = 0;
  let events = 0;
  let message = '';
  let lastSent = -Infinity;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const calls = () => `${count} tool call${count === 1 ? '' : 's'} so far`;
  const flush = () => {
    // A call may end after the pending notification's time came but before its timer ran.
    clearTimeout(timer);
    timer = undefined;
    lastSent = Date.now();
    void send({ progress: events, message }).catch(() => undefined);
  };
  // Read while the event loop is free: during a long tool call, not while code computes.
  const beats = setInterval(() => {
    if (Date.now() - Math.max(lastSent, started) < PROGRESS_BEAT_MS) return;
    events += 1;
    message = `still running: ${calls()}, ${Math.round((Date.now() - started) / 1000)} s`;
    flush();
  }, PROGRESS_BEAT_MS / 4);
  beats.unref();
  return {
    called(call) {
      if (stopped) return;
      count += 1;
      events += 1;
      const how = call.ok ? 'ok' : call.decision?.action === 'deny' ? 'denied' : call.decision?.action === 'ask' ? 'refused (needs a yes)' : 'failed';
      message = `${call.tool}: ${how} (${calls()})`;
      const wait = lastSent + PROGRESS_INTERVAL_MS - Date.now();
      if (wait <= 0) flush();
      else timer ??= setTimeout(flush, wait);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      clearInterval(beats);
    },
  };
}

/**
 * An MCP server (the SDK's low-level `Server`, which takes JSON schemas as they are) whose
 * tools are the approved programs. A call is validated against the program's parameters,
 * admitted and run through `invokeTool` as principal `mcp:<client name>` (see
 * `clientPrincipal`) with the program's intent, the program's own tool calls admitted as the
 * same principal; every outcome, a bad argument or a refusal among them, is a tool result,
 * never a protocol error. The request's abort signal (the client's `notifications/cancelled`)
 * stops the run. When the client asks for progress (a `progressToken`), each tool call the
 * program makes is told as it ends (see `progressReporter`).
 */
export function createProgramServer(options: ProgramServerOptions): ProgramServer {
  const server = new Server({ name: 'fence', version: options.version }, { capabilities: { tools: { listChanged: true } } });
  let initialized = false;
  server.oninitialized = () => {
    initialized = true;
  };
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: options.tools().map(asMcpTool) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params;
    const served = options.tools().find((entry) => entry.tool.name === name);
    if (!served) return { content: [{ type: 'text', text: `no approved program or tool named ${name} is served here` }], isError: true };
    const principal = clientPrincipal(server.getClientVersion()?.name);
    const intent = served.program?.record.intent;
    const token = request.params._meta?.progressToken;
    const progress = token === undefined ? undefined : progressReporter((params) => extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, ...params } }));
    const ctx: ToolContext = { ...options.context(extra.signal), principal, ...(progress ? { onToolCall: progress.called } : {}) };
    try {
      const { result } = await invokeTool(served.tool, args ?? {}, ctx, { principal, rules: options.rules(), notation: 'tool', ...(intent ? { intent } : {}) });
      return mcpResult(result, served);
    } finally {
      progress?.stop();
    }
  });
  return {
    server,
    async listChanged() {
      if (initialized) await server.sendToolListChanged().catch(() => undefined);
    },
  };
}
