import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { access, constants as fsConstants } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childEnvironment } from '../os-sandbox/child-env';
import { makeOwnedTempDir } from '../os-sandbox/owned-temp-dir';

/**
 * What starting a Python kernel needs from the machine: the interpreter, the kernel script,
 * the environment, and a private temp folder (with the clean-up of folders left by crashes).
 */

const TEMP_PREFIX = 'fence-python-';

/**
 * Makes the temp folder of a new kernel, `<tmp>/fence-python-<fence pid>-<random>`, and removes
 * those of kernels whose fence process is gone (left behind by a crash).
 */
export async function makeKernelTempDir(): Promise<string> {
  return makeOwnedTempDir(TEMP_PREFIX);
}

/** `kernel.py` beside this module (in the sources, and beside `dist/fence.cjs`) or one folder up. */
export function kernelScript(): string {
  for (const relative of ['./kernel.py', '../kernel.py']) {
    const path = fileURLToPath(new URL(relative, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error('kernel.py was not found next to the fence program');
}

/**
 * The kernel's environment: `base` (process.env) without credentials unless named in `passEnv`
 * (see `childEnvironment`); IPython's files in the kernel's temp folder (never in
 * the user's home); unbuffered, UTF-8 output for Python children too; no pager, no colours, no
 * plot windows; then `extra`.
 */
export function kernelEnvironment(
  extra: Record<string, string> | undefined,
  tempDir: string,
  passEnv: readonly string[] = [],
  base: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env = childEnvironment(passEnv, base);
  Object.assign(env, {
    IPYTHONDIR: join(tempDir, 'ipython'),
    PYTHONUNBUFFERED: '1',
    PYTHONIOENCODING: 'utf-8:backslashreplace',
    PAGER: 'cat',
    TERM: 'dumb',
    NO_COLOR: '1',
  });
  // No window can open: plots are drawn off screen unless a backend was chosen.
  env.MPLBACKEND ??= 'Agg';
  return Object.assign(env, extra);
}

/**
 * The interpreter to run for `command`: a path is used as given unless it is a shim; a bare
 * name is looked up on PATH. A version-manager shim (a `shims` folder) is asked for
 * `sys.executable` once per process (see {@link interpreterCache}).
 */
export function resolveInterpreter(command: string): Promise<string> {
  const key = `${command}\0${process.env.PATH ?? ''}`;
  const cached = interpreterCache.get(key);
  if (cached) return cached;
  const resolved = (async () => {
    const path = isAbsolute(command) || command.includes('/') ? command : await findOnPath(command);
    if (!path || !/[\\/]shims[\\/]/.test(path)) return path ?? command;
    return askExecutable(path);
  })();
  interpreterCache.set(key, resolved);
  return resolved;
}

/**
 * Memo of interpreter lookups for this process. A deliberate module-level cache: the lookup
 * is a pure fact about the machine, and asking a shim costs a Python start (~0.3 s).
 */
const interpreterCache = new Map<string, Promise<string>>();

async function findOnPath(name: string): Promise<string | undefined> {
  for (const folder of (process.env.PATH ?? '').split(delimiter)) {
    if (!folder) continue;
    const candidate = join(folder, name);
    try {
      await access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

function askExecutable(shim: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(shim, ['-c', 'import sys; print(sys.executable)'], { timeout: 10_000 }, (error, stdout) => {
      const path = stdout.trim();
      resolve(!error && path ? path : shim);
    });
  });
}
