/**
 * How values cross the sandbox's boundary, both ways.
 *
 * Inside: the JavaScript that runs in a fresh sandbox before the program. It builds the
 * globals a program sees (tools, `print`, `console`, `gather`, `unique`, `store`/`load`, the
 * caller's globals), coarsens the clock, and returns the two helpers the host uses to read
 * values out (`toJson`, `describe`). Outside: the envelopes that carry host results in, the
 * reading of thrown values, and the capped stdout.
 *
 * Everything that crosses into the host leaves the VM as a primitive string (JSON text), so the
 * host never holds a reference to a VM object and never runs a program's getters itself. The
 * helpers capture the built-ins they use before the program starts; a program that tampers with
 * prototypes afterwards can only change what its own values serialise to, which the host parses
 * as untrusted text.
 */

/** File name given to the prelude's code in stack traces. */
export const PRELUDE_FILE = 'sandbox-prelude.js';

/** Granularity of the clock a program sees (`Date.now()`, `new Date()`), in milliseconds. */
export const CLOCK_GRANULARITY_MS = 100;

/**
 * A function expression. Called with the host bindings
 * `(hostCall, hostWrite, hostStore, hostLoad, toolNamesJson, globalsJson)`, it installs the
 * globals and returns `{ toJson, describe }`.
 *
 * - `hostCall(name, argsJson)` returns a promise that settles with an envelope string:
 *   `{"ok":true,"value":...}` or `{"ok":false,"name":...,"message":...}`.
 * - `toJson(value)` gives JSON text or `undefined`; BigInt becomes a string, a function throws.
 * - `describe(thrown)` never throws (short of running out of memory or being interrupted) and
 *   gives the JSON of a {@link ThrownDescription}.
 */
export const PRELUDE_SOURCE = String.raw`(function (hostCall, hostWrite, hostStore, hostLoad, toolNamesJson, globalsJson) {
  'use strict';
  const global = globalThis;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const StringOf = String;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const SetCtor = Set;
  const isArray = Array.isArray;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const construct = Reflect.construct;
  const promiseAll = Promise.all.bind(Promise);
  const promiseReject = Promise.reject.bind(Promise);
  const promiseThen = Promise.prototype.then;
  const apply = Reflect.apply;
  const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const identifierTest = RegExp.prototype.test;

  const outward = (key, value) => {
    const type = typeof value;
    if (type === 'bigint') return StringOf(value);
    if (type === 'function') {
      throw new TypeErrorCtor(key === '' ? 'a function cannot leave the sandbox' : 'a function cannot leave the sandbox (at key "' + key + '")');
    }
    return value;
  };
  const lenient = (key, value) => (typeof value === 'bigint' ? StringOf(value) : value);
  const toJson = (value) => (value === undefined ? undefined : stringify(value, outward));

  const show = (value) => {
    const type = typeof value;
    if (type === 'string') return value;
    if (type === 'function') return '[function ' + (value.name || 'anonymous') + ']';
    if (value === undefined || type === 'symbol' || type === 'bigint') return StringOf(value);
    if (value instanceof ErrorCtor) return StringOf(value);
    try {
      const json = stringify(value, lenient);
      return json === undefined ? StringOf(value) : json;
    } catch {
      return StringOf(value);
    }
  };
  const print = (...values) => {
    let line = '';
    for (let i = 0; i < values.length; i++) line += (i === 0 ? '' : ' ') + show(values[i]);
    hostWrite(line + '\n');
  };

  const unique = (items) => {
    if (!isArray(items)) throw new TypeErrorCtor('unique() expects an array');
    const seenValues = new SetCtor();
    const seenJson = new SetCtor();
    const kept = [];
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      const isObject = item !== null && typeof item === 'object';
      const seen = isObject ? seenJson : seenValues;
      const key = isObject ? stringify(item, lenient) : item;
      if (seen.has(key)) continue;
      seen.add(key);
      kept[kept.length] = item;
    }
    return kept;
  };

  const makeError = (name, message) => {
    const error = new ErrorCtor(message);
    if (typeof name === 'string' && name !== '' && name !== 'Error') {
      defineProperty(error, 'name', { value: name, writable: true, configurable: true });
    }
    return error;
  };
  // The error of a failed call carries the stack of the call site: its line is the program's.
  const settleFrom = (site) => (envelope) => {
    const reply = parse(envelope);
    if (reply.ok) return reply.value;
    const error = makeError(reply.name, reply.message);
    defineProperty(error, 'stack', { value: site.stack, writable: true, configurable: true });
    throw error;
  };

  const expose = (name, value) => defineProperty(global, name, { value, writable: true, configurable: true });
  expose('print', print);
  expose('console', freeze({ log: print, info: print, warn: print, error: print, debug: print }));
  expose('gather', (promises) => promiseAll(promises));
  expose('unique', unique);
  expose('store', (key, value) => {
    hostStore(StringOf(key), toJson(value));
  });
  expose('load', (key) => {
    const json = hostLoad(StringOf(key));
    return json === undefined ? undefined : parse(json);
  });

  const tools = {};
  const toolNames = parse(toolNamesJson);
  for (let i = 0; i < toolNames.length; i++) {
    const name = toolNames[i];
    // Not an async function: those turn an interrupt into a rejection the caller could ignore.
    const tool = function (args) {
      const site = new ErrorCtor();
      let pending;
      try {
        pending = hostCall(name, toJson(args));
      } catch (error) {
        return promiseReject(error);
      }
      return apply(promiseThen, pending, [settleFrom(site)]);
    };
    defineProperty(tool, 'name', { value: name });
    defineProperty(tools, name, { value: tool, enumerable: true });
    if (!(name in global) && identifierTest.call(identifier, name)) expose(name, tool);
  }
  expose('tools', freeze(tools));

  const globals = parse(globalsJson);
  const globalNames = Object.keys(globals);
  for (let i = 0; i < globalNames.length; i++) expose(globalNames[i], globals[globalNames[i]]);

  const RealDate = Date;
  const realNow = RealDate.now;
  const coarseNow = () => {
    const now = realNow();
    return now - (now % ${CLOCK_GRANULARITY_MS});
  };
  const CoarseDate = function Date(...args) {
    if (new.target === undefined) return StringOf(new RealDate(coarseNow()));
    return construct(RealDate, args.length === 0 ? [coarseNow()] : args, new.target);
  };
  CoarseDate.prototype = RealDate.prototype;
  CoarseDate.now = coarseNow;
  CoarseDate.parse = RealDate.parse;
  CoarseDate.UTC = RealDate.UTC;
  defineProperty(RealDate.prototype, 'constructor', { value: CoarseDate, writable: true, configurable: true });
  expose('Date', CoarseDate);
  try {
    delete global.performance;
  } catch {}

  const attempt = (read) => {
    try {
      const value = read();
      return typeof value === 'string' ? value : value === undefined ? '' : StringOf(value);
    } catch {
      return '';
    }
  };
  const describe = (thrown) => {
    const type = typeof thrown;
    if (thrown === null || (type !== 'object' && type !== 'function')) {
      const text = type === 'string' ? attempt(() => stringify(thrown)) : attempt(() => StringOf(thrown));
      return stringify({ isError: false, name: '', message: text, stack: '' });
    }
    let isError = false;
    try {
      isError = thrown instanceof ErrorCtor;
    } catch {}
    const name = attempt(() => thrown.name);
    const message = attempt(() => thrown.message);
    const stack = attempt(() => thrown.stack);
    if (isError) return stringify({ isError, name, message, stack });
    const text = attempt(() => stringify(thrown, lenient)) || attempt(() => StringOf(thrown)) || '[object]';
    return stringify({ isError, name, message: text, stack });
  };

  return { toJson, describe };
})`;

