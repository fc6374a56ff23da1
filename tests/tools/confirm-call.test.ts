import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolUse } from '../../src/parse/tool-use';
import type { PolicyRule } from '../../src/policy/admit';
import { appendTool } from '../../src/tools/append';
import type { ConfirmAnswer, ConfirmRequest, ToolContext, ToolPreview, ToolSpec } from '../../src/tools/define-tool';
import { invokeTool, previewCall, type CallerPolicy } from '../../src/tools/invoke-tool';
import { patchTool } from '../../src/tools/patch';
import { ToolRegistry } from '../../src/tools/registry';
import { runToolUse } from '../../src/tools/run-tool-use';
import { saveTool } from '../../src/tools/save';
import { fakeTool } from '../support/fake-tool';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-confirm-');

/** How a scripted person answers one request: a fixed answer, or a function of the request. */
type Reply = ConfirmAnswer | ((request: ConfirmRequest) => ConfirmAnswer | Promise<ConfirmAnswer>);

/** A person who answers requests in order (yes once the replies run out) and keeps every request. */
function person(...replies: Reply[]) {
  const requests: ConfirmRequest[] = [];
  const confirm = async (request: ConfirmRequest): Promise<ConfirmAnswer> => {
    requests.push(request);
    const reply = replies.shift() ?? { action: 'yes' };
    return typeof reply === 'function' ? reply(request) : reply;
  };
  return { requests, confirm };
}

function contextWith(confirm?: ToolContext['confirm']): ToolContext {
  return { ...makeToolContext(workspace()), ...(confirm ? { confirm } : {}) };
}

/** The model's own call: principal `model`, mutating calls confirmed, no rules unless given. */
function asModel(extra: Partial<CallerPolicy> = {}): CallerPolicy {
  return { principal: 'model', rules: [], confirmMutating: true, ...extra };
}

/** A mutating fake tool with a defaulted parameter, so the validated input differs from the raw one. */
function writer() {
  return fakeTool({ name: 'writer', mutating: true, parameters: z.object({ path: z.string(), mode: z.string().default('replace') }) });
}

/** Calls `spec` once as the model; the person looks at the preview of the call, says no, and the preview is returned. */
async function previewShown(spec: ToolSpec, input: Record<string, unknown>): Promise<ToolPreview> {
  let shown: ToolPreview | undefined;
  const { confirm } = person(async (request) => {
    shown = await request.preview(request.input);
    return { action: 'no' };
  });
  await invokeTool(spec, input, contextWith(confirm), asModel());
  if (!shown) throw new Error('the person was not asked');
  return shown;
}

