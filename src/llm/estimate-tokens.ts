import type { Message } from '../conversation/message';

/**
 * A rough token count for text of `chars` characters: one token for every four, rounded up.
 * Used only where a provider did not report its own count; never negative.
 */
export function tokensForChars(chars: number): number {
  return Math.max(0, Math.ceil(chars / 4));
}

/** A rough token count of a text (see {@link tokensForChars}). */
export function estimateTokens(text: string): number {
  return tokensForChars(text.length);
}

/** A rough token count of the messages of a request: the characters of their contents, by four. */
export function estimateMessageTokens(messages: readonly Message[]): number {
  return tokensForChars(messages.reduce((sum, message) => sum + message.content.length, 0));
}
