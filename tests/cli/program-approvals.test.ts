import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readMessages } from '../../src/conversation/session-store';
import { runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

function fence(args: string[]) {
  return runFence(args, { cwd: cli.dirs.workspace, env: cli.env(), timeoutMs: 60_000 });
}

const GREET = ['// intent: say hello', '// returns: string', 'print("hi");', 'return "hello from the approved code";'].join('\n');

/** Runs `code` with `fence run` and saves it as `name` (in the project with `project`); gives the program's folder. */
async function saveGreet(name: string, project = false, code = GREET): Promise<string> {
  writeFileSync(join(cli.dirs.workspace, 'program.js'), code);
  const run = await fence(['run', 'program.js']);
  const trace = /^trace (\S+)/m.exec(run.stderr)?.[1];
  if (!trace) throw new Error(`no trace in: ${run.stderr}`);
  const save = await fence(['programs', 'save', name, '--from-trace', trace, ...(project ? ['--project'] : [])]);
  expect(save.exitCode).toBe(0);
  return project ? join(cli.dirs.workspace, '.fence', 'programs', name) : join(cli.dirs.home, 'programs', name);
}

/** Writes into a version's record that it is approved, as a repository could ship it or anyone could write it. */
function claimApproved(dir: string, version = 1): void {
  const file = join(dir, `v${version}.json`);
  const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  writeFileSync(file, JSON.stringify({ ...record, status: 'approved', approvedAt: '2026-01-01T00:00:00.000Z' }, null, 2));
}

/** Opens a one-shot session (`tool` format) whose model says one thing; gives everything the model was sent. */
async function sessionSees(): Promise<string> {
  const before = cli.server.requests.length;
  cli.server.reply((r) => r.text('Nothing to do.'));
  const run = await fence(['-n', '-m', 'openai/gpt-test', '--tool-format', 'tool', 'hello']);
  expect(run.exitCode).toBe(0);
  return JSON.stringify(cli.server.requests[before]?.body);
}

/** Whether a session offers the tool `name` (in the tool list the model was sent). */
async function offered(name: string): Promise<boolean> {
  // Responses API function tools (how openai/ models are spoken to): the name at the top of each.
  const sent = JSON.parse(await sessionSees()) as { tools?: { name: string }[] };
  return (sent.tools ?? []).some((tool) => tool.name === name);
}

/** The result the session named `session` got from calling `tool`. */
function toolResult(session: string, tool: string): string | undefined {
  return readMessages(join(cli.dirs.home, 'sessions', session)).find((m) => m.meta?.toolResult && m.meta.tool === tool)?.content;
}

describe('approvals of saved programs', () => {
  it('does not offer a program a repository ships as approved, and says it is only suggested', { timeout: 120_000 }, async () => {
    const dir = await saveGreet('shipped_tool', true);
    claimApproved(dir);
    const record = JSON.parse(readFileSync(join(dir, 'v1.json'), 'utf8')) as { sha256: string; status: string };
    expect(record.status).toBe('approved');

    const sent = await sessionSees();
    expect(sent).not.toContain('shipped_tool');

    const list = await fence(['programs', 'list']);
    expect(list.stdout).toMatch(/^shipped_tool@1\s+suggested\s+project\s+1 test\s+say hello$/m);
    expect(list.stdout).toContain('shipped_tool@1: approved by the project (not by you): fence programs approve shipped_tool@1 to offer it');
    const show = await fence(['programs', 'show', 'shipped_tool@1']);
    expect(show.stdout).toContain('shipped_tool@1 · suggested · project programs');
    expect(show.stdout).toContain('approved by the project (not by you): fence programs approve shipped_tool@1 to offer it');

    // A project's CI, with no approvals of its own, checks what the project suggests.
    const ci = await fence(['programs', 'test']);
    expect(ci.exitCode).toBe(0);
    expect(ci.stdout).toContain('shipped_tool@1 (approved, project programs)');
    writeFileSync(join(dir, 'v1.js'), `${GREET}\n// changed`);
    const changed = await fence(['programs', 'test']);
    expect(changed.exitCode).toBe(1);
    expect(changed.stdout).toContain('✗ v1.js changed since it was approved');
    writeFileSync(join(dir, 'v1.js'), GREET);

    // Trusting the folder is not approving its programs.
    expect((await fence(['trust'])).exitCode).toBe(0);
    expect(await offered('shipped_tool')).toBe(false);

    // Once the person approves it, it is offered: the session above could have seen it.
    expect((await fence(['programs', 'approve', 'shipped_tool@1'])).exitCode).toBe(0);
    expect(await offered('shipped_tool')).toBe(true);
    expect((await fence(['programs', 'list'])).stdout).toMatch(/^shipped_tool@1\s+approved, offered\s+project/m);
  });

  it('does not offer a user program whose record was made to say approved', { timeout: 120_000 }, async () => {
    const dir = await saveGreet('written');
    // fence has run in this home already (fence run above), so nothing written now is taken over as an older approval.
    claimApproved(dir);
    expect(await offered('written')).toBe(false);
    const list = await fence(['programs', 'list']);
    expect(list.stdout).toMatch(/^written@1\s+suggested\s+user/m);
    expect(list.stdout).toContain('written@1: its record says approved, but you did not approve it: fence programs approve written@1 to offer it');
  });

  it('does not offer code edited after approval, and runs the approved code when the file is swapped mid-session', { timeout: 120_000 }, async () => {
    const dir = await saveGreet('greet');
    expect((await fence(['programs', 'approve', 'greet@1'])).exitCode).toBe(0);
    expect(await offered('greet')).toBe(true);

    const swapped = GREET.replace('hello from the approved code', 'swapped code ran');
    writeFileSync(join(dir, 'v1.js'), swapped);
    expect(await offered('greet')).toBe(false);
    // Even with a record that says the swapped code is the saved one.
    const record = JSON.parse(readFileSync(join(dir, 'v1.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, 'v1.json'), JSON.stringify({ ...record, sha256: createHash('sha256').update(swapped).digest('hex') }));
    expect(await offered('greet')).toBe(false);
    expect((await fence(['programs', 'list'])).stdout).toMatch(/^greet@1\s+approved, changed\s+user/m);

    // Back to the approved code; the session lists it, then the file is swapped before the model calls it.
    writeFileSync(join(dir, 'v1.json'), JSON.stringify(record));
    writeFileSync(join(dir, 'v1.js'), GREET);
    // The first request of the session comes once it has listed its tools: the file is swapped then.
    let armed = false;
    let swappedFor: string | undefined;
    cli.server.route(
      () => armed && swappedFor === undefined,
      (r) => {
        writeFileSync(join(dir, 'v1.js'), swapped);
        swappedFor = 'the first request';
        r.toolCall('greet', {});
      },
    );
    cli.server.reply((r) => r.text('Done.'));
    armed = true;
    const run = await fence(['-n', '-m', 'openai/gpt-test', '--name', 'swap', '--tool-format', 'tool', 'greet me']);
    expect(run.exitCode).toBe(0);
    expect(swappedFor).toBe('the first request');
    expect(readFileSync(join(dir, 'v1.js'), 'utf8')).toBe(swapped);
    const result = toolResult('swap', 'greet');
    expect(result).toContain('hello from the approved code');
    expect(result).not.toContain('swapped code ran');
  });

  it('offers a program once the person approves it, runs it, and withdraws it on revoke', { timeout: 120_000 }, async () => {
    await saveGreet('greet');
    expect(await offered('greet')).toBe(false);
    const approve = await fence(['programs', 'approve', 'greet@1']);
    expect(approve.exitCode).toBe(0);
    expect(approve.stdout).toContain('new sessions offer it as the tool greet');
    const file = join(cli.dirs.home, 'approvals', 'user.greet@1.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(cli.dirs.home, 'approvals')).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ scope: 'user', name: 'greet', version: 1, tools: [] });
    expect((await fence(['programs', 'show', 'greet@1'])).stdout).toMatch(/^approved by you \d{4}-\d\d-\d\d /m);

    cli.server.reply((r) => r.toolCall('greet', {})).reply((r) => r.text('Greeted.'));
    const run = await fence(['-n', '-m', 'openai/gpt-test', '--name', 'greeting', '--tool-format', 'tool', 'greet me']);
    expect(run.exitCode).toBe(0);
    expect(toolResult('greeting', 'greet')).toContain('hello from the approved code');

    const revoke = await fence(['programs', 'revoke', 'greet@1']);
    expect(revoke.exitCode).toBe(0);
    expect(revoke.stdout).toContain('new sessions no longer offer greet');
    expect(existsSync(file)).toBe(false);
    expect(await offered('greet')).toBe(false);
    expect((await fence(['programs', 'list'])).stdout).toMatch(/^greet@1\s+revoked\s+user/m);
  });

  it("takes over the user's approvals kept in records before, once, and not a project's", { timeout: 120_000 }, async () => {
    const mine = await saveGreet('mine');
    const theirs = await saveGreet('theirs', true, GREET.replace('say hello', 'say hello too'));
    claimApproved(mine);
    claimApproved(theirs);
    // A FENCE_HOME from before approvals were kept apart.
    rmSync(join(cli.dirs.home, 'approvals'), { recursive: true, force: true });

    const sent = JSON.parse(await sessionSees()) as { tools?: { name: string }[] };
    const names = (sent.tools ?? []).map((tool) => tool.name);
    expect(names).toContain('mine');
    expect(names).not.toContain('theirs');
    expect(statSync(join(cli.dirs.home, 'approvals', 'user.mine@1.json')).mode & 0o777).toBe(0o600);

    // Revoked afterwards, it stays revoked: the record is not read as an approval again.
    expect((await fence(['programs', 'revoke', 'mine@1'])).exitCode).toBe(0);
    claimApproved(mine);
    expect(await offered('mine')).toBe(false);
  });
});