/** What `describe` reports of a thrown value; every field is a string. */
export interface ThrownDescription {
  /** The value is an `Error` instance (by `instanceof`). */
  isError: boolean;
  /** `error.name` for errors ('' when unreadable). */
  name: string;
  /** `error.message` for errors; for anything else, the value shown as JSON or text. */
  message: string;
  /** The stack text QuickJS recorded ('' when none). */
  stack: string;
}

/** Parses the output of `describe`; undefined when it is not a well-formed description. */
export function parseThrownDescription(json: string): ThrownDescription | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const text = (key: string): string => (typeof record[key] === 'string' ? (record[key] as string) : '');
  return { isError: record.isError === true, name: text('name'), message: text('message'), stack: text('stack') };
}

/** JSON text of what a host call resolved to, as the prelude expects it; a value JSON cannot carry becomes an error reply. */
export function resultEnvelope(name: string, value: unknown): string {
  try {
    return JSON.stringify({ ok: true, value });
  } catch (error) {
    return errorEnvelope(new TypeError(`the result of ${name} is not JSON-compatible: ${messageOf(error)}`));
  }
}

/** JSON text of a host call's failure: the Error's name and message, or the reason as text. */
export function errorEnvelope(reason: unknown): string {
  let name = 'Error';
  let message = 'the call failed';
  try {
    if (reason instanceof Error) {
      if (typeof reason.name === 'string' && reason.name !== '') name = reason.name;
      message = String(reason.message);
    } else {
      message = String(reason);
    }
  } catch {
    // A reason whose fields cannot be read keeps the generic message.
  }
  return JSON.stringify({ ok: false, name, message });
}

/** The message of an error from any realm, or the value as text. */
export function messageOf(error: unknown): string {
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
    return (error as { message: string }).message;
  }
  return String(error);
}

/** The head of the output up to a byte cap; the rest is counted, not kept. Never cuts a character. */
export class OutputBuffer {
  private readonly parts: string[] = [];
  private keptBytes = 0;
  droppedBytes = 0;

  constructor(private readonly capBytes: number) {}

  write(text: string): void {
    const size = Buffer.byteLength(text, 'utf8');
    const room = this.capBytes - this.keptBytes;
    if (size <= room) {
      this.parts.push(text);
      this.keptBytes += size;
      return;
    }
    if (room <= 0) {
      this.droppedBytes += size;
      return;
    }
    const bytes = Buffer.from(text, 'utf8');
    let cut = room;
    while (cut > 0 && ((bytes[cut] as number) & 0xc0) === 0x80) cut -= 1;
    this.parts.push(bytes.subarray(0, cut).toString('utf8'));
    this.keptBytes += cut;
    this.droppedBytes += size - cut;
  }

  text(): string {
    return this.parts.join('');
  }
}
