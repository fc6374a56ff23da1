/**
 * Native tool calls are stored inside the assistant's text as `@name(id): {json}` so that every
 * tool format is stored the same way. This file finds them again, so that the adapters can
 * replay them as the API's own tool calls (`tool_calls` / `tool_use`) with the same ids.
 */

/** One native tool call found in an assistant message's text. */
export interface NativeCall {
  name: string;
  id: string;
  /** The arguments object, as JSON text exactly as written. */
  argumentsJson: string;
  /** Offsets into the text: `start` at the `@`, `end` just past the closing `}`. */
  start: number;
  end: number;
}

const CALL_HEAD = /@([A-Za-z_][\w.-]*)\(([\w.:-]+)\):[ \t]*(?=\{)/g;

/** Writes a native tool call the way it is stored in assistant text; {@link findNativeCalls} reads it back. */
export function formatNativeCall(name: string, id: string, argumentsJson: string): string {
  return `@${name}(${id}): ${argumentsJson}`;
}

/**
 * Finds every `@name(id): {json}` whose JSON is a complete, valid object, in text order.
 * Anything else that merely looks similar (invalid or unterminated JSON) is left alone.
 */
export function findNativeCalls(text: string): NativeCall[] {
  const calls: NativeCall[] = [];
  for (const match of text.matchAll(CALL_HEAD)) {
    const [head, name, id] = match;
    const start = match.index;
    if (name === undefined || id === undefined || start < (calls.at(-1)?.end ?? 0)) continue;
    const jsonStart = start + head.length;
    const jsonEnd = endOfJsonObject(text, jsonStart);
    if (jsonEnd === undefined) continue;
    const argumentsJson = text.slice(jsonStart, jsonEnd);
    if (!isJsonObject(argumentsJson)) continue;
    calls.push({ name, id, argumentsJson, start, end: jsonEnd });
  }
  return calls;
}

/** The offset just past the `}` that closes the object opening at `from`, minding strings. */
function endOfJsonObject(text: string, from: number): number | undefined {
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === '{' || char === '[') depth++;
    else if (char === '}' || char === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return undefined;
}

function isJsonObject(json: string): boolean {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}
