/** What a fetched body became: text for the model, with the page's title when it has one. */
export interface PageText {
  /** `markdown` (HTML converted), `json` (pretty-printed) or `text` (as sent). */
  kind: 'markdown' | 'json' | 'text';
  title?: string;
  text: string;
  /** Said when the page was not converted whole (markup cut, or too deeply nested to convert). */
  note?: string;
}

/** Most characters of HTML read by the extractor: larger markup is cut first (extraction takes about a second a megabyte). */
export const HTML_LIMIT_CHARS = 1_000_000;

/** Characters of markdown after which conversion stops: the tool keeps no more than this of a page. */
const MARKDOWN_ENOUGH_CHARS = 120_000;

/** HTML converted at a time: the converter slows down more than in proportion on large inputs. */
const CHUNK_CHARS = 20_000;

/** How deep a large element is split into its children before it is converted whole. */
const CHUNK_DEPTH = 12;

/** Pages nested deeper than this skip the extractor (documents rarely pass 40). */
const READABLE_DEPTH = 150;

/** Pages with more elements than this skip the extractor (a long documentation page has a few thousand). */
const READABLE_ELEMENTS = 40_000;

/** Why a body is not made text: one sentence naming its type. */
export class UnreadableContent extends Error {}

const HTML_TYPES = ['text/html', 'application/xhtml+xml'];

/**
 * The text of a body of `contentType`: HTML through a readability extractor (the title and the
 * main content, or the whole body when no article is found) and then converted to markdown;
 * JSON pretty-printed (as sent when it does not parse, for instance when it was cut); any other
 * `text/*`, XML and the like as sent. A body without a type is judged by its first bytes. Images,
 * PDFs, archives and other binary types throw `UnreadableContent` naming the type. The HTML
 * libraries are loaded here, on the first page that needs them. HTML over `HTML_LIMIT_CHARS`
 * is cut before it is read, and converted a part at a time until there is more markdown than
 * the tool keeps, so a huge page costs about as much as a large one; markup nested too deeply
 * to convert gives the page's plain text instead; `note` says either.
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

async function htmlToMarkdown(whole: string, url: string): Promise<PageText> {
  const [{ parseHTML }, { Readability }, { NodeHtmlMarkdown }] = await Promise.all([import('linkedom'), import('@mozilla/readability'), import('node-html-markdown')]);
  const html = whole.slice(0, HTML_LIMIT_CHARS);
  const cutNote = whole.length > html.length ? `(the page's HTML was cut at ${HTML_LIMIT_CHARS.toLocaleString('en')} of ${whole.length.toLocaleString('en')} characters before conversion)` : undefined;
  const { document } = parseHTML(html);
  absoluteLinks(document, url);
  const pageTitle = document.title?.trim() || undefined;
  let article: { title?: string | null; content?: string | null } | null = null;
  // Readability's time grows with depth times size: a page far deeper or larger than documents
  // are is converted whole instead (it throws past `maxElemsToParse`).
  if (nestingDepth(document.body as unknown as HtmlNode | null) <= READABLE_DEPTH) {
    try {
      article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], { charThreshold: 200, maxElemsToParse: READABLE_ELEMENTS }).parse();
    } catch {
      article = null;
    }
  }
  // Readability changes the document it reads: the whole body is taken from a fresh parse.
  const content = article?.content?.trim() ? article.content : wholeBody(parseHTML(html).document, url);
  const title = article?.title?.trim() || pageTitle;
  const translator = new NodeHtmlMarkdown({ keepDataImages: false });
  try {
    const parts: string[] = [];
    let length = 0;
    for (const chunk of batched(htmlChunks(parseHTML(`<html><body>${content}</body></html>`).document.body as unknown as HtmlNode, 0))) {
      const part = translator.translate(chunk).trim();
      if (part === '') continue;
      parts.push(part);
      length += part.length + 2;
      if (length > MARKDOWN_ENOUGH_CHARS) break;
    }
    return { kind: 'markdown', ...(title ? { title } : {}), text: parts.join('\n\n'), ...(cutNote ? { note: cutNote } : {}) };
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    // The converter recurses once per level of nesting: markup nested thousands deep overflows it.
    const text = (parseHTML(html).document.body?.textContent ?? '').replace(/[ \t]+/g, ' ').replace(/\n\s*\n+/g, '\n\n').trim();
    const note = '(the page is nested too deeply to convert: its plain text follows)';
    return { kind: 'text', ...(title ? { title } : {}), text, note: cutNote ? `${note}\n${cutNote}` : note };
  }
}

/** Consecutive pieces joined up to `CHUNK_CHARS`: each conversion has a cost of its own, so thousands of tiny ones add up. */
function* batched(pieces: Iterable<string>): Generator<string> {
  let batch = '';
  for (const piece of pieces) {
    if (batch !== '' && batch.length + piece.length > CHUNK_CHARS) {
      yield batch;
      batch = '';
    }
    batch += piece;
  }
  if (batch !== '') yield batch;
}

function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}

/** How deep elements nest under `root`, counted without recursion (it stops counting past `READABLE_DEPTH`). */
function nestingDepth(root: HtmlNode | null): number {
  if (!root) return 0;
  let deepest = 0;
  const stack: [HtmlNode, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [HtmlNode, number];
    if (depth > deepest) deepest = depth;
    if (deepest > READABLE_DEPTH) return deepest;
    for (const child of Array.from(node.childNodes)) if (child.nodeType === 1) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** What `htmlChunks` reads of a DOM node. */
interface HtmlNode {
  nodeType: number;
  childNodes: ArrayLike<HtmlNode>;
  outerHTML?: string;
  textContent: string | null;
}

/**
 * The HTML of `node`'s children in parts of about `CHUNK_CHARS` or less, in order: a larger
 * element is split into its own children, down to `CHUNK_DEPTH` levels (a list or table split
 * so loses some of its shape, which only pages of that size pay), below which only its text is
 * kept; text between elements is escaped.
 */
function* htmlChunks(node: HtmlNode, depth: number): Generator<string> {
  for (const child of Array.from(node.childNodes)) {
    if (child.nodeType === 3) {
      const text = child.textContent ?? '';
      if (text.trim() !== '') yield escapeText(text);
      continue;
    }
    if (child.nodeType !== 1) continue;
    const html = child.outerHTML ?? '';
    if (html.length <= CHUNK_CHARS || child.childNodes.length === 0) yield html;
    else if (depth < CHUNK_DEPTH) yield* htmlChunks(child, depth + 1);
    // Still large this deep: markup no converter should be given whole; its text is kept.
    else yield `<p>${escapeText(child.textContent ?? '')}</p>`;
  }
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
