import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkToolCallPairing, type RecordedRequest, type WireItem, type WireMessage } from '../support/fake-llm';
import { inputItems } from '../support/fake-llm-wire';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

/** A real PNG small enough to be sent as it is. */
let png: Buffer;
/** A real PNG far over the 1568 px long edge, with noise so it does not compress to nothing. */
let largePng: Buffer;

beforeAll(async () => {
  png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#2060c0' } }).png().toBuffer();
  largePng = await sharp({ create: { width: 3200, height: 1600, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 30 } } })
    .png()
    .toBuffer();
});

const FORMATS = ['markdown', 'tool'] as const;
const PROVIDERS = [
  { api: 'anthropic', model: 'anthropic/claude-test', env: () => ({ ANTHROPIC_BASE_URL: cli.server.url, ANTHROPIC_API_KEY: 'test-key' }) },
  { api: 'chat', model: 'local/test', env: () => ({}) },
  { api: 'responses', model: 'openai/gpt-test', env: () => ({}) },
] as const;

/** Has the fake model read `path` (in `format`), then answer `Seen.`. */
function scriptRead(path: string, format: 'markdown' | 'tool'): void {
  if (format === 'tool') cli.server.reply((r) => r.text('Looking.').toolCall('read', { path }, 'call_img'));
  else cli.server.reply((r) => r.text(`Looking.\n\`\`\`read ${path}\n\`\`\`\n`));
  cli.server.reply((r) => r.text('Seen.'));
}

function fence(model: string, format: string, prompt: string, env: Record<string, string> = {}, extra: string[] = []) {
  return runFence(['-n', '-m', model, '--tool-format', format, ...extra, prompt], { cwd: cli.dirs.workspace, env: { ...cli.env(), ...env } });
}

/** The base64 images of a request in the shape each API takes, with where each one sits. */
function sentImages(request: RecordedRequest): { where: string; mediaType: string; data: string }[] {
  const found: { where: string; mediaType: string; data: string }[] = [];
  const fromDataUrl = (url: unknown, where: string) => {
    const match = /^data:(image\/[a-z]+);base64,(.*)$/.exec(String(url));
    if (match) found.push({ where, mediaType: match[1] as string, data: match[2] as string });
  };
  if (request.format === 'anthropic') {
    for (const message of request.body.messages ?? []) {
      for (const block of blocks(message.content)) {
        if (block.type === 'image' && block.source) found.push({ where: `${message.role}`, mediaType: block.source.media_type, data: block.source.data });
        if (block.type === 'tool_result') {
          for (const inner of blocks(block.content)) {
            if (inner.type === 'image' && inner.source) found.push({ where: 'tool_result', mediaType: inner.source.media_type, data: inner.source.data });
          }
        }
      }
    }
  } else if (request.format === 'openai') {
    for (const message of request.body.messages ?? []) {
      for (const part of blocks(message.content)) if (part.type === 'image_url' && typeof part.image_url === 'object') fromDataUrl(part.image_url.url, message.role);
    }
  } else {
    for (const item of inputItems(request.body)) {
      const where = item.type === 'function_call_output' ? 'function_call_output' : String(item.role);
      for (const part of blocks(item.type === 'function_call_output' ? item.output : item.content)) {
        if (part.type === 'input_image') fromDataUrl(part.image_url, where);
      }
    }
  }
  return found;
}

/** A content block or part of any of the three APIs (only the fields looked at). */
interface Part {
  type?: string;
  text?: string;
  tool_use_id?: string;
  content?: unknown;
  /** Anthropic's image block. */
  source?: { media_type: string; data: string };
  /** Chat Completions: an object with the URL; Responses: the URL itself. */
  image_url?: { url?: string } | string;
}
function blocks(content: unknown): Part[] {
  return Array.isArray(content) ? (content as Part[]) : [];
}

