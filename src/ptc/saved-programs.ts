import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { makePrivateFolder, writePrivateFile } from '../config/private-data';
import type { VmLimits } from '../program-vm/run-in-vm';
import { approvalsMigrated, markApprovalsMigrated, readApproval, realWorkspace, writeApproval, type Approval, type ApprovalTarget } from './approvals';
import { parseSignature } from './program-params';
import { listTraces, type ProgramTrace } from './trace';

/**
 * Procedural memory: programs that worked once, kept as plain files a person can read and
 * review in git. A program's versions live in a folder of its name:
 *
 *     programs/over_limit/v1.js     the code, exactly as it ran
 *     programs/over_limit/v1.json   its record: sha256, intent, tools, status, tests
 *
 * under `$FENCE_HOME/programs/` (the user's) or `<workspace>/.fence/programs/` (the
 * project's; a project program hides a user program of the same name). What is offered to the
 * model is decided by the person's approvals, kept apart (see `approvals.ts`), not by the
 * records.
 */
export type ProgramScope = 'project' | 'user';

/** One place programs are kept. */
export interface ProgramRoot {
  scope: ProgramScope;
  dir: string;
  /** The project's workspace, for the project's root: its approvals are of that workspace. */
  workspace?: string;
}

/** One tool call as a test replays it: what the program asked and what it got. */
export interface RecordedCall {
  tool: string;
  args: unknown;
  ok: boolean;
  result?: unknown;
  error?: string;
}

/** A recorded run: the arguments, every call's outcome, and what the program must come to. */
export interface ProgramTest {
  /** The trace it was recorded from. */
  fromTrace: string;
  recordedAt: string;
  args?: unknown;
  calls: RecordedCall[];
  expect: { ok: boolean; stdout: string; result?: unknown; error?: { kind: string; message: string } };
  /** The sandbox limits of the recorded run, so the replay runs under the same. */
  limits?: VmLimits;
}

/**
 * What a version's record says of it: kept, approved, or withdrawn. It grants nothing: a
 * project's `approved` is its suggestion (and what its CI tests); a version is offered only
 * with the person's approval of its code (see `approvedPrograms`).
 */
export type ProgramStatus = 'saved' | 'approved' | 'revoked';

/** The record of one version (`v<N>.json`). */
export interface ProgramRecord {
  name: string;
  version: number;
  sha256: string;
  savedAt: string;
  intent?: string;
  /** The tools the code may call: those the recorded run called and those it names. */
  tools: string[];
  /** The trace and session it was saved from. */
  fromTrace: string;
  sessionId: string;
  status: ProgramStatus;
  approvedAt?: string;
  revokedAt?: string;
  tests: ProgramTest[];
}

/** A version as found on disk. */
export interface SavedProgram {
  scope: ProgramScope;
  /** The program's folder. */
  dir: string;
  record: ProgramRecord;
  code: string;
  /** False when the code file no longer has the sha256 it was saved with (edited by hand). */
  intact: boolean;
  /** The person's approval of exactly this code, on the versions `approvedPrograms` offers. */
  approval?: Approval;
}

/** Names become tool names: lower-case letters, digits and `_`, starting with a letter. */
const PROGRAM_NAME = /^[a-z][a-z0-9_]{0,47}$/;

/** The places programs are kept for a workspace, the project's first. */
export function programRoots(home: string, workspace: string): ProgramRoot[] {
  return [
    { scope: 'project', dir: join(workspace, '.fence', 'programs'), workspace },
    { scope: 'user', dir: join(home, 'programs') },
  ];
}

/** Why a name cannot be a program's, or undefined when it can. */
export function checkProgramName(name: string): string | undefined {
  return PROGRAM_NAME.test(name)
    ? undefined
    : `"${name}" cannot name a program: use lower-case letters, digits and _, starting with a letter (it becomes a tool name)`;
}

/** `name@3` → name and version; `name` alone → no version. Undefined when malformed. */
export function parseProgramRef(ref: string): { name: string; version?: number } | undefined {
  const match = /^([^@\s]+)(?:@(\d+))?$/.exec(ref.trim());
  if (!match?.[1]) return undefined;
  return match[2] === undefined ? { name: match[1] } : { name: match[1], version: Number(match[2]) };
}

/** The label of a version: `over_limit@2`. */
export function programLabel(record: Pick<ProgramRecord, 'name' | 'version'>): string {
  return `${record.name}@${record.version}`;
}

/** The sha256 of a program's code, as hex. */
export function codeHash(code: string): string {
  return createHash('sha256').update(code).digest('hex');
}

/**
 * Every readable version in the roots, by name then version. A name found in several roots is
 * taken from the first only (the project's). Unreadable files are skipped.
 */
