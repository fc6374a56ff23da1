/**
 * The values of an XML tool use, read from the raw text the reader (`xml-reader.ts`) set
 * aside: the words of the `args` attribute and the element's content, with XML's entities and
 * CDATA sections undone. Pure functions of their input.
 */

export const CDATA_OPEN = '<![CDATA[';
const CDATA_CLOSE = ']]>';

/** The five named entities XML predefines; any other `&name;` stays as written. */
const NAMED_ENTITIES: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
const ENTITY = /&(?:(lt|gt|amp|quot|apos)|#([0-9]+)|#[xX]([0-9a-fA-F]+));/g;

/** Whitespace as XML has it inside tags: space, tab, CR, LF. */
export function isSpace(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r';
}

/** Characters an attribute name may hold, leniently: anything but whitespace, `=` and quotes. */
function isAttributeNameChar(ch: string): boolean {
  return !isSpace(ch) && ch !== '=' && ch !== '"' && ch !== "'";
}

/** Whether a numeric character reference may stand for `code` (a scalar value other than NUL). */
function isCharacter(code: number): boolean {
  return code >= 1 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
}

/**
 * Decodes the XML entities `&lt; &gt; &amp; &quot; &apos;` and numeric references (`&#60;`,
 * `&#x3c;`). Everything else stays as written: unknown names (`&nbsp;`), a bare `&` (as in
 * `a && b`), a reference without its `;`, and numbers that name no character (`&#0;`, a
 * surrogate, beyond U+10FFFF). Decoding is a single pass: `&amp;lt;` gives `&lt;`.
 */
function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(
    ENTITY,
    (whole: string, name: string | undefined, decimal: string | undefined, hex: string | undefined) => {
      if (name !== undefined) return NAMED_ENTITIES[name] ?? whole;
      const code = decimal !== undefined ? Number.parseInt(decimal, 10) : Number.parseInt(hex ?? '', 16);
      return isCharacter(code) ? String.fromCodePoint(code) : whole;
    },
  );
}

/**
 * The args of a tool element from the raw text of its opening tag (after the name): the value
 * of its first `args="…"` or `args='…'` attribute, split on whitespace, each word then
 * entity-decoded (so `&#32;` puts a space inside one word). Other attributes, and attributes
 * without a quoted value, are ignored; without an `args` attribute the args are empty.
 *
 * As in the reader, a quote opens a value only after `=` (and optional whitespace); a stray
 * quote elsewhere is skipped. One pass, no backtracking.
 */
export function readArgs(tag: string): string[] {
  let at = 0;
  const skipSpace = (): void => {
    while (at < tag.length && isSpace(tag.charAt(at))) at++;
  };
  for (;;) {
    skipSpace();
    if (at >= tag.length) return [];
    const nameStart = at;
    while (at < tag.length && isAttributeNameChar(tag.charAt(at))) at++;
    const name = tag.slice(nameStart, at);
    skipSpace();
    if (tag.charAt(at) !== '=') {
      if (name === '') at++; // a stray quote
      continue;
    }
    at++;
    skipSpace();
    const quote = tag.charAt(at);
    if (quote !== '"' && quote !== "'") continue;
    const close = tag.indexOf(quote, at + 1);
    const valueEnd = close === -1 ? tag.length : close;
    if (name === 'args') {
      return tag.slice(at + 1, valueEnd).split(/\s+/).filter((word) => word !== '').map(decodeEntities);
    }
    at = valueEnd + 1;
  }
}

/**
 * The content of a tool element from its raw body (everything between the opening tag and
 * the closing tag, CDATA markers included): one line break (`\n` or `\r\n`) right after the
 * opening tag and one right before the closing tag are removed, then entities are decoded
 * outside CDATA sections while the sections' insides are kept verbatim. Only line breaks
 * written as such are removed — not `&#10;`, not one inside a CDATA section.
 */
export function readContent(raw: string): string {
  let from = 0;
  let to = raw.length;
  if (raw.startsWith('\r\n')) from = 2;
  else if (raw.startsWith('\n')) from = 1;
  if (raw.endsWith('\r\n')) to -= 2;
  else if (raw.endsWith('\n')) to -= 1;
  // A body that is a single line break gives it up to both rules at once.
  const body = raw.slice(from, Math.max(from, to));
  let content = '';
  let at = 0;
  for (;;) {
    const open = body.indexOf(CDATA_OPEN, at);
    if (open === -1) return content + decodeEntities(body.slice(at));
    const inner = open + CDATA_OPEN.length;
    // The reader ends a body only outside CDATA, so every section in it is closed.
    const close = body.indexOf(CDATA_CLOSE, inner);
    const end = close === -1 ? body.length : close;
    content += decodeEntities(body.slice(at, open)) + body.slice(inner, end);
    at = end + CDATA_CLOSE.length;
  }
}
