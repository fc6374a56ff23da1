import { describe, expect, it } from 'vitest';
import { HTML_LIMIT_CHARS, pageText } from '../../src/web/page-text';

const html = (body: string, title = 'A page') => Buffer.from(`<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`);

describe('pageText', () => {
  it('converts a page with no article as its whole body', async () => {
    const page = await pageText(html('<ul><li>one</li><li>two</li></ul><p>short</p>'), 'text/html', 'https://example.org/');
    expect(page.kind).toBe('markdown');
    expect(page.text).toContain('* one');
    expect(page.text).toContain('short');
  });

  it('gives the text of markup nested far deeper than documents are, without overflowing the stack', async () => {
    const deep = `${'<div>'.repeat(30_000)}deep text${'</div>'.repeat(30_000)}<p>after</p>`;
    const page = await pageText(html(deep), 'text/html', 'https://example.org/');
    expect(page.text).toContain('deep text');
    expect(page.text).toContain('after');
  });

  it('cuts markup over the limit before reading it, and says so', async () => {
    const paragraph = '<p>Words of a paragraph, long enough to be content for the extractor to keep.</p>\n';
    const body = paragraph.repeat(Math.ceil((HTML_LIMIT_CHARS * 1.5) / paragraph.length));
    const page = await pageText(html(`<article>${body}</article>`), 'text/html', 'https://example.org/');
    expect(page.note).toMatch(/^\(the page's HTML was cut at 1,000,000 of [\d,]+ characters before conversion\)$/);
    expect(page.text.length).toBeGreaterThan(100_000);
  });

  it('reads the charset the server names', async () => {
    const page = await pageText(Buffer.from('caf\xe9', 'latin1'), 'text/plain; charset=ISO-8859-1', 'https://example.org/');
    expect(page.text).toBe('café');
  });

  it('gives JSON that does not parse as sent, and sniffs a body without a type', async () => {
    expect((await pageText(Buffer.from('{"cut": [1, 2'), 'application/json', 'https://example.org/')).text).toBe('{"cut": [1, 2');
    expect((await pageText(Buffer.from('<!DOCTYPE html><html><body><p>hi</p></body></html>'), '', 'https://example.org/')).kind).toBe('markdown');
    expect((await pageText(Buffer.from('just text'), '', 'https://example.org/')).kind).toBe('text');
    await expect(pageText(Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0x01]), '', 'https://example.org/x')).rejects.toThrow('https://example.org/x is binary data, not a page fence can read as text');
    await expect(pageText(Buffer.from('%PDF-1.7'), 'application/pdf', 'https://example.org/x.pdf')).rejects.toThrow('https://example.org/x.pdf is application/pdf, not a page fence can read as text');
  });
});
