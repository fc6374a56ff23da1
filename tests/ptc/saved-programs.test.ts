import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { approvalFile, approvalsDir, markApprovalsMigrated, readApproval, removeApproval, writeApproval } from '../../src/ptc/approvals';
import { runProgram, type ProgramTool } from '../../src/ptc/run-program';
import {
  approvalTarget,
  approvedPrograms,
  checkProgramName,
  codeHash,
  findProgram,
  listPrograms,
  parseProgramRef,
  programLabel,
  programRoots,
  programVersions,
  saveProgram,
  testFromTrace,
  toolsOfProgram,
  unreplayable,
  writeRecord,
  type ProgramRecord,
  type ProgramRoot,
  type SavedProgram,
} from '../../src/ptc/saved-programs';
import type { ProgramTrace } from '../../src/ptc/trace';
import { DEFAULT_VM_LIMITS } from '../../src/program-vm/run-in-vm';

let base = '';
beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'fence-saved-programs-')));
});
afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

const home = () => join(base, 'home');
const workspace = () => join(base, 'workspace');
const roots = () => programRoots(home(), workspace());
const projectRoot = () => roots()[0] as ProgramRoot;
const userRoot = () => roots()[1] as ProgramRoot;

/** A tool that admits every call and answers with `value(args)`. */
const answering =
  (value: (args: unknown) => unknown): ProgramTool =>
  async (args) => ({ decision: { action: 'allow' }, ok: true, value: value(args) });

/** The staff directory the example programs read. */
const staff = answering((args) => {
  const { department } = args as { department: string };
  return department === 'engineering'
    ? [
        { name: 'ada', spent: 1200 },
        { name: 'linus', spent: 300 },
      ]
    : [{ name: 'grace', spent: 900 }];
});

/** Runs `code` for real in the sandbox and gives its trace, as fence would have written it. */
async function traceOf(code: string, options: { tools?: Record<string, ProgramTool>; args?: unknown } = {}): Promise<ProgramTrace> {
  const { trace } = await runProgram({
    code,
    tools: options.tools ?? { lookup: staff },
    session: { id: 'session-1', dir: join(home(), 'sessions', 'session-1') },
    ...(options.args !== undefined ? { args: options.args } : {}),
  });
  return trace;
}

const OVER_LIMIT = [
  '// intent: find the staff of a department over their travel limit',
  '// param department: string = "engineering" — the department to check',
  '// returns: string[]',
  'const people = await lookup({ department: args.department });',
  'const over = people.filter((p) => p.spent > 1000).map((p) => p.name);',
  'print("over: " + over.join(", "));',
  'return over;',
].join('\n');

/** A saved version, failing the test with the refusal when there is one. */
function saved(result: SavedProgram | { error: string }): SavedProgram {
  if ('error' in result) throw new Error(`expected a saved program, got: ${result.error}`);
  return result;
}

/** The refusal, failing the test when the program was saved. */
function refused(result: SavedProgram | { error: string }): string {
  if (!('error' in result)) throw new Error(`expected a refusal, but ${programLabel(result.record)} was saved`);
  return result.error;
}

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as unknown;

/** Sets the status a version's record shows (which grants nothing by itself). */
function setStatus(program: SavedProgram, status: ProgramRecord['status']): void {
  writeRecord(program.dir, { ...program.record, status, ...(status === 'approved' ? { approvedAt: new Date().toISOString() } : {}) });
}

const rootOf = (program: SavedProgram) => (program.scope === 'user' ? userRoot() : projectRoot());

/** Records the person's approval of a version's code (of `code`, by default the version's own), as `fence programs approve` does. */
function approve(program: SavedProgram, code: string = program.code): void {
  const target = approvalTarget(rootOf(program), program);
  if (!target) throw new Error('no approval target');
  const why = writeApproval(home(), { ...target, sha256: codeHash(code), tools: program.record.tools, approvedAt: new Date().toISOString() });
  if (why) throw new Error(why);
}

/** Removes the person's approval, as `fence programs revoke` does. */
function revoke(program: SavedProgram): void {
  const target = approvalTarget(rootOf(program), program);
  if (!target) throw new Error('no approval target');
  expect(removeApproval(home(), target)).toBeUndefined();
}

const offeredLabels = () => approvedPrograms(roots(), home()).map((p) => programLabel(p.record));

/** Saves `code` (run for real) as the next version of `name`. */
async function saveCode(name: string, code: string, root: ProgramRoot = userRoot()): Promise<SavedProgram> {
  return saved(saveProgram(roots(), root, name, await traceOf(code, { args: { department: 'engineering' } }), ['lookup']));
}

