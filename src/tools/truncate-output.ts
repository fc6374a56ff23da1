/** Limits for the part of a tool's output that goes to the model. */
export interface TruncateLimits {
  /** Outputs up to this many characters are kept whole. */
  maxChars: number;
  /** Characters kept from the start of a longer output. */
  headChars: number;
  /** Characters kept from the end of a longer output (errors and summaries tend to be last). */
  tailChars: number;
}

/** The defaults: 16,000 characters whole; beyond that the first 4,000 and the last 8,000. */
export const DEFAULT_TRUNCATE_LIMITS: TruncateLimits = { maxChars: 16_000, headChars: 4_000, tailChars: 8_000 };

/** Result of `truncateOutput`: the text to show, and how much of the middle was left out. */
export interface Truncated {
  text: string;
  omittedChars: number;
  omittedLines: number;
}

/**
 * Keeps the head and tail of a long text, cut at line boundaries where one is near, with a
 * marker line in between saying how much was left out. A text within `maxChars` is returned
 * as it is. Never returns more than `headChars + tailChars` plus the marker.
 */
export function truncateOutput(text: string, limits: TruncateLimits = DEFAULT_TRUNCATE_LIMITS): Truncated {
  if (text.length <= limits.maxChars) return { text, omittedChars: 0, omittedLines: 0 };
  let headEnd = limits.headChars;
  const headBreak = text.lastIndexOf('\n', headEnd);
  if (headBreak > headEnd / 2) headEnd = headBreak + 1;
  let tailStart = text.length - limits.tailChars;
  const tailBreak = text.indexOf('\n', tailStart);
  if (tailBreak !== -1 && tailBreak < tailStart + limits.tailChars / 2) tailStart = tailBreak + 1;
  const omitted = text.slice(headEnd, tailStart);
  const omittedLines = countLines(omitted);
  const marker = `[… ${omittedLines} lines (${omitted.length} characters) left out …]\n`;
  const head = text.slice(0, headEnd);
  return {
    text: `${head}${head.endsWith('\n') ? '' : '\n'}${marker}${text.slice(tailStart)}`,
    omittedChars: omitted.length,
    omittedLines,
  };
}

function countLines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++;
  return count;
}
