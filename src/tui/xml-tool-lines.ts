/** One piece of a reply line, as the chat shows an XML tool use: a block's head, body and end, or text. */
export type XmlLinePart = { kind: 'open'; info: string } | { kind: 'body'; text: string } | { kind: 'close' } | { kind: 'text'; text: string };

/** The call's element after `<tool-use>`: its name, its attributes, and whether it closes itself. */
const ELEMENT = /^<([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.-]*\s*=\s*"[^"]*")*)\s*(\/?)>/;
const ARGS = /\sargs\s*=\s*"([^"]*)"/;
const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&apos;': "'" };

/**
 * Reads the XML tool uses of a reply line by line, for the chat to show them as the code
 * blocks markdown calls are shown as: `<tool-use><save args="a.txt">` becomes the head
 * `save a.txt`, the body its lines, `</save></tool-use>` the end. A line is claimed when it
 * starts with `<tool-use>` (after blank space) or continues an open one. The body is taken as
 * written (inside CDATA, closing tags are text; the markers are dropped), a missing `</name>`
 * is forgiven at `</tool-use>`, and
 * anything after the use on its last line is text again. A `<tool-use>` whose element cannot be
 * read is given back as text. For display only: what runs is the tool parser's reading.
 */
export class XmlToolUseLines {
  #phase: 'none' | 'element' | 'body' | 'after' = 'none';
  #name = '';
  /** Inside `<![CDATA[ … ]]>` of the body. */
  #cdata = false;

  /** Whether `line` starts a tool use or goes on with the open one. */
  claims(line: string): boolean {
    return this.#phase !== 'none' || /^\s*<tool-use>/.test(line);
  }

  /** The parts of a claimed line, in order. */
  read(line: string): XmlLinePart[] {
    const parts: XmlLinePart[] = [];
    let rest = line;
    if (this.#phase === 'none') {
      rest = rest.replace(/^\s*<tool-use>/, '');
      this.#phase = 'element';
    }
    for (;;) {
      if (this.#phase === 'element') {
        const text = rest.trimStart();
        if (text === '') return parts;
        const element = ELEMENT.exec(text);
        if (!element) {
          this.#phase = 'none';
          return [{ kind: 'text', text: line }];
        }
        this.#name = element[1] ?? '';
        const args = ARGS.exec(` ${element[2] ?? ''}`)?.[1];
        parts.push({ kind: 'open', info: [this.#name, ...(args ? [decode(args)] : [])].join(' ') });
        rest = text.slice(element[0].length);
        if (element[3] === '/') {
          parts.push({ kind: 'close' });
          this.#phase = 'after';
          continue;
        }
        this.#phase = 'body';
        // The line break right after the opening tag is not part of the body.
        if (rest === '') return parts;
        continue;
      }
      if (this.#phase === 'body') {
        const body = this.#bodyPart(rest);
        if (body.text !== undefined) parts.push({ kind: 'body', text: body.text });
        if (body.rest === undefined) return parts;
        parts.push({ kind: 'close' });
        rest = body.rest;
        this.#phase = 'after';
        continue;
      }
      // After the element: everything up to `</tool-use>` is dropped, what follows is text.
      const close = rest.indexOf('</tool-use>');
      if (close < 0) return parts;
      this.#phase = 'none';
      const after = rest.slice(close + '</tool-use>'.length);
      if (after.trim() !== '') parts.push({ kind: 'text', text: after.trimStart() });
      return parts;
    }
  }

  /**
   * The body text on this line (none when the line holds only markers) and, when the element
   * ends on it, what follows its end. Inside CDATA, closing tags are text until `]]>`.
   */
  #bodyPart(line: string): { text?: string; rest?: string } {
    let text = '';
    let rest = line;
    for (;;) {
      if (this.#cdata) {
        const end = rest.indexOf(']]>');
        if (end < 0) return { text: text + rest };
        text += rest.slice(0, end);
        rest = rest.slice(end + 3);
        this.#cdata = false;
        if (rest === '' && text === '') return {};
        continue;
      }
      const own = rest.indexOf(`</${this.#name}>`);
      const outer = rest.indexOf('</tool-use>');
      const cdata = rest.indexOf('<![CDATA[');
      const end = own >= 0 && (outer < 0 || own < outer) ? own : outer;
      if (cdata >= 0 && (end < 0 || cdata < end)) {
        text += rest.slice(0, cdata);
        rest = rest.slice(cdata + '<![CDATA['.length);
        this.#cdata = true;
        if (rest === '' && text === '') return {};
        continue;
      }
      if (end < 0) return { text: text + rest };
      text += rest.slice(0, end);
      const after = end === own ? rest.slice(end + this.#name.length + 3) : rest.slice(end);
      return text === '' ? { rest: after } : { text, rest: after };
    }
  }

  /** Ends the reply: the end of a block still open, and a fresh state for the next reply. */
  finish(): XmlLinePart[] {
    const open = this.#phase === 'body';
    this.#phase = 'none';
    this.#cdata = false;
    return open ? [{ kind: 'close' }] : [];
  }
}

function decode(text: string): string {
  return text.replace(/&(?:amp|lt|gt|quot|apos);/g, (entity) => ENTITIES[entity] ?? entity);
}
