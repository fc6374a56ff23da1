import type { ToolStreamScanner, ToolUse } from '../../src/parse/tool-use';

/** Feeds `chunks` to a scanner in order and returns the first tool use it reports, and at which chunk (or at `finish`). */
export function scanChunks(scanner: ToolStreamScanner, chunks: Iterable<string>): { use: ToolUse | undefined; at: number | 'finish' | 'none' } {
  let index = 0;
  for (const chunk of chunks) {
    const use = scanner.push(chunk);
    if (use) return { use, at: index };
    index++;
  }
  const use = scanner.finish();
  return { use, at: use ? 'finish' : 'none' };
}

/** Cuts `text` at the given offsets (any order, duplicates allowed). */
export function cut(text: string, offsets: number[]): string[] {
  const points = [...new Set(offsets.map((o) => o % (text.length + 1)))].sort((a, b) => a - b);
  const chunks: string[] = [];
  let from = 0;
  for (const point of points) {
    chunks.push(text.slice(from, point));
    from = point;
  }
  chunks.push(text.slice(from));
  return chunks;
}
