import type { ImageRef, Message } from '../conversation/message';
import { readStoredImage, storeImage } from '../conversation/session-images';
import { isPrepared, prepareImage, prepareImageBytes, type PreparedImage } from '../images/prepare-image';

/** The error when a model known to read text only is given an image: attached to a prompt, or returned by a tool (`fromTool`). */
export function noImagesError(modelId: string, name: string, fromTool = false): string {
  if (fromTool) return `${name} is an image, and the model ${modelId} does not take images.`;
  return `${name} cannot be attached: the model ${modelId} does not take images.`;
}

/**
 * Prepares the image files at `paths` (absolute; with the name messages call each by, when
 * given) and stores them in the session folder `dir`,
 * in order, for a prompt message's `meta.images`. All or nothing: the first file that fails
 * (see `prepareImage`), or any image at all when `takesImages` is false, gives `{ error }`,
 * one sentence naming the file, and nothing is stored. Never throws.
 */
export async function attachImages(
  paths: readonly (string | { path: string; name?: string; bytes?: Buffer })[],
  options: { dir: string; modelId: string; takesImages: boolean },
): Promise<ImageRef[] | { error: string }> {
  const prepared: PreparedImage[] = [];
  for (const given of paths) {
    const { path, name = path, bytes } = typeof given === 'string' ? { path: given, bytes: undefined } : given;
    if (!options.takesImages) return { error: noImagesError(options.modelId, name) };
    const image = bytes ? await prepareImageBytes(bytes, name) : await prepareImage(path, { name });
    if (!isPrepared(image)) return image;
    prepared.push(image);
  }
  return storeImages(options.dir, prepared);
}

/** Stores prepared images in the session folder `dir` (see `storeImage`). Never throws. */
export function storeImages(dir: string, images: readonly PreparedImage[]): ImageRef[] | { error: string } {
  const refs: ImageRef[] = [];
  for (const image of images) {
    try {
      refs.push(storeImage(dir, { ...image, name: image.name }));
    } catch (error) {
      return { error: `${image.name} could not be kept in the session folder (${error instanceof Error ? error.message : String(error)}).` };
    }
  }
  return refs;
}

/**
 * The messages of a request with each image's bytes read from the session folder `dir` into
 * copies of its message (`ImageRef.data`); `cache` keeps what was read, by file, for the
 * session's later requests. An image whose file is gone is left out, and its message's text
 * says so; with `takesImages` false (the session switched to a model that reads text only),
 * every image is, and the text says that; beyond the newest `IMAGES_PER_REQUEST`, older ones
 * are, saying so. Messages without images are the same objects.
 * Never throws.
 */
export function withImageData(messages: readonly Message[], dir: string, cache: Map<string, string>, takesImages = true): Message[] {
  // The newest images are sent, at most IMAGES_PER_REQUEST: counted from the end.
  let room = IMAGES_PER_REQUEST;
  const out = messages.slice();
  for (let index = out.length - 1; index >= 0; index--) {
    const message = out[index];
    const images = message?.meta?.images;
    if (message === undefined || !images || images.length === 0) continue;
    const names = (list: readonly ImageRef[]) => list.map((image) => image.name ?? image.file).join(', ');
    if (!takesImages) {
      const note = `\n\n[Images left out, as this model does not take images: ${names(images)}.]`;
      out[index] = { ...message, content: `${message.content}${note}`, meta: { ...message.meta, images: [] } };
      continue;
    }
    const kept = images.slice(Math.max(0, images.length - room));
    room -= kept.length;
    const over = images.slice(0, images.length - kept.length);
    const overNote = over.length === 0 ? '' : `\n\n[Older images left out, as a request carries at most ${IMAGES_PER_REQUEST}: ${names(over)}.]`;
    out[index] = loaded({ ...message, content: `${message.content}${overNote}` }, kept, dir, cache);
  }
  return out;
}

/** The most images one request carries (Anthropic's API takes up to 100): older ones are left out. */
export const IMAGES_PER_REQUEST = 50;

/** `message` carrying `images` with their bytes, and a line for those whose file is gone. */
function loaded(message: Message, images: readonly ImageRef[], dir: string, cache: Map<string, string>): Message {
  const found: ImageRef[] = [];
  const missing: string[] = [];
  for (const image of images) {
    let data = cache.get(image.file);
    if (data === undefined) {
      data = readStoredImage(dir, image);
      if (data !== undefined) cache.set(image.file, data);
    }
    if (data === undefined) missing.push(image.name ?? image.file);
    else found.push({ ...image, data });
  }
  const note = missing.length === 0 ? '' : `\n\n[An image of this message could not be read from the session folder: ${missing.join(', ')}.]`;
  return { ...message, content: `${message.content}${note}`, meta: { ...message.meta, images: found } };
}
