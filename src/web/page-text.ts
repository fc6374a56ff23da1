/** What a fetched body became: text for the model, with the page's title when it has one. */
export interface PageText {
  /** `markdown` (HTML converted), `json` (pretty-printed) or `text` (as sent). */
  kind: 'markdown' | 'json' | 'text';
  title?: string;
  text: string;
}

/** Why a body is not made text: one sentence naming its type. */
export class UnreadableContent extends Error {}

const HTML_TYPES = ['text/html', 'application/xhtml+xml'];

/**
 * The text of a body of `contentType`: HTML through a readability extractor (the title and the
 * main content, or the whole body when no article is found) and then converted to markdown;
 * JSON pretty-printed (as sent when it does not parse, for instance when it was cut); any other
 * `text/*`, XML and the like as sent. A body without a type is judged by its first bytes. Images,
 * PDFs, archives and other binary types throw `UnreadableContent` naming the type. The HTML
 * libraries are loaded here, on the first page that needs them.
 */
export async function pageText(body: Buffer, contentType: string, url: string): Promise<PageText> {
  const { type, charset } = parseContentType(contentType);
  const kind = type === '' ? sniff(body) : typeKind(type);
  if (kind === 'binary') throw new UnreadableContent(`${url} is ${type === '' ? 'binary data' : type}, not a page fence can read as text; use the shell to download it`);
  const text = decode(body, charset);
  if (kind === 'html') return htmlToMarkdown(text, url);
  if (kind === 'json') return { kind: 'json', text: prettyJson(text) };
  return { kind: 'text', text };
}

function parseContentType(header: string): { type: string; charset?: string } {
  const [type = '', ...params] = header.split(';').map((part) => part.trim());
  const charset = params.map((param) => /^charset\s*=\s*"?([^";\s]+)"?$/i.exec(param)?.[1]).find((value) => value !== undefined);
  return { type: type.toLowerCase(), ...(charset ? { charset } : {}) };
}

function typeKind(type: string): 'html' | 'json' | 'text' | 'binary' {
  if (HTML_TYPES.includes(type)) return 'html';
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  if (type.startsWith('text/')) return 'text';
  if (type === 'application/xml' || type.endsWith('+xml') || type === 'application/javascript' || type === 'application/x-yaml' || type === 'application/yaml' || type === 'application/toml') return 'text';
  return 'binary';
}

/** A body without a content type: HTML when it starts like a page, text when it has no NUL byte, else binary. */
function sniff(body: Buffer): 'html' | 'text' | 'binary' {
  const head = body.subarray(0, 1024);
  if (head.includes(0)) return 'binary';
  return /^\s*(<!doctype html|<html|<head|<body)/i.test(head.toString('latin1')) ? 'html' : 'text';
}

function decode(body: Buffer, charset: string | undefined): string {
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body).replace(/^\uFEFF/, '');
  } catch {
    return new TextDecoder('utf-8').decode(body).replace(/^\uFEFF/, '');
  }
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

async function htmlToMarkdown(html: string, url: string): Promise<PageText> {
  const [{ parseHTML }, { Readability }, { NodeHtmlMarkdown }] = await Promise.all([import('linkedom'), import('@mozilla/readability'), import('node-html-markdown')]);
  const { document } = parseHTML(html);
  absoluteLinks(document, url);
  const pageTitle = document.title?.trim() || undefined;
  let article: { title?: string | null; content?: string | null } | null = null;
  try {
    article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], { charThreshold: 200 }).parse();
  } catch {
    article = null;
  }
  // Readability changes the document it reads: the whole body is taken from a fresh parse.
  const content = article?.content?.trim() ? article.content : wholeBody(parseHTML(html).document, url);
  const markdown = NodeHtmlMarkdown.translate(content, { keepDataImages: false }, undefined, undefined).trim();
  const title = article?.title?.trim() || pageTitle;
  return { kind: 'markdown', ...(title ? { title } : {}), text: markdown };
}

/** The structure of the DOM that `absoluteLinks` touches. */
interface LinkedDocument {
  querySelectorAll(selector: string): Iterable<{ getAttribute(name: string): string | null; setAttribute(name: string, value: string): void }>;
}

/** Links and images made absolute against the page's URL, so the markdown's links lead somewhere. */
function absoluteLinks(document: LinkedDocument, url: string): void {
  for (const [selector, attribute] of [
    ['a[href]', 'href'],
    ['img[src]', 'src'],
  ] as const) {
    for (const element of document.querySelectorAll(selector)) {
      const value = element.getAttribute(attribute);
      if (value === null || value.startsWith('#')) continue;
      try {
        element.setAttribute(attribute, new URL(value, url).href);
      } catch {
        // A link that is not a URL stays as written.
      }
    }
  }
}

function wholeBody(document: LinkedDocument & { body?: { innerHTML: string } | null }, url: string): string {
  absoluteLinks(document, url);
  return document.body?.innerHTML ?? '';
}
