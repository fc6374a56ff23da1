import { closeSync, constants, fstatSync, openSync, readlinkSync, readSync, statSync } from 'node:fs';
import { basename, extname, isAbsolute, join, relative, resolve } from 'node:path';
import { IMAGE_FILE_LIMIT_BYTES } from '../images/prepare-image';
import { isReplaced, isWithin, realPathOf, withRealPaths, type SandboxPolicy } from '../os-sandbox/policy';
import type { AttachFiles } from '../tui/chat-attachments';
import { findAttachmentTokens, wholePromptPath, type AttachmentToken, type TokenReading } from './attachment-tokens';

/**
 * The files a prompt attaches: `@path` of an image or a text file, and an image file dragged
 * onto the terminal (its path pasted). Images go to the model as images, by absolute path (the
 * agent stores and scales them); a text file's content is put after the prompt in a fenced
 * block headed by its path. The person's own view of the files counts (the host's `/tmp`, not
 * the sandbox's), except that a path the sandbox denies, or one under `/proc`, is never
 * attached (see `deniedCheck`): a prompt may come from a file, a pipe or a script, and what a
 * credential store holds must not reach the model because a prompt named it.
 */

/** Most bytes of a text file put into a prompt; a longer file is cut there, with a note. */
export const TEXT_ATTACHMENT_BYTES = 100 * 1024;
/** Most bytes of text files one prompt carries in all: a prompt naming more is refused, not sent at great cost. */
export const PROMPT_TEXT_ATTACHMENTS_BYTES = 512 * 1024;
/** Most images one prompt carries. */
export const PROMPT_IMAGES = 20;

/** File name extensions of images: a file named so is an image even if its bytes say otherwise (a broken one is reported as such). */
const IMAGE_EXTENSIONS = new Set(['.png', '.jpg', '.jpeg', '.gif', '.webp', '.bmp', '.tif', '.tiff', '.heic', '.heif', '.avif']);

/** An image attached to a prompt. */
export interface AttachedImage {
  /** Absolute path on the host. */
  path: string;
  /** How the prompt names it: relative to the workspace when inside it, `~/…` in the home folder, else absolute. */
  shown: string;
  /**
   * Its bytes, read from the file that was judged by its real path (up to one byte past the
   * image size cap, so an oversized file is still refused as such): the run prepares these,
   * never opening the path again, so a file swapped in after the judgement is never sent.
   */
  bytes: Buffer;
}

/** A text file whose content was put into a prompt. */
export interface AttachedText {
  path: string;
  shown: string;
  /** The file's size in bytes. */
  size: number;
  /** Whether only its first `TEXT_ATTACHMENT_BYTES` went in. */
  cut: boolean;
}

/** A prompt with its attachments taken in. */
export interface AttachedPrompt {
  /** What the model reads: mentions replaced (`[image: shot.png]`, `notes.md`), text files' content after the prompt. */
  text: string;
  /** Images for `agent.run(text, { images })`, in the order named, each once. */
  images: AttachedImage[];
  texts: AttachedText[];
  /** Lines for the person: a mention that looked like a file but names none, or names a folder. */
  warnings: string[];
}

/** Where paths are read from and what the sandbox denies. */
export interface AttachContext {
  /** Mentions' relative paths start here. */
  workspace: string;
  /** `~/` means this folder. */
  home: string;
  /** The session's sandbox: its denied paths are never attached. Absent or `off`: nothing is denied. */
  policy?: SandboxPolicy;
}

/**
 * Takes in the files `prompt` attaches (see the file's comment). A mention of a missing file is
 * left as typed (`@user` is prose), with a warning when it clearly meant a file (a path prefix,
 * an extension, quotes or escapes); a pasted path that is not an image file is left as typed,
 * silently. Returns `{ error }` — one sentence naming the file, nothing attached — for a file
 * that is named but cannot be attached: unreadable, denied by the sandbox, binary and not an
 * image. Reads only the files named, and a text file only up to the cap.
 */
