import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildSystemPrompt, toolSchemas } from '../../src/agent/system-prompt';
import { builtinTools } from '../../src/tools/builtin-tools';
import { createCommandTool } from '../../src/tools/command-tool';
import type { ToolSpec } from '../../src/tools/define-tool';
import { renderCall } from '../../src/tools/notation';
import { createPtcTool, eligibleTools } from '../../src/tools/ptc';
import { fakeTool } from '../support/fake-tool';

const tools = builtinTools();
const now = new Date('2026-03-04T05:06:07Z');
const ptc = createPtcTool({ tools: eligibleTools(tools), rules: [], session: { id: 'session', dir: '/nowhere' } }) as ToolSpec;
const withPtc = [...tools, ptc];
const byName = (name: string): ToolSpec => {
  const tool = withPtc.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  return tool;
};

/** A registered tool only programs call: no block form, not direct. */
const programOnly = fakeTool({ name: 'lookup', callers: ['program'] }).spec;
/** A user tool the model may call natively, which has no block form. */
const nativeOnly = createCommandTool('ping', { description: 'Ping a host.', command: ['true'], callers: ['direct'] });

describe('buildSystemPrompt', () => {
  it("includes every tool's name, description, instructions and example in its format", () => {
    for (const format of ['markdown', 'xml'] as const) {
      const prompt = buildSystemPrompt({ tools: withPtc, workspace: '/home/u/project', format, now });
      expect(withPtc.length).toBeGreaterThan(1);
      for (const tool of withPtc) {
        expect(prompt).toContain(`## ${tool.name}`);
        expect(prompt).toContain(tool.description);
        expect(prompt).toContain(tool.instructions);
        expect(prompt).toContain(`Example:\n${renderCall(tool, tool.example, format)}`);
      }
    }
  });

  it('writes the markdown format by default', () => {
    expect(buildSystemPrompt({ tools, workspace: '/w', now })).toBe(buildSystemPrompt({ tools, workspace: '/w', format: 'markdown', now }));
  });

  it('describes one tool as its heading, description, form, instructions and example (markdown)', () => {
    const save = byName('save');
    const prompt = buildSystemPrompt({ tools, workspace: '/w', format: 'markdown', now });
    expect(prompt).toContain(
      [
        '## save',
        save.description,
        'Form: ```save <path>\n<content>\n```',
        save.instructions,
        'Example:',
        '```save notes/todo.md\n# Todo\n- write the tests\n```',
      ].join('\n') + '\n\n## append\n',
    );
    expect(prompt).toContain('\nForm: ```grep [path]\n<pattern>\n```\n');
    expect(prompt).toContain('\nForm: ```read <path>\n```\n');
    expect(prompt).toContain('\nForm: ```shell [options]\n<command>\n```\n');
    expect(prompt).toContain('You act by writing fenced code blocks whose language tag names a tool.');
    expect(prompt).not.toContain('<tool-use>');
  });

  it('describes one tool as its heading, description, form, instructions and example (xml)', () => {
    const save = byName('save');
    const prompt = buildSystemPrompt({ tools, workspace: '/w', format: 'xml', now });
    expect(prompt).toContain(
      [
        '## save',
        save.description,
        'Form: <save args="{path}">{content}</save>',
        save.instructions,
        'Example:',
        '<tool-use><save args="notes/todo.md">\n# Todo\n- write the tests\n</save></tool-use>',
      ].join('\n') + '\n\n## append\n',
    );
    expect(prompt).toContain('\nForm: <shell args="[options]">{command}</shell>\n');
    expect(prompt).toContain('\nForm: <read args="{path}"/>\n');
    expect(prompt).toContain('\nExample:\n<tool-use><read args="src/app.ts"/></tool-use>');
    expect(prompt).toContain('You act by writing tool calls in XML: <tool-use><TOOL args="WORDS">BODY</TOOL></tool-use>.');
    expect(prompt).toContain('<![CDATA[...]]>');
    expect(prompt).not.toContain('```save');
    expect(prompt).not.toContain('fenced code blocks whose language tag');
  });

  it('leaves the tools out of the prompt in the native format: they go as definitions', () => {
    const prompt = buildSystemPrompt({ tools: withPtc, workspace: '/w', format: 'tool', agentsFile: 'Use tabs.', now });
    expect(prompt).toBe(
      [
        [
          "You are fence, an autonomous coding agent working in a terminal on the user's machine.",
          'You act by calling the tools you are given. Several calls in one reply run in order, and each is answered by its result.',
          'When the task is done, reply without any tool call: that reply is your final answer to the user. Keep it short and say what you did.',
        ].join('\n'),
        '# Context',
        'Workspace (the working folder; relative paths start here): /w\nDate: 2026-03-04',
        '# Project instructions (AGENTS.md)',
        'Use tabs.',
      ].join('\n\n'),
    );
  });

  it('shows in markdown and XML only the tools the model calls with a block', () => {
    for (const format of ['markdown', 'xml'] as const) {
      const prompt = buildSystemPrompt({ tools: [...tools, programOnly, nativeOnly], workspace: '/w', format, now });
      expect(prompt).not.toContain('## lookup');
      expect(prompt).not.toContain('## ping');
      expect(prompt.match(/^## /gm)).toHaveLength(tools.length);
    }
  });

  it('lists the extra tags of a tool that answers to several', () => {
    for (const format of ['markdown', 'xml'] as const) {
      const prompt = buildSystemPrompt({ tools, workspace: '/w', format, now });
      expect(prompt).toContain('## shell (tags: shell, bash, sh)');
      expect(prompt).toContain('## python (tags: python, py, ipython)');
      expect(prompt).toMatch(/^## read$/m);
    }
  });

  it('presents the tools in the order given', () => {
    const prompt = buildSystemPrompt({ tools, workspace: '/w', now });
    const positions = tools.map((tool) => prompt.indexOf(`## ${tool.name}`));
    expect(positions.every((position) => position >= 0)).toBe(true);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
  });

  it('names the workspace and the date in every format', () => {
    for (const format of ['markdown', 'xml', 'tool'] as const) {
      const prompt = buildSystemPrompt({ tools, workspace: '/home/u/project', format, now });
      expect(prompt).toContain('\n\n# Context\n\nWorkspace (the working folder; relative paths start here): /home/u/project\nDate: 2026-03-04');
    }
  });

  it("adds the project's AGENTS.md after everything else", () => {
    for (const format of ['markdown', 'xml', 'tool'] as const) {
      const prompt = buildSystemPrompt({ tools, workspace: '/w', format, agentsFile: '\nAlways run `npm test` before finishing.\n\n', now });
      expect(prompt.endsWith('# Project instructions (AGENTS.md)\n\nAlways run `npm test` before finishing.')).toBe(true);
    }
  });

  it('leaves the AGENTS.md section out when there is none or it is blank', () => {
    for (const agentsFile of [undefined, '', ' \n\t\n']) {
      expect(buildSystemPrompt({ tools, workspace: '/w', agentsFile, now })).not.toContain('AGENTS.md');
    }
  });
});

describe('toolSchemas', () => {
  const schemas = toolSchemas(withPtc);

  it('gives each built-in tool its name and parameters', () => {
    const shape = schemas.map(({ name, parameters }) => ({ name, properties: Object.keys(parameters.properties as object), required: parameters.required }));
    expect(shape).toEqual([
      { name: 'shell', properties: ['command', 'options'], required: ['command'] },
      { name: 'python', properties: ['code'], required: ['code'] },
      { name: 'save', properties: ['path', 'content'], required: ['path', 'content'] },
      { name: 'append', properties: ['path', 'content'], required: ['path', 'content'] },
      { name: 'patch', properties: ['path', 'patch'], required: ['path', 'patch'] },
      { name: 'read', properties: ['path'], required: ['path'] },
      { name: 'glob', properties: ['pattern'], required: ['pattern'] },
      { name: 'grep', properties: ['pattern', 'path'], required: ['pattern'] },
      { name: 'fetch', properties: ['url'], required: ['url'] },
      { name: 'plan', properties: ['items'], required: ['items'] },
      { name: 'ptc', properties: ['code'], required: ['code'] },
    ]);
  });

  it('joins description and instructions, and leaves $schema and additionalProperties out', () => {
    for (const schema of schemas) {
      const tool = byName(schema.name);
      expect(schema.description).toBe(`${tool.description}\n${tool.instructions}`);
      expect(schema.parameters.type).toBe('object');
      expect(schema.parameters).not.toHaveProperty('$schema');
      expect(schema.parameters).not.toHaveProperty('additionalProperties');
    }
  });

  it('takes the input side of the parameters: a default makes a parameter optional', () => {
    const tool = fakeTool({ name: 'count', parameters: z.object({ path: z.string(), limit: z.number().default(10) }) }).spec;
    expect(toolSchemas([tool])[0]?.parameters).toEqual({
      type: 'object',
      properties: { path: { type: 'string' }, limit: { type: 'number', default: 10 } },
      required: ['path'],
    });
  });

  it('keeps only the tools the model may call directly, with or without a block form', () => {
    expect(toolSchemas([programOnly, nativeOnly, ...tools]).map((schema) => schema.name)).toEqual([
      'ping',
      ...tools.map((tool) => tool.name),
    ]);
    expect(toolSchemas([nativeOnly])).toEqual([
      {
        name: 'ping',
        description: 'Ping a host.\nCall it as a tool with a JSON object of arguments: {}.',
        parameters: { type: 'object', properties: {}, additionalProperties: {} },
      },
    ]);
  });

  it('matches the snapshot of the built-in definitions', () => {
    expect(schemas).toMatchSnapshot();
  });

  it('gives a brief tool a definition with its one line, a note sending to describe, and open parameters', () => {
    const brief = { ...nativeOnly, brief: true };
    const definitions = toolSchemas([byName('read'), brief, { ...programOnly, brief: true }]);
    expect(definitions.map((d) => d.name)).toEqual(['read', 'ping']);
    expect(definitions[1]).toEqual({ name: 'ping', description: 'Ping a host.\nCall describe with its name for its parameters.', parameters: { type: 'object' } });
    expect(definitions[0]).toEqual(toolSchemas([byName('read')])[0]);
  });
});

describe('buildSystemPrompt with brief tools', () => {
  it('gives a brief tool with a block form its heading, description and form, and sends the model to describe', () => {
    const brief = { ...fakeTool({ name: 'stamp' }).spec, brief: true, block: { args: ['path'] } };
    const prompt = buildSystemPrompt({ tools: [brief, byName('read')], workspace: '/w', format: 'markdown', now });
    expect(prompt).toContain('## stamp\nThe stamp tool, for tests.\nForm: ```stamp <path>\n```\nCall describe with its name for how to use it.\n\n## read\n');
    expect(prompt).not.toContain('Call stamp.');
  });

  it('changes nothing for tools that are not brief', () => {
    const prompt = buildSystemPrompt({ tools: withPtc, workspace: '/w', format: 'markdown', now });
    expect(prompt).not.toContain('describe');
  });
});
