import { structuredPatch } from 'diff';

/** Lines of context kept around each change. */
const CONTEXT_LINES = 2;

/**
 * What changed from `before` to `after`, as the lines of a unified diff (`@@ -1,3 +1,4 @@`,
 * then ` kept`, `-removed`, `+added` lines), at most `maxLines` of them: the rest is counted
 * in a last line, `… 12 more lines`. No file header; a last line without a line feed is
 * followed by `\ No newline at end of file`. A control character other than a tab is
 * shown as its control picture (`␛`, `␍`), so a line can neither drive the terminal nor
 * hide behind a carriage return; the caller still passes each line through the terminal's
 * sanitiser. Empty when the texts are the same.
 */
export function textChanges(before: string, after: string, maxLines: number): string[] {
  const patch = structuredPatch('', '', before, after, '', '', { context: CONTEXT_LINES });
  const lines: string[] = [];
  for (const hunk of patch.hunks) {
    lines.push(`@@ -${range(hunk.oldStart, hunk.oldLines)} +${range(hunk.newStart, hunk.newLines)} @@`);
    // A last line without a line feed is followed by `\ No newline at end of file`, as diff writes it.
    for (const line of hunk.lines) lines.push(shownWhole(line));
  }
  if (lines.length <= maxLines) return lines;
  const shown = lines.slice(0, Math.max(1, maxLines - 1));
  return [...shown, `… ${lines.length - shown.length} more lines`];
}

/**
 * A hunk's range as a unified diff writes it: `start,count`, `start` alone for one line, and
 * for none the line it comes after (`0,0` at the top).
 */
function range(start: number, count: number): string {
  if (count === 0) return `${start - 1},0`;
  return count === 1 ? String(start) : `${start},${count}`;
}

/** `line` with each C0 control but the tab, and DEL, as its control picture. */
function shownWhole(line: string): string {
  // eslint-disable-next-line no-control-regex
  return line.replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, (char) => (char === '\u007f' ? '\u2421' : String.fromCharCode(0x2400 + char.charCodeAt(0))));
}
