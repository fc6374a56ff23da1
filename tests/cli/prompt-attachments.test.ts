import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { attachedSummary, attachToPrompt, attachToPrompts, imageArguments, TEXT_ATTACHMENT_BYTES, type AttachContext } from '../../src/cli/prompt-attachments';
import type { SandboxPolicy } from '../../src/os-sandbox/policy';
import { attachImages } from '../../src/agent/message-images';
import sharp from 'sharp';
import { createHash } from 'node:crypto';

/** The first bytes of a PNG: enough for fence to take the file for one. */
const PNG_HEAD = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);

let context: AttachContext & { policy: SandboxPolicy };
let home: string;
let workspace: string;

beforeEach(() => {
  home = mkdtempSync('/var/tmp/fence-attach-');
  workspace = join(home, 'work');
  mkdirSync(join(home, '.ssh'), { recursive: true });
  mkdirSync(join(workspace, 'docs'), { recursive: true });
  writeFileSync(join(home, '.ssh', 'id_rsa'), 'PRIVATE KEY\n');
  writeFileSync(join(home, '.ssh', 'shot.png'), PNG_HEAD);
  writeFileSync(join(workspace, 'shot.png'), PNG_HEAD);
  writeFileSync(join(workspace, 'notes.md'), '# Notes\n\nship it\n');
  const policy: SandboxPolicy = { mode: 'workspace-write', workspace, writable: [workspace], denied: [join(home, '.ssh')], readable: [], protected: [], network: false, replaced: ['/tmp'] };
  context = { workspace, home, policy };
});

afterEach(() => {
  chmodSync(workspace, 0o755);
  rmSync(home, { recursive: true, force: true });
});

