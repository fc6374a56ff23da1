import type { Style } from './terminal-style';
import { truncateToWidth } from './terminal-style';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const INTERVAL_MS = 100;

/** Where a spinner draws: a terminal stream and its width. */
export interface SpinnerOutput {
  write(text: string): unknown;
  readonly columns?: number;
}

/**
 * One status line at the bottom of the output: a spinner, a label and the time since `start`,
 * redrawn ten times a second on a terminal. Whoever writes output clears it first (`clear`)
 * and draws it again after (`draw`), so it never mixes with committed lines. Off a terminal it
 * draws nothing. The line is cut to the terminal's width so it never wraps.
 */
export class Spinner {
  #label = '';
  #since = 0;
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;
  #shown = false;

  constructor(
    private readonly out: SpinnerOutput,
    private readonly style: Style,
    private readonly enabled: boolean,
  ) {}

  /** Whether the spinner is running. */
  get active(): boolean {
    return this.#timer !== undefined;
  }

  /** Starts (or restarts) the spinner with a label; the clock starts now. */
  start(label: string): void {
    this.#label = label;
    this.#since = Date.now();
    if (!this.enabled) return;
    if (!this.#timer) {
      this.#timer = setInterval(() => this.draw(), INTERVAL_MS);
      this.#timer.unref();
      this.out.write('\x1b[?25l');
    }
    this.draw();
  }

  /** Changes the label, keeping the clock. */
  relabel(label: string): void {
    this.#label = label;
    if (this.#timer) this.draw();
  }

  /** Removes the line from the screen; the spinner keeps running and draws again on its next tick. */
  clear(): void {
    if (!this.#shown) return;
    this.out.write('\r\x1b[2K');
    this.#shown = false;
  }

  /** Draws the line now (when running). */
  draw(): void {
    if (!this.#timer) return;
    this.#frame = (this.#frame + 1) % FRAMES.length;
    const seconds = ((Date.now() - this.#since) / 1000).toFixed(1);
    const width = Math.max(10, (this.out.columns ?? 80) - 1);
    const text = truncateToWidth(`${FRAMES[this.#frame]} ${this.#label} ${seconds}s`, width);
    this.out.write(`\r\x1b[2K${this.style.cyan(text.slice(0, 1))}${this.style.dim(text.slice(1))}`);
    this.#shown = true;
  }

  /** Stops and removes the line; the cursor is shown again. */
  stop(): void {
    if (!this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.clear();
    this.out.write('\x1b[?25h');
  }
}
