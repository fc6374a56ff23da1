import type { QuickJSDeferredPromise, QuickJSHandle } from 'quickjs-emscripten-core';
import { errorEnvelope, messageOf, OutputBuffer, resultEnvelope, type ThrownDescription } from './vm-values';
import { PROCESS_VM_BUDGET, type VmBudget, type VmSlot } from './vm-budget';
import { DEFAULT_VM_LIMITS, definedOnly, type VmLimits } from './vm-limits';
import { isWasmTrap, vmMemoryCap, VmOutOfMemory, VmTimedOut, QuickJsVm, type VmHostBindings } from './quickjs-vm';
import { WallClock } from './wall-clock';

export { DEFAULT_VM_LIMITS, type VmLimits } from './vm-limits';

/**
 * A function the program may call. It receives the program's argument as plain JSON data and
 * an AbortSignal that fires when the run ends while the call is in flight; what it resolves to reaches the program
 * as JSON data, and an Error it rejects with reaches the program as an Error with the same
 * message (and name).
 */
export type HostFunction = (args: unknown, signal: AbortSignal, host?: HostCallControls) => Promise<unknown>;

/** What a host function may do to the run it serves. */
export interface HostCallControls {
  /**
   * Stops the wall clock until the returned function is called (once; later calls do
   * nothing): for time spent waiting on a person, such as a confirmation, which is not the
   * program's. Holds may overlap; the clock runs again when the last is released.
   */
  holdClock(): () => void;
  /** The budget the run's sandbox came from: a sandbox the call starts takes its place from it, nested. */
  budget: VmBudget;
}

export interface VmRunOptions {
  /** The program: JavaScript with top-level `await` and `return`. */
  code: string;
  /** Exposed as async global functions of one argument (`await read({ path })`) and as `tools.<name>`. */
  functions: Record<string, HostFunction>;
  /** Overrides of {@link DEFAULT_VM_LIMITS}. */
  limits?: Partial<VmLimits>;
  /** Backing for `store(key, value)` / `load(key)`; sync; `set` may throw (e.g. a size cap) and the program sees that error. */
  store?: { get(key: string): unknown; set(key: string, value: unknown): void };
  /** Aborting ends the run (kind 'aborted') and aborts in-flight host calls. */
  signal?: AbortSignal;
  /**
   * Extra globals for the program (e.g. its arguments), as JSON-compatible data; defined after
   * the helpers and tools, so a name given here replaces one of theirs.
   */
  globals?: Record<string, unknown>;
  /** The session's budget the sandbox takes its place from (default: one shared by the process's other runs). */
  budget?: VmBudget;
  /** Started by a host call of another run, which holds a place: no waiting for one (see `VmBudget`). */
  nested?: boolean;
}

export type VmErrorKind = 'syntax' | 'thrown' | 'memory' | 'cpu_time' | 'wall_time' | 'stack' | 'tool_calls' | 'budget' | 'aborted' | 'internal';

export interface VmError {
  /**
   * What ended the run: a limit, the program's own failure, no room in the session's budget
   * for another sandbox (`budget`), an abort, or a sandbox fault (`internal`).
   */
  kind: VmErrorKind;
  /** One line for a reader, e.g. `Error: boom` or `the program used more than its 500 ms of CPU time`. */
  message: string;
  /** 1-based line in the program's own code */
  line?: number;
}

export interface VmResult {
  /** The program finished and its result could be read. */
  ok: boolean;
  /** What the program printed, up to `maxOutputBytes`. */
  stdout: string;
  /** Bytes of output dropped past `maxOutputBytes`. */
  droppedOutputBytes: number;
  /** The top-level `return` value, as a plain JSON-compatible value (undefined when none). */
  result?: unknown;
  /** Set exactly when `ok` is false. */
  error?: VmError;
  /** CPU time spent inside QuickJS, wall time of the whole run (both rounded ms), host calls started. */
  stats: { cpuTimeMs: number; wallTimeMs: number; toolCalls: number };
}

/**
 * Runs a program in a fresh QuickJS/WebAssembly sandbox with hard limits, and never rejects.
 *
 * What a program can reach: the standard built-ins, the host functions (as async functions of
 * one argument), `print`/`console`, `gather` (Promise.all), `unique`, `store`/`load`, and a
 * clock rounded to 100 ms. No file system, network, `process`, `require` or `import()`.
 * Values cross the boundary only as JSON text. Every run gets its own WebAssembly memory, so
 * nothing survives a run; host calls still in flight when it ends are aborted.
 */
