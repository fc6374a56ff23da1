import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { appendTool } from '../../src/tools/append';
import type { ToolContext, ToolResult, ToolSpec } from '../../src/tools/define-tool';
import { grepTool } from '../../src/tools/grep';
import { invokeTool } from '../../src/tools/invoke-tool';
import { patchTool } from '../../src/tools/patch';
import { readTool } from '../../src/tools/read';
import { saveTool } from '../../src/tools/save';
import { KEY_TEXT, machineContext, useSandboxMachine } from '../support/sandbox-machine';
import { makeToolContext } from '../support/tool-context';

const machine = useSandboxMachine();

/** How many calls race the link flipping under them. */
const CALLS = 320;

const ALLOWED_TEXT = 'ALLOWED 7';
const SECRET_TEXT = 'SECRET 42';

/** Points the link `link` at `a`, then at `b`, again and again, each swap atomic (a new link renamed over it). */
const FLIPPER = `
const fs = require('node:fs');
const [link, a, b] = process.argv.slice(1);
const next = link + '.next';
for (let i = 0; ; i++) {
  try { fs.unlinkSync(next); } catch {}
  fs.symlinkSync(i % 2 === 0 ? a : b, next);
  fs.renameSync(next, link);
}
`;

let flipper: ChildProcess | undefined;

afterEach(() => {
  flipper?.kill('SIGKILL');
  flipper = undefined;
});

/** Starts flipping `link` between `a` and `b`, once it has flipped a first time. */
async function flip(link: string, a: string, b: string): Promise<void> {
  await symlink(a, link);
  flipper = spawn(process.execPath, ['-e', FLIPPER, link, a, b], { stdio: 'ignore' });
  // Let it get going: calls made before it runs would race nothing.
  await new Promise((resolve) => setTimeout(resolve, 200));
}

/** Runs `call` CALLS times; returns every result, with how many showed `text`. */
async function race(call: () => Promise<ToolResult>, text: string): Promise<{ results: ToolResult[]; showing: number }> {
  const results: ToolResult[] = [];
  for (let index = 0; index < CALLS; index++) results.push(await call());
  return { results, showing: results.filter((result) => JSON.stringify(result).includes(text)).length };
}

