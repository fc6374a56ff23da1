import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { marked, type Token, type Tokens } from 'marked';
import { globSync } from 'tinyglobby';
import { describe, expect, it } from 'vitest';

/** The repository's root. */
const ROOT = resolve(import.meta.dirname, '..');

/** Every markdown file a reader opens: the README, the docs, the examples' READMEs. */
const FILES = globSync(['README.md', 'docs/**/*.md', 'examples/**/*.md'], { cwd: ROOT }).sort();

/** The tokens of `markdown`, descending into lists, quotes, tables and inline text. */
function allTokens(markdown: string): Token[] {
  const found: Token[] = [];
  marked.walkTokens(marked.lexer(markdown), (token) => {
    found.push(token);
  });
  return found;
}

/** A heading's text as a reader sees it: inline code, emphasis and links reduced to their words. */
function plainText(tokens: readonly Token[]): string {
  return tokens
    .map((token) => {
      if ('tokens' in token && Array.isArray(token.tokens) && token.tokens.length > 0) return plainText(token.tokens);
      return 'text' in token && typeof token.text === 'string' ? token.text : '';
    })
    .join('');
}

/**
 * The anchors of a file's headings, as GitHub makes them: lower case, punctuation dropped (but
 * `-` and `_`), spaces turned into `-`, and `-1`, `-2`… after a heading that came before.
 */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  for (const token of allTokens(markdown)) {
    if (token.type !== 'heading') continue;
    const base = plainText((token as Tokens.Heading).tokens)
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const seen = counts.get(base) ?? 0;
    counts.set(base, seen + 1);
    anchors.add(seen === 0 ? base : `${base}-${seen}`);
  }
  return anchors;
}

/** The links of a file that point inside the repository: `other.md`, `other.md#anchor`, `#anchor`. */
function localLinks(markdown: string): string[] {
  return allTokens(markdown)
    .filter((token): token is Tokens.Link | Tokens.Image => token.type === 'link' || token.type === 'image')
    .map((token) => token.href)
    .filter((href) => !/^[a-z][a-z0-9+.-]*:/i.test(href));
}

/** Why `href` in `file` leads nowhere, or undefined when it resolves. */
function brokenBecause(file: string, href: string): string | undefined {
  const [path = '', anchor] = href.split('#');
  const target = path === '' ? join(ROOT, file) : resolve(dirname(join(ROOT, file)), decodeURIComponent(path));
  if (!existsSync(target)) return 'no such file';
  if (anchor === undefined) return undefined;
  if (statSync(target).isDirectory() || !target.endsWith('.md')) return 'an anchor into something that is not a markdown file';
  return headingAnchors(readFileSync(target, 'utf8')).has(decodeURIComponent(anchor)) ? undefined : 'no heading has this anchor';
}

describe('links between the docs', () => {
  it('finds the files it checks', () => {
    expect(FILES).toContain('README.md');
    expect(FILES).toContain('docs/usage.md');
  });

  it.each(FILES)('every link of %s leads to a file and a heading that exist', (file) => {
    const broken = localLinks(readFileSync(join(ROOT, file), 'utf8'))
      .map((href) => ({ href, why: brokenBecause(file, href) }))
      .filter((link) => link.why !== undefined);
    expect(broken).toEqual([]);
  });
});

describe('the anchor of a heading', () => {
  it('is made as GitHub makes it', () => {
    const anchors = headingAnchors('# Using fence\n## Stop reasons\n### `init`\n## Models and keys\n## Many tools\n## Many tools\n## What `-n` prints, & why\n');
    expect([...anchors]).toEqual(['using-fence', 'stop-reasons', 'init', 'models-and-keys', 'many-tools', 'many-tools-1', 'what--n-prints--why']);
  });

  it('is found for a link that names it, and missing for one that does not', () => {
    expect(brokenBecause('docs/usage.md', 'output.md#stop-reasons')).toBeUndefined();
    expect(brokenBecause('docs/usage.md', 'output.md#stop-reasons-and-exit-codes')).toBe('no heading has this anchor');
    expect(brokenBecause('docs/usage.md', 'nowhere.md')).toBe('no such file');
    expect(brokenBecause('README.md', '#no-such-heading')).toBe('no heading has this anchor');
  });
});
