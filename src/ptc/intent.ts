/**
 * A program declares its purpose in a comment among its first lines:
 *
 *     // intent: find engineering staff over their travel limit
 *
 * Only the leading comment lines are looked at (blank lines and `//` comments before the
 * first line of code); the first `// intent:` line there wins. The text is trimmed and cut to
 * 200 characters. Policy rules match it with their `intent` glob; the trace records it.
 */
export function parseIntent(code: string): string | undefined {
  for (const line of code.split('\n')) {
    const trimmed = line.trim();
    if (!trimmed) continue;
    if (!trimmed.startsWith('//')) return undefined;
    const match = /^\/\/\s*intent\s*:\s*(.*)$/i.exec(trimmed);
    if (match) return match[1]?.trim().slice(0, 200) || undefined;
  }
  return undefined;
}
