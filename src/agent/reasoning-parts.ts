import type { ReasoningPart } from '../conversation/message';

/**
 * Collects the reasoning state of one streamed reply in stream order, noting where each part
 * came: before the text (nothing of the reply had arrived yet) or before the native call that
 * comes next. Never throws.
 */
export class ReasoningCollector {
  readonly #parts: { part: ReasoningPart; textLength: number; calls: number; first: boolean }[] = [];

  /**
   * Adds one complete part. `textLength` is the length of the reply's text so far, `calls` the
   * number of native calls begun so far.
   */
  add(part: ReasoningPart, textLength: number, calls: number): void {
    this.#parts.push({ part, textLength, calls, first: textLength === 0 && calls === 0 });
  }

  /** Forgets everything (the provider started the reply over). */
  reset(): void {
    this.#parts.length = 0;
  }

  /**
   * The parts to keep, each with `beforeCall` set from where it came: the index of the next
   * native call when text or a call had arrived before it and such a call exists among
   * `callCount`, else absent (before the text). With `textEnd`, the reply's text was cut there
   * (at its first complete tool block): parts that came once all of its kept text had arrived
   * are left out with what followed.
   */
  parts(callCount: number, textEnd?: number): ReasoningPart[] {
    const kept = textEnd === undefined ? this.#parts : this.#parts.filter((entry) => entry.textLength < textEnd);
    return kept.map(({ part, calls, first }) => {
      const { beforeCall: _ignored, ...rest } = part;
      return !first && calls < callCount ? { ...rest, beforeCall: calls } : rest;
    });
  }
}
