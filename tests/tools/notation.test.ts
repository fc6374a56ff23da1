import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseMarkdownToolUses } from '../../src/parse/markdown';
import type { ToolFormat } from '../../src/parse/tool-use';
import { parseXmlToolUses } from '../../src/parse/xml';
import { builtinTools } from '../../src/tools/builtin-tools';
import { createCommandTool } from '../../src/tools/command-tool';
import type { ToolSpec } from '../../src/tools/define-tool';
import { callForm, modelTools, programCall, renderCall, type Notation } from '../../src/tools/notation';
import { createPtcTool, eligibleTools } from '../../src/tools/ptc';
import { ToolRegistry } from '../../src/tools/registry';
import { blockInput } from '../../src/tools/run-tool-use';
import { fakeTool } from '../support/fake-tool';

const builtins = builtinTools();
const ptc = createPtcTool({ tools: eligibleTools(builtins), rules: [], session: { id: 'session', dir: '/nowhere' } }) as ToolSpec;
const tools = [...builtins, ptc];
const registry = new ToolRegistry(tools);
const blockTools = tools.filter((tool) => tool.blockTypes.length > 0);

function tool(name: string): ToolSpec {
  const found = registry.get(name);
  if (!found) throw new Error(`no tool ${name}`);
  return found;
}

/** A tool only programs call, without a block form: `lookup({ id })`. */
const lookup = createCommandTool('lookup', {
  description: 'Look a record up.',
  command: ['true'],
  parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  callers: ['program'],
});

/** `text` read back by the parser of `format`, each use mapped onto its tool's parameters. */
function readBack(text: string, format: 'markdown' | 'xml'): { tool: string; input: Record<string, unknown> }[] {
  const uses = format === 'markdown' ? parseMarkdownToolUses(text, registry.isTool) : parseXmlToolUses(text);
  return uses.map((use) => {
    const spec = registry.forTag(use.tool);
    if (!spec) throw new Error(`no tool answers to ${use.tool}`);
    return { tool: spec.name, input: blockInput(spec, use) };
  });
}

/**
 * The input a block carries back: the parsed input, except that the body loses one final line
 * break (both parsers take the one before the closing fence or tag away).
 */
function asBlockCarriesIt(spec: ToolSpec, input: Record<string, unknown>): Record<string, unknown> {
  const parsed: Record<string, unknown> = spec.parameters.parse(input);
  const content = spec.block.content;
  if (content === undefined || (spec.block.args ?? []).includes(content)) return parsed;
  const body = parsed[content];
  return typeof body === 'string' ? { ...parsed, [content]: body.replace(/\r?\n$/, '') } : parsed;
}

