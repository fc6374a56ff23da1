import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { FenceConfig } from '../config/config';
import { describeUnread, readRegularFile } from '../config/regular-file';
import { isUsable } from '../config/trust';
import { pathGuard, type PolicyRule } from '../policy/admit';
import { isWithin, readRefusal, realPathOf, type SandboxPolicy } from '../os-sandbox/policy';

/** Largest `AGENTS.md` put in the system prompt; a larger one is left out with a line saying so. */
export const AGENTS_FILE_LIMIT_BYTES = 256 * 1024;

/**
 * The workspace's `AGENTS.md` for the system prompt, or undefined. It is used only when the
 * workspace is trusted (`config.trust`), and only when reading it is something the model could
 * do itself: a link may lead to another file of the workspace (`AGENTS.md -> CLAUDE.md` is
 * common) but not out of it, and not to a file the sandbox or the policy keeps from `read` —
 * otherwise a repository could put `~/.ssh/id_rsa` in the model's instructions by linking to
 * it. The file is opened at its real path without following a link swapped in since, and
 * read only when it is a regular file of at most `AGENTS_FILE_LIMIT_BYTES` (see
 * `readRegularFile`): a named pipe or a device costs nothing. A file left out for a reason
 * other than absence gets one line through `warn`. Never throws.
 */
export function agentsFileFor(
  workspace: string,
  config: FenceConfig,
  sandbox: SandboxPolicy,
  rules: readonly PolicyRule[],
  warn: (line: string) => void,
): string | undefined {
  if (config.trust && !isUsable(config.trust)) return undefined;
  const path = join(workspace, 'AGENTS.md');
  const real = realPathOf(path);
  const refuse = (why: string) => {
    warn(`fence: AGENTS.md is not used: ${why}`);
    return undefined;
  };
  if (!isWithin(real, realPathOf(workspace))) return exists(path) ? refuse(`it leads out of the workspace (to ${real})`) : undefined;
  if (sandbox.mode !== 'off' && readRefusal(sandbox, path, 'AGENTS.md')) return refuse('it leads to a file the sandbox keeps from the model');
  if (!pathGuard(workspace, rules, 'model', undefined, 'read')(path)) return refuse('your policy keeps the model from reading it');
  // At its real path, not following a link swapped in since; regular files only, the cap checked before reading.
  const read = readRegularFile(real, AGENTS_FILE_LIMIT_BYTES);
  if (read.kind === 'read') return read.bytes.toString('utf8');
  return read.kind === 'absent' ? undefined : refuse(describeUnread(read));
}

/** Whether `path` leads to something (a link to nothing does not). */
function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}
