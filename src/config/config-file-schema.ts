import { z } from 'zod';
import type { ModelInfo } from '../llm/model-info';
import {
  BUILTIN_TOOL_NAMES,
  kindOf,
  MODEL_KEYS,
  PTC_KEYS,
  TOOL_FORMATS,
  type ConfigFile,
  type JsonObject,
  type McpServerConfig,
  type PtcConfig,
} from './config-schema';

/**
 * The zod schemas that check one configuration file (the user's `config.toml` or a project's
 * `fence.toml`), with messages written to be read by the person who wrote the file. Every
 * table is strict: a key it does not know is an error, which catches typos.
 */
export interface ConfigFileSchemas {
  /** One file, keys as written, to its `ConfigFile`. */
  file: z.ZodType<ConfigFile, unknown>;
  /** The keys each table knows, for messages about unknown keys. */
  knownKeys: Record<'top' | 'tool' | 'rule' | 'ptc' | 'model' | 'mcp' | 'mcpServer', string[]>;
}

let built: ConfigFileSchemas | undefined;

/**
 * The schemas, built on the first call and kept: building them costs milliseconds, and most
 * runs have no configuration file to check.
 */
export function configFileSchemas(): ConfigFileSchemas {
  built ??= buildSchemas();
  return built;
}

function buildSchemas(): ConfigFileSchemas {
  const text = z.string({ error: expected('a string') });
  const positiveNumber = z.number({ error: expected('a positive number') }).positive({ error: 'expected a positive number' });
  const positiveInt = z.int({ error: expected('a positive integer') }).positive({ error: 'expected a positive integer' });
  const nonNegativeInt = z.int({ error: expected('a non-negative integer') }).nonnegative({ error: 'expected a non-negative integer' });
  const nonNegativeNumber = z.number({ error: expected('a non-negative number') }).nonnegative({ error: 'expected a non-negative number' });

  /**
   * A JSON schema that zod can turn into an object schema. Parsing it here lets a bad schema
   * fail when the configuration is loaded rather than when the tool is first called.
   */
  const parametersSchema = z
    .custom<JsonObject>(isPlainObject, { error: expected('a JSON schema table, e.g. { type = "object", properties = { … } }') })
    .transform((schema) => JSON.parse(JSON.stringify(schema)) as JsonObject)
    .superRefine((schema, ctx) => {
      const problem = objectSchemaProblem(schema);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });

  const asTable = { error: expected('a table') };

  const callersSchema = z.custom<('direct' | 'program')[]>(
    (value) => Array.isArray(value) && value.length > 0 && value.every((item) => item === 'direct' || item === 'program'),
    { error: expected('a non-empty array of "direct" and "program"') },
  );

  const toolSchema = z.strictObject({
    description: text.min(1, { error: 'must not be empty: say in one line what the tool does' }),
    command: stringArray().refine((command) => command.length > 0 && command[0] !== '', {
      error: 'must name the program to run, e.g. ["node", "tools/my-tool.js"]',
    }),
    parameters: parametersSchema.optional(),
    callers: callersSchema.optional(),
    returns: text.optional(),
    env: stringArray('an array of environment variable names')
      .refine((names) => names.every((name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)), { error: 'expected environment variable names such as FINANCE_TOKEN' })
      .optional(),
    timeout: positiveNumber.optional(),
    cwd: text.optional(),
  }, asTable);

  const mcpServerSchema = z
    .strictObject({
      command: text.min(1, { error: 'must name the program that starts the server, e.g. "npx"' }).optional(),
      args: stringArray().optional(),
      env: stringTable('a table of strings, e.g. { API_TOKEN = "…" }').optional(),
      url: text.refine(isHttpUrl, { error: 'expected an http:// or https:// URL' }).optional(),
      headers: stringTable('a table of strings, e.g. { Authorization = "Bearer …" }').optional(),
      callers: callersSchema.optional(),
      timeout: positiveNumber.optional(),
    }, asTable)
    .superRefine((table, ctx) => {
      if (table.command === undefined && table.url === undefined) {
        ctx.addIssue({ code: 'custom', message: 'needs command (a server fence starts) or url (a streamable HTTP server)' });
      } else if (table.command !== undefined && table.url !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['url'], message: 'a server has either command or url, not both' });
      }
      for (const key of ['args', 'env'] as const) {
        if (table.url !== undefined && table[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'only a command server takes it; an HTTP server has url and headers' });
      }
      if (table.command !== undefined && table.headers !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['headers'], message: 'only an HTTP server takes it; a command server has command, args and env' });
      }
    })
    .transform((table): McpServerConfig => {
      const common = { ...(table.callers ? { callers: table.callers } : {}), ...(table.timeout === undefined ? {} : { timeout: table.timeout }) };
      if (table.url !== undefined) return { url: table.url, ...(table.headers ? { headers: table.headers } : {}), ...common };
      return { command: table.command ?? '', ...(table.args ? { args: table.args } : {}), ...(table.env ? { env: table.env } : {}), ...common };
    });

  const mcpSchema = z.strictObject({
    servers: z.record(z.string(), mcpServerSchema, { error: expected('a table of servers, e.g. [mcp.servers.finance]') }).optional(),
  }, asTable);

  const ruleSchema = z.strictObject({
    tool: z.string({ error: (issue) => (issue.input === undefined ? 'missing (required; "*" matches every tool)' : `expected a string, got ${kindOf(issue.input)}`) }),
    resource: text.optional(),
    principal: text.optional(),
    intent: text.optional(),
    action: z.enum(['allow', 'deny', 'ask'], { error: (issue) => (issue.input === undefined ? 'missing (required: "allow", "deny" or "ask")' : 'expected "allow", "deny" or "ask"') }),
    reason: text.optional(),
  }, asTable);

  const builtinNames: readonly string[] = BUILTIN_TOOL_NAMES;

  const ptcSchema = z
    .strictObject({
      memory_mb: positiveInt.optional(),
      cpu_time_s: positiveNumber.optional(),
      wall_time_s: positiveNumber.optional(),
      stack_kb: positiveInt.optional(),
      max_tool_calls: positiveInt.optional(),
      max_concurrent_calls: positiveInt.optional(),
      max_output_kb: positiveInt.optional(),
      store_max_kb: positiveInt.optional(),
      eligible: stringArray('an array of built-in tool names')
        .superRefine((names, ctx) => {
          const unknown = names.find((name) => !builtinNames.includes(name));
          if (unknown !== undefined) ctx.addIssue({ code: 'custom', message: `"${unknown}" is not a built-in tool (built-ins: ${builtinNames.join(', ')})` });
        })
        .optional(),
    }, asTable)
    .transform((table) => {
      const ptc: Partial<PtcConfig> = {};
      for (const [key, name] of Object.entries(PTC_KEYS)) {
        const value = table[key as keyof typeof table];
        if (value !== undefined) Object.assign(ptc, { [name]: value });
      }
      return ptc;
    });

  /** One model's figures (a `[models."<provider/model>"]` table): prices in USD per million tokens. */
  const modelShape = {
    context_window: positiveInt.optional(),
    max_output_tokens: positiveInt.optional(),
    input_per_mtok: nonNegativeNumber.optional(),
    output_per_mtok: nonNegativeNumber.optional(),
    cache_read_per_mtok: nonNegativeNumber.optional(),
    cache_write_per_mtok: nonNegativeNumber.optional(),
  } satisfies Record<keyof typeof MODEL_KEYS, z.ZodType>;

  const modelSchema = z.strictObject(modelShape, asTable).transform((table) => {
    const info: ModelInfo = {};
    for (const [key, name] of Object.entries(MODEL_KEYS)) {
      const value = table[key as keyof typeof table];
      if (value !== undefined) info[name] = value;
    }
    return info;
  });

  /** One configuration file, keys as written. */
  const fileSchema = z.strictObject({
    tool_format: z.enum(TOOL_FORMATS, { error: expected('"markdown", "xml" or "tool"') }).optional(),
    tools: z.record(z.string(), toolSchema, { error: expected('a table of tools, e.g. [tools.my_tool]') }).optional(),
    policy: z.array(ruleSchema, { error: expected('an array of tables, written [[policy]]') }).optional(),
    ptc: ptcSchema.optional(),
    models: z.record(z.string(), modelSchema, { error: expected('a table of models, e.g. [models."openai/gpt-5"]') }).optional(),
    mcp: mcpSchema.optional(),
    brief_tools_above_tokens: nonNegativeInt.optional(),
    hide_tools_above_tokens: nonNegativeInt.optional(),
  });

  /** One configuration file, with its keys as `ConfigFile` names them. */
  const file = fileSchema.transform(
    ({ tool_format: toolFormat, mcp, brief_tools_above_tokens: briefToolsAboveTokens, hide_tools_above_tokens: hideToolsAboveTokens, ...rest }): ConfigFile => ({
      ...rest,
      ...(toolFormat ? { toolFormat } : {}),
      ...(mcp?.servers ? { mcpServers: mcp.servers } : {}),
      ...(briefToolsAboveTokens === undefined ? {} : { briefToolsAboveTokens }),
      ...(hideToolsAboveTokens === undefined ? {} : { hideToolsAboveTokens }),
    }),
  );

  /** The keys each table knows, for messages about unknown keys. */
  const knownKeys = {
    top: Object.keys(fileSchema.shape),
    tool: Object.keys(toolSchema.shape),
    rule: Object.keys(ruleSchema.shape),
    ptc: Object.keys(PTC_KEYS),
    model: Object.keys(MODEL_KEYS),
    mcp: Object.keys(mcpSchema.shape),
    mcpServer: ['command', 'args', 'env', 'url', 'headers', 'callers', 'timeout'],
  };
  return { file, knownKeys };
}

