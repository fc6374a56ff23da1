import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { formatNativeCall } from '../../src/llm/native-calls';
import {
  parseNativeCallLines,
  parseToolArguments,
  type NativeCallLine,
  type ParsedArguments,
} from '../../src/parse/native-call';

/** The ok result for arguments whose value is `value`. */
function ok(value: Record<string, unknown>, repaired: boolean): ParsedArguments {
  return { ok: true, value, json: JSON.stringify(value), repaired };
}

/** The error of a result that must be a failure. */
function errorOf(result: ParsedArguments): string {
  if (result.ok) throw new Error(`expected a failure, got ${result.json}`);
  return result.error;
}

/** An error message fit for one line of a tool result. */
function expectOneShortLine(error: string): void {
  expect(error).not.toMatch(/[\n\r\u2028\u2029]/);
  expect(error.length).toBeLessThan(200);
}

describe('parseToolArguments: valid objects', () => {
  it('reads a JSON object, giving its compact JSON', () => {
    expect(parseToolArguments('{"path": "a.txt", "content": "hi"}')).toEqual({
      ok: true,
      value: { path: 'a.txt', content: 'hi' },
      json: '{"path":"a.txt","content":"hi"}',
      repaired: false,
    });
  });

  it('counts no bracket inside a string, escaped quotes included', () => {
    expect(parseToolArguments('{"a": {"b": [1, {"c": "}]\\"}{["}]}}')).toEqual({
      ok: true,
      value: { a: { b: [1, { c: '}]"}{[' }] } },
      json: '{"a":{"b":[1,{"c":"}]\\"}{["}]}}',
      repaired: false,
    });
  });

  it('ignores whitespace around the object, a BOM and no-break spaces included', () => {
    expect(parseToolArguments(' \n\t{"a":1}\r\n ')).toEqual(ok({ a: 1 }, false));
    expect(parseToolArguments('\uFEFF{"a":1}\u00A0\u2028')).toEqual(ok({ a: 1 }, false));
  });

  it('takes empty or whitespace-only arguments as an empty object', () => {
    for (const raw of ['', ' ', '\n', '\t \r\n', '\u00A0\uFEFF']) {
      expect(parseToolArguments(raw)).toEqual({ ok: true, value: {}, json: '{}', repaired: false });
    }
  });

  it('gives a fresh object each time', () => {
    const first = parseToolArguments('');
    const second = parseToolArguments('');
    expect(first.ok && second.ok && first.value !== second.value).toBe(true);
  });

  it('reads numbers as JSON.parse does, an out-of-range one as Infinity written null', () => {
    const result = parseToolArguments('{"big": 1e400, "n": -0.5e1}');
    expect(result).toEqual({ ok: true, value: { big: Number.POSITIVE_INFINITY, n: -5 }, json: '{"big":null,"n":-5}', repaired: false });
  });

  it('reads unicode keys and values, escaped or not', () => {
    expect(parseToolArguments('{"ключ": "\\ud83d\\ude00 😀", "\\u2028": "\u2028"}')).toEqual(
      ok({ ключ: '😀 😀', '\u2028': '\u2028' }, false),
    );
  });
});

describe('parseToolArguments: what follows the first value', () => {
  it('drops a second copy of the object, and calls that a repair', () => {
    expect(parseToolArguments('{"a":1}{"a":1}')).toEqual(ok({ a: 1 }, true));
    expect(parseToolArguments('{"a":1}\n{"b":2}')).toEqual(ok({ a: 1 }, true));
    expect(parseToolArguments("{'a': 'b'}{'a': 'b'}")).toEqual(ok({ a: 'b' }, true));
  });

  it('drops trailing text and stray closing brackets', () => {
    expect(parseToolArguments('{"a":"x\\"}"} and then some')).toEqual(ok({ a: 'x"}' }, true));
    expect(parseToolArguments('{"a":1}}')).toEqual(ok({ a: 1 }, true));
    expect(parseToolArguments('{"a":1}garbage"')).toEqual(ok({ a: 1 }, true));
  });

  it('does not count trailing whitespace as a repair', () => {
    expect(parseToolArguments('{"a":1}   \n\n')).toEqual(ok({ a: 1 }, false));
  });

  it('cuts an array at its end too, then refuses it', () => {
    expect(parseToolArguments('[1]{"a":1}')).toEqual({ ok: false, error: 'the arguments must be a JSON object, not an array' });
  });
});