export async function runInVm(options: VmRunOptions): Promise<VmResult> {
  return new SandboxRun(options).execute();
}

const PROGRAM_FILE = 'program.js';
/** The program becomes the body of an async function: top-level await and return work. */
const PROGRAM_PREFIX = '(async function () {\n';
const PROGRAM_SUFFIX = '\n})()';
const PROGRAM_PREFIX_LINES = 1;
/** How long past the CPU or wall time left the watchdog lets QuickJS run before terminating it. */
const WATCHDOG_GRACE_MS = 100;
/** Jobs run per call into QuickJS, so that the loop regains control between batches. */
const JOBS_PER_BATCH = 512;
const NEVER_SETTLED = 'the program never finished: a promise it awaited never settled';

type Outcome = { ok: true; result: unknown } | { ok: false; error: VmError };

interface HostCall {
  name: string;
  args: unknown;
  deferred: QuickJSDeferredPromise;
}

/** One run: the limits' bookkeeping, the host-call queue and the loop that drives QuickJS. */
class SandboxRun {
  private readonly limits: VmLimits;
  /** The wall-time budget, started with the run. */
  private clock: WallClock | undefined;
  private readonly output: OutputBuffer;
  private readonly callAbort = new AbortController();
  private cpuMs = 0;
  private sliceStart: number | undefined;
  private stop: VmError | undefined;
  private toolCalls = 0;
  private vm: QuickJsVm | undefined;
  private main: QuickJSHandle | undefined;
  private readonly unsettled = new Set<HostCall>();
  private readonly waiting: HostCall[] = [];
  private inFlight = 0;
  private readonly settled: { call: HostCall; envelope: string }[] = [];
  private wakeUp: (() => void) | undefined;
  private readonly budget: VmBudget;
  private slot: VmSlot | undefined;
  /** Fired when the run is stopped, to end a wait for a place in the budget. */
  private readonly stopped = new AbortController();
  /** What every host function gets besides its argument and signal. */
  private readonly controls: HostCallControls;

  constructor(private readonly options: VmRunOptions) {
    this.limits = { ...DEFAULT_VM_LIMITS, ...definedOnly(options.limits) };
    this.output = new OutputBuffer(this.limits.maxOutputBytes);
    this.budget = options.budget ?? PROCESS_VM_BUDGET;
    this.controls = { holdClock: () => this.clock?.hold() ?? (() => undefined), budget: this.budget };
  }

  async execute(): Promise<VmResult> {
    const { signal } = this.options;
    const onAbort = (): void => this.halt('aborted', 'the run was aborted');
    signal?.addEventListener('abort', onAbort, { once: true });
    const clock = new WallClock(this.limits.wallTimeMs, () => this.halt('wall_time', this.wallMessage()));
    this.clock = clock;
    let outcome: Outcome;
    try {
      if (signal?.aborted) onAbort();
      outcome = await this.drive();
    } catch (error) {
      outcome = this.hostFailure(error);
    } finally {
      clock.stop();
      signal?.removeEventListener('abort', onAbort);
    }
    return this.finish(outcome);
  }

  private async drive(): Promise<Outcome> {
    if (this.stop) return { ok: false, error: this.stop };
    const refused = await this.takeSlot();
    if (refused) return refused;
    let vm: QuickJsVm;
    try {
      vm = await QuickJsVm.create({
        memoryBytes: this.limits.memoryBytes,
        stackBytes: this.limits.stackBytes,
        shouldInterrupt: () => this.shouldInterrupt(),
      });
    } catch (error) {
      return this.stop ? { ok: false, error: this.stop } : internal(`the sandbox could not start: ${messageOf(error)}`);
    }
    this.vm = vm;
    if (this.stop) return { ok: false, error: this.stop };
    const source = PROGRAM_PREFIX + this.options.code + PROGRAM_SUFFIX;
    if (Buffer.byteLength(source) * 2 > vm.headroom) {
      return { ok: false, error: { kind: 'memory', message: "the program's text is too large for the sandbox's memory" } };
    }
    const started = this.slice((): Outcome | undefined => {
      vm.installPrelude(this.bindings(vm));
      const evaluated = vm.context.evalCode(source, PROGRAM_FILE, { type: 'global' });
      if (evaluated.error) return this.failureOf(evaluated.error, 'syntax');
      this.main = evaluated.value;
      return undefined;
    });
    if (started || !this.main) return started ?? internal('the program did not start');
    return this.settleMain(vm, this.main);
  }

