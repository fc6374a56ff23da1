import { format } from 'node:util';

/** Longest warning line passed on; the rest is cut with `…`. */
const WARNING_CHARS = 300;

/** Where the warnings of a provider's SDK go, one line each (e.g. `fence: …` on stderr). */
export type WarningSink = (line: string) => void;

/** The default sink: one `fence: <line>` on stderr. */
export function warnOnStderr(line: string): void {
  process.stderr.write(`fence: ${line}\n`);
}

/** The `logger` option both SDKs take. */
export interface SdkLogger {
  error: (message: string, ...rest: unknown[]) => void;
  warn: (message: string, ...rest: unknown[]) => void;
  info: (message: string, ...rest: unknown[]) => void;
  debug: (message: string, ...rest: unknown[]) => void;
}

/**
 * The warnings one SDK client prints (a model's deprecation, a conflicting key), turned into
 * fence's own output: the first line of each, named after the SDK (`Anthropic SDK: The model
 * 'claude-sonnet-4-5' is deprecated …`), passed to the sink once per distinct text, however
 * many requests repeat it. Nothing the SDK prints reaches the terminal raw.
 */
export class SdkWarnings {
  private readonly seen = new Set<string>();

  /**
   * For the SDK's `logger` option (with `logLevel: 'warn'`): warnings go to the sink; errors
   * are dropped, because the SDK throws them as well and fence reports what it throws.
   */
  readonly logger: SdkLogger = {
    error: () => undefined,
    warn: (...args) => this.pass(args),
    info: () => undefined,
    debug: () => undefined,
  };

  /** `sdk` names the SDK in each line, e.g. `Anthropic SDK`. */
  constructor(
    private readonly sdk: string,
    private readonly sink: WarningSink,
  ) {}

  /**
   * Runs `call`, a synchronous call into the SDK (creating a request), with `console.warn`
   * and `console.error` passed to the sink: the SDKs write some warnings, such as a model's
   * deprecation, straight to the console rather than to their logger. JavaScript runs one
   * synchronous call at a time, so nothing but the SDK's own code writes in between. A
   * promise `call` returns is returned as it is; only what is printed before it returns is
   * caught.
   */
  during<T>(call: () => T): T {
    const { warn, error } = console;
    console.warn = (...args: unknown[]) => this.pass(args);
    console.error = (...args: unknown[]) => this.pass(args);
    try {
      return call();
    } finally {
      console.warn = warn;
      console.error = error;
    }
  }

  private pass(args: unknown[]): void {
    const first = format(...args).split('\n').find((line) => line.trim() !== '')?.trim();
    if (first === undefined || this.seen.has(first)) return;
    this.seen.add(first);
    const line = first.length > WARNING_CHARS ? `${first.slice(0, WARNING_CHARS - 1)}…` : first;
    this.sink(`${this.sdk}: ${line}`);
  }
}
