import { describe, expect, it } from 'vitest';
import { SdkWarnings } from '../../src/llm/sdk-warnings';

function collecting() {
  const lines: string[] = [];
  return { lines, warnings: new SdkWarnings('Test SDK', (line) => lines.push(line)) };
}

describe('SdkWarnings', () => {
  it('passes on what the SDK prints while a call runs, as its first line named after the SDK, and returns what the call returns', () => {
    const { lines, warnings } = collecting();
    const value = warnings.during(() => {
      console.warn('The model x is deprecated\nPlease migrate. Visit https://example.com');
      console.error('Could not parse message into JSON:', '{"a":');
      return 42;
    });
    expect(value).toBe(42);
    expect(lines).toEqual(['Test SDK: The model x is deprecated', 'Test SDK: Could not parse message into JSON: {"a":']);
  });

  it('passes each text on once, however many calls print it', () => {
    const { lines, warnings } = collecting();
    for (let i = 0; i < 3; i++) warnings.during(() => console.warn('The model x is deprecated\nsecond line'));
    warnings.logger.warn('The model x is deprecated');
    expect(lines).toEqual(['Test SDK: The model x is deprecated']);
  });

  it('puts the console back after the call, also when the call throws', () => {
    const { warn, error } = console;
    const { warnings } = collecting();
    expect(() =>
      warnings.during(() => {
        throw new Error('refused');
      }),
    ).toThrow('refused');
    expect(console.warn).toBe(warn);
    expect(console.error).toBe(error);
  });

  it("takes the SDK logger's warnings and drops its errors, info and debug", () => {
    const { lines, warnings } = collecting();
    warnings.logger.warn('ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are both set.');
    warnings.logger.error('Could not parse message into JSON:', 'x');
    warnings.logger.info('retrying');
    warnings.logger.debug('request', { a: 1 });
    expect(lines).toEqual(['Test SDK: ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are both set.']);
  });

  it('cuts a very long line and ignores one that holds nothing', () => {
    const { lines, warnings } = collecting();
    warnings.logger.warn('x'.repeat(1000));
    warnings.logger.warn('  \n ');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Test SDK: x{299}…$/);
  });
});