describe('invokeTool with ctx.confirm: when a person is asked', () => {
  it('asks before a mutating tool runs for a caller with confirmMutating, and runs it on yes', async () => {
    const tool = writer();
    const { requests, confirm } = person({ action: 'yes' });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel());
    expect(requests).toHaveLength(1);
    const request = requests[0]!;
    expect(request.tool).toBe(tool.spec);
    expect(request.input).toEqual({ path: 'a.txt', mode: 'replace' });
    expect(request.principal).toBe('model');
    expect(request.reason).toBeUndefined();
    expect(tool.calls.map((call) => call.input)).toEqual([{ path: 'a.txt', mode: 'replace' }]);
    expect(invocation.result.output).toBe('done');
    expect(invocation.result.isError).toBeUndefined();
    expect(invocation.declined).toBeUndefined();
  });

  it('asks before the tool runs, not after', async () => {
    const tool = writer();
    let ranBeforeAnswer: number | undefined;
    const { confirm } = person(() => {
      ranBeforeAnswer = tool.calls.length;
      return { action: 'yes' };
    });
    await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel());
    expect(ranBeforeAnswer).toBe(0);
    expect(tool.calls).toHaveLength(1);
  });

  it("on no, returns an error result saying the user declined, with the person's reason, and does not run the tool", async () => {
    const tool = writer();
    const { confirm } = person({ action: 'no', reason: '  not that file  ' });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel());
    expect(tool.calls).toHaveLength(0);
    expect(invocation.declined).toBe(true);
    expect(invocation.result.isError).toBe(true);
    expect(invocation.result.output).toMatch(/declined/);
    expect(invocation.result.output).toContain('writer');
    expect(invocation.result.output).toContain('not that file');
  });

  it('on a no without a reason, says the user declined and gives no reason', async () => {
    const tool = writer();
    const { confirm } = person({ action: 'no' });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel());
    expect(tool.calls).toHaveLength(0);
    expect(invocation.declined).toBe(true);
    expect(invocation.result.output).toMatch(/declined/);
    expect(invocation.result.output).not.toMatch(/reason/i);
  });

  it('does not run a call whose run was stopped while the person read the question', async () => {
    const tool = writer();
    const stop = new AbortController();
    const { confirm } = person(() => {
      stop.abort();
      return { action: 'yes' };
    });
    const ctx = { ...makeToolContext(workspace(), stop.signal), confirm };
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, ctx, asModel());
    expect(tool.calls).toHaveLength(0);
    expect(invocation.result.isError).toBe(true);
    expect(invocation.result.output).toContain('stopped while it waited for confirmation');
  });

  it('does not ask about a tool that is not mutating', async () => {
    const tool = fakeTool({ mutating: false });
    const { requests, confirm } = person({ action: 'no' });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel());
    expect(requests).toHaveLength(0);
    expect(tool.calls).toHaveLength(1);
    expect(invocation.result.output).toBe('done');
  });

  it('does not ask about a mutating tool when confirmMutating is unset', async () => {
    const tool = writer();
    const { requests, confirm } = person({ action: 'no' });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), { principal: 'model', rules: [] });
    expect(requests).toHaveLength(0);
    expect(tool.calls).toHaveLength(1);
    expect(invocation.declined).toBeUndefined();
  });

  it('without confirmMutating, still asks when a policy rule says ask, with the rule reason', async () => {
    const tool = fakeTool({ mutating: false });
    const rules: PolicyRule[] = [{ tool: 'fake', resource: 'deploy/**', action: 'ask', reason: 'deploy files go live' }];
    const { requests, confirm } = person({ action: 'yes' }, { action: 'yes' });
    const caller: CallerPolicy = { principal: 'model', rules };

    const other = await invokeTool(tool.spec, { path: 'src/a.txt' }, contextWith(confirm), caller);
    expect(requests).toHaveLength(0);
    expect(other.result.output).toBe('done');

    const asked = await invokeTool(tool.spec, { path: 'deploy/site.txt' }, contextWith(confirm), caller);
    expect(requests).toHaveLength(1);
    expect(requests[0]?.reason).toBe('deploy files go live');
    expect(requests[0]?.input).toEqual({ path: 'deploy/site.txt' });
    expect(asked.decision).toMatchObject({ action: 'ask', reason: 'deploy files go live' });
    expect(asked.resource).toBe('deploy/site.txt');
    expect(asked.result.output).toBe('done');
    expect(tool.calls.map((call) => call.input.path)).toEqual(['src/a.txt', 'deploy/site.txt']);
  });

  it("gives a rule without a reason one naming the rule when it asks", async () => {
    const tool = fakeTool();
    const { requests, confirm } = person({ action: 'yes' });
    await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), { principal: 'model', rules: [{ tool: 'fake', action: 'ask' }] });
    expect(requests[0]?.reason).toContain('policy rule 1');
    expect(tool.calls).toHaveLength(1);
  });

  it('asks once when both a policy ask and confirmMutating apply, and a no keeps the tool from running', async () => {
    const tool = writer();
    const { requests, confirm } = person({ action: 'no', reason: 'later' });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel({ rules: [{ tool: 'writer', action: 'ask', reason: 'rule says so' }] }));
    expect(requests).toHaveLength(1);
    expect(requests[0]?.reason).toBe('rule says so');
    expect(tool.calls).toHaveLength(0);
    expect(invocation.declined).toBe(true);
    expect(invocation.result.output).toContain('later');
  });

  it('without a confirm function, refuses a call a rule asks about, as before, and does not run it', async () => {
    const tool = writer();
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(), asModel({ rules: [{ tool: 'writer', action: 'ask', reason: 'needs a human' }] }));
    expect(tool.calls).toHaveLength(0);
    expect(invocation.result.isError).toBe(true);
    expect(invocation.result.output).toContain('needs confirmation');
    expect(invocation.result.output).toContain('needs a human');
    expect(invocation.declined).toBeUndefined();
  });

  it('without a confirm function, runs a mutating tool unasked even with confirmMutating', async () => {
    const tool = writer();
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(), asModel());
    expect(tool.calls).toHaveLength(1);
    expect(invocation.result.output).toBe('done');
  });

  it('never asks about a call a deny rule refuses', async () => {
    const tool = writer();
    const { requests, confirm } = person({ action: 'yes' });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel({ rules: [{ tool: 'writer', action: 'deny', reason: 'read-only day' }] }));
    expect(requests).toHaveLength(0);
    expect(tool.calls).toHaveLength(0);
    expect(invocation.result.output).toContain('read-only day');
  });

  it('does not ask about invalid input, and does not run it', async () => {
    const tool = writer();
    const { requests, confirm } = person({ action: 'yes' });
    const invocation = await invokeTool(tool.spec, { path: 7 }, contextWith(confirm), asModel());
    expect(requests).toHaveLength(0);
    expect(tool.calls).toHaveLength(0);
    expect(invocation.result.isError).toBe(true);
    expect(invocation.result.output).toMatch(/^Invalid input for writer:/);
  });

  it('turns a confirm function that throws into an error result, and does not run the tool', async () => {
    const tool = writer();
    const confirm = async (): Promise<ConfirmAnswer> => {
      throw new Error('the terminal went away');
    };
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel());
    expect(tool.calls).toHaveLength(0);
    expect(invocation.result.isError).toBe(true);
    expect(invocation.result.output).toContain('the terminal went away');
  });

  it('does not report a confirmation that failed as declined by the person', async () => {
    const tool = writer();
    const confirm = async (): Promise<ConfirmAnswer> => {
      throw new Error('gone');
    };
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel());
    expect(invocation.declined).toBeUndefined();
    expect(invocation.result.output).toContain('asking the user for confirmation failed (gone)');
  });
});