describe('renderCall: the examples of the built-in tools', () => {
  const expected: Record<string, Record<Notation, string>> = {
    shell: {
      markdown: '```shell timeout=600\nnpm install && npm test\n```',
      xml: '<tool-use><shell args="timeout=600">npm install && npm test</shell></tool-use>',
      tool: '{"options":"timeout=600","command":"npm install && npm test"}',
      program: 'await shell({ options: "timeout=600", command: "npm install && npm test" })',
      python: 'shell(options="timeout=600", command="npm install && npm test")',
    },
    python: {
      markdown: '```python\nimport json\ndata = json.loads(read(path="package.json"))\nsorted(data["dependencies"])\n```',
      xml: '<tool-use><python>\nimport json\ndata = json.loads(read(path="package.json"))\nsorted(data["dependencies"])\n</python></tool-use>',
      tool: '{"code":"import json\\ndata = json.loads(read(path=\\"package.json\\"))\\nsorted(data[\\"dependencies\\"])"}',
      program: 'await python({ code: "import json\\ndata = json.loads(read(path=\\"package.json\\"))\\nsorted(data[\\"dependencies\\"])" })',
      python: 'python(code="import json\\ndata = json.loads(read(path=\\"package.json\\"))\\nsorted(data[\\"dependencies\\"])")',
    },
    save: {
      markdown: '```save notes/todo.md\n# Todo\n- write the tests\n```',
      xml: '<tool-use><save args="notes/todo.md">\n# Todo\n- write the tests\n</save></tool-use>',
      tool: '{"path":"notes/todo.md","content":"# Todo\\n- write the tests\\n"}',
      program: 'await save({ path: "notes/todo.md", content: "# Todo\\n- write the tests\\n" })',
      python: 'save(path="notes/todo.md", content="# Todo\\n- write the tests\\n")',
    },
    append: {
      markdown: '```append notes/log.md\n- 14:02 tests pass again\n```',
      xml: '<tool-use><append args="notes/log.md">- 14:02 tests pass again</append></tool-use>',
      tool: '{"path":"notes/log.md","content":"- 14:02 tests pass again\\n"}',
      program: 'await append({ path: "notes/log.md", content: "- 14:02 tests pass again\\n" })',
      python: 'append(path="notes/log.md", content="- 14:02 tests pass again\\n")',
    },
    patch: {
      markdown: [
        '```patch src/greet.py',
        '<<<<<<< ORIGINAL',
        'def greet(name):',
        '    print("Hello " + name)',
        '=======',
        'def greet(name: str) -> None:',
        '    print(f"Hello, {name}!")',
        '>>>>>>> UPDATED',
        '```',
      ].join('\n'),
      xml: [
        '<tool-use><patch args="src/greet.py">',
        '<<<<<<< ORIGINAL',
        'def greet(name):',
        '    print("Hello " + name)',
        '=======',
        'def greet(name: str) -> None:',
        '    print(f"Hello, {name}!")',
        '>>>>>>> UPDATED',
        '</patch></tool-use>',
      ].join('\n'),
      tool: '{"path":"src/greet.py","patch":"<<<<<<< ORIGINAL\\ndef greet(name):\\n    print(\\"Hello \\" + name)\\n=======\\ndef greet(name: str) -> None:\\n    print(f\\"Hello, {name}!\\")\\n>>>>>>> UPDATED"}',
      program:
        'await patch({ path: "src/greet.py", patch: "<<<<<<< ORIGINAL\\ndef greet(name):\\n    print(\\"Hello \\" + name)\\n=======\\ndef greet(name: str) -> None:\\n    print(f\\"Hello, {name}!\\")\\n>>>>>>> UPDATED" })',
      python:
        'patch(path="src/greet.py", patch="<<<<<<< ORIGINAL\\ndef greet(name):\\n    print(\\"Hello \\" + name)\\n=======\\ndef greet(name: str) -> None:\\n    print(f\\"Hello, {name}!\\")\\n>>>>>>> UPDATED")',
    },
    read: {
      markdown: '```read src/app.ts\n```',
      xml: '<tool-use><read args="src/app.ts"/></tool-use>',
      tool: '{"path":"src/app.ts"}',
      program: 'await read({ path: "src/app.ts" })',
      python: 'read(path="src/app.ts")',
    },
    glob: {
      markdown: '```glob src/**/*.test.ts\n```',
      xml: '<tool-use><glob args="src/**/*.test.ts"/></tool-use>',
      tool: '{"pattern":"src/**/*.test.ts"}',
      program: 'await glob({ pattern: "src/**/*.test.ts" })',
      python: 'glob(pattern="src/**/*.test.ts")',
    },
    grep: {
      markdown: '```grep src\nfunction \\w+Tool\\(\n```',
      xml: '<tool-use><grep args="src">function \\w+Tool\\(</grep></tool-use>',
      tool: '{"path":"src","pattern":"function \\\\w+Tool\\\\("}',
      program: 'await grep({ path: "src", pattern: "function \\\\w+Tool\\\\(" })',
      python: 'grep(path="src", pattern="function \\\\w+Tool\\\\(")',
    },
    fetch: {
      markdown: '```fetch\nhttps://docs.python.org/3/\n```',
      xml: '<tool-use><fetch>https://docs.python.org/3/</fetch></tool-use>',
      tool: '{"url":"https://docs.python.org/3/"}',
      program: 'await fetch({ url: "https://docs.python.org/3/" })',
      python: 'fetch(url="https://docs.python.org/3/")',
    },
    plan: {
      markdown: '```plan\n[x] Find the bug\n[~] Fix it\n[ ] Add a test\n```',
      xml: '<tool-use><plan>\n[x] Find the bug\n[~] Fix it\n[ ] Add a test\n</plan></tool-use>',
      tool: '{"items":"[x] Find the bug\\n[~] Fix it\\n[ ] Add a test"}',
      program: 'await plan({ items: "[x] Find the bug\\n[~] Fix it\\n[ ] Add a test" })',
      python: 'plan(items="[x] Find the bug\\n[~] Fix it\\n[ ] Add a test")',
    },
    ptc: {
      markdown: [
        '```ptc',
        '// intent: count TODO lines in the TypeScript sources',
        'const files = await glob({ pattern: "src/**/*.ts" });',
        'const texts = await gather(files.map((path) => read({ path })));',
        'const counts = files.map((path, i) => [path, texts[i].split("\\n").filter((l) => l.includes("TODO")).length]);',
        'print(counts.filter(([, n]) => n > 0));',
        '```',
      ].join('\n'),
      xml: [
        '<tool-use><ptc>',
        '// intent: count TODO lines in the TypeScript sources',
        'const files = await glob({ pattern: "src/**/*.ts" });',
        'const texts = await gather(files.map((path) => read({ path })));',
        'const counts = files.map((path, i) => [path, texts[i].split("\\n").filter((l) => l.includes("TODO")).length]);',
        'print(counts.filter(([, n]) => n > 0));',
        '</ptc></tool-use>',
      ].join('\n'),
      tool: JSON.stringify({ code: String(ptc.example.code) }),
      program: `await ptc({ code: ${JSON.stringify(ptc.example.code)} })`,
      python: `ptc(code=${JSON.stringify(ptc.example.code)})`,
    },
  };

  it('covers every built-in tool and ptc', () => {
    expect(Object.keys(expected)).toEqual(tools.map((t) => t.name));
  });

  for (const [name, byNotation] of Object.entries(expected)) {
    for (const [notation, text] of Object.entries(byNotation)) {
      it(`${name} in ${notation}`, () => {
        expect(renderCall(tool(name), tool(name).example, notation as Notation)).toBe(text);
      });
    }
  }

  it('has examples that are valid input for their tools', () => {
    for (const spec of tools) expect(spec.parameters.safeParse(spec.example).success).toBe(true);
  });
});