describe('read of an image file', () => {
  for (const provider of PROVIDERS) {
    for (const format of FORMATS) {
      it(`gives a ${provider.api} model the image itself (${format} tool format)`, async () => {
        writeFileSync(join(cli.dirs.workspace, 'shot.png'), png);
        scriptRead('shot.png', format);
        const result = await fence(provider.model, format, 'what is in shot.png?', provider.env());
        expect(result.stderr).not.toMatch(/\n\s+at /);
        expect(result.exitCode, result.stderr).toBe(0);
        expect(result.stdout).toBe('Seen.');
        const [first, second] = cli.server.requests;
        expect(sentImages(first!)).toEqual([]);
        expect(checkToolCallPairing(second!)).toEqual([]);
        const images = sentImages(second!);
        expect(images).toEqual([{ where: expect.any(String), mediaType: 'image/png', data: png.toString('base64') }]);
        const text = JSON.stringify(second!.body);
        expect(text).toContain('shot.png: PNG 64×48.');
        // The bytes are never sent as text.
        expect(text).not.toContain('\\u0089PNG');

        if (provider.api === 'anthropic') {
          const messages = second!.body.messages as WireMessage[];
          const last = messages.at(-1)!;
          expect(last.role).toBe('user');
          if (format === 'tool') {
            expect(images[0]?.where).toBe('tool_result');
            expect(blocks(last.content)[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'call_img' });
          } else {
            // The result is user-side text, its image in the same user turn, after it.
            const types = blocks(last.content).map((block) => block.type);
            expect(types.slice(-2)).toEqual(['text', 'image']);
            expect(blocks(last.content).at(-2)?.text).toContain('shot.png: PNG 64×48.');
          }
        }
        if (provider.api === 'chat') {
          const messages = second!.body.messages as WireMessage[];
          const last = messages.at(-1)!;
          expect(last.role).toBe('user');
          expect(images[0]?.where).toBe('user');
          if (format === 'tool') {
            // The tool message answers the call with text; the image follows it in a user message.
            const tool = messages.at(-2)!;
            expect(tool).toMatchObject({ role: 'tool', tool_call_id: 'call_img' });
            expect(String(tool.content)).toContain('shot.png: PNG 64×48.');
            expect(blocks(last.content)[0]?.text).toContain('call_img');
          } else {
            expect(blocks(last.content)[0]?.text).toContain('shot.png: PNG 64×48.');
          }
        }
        if (provider.api === 'responses') {
          const items = inputItems(second!.body);
          if (format === 'tool') {
            expect(images[0]?.where).toBe('function_call_output');
            const output = items.find((item: WireItem) => item.type === 'function_call_output');
            expect(output).toMatchObject({ call_id: 'call_img' });
            expect(blocks(output?.output)[0]).toEqual({ type: 'input_text', text: expect.stringContaining('shot.png: PNG 64×48.') });
          } else {
            expect(images[0]?.where).toBe('user');
          }
        }
      });
    }
  }

  it('gives a program the line only: programs never see pixels', async () => {
    writeFileSync(join(cli.dirs.workspace, 'shot.png'), png);
    cli.server.reply((r) => r.text('```ptc\n// intent: look at the shot\nconst line = await read({ path: "shot.png" });\nprint(typeof line, line);\n```\n'));
    cli.server.reply((r) => r.text('Seen.'));
    const result = await fence('local/test', 'markdown', 'look');
    expect(result.exitCode, result.stderr).toBe(0);
    const second = cli.server.requests[1]!;
    expect(sentImages(second)).toEqual([]);
    expect(JSON.stringify(second.body)).toContain('string shot.png: PNG 64×48.');
    const log = readOnlySessionLog(cli.dirs.home);
    expect(log.some((message) => message.meta?.images)).toBe(false);
  });

  it('scales a large image down before it is sent, and says so', async () => {
    writeFileSync(join(cli.dirs.workspace, 'big.png'), largePng);
    scriptRead('big.png', 'tool');
    const result = await fence('anthropic/claude-test', 'tool', 'look', PROVIDERS[0].env());
    expect(result.exitCode, result.stderr).toBe(0);
    const [image] = sentImages(cli.server.requests[1]!);
    expect(image).toBeDefined();
    const sent = await sharp(Buffer.from(image!.data, 'base64')).metadata();
    expect(Math.max(sent.width ?? 0, sent.height ?? 0)).toBe(1568);
    expect(sent.width! / sent.height!).toBeCloseTo(2, 1);
    expect(Buffer.from(image!.data, 'base64').length).toBeLessThanOrEqual(3_750_000);
    expect(JSON.stringify(cli.server.requests[1]!.body)).toContain('big.png: PNG 3200×1600, sent scaled to 1568×784');
  });

  it('answers a damaged PNG with a clear error result and sends no image', async () => {
    writeFileSync(join(cli.dirs.workspace, 'broken.png'), png.subarray(0, Math.floor(png.length / 2)));
    scriptRead('broken.png', 'tool');
    const result = await fence('local/test', 'tool', 'look');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.exitCode, result.stderr).toBe(0);
    const second = cli.server.requests[1]!;
    expect(sentImages(second)).toEqual([]);
    const tool = (second.body.messages as WireMessage[]).find((message) => message.role === 'tool');
    expect(String(tool?.content)).toContain('broken.png cannot be read as a PNG image: the file is damaged or incomplete.');
    const log = readOnlySessionLog(cli.dirs.home);
    expect(log.find((message) => message.meta?.toolResult)?.meta).toMatchObject({ isError: true });
  });

  it('tells a model known to read text only that it cannot take the image, and sends none', async () => {
    writeFileSync(join(cli.dirs.workspace, 'shot.png'), png);
    scriptRead('shot.png', 'tool');
    const result = await fence('openai/o3-mini', 'tool', 'look');
    expect(result.exitCode, result.stderr).toBe(0);
    const second = cli.server.requests[1]!;
    expect(sentImages(second)).toEqual([]);
    const output = inputItems(second.body).find((item) => item.type === 'function_call_output');
    expect(String(output?.output)).toBe('shot.png is an image, and the model openai/o3-mini does not take images.');
    expect(readdirSync(join(cli.dirs.home, 'sessions', readdirSync(join(cli.dirs.home, 'sessions'))[0]!))).not.toContain('images');
  });

  it('keeps the image in the session folder by hash, the log small, and sends it again on --resume', async () => {
    writeFileSync(join(cli.dirs.workspace, 'big.png'), largePng);
    scriptRead('big.png', 'markdown');
    const first = await fence('local/test', 'markdown', 'look');
    expect(first.exitCode, first.stderr).toBe(0);
    const [id] = readdirSync(join(cli.dirs.home, 'sessions'));
    const folder = join(cli.dirs.home, 'sessions', id!);
    const log = readFileSync(join(folder, 'conversation.jsonl'), 'utf8');
    const sent = sentImages(cli.server.requests[1]!)[0]!;
    expect(log.length).toBeLessThan(20_000);
    expect(log).not.toContain(sent.data.slice(0, 200));
    expect(log).not.toMatch(/[A-Za-z0-9+/]{1000}/);
    const result = readOnlySessionLog(cli.dirs.home).find((message) => message.meta?.toolResult);
    expect(result?.meta?.images).toEqual([
      { file: expect.stringMatching(/^images\/[0-9a-f]{64}\.png$/), mediaType: 'image/png', width: 1568, height: 784, name: 'big.png' },
    ]);
    const stored = join(folder, result!.meta!.images![0]!.file);
    expect(readFileSync(stored).toString('base64')).toBe(sent.data);
    expect(statSync(stored).mode & 0o777).toBe(0o600);

    cli.server.reply((r) => r.text('Still seen.'));
    const resumed = await runFence(['-m', 'local/test', '-n', '--resume', id!, 'and now?'], { cwd: cli.dirs.workspace, env: cli.env() });
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    expect(resumed.stdout).toBe('Still seen.');
    expect(sentImages(cli.server.requests.at(-1)!)).toEqual([{ where: 'user', mediaType: 'image/png', data: sent.data }]);
  });
});

