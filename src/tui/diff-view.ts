import { structuredPatch } from 'diff';
import { visibleControls, visibleName } from '../processes/visible-text';
import type { ToolPreview } from '../tools/define-tool';
import type { Style } from './terminal-style';

/** A file change as the confirmation shows it. */
export type FileChange = Extract<ToolPreview, { kind: 'diff' }>;

/**
 * A file change as terminal lines: a header naming the file and what changes (`+12 −3`, or a
 * new file and its size), then the unified diff with 3 lines of context, additions green,
 * removals red, hunk headers cyan. At most `maxLines` diff lines are shown, then one line says
 * how many more there are. CRLF line breaks are compared as LF: a person reads the text.
 * Every character that will be written is shown: control characters, escape sequences, a bare
 * CR and bidirectional controls as visible symbols (see `visibleControls`), so no line can hide
 * or reorder another; the colours are added after.
 */
export function renderFileChange(change: FileChange, style: Style, maxLines: number): string[] {
  const before = change.before.replace(/\r\n/g, '\n');
  const after = change.after.replace(/\r\n/g, '\n');
  const path = visibleName(change.path);
  if (before === after) return [`${style.bold(path)} ${style.dim(change.created ? '(new file, empty)' : '(no change)')}`];
  const patch = structuredPatch(change.path, change.path, before, after, undefined, undefined, { context: 3 });
  const lines: string[] = [];
  let added = 0;
  let removed = 0;
  for (const hunk of patch.hunks) {
    lines.push(style.cyan(`@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`));
    for (const raw of hunk.lines) {
      if (raw.startsWith('\\')) continue; // "\ No newline at end of file"
      const line = visibleControls(raw);
      if (line.startsWith('+')) {
        added += 1;
        lines.push(style.green(line));
      } else if (line.startsWith('-')) {
        removed += 1;
        lines.push(style.red(line));
      } else {
        lines.push(style.dim(line));
      }
    }
  }
  const what = change.created ? `new file, ${added} line${added === 1 ? '' : 's'}` : `${style.green(`+${added}`)} ${style.red(`−${removed}`)}`;
  const header = `${style.bold(path)} ${style.dim('(')}${what}${style.dim(')')}`;
  // A new file has no context worth a hunk header.
  const body = change.created ? lines.slice(1) : lines;
  if (body.length <= maxLines) return [header, ...body];
  return [header, ...body.slice(0, maxLines), style.dim(`… ${body.length - maxLines} more lines`)];
}
