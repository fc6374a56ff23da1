import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import syncVariant from '@jitl/quickjs-wasmfile-release-sync';
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSWASMModule,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
} from 'quickjs-emscripten-core';
import { PRELUDE_FILE, PRELUDE_SOURCE, parseThrownDescription, type ThrownDescription } from './sandbox-prelude';

/** The few WebAssembly APIs used here; the project's type libraries (ES2023, Node 20) do not declare them. */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface WasmApi {
  Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
  compile(bytes: Uint8Array): Promise<object>;
  instantiate(module: object, imports: unknown): Promise<{ exports: unknown }>;
  RuntimeError: new (message?: string) => Error;
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** Whether `error` is a WebAssembly trap or an abort of the module (raised as a trap). */
export function isWasmTrap(error: unknown): error is Error {
  return error instanceof wasm.RuntimeError;
}

const MIB = 1024 * 1024;
const WASM_PAGE_BYTES = 64 * 1024;
/** The QuickJS build declares 16 MiB as the least memory it can be instantiated with. */
const MODULE_MIN_BYTES = 16 * MIB;
/** Below the heap: static data and the 5 MiB C stack of the build (measured 5.09 MiB). */
const STATIC_BYTES = 6 * MIB;
/** Smallest memory cap honoured: the module minimum plus room for a useful heap. */
export const MIN_SANDBOX_MEMORY_BYTES = 24 * MIB;
/**
 * Strings the host writes into the VM go through the module's `malloc`, which the runtime's
 * memory limit does not count and whose failure the binding does not check. Those of at most
 * this many UTF-8 bytes (with the terminating NUL) are harmless even then: they land in the
 * module's unused first kilobyte. Longer ones are written in pieces of this size when the
 * memory cannot be shown to have room for them (see {@link SandboxVm.newString}).
 */
const SAFE_HOST_STRING_BYTES = 1024;
const SAFE_CHUNK_UNITS = Math.floor((SAFE_HOST_STRING_BYTES - 1) / 3);

/** What is learnt once per process about the QuickJS build. */
interface Engine {
  /** The compiled module; immutable, shared by every sandbox, each with its own memory. */
  module: object;
  /** Byte offset of `interrupt_counter` in QuickJS's JSContext, when calibration found it. */
  counterOffset: number | undefined;
}

/** One compile (and one calibration) per process; a failure is retried by the next caller. */
const loadEngine: () => Promise<Engine> = (() => {
  let pending: Promise<Engine> | undefined;
  return () => {
    pending ??= (async () => {
      const path = createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
      const module = await wasm.compile(await readFile(path));
      return { module, counterOffset: await findCounterOffset(module) };
    })();
    pending.catch(() => {
      pending = undefined;
    });
    return pending;
  };
})();

/** Host functions the prelude receives; each returns what the VM function returns. */
export interface SandboxHostBindings {
  /** `hostCall(name, argsJson)`: the handle of a promise that settles with an envelope string. */
  call(name: string, argsJson: string | undefined): QuickJSHandle;
  /** `hostWrite(text)`: one line of output. */
  write(text: string): void;
  /** `hostStore(key, valueJson)`; may throw, and the program sees the error. */
  store(key: string, valueJson: string | undefined): void;
  /** `hostLoad(key)`: JSON text of the stored value, or undefined. */
  load(key: string): string | undefined;
  /** Names of the tools to expose. */
  toolNames: string[];
}

export interface SandboxVmOptions {
  /** Cap on the module's whole WebAssembly memory (raised to {@link MIN_SANDBOX_MEMORY_BYTES}). */
  memoryBytes: number;
  /** QuickJS's own stack limit. */
  stackBytes: number;
  /** Polled by QuickJS while it runs; `true` stops the program with an uncatchable error. */
  shouldInterrupt: () => boolean;
}

/** Raised by the host when a string read from the VM came back damaged: QuickJS could not allocate its copy. */
export class SandboxOutOfMemory extends Error {
  override name = 'SandboxOutOfMemory';
}

/**
 * What the host keeps about one module instance: diagnostics, and the means to stop it hard.
 * QuickJS's interrupt raises an error that an async function turns into a rejection, so a
 * program can go on after it (`async function f() { for (;;); } for (;;) f();`). The kill
 * switch covers that: once requested, the import through which QuickJS polls for interrupts
 * throws, unwinding the whole WebAssembly stack, and the module is never used again.
 */
interface ModuleControl {
  lastModuleError: string;
  /** The import being called most recently, as `module.name`. */
  lastImport: string;
  /** The import through which QuickJS polls the interrupt handler, learnt at the first poll. */
  interruptImport: string | undefined;
  killRequested: boolean;
}

/** Thrown through the module's stack by the kill switch. */
export class SandboxKilled extends Error {
  override name = 'SandboxKilled';
}

/**
 * A QuickJS runtime and context inside a WebAssembly instance of its own, whose memory can
 * never grow past the cap: the module is thrown away with the run, so nothing a program does
 * to it outlives the run. After a host-level failure inside the module (a trap, an overflow of
 * the host stack, the kill switch) it is `poisoned` and is dropped without being touched again.
 */
export class SandboxVm {
  poisoned = false;
  private readonly owned: QuickJSHandle[] = [];
  private toJsonFn: QuickJSHandle | undefined;
  private describeFn: QuickJSHandle | undefined;
  private appendChunkFn: QuickJSHandle | undefined;

  private constructor(
    readonly runtime: QuickJSRuntime,
    readonly context: QuickJSContext,
    private readonly memory: WasmMemory,
    readonly maxBytes: number,
    private readonly control: ModuleControl,
  ) {}

  /** The last line the module wrote to its stderr (an abort message), for diagnostics. */
  get lastModuleError(): string {
    return this.control.lastModuleError;
  }

  /** Instantiates QuickJS with a fresh memory capped at `memoryBytes` and applies the limits. */
  static async create(options: SandboxVmOptions): Promise<SandboxVm> {
    const maxPages = Math.ceil(Math.max(options.memoryBytes, MIN_SANDBOX_MEMORY_BYTES) / WASM_PAGE_BYTES);
    const maxBytes = maxPages * WASM_PAGE_BYTES;
    const engine = await loadEngine();
    const { quickjs, memory, control } = await instantiate(engine.module, maxPages);
    const runtime = quickjs.newRuntime();
    runtime.setMemoryLimit(maxBytes - STATIC_BYTES - hostReserveOf(maxBytes));
    runtime.setMaxStackSize(Math.max(0, Math.floor(options.stackBytes)));
    runtime.removeModuleLoader();
    const context = runtime.newContext();
    const pacer = engine.counterOffset === undefined ? undefined : new InterruptPacer(memory, contextPointer(context) + engine.counterOffset);
    runtime.setInterruptHandler(() => {
      control.interruptImport ??= control.lastImport;
      const interrupt = options.shouldInterrupt();
      pacer?.afterPoll(interrupt);
      return interrupt;
    });
    return new SandboxVm(runtime, context, memory, maxBytes, control);
  }

  /**
   * Stops the module at its next interrupt poll by throwing {@link SandboxKilled} through its
   * stack, for a program that keeps running after being interrupted. Poisons the VM.
   */
  kill(): void {
    this.control.killRequested = true;
    this.poisoned = true;
  }

  /** Bytes the memory can still grow by: room any allocation of that size is sure to find. */
  get headroom(): number {
    return this.maxBytes - this.memory.buffer.byteLength;
  }

  /**
   * Whether the memory has grown to about the runtime's limit at some point in the run: a
   * failure that cannot be read then is taken for an out-of-memory one.
   */
  get nearLimit(): boolean {
    return this.memory.buffer.byteLength >= this.maxBytes - hostReserveOf(this.maxBytes) - 2 * MIB;
  }

  /**
   * Runs the prelude with `bindings`, installing the program's globals. Throws a host Error
   * (with the VM's description) when the prelude itself fails.
   */
  installPrelude(bindings: SandboxHostBindings): void {
    const { context } = this;
    const hostFunctions = [
      context.newFunction('hostCall', (name, args) =>
        bindings.call(this.readString(name), context.typeof(args) === 'string' ? this.readString(args) : undefined),
      ),
      context.newFunction('hostWrite', (text) => {
        bindings.write(this.readString(text));
      }),
      context.newFunction('hostStore', (key, value) => {
        bindings.store(this.readString(key), context.typeof(value) === 'string' ? this.readString(value) : undefined);
      }),
      context.newFunction('hostLoad', (key) => {
        const json = bindings.load(this.readString(key));
        return json === undefined ? context.undefined : this.newString(json);
      }),
      this.newString(JSON.stringify(bindings.toolNames)),
    ];
    try {
      const factory = this.own(this.unwrap(context.evalCode(PRELUDE_SOURCE, PRELUDE_FILE, { type: 'global' })));
      const kit = this.unwrap(context.callFunction(factory, context.undefined, ...hostFunctions));
      try {
        this.toJsonFn = this.own(context.getProp(kit, 'toJson'));
        this.describeFn = this.own(context.getProp(kit, 'describe'));
      } finally {
        kit.dispose();
      }
      const chunker = this.unwrap(context.evalCode(CHUNK_SOURCE, PRELUDE_FILE, { type: 'global' }));
      this.appendChunkFn = this.own(chunker);
    } finally {
      for (const handle of hostFunctions) handle.dispose();
    }
  }

  /**
   * A VM string holding `text`. Written in one piece when the memory can surely hold it,
   * otherwise in small pieces joined inside the VM.
   */
  newString(text: string): QuickJSHandle {
    const { context } = this;
    const bytes = Buffer.byteLength(text, 'utf8') + 1;
    if (bytes <= SAFE_HOST_STRING_BYTES || bytes + 2 * MIB <= this.headroom || !this.appendChunkFn) {
      return context.newString(text);
    }
    let joined: QuickJSHandle = context.newString('');
    for (let start = 0; start < text.length; ) {
      let end = Math.min(text.length, start + SAFE_CHUNK_UNITS);
      const last = text.charCodeAt(end - 1);
      if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
      const piece = context.newString(text.slice(start, end));
      const result = context.callFunction(this.appendChunkFn, context.undefined, joined, piece);
      piece.dispose();
      joined.dispose();
      if (result.error) {
        result.error.dispose();
        throw new SandboxOutOfMemory('out of memory');
      }
      joined = result.value;
      start = end;
    }
    return joined;
  }

  /**
   * The host copy of a VM string. Throws {@link SandboxOutOfMemory} when the copy came back
   * damaged (QuickJS had no memory to make it), so that garbage is never taken for data.
   */
  readString(handle: QuickJSHandle): string {
    const { context } = this;
    const text = context.getString(handle);
    const length = context.getProp(handle, 'length');
    const expected = context.typeof(length) === 'number' ? context.getNumber(length) : -1;
    length.dispose();
    if (expected !== text.length) throw new SandboxOutOfMemory('out of memory');
    return text;
  }

  /** JSON text of a VM value (undefined for `undefined`), or the VM exception handle it raised. */
  toJson(handle: QuickJSHandle): { json: string | undefined } | { error: QuickJSHandle } {
    if (!this.toJsonFn) throw new Error('the sandbox prelude is not installed');
    const result = this.context.callFunction(this.toJsonFn, this.context.undefined, handle);
    if (result.error) return { error: result.error };
    try {
      return { json: this.context.typeof(result.value) === 'string' ? this.readString(result.value) : undefined };
    } finally {
      result.value.dispose();
    }
  }

  /** What a thrown value was; undefined when the VM could not even describe it (out of memory, interrupted). */
  describe(thrown: QuickJSHandle): ThrownDescription | undefined {
    if (!this.describeFn) return undefined;
    const result = this.context.callFunction(this.describeFn, this.context.undefined, thrown);
    if (result.error) {
      result.error.dispose();
      return undefined;
    }
    try {
      return parseThrownDescription(this.readString(result.value));
    } catch {
      return undefined;
    } finally {
      result.value.dispose();
    }
  }

  /** Unwraps a VM call result; a VM exception becomes a host Error carrying its description. */
  unwrap(result: { value: QuickJSHandle; error?: undefined } | { error: QuickJSHandle }): QuickJSHandle {
    if (!result.error) return result.value;
    const description = this.describe(result.error);
    result.error.dispose();
    throw new Error(description ? `${description.name}: ${description.message}` : 'the sandbox failed to start');
  }

  /**
   * Frees every handle the VM owns, then the context and the runtime. A poisoned module is not
   * touched: it is left to the garbage collector whole. Throws when QuickJS reports a leak.
   */
  dispose(): void {
    if (this.poisoned) return;
    for (const handle of this.owned.splice(0).reverse()) if (handle.alive) handle.dispose();
    this.context.dispose();
    this.runtime.dispose();
  }

  private own(handle: QuickJSHandle): QuickJSHandle {
    this.owned.push(handle);
    return handle;
  }
}

/** A fresh instance of the compiled module with its own memory of at most `maxPages`. */
async function instantiate(
  module: object,
  maxPages: number,
): Promise<{ quickjs: QuickJSWASMModule; memory: WasmMemory; control: ModuleControl }> {
  const memory = new wasm.Memory({ initial: MODULE_MIN_BYTES / WASM_PAGE_BYTES, maximum: maxPages });
  const control: ModuleControl = { lastModuleError: '', lastImport: '', interruptImport: undefined, killRequested: false };
  let failStart: (error: unknown) => void = () => {};
  const startFailure = new Promise<never>((_resolve, reject) => {
    failStart = reject;
  });
  startFailure.catch(() => {});
  const hooks = {
    wasmMemory: memory,
    print: (): void => {},
    printErr: (text: string): void => {
      control.lastModuleError = text;
    },
    onAbort: (what: unknown): void => {
      control.lastModuleError = String(what);
    },
    // Emscripten ignores what this returns and waits for onSuccess; a failure is reported
    // through startFailure instead of a rejection nobody would handle.
    instantiateWasm: (imports: unknown, onSuccess: (instance: unknown) => void): Promise<unknown> =>
      wasm.instantiate(module, interceptImports(imports, control)).then(
        (instance) => {
          onSuccess(instance);
          return instance.exports;
        },
        (error: unknown) => {
          failStart(error);
          return {};
        },
      ),
  };
  const quickjs = await Promise.race([
    newQuickJSWASMModuleFromVariant(newVariant(syncVariant, { emscriptenModule: hooks })),
    startFailure,
  ]);
  return { quickjs, memory, control };
}

/** The address of a context's JSContext struct in the module's memory (a field the binding keeps private). */
function contextPointer(context: QuickJSContext): number {
  const pointer = (context as unknown as { ctx?: { value?: unknown } }).ctx?.value;
  if (typeof pointer !== 'number') throw new Error('cannot locate the QuickJS context');
  return pointer;
}

/** Reads the 4-byte-aligned int32 words of `[address, address + bytes)`. */
function readWords(memory: WasmMemory, address: number, bytes: number): Int32Array {
  return new Int32Array(memory.buffer.slice(address, address + bytes));
}

/**
 * QuickJS polls for interrupts once every 10,000 counted operations (calls, loop jumps), a
 * count kept in `JSContext.interrupt_counter`; a program made of few but slow native
 * operations (large JSON round trips, sorts) would run far past its CPU limit between polls.
 * The field is private to QuickJS, so it is found by watching it: a probe function called
 * three times, with a known number of operations between the calls, reads the context's
 * words each time; the counter is the one word that drops by a few units, then by the loop's
 * length. Undefined when no single word behaves so (pacing is then left off).
 */
async function findCounterOffset(module: object): Promise<number | undefined> {
  const { quickjs } = await instantiate(module, MODULE_MIN_BYTES / WASM_PAGE_BYTES + 64);
  const context = quickjs.newContext();
  try {
    const memory = quickjs.getWasmMemory() as unknown as WasmMemory;
    const base = contextPointer(context);
    const snapshots: Int32Array[] = [];
    const probe = context.newFunction('probe', () => {
      snapshots.push(readWords(memory, base, CONTEXT_SCAN_BYTES));
    });
    const run = context.evalCode(`(function (probe) { probe(); probe(); for (let i = 0; i < ${CALIBRATION_LOOP}; i++) {} probe(); })`);
    if (run.error) {
      run.error.dispose();
      probe.dispose();
      return undefined;
    }
    const called = context.callFunction(run.value, context.undefined, probe);
    run.value.dispose();
    probe.dispose();
    (called.error ?? called.value).dispose();
    const [first, second, third] = snapshots;
    if (!first || !second || !third) return undefined;
    const found: number[] = [];
    for (let word = 0; word < first.length; word++) {
      const a = first[word] as number;
      const b = second[word] as number;
      const c = third[word] as number;
      const step = a - b;
      const loop = b - c;
      if (a > 0 && a <= 10_000 && step >= 1 && step <= 4 && loop >= CALIBRATION_LOOP && loop <= CALIBRATION_LOOP * 4) found.push(word * 4);
    }
    return found.length === 1 ? found[0] : undefined;
  } catch {
    return undefined;
  } finally {
    context.dispose();
  }
}

const CONTEXT_SCAN_BYTES = 1024;
const CALIBRATION_LOOP = 25;

/**
 * Shortens QuickJS's poll interval when operations are slow, so that polls come about every
 * {@link POLL_TARGET_MS} ms of CPU whatever the program does: after each poll it writes the next
 * interval into the counter, from the operations and the time the last interval took.
 */
class InterruptPacer {
  private lastPoll = performance.now();
  private interval = MAX_POLL_INTERVAL;
  private enabled = true;

  constructor(
    private readonly memory: WasmMemory,
    private readonly address: number,
  ) {}

  /** Sets the next interval; when `interrupting`, the shortest, so that a program that survives the interrupt is polled again at once. */
  afterPoll(interrupting: boolean): void {
    if (!this.enabled) return;
    const now = performance.now();
    const elapsed = Math.max(now - this.lastPoll, 0.001);
    this.lastPoll = now;
    const counter = new Int32Array(this.memory.buffer, this.address, 1);
    // QuickJS resets the counter to its full interval just before calling the handler.
    if (counter[0] !== MAX_POLL_INTERVAL) {
      this.enabled = false;
      return;
    }
    const paced = Math.floor((this.interval * POLL_TARGET_MS) / elapsed);
    this.interval = interrupting ? 1 : Math.max(1, Math.min(MAX_POLL_INTERVAL, paced));
    counter[0] = this.interval;
  }
}

const MAX_POLL_INTERVAL = 10_000;
const POLL_TARGET_MS = 2;

/**
 * The module's imports, each wrapped to note that it is being called; the interrupt import
 * throws {@link SandboxKilled} once a kill is requested.
 */
function interceptImports(imports: unknown, control: ModuleControl): unknown {
  if (typeof imports !== 'object' || imports === null) return imports;
  const wrapped: Record<string, unknown> = {};
  for (const [moduleName, table] of Object.entries(imports)) {
    if (typeof table !== 'object' || table === null) {
      wrapped[moduleName] = table;
      continue;
    }
    const entries: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(table)) {
      if (typeof value !== 'function') {
        entries[name] = value;
        continue;
      }
      const key = `${moduleName}.${name}`;
      const original = value as (...args: unknown[]) => unknown;
      entries[name] = (...args: unknown[]): unknown => {
        control.lastImport = key;
        const result = original(...args);
        if (control.killRequested && key === control.interruptImport) throw new SandboxKilled('the sandbox was stopped');
        return result;
      };
    }
    wrapped[moduleName] = entries;
  }
  return wrapped;
}

/**
 * Memory kept free beyond the runtime's limit for what the host allocates in the module
 * (strings it passes in, value cells): QuickJS runs out first, with a clean error.
 */
function hostReserveOf(maxBytes: number): number {
  return Math.max(2 * MIB, maxBytes / 16);
}

/** `(joined, piece) => joined + piece`, kept apart from the prelude so it cannot be replaced by a program. */
const CHUNK_SOURCE = '(function appendChunk(joined, piece) { return joined + piece; })';
