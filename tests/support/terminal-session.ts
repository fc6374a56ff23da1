import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import * as pty from 'node-pty';
import { FENCE_BIN } from './run-cli';

// @xterm/headless is CommonJS; its ESM entry is meant for bundlers.
const { Terminal } = createRequire(import.meta.url)('@xterm/headless') as typeof import('@xterm/headless');

/** Keys as a terminal sends them. */
export const KEYS = {
  enter: '\r',
  ctrlC: '\x03',
  ctrlD: '\x04',
  up: '\x1b[A',
  down: '\x1b[B',
} as const;

/** The built `fence`, running in a real pseudo-terminal whose screen a real terminal emulator keeps. */
export interface TerminalSession {
  /** The visible screen, one string per row, trailing spaces removed. */
  screen(): string[];
  /** Every line the terminal holds, scrollback first, then the screen; trailing empty rows left out. */
  lines(): string[];
  /** Everything the program wrote, escape sequences included. */
  readonly raw: string;
  /** Every window title the program set (OSC 0 and 2), in order. */
  readonly titles: readonly string[];
  /** The data of every clipboard write the program asked for (OSC 52), in order. */
  readonly clipboardWrites: readonly string[];
  /** Types text as a person would (no Enter unless it is in the text). */
  type(text: string): void;
  /**
   * Resolves when the screen shows `what` (checked after every write the program makes);
   * rejects after `timeoutMs` with the screen in the message.
   */
  waitFor(what: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code once the program has exited. */
  readonly exited: Promise<number>;
  /** Kills the program if it still runs. */
  kill(): void;
}

/**
 * Starts `fence args…` in a pseudo-terminal of `cols`×`rows` with only `env` (and PATH, HOME,
 * LANG, TERM) in its environment. Its output feeds an xterm.js headless terminal, so tests read
 * the screen a person would see: what was overwritten is gone, what stayed is there. With
 * `stdoutTo`, fence's stdout goes to that file instead, as `fence … > file` typed in the
 * terminal would; stdin and stderr stay the terminal. With `stderrTo`, the same for stderr.
 */
export function startTerminalSession(options: {
  args: string[];
  cwd: string;
  env: Record<string, string>;
  cols?: number;
  rows?: number;
  stdoutTo?: string;
  stderrTo?: string;
}): TerminalSession {
  const cols = options.cols ?? 100;
  const rows = options.rows ?? 40;
  const terminal = new Terminal({ cols, rows, scrollback: 2000, allowProposedApi: true });
  const command = [process.execPath, FENCE_BIN, ...options.args];
  const redirected = options.stdoutTo === undefined ? command : ['/bin/sh', '-c', 'out="$1"; shift; exec "$@" > "$out"', 'sh', options.stdoutTo, ...command];
  const [file, ...args] = options.stderrTo === undefined ? redirected : ['/bin/sh', '-c', 'err="$1"; shift; exec "$@" 2> "$err"', 'sh', options.stderrTo, ...redirected];
  const child = pty.spawn(file ?? process.execPath, args, {
    cols,
    rows,
    cwd: options.cwd,
    name: 'xterm-256color',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dirname(options.cwd), LANG: 'C.UTF-8', TERM: 'xterm-256color', ...options.env },
  });
  let raw = '';
  const titles: string[] = [];
  const clipboardWrites: string[] = [];
  terminal.onTitleChange((title) => titles.push(title));
  // xterm.js leaves OSC 52 to an addon: a handler of our own sees each request the program made.
  terminal.parser.registerOscHandler(52, (data) => {
    clipboardWrites.push(data);
    return true;
  });
  const waiters = new Set<() => void>();
  let pending = Promise.resolve();
  child.onData((data) => {
    raw += data;
    pending = new Promise<void>((resolve) => terminal.write(data, resolve)).then(() => {
      for (const check of [...waiters]) check();
    });
  });
  // Settles once the terminal has drawn everything the program wrote: the pty's last output can
  // come after its exit event, and xterm.js draws each write a moment after it is given.
  const exited = new Promise<number>((resolve) => child.onExit(({ exitCode }) => resolve(exitCode))).then(async (code) => {
    await pending;
    await new Promise((resolve) => setTimeout(resolve, 0));
    await pending;
    return code;
  });
  let alive = true;
  void exited.then(() => {
    alive = false;
    void pending.then(() => {
      for (const check of [...waiters]) check();
    });
  });

  const screen = () => {
    const buffer = terminal.buffer.active;
    const lines: string[] = [];
    for (let row = 0; row < rows; row++) lines.push(buffer.getLine(buffer.viewportY + row)?.translateToString(true) ?? '');
    return lines;
  };
  const lines = () => {
    const buffer = terminal.buffer.active;
    const all: string[] = [];
    for (let row = 0; row < buffer.length; row++) all.push(buffer.getLine(row)?.translateToString(true) ?? '');
    while (all.length > 0 && all[all.length - 1] === '') all.pop();
    return all;
  };
  const shows = (what: string | RegExp) => {
    const text = screen().join('\n');
    return typeof what === 'string' ? text.includes(what) : what.test(text);
  };

  return {
    screen,
    lines,
    get raw() {
      return raw;
    },
    titles,
    clipboardWrites,
    type(text) {
      if (alive) child.write(text);
    },
    waitFor(what, timeoutMs = 15_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!shows(what)) {
            if (!alive) finish(new Error(`fence exited before the screen showed ${String(what)}:\n${screen().join('\n')}`));
            return;
          }
          finish();
        };
        const timer = setTimeout(() => finish(new Error(`the screen did not show ${String(what)} within ${timeoutMs} ms:\n${screen().join('\n')}`)), timeoutMs);
        const finish = (error?: Error) => {
          clearTimeout(timer);
          waiters.delete(check);
          if (error) reject(error);
          else resolve();
        };
        waiters.add(check);
        void pending.then(check);
      });
    },
    exited,
    kill() {
      if (alive) child.kill();
    },
  };
}
