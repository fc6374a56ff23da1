/** Where a body's chunks come from: the next one (or the end, or the failure), and a stop. */
export interface BodySource {
  /** The next chunk, `done` at the end; rejects with the body's failure. */
  next(): Promise<IteratorResult<Uint8Array, undefined>>;
  /** The reader is not interested any more: stop and drop what is left. */
  cancel(): void;
}

/** What `getReader` gives: the reader of a web stream, as far as fence and the SDKs use one. */
export interface BodyReader {
  read(): Promise<IteratorResult<Uint8Array, undefined>>;
  releaseLock(): void;
  cancel(reason?: unknown): Promise<void>;
  /** Settles when the body ends (fulfilled) or fails (rejected). */
  readonly closed: Promise<void>;
}

/**
 * A response body as the provider SDKs read it: an async iterable of byte chunks, with the
 * members of a web `ReadableStream` that they (and fence) use — `getReader`, `cancel`,
 * `locked`. Node's own streams are not used: their first use in a process (loading them, and
 * what letting go of a reader early sets up) costs several milliseconds, paid between the
 * model's first reply and the tool it asks for.
 *
 * As a web stream: one reader at a time (`locked`); leaving a `for await` early, or
 * `cancel`, stops the body and drops what is left; a failure reaches the reader after the
 * chunks that came before it.
 */
export class BodyStream implements AsyncIterable<Uint8Array> {
  #locked = false;
  #cancelled = false;
  readonly #source: BodySource;

  constructor(source: BodySource) {
    this.#source = source;
  }

  get locked(): boolean {
    return this.#locked;
  }

  getReader(): BodyReader {
    this.#lock();
    let released = false;
    let settle: { resolve: () => void; reject: (error: unknown) => void } | undefined;
    const closed = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    closed.catch(() => undefined);
    return {
      read: async () => {
        if (released) throw new TypeError('the reader was released');
        try {
          const result = await this.#next();
          if (result.done) settle?.resolve();
          return result;
        } catch (error) {
          settle?.reject(error);
          throw error;
        }
      },
      releaseLock: () => {
        released = true;
        this.#locked = false;
      },
      cancel: async () => {
        this.#cancel();
        settle?.resolve();
      },
      closed,
    };
  }

  /** Stops the body and drops what is left. */
  async cancel(): Promise<void> {
    this.#cancel();
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array, undefined> {
    this.#lock();
    return {
      next: async () => {
        try {
          const result = await this.#next();
          if (result.done) this.#locked = false;
          return result;
        } catch (error) {
          this.#locked = false;
          throw error;
        }
      },
      return: async () => {
        this.#cancel();
        this.#locked = false;
        return { done: true, value: undefined };
      },
    };
  }

  #lock(): void {
    if (this.#locked) throw new TypeError('the body is locked to a reader');
    this.#locked = true;
  }

  #next(): Promise<IteratorResult<Uint8Array, undefined>> {
    if (this.#cancelled) return Promise.resolve({ done: true, value: undefined });
    return this.#source.next();
  }

  #cancel(): void {
    if (this.#cancelled) return;
    this.#cancelled = true;
    this.#source.cancel();
  }
}
