import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { makeCliDirs, runFence, type CliDirs } from '../support/run-cli';

let dirs: CliDirs;

beforeEach(() => {
  dirs = makeCliDirs();
  writeFileSync(join(dirs.workspace, 'a.txt'), 'alpha\n');
  writeFileSync(join(dirs.workspace, 'b.txt'), 'beta\nbeta\n');
});

function fence(args: string[]) {
  return runFence(args, { cwd: dirs.workspace, env: { FENCE_HOME: dirs.home }, timeoutMs: 60_000 });
}

/** Writes a program into the workspace and runs it with `fence run`; gives its trace id. */
async function runProgram(code: string, args?: unknown): Promise<{ trace: string; exitCode: number | undefined; stdout: string }> {
  writeFileSync(join(dirs.workspace, 'program.js'), code);
  const run = await fence(['run', 'program.js', ...(args === undefined ? [] : ['--json-args', JSON.stringify(args)])]);
  const trace = /^trace (\S+)/m.exec(run.stderr)?.[1];
  if (!trace) throw new Error(`no trace in: ${run.stderr}`);
  return { trace, exitCode: run.exitCode, stdout: run.stdout };
}

const COUNT_LINES = [
  '// intent: count the lines of the text files',
  '// param pattern: string = "*.txt" — which files',
  '// returns: Record<string, number>',
  'const files = await glob({ pattern: args.pattern });',
  'const texts = await gather(files.map((path) => read({ path })));',
  'const counts = {};',
  'files.forEach((path, i) => { counts[path] = texts[i].split("\\n").filter(Boolean).length; });',
  'print(files.length, "files");',
  'return counts;',
].join('\n');

