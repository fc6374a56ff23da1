import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createContext, Script } from 'node:vm';
import syncVariant from '@jitl/quickjs-wasmfile-release-sync';
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSWASMModule,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
} from 'quickjs-emscripten-core';
import { PRELUDE_FILE, PRELUDE_SOURCE, parseThrownDescription, type ThrownDescription } from './vm-values';

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
export const MIN_VM_MEMORY_BYTES = 24 * MIB;
/**
 * The bytes a sandbox asked for `memoryBytes` may really use: its WebAssembly memory's maximum,
 * raised to {@link MIN_VM_MEMORY_BYTES} and rounded up to whole pages. The memory cannot
 * grow past it, and it holds everything of the sandbox's QuickJS (heap, stack, static data).
 */
export function vmMemoryCap(memoryBytes: number): number {
  return Math.ceil(Math.max(memoryBytes, MIN_VM_MEMORY_BYTES) / WASM_PAGE_BYTES) * WASM_PAGE_BYTES;
}

/**
 * Strings the host writes into the VM go through the module's `malloc`, which the runtime's
 * memory limit does not count and whose failure the binding does not check. Those of at most
 * this many UTF-8 bytes (with the terminating NUL) are harmless even then: they land in the
 * module's unused first kilobyte. Longer ones are written in pieces of this size when the
 * memory cannot be shown to have room for them (see {@link QuickJsVm.newString}).
 */
const SAFE_HOST_STRING_BYTES = 1024;
const SAFE_CHUNK_UNITS = Math.floor((SAFE_HOST_STRING_BYTES - 1) / 3);

/**
 * One compile of the QuickJS WebAssembly per process: a compiled module is immutable and is
 * shared by every sandbox, each of which instantiates it with its own capped memory. A failed
 * compile is retried by the next caller.
 */
const compiledModule: () => Promise<object> = (() => {
  let pending: Promise<object> | undefined;
  return () => {
    pending ??= (async () => {
      const path = createRequire(import.meta.url).resolve('@jitl/quickjs-wasmfile-release-sync/wasm');
      return wasm.compile(await readFile(path));
    })();
    pending.catch(() => {
      pending = undefined;
    });
    return pending;
  };
})();

/** Host functions the prelude receives; each returns what the VM function returns. */
export interface VmHostBindings {
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
  /** JSON text of an object whose properties become globals. */
  globalsJson: string;
  /** Told when a string read from the VM came back damaged: the run is out of memory. */
  outOfMemory(): void;
}

export interface QuickJsVmOptions {
  /** Cap on the module's whole WebAssembly memory (raised to {@link MIN_VM_MEMORY_BYTES}). */
  memoryBytes: number;
  /** QuickJS's own stack limit. */
  stackBytes: number;
  /** Polled by QuickJS while it runs; `true` stops the program with an uncatchable error. */
  shouldInterrupt: () => boolean;
}

/** Raised by the host when a string read from the VM came back damaged: QuickJS could not allocate its copy. */
export class VmOutOfMemory extends Error {
  override name = 'VmOutOfMemory';
}

/** Raised when the watchdog stopped a stretch of QuickJS execution that ran past its time. */
export class VmTimedOut extends Error {
  override name = 'VmTimedOut';
}

/**
 * A QuickJS runtime and context inside a WebAssembly instance of its own, whose memory can
 * never grow past the cap: the module is thrown away with the run, so nothing a program does
 * to it outlives the run. After a host-level failure inside the module (a trap, an overflow of
 * the host stack, the watchdog) it is `poisoned` and is dropped without being touched again.
 *
 * Every entry into QuickJS should go through {@link QuickJsVm.guard}: QuickJS polls its
 * interrupt handler only every 10,000 counted operations, and an async function turns the
 * interrupt into a rejection the program may ignore, so the handler alone bounds neither a
 * program of few slow native operations (large JSON round trips, sorts) nor one that
 * swallows interrupts (`async function f() { for (;;); } for (;;) f();`).
 */
