import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Result } from 'execa';
import { z } from 'zod';
import type { CommandToolConfig } from '../config/config-schema';
import { defineTool, type Caller, type ToolResult, type ToolSpec } from './define-tool';
import { registeredCallHint } from './notation';
import { seconds } from './prompt-text';
import { exampleArguments } from './schema-example';

/** Seconds a user tool may run when its config names no `timeout`. */
export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 30;

/** Most a user tool may print on stdout (and on stderr); beyond it the tool is stopped. */
export const COMMAND_OUTPUT_LIMIT_BYTES = 10 * 1024 * 1024;

/** How long a stopped tool gets between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 1000;

/** Variables every user tool gets (when set); anything else only when its config names it. */
const BASE_ENV = ['PATH', 'HOME', 'LANG', 'TMPDIR'] as const;

/** Lines of stderr quoted when a tool fails. */
const STDERR_TAIL_LINES = 20;

/**
 * Makes a user tool from its config: a command that reads the call's arguments as one JSON
 * object on stdin and prints one JSON value on stdout, which becomes the call's `value`
 * (`output` is that value pretty-printed).
 *
 * - `parameters` come from the config's JSON schema (zod's `fromJSONSchema`); without one the
 *   tool takes an object with any keys. A schema that is not an object schema throws here;
 *   `loadConfig` already refuses it with a clearer message.
 * - The command runs without a shell, in the workspace (or the config's `cwd`, relative to it),
 *   with a minimal environment: `PATH`, `HOME`, `LANG`, `TMPDIR`, `TERM=dumb` and only the
 *   variables the config names, so API keys of the session never reach it. On timeout or abort
 *   its whole process group is stopped (SIGTERM, then SIGKILL).
 * - `mutating` is false: user tools are assumed free of side effects, so programs call them in
 *   parallel and the chat does not confirm them; a policy rule with `action = "ask"` is the way
 *   to guard one that is not.
 * - `blockTypes` is empty: user tools are called from programs and as native tool calls, not
 *   as markdown blocks, in this version.
 * - `resource` is the compact JSON of the arguments, so policy rules can match them.
 *
 * `execute` never throws: a missing command, a non-zero exit, a timeout, an abort, too much
 * output, or output that is not one JSON value become error results that say so.
 */
export function createCommandTool(name: string, config: CommandToolConfig): ToolSpec {
  const schema = config.parameters ?? { type: 'object' };
  const parameters = z.fromJSONSchema(schema);
  if (!(parameters instanceof z.ZodObject)) throw new Error(`tool ${name}: parameters must be a JSON schema of type "object"`);
  const callers: readonly Caller[] = config.callers ?? ['direct', 'program'];
  const timeoutSeconds = config.timeout ?? DEFAULT_COMMAND_TIMEOUT_SECONDS;
  const example = exampleArguments(schema);
  return defineTool({
    name,
    description: config.description,
    instructions: registeredCallHint(name, callers, example, config.returns),
    example,
    blockTypes: [],
    group: 'command tools',
    parameters: parameters as z.ZodObject,
    block: {},
    callers,
    mutating: false,
    ...(config.returns === undefined ? {} : { returns: config.returns }),
    resource: (input) => JSON.stringify(input),
    async execute(input, ctx) {
      if (ctx.signal.aborted) return failure(`${name} was interrupted before it started`, { interrupted: true });
      const cwd = resolve(ctx.workspace, expandHome(config.cwd ?? '.'));
      if (!isDirectory(cwd)) return failure(`${name}: its working folder ${cwd} does not exist`);
      const [file = '', ...args] = config.command;
      // Inside the session's sandbox unless the user's own configuration takes it out.
      const line = config.sandbox === false || !ctx.wrapInSandbox ? { command: file, args } : ctx.wrapInSandbox(file, args, { cwd, terminal: 'none' });
      const run = await runCommand(config, line, JSON.stringify(input), cwd, timeoutSeconds, ctx.signal);
      if (run === 'aborted') return failure(`${name} was interrupted`, { interrupted: true });
      return toToolResult(name, config, timeoutSeconds, run);
    },
  });
}

interface CommandRun {
  result: Result<{ encoding: 'utf8'; reject: false }>;
  stoppedBy?: 'timeout' | 'abort';
}

