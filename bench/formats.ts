/**
 * What each tool format costs in tokens (o200k, the tokenizer of OpenAI's current models):
 * the fixed part of every request (system prompt and tool definitions), and how a session's
 * requests grow over 200 steps in markdown and in the native format, built from the same
 * commands and outputs and shaped by fence's own request adapters.
 */
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { buildSystemPrompt, toolSchemas } from '../src/agent/system-prompt';
import { buildToolset, sessionTools } from '../src/session/toolset';
import { loadConfig } from '../src/config/config';
import { createMessage, type Message } from '../src/conversation/message';
import { formatNativeCall } from '../src/llm/native-calls';
import { OPENAI_COMPAT } from '../src/llm/openai-compat';
import { toOpenAIMessages } from '../src/llm/openai-messages';
import type { ToolFormat } from '../src/parse/tool-use';
import { renderCall } from '../src/tools/notation';
import type { ToolSpec } from '../src/tools/define-tool';
import { createMcpTools, type McpCaller } from '../src/tools/mcp-tool';
import type { McpToolInfo } from '../src/processes/mcp-connection';

const REPO = resolve(import.meta.dirname, '..');

/** OpenAI's rule of thumb for chat formatting: a few tokens per message around its content. */
const TOKENS_PER_MESSAGE = 3;

const counted = new Map<string, number>();
/** Tokens of a text, remembered: the growth figures count the same messages in every request. */
function count(text: string): number {
  let tokens = counted.get(text);
  if (tokens === undefined) counted.set(text, (tokens = encode(text).length));
  return tokens;
}

/** The built-in tools of a session with no configuration, as a new user has them, and `extra` tools (an MCP server's). */
function builtinToolset(extra: readonly ToolSpec[] = [], format: ToolFormat = 'markdown'): ToolSpec[] {
  const loaded = loadConfig({ workspace: REPO, env: { HOME: '/nonexistent', XDG_CONFIG_HOME: '/nonexistent' } });
  if ('error' in loaded) throw new Error(loaded.error);
  // The repository has no fence.toml, so this is the default configuration.
  return sessionTools(buildToolset(loaded.config, { id: 'bench', dir: '/nonexistent' }, extra), format);
}

/** Tool definitions as an OpenAI request carries them. */
function openAITools(tools: readonly ToolSpec[]) {
  return toolSchemas(tools).map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } }));
}

export interface PromptOverhead {
  format: ToolFormat;
  systemTokens: number;
  toolTokens: number;
  total: number;
}

/** Tokens of the system prompt and the tool definitions that every request of a format carries. */
export function promptOverhead(): PromptOverhead[] {
  return (['markdown', 'xml', 'tool'] as const).map((format) => {
    const tools = builtinToolset([], format);
    const system = buildSystemPrompt({ tools, workspace: '/home/user/project', format, now: new Date('2026-01-01') });
    const systemTokens = count(system);
    const toolTokens = format === 'tool' ? count(JSON.stringify(openAITools(tools))) : 0;
    return { format, systemTokens, toolTokens, total: systemTokens + toolTokens };
  });
}

/** One step of the scripted session: a tool call and the output it got. */
interface Step {
  tool: string;
  input: Record<string, unknown>;
  output: string;
}

/** Shell commands over this repository, run once each; the session cycles through them. */
function shellSteps(): Step[] {
  const commands = [
    'ls src/tools',
    'wc -l src/agent/*.ts',
    'grep -n "export" src/agent/agent.ts',
    'sed -n 1,40p src/tools/save.ts',
    'head -30 docs/usage.md',
    'ls -la docs',
    'grep -rn "TODO" src | head -5',
    'cat package.json',
  ];
  return commands.map((command) => ({ tool: 'shell', input: { command }, output: run(command) }));
}

/** File writes of this repository's sources (code with quotes, backslashes and line breaks). */
function saveSteps(): Step[] {
  const files = ['src/tools/save.ts', 'src/tools/read.ts', 'src/parse/markdown.ts', 'src/llm/history.ts'];
  return files.map((path) => {
    const content = readFileSync(resolve(REPO, path), 'utf8');
    return { tool: 'save', input: { path: `copy/${path}`, content }, output: `Created copy/${path} (${content.split('\n').length - 1} lines)` };
  });
}

