import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const FINANCE = resolve(import.meta.dirname, '../../examples/finance');
const OVER_LIMIT = readFileSync(join(FINANCE, 'over-limit.js'), 'utf8');

const cli = useCliRun();

const ptcBlock = (code: string) => `\`\`\`ptc\n${code.trimEnd()}\n\`\`\`\n`;


describe('programs in a scripted session', () => {
  it('runs the finance program: only what it prints reaches the model', async () => {
    cpSync(FINANCE, cli.dirs.workspace, { recursive: true });
    cli.trust();
    cli.server.reply((r) => r.text(`I'll compute it in one program.\n${ptcBlock(OVER_LIMIT)}`));
    cli.server.reply((r) => r.text('Four people are over their limit.'));

    const result = await runFence(['-n', '-m', 'local/test', 'who in engineering is over the travel limit?'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Four people are over their limit.');

    const toolResult = readOnlySessionLog(cli.dirs.home).find((m) => m.meta?.toolResult);
    expect(toolResult?.meta?.tool).toBe('ptc');
    expect(toolResult?.content).toContain('["Nikhil Moreau","Elena Urbina","Zoë Kowalski","Wen Abara"]');
    expect(toolResult?.content).toMatch(/\[17 tool calls; trace \S+\]/);
    // The expense records, ids and limits stayed in the sandbox: the model got the names only.
    const sent = cli.server.requests[1]?.body.messages?.at(-1);
    const resultSent = JSON.stringify(sent?.content);
    expect(resultSent).toContain('Nikhil Moreau');
    expect(resultSent).not.toMatch(/amount|S0\d\d|3500/);

    const list = await runFence(['trace', 'list'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(list.stdout).toMatch(/ok {2}17 calls {2}find engineering staff over their travel limit/);
  });

  it('a deny rule stops a program from reading secrets, and the trace shows the decision', async () => {
    mkdirSync(join(cli.dirs.workspace, 'secrets'));
    mkdirSync(join(cli.dirs.workspace, 'data'));
    writeFileSync(join(cli.dirs.workspace, 'secrets', 'key.txt'), 'hunter2\n');
    writeFileSync(join(cli.dirs.workspace, 'data', 'notes.txt'), 'public notes\n');
    writeFileSync(
      join(cli.dirs.workspace, 'fence.toml'),
      '[[policy]]\ntool = "read"\nresource = "secrets/**"\nprincipal = "program:*"\naction = "deny"\nreason = "secrets stay out of programs"\n',
    );
    cli.trust();
    const program = [
      '// intent: gather the notes',
      'print(await read({ path: "data/notes.txt" }));',
      'try {',
      '  print(await read({ path: "data/../secrets/key.txt" }));',
      '} catch (error) {',
      '  print("refused: " + error.message);',
      '}',
    ].join('\n');
    cli.server.reply((r) => r.text(ptcBlock(program)));
    cli.server.reply((r) => r.text('The key is off limits.'));

    const result = await runFence(['-n', '-m', 'local/test', 'read everything'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    const toolResult = readOnlySessionLog(cli.dirs.home).find((m) => m.meta?.toolResult)?.content ?? '';
    expect(toolResult).toContain('public notes');
    expect(toolResult).toContain('refused: read denied: secrets stay out of programs');
    expect(toolResult).not.toContain('hunter2');
    expect(toolResult).toContain('1 refused by policy');

    const id = /trace (\S+)\]/.exec(toolResult)?.[1] ?? '';
    const shown = await runFence(['trace', 'show', id], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout).toContain('[deny: secrets stay out of programs]');
    expect(shown.stdout).toContain('intent: gather the notes');
  });

  it('stops a program that loops forever or allocates without bound, and the session goes on', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[ptc]\ncpu_time_s = 1\nmemory_mb = 32\n');
    cli.trust();
    cli.server.reply((r) => r.text(ptcBlock('// intent: spin\nlet n = 0;\nwhile (true) { n++; }')));
    cli.server.reply((r) => r.text(ptcBlock('// intent: grow\nlet s = "x";\nconst keep = [];\nwhile (true) { s += s; keep.push(s); }')));
    cli.server.reply((r) => r.text('Both programs were stopped; I will do it differently.'));

    const result = await runFence(['-n', '-m', 'local/test', 'try'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('Both programs were stopped; I will do it differently.');
    const results = readOnlySessionLog(cli.dirs.home).filter((m) => m.meta?.toolResult);
    expect(results).toHaveLength(2);
    expect(results[0]?.content).toMatch(/Program failed \(cpu_time\)/);
    expect(results[1]?.content).toMatch(/Program failed \(memory\)/);
    expect(results.every((m) => m.meta?.isError)).toBe(true);
  });
});

describe('fence run', () => {
  it('runs the finance example with no model', async () => {
    cli.trust(FINANCE);
    const result = await runFence(['run', join(FINANCE, 'over-limit.js'), '-w', FINANCE], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('["Nikhil Moreau","Elena Urbina","Zoë Kowalski","Wen Abara"]');
    expect(result.stderr).toMatch(/trace \S+ \(17 tool calls\)/);
    expect(result.stderr).not.toMatch(/Warning/);
  });

  it('passes --json-args as `args` and prints the result as JSON', async () => {
    const program = join(cli.dirs.workspace, 'double.js');
    writeFileSync(program, 'return args.values.map((v) => v * 2);\n');
    const result = await runFence(['run', program, '--json-args', '{"values":[1,2,3]}'], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([2, 4, 6]);
  });

  it('exits 1 with the line of a failing program, and on a missing file', async () => {
    const program = join(cli.dirs.workspace, 'fail.js');
    writeFileSync(program, 'print("before");\nthrow new Error("nope");\n');
    const failed = await runFence(['run', program], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(failed.exitCode).toBe(1);
    expect(failed.stdout).toBe('before');
    expect(failed.stderr).toMatch(/program failed \(thrown\) at line 2: .*nope/);
    expect(failed.stderr).not.toMatch(/\n\s+at /);

    const missing = await runFence(['run', join(cli.dirs.workspace, 'nope.js')], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toMatch(/cannot read .*nope\.js: ENOENT/);
  });

  it('refuses a bad fence.toml with one clear line', async () => {
    writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[tools.x]\ncommand = "node x.js"\n');
    cli.trust();
    const program = join(cli.dirs.workspace, 'p.js');
    writeFileSync(program, 'print(1)\n');
    const result = await runFence(['run', program], { cwd: cli.dirs.workspace, env: { FENCE_HOME: cli.dirs.home } });
    expect(result.exitCode).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/fence\.toml: tools\.x/);
  });
});