/** Runs the command; `aborted` when the signal aborted before it could start. */
async function runCommand(
  config: CommandToolConfig,
  line: { command: string; args: readonly string[] },
  stdin: string,
  cwd: string,
  timeoutSeconds: number,
  signal: AbortSignal,
): Promise<CommandRun | 'aborted'> {
  const groupKill = process.platform !== 'win32';
  // execa costs tens of ms to load: only runs that call a registered tool pay for it.
  const { execa } = await import('execa');
  if (signal.aborted) return 'aborted';
  const subprocess = execa(line.command, line.args, {
    cwd,
    input: stdin,
    env: commandEnv(config.env ?? []),
    extendEnv: false,
    reject: false,
    encoding: 'utf8',
    stripFinalNewline: false,
    maxBuffer: COMMAND_OUTPUT_LIMIT_BYTES,
    // Its own process group, so that stopping it also stops whatever it started.
    detached: groupKill,
  });
  let stoppedBy: CommandRun['stoppedBy'];
  const stop = (reason: NonNullable<CommandRun['stoppedBy']>) => {
    stoppedBy ??= reason;
    killGroup(subprocess.pid, groupKill, (sig) => subprocess.kill(sig));
  };
  // Node fires a timer at once when its delay is past 2^31-1 ms (~24.8 days): such a limit waits that long.
  const timer = setTimeout(() => stop('timeout'), Math.min(timeoutSeconds * 1000, 2 ** 31 - 1));
  const onAbort = () => stop('abort');
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await subprocess;
    if (result.isMaxBuffer) killGroup(subprocess.pid, groupKill, (sig) => subprocess.kill(sig));
    return stoppedBy ? { result, stoppedBy } : { result };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}

/** SIGTERM to the process group now, SIGKILL to what is left of it a moment later. */
function killGroup(pid: number | undefined, asGroup: boolean, killChild: (signal: NodeJS.Signals) => void): void {
  const send = (signal: NodeJS.Signals) => {
    try {
      if (pid !== undefined && asGroup) process.kill(-pid, signal);
      else killChild(signal);
    } catch {
      // Already gone.
    }
  };
  send('SIGTERM');
  setTimeout(() => send('SIGKILL'), KILL_GRACE_MS).unref();
}

function toToolResult(name: string, config: CommandToolConfig, timeoutSeconds: number, run: CommandRun): ToolResult {
  const { result } = run;
  const stderr = tailLines(result.stderr ?? '', STDERR_TAIL_LINES);
  const details = { command: config.command, exitCode: result.exitCode, signal: result.signal, stderr };
  const withStderr = (message: string) => failure(stderr ? `${message}:\n${stderr}` : message, details);
  if (run.stoppedBy === 'abort') return failure(`${name} was interrupted`, { ...details, interrupted: true });
  if (run.stoppedBy === 'timeout') return withStderr(`${name} timed out after ${seconds(timeoutSeconds * 1000)} and was stopped`);
  if (result.isMaxBuffer) return failure(`${name} printed more than ${COMMAND_OUTPUT_LIMIT_BYTES / (1024 * 1024)} MB and was stopped`, details);
  if (result.exitCode === undefined && result.signal === undefined) {
    const program = config.command[0] ?? '';
    if (result.code === 'ENOENT') return failure(`${name}: command "${program}" not found`, details);
    if (result.code === 'EACCES') return failure(`${name}: command "${program}" cannot be run (permission denied)`, details);
    return failure(`${name}: command "${program}" could not be started: ${result.shortMessage}`, details);
  }
  if (result.signal !== undefined) return withStderr(`${name} was killed by ${result.signal}`);
  if (result.exitCode !== 0) {
    const quoted = stderr || tailLines(result.stdout ?? '', STDERR_TAIL_LINES);
    return failure(quoted ? `${name} failed with exit code ${result.exitCode}:\n${quoted}` : `${name} failed with exit code ${result.exitCode}`, details);
  }
  const stdout = (result.stdout ?? '').trim();
  if (stdout === '') return failure(`${name} printed nothing; a tool must print one JSON value`, details);
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch {
    return failure(`${name} printed something that is not JSON: ${stdout.slice(0, 200)}`, details);
  }
  return { output: JSON.stringify(value, null, 2), value, details };
}

function failure(output: string, details?: unknown): ToolResult {
  return details === undefined ? { output, isError: true } : { output, isError: true, details };
}

/** The environment of a user tool: the base variables, `TERM=dumb`, and the named ones that are set. */
function commandEnv(named: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of [...BASE_ENV, ...named]) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  env.TERM = 'dumb';
  return env;
}

function expandHome(path: string): string {
  if (path === '~') return homedir();
  return path.startsWith('~/') ? join(homedir(), path.slice(2)) : path;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function tailLines(text: string, count: number): string {
  const lines = text.replace(/\s+$/, '').split('\n');
  return lines.slice(-count).join('\n');
}

