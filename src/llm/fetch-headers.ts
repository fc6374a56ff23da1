/**
 * The `Headers` of the Fetch standard, written out so that a request needs none of Node's web
 * classes: Node builds them (its whole fetch implementation) on the first touch of the global
 * `Headers`, which costs about what starting Node itself costs. `createNodeFetch` gives its
 * responses these headers, and the build has the provider SDKs use this class wherever they
 * say `Headers` (see scripts/build.mjs).
 *
 * As the standard has it: names are case-insensitive and listed in lower case, sorted; values
 * lose leading and trailing whitespace; `get` joins the values of a name with `, `, and
 * iteration gives each `set-cookie` apart. A name that is no HTTP token, or a value with a line
 * break or a NUL, is a TypeError.
 */
export class FetchHeaders implements Headers {
  readonly #values = new Map<string, string[]>();

  constructor(init?: ConstructorParameters<typeof Headers>[0] | Iterable<readonly [string, string]>) {
    if (init === undefined || init === null) return;
    if (typeof init !== 'object') throw new TypeError('Headers: the init must be an object or a list of pairs');
    if (Symbol.iterator in init) {
      for (const pair of init as Iterable<readonly unknown[]>) {
        if (pair.length !== 2) throw new TypeError('Headers: each header must be a [name, value] pair');
        this.append(String(pair[0]), String(pair[1]));
      }
      return;
    }
    for (const [name, value] of Object.entries(init)) this.append(name, String(value));
  }

  get [Symbol.toStringTag](): string {
    return 'Headers';
  }

  append(name: string, value: string): void {
    const key = headerName(name);
    const clean = headerValue(value);
    const values = this.#values.get(key);
    if (values) values.push(clean);
    else this.#values.set(key, [clean]);
  }

  delete(name: string): void {
    this.#values.delete(headerName(name));
  }

  get(name: string): string | null {
    return this.#values.get(headerName(name))?.join(', ') ?? null;
  }

  getSetCookie(): string[] {
    return [...(this.#values.get('set-cookie') ?? [])];
  }

  has(name: string): boolean {
    return this.#values.has(headerName(name));
  }

  set(name: string, value: string): void {
    this.#values.set(headerName(name), [headerValue(value)]);
  }

  forEach(callback: (value: string, name: string, headers: Headers) => void, thisArg?: unknown): void {
    for (const [name, value] of this.entries()) callback.call(thisArg, value, name, this);
  }

  *entries(): HeadersIterator<[string, string]> {
    for (const name of [...this.#values.keys()].sort()) {
      const values = this.#values.get(name) ?? [];
      if (name === 'set-cookie') for (const value of values) yield [name, value];
      else yield [name, values.join(', ')];
    }
  }

  *keys(): HeadersIterator<string> {
    for (const [name] of this.entries()) yield name;
  }

  *values(): HeadersIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): HeadersIterator<[string, string]> {
    return this.entries();
  }
}

/** The iterators `Headers` hands out: iterable iterators. */
type HeadersIterator<T> = Generator<T, undefined, unknown>;

/** An HTTP token: the characters RFC 9110 allows in a field name. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function headerName(name: string): string {
  if (!TOKEN.test(name)) throw new TypeError(`Headers: "${name}" is not a valid header name`);
  return name.toLowerCase();
}

function headerValue(value: string): string {
  const trimmed = value.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  if (/[\0\r\n]/.test(trimmed)) throw new TypeError('Headers: a header value may not hold a line break or a NUL');
  return trimmed;
}
