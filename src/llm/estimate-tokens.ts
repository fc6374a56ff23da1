import type { Message, Usage } from '../conversation/message';
import { messageImageTokens } from './image-tokens';

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

/** A rough token count of the messages of a request: the characters of their contents, by four, and their images (see `imageTokens`). */
export function estimateMessageTokens(messages: readonly Message[]): number {
  const images = messages.reduce((sum, message) => sum + messageImageTokens(message.meta?.images), 0);
  return tokensForChars(messages.reduce((sum, message) => sum + message.content.length, 0)) + images;
}

/**
 * Usage for a reply the provider did not finish reporting (the stream was stopped or failed):
 * the numbers it sent, with what is missing estimated from the request's messages and the
 * characters of output received. Always marked `estimated`.
 */
export function completeUsage(reported: Usage | undefined, messages: readonly Message[], outputChars: number): Usage {
  return {
    ...reported,
    inputTokens: reported?.inputTokens ?? estimateMessageTokens(messages),
    outputTokens: Math.max(reported?.outputTokens ?? 0, tokensForChars(outputChars)),
    estimated: true,
  };
}