describe('programRoots, checkProgramName, parseProgramRef, codeHash', () => {
  it('puts the project root first and the user root under FENCE_HOME', () => {
    expect(programRoots('/h', '/w')).toEqual([
      { scope: 'project', dir: join('/w', '.fence', 'programs'), workspace: '/w' },
      { scope: 'user', dir: join('/h', 'programs') },
    ]);
  });

  it('accepts tool-like names only', () => {
    for (const name of ['a', 'over_limit', 'x1', 'a_b_c_9', 'a'.repeat(48)]) expect(checkProgramName(name), name).toBeUndefined();
    for (const name of ['', 'Over', 'OVER', '1abc', '_x', 'a-b', 'a b', 'a.b', '../x', 'a/b', 'é', 'a'.repeat(49), 'name@1', ' a']) {
      const why = checkProgramName(name);
      expect(why, JSON.stringify(name)).toBeDefined();
      expect(why).toContain(`"${name}" cannot name a program`);
    }
  });

  it('reads name and name@version, and nothing else', () => {
    expect(parseProgramRef('over_limit')).toEqual({ name: 'over_limit' });
    expect(parseProgramRef('over_limit@3')).toEqual({ name: 'over_limit', version: 3 });
    expect(parseProgramRef('  over_limit@12  ')).toEqual({ name: 'over_limit', version: 12 });
    for (const ref of ['', '   ', '@3', 'a@', 'a@b', 'a@1@2', 'a b', 'a@-1', 'a@1.5']) expect(parseProgramRef(ref), ref).toBeUndefined();
  });

  it('hashes code as sha256 hex, the same hash a trace records', async () => {
    const code = '// intent: é ✓\r\nreturn "naïve";';
    expect(codeHash(code)).toBe(createHash('sha256').update(code, 'utf8').digest('hex'));
    expect((await traceOf(code)).sha256).toBe(codeHash(code));
  });
});