describe('invokeTool with ctx.confirm: an edited call', () => {
  it('runs the edited input, validated (defaults filled in), and says the call was edited', async () => {
    const tool = writer();
    const { confirm } = person({ action: 'yes', input: { path: 'b.txt' } });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel());
    expect(tool.calls.map((call) => call.input)).toEqual([{ path: 'b.txt', mode: 'replace' }]);
    expect(invocation.resource).toBe('b.txt');
    expect(invocation.result.output).toMatch(/edited/);
    expect(invocation.result.output).toMatch(/done$/);
  });

  it('does not say a call was edited when the person said a plain yes', async () => {
    const tool = writer();
    const { confirm } = person({ action: 'yes' });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel());
    expect(invocation.result.output).not.toMatch(/edited/);
  });

  it('writes the edited content with the real save tool and repeats a short edited body to the model', async () => {
    const { confirm } = person({ action: 'yes', input: { path: 'notes.md', content: 'edited by a person\n' } });
    const invocation = await invokeTool(saveTool as ToolSpec, { path: 'notes.md', content: 'written by the model\n' }, contextWith(confirm), asModel());
    expect(readFileSync(join(workspace(), 'notes.md'), 'utf8')).toBe('edited by a person\n');
    expect(invocation.result.isError).toBeUndefined();
    expect(invocation.result.output).toContain('edited');
    expect(invocation.result.output).toContain('edited by a person');
    expect(invocation.result.output).toContain('Created notes.md');
  });

  it('still says a long edited body was edited', async () => {
    const long = `${'x'.repeat(5000)}\n`;
    const { confirm } = person({ action: 'yes', input: { path: 'big.txt', content: long } });
    const invocation = await invokeTool(saveTool as ToolSpec, { path: 'big.txt', content: 'short\n' }, contextWith(confirm), asModel());
    expect(readFileSync(join(workspace(), 'big.txt'), 'utf8')).toBe(long);
    expect(invocation.result.output).toMatch(/edited/);
  });

  it('refuses an edit that is no longer valid, without running the tool', async () => {
    const tool = writer();
    const { confirm } = person({ action: 'yes', input: { path: 42 } });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel());
    expect(tool.calls).toHaveLength(0);
    expect(invocation.result.isError).toBe(true);
    expect(invocation.result.output).toContain('path');
    expect(invocation.result.output).toMatch(/edited/);
  });

  it('refuses an edit that a deny rule matches, without running the tool', async () => {
    const tool = writer();
    const rules: PolicyRule[] = [{ tool: 'writer', resource: 'secrets/**', action: 'deny', reason: 'secrets are off limits' }];
    const { confirm } = person({ action: 'yes', input: { path: 'secrets/key.txt' } });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel({ rules }));
    expect(tool.calls).toHaveLength(0);
    expect(invocation.decision.action).toBe('deny');
    expect(invocation.resource).toBe('secrets/key.txt');
    expect(invocation.result.isError).toBe(true);
    expect(invocation.result.output).toContain('secrets are off limits');
  });

  it('does not ask a second time about an edit that an ask rule matches: the answer was for the edited call', async () => {
    const tool = writer();
    const rules: PolicyRule[] = [{ tool: 'writer', resource: 'deploy/**', action: 'ask', reason: 'goes live' }];
    const { requests, confirm } = person({ action: 'yes', input: { path: 'deploy/a.txt' } }, { action: 'no' });
    const invocation = await invokeTool(tool.spec, { path: 'a.txt' }, contextWith(confirm), asModel({ rules }));
    expect(requests).toHaveLength(1);
    expect(tool.calls.map((call) => call.input.path)).toEqual(['deploy/a.txt']);
    expect(invocation.result.isError).toBeUndefined();
  });
});

