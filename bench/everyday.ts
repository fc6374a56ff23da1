/**
 * What the everyday capabilities cost where they run in fence's own process: preparing an
 * image (sharp), turning a fetched page into markdown (readability + node-html-markdown), and
 * finding the person's skills at the start of a session. Real libraries, real files.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isPrepared, prepareImage } from '../src/images/prepare-image';
import { findSkills } from '../src/skills/find-skills';
import { userSkillRoots } from '../src/skills/skill-roots';
import { pageText } from '../src/web/page-text';
import { median } from './ptc';

/** The figures of `everydayFigures`, in milliseconds unless named otherwise. */
export interface EverydayFigures {
  /** A 3000×2000 screenshot-like PNG: the first preparation of the process (sharp loaded), later ones. */
  imageFirstMs: number;
  imageLaterMs: number;
  /** The bytes sent for it after scaling, and the RSS the process grew by over 40 preparations after the first 21. */
  imageSentBytes: number;
  imageRssGrowthMb: number;
  /** A documentation page of ~120 kB of HTML: the first conversion (libraries loaded), later ones. */
  pageFirstMs: number;
  pageLaterMs: number;
  /** An article of ~1 MB of HTML (the most the extractor reads). */
  largePageMs: number;
  /** Finding skills at start: no skill folders (most machines), and 50 skills in one folder. */
  noSkillsMs: number;
  fiftySkillsMs: number;
}

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await run();
  return { ms: performance.now() - t0, value };
}

/** A PNG that compresses as a real screenshot does not: noise over a gradient. */
async function screenshot(path: string): Promise<void> {
  const sharp = (await import('sharp')).default;
  const noise = await sharp({ create: { width: 3000, height: 2000, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
    .png()
    .toBuffer();
  writeFileSync(path, noise);
}

/** A documentation page as sites serve them: navigation, sidebar, footer, and an article of sections with code and a table. */
function docsPage(sections: number): string {
  const nav = `<nav><ul>${Array.from({ length: 60 }, (_, i) => `<li><a href="/docs/page-${i}">Page ${i}</a></li>`).join('')}</ul></nav>`;
  const aside = `<aside>${Array.from({ length: 40 }, (_, i) => `<p><a href="#s${i}">Section ${i}</a></p>`).join('')}</aside>`;
  const body = Array.from(
    { length: sections },
    (_, i) =>
      `<section id="s${i}"><h2>Section ${i}</h2><p>The <code>open()</code> function returns a handle; its options are listed below, with what each one changes and when it was added.</p>` +
      `<pre><code class="language-js">const handle = await open('file-${i}.txt', { flags: 'r' });\nconsole.log(await handle.read());</code></pre>` +
      `<table><tr><th>option</th><th>default</th></tr><tr><td>flags</td><td>'r'</td></tr><tr><td>mode</td><td>0o666</td></tr></table></section>`,
  ).join('');
  return `<!doctype html><html><head><title>open() — docs</title><script>var x = 1;</script></head><body>${nav}${aside}<main><article><h1>open()</h1>${body}</article></main><footer>© docs</footer></body></html>`;
}

/** Measures the three; `root` is a folder of the caller's. */
export async function everydayFigures(root: string): Promise<EverydayFigures> {
  const image = join(root, 'screenshot.png');
  await screenshot(image);
  const first = await timed(() => prepareImage(image));
  if (!isPrepared(first.value)) throw new Error(first.value.error);
  const sentBytes = first.value.bytes.length;
  const later: number[] = [];
  for (let i = 0; i < 20; i++) later.push((await timed(() => prepareImage(image))).ms);
  // The decoder's threads take their memory in the first rounds; a leak would show after them.
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  for (let i = 0; i < 40; i++) await prepareImage(image);
  global.gc?.();
  const rssGrowth = (process.memoryUsage().rss - rssBefore) / 1024 / 1024;

  const page = Buffer.from(docsPage(120));
  const pageFirst = await timed(() => pageText(page, 'text/html; charset=utf-8', 'https://docs.example.org/open'));
  const pageLater: number[] = [];
  for (let i = 0; i < 10; i++) pageLater.push((await timed(() => pageText(page, 'text/html', 'https://docs.example.org/open'))).ms);
  const large = Buffer.from(docsPage(1000).slice(0, 1_000_000));
  const largePage: number[] = [];
  for (let i = 0; i < 3; i++) largePage.push((await timed(() => pageText(large, 'text/html', 'https://docs.example.org/all'))).ms);

  const emptyHome = join(root, 'home-empty');
  mkdirSync(emptyHome, { recursive: true });
  const noSkills: number[] = [];
  const env = { XDG_CONFIG_HOME: join(emptyHome, '.config') };
  for (let i = 0; i < 20; i++) noSkills.push((await timed(() => findSkills(userSkillRoots({ home: emptyHome, env })))).ms);
  const home = join(root, 'home-skills');
  for (let i = 0; i < 50; i++) {
    const folder = join(home, '.claude', 'skills', `skill-${i}`);
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'SKILL.md'), `---\nname: skill-${i}\ndescription: Does task ${i} of the kind people keep skills for; use it when asked to.\n---\n\n# Skill ${i}\n\nSteps.\n`);
  }
  const fifty: number[] = [];
  for (let i = 0; i < 20; i++) {
    const found = await timed(() => findSkills(userSkillRoots({ home, env: { XDG_CONFIG_HOME: join(home, '.config') } })));
    if (found.value.skills.length !== 50) throw new Error(`found ${found.value.skills.length} of 50 skills`);
    fifty.push(found.ms);
  }

  return {
    imageFirstMs: first.ms,
    imageLaterMs: median(later),
    imageSentBytes: sentBytes,
    imageRssGrowthMb: rssGrowth,
    pageFirstMs: pageFirst.ms,
    pageLaterMs: median(pageLater),
    largePageMs: median(largePage),
    noSkillsMs: median(noSkills),
    fiftySkillsMs: median(fifty),
  };
}
