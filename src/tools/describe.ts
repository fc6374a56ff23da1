import { z } from 'zod';
import { DEFAULT_BRIEF_TOOLS_ABOVE_TOKENS, DEFAULT_HIDE_TOOLS_ABOVE_TOKENS } from '../config/config-schema';
import { tokensForChars } from '../llm/estimate-tokens';
import { wildcardMatcher } from '../policy/pattern';
import { toolDeclarations } from './declarations';
import { defineTool, type ToolSpec } from './define-tool';
import { renderCall } from './notation';

/** The name (and markdown tag) of the tool that gives the full description of brief tools. */
export const DESCRIBE_TOOL = 'describe';

/** Most tools one `describe` call shows in full; the others that match are named. */
export const DESCRIBE_LIMIT = 20;

/** Most names of tools that matched but were not shown that one result lists. */
const LEFT_OUT_NAMES = 30;

/** How many tool names the result lists when nothing matched. */
const SUGGESTED_NAMES = 10;

/** What a brief tool's native definition says in place of its instructions and parameters. */
export const BRIEF_DEFINITION_NOTE = `Call ${DESCRIBE_TOOL} with its name for its parameters.`;

/**
 * Everything there is to know about one tool, as `describe` gives it: a heading, its
 * TypeScript declaration (see `toolDeclarations`), its instructions, and an example call — as a program writes it
 * when programs may call the tool, else its JSON arguments — unless the instructions already
 * show that call.
 */
export function fullDescription(tool: ToolSpec): string {
  const byProgram = tool.callers.includes('program');
  const call = renderCall(tool, tool.example, byProgram ? 'program' : 'tool');
  const lines = [`## ${tool.name}`, '```ts', toolDeclarations([tool]), '```', tool.instructions];
  if (!tool.instructions.includes(call)) lines.push(byProgram ? `Example (in a program): ${call}` : `Example arguments of a direct call: ${call}`);
  return lines.join('\n');
}

/**
 * Estimated tokens (four characters a token) of what listing `tools` in full puts into the
 * prompt: each one's declaration (for programs) and its description and instructions (its
 * native definition, less the schema). The same whatever the tool format.
 */
export function fullListingTokens(tools: readonly ToolSpec[]): number {
  const chars = (tool: ToolSpec) => toolDeclarations([tool]).length + tool.description.length + tool.instructions.length;
  return tools.reduce((sum, tool) => sum + tokensForChars(chars(tool)), 0);
}

/**
 * Whether the registered tools (never the built-ins) are to be listed by name and one line:
 * when there are any and listing them in full would take more than `aboveTokens` estimated
 * tokens (see `fullListingTokens`). The rule depends on the tools alone, so a session decides
 * once and its prompt and tool list stay the same from step to step (which keeps prompt
 * caches valid).
 */
export function listsBriefly(tools: readonly ToolSpec[], aboveTokens: number = DEFAULT_BRIEF_TOOLS_ABOVE_TOKENS): boolean {
  return tools.length > 0 && fullListingTokens(tools) > aboveTokens;
}

/** Copies of `tools` marked `brief`; the tools given are not changed. */
export function markBrief(tools: readonly ToolSpec[]): ToolSpec[] {
  return tools.map((tool) => ({ ...tool, brief: true }));
}

/** Estimated tokens (four characters a token) of listing `tools` one line each (see `briefLine`). */
export function briefListingTokens(tools: readonly ToolSpec[]): number {
  return tools.reduce((sum, tool) => sum + tokensForChars(briefLine(tool).length + 3), 0);
}

/**
 * Whether the registered tools are not to be listed at all: when even their one-line listing
 * would take more than `aboveTokens` estimated tokens (see `briefListingTokens`). Like
 * `listsBriefly`, the rule depends on the tools alone.
 */
export function hidesTools(tools: readonly ToolSpec[], aboveTokens: number = DEFAULT_HIDE_TOOLS_ABOVE_TOKENS): boolean {
  return tools.length > 0 && briefListingTokens(tools) > aboveTokens;
}