describe('parseToolArguments: repairs', () => {
  it('repairs single quotes, trailing commas and unquoted keys', () => {
    expect(parseToolArguments("{'path': 'a.txt', 'content': 'ok',}")).toEqual(ok({ path: 'a.txt', content: 'ok' }, true));
    expect(parseToolArguments('{path: "a.txt"}')).toEqual(ok({ path: 'a.txt' }, true));
    expect(parseToolArguments('{"a":1,}')).toEqual(ok({ a: 1 }, true));
    expect(parseToolArguments('{"a" 1}')).toEqual(ok({ a: 1 }, true));
  });

  it('repairs Python literals', () => {
    expect(parseToolArguments("{'a': True, 'b': None}")).toEqual(ok({ a: true, b: null }, true));
  });

  it('drops comments, with brackets in them not counted', () => {
    expect(parseToolArguments('{"path": "a.txt" // the file }\n}')).toEqual(ok({ path: 'a.txt' }, true));
    expect(parseToolArguments('{"a": 1 /* } */}')).toEqual(ok({ a: 1 }, true));
  });

  it('keeps // in a URL that is not a comment', () => {
    expect(parseToolArguments('{url: http://x.com/a}')).toEqual(ok({ url: 'http://x.com/a' }, true));
  });

  it('reads an apostrophe inside an unquoted word as a letter', () => {
    expect(parseToolArguments("{'a': '}'}")).toEqual(ok({ a: '}' }, true));
    expect(errorOf(parseToolArguments("{a: it's} {}"))).toBe(`the arguments are not valid JSON: colon expected at position 8, near "{a: it's} {}"`);
  });

  it('escapes raw line breaks and tabs in strings, at any length', () => {
    expect(parseToolArguments('{"content": "line one\nline\ttwo"}')).toEqual(ok({ content: 'line one\nline\ttwo' }, true));
    const long = `line\n${'x'.repeat(10_000)}\r\nend\u0001`;
    expect(parseToolArguments(`{"path": "a.md", "content": "${long}"}`)).toEqual(ok({ path: 'a.md', content: long }, true));
  });

  it('closes arguments cut short', () => {
    expect(parseToolArguments('{"path": "a.txt", "content": "cut sho')).toEqual(ok({ path: 'a.txt', content: 'cut sho' }, true));
    expect(parseToolArguments('{"a":{"b":1}')).toEqual(ok({ a: { b: 1 } }, true));
    expect(parseToolArguments('{"a": [1, 2}')).toEqual(ok({ a: [1, 2] }, true));
    expect(parseToolArguments('{')).toEqual(ok({}, true));
  });

  it('unwraps a markdown code block around the object', () => {
    expect(parseToolArguments('```json\n{"a":1}\n```')).toEqual(ok({ a: 1 }, true));
  });
});

