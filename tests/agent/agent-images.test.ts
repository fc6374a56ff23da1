import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { Agent, type AgentOptions } from '../../src/agent/agent';
import { fitToWindow } from '../../src/agent/context-window';
import { IMAGES_PER_REQUEST, withImageData } from '../../src/agent/message-images';
import { storeImage } from '../../src/conversation/session-images';
import { createMessage, type ImageRef } from '../../src/conversation/message';
import { readTool } from '../../src/tools/read';
import { ToolRegistry } from '../../src/tools/registry';
import { useAgentRig } from '../support/agent-session';
import { fakeProvider } from '../support/fake-provider';
import { makeToolContext } from '../support/tool-context';

const rig = useAgentRig({ toolFormat: 'tool', tools: ['read'] });

async function makeAgent(options: Partial<AgentOptions> = {}) {
  const { provider, model, modelId } = await fakeProvider(rig.server, 'openai');
  const registry = new ToolRegistry([readTool]);
  return new Agent({ provider, model, modelId, registry, store: rig.store, toolContext: makeToolContext(rig.workspace), format: 'tool', ...options });
}

const png = () => sharp({ create: { width: 20, height: 10, channels: 3, background: '#abcdef' } }).png().toBuffer();

describe('Agent.run with images', () => {
  it('stores the prompt images by hash and sends them with the prompt', async () => {
    await writeFile(join(rig.workspace, 'a.png'), await png());
    rig.server.reply((r) => r.text('A light blue strip.'));
    const agent = await makeAgent();
    const outcome = await agent.run('What is this?', { images: [join(rig.workspace, 'a.png')] });
    expect(outcome).toEqual({ status: 'done', answer: 'A light blue strip.' });
    const prompt = rig.store.log.find((message) => message.role === 'user');
    const [ref] = prompt?.meta?.images ?? [];
    expect(ref).toMatchObject({ mediaType: 'image/png', width: 20, height: 10, name: join(rig.workspace, 'a.png') });
    expect(ref?.data).toBeUndefined();
    expect(existsSync(join(rig.store.dir, ref!.file))).toBe(true);
    expect(JSON.stringify(rig.server.requests[0]?.body)).toContain((await png()).toString('base64'));
  });

  it('appends and sends nothing when one image of several fails, and names it', async () => {
    await writeFile(join(rig.workspace, 'a.png'), await png());
    await writeFile(join(rig.workspace, 'b.png'), 'plain text with a png name');
    const agent = await makeAgent();
    const outcome = await agent.run('Compare.', { images: [join(rig.workspace, 'a.png'), join(rig.workspace, 'b.png')] });
    expect(outcome).toEqual({ status: 'error', error: `${join(rig.workspace, 'b.png')} is not a PNG, JPEG, GIF or WebP image.` });
    expect(rig.store.log).toEqual([]);
    expect(rig.server.requests).toEqual([]);
    expect(existsSync(join(rig.store.dir, 'images'))).toBe(false);
  });

  it('names an image as the front end does, in errors and in the log', async () => {
    await writeFile(join(rig.workspace, 'a.png'), await png());
    await writeFile(join(rig.workspace, 'b.png'), 'text');
    const agent = await makeAgent();
    const failed = await agent.run('Compare.', { images: [{ path: join(rig.workspace, 'b.png'), name: 'b.png' }] });
    expect(failed).toEqual({ status: 'error', error: 'b.png is not a PNG, JPEG, GIF or WebP image.' });
    rig.server.reply((r) => r.text('Blue.'));
    expect(await agent.run('And this?', { images: [{ path: join(rig.workspace, 'a.png'), name: 'a.png' }] })).toMatchObject({ status: 'done' });
    expect(rig.store.log.find((message) => message.role === 'user')?.meta?.images?.[0]?.name).toBe('a.png');
  });

  it('refuses any image for a model known to read text only, before anything', async () => {
    await writeFile(join(rig.workspace, 'a.png'), await png());
    const agent = await makeAgent({ images: false });
    const outcome = await agent.run('What is this?', { images: [join(rig.workspace, 'a.png')] });
    expect(outcome).toEqual({ status: 'error', error: `${join(rig.workspace, 'a.png')} cannot be attached: the model ${agent.modelId} does not take images.` });
    expect(rig.store.log).toEqual([]);
    expect(rig.server.requests).toEqual([]);
  });

  it('sends what it can when an image file of the log is gone, and says which', async () => {
    await writeFile(join(rig.workspace, 'a.png'), await png());
    const gone: ImageRef = { file: `images/${'0'.repeat(64)}.png`, mediaType: 'image/png', width: 5, height: 5, name: 'lost.png' };
    rig.store.append(createMessage('user', 'Earlier.', { meta: { images: [gone] } }));
    rig.store.append(createMessage('assistant', 'Noted.'));
    rig.server.reply((r) => r.text('Fine.'));
    const agent = await makeAgent();
    expect(await agent.run('Go on.')).toMatchObject({ status: 'done' });
    const text = JSON.stringify(rig.server.requests[0]?.body);
    expect(text).toContain('could not be read from the session folder: lost.png');
    expect(text).not.toContain('input_image');
  });

  it('leaves the images of the log out for a model switched to that reads text only, saying so', async () => {
    await writeFile(join(rig.workspace, 'a.png'), await png());
    rig.server.reply((r) => r.text('Blue.'));
    const agent = await makeAgent();
    await agent.run('What is this?', { images: [{ path: join(rig.workspace, 'a.png'), name: 'a.png' }] });
    const { provider, model, modelId } = await fakeProvider(rig.server, 'openai');
    agent.useModel({ provider, model, modelId, images: false });
    rig.server.reply((r) => r.text('Noted.'));
    expect(await agent.run('Go on.')).toMatchObject({ status: 'done' });
    const text = JSON.stringify(rig.server.requests[1]?.body);
    expect(text).not.toContain((await png()).toString('base64'));
    expect(text).toContain('Images left out, as this model does not take images: a.png.');
  });
});

