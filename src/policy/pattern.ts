import { linearGlob, linearWildcard } from './linear-glob';

/** Tests one text against a compiled pattern. */
export type Matcher = (text: string) => boolean;

/**
 * A path glob: `*` within one segment, `**` across segments, `{a,b}`, `[ab]`; dot files
 * included, so `secrets/**` covers `secrets/.env` and `secrets` itself. Used for the `tool` and
 * `principal` fields of a rule, whose values never contain `/`, and for resources. Linear in
 * the text (see `linearGlob`): a rule meets text the model wrote.
 */
export function globMatcher(pattern: string): Matcher {
  return linearGlob(pattern);
}

/**
 * A plain wildcard pattern over free text: `*` is any run of characters (spaces, `/` and line
 * breaks included), `?` is one character, everything else is literal. The whole text must
 * match. Case-insensitive when asked (intents are prose).
 */
export function wildcardMatcher(pattern: string, options: { ignoreCase?: boolean } = {}): Matcher {
  return linearWildcard(pattern, options);
}

/**
 * The `resource` field of a rule. A resource is a workspace-relative path for file tools, but
 * the command line for `shell` and the JSON arguments for user tools, where a path glob's `*`
 * would stop at the first `/` (`rm *` would miss `rm -rf /tmp/x`) and a glob would treat
 * quotes and braces specially. So a resource pattern matches when it matches either as a path
 * glob or as a plain wildcard pattern. For paths this errs towards matching: `secrets/*` also
 * covers `secrets/a/b.txt`, which is what a deny rule wants.
 */
export function resourceMatcher(pattern: string): Matcher {
  const asGlob = globMatcher(pattern);
  const asText = wildcardMatcher(pattern);
  return (text) => asGlob(text) || asText(text);
}

/** The `intent` field of a rule: a case-insensitive wildcard pattern (see `wildcardMatcher`). */
export function intentMatcher(pattern: string): Matcher {
  return wildcardMatcher(pattern, { ignoreCase: true });
}
