import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { childEnvironment } from '../os-sandbox/child-env';
import { stripTerminalCodes } from './command-output';
import { makeOwnedTempDir, makeOwnedTempDirNow } from '../os-sandbox/owned-temp-dir';

/**
 * How fence's bash is set up and how a command is handed to it: the environment, the line
 * typed once at start, the marker commands typed after each command, the syntax pre-check,
 * and the private temp dir that holds the command file.
 */

/** Temp dirs are named `<prefix><owner pid>-<random>`, so that those of dead processes can be found. */
const TEMP_PREFIX = 'fence-bash-';

/**
 * Makes the session's private temp dir (mode 0700), after removing those that sessions of dead
 * processes left behind.
 */
export async function makeTempDir(): Promise<string> {
  return makeOwnedTempDir(TEMP_PREFIX);
}

/** `makeTempDir`, the folder made before this returns (the clean-up of old ones goes on after). */
export function makeTempDirNow(): string {
  return makeOwnedTempDirNow(TEMP_PREFIX);
}

/**
 * Writes the command file (mode 0600), making its directory again if a command removed it.
 * Synchronous: a small local file, written in a fraction of the three trips through the thread
 * pool (open, write, close) an asynchronous write takes before the command can be typed.
 */
export function writeCommandFile(file: string, command: string): void {
  try {
    writeFileSync(file, command, { mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, command, { mode: 0o600 });
  }
}

/** Command and process substitutions: text with one is syntax-checked apart first (see {@link checkSyntax}). */
export const RISKY_SYNTAX = /\$\(|[<>]\(/;

/** Set for every command; they keep programs from waiting on a pager, an editor or a prompt. */
const NON_INTERACTIVE_ENV: Readonly<Record<string, string>> = {
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  MANPAGER: 'cat',
  EDITOR: 'true',
  VISUAL: 'true',
  GIT_EDITOR: 'true',
  GIT_TERMINAL_PROMPT: '0',
  // A dumb terminal: programs keep colours and cursor tricks to themselves (escape sequences
  // that still arrive are stripped), and line editing stays out of the way.
  TERM: 'dumb',
  NO_COLOR: '1',
  HISTFILE: '/dev/null',
};

/**
 * bash's arguments: interactive, so that job control gives each command its own process group
 * and Ctrl-C reaches only that; no profile, no rc file, no readline.
 */
export const BASH_ARGS: readonly string[] = ['--noprofile', '--norc', '--noediting', '-i'];

/** The pty bash runs in: a dumb terminal, wide so that programs which fit their output to it (ps, ls) cut little. */
export function ptyOptions(cwd: string, env: Record<string, string>) {
  return { name: 'dumb', cols: 200, rows: 50, cwd, env, encoding: 'utf8' } as const;
}

/** Typed once when bash starts, before the first markers. */
export const SHELL_SETUP = "stty -echo 2>/dev/null; PS2=''; PS0=''; PROMPT_COMMAND=''; unset TMOUT; set +o history;";
/**
 * The variable that marks every process a session's bash starts: it holds a random value of
 * that session, inherited by children, so that those which left the terminal session (`setsid`,
 * daemons) are still found and killed on close.
 */
export const SESSION_VARIABLE = 'FENCE_SHELL_SESSION';

/**
 * `base` (process.env) without credentials unless named in `passEnv` (see `childEnvironment`),
 * then the non-interactive defaults, a UTF-8 locale if none is set, then `extra`, then
 * {@link SESSION_VARIABLE} with a new random value.
 */
export function shellEnvironment(extra: Record<string, string> | undefined, passEnv: readonly string[] = [], base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env = childEnvironment(passEnv, base);
  Object.assign(env, NON_INTERACTIVE_ENV);
  const locale = env.LC_ALL || env.LC_CTYPE || env.LANG || '';
  if (!/utf-?8/i.test(locale)) {
    // C.UTF-8 is built into glibc >= 2.35 and shipped by the common distributions; macOS lacks it.
    const utf8 = process.platform === 'darwin' ? 'en_US.UTF-8' : 'C.UTF-8';
    env.LANG = utf8;
    env.LC_ALL = utf8;
  }
  return Object.assign(env, extra, { [SESSION_VARIABLE]: newNonce() });
}

/**
 * bash 5.2 corrupts its own memory after a syntax error inside `$(…)`, `<(…)` or `>(…)` in a
 * sourced file, and crashes a few commands later. So text with one of these is parsed first by
 * a separate `bash -n` (extglob on, to be permissive; the session's aliases are unknown to it);
 * on a syntax error the command does not run at all. Returns the error message, or undefined
 * when the syntax is fine or the check itself could not run.
 */
export function checkSyntax(file: string, env: Record<string, string>): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('bash', ['--noprofile', '--norc', '-O', 'extglob', '-n', file], { env }, (error, _stdout, stderr) => {
      // Prefixed like the messages of the shell itself.
      resolve(error?.code === 2 ? `bash: ${stripTerminalCodes(stderr) || 'syntax error\n'}` : undefined);
    });
  });
}

/**
 * The line typed for one command: ` <start marker>; builtin . <file>; <status marker>; PS1=<prompt marker>`.
 * Sourcing keeps `cd`, variables, functions and aliases in the shell, and nothing of the command
 * passes through the terminal: no 4096-byte canonical line limit, no quoting, no echo of the
 * command, and a syntax error (an unbalanced quote) is confined to the file, so bash reports it
 * and returns. The markers carry `nonce`, made for this command (see `CommandCapture`): the
 * start marker `RS nonce:run RS` shows that bash has read and parsed the line and is running it
 * (a Ctrl-C before that is not an interrupt of it: see `job-interrupt.ts`), the status marker (with
 * `$?`) ends the command, and the command cannot print either by accident, since the nonce is
 * only in the line read after it, which does not hold the markers as such. They go to
 * /dev/tty, so `exec >file` does not swallow them. The prompt marker (PS1) shows that bash is
 * back at its prompt after an interrupt, when the rest of the line was abandoned, without
 * typing anything a still-running program could read.
 */
export function commandLine(file: string, nonce: string): string {
  return ` builtin printf \\\\036${nonce}:run\\\\036 >/dev/tty; builtin . ${escapePath(file)}; ${markerCommands(nonce)}`;
}

/**
 * Typed after a command: prints its status marker `RS nonce:$? RS` to the terminal, then sets
 * the prompt marker `RS nonce RS` as PS1. The typed text spells RS as `\\036`, which only
 * printf and prompt expansion turn into the character, so the line itself (echoed, or PS1 as
 * listed by `set`) never contains a marker. The line holds no quotes: quoted words after a
 * failed `$(` parse are what trips the bash 5.2 bug described at {@link checkSyntax}.
 */
export function markerCommands(nonce: string): string {
  return `builtin printf \\\\036${nonce}:%d\\\\036 $? >/dev/tty; PS1=\\\\036${nonce}\\\\036`;
}

export function newNonce(): string {
  return randomBytes(16).toString('hex');
}

/** Escapes a path for the typed line with backslashes, not quotes (see {@link markerCommands}). */
function escapePath(path: string): string {
  if (path.includes('\n')) return `'${path.replaceAll("'", `'\\''`)}'`;
  return path.replace(/[^\w./-]/g, '\\$&');
}
