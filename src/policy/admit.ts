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
  /**
   * The file the rule came from, set by the config loader (a file cannot set it): the user's
   * `config.toml` (`user`, also when absent) or the project's `fence.toml` (`project`).
   */
  source?: RuleSource;
}

/** Whose rule it is: the user's own, or a project's, which may restrict but never loosen the user's. */
export type RuleSource = 'user' | 'project';

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

/**
 * The answer to one request. `rule` is the index, in the rules given, of the rule that
 * decided, absent when none matched.
 */
export type Decision =
  | { action: 'allow'; rule?: number }
  | { action: 'deny'; reason: string; rule?: number }
  | { action: 'ask'; reason: string; rule?: number };

/**
 * Admits one call. The user's rules and the project's (`source`) are read apart: in each the
 * first rule that matches decides, and of the two answers the stricter wins (deny over ask
 * over allow; on a tie, the user's rule is named), so a project's rules can add restrictions
 * but never loosen the user's. A list without a match has no opinion; when neither matches,
 * the call is allowed (the model's own calls are allowed, since confirmation is the chat's
 * job, and programs may call the tools they were made eligible for). A deny or ask carries
 * the rule's `reason`, else one naming the rule (1-based within its file, as people count),
 * its file and its patterns. Pure: never throws, never touches the file system.
 */
export function admit(request: AdmissionRequest, rules: readonly PolicyRule[]): Decision {
  return decideAmong(rules, rules.map(compileRule), request);
}

/**
 * For tools that touch many files (`glob`, `grep`): a test of whether `principal` may use
 * `tool` on one path, to leave out those it may not. The path is first made a resource with
 * `workspaceResource`, so symlinks and `..` cannot smuggle a file past a rule. `ask` counts
 * as not allowed: nobody is asked about each file of a listing. The user's and the project's
 * rules combine as in `admit`. Rules are compiled once per guard, so a guard may be called
 * for every file of a large listing.
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
    return decideAmong(rules, compiled, request).action === 'allow';
  };
}

/**
 * A readable name for a rule in generated reasons, `index` counting within its file:
 * `policy rule 2 of fence.toml (tool "read", resource "secrets/**")`. A rule without a
 * `source` is named without a file.
 */
export function describeRule(rule: PolicyRule, index: number): string {
  const fields = (['tool', 'resource', 'principal', 'intent'] as const)
    .filter((key) => rule[key] !== undefined)
    .map((key) => `${key} ${JSON.stringify(rule[key])}`);
  const file = rule.source === undefined ? '' : ` ${SOURCE_NAMES[rule.source]}`;
  return `policy rule ${index + 1}${file} (${fields.join(', ')})`;
}

const SOURCE_NAMES: Record<RuleSource, string> = { user: "of the user's config.toml", project: 'of fence.toml' };

/** How strict an action is: the stricter of the user's and the project's answers wins. */
const STRICTNESS: Record<PolicyAction, number> = { allow: 0, ask: 1, deny: 2 };

/** The first match among the user's rules and among the project's, the stricter deciding (see `admit`). */
function decideAmong(rules: readonly PolicyRule[], compiled: readonly ((request: AdmissionRequest) => boolean)[], request: AdmissionRequest): Decision {
  let user = -1;
  let project = -1;
  for (let i = 0; i < rules.length && (user < 0 || project < 0); i++) {
    const fromProject = sourceOf(rules[i]) === 'project';
    if ((fromProject ? project : user) >= 0 || !compiled[i]?.(request)) continue;
    if (fromProject) project = i;
    else user = i;
  }
  const userRule = rules[user];
  const projectRule = rules[project];
  if (!userRule && !projectRule) return { action: 'allow' };
  const index = projectRule && (!userRule || STRICTNESS[projectRule.action] > STRICTNESS[userRule.action]) ? project : user;
  return decide(rules, index);
}

/** A rule's file; one without a `source` counts as the user's. */
function sourceOf(rule: PolicyRule | undefined): RuleSource {
  return rule?.source ?? 'user';
}

/** The decision of `rules[index]`, its reason naming it by its place in its own file. */
function decide(rules: readonly PolicyRule[], index: number): Decision {
  const rule = rules[index] as PolicyRule;
  const inFile = rules.slice(0, index).filter((other) => sourceOf(other) === sourceOf(rule)).length;
  if (rule.action === 'allow') return { action: 'allow', rule: index };
  if (rule.action === 'deny') return { action: 'deny', reason: rule.reason ?? `denied by ${describeRule(rule, inFile)}`, rule: index };
  return { action: 'ask', reason: rule.reason ?? `confirmation required by ${describeRule(rule, inFile)}`, rule: index };
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