describe('renderCall: other inputs', () => {
  it('leaves out optional words that are not given', () => {
    expect(renderCall(tool('shell'), { command: 'ls' }, 'markdown')).toBe('```shell\nls\n```');
    expect(renderCall(tool('shell'), { command: 'ls' }, 'xml')).toBe('<tool-use><shell>ls</shell></tool-use>');
    expect(renderCall(tool('grep'), { pattern: 'TODO' }, 'markdown')).toBe('```grep\nTODO\n```');
    expect(renderCall(tool('grep'), { pattern: 'TODO' }, 'xml')).toBe('<tool-use><grep>TODO</grep></tool-use>');
  });

  it('writes several words of one parameter as they are, and an empty body as an empty block', () => {
    expect(renderCall(tool('shell'), { options: 'input timeout=5', command: 'y' }, 'markdown')).toBe('```shell input timeout=5\ny\n```');
    expect(renderCall(tool('read'), { path: 'My Documents/a b.txt' }, 'markdown')).toBe('```read My Documents/a b.txt\n```');
    expect(renderCall(tool('save'), { path: 'empty.txt', content: '' }, 'markdown')).toBe('```save empty.txt\n```');
    expect(renderCall(tool('save'), { path: 'empty.txt', content: '' }, 'xml')).toBe('<tool-use><save args="empty.txt"/></tool-use>');
  });

  it('escapes &, " and < in the args attribute', () => {
    expect(renderCall(tool('read'), { path: 'a&b "c" <d>.txt' }, 'xml')).toBe('<tool-use><read args="a&amp;b &quot;c&quot; &lt;d>.txt"/></tool-use>');
  });

  it('writes a tool without a block form as a program call in markdown and XML, and as JSON natively', () => {
    expect(renderCall(lookup, { id: 'e1' }, 'markdown')).toBe('await lookup({ id: "e1" })');
    expect(renderCall(lookup, { id: 'e1' }, 'xml')).toBe('await lookup({ id: "e1" })');
    expect(renderCall(lookup, { id: 'e1' }, 'program')).toBe('await lookup({ id: "e1" })');
    expect(renderCall(lookup, { id: 'e1' }, 'python')).toBe('lookup(id="e1")');
    expect(renderCall(lookup, { id: 'e1' }, 'tool')).toBe('{"id":"e1"}');
  });

  it('writes Python literals for true, false and null, but not inside strings', () => {
    const input = { a: true, b: null, c: 'true false null', d: [false, 1.5, { e: null }] };
    expect(renderCall(lookup, input, 'python')).toBe('lookup(a=True, b=None, c="true false null", d=[False,1.5,{"e":None}])');
    expect(renderCall(lookup, { s: 'say "null"\\' }, 'python')).toBe('lookup(s="say \\"null\\"\\\\")');
    expect(renderCall(lookup, {}, 'python')).toBe('lookup()');
  });
});