/** Copies of `tools` marked `brief` and `hidden`; the tools given are not changed. */
export function markHidden(tools: readonly ToolSpec[]): ToolSpec[] {
  return tools.map((tool) => ({ ...tool, brief: true, hidden: true }));
}

/** Names shown per group when hidden tools are counted. */
const HIDDEN_NAMES_SHOWN = 3;

/**
 * Hidden tools as the prompt counts them, one line per group in order of first appearance:
 * `- MCP server github: 90 tools (github_create_issue, github_get_pull_request, github_list_issues, …)`.
 */
export function hiddenGroups(tools: readonly ToolSpec[]): string[] {
  const groups = new Map<string, string[]>();
  for (const tool of tools) {
    const group = tool.group ?? 'other tools';
    const names = groups.get(group);
    if (names) names.push(tool.name);
    else groups.set(group, [tool.name]);
  }
  return [...groups].map(([group, names]) => {
    const shown = names.slice(0, HIDDEN_NAMES_SHOWN).join(', ');
    return `- ${group}: ${names.length} tool${names.length === 1 ? '' : 's'} (${shown}${names.length > HIDDEN_NAMES_SHOWN ? ', …' : ''})`;
  });
}

/** A tool as a brief listing shows it: `finance_get_members — List the members of a department`. */
export function briefLine(tool: ToolSpec): string {
  return `${tool.name} — ${tool.description}`;
}

/** What `describe` found for its terms: the tools in the order to show, and the terms nothing matched. */
export interface DescribeMatch {
  tools: ToolSpec[];
  unmatched: string[];
}

/** The terms of a `describe` call: split on spaces, commas and line breaks, without repeats. */
export function describeTerms(input: string | readonly string[]): string[] {
  const text = typeof input === 'string' ? input : input.join(' ');
  return [...new Set(text.split(/[\s,]+/).filter((term) => term !== ''))];
}

/**
 * The tools `terms` name. A term with `*` or `?` is a pattern over names, case-insensitive
 * (`finance_*`); any other term is a name, compared case-insensitively; a term that names no
 * tool is a word searched case-insensitively in names and descriptions. Named and pattern
 * matches come first, in the order of the terms; then the tools the words found, those with
 * more of the words first, ties in the tools' order. Each tool appears once.
 */
export function matchTools(tools: readonly ToolSpec[], terms: readonly string[]): DescribeMatch {
  const named = new Set<ToolSpec>();
  const unmatched: string[] = [];
  const words: string[] = [];
  for (const term of terms) {
    const hits = /[*?]/.test(term) ? byPattern(tools, term) : byName(tools, term);
    if (hits === undefined) words.push(term.toLowerCase());
    else if (hits.length === 0) unmatched.push(term);
    for (const tool of hits ?? []) named.add(tool);
  }
  const scored = tools
    .map((tool, index) => ({ tool, index, score: words.filter((word) => searchText(tool).includes(word)).length }))
    .filter((entry) => entry.score > 0 && !named.has(entry.tool))
    .sort((a, b) => b.score - a.score || a.index - b.index);
  unmatched.push(...words.filter((word) => !tools.some((tool) => searchText(tool).includes(word))));
  return { tools: [...named, ...scored.map((entry) => entry.tool)], unmatched };
}

/** Tools whose name the pattern matches, case-insensitive. */
function byPattern(tools: readonly ToolSpec[], pattern: string): ToolSpec[] {
  const matches = wildcardMatcher(pattern, { ignoreCase: true });
  return tools.filter((tool) => matches(tool.name));
}

/** The tool of that name (case-insensitive) in a list; undefined when there is none, so the term is a search word. */
function byName(tools: readonly ToolSpec[], name: string): ToolSpec[] | undefined {
  const lower = name.toLowerCase();
  const tool = tools.find((candidate) => candidate.name.toLowerCase() === lower);
  return tool ? [tool] : undefined;
}

/** What a search word is looked for in: the name and the description, lower case. */
function searchText(tool: ToolSpec): string {
  return `${tool.name}\n${tool.description}`.toLowerCase();
}

