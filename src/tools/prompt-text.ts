/** A markdown code fence, for tool instructions and examples that show blocks. */
export const FENCE = '```';

/** A duration for people, from milliseconds: `120 s`, `0.5 s`. */
export function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
