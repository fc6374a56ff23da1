import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ToolUse } from '../parse/tool-use';
import type { Decision, PolicyRule } from '../policy/admit';
import type { ToolContext, ToolResult, ToolSpec } from './define-tool';
import { CALL_TOOL, resolveCall } from './call';
import { invokeTool } from './invoke-tool';
import { modelTools } from './notation';
import type { ToolRegistry } from './registry';
import { DEFAULT_TRUNCATE_LIMITS, truncateOutput, type TruncateLimits } from './truncate-output';

/** Where and how much of a tool's output is kept. */
export interface ToolRunOptions {
  /** Folder for full outputs that were cut for the model (the session's `tool-outputs/`). */
  outputsDir: string;
  limits?: TruncateLimits;
  /** Admission rules for the model's own calls (principal `model`); none: every call is allowed. */
  rules?: readonly PolicyRule[];
  /**
   * Who calls: `model` (the default), whose mutating calls a person confirms when the context
   * can ask, or `user` (a person running a tool from the chat), who is never asked.
   */
  principal?: 'model' | 'user';
}

/** What running one tool use produced. */
export interface ToolRunOutcome {
  /** The tool's name, or the tag the model used when no tool answers to it. */
  tool: string;
  /** The tool's result; `output` is what the model reads, already cut to head and tail. */
  result: ToolResult;
  /** How admission answered the call. */
  decision?: Decision;
  /** Path of the whole output, when `result.output` holds only its head and tail. */
  fullOutputPath?: string;
  /** A person was asked and said no: the tool did not run. */
  declined?: boolean;
}

/**
 * Runs one tool use of the model with everything that surrounds every tool: lookup, mapping a
 * markdown block onto the tool's parameters (a `call` block onto the tool it names, see
 * `resolveCall`), then `invokeTool` (validation, admission as
 * principal `model`, catching what it throws), and cutting long output to head and tail (the
 * whole text saved to a file).
 *
 * Never throws: every failure becomes an error result the model can read and act on.
 */
export async function runToolUse(
  use: ToolUse,
  registry: ToolRegistry,
  ctx: ToolContext,
  options: ToolRunOptions,
): Promise<ToolRunOutcome> {
  // A native call may name a tool of an MCP server still starting: it waits for the server.
  let spec = use.format === 'tool' ? await registry.arriving(use.tool, ctx.signal) : registry.forTag(use.tool);
  if (!spec) return { tool: use.tool, result: { output: registry.whyAbsent(use.tool) ?? noSuchTool(use.tool, registry, use.format), isError: true } };
  if (!spec.callers.includes('direct')) {
    return { tool: spec.name, result: { output: `${spec.name} can only be called from a program (a ptc block).`, isError: true } };
  }
  let input = use.kwargs ?? blockInput(spec, use);
  if (spec.name === CALL_TOOL) {
    // A call runs as the tool it names, so admission, the log and the chat see that tool.
    const resolved = await resolveCall(input, registry, use.format, ctx.signal);
    if ('error' in resolved) return { tool: CALL_TOOL, result: { output: resolved.error, isError: true } };
    ({ spec, input } = resolved);
  }
  const { result, decision, declined } = await invokeTool(spec, input, ctx, {
    principal: options.principal ?? 'model',
    rules: options.rules ?? [],
    notation: use.format,
    confirmMutating: options.principal !== 'user',
    byPerson: options.principal === 'user',
  });
  if (declined) return { tool: spec.name, result, decision, declined };
  const cut = truncateOutput(result.output, options.limits ?? DEFAULT_TRUNCATE_LIMITS);
  if (cut.omittedChars === 0) return { tool: spec.name, result, decision };
  const fullOutputPath = saveFullOutput(options.outputsDir, spec.name, result.output);
  const where = fullOutputPath ? `The full output is in ${fullOutputPath}.` : 'The full output could not be saved.';
  return { tool: spec.name, result: { ...result, output: `${cut.text}\n${where}` }, decision, fullOutputPath };
}

/** Says that no tool answers to `name`, and which ones the model may call in its format. */
function noSuchTool(name: string, registry: ToolRegistry, format: ToolUse['format']): string {
  const names = modelTools(registry.tools, format).map((tool) => (format === 'tool' ? tool.name : (tool.blockTypes[0] ?? tool.name)));
  return `There is no tool named "${name}". The tools are: ${names.join(', ')}.`;
}

/**
 * Maps a markdown block onto a tool's parameters: the words after the tag fill `block.args`
 * in order (extra words join the last one, so a path with spaces survives), and the body
 * fills `block.content` unless an arg already gave that parameter a value.
 */
export function blockInput(spec: ToolSpec, use: ToolUse): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const names = spec.block.args ?? [];
  names.forEach((name, i) => {
    const words = i === names.length - 1 ? use.args.slice(i) : use.args.slice(i, i + 1);
    if (words.length > 0) input[name] = words.join(' ');
  });
  const contentName = spec.block.content;
  if (contentName && input[contentName] === undefined) {
    // A body that stands in for a positional arg (```read\npath\n```) is a single value: trim it.
    input[contentName] = names.includes(contentName) ? use.content.trim() : use.content;
  }
  return input;
}

function saveFullOutput(dir: string, tool: string, text: string): string | undefined {
  const path = join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${tool}-${randomBytes(2).toString('hex')}.txt`);
  try {
    // Readable by the user alone, as the session's log is (see `PRIVATE_FILE`).
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  } catch {
    return undefined;
  }
}