/** A "expected …, got …" message; "missing" when the key is absent. */
function expected(what: string) {
  return (issue: { input?: unknown }) => (issue.input === undefined ? 'missing (required)' : `expected ${what}, got ${kindOf(issue.input)}`);
}

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

function stringArray(what = 'an array of strings') {
  return z.custom<string[]>((value) => Array.isArray(value) && value.every((item) => typeof item === 'string'), {
    error: (issue) => {
      const odd = Array.isArray(issue.input) ? issue.input.find((item) => typeof item !== 'string') : undefined;
      return odd === undefined ? expected(what)(issue) : `expected ${what}, got an array holding ${kindOf(odd)}`;
    },
  });
}

/** Why a JSON schema cannot serve as a tool's parameters, or undefined when it can. */
export function objectSchemaProblem(schema: JsonObject): string | undefined {
  try {
    const converted = z.fromJSONSchema(schema);
    if (converted instanceof z.ZodObject) return undefined;
    const type = typeof schema.type === 'string' ? `type "${schema.type}"` : 'no type "object"';
    return `must be a JSON schema of type "object" (the tool takes one object of named arguments), but it has ${type}`;
  } catch (error) {
    return `is not a JSON schema fence can use: ${error instanceof Error ? error.message : String(error)}`;
  }
}

function stringTable(what: string) {
  return z.custom<Record<string, string>>((value) => isPlainObject(value) && Object.values(value).every((item) => typeof item === 'string'), {
    error: (issue) => {
      const odd = isPlainObject(issue.input) ? Object.values(issue.input).find((item) => typeof item !== 'string') : undefined;
      return odd === undefined ? expected(what)(issue) : `expected ${what}, got a table holding ${kindOf(odd)}`;
    },
  });
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
