import { describe, expect, it } from 'vitest';
import { anthropicImageTokens, imageTokens, messageImageTokens, openaiImageTokens } from '../../src/llm/image-tokens';

describe('image token costs', () => {
  it("counts Anthropic's width × height / 750", () => {
    expect(anthropicImageTokens(1000, 1000)).toBe(1334);
    expect(anthropicImageTokens(1568, 784)).toBe(1640);
    expect(anthropicImageTokens(1, 1)).toBe(1);
  });

  it("counts OpenAI's high-detail tiles after its two scalings", () => {
    // 1024 × 1024 → 768 × 768: four tiles.
    expect(openaiImageTokens(1024, 1024)).toBe(85 + 170 * 4);
    // 2048 × 4096 → 1024 × 2048 → 768 × 1536: two by three tiles.
    expect(openaiImageTokens(2048, 4096)).toBe(85 + 170 * 6);
    // Small images are not scaled up: one tile.
    expect(openaiImageTokens(64, 48)).toBe(85 + 170);
  });

  it('takes the larger of the two, and sums a message', () => {
    expect(imageTokens({ width: 1568, height: 784 })).toBe(Math.max(1640, openaiImageTokens(1568, 784)));
    expect(imageTokens({ width: 64, height: 48 })).toBe(255);
    expect(messageImageTokens([{ width: 64, height: 48 }, { width: 64, height: 48 }])).toBe(510);
    expect(messageImageTokens(undefined)).toBe(0);
  });
});
