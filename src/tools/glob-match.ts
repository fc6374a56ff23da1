import { ToolInputError } from './tool-error';

/**
 * The glob patterns the model writes (`glob`'s), matched in time linear in the path: a
 * pattern such as `*a*a*a*a*a*a*b` made picomatch's backtracking regular expression run for
 * seconds on a 40-character file name, and an extglob such as `+(a|aa)b` doubles its time
 * with every character. The pattern is read once into a small automaton, and a path is read
 * once while the set of places in the pattern it could be at is carried along.
 *
 * What it understands is what `glob` promises, as picomatch reads it with `dot: false`: `*`
 * any run within a folder name, `**` as a whole segment any number of folders, `?` one
 * character, `[abc]`, `[a-z]`, `[!a]`, `{a,b}` alternatives (nested too), `\` to escape the
 * next character. No wildcard matches a `.` that starts a name: hidden entries match only
 * where the pattern spells the dot. Extglobs (`+(a|b)`) are refused.
 */

/** How many alternatives braces may expand one pattern into. */
export const GLOB_MAX_ALTERNATIVES = 256;

/** How many pattern steps all the alternatives together may hold (each costs a little per character of a path). */
const MAX_STEPS = 4096;

type Step =
  /** One character; `first` when it starts a segment of the pattern (only then may it match a name's leading dot). */
  | { kind: 'char'; char: string; first: boolean }
  | { kind: 'one' }
  | { kind: 'class'; test: (char: string) => boolean }
  /** `*`: any run within one name. */
  | { kind: 'star' }
  /** `**\/`: any number of whole folders, each with its `/`. */
  | { kind: 'folders' }
  /** A last `**`: the rest of the path. */
  | { kind: 'rest' };

/** A compiled glob: `matches` tests a `/`-separated relative path; `walk` are coarse patterns for the walk. */
export interface GlobMatcher {
  matches(path: string): boolean;
  /**
   * Patterns whose union holds every path `matches` accepts, simple enough for any matcher
   * to run fast (one wildcard per segment, nothing after a `**`): what tinyglobby walks with,
   * before `matches` decides.
   */
  walk: string[];
  /**
   * Whether the walk must enter hidden folders too: a segment after a `**` spells a leading
   * dot (`**\/.cache/*`), which the coarse `**` cannot.
   */
  dot: boolean;
}

/**
 * Compiles `pattern` (relative, `/`-separated, as `normaliseGlobPattern` gives it). Throws
 * `ToolInputError` for an extglob and for a pattern whose braces expand into more than
 * `GLOB_MAX_ALTERNATIVES` alternatives. `escape` writes a literal folder name for the walk
 * patterns (tinyglobby's `escapePath`).
 */
