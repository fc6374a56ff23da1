import { basename } from 'node:path';
import type { Message } from '../conversation/message';
import type { ToolContext } from '../tools/define-tool';
import { visibleLine } from '../processes/visible-text';
import type { createStyle } from './terminal-style';

/** A typed prompt with the files it names taken in, as the chat runs it. */
export interface ChatPrompt {
  /** What the model reads. */
  text: string;
  /** The images the prompt carries: absolute path, how the prompt names it, and the bytes read from the judged file. */
  images: { path: string; name: string; bytes?: Buffer }[];
  /** Text files put into the prompt, as `notes.md · 2 kB` lines. */
  files: string[];
  /** Mentions that meant a file but name none, or name a folder: left as typed. */
  warnings: string[];
}

/**
 * Takes in the files a typed prompt names (`@path`, a dragged image's pasted path), with the
 * session's tool context (whose sandbox's denied paths are never attached). `{ error }` is one
 * sentence naming the file: nothing is sent and the prompt is given back for editing.
 */
export type AttachFiles = (prompt: string, toolContext: ToolContext) => ChatPrompt | { error: string };

/** The transcript's lines for what a prompt carries before the reply: warnings, then text files. */
export function attachedFileLines(prompt: ChatPrompt, style: ReturnType<typeof createStyle>): string[] {
  return [...prompt.warnings.map((line) => style.yellow(`! ${visibleLine(line)}`)), ...prompt.files.map((line) => style.dim(`[file: ${visibleLine(line)}]`))];
}

/**
 * The transcript's lines for the images a prompt message carries, once stored: `[image:
 * shot.png 1200×800]`, the size being what the model gets. Named as the prompt named them.
 */
export function attachedImageLines(message: Message, style: ReturnType<typeof createStyle>): string[] {
  return (message.meta?.images ?? []).map((image) => style.dim(`[image: ${visibleLine(image.name ?? basename(image.file))} ${image.width}×${image.height}]`));
}