describe('a link swapped between the check and the open', () => {
  it('never lets read or grep show a file the sandbox denies', async () => {
    const { workspace, key } = machine();
    const allowed = join(workspace, 'allowed.txt');
    await writeFile(allowed, `${ALLOWED_TEXT}\n`);
    await flip(join(workspace, 'flip'), allowed, key);
    const ctx = machineContext(machine());
    const read = await race(() => readTool.execute({ path: 'flip' }, ctx), ALLOWED_TEXT);
    const grep = await race(() => grepTool.execute({ pattern: '[A-Z]', path: 'flip' }, ctx), ALLOWED_TEXT);
    for (const result of [...read.results, ...grep.results]) expect(JSON.stringify(result)).not.toContain(KEY_TEXT);
    // The race was run: some calls read the allowed file.
    expect(read.showing).toBeGreaterThan(0);
    expect(grep.showing).toBeGreaterThan(0);
  });

  it("never lets the diff a person is asked to approve show a file the sandbox denies", async () => {
    const { workspace, key } = machine();
    const allowed = join(workspace, 'allowed.txt');
    await writeFile(allowed, `${ALLOWED_TEXT}\n`);
    await flip(join(workspace, 'flip'), allowed, key);
    const ctx = machineContext(machine());
    const preview = async (): Promise<ToolResult> => ({ output: JSON.stringify(await saveTool.preview?.({ path: 'flip', content: 'new text\n' }, ctx)) });
    const previews = await race(preview, ALLOWED_TEXT);
    for (const result of previews.results) expect(result.output).not.toContain(KEY_TEXT);
    expect(previews.showing).toBeGreaterThan(0);
  });

  it('never lets read show a file a policy rule denies', async () => {
    const { workspace } = machine();
    const allowed = join(workspace, 'allowed.txt');
    await writeFile(allowed, `${ALLOWED_TEXT}\n`);
    await writeFile(join(workspace, 'secret.txt'), `${SECRET_TEXT}\n`);
    await flip(join(workspace, 'flip'), allowed, join(workspace, 'secret.txt'));
    const ctx = makeToolContext(workspace);
    const caller = { principal: 'model', rules: [{ tool: '*', resource: 'secret.txt', action: 'deny' as const }] };
    const read = await race(async () => (await invokeTool(readTool as ToolSpec, { path: 'flip' }, ctx, caller)).result, ALLOWED_TEXT);
    for (const result of read.results) expect(JSON.stringify(result)).not.toContain(SECRET_TEXT);
    expect(read.showing).toBeGreaterThan(0);
  });

  it('never lets save, append or patch change a file the sandbox protects', async () => {
    const { workspace } = machine();
    const allowed = join(workspace, 'allowed.txt');
    const guarded = join(workspace, 'fence.toml');
    const before = readFileSync(guarded, 'utf8');
    await writeFile(allowed, `${ALLOWED_TEXT}\n`);
    await flip(join(workspace, 'flip'), allowed, guarded);
    const ctx: ToolContext = machineContext(machine());
    const calls: (() => Promise<ToolResult>)[] = [
      () => saveTool.execute({ path: 'flip', content: `${ALLOWED_TEXT}\nsaved\n` }, ctx),
      () => appendTool.execute({ path: 'flip', content: 'appended' }, ctx),
      () => patchTool.execute({ path: 'flip', patch: `<<<<<<< ORIGINAL\n${ALLOWED_TEXT}\n=======\n${ALLOWED_TEXT}\n>>>>>>> UPDATED` }, ctx),
    ];
    let written = 0;
    for (let index = 0; index < CALLS; index++) {
      const result = await calls[index % calls.length]!();
      if (result.isError !== true) written += 1;
    }
    expect(readFileSync(guarded, 'utf8')).toBe(before);
    expect(written).toBeGreaterThan(0);
  });

  it('never makes a folder outside the workspace for a new file, whichever way a parent link points', async () => {
    const { workspace, outside } = machine();
    const inside = join(workspace, 'inside');
    await mkdir(inside);
    await flip(join(workspace, 'flip'), inside, outside);
    const ctx = machineContext(machine());
    let saved = 0;
    for (let index = 0; index < CALLS; index++) {
      const result = await saveTool.execute({ path: `flip/made-${index}/deeper/new.txt`, content: 'x\n' }, ctx);
      if (result.isError !== true) saved += 1;
    }
    // Nothing was made outside: no folder, no file.
    expect(readdirSync(outside).filter((name) => name.startsWith('made-'))).toEqual([]);
    // The race was run: some saves landed inside, through the link.
    expect(saved).toBeGreaterThan(0);
    expect(readdirSync(inside).filter((name) => name.startsWith('made-')).length).toBeGreaterThan(0);
  });
});

describe('links that stay put', () => {
  it('still read, grep and write the allowed file they lead to', async () => {
    const { workspace } = machine();
    await writeFile(join(workspace, 'allowed.txt'), `${ALLOWED_TEXT}\n`);
    await symlink(join(workspace, 'allowed.txt'), join(workspace, 'link.txt'));
    const ctx = machineContext(machine());
    expect(await readTool.execute({ path: 'link.txt' }, ctx)).toMatchObject({ output: `${ALLOWED_TEXT}\n` });
    expect((await grepTool.execute({ pattern: 'ALLOWED', path: 'link.txt' }, ctx)).output).toBe(`link.txt:1: ${ALLOWED_TEXT}`);
    expect((await saveTool.execute({ path: 'link.txt', content: 'new\n' }, ctx)).output).toBe('Saved link.txt (1 line, 4 bytes)');
    expect((await appendTool.execute({ path: 'link.txt', content: 'more' }, ctx)).isError).toBeUndefined();
    expect(readFileSync(join(workspace, 'allowed.txt'), 'utf8')).toBe('new\nmore\n');
  });

  it('still read a file a rule asks about, once a person said yes', async () => {
    const { workspace } = machine();
    await writeFile(join(workspace, 'asked.txt'), `${ALLOWED_TEXT}\n`);
    await symlink(join(workspace, 'asked.txt'), join(workspace, 'asked-link.txt'));
    const ctx: ToolContext = { ...makeToolContext(workspace), confirm: async () => ({ action: 'yes' }) };
    const caller = { principal: 'model', rules: [{ tool: 'read', resource: 'asked.txt', action: 'ask' as const }] };
    for (const path of ['asked.txt', 'asked-link.txt']) {
      expect((await invokeTool(readTool as ToolSpec, { path }, ctx, caller)).result).toMatchObject({ output: `${ALLOWED_TEXT}\n` });
    }
  });
});
