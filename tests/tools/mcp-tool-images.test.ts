import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { McpCallResult } from '../../src/processes/mcp-connection';
import { createMcpTools, type McpCaller } from '../../src/tools/mcp-tool';
import { makeToolContext, useTempWorkspace } from '../support/tool-context';

const workspace = useTempWorkspace('fence-mcp-images-');

async function call(result: McpCallResult, callers: ('direct' | 'program')[] = ['direct']) {
  const connection: McpCaller = { callTool: async () => result };
  const [spec] = createMcpTools('browser', { command: 'x', args: [], callers } as never, connection, [{ name: 'screenshot', inputSchema: { type: 'object' } }]);
  return spec!.execute(spec!.parameters.parse({}), makeToolContext(workspace()));
}

describe('an MCP tool that answers with images', () => {
  it('gives the model each image, named in the text where it was', async () => {
    const png = await sharp({ create: { width: 30, height: 20, channels: 3, background: '#102030' } }).png().toBuffer();
    const result = await call({
      content: [
        { type: 'text', text: 'The page:' },
        { type: 'image', data: png.toString('base64'), mimeType: 'image/png' },
      ],
    });
    expect(result.output).toBe('The page:\nscreenshot image 1: PNG 30×20.');
    expect(result.value).toBe('The page:\nscreenshot image 1: PNG 30×20.');
    expect(result.images).toHaveLength(1);
    expect(result.images?.[0]?.bytes.equals(png)).toBe(true);
  });

  it('says why an image a server sent cannot be shown, and sends none of it', async () => {
    const bomb = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    const result = await call({ content: [{ type: 'image', data: bomb.toString('base64'), mimeType: 'image/png' }, { type: 'image', data: 'bm90IGFuIGltYWdl', mimeType: 'image/png' }] });
    expect(result.output).toBe(
      ['screenshot image 1 cannot be read as a PNG image: the file is damaged or incomplete.', 'screenshot image 2 is not a PNG, JPEG, GIF or WebP image.'].join('\n'),
    );
    expect(result.images).toBeUndefined();
  });

  it('keeps a failed call as text, images named in brackets', async () => {
    const result = await call({ content: [{ type: 'text', text: 'no page' }, { type: 'image', data: 'AAAA', mimeType: 'image/png' }], isError: true });
    expect(result).toMatchObject({ output: 'no page\n[image image/png]', isError: true });
    expect(result.images).toBeUndefined();
  });
});