export function listPrograms(roots: readonly ProgramRoot[]): SavedProgram[] {
  const found: SavedProgram[] = [];
  const seen = new Set<string>();
  for (const root of roots) {
    for (const name of safeReaddir(root.dir).sort()) {
      if (seen.has(name) || checkProgramName(name)) continue;
      const versions = readVersions(root, name);
      if (versions.length === 0) continue;
      seen.add(name);
      found.push(...versions);
    }
  }
  return found.sort((a, b) => a.record.name.localeCompare(b.record.name) || a.record.version - b.record.version);
}

/** The versions of one name in the first root that has it, oldest first. */
export function programVersions(roots: readonly ProgramRoot[], name: string): SavedProgram[] {
  // Only program names, as listPrograms: `../x` must not lead out of the roots.
  if (checkProgramName(name)) return [];
  for (const root of roots) {
    const versions = readVersions(root, name);
    if (versions.length > 0) return versions;
  }
  return [];
}

/** The version a reference names (the newest when it gives none), or why there is none. */
export function findProgram(roots: readonly ProgramRoot[], ref: string): SavedProgram | { error: string } {
  const parsed = parseProgramRef(ref);
  if (!parsed) return { error: `"${ref}" is not a program reference: write name or name@version` };
  const versions = programVersions(roots, parsed.name);
  if (versions.length === 0) return { error: `no program "${parsed.name}" (see fence programs list)` };
  if (parsed.version === undefined) return versions[versions.length - 1] as SavedProgram;
  const exact = versions.find((v) => v.record.version === parsed.version);
  if (exact) return exact;
  return { error: `${parsed.name} has no version ${parsed.version} (it has ${versions.map((v) => `@${v.record.version}`).join(', ')})` };
}

/**
 * The versions offered as tools: for each name (taken from the first root that has a readable
 * version of it, as `listPrograms` does) the newest version the person approved (see
 * `approvals.ts`, under `home`) whose code on disk has the sha256 approved and whose record
 * names no tool the approval did not (see `approvalCovers`). What a record says
 * of itself counts for nothing here. Each comes with its approval and the code as read and
 * hashed, which is the code that runs. Versions are read newest first and no further than that
 * one, since every session start asks. Takes over the approvals of older records first, once
 * (see `migrateRecordApprovals`). Never throws.
 */
export function approvedPrograms(roots: readonly ProgramRoot[], home: string): SavedProgram[] {
  migrateRecordApprovals(home);
  const offered: SavedProgram[] = [];
  const seen = new Set<string>();
  for (const root of roots) {
    for (const name of safeReaddir(root.dir).sort()) {
      if (seen.has(name) || checkProgramName(name)) continue;
      const dir = join(root.dir, name);
      for (const version of versionNumbers(dir).reverse()) {
        const program = readVersion(root.scope, dir, name, version);
        if (!program) continue;
        seen.add(name);
        const approval = personalApproval(home, root, program);
        if (approval && approvalCovers(approval, program)) {
          offered.push({ ...program, approval });
          break;
        }
      }
    }
  }
  return offered.sort((a, b) => a.record.name.localeCompare(b.record.name));
}

/**
 * What an approval of `program` (a version found in `root`) is of; undefined for a project
 * root that does not say its workspace, whose programs cannot be approved.
 */
export function approvalTarget(root: ProgramRoot, program: SavedProgram): ApprovalTarget | undefined {
  const { name, version } = program.record;
  if (root.scope === 'user') return { scope: 'user', name, version };
  return root.workspace === undefined ? undefined : { scope: 'project', workspace: realWorkspace(root.workspace), name, version };
}

/**
 * True when an approval covers a version as it is: its code has the sha256 approved, and its
 * record names only tools the approval names (a reviewer may narrow them, not widen them).
 */
export function approvalCovers(approval: Approval, program: SavedProgram): boolean {
  return approval.sha256 === codeHash(program.code) && program.record.tools.every((tool) => approval.tools.includes(tool));
}

/** The person's approval of a version, whatever code it was of; undefined when there is none. */
export function personalApproval(home: string, root: ProgramRoot, program: SavedProgram): Approval | undefined {
  const target = approvalTarget(root, program);
  return target ? readApproval(home, target) : undefined;
}

/**
 * Once per `home`: the user programs (`home/programs/`) whose records say approved and whose
 * code still has the record's sha256 get the person's approval, as they had before approvals
 * were kept apart. Only the user's own programs, in fence's data folder, which the model's
 * tools and sandbox cannot write; a project's records, which came with the repository, never.
 * Nothing is marked done when an approval cannot be written, so a later start tries again.
 */