describe('renderCall: markdown fences', () => {
  const save = (content: string) => renderCall(tool('save'), { path: 'a.md', content }, 'markdown');

  it('uses a fence longer than any fence line of the body', () => {
    expect(save('a\n```\nb')).toBe('````save a.md\na\n```\nb\n````');
    expect(save('```ts\nconst a = 1;\n```\n')).toBe('````save a.md\n```ts\nconst a = 1;\n```\n````');
    expect(save('  `````\nx')).toBe('``````save a.md\n  `````\nx\n``````');
    expect(save('x\n````\n```\n')).toBe('`````save a.md\nx\n````\n```\n`````');
  });

  it('keeps three backticks when no line of the body starts a fence', () => {
    expect(save('inline ``` in text')).toBe('```save a.md\ninline ``` in text\n```');
    expect(save('    ```\nindented code')).toBe('```save a.md\n    ```\nindented code\n```');
    expect(save('~~~\ntildes\n~~~')).toBe('```save a.md\n~~~\ntildes\n~~~\n```');
    expect(save('``\ntwo')).toBe('```save a.md\n``\ntwo\n```');
  });

  it('writes a body with fence lines so that the parser reads it back whole', () => {
    for (const content of ['a\n```\nb', '```ts\nconst a = 1;\n```', '  `````\nx', 'x\n````\n```', '```save b.md\ninner\n```']) {
      expect(readBack(save(content), 'markdown')).toEqual([{ tool: 'save', input: { path: 'a.md', content } }]);
    }
  });
});

describe('renderCall: XML bodies', () => {
  const save = (content: string) => renderCall(tool('save'), { path: 'a.md', content }, 'xml');

  it('writes a body as it is when it reads back the same', () => {
    expect(save('if (a < b && c > d) {}')).toBe('<tool-use><save args="a.md">if (a < b && c > d) {}</save></tool-use>');
    expect(save('<div>\n</div>\n')).toBe('<tool-use><save args="a.md">\n<div>\n</div>\n</save></tool-use>');
    expect(save('AT&T; &nbsp; ]]>')).toBe('<tool-use><save args="a.md">AT&T; &nbsp; ]]></save></tool-use>');
  });

  it('wraps a body holding a closing tag or an entity in CDATA', () => {
    expect(save('a </save> b')).toBe('<tool-use><save args="a.md"><![CDATA[a </save> b]]></save></tool-use>');
    expect(save('x </tool-use> y')).toBe('<tool-use><save args="a.md"><![CDATA[x </tool-use> y]]></save></tool-use>');
    expect(save('a &lt; b')).toBe('<tool-use><save args="a.md"><![CDATA[a &lt; b]]></save></tool-use>');
    expect(save('&#60; &#x3C; &amp;')).toBe('<tool-use><save args="a.md"><![CDATA[&#60; &#x3C; &amp;]]></save></tool-use>');
    expect(save('<p>&lt;</p>\n</save>\n')).toBe('<tool-use><save args="a.md">\n<![CDATA[<p>&lt;</p>\n</save>]]>\n</save></tool-use>');
  });

  it('escapes & and < instead when the body also holds ]]>', () => {
    expect(save('a </save> ]]> &lt;')).toBe('<tool-use><save args="a.md">a &lt;/save> ]]> &amp;lt;</save></tool-use>');
  });

  it('writes each of these bodies so that the parser reads it back whole', () => {
    for (const content of ['a </save> b', 'x </tool-use> y', 'a &lt; b', '&#60; &#x3C; &amp;', '<p>&lt;</p>\n</save>', 'a </save> ]]> &lt;', 'AT&T; &nbsp; ]]>']) {
      expect(readBack(save(content), 'xml')).toEqual([{ tool: 'save', input: { path: 'a.md', content } }]);
    }
  });

  // Written as it is, a body holding `<![CDATA[` would be read as a CDATA section
  // (`a <![CDATA[x]]> b` as `a x b`; an unclosed one swallows the call).
  it('writes a body holding <![CDATA[ so that the parser reads it back whole', () => {
    for (const content of ['a <![CDATA[x]]> b', 'x <![CDATA[ y']) {
      expect(readBack(save(content), 'xml')).toEqual([{ tool: 'save', input: { path: 'a.md', content } }]);
    }
  });
});

