/** The terminal input the chat reads keys from. */
export interface KeyInput {
  readonly isTTY?: boolean;
  readonly isRaw?: boolean;
  setRawMode?(mode: boolean): unknown;
  on(event: 'data', listener: (data: Buffer | string) => void): unknown;
  off(event: 'data', listener: (data: Buffer | string) => void): unknown;
  resume(): unknown;
  pause(): unknown;
}

/**
 * The keys that count while the agent runs: Ctrl-C stops the run (the stream, or the tool under
 * way). The terminal is in raw mode meanwhile (and left as it was found after), so typed keys do
 * not echo into the reply; every other key is kept as type-ahead for the next prompt, as a shell
 * keeps what is typed while a command runs. `pause` hands the terminal to the line editor (a
 * confirmation) and `resume` takes it back.
 */
export class RunKeys {
  #onInterrupt: (() => void) | undefined;
  #listening = false;
  #wasRaw = false;
  #typed: string[] = [];

  constructor(private readonly input: KeyInput) {}

  /** Starts watching for one run. */
  start(onInterrupt: () => void): void {
    this.#onInterrupt = onInterrupt;
    this.#listen();
  }

  /** Stops watching (the run ended). */
  stop(): void {
    this.#unlisten();
    this.#onInterrupt = undefined;
  }

  /** Lets go of the terminal for a while (the line editor reads a confirmation). */
  pause(): void {
    this.#unlisten();
  }

  /** Takes the terminal back after `pause`, while a run is still watched. */
  resume(): void {
    if (this.#onInterrupt) this.#listen();
  }

  /**
   * The keys typed during the run, exactly as they came (Enter and arrows included) and in the
   * chunks the terminal sent them, Ctrl-C left out; and forgets them. The chat gives them to
   * the line editor as if typed at its prompt.
   */
  takeTypeahead(): string[] {
    const typed = this.#typed;
    this.#typed = [];
    return typed;
  }

  readonly #onData = (data: Buffer | string): void => {
    const text = typeof data === 'string' ? data : data.toString('utf8');
    if (text.includes('\x03')) this.#onInterrupt?.();
    const kept = text.replaceAll('\x03', '');
    if (kept) this.#typed.push(kept);
  };

  #listen(): void {
    if (this.#listening || this.input.isTTY !== true) return;
    this.#listening = true;
    this.#wasRaw = this.input.isRaw === true;
    this.input.setRawMode?.(true);
    this.input.on('data', this.#onData);
    this.input.resume();
  }

  #unlisten(): void {
    if (!this.#listening) return;
    this.#listening = false;
    this.input.off('data', this.#onData);
    this.input.setRawMode?.(this.#wasRaw);
    this.input.pause();
  }
}