describe('withImageData', () => {
  it('sends the newest 50 images and names the older ones it leaves out', () => {
    const dir = rig.store.dir;
    const refs = Array.from({ length: 52 }, (_, index) => {
      const bytes = Buffer.from(`image ${index}`);
      return storeImage(dir, { bytes, sha256: createHash('sha256').update(bytes).digest('hex'), mediaType: 'image/png', width: 1, height: 1, name: `s${index}.png` });
    });
    const messages = [
      createMessage('user', 'first', { meta: { images: refs.slice(0, 3) } }),
      createMessage('user', 'second', { meta: { images: refs.slice(3) } }),
      createMessage('assistant', 'none'),
    ];
    const sent = withImageData(messages, dir, new Map());
    expect(IMAGES_PER_REQUEST).toBe(50);
    expect(sent[1]?.meta?.images).toHaveLength(49);
    expect(sent[0]?.meta?.images?.map((image) => image.name)).toEqual(['s2.png']);
    expect(sent[0]?.content).toBe('first\n\n[Older images left out, as a request carries at most 50: s0.png, s1.png.]');
    expect(sent[0]?.meta?.images?.[0]?.data).toBe(Buffer.from('image 2').toString('base64'));
    expect(sent[2]).toBe(messages[2]);
    expect(messages[0]?.meta?.images).toHaveLength(3);
  });
});

describe('fitting images into the context window', () => {
  const image: ImageRef = { file: `images/${'1'.repeat(64)}.png`, mediaType: 'image/png', width: 1568, height: 1568, name: 'old.png' };
  const log = [
    createMessage('system', 'You are a helpful agent.'),
    createMessage('user', 'Task.'),
    createMessage('assistant', 'Reading.'),
    createMessage('system', 'old.png: PNG 1568×1568.', { meta: { toolResult: true, tool: 'read', images: [image] } }),
    ...Array.from({ length: 6 }, (_, index) => createMessage(index % 2 ? 'system' : 'assistant', `step ${index}`, index % 2 ? { meta: { toolResult: true } } : {})),
  ];
  const countTokens = (text: string) => Math.ceil(text.length / 4);

  it('counts an image by its size', () => {
    const fit = fitToWindow(log, { budget: 100_000, countTokens });
    expect(fit.tokens).toBeGreaterThan(3278);
    expect(fit.messages).toHaveLength(log.length);
  });

  it("leaves out an old result's images first, keeping its text and saying so", () => {
    const fit = fitToWindow(log, { budget: 500, countTokens });
    expect(fit.fits).toBe(true);
    expect(fit.dropped).toBe(0);
    const result = fit.messages[3];
    expect(result?.meta?.images).toBeUndefined();
    expect(result?.content).toBe('old.png: PNG 1568×1568.\n[The image of this result (old.png) was left out to fit the context window.]');
    // The log's own message is untouched.
    expect(log[3]?.meta?.images).toEqual([image]);
  });
});
