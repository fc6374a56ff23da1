import { closeSync, constants, fstatSync, openSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { FenceConfig } from '../config/config';
import { isUsable } from '../config/trust';
import { pathGuard, type PolicyRule } from '../policy/admit';
import { isWithin, readRefusal, realPathOf, type SandboxPolicy } from '../runtime/sandbox-policy';

/** Largest `AGENTS.md` put in the system prompt; a larger one is left out with a line saying so. */
export const AGENTS_FILE_LIMIT_BYTES = 256 * 1024;

/**
 * The workspace's `AGENTS.md` for the system prompt, or undefined. It is used only when the
 * workspace is trusted (`config.trust`), and only when reading it is something the model could
 * do itself: a link may lead to another file of the workspace (`AGENTS.md -> CLAUDE.md` is
 * common) but not out of it, and not to a file the sandbox or the policy keeps from `read` —
 * otherwise a repository could put `~/.ssh/id_rsa` in the model's instructions by linking to
 * it. The file is opened at its real path without following a link swapped in since. A file
 * left out for a reason other than absence gets one line through `warn`. Never throws.
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
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? undefined : refuse(`it cannot be read (${code ?? String(error)})`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return undefined;
    if (stat.size > AGENTS_FILE_LIMIT_BYTES) return refuse(`it is larger than ${AGENTS_FILE_LIMIT_BYTES / 1024} KB`);
    return readFileSync(fd, 'utf8');
  } catch (error) {
    return refuse(`it cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  } finally {
    closeSync(fd);
  }
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