describe('renderCall: round trips through the parsers', () => {
  for (const format of ['markdown', 'xml'] as const) {
    it(`reads every example back from ${format} as the same input`, () => {
      for (const spec of blockTools) {
        // What the parameters make of both sides: plan's body is read into its items.
        const [back, ...more] = readBack(renderCall(spec, spec.example, format), format);
        expect(more).toEqual([]);
        expect({ tool: back?.tool, input: spec.parameters.parse(back?.input) }).toEqual({ tool: spec.name, input: asBlockCarriesIt(spec, spec.example) });
      }
    });
  }

  /** Pieces bodies are made of: fence lines, closing tags, entities, CDATA markers, line breaks. */
  const piece = fc.constantFrom(
    'x',
    ' ',
    '\t',
    '\n',
    '\r\n',
    '\r',
    '```',
    '````',
    '  ```',
    '    ```',
    '```ts',
    '```save b.md',
    '~~~',
    '`',
    '<',
    '>',
    '&',
    '&&',
    ']]>',
    ']]',
    ']',
    '<!',
    '[CDATA[',
    '</save>',
    '</save',
    '</SAVE>',
    '</tool-use>',
    '</tool-use >',
    '<tool-use>',
    '<save args="x">',
    '</python>',
    '</grep>',
    '&lt;',
    '&amp;',
    '&#60;',
    '&#x3c;',
    '&nbsp;',
    'é',
    '"',
  );
  // A final lone CR cannot survive either format (the parsers take a final `\r\n` before the
  // closing fence or tag as its line break).
  const body = fc
    .array(piece, { maxLength: 24 })
    .map((pieces) => pieces.join(''))
    .filter((text) => !/\r$/.test(text.replace(/\r?\n$/, '')));
  // Words of the tag line or `args` attribute: no whitespace (it separates them) and no backtick
  // (a fence's info string holds none); markup characters and quotes included.
  const word = fc.array(fc.constantFrom(...'abcXYZ019._-/*~@&"<>\'=é'.split('')), { minLength: 1, maxLength: 8 }).map((chars) => chars.join(''));
  const words = fc.array(word, { minLength: 1, maxLength: 3 }).map((list) => list.join(' '));

  /** Any input of the tool that its block form can carry: optional words left out or not, bodies from the pieces. */
  function blockCall(spec: ToolSpec): fc.Arbitrary<Record<string, unknown>> {
    const args = spec.block.args ?? [];
    const shape = spec.parameters.shape as Record<string, z.ZodType>;
    const fields: Record<string, fc.Arbitrary<string | undefined>> = {};
    for (const name of args) {
      const optional = shape[name]?.safeParse(undefined).success ?? false;
      fields[name] = optional ? fc.option(words, { nil: undefined }) : words;
    }
    const content = spec.block.content;
    if (content !== undefined && !args.includes(content)) fields[content] = body;
    return fc.record(fields).map((record) => Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)));
  }

  // plan's body is a checklist, not free text: its round trip is in plan.test.ts.
  const freeBodyTools = blockTools.filter((spec) => spec.name !== 'plan');
  for (const format of ['markdown', 'xml'] as const) {
    for (const spec of freeBodyTools) {
      it(`reads any ${spec.name} call back from ${format}`, () => {
        fc.assert(
          fc.property(blockCall(spec), (input) => {
            const text = renderCall(spec, input, format);
            expect(readBack(text, format)).toEqual([{ tool: spec.name, input: asBlockCarriesIt(spec, input) }]);
            // The call stays one call when prose surrounds it.
            expect(readBack(`Let me do it.\n${text}\nDone.`, format)).toEqual([{ tool: spec.name, input: asBlockCarriesIt(spec, input) }]);
          }),
          { numRuns: 150 },
        );
      });
    }
  }
});

