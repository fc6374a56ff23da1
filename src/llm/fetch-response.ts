import type { BodyStream } from './body-stream';
import type { FetchHeaders } from './fetch-headers';

/** What a response is made with. */
export interface FetchResponseInit {
  status: number;
  statusText: string;
  headers: FetchHeaders;
  url: string;
}

/**
 * A fetch `Response` over a `BodyStream`, without Node's own `Response` (see `FetchHeaders`
 * for why): every member the provider SDKs read. It reads as the standard says: `text()`,
 * `json()`, `arrayBuffer()` and `blob()` read the body once (a second read, or a read of a body
 * a reader holds, is a TypeError). `clone()` and `formData()` are not supported: fence neither
 * reads a body twice nor gets forms.
 */
export class FetchResponse {
  readonly headers: FetchHeaders;
  readonly status: number;
  readonly statusText: string;
  readonly url: string;
  readonly type = 'basic' as const;
  readonly redirected = false;
  readonly #body: BodyStream | null;
  #used = false;

  constructor(body: BodyStream | null, init: FetchResponseInit) {
    this.#body = body;
    this.status = init.status;
    this.statusText = init.statusText;
    this.headers = init.headers;
    this.url = init.url;
  }

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  get body(): BodyStream | null {
    return this.#body;
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.#readAll();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  async blob(): Promise<Blob> {
    return new Blob([await this.#readAll()], { type: this.headers.get('content-type') ?? '' });
  }

  async formData(): Promise<never> {
    throw new TypeError('Response.formData() is not supported by fence\'s fetch');
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  async text(): Promise<string> {
    return new TextDecoder().decode(await this.#readAll());
  }

  clone(): never {
    throw new TypeError('Response.clone() is not supported by fence\'s fetch');
  }

  async #readAll(): Promise<Uint8Array> {
    if (this.#used || this.#body?.locked) throw new TypeError('the response body has already been read');
    this.#used = true;
    if (!this.#body) return new Uint8Array(0);
    const chunks: Uint8Array[] = [];
    const reader = this.#body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
    return Buffer.concat(chunks);
  }
}
