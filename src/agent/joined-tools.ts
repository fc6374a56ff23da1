import type { ToolFormat } from '../parse/tool-use';
import { CALL_TOOL } from '../tools/call';
import { toolDeclarations } from '../tools/declarations';
import type { ToolSpec } from '../tools/define-tool';
import { briefLine, hiddenGroups } from '../tools/describe';
import { modelTools, renderCall } from '../tools/notation';
import { programToolListing } from '../tools/ptc';
import type { ToolRegistry } from '../tools/registry';
import { toolSection } from './system-prompt';

/** What tells the model, before a request, of the tools that joined or left since its last one. */
export interface ToolNotices {
  /** The text of a system message saying what changed since the last call; undefined when nothing the model must read did. */
  take(): string | undefined;
}

/** Why the tools changed: an MCP server that finished starting, or one that listed its tools again. */
export interface ServerChange {
  server: string;
  kind: 'joined' | 'relisted';
}

/**
 * The tools a session gained or lost after it opened (MCP servers that finished starting, or
 * whose tools changed), told to the model before its next request. The registry is given the
 * new tools as they come (so calls find them at once); `take` compares the registry with what
 * the model was last told. Natively the next request's tool definitions say it all, so `take`
 * gives nothing there; in markdown and XML it gives a short message (see `joinedToolsNotice`).
 */
export class JoinedTools implements ToolNotices {
  private known: Set<string>;
  private changes: ServerChange[] = [];

  constructor(
    private readonly registry: Pick<ToolRegistry, 'tools'>,
    private readonly format: ToolFormat,
  ) {
    this.known = new Set(registry.tools.map((tool) => tool.name));
  }

  /** Notes why the registry's tools changed (it has the new tools already). */
  note(change: ServerChange): void {
    this.changes.push(change);
  }

  take(): string | undefined {
    if (this.changes.length === 0) return undefined;
    const tools = this.registry.tools;
    const added = tools.filter((tool) => !this.known.has(tool.name));
    const gone = [...this.known].filter((name) => !tools.some((tool) => tool.name === name));
    const changes = this.changes;
    this.changes = [];
    this.known = new Set(tools.map((tool) => tool.name));
    if (this.format === 'tool') return undefined;
    return joinedToolsNotice(changes, added, gone, this.format);
  }
}

/**
 * What a markdown or XML session is told when tools joined or left: which servers started or
 * changed their tools, then the new tools as the system prompt would have given them — the
 * sections of new blocks (`call`, `describe`), the declarations programs call (one line each
 * when the toolset is listed briefly, counted when hidden), the tools only a `call` block
 * reaches, with an example call — and the names no longer offered. Undefined when no tool
 * came or went.
 */
export function joinedToolsNotice(changes: readonly ServerChange[], added: readonly ToolSpec[], gone: readonly string[], format: Exclude<ToolFormat, 'tool'>): string | undefined {
  if (added.length === 0 && gone.length === 0) return undefined;
  const joined = unique(changes.filter((change) => change.kind === 'joined').map((change) => change.server));
  const relisted = unique(changes.filter((change) => change.kind === 'relisted' && !joined.includes(change.server)).map((change) => change.server));
  const lines: string[] = [];
  if (joined.length > 0) lines.push(`${servers(joined)} finished starting${added.length > 0 ? ': the tools below can be called from now on.' : '.'}`);
  if (relisted.length > 0) lines.push(`${servers(relisted)} changed ${relisted.length === 1 ? 'its' : 'their'} tools.`);
  const blocks = modelTools(added, format);
  for (const tool of blocks) lines.push('', toolSection(tool, format));
  const registered = added.filter((tool) => !blocks.includes(tool) && tool.name !== 'ptc');
  const forPrograms = registered.filter((tool) => tool.callers.includes('program'));
  if (forPrograms.length > 0) lines.push('', 'Programs (ptc) can call:', ...programToolListing(forPrograms));
  const callOnly = registered.filter((tool) => !tool.callers.includes('program') && tool.callers.includes('direct'));
  if (callOnly.length > 0) lines.push('', `Only a ${CALL_TOOL} block can call:`, ...callOnlyListing(callOnly));
  const direct = registered.find((tool) => tool.callers.includes('direct'));
  // A new `call` block's section shows a call already.
  if (direct && !blocks.some((tool) => tool.name === CALL_TOOL)) lines.push('', `Call one directly with a ${CALL_TOOL} block (the name after the tag, its JSON arguments as the body):`, renderCall(direct, direct.example, format));
  if (gone.length > 0) lines.push('', `No longer offered, not to be called: ${gone.join(', ')}.`);
  return lines.join('\n').trim();
}

/** Tools only `call` reaches, as its instructions list them: declared, by one line, or counted. */
function callOnlyListing(tools: readonly ToolSpec[]): string[] {
  const full = tools.filter((tool) => !tool.brief);
  const brief = tools.filter((tool) => tool.brief && !tool.hidden);
  const hidden = tools.filter((tool) => tool.hidden);
  return [
    ...(full.length > 0 ? ['```ts', toolDeclarations(full), '```'] : []),
    ...brief.map((tool) => `- ${briefLine(tool)}`),
    ...hiddenGroups(hidden),
  ];
}

function servers(names: readonly string[]): string {
  return names.length === 1 ? `MCP server ${names[0]}` : `MCP servers ${names.join(', ')}`;
}

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}
