import { appendTool } from './append';
import type { ToolSpec } from './define-tool';
import { createFetchTool, type FetchToolOptions } from './fetch';
import { globTool } from './glob';
import { grepTool } from './grep';
import { patchTool } from './patch';
import { planTool } from './plan';
import { createPythonTool } from './python';
import { readTool } from './read';
import { saveTool } from './save';
import { createShellTool, type ShellToolOptions } from './shell';

/** Options for the built-in tools. */
export interface BuiltinToolOptions {
  shell?: ShellToolOptions;
  fetch?: FetchToolOptions;
}

/** The built-in tools, in the order the system prompt presents them. */
export function builtinTools(options: BuiltinToolOptions = {}): ToolSpec[] {
  return [createShellTool(options.shell), createPythonTool(), saveTool, appendTool, patchTool, readTool, globTool, grepTool, createFetchTool(options.fetch), planTool] as ToolSpec[];
}
