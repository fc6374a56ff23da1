import { isAbsolute, resolve } from 'node:path';
import type { HookEvent } from '../config/config-schema';

/**
 * Each fence event by the name Claude Code gives the same moment, sent as `hook_event_name` so
 * that a hook written for Claude Code finds the name it checks.
 */
export const CLAUDE_CODE_EVENT_NAMES: Record<HookEvent, string> = {
  session_start: 'SessionStart',
  prompt: 'UserPromptSubmit',
  pre_tool: 'PreToolUse',
  post_tool: 'PostToolUse',
  stop: 'Stop',
};

/** What every event says: which session, where, and which event by both names. */
export interface HookSession {
  sessionId: string;
  workspace: string;
}

/** The facts of one event, besides the session's. */
export type HookFacts =
  | { event: 'session_start'; source: 'startup' | 'resume' }
  | { event: 'prompt'; prompt: string }
  | { event: 'pre_tool'; tool: string; input: Record<string, unknown>; resource?: string; principal: string }
  | { event: 'post_tool'; tool: string; input: Record<string, unknown>; resource?: string; principal: string; output: string; isError: boolean }
  | { event: 'stop'; active: boolean; answer: string };

/**
 * The JSON object a hook reads on stdin, with the fields Claude Code's hooks get where fence has
 * them (`session_id`, `cwd`, `hook_event_name`, `tool_name`, `tool_input`, `tool_response`,
 * `prompt`, `stop_hook_active`, `source`) and fence's own beside them (`event`, `resource`,
 * `principal`, `answer`). A tool input with a `path` also carries it as `file_path`, absolute,
 * as Claude Code's file tools name it.
 */
export function hookInput(session: HookSession, facts: HookFacts): Record<string, unknown> {
  const common = { session_id: session.sessionId, cwd: session.workspace, hook_event_name: CLAUDE_CODE_EVENT_NAMES[facts.event], event: facts.event };
  switch (facts.event) {
    case 'session_start':
      return { ...common, source: facts.source };
    case 'prompt':
      return { ...common, prompt: facts.prompt };
    case 'stop':
      return { ...common, stop_hook_active: facts.active, answer: facts.answer };
    case 'pre_tool':
    case 'post_tool': {
      const call = {
        ...common,
        tool_name: facts.tool,
        tool_input: withFilePath(facts.input, session.workspace),
        ...(facts.resource === undefined ? {} : { resource: facts.resource }),
        principal: facts.principal,
      };
      if (facts.event === 'pre_tool') return call;
      return { ...call, tool_response: { output: facts.output, is_error: facts.isError } };
    }
  }
}

/** The input with `file_path` (absolute) beside a string `path`, unless it has one. */
function withFilePath(input: Record<string, unknown>, workspace: string): Record<string, unknown> {
  const path = input.path;
  if (typeof path !== 'string' || path === '' || 'file_path' in input) return input;
  return { ...input, file_path: isAbsolute(path) ? path : resolve(workspace, path) };
}
