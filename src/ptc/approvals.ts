import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * A person's approvals of saved programs, kept in fence's data folder (`$FENCE_HOME`), apart
 * from the programs themselves: a program's own folder may be a repository's or the model's
 * doing, so nothing written there can approve it. One file per approval:
 *
 *     approvals/user.over_limit@2.json                       a user program
 *     approvals/project.<16 hex of the workspace>.deploy@1.json   a project program
 *
 * Each holds what was approved — scope, the workspace's real path for a project program,
 * name, version — the sha256 of the code approved, and the tools it was approved to call. One file each means two sessions
 * approving at once never write over each other's approval; each is written to a temporary
 * file and renamed into place, so a crash leaves the old file or the new one, never half of
 * one. The folder is 0700 and the files 0600: they say what the person lets run.
 */
export interface ApprovalTarget {
  scope: 'project' | 'user';
  /** For a project program: the workspace's real path (see `realWorkspace`). */
  workspace?: string;
  name: string;
  version: number;
}

/** An approval: the version approved, the sha256 of the code that was approved, and the tools it may call. */
export interface Approval extends ApprovalTarget {
  sha256: string;
  tools: string[];
  approvedAt: string;
}

/** The folder of the approvals under `home` (fence's data folder). */
export function approvalsDir(home: string): string {
  return join(home, 'approvals');
}

/** A workspace path made real (links resolved), so one project has one name; as given, made absolute, when it cannot be resolved. */
export function realWorkspace(workspace: string): string {
  try {
    return realpathSync(workspace);
  } catch {
    return resolve(workspace);
  }
}

/** The file of a target's approval: the same target always has the same file. */
export function approvalFile(home: string, target: ApprovalTarget): string {
  const where = target.scope === 'project' ? `project.${workspaceKey(target.workspace ?? '')}` : 'user';
  return join(approvalsDir(home), `${where}.${target.name}@${target.version}.json`);
}

/**
 * The approval of a target, or undefined when there is none or its file is not the approval
 * of exactly that target (another workspace, a record that is not one). Never throws.
 */
export function readApproval(home: string, target: ApprovalTarget): Approval | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(approvalFile(home, target), 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const approval = parsed as Partial<Approval>;
  const same =
    approval.scope === target.scope &&
    approval.name === target.name &&
    approval.version === target.version &&
    (target.scope === 'user' || approval.workspace === target.workspace);
  if (!same || typeof approval.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(approval.sha256)) return undefined;
  if (!Array.isArray(approval.tools) || !approval.tools.every((tool) => typeof tool === 'string')) return undefined;
  const approvedAt = typeof approval.approvedAt === 'string' ? approval.approvedAt : '';
  return { ...target, sha256: approval.sha256, tools: approval.tools, approvedAt };
}

/**
 * Writes an approval (replacing the target's earlier one) through a temporary file of its own,
 * renamed into place; creates the folder 0700 when missing. Gives the reason when it cannot.
 */
export function writeApproval(home: string, approval: Approval): string | undefined {
  const file = approvalFile(home, approval);
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const { scope, workspace, name, version, sha256, tools, approvedAt } = approval;
  const record = { scope, ...(scope === 'project' ? { workspace } : {}), name, version, sha256, tools, approvedAt };
  try {
    mkdirSync(approvalsDir(home), { recursive: true, mode: 0o700 });
    writeFileSync(temporary, `${JSON.stringify(record, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
    renameSync(temporary, file);
    return undefined;
  } catch (error) {
    try {
      rmSync(temporary, { force: true });
    } catch {
      // No temporary file was made: the folder could not be.
    }
    return `cannot write the approval in ${approvalsDir(home)}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
}

/** Removes a target's approval, if it has one; gives the reason when it cannot. Never throws. */
export function removeApproval(home: string, target: ApprovalTarget): string | undefined {
  try {
    unlinkSync(approvalFile(home, target));
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? undefined : `cannot remove the approval in ${approvalsDir(home)}: ${code ?? String(error)}`;
  }
}

/** The file whose presence says the approvals of older records were taken over once (see `approvedPrograms`). */
const MIGRATED = 'migrated';

/** True once the approvals of older records were taken over under `home`. */
export function approvalsMigrated(home: string): boolean {
  return existsSync(join(approvalsDir(home), MIGRATED));
}

/** Notes that the approvals of older records were taken over; false when it cannot be noted. */
export function markApprovalsMigrated(home: string): boolean {
  try {
    mkdirSync(approvalsDir(home), { recursive: true, mode: 0o700 });
    writeFileSync(join(approvalsDir(home), MIGRATED), `${new Date().toISOString()}\n`, { mode: 0o600 });
    return true;
  } catch {
    return false;
  }
}

/** A short, fixed name for a workspace path (its file names must not grow with the path). */
function workspaceKey(workspace: string): string {
  return createHash('sha256').update(workspace).digest('hex').slice(0, 16);
}