export function attachToPrompt(prompt: string, context: AttachContext): AttachedPrompt | { error: string } {
  const denied = deniedCheck(context.policy);
  const images = new Map<string, AttachedImage>();
  const texts = new Map<string, AttachedText & { content: string }>();
  const warnings: string[] = [];
  let text = '';
  let copied = 0;
  for (const token of tokensOf(prompt, context)) {
    const found = findFile(token, context);
    if (!found) {
      const last = token.readings.at(-1);
      if (token.kind === 'mention' && last && meantFile(last.path, token.deliberate)) warnings.push(`@${last.path}: no such file; left in the prompt as typed`);
      continue;
    }
    const { reading, path, shown, kind } = found;
    if (kind === 'folder') {
      if (token.kind === 'mention') warnings.push(`@${reading.path}: a folder; only files are attached, so it is left as typed`);
      continue;
    }
    const imageNamed = IMAGE_EXTENSIONS.has(extname(path).toLowerCase());
    if (kind !== 'file') {
      if (token.kind === 'mention' || imageNamed) return { error: `${shown} cannot be attached: ${kind}` };
      continue;
    }
    // Judged before a byte is read; a pasted path that does not say it is an image stays the person's text.
    const refusal = denied(path);
    if (refusal) {
      if (token.kind === 'mention' || imageNamed) return { error: `${shown} cannot be attached: ${refusal}` };
      continue;
    }
    const opened = openJudged(path, denied);
    if ('error' in opened) {
      if (token.kind === 'mention' || imageNamed) return { error: `${shown} cannot be attached: ${opened.error}` };
      continue;
    }
    let read: (AttachedText & { content: string }) | { error: string } | undefined;
    let isImage: boolean;
    let imageBytes: Buffer | undefined;
    try {
      isImage = imageNamed || startsAsImage(readStart(opened.fd, 12));
      if (!isImage && token.kind === 'mention') read = texts.get(path) ?? readText(opened, path, shown);
      if (isImage && !images.has(path)) imageBytes = readImageBytes(opened);
    } finally {
      closeSync(opened.fd);
    }
    if (token.kind === 'pasted' && !isImage) continue;
    let mention: string;
    if (read === undefined) {
      if (imageBytes) images.set(path, { path, shown, bytes: imageBytes });
      mention = `[image: ${shown}]`;
    } else {
      if ('error' in read) return read;
      texts.set(path, read);
      mention = shown;
    }
    text += prompt.slice(copied, token.start) + mention;
    copied = reading.end;
  }
  text += prompt.slice(copied);
  const textBytes = [...texts.values()].reduce((sum, file) => sum + Buffer.byteLength(file.content), 0);
  if (textBytes > PROMPT_TEXT_ATTACHMENTS_BYTES) {
    return { error: `the text files the prompt names come to ${kilobytes(textBytes)}, more than the ${kilobytes(PROMPT_TEXT_ATTACHMENTS_BYTES)} one prompt may carry: name fewer, or let the model read them` };
  }
  for (const file of texts.values()) text += `\n\n${fencedContent(file)}`;
  return {
    text,
    images: [...images.values()],
    texts: [...texts.values()].map(({ content: _content, ...file }) => file),
    warnings,
  };
}

/**
 * The images of `--image FILE` options, relative to `cwd` (the shell's folder, where the person
 * completed the path). Returns `{ error }` naming the first that is missing, unreadable, denied
 * by the sandbox, or not an image.
 */
export function imageArguments(files: readonly string[], cwd: string, context: AttachContext): AttachedImage[] | { error: string } {
  const denied = deniedCheck(context.policy);
  const images: AttachedImage[] = [];
  for (const file of files) {
    const path = resolve(cwd, expandHome(file, context.home));
    const shown = shownPath(path, context);
    const kind = fileKind(path);
    if (kind === 'missing') return { error: `--image ${file}: no such file` };
    if (kind === 'folder') return { error: `--image ${file}: a folder, not an image file` };
    if (kind !== 'file') return { error: `--image ${file}: ${kind}` };
    const refusal = denied(path);
    if (refusal) return { error: `--image ${file}: ${refusal}` };
    if (images.some((image) => image.path === path)) continue;
    const opened = openJudged(path, denied);
    if ('error' in opened) return { error: `--image ${file}: ${opened.error}` };
    let bytes: Buffer | undefined;
    try {
      if (IMAGE_EXTENSIONS.has(extname(path).toLowerCase()) || startsAsImage(readStart(opened.fd, 12))) bytes = readImageBytes(opened);
    } finally {
      closeSync(opened.fd);
    }
    if (!bytes) return { error: `--image ${file}: not an image (PNG, JPEG, GIF or WebP)` };
    images.push({ path, shown, bytes });
  }
  return images;
}