describe('an image attached to a prompt', () => {
  it('is refused before any request for a model known to read text only, and nothing is logged', async () => {
    writeFileSync(join(cli.dirs.workspace, 'shot.png'), png);
    const result = await fence('openai/o3-mini', 'markdown', 'what is in @shot.png?');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toMatch(/the model openai\/o3-mini does not take images; session /);
    expect(cli.server.requests).toEqual([]);
    const sessions = join(cli.dirs.home, 'sessions');
    for (const id of readdirSync(sessions)) {
      const log = readFileSync(join(sessions, id, 'conversation.jsonl'), 'utf8');
      expect(log).not.toContain('what is in');
    }
  });

  it('is refused for a model the configuration says reads text only (images = false)', async () => {
    const xdg = join(dirname(cli.dirs.workspace), 'xdg');
    mkdirSync(join(xdg, 'fence'), { recursive: true });
    writeFileSync(join(xdg, 'fence', 'config.toml'), '[models."local/test"]\nimages = false\n');
    writeFileSync(join(cli.dirs.workspace, 'shot.png'), png);
    const result = await fence('local/test', 'markdown', 'what is in @shot.png?', { XDG_CONFIG_HOME: xdg });
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain('the model local/test does not take images');
    expect(cli.server.requests).toEqual([]);
    // Without that line the same model is taken to read images.
    writeFileSync(join(xdg, 'fence', 'config.toml'), '');
    cli.server.reply((r) => r.text('Blue.'));
    const taken = await fence('local/test', 'markdown', 'what is in @shot.png?', { XDG_CONFIG_HOME: xdg });
    expect(taken.exitCode, taken.stderr).toBe(0);
    expect(sentImages(cli.server.requests[0]!)).toHaveLength(1);
  });

  it('goes to a model that takes images, referred to in the log', async () => {
    writeFileSync(join(cli.dirs.workspace, 'shot.png'), png);
    cli.server.reply((r) => r.text('Blue.'));
    const result = await fence('openai/gpt-5', 'markdown', 'what is in @shot.png?');
    expect(result.exitCode, result.stderr).toBe(0);
    expect(sentImages(cli.server.requests[0]!)).toEqual([{ where: 'user', mediaType: 'image/png', data: png.toString('base64') }]);
  });
});
