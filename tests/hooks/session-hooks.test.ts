import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HookConfig } from '../../src/config/config-schema';
import { createSessionHooks, runHooksOf, type SessionHooks } from '../../src/hooks/session-hooks';

/**
 * Which hooks an event runs and what their answers come to, with real processes outside any
 * sandbox (the CLI tests run them in it): matching by tool and resource, the order, the meaning
 * of each exit code per event, and the one line a failure costs.
 */

let dir = '';
let reports: string[] = [];
beforeEach(() => {
  dir = mkdtempSync('/var/tmp/fence-session-hooks-');
  reports = [];
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function hooksOf(hooks: HookConfig[]): SessionHooks {
  const made = createSessionHooks({ hooks, sessionId: () => 'session-1', workspace: dir, report: (line) => reports.push(line) });
  if (!made) throw new Error('no hooks');
  return made;
}

const sh = (script: string): string[] => ['sh', '-c', script];
const call = { tool: 'shell', input: { command: 'git push origin main' }, resource: 'git push origin main', principal: 'model' };

describe('createSessionHooks', () => {
  it('makes nothing of a configuration without hooks', () => {
    expect(createSessionHooks({ hooks: [], sessionId: () => 's', workspace: dir, report: () => undefined })).toBeUndefined();
  });

  it('runs a pre_tool hook only for the tools and resources it names', async () => {
    const hooks = hooksOf([
      { event: 'pre_tool', tool: 'shell', resource: 'git push*', command: sh('echo "no push" >&2; exit 2') },
      { event: 'pre_tool', tool: 'read', command: sh('echo "no read" >&2; exit 2') },
    ]);
    expect(await hooks.beforeTool(call)).toBe('no push');
    expect(await hooks.beforeTool({ ...call, input: { command: 'git status' }, resource: 'git status' })).toBeUndefined();
    expect(await hooks.beforeTool({ tool: 'read', input: { path: 'a' }, resource: 'a', principal: 'python' })).toBe('no read');
    expect(await hooks.beforeTool({ tool: 'save', input: { path: 'a' }, principal: 'model' })).toBeUndefined();
    expect(reports).toEqual([]);
  });

  it('gives the hook the event as Claude Code and fence name it', async () => {
    const seen = join(dir, 'seen.json');
    const hooks = hooksOf([{ event: 'post_tool', command: sh(`cat > ${seen}`) }]);
    expect(await hooks.afterTool({ tool: 'save', input: { path: 'a.txt', content: 'x' }, resource: 'a.txt', principal: 'model', output: 'Created a.txt', isError: false })).toBeUndefined();
    expect(JSON.parse(readFileSync(seen, 'utf8'))).toEqual({
      session_id: 'session-1',
      cwd: dir,
      hook_event_name: 'PostToolUse',
      event: 'post_tool',
      tool_name: 'save',
      tool_input: { path: 'a.txt', content: 'x', file_path: join(dir, 'a.txt') },
      resource: 'a.txt',
      principal: 'model',
      tool_response: { output: 'Created a.txt', is_error: false },
    });
  });

  it('joins what the post_tool hooks say, in order, an exit 2 by its stderr', async () => {
    const hooks = hooksOf([
      { event: 'post_tool', command: sh('echo formatted') },
      { event: 'post_tool', command: sh('echo "lint: 2 warnings" >&2; exit 2') },
      { event: 'post_tool', command: sh('true') },
    ]);
    expect(await hooks.afterTool({ ...call, output: '', isError: false })).toBe('formatted\n\nlint: 2 warnings');
  });

  it('reports a hook that exits with another code, cannot start or times out, and goes on to the next', async () => {
    const hooks = hooksOf([
      { event: 'pre_tool', command: sh('echo "half broken" >&2; exit 1') },
      { event: 'pre_tool', command: ['./missing-hook'] },
      { event: 'pre_tool', command: sh('sleep 600'), timeout: 0.2 },
      { event: 'pre_tool', command: sh('echo "refused at last" >&2; exit 2') },
    ]);
    expect(await hooks.beforeTool(call)).toBe('refused at last');
    expect(reports).toEqual([
      'fence: pre_tool hook "sh -c echo "half broken" >&2; exit 1" exited with code 1; ignored:\nhalf broken',
      'fence: pre_tool hook "./missing-hook" could not run: command "./missing-hook" not found; ignored',
      'fence: pre_tool hook "sh -c sleep 600" timed out after 0.2 s and was stopped; ignored',
    ]);
  });

  it('refuses a call whose pre_tool hooks the run stopped', async () => {
    const hooks = hooksOf([{ event: 'pre_tool', command: sh('sleep 600') }]);
    const controller = new AbortController();
    const answer = hooks.beforeTool(call, controller.signal);
    controller.abort();
    expect(await answer).toBe('the run was stopped while its pre_tool hooks ran');
  });

  it('answers prompt and stop by exit 2, and gives the session_start output once to the loop', async () => {
    const hooks = hooksOf([
      { event: 'session_start', command: sh('echo "branch main"') },
      { event: 'session_start', command: sh('echo "not a refusal" >&2; exit 2') },
      { event: 'prompt', command: sh('grep -q password && { echo "no passwords" >&2; exit 2; }; echo "context for the model"') },
      { event: 'stop', command: sh('grep -q \'"stop_hook_active":true\' || { echo "tests fail" >&2; exit 2; }') },
    ]);
    expect(await hooks.prompt('my password is x')).toEqual({ refused: 'no passwords' });
    expect(await hooks.prompt('fix the bug')).toEqual({ context: 'context for the model' });
    expect(await hooks.stop({ answer: 'done', active: false })).toBe('tests fail');
    expect(await hooks.stop({ answer: 'done', active: true })).toBeUndefined();
    const loop = runHooksOf(hooks, 'startup');
    expect(await loop.sessionStart()).toBe('branch main');
    expect(await loop.sessionStart()).toBeUndefined();
    expect(reports).toEqual([
      'fence: stop hook "sh -c grep -q \'"stop_hook_active":true\' || { echo "tests fail" >&2; exit 2; }" sent the model back to work: tests fail',
      'fence: session_start hook "sh -c echo "not a refusal" >&2; exit 2" exited with code 2; ignored:\nnot a refusal',
    ]);
  });
});