export class QuickJsVm {
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
    private readonly diagnostics: ModuleDiagnostics,
    private readonly watchdog: Watchdog,
  ) {}

  /** The last line the module wrote to its stderr (an abort message), for diagnostics. */
  get lastModuleError(): string {
    return this.diagnostics.lastModuleError;
  }

  /** Instantiates QuickJS with a fresh memory capped at `memoryBytes` and applies the limits. */
  static async create(options: QuickJsVmOptions): Promise<QuickJsVm> {
    const maxBytes = vmMemoryCap(options.memoryBytes);
    const maxPages = maxBytes / WASM_PAGE_BYTES;
    const { quickjs, memory, diagnostics } = await instantiate(await compiledModule(), maxPages);
    const runtime = quickjs.newRuntime();
    runtime.setMemoryLimit(maxBytes - STATIC_BYTES - hostReserveOf(maxBytes));
    runtime.setMaxStackSize(Math.max(0, Math.floor(options.stackBytes)));
    runtime.setInterruptHandler(() => options.shouldInterrupt());
    runtime.removeModuleLoader();
    return new QuickJsVm(runtime, runtime.newContext(), memory, maxBytes, diagnostics, new Watchdog());
  }

  /**
   * Runs `body` (which enters QuickJS) for at most `timeoutMs` of wall-clock time. Past that,
   * V8 terminates it wherever it is, even inside the WebAssembly; the VM is then poisoned and
   * {@link VmTimedOut} is thrown. Nested calls run inside the outer one's time.
   */
  guard<T>(body: () => T, timeoutMs: number): T {
    try {
      return this.watchdog.run(body, timeoutMs);
    } catch (error) {
      if (!isScriptTimeout(error)) throw error;
      this.poisoned = true;
      throw new VmTimedOut(`QuickJS ran past its ${Math.round(timeoutMs)} ms`);
    }
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
  installPrelude(bindings: VmHostBindings): void {
    const { context } = this;
    const read = (handle: QuickJSHandle): string => {
      try {
        return this.readString(handle);
      } catch (error) {
        if (error instanceof VmOutOfMemory) bindings.outOfMemory();
        throw error;
      }
    };
    const readOptional = (handle: QuickJSHandle): string | undefined => (context.typeof(handle) === 'string' ? read(handle) : undefined);
    const hostFunctions = [
      context.newFunction('hostCall', (name, args) => bindings.call(read(name), readOptional(args))),
      context.newFunction('hostWrite', (text) => {
        bindings.write(read(text));
      }),
      context.newFunction('hostStore', (key, value) => {
        bindings.store(read(key), readOptional(value));
      }),
      context.newFunction('hostLoad', (key) => {
        const json = bindings.load(read(key));
        return json === undefined ? context.undefined : this.newString(json);
      }),
      this.newString(JSON.stringify(bindings.toolNames)),
      this.newString(bindings.globalsJson),
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
        throw new VmOutOfMemory('out of memory');
      }
      joined = result.value;
      start = end;
    }
    return joined;
  }

  /**
   * The host copy of a VM string. Throws {@link VmOutOfMemory} when the copy came back
   * damaged (QuickJS had no memory to make it), so that garbage is never taken for data.
   */
  readString(handle: QuickJSHandle): string {
    const { context } = this;
    const text = context.getString(handle);
    const length = context.getProp(handle, 'length');
    const expected = context.typeof(length) === 'number' ? context.getNumber(length) : -1;
    length.dispose();
    if (expected !== text.length) throw new VmOutOfMemory('out of memory');
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

/** What the module reports about itself. */
interface ModuleDiagnostics {
  lastModuleError: string;
}

/** A fresh instance of the compiled module with its own memory of at most `maxPages`. */
async function instantiate(
  module: object,
  maxPages: number,
): Promise<{ quickjs: QuickJSWASMModule; memory: WasmMemory; diagnostics: ModuleDiagnostics }> {
  const memory = new wasm.Memory({ initial: MODULE_MIN_BYTES / WASM_PAGE_BYTES, maximum: maxPages });
  const diagnostics: ModuleDiagnostics = { lastModuleError: '' };
  let failStart: (error: unknown) => void = () => {};
  const startFailure = new Promise<never>((_resolve, reject) => {
    failStart = reject;
  });
  startFailure.catch(() => {});
  const hooks = {
    wasmMemory: memory,
    print: (): void => {},
    printErr: (text: string): void => {
      diagnostics.lastModuleError = text;
    },
    onAbort: (what: unknown): void => {
      diagnostics.lastModuleError = String(what);
    },
    // Emscripten ignores what this returns and waits for onSuccess; a failure is reported
    // through startFailure instead of a rejection nobody would handle.
    instantiateWasm: (imports: unknown, onSuccess: (instance: unknown) => void): Promise<unknown> =>
      wasm.instantiate(module, imports).then(
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
  return { quickjs, memory, diagnostics };
}

/**
 * Runs a function under `node:vm`'s timeout: a watchdog thread terminates the execution when
 * it runs too long, which no code inside can catch or delay. One small V8 context per sandbox.
 */
class Watchdog {
  private readonly context = createContext({ task: undefined as (() => unknown) | undefined });
  private depth = 0;

  run<T>(body: () => T, timeoutMs: number): T {
    if (this.depth > 0) return body();
    this.depth += 1;
    const slot = this.context as { task: (() => unknown) | undefined };
    let result: T | undefined;
    slot.task = () => {
      result = body();
    };
    try {
      TASK_SCRIPT.runInContext(this.context, { timeout: Math.max(1, Math.ceil(timeoutMs)) });
      return result as T;
    } finally {
      slot.task = undefined;
      this.depth -= 1;
    }
  }
}

const TASK_SCRIPT = new Script('task()');

/** The watchdog's error comes from the V8 context it ran in, so it is recognised by its code, not its class. */
function isScriptTimeout(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
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
