/**
 * The quirks of the servers that speak OpenAI's Chat Completions API, as data: the adapter
 * reads these flags and never asks which server it talks to.
 */
export interface OpenAICompat {
  /**
   * How a system message after the first is sent: as `system`, or as a `user` message wrapped
   * in `<system>` tags (some servers reject a system message that is not first).
   */
  laterSystemAs: 'system' | 'user';
  /** Merge consecutive user messages into one (chat templates that insist on alternation). */
  mergeUserMessages: boolean;
  /** The request field that caps the reply's length. */
  maxTokensField: 'max_completion_tokens' | 'max_tokens';
  /** Extra headers sent with every request. */
  headers: Record<string, string>;
  /** Send the OpenAI organisation and project of the environment (OPENAI_ORG_ID, OPENAI_PROJECT_ID). */
  accountHeaders: boolean;
}

/** The quirks of each OpenAI-compatible provider. */
export const OPENAI_COMPAT: Readonly<Record<'openai' | 'openrouter' | 'local', Readonly<OpenAICompat>>> = {
  openai: { laterSystemAs: 'system', mergeUserMessages: false, maxTokensField: 'max_completion_tokens', headers: {}, accountHeaders: true },
  openrouter: {
    laterSystemAs: 'user',
    mergeUserMessages: false,
    maxTokensField: 'max_tokens',
    headers: { 'X-Title': 'fence' },
    accountHeaders: false,
  },
  local: { laterSystemAs: 'user', mergeUserMessages: true, maxTokensField: 'max_tokens', headers: {}, accountHeaders: false },
};
