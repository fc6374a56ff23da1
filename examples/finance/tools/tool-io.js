// What the three command tools share: JSON arguments on stdin, one JSON value on stdout,
// and on bad input a one-line message on stderr with exit code 1.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A problem with the tool's input or data, told to the caller as it is. */
export class ToolError extends Error {}

/**
 * Reads the JSON arguments from stdin (empty input counts as `{}`), passes them to `handler`
 * and prints what it returns as JSON. A `ToolError` or invalid JSON ends the process with
 * code 1 and its message on stderr.
 */
export function runTool(name, handler) {
  try {
    const args = parseArguments(readFileSync(0, 'utf8'));
    process.stdout.write(`${JSON.stringify(handler(args))}\n`);
  } catch (error) {
    const message = error instanceof ToolError ? error.message : `unexpected failure: ${error.stack ?? error}`;
    process.stderr.write(`${name}: ${message}\n`);
    process.exitCode = 1;
  }
}

function parseArguments(text) {
  if (text.trim() === '') return {};
  let args;
  try {
    args = JSON.parse(text);
  } catch (error) {
    throw new ToolError(`the input is not JSON (${error.message.replace(/\s+/g, ' ').trim()}); write one JSON object on stdin`);
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new ToolError('the input must be a JSON object of arguments');
  }
  return args;
}

/** The content of `data/<name>.json` of this example, wherever the tool is run from. */
export function loadData(name) {
  const url = new URL(`../data/${name}.json`, import.meta.url);
  let text;
  try {
    text = readFileSync(url, 'utf8');
  } catch {
    throw new ToolError(`${fileURLToPath(url)} is missing: run node generate-data.js in the example folder first`);
  }
  return JSON.parse(text);
}

/** `value` when it is a non-empty string, else a `ToolError` naming the argument. */
export function requireString(args, name, example) {
  const value = args[name];
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ToolError(`"${name}" must be a non-empty string, e.g. ${JSON.stringify({ [name]: example })}`);
  }
  return value;
}
