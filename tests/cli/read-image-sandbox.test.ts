import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { block, bubblewrapMissing, fenceIn, script, useSandboxRig } from '../support/sandbox-rig';

const rig = useSandboxRig();

/** The base64 of every image part in the requests the fake server got. */
function imagesSent(): string[] {
  const text = rig().server.requests.map((request) => JSON.stringify(request.body)).join('\n');
  return [...text.matchAll(/data:image\/[a-z]+;base64,([A-Za-z0-9+/=]+)/g)].map((match) => match[1] as string);
}

describe.skipIf(bubblewrapMissing)('read of an image and the sandbox', () => {
  it('never sends an image from a denied path, named directly or through a link, and sends one of the workspace', async () => {
    const { home, workspace } = rig();
    const secret = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#ff0000' } }).png().toBuffer();
    const shot = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#00ff00' } }).png().toBuffer();
    writeFileSync(join(home, '.ssh', 'screen.png'), secret);
    symlinkSync(join(home, '.ssh', 'screen.png'), join(workspace, 'innocent.png'));
    writeFileSync(join(workspace, 'shot.png'), shot);
    script(rig(), [block('read innocent.png', ''), block(`read ${join(home, '.ssh', 'screen.png')}`, ''), block('read shot.png', ''), 'Done.']);
    const result = await fenceIn(rig(), ['-n', 'look at the pictures']);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.exitCode, result.stderr).toBe(0);
    const sent = imagesSent();
    expect(sent).not.toContain(secret.toString('base64'));
    expect(sent).toContain(shot.toString('base64'));
    const bodies = rig().server.requests.map((request) => JSON.stringify(request.body)).join('\n');
    expect(bodies).not.toContain('PNG 32×32');
  });
});