  /** Takes the run's place in the budget (waiting for one unless nested); the failure when there is none. */
  private async takeSlot(): Promise<Outcome | undefined> {
    const memoryBytes = vmMemoryCap(this.limits.memoryBytes);
    const answer = await this.budget.acquire({ memoryBytes, nested: this.options.nested === true, signal: this.stopped.signal });
    if (!('refused' in answer)) {
      this.slot = answer;
      return this.stop ? { ok: false, error: this.stop } : undefined;
    }
    if (this.stop?.kind === 'wall_time') {
      const message = `no sandbox became free within the program's ${this.limits.wallTimeMs} ms wall-time limit (${this.budget.live} are running)`;
      return { ok: false, error: { kind: 'budget', message } };
    }
    return { ok: false, error: this.stop ?? { kind: 'budget', message: answer.refused } };
  }

  /** Alternates between settling host calls and running QuickJS's jobs until the program's promise settles. */
  private async settleMain(vm: QuickJsVm, main: QuickJSHandle): Promise<Outcome> {
    for (;;) {
      const outcome = this.slice(() => this.step(vm, main));
      if (outcome) return outcome;
      if (this.settled.length > 0 || vm.runtime.hasPendingJob()) continue;
      if (this.inFlight === 0 && this.waiting.length === 0) {
        // A chain of jobs that ran out of memory stops with a rejection nobody awaits: say so.
        if (vm.nearLimit) return { ok: false, error: { kind: 'memory', message: this.memoryMessage(`${NEVER_SETTLED}, and the sandbox's memory was full`) } };
        return { ok: false, error: { kind: 'thrown', message: NEVER_SETTLED } };
      }
      await new Promise<void>((resolve) => {
        this.wakeUp = resolve;
      });
    }
  }

  /** One pass inside QuickJS: settle finished host calls, run a batch of jobs, look at the program's promise. */
  private step(vm: QuickJsVm, main: QuickJSHandle): Outcome | undefined {
    if (this.stop) return { ok: false, error: this.stop };
    this.applySettlements(vm);
    const jobs = vm.runtime.executePendingJobs(JOBS_PER_BATCH);
    if (jobs.error) return this.failureOf(jobs.error);
    if (this.stop) return { ok: false, error: this.stop };
    const state = vm.context.getPromiseState(main);
    if (state.type === 'rejected') return this.failureOf(state.error);
    if (state.type === 'pending') return undefined;
    try {
      return this.resultOf(vm, state.value);
    } finally {
      if (!state.notAPromise) state.value.dispose();
    }
  }

  /** The program's return value as host data (inside a slice). */
  private resultOf(vm: QuickJsVm, value: QuickJSHandle): Outcome {
    const converted = vm.toJson(value);
    if ('error' in converted) {
      const failure = this.failureOf(converted.error);
      if (failure.ok || failure.error.kind !== 'thrown') return failure;
      return { ok: false, error: { ...failure.error, message: `the program's result is not JSON-compatible: ${failure.error.message}` } };
    }
    if (converted.json === undefined) return { ok: true, result: undefined };
    try {
      return { ok: true, result: JSON.parse(converted.json) };
    } catch (error) {
      return { ok: false, error: { kind: 'thrown', message: `the program's result could not be read: ${messageOf(error)}` } };
    }
  }

  /** Resolves the VM promises of host calls that have finished (inside a slice). */
  private applySettlements(vm: QuickJsVm): void {
    for (const { call, envelope } of this.settled.splice(0)) {
      this.unsettled.delete(call);
      if (this.stop) {
        call.deferred.dispose();
        continue;
      }
      const text = vm.newString(envelope);
      try {
        call.deferred.resolve(text);
      } finally {
        text.dispose();
        call.deferred.dispose();
      }
    }
  }

  /** The host functions the prelude builds the program's globals on. */
  private bindings(vm: QuickJsVm): VmHostBindings {
    const { functions, store, globals } = this.options;
    return {
      toolNames: Object.keys(functions),
      globalsJson: JSON.stringify(globals ?? {}),
      call: (name, argsJson) => this.startCall(vm, name, argsJson),
      write: (text) => this.output.write(text),
      store: (key, valueJson) => {
        if (!store) throw new Error('store() is not available in this run');
        store.set(key, valueJson === undefined ? undefined : JSON.parse(valueJson));
      },
      load: (key) => {
        if (!store) throw new Error('load() is not available in this run');
        const value = store.get(key);
        return value === undefined ? undefined : JSON.stringify(value);
      },
      outOfMemory: () => this.halt('memory', this.memoryMessage('InternalError: out of memory')),
    };
  }

