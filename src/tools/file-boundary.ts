import { basename, dirname, join, relative, sep } from 'node:path';
import {
  inSandboxTmp,
  isWithin,
  lexicalAccess,
  pathAccess,
  readRefusal,
  realPathOf,
  withRealPaths,
  writeRefusal,
  type SandboxPolicy,
} from '../os-sandbox/policy';
import type { ToolContext } from './define-tool';
import { displayPath, type WorkspaceFile } from './workspace-path';

/**
 * The file tools' side of the session's sandbox: they refuse what it refuses the shell, so a
 * file the sandboxed shell cannot write (or read) is not written (or read) through `save` or
 * `read` either, whoever calls them (the model, a program, Python's tool bridge: all of them
 * run the same `execute` with the same `ToolContext`).
 */

/** What a file tool does with its file: reads it (read, grep, glob) or writes it (save, append, patch). */
export type FileUse = 'read' | 'write';

/** The session's sandbox when it bounds the file tools: set, and not `off`. */
export function activeSandbox(ctx: Pick<ToolContext, 'sandboxPolicy'>): SandboxPolicy | undefined {
  const { sandboxPolicy: sandbox } = ctx;
  return sandbox === undefined || sandbox.mode === 'off' ? undefined : sandbox;
}

/**
 * `file` as the sandboxed shell would find it: a path under `/tmp` is the sandbox's own `/tmp`
 * (see `inSandboxTmp`), named to the model as it wrote it. Unchanged without an active sandbox
 * or one with no private `/tmp`.
 */
export function inSandboxView(ctx: Pick<ToolContext, 'sandboxPolicy'>, file: WorkspaceFile): WorkspaceFile {
  const sandbox = activeSandbox(ctx);
  if (sandbox === undefined) return file;
  const absolute = inSandboxTmp(sandbox, file.absolute);
  return absolute === file.absolute ? file : { absolute, shown: file.shown };
}

/**
 * How to name `absolute` to the model: as `displayPath` does, but a path in the sandbox's own
 * `/tmp` as the sandbox names it (`/tmp/out.txt`).
 */
export function sandboxShownPath(ctx: Pick<ToolContext, 'sandboxPolicy' | 'workspace'>, absolute: string): string {
  const privateTmp = activeSandbox(ctx)?.privateTmp;
  if (privateTmp !== undefined && isWithin(absolute, privateTmp)) return join('/tmp', relative(privateTmp, absolute));
  return displayPath(ctx.workspace, absolute);
}

/**
 * Why the sandbox refuses to let a tool `use` `file` (see `writeRefusal`, `readRefusal`): the
 * sentence the model reads as the tool's error result. Undefined when it is allowed or no
 * sandbox bounds the tools. Judges links too, so it must come before anything touches the
 * file, even creating its folders.
 */
export function boundaryRefusal(ctx: Pick<ToolContext, 'sandboxPolicy'>, file: WorkspaceFile, use: FileUse): string | undefined {
  const sandbox = activeSandbox(ctx);
  if (sandbox === undefined) return undefined;
  return use === 'write' ? writeRefusal(sandbox, file.absolute, file.shown) : readRefusal(sandbox, file.absolute, file.shown);
}

/**
 * What a walk over many files (glob, grep) may show of them under the session's sandbox; see
 * `walkBoundary`.
 */
export interface WalkBoundary {
  /**
   * The denied paths under the walk's root (as written, or as its real path), relative to it
   * with `/` separators: the walk neither enters nor lists them (see `findFiles`). A denied
   * folder holding a readable exception is not among them; `shows` judges its files.
   */
  leftOut: string[];
  /**
   * Whether a file the walk found (absolute path, not itself a link) may be shown. Judged by
   * its path as written, and by the real path of its folder when that folder is reached
   * through a link (the walk's root may be one).
   */
  shows(absolute: string): boolean;
  /** Whether a link the walk found may be followed to what it points at (its target judged too). */
  followsLink(absolute: string): boolean;
}

/**
 * The `WalkBoundary` of a walk from `root` (absolute), or undefined when no sandbox bounds the
 * tools. Cheap per file: files are judged a folder at a time (all the files of a folder share
 * its verdict unless a path of the policy lies inside it), the file system is asked once per
 * folder (is it reached through a link?) and once per link, and the policy's own paths are
 * resolved once per walk.
 */
export function walkBoundary(ctx: Pick<ToolContext, 'sandboxPolicy'>, root: string): WalkBoundary | undefined {
  const sandbox = activeSandbox(ctx);
  if (sandbox === undefined) return undefined;
  const resolved = withRealPaths(sandbox);
  const policyPaths = [...resolved.readable, ...resolved.denied, ...resolved.protected, ...resolved.writable];
  const realFolders = new Map<string, string>();
  const realFolder = (folder: string): string => {
    let real = realFolders.get(folder);
    if (real === undefined) realFolders.set(folder, (real = realPathOf(folder)));
    return real;
  };
  /** Whether a file in `folder` (as written) or in `real` (where the folder leads) may be shown: both must not be denied. */
  const allowed = (written: string, real: string) => lexicalAccess(resolved, written) !== 'none' && (real === written || lexicalAccess(resolved, real) !== 'none');
  /** The verdict all the files of `folder` share, or `undefined` when a path of the policy lies inside it (each file is judged). */
  const folderVerdict = (folder: string): boolean | undefined => {
    const real = realFolder(folder);
    const holdsPolicyPath = policyPaths.some((path) => (path !== folder && isWithin(path, folder)) || (path !== real && isWithin(path, real)));
    return holdsPolicyPath ? undefined : allowed(folder, real);
  };
  const verdicts = new Map<string, boolean | undefined>();
  return {
    leftOut: deniedUnder(resolved, root, realFolder(root)),
    shows(absolute) {
      const folder = dirname(absolute);
      if (!verdicts.has(folder)) verdicts.set(folder, folderVerdict(folder));
      return verdicts.get(folder) ?? allowed(absolute, join(realFolder(folder), basename(absolute)));
    },
    followsLink: (absolute) => pathAccess(sandbox, absolute) !== 'none',
  };
}

/**
 * The denied paths under `root` (as written or as its real path `realRoot`) that hold no
 * readable exception, and the replaced host folders (`/proc`, …) that hold none of the
 * policy's own paths.
 */
function deniedUnder(resolved: SandboxPolicy, root: string, realRoot: string): string[] {
  const under = new Set<string>();
  const kept = [resolved.workspace, ...resolved.writable, ...resolved.readable];
  const replaced = (resolved.replaced ?? []).filter((folder) => !kept.some((path) => isWithin(path, folder)));
  for (const denied of [...resolved.denied, ...replaced]) {
    if (resolved.readable.some((readable) => isWithin(readable, denied))) continue;
    for (const base of [root, realRoot]) {
      if (denied !== base && isWithin(denied, base)) under.add(relative(base, denied).split(sep).join('/'));
    }
  }
  return [...under];
}
