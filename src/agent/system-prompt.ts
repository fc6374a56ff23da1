import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ToolSpec } from '../tools/define-tool';

/** What the system prompt is made of. */
export interface SystemPromptInput {
  tools: readonly ToolSpec[];
  workspace: string;
  /** Contents of the workspace's AGENTS.md, if it has one. */
  agentsFile?: string;
  now?: Date;
}

/**
 * Builds the system prompt: how to act by writing fenced blocks, each tool's instructions and
 * one example, the workspace, and the project's AGENTS.md. Plain text; no JSON schemas.
 */
export function buildSystemPrompt(input: SystemPromptInput): string {
  const sections = [
    [
      'You are fence, an autonomous coding agent working in a terminal on the user\'s machine.',
      'You act by writing fenced code blocks whose language tag names a tool. fence runs the first complete tool block of your reply, stops reading your reply there, and answers with its result in the next message. Write one tool block per reply, then wait for its result.',
      'Blocks tagged with anything that is not a tool (```ts, ```json …) are shown as text and not run.',
      'When the task is done, reply without any tool block: that reply is your final answer to the user. Keep it short and say what you did.',
    ].join('\n'),
    '# Tools',
    // Tools with no block form (registered tools meant for programs) appear in ptc's declarations.
    ...input.tools.filter((tool) => tool.blockTypes.length > 0 && tool.callers.includes('direct')).map(describeTool),
    '# Context',
    [
      `Workspace (the working folder; relative paths start here): ${input.workspace}`,
      `Date: ${(input.now ?? new Date()).toISOString().slice(0, 10)}`,
    ].join('\n'),
  ];
  if (input.agentsFile?.trim()) {
    sections.push('# Project instructions (AGENTS.md)', input.agentsFile.trim());
  }
  return sections.join('\n\n');
}

function describeTool(tool: ToolSpec): string {
  const tags = tool.blockTypes.length > 1 ? ` (tags: ${tool.blockTypes.join(', ')})` : '';
  return [`## ${tool.name}${tags}`, tool.description, tool.instructions, 'Example:', tool.examples].join('\n');
}

/** Reads `AGENTS.md` from the workspace, if present. Never throws. */
export function readAgentsFile(workspace: string): string | undefined {
  try {
    return readFileSync(join(workspace, 'AGENTS.md'), 'utf8');
  } catch {
    return undefined;
  }
}
