/**
 * Token counts for keeping requests inside a context window. A character estimate is free but
 * can be 2× off on code and data, so the real o200k tokenizer is used once a request comes
 * near its budget; it is loaded only then (it is a few megabytes), so short sessions and
 * start-up never pay for it. Anthropic publishes no tokenizer: for its models every count is
 * raised by a safety margin.
 */

/** Characters per token of the estimate: low, so that the estimate errs on the large side. */
const CHARS_PER_TOKEN = 3;

/** Margin on counts for models whose tokenizer is not o200k (Anthropic's count more tokens for the same text). */
const OTHER_TOKENIZER_MARGIN = 1.2;

export class TokenCounter {
  #encode: ((text: string) => number[]) | undefined;
  readonly #margin: number;

  /** `exact`: the model uses o200k (OpenAI's current models); otherwise counts get a margin. */
  constructor(options: { exact?: boolean } = {}) {
    this.#margin = options.exact ? 1 : OTHER_TOKENIZER_MARGIN;
  }

  /** Whether the tokenizer is loaded (counts are then real, not estimated). */
  get precise(): boolean {
    return this.#encode !== undefined;
  }

  /** Loads the tokenizer; later counts use it. Never throws: if it cannot load, counts stay estimates. */
  async load(): Promise<void> {
    if (this.#encode) return;
    try {
      const { encode } = await import('gpt-tokenizer/encoding/o200k_base');
      this.#encode = (text) => encode(text, { allowedSpecial: 'all' });
    } catch {
      // Estimates are on the large side; the run goes on with them.
    }
  }

  /** Tokens of a text: counted when the tokenizer is loaded, else estimated from its length. */
  readonly count = (text: string): number => {
    const raw = this.#encode ? this.#encode(text).length : Math.ceil(text.length / CHARS_PER_TOKEN);
    return Math.ceil(raw * this.#margin);
  };

  /** The estimate, whatever is loaded: cheap enough to run on every request. */
  estimate(text: string): number {
    return Math.ceil((text.length / CHARS_PER_TOKEN) * this.#margin);
  }
}