describe('parseToolArguments: failures', () => {
  it('refuses values that are not an object, naming their kind', () => {
    expect(parseToolArguments('[1, 2]')).toEqual({ ok: false, error: 'the arguments must be a JSON object, not an array' });
    expect(parseToolArguments('"ls -la"')).toEqual({ ok: false, error: 'the arguments must be a JSON object, not a string' });
    expect(parseToolArguments(' 42 ')).toEqual({ ok: false, error: 'the arguments must be a JSON object, not a number' });
    expect(parseToolArguments('true')).toEqual({ ok: false, error: 'the arguments must be a JSON object, not a boolean' });
    expect(parseToolArguments('false')).toEqual({ ok: false, error: 'the arguments must be a JSON object, not a boolean' });
    expect(parseToolArguments('null')).toEqual({ ok: false, error: 'the arguments must be a JSON object, not null' });
  });

  it('names the kind of what a repair made, too', () => {
    expect(parseToolArguments('[1,2')).toEqual({ ok: false, error: 'the arguments must be a JSON object, not an array' });
    expect(parseToolArguments('hello world')).toEqual({ ok: false, error: 'the arguments must be a JSON object, not a string' });
  });

  it('says what is broken and where, counting from the start of the raw text', () => {
    expect(parseToolArguments("{a: it's}")).toEqual({ ok: false, error: `the arguments are not valid JSON: colon expected at position 8, near "{a: it's}"` });
    expect(parseToolArguments("  {a: it's}")).toEqual({ ok: false, error: `the arguments are not valid JSON: colon expected at position 10, near "  {a: it's}"` });
    expect(parseToolArguments('}')).toEqual({ ok: false, error: 'the arguments are not valid JSON: unexpected end of json string at position 1, near "}"' });
  });

  it('quotes a short excerpt only, escaped onto one line', () => {
    const raw = `{"a": 1, : 2, "b": "${'x'.repeat(1000)}"}`;
    expect(errorOf(parseToolArguments(raw))).toBe(
      'the arguments are not valid JSON: object key expected at position 9, near "{\\"a\\": 1, : 2, \\"b\\": \\"xxxxxxxxxxxxxx…"',
    );
    expect(errorOf(parseToolArguments('{"k": "v", "é\u2028\n": 1 : 2}'))).toBe(
      'the arguments are not valid JSON: object key expected at position 20, near "…é\\u2028\\n\\": 1 : 2}"',
    );
    expect(errorOf(parseToolArguments('{"k": "v", "key": "é\u2028\t\u0001\uD800" : 2}'))).toBe(
      'the arguments are not valid JSON: invalid character "\\u0001" at position 22, near "…y\\": \\"é\\u2028\\t\\u0001\\ud800\\" : 2}"',
    );
    // A surrogate pair is quoted whole or not at all.
    expect(errorOf(parseToolArguments(`{"ab": 1, "${'😀'.repeat(10)}": 1 : 2}`))).toBe(
      `the arguments are not valid JSON: object key expected at position 36, near "…${'😀'.repeat(5)}\\": 1 : 2}"`,
    );
  });

  it('does not hand long broken text to jsonrepair, and says so', () => {
    const raw = `{"a": 1,, "b": "${'x'.repeat(3000)}"}`;
    expect(errorOf(parseToolArguments(raw))).toBe(
      'the arguments are not valid JSON (at position 8, near "{\\"a\\": 1,, \\"b\\": \\"xxxxxxxxxxxxxxxxx…") and too long to repair (3018 characters, over 2048)',
    );
  });

  it('returns at once on input that takes jsonrepair minutes', () => {
    // jsonrepair backtracks over unmatched quotes: this pattern costs it seconds at 8 KB and
    // grows far faster than the length.
    const raw = `[${',`"b:'.repeat(20_000)}`;
    expect(errorOf(parseToolArguments(raw))).toBe('the arguments are not valid JSON and too long to repair (100001 characters, over 2048)');
  });

  it('still repairs text of exactly 2048 characters', () => {
    const raw = `{'a': '${'x'.repeat(2048 - 9)}'}`;
    expect(raw.length).toBe(2048);
    expect(parseToolArguments(raw)).toEqual(ok({ a: 'x'.repeat(2039) }, true));
    expect(errorOf(parseToolArguments(`{'a': '${'x'.repeat(2040)}'}`))).toBe(
      'the arguments are not valid JSON (at position 1, near "{\'a\': \'xxxxxxxxxxxxxxxxxxxxxx…") and too long to repair (2049 characters, over 2048)',
    );
  });
});

