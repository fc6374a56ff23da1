import { z } from 'zod';
import { REASONING_LEVELS, type ModelInfo } from '../llm/model-info';
import { OPENAI_APIS } from '../llm/provider-options';
import {
  API_PROVIDERS,
  BUILTIN_TOOL_NAMES,
  HOOK_EVENTS,
  MODEL_KEYS,
  PTC_KEYS,
  SANDBOX_MODE_NAMES,
  TOOL_FORMATS,
  type ConfigFile,
  type HookConfig,
  type JsonObject,
  type McpServerConfig,
  type PtcConfig,
} from './config-schema';
import { describeTomlValue } from './toml-value';

/**
 * The zod schemas that check one configuration file (the user's `config.toml` or a project's
 * `fence.toml`), with messages written to be read by the person who wrote the file. Every
 * table is strict: a key it does not know is an error, which catches typos. Every check of a
 * value words its failure with `expected`, so that the message says what the key takes and
 * shows the value the file gave (`expected "markdown", "xml" or "tool", got "yaml"`); arrays
 * and tables are checked item by item, so the message points at the bad item.
 */
export interface ConfigFileSchemas {
  /** One file, keys as written, to its `ConfigFile`. */
  file: z.ZodType<ConfigFile, unknown>;
  /** The keys each table knows, for messages about unknown keys. */
  knownKeys: Record<'top' | 'tool' | 'rule' | 'hook' | 'ptc' | 'model' | 'mcp' | 'mcpServer' | 'sandbox' | 'providers' | 'provider' | 'web' | 'agents', string[]>;
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
  const stringArray = (what = 'an array of strings') => arrayOf(text, what);
  const positiveNumber = z.number({ error: expected('a positive number') }).positive({ error: expected('a positive number') });
  const positiveInt = z.int({ error: expected('a positive integer') }).positive({ error: expected('a positive integer') });
  const nonNegativeInt = z.int({ error: expected('a non-negative integer') }).nonnegative({ error: expected('a non-negative integer') });
  const nonNegativeNumber = z.number({ error: expected('a non-negative number') }).nonnegative({ error: expected('a non-negative number') });

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




  const callersSchema = arrayOf(
    z.enum(['direct', 'program'], { error: expected('"direct" or "program"') }),
    'a non-empty array of "direct" and "program"',
  ).min(1, { error: expected('a non-empty array of "direct" and "program"') });

