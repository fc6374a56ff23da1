/** Why a fetch did not give a page, in one sentence for the model. */
export class FetchRefusal extends Error {}

/**
 * `text` as a URL fence fetches: `http:` or `https:`, with a host and without a user or
 * password. Throws `FetchRefusal` otherwise; `context` leads the message (a redirect's).
 */
export function parseWebUrl(text: string, context?: string): URL {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new FetchRefusal(`${context ? `${context} ` : ''}${JSON.stringify(text.trim())}, which is not a URL; write it whole, e.g. https://docs.example.org/page`);
  }
  const lead = context ? `${context} ${url.href}: ` : '';
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchRefusal(`${lead}only http and https URLs are fetched, not ${url.protocol.slice(0, -1)}`);
  if (url.username !== '' || url.password !== '') throw new FetchRefusal(`${lead}a URL with a user or password is not fetched`);
  if (url.hostname === '') throw new FetchRefusal(`${lead}the URL has no host`);
  url.hash = '';
  return url;
}
