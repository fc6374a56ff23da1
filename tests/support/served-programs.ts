import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { runFence, type CliRun } from './run-cli';

/** A program with two parameters that prints a greeting and returns it. */
export const GREET = [
  '// intent: greet someone by name',
  '// param name: string = "world" — who to greet',
  '// param times: integer = 1',
  'print(`hello ${args.name}`);',
  'return { greeting: `hello ${args.name}`, times: args.times };',
].join('\n');

/** Runs the built CLI on a test's workspace and saves approved programs there, with `env()`'s config. */
export interface ProgramRig {
  /**
   * The environment of every run: the test's FENCE_HOME and a user config with no OS sandbox
   * (not what these tests are about), room for a program that calls tools until it is stopped,
   * and `secret/**` denied to `read`; `extraConfig` is added to that config.
   */
  env(extraConfig?: string): Record<string, string>;
  /** Runs `fence` with `args` in the workspace. */
  fence(args: string[]): ReturnType<typeof runFence>;
  /** Runs `code` with `fence run`, saves it as `name`, and approves it unless told not to. */
  saveProgram(name: string, code: string, approve?: boolean, jsonArgs?: string): Promise<void>;
}

/** A `ProgramRig` on the folders of `cli` (read them inside a test). */
export function programRig(cli: CliRun): ProgramRig {
  const env = (extraConfig = ''): Record<string, string> => {
    const xdg = join(dirname(cli.dirs.workspace), 'xdg');
    mkdirSync(join(xdg, 'fence'), { recursive: true });
    writeFileSync(join(xdg, 'fence', 'config.toml'), '[sandbox]\nmode = "off"\n\n[ptc]\nmax_tool_calls = 10000000\n\n[[policy]]\ntool = "read"\nresource = "secret/**"\naction = "deny"\n' + extraConfig);
    return { ...cli.env(), XDG_CONFIG_HOME: xdg };
  };
  const fence = (args: string[]) => runFence(args, { cwd: cli.dirs.workspace, env: env(), timeoutMs: 60_000 });
  return {
    env,
    fence,
    async saveProgram(name, code, approve = true, jsonArgs) {
      writeFileSync(join(cli.dirs.workspace, `${name}.js`), code);
      const run = await fence(['run', `${name}.js`, ...(jsonArgs ? ['--json-args', jsonArgs] : [])]);
      const trace = /^trace (\S+)/m.exec(run.stderr)?.[1];
      if (!trace) throw new Error(`no trace in: ${run.stderr}`);
      expect((await fence(['programs', 'save', name, '--from-trace', trace])).exitCode).toBe(0);
      if (approve) expect((await fence(['programs', 'approve', `${name}@1`])).exitCode).toBe(0);
    },
  };
}