  const toolShape = {
    description: text.min(1, { error: 'must not be empty: say in one line what the tool does' }),
    command: stringArray().refine((command) => command.length > 0 && command[0] !== '', {
      error: 'must name the program to run, e.g. ["node", "tools/my-tool.js"]',
    }),
    parameters: parametersSchema.optional(),
    callers: callersSchema.optional(),
    returns: text.optional(),
    env: arrayOf(
      text.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: expected('an environment variable name such as FINANCE_TOKEN') }),
      'an array of environment variable names',
    ).optional(),
    timeout: positiveNumber.optional(),
    cwd: text.optional(),
    sandbox: z.boolean({ error: expected('true or false') }).optional(),
  };

  const toolSchema = tomlTable(toolShape);

  /** A table of strings; a value that is not a string is reported at its own key. */
  const stringTable = (what: string) => z.record(z.string(), text, { error: expected(what) });


  const mcpServerShape = {
    command: text.min(1, { error: 'must name the program that starts the server, e.g. "npx"' }).optional(),
    args: stringArray().optional(),
    env: stringTable('a table of strings, e.g. { API_TOKEN = "…" }').optional(),
    cwd: text.min(1, { error: 'must name a folder, e.g. "~/mcp"' }).optional(),
    url: text.refine(isHttpUrl, { error: expected('an http:// or https:// URL') }).optional(),
    headers: stringTable('a table of strings, e.g. { Authorization = "Bearer …" }').optional(),
    callers: callersSchema.optional(),
    timeout: positiveNumber.optional(),
    sandbox: z.boolean({ error: expected('true or false') }).optional(),
  };

  const mcpServerSchema = tomlTable(mcpServerShape)
    .superRefine((table, ctx) => {
      if (table.command === undefined && table.url === undefined) {
        ctx.addIssue({ code: 'custom', message: 'needs command (a server fence starts) or url (a streamable HTTP server)' });
      } else if (table.command !== undefined && table.url !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['url'], message: 'a server has either command or url, not both' });
      }
      for (const key of ['args', 'env', 'cwd'] as const) {
        if (table.url !== undefined && table[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'only a command server takes it; an HTTP server has url and headers' });
      }
      if (table.command !== undefined && table.headers !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['headers'], message: 'only an HTTP server takes it; a command server has command, args and env' });
      }
    })
    .transform((table): McpServerConfig => {
      const common = {
        ...(table.callers ? { callers: table.callers } : {}),
        ...(table.timeout === undefined ? {} : { timeout: table.timeout }),
        ...(table.sandbox === undefined ? {} : { sandbox: table.sandbox }),
      };
      if (table.url !== undefined) return { url: table.url, ...(table.headers ? { headers: table.headers } : {}), ...common };
      return { command: table.command ?? '', ...(table.args ? { args: table.args } : {}), ...(table.env ? { env: table.env } : {}), ...(table.cwd === undefined ? {} : { cwd: table.cwd }), ...common };
    });

  const mcpShape = {
    servers: z.record(z.string(), mcpServerSchema, { error: expected('a table of servers, e.g. [mcp.servers.finance]') }).optional(),
  };

  const ruleShape = {
    tool: z.string({ error: expected('a string', 'missing (required; "*" matches every tool)') }),
    resource: text.optional(),
    principal: text.optional(),
    intent: text.optional(),
    action: z.enum(['allow', 'deny', 'ask'], { error: expected('"allow", "deny" or "ask"', 'missing (required: "allow", "deny" or "ask")') }),
    reason: text.optional(),
  };

  /** One `[[hooks]]` entry; a tool or resource pattern only for the events around a tool call. */
  const hookShape = {
    event: z.enum(HOOK_EVENTS, { error: expected('"session_start", "prompt", "pre_tool", "post_tool" or "stop"', 'missing (required: "session_start", "prompt", "pre_tool", "post_tool" or "stop")') }),
    tool: text.min(1, { error: 'must not be empty: a tool name or pattern such as "shell" or "*"' }).optional(),
    resource: text.min(1, { error: 'must not be empty: a pattern such as "git push*"' }).optional(),
    command: stringArray().refine((command) => command.length > 0 && command[0] !== '', {
      error: 'must name the program to run, e.g. ["./scripts/check.sh"]',
    }),
    timeout: positiveNumber.optional(),
    sandbox: z.boolean({ error: expected('true or false') }).optional(),
  };

  const hookSchema = tomlTable(hookShape)
    .superRefine((hook, ctx) => {
      if (hook.event === 'pre_tool' || hook.event === 'post_tool') return;
      for (const key of ['tool', 'resource'] as const) {
        if (hook[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `only pre_tool and post_tool hooks match a tool call; a ${hook.event} hook runs at every ${hook.event}` });
      }
    })
    .transform((hook): HookConfig => hook);

  const ptcShape = {
    memory_mb: positiveInt.optional(),
    cpu_time_s: positiveNumber.optional(),
    wall_time_s: positiveNumber.optional(),
    stack_kb: positiveInt.optional(),
    max_tool_calls: positiveInt.optional(),
    max_concurrent_calls: positiveInt.optional(),
    max_output_kb: positiveInt.optional(),
    store_max_kb: positiveInt.optional(),
    max_live_sandboxes: positiveInt.optional(),
    total_memory_mb: positiveInt.optional(),
    eligible: arrayOf(
      z.enum(BUILTIN_TOOL_NAMES, { error: expected(`the name of a built-in tool (${BUILTIN_TOOL_NAMES.join(', ')})`) }),
      'an array of built-in tool names',
    ).optional(),
  } satisfies Record<keyof typeof PTC_KEYS, z.ZodType>;

  const ptcSchema = tomlTable(ptcShape).transform((table) => {
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
    images: z.boolean({ error: expected('true or false') }).optional(),
  } satisfies Record<keyof typeof MODEL_KEYS, z.ZodType>;

  const modelSchema = tomlTable(modelShape).transform((table) => {
    const info: ModelInfo = {};
    for (const [key, name] of Object.entries(MODEL_KEYS)) {
      const value = table[key as keyof typeof table];
      if (value !== undefined) Object.assign(info, { [name]: value });
    }
    return info;
  });

  const sandboxShape = {
    mode: z.enum(SANDBOX_MODE_NAMES, { error: expected('"workspace-write", "read-only" or "off"') }).optional(),
    writable: stringArray().optional(),
    deny_read: stringArray().optional(),
    network: z
      .union([z.boolean(), z.array(z.string().regex(/^(private:)?([A-Za-z0-9.*-]+|\[[0-9A-Fa-f:.]+\])(:\d+)?$/))], {
        error: expected('true, false, or an array of hosts such as ["registry.npmjs.org", "*.pythonhosted.org", "github.com:443", "private:git.corp.example"]'),
      })
      .optional(),
    max_processes: positiveInt.optional(),
    max_memory_mb: positiveInt.optional(),
    max_file_mb: positiveInt.optional(),
    pass_env: arrayOf(
      text.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: expected('an environment variable name such as GITHUB_TOKEN') }),
      'an array of environment variable names',
    ).optional(),
  };

  /** The `[web]` table: hosts written as `[sandbox] network`'s, and hosted web search. */
  const webShape = {
    allow: z
      .array(z.string().regex(/^(private:)?([A-Za-z0-9.*-]+|\[[0-9A-Fa-f:.]+\])(:\d+)?$/), {
        error: expected('an array of hosts such as ["docs.python.org", "*.readthedocs.io", "127.0.0.1:8000", "private:wiki.corp.example"]'),
      })
      .optional(),
    search: z.boolean({ error: expected('true or false') }).optional(),
    timeout_seconds: positiveInt.optional(),
  };

  /** One `[providers.<name>]` table: which API the provider is spoken to through. */
  const providerShape = {
    api: z.enum(OPENAI_APIS as ['responses', 'chat'], { error: expected('"responses" or "chat"') }).optional(),
  };
  const providersShape = Object.fromEntries(API_PROVIDERS.map((name) => [name, tomlTable(providerShape).optional()])) as Record<
    (typeof API_PROVIDERS)[number],
    z.ZodOptional<ReturnType<typeof tomlTable<typeof providerShape>>>
  >;

  const agentsShape = { max_depth: positiveInt.optional(), max_parallel: positiveInt.optional() };

  /** One configuration file, keys as written. */
  const fileShape = {
    tool_format: z.enum(TOOL_FORMATS, { error: expected('"markdown", "xml" or "tool"') }).optional(),
    reasoning: z.enum(REASONING_LEVELS, { error: expected('"off", "low", "medium" or "high"') }).optional(),
    tools: z.record(z.string(), toolSchema, { error: expected('a table of tools, e.g. [tools.my_tool]') }).optional(),
    policy: z.array(tomlTable(ruleShape), { error: expected('an array of tables, written [[policy]]') }).optional(),
    hooks: z.array(hookSchema, { error: expected('an array of tables, written [[hooks]]') }).optional(),
    ptc: ptcSchema.optional(),
    models: z.record(z.string(), modelSchema, { error: expected('a table of models, e.g. [models."openai/gpt-5"]') }).optional(),
    mcp: tomlTable(mcpShape).optional(),
    brief_tools_above_tokens: nonNegativeInt.optional(),
    hide_tools_above_tokens: nonNegativeInt.optional(),
    sandbox: tomlTable(sandboxShape).optional(),
    providers: tomlTable(providersShape).optional(),
    web: tomlTable(webShape).optional(),
    agents: tomlTable(agentsShape)
      .transform((table) => ({
        ...(table.max_depth === undefined ? {} : { maxDepth: table.max_depth }),
        ...(table.max_parallel === undefined ? {} : { maxParallel: table.max_parallel }),
      }))
      .optional(),
  };

  /** One configuration file, with its keys as `ConfigFile` names them. */
  const file = z.strictObject(fileShape).transform(
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
    top: Object.keys(fileShape),
    tool: Object.keys(toolShape),
    rule: Object.keys(ruleShape),
    hook: Object.keys(hookShape),
    ptc: Object.keys(PTC_KEYS),
    model: Object.keys(MODEL_KEYS),
    mcp: Object.keys(mcpShape),
    mcpServer: Object.keys(mcpServerShape),
    sandbox: Object.keys(sandboxShape),
    providers: [...API_PROVIDERS],
    provider: Object.keys(providerShape),
    web: Object.keys(webShape),
    agents: Object.keys(agentsShape),
  };
  return { file, knownKeys };
}

/**
 * The message of a failed check: `expected <what>, got <the value as the file wrote it>`, or
 * `missing` when the key is absent.
 */
function expected(what: string, missing = 'missing (required)') {
  return (issue: { input?: unknown }) => (issue.input === undefined ? missing : `expected ${what}, got ${describeTomlValue(issue.input)}`);
}

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** An array of `item`s; a failing item is reported at its own index. */
function arrayOf<T extends z.ZodType>(item: T, what: string) {
  return z.array(item, { error: expected(what) });
}

const asTable = { error: expected('a table') };

/**
 * A TOML table with exactly the keys of `shape`. A TOML date is an object too, so anything
 * but a plain table is refused first, lest `ptc = 1979-05-27` pass as an empty table.
 */
function tomlTable<Shape extends z.core.$ZodLooseShape>(shape: Shape) {
  return z.custom<JsonObject>(isPlainObject, asTable).pipe(z.strictObject(shape, asTable));
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

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