describe('parseToolArguments: nesting', () => {
  it('refuses absurd nesting before anything recursive sees it', () => {
    const deep = 'the arguments nest deeper than 512 levels';
    expect(parseToolArguments('['.repeat(100_000))).toEqual({ ok: false, error: deep });
    expect(parseToolArguments(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)).toEqual({ ok: false, error: deep });
    expect(parseToolArguments('{"a":'.repeat(100_000))).toEqual({ ok: false, error: deep });
    expect(parseToolArguments(`x ${'{'.repeat(100_000)}`)).toEqual({ ok: false, error: deep });
    expect(parseToolArguments('['.repeat(2000))).toEqual({ ok: false, error: deep });
  });

  it('accepts 512 levels and refuses 513', () => {
    const nested = (levels: number): string => `${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`;
    const result = parseToolArguments(nested(512));
    expect(result.ok && result.repaired === false && result.json === nested(512)).toBe(true);
    expect(parseToolArguments(nested(513))).toEqual({ ok: false, error: 'the arguments nest deeper than 512 levels' });
  });

  it('counts no bracket inside strings toward the depth', () => {
    const brackets = '['.repeat(100_000);
    expect(parseToolArguments(`{"a": "${brackets}"}`)).toEqual(ok({ a: brackets }, false));
  });

  it('never throws on deep or unbalanced brackets of any size', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200_000 }), fc.constantFrom('[', '{', '{"a":', "{'a':[", '"', '{"a":"'), (count, unit) => {
        const result = parseToolArguments(unit.repeat(count));
        if (!result.ok) expectOneShortLine(result.error);
      }),
      { numRuns: 40 },
    );
  });
});

describe('parseToolArguments: __proto__', () => {
  it('keeps a __proto__ key as an own property and pollutes no prototype', () => {
    const raws = [
      '{"__proto__": {"polluted": 1}}',
      "{'__proto__': {'polluted': 1},}",
      '{__proto__: {polluted: 1}}',
      '{"__proto__": {"polluted": 1}}{"__proto__": {"polluted": 2}}',
    ];
    for (const raw of raws) {
      const result = parseToolArguments(raw);
      if (!result.ok) throw new Error(result.error);
      expect(Object.getPrototypeOf(result.value)).toBe(Object.prototype);
      expect(Object.keys(result.value)).toEqual(['__proto__']);
      expect(Object.getOwnPropertyDescriptor(result.value, '__proto__')?.value).toEqual({ polluted: 1 });
      expect(result.json).toBe('{"__proto__":{"polluted":1}}');
      expect((result.value as { polluted?: unknown }).polluted).toBeUndefined();
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
      expect((Object.prototype as { polluted?: unknown }).polluted).toBeUndefined();
    }
  });

  it('leaves constructor.prototype alone', () => {
    const result = parseToolArguments("{'constructor': {'prototype': {'polluted': 1}}}");
    expect(result).toEqual(ok({ constructor: { prototype: { polluted: 1 } } }, true));
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });
});