/**
 * The tokens of `prompt`: the whole prompt as one path when it names an image file that way
 * (see `wholePromptPath`), else those `findAttachmentTokens` finds.
 */
function tokensOf(prompt: string, context: AttachContext): AttachmentToken[] {
  const whole = wholePromptPath(prompt);
  const found = whole && findFile(whole, context);
  if (whole && found?.kind === 'file' && IMAGE_EXTENSIONS.has(extname(found.path).toLowerCase())) return [whole];
  return findAttachmentTokens(prompt);
}

/** The first reading of `token` that names something on disk, with its absolute path. */
function findFile(token: AttachmentToken, context: AttachContext): { reading: TokenReading; path: string; shown: string; kind: FileKind } | undefined {
  for (const reading of token.readings) {
    const expanded = expandHome(reading.path, context.home);
    const path = isAbsolute(expanded) ? resolve(expanded) : resolve(context.workspace, expanded);
    const kind = fileKind(path);
    if (kind === 'missing') continue;
    return { reading, path, shown: shownPath(path, context), kind };
  }
  return undefined;
}

/** What is at a path (links followed): a file, a folder, nothing, or else a few words saying what (`not a regular file`, `permission denied`). */
type FileKind = 'file' | 'folder' | 'missing' | (string & {});

function fileKind(path: string): FileKind {
  try {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) return 'missing';
    if (stat.isDirectory()) return 'folder';
    return stat.isFile() ? 'file' : 'not a regular file';
  } catch (error) {
    return describeFailure(error);
  }
}

/** Whether a mention of a missing `path` clearly meant a file, so saying so is worth a line. */
function meantFile(path: string, deliberate: boolean): boolean {
  return deliberate || /^(\.{0,2}\/|~\/)/.test(path) || /\.[A-Za-z0-9]{1,8}$/.test(basename(path));
}

function expandHome(path: string, home: string): string {
  return path === '~' || path.startsWith('~/') ? join(home, path.slice(1)) : path;
}

function shownPath(path: string, context: AttachContext): string {
  if (isWithin(path, context.workspace) && path !== context.workspace) return relative(context.workspace, path);
  if (isWithin(path, context.home) && path !== context.home) return `~/${relative(context.home, path)}`;
  return path;
}

/** Whether `head` (a file's first bytes) is that of a PNG, JPEG, GIF or WebP image. */
function startsAsImage(head: Buffer): boolean {
  const starts = (offset: number, ...bytes: number[]) => bytes.every((byte, i) => head[offset + i] === byte);
  return (
    starts(0, 0x89, 0x50, 0x4e, 0x47) || starts(0, 0xff, 0xd8, 0xff) || starts(0, 0x47, 0x49, 0x46, 0x38) || (starts(0, 0x52, 0x49, 0x46, 0x46) && starts(8, 0x57, 0x45, 0x42, 0x50))
  );
}

/** A regular file held open, judged by the sandbox as the file it is (see `openJudged`). */
interface JudgedFile {
  fd: number;
  size: number;
}

/**
 * Opens `path` and judges the file opened, not the path: its real path as the kernel names it
 * (`/proc/self/fd`), so a link swapped in after the path was checked (by a process the model
 * left running) leads nowhere `refusal` refuses. Without `/proc`, the path's real path now,
 * which must be the same file (device and inode). Non-blocking: a named pipe swapped in never
 * holds the open. Returns why it cannot be read otherwise; the caller closes `fd`.
 */
