import { z } from 'zod';
import type { McpServerConfig } from '../config/config-schema';
import type { McpCallResult, McpConnection, McpContent, McpToolInfo } from '../processes/mcp-connection';
import { jsonSchemaToTypeScript } from './declarations';
import { defineTool, type Caller, type ToolResult, type ToolSpec } from './define-tool';
import { registeredCallHint } from './notation';
import { describeImage, isPrepared, prepareImageBytes, type PreparedImage } from '../images/prepare-image';
import { exampleArguments, isRecord } from './schema-example';

/** What an MCP tool needs of its server's connection. */
export type McpCaller = Pick<McpConnection, 'callTool'>;

/** Characters of the one-line description at most. */
const DESCRIPTION_CHARS = 120;

/**
 * The fence name of an MCP tool: `<server>_<tool>` with every character that cannot be part
 * of a JavaScript identifier replaced by `_`, and a `_` before a leading digit
 * (`everything` + `get-sum` → `everything_get_sum`).
 */
export function mcpToolName(server: string, tool: string): string {
  const name = `${server}_${tool}`.replace(/[^A-Za-z0-9_$]/g, '_');
  return /^[0-9]/.test(name) ? `_${name}` : name;
}

/**
 * Makes one fence tool per tool an MCP server listed, each calling the server through
 * `connection`:
 *
 * - `name` is `mcpToolName(server, tool)`; `parameters` come from the tool's `inputSchema`
 *   (zod's `fromJSONSchema`), or an object with any keys when that fails or is not an object.
 * - `description` is the first line of the MCP description (cut to 120 characters);
 *   `instructions` say how to call it and what it returns, then the whole description when it
 *   has more than that line. `returns` is the type of its `outputSchema`, if any.
 * - `callers` come from the server's config (default both); `blockTypes` is empty.
 * - `mutating` is true only when the server marks the tool `destructiveHint: true`: unmarked
 *   tools are taken as free of side effects, like command tools, so programs call them in
 *   parallel and the chat does not ask; a policy rule with `action = "ask"` guards others.
 * - `resource` is the compact JSON of the arguments.
 *
 * `execute` never throws. Its `output` is the text content joined (other content named in
 * brackets); its `value` is the structured content, else the text parsed as JSON when it
 * parses, else the text. An `isError` result and a call that failed (the server exited, timed
 * out, could not start) are error results with the message.
 */
export function createMcpTools(server: string, config: McpServerConfig, connection: McpCaller, tools: readonly McpToolInfo[]): ToolSpec[] {
  const callers: readonly Caller[] = config.callers ?? ['direct', 'program'];
  return tools.map((tool) => createMcpTool(server, tool, callers, connection));
}

function createMcpTool(server: string, tool: McpToolInfo, callers: readonly Caller[], connection: McpCaller): ToolSpec {
  const name = mcpToolName(server, tool.name);
  const schema = isRecord(tool.inputSchema) ? (tool.inputSchema as Record<string, unknown>) : { type: 'object' };
  const example = exampleArguments(schema);
  const returns = isRecord(tool.outputSchema) ? jsonSchemaToTypeScript(tool.outputSchema) : undefined;
  return defineTool({
    name,
    description: firstLine(tool.description) || `Tool ${tool.name} of MCP server ${server}`,
    instructions: instructionsFor(tool, name, callers, example, returns),
    example,
    blockTypes: [],
    group: `MCP server ${server}`,
    parameters: parametersFor(schema),
    block: {},
    callers,
    mutating: tool.annotations?.destructiveHint === true,
    ...(returns === undefined ? {} : { returns }),
    resource: (input) => JSON.stringify(input),
    async execute(input, ctx) {
      const result = await connection.callTool(tool.name, input, ctx.signal);
      return await toToolResult(server, tool.name, result);
    },
  });
}

/** The zod object for an input schema; an object with any keys when it cannot be one. */
function parametersFor(schema: Record<string, unknown>): z.ZodObject {
  try {
    const converted = z.fromJSONSchema(schema);
    if (converted instanceof z.ZodObject) return converted as z.ZodObject;
  } catch {
    // An input schema zod cannot read: the server checks the arguments itself.
  }
  return z.looseObject({});
}

/**
 * A call's result for the model: its text content, other content named in brackets. The images
 * of a result that did not fail (`image` content, base64) go to the model as images (see
 * `prepareImageBytes`), each named by a line in the text; one that cannot be read is that
 * line's error instead.
 */
async function toToolResult(server: string, tool: string, result: McpCallResult): Promise<ToolResult> {
  const details = { server, tool };
  if (result.failure !== undefined) return { output: result.failure, isError: true, details };
  if (result.isError) {
    const text = result.content.map(contentText).join('\n');
    return { output: text || `${tool} of server ${server} failed without saying why`, isError: true, details };
  }
  const images: PreparedImage[] = [];
  const lines: string[] = [];
  let seen = 0;
  for (const content of result.content) {
    if (content.type !== 'image' || typeof content.data !== 'string') {
      lines.push(contentText(content));
      continue;
    }
    seen += 1;
    const image = await prepareImageBytes(Buffer.from(content.data, 'base64'), `${tool} image ${seen}`);
    if (isPrepared(image)) images.push(image);
    lines.push(isPrepared(image) ? describeImage(image) : image.error);
  }
  const text = lines.join('\n');
  const value = result.structuredContent ?? parseJson(text) ?? text;
  const output = text !== '' ? text : result.structuredContent ? JSON.stringify(result.structuredContent, null, 2) : '(no output)';
  return { output, value, details, ...(images.length > 0 ? { images } : {}) };
}

/** Text content as it is; anything else named in brackets. */
function contentText(content: McpContent): string {
  if (content.type === 'text' && typeof content.text === 'string') return content.text;
  const mime = typeof content.mimeType === 'string' ? ` ${content.mimeType}` : '';
  const resource = isRecord(content.resource) && typeof content.resource.uri === 'string' ? ` ${content.resource.uri}` : '';
  const link = typeof content.uri === 'string' ? ` ${content.uri}` : '';
  return `[${content.type}${mime}${resource}${link}]`;
}

function parseJson(text: string): unknown {
  const trimmed = text.trim();
  if (!/^[[{"]/.test(trimmed)) return undefined;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return undefined;
  }
}

/** The first non-empty line, cut to `DESCRIPTION_CHARS`. */
function firstLine(description: string | undefined): string {
  const line = (description ?? '').split('\n').map((l) => l.trim()).find((l) => l !== '') ?? '';
  return line.length <= DESCRIPTION_CHARS ? line : `${line.slice(0, DESCRIPTION_CHARS - 1).trimEnd()}…`;
}

/**
 * How to call the tool and what it returns, then the server's description when it says more
 * than its first line (the tool's `description`). The arguments are not repeated: the native
 * definition carries them as its schema, `ptc`'s declarations and `describe` as a type.
 */
function instructionsFor(tool: McpToolInfo, name: string, callers: readonly Caller[], example: Record<string, unknown>, returns: string | undefined): string {
  const lines = [registeredCallHint(name, callers, example, returns)];
  const description = (tool.description ?? '').trim();
  if (description !== '' && description !== firstLine(description)) lines.push('', description);
  return lines.join('\n');
}