describe('the preview of a confirmation request', () => {
  it('for save of a new file: a diff from empty text, marked created', async () => {
    const preview = await previewShown(saveTool as ToolSpec, { path: 'notes/new.md', content: 'hello\nworld' });
    expect(preview).toEqual({ kind: 'diff', path: join('notes', 'new.md'), before: '', after: 'hello\nworld\n', created: true });
    expect(existsSync(join(workspace(), 'notes'))).toBe(false);
  });

  it('for save over a CRLF file: the text before and the text after, in CRLF, and the file left as it was', async () => {
    const file = join(workspace(), 'dos.txt');
    await writeFile(file, 'one\r\ntwo\r\n');
    const preview = await previewShown(saveTool as ToolSpec, { path: 'dos.txt', content: 'one\nthree\n' });
    expect(preview).toEqual({ kind: 'diff', path: 'dos.txt', before: 'one\r\ntwo\r\n', after: 'one\r\nthree\r\n', created: false });
    expect(readFileSync(file, 'utf8')).toBe('one\r\ntwo\r\n');
  });

  it('previews an input the person edited, not only the original one', async () => {
    let edited: ToolPreview | undefined;
    const { confirm } = person(async (request) => {
      edited = await request.preview({ ...request.input, content: 'the edit\n' });
      return { action: 'no' };
    });
    await invokeTool(saveTool as ToolSpec, { path: 'a.txt', content: 'the original\n' }, contextWith(confirm), asModel());
    expect(edited).toMatchObject({ kind: 'diff', after: 'the edit\n' });
  });

  it('for patch: the patched text', async () => {
    await writeFile(join(workspace(), 'greet.py'), 'def greet():\n    print("hi")\n\ngreet()\n');
    const patch = ['<<<<<<< ORIGINAL', '    print("hi")', '=======', '    print("hello")', '>>>>>>> UPDATED'].join('\n');
    const preview = await previewShown(patchTool as ToolSpec, { path: 'greet.py', patch });
    expect(preview).toEqual({
      kind: 'diff',
      path: 'greet.py',
      before: 'def greet():\n    print("hi")\n\ngreet()\n',
      after: 'def greet():\n    print("hello")\n\ngreet()\n',
      created: false,
    });
  });

  it('for a patch that does not apply: a note, and the file left alone', async () => {
    const file = join(workspace(), 'greet.py');
    await writeFile(file, 'print("hi")\n');
    const patch = ['<<<<<<< ORIGINAL', 'print("bye")', '=======', 'print("hello")', '>>>>>>> UPDATED'].join('\n');
    const preview = await previewShown(patchTool as ToolSpec, { path: 'greet.py', patch });
    expect(preview.kind).toBe('note');
    expect(preview.kind === 'note' && preview.text.length).toBeGreaterThan(0);
    expect(readFileSync(file, 'utf8')).toBe('print("hi")\n');
  });

  it('for a malformed patch: a note', async () => {
    await writeFile(join(workspace(), 'a.txt'), 'a\n');
    const preview = await previewShown(patchTool as ToolSpec, { path: 'a.txt', patch: 'just some words' });
    expect(preview.kind).toBe('note');
  });

  it('for append: the text after appending, on a new line', async () => {
    const file = join(workspace(), 'log.md');
    await writeFile(file, '- first');
    const preview = await previewShown(appendTool as ToolSpec, { path: 'log.md', content: '- second' });
    expect(preview).toEqual({ kind: 'diff', path: 'log.md', before: '- first', after: '- first\n- second\n', created: false });
    expect(readFileSync(file, 'utf8')).toBe('- first');
  });

  it('for a binary file: a note naming it, and no diff of its bytes', async () => {
    await writeFile(join(workspace(), 'vars.txt'), Buffer.from('a = 1\n', 'utf16le'));
    for (const spec of [saveTool, appendTool] as ToolSpec[]) {
      expect(await previewShown(spec, { path: 'vars.txt', content: 'b = 2\n' })).toEqual({
        kind: 'note',
        text: 'vars.txt is a binary file (12 bytes); no diff to show',
      });
    }
  });

  it('for append to a missing file: a created diff from empty text', async () => {
    const preview = await previewShown(appendTool as ToolSpec, { path: 'new/log.md', content: 'line' });
    expect(preview).toEqual({ kind: 'diff', path: join('new', 'log.md'), before: '', after: 'line\n', created: true });
  });

  it('for a tool without preview: its block content parameter as code, in its language', async () => {
    const base = fakeTool({ name: 'sh', mutating: true, parameters: z.object({ code: z.string() }), example: { code: 'ls' } });
    const spec: ToolSpec = { ...base.spec, block: { content: 'code' } };
    const preview = await previewShown(spec, { code: 'rm -rf build' });
    expect(preview).toEqual({ kind: 'code', language: 'sh', code: 'rm -rf build' });
  });

  it('for a tool with neither preview nor a block body: its input as JSON', async () => {
    const tool = writer();
    const preview = await previewShown(tool.spec, { path: 'a.txt' });
    expect(preview.kind).toBe('code');
    expect(preview.kind === 'code' && JSON.parse(preview.code)).toEqual({ path: 'a.txt', mode: 'replace' });
  });
});

