import { globMatcher, intentMatcher, resourceMatcher, type Matcher } from './pattern';
import { workspaceResource } from './workspace-resource';

export { workspaceResource } from './workspace-resource';

/** What a matching rule does with a call. */
export type PolicyAction = 'allow' | 'deny' | 'ask';

/**
 * One admission rule. Every field but `action` and `reason` is a pattern; an omitted field
 * matches anything.
 *
 * - `tool`, `principal`: path globs (`globMatcher`, dot files included): `program:*`, `*`.
 * - `resource`: matches as a path glob (`secrets/**`, `*.env`, `{a,b}/*`) or as a plain wildcard
 *   pattern whose `*` is any text, `/` and spaces included (`rm *`, `*"id":"e1"*`); see
 *   `resourceMatcher`. A rule with `resource` never matches a call without one.
 * - `intent`: a plain wildcard pattern over the caller's stated intent, case-insensitive, whose
 *   `*` is any text. A call without an intent is matched as if its intent were empty, so
 *   `intent = "*"` matches every call and `intent = "*delete*"` none without an intent.
 */
export interface PolicyRule {
  tool: string;
  resource?: string;
  principal?: string;
  intent?: string;
  action: PolicyAction;
  /** Told to the caller when the rule denies or asks. */
  reason?: string;
}

/** One tool call to admit. */
export interface AdmissionRequest {
  /** `model`, `program:<sha256-prefix>` or `python`. */
  principal: string;
  tool: string;
  /** What the call touches, as the tool's `resource()` gives it (paths via `workspaceResource`). */
  resource?: string;
  /** The caller's stated purpose (a program's `// intent:` line). */
  intent?: string;
}

/** The answer to one request. `rule` is the index of the rule that decided, absent when none matched. */
export type Decision =
  | { action: 'allow'; rule?: number }
  | { action: 'deny'; reason: string; rule?: number }
  | { action: 'ask'; reason: string; rule?: number };

/**
 * Admits one call: the first rule that matches decides; when none matches, the call is
 * allowed (the model's own calls are allowed, since confirmation is the chat's job, and
 * programs may call the tools they were made eligible for). A deny or ask carries the rule's
 * `reason`, else one naming the rule (1-based, as people count) and its patterns.
 * Pure: never throws, never touches the file system.
 */
export function admit(request: AdmissionRequest, rules: readonly PolicyRule[]): Decision {
  const index = rules.findIndex((rule) => compileRule(rule)(request));
  const rule = rules[index];
  if (!rule) return { action: 'allow' };
  return decide(rule, index);
}

/**
 * For tools that touch many files (`glob`, `grep`): a test of whether `principal` may use
 * `tool` on one path, to leave out those it may not. The path is first made a resource with
 * `workspaceResource`, so symlinks and `..` cannot smuggle a file past a rule. `ask` counts
 * as not allowed: nobody is asked about each file of a listing. Rules are compiled once per
 * guard, so a guard may be called for every file of a large listing.
 */
export function pathGuard(
  workspace: string,
  rules: readonly PolicyRule[],
  principal: string,
  intent: string | undefined,
  tool: string,
): (resource: string) => boolean {
  const compiled = rules.map(compileRule);
  return (path) => {
    const request: AdmissionRequest = { principal, tool, resource: workspaceResource(workspace, path), intent };
    const index = compiled.findIndex((matches) => matches(request));
    return index < 0 || rules[index]?.action === 'allow';
  };
}

/** A readable name for a rule in generated reasons: `policy rule 2 (tool "read", resource "secrets/**")`. */
export function describeRule(rule: PolicyRule, index: number): string {
  const fields = (['tool', 'resource', 'principal', 'intent'] as const)
    .filter((key) => rule[key] !== undefined)
    .map((key) => `${key} ${JSON.stringify(rule[key])}`);
  return `policy rule ${index + 1} (${fields.join(', ')})`;
}

function decide(rule: PolicyRule, index: number): Decision {
  if (rule.action === 'allow') return { action: 'allow', rule: index };
  if (rule.action === 'deny') return { action: 'deny', reason: rule.reason ?? `denied by ${describeRule(rule, index)}`, rule: index };
  return { action: 'ask', reason: rule.reason ?? `confirmation required by ${describeRule(rule, index)}`, rule: index };
}

function compileRule(rule: PolicyRule): (request: AdmissionRequest) => boolean {
  const tool = globMatcher(rule.tool);
  const principal = optional(rule.principal, globMatcher);
  const resource = optional(rule.resource, resourceMatcher);
  const intent = optional(rule.intent, intentMatcher);
  return (request) => {
    if (!tool(request.tool)) return false;
    if (principal && !principal(request.principal)) return false;
    if (resource && (request.resource === undefined || !resource(request.resource))) return false;
    if (intent && !intent(request.intent ?? '')) return false;
    return true;
  };
}

function optional(pattern: string | undefined, make: (pattern: string) => Matcher): Matcher | undefined {
  return pattern === undefined ? undefined : make(pattern);
}