describe('callForm', () => {
  const forms: Record<string, [markdown: string, xml: string]> = {
    shell: ['```shell [options]\n<command>\n```', '<shell args="[options]">{command}</shell>'],
    python: ['```python\n<code>\n```', '<python>{code}</python>'],
    save: ['```save <path>\n<content>\n```', '<save args="{path}">{content}</save>'],
    append: ['```append <path>\n<content>\n```', '<append args="{path}">{content}</append>'],
    patch: ['```patch <path>\n<patch>\n```', '<patch args="{path}">{patch}</patch>'],
    read: ['```read <path>\n```', '<read args="{path}"/>'],
    glob: ['```glob <pattern>\n```', '<glob args="{pattern}"/>'],
    grep: ['```grep [path]\n<pattern>\n```', '<grep args="[path]">{pattern}</grep>'],
    fetch: ['```fetch\n<url>\n```', '<fetch>{url}</fetch>'],
    plan: ['```plan\n<items>\n```', '<plan>{items}</plan>'],
    ptc: ['```ptc\n<code>\n```', '<ptc>{code}</ptc>'],
  };

  it('covers every built-in tool and ptc', () => {
    expect(Object.keys(forms)).toEqual(tools.map((t) => t.name));
  });

  for (const [name, [markdown, xml]] of Object.entries(forms)) {
    it(`gives the form of ${name} in markdown and XML`, () => {
      expect(callForm(tool(name), 'markdown')).toBe(markdown);
      expect(callForm(tool(name), 'xml')).toBe(xml);
    });
  }

  it('has no form in the native and program notations, nor for a tool without a block form', () => {
    for (const notation of ['tool', 'program', 'python'] as const) {
      for (const spec of tools) expect(callForm(spec, notation)).toBeUndefined();
    }
    for (const notation of ['markdown', 'xml', 'tool', 'program', 'python'] as const) expect(callForm(lookup, notation)).toBeUndefined();
  });

  it('brackets a parameter that is optional, also by its default', () => {
    const spec = fakeTool({ name: 'fetch', parameters: z.object({ url: z.string(), retries: z.number().default(3) }) }).spec;
    const withBlock = { ...spec, block: { args: ['url', 'retries'] } };
    expect(callForm(withBlock, 'markdown')).toBe('```fetch <url> [retries]\n```');
    expect(callForm(withBlock, 'xml')).toBe('<fetch args="{url} [retries]"/>');
  });
});

describe('modelTools', () => {
  const programOnly = fakeTool({ name: 'only_programs', callers: ['program'] }).spec;
  const nativeOnly = createCommandTool('ping', { description: 'Ping.', command: ['true'], callers: ['direct'] });
  const all = [...tools, lookup, programOnly, nativeOnly];
  const names = (format: ToolFormat) => modelTools(all, format).map((t) => t.name);

  it('keeps in markdown and XML the direct tools with a block form, in the given order', () => {
    expect(names('markdown')).toEqual(['shell', 'python', 'save', 'append', 'patch', 'read', 'glob', 'grep', 'fetch', 'plan', 'ptc']);
    expect(names('xml')).toEqual(names('markdown'));
  });

  it('keeps natively every direct tool, with or without a block form', () => {
    expect(names('tool')).toEqual(['shell', 'python', 'save', 'append', 'patch', 'read', 'glob', 'grep', 'fetch', 'plan', 'ptc', 'ping']);
  });
});

describe('programCall', () => {
  it('writes plain keys bare and other keys quoted, values as JSON', () => {
    expect(programCall('read', { path: 'a.txt' })).toBe('await read({ path: "a.txt" })');
    expect(programCall('get', { 'first-name': 'Ada', $id: 1, _x: [true, null], nested: { a: 'b' } })).toBe(
      'await get({ "first-name": "Ada", $id: 1, _x: [true,null], nested: {"a":"b"} })',
    );
  });

  it('writes an empty object for no arguments', () => {
    expect(programCall('now', {})).toBe('await now({})');
  });
});

describe('instructions of the built-in tools', () => {
  it('never spell a format: no tool block, no XML call', () => {
    for (const spec of tools) {
      for (const tag of spec.blockTypes) expect(spec.instructions).not.toContain('```' + tag);
      expect(spec.instructions).not.toContain('<tool-use');
    }
  });
});