function run(command: string): string {
  try {
    return execSync(command, { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trimEnd();
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? '').trimEnd();
  }
}

/** The session's log in a format: the assistant's calls written the way that format stores them. */
function sessionLog(format: 'markdown' | 'tool', steps: readonly Step[], tools: readonly ToolSpec[], system: string): Message[] {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const log: Message[] = [createMessage('system', system), createMessage('user', 'Look around the project and report.')];
  steps.forEach((step, i) => {
    const spec = byName.get(step.tool);
    if (!spec) throw new Error(`no tool ${step.tool}`);
    if (format === 'markdown') {
      log.push(createMessage('assistant', renderCall(spec, step.input, 'markdown')));
      log.push(createMessage('system', step.output, { meta: { toolResult: true, tool: step.tool } }));
    } else {
      const call = { id: `call_${String(i).padStart(24, '0')}`, name: step.tool, arguments: JSON.stringify(step.input) };
      log.push(createMessage('assistant', formatNativeCall(call), { meta: { toolCalls: [call] } }));
      log.push(createMessage('system', step.output, { callId: call.id, meta: { toolResult: true, tool: step.tool } }));
    }
  });
  return log;
}

/**
 * Tokens the model reads for one OpenAI-shaped request: each message's content, each call's
 * id, name and arguments text, the tool definitions, and a few tokens per message.
 */
function requestTokens(log: readonly Message[], tools: unknown[] | undefined): number {
  const messages = toOpenAIMessages(log, OPENAI_COMPAT.openai, tools !== undefined);
  let total = tools ? count(JSON.stringify(tools)) : 0;
  for (const message of messages) {
    total += TOKENS_PER_MESSAGE;
    if (typeof message.content === 'string') total += count(message.content);
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) {
        if (call.type === 'function') total += count(call.id) + count(call.function.name) + count(call.function.arguments);
      }
    }
  }
  return total;
}

export interface GrowthFigures {
  scenario: string;
  format: 'markdown' | 'tool';
  /** Sum over all requests of the run. */
  totalTokens: number;
  /** The last request. */
  lastTokens: number;
}

/** A 200-step session in markdown and in the native format: tokens sent in all, and the last request. */
export function contextGrowth(steps = 200): GrowthFigures[] {
  const shell = shellSteps();
  const saves = saveSteps();
  const scenarios = {
    'shell only': Array.from({ length: steps }, (_, i) => shell[i % shell.length]!),
    'shell, 1 in 4 a save of a source file': Array.from({ length: steps }, (_, i) => (i % 4 === 3 ? saves[(i >> 2) % saves.length]! : shell[i % shell.length]!)),
  };
  const figures: GrowthFigures[] = [];
  for (const [scenario, script] of Object.entries(scenarios)) {
    for (const format of ['markdown', 'tool'] as const) {
      const tools = builtinToolset([], format);
      const system = buildSystemPrompt({ tools, workspace: '/home/user/project', format, now: new Date('2026-01-01') });
      const log = sessionLog(format, script, tools, system);
      const definitions = format === 'tool' ? openAITools(tools) : undefined;
      let totalTokens = 0;
      let lastTokens = 0;
      // Request k holds the system prompt, the prompt and the first k steps.
      for (let k = 0; k <= script.length; k++) {
        lastTokens = requestTokens(log.slice(0, 2 + 2 * k), definitions);
        totalTokens += lastTokens;
      }
      figures.push({ scenario, format, totalTokens, lastTokens });
    }
  }
  return figures;
}

/**
 * MCP tools of the kind public servers list: a two-sentence description and three described
 * parameters, one of them optional, different for each tool so nothing is counted once.
 */
function sampleMcpTools(count: number): McpToolInfo[] {
  const things = ['issue', 'pull request', 'invoice', 'ticket', 'deployment', 'customer', 'order', 'alert', 'document', 'build'];
  const verbs = ['list', 'get', 'search', 'create', 'update'];
  return Array.from({ length: count }, (_, i) => {
    const thing = things[i % things.length] ?? 'record';
    const verb = verbs[Math.floor(i / things.length) % verbs.length] ?? 'get';
    return {
      name: `${verb}_${thing.replace(' ', '_')}_${i}`,
      description: `${verb[0]?.toUpperCase()}${verb.slice(1)} ${thing}s of a project by their fields. Results are sorted by the time they last changed, newest first, and paged.`,
      inputSchema: {
        type: 'object',
        properties: {
          project: { type: 'string', description: `The project that owns the ${thing}s, as owner/name` },
          query: { type: 'string', description: `Words to look for in the ${thing}'s title and body` },
          limit: { type: 'integer', description: 'How many to return, at most 100 (default 20)' },
        },
        required: ['project', 'query'],
      },
    };
  });
}

/**
 * Tokens of the fixed part of a request (system prompt + tool definitions) with `mcpCount` MCP
 * tools of one server added (callable directly and from programs), per format, and how many of
 * them the tools added. The tools are listed as a session lists them: in full while they are
 * few, by name and one line (with `describe`) when they are many (see `registeredListing`).
 */
export function mcpPromptSize(mcpCount: number): { format: ToolFormat; total: number; added: number }[] {
  const noCall: McpCaller = { callTool: async () => ({ content: [] }) };
  const mcp = createMcpTools('tracker', { command: 'tracker-mcp' }, noCall, sampleMcpTools(mcpCount));
  return (['markdown', 'tool'] as const).map((format) => {
    const size = (tools: readonly ToolSpec[]) => {
      const system = count(buildSystemPrompt({ tools, workspace: '/home/user/project', format, now: new Date('2026-01-01') }));
      return system + (format === 'tool' ? count(JSON.stringify(openAITools(tools))) : 0);
    };
    const base = size(builtinToolset([], format));
    const total = size(builtinToolset(mcp, format));
    return { format, total, added: total - base };
  });
}
