/** Hard limits of one program run. */
export interface VmLimits {
  /**
   * Cap on the sandbox's whole WebAssembly memory, in bytes (default 64 MiB). The QuickJS heap
   * gets this less about 8 MiB (static data, the C stack, a reserve for the host); values below
   * 24 MiB are raised to 24 MiB. Beyond it allocations fail: kind `memory`.
   */
  memoryBytes: number;
  /**
   * Time the program may spend running inside QuickJS, across awaits, in ms (default 10 s):
   * the time it holds the host thread, so a loaded machine counts it slower. Waiting for host
   * calls is not counted. The interrupt handler stops it; a watchdog terminates QuickJS
   * 100 ms later if the program keeps running (e.g. between polls, in one slow native call).
   */
  cpuTimeMs: number;
  /**
   * Wall-clock time of the whole run, in ms (default 30 s), less the time a host function held
   * the clock (see `HostCallControls`); on expiry in-flight host calls are aborted.
   */
  wallTimeMs: number;
  /**
   * QuickJS's stack limit in bytes (default 256 KiB). Recursion past it, or past the host's
   * native stack (whichever comes first), ends the run as kind `stack`.
   */
  stackBytes: number;
  /** Host-function calls allowed per run (default 1000); the next one fails and ends the run as `tool_calls`. */
  maxToolCalls: number;
  /** Host calls in flight at once (default 16); further calls wait their turn (not an error). */
  maxConcurrentCalls: number;
  /** Bytes of stdout kept (default 1 MiB); the rest is dropped and counted in `droppedOutputBytes` (not an error). */
  maxOutputBytes: number;
}

/** The limits used where `VmRunOptions.limits` says nothing. */
export const DEFAULT_VM_LIMITS: Readonly<VmLimits> = Object.freeze({
  memoryBytes: 64 * 1024 * 1024,
  cpuTimeMs: 10_000,
  wallTimeMs: 30_000,
  stackBytes: 256 * 1024,
  maxToolCalls: 1000,
  maxConcurrentCalls: 16,
  maxOutputBytes: 1024 * 1024,
});

/** `limits` without the keys whose values are not finite non-negative numbers. */
export function definedOnly(limits: Partial<VmLimits> | undefined): Partial<VmLimits> {
  const kept: Partial<VmLimits> = {};
  for (const [key, value] of Object.entries(limits ?? {})) {
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) kept[key as keyof VmLimits] = value;
  }
  return kept;
}
