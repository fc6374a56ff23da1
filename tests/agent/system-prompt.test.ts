import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildSystemPrompt, readAgentsFile } from '../../src/agent/system-prompt';
import { builtinTools } from '../../src/tools/builtin-tools';
import { makeTempWorkspace } from '../support/tool-context';

const tools = builtinTools();
const now = new Date('2026-03-04T05:06:07Z');

describe('buildSystemPrompt', () => {
  it("includes every tool's name, description, instructions and example", () => {
    const prompt = buildSystemPrompt({ tools, workspace: '/home/u/project', now });
    expect(tools.length).toBeGreaterThan(1);
    for (const tool of tools) {
      expect(prompt).toContain(`## ${tool.name}`);
      expect(prompt).toContain(tool.description);
      expect(prompt).toContain(tool.instructions);
      expect(prompt).toContain(tool.examples);
    }
  });

  it('lists the extra tags of a tool that answers to several', () => {
    const prompt = buildSystemPrompt({ tools, workspace: '/w', now });
    expect(prompt).toContain('## shell (tags: shell, bash, sh)');
    expect(prompt).toMatch(/^## read$/m);
  });

  it('presents the tools in the order given', () => {
    const prompt = buildSystemPrompt({ tools, workspace: '/w', now });
    const positions = tools.map((tool) => prompt.indexOf(`## ${tool.name}`));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  it('names the workspace and the date', () => {
    const prompt = buildSystemPrompt({ tools, workspace: '/home/u/project', now });
    expect(prompt).toContain('/home/u/project');
    expect(prompt).toContain('2026-03-04');
  });

  it("adds the project's AGENTS.md after everything else", () => {
    const prompt = buildSystemPrompt({ tools, workspace: '/w', agentsFile: '\nAlways run `npm test` before finishing.\n\n', now });
    expect(prompt.endsWith('# Project instructions (AGENTS.md)\n\nAlways run `npm test` before finishing.')).toBe(true);
  });

  it('leaves the AGENTS.md section out when there is none or it is blank', () => {
    for (const agentsFile of [undefined, '', ' \n\t\n']) {
      expect(buildSystemPrompt({ tools, workspace: '/w', agentsFile, now })).not.toContain('AGENTS.md');
    }
  });
});

describe('readAgentsFile', () => {
  let workspace: string;
  beforeEach(async () => {
    workspace = await makeTempWorkspace('fence-prompt-');
  });
  afterEach(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  it("returns the workspace's AGENTS.md", async () => {
    await writeFile(join(workspace, 'AGENTS.md'), '# Rules\nUse tabs.\n');
    expect(readAgentsFile(workspace)).toBe('# Rules\nUse tabs.\n');
  });

  it('returns undefined when there is none', () => {
    expect(readAgentsFile(workspace)).toBeUndefined();
    expect(readAgentsFile(join(workspace, 'no-such-folder'))).toBeUndefined();
  });
});