function openJudged(path: string, refusal: (path: string) => string | undefined): JudgedFile | { error: string } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return { error: describeFailure(error) };
  }
  const fail = (error: string) => {
    closeSync(fd);
    return { error };
  };
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return fail('not a regular file');
    let real: string;
    try {
      real = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      real = realPathOf(path);
      const now = statSync(real, { throwIfNoEntry: false });
      if (now?.dev !== stat.dev || now.ino !== stat.ino) return fail('it changed while it was opened');
    }
    const refused = refusal(real);
    return refused ? fail(refused) : { fd, size: stat.size };
  } catch (error) {
    return fail(describeFailure(error));
  }
}

/** Up to `length` bytes from the start of an open file. */
/** The bytes of an opened image file, up to one past the image size cap (see `AttachedImage.bytes`). */
function readImageBytes(file: JudgedFile): Buffer {
  return readStart(file.fd, Math.min(file.size, IMAGE_FILE_LIMIT_BYTES + 1));
}

function readStart(fd: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  return buffer.subarray(0, readSync(fd, buffer, 0, length, 0));
}

/**
 * The content of an opened text file, cut at `TEXT_ATTACHMENT_BYTES`, or why it cannot be
 * attached (binary, not UTF-8).
 */
function readText(file: JudgedFile, path: string, shown: string): (AttachedText & { content: string }) | { error: string } {
  const bytes = readStart(file.fd, Math.min(file.size, TEXT_ATTACHMENT_BYTES));
  const cut = file.size > bytes.length;
  if (bytes.includes(0)) return { error: `${shown} cannot be attached: it is binary, and only text files and images (PNG, JPEG, GIF, WebP) are` };
  let content: string;
  try {
    // `stream`: a character cut in two at the cap is left out, not taken for bad text.
    content = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: cut });
  } catch {
    return { error: `${shown} cannot be attached: it is not UTF-8 text, and only text files and images (PNG, JPEG, GIF, WebP) are` };
  }
  if (cut) {
    const lastLine = content.lastIndexOf('\n');
    if (lastLine > 0) content = content.slice(0, lastLine + 1);
  }
  return { path, shown, size: file.size, cut, content };
}

