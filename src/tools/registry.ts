import type { ToolSpec } from './define-tool';

/**
 * What a registry is told of tools that are not among its tools, or not yet: those of MCP
 * servers still starting, of servers that failed, and those a server no longer lists.
 */
export interface AbsentTools {
  /**
   * Waits for the servers still starting whose tools could be named `name`; undefined when no
   * such server is starting. Resolves once they joined or failed, or when `signal` aborts.
   */
  arrival(name: string, signal: AbortSignal): Promise<void> | undefined;
  /** Why there is no tool named `name` when a server explains it (it failed, or no longer lists it); else undefined. */
  whyAbsent(name: string): string | undefined;
}

/**
 * The tools of one session, looked up by name or by markdown language tag. Built from plain
 * ToolSpec objects when the session opens; `replace` gives it a new list when tools join or
 * leave (an MCP server that finished starting, or whose tools changed), and `version` counts
 * those changes. `absent` explains names it does not have (see `AbsentTools`).
 */
export class ToolRegistry {
  private byTag = new Map<string, ToolSpec>();
  private byName = new Map<string, ToolSpec>();
  private list: readonly ToolSpec[] = [];
  private changes = 0;

  constructor(
    tools: readonly ToolSpec[],
    private readonly absent?: AbsentTools,
  ) {
    this.index(tools);
  }

  /** The tools, in prompt order. */
  get tools(): readonly ToolSpec[] {
    return this.list;
  }

  /** How many times `replace` changed the tools; 0 for the list the registry was made with. */
  get version(): number {
    return this.changes;
  }

  /** Takes `tools` as the session's tools from now on. Throws, keeping the old list, when two share a name or a tag. */
  replace(tools: readonly ToolSpec[]): void {
    this.index(tools);
    this.changes += 1;
  }

  /** The tool a markdown language tag (its first word) names, if any. */
  forTag(tag: string): ToolSpec | undefined {
    return this.byTag.get(tag);
  }

  /** The tool of that name, if any. */
  get(name: string): ToolSpec | undefined {
    return this.byName.get(name);
  }

  /**
   * The tool of that name, waiting first, when there is none yet, for an MCP server still
   * starting that could list it (see `AbsentTools.arrival`). Undefined when there is none then.
   */
  async arriving(name: string, signal: AbortSignal): Promise<ToolSpec | undefined> {
    const found = this.byName.get(name);
    if (found || !this.absent) return found;
    await this.absent.arrival(name, signal);
    return this.byName.get(name);
  }

  /** Why there is no tool named `name`, when something can say (a server failed or dropped it). */
  whyAbsent(name: string): string | undefined {
    return this.byName.has(name) ? undefined : this.absent?.whyAbsent(name);
  }

  /** Whether a language tag names a tool; shaped for the parsers' `IsTool`. */
  readonly isTool = (tag: string): boolean => this.byTag.has(tag);

  private index(tools: readonly ToolSpec[]): void {
    const byTag = new Map<string, ToolSpec>();
    const byName = new Map<string, ToolSpec>();
    for (const tool of tools) {
      if (byName.has(tool.name)) throw new Error(`two tools are named "${tool.name}"`);
      byName.set(tool.name, tool);
      for (const tag of tool.blockTypes) {
        const other = byTag.get(tag);
        if (other) throw new Error(`tools "${other.name}" and "${tool.name}" both answer to \`${tag}\``);
        byTag.set(tag, tool);
      }
    }
    this.byTag = byTag;
    this.byName = byName;
    this.list = [...tools];
  }
}