describe('parseToolArguments: properties', () => {
  const jsonObject = fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue({ stringUnit: 'binary' }));
  const whitespace = fc
    .array(fc.constantFrom(' ', '\t', '\n', '\r', '\r\n', '\u00A0', '\uFEFF', '\u2028'), { maxLength: 6 })
    .map((parts) => parts.join(''));

  it('reads back any JSON object exactly, unrepaired', () => {
    fc.assert(
      fc.property(jsonObject, (value) => {
        const json = JSON.stringify(value);
        expect(parseToolArguments(json)).toEqual({ ok: true, value: JSON.parse(json) as unknown, json, repaired: false });
      }),
      { numRuns: 500 },
    );
  });

  it('reads back any JSON object padded with whitespace, unrepaired; pretty-printed too', () => {
    fc.assert(
      fc.property(jsonObject, whitespace, whitespace, (value, before, after) => {
        const json = JSON.stringify(value);
        const expected = { ok: true, value: JSON.parse(json) as unknown, json, repaired: false };
        expect(parseToolArguments(`${before}${json}${after}`)).toEqual(expected);
        expect(parseToolArguments(`${before}${JSON.stringify(value, null, 2)}${after}`)).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('reads a doubled object as the first copy, repaired', () => {
    fc.assert(
      fc.property(jsonObject, whitespace, (value, between) => {
        const json = JSON.stringify(value);
        expect(parseToolArguments(`${json}${between}${json}`)).toEqual({ ok: true, value: JSON.parse(json) as unknown, json, repaired: true });
      }),
      { numRuns: 300 },
    );
  });

  const jsonish = fc
    .array(
      fc.constantFrom('{', '}', '[', ']', '"', '\\', ':', ',', "'", '//', '/*', '*/', '\n', '\r', '\t', ' ', 'a', '1', '-', '.', 'e', 'true', 'null', 'None', '```', '\u2028', '\uD800', '😀', '"a":', "'b':"),
      { maxLength: 60 },
    )
    .map((parts) => parts.join(''));

  it('never throws; an ok result is a plain object whose json reads back unrepaired; an error is one short line', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), jsonish), (raw) => {
        const result = parseToolArguments(raw);
        if (result.ok) {
          expect(Object.getPrototypeOf(result.value)).toBe(Object.prototype);
          expect(result.json).toBe(JSON.stringify(result.value));
          expect(parseToolArguments(result.json)).toEqual({ ok: true, value: JSON.parse(result.json) as unknown, json: result.json, repaired: false });
        } else {
          expectOneShortLine(result.error);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('calls nothing a repair when the input was valid JSON with only whitespace around', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), jsonish), (raw) => {
        const result = parseToolArguments(raw);
        let valid = true;
        try {
          JSON.parse(raw.trim() === '' ? '{}' : raw.trim());
        } catch {
          valid = false;
        }
        if (result.ok && !result.repaired) expect(valid).toBe(true);
        if (valid && result.ok) expect(result.repaired).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('formatNativeCall', () => {
  it('writes @name(id): json', () => {
    expect(formatNativeCall({ name: 'save', id: 'call_1', arguments: '{"path":"a.txt","content":"hi"}' })).toBe('@save(call_1): {"path":"a.txt","content":"hi"}');
    expect(formatNativeCall({ name: 'fs__read', id: 'toolu_01', arguments: '{}' })).toBe('@fs__read(toolu_01): {}');
  });
});

/** The call line that `parseNativeCallLines` gives for `text.slice(start, end)`. */
function callLine(name: string, id: string, args: ParsedArguments, start: number, end: number): NativeCallLine {
  return { name, id, arguments: args, start, end };
}

describe('parseNativeCallLines', () => {
  it('finds the lines formatNativeCall writes, with offsets of the @ and the end of the line', () => {
    const save = formatNativeCall({ name: 'save', id: 'call_1', arguments: '{"path":"a.txt","content":"hi"}' });
    const read = formatNativeCall({ name: 'read', id: 'toolu_2', arguments: '{"path":"a.txt"}' });
    const text = `Saving.\n${save}\n${read}`;
    expect(parseNativeCallLines(text)).toEqual([
      callLine('save', 'call_1', ok({ path: 'a.txt', content: 'hi' }, false), 8, 8 + save.length),
      callLine('read', 'toolu_2', ok({ path: 'a.txt' }, false), 9 + save.length, text.length),
    ]);
  });

  it('returns nothing for text without call lines', () => {
    expect(parseNativeCallLines('')).toEqual([]);
    expect(parseNativeCallLines('Just prose.\nNo calls @here(1): {} in the middle.\n')).toEqual([]);
  });

  it('reads an object over several lines, to the end of the line where it closes', () => {
    const text = '  @shell(c1): {\n  "command": "ls"\n}  tail\r\nafter\n';
    expect(parseNativeCallLines(text)).toEqual([callLine('shell', 'c1', ok({ command: 'ls' }, true), 2, text.indexOf('\r\n'))]);
  });

  it('runs an object that never closes to the end of the text, lines that look like calls included', () => {
    const text = '@shell(c2): {"command": "pw\n@read(c3): {"path": "a"}\n';
    // jsonrepair reads the rest as it can; no second call is listed.
    expect(parseNativeCallLines(text)).toEqual([callLine('shell', 'c2', ok({ command: 'pw', '@read(c3)': { path: 'a' } }, true), 0, text.length)]);
  });

  it('keeps lines inside a string of a multi-line object out of the search, fences included', () => {
    const text = ['@save(c1): {"path": "a.md", "content": "# A', '```', '@read(x): {}', '"}', '@read(c2): {"path": "a.md"}'].join('\n');
    expect(parseNativeCallLines(text)).toEqual([
      callLine('save', 'c1', ok({ path: 'a.md', content: '# A\n```\n@read(x): {}\n' }, true), 0, text.indexOf('\n@read(c2)')),
      callLine('read', 'c2', ok({ path: 'a.md' }, false), text.indexOf('@read(c2)'), text.length),
    ]);
  });

  it('takes the rest of the line as the arguments: trailing text makes a repair, the next line is prose', () => {
    const text = '\t@ok(1):{"a":1} tail {"b":2}\n{"c":3}';
    expect(parseNativeCallLines(text)).toEqual([callLine('ok', '1', ok({ a: 1 }, true), 1, text.indexOf('\n'))]);
  });

  it('reads nothing after the colon as no arguments', () => {
    const text = '@x(1):\n@y(2):   \r\n@z(): {}';
    expect(parseNativeCallLines(text)).toEqual([
      callLine('x', '1', ok({}, false), 0, 6),
      callLine('y', '2', ok({}, false), 7, 16),
      callLine('z', '', ok({}, false), 18, 26),
    ]);
  });

  it('accepts names of letters, digits, _, -, . and :, and ids of anything but ) and line breaks', () => {
    const text = '@mcp__fs.read-file:v2(id (1 x ✓): {"a": 1}';
    expect(parseNativeCallLines(text)).toEqual([callLine('mcp__fs.read-file:v2', 'id (1 x ✓', ok({ a: 1 }, false), 0, text.length)]);
  });

  it('needs the head at the start of a line and a { or nothing after the colon', () => {
    const notCalls = [
      '@alice(admin): hello',
      '@x(1) : {}',
      '@x (1): {}',
      '@(1): {}',
      '@x(1): [1]',
      '@x(1): "text"',
      '@x(a)b): {}',
      '@ä(1): {}',
      'say @x(1): {}',
      '- @x(1): {}',
      '@x(1)',
    ];
    expect(parseNativeCallLines(notCalls.join('\n'))).toEqual([]);
  });

  it('lists broken arguments with their error, positions counted from just after the colon', () => {
    const text = "@x(1): {a: it's}\n@y(2): {'a': 1,}";
    expect(parseNativeCallLines(text)).toEqual([
      callLine('x', '1', { ok: false, error: `the arguments are not valid JSON: colon expected at position 9, near " {a: it's}"` }, 0, 16),
      callLine('y', '2', ok({ a: 1 }, true), 17, text.length),
    ]);
  });

  it('skips fenced code blocks of backticks and tildes', () => {
    const text = [
      'Like this:',
      '```',
      '@save(x): {"path": "a"}',
      '~~~',
      '@save(y): {"path": "b"}',
      '```',
      '~~~~ text',
      '@save(z): {"path": "c"}',
      '~~~',
      '@save(z2): {"path": "c"}',
      '~~~~~',
      'I would write @save(w): {"path": "d"} here.',
      '@read(v): {"path": "e"}',
    ].join('\n');
    expect(parseNativeCallLines(text).map((line) => line.id)).toEqual(['v']);
  });

  it('follows CommonMark on which lines open and close fences', () => {
    const ids = (lines: string[]): string[] => parseNativeCallLines(lines.join('\n')).map((line) => line.id);
    // Up to three spaces of indentation open a fence; four do not.
    expect(ids(['   ```', '@a(1): {}', '```', '@a(2): {}'])).toEqual(['2']);
    expect(ids(['    ```', '@a(1): {}'])).toEqual(['1']);
    // Two backticks are not a fence; a backtick in a backtick fence's info string makes it inline code.
    expect(ids(['``', '@a(1): {}'])).toEqual(['1']);
    expect(ids(['```js `x`', '@a(1): {}'])).toEqual(['1']);
    expect(ids(['~~~ `x`', '@a(1): {}', '~~~', '@a(2): {}'])).toEqual(['2']);
    // A closing fence is bare, of the same character and at least as long.
    expect(ids(['````', '```', '@a(1): {}', '```` x', '@a(2): {}', '`````  ', '@a(3): {}'])).toEqual(['3']);
    expect(ids(['```', '~~~', '@a(1): {}', '```\r', '@a(2): {}'])).toEqual(['2']);
    // A block that never closes runs to the end.
    expect(ids(['@a(1): {}', '```python', '@a(2): {}', '@a(3): {}'])).toEqual(['1']);
  });

  it('reads a call right after a call that spans lines', () => {
    const text = '@a(1): {\n"k": 1}\n@b(2): {"k": 2}';
    expect(parseNativeCallLines(text).map((line) => [line.id, line.arguments])).toEqual([
      ['1', ok({ k: 1 }, false)],
      ['2', ok({ k: 2 }, false)],
    ]);
  });

  it('hands jsonrepair at most 16384 characters per text', () => {
    // Each arguments text needs jsonrepair and is exactly 1024 characters long.
    const broken = `{'a': '${'x'.repeat(1015)}'}`;
    expect(broken.length).toBe(1024);
    const text = Array.from({ length: 18 }, (_, index) => `@t(${index}): ${broken}`).join('\n');
    const found = parseNativeCallLines(text);
    expect(found.slice(0, 16).map((line) => line.arguments)).toEqual(Array.from({ length: 16 }, () => ok({ a: 'x'.repeat(1015) }, true)));
    const spent = {
      ok: false,
      error: 'the arguments are not valid JSON (at position 2, near " {\'a\': \'xxxxxxxxxxxxxxxxxxxxxx…") and were not repaired: the repair budget for this text is spent',
    };
    expect(found.slice(16).map((line) => line.arguments)).toEqual([spent, spent]);
    // Valid and whitespace-escapable arguments need no budget.
    const after = parseNativeCallLines(`${text}\n@t(v): {"a": 1}\n@t(w): {"a": "b\nc"}`).slice(18);
    expect(after.map((line) => line.arguments)).toEqual([ok({ a: 1 }, false), ok({ a: 'b\nc' }, true)]);
    // Each text has its own budget.
    expect(parseNativeCallLines(`@t(1): ${broken}`)[0]?.arguments).toEqual(ok({ a: 'x'.repeat(1015) }, true));
  });

  it('reads a megabyte of mixed text', () => {
    const block = [
      'Some prose about @save(x): {} in a sentence.',
      '@shell(c): {"command": "echo \\"}\\" done"}',
      '```',
      '@shell(hidden): {"command": "no"}',
      '```',
      '@save(m): {"path": "a.md", "content": "first',
      'second {'.repeat(3),
      '"}',
      "@bad(b): {a: it's}",
      '',
    ].join('\n');
    const repeats = Math.ceil(1_000_000 / block.length);
    const text = block.repeat(repeats);
    const found = parseNativeCallLines(text);
    expect(found).toHaveLength(3 * repeats);
    expect(found.slice(-3).map((line) => [line.name, line.id, line.arguments])).toEqual([
      ['shell', 'c', ok({ command: 'echo "}" done' }, false)],
      ['save', 'm', ok({ path: 'a.md', content: `first\n${'second {'.repeat(3)}\n` }, true)],
      ['bad', 'b', { ok: false, error: `the arguments are not valid JSON (at position 2, near " {a: it's}") and were not repaired: the repair budget for this text is spent` }],
    ]);
  });

  it('reads a megabyte that is one unterminated call', () => {
    const text = `@save(c): {"content": "${'line {[\n'.repeat(130_000)}`;
    const found = parseNativeCallLines(text);
    expect(found.map((line) => [line.name, line.start, line.end, line.arguments.ok])).toEqual([['save', 0, text.length, false]]);
  });

  it('reads a megabyte of near-misses', () => {
    const text = `${'@x(aaaaaaaaaaaaaaaaaaaaa'.repeat(2)}\n`.repeat(20_000) + `${'  ``'.repeat(50)}\n`.repeat(2_000);
    expect(parseNativeCallLines(text)).toEqual([]);
  });
});

describe('parseNativeCallLines: properties', () => {
  const name = fc.stringMatching(/^[A-Za-z0-9_.:-]{1,20}$/);
  const id = fc.string({ unit: 'binary', maxLength: 20 }).filter((value) => !/[)\r\n]/.test(value));
  const value = fc.dictionary(fc.string({ unit: 'binary', maxLength: 8 }), fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 }), { maxKeys: 5 });
  const prose = fc
    .string({ unit: 'grapheme', maxLength: 40 })
    .map((line) => line.replace(/[\r\n]/g, ' '))
    .filter((line) => !/^\s*[@`~]/.test(line));

  it('reads back the lines formatNativeCall writes, between prose lines', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.array(prose, { maxLength: 2 }), name, id, value), { maxLength: 6 }), fc.constantFrom('\n', '\r\n'), (calls, newline) => {
        let text = '';
        const expected: NativeCallLine[] = [];
        for (const [before, callName, callId, args] of calls) {
          for (const line of before) text += line + newline;
          const json = JSON.stringify(args);
          const line = formatNativeCall({ name: callName, id: callId, arguments: json });
          expected.push(callLine(callName, callId, { ok: true, value: JSON.parse(json) as Record<string, unknown>, json, repaired: false }, text.length, text.length + line.length));
          text += line + newline;
        }
        expect(parseNativeCallLines(text)).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  const pieces = fc.constantFrom(
    '@save(a): ',
    '@x(',
    '): {',
    '{',
    '}',
    '[',
    '"',
    "'",
    '\\',
    '\n',
    '\r\n',
    '\r',
    '```\n',
    '~~~\n',
    '   ````',
    '/*',
    '//',
    'text ',
    '  ',
    '@read(b): {"path": "x"}\n',
    '\u2028',
    '\uDC00',
  );

  it('never throws; every line starts at its head and reads its own text as parseToolArguments does', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.array(pieces, { maxLength: 50 }).map((parts) => parts.join(''))), (text) => {
        let previousEnd = 0;
        for (const line of parseNativeCallLines(text)) {
          expect(line.start >= previousEnd && line.start < line.end && line.end <= text.length).toBe(true);
          const head = `@${line.name}(${line.id}):`;
          expect(text.startsWith(head, line.start)).toBe(true);
          expect(/^[ \t]*$/.test(text.slice(text.lastIndexOf('\n', line.start) + 1, line.start))).toBe(true);
          expect(line.arguments).toEqual(parseToolArguments(text.slice(line.start + head.length, line.end)));
          previousEnd = line.end;
        }
      }),
      { numRuns: 3000 },
    );
  });
});