/** A text file's content as a fenced block headed by its path, with a note when it was cut. */
function fencedContent(file: AttachedText & { content: string }): string {
  const longest = Math.max(2, ...[...file.content.matchAll(/`+/g)].map((run) => run[0].length));
  const fence = '`'.repeat(longest + 1);
  const body = file.content.endsWith('\n') || file.content === '' ? file.content : `${file.content}\n`;
  const note = file.cut ? `\n[${file.shown} is cut: above are its first ${kilobytes(Buffer.byteLength(file.content))} of ${kilobytes(file.size)}; read the file for the rest]` : '';
  return `${fence}${file.shown}\n${body}${fence}${note}`;
}

/** A file size for people: `312 B`, `14 kB`. */
function kilobytes(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${Math.round(bytes / 1024)} kB`;
}

/** A file system error as a few words: `permission denied`, `no such file`, else its code. */
function describeFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'ENOENT') return 'no such file';
  if (code === 'ELOOP') return 'a loop of links';
  return code ?? (error instanceof Error ? error.message : String(error));
}

/** Why a path in a denied one is refused. */
const DENIED = "the sandbox denies it (keys, credentials and fence's own data stay out of the model's reach)";
/** Why a path in a host folder the sandbox hides is refused. */
const HIDDEN = "fence attaches nothing from /proc or /run (they hold fence's own environment and the host's sockets, which the sandbox hides from the model)";

/**
 * Why `path` may not be attached, as written or where its links lead, or undefined: a path the
 * sandbox denies (credential stores, fence's own data, the user's own denials), and anything
 * under `/proc` (fence's own `environ` holds the provider keys the sandbox keeps from the
 * model) or, in a sandbox, another host folder it hides (`/run`). The host's `/tmp` stays
 * open: the person names their own files, and a screenshot tool may save there.
 */
function deniedCheck(policy: SandboxPolicy | undefined): (path: string) => string | undefined {
  const sandboxed = policy !== undefined && policy.mode !== 'off' ? policy : undefined;
  let resolved: SandboxPolicy | undefined;
  return (path) => {
    const paths = [path, realPathOf(path)];
    const hidden = (candidate: string) => isWithin(candidate, '/proc') || (sandboxed !== undefined && !isWithin(candidate, '/tmp') && isReplaced(sandboxed, candidate));
    if (paths.some(hidden)) return HIDDEN;
    if (sandboxed === undefined) return undefined;
    resolved ??= withRealPaths(sandboxed);
    const rules = resolved;
    const denied = (candidate: string) => !rules.readable.some((root) => isWithin(candidate, root)) && rules.denied.some((root) => isWithin(candidate, root));
    return paths.some(denied) ? DENIED : undefined;
  };
}

/** A prompt ready for `agent.run(text, { images })`. */
export interface PromptToRun {
  text: string;
  /** The images it carries, in order, each once. */
  images: AttachedImage[];
  /** The text files put into it. */
  texts: AttachedText[];
}

/**
 * The command line's prompts with their attachments taken in (see `attachToPrompt`), the
 * `--image` files (see `imageArguments`) carried by the first. Returns `{ error }` for the
 * first file that cannot be attached, before any prompt runs.
 */
export function attachToPrompts(prompts: readonly string[], imageFiles: readonly string[], cwd: string, context: AttachContext): { prompts: PromptToRun[]; warnings: string[] } | { error: string } {
  const flagged = imageArguments(imageFiles, cwd, context);
  if ('error' in flagged) return flagged;
  const ready: PromptToRun[] = [];
  const warnings: string[] = [];
  for (const [index, prompt] of prompts.entries()) {
    const attached = attachToPrompt(prompt, context);
    if ('error' in attached) return attached;
    warnings.push(...attached.warnings);
    const images = index === 0 ? [...attached.images, ...flagged.filter((image) => !attached.images.some((own) => own.path === image.path))] : attached.images;
    if (images.length > PROMPT_IMAGES) return { error: `the prompt carries ${images.length} images, more than the ${PROMPT_IMAGES} one prompt may: attach fewer` };
    ready.push({ text: attached.text, images, texts: attached.texts });
  }
  return { prompts: ready, warnings };
}

/**
 * The chat's `attach` (see `AttachFiles`): each prompt's files taken in with the session's
 * sandbox, the `--image` files added to the first prompt that is not refused.
 */
export function chatAttachments(imageFiles: readonly string[], cwd: string, where: Omit<AttachContext, 'policy'>): AttachFiles {
  let pending = imageFiles;
  return (prompt, toolContext) => {
    const context = { ...where, ...(toolContext.sandboxPolicy ? { policy: toolContext.sandboxPolicy } : {}) };
    const attached = attachToPrompts([prompt], pending, cwd, context);
    if ('error' in attached) return attached;
    pending = [];
    const ready = attached.prompts[0] ?? { text: prompt, images: [], texts: [] };
    return {
      text: ready.text,
      images: ready.images.map((image) => ({ path: image.path, name: image.shown, bytes: image.bytes })),
      files: ready.texts.map((file) => `${file.shown} · ${sizeNote(file)}`),
      warnings: attached.warnings,
    };
  };
}

/** One line saying what a prompt carries (`attached: shot.png (image), notes.md (2 kB)`), or undefined when nothing. */
export function attachedSummary(prompt: PromptToRun): string | undefined {
  const parts = [
    ...prompt.images.map((image) => `${image.shown} (image)`),
    ...prompt.texts.map((file) => `${file.shown} (${sizeNote(file)})`),
  ];
  return parts.length > 0 ? `attached: ${parts.join(', ')}` : undefined;
}

/** How much of a text file went in: `2 kB`, or `first 100 kB of 293 kB`. */
function sizeNote(file: AttachedText): string {
  return file.cut ? `first ${kilobytes(TEXT_ATTACHMENT_BYTES)} of ${kilobytes(file.size)}` : kilobytes(file.size);
}
