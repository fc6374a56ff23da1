import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { WireBody } from '../support/fake-llm';
import { runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

const block = (tag: string, body: string) => `\`\`\`${tag}\n${body.trimEnd()}\n\`\`\`\n`;

/** The text of a request's first user message: a child's is its task. */
function firstUser(body: WireBody): string {
  const message = body.messages?.find((m) => m.role === 'user');
  const content = message?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (part as { text?: string }).text ?? '').join('');
  return '';
}

/** How many replies of the model a request carries: a child's step. */
function steps(body: WireBody): number {
  return body.messages?.filter((m) => m.role === 'assistant').length ?? 0;
}

/** Every session folder's session.json, by id. */
function sessions(home: string): Map<string, { parent?: string; tools: string[] }> {
  const dir = join(home, 'sessions');
  const found = new Map<string, { parent?: string; tools: string[] }>();
  for (const id of readdirSync(dir)) {
    const file = join(dir, id, 'session.json');
    if (existsSync(file)) found.set(id, JSON.parse(readFileSync(file, 'utf8')));
  }
  return found;
}

/** A project configuration with an `[agents]` table, which offers the tool, trusted. */
function offerAgents(): void {
  writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[agents]\n');
  cli.trust();
}

const run = (args: string[], timeoutMs?: number) =>
  runFence(['-m', 'local/test', ...args], { cwd: cli.dirs.workspace, env: cli.env(), ...(timeoutMs ? { timeoutMs } : {}) });

