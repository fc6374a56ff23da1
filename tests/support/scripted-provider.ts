import type { Provider, StreamEvent, StreamRequest } from '../../src/llm/provider';

/**
 * A Provider that answers each request with the next scripted list of stream events (the last
 * list repeats), recording every request it was sent. For what the real adapters cannot yet be
 * made to stream by the fake server; a script should end with a `done` event.
 */
export class ScriptedProvider implements Provider {
  readonly name = 'scripted';
  readonly requests: Omit<StreamRequest, 'signal'>[] = [];
  readonly #replies: StreamEvent[][];

  constructor(...replies: StreamEvent[][]) {
    this.#replies = replies;
  }

  async *stream(request: StreamRequest): AsyncIterable<StreamEvent> {
    const { signal, ...rest } = request;
    this.requests.push(rest);
    const events = this.#replies[Math.min(this.requests.length - 1, this.#replies.length - 1)] ?? [];
    for (const event of events) {
      if (signal?.aborted) {
        yield { type: 'done', stopReason: 'aborted' };
        return;
      }
      await Promise.resolve();
      yield event;
    }
  }
}