/**
 * Makes the `describe` tool over `tools` (the ones listed briefly): for the names, patterns or
 * words it is given, the full description of each matching tool (see `fullDescription`), at
 * most `DESCRIBE_LIMIT` of them, with the names of the others that matched; the terms nothing
 * matched are said. No match at all is an error result that names some of the tools.
 */
export function createDescribeTool(tools: readonly ToolSpec[]) {
  const first = tools[0]?.name ?? 'tool_name';
  return defineTool({
    name: DESCRIBE_TOOL,
    description: 'Give the full description of tools listed by name only: parameters, result and an example call.',
    instructions: [
      `\`tools\` holds tool names, patterns with * (such as ${patternFor(first)}) or words to look for in the tools' names and descriptions, separated by spaces, commas or line breaks.`,
      `You get each matching tool's TypeScript declaration, how to call it and an example, at most ${DESCRIBE_LIMIT} tools a call. Describe a tool before its first use.`,
    ].join('\n'),
    example: { tools: first },
    blockTypes: [DESCRIBE_TOOL],
    parameters: z.object({
      tools: z
        .union([z.string(), z.array(z.string())])
        .describe(`Tool names, patterns such as ${patternFor(first)} or words to search for, separated by spaces, commas or line breaks`),
    }),
    block: { args: ['tools'], content: 'tools' },
    callers: ['direct'],
    mutating: false,
    async execute(input) {
      const terms = describeTerms(input.tools);
      if (terms.length === 0) {
        return { output: `Name the tools to describe: names, patterns such as ${patternFor(first)}, or words to search for.`, isError: true };
      }
      const match = matchTools(tools, terms);
      if (match.tools.length === 0) return { output: noMatch(tools, terms), isError: true, details: { matched: 0, shown: 0, unmatched: match.unmatched } };
      const shown = match.tools.slice(0, DESCRIBE_LIMIT);
      const parts = shown.map(fullDescription);
      const left = match.tools.slice(DESCRIBE_LIMIT);
      if (left.length > 0) parts.push(leftOutNote(left));
      if (match.unmatched.length > 0) parts.push(`No tool matches ${match.unmatched.map((term) => JSON.stringify(term)).join(', ')}.`);
      const details = { matched: match.tools.length, shown: shown.length, unmatched: match.unmatched };
      return { output: parts.join('\n\n'), value: shown.map((tool) => tool.name), details };
    },
  });
}

/** A pattern over the tools of the same prefix as `name` (`finance_*` for `finance_get_members`). */
function patternFor(name: string): string {
  const cut = name.indexOf('_', 1);
  if (cut > 0) return `${name.slice(0, cut + 1)}*`;
  return name.length > 3 ? `${name.slice(0, 3)}*` : 'finance_*';
}

/** Names the tools that matched but were not shown (some of them, when they are many). */
function leftOutNote(left: readonly ToolSpec[]): string {
  const names = left.slice(0, LEFT_OUT_NAMES).map((tool) => tool.name);
  const more = left.length > names.length ? `, and ${left.length - names.length} more` : '';
  return `${left.length} more tool${left.length === 1 ? '' : 's'} matched and ${left.length === 1 ? 'is' : 'are'} not shown (at most ${DESCRIBE_LIMIT} a call): ${names.join(', ')}${more}. Name them, or narrow the search.`;
}

/** The error result when no term matched: the terms and some of the tools there are. */
function noMatch(tools: readonly ToolSpec[], terms: readonly string[]): string {
  const quoted = terms.map((term) => JSON.stringify(term)).join(', ');
  if (tools.length === 0) return `No tool matches ${quoted}: there are no tools to describe.`;
  const names = tools.slice(0, SUGGESTED_NAMES).map((tool) => tool.name);
  const more = tools.length > names.length ? `, … (${tools.length} in all)` : '';
  return `No tool matches ${quoted}. Some of the tools: ${names.join(', ')}${more}. Give a name, a pattern such as ${patternFor(names[0] ?? '')} or a word of a tool's description.`;
}