function migrateRecordApprovals(home: string): void {
  if (approvalsMigrated(home)) return;
  const root: ProgramRoot = { scope: 'user', dir: join(home, 'programs') };
  let failed = false;
  for (const name of safeReaddir(root.dir).sort()) {
    if (checkProgramName(name)) continue;
    for (const program of readVersions(root, name)) {
      const { record } = program;
      if (record.status !== 'approved' || !program.intact || personalApproval(home, root, program)) continue;
      const approvedAt = record.approvedAt ?? new Date().toISOString();
      const approval = { scope: 'user' as const, name, version: record.version, sha256: record.sha256, tools: record.tools, approvedAt };
      if (writeApproval(home, approval)) failed = true;
    }
  }
  if (!failed) markApprovalsMigrated(home);
}

/**
 * Why a trace cannot become a recorded test, or undefined when it can: every call must have
 * finished and kept its value, so a replay can give the program exactly what it got.
 */
export function unreplayable(trace: ProgramTrace): string | undefined {
  if (trace.runtime === 'python') return 'it is the trace of a Python cell, not of a program';
  if (trace.cut?.length) return `its trace had to cut what it recorded (${trace.cut[0]})`;
  for (const call of trace.calls) {
    if (!call.decision) return `call #${call.seq} (${call.tool}) was still running when the program ended`;
    if (call.resultBytes !== undefined) return `call #${call.seq} (${call.tool}) returned ${call.resultBytes} bytes, too many to keep in a trace`;
  }
  return undefined;
}

/**
 * The newest run worth saving: a program the model (or `fence run`) wrote that worked — not a
 * Python cell, not a run of a program saved already (`program:name@2`) — of the sessions
 * `sessionIds` names, or of any session when it is absent.
 */
export function newestSavableTrace(home: string, sessionIds?: ReadonlySet<string>): ProgramTrace | undefined {
  const savable = (trace: ProgramTrace) =>
    trace.ok && trace.runtime !== 'python' && !/@\d+$/.test(trace.principal) && (!sessionIds || sessionIds.has(trace.sessionId));
  return listTraces(home).find((stored) => savable(stored.trace))?.trace;
}

/** A recorded test from a trace (see `unreplayable` for the traces that cannot be one). */
export function testFromTrace(trace: ProgramTrace): ProgramTest {
  return {
    fromTrace: trace.id,
    recordedAt: new Date().toISOString(),
    ...(trace.args !== undefined ? { args: trace.args } : {}),
    calls: trace.calls.map((call) => ({
      tool: call.tool,
      args: call.args,
      ok: call.ok,
      ...(call.ok ? (call.result !== undefined ? { result: call.result } : {}) : { error: call.error ?? 'failed' }),
    })),
    expect: {
      ok: trace.ok,
      stdout: trace.stdout,
      ...(trace.result !== undefined ? { result: trace.result } : {}),
      ...(trace.error ? { error: { kind: trace.error.kind, message: trace.error.message } } : {}),
    },
    ...(trace.limits ? { limits: trace.limits } : {}),
  };
}

/**
 * The tools a program may call once saved: those its run called, and those of `known` (the
 * session's tools) whose names its code mentions, so a branch the run did not take still works.
 */
export function toolsOfProgram(trace: ProgramTrace, known: readonly string[]): string[] {
  const named = known.filter((name) => new RegExp(`(?<![\\w$])${escapeRegExp(name)}(?![\\w$])`).test(trace.code));
  return [...new Set([...trace.calls.map((call) => call.tool), ...named])].sort();
}

/**
 * Saves a trace's program as the next version of `name` in `root`: `v<N>.js` with the code and
 * `v<N>.json` with its record and the trace as its first test. Refused, with the reason, for a
 * failed run, a trace that cannot be replayed, a bad name, code whose declarations cannot be
 * read, or code one of its versions has already.
 */
