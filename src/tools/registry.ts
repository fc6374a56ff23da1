import type { ToolSpec } from './define-tool';

/**
 * The tools of one session, looked up by name or by markdown language tag. Built once per
 * session from plain ToolSpec objects; it holds no state beyond that.
 */
export class ToolRegistry {
  private readonly byTag = new Map<string, ToolSpec>();
  private readonly byName = new Map<string, ToolSpec>();

  constructor(readonly tools: readonly ToolSpec[]) {
    for (const tool of tools) {
      if (this.byName.has(tool.name)) throw new Error(`two tools are named "${tool.name}"`);
      this.byName.set(tool.name, tool);
      for (const tag of tool.blockTypes) {
        const other = this.byTag.get(tag);
        if (other) throw new Error(`tools "${other.name}" and "${tool.name}" both answer to \`${tag}\``);
        this.byTag.set(tag, tool);
      }
    }
  }

  /** The tool a markdown language tag (its first word) names, if any. */
  forTag(tag: string): ToolSpec | undefined {
    return this.byTag.get(tag);
  }

  /** The tool of that name, if any. */
  get(name: string): ToolSpec | undefined {
    return this.byName.get(name);
  }

  /** Whether a language tag names a tool; shaped for the parsers' `IsTool`. */
  readonly isTool = (tag: string): boolean => this.byTag.has(tag);
}