describe('previewCall', () => {
  it('never throws: a preview that throws gives a note with its message', async () => {
    const spec: ToolSpec = {
      ...writer().spec,
      preview: async () => {
        throw new Error('disk unplugged');
      },
    };
    const preview = await previewCall(spec, { path: 'a.txt' }, makeToolContext(workspace()));
    expect(preview.kind).toBe('note');
    expect(preview.kind === 'note' && preview.text).toContain('disk unplugged');
  });

  it('gives the tool preview when there is one', async () => {
    await mkdir(join(workspace(), 'src'));
    const preview = await previewCall(saveTool as ToolSpec, { path: 'src/a.ts', content: 'x' }, makeToolContext(workspace()));
    expect(preview).toEqual({ kind: 'diff', path: join('src', 'a.ts'), before: '', after: 'x\n', created: true });
  });
});

describe('runToolUse and confirmation', () => {
  /** A native call of `tool` with `kwargs`. */
  function use(tool: string, kwargs: Record<string, unknown>): ToolUse {
    return { tool, args: [], content: '', kwargs, format: 'tool', callId: 'c1', start: 0, end: 0 };
  }

  it("asks about the model's mutating calls (the default principal) and reports a no as declined", async () => {
    const tool = writer();
    const { requests, confirm } = person({ action: 'no', reason: 'wrong file' });
    const outcome = await runToolUse(use('writer', { path: 'a.txt' }), new ToolRegistry([tool.spec]), contextWith(confirm), { outputsDir: workspace() });
    expect(requests).toHaveLength(1);
    expect(requests[0]?.principal).toBe('model');
    expect(tool.calls).toHaveLength(0);
    expect(outcome.declined).toBe(true);
    expect(outcome.tool).toBe('writer');
    expect(outcome.result.isError).toBe(true);
    expect(outcome.result.output).toContain('wrong file');
  });

  it('runs the model call on yes, without declined', async () => {
    const tool = writer();
    const { requests, confirm } = person({ action: 'yes' });
    const outcome = await runToolUse(use('writer', { path: 'a.txt' }), new ToolRegistry([tool.spec]), contextWith(confirm), { outputsDir: workspace(), principal: 'model' });
    expect(requests).toHaveLength(1);
    expect(tool.calls).toHaveLength(1);
    expect(outcome.declined).toBeUndefined();
    expect(outcome.result.output).toBe('done');
  });

  it("with principal 'user', never asks, even for a mutating tool", async () => {
    const tool = writer();
    const { requests, confirm } = person({ action: 'no' });
    const outcome = await runToolUse(use('writer', { path: 'a.txt' }), new ToolRegistry([tool.spec]), contextWith(confirm), { outputsDir: workspace(), principal: 'user' });
    expect(requests).toHaveLength(0);
    expect(tool.calls).toHaveLength(1);
    expect(outcome.declined).toBeUndefined();
    expect(outcome.result.output).toBe('done');
  });

  it("with principal 'user', writes a file with the real save tool unasked", async () => {
    const { requests, confirm } = person({ action: 'no' });
    const block: ToolUse = { tool: 'save', args: ['by-hand.txt'], content: 'typed by the person', format: 'markdown', start: 0, end: 0 };
    const outcome = await runToolUse(block, new ToolRegistry([saveTool as ToolSpec]), contextWith(confirm), { outputsDir: workspace(), principal: 'user' });
    expect(requests).toHaveLength(0);
    expect(outcome.result.isError).toBeUndefined();
    expect(readFileSync(join(workspace(), 'by-hand.txt'), 'utf8')).toBe('typed by the person\n');
  });

  it("with principal 'user', does not ask even when a policy rule says ask, and a deny still denies", async () => {
    const tool = writer();
    const { requests, confirm } = person({ action: 'no' });
    const registry = new ToolRegistry([tool.spec]);
    const asked = await runToolUse(use('writer', { path: 'a.txt' }), registry, contextWith(confirm), {
      outputsDir: workspace(),
      principal: 'user',
      rules: [{ tool: 'writer', action: 'ask', reason: 'careful' }],
    });
    expect(requests).toHaveLength(0);
    expect(asked.result.output).toBe('done');
    const denied = await runToolUse(use('writer', { path: 'a.txt' }), registry, contextWith(confirm), {
      outputsDir: workspace(),
      principal: 'user',
      rules: [{ tool: 'writer', action: 'deny', reason: 'never' }],
    });
    expect(denied.result.isError).toBe(true);
    expect(denied.result.output).toContain('never');
    expect(tool.calls).toHaveLength(1);
  });
});