export function saveProgram(
  roots: readonly ProgramRoot[],
  root: ProgramRoot,
  name: string,
  trace: ProgramTrace,
  knownTools: readonly string[],
): SavedProgram | { error: string } {
  const badName = checkProgramName(name);
  if (badName) return { error: badName };
  if (!trace.ok) return { error: `trace ${trace.id} is of a failed run (${trace.error?.kind ?? 'error'}: ${trace.error?.message ?? ''}); only a run that worked can be saved` };
  const notReplayable = unreplayable(trace);
  if (notReplayable) return { error: `trace ${trace.id} cannot be saved: ${notReplayable}` };
  const signature = parseSignature(trace.code);
  if (signature.errors.length > 0) return { error: `the program's declarations cannot be read: ${signature.errors.join('; ')}` };
  const project = roots.find((r) => r.scope === 'project');
  if (root.scope === 'user' && project && readVersions(project, name).length > 0) {
    return { error: `the project has a program "${name}" already, which would hide this one; save it there with --project or choose another name` };
  }
  const versions = readVersions(root, name);
  const sha256 = codeHash(trace.code);
  const same = versions.find((v) => v.record.sha256 === sha256);
  if (same) return { error: `${programLabel(same.record)} has this code already; add the trace as a test with fence programs test ${programLabel(same.record)} --add-test ${trace.id}` };
  const dir = join(root.dir, name);
  let version: number;
  try {
    makePrivateFolder(dir);
    version = claimVersion(dir, trace.code);
  } catch (error) {
    return { error: `cannot write in ${dir}: ${(error as NodeJS.ErrnoException).code ?? String(error)}` };
  }
  const record: ProgramRecord = {
    name,
    version,
    sha256,
    savedAt: new Date().toISOString(),
    ...(trace.intent ? { intent: trace.intent } : {}),
    tools: toolsOfProgram(trace, knownTools),
    fromTrace: trace.id,
    sessionId: trace.sessionId,
    status: 'saved',
    tests: [testFromTrace(trace)],
  };
  writeRecord(dir, record);
  return { scope: root.scope, dir, record, code: trace.code, intact: true };
}

/** Writes a version's record (through a temporary file, so a crash leaves the old one whole). */
export function writeRecord(dir: string, record: ProgramRecord): void {
  const path = join(dir, `v${record.version}.json`);
  writePrivateFile(`${path}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}

/**
 * Writes `code` as the next version's `v<N>.js`, created exclusively: when another save took
 * that number first (two sessions saving at once), the next one is tried. Gives the number.
 */
function claimVersion(dir: string, code: string): number {
  for (let version = nextVersion(dir); ; version++) {
    try {
      writePrivateFile(join(dir, `v${version}.js`), code, 'wx');
      return version;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

/** The number after every version file in the folder, readable or not, so that none is written over. */
function nextVersion(dir: string): number {
  let highest = 0;
  for (const file of safeReaddir(dir)) {
    const match = /^v([1-9]\d*)\.(?:js|json)$/.exec(file);
    if (match) highest = Math.max(highest, Number(match[1]));
  }
  return highest + 1;
}

function readVersions(root: ProgramRoot, name: string): SavedProgram[] {
  const dir = join(root.dir, name);
  return versionNumbers(dir).flatMap((version) => readVersion(root.scope, dir, name, version) ?? []);
}

/** The version numbers whose records (`v<N>.json`) are in a program's folder, ascending. */
function versionNumbers(dir: string): number[] {
  return safeReaddir(dir)
    .flatMap((file) => {
      const match = /^v([1-9]\d*)\.json$/.exec(file);
      return match ? [Number(match[1])] : [];
    })
    .sort((a, b) => a - b);
}

function readVersion(scope: ProgramScope, dir: string, name: string, version: number): SavedProgram | undefined {
  const read = readVersionOrWhy(scope, dir, name, version);
  return 'why' in read ? undefined : read;
}

/** A version as on disk, or why it cannot be read (for `unreadableVersions`). */
function readVersionOrWhy(scope: ProgramScope, dir: string, name: string, version: number): SavedProgram | { why: string } {
  let record: ProgramRecord;
  let code: string;
  try {
    record = JSON.parse(readFileSync(join(dir, `v${version}.json`), 'utf8')) as ProgramRecord;
  } catch (error) {
    return { why: `v${version}.json cannot be read: ${error instanceof SyntaxError ? 'it is not JSON' : ((error as NodeJS.ErrnoException).code ?? String(error))}` };
  }
  try {
    code = readFileSync(join(dir, `v${version}.js`), 'utf8');
  } catch (error) {
    return { why: `v${version}.js cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}` };
  }
  if (typeof record !== 'object' || record === null || record.name !== name || record.version !== version || typeof record.sha256 !== 'string') {
    return { why: `v${version}.json is not the record of ${name}@${version}` };
  }
  if (!Array.isArray(record.tests)) record.tests = [];
  if (!Array.isArray(record.tools)) record.tools = [];
  return { scope, dir, record, code, intact: codeHash(code) === record.sha256 };
}

/**
 * One sentence per version file in the roots that cannot be read as a version (not JSON, no
 * code beside it, a record of another name or version), naming its folder: those versions are
 * left out everywhere else, and a person should hear of it.
 */
export function unreadableVersions(roots: readonly ProgramRoot[]): string[] {
  const problems: string[] = [];
  for (const root of roots) {
    for (const name of safeReaddir(root.dir).sort()) {
      if (checkProgramName(name)) continue;
      const dir = join(root.dir, name);
      for (const version of versionNumbers(dir)) {
        const read = readVersionOrWhy(root.scope, dir, name, version);
        if ('why' in read) problems.push(`${dir}: ${read.why}`);
      }
    }
  }
  return problems;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
