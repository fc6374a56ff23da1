import { visibleText } from './visible-text';

/**
 * What is said when an MCP server fails: the last lines of its own stderr, and a hint when the
 * cause is one fence can recognise there (a private `/tmp`, no network, a read-only cache in
 * the sandbox; a program that is not installed).
 */

/** Lines of a server's stderr quoted in a message. */
export const STDERR_TAIL_LINES = 5;

/** A line that states an error, as runtimes and package runners print one (`Error: …`, `npm error …`, `ModuleNotFoundError: …`). */
const ERROR_LINE = /^\s*(?:[A-Za-z]*Error\b|error\b|npm error\b|npm ERR!|Traceback\b|fatal\b|panic\b)/;

/** A frame of a stack trace (`    at f (file:1:2)`, Python's `  File "x", line 3`). */
const STACK_FRAME = /^\s+(?:at\s|File ")/;

/**
 * The last `STDERR_TAIL_LINES` non-empty lines of `stderr` that are not stack frames, made
 * safe to print (see `visibleText`); '' when there are none. When the line that states the
 * error (Node's `Error: Cannot find module …`, npm's `npm error …`) came earlier, it leads,
 * followed by `…`: a runtime's last lines are often only the end of a stack trace.
 */
export function stderrTail(stderr: string): string {
  const lines = stderr.split('\n').map((line) => line.trimEnd()).filter((line) => line.trim() !== '' && !STACK_FRAME.test(line));
  const tail = lines.slice(-STDERR_TAIL_LINES);
  const stated = lines.findLast((line) => ERROR_LINE.test(line));
  const shown = stated === undefined || tail.includes(stated) ? tail : [stated, '…', ...tail.slice(-(STDERR_TAIL_LINES - 2))];
  return visibleText(shown.join('\n'));
}

/** Where the server ran, as far as a hint needs to know. */
export interface FailedServer {
  /** Its program and arguments, as started (before any sandbox's command line). */
  command: string;
  args: readonly string[];
  /** It ran inside the OS sandbox. */
  inside: boolean;
  /** Its entry is a project's (`fence.toml`), which always runs inside. */
  fromProject: boolean;
}

/**
 * One sentence saying what to do about a failure whose text (the error and the server's
 * stderr) is `said`, or undefined when the cause is not recognised. Checked in this order: a
 * program that could not be found, a path under `/tmp` inside the sandbox, no network inside,
 * a read-only cache inside.
 */
export function failureHint(said: string, server: FailedServer): string | undefined {
  const program = server.command;
  if (notFound(said, program)) return `${program} was not found: install it, or give its full path as command.`;
  if (!server.inside) return undefined;
  const move = server.fromProject
    ? "A project's server always runs in the sandbox; to run it outside, copy its entry into your own config.toml."
    : 'To run it outside, remove sandbox = true from its entry, and keep what it runs out of the folders the sandbox can write.';
  const underTmp = [program, ...server.args].some((word) => word === '/tmp' || word.startsWith('/tmp/') || word.includes('=/tmp/'));
  if (underTmp && /MODULE_NOT_FOUND|ENOENT|No such file or directory|can't open file/i.test(said)) {
    return `It names a path under /tmp, and the sandbox has a /tmp of its own where that path does not exist. ${move}`;
  }
  if (/\b(EAI_AGAIN|ENOTFOUND|ECONNREFUSED|ENETUNREACH|ENOTCACHED)\b|getaddrinfo|Temporary failure in name resolution|Network is unreachable/i.test(said)) {
    return `Inside the sandbox it has no network (a package runner such as npx fetches the package each start). ${move}`;
  }
  if (/\bEROFS\b|read-only file system/i.test(said)) {
    return `Inside the sandbox your home folder's caches are read-only. ${move}`;
  }
  return undefined;
}

/** The program itself could not be started: the spawn's ENOENT, a shell's or bwrap's wording. */
function notFound(said: string, program: string): boolean {
  if (/\bspawn\b.*\bENOENT\b/.test(said)) return true;
  const name = program.split('/').pop() ?? program;
  const quoted = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|\\n|: )${quoted}: (command )?not found|execvp ${quoted}: No such file or directory|bwrap: execvp .*${quoted}: No such file`, 'i').test(said);
}
