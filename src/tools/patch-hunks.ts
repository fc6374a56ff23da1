import { plural, splitLines, dominantLineEnding, type TextLine } from './text-file';

/** One way to split a hunk's body into the lines to find and the lines to put in their place. */
export interface HunkReading {
  original: readonly string[];
  updated: readonly string[];
}

/**
 * One `<<<<<<< ORIGINAL … ======= … >>>>>>> UPDATED` block of a patch. A body with one
 * `=======` line has one reading; a body with several (because ORIGINAL or UPDATED itself
 * holds a line `=======`) has one reading per such line, in order, and the file decides
 * which one is meant (see `applyPatch`).
 */
export interface Hunk {
  /** 1-based position in the patch, for messages. */
  number: number;
  readings: readonly HunkReading[];
}

/** Lines of the old and the new text that one hunk replaced, numbered as in a unified diff. */
export interface LineChange {
  hunk: number;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
}

export type ParsedPatch = { ok: true; hunks: Hunk[] } | { ok: false; error: string };
export type AppliedPatch = { ok: true; text: string; changes: LineChange[] } | { ok: false; error: string };

/** The form a patch must take, appended to every message about a malformed patch. */
export const PATCH_FORM = [
  'Expected one or more hunks of this form:',
  '<<<<<<< ORIGINAL',
  'lines exactly as they are in the file',
  '=======',
  'the lines to put in their place',
  '>>>>>>> UPDATED',
].join('\n');

const OPEN = /^<{7} ?(?:ORIGINAL|SEARCH)\s*$/;
const SEPARATOR = /^={7}\s*$/;
const CLOSE = /^>{7} ?(?:UPDATED|REPLACE)\s*$/;

/**
 * Parses patch text into hunks. Blank lines between hunks are ignored; any other text outside
 * a hunk, a hunk without `=======`, an unclosed hunk or a patch without hunks is an error whose
 * message shows the expected form. `SEARCH`/`REPLACE` are accepted in place of
 * `ORIGINAL`/`UPDATED`. A hunk cannot hold a line that is exactly an opening or closing marker.
 * Pure: never touches the file system.
 */
export function parsePatch(patch: string): ParsedPatch {
  const lines = patch.split(/\r?\n/);
  const hunks: Hunk[] = [];
  let body: string[] | undefined;
  let openedAt = 0;
  for (const [index, line] of lines.entries()) {
    const lineNumber = index + 1;
    if (body === undefined) {
      if (OPEN.test(line)) {
        body = [];
        openedAt = lineNumber;
      } else if (line.trim() !== '') {
        return malformed(`line ${lineNumber} ("${excerpt(line)}") is outside any hunk`);
      }
      continue;
    }
    const number = hunks.length + 1;
    if (OPEN.test(line)) {
      return malformed(`hunk ${number} (opened at line ${openedAt}) is not closed before line ${lineNumber} opens another`);
    }
    if (!CLOSE.test(line)) {
      body.push(line);
      continue;
    }
    const readings = readingsOf(body);
    if (readings.length === 0) return malformed(`hunk ${number} (opened at line ${openedAt}) has no ======= line`);
    hunks.push({ number, readings });
    body = undefined;
  }
  if (body !== undefined) {
    return malformed(`hunk ${hunks.length + 1} (opened at line ${openedAt}) is not closed: >>>>>>> UPDATED is missing`);
  }
  if (hunks.length === 0) return malformed('the patch has no hunks');
  return { ok: true, hunks };
}

/**
 * Applies hunks to `text`, all or nothing. Every hunk's ORIGINAL must match whole lines of
 * the text exactly once (line breaks aside), and hunks must not overlap; all are checked
 * against the original text before any is applied. A hunk with several readings is split at
 * the last `=======` line whose ORIGINAL matches exactly once: the longest ORIGINAL that the
 * text confirms. An empty ORIGINAL is accepted only as the sole hunk of an empty text, whose
 * content it then becomes. Lines that no hunk touches keep
 * their exact bytes and line breaks; new lines take the text's dominant line break; whether
 * the text ends with a line break is kept (an empty text gets one). `name` is used in messages.
 * Pure: never touches the file system.
 */
export function applyPatch(text: string, hunks: readonly Hunk[], name: string): AppliedPatch {
  const lines = splitLines(text);
  const texts = lines.map((line) => line.text);
  const placements: Placement[] = [];
  for (const hunk of hunks) {
    const placed = placeHunk(texts, hunk, name, hunks.length);
    if (typeof placed === 'string') return { ok: false, error: placed };
    placements.push(placed);
  }
  placements.sort((a, b) => a.start - b.start);
  for (const [index, placement] of placements.entries()) {
    const previous = placements[index - 1];
    if (previous !== undefined && placement.start < previous.start + previous.reading.original.length) {
      const [first, second] = [previous.hunk, placement.hunk].sort((a, b) => a - b);
      return { ok: false, error: `hunks ${first} and ${second} overlap in ${name}; merge them into one hunk` };
    }
  }
  return { ok: true, ...rebuild(text, lines, placements) };
}

interface Placement {
  hunk: number;
  start: number;
  reading: HunkReading;
}

