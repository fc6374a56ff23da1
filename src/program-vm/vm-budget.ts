/** What one budget allows: sandboxes alive at once and the sum of their memory caps. */
export interface VmBudgetLimits {
  /** Sandboxes alive at once (default 8). */
  maxLive: number;
  /** Sum of the live sandboxes' WebAssembly memory caps, in bytes (default 1 GiB). */
  memoryBytes: number;
}

/** The budget's limits where a caller says nothing. */
export const DEFAULT_VM_BUDGET: Readonly<VmBudgetLimits> = Object.freeze({
  maxLive: 8,
  memoryBytes: 1024 * 1024 * 1024,
});

/** A place in a budget, held by one live sandbox; `release` gives it back (once; later calls do nothing). */
export interface VmSlot {
  /** The memory reserved for the sandbox, in bytes. */
  readonly memoryBytes: number;
  release(): void;
}

/** What a sandbox asks of the budget. */
export interface SlotRequest {
  /** The sandbox's memory cap as it will really be applied (see `vmMemoryCap`). */
  memoryBytes: number;
  /**
   * The caller already holds a place (a program calling a program): the request is answered
   * at once, with a place or a refusal, never queued. Otherwise it waits its turn.
   */
  nested: boolean;
  /** Ends a wait with a refusal (the run was stopped while it waited). */
  signal?: AbortSignal;
}

/** A request the budget could not grant: why, in one line. */
export interface SlotRefusal {
  refused: string;
}

interface Waiter {
  memoryBytes: number;
  grant(slot: VmSlot | SlotRefusal): void;
}

const MIB = 1024 * 1024;

/**
 * The sandboxes of one session drawn from one pool: at most `maxLive` alive at once, and the
 * sum of their memory caps at most `memoryBytes`. Every sandbox takes a place before it starts
 * and gives it back however it ends.
 *
 * Waiting cannot deadlock: only a caller holding no place waits (the model's program, a saved
 * program the model or Python calls); a program calling a program, which holds a place while
 * it waits for the call, gets an answer at once and a refusal is an error it can catch. Those
 * who hold places are running programs, each ending within its own limits, so places come back.
 * Waiters are served in order, the first blocking those behind it until it fits.
 */
export class VmBudget {
  readonly limits: Readonly<VmBudgetLimits>;
  private liveCount = 0;
  private reserved = 0;
  private highestLive = 0;
  private highestReserved = 0;
  private readonly queue: Waiter[] = [];

  constructor(limits: Partial<VmBudgetLimits> = {}) {
    this.limits = Object.freeze({ ...DEFAULT_VM_BUDGET, ...limits });
  }

  /** Sandboxes alive now. */
  get live(): number {
    return this.liveCount;
  }

  /** Bytes reserved by the live sandboxes now. */
  get reservedBytes(): number {
    return this.reserved;
  }

  /** The most sandboxes that were alive at once. */
  get peakLive(): number {
    return this.highestLive;
  }

  /** The most bytes that were reserved at once. */
  get peakReservedBytes(): number {
    return this.highestReserved;
  }

  /** Requests waiting for a place. */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * A place for one sandbox reserving `memoryBytes`, or a refusal saying why: the request can
   * never fit, it is nested and there is no room now, or its signal fired while it waited.
   */
  acquire(request: SlotRequest): Promise<VmSlot | SlotRefusal> {
    const { memoryBytes, nested, signal } = request;
    if (memoryBytes > this.limits.memoryBytes) {
      return Promise.resolve({
        refused: `the sandbox's memory cap of ${mib(memoryBytes)} MiB is more than the ${mib(this.limits.memoryBytes)} MiB all sandboxes may reserve together`,
      });
    }
    if (signal?.aborted) return Promise.resolve({ refused: 'the run was stopped before it had a sandbox' });
    // A nested request may pass those waiting: its caller holds a place, so it is part of work under way.
    if ((nested || this.queue.length === 0) && this.fits(memoryBytes)) return Promise.resolve(this.take(memoryBytes));
    if (nested) return Promise.resolve({ refused: this.fullMessage(memoryBytes) });
    return new Promise((resolve) => {
      const onAbort = (): void => {
        const index = this.queue.indexOf(waiter);
        if (index < 0) return;
        this.queue.splice(index, 1);
        resolve({ refused: 'the run was stopped while it waited for a sandbox' });
        this.serve();
      };
      const waiter: Waiter = {
        memoryBytes,
        grant: (answer) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(answer);
        },
      };
      this.queue.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private fits(memoryBytes: number): boolean {
    return this.liveCount < this.limits.maxLive && this.reserved + memoryBytes <= this.limits.memoryBytes;
  }

  private take(memoryBytes: number): VmSlot {
    this.liveCount += 1;
    this.reserved += memoryBytes;
    this.highestLive = Math.max(this.highestLive, this.liveCount);
    this.highestReserved = Math.max(this.highestReserved, this.reserved);
    let held = true;
    return {
      memoryBytes,
      release: () => {
        if (!held) return;
        held = false;
        this.liveCount -= 1;
        this.reserved -= memoryBytes;
        this.serve();
      },
    };
  }

  /** Grants waiting requests in order while the first of them fits. */
  private serve(): void {
    for (;;) {
      const first = this.queue[0];
      if (!first || !this.fits(first.memoryBytes)) return;
      this.queue.shift();
      first.grant(this.take(first.memoryBytes));
    }
  }

  private fullMessage(memoryBytes: number): string {
    const { maxLive, memoryBytes: total } = this.limits;
    const why =
      this.liveCount >= maxLive
        ? `${this.liveCount} sandboxes are running, the most this session allows at once`
        : `the running sandboxes hold ${mib(this.reserved)} of the ${mib(total)} MiB all may reserve, and this one needs ${mib(memoryBytes)} MiB`;
    return `no sandbox was free for a program called from a program: ${why}; call fewer programs in parallel`;
  }
}

function mib(bytes: number): number {
  return Math.round(bytes / MIB);
}

/** The budget of runs given none, so that every sandbox of the process counts against one. */
export const PROCESS_VM_BUDGET = new VmBudget();
