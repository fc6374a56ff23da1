import { z } from 'zod';
import type { ToolSchema } from '../llm/provider';
import type { ToolFormat } from '../parse/tool-use';
import type { ToolSpec } from '../tools/define-tool';
import { BRIEF_DEFINITION_NOTE, DESCRIBE_TOOL } from '../tools/describe';
import { callForm, modelTools, renderCall } from '../tools/notation';

/** What the system prompt is made of. */
export interface SystemPromptInput {
  tools: readonly ToolSpec[];
  workspace: string;
  /** How the model writes tool calls (default `markdown`). */
  format?: ToolFormat;
  /** An autonomous run: nobody answers, and the run ends with the `complete` tool. */
  auto?: boolean;
  /** Contents of the workspace's AGENTS.md, if it has one. */
  agentsFile?: string;
  /**
   * The OS sandbox holds the place of protected paths with empty folders (see
   * `SandboxPolicy.placeholders`), which the shell shows: the prompt says what they are.
   */
  sandboxPlaceholders?: boolean;
  /** The section on the session's skills (see `skillsSection`), when it has any. */
  skills?: string;
  now?: Date;
}

const HOW_TO_ACT: Record<ToolFormat, string[]> = {
  markdown: [
    'You act by writing fenced code blocks whose language tag names a tool. fence runs the first complete tool block of your reply, stops reading there, and answers with its result in the next message: write one tool block per reply.',
    'Blocks tagged with anything that is not a tool (```ts, ```json …) are shown as text and not run.',
  ],
  xml: [
    'You act by writing tool calls in XML: <tool-use><TOOL args="WORDS">BODY</TOOL></tool-use>. fence runs the first complete call of your reply, stops reading there, and answers with its result in the next message: write one call per reply.',
    'The body is taken as written (< and & are fine); wrap a body that contains </TOOL> or </tool-use> in <![CDATA[...]]>. A <tool-use> inside a code block is shown as text and not run.',
  ],
  tool: [
    'You act by calling the tools you are given. Several calls in one reply run in order, and each is answered by its result.',
  ],
};

/** What the empty folders the sandbox mounts over missing protected paths are, for a model that meets them in `ls`. */
export const SANDBOX_PLACEHOLDERS_NOTE =
  "Commands run in a sandbox: empty folders named fence.toml, .fence or .git that you did not make are the sandbox's placeholders for protected paths; leave them.";

/**
 * Builds the system prompt: how to act in the session's tool format, each tool's instructions
 * with its call form and one example (markdown and XML; in the native format the tools travel
 * as definitions, see `toolSchemas`), the workspace, and the project's AGENTS.md.
 */
export function buildSystemPrompt(input: SystemPromptInput): string {
  const format = input.format ?? 'markdown';
  const sections = [
    [
      "You are fence, an autonomous coding agent working in a terminal on the user's machine.",
      ...HOW_TO_ACT[format],
      input.auto
        ? 'Nobody is watching this run and nobody will answer questions: decide for yourself and keep going until the task is done and checked, then call complete with your final answer. Keep it short and say what you did.'
        : 'When the task is done, reply without any tool call: that reply is your final answer to the user. Keep it short and say what you did.',
    ].join('\n'),
  ];
  if (format !== 'tool') {
    // Tools with no block form (registered tools meant for programs) appear in ptc's declarations.
    sections.push('# Tools', ...modelTools(input.tools, format).map((tool) => toolSection(tool, format)));
  }
  sections.push(
    '# Context',
    [
      `Workspace (the working folder; relative paths start here): ${input.workspace}`,
      `Date: ${(input.now ?? new Date()).toISOString().slice(0, 10)}`,
      ...(input.sandboxPlaceholders ? [SANDBOX_PLACEHOLDERS_NOTE] : []),
    ].join('\n'),
  );
  if (input.skills) sections.push('# Skills', input.skills);
  if (input.agentsFile?.trim()) {
    sections.push('# Project instructions (AGENTS.md)', input.agentsFile.trim());
  }
  return sections.join('\n\n');
}

/**
 * One tool's section of the prompt in markdown or XML: heading, description, form,
 * instructions and an example; a brief tool's has only its heading, description and form.
 */
export function toolSection(tool: ToolSpec, format: ToolFormat): string {
  const tags = tool.blockTypes.length > 1 ? ` (tags: ${tool.blockTypes.join(', ')})` : '';
  const form = callForm(tool, format);
  if (tool.brief) {
    const heading = [`## ${tool.name}${tags}`, tool.description, ...(form === undefined ? [] : [`Form: ${form}`])];
    return [...heading, `Call ${DESCRIBE_TOOL} with its name for how to use it.`].join('\n');
  }
  return [
    `## ${tool.name}${tags}`,
    tool.description,
    ...(form === undefined ? [] : [`Form: ${form}`]),
    tool.instructions,
    'Example:',
    renderCall(tool, tool.example, format),
  ].join('\n');
}

/**
 * The tools as provider-native definitions: the name, the description with the instructions,
 * and the JSON schema of the zod `parameters` (input side, without the `$schema` key). A plain
 * zod object drops unknown keys instead of refusing them, so its `additionalProperties: false`
 * says nothing the model needs and is left out; a strict object (a user tool whose schema
 * forbids other keys) keeps it. No example: the schema is the form. Only tools the model may
 * call directly. A brief tool (many registered tools, see `listsBriefly`) still has its
 * definition, so it can be called and the list of tools is the same on every request, but
 * with its one-line description, a note sending the model to `describe`, and an open object
 * as parameters; its calls are still checked against its real parameters when they run. A
 * hidden tool (hundreds of registered tools, see `hidesTools`) has no definition: `call`
 * reaches it.
 */
export function toolSchemas(tools: readonly ToolSpec[]): ToolSchema[] {
  return modelTools(tools, 'tool').flatMap((tool): ToolSchema[] => {
    if (tool.hidden) return [];
    if (tool.brief) return [{ name: tool.name, description: `${tool.description}\n${BRIEF_DEFINITION_NOTE}`, parameters: { type: 'object' } }];
    const schema = z.toJSONSchema(tool.parameters, { io: 'input', unrepresentable: 'any' });
    const { $schema: _dialect, ...parameters } = schema;
    if (parameters.additionalProperties === false && tool.parameters.def.catchall === undefined) delete parameters.additionalProperties;
    return [{ name: tool.name, description: `${tool.description}\n${tool.instructions}`, parameters }];
  });
}

/**
 * What a resumed session tells the model when its tools are not those its system prompt
 * described (a saved program approved, an MCP server added or gone since): the tools added,
 * each with its one-line description, and the ones gone. Undefined when nothing changed.
 * `before` is the tool names the session last ran with.
 */
export function toolChangeNotice(before: readonly string[], tools: readonly ToolSpec[], format: ToolFormat): string | undefined {
  const added = tools.filter((tool) => !before.includes(tool.name));
  const gone = before.filter((name) => !tools.some((tool) => tool.name === name));
  if (added.length === 0 && gone.length === 0) return undefined;
  const lines = ['The tools changed since this session last ran.'];
  if (added.length > 0) {
    lines.push('Added:', ...added.map((tool) => `- ${tool.name}: ${tool.description}`));
    if (format !== 'tool' && added.some((tool) => tool.blockTypes.length === 0 && tool.callers.includes('direct'))) {
      lines.push('Call one that has no block of its own with a call block (the name after the tag, the JSON arguments as its body), or from a program.');
    }
  }
  if (gone.length > 0) lines.push(`Gone, no longer to be called: ${gone.join(', ')}.`);
  return lines.join('\n');
}