describe('attachToPrompt', () => {
  it('attaches an @image and leaves a short mention in its place', () => {
    expect(attachToPrompt('what is wrong here @shot.png?', context)).toEqual({
      text: 'what is wrong here [image: shot.png]?',
      images: [{ path: join(workspace, 'shot.png'), shown: 'shot.png', bytes: PNG_HEAD }],
      texts: [],
      warnings: [],
    });
  });

  it('attaches a pasted image path, quoted or escaped, and a file:// URL, each once', () => {
    mkdirSync(join(home, 'Pictures'));
    writeFileSync(join(home, 'Pictures', 'Shot 1.png'), PNG_HEAD);
    const path = join(home, 'Pictures', 'Shot 1.png');
    const attached = attachToPrompt(`'${path}' and ${path.replace(/ /g, '\\ ')} and file://${path.replace(/ /g, '%20')} what is this`, context);
    expect(attached).toMatchObject({
      text: '[image: ~/Pictures/Shot 1.png] and [image: ~/Pictures/Shot 1.png] and [image: ~/Pictures/Shot 1.png] what is this',
      images: [{ path, shown: '~/Pictures/Shot 1.png' }],
    });
  });

  it('takes a whole prompt that is an unquoted path with spaces for one pasted image', () => {
    mkdirSync(join(home, 'Pictures'));
    writeFileSync(join(home, 'Pictures', 'Shot 1.png'), PNG_HEAD);
    expect(attachToPrompt(`  ${join(home, 'Pictures', 'Shot 1.png')} `, context)).toMatchObject({ text: '  [image: ~/Pictures/Shot 1.png] ', images: [{ shown: '~/Pictures/Shot 1.png' }] });
    // Not an image, or not whole: the words stay.
    writeFileSync(join(home, 'Pictures', 'a b.txt'), 'text');
    expect(attachToPrompt(`${join(home, 'Pictures', 'a b.txt')}`, context)).toMatchObject({ images: [], texts: [] });
    expect(attachToPrompt(`${join(home, 'Pictures', 'Shot 1.png')} what is it`, context)).toMatchObject({ images: [] });
  });

  it('leaves pasted paths that are not images, and prose, as typed', () => {
    const prompt = `look at ${join(workspace, 'notes.md')} and /etc and /no/such.png, mail me@x.org or @user`;
    expect(attachToPrompt(prompt, context)).toEqual({ text: prompt, images: [], texts: [], warnings: [] });
  });

  it("attaches a text file's content in a fenced block headed by its path", () => {
    const attached = attachToPrompt('summarise @notes.md.', context);
    expect(attached).toMatchObject({ text: 'summarise notes.md.\n\n```notes.md\n# Notes\n\nship it\n```', texts: [{ shown: 'notes.md', cut: false }] });
  });

  it('fences content holding backticks with a longer fence', () => {
    writeFileSync(join(workspace, 'code.md'), 'a\n```js\nx\n```\n');
    expect(attachToPrompt('@code.md', context)).toMatchObject({ text: 'code.md\n\n````code.md\na\n```js\nx\n```\n````' });
  });

  it('cuts a long text file at the cap, at a line end, and says so', () => {
    const line = `${'x'.repeat(99)}\n`;
    writeFileSync(join(workspace, 'big.log'), line.repeat(3000));
    const attached = attachToPrompt('@big.log', context);
    if ('error' in attached) throw new Error(attached.error);
    expect(attached.texts).toEqual([{ path: join(workspace, 'big.log'), shown: 'big.log', size: 300_000, cut: true }]);
    expect(attached.text.length).toBeLessThan(TEXT_ATTACHMENT_BYTES + 200);
    expect(attached.text).toMatch(/x\n```\n\[big\.log is cut: above are its first 100 kB of 293 kB; read the file for the rest\]$/);
  });

  it('refuses a binary file that is not an image, naming it', () => {
    writeFileSync(join(workspace, 'app.bin'), Buffer.from([1, 2, 0, 3]));
    writeFileSync(join(workspace, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    expect(attachToPrompt('run @app.bin', context)).toEqual({ error: 'app.bin cannot be attached: it is binary, and only text files and images (PNG, JPEG, GIF, WebP) are' });
    expect(attachToPrompt('@latin1.txt', context)).toEqual({ error: 'latin1.txt cannot be attached: it is not UTF-8 text, and only text files and images (PNG, JPEG, GIF, WebP) are' });
  });

  it('refuses an unreadable file and one that is not a regular file', () => {
    writeFileSync(join(workspace, 'secret.txt'), 'x');
    chmodSync(join(workspace, 'secret.txt'), 0);
    const unreadable = attachToPrompt('@secret.txt', context);
    // root reads any file: then the file is simply attached.
    if (process.getuid?.() !== 0) expect(unreadable).toEqual({ error: 'secret.txt cannot be attached: permission denied' });
    expect(attachToPrompt('@/dev/null', context)).toEqual({ error: '/dev/null cannot be attached: not a regular file' });
  });

  it("never attaches what the sandbox denies, as written or through a link, and reads none of it", () => {
    symlinkSync(join(home, '.ssh', 'id_rsa'), join(workspace, 'key.txt'));
    const refusal = { error: "~/.ssh/id_rsa cannot be attached: the sandbox denies it (keys, credentials and fence's own data stay out of the model's reach)" };
    expect(attachToPrompt('@~/.ssh/id_rsa', context)).toEqual(refusal);
    expect(attachToPrompt(`@${join(home, '.ssh', 'id_rsa')}`, context)).toEqual(refusal);
    expect(attachToPrompt('@key.txt', context)).toEqual({ error: refusal.error.replace('~/.ssh/id_rsa', 'key.txt') });
    expect(attachToPrompt(`'${join(home, '.ssh', 'shot.png')}'`, context)).toMatchObject({ error: expect.stringContaining('~/.ssh/shot.png cannot be attached: the sandbox denies it') });
    // A pasted path that does not say it is an image stays text, unread.
    expect(attachToPrompt(`${join(home, '.ssh', 'id_rsa')} leaked?`, context)).toMatchObject({ images: [], texts: [] });
  });

  it("never attaches from /proc (fence's own environment), nor, in a sandbox, from /run; the host's /tmp is the person's", () => {
    const hidden = "fence attaches nothing from /proc or /run (they hold fence's own environment and the host's sockets, which the sandbox hides from the model)";
    const sandboxed = { ...context, policy: { ...context.policy, replaced: ['/tmp', '/run', '/proc'] } };
    const off = { ...context, policy: { ...context.policy, mode: 'off' as const } };
    expect(attachToPrompt('@/proc/self/environ', sandboxed)).toEqual({ error: `/proc/self/environ cannot be attached: ${hidden}` });
    expect(attachToPrompt('@/proc/self/environ', off)).toEqual({ error: `/proc/self/environ cannot be attached: ${hidden}` });
    symlinkSync('/proc/self/environ', join(workspace, 'env.txt'));
    expect(attachToPrompt('@env.txt', off)).toEqual({ error: `env.txt cannot be attached: ${hidden}` });
    const tmp = mkdtempSync('/tmp/fence-attach-');
    try {
      writeFileSync(join(tmp, 'shot.png'), PNG_HEAD);
      expect(attachToPrompt(`'${join(tmp, 'shot.png')}'`, sandboxed)).toMatchObject({ images: [{ path: join(tmp, 'shot.png') }] });
    } finally {
      rmSync(tmp, { recursive: true });
    }
  });

  it('with the sandbox off, attaches what the person names', () => {
    expect(attachToPrompt('@~/.ssh/id_rsa', { ...context, policy: { ...context.policy, mode: 'off' } })).toMatchObject({ texts: [{ shown: '~/.ssh/id_rsa' }] });
  });

  it('warns of a mention that meant a file but names none, or names a folder, and leaves it as typed', () => {
    expect(attachToPrompt('see @missing.png, @./gone and @"a b" but not @user or @types/node; @docs', context)).toEqual({
      text: 'see @missing.png, @./gone and @"a b" but not @user or @types/node; @docs',
      images: [],
      texts: [],
      warnings: ['@missing.png: no such file; left in the prompt as typed', '@./gone: no such file; left in the prompt as typed', '@a b: no such file; left in the prompt as typed', '@docs: a folder; only files are attached, so it is left as typed'],
    });
  });

  it('attaches nothing from a code span', () => {
    expect(attachToPrompt('run `cat @notes.md`', context)).toEqual({ text: 'run `cat @notes.md`', images: [], texts: [], warnings: [] });
  });
});

describe('imageArguments', () => {
  it('takes images relative to the shell folder, each once', () => {
    expect(imageArguments(['shot.png', join(workspace, 'shot.png')], workspace, context)).toEqual([{ path: join(workspace, 'shot.png'), shown: 'shot.png', bytes: PNG_HEAD }]);
  });

  it('carries the bytes of the file it judged, so a file swapped in afterwards is never what the run prepares', async () => {
    const real = await sharp({ create: { width: 4, height: 4, channels: 3, background: 'red' } }).png().toBuffer();
    const secret = await sharp({ create: { width: 4, height: 4, channels: 3, background: 'blue' } }).png().toBuffer();
    writeFileSync(join(workspace, 'shot.png'), real);
    writeFileSync(join(home, '.ssh', 'shot.png'), secret);
    const byMention = attachToPrompt('look @shot.png', context);
    const byFlag = imageArguments(['shot.png'], workspace, context);
    if ('error' in byMention || 'error' in byFlag) throw new Error('not attached');
    // Between the judgement and the run, the file becomes a link to a denied image.
    rmSync(join(workspace, 'shot.png'));
    symlinkSync(join(home, '.ssh', 'shot.png'), join(workspace, 'shot.png'));
    const sessionDir = mkdtempSync(join(home, 'session-'));
    for (const images of [byMention.images, byFlag]) {
      const stored = await attachImages(images.map((image) => ({ path: image.path, name: image.shown, bytes: image.bytes })), { dir: sessionDir, modelId: 'local/test', takesImages: true });
      if ('error' in stored) throw new Error(stored.error);
      expect(stored.map((ref) => ref.file)).toEqual([`images/${createHash('sha256').update(real).digest('hex')}.png`]);
    }
  });

  it('refuses a missing file, a folder, a file that is not an image and a denied path', () => {
    expect(imageArguments(['nope.png'], workspace, context)).toEqual({ error: '--image nope.png: no such file' });
    expect(imageArguments(['docs'], workspace, context)).toEqual({ error: '--image docs: a folder, not an image file' });
    expect(imageArguments(['notes.md'], workspace, context)).toEqual({ error: '--image notes.md: not an image (PNG, JPEG, GIF or WebP)' });
    expect(imageArguments(['~/.ssh/shot.png'], workspace, context)).toEqual({ error: "--image ~/.ssh/shot.png: the sandbox denies it (keys, credentials and fence's own data stay out of the model's reach)" });
  });
});

describe('attachToPrompts', () => {
  it('gives the --image files to the first prompt only, once each, and says what each prompt carries', () => {
    writeFileSync(join(workspace, 'other.png'), PNG_HEAD);
    const attached = attachToPrompts(['look at @shot.png', 'and now @notes.md'], ['shot.png', 'other.png'], workspace, context);
    if ('error' in attached) throw new Error(attached.error);
    expect(attached.prompts.map((prompt) => prompt.images.map((image) => image.shown))).toEqual([['shot.png', 'other.png'], []]);
    expect(attached.prompts.map(attachedSummary)).toEqual(['attached: shot.png (image), other.png (image)', 'attached: notes.md (17 B)']);
  });

  it('refuses a prompt carrying more images or text than one prompt may', () => {
    for (let i = 0; i < 21; i += 1) writeFileSync(join(workspace, `s${i}.png`), PNG_HEAD);
    const many = Array.from({ length: 21 }, (_, i) => `@s${i}.png`).join(' ');
    expect(attachToPrompts([many], [], workspace, context)).toEqual({ error: 'the prompt carries 21 images, more than the 20 one prompt may: attach fewer' });
    expect(attachToPrompts([many.replace(' @s20.png', '')], [], workspace, context)).toMatchObject({ prompts: [{ images: expect.any(Array) }] });
    const line = `${'y'.repeat(99)}\n`;
    for (let i = 0; i < 6; i += 1) writeFileSync(join(workspace, `log${i}.txt`), line.repeat(1000));
    const logs = Array.from({ length: 6 }, (_, i) => `@log${i}.txt`).join(' ');
    expect(attachToPrompt(logs, context)).toEqual({ error: 'the text files the prompt names come to 586 kB, more than the 512 kB one prompt may carry: name fewer, or let the model read them' });
    expect(attachToPrompt(logs.replace(' @log5.txt', ''), context)).toMatchObject({ texts: expect.any(Array) });
  });

  it('stops at the first file that cannot be attached, in any prompt', () => {
    expect(attachToPrompts(['fine', 'then @~/.ssh/id_rsa'], [], workspace, context)).toMatchObject({ error: expect.stringContaining('~/.ssh/id_rsa cannot be attached') });
  });
});
