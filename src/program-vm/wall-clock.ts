import { performance } from 'node:perf_hooks';

/**
 * A program run's wall-time budget: the time since the run started, less the time host
 * functions held the clock (a person answering a confirmation), and a timer that calls
 * `onExpire` when the budget is spent. While any hold is on, the clock stands still and no
 * timer is set; holds may overlap, and each release counts once.
 */
export class WallClock {
  readonly startedAt = performance.now();
  #heldMs = 0;
  #holds = 0;
  #heldSince = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly budgetMs: number,
    private readonly onExpire: () => void,
  ) {
    this.#arm();
  }

  /** Wall time used so far, holds left out. */
  used(now = performance.now()): number {
    return now - this.startedAt - this.#heldMs - (this.#holds > 0 ? now - this.#heldSince : 0);
  }

  /** The budget left, never below 0. */
  left(now = performance.now()): number {
    return Math.max(0, this.budgetMs - this.used(now));
  }

  /** Whether the budget is spent. */
  spent(now = performance.now()): boolean {
    return this.used(now) > this.budgetMs;
  }

  /** Stops the clock until the returned function is called (once; later calls do nothing). */
  hold(): () => void {
    if (this.#holds === 0) this.#heldSince = performance.now();
    this.#holds += 1;
    this.#arm();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holds -= 1;
      if (this.#holds > 0) return;
      this.#heldMs += performance.now() - this.#heldSince;
      this.#arm();
    };
  }

  /** Ends the clock: no timer is set again. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Sets the timer for what is left (none while held or stopped). */
  #arm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#holds > 0 || this.#stopped) return;
    this.#timer = setTimeout(this.onExpire, this.left());
  }
}