  private startCall(vm: QuickJsVm, name: string, argsJson: string | undefined): QuickJSHandle {
    if (this.stop) throw new Error('the run is over');
    if (!Object.hasOwn(this.options.functions, name)) throw new Error(`no function named ${name}`);
    if (this.toolCalls >= this.limits.maxToolCalls) {
      const message = `the program made more than ${this.limits.maxToolCalls} tool calls`;
      this.halt('tool_calls', message);
      throw new Error(message);
    }
    this.toolCalls += 1;
    const args: unknown = argsJson === undefined ? undefined : JSON.parse(argsJson);
    const call: HostCall = { name, args, deferred: vm.context.newPromise() };
    this.unsettled.add(call);
    this.waiting.push(call);
    queueMicrotask(() => this.pumpCalls());
    return call.deferred.handle;
  }

  /** Starts waiting calls while fewer than `maxConcurrentCalls` are in flight. */
  private pumpCalls(): void {
    while (!this.stop && this.inFlight < this.limits.maxConcurrentCalls && this.waiting.length > 0) {
      const call = this.waiting.shift() as HostCall;
      const fn = this.options.functions[call.name] as HostFunction;
      const signal = this.callAbort.signal;
      this.inFlight += 1;
      Promise.resolve()
        .then(() => fn(call.args, signal, this.controls))
        .then(
          (value) => this.callSettled(call, resultEnvelope(call.name, value)),
          (reason: unknown) => this.callSettled(call, errorEnvelope(reason)),
        );
    }
  }

  private callSettled(call: HostCall, envelope: string): void {
    this.inFlight -= 1;
    if (this.stop || !this.unsettled.has(call)) return;
    this.settled.push({ call, envelope });
    this.pumpCalls();
    this.wake();
  }

  /** Turns a VM exception into the run's error (inside a slice); limits that stopped the run take precedence. */
  private failureOf(thrown: QuickJSHandle, compileKind?: 'syntax'): { ok: false; error: VmError } {
    try {
      if (this.stop) return { ok: false, error: this.stop };
      const description = (this.vm as QuickJsVm).describe(thrown);
      if (this.stop) return { ok: false, error: this.stop };
      if (!description) {
        return { ok: false, error: { kind: 'memory', message: this.memoryMessage('the program ran out of memory; its error could not be read') } };
      }
      return { ok: false, error: this.classify(description, compileKind) };
    } finally {
      if (!this.vm?.poisoned) thrown.dispose();
    }
  }

  private classify(description: ThrownDescription, compileKind?: 'syntax'): VmError {
    const { isError, name, message, stack } = description;
    const line = programLine(stack, this.options.code);
    const text = isError ? (name ? `${name}: ${message}` : message) : `Uncaught ${message}`;
    const withLine = (kind: VmErrorKind, shown: string): VmError =>
      line === undefined ? { kind, message: shown } : { kind, message: shown, line };
    if (isError && name === 'InternalError' && /^(out of memory|string too long)/.test(message)) {
      return withLine('memory', this.memoryMessage(text));
    }
    if (isError && ((name === 'InternalError' && message === 'stack overflow') || /call stack size exceeded/.test(message))) {
      return withLine('stack', `${text} (the program recursed too deeply)`);
    }
    if (!isError && message === 'null' && this.vm?.nearLimit) {
      // QuickJS throws null when it cannot even allocate its out-of-memory error.
      return withLine('memory', this.memoryMessage('the program ran out of memory'));
    }
    if (compileKind === 'syntax' && isError && name === 'SyntaxError') return withLine('syntax', text);
    return withLine('thrown', text);
  }

  /** Failures raised by the host side of the VM: traps and host stack overflows poison the module. */
  private hostFailure(error: unknown): Outcome {
    if (this.stop) return { ok: false, error: this.stop };
    const vm = this.vm;
    if (error instanceof VmOutOfMemory) return { ok: false, error: { kind: 'memory', message: this.memoryMessage('out of memory') } };
    if (/call stack size exceeded/.test(messageOf(error))) {
      if (vm) vm.poisoned = true;
      return { ok: false, error: { kind: 'stack', message: 'the program recursed deeper than the host stack allows' } };
    }
    if (isWasmTrap(error)) {
      if (vm) vm.poisoned = true;
      if (vm?.nearLimit) return { ok: false, error: { kind: 'memory', message: this.memoryMessage(`the sandbox stopped: ${error.message}`) } };
      return internal(`the sandbox stopped: ${error.message}${vm?.lastModuleError ? ` (${vm.lastModuleError})` : ''}`);
    }
    return internal(`the sandbox failed: ${messageOf(error)}`);
  }

