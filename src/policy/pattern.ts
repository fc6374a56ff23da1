import picomatch from 'picomatch';

/** Tests one text against a compiled pattern. */
export type Matcher = (text: string) => boolean;

/**
 * A path glob (picomatch): `*` within one segment, `**` across segments, `{a,b}`, `[ab]`;
 * `dot: true`, so `secrets/**` covers `secrets/.env` and `secrets` itself. Used for the
 * `tool` and `principal` fields of a rule, whose values never contain `/`.
 */
export function globMatcher(pattern: string): Matcher {
  return picomatch(pattern, { dot: true });
}

/**
 * A plain wildcard pattern over free text: `*` is any run of characters (spaces, `/` and line
 * breaks included), `?` is one character, everything else is literal. The whole text must
 * match. Case-insensitive when asked (intents are prose).
 */
export function wildcardMatcher(pattern: string, options: { ignoreCase?: boolean } = {}): Matcher {
  const source = [...pattern]
    .map((char) => (char === '*' ? '[\\s\\S]*' : char === '?' ? '[\\s\\S]' : char.replace(/[\\^$.|+()[\]{}]/g, '\\$&')))
    .join('');
  const regex = new RegExp(`^${source}$`, options.ignoreCase ? 'i' : '');
  return (text) => regex.test(text);
}

/**
 * The `resource` field of a rule. A resource is a workspace-relative path for file tools, but
 * the command line for `shell` and the JSON arguments for user tools, where a path glob's `*`
 * would stop at the first `/` (`rm *` would miss `rm -rf /tmp/x`) and picomatch would treat
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
