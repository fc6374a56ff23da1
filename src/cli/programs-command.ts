import { join } from 'node:path';
import { fenceHome } from '../config/paths';
import { isUsable, workspaceTrust } from '../config/trust';
import { readSessionInfo } from '../conversation/session-store';
import { removeApproval, writeApproval, type Approval } from '../ptc/approvals';
import { keepTrace, parameterText, problemLines } from '../ptc/keep-trace';
import { parseSignature } from '../ptc/program-params';
import type { ReplayOutcome } from '../ptc/replay-test';
import {
  approvalCovers,
  approvalTarget,
  approvedPrograms,
  checkProgramName,
  codeHash,
  findProgram,
  listPrograms,
  newestSavableTrace,
  parseProgramRef,
  personalApproval,
  programLabel,
  programRoots,
  programVersions,
  testFromTrace,
  unreadableVersions,
  unreplayable,
  writeRecord,
  type ProgramRecord,
  type ProgramRoot,
  type SavedProgram,
} from '../ptc/saved-programs';
import { findTrace, type ProgramTrace } from '../ptc/trace';
import { visibleControls, visibleLine } from '../processes/visible-text';
import { resolveWorkspace } from '../session/workspace';
import { colorEnabled, createStyle } from '../tui/terminal-style';

/** Options every `fence programs` command takes: the workspace whose `.fence/programs/` counts. */
export interface ProgramsOptions {
  workspace?: string;
}

const out = (line = '') => process.stdout.write(`${line}\n`);
const fail = (line: string) => {
  process.stderr.write(`fence: ${line}\n`);
  return 1;
};

/** The roots for the options' workspace, or an error line. */
function rootsFor(options: ProgramsOptions): ProgramRoot[] | { error: string } {
  const workspace = resolveWorkspace(options.workspace);
  if ('error' in workspace) return workspace;
  return programRoots(fenceHome(), workspace.path);
}

/** The root a version was found in. */
function rootOf(roots: readonly ProgramRoot[], program: SavedProgram): ProgramRoot {
  return roots.find((root) => root.scope === program.scope) ?? { scope: program.scope, dir: program.dir };
}

/** How a version stands for the person: its status as listed, and a sentence when its record claims more than the person gave. */
interface Standing {
  status: string;
  approval?: Approval;
  /** True when the person's approval no longer covers the version (other code, or tools it did not name). */
  approvalStale: boolean;
  /** For a record that says approved where the person did not approve it. */
  suggestion?: string;
}

/**
 * A version's standing: approved (by the person, offered when it is the version `offered`
 * names), `suggested` when only its record says approved, else the record's status; `changed`
 * added when the code is not what was approved or saved.
 */
function standingOf(program: SavedProgram, roots: readonly ProgramRoot[], offered: ReadonlySet<string>): Standing {
  const { record } = program;
  const label = programLabel(record);
  const approval = personalApproval(fenceHome(), rootOf(roots, program), program);
  if (approval) {
    const stale = !approvalCovers(approval, program);
    return { status: offered.has(label) ? 'approved, offered' : stale ? 'approved, changed' : 'approved', approval, approvalStale: stale };
  }
  const changed = program.intact ? '' : ', changed';
  if (record.status !== 'approved') return { status: `${record.status}${changed}`, approvalStale: false };
  const by = program.scope === 'project' ? 'approved by the project (not by you)' : 'its record says approved, but you did not approve it';
  return { status: `suggested${changed}`, approvalStale: false, suggestion: `${by}: fence programs approve ${label} to offer it` };
}