function placeHunk(texts: readonly string[], hunk: Hunk, name: string, hunkCount: number): Placement | string {
  const label = hunkLabel(hunk);
  const empty = hunk.readings.find((reading) => reading.original.length === 0);
  if (empty !== undefined && texts.length === 0) {
    if (hunkCount > 1) return `${label} has an empty ORIGINAL, which must be the only hunk of the patch`;
    return { hunk: hunk.number, start: 0, reading: empty };
  }
  const candidates = hunk.readings
    .filter((reading) => reading.original.length > 0)
    .map((reading) => ({ reading, starts: findAll(texts, reading.original, exact) }));
  if (candidates.length === 0) {
    return `${label} has an empty ORIGINAL, which only works on an empty or missing file; ${name} has ${plural(texts.length, 'line')}. Put the lines next to the change in ORIGINAL and repeat them in UPDATED`;
  }
  const longest = candidates.filter((candidate) => candidate.starts.length === 1).pop();
  if (longest !== undefined) return { hunk: hunk.number, start: longest.starts[0] ?? 0, reading: longest.reading };
  const [single] = candidates;
  if (single === undefined || candidates.length > 1) {
    return `${label} not found in ${name} (its body has ${hunk.readings.length} ======= lines, read in every way)`;
  }
  if (single.starts.length > 1) {
    return `${label} matches ${single.starts.length} places in ${name} (${lineList(single.starts)}); include more surrounding lines so it matches once`;
  }
  return `${label} not found in ${name}${notFoundHint(texts, single.reading.original, name)}`;
}

function notFoundHint(texts: readonly string[], original: readonly string[], name: string): string {
  if (texts.length === 0) return `; ${name} is empty (a single hunk with an empty ORIGINAL fills it)`;
  const trailing = findAll(texts, original, (a, b) => a.trimEnd() === b.trimEnd());
  if (trailing.length > 0) {
    return `; it matches at ${lineList(trailing)} if trailing whitespace is ignored: copy the lines exactly as they are in the file`;
  }
  const indented = findAll(texts, original, (a, b) => a.trim() === b.trim());
  if (indented.length > 0) {
    return `; it matches at ${lineList(indented)} if indentation is ignored: copy the indentation exactly`;
  }
  const firstLine = original.find((line) => line.trim() !== '');
  const starts = firstLine === undefined ? [] : findAll(texts, [firstLine], exact);
  if (starts.length > 0) {
    return `; its line "${excerpt(firstLine ?? '')}" is at ${lineList(starts)} but the lines around it differ; read the file and copy them exactly`;
  }
  return '; read the file and copy the lines exactly';
}

function rebuild(text: string, lines: readonly TextLine[], placements: readonly Placement[]): { text: string; changes: LineChange[] } {
  const eol = dominantLineEnding(text);
  const endsWithBreak = lines.length === 0 || lines[lines.length - 1]?.eol !== '';
  const result: TextLine[] = [];
  const changes: LineChange[] = [];
  let cursor = 0;
  for (const { hunk, start, reading } of placements) {
    result.push(...lines.slice(cursor, start));
    const newStart = result.length;
    result.push(...reading.updated.map((line): TextLine => ({ text: line, eol })));
    changes.push({
      hunk,
      oldStart: reading.original.length === 0 ? start : start + 1,
      oldLines: reading.original.length,
      newStart: reading.updated.length === 0 ? newStart : newStart + 1,
      newLines: reading.updated.length,
    });
    cursor = start + reading.original.length;
  }
  result.push(...lines.slice(cursor));
  const last = result[result.length - 1];
  if (last !== undefined) result[result.length - 1] = { text: last.text, eol: endsWithBreak ? last.eol || eol : '' };
  return { text: result.map((line) => line.text + line.eol).join(''), changes };
}

/** `hunk 2 ("def foo():")`: the hunk's number and the first non-blank line of its ORIGINAL. */
function hunkLabel(hunk: Hunk): string {
  const line = hunk.readings.flatMap((reading) => reading.original).find((candidate) => candidate.trim() !== '');
  return line === undefined ? `hunk ${hunk.number}` : `hunk ${hunk.number} ("${excerpt(line)}")`;
}

function readingsOf(body: readonly string[]): HunkReading[] {
  const readings: HunkReading[] = [];
  for (const [index, line] of body.entries()) {
    if (SEPARATOR.test(line)) readings.push({ original: body.slice(0, index), updated: body.slice(index + 1) });
  }
  return readings;
}

function exact(a: string, b: string): boolean {
  return a === b;
}

/** Indexes where `needle` occurs as consecutive lines of `haystack`, comparing with `same`. */
function findAll(haystack: readonly string[], needle: readonly string[], same: (a: string, b: string) => boolean): number[] {
  const starts: number[] = [];
  for (let start = 0; start + needle.length <= haystack.length; start += 1) {
    if (needle.every((line, offset) => same(haystack[start + offset] ?? '', line))) starts.push(start);
  }
  return starts;
}

function lineList(starts: readonly number[]): string {
  const numbers = starts.slice(0, 5).map((start) => start + 1);
  const more = starts.length > 5 ? ', …' : '';
  return `${numbers.length === 1 ? 'line' : 'lines'} ${numbers.join(', ')}${more}`;
}

function excerpt(line: string): string {
  const trimmed = line.trim();
  return trimmed.length > 60 ? `${trimmed.slice(0, 57)}…` : trimmed;
}

function malformed(problem: string): ParsedPatch {
  return { ok: false, error: `Malformed patch: ${problem}.\n${PATCH_FORM}` };
}
