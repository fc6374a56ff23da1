/**
 * Glob and wildcard matching in time linear in the text (for a given pattern): the text is
 * read once while the set of pattern positions it could be at is carried along, as a Thompson
 * automaton runs, instead of compiling to a backtracking regular expression. A policy pattern
 * meets text the model wrote — a 20 KB command line against a four-star pattern took picomatch 22 s —
 * so no pattern may be able to make matching slow.
 */

/** One step of a pattern: a character to match, any one character, a class, or a star. */
type Token =
  | { kind: 'char'; char: string }
  | { kind: 'one' }
  | { kind: 'class'; negated: boolean; test: (char: string) => boolean }
  /** `*`: any run of characters, but `/` when `crossesSlash` is false (a glob's `*`). */
  | { kind: 'star'; crossesSlash: boolean };

/** How many alternatives braces and `**` may expand one pattern into; past it, the pattern is refused. */
const MAX_ALTERNATIVES = 256;

/**
 * A path glob, as the policy's `tool`, `principal` and path resources use it: `*` any run within
 * one segment (dot files included), `**` any run across segments, where `a/**` also matches `a`
 * and `a/**\/b` also `a/b`; `?` one character but `/`; `[abc]`, `[a-z]`, `[!a]`; `{a,b}`
 * alternatives (nested too). Anything else is literal. Throws on a pattern with more
 * alternatives than `MAX_ALTERNATIVES`.
 */
export function linearGlob(pattern: string): (text: string) => boolean {
  const programs = expandBraces(pattern).flatMap(expandGlobstars).map((alternative) => globTokens(alternative));
  if (programs.length > MAX_ALTERNATIVES) throw new Error(`the pattern ${JSON.stringify(pattern)} has more than ${MAX_ALTERNATIVES} alternatives`);
  return (text) => programs.some((tokens) => run(tokens, text, false));
}

/** A wildcard pattern over free text: `*` any run (line breaks and `/` included), `?` one character, the rest literal. */
export function linearWildcard(pattern: string, options: { ignoreCase?: boolean } = {}): (text: string) => boolean {
  const fold = options.ignoreCase === true;
  const tokens: Token[] = [...(fold ? pattern.toLowerCase() : pattern)].map((char) =>
    char === '*' ? { kind: 'star', crossesSlash: true } : char === '?' ? { kind: 'one' } : { kind: 'char', char },
  );
  return (text) => run(tokens, fold ? text.toLowerCase() : text, true);
}

/**
 * Whether `tokens` match the whole of `text`. The states are the token positions the text read
 * so far could have reached; each character moves every state at once.
 */
function run(tokens: readonly Token[], text: string, oneCrossesSlash: boolean): boolean {
  const size = tokens.length;
  let current = new Uint8Array(size + 1);
  let next = new Uint8Array(size + 1);
  const close = (states: Uint8Array) => {
    // A star may match nothing: a state before one reaches past it.
    for (let i = 0; i < size; i++) if (states[i] && tokens[i]?.kind === 'star') states[i + 1] = 1;
  };
  current[0] = 1;
  close(current);
  for (const char of text) {
    next.fill(0);
    let alive = false;
    for (let i = 0; i < size; i++) {
      if (!current[i]) continue;
      const token = tokens[i] as Token;
      if (token.kind === 'star') {
        if (token.crossesSlash || char !== '/') {
          next[i] = 1;
          alive = true;
        }
      } else if (matchesOne(token, char, oneCrossesSlash)) {
        next[i + 1] = 1;
        alive = true;
      }
    }
    if (!alive) return false;
    close(next);
    [current, next] = [next, current];
  }
  return current[size] === 1;
}

function matchesOne(token: Exclude<Token, { kind: 'star' }>, char: string, oneCrossesSlash: boolean): boolean {
  if (token.kind === 'char') return token.char === char;
  if (token.kind === 'one') return oneCrossesSlash || char !== '/';
  return char !== '/' && token.test(char) !== token.negated;
}

/** The tokens of a glob without braces. */
function globTokens(pattern: string): Token[] {
  const tokens: Token[] = [];
  const chars = [...pattern];
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i] as string;
    if (char === '*') {
      const double = chars[i + 1] === '*';
      if (double) while (chars[i + 1] === '*') i++;
      // Consecutive stars are one star.
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star', crossesSlash: double });
      else if (double) tokens[tokens.length - 1] = { kind: 'star', crossesSlash: true };
    } else if (char === '?') tokens.push({ kind: 'one' });
    else if (char === '[') {
      const end = chars.indexOf(']', i + 2);
      if (end === -1) {
        tokens.push({ kind: 'char', char });
        continue;
      }
      const body = chars.slice(i + 1, end);
      const negated = body[0] === '!' || body[0] === '^';
      tokens.push({ kind: 'class', negated, test: classTest(negated ? body.slice(1) : body) });
      i = end;
    } else if (char === '\\' && i + 1 < chars.length) tokens.push({ kind: 'char', char: chars[++i] as string });
    else tokens.push({ kind: 'char', char });
  }
  return tokens;
}

function classTest(body: readonly string[]): (char: string) => boolean {
  const singles = new Set<string>();
  const ranges: [number, number][] = [];
  for (let i = 0; i < body.length; i++) {
    const char = body[i] as string;
    const to = body[i + 2];
    if (body[i + 1] === '-' && to !== undefined) {
      ranges.push([char.codePointAt(0) ?? 0, to.codePointAt(0) ?? 0]);
      i += 2;
    } else singles.add(char);
  }
  return (char) => {
    if (singles.has(char)) return true;
    const code = char.codePointAt(0) ?? 0;
    return ranges.some(([from, to]) => code >= from && code <= to);
  };
}

/** `a/**` also as `a`, `a/**\/b` also as `a/b`, `**\/b` also as `b`: a globstar segment may be no segment. */
function expandGlobstars(pattern: string): string[] {
  let alternatives = [pattern];
  for (const [from, to] of [
    ['/**/', '/'],
    ['/**', ''],
    ['**/', ''],
  ] as const) {
    alternatives = alternatives.flatMap((alternative) => {
      if (from === '/**' && !alternative.endsWith('/**')) return [alternative];
      if (from === '**/' && !alternative.startsWith('**/')) return [alternative];
      if (from === '/**/' && !alternative.includes('/**/')) return [alternative];
      const without = from === '/**' ? alternative.slice(0, -3) : from === '**/' ? alternative.slice(3) : alternative.replace('/**/', to);
      return [alternative, without];
    });
    if (alternatives.length > MAX_ALTERNATIVES) break;
  }
  return alternatives;
}

/** `{a,b}c` as `ac` and `bc`, nested braces too; a brace with no comma is literal. */
function expandBraces(pattern: string): string[] {
  const open = pattern.indexOf('{');
  if (open === -1) return [pattern];
  let depth = 0;
  const commas: number[] = [];
  for (let i = open; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '{') depth++;
    else if (char === '}') {
      depth--;
      if (depth === 0) {
        if (commas.length === 0) return expandBraces(pattern.slice(i + 1)).map((rest) => pattern.slice(0, i + 1) + rest);
        const bounds = [open, ...commas, i];
        const head = pattern.slice(0, open);
        const tails = expandBraces(pattern.slice(i + 1));
        const options = bounds.slice(0, -1).flatMap((start, k) => expandBraces(pattern.slice(start + 1, bounds[k + 1])));
        const all: string[] = [];
        for (const option of options) for (const tail of tails) if (all.length <= MAX_ALTERNATIVES) all.push(head + option + tail);
        return all;
      }
    } else if (char === ',' && depth === 1) commas.push(i);
  }
  return [pattern];
}
