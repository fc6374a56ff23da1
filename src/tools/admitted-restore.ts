import { constants, readlinkSync } from 'node:fs';
import { open, realpath, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { admit, type PolicyRule } from '../policy/admit';
import { workspaceResource } from '../policy/workspace-resource';
import { writeRefusal } from '../os-sandbox/policy';
import type { ToolContext } from './define-tool';
import { activeSandbox } from './file-boundary';
import { createAdmitted, openAdmitted, rewriteOpened, type OpenedFile } from './opened-file';
import { ToolInputError } from './tool-error';
import { displayPath } from './workspace-path';

/**
 * How taking turns back (`/undo`) puts files back: through the file tools' own admitted,
 * descriptor-checked writes (see `opened-file.ts`), so a restore refuses what `save` would
 * refuse. A folder of the workspace turned into a link to the home folder between the edit and
 * the restore leads the write, or the removal, to a place the sandbox keeps from writes, and
 * it is refused there, with the sandbox's sentence. The session's policy rules are asked as
 * for a `save` by the model: a rule that denies it refuses the restore (one that asks does
 * not: the person asked for the restore).
 */
export interface AdmittedRestore {
  /** Makes `path` (absolute) hold exactly `content`, creating it and its folders when missing. Throws an Error saying why not. */
  write(path: string, content: Buffer): Promise<void>;
  /** Removes the file at `path` (absolute); nothing there is not an error. Throws an Error saying why not. */
  remove(path: string): Promise<void>;
}

/** The `AdmittedRestore` of a session: its workspace and sandbox (`ctx`) and its policy rules. */
export function admittedRestore(ctx: Pick<ToolContext, 'workspace' | 'sandboxPolicy'>, rules: readonly PolicyRule[]): AdmittedRestore {
  const canAccess = (tool: string, real: string) => admit({ principal: 'model', tool, resource: workspaceResource(ctx.workspace, real) }, rules).action !== 'deny';
  const checked = { sandboxPolicy: ctx.sandboxPolicy, canAccess };
  const fileAt = (path: string) => ({ absolute: path, shown: displayPath(ctx.workspace, path) });
  return {
    async write(path, content) {
      const file = fileAt(path);
      const opened = await openAdmitted(checked, file, 'write', 'save', 'ok');
      let created: OpenedFile | undefined;
      try {
        if (opened && !(await opened.handle.stat()).isFile()) throw new ToolInputError(`${file.shown} is not a regular file`);
        await rewriteOpened(opened ?? (created = await createAdmitted(checked, file, 'save')), content);
      } finally {
        await opened?.handle.close();
        await created?.handle.close();
      }
    },
    async remove(path) {
      const file = fileAt(path);
      let folder;
      try {
        folder = await open(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      try {
        // The folder held open, judged by where it really is: a link swapped in later leads nowhere.
        const { real, here } = await whereFolder(folder.fd, dirname(path));
        const target = join(real, basename(path));
        const sandbox = activeSandbox(ctx);
        const refusal =
          (sandbox && writeRefusal(sandbox, target, file.shown)) ||
          (!canAccess('save', target) ? `${file.shown} leads to ${target}, which the policy keeps from save` : undefined);
        if (refusal !== undefined) throw new ToolInputError(refusal);
        try {
          await unlink(join(here, basename(path)));
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      } finally {
        await folder.close();
      }
    },
  };
}

/** The real path of the folder open on `fd`, and a path naming that very folder (`/proc/self/fd/<n>` where there is one). */
async function whereFolder(fd: number, path: string): Promise<{ real: string; here: string }> {
  const here = `/proc/self/fd/${fd}`;
  try {
    const real = readlinkSync(here);
    if (real.startsWith('/')) return { real, here };
  } catch {
    // No /proc: judged and reached by its real path.
  }
  const real = await realpath(path);
  return { real, here: real };
}
