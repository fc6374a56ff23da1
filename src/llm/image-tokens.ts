import type { ImageRef } from '../conversation/message';

/**
 * Tokens an image costs on Anthropic's API: about width × height / 750 (its vision guide),
 * for an image within its 1568 px long edge (fence sends no larger one).
 */
export function anthropicImageTokens(width: number, height: number): number {
  return Math.ceil((Math.max(1, width) * Math.max(1, height)) / 750);
}

/**
 * Tokens an image costs on OpenAI's API at high detail: scaled to fit 2048 × 2048, then down to
 * 768 px on its short side (never up), it costs 85 plus 170 per 512 px tile it covers.
 */
export function openaiImageTokens(width: number, height: number): number {
  let w = Math.max(1, width);
  let h = Math.max(1, height);
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w *= fit;
  h *= fit;
  const short = Math.min(1, 768 / Math.min(w, h));
  w *= short;
  h *= short;
  return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512);
}

/**
 * What fence counts for an image in the context window and `/tokens`: the larger of the two
 * APIs' costs, so the count errs on the large side whichever model reads it.
 */
export function imageTokens(image: Pick<ImageRef, 'width' | 'height'>): number {
  return Math.max(anthropicImageTokens(image.width, image.height), openaiImageTokens(image.width, image.height));
}

/** The tokens of all the images of a message (0 for none). */
export function messageImageTokens(images: readonly Pick<ImageRef, 'width' | 'height'>[] | undefined): number {
  return (images ?? []).reduce((sum, image) => sum + imageTokens(image), 0);
}