describe('saveProgram', () => {
  it('saves a real run as v1.js, byte for byte, and v1.json with its record and first test', async () => {
    const trace = await traceOf(OVER_LIMIT, { args: { department: 'engineering' } });
    expect(trace.ok).toBe(true);
    const program = saved(saveProgram(roots(), userRoot(), 'over_limit', trace, ['lookup', 'read', 'write']));
    const dir = join(home(), 'programs', 'over_limit');
    expect(program.dir).toBe(dir);
    expect(program.scope).toBe('user');
    expect(program.intact).toBe(true);
    expect(program.code).toBe(OVER_LIMIT);
    expect(readdirSync(dir).sort()).toEqual(['v1.js', 'v1.json']);
    expect(readFileSync(join(dir, 'v1.js')).equals(Buffer.from(OVER_LIMIT, 'utf8'))).toBe(true);

    const record = readJson(join(dir, 'v1.json')) as ProgramRecord;
    expect(readFileSync(join(dir, 'v1.json'), 'utf8').endsWith('}\n')).toBe(true);
    expect(record).toEqual(program.record);
    expect(record).toMatchObject({
      name: 'over_limit',
      version: 1,
      sha256: trace.sha256,
      intent: 'find the staff of a department over their travel limit',
      tools: ['lookup'],
      fromTrace: trace.id,
      sessionId: 'session-1',
      status: 'saved',
    });
    expect(record).not.toHaveProperty('approvedAt');
    expect(record).not.toHaveProperty('revokedAt');
    expect(Number.isNaN(Date.parse(record.savedAt))).toBe(false);
    expect(record.tests).toHaveLength(1);
    const [test] = record.tests;
    expect(test).toMatchObject({
      fromTrace: trace.id,
      args: { department: 'engineering' },
      calls: [{ tool: 'lookup', args: { department: 'engineering' }, ok: true, result: [{ name: 'ada', spent: 1200 }, { name: 'linus', spent: 300 }] }],
      expect: { ok: true, stdout: 'over: ada\n', result: ['ada'] },
      limits: { ...DEFAULT_VM_LIMITS },
    });
    expect(test?.expect).not.toHaveProperty('error');
    expect(Number.isNaN(Date.parse(test?.recordedAt ?? ''))).toBe(false);
  });

  it('keeps code with CRLF, a BOM-less Unicode text and no final newline exactly as it ran', async () => {
    const code = '// intent: ünïcödé ✓\r\nprint("→ ok");\r\nreturn "日本";';
    const program = await saveCode('unicode', code);
    const bytes = readFileSync(join(program.dir, 'v1.js'));
    expect(bytes.equals(Buffer.from(code, 'utf8'))).toBe(true);
    expect(program.record.sha256).toBe(codeHash(bytes.toString('utf8')));
    expect(program.record.tests[0]?.expect).toEqual({ ok: true, stdout: '→ ok\n', result: '日本' });
  });

  it('leaves out intent and args when the run had none, and leaves no temporary file', async () => {
    const program = saved(saveProgram(roots(), userRoot(), 'plain', await traceOf('print("hi");'), []));
    expect(program.record).not.toHaveProperty('intent');
    expect(program.record.tests[0]).not.toHaveProperty('args');
    expect(program.record.tests[0]?.expect).not.toHaveProperty('result');
    expect(program.record.tools).toEqual([]);
    expect(readdirSync(program.dir).sort()).toEqual(['v1.js', 'v1.json']);
  });

  it('refuses a second save of the same code, naming the version that has it', async () => {
    await saveCode('over_limit', OVER_LIMIT);
    const again = await traceOf(OVER_LIMIT, { args: { department: 'sales' } });
    const why = refused(saveProgram(roots(), userRoot(), 'over_limit', again, ['lookup']));
    expect(why).toContain('over_limit@1 has this code already');
    expect(why).toContain(`--add-test ${again.id}`);
    expect(readdirSync(join(home(), 'programs', 'over_limit')).sort()).toEqual(['v1.js', 'v1.json']);
  });

  it('saves changed code as v2 and leaves v1 as it was', async () => {
    const v1 = await saveCode('over_limit', OVER_LIMIT);
    const v1Json = readFileSync(join(v1.dir, 'v1.json'), 'utf8');
    const changed = OVER_LIMIT.replace('> 1000', '> 500');
    const v2 = await saveCode('over_limit', changed);
    expect(v2.record.version).toBe(2);
    expect(v2.dir).toBe(v1.dir);
    expect(readFileSync(join(v2.dir, 'v2.js'), 'utf8')).toBe(changed);
    expect(v2.record.tests[0]?.expect.result).toEqual(['ada']);
    expect(readFileSync(join(v1.dir, 'v1.json'), 'utf8')).toBe(v1Json);
    expect(readFileSync(join(v1.dir, 'v1.js'), 'utf8')).toBe(OVER_LIMIT);
    expect(programVersions(roots(), 'over_limit').map((p) => p.record.version)).toEqual([1, 2]);
  });

  it('refuses the code of an older version too, naming that version', async () => {
    await saveCode('over_limit', OVER_LIMIT);
    await saveCode('over_limit', `${OVER_LIMIT}\n// v2`);
    const why = refused(saveProgram(roots(), userRoot(), 'over_limit', await traceOf(OVER_LIMIT, { args: { department: 'x' } }), []));
    expect(why).toMatch(/^over_limit@1 has this code already/);
  });

  it('does not write over a version whose files cannot be read', async () => {
    const v1 = await saveCode('over_limit', OVER_LIMIT);
    // A v2 whose record was broken by hand, and a v3 whose record is missing.
    writeFileSync(join(v1.dir, 'v2.js'), 'return "hand-made v2";');
    writeFileSync(join(v1.dir, 'v2.json'), '{ "name": "over_limit", oops');
    writeFileSync(join(v1.dir, 'v3.js'), 'return "orphan v3";');
    const next = await saveCode('over_limit', `${OVER_LIMIT}\n// again`);
    expect(next.record.version).toBe(4);
    expect(readFileSync(join(v1.dir, 'v2.js'), 'utf8')).toBe('return "hand-made v2";');
    expect(readFileSync(join(v1.dir, 'v2.json'), 'utf8')).toBe('{ "name": "over_limit", oops');
    expect(readFileSync(join(v1.dir, 'v3.js'), 'utf8')).toBe('return "orphan v3";');
    expect(programVersions(roots(), 'over_limit').map((p) => p.record.version)).toEqual([1, 4]);
  });

  it('refuses a failed run and writes nothing', async () => {
    const trace = await traceOf('print("partial");\nthrow new Error("boom");');
    expect(trace.ok).toBe(false);
    const why = refused(saveProgram(roots(), userRoot(), 'failing', trace, []));
    expect(why).toBe(`trace ${trace.id} is of a failed run (thrown: Error: boom); only a run that worked can be saved`);
    expect(existsSync(join(home(), 'programs', 'failing'))).toBe(false);
  });

  it('refuses a run that did not compile', async () => {
    const trace = await traceOf('const = 1;');
    expect(refused(saveProgram(roots(), userRoot(), 'broken', trace, []))).toContain('(syntax: ');
  });

  it('refuses a run with a value too large for its trace', async () => {
    const big = answering(() => 'x'.repeat(1024 * 1024 + 10));
    const trace = await traceOf('const text = await fetch_big({});\nreturn text.length;', { tools: { fetch_big: big } });
    expect(trace.ok).toBe(true);
    expect(trace.calls[0]?.resultBytes).toBeGreaterThan(1024 * 1024);
    expect(unreplayable(trace)).toBe(`call #1 (fetch_big) returned ${trace.calls[0]?.resultBytes} bytes, too many to keep in a trace`);
    const why = refused(saveProgram(roots(), userRoot(), 'big', trace, ['fetch_big']));
    expect(why).toBe(`trace ${trace.id} cannot be saved: call #1 (fetch_big) returned ${trace.calls[0]?.resultBytes} bytes, too many to keep in a trace`);
    expect(existsSync(join(home(), 'programs', 'big'))).toBe(false);
  });

  it('refuses a run that ended while one of its calls was still running', async () => {
    let release: () => void = () => {};
    const slow: ProgramTool = () =>
      new Promise((resolve) => {
        release = () => resolve({ decision: { action: 'allow' }, ok: true, value: 1 });
      });
    const trace = await traceOf('await lookup({ department: "x" });\nslow({});\nreturn "left it running";', { tools: { lookup: staff, slow } });
    release();
    expect(trace.ok).toBe(true);
    expect(trace.calls.map((c) => [c.tool, c.decision === undefined])).toEqual([
      ['lookup', false],
      ['slow', true],
    ]);
    expect(refused(saveProgram(roots(), userRoot(), 'runaway', trace, []))).toContain('call #2 (slow) was still running when the program ended');
  });

  it('refuses the trace of a Python cell', async () => {
    const trace = { ...(await traceOf('return 1;')), runtime: 'python' as const };
    expect(refused(saveProgram(roots(), userRoot(), 'cell', trace, []))).toContain('Python cell');
  });

  it('refuses code whose declarations cannot be read, giving the line', async () => {
    const trace = await traceOf('// intent: bad declaration\n// param when: Date\nreturn 1;');
    const why = refused(saveProgram(roots(), userRoot(), 'dated', trace, []));
    expect(why).toMatch(/^the program's declarations cannot be read: line 2: parameter when: unknown type "Date"/);
  });

  it('refuses bad names before anything else, and writes nothing', async () => {
    const trace = await traceOf('return 1;');
    for (const name of ['Over', '../escape', 'a/b', '', 'x-y', 'a'.repeat(49)]) {
      expect(refused(saveProgram(roots(), userRoot(), name, trace, []))).toContain('cannot name a program');
    }
    const failed = await traceOf('throw new Error("x");');
    expect(refused(saveProgram(roots(), userRoot(), 'Bad', failed, []))).toContain('cannot name a program');
    expect(existsSync(join(home(), 'programs'))).toBe(false);
    expect(existsSync(join(base, 'escape'))).toBe(false);
  });

  it('lets the project hide a user program of the same name, and refuses a user save of a project name', async () => {
    const user = await saveCode('shared', 'return "user";');
    const project = await saveCode('shared', 'return "project";', projectRoot());
    expect(project.scope).toBe('project');
    expect(project.record.version).toBe(1);
    expect(project.dir).toBe(join(workspace(), '.fence', 'programs', 'shared'));
    await saveCode('only_user', 'return "mine";');

    expect(listPrograms(roots()).map((p) => [p.record.name, p.scope, p.code])).toEqual([
      ['only_user', 'user', 'return "mine";'],
      ['shared', 'project', 'return "project";'],
    ]);
    expect(programVersions(roots(), 'shared').map((p) => p.scope)).toEqual(['project']);
    const found = findProgram(roots(), 'shared');
    expect('error' in found ? found.error : found.scope).toBe('project');

    const why = refused(saveProgram(roots(), userRoot(), 'shared', await traceOf('return "user v2";'), []));
    expect(why).toContain('the project has a program "shared" already');
    expect(readdirSync(user.dir).sort()).toEqual(['v1.js', 'v1.json']);
    // The project may save a new version of its own.
    expect((await saveCode('shared', 'return "project v2";', projectRoot())).record.version).toBe(2);
  });

  it('lets a user program be listed when the project folder of that name holds nothing readable', async () => {
    await saveCode('shared', 'return "user";');
    mkdirSync(join(projectRoot().dir, 'shared'), { recursive: true });
    writeFileSync(join(projectRoot().dir, 'shared', 'v1.json'), 'not json');
    expect(listPrograms(roots()).map((p) => p.scope)).toEqual(['user']);
  });
});

describe('reading the store', () => {
  it('marks a hand-edited version as not intact, and approvedPrograms skips it', async () => {
    const v1 = await saveCode('over_limit', OVER_LIMIT);
    approve(v1);
    expect(offeredLabels()).toEqual(['over_limit@1']);

    writeFileSync(join(v1.dir, 'v1.js'), `${OVER_LIMIT}\nawait lookup({ department: "everyone" });`);
    const found = findProgram(roots(), 'over_limit@1');
    if ('error' in found) throw new Error(found.error);
    expect(found.intact).toBe(false);
    expect(approvedPrograms(roots(), home())).toEqual([]);

    // Putting the code back as it was makes it the approved code again.
    writeFileSync(join(v1.dir, 'v1.js'), OVER_LIMIT);
    expect(offeredLabels()).toEqual(['over_limit@1']);
  });

  it('offers the newest version the person approved whose code is the approved code, whatever the records say', async () => {
    // a: v1 and v2 approved, v3 only saved → v2.
    const a1 = await saveCode('alpha', 'return "a1";');
    const a2 = await saveCode('alpha', 'return "a2";');
    await saveCode('alpha', 'return "a3";');
    approve(a1);
    approve(a2);
    // b: v2 approved but edited by hand → v1.
    const b1 = await saveCode('bravo', 'return "b1";');
    const b2 = await saveCode('bravo', 'return "b2";');
    approve(b1);
    approve(b2);
    writeFileSync(join(b2.dir, 'v2.js'), 'return "b2 edited";');
    // c: approved, then revoked; and a v2 only saved → nothing.
    const c1 = await saveCode('charlie', 'return "c1";');
    await saveCode('charlie', 'return "c2";');
    approve(c1);
    revoke(c1);
    // d: approved for the user, but the project's d (only saved) hides it → nothing.
    const d = await saveCode('delta', 'return "d user";');
    approve(d);
    await saveCode('delta', 'return "d project";', projectRoot());
    // e: a project program the person approved → offered from the project.
    const e = await saveCode('echo', 'return "e";', projectRoot());
    approve(e);
    // f: v1 approved, v2 approved then revoked → v1 is still the newest approved one.
    const f1 = await saveCode('foxtrot', 'return "f1";');
    const f2 = await saveCode('foxtrot', 'return "f2";');
    approve(f1);
    approve(f2);
    revoke(f2);
    // g: an approval of other code than the file's → nothing.
    const g = await saveCode('golf', 'return "g";');
    approve(g, 'return "something else";');
    // h: records that say approved, with the right sha256, and no approval of the person's → nothing.
    const h = await saveCode('hotel', 'return "h";');
    const hp = await saveCode('india', 'return "i";', projectRoot());
    markApprovalsMigrated(home());
    setStatus(h, 'approved');
    setStatus(hp, 'approved');

    const offered = approvedPrograms(roots(), home());
    expect(offered.map((p) => [programLabel(p.record), p.scope])).toEqual([
      ['alpha@2', 'user'],
      ['bravo@1', 'user'],
      ['echo@1', 'project'],
      ['foxtrot@1', 'user'],
    ]);
    expect(offered.every((p) => p.approval?.sha256 === codeHash(p.code))).toBe(true);
    // The records were never touched: their status is not what offers them.
    expect(offered.every((p) => p.record.status === 'saved')).toBe(true);
    expect(offered.find((p) => p.record.name === 'alpha')?.code).toBe('return "a2";');
  });

  it('holds a project approval to the real path of its workspace', async () => {
    const program = await saveCode('deploy', 'return "deploy";', projectRoot());
    approve(program);
    const stored = readJson(approvalFile(home(), approvalTarget(projectRoot(), program) ?? { scope: 'user', name: 'x', version: 1 }));
    expect(stored).toMatchObject({ scope: 'project', workspace: realpathSync(workspace()), name: 'deploy', version: 1, sha256: codeHash('return "deploy";') });
    // Reached through a link, the workspace is the same one.
    const link = join(base, 'link-to-workspace');
    symlinkSync(workspace(), link);
    expect(approvedPrograms(programRoots(home(), link), home()).map((p) => programLabel(p.record))).toEqual(['deploy@1']);
    // A copy of the project elsewhere (another clone) has no approval.
    const clone = join(base, 'clone');
    mkdirSync(join(clone, '.fence', 'programs', 'deploy'), { recursive: true });
    for (const file of ['v1.js', 'v1.json']) writeFileSync(join(clone, '.fence', 'programs', 'deploy', file), readFileSync(join(program.dir, file)));
    expect(approvedPrograms(programRoots(home(), clone), home())).toEqual([]);
    // A project root that does not say its workspace offers nothing.
    expect(approvedPrograms([{ scope: 'project', dir: projectRoot().dir }], home())).toEqual([]);
  });

  it('orders versions by number, not as text', async () => {
    for (let i = 1; i <= 11; i++) await saveCode('many', `return ${i};`);
    expect(programVersions(roots(), 'many').map((p) => p.record.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const newest = findProgram(roots(), 'many');
    expect('error' in newest ? newest.error : newest.code).toBe('return 11;');
  });

  it('skips malformed and mismatched files without throwing', async () => {
    const good = await saveCode('over_limit', OVER_LIMIT);
    const dir = good.dir;
    const write = (file: string, text: string) => writeFileSync(join(dir, file), text);
    const record = (fields: Partial<ProgramRecord>) => JSON.stringify({ ...good.record, ...fields });
    write('v2.json', '{ not json');
    write('v2.js', 'return 2;');
    write('v3.json', 'null');
    write('v3.js', 'return 3;');
    write('v4.json', '[]');
    write('v4.js', 'return 4;');
    write('v5.json', record({ name: 'someone_else', version: 5 }));
    write('v5.js', 'return 5;');
    write('v6.json', record({ version: 7 }));
    write('v6.js', 'return 6;');
    write('v7.json', record({ version: 7 }));
    // v7.js is missing.
    write('v8.js', 'return 8; // no record');
    write('v9.json', record({ version: 9, sha256: 42 as unknown as string }));
    write('v9.js', 'return 9;');
    write('v10.json', '"a string"');
    write('v10.js', 'return 10;');
    write('v01.json', readFileSync(join(dir, 'v1.json'), 'utf8'));
    write('v1.json.tmp', '{ half written');
    write('notes.txt', 'not a version');
    mkdirSync(join(dir, 'v11.json'));
    // A version whose tests and tools are not lists still reads, with empty ones.
    write('v12.json', record({ version: 12, sha256: codeHash('return 12;'), tests: 'none' as never, tools: null as never }));
    write('v12.js', 'return 12;');
    // Folders that cannot be program names, and stray files in the root.
    mkdirSync(join(userRoot().dir, 'Not-A-Name'));
    writeFileSync(join(userRoot().dir, 'Not-A-Name', 'v1.json'), JSON.stringify({ ...good.record, name: 'Not-A-Name' }));
    writeFileSync(join(userRoot().dir, 'Not-A-Name', 'v1.js'), OVER_LIMIT);
    writeFileSync(join(userRoot().dir, 'README.md'), '# programs');
    mkdirSync(join(userRoot().dir, 'empty_folder'));

    let listed: SavedProgram[] = [];
    expect(() => {
      listed = listPrograms(roots());
    }).not.toThrow();
    expect(listed.map((p) => [p.record.name, p.record.version, p.intact])).toEqual([
      ['over_limit', 1, true],
      ['over_limit', 12, true],
    ]);
    const v12 = listed[1] as SavedProgram;
    expect(v12.record.tests).toEqual([]);
    expect(v12.record.tools).toEqual([]);
    expect(findProgram(roots(), 'over_limit@2')).toEqual({ error: 'over_limit has no version 2 (it has @1, @12)' });
    expect(findProgram(roots(), 'Not-A-Name')).toEqual({ error: 'no program "Not-A-Name" (see fence programs list)' });
    expect(() => approvedPrograms(roots(), home())).not.toThrow();
  });

  it('finds nothing, without throwing, when no root exists', () => {
    expect(listPrograms(roots())).toEqual([]);
    expect(programVersions(roots(), 'anything')).toEqual([]);
    expect(approvedPrograms(roots(), home())).toEqual([]);
    expect(listPrograms([{ scope: 'user', dir: join(base, 'no', 'such', 'folder') }])).toEqual([]);
  });

  it('treats a root that is a file as empty', () => {
    mkdirSync(join(home()), { recursive: true });
    writeFileSync(join(home(), 'programs'), 'a file, not a folder');
    expect(listPrograms(roots())).toEqual([]);
  });
});

describe('approvals kept in records before', () => {
  it('takes over, once, the user programs whose records say approved and whose code is intact', async () => {
    const kept = await saveCode('kept', 'return "kept";');
    const edited = await saveCode('edited', 'return "edited";');
    const saved = await saveCode('only_saved', 'return "saved";');
    const project = await saveCode('shipped', 'return "shipped";', projectRoot());
    for (const program of [kept, edited, project]) setStatus(program, 'approved');
    writeFileSync(join(edited.dir, 'v1.js'), 'return "edited by hand";');

    expect(offeredLabels()).toEqual(['kept@1']);
    const approval = readApproval(home(), { scope: 'user', name: 'kept', version: 1 });
    expect(approval?.sha256).toBe(codeHash('return "kept";'));
    expect(statSync(approvalsDir(home())).mode & 0o777).toBe(0o700);
    expect(statSync(approvalFile(home(), { scope: 'user', name: 'kept', version: 1 })).mode & 0o777).toBe(0o600);
    expect(readApproval(home(), { scope: 'user', name: 'edited', version: 1 })).toBeUndefined();
    expect(readApproval(home(), { scope: 'user', name: 'only_saved', version: 1 })).toBeUndefined();
    expect(saved.record.status).toBe('saved');

    // Once only: a record that says approved afterwards (written by anyone) is not taken over,
    // and a revoked approval does not come back from its record.
    setStatus(saved, 'approved');
    revoke(kept);
    expect(offeredLabels()).toEqual([]);
    expect(readApproval(home(), { scope: 'user', name: 'only_saved', version: 1 })).toBeUndefined();
  });
});

describe('findProgram', () => {
  it('gives the newest version, or the one named', async () => {
    await saveCode('over_limit', OVER_LIMIT);
    await saveCode('over_limit', `${OVER_LIMIT}\n// two`);
    const newest = findProgram(roots(), 'over_limit');
    const first = findProgram(roots(), 'over_limit@1');
    expect('error' in newest ? newest.error : newest.record.version).toBe(2);
    expect('error' in first ? first.error : first.code).toBe(OVER_LIMIT);
  });

  it('explains an unknown name, an unknown version and a malformed reference', async () => {
    await saveCode('over_limit', OVER_LIMIT);
    await saveCode('over_limit', `${OVER_LIMIT}\n// two`);
    expect(findProgram(roots(), 'nope')).toEqual({ error: 'no program "nope" (see fence programs list)' });
    expect(findProgram(roots(), 'nope@1')).toEqual({ error: 'no program "nope" (see fence programs list)' });
    expect(findProgram(roots(), 'over_limit@5')).toEqual({ error: 'over_limit has no version 5 (it has @1, @2)' });
    expect(findProgram(roots(), 'over_limit@0')).toEqual({ error: 'over_limit has no version 0 (it has @1, @2)' });
    for (const ref of ['', '@2', 'over_limit@', 'over_limit@two', 'over limit']) {
      expect(findProgram(roots(), ref)).toEqual({ error: `"${ref}" is not a program reference: write name or name@version` });
    }
  });

  it('does not reach outside the roots through the reference', async () => {
    const program = await saveCode('over_limit', OVER_LIMIT);
    // A record placed where "../<name>" would lead, naming itself so.
    const outside = join(home(), 'over_limit');
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'v1.js'), OVER_LIMIT);
    writeFileSync(join(outside, 'v1.json'), JSON.stringify({ ...program.record, name: '../over_limit' }));
    expect(findProgram(roots(), '../over_limit')).toEqual({ error: 'no program "../over_limit" (see fence programs list)' });
    expect(programVersions(roots(), '../over_limit')).toEqual([]);
    expect(findProgram(roots(), '../../home/programs/over_limit')).toHaveProperty('error');
  });
});

describe('testFromTrace', () => {
  it('records each call, a failed one with its error, and the arguments and limits', async () => {
    const denied: ProgramTool = async () => ({ decision: { action: 'deny', reason: 'no' }, ok: false, error: 'read denied: no' });
    const nothing = answering(() => undefined);
    const code = [
      'const people = await lookup({ department: args.department });',
      'let note;',
      'try { await read({ path: "secret" }); } catch (e) { note = e.message; }',
      'await ping({ n: 1 });',
      'print(note);',
      'return { count: people.length, note };',
    ].join('\n');
    const trace = await traceOf(code, { tools: { lookup: staff, read: denied, ping: nothing }, args: { department: 'sales' } });
    expect(unreplayable(trace)).toBeUndefined();
    const test = testFromTrace(trace);
    expect(test).toEqual({
      fromTrace: trace.id,
      recordedAt: expect.any(String) as unknown as string,
      args: { department: 'sales' },
      calls: [
        { tool: 'lookup', args: { department: 'sales' }, ok: true, result: [{ name: 'grace', spent: 900 }] },
        { tool: 'read', args: { path: 'secret' }, ok: false, error: 'read denied: no' },
        { tool: 'ping', args: { n: 1 }, ok: true },
      ],
      expect: { ok: true, stdout: 'read denied: no\n', result: { count: 1, note: 'read denied: no' } },
      limits: trace.limits,
    });
  });

  it('records a failed run with its error kind and message', async () => {
    const trace = await traceOf('print("a");\nnull.x;');
    const test = testFromTrace(trace);
    expect(test.expect.ok).toBe(false);
    expect(test.expect.stdout).toBe('a\n');
    expect(test.expect.error?.kind).toBe('thrown');
    expect(test.expect.error?.message).toMatch(/^TypeError/);
    expect(test.expect.error).not.toHaveProperty('line');
  });
});

describe('toolsOfProgram', () => {
  it('adds the known tools the code names but did not call, and only whole names', async () => {
    const code = [
      '// intent: maybe write',
      'const people = await lookup({ department: "engineering" });',
      'if (people.length > 100) await write({ path: "big.txt", text: "many" });',
      'if (false) await tools.notify({});',
      'const readFile = 1, $read = 2, read_all = 3, myread = 4, reader = 5;',
      'const o = { grepx: 1, xgrep: 2 };',
      'return [readFile, $read, read_all, myread, reader, o];',
    ].join('\n');
    const trace = await traceOf(code);
    expect(trace.ok).toBe(true);
    expect(trace.calls.map((c) => c.tool)).toEqual(['lookup']);
    const known = ['write', 'read', 'notify', 'grep', 'lookup', 'delete', 'a.b', 'w+'];
    expect(toolsOfProgram(trace, known)).toEqual(['lookup', 'notify', 'write']);
  });

  it('keeps tools the run called even when they are not among the known, once each, sorted', async () => {
    const code = 'await zeta({});\nawait alpha({});\nawait zeta({});\nreturn 1;';
    const trace = await traceOf(code, { tools: { zeta: answering(() => 1), alpha: answering(() => 2) } });
    expect(toolsOfProgram(trace, [])).toEqual(['alpha', 'zeta']);
    expect(toolsOfProgram(trace, ['zeta', 'alpha', 'alpha'])).toEqual(['alpha', 'zeta']);
  });

  it('treats names with regular expression characters literally', async () => {
    const trace = await traceOf('const value = 1;\nreturn value;', { tools: {} });
    expect(toolsOfProgram(trace, ['v.lue', 'val*', '(value)', 'value'])).toEqual(['value']);
  });

  it('is what a saved record lists', async () => {
    const code = 'const people = await lookup({ department: "x" });\nif (!people) await write({});\nreturn people.length;';
    const program = saved(saveProgram(roots(), userRoot(), 'counting', await traceOf(code), ['write', 'read', 'lookup']));
    expect(program.record.tools).toEqual(['lookup', 'write']);
  });
});

describe('writeRecord', () => {
  it('replaces a record whole through a temporary file it does not leave behind', async () => {
    const program = await saveCode('over_limit', OVER_LIMIT);
    const approvedAt = '2026-03-01T12:00:00.000Z';
    writeRecord(program.dir, { ...program.record, status: 'approved', approvedAt });
    expect(readdirSync(program.dir).sort()).toEqual(['v1.js', 'v1.json']);
    expect(readJson(join(program.dir, 'v1.json'))).toEqual({ ...program.record, status: 'approved', approvedAt });
    const found = findProgram(roots(), 'over_limit');
    expect('error' in found ? found.error : [found.record.status, found.intact]).toEqual(['approved', true]);
  });
});

describe('saving next to another save', () => {
  it('takes the next number when a version file of the number it chose appears first, and says when it cannot write', async () => {
    const { trace } = await runProgram({ code: 'return 1;', tools: {}, session: { id: 's', dir: join(base, 'session') } });
    const user = programRoots(home(), workspace())[1] as ProgramRoot;
    const dir = join(user.dir, 'racer');
    mkdirSync(dir, { recursive: true });
    // Another process is writing v1: its code is there, its record not yet.
    writeFileSync(join(dir, 'v1.js'), 'return 0;');
    const saved = saveProgram(programRoots(home(), workspace()), user, 'racer', trace, []);
    expect('error' in saved ? saved.error : saved.record.version).toBe(2);
    expect(readFileSync(join(dir, 'v1.js'), 'utf8')).toBe('return 0;');

    const blocked = { scope: 'user' as const, dir: join(base, 'file-not-folder') };
    writeFileSync(blocked.dir, 'x');
    const refused = saveProgram([blocked], blocked, 'racer', trace, []);
    expect('error' in refused ? refused.error : '').toMatch(/^cannot write in .*file-not-folder\/racer: (ENOTDIR|EEXIST)$/);
  });
});
