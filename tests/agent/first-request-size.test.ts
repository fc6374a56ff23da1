import { describe, expect, it } from 'vitest';
import { promptOverhead } from '../../bench/formats';

/** The aim for the fixed part of every request: the system prompt and, natively, the tool definitions. */
const FIRST_REQUEST_TOKENS = 2000;

describe('the first request', () => {
  it('stays under 2,000 tokens (o200k) with every built-in tool, in each tool format', () => {
    const sizes = promptOverhead();
    expect(sizes.map((size) => size.format)).toEqual(['markdown', 'xml', 'tool']);
    for (const size of sizes) expect(size.total, `${size.format}: ${size.total} tokens`).toBeLessThan(FIRST_REQUEST_TOKENS);
  });
});
