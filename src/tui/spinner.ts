import type { Style } from './terminal-style';
import { codePointWidth, truncateToWidth, visibleWidth } from './terminal-style';

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
  #detail = '';

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
    this.#detail = '';
    this.#since = Date.now();
    if (!this.enabled) return;
    if (!this.#timer) {
      this.#timer = setInterval(() => this.draw(), INTERVAL_MS);
      this.#timer.unref();
      this.out.write('\x1b[?25l');
    }
    this.draw();
  }

  /**
   * Changes the label, keeping the clock, and the `detail` shown dim after the time (one
   * line, no escape sequences; its end is kept when the line is too narrow): the end of a line
   * of the reply still being written. No detail by default.
   */
  relabel(label: string, detail = ''): void {
    this.#label = label;
    this.#detail = detail;
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
    const room = width - visibleWidth(text) - 3;
    const detail = this.#detail && room >= 10 ? ` · ${keepEnd(this.#detail, room)}` : '';
    this.out.write(`\r\x1b[2K${this.style.cyan(text.slice(0, 1))}${this.style.dim(text.slice(1) + detail)}`);
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

/** The end of `text` that fits `columns`, after `…` when cut. */
function keepEnd(text: string, columns: number): string {
  if (visibleWidth(text) <= columns) return text;
  const chars = [...text];
  let width = 1;
  let start = chars.length;
  while (start > 0) {
    const w = codePointWidth(chars[start - 1]?.codePointAt(0) ?? 0);
    if (width + w > columns) break;
    width += w;
    start--;
  }
  return `…${chars.slice(start).join('')}`;
}