describe('subagents', () => {
  it('the agent tool is offered only with an [agents] table; a project cannot raise the limits', async () => {
    cli.server.reply((r) => r.text('Plain.'));
    expect((await run(['-n', 'plain'])).exitCode).toBe(0);
    expect(JSON.stringify(cli.server.requests[0]?.body.messages)).not.toContain('## agent');

    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[agents]\nmax_depth = 9\nmax_parallel = 1\n');
    cli.trust();
    // The project asked for depth 9: the default 2 still holds, so a child has the tool and a grandchild does not.
    cli.server.route((body) => firstUser(body) === 'child' && steps(body) === 0, (r) => r.text(block('agent', 'grandchild')));
    cli.server.route((body) => firstUser(body) === 'child' && steps(body) === 1, (r) => r.text(block('complete', 'ok')));
    cli.server.route((body) => firstUser(body) === 'grandchild', (r) => r.text(block('complete', 'ok')));
    cli.server.reply((r) => r.text(block('agent', 'child')));
    cli.server.reply((r) => r.text('Done.'));
    expect((await run(['-n', 'nest'])).exitCode).toBe(0);
    const grandchild = cli.server.requests.find((request) => firstUser(request.body) === 'grandchild');
    expect(JSON.stringify(grandchild?.body.messages)).not.toContain('## agent');
  });

  it('a program reviews five files through five parallel subagents: only what it prints reaches the parent', async () => {
    const files = ['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt'];
    offerAgents();
    for (const file of files) writeFileSync(join(cli.dirs.workspace, file), `SECRET-BODY-OF-${file}\n`.repeat(50));
    for (const file of files) {
      // Each child reads its file, then completes with a one-word verdict.
      cli.server.route(
        (body) => firstUser(body) === `Review ${file}` && !JSON.stringify(body.messages).includes('SECRET-BODY'),
        (r) => r.text(block('read', file)),
      );
      cli.server.route(
        (body) => firstUser(body) === `Review ${file}` && JSON.stringify(body.messages).includes('SECRET-BODY'),
        (r) => r.text(block('complete', `${file} looks fine`)),
      );
    }
    const program = [
      `const files = ${JSON.stringify(files)};`,
      'const results = await gather(files.map((f) => agent({ task: `Review ${f}`, tools: ["read"] })));',
      'results.forEach((r) => print(`${r.status}: ${r.result} [${r.session}]`));',
    ].join('\n');
    cli.server.reply((r) => r.text(block('ptc', program)));
    cli.server.reply((r) => r.text('All five files look fine.'));

    const result = await run(['-n', '--output-format', 'stream-json', 'review the five files']);
    expect(result.stderr).not.toContain('Error:');
    expect(result.exitCode).toBe(0);

    const parentRequests = cli.server.requests.filter((request) => firstUser(request.body) === 'review the five files');
    expect(parentRequests).toHaveLength(2);
    const seen = JSON.stringify(parentRequests[1]?.body.messages);
    for (const file of files) expect(seen).toMatch(new RegExp(`done: ${file.replace('.', '\\.')} looks fine \\[\\d{8}-`));
    // What the children read stayed in their own contexts.
    expect(seen).not.toContain('SECRET-BODY');

    const lines = result.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line));
    const parentId = lines[0].session_id as string;
    const starts = lines.filter((line) => line.type === 'agent_start');
    const ends = lines.filter((line) => line.type === 'agent_end');
    expect(starts).toHaveLength(5);
    expect(ends.map((line) => line.status)).toEqual(['done', 'done', 'done', 'done', 'done']);

    // Each child has its session folder, its parent recorded, and only the tools it was given.
    const children = [...sessions(cli.dirs.home).entries()].filter(([, info]) => info.parent === parentId);
    expect(children).toHaveLength(5);
    for (const [, info] of children) expect(info.tools).toEqual(['read', 'complete']);
  });

  it("a child's answer, status and cost come back to the model; the cost is counted in the parent's", async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[agents]\n[models."local/test"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n');
    cli.trust();
    cli.server.route(
      (body) => firstUser(body) === 'count the files',
      (r) => r.text(block('complete', 'There are 3 files.')).usage({ input: 900, output: 100 }),
    );
    cli.server.reply((r) => r.text(block('agent', 'count the files')).usage({ input: 900, output: 100 }));
    cli.server.reply((r) => r.text('Three.').usage({ input: 900, output: 100 }));

    const result = await run(['-n', '--output-format', 'json', 'how many files?']);
    expect(result.exitCode).toBe(0);
    const summary = JSON.parse(result.stdout);
    // Two replies of the parent and one of the child, $1 each.
    expect(summary.cost_usd).toBeCloseTo(3, 6);
    const sent = JSON.stringify(cli.server.requests.at(-1)?.body.messages);
    expect(sent).toContain('There are 3 files.');
    expect(sent).toMatch(/\[subagent \d{8}-\d{6}-[0-9a-f]{6}: done · \$1\.0000 · no files changed\]/);
  });

  it('a child cannot have a tool its parent lacks, and a grandchild has no agent tool', async () => {
    offerAgents();
    const program = [
      'try {',
      '  await agent({ task: "x", tools: ["read", "telnet"] });',
      '} catch (error) {',
      '  print("refused: " + error.message);',
      '}',
      'const child = await agent({ task: "go deeper" });',
      'print("child: " + child.result);',
    ].join('\n');
    const task = (text: string, step: number) => (body: WireBody) => firstUser(body) === text && steps(body) === step;
    cli.server.route(task('go deeper', 0), (r) => r.text(block('agent', 'go deepest')));
    cli.server.route(task('go deeper', 1), (r) => r.text(block('complete', 'relayed')));
    // The grandchild tries to start one more level: no such tool at its depth.
    cli.server.route(task('go deepest', 0), (r) => r.text(block('agent', 'one more level')));
    cli.server.route(task('go deepest', 1), (r) => r.text(block('complete', 'no agent tool here')));
    cli.server.reply((r) => r.text(block('ptc', program)));
    cli.server.reply((r) => r.text('Done.'));

    const result = await run(['-n', 'nest']);
    expect(result.exitCode).toBe(0);
    const sent = JSON.stringify(cli.server.requests.at(-1)?.body.messages);
    expect(sent).toContain('refused: a subagent can only have tools you have; not yours: telnet');
    expect(sent).toContain('child: relayed');
    expect(cli.server.requests.some((request) => firstUser(request.body) === 'one more level')).toBe(false);
    const child = cli.server.requests.find((request) => firstUser(request.body) === 'go deeper');
    const grandchild = cli.server.requests.find((request) => firstUser(request.body) === 'go deepest');
    expect(JSON.stringify(child?.body.messages)).toContain('## agent');
    expect(JSON.stringify(grandchild?.body.messages)).not.toContain('## agent');

    // `fence sessions show` gives the tree: the child under the parent, the grandchild under it.
    const parentId = /session (\S+) ·/.exec(result.stderr)?.[1] ?? '';
    const shown = await runFence(['sessions', 'show', parentId], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout).toMatch(/\nsubagents:\n {2}\d{8}-\d{6}-[0-9a-f]{6} {2}go deeper\n {4}\d{8}-\d{6}-[0-9a-f]{6} {2}go deepest\n/);
    const childId = /\n {2}(\S+) {2}go deeper\n/.exec(shown.stdout)?.[1] ?? '';
    const childShown = await runFence(['sessions', 'show', childId], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(childShown.stdout).toContain(`\nsubagent of ${parentId}\nsubagents:\n`);
  });

  it('a rule refusing shell to agent:* holds for the child, and its programs are held by rules for agent:*, while the parent may run shell', async () => {
    writeFileSync(
      join(cli.dirs.workspace, 'fence.toml'),
      [
        '[agents]',
        // A rule for the model first: it must not answer the child's calls before the rule for agent:*.
        '[[policy]]\ntool = "shell"\nprincipal = "model"\naction = "allow"',
        '[[policy]]\ntool = "shell"\nprincipal = "agent:*"\naction = "deny"\nreason = "subagents run no commands"',
        '[[policy]]\ntool = "read"\nresource = "notes/**"\nprincipal = "agent:*"\naction = "deny"\nreason = "notes stay with the parent"',
      ].join('\n'),
    );
    cli.trust();
    mkdirSync(join(cli.dirs.workspace, 'notes'));
    writeFileSync(join(cli.dirs.workspace, 'notes', 'a.txt'), 'PARENT-ONLY\n');
    const task = (step: number) => (body: WireBody) => firstUser(body) === 'touch it' && steps(body) === step;
    cli.server.route(task(0), (r) => r.text(block('shell', 'touch by-child.txt')));
    cli.server.route(task(1), (r) => r.text(block('ptc', 'try { print(await read({ path: "notes/a.txt" })); } catch (error) { print("refused: " + error.message); }')));
    cli.server.route(task(2), (r) => r.text(block('complete', 'refused twice')));
    cli.server.reply((r) => r.text(block('shell', 'touch by-parent.txt')));
    cli.server.reply((r) => r.text(block('agent', 'touch it')));
    cli.server.reply((r) => r.text('Done.'));

    const result = await run(['-n', 'touch files']);
    expect(result.exitCode).toBe(0);
    expect(existsSync(join(cli.dirs.workspace, 'by-parent.txt'))).toBe(true);
    expect(existsSync(join(cli.dirs.workspace, 'by-child.txt'))).toBe(false);
    const child = JSON.stringify(cli.server.requests.filter((request) => firstUser(request.body) === 'touch it').at(-1)?.body.messages);
    expect(child).toContain('subagents run no commands');
    expect(child).toContain('refused: read denied: notes stay with the parent');
    expect(child).not.toContain('PARENT-ONLY');
    expect(JSON.stringify(cli.server.requests.at(-1)?.body.messages)).toContain('refused twice');
  });

  it("the parent's --max-cost holds with parallel children whose model would spend more", async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[agents]\n[models."local/test"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n');
    cli.trust();
    // Every child request costs $1 and never completes: only its budget stops it.
    cli.server.route(
      (body) => firstUser(body).startsWith('spend '),
      (r) => r.text(block('shell', 'true')).usage({ input: 900, output: 100 }),
    );
    const program = 'const rs = await gather([1, 2, 3, 4, 5, 6].map((i) => agent({ task: `spend ${i}` })));\nprint(rs.map((r) => r.status).join(","));';
    cli.server.reply((r) => r.text(block('ptc', program)).usage({ input: 900, output: 100 }));
    cli.server.reply((r) => r.text('Spent.').usage({ input: 900, output: 100 }));

    const result = await run(['-n', '--max-cost', '5', '--output-format', 'json', 'use the budget']);
    const childRequests = cli.server.requests.filter((request) => firstUser(request.body).startsWith('spend ')).length;
    // $5 allowed, $1 spent by the parent first: the four children running at once hold $1 each, the others find nothing left.
    expect(childRequests).toBe(4);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ stop_reason: 'max_cost' });
    expect(summary.cost_usd).toBeCloseTo(5, 6);
    // The parent stopped at its budget; its log holds what the program printed.
    const log = readFileSync(join(cli.dirs.home, 'sessions', summary.session_id, 'conversation.jsonl'), 'utf8');
    expect(log).toContain('budget,budget,budget,budget,budget,budget');
  });

  it('--timeout stops a child running a long command, and no process of it remains', async () => {
    offerAgents();
    const marker = `sleep ${300 + Math.floor(Math.random() * 1000)}`;
    cli.server.route(
      (body) => firstUser(body) === 'wait long',
      (r) => r.text(block('shell', marker)),
    );
    cli.server.reply((r) => r.text(block('agent', 'wait long')));

    const result = await run(['-n', '--timeout', '4s', 'start it'], 60_000);
    expect(result.exitCode).toBe(6);
    // The child did start its command before the stop.
    expect(cli.server.requests.some((request) => firstUser(request.body) === 'wait long')).toBe(true);
    const left = await execa('pgrep', ['-f', marker], { reject: false });
    expect(left.stdout.trim()).toBe('');
  });

  it('Ctrl-C stops a running child, and no process of it remains', async () => {
    offerAgents();
    const marker = `sleep ${1300 + Math.floor(Math.random() * 1000)}`;
    cli.server.route(
      (body) => firstUser(body) === 'wait long',
      (r) => r.text(block('shell', marker)),
    );
    cli.server.reply((r) => r.text(block('agent', 'wait long')));

    const parent = run(['-n', 'start it']);
    // Until the child's command runs.
    for (let i = 0; i < 200; i++) {
      const found = await execa('pgrep', ['-f', marker], { reject: false });
      if (found.stdout.trim()) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await execa('pgrep', ['-f', marker], { reject: false })).stdout.trim()).not.toBe('');
    parent.kill('SIGINT');
    const result = await parent;
    expect(result.stderr).toContain('interrupted');
    const left = await execa('pgrep', ['-f', marker], { reject: false });
    expect(left.stdout.trim()).toBe('');
  });

  it('works natively: the parent calls agent as a tool, and the child answers with complete', async () => {
    offerAgents();
    cli.server.route(
      (body) => firstUser(body) === 'name the files',
      (r) => r.toolCall('complete', { result: 'a.txt and b.txt' }),
    );
    cli.server.reply((r) => r.toolCall('agent', { task: 'name the files', tools: ['glob'], max_turns: 3 }));
    cli.server.reply((r) => r.text('Two files.'));

    const result = await run(['-n', '--tool-format', 'tool', 'what files?']);
    expect(result.exitCode).toBe(0);
    const child = cli.server.requests.find((request) => firstUser(request.body) === 'name the files');
    expect((child?.body.tools ?? []).map((tool) => (tool as { function?: { name?: string } }).function?.name).sort()).toEqual(['complete', 'glob']);
    expect(JSON.stringify(cli.server.requests.at(-1)?.body.messages)).toContain('a.txt and b.txt');
  });

  it('a bad [agents] table is a one-line configuration error', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[agents]\nmax_parallel = 0\nmax_width = 3\n');
    cli.trust();
    const result = await run(['-n', 'anything']);
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toMatch(/^fence: .*fence\.toml.*agents/m);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(cli.server.requests).toHaveLength(0);
  });

  it("a program's wall clock waits while its subagents run", async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[agents]\n[ptc]\nwall_time_s = 1\n');
    cli.trust();
    // The child's model takes longer than the program may run.
    cli.server.route(
      (body) => firstUser(body) === 'slow task',
      (r) => r.delay(2500).text(block('complete', 'slow answer')),
    );
    cli.server.reply((r) => r.text(block('ptc', 'const r = await agent({ task: "slow task" });\nprint("got: " + r.result);')));
    cli.server.reply((r) => r.text('Done.'));

    const result = await run(['-n', 'go']);
    expect(result.exitCode).toBe(0);
    expect(JSON.stringify(cli.server.requests.at(-1)?.body.messages)).toContain('got: slow answer');
  });

  it("a writing child's changes come back, and a child out of turns ends with status budget", async () => {
    offerAgents();
    cli.server.route((body) => firstUser(body) === 'write it' && steps(body) === 0, (r) => r.text(block('save notes/out.txt', 'written by the child')));
    cli.server.route((body) => firstUser(body) === 'write it' && steps(body) === 1, (r) => r.text(block('complete', 'wrote notes/out.txt')));
    cli.server.route((body) => firstUser(body) === 'keep going', (r) => r.text(block('shell', 'echo again')));
    const program = [
      'const w = await agent({ task: "write it", tools: ["save"] });',
      'print(`${w.status} ${JSON.stringify(w.changes)}`);',
      'const k = await agent({ task: "keep going", tools: ["shell"], max_turns: 2 });',
      'print(`${k.status}`);',
    ].join('\n');
    cli.server.reply((r) => r.text(block('ptc', program)));
    cli.server.reply((r) => r.text('Done.'));

    const result = await run(['-n', 'go']);
    expect(result.exitCode).toBe(0);
    expect(readFileSync(join(cli.dirs.workspace, 'notes', 'out.txt'), 'utf8')).toBe('written by the child\n');
    const sent = JSON.stringify(cli.server.requests.at(-1)?.body.messages);
    expect(sent).toContain('done [\\"notes/out.txt\\"]');
    expect(sent).toContain('\\nbudget\\n');
    expect(cli.server.requests.filter((request) => firstUser(request.body) === 'keep going')).toHaveLength(2);
  });

  it('a child may use another model; an unknown model id is a clear error', async () => {
    offerAgents();
    cli.server.route((body) => firstUser(body) === 'other model', (r) => r.text(block('complete', 'from the other')));
    const program = [
      'const a = await agent({ task: "other model", model: "local/other" });',
      'print("a: " + a.result);',
      'try { await agent({ task: "nope", model: "nosuch/provider-x" }); } catch (error) { print("refused: " + error.message); }',
    ].join('\n');
    cli.server.reply((r) => r.text(block('ptc', program)));
    cli.server.reply((r) => r.text('Done.'));

    const result = await run(['-n', 'go']);
    expect(result.exitCode).toBe(0);
    const child = cli.server.requests.find((request) => firstUser(request.body) === 'other model');
    expect(child?.body.model).toBe('other');
    const sent = JSON.stringify(cli.server.requests.at(-1)?.body.messages);
    expect(sent).toContain('a: from the other');
    expect(sent).toMatch(/refused: [^\n]*nosuch/);
    expect(cli.server.requests.some((request) => firstUser(request.body) === 'nope')).toBe(false);
  });
});