describe('fence programs', () => {
  it('saves a run, tests it, shows and lists it, and keeps plain files', { timeout: 60_000 }, async () => {
    const { trace } = await runProgram(COUNT_LINES);
    const save = await fence(['programs', 'save', 'count_lines', '--from-trace', trace]);
    expect(save.exitCode).toBe(0);
    expect(save.stdout).toContain('saved count_lines@1');
    const dir = join(dirs.home, 'programs', 'count_lines');
    expect(readFileSync(join(dir, 'v1.js'), 'utf8')).toBe(COUNT_LINES);
    const record = JSON.parse(readFileSync(join(dir, 'v1.json'), 'utf8'));
    expect(record).toMatchObject({ name: 'count_lines', version: 1, status: 'saved', tools: ['glob', 'read'], fromTrace: trace });
    expect(record.tests[0].expect).toEqual({ ok: true, stdout: '2 files\n', result: { 'a.txt': 1, 'b.txt': 2 } });

    const test = await fence(['programs', 'test', 'count_lines@1']);
    expect(test.exitCode).toBe(0);
    expect(test.stdout).toContain('✓ test 1');

    const show = await fence(['programs', 'show', 'count_lines']);
    expect(show.stdout).toContain('pattern: string = "*.txt" — which files');
    expect(show.stdout).toContain('returns: Record<string, number>');
    expect(show.stdout).toContain('  4 | const files = await glob({ pattern: args.pattern });');

    const list = await fence(['programs', 'list']);
    expect(list.stdout).toMatch(/^count_lines@1\s+saved\s+user\s+1 test\s+count the lines of the text files$/m);
  });

  it('saves the newest program run that worked when no trace is named', { timeout: 60_000 }, async () => {
    const none = await fence(['programs', 'save', 'count_lines']);
    expect(none.exitCode).toBe(1);
    expect(none.stderr).toContain('no program run has worked yet');
    const { trace } = await runProgram(COUNT_LINES);
    await runProgram('// intent: fail\nthrow new Error("no");');
    const save = await fence(['programs', 'save', 'count_lines']);
    expect(save.exitCode).toBe(0);
    expect(save.stdout).toMatch(new RegExp(`^from trace ${trace} \\(.+\\), the newest program run that worked\nsaved count_lines@1`));
  });

  it('refuses a failed run, a bad name, code saved already, and a run that does not replay', { timeout: 60_000 }, async () => {
    const failed = await runProgram('// intent: fail\nthrow new Error("no");');
    expect(failed.exitCode).toBe(1);
    let save = await fence(['programs', 'save', 'fails', '--from-trace', failed.trace]);
    expect(save.exitCode).toBe(1);
    expect(save.stderr).toContain('is of a failed run (thrown: Error: no); only a run that worked can be saved');

    const { trace } = await runProgram(COUNT_LINES);
    save = await fence(['programs', 'save', 'Count-Lines', '--from-trace', trace]);
    expect(save.exitCode).toBe(1);
    expect(save.stderr).toContain('cannot name a program');

    expect((await fence(['programs', 'save', 'count_lines', '--from-trace', trace])).exitCode).toBe(0);
    save = await fence(['programs', 'save', 'count_lines', '--from-trace', trace]);
    expect(save.exitCode).toBe(1);
    expect(save.stderr).toContain(`count_lines@1 has this code already; add the trace as a test with fence programs test count_lines@1 --add-test ${trace}`);

    const random = await runProgram('// intent: pick one\nprint(Math.random());');
    save = await fence(['programs', 'save', 'pick', '--from-trace', random.trace]);
    expect(save.exitCode).toBe(1);
    expect(save.stderr).toContain('replaying it gives another run');
    expect(save.stderr).toContain('the output differs');
    expect(existsSync(join(dirs.home, 'programs', 'pick'))).toBe(false);
    expect(save.stderr).not.toMatch(/\n\s+at /);
  });

  it('checks the name before anything else: no trace, no workspace and a trace that is missing do not hide a bad name', async () => {
    const said = '"bad-name!" cannot name a program: use lower-case letters, digits and _, starting with a letter (it becomes a tool name)';
    for (const extra of [[], ['--from-trace', 'no-such-trace'], ['-w', join(dirs.workspace, 'missing')]]) {
      const save = await fence(['programs', 'save', 'bad-name!', ...extra]);
      expect(save.exitCode).toBe(1);
      expect(save.stderr).toBe(`fence: ${said}`);
      expect(save.stdout).toBe('');
    }
    // With a good name the same command goes on, and says there is nothing to save.
    expect((await fence(['programs', 'save', 'good_name'])).stderr).toContain('no program run has worked yet');
  });

  it('adds a run of the same code as a test, and fails a test once the code no longer reproduces it', { timeout: 60_000 }, async () => {
    const first = await runProgram(COUNT_LINES);
    expect((await fence(['programs', 'save', 'count_lines', '--from-trace', first.trace])).exitCode).toBe(0);
    const other = await runProgram(COUNT_LINES, { pattern: 'a.*' });
    const add = await fence(['programs', 'test', 'count_lines', '--add-test', other.trace]);
    expect(add.exitCode).toBe(0);
    expect(add.stdout).toContain('2 of 2 tests of count_lines@1 passed');

    const elsewhere = await runProgram('// intent: something else\nprint(1);');
    const wrong = await fence(['programs', 'test', 'count_lines', '--add-test', elsewhere.trace]);
    expect(wrong.exitCode).toBe(1);
    expect(wrong.stderr).toContain('ran other code than count_lines@1');

    // Edited by hand: the replay shows what changed, and approval is refused.
    const file = join(dirs.home, 'programs', 'count_lines', 'v1.js');
    writeFileSync(file, readFileSync(file, 'utf8').replace('"files"', '"file(s)"'));
    const test = await fence(['programs', 'test', 'count_lines@1']);
    expect(test.exitCode).toBe(1);
    expect(test.stdout).toContain('changed since it was saved');
    expect(test.stdout).toContain('line 1: recorded "2 files"');
    expect(test.stdout).toContain('FAILED: 0 of 2 tests');
    const approve = await fence(['programs', 'approve', 'count_lines@1']);
    expect(approve.exitCode).toBe(1);
    expect(approve.stderr).toContain('was changed since it was saved');
  });

  it('diffs versions, approves only a named version, and revokes', { timeout: 60_000 }, async () => {
    const v1 = await runProgram(COUNT_LINES);
    expect((await fence(['programs', 'save', 'count_lines', '--from-trace', v1.trace])).exitCode).toBe(0);
    const v2 = await runProgram(COUNT_LINES.replace('print(files.length, "files");\n', ''));
    const save = await fence(['programs', 'save', 'count_lines', '--from-trace', v2.trace]);
    expect(save.stdout).toContain('saved count_lines@2');

    const diff = await fence(['programs', 'diff', 'count_lines']);
    expect(diff.exitCode).toBe(0);
    expect(diff.stdout).toContain('count_lines@1 → count_lines@2');
    expect(diff.stdout).toContain('-print(files.length, "files");');
    const named = await fence(['programs', 'diff', 'count_lines@2', '@1']);
    expect(named.stdout).toBe(diff.stdout);

    const unnamed = await fence(['programs', 'approve', 'count_lines']);
    expect(unnamed.exitCode).toBe(1);
    expect(unnamed.stderr).toContain('say which version to approve: count_lines@1, count_lines@2');
    expect((await fence(['programs', 'revoke', 'count_lines@2'])).stderr).toContain('count_lines@2 is not approved (it is saved)');

    expect((await fence(['programs', 'approve', 'count_lines@1'])).stdout).toContain('new sessions offer it as the tool count_lines');
    const newer = await fence(['programs', 'approve', 'count_lines@2']);
    expect(newer.exitCode).toBe(0);
    let list = await fence(['programs', 'list']);
    expect(list.stdout).toMatch(/count_lines@1\s+approved /);
    expect(list.stdout).toMatch(/count_lines@2\s+approved, offered/);
    const revoke = await fence(['programs', 'revoke', 'count_lines@2']);
    expect(revoke.stdout).toContain('new sessions offer count_lines@1 as count_lines instead');
    list = await fence(['programs', 'list']);
    expect(list.stdout).toMatch(/count_lines@1\s+approved, offered/);
    expect(list.stdout).toMatch(/count_lines@2\s+revoked/);
  });

  it('tests every approved and every newest version when no name is given, failing on an approved one that changed', { timeout: 60_000 }, async () => {
    expect((await fence(['programs', 'test'])).stdout).toContain('no saved programs to test');
    const v1 = await runProgram(COUNT_LINES);
    expect((await fence(['programs', 'save', 'count_lines', '--from-trace', v1.trace])).exitCode).toBe(0);
    expect((await fence(['programs', 'approve', 'count_lines@1'])).exitCode).toBe(0);
    const v2 = await runProgram(COUNT_LINES.replace('print(files.length, "files");\n', ''));
    expect((await fence(['programs', 'save', 'count_lines', '--from-trace', v2.trace])).exitCode).toBe(0);
    const other = await runProgram('// intent: say one\nprint(1);');
    expect((await fence(['programs', 'save', 'one', '--from-trace', other.trace])).exitCode).toBe(0);
    const all = await fence(['programs', 'test']);
    expect(all.exitCode).toBe(0);
    expect(all.stdout).toContain('count_lines@1 (approved, user programs)');
    expect(all.stdout).toContain('count_lines@2 (saved, user programs)');
    expect(all.stdout).toContain('one@1 (saved, user programs)');
    expect(all.stdout).toContain('ok: 3 versions tested');

    const file = join(dirs.home, 'programs', 'count_lines', 'v1.js');
    writeFileSync(file, `${readFileSync(file, 'utf8')}\n`);
    const changed = await fence(['programs', 'test']);
    expect(changed.exitCode).toBe(1);
    expect(changed.stdout).toContain('✗ v1.js changed since it was approved');
    expect(changed.stdout).toContain('FAILED: count_lines@1');
  });

  it('says which version files cannot be read, and fails the test of every program for them', { timeout: 60_000 }, async () => {
    const { trace } = await runProgram(COUNT_LINES);
    expect((await fence(['programs', 'save', 'count_lines', '--from-trace', trace])).exitCode).toBe(0);
    const dir = join(dirs.home, 'programs', 'count_lines');
    writeFileSync(join(dir, 'v1.json'), '{"name": "count_lines", ');
    const list = await fence(['programs', 'list']);
    expect(list.exitCode).toBe(0);
    expect(list.stdout).toContain('no saved programs yet');
    expect(list.stderr).toContain(`fence: left out: ${dir}: v1.json cannot be read: it is not JSON`);
    const test = await fence(['programs', 'test']);
    expect(test.exitCode).toBe(1);
    expect(test.stdout).toContain(`✗ ${dir}: v1.json cannot be read: it is not JSON`);
    // The next save does not write over the unreadable version.
    expect((await fence(['programs', 'save', 'count_lines', '--from-trace', trace])).stdout).toContain('saved count_lines@2');
  });

  it("keeps project programs in the workspace's .fence/programs, which hide the user's", { timeout: 60_000 }, async () => {
    const { trace } = await runProgram(COUNT_LINES);
    expect((await fence(['programs', 'save', 'count_lines', '--from-trace', trace, '--project'])).exitCode).toBe(0);
    expect(existsSync(join(dirs.workspace, '.fence', 'programs', 'count_lines', 'v1.js'))).toBe(true);
    const user = await fence(['programs', 'save', 'count_lines', '--from-trace', trace]);
    expect(user.exitCode).toBe(1);
    expect(user.stderr).toContain('the project has a program "count_lines" already');
    const list = await fence(['programs', 'list']);
    expect(list.stdout).toMatch(/count_lines@1\s+saved\s+project/);
    // From another folder, the project's programs are not there.
    const elsewhere = join(dirs.home, 'elsewhere');
    mkdirSync(elsewhere);
    expect((await fence(['programs', 'list', '-w', elsewhere])).stdout).toContain('no saved programs yet');
  });

  it('gives a program that declares parameters its defaults, and refuses arguments that do not fit', { timeout: 60_000 }, async () => {
    const run = await runProgram(COUNT_LINES, { pattern: 'b.*' });
    expect(run.stdout).toContain('1 files');
    writeFileSync(join(dirs.workspace, 'program.js'), COUNT_LINES);
    const bad = await fence(['run', 'program.js', '--json-args', '{"pattern": 3}']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain("--json-args does not fit the program's parameters: pattern:");
    writeFileSync(join(dirs.workspace, 'broken.js'), '// param n: nummber\nprint(1);');
    const broken = await fence(['run', 'broken.js']);
    expect(broken.exitCode).toBe(2);
    expect(broken.stderr).toContain('line 1: parameter n: unknown type "nummber"');
  });
});
