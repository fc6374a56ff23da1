import { z } from 'zod';
import type { FetchLimits } from '../web/fetch-page';
import { markUntrusted } from '../web/untrusted-content';
import { hostOf, webHosts } from '../web/web-hosts';
import { FetchRefusal, parseWebUrl } from '../web/web-url';
import { defineTool } from './define-tool';

/** Most characters of a page's text kept; the rest is cut, with a note saying where. */
export const FETCH_TEXT_LIMIT_CHARS = 100_000;

/** What the `fetch` tool is made with. */
export interface FetchToolOptions {
  /** `[web] allow`: hosts fetched without asking (see `webHosts` for the syntax). */
  allow?: readonly string[];
  /** Caps of one fetch (defaults: `DEFAULT_FETCH_LIMITS`). */
  limits?: Partial<FetchLimits>;
}

/**
 * Makes the `fetch` tool: reads a web page and gives its main content as text (HTML as
 * markdown, JSON pretty-printed, plain text as sent; see `pageText`), cut at
 * `FETCH_TEXT_LIMIT_CHARS` with a note. It runs in fence, not in the sandbox, so it is
 * admitted like any tool, the URL being its resource: a host `allow` lists is fetched, any
 * other is asked about (and refused where nobody can be asked). Every hop is checked again
 * (see `fetchPage`). The model reads the text marked as untrusted (`markUntrusted`); a program
 * gets the text alone as `value`.
 */
export function createFetchTool(options: FetchToolOptions = {}) {
  const hosts = webHosts(options.allow ?? []);
  return defineTool({
    name: 'fetch',
    description: 'Read a web page (http or https) as markdown.',
    instructions: 'Hosts not on the allowed list need the user\'s yes.',
    example: { url: 'https://docs.python.org/3/' },
    blockTypes: ['fetch'],
    parameters: z.object({ url: z.string().describe('Whole URL') }),
    block: { content: 'url' },
    callers: ['direct', 'program'],
    mutating: false,
    returns: 'string',
    resource: ({ url }) => url.trim(),
    admission({ url }) {
      let parsed: URL;
      try {
        parsed = parseWebUrl(url);
      } catch {
        // An unusable URL is refused by the call itself, with its reason.
        return { action: 'allow' };
      }
      if (hosts.listed(parsed)) return { action: 'allow' };
      return { action: 'ask', reason: `${hostOf(parsed)} is not in [web] allow (add it to your config.toml to fetch it without asking)` };
    },
    async execute({ url }, ctx) {
      // Loaded on the first fetch: sessions that read no page pay nothing for them.
      const [{ fetchPage }, { pageText, UnreadableContent }] = await Promise.all([import('../web/fetch-page'), import('../web/page-text')]);
      try {
        const page = await fetchPage(url, { hosts, signal: ctx.signal, ...(options.limits ? { limits: options.limits } : {}) });
        const details = { url: page.url, status: page.status, contentType: page.contentType, bytes: page.body.length };
        if (page.status >= 400) {
          return { output: `${page.url} answered ${page.status}${page.statusText ? ` ${page.statusText}` : ''}`, isError: true, details };
        }
        const converted = await pageText(page.body, page.contentType, page.url);
        const notes: string[] = [];
        if (page.url !== parseWebUrl(url).href) notes.push(`(redirected to ${page.url})`);
        let text = converted.text;
        if (converted.note) notes.push(converted.note);
        if (page.cut) notes.push(`(the page was cut at ${megabytes(page.body.length)}: fence reads no more of one page)`);
        if (text.length > FETCH_TEXT_LIMIT_CHARS) {
          notes.push(`(cut at ${FETCH_TEXT_LIMIT_CHARS.toLocaleString('en')} of ${text.length.toLocaleString('en')} characters)`);
          text = text.slice(0, FETCH_TEXT_LIMIT_CHARS);
        }
        const body = [converted.title ? `# ${converted.title}\n` : '', text, notes.length > 0 ? `\n${notes.join('\n')}` : ''].join('\n').trim();
        return { output: markUntrusted(page.url, body), value: text, details: { ...details, chars: text.length } };
      } catch (error) {
        if (error instanceof FetchRefusal || error instanceof UnreadableContent) return { output: error.message, isError: true };
        throw error;
      }
    },
  });
}

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