export function compileGlob(pattern: string, escape: (name: string) => string): GlobMatcher {
  if (/(^|[^\\])[*?+@!]\(/.test(pattern)) {
    throw new ToolInputError(`Extglobs such as +(a|b) are not supported in ${pattern}: write alternatives with braces, e.g. *.{ts,tsx}`);
  }
  const alternatives = expandBraces(pattern).flatMap((alternative) => (alternative.endsWith('/**') ? [alternative, alternative.slice(0, -3)] : [alternative]));
  const programs = alternatives.map(steps);
  if (programs.reduce((sum, program) => sum + program.length, 0) > MAX_STEPS) {
    throw new ToolInputError(`The pattern ${pattern} is too large: write a shorter one, or several`);
  }
  return {
    matches: (path) => programs.some((program) => run(program, path)),
    walk: [...new Set(alternatives.map((alternative) => walkPattern(alternative, escape)))],
    dot: alternatives.some(namesHiddenBelowFolders),
  };
}

/** Expands `{a,b}` alternatives, innermost last; braces without a top-level comma stay literal. */
function expandBraces(pattern: string): string[] {
  let done: string[] = [];
  let pending = [pattern];
  while (pending.length > 0) {
    const next: string[] = [];
    for (const text of pending) {
      const group = firstGroup(text);
      if (group === undefined) done.push(text);
      else for (const choice of group.choices) next.push(text.slice(0, group.start) + choice + text.slice(group.end + 1));
    }
    if (done.length + next.length > GLOB_MAX_ALTERNATIVES) {
      throw new ToolInputError(`The braces of ${pattern} make more than ${GLOB_MAX_ALTERNATIVES} alternatives: write fewer`);
    }
    pending = next;
  }
  done = [...new Set(done)];
  return done;
}

/** The first `{…}` with a comma at its own level: where it starts and ends, and its choices. */
function firstGroup(text: string): { start: number; end: number; choices: string[] } | undefined {
  for (let start = 0; start < text.length; start++) {
    if (text[start] === '\\') start++;
    else if (text[start] === '{') {
      let depth = 0;
      const cuts: number[] = [];
      for (let at = start; at < text.length; at++) {
        const char = text[at];
        if (char === '\\') at++;
        else if (char === '{') depth++;
        else if (char === ',' && depth === 1) cuts.push(at);
        else if (char === '}' && --depth === 0) {
          if (cuts.length === 0) break;
          const bounds = [start, ...cuts, at];
          return { start, end: at, choices: bounds.slice(1).map((bound, index) => text.slice((bounds[index] ?? 0) + 1, bound)) };
        }
      }
    }
  }
  return undefined;
}

/** The steps of one brace-free alternative. */
function steps(alternative: string): Step[] {
  const segments = alternative.split('/');
  const program: Step[] = [];
  segments.forEach((segment, index) => {
    const last = index === segments.length - 1;
    if (segment === '**') {
      program.push(last ? { kind: 'rest' } : { kind: 'folders' });
      return;
    }
    let first = true;
    for (let at = 0; at < segment.length; at++) {
      const char = segment[at] ?? '';
      if (char === '*') {
        if (program.at(-1)?.kind !== 'star') program.push({ kind: 'star' });
      } else if (char === '?') program.push({ kind: 'one' });
      else if (char === '[' && segment.indexOf(']', at + 2) !== -1) {
        const end = segment.indexOf(']', at + 2);
        program.push({ kind: 'class', test: classTest(segment.slice(at + 1, end)) });
        at = end;
      } else {
        const literal = char === '\\' && at + 1 < segment.length ? segment[++at] ?? '' : char;
        program.push({ kind: 'char', char: literal, first });
      }
      first = false;
    }
    if (!last) program.push({ kind: 'char', char: '/', first: false });
  });
  return program;
}

/** The test of a bracket expression's body: `abc`, `a-z`, `!a` or `^a` (negated). */
function classTest(body: string): (char: string) => boolean {
  const negated = body.startsWith('!') || body.startsWith('^');
  const chars = [...(negated ? body.slice(1) : body)];
  const ranges: [string, string][] = [];
  for (let at = 0; at < chars.length; at++) {
    const low = chars[at] ?? '';
    if (chars[at + 1] === '-' && at + 2 < chars.length) {
      ranges.push([low, chars[at + 2] ?? '']);
      at += 2;
    } else ranges.push([low, low]);
  }
  return (char) => ranges.some(([low, high]) => char >= low && char <= high) !== negated;
}

/**
 * Whether `program` matches the whole of `path`. The states are the steps the path read so far
 * could have reached; each character moves all of them at once.
 */
function run(program: readonly Step[], path: string): boolean {
  const size = program.length;
  let current = new Uint8Array(size + 1);
  let next = new Uint8Array(size + 1);
  current[0] = 1;
  close(program, current, path, 0);
  for (let at = 0; at < path.length; at++) {
    const char = path[at] ?? '';
    const nameStart = at === 0 || path[at - 1] === '/';
    // No wildcard takes the dot that starts a name; only a literal dot that starts a segment of the pattern does.
    const hidden = nameStart && char === '.';
    next.fill(0);
    let any = false;
    for (let state = 0; state < size; state++) {
      if (current[state] !== 1) continue;
      const step = program[state];
      if (step === undefined) continue;
      let to = -1;
      if (step.kind === 'char') to = step.char === char && (!hidden || step.first) ? state + 1 : -1;
      else if (hidden) to = -1;
      else if (step.kind === 'one') to = char === '/' ? -1 : state + 1;
      else if (step.kind === 'class') to = char !== '/' && step.test(char) ? state + 1 : -1;
      else if (step.kind === 'star') to = char === '/' ? -1 : state;
      else to = state;
      if (to >= 0) {
        next[to] = 1;
        any = true;
      }
    }
    if (!any) return false;
    [current, next] = [next, current];
    close(program, current, path, at + 1);
  }
  return current[size] === 1;
}

/** Adds the states reached without reading a character at `at`: past a star, past the folders (at a name's start only), past the rest. */
function close(program: readonly Step[], states: Uint8Array, path: string, at: number): void {
  const nameStart = at === 0 || path[at - 1] === '/';
  for (let state = 0; state < program.length; state++) {
    if (states[state] !== 1) continue;
    const kind = program[state]?.kind;
    if (kind === 'star' || kind === 'rest' || (kind === 'folders' && nameStart)) states[state + 1] = 1;
  }
}

/** Whether a segment after the first `**` of `alternative` starts with a dot. */
function namesHiddenBelowFolders(alternative: string): boolean {
  const segments = alternative.split('/');
  const folders = segments.indexOf('**');
  return folders !== -1 && segments.slice(folders + 1).some((segment) => segment.startsWith('.') || segment.startsWith('\\.'));
}

/** The coarse walk pattern of one alternative (see `GlobMatcher.walk`). */
function walkPattern(alternative: string, escape: (name: string) => string): string {
  const walk: string[] = [];
  for (const segment of alternative.split('/')) {
    if (segment === '**') {
      walk.push('**');
      break;
    }
    if (!/[*?[\\]/.test(segment)) walk.push(escape(segment));
    else walk.push(segment.startsWith('.') || segment.startsWith('\\.') ? '.*' : '*');
  }
  return walk.join('/');
}