  private memoryMessage(text: string): string {
    const mib = Math.round((this.vm?.maxBytes ?? this.limits.memoryBytes) / (1024 * 1024));
    return `${text} (memory limit ${mib} MiB)`;
  }

  private shouldInterrupt(): boolean {
    if (this.stop) return true;
    const now = performance.now();
    if (this.sliceStart !== undefined && this.cpuMs + (now - this.sliceStart) > this.limits.cpuTimeMs) {
      this.halt('cpu_time', this.cpuMessage());
      return true;
    }
    if (this.clock?.spent(now)) {
      this.halt('wall_time', this.wallMessage());
      return true;
    }
    if (this.options.signal?.aborted) {
      this.halt('aborted', 'the run was aborted');
      return true;
    }
    return false;
  }

  private cpuMessage(): string {
    return `the program used more than its ${this.limits.cpuTimeMs} ms of CPU time`;
  }

  private wallMessage(): string {
    return `the program ran longer than its ${this.limits.wallTimeMs} ms wall-time limit`;
  }

  /** Ends the run for `kind` (the first reason wins) and wakes the loop. */
  private halt(kind: VmErrorKind, message: string): void {
    this.stop ??= { kind, message };
    this.stopped.abort();
    this.wake();
  }

  private wake(): void {
    const wakeUp = this.wakeUp;
    this.wakeUp = undefined;
    wakeUp?.();
  }

  /**
   * Runs `body` as QuickJS time: it counts towards `cpuTimeMs`, and the watchdog ends it a
   * little after the CPU or wall time left, should the interrupt handler not get to.
   */
  private slice<T>(body: () => T): T {
    const vm = this.vm;
    if (this.sliceStart !== undefined || !vm) return body();
    const start = performance.now();
    const cpuLeft = this.limits.cpuTimeMs - this.cpuMs;
    const wallLeft = this.clock?.left(start) ?? this.limits.wallTimeMs;
    this.sliceStart = start;
    try {
      return vm.guard(body, Math.max(0, Math.min(cpuLeft, wallLeft)) + WATCHDOG_GRACE_MS);
    } catch (error) {
      if (error instanceof VmTimedOut) {
        if (cpuLeft <= wallLeft) this.halt('cpu_time', this.cpuMessage());
        else this.halt('wall_time', this.wallMessage());
      }
      throw error;
    } finally {
      this.cpuMs += performance.now() - start;
      this.sliceStart = undefined;
    }
  }

  /** Aborts host calls still running, frees every handle and the VM, and builds the result. */
  private finish(outcome: Outcome): VmResult {
    this.stop ??= { kind: 'internal', message: 'the run is over' };
    this.callAbort.abort(new Error(outcome.ok ? 'the program finished' : outcome.error.message));
    let final = outcome;
    const vm = this.vm;
    if (vm && !vm.poisoned) {
      try {
        for (const call of this.unsettled) call.deferred.dispose();
        if (this.main?.alive) this.main.dispose();
        vm.dispose();
      } catch (error) {
        // QuickJS asserts that nothing is left on the heap. After a clean run that means a
        // handle was leaked, and the run fails loudly; after an interrupted one QuickJS itself
        // may leave objects behind, and the module is simply dropped with its memory.
        if (final.ok) final = internal(`the sandbox did not shut down cleanly: ${messageOf(error)}`);
      }
    }
    this.unsettled.clear();
    this.slot?.release();
    const ending = final.ok ? (final.result === undefined ? {} : { result: final.result }) : { error: final.error };
    return {
      ok: final.ok,
      stdout: this.output.text(),
      droppedOutputBytes: this.output.droppedBytes,
      ...ending,
      stats: { cpuTimeMs: Math.round(this.cpuMs), wallTimeMs: Math.round(performance.now() - (this.clock?.startedAt ?? performance.now())), toolCalls: this.toolCalls },
    };
  }
}

/** The 1-based line of the innermost frame in the program's own code, clamped to the program. */
function programLine(stack: string, code: string): number | undefined {
  const match = /program\.js:(\d+)/.exec(stack);
  if (!match) return undefined;
  const lines = code.split('\n').length;
  return Math.min(Math.max(Number(match[1]) - PROGRAM_PREFIX_LINES, 1), lines);
}

function internal(message: string): { ok: false; error: VmError } {
  return { ok: false, error: { kind: 'internal', message } };
}