/** Writes a record; the reason when it cannot. */
function tryWriteRecord(program: SavedProgram): string | undefined {
  try {
    writeRecord(program.dir, program.record);
    return undefined;
  } catch (error) {
    return `cannot write ${join(program.dir, `v${program.record.version}.json`)}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
}

/**
 * `fence programs save <name> [--from-trace <id>] [--project]`: keeps a trace's program (by
 * default the newest program run that worked) as the next version of `name` (see
 * `keepTrace`). The name is checked first, before the workspace or any trace is looked at.
 * Returns the exit code.
 */
export async function saveProgramCommand(name: string, options: ProgramsOptions & { fromTrace?: string; project?: boolean }): Promise<number> {
  const badName = checkProgramName(name);
  if (badName) return fail(badName);
  const roots = rootsFor(options);
  if ('error' in roots) return fail(roots.error);
  let trace: ProgramTrace;
  if (options.fromTrace !== undefined) {
    const found = findTrace(fenceHome(), options.fromTrace);
    if ('error' in found) return fail(found.error);
    trace = found.trace;
  } else {
    const newest = newestSavableTrace(fenceHome());
    if (!newest) return fail('no program run has worked yet: there is nothing to save (see fence trace list)');
    trace = newest;
    out(`from trace ${trace.id} (${trace.createdAt.slice(0, 19).replace('T', ' ')}), the newest program run that worked`);
  }
  const known = readSessionInfo(join(fenceHome(), 'sessions', trace.sessionId))?.tools ?? [];
  const kept = await keepTrace(roots, name, trace, options.project === true, known);
  if ('error' in kept) return fail(kept.error);
  for (const line of kept.lines) out(line);
  return 0;
}

/**
 * `fence programs test [<name>[@version]] [--add-test <trace>]`: replays the version's recorded
 * tests (after adding the trace as one, when given) with no tool, server or model; without a
 * name, those of every approved and every newest version (see `testEveryProgram`). Exit code 0
 * when every test passes, 1 otherwise.
 */
export async function testProgramCommand(ref: string | undefined, options: ProgramsOptions & { addTest?: string }): Promise<number> {
  const roots = rootsFor(options);
  if ('error' in roots) return fail(roots.error);
  if (ref === undefined) {
    if (options.addTest !== undefined) return fail('--add-test needs the program to add the test to: fence programs test <name> --add-test <trace>');
    return testEveryProgram(roots);
  }
  const program = findProgram(roots, ref);
  if ('error' in program) return fail(program.error);
  const label = programLabel(program.record);
  if (options.addTest !== undefined) {
    const added = addTest(program, options.addTest);
    if (added) return fail(added);
    out(`added a test from trace ${options.addTest} to ${label}`);
  }
  if (!program.intact) out(`warning: v${program.record.version}.js changed since it was saved (its sha256 differs); testing the file as it is now`);
  const results = await runTests(program);
  const passed = results.filter((r) => r.passed).length;
  out(`${results.length === passed ? 'ok' : 'FAILED'}: ${passed} of ${results.length} test${results.length === 1 ? '' : 's'} of ${label} passed`);
  return results.length > 0 && passed === results.length ? 0 : 1;
}

/**
 * `fence programs test` with no name, as a check for CI: replays the tests of every version
 * whose record says approved (a project's suggestion, which is what CI, with no approvals of
 * its own, can check), of every version the person approved, and of each program's newest
 * version. One of these whose code changed since it was saved or approved fails (the approval
 * no longer covers it), as does a version file that cannot be read. Exit code 0 when all pass.
 */
async function testEveryProgram(roots: readonly ProgramRoot[]): Promise<number> {
  const programs = listPrograms(roots);
  const unreadable = unreadableVersions(roots);
  for (const problem of unreadable) out(`✗ ${problem}`);
  const newest = new Map(programs.map((program) => [program.record.name, program.record.version]));
  const approvals = new Map(programs.map((p) => [p, personalApproval(fenceHome(), rootOf(roots, p), p)]));
  const chosen = programs.filter((p) => p.record.status === 'approved' || approvals.get(p) || newest.get(p.record.name) === p.record.version);
  if (chosen.length === 0) {
    out(unreadable.length > 0 ? 'FAILED: no version could be read' : 'no saved programs to test');
    return unreadable.length > 0 ? 1 : 0;
  }
  const failed: string[] = unreadable.length > 0 ? ['unreadable versions'] : [];
  for (const program of chosen) {
    const label = programLabel(program.record);
    out(`${label} (${program.record.status}, ${program.scope} programs)`);
    if (!program.intact && program.record.status === 'approved') {
      out(`✗ v${program.record.version}.js changed since it was approved (its sha256 differs)`);
      failed.push(label);
      continue;
    }
    const approval = approvals.get(program);
    if (approval && !approvalCovers(approval, program)) {
      out(`✗ ${programLabel(program.record)} changed since you approved it (${approval.sha256 === codeHash(program.code) ? 'its record names other tools' : 'its sha256 differs'})`);
      failed.push(label);
      continue;
    }
    const results = await runTests(program);
    if (results.length === 0 || results.some((result) => !result.passed)) failed.push(label);
  }
  out(failed.length === 0 ? `ok: ${chosen.length} version${chosen.length === 1 ? '' : 's'} tested` : `FAILED: ${failed.join(', ')}`);
  return failed.length === 0 ? 0 : 1;
}

/** Adds a trace of the version's own code as a test; the reason when it cannot. */
function addTest(program: SavedProgram, traceId: string): string | undefined {
  const found = findTrace(fenceHome(), traceId);
  if ('error' in found) return found.error;
  const { trace } = found;
  if (codeHash(trace.code) !== program.record.sha256) return `trace ${trace.id} ran other code than ${programLabel(program.record)}; a test must come from a run of the same code`;
  const why = unreplayable(trace);
  if (why) return `trace ${trace.id} cannot be a test: ${why}`;
  if (program.record.tests.some((test) => test.fromTrace === trace.id)) return `${programLabel(program.record)} has a test from trace ${trace.id} already`;
  program.record.tests.push(testFromTrace(trace));
  writeRecord(program.dir, program.record);
  return undefined;
}

/** Replays every test of a version, printing a line per test and its problems. */
async function runTests(program: SavedProgram): Promise<ReplayOutcome[]> {
  const { replayTest } = await import('../ptc/replay-test');
  const results: ReplayOutcome[] = [];
  for (const [index, test] of program.record.tests.entries()) {
    const result = await replayTest(program.code, test, { tools: program.record.tools });
    results.push(result);
    out(`${result.passed ? '✓' : '✗'} test ${index + 1} (trace ${test.fromTrace}, ${test.calls.length} calls)`);
    if (!result.passed) out(problemLines(result));
  }
  return results;
}

/** `fence programs list`: every version, one line each; version files that cannot be read are named on stderr. Returns the exit code. */
export function listProgramsCommand(options: ProgramsOptions): number {
  const roots = rootsFor(options);
  if ('error' in roots) return fail(roots.error);
  const programs = listPrograms(roots);
  for (const problem of unreadableVersions(roots)) process.stderr.write(`fence: left out: ${problem}\n`);
  if (programs.length === 0) {
    out('no saved programs yet (fence programs save <name> keeps the newest program run that worked)');
    return 0;
  }
  const offered = offeredHere(roots);
  const suggestions: string[] = [];
  for (const program of programs) {
    const { record } = program;
    const label = programLabel(record);
    const { status, suggestion } = standingOf(program, roots, offered);
    if (suggestion) suggestions.push(`${label}: ${suggestion}`);
    const tests = `${record.tests.length} test${record.tests.length === 1 ? '' : 's'}`;
    out(`${label.padEnd(24)} ${status.padEnd(18)} ${program.scope.padEnd(8)} ${tests.padEnd(8)} ${visibleLine(record.intent ?? '')}`.trimEnd());
  }
  if (suggestions.length > 0) {
    out();
    out('suggested: not offered to the model until you approve them yourself');
    for (const line of suggestions) out(`  ${line}`);
  }
  const project = roots.find((root) => root.scope === 'project');
  if (project && !projectTrusted(project) && programs.some((program) => program.scope === 'project')) {
    out();
    out("this folder is not trusted, so none of its project programs is offered, approved or not (fence trust)");
  }
  return 0;
}

/** Whether a project root's folder is trusted as it is now (see `workspaceTrust`): only then are its programs offered. */
function projectTrusted(root: ProgramRoot): boolean {
  return root.workspace === undefined || isUsable(workspaceTrust(root.workspace));
}

/** The labels of the versions new sessions here offer: a project's only when its folder is trusted. */
function offeredHere(roots: readonly ProgramRoot[]): Set<string> {
  const usable = roots.filter((root) => root.scope !== 'project' || projectTrusted(root));
  return new Set(approvedPrograms(usable, fenceHome()).map((p) => programLabel(p.record)));
}

/** `fence programs show <name>[@version]`: a version's record and code. Returns the exit code. */
export function showProgramCommand(ref: string, options: ProgramsOptions): number {
  const roots = rootsFor(options);
  if ('error' in roots) return fail(roots.error);
  const program = findProgram(roots, ref);
  if ('error' in program) return fail(program.error);
  const { record } = program;
  const signature = parseSignature(program.code);
  const offered = offeredHere(roots);
  const standing = standingOf(program, roots, offered);
  const status = standing.approval ? standing.status.replace(', changed', '') : record.status === 'approved' ? 'suggested' : record.status;
  const when = (iso: string) => iso.slice(0, 19).replace('T', ' ');
  out(`${programLabel(record)} · ${status}${program.intact ? '' : ' · CHANGED since saved (sha256 differs)'} · ${program.scope} programs`);
  out(`file ${join(program.dir, `v${record.version}.js`)}`);
  out(`sha256 ${record.sha256}`);
  out(`saved ${when(record.savedAt)} from trace ${record.fromTrace} (session ${record.sessionId})`);
  if (standing.approval) {
    out(`approved by you ${when(standing.approval.approvedAt)}`);
    if (standing.approvalStale) {
      const what = standing.approval.sha256 === codeHash(program.code) ? `other tools (${standing.approval.tools.join(', ') || 'none'})` : `other code (sha256 ${standing.approval.sha256})`;
      out(`  of ${what}: the version changed since, so it is not offered`);
    }
  }
  if (standing.suggestion) out(standing.suggestion);
  if (record.revokedAt) out(`revoked ${when(record.revokedAt)}`);
  out(`intent: ${visibleLine(record.intent ?? '(none)')}`);
  out(`calls: ${record.tools.join(', ') || 'no tools'}`);
  out('parameters:');
  if (signature.parameters.length === 0) out('  (none)');
  for (const p of signature.parameters) out(`  ${parameterText(p)}${p.description ? ` — ${p.description}` : ''}`);
  if (signature.returns) out(`returns: ${signature.returns}`);
  out(`tests (${record.tests.length}):`);
  for (const [i, test] of record.tests.entries()) {
    const args = test.args === undefined ? '' : ` with args ${JSON.stringify(test.args)}`;
    out(`  ${i + 1}. trace ${test.fromTrace}${args}: ${test.calls.length} calls, ${test.expect.ok ? 'works' : `fails (${test.expect.error?.kind})`}`);
  }
  out();
  out('code:');
  // The code a person approves: every character shown, none acted on by the terminal.
  program.code.replace(/\n$/, '').split('\n').forEach((line, i) => out(`  ${String(i + 1).padStart(3)} | ${visibleControls(line)}`));
  return 0;
}

/**
 * `fence programs diff <name>[@b] [<name>@a | @a]`: the code of version a against version b.
 * By default b is the newest and a the one before it. Returns the exit code.
 */
export async function diffProgramCommand(ref: string, other: string | undefined, options: ProgramsOptions): Promise<number> {
  const roots = rootsFor(options);
  if ('error' in roots) return fail(roots.error);
  const newer = findProgram(roots, ref);
  if ('error' in newer) return fail(newer.error);
  const { name } = newer.record;
  let older: SavedProgram | { error: string };
  if (other !== undefined) {
    const parsed = parseProgramRef(other.startsWith('@') ? `${name}${other}` : other);
    older = parsed?.version === undefined ? { error: `"${other}" names no version: write ${name}@<version>` } : findProgram(roots, `${parsed.name}@${parsed.version}`);
  } else {
    const versions = programVersions(roots, name).filter((v) => v.record.version < newer.record.version);
    older = versions[versions.length - 1] ?? { error: `${programLabel(newer.record)} is the first version: nothing to compare it with` };
  }
  if ('error' in older) return fail(older.error);
  // Older first, whichever order they were named in.
  const [a, b] = older.record.version <= newer.record.version ? [older, newer] : [newer, older];
  const style = createStyle(colorEnabled(process.stdout));
  out(`${programLabel(a.record)} → ${programLabel(b.record)}`);
  if (a.record.intent !== b.record.intent) out(`intent: ${visibleLine(a.record.intent ?? '(none)')} → ${visibleLine(b.record.intent ?? '(none)')}`);
  if (a.record.tools.join() !== b.record.tools.join()) out(`calls: ${a.record.tools.join(', ')} → ${b.record.tools.join(', ')}`);
  const { renderFileChange } = await import('../tui/diff-view');
  const lines = renderFileChange({ kind: 'diff', path: `${name}.js`, before: a.code, after: b.code, created: false }, style, 10_000);
  for (const line of lines) out(line);
  return 0;
}

/**
 * `fence programs approve <name>@<version>`: once its tests pass on the code as saved, records
 * the person's approval of that code (see `approvals.ts`), so the version is offered to the
 * model from the next session on. The record is marked approved too, when it is not: for a
 * project program, that is the project's suggestion to its other users and what its CI tests.
 * Returns the exit code.
 */
export async function approveProgramCommand(ref: string, options: ProgramsOptions): Promise<number> {
  const found = exactVersion(ref, options, 'approve');
  if ('error' in found) return fail(found.error);
  const { program, roots } = found;
  const label = programLabel(program.record);
  if (!program.intact) return fail(`${label} was changed since it was saved (its sha256 differs): save the changed program from a trace of its run as a new version`);
  if (program.record.tests.length === 0) return fail(`${label} has no tests: add one with fence programs test ${label} --add-test <trace>`);
  const results = await runTests(program);
  if (results.some((r) => !r.passed)) return fail(`${label} not approved: its tests fail`);
  const target = approvalTarget(rootOf(roots, program), program);
  if (!target) return fail(`${label} cannot be approved: its workspace is not known`);
  // The code approved is the code just tested, as read: a change to the file since is not covered.
  const approvedAt = new Date().toISOString();
  const notWritten = writeApproval(fenceHome(), { ...target, sha256: codeHash(program.code), tools: program.record.tools, approvedAt });
  if (notWritten) return fail(notWritten);
  if (program.record.status !== 'approved') {
    const marked = markRecord(program, 'approved', approvedAt);
    if (marked) out(`note: ${marked}`);
  }
  const offered = approvedPrograms(roots, fenceHome()).find((p) => p.record.name === program.record.name);
  out(`approved ${label}`);
  if (offered && offered.record.version !== program.record.version) {
    out(`note: ${programLabel(offered.record)} is newer and approved, so it is the one offered as ${program.record.name}`);
  } else {
    out(`new sessions offer it as the tool ${program.record.name} (to the model and to programs)`);
  }
  return 0;
}

/**
 * `fence programs revoke <name>@<version>`: removes the person's approval, so the version is no
 * longer offered, and marks a record that says approved as revoked. Returns the exit code.
 */
export function revokeProgramCommand(ref: string, options: ProgramsOptions): number {
  const found = exactVersion(ref, options, 'revoke');
  if ('error' in found) return fail(found.error);
  const { program, roots } = found;
  const label = programLabel(program.record);
  const root = rootOf(roots, program);
  const approval = personalApproval(fenceHome(), root, program);
  if (!approval && program.record.status !== 'approved') return fail(`${label} is not approved (it is ${program.record.status})`);
  const target = approvalTarget(root, program);
  const notRemoved = approval && target ? removeApproval(fenceHome(), target) : undefined;
  if (notRemoved) return fail(notRemoved);
  if (program.record.status === 'approved') {
    const marked = markRecord(program, 'revoked', new Date().toISOString());
    if (marked) out(`note: ${marked}`);
  }
  const offered = approvedPrograms(roots, fenceHome()).find((p) => p.record.name === program.record.name);
  out(`revoked ${label}`);
  out(offered ? `new sessions offer ${programLabel(offered.record)} as ${program.record.name} instead` : `new sessions no longer offer ${program.record.name}`);
  return 0;
}

/** Sets the status a version's record shows (approved or revoked, with the time); the reason when it cannot be written. */
function markRecord(program: SavedProgram, status: 'approved' | 'revoked', at: string): string | undefined {
  const record: ProgramRecord = program.record;
  record.status = status;
  if (status === 'approved') {
    record.approvedAt = at;
    delete record.revokedAt;
  } else {
    record.revokedAt = at;
  }
  return tryWriteRecord(program);
}

/** The version a reference names exactly (approving and revoking need `name@version`). */
function exactVersion(ref: string, options: ProgramsOptions, verb: string): { program: SavedProgram; roots: ProgramRoot[] } | { error: string } {
  const roots = rootsFor(options);
  if ('error' in roots) return roots;
  const parsed = parseProgramRef(ref);
  if (parsed && parsed.version === undefined) {
    const versions = programVersions(roots, parsed.name).map((v) => programLabel(v.record));
    return { error: `say which version to ${verb}: ${versions.length > 0 ? versions.join(', ') : `${parsed.name}@<version>`}` };
  }
  const program = findProgram(roots, ref);
  return 'error' in program ? program : { program, roots };
}
