import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defaultArguments, parametersSchema, parseSignature, returnSchema, type ProgramParameter } from '../../src/ptc/program-params';

/** A program whose leading comments are `lines`, followed by one line of code. */
const program = (...lines: string[]) => [...lines, 'return args;'].join('\n');

/** The one parameter a single `param` line declares (failing the test when it declares none). */
function only(line: string): ProgramParameter {
  const signature = parseSignature(program(line));
  expect(signature.errors).toEqual([]);
  expect(signature.parameters).toHaveLength(1);
  return signature.parameters[0] as ProgramParameter;
}

/** The errors of a single `param` line. */
const errorsOf = (line: string) => parseSignature(program(line)).errors;

/** Whether `value` is accepted for a parameter declared as `type`. */
function accepts(type: string, value: unknown): boolean {
  const schema = parametersSchema([{ name: 'p', type, optional: false }]);
  return schema.safeParse({ p: value }).success;
}

describe('parseSignature: types', () => {
  it('reads each base type, required when it has neither ? nor a default', () => {
    for (const type of ['string', 'number', 'integer', 'boolean', 'object', 'unknown']) {
      expect(only(`// param value: ${type}`)).toEqual({ name: 'value', type, optional: false });
    }
  });

  it('gives each base type the schema it names', () => {
    expect(accepts('string', 'x')).toBe(true);
    expect(accepts('string', 1)).toBe(false);
    expect(accepts('number', 1.5)).toBe(true);
    expect(accepts('number', '1')).toBe(false);
    expect(accepts('integer', 3)).toBe(true);
    expect(accepts('integer', 3.5)).toBe(false);
    expect(accepts('boolean', false)).toBe(true);
    expect(accepts('boolean', 0)).toBe(false);
    expect(accepts('object', { a: 1 })).toBe(true);
    expect(accepts('object', [])).toBe(false);
    expect(accepts('object', null)).toBe(false);
    expect(accepts('object', 'text')).toBe(false);
    for (const value of [null, 0, 'x', [1], { a: [] }]) expect(accepts('unknown', value)).toBe(true);
  });

  it('reads a union of string literals as an enum of those strings', () => {
    const parameter = only('// param level: "low" | "medium" | "high"');
    expect(parameter).toEqual({ name: 'level', type: '"low" | "medium" | "high"', optional: false });
    expect(accepts(parameter.type, 'medium')).toBe(true);
    expect(accepts(parameter.type, 'extreme')).toBe(false);
    expect(accepts(parameter.type, 1)).toBe(false);
  });

  it('reads a single string literal, with escapes, as a type of its own', () => {
    expect(accepts('"only"', 'only')).toBe(true);
    expect(accepts('"only"', 'other')).toBe(false);
    expect(only('// param q: "say \\"hi\\"" | "x"').type).toBe('"say \\"hi\\"" | "x"');
    expect(accepts('"say \\"hi\\"" | "x"', 'say "hi"')).toBe(true);
  });

  it('keeps a | inside a quoted literal as part of that literal', () => {
    const parameter = only('// param sep: "a|b" | "c"');
    expect(accepts(parameter.type, 'a|b')).toBe(true);
    expect(accepts(parameter.type, 'c')).toBe(true);
    expect(accepts(parameter.type, 'a')).toBe(false);
  });

  it('reads arrays of every type, nested arrays and parenthesised unions', () => {
    expect(only('// param names: string[]').type).toBe('string[]');
    expect(accepts('string[]', ['a', 'b'])).toBe(true);
    expect(accepts('string[]', ['a', 1])).toBe(false);
    expect(accepts('string[]', 'a')).toBe(false);
    expect(accepts('integer[]', [1, 2])).toBe(true);
    expect(accepts('integer[]', [1, 2.5])).toBe(false);
    expect(accepts('boolean[]', [])).toBe(true);
    expect(accepts('object[]', [{}, { a: 1 }])).toBe(true);
    expect(accepts('object[]', [[]])).toBe(false);
    expect(accepts('unknown[]', [1, 'a', null])).toBe(true);
    expect(only('// param grid: number[][]').type).toBe('number[][]');
    expect(accepts('number[][]', [[1, 2], [], [3]])).toBe(true);
    expect(accepts('number[][]', [1, 2])).toBe(false);
    expect(accepts('number[][][]', [[[1]]])).toBe(true);
    expect(accepts('number[][][]', [[1]])).toBe(false);
    expect(only('// param levels: ("low" | "high")[]').type).toBe('("low" | "high")[]');
    expect(accepts('("low" | "high")[]', ['low', 'high', 'low'])).toBe(true);
    expect(accepts('("low" | "high")[]', ['mid'])).toBe(false);
    expect(accepts('("a" | "b")[][]', [['a'], ['b', 'a']])).toBe(true);
  });

  it('binds | loosest, as TypeScript does: a literal or an array of another is not a union fence reads', () => {
    expect(errorsOf('// param mode: "a" | "b"[]')[0]).toContain('unknown type "\"a\" | \"b\"[]"');
    expect(errorsOf('// param mode: "a" | string')[0]).toContain('unknown type');
  });

  it('rejects an unknown type with the line number and the types fence reads', () => {
    const errors = parseSignature(['// intent: types', '', '// param when: Date', 'return 1;'].join('\n')).errors;
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^line 3: parameter when: unknown type "Date"/);
    expect(errors[0]).toContain('string, number, integer, boolean, object, unknown');
    expect(errorsOf('// param when: Date[]')[0]).toContain('unknown type "Date[]"');
    expect(errorsOf('// param when: String')[0]).toContain('unknown type "String"');
    expect(errorsOf('// param when: low | high')[0]).toContain('unknown type "low | high"');
    expect(errorsOf('// param when: "low" | high')[0]).toContain('unknown type');
    expect(errorsOf("// param when: 'low' | 'high'")[0]).toContain('unknown type');
    expect(errorsOf('// param when: "low" |')[0]).toContain('unknown type');
    expect(errorsOf('// param when: []')[0]).toContain('unknown type "[]"');
    expect(errorsOf('// param when: ()')[0]).toContain('unknown type "()"');
  });

  it('rejects the names of Object.prototype members as types', () => {
    for (const type of ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf', 'constructor[]', 'isPrototypeOf']) {
      const errors = errorsOf(`// param p: ${type}`);
      expect(errors, type).toHaveLength(1);
      expect(errors[0]).toContain(`unknown type "${type}"`);
    }
  });

  it('rejects parameter names every object already has, which could never be left out', () => {
    const names = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__', '__defineGetter__'];
    const signature = parseSignature(program(...names.map((name) => `// param ${name}?: string`), '// param fine: string = "x"'));
    expect(signature.parameters.map((p) => p.name)).toEqual(['fine']);
    expect(signature.errors).toHaveLength(names.length);
    names.forEach((name, i) => expect(signature.errors[i]).toMatch(new RegExp(`^line ${i + 1}: parameter ${name}: `)));
    // Names that merely resemble them are fine.
    expect(only('// param constructors: string').name).toBe('constructors');
    expect(only('// param proto: string').name).toBe('proto');
  });

  it('makes parameters that an argument object parsed from JSON can leave out', () => {
    const { parameters } = parseSignature(program('// param name?: string', '// param keys: string[] = ["a"]'));
    expect(parametersSchema(parameters).parse(JSON.parse('{}'))).toEqual({ keys: ['a'] });
  });

  it('needs a type after the colon', () => {
    expect(errorsOf('// param name:')).toEqual(['line 1: parameter name: a type is missing']);
    expect(errorsOf('// param name: = "x"')).toEqual(['line 1: parameter name: a type is missing']);
    expect(errorsOf('// param name:  — only a description')[0]).toMatch(/^line 1: parameter name: /);
  });
});

describe('parseSignature: optional parameters and defaults', () => {
  it('makes a parameter with ? optional, with no default', () => {
    const parameter = only('// param limit?: integer');
    expect(parameter).toEqual({ name: 'limit', type: 'integer', optional: true });
    expect('default' in parameter).toBe(false);
  });

  it('reads a JSON default of every kind and makes the parameter optional', () => {
    expect(only('// param who: string = "engineering"')).toEqual({ name: 'who', type: 'string', optional: true, default: 'engineering' });
    expect(only('// param n: number = -2.5').default).toBe(-2.5);
    expect(only('// param n: integer = 10').default).toBe(10);
    expect(only('// param flag: boolean = false').default).toBe(false);
    expect(only('// param opts: object = {"deep": {"a": [1, 2]}}').default).toEqual({ deep: { a: [1, 2] } });
    expect(only('// param anything: unknown = null').default).toBeNull();
    expect(only('// param list: string[] = []').default).toEqual([]);
    expect(only('// param grid: integer[][] = [[1], [2, 3]]').default).toEqual([[1], [2, 3]]);
    expect(only('// param level: "low" | "high" = "high"').default).toBe('high');
    expect(only('// param who?: string = "x"')).toEqual({ name: 'who', type: 'string', optional: true, default: 'x' });
  });

  it('keeps an = inside a quoted default or literal where it is', () => {
    expect(only('// param expr: string = "a=b"')).toMatchObject({ type: 'string', default: 'a=b' });
    const parameter = only('// param op: "a=b" | "c" = "a=b"');
    expect(parameter).toMatchObject({ type: '"a=b" | "c"', default: 'a=b' });
  });

  it('refuses a default that is not JSON', () => {
    expect(errorsOf("// param who: string = 'single'")).toEqual(["line 1: parameter who: the default 'single' is not JSON"]);
    expect(errorsOf('// param who: string = engineering')).toEqual(['line 1: parameter who: the default engineering is not JSON']);
    expect(errorsOf('// param opts: object = {a: 1}')[0]).toContain('is not JSON');
    expect(errorsOf('// param who: string =')).toEqual(['line 1: parameter who: the default (empty) is not JSON']);
    expect(errorsOf('// param n: number = NaN')[0]).toContain('is not JSON');
  });

  it('refuses a default that is JSON of the wrong type', () => {
    expect(errorsOf('// param n: integer = 1.5')).toEqual(['line 1: parameter n: the default 1.5 is not a integer']);
    expect(errorsOf('// param n: number = "3"')).toEqual(['line 1: parameter n: the default "3" is not a number']);
    expect(errorsOf('// param flag: boolean = "true"')[0]).toContain('is not a boolean');
    expect(errorsOf('// param level: "low" | "high" = "mid"')[0]).toContain('the default "mid" is not a "low" | "high"');
    expect(errorsOf('// param list: string[] = [1]')[0]).toContain('is not a string[]');
    expect(errorsOf('// param list: string[] = "a"')[0]).toContain('is not a string[]');
    expect(errorsOf('// param opts: object = []')[0]).toContain('is not a object');
    expect(errorsOf('// param opts: object = null')[0]).toContain('is not a object');
    expect(errorsOf('// param who: string = null')[0]).toContain('is not a string');
  });

  it('leaves out a parameter whose line has an error', () => {
    const signature = parseSignature(program('// param good: string', '// param bad: integer = 0.5', '// param also: boolean'));
    expect(signature.parameters.map((p) => p.name)).toEqual(['good', 'also']);
    expect(signature.errors).toEqual(['line 2: parameter bad: the default 0.5 is not a integer']);
  });
});

describe('parseSignature: descriptions', () => {
  it('takes the description after an em dash, a hyphen or a double hyphen', () => {
    expect(only('// param who: string — the department to check').description).toBe('the department to check');
    expect(only('// param who: string - the department to check').description).toBe('the department to check');
    expect(only('// param who: string -- the department to check').description).toBe('the department to check');
  });

  it('takes the description after a default', () => {
    expect(only('// param who: string = "sales" — the department')).toEqual({
      name: 'who',
      type: 'string',
      optional: true,
      default: 'sales',
      description: 'the department',
    });
    expect(only('// param n: integer = 3 - how many')).toMatchObject({ default: 3, description: 'how many' });
    expect(only('// param n: number = -1 -- below zero means all')).toMatchObject({ default: -1, description: 'below zero means all' });
  });

  it('splits at the first separator only, keeping later ones in the description', () => {
    expect(only('// param who: string — one — two - three').description).toBe('one — two - three');
  });

  it('does not split at a separator inside a quoted default', () => {
    expect(only('// param title: string = "war — peace"')).toEqual({ name: 'title', type: 'string', optional: true, default: 'war — peace' });
    expect(only('// param title: string = "war — peace" — the title')).toMatchObject({ default: 'war — peace', description: 'the title' });
    expect(only('// param title: string = "a - b -- c" - the title')).toMatchObject({ default: 'a - b -- c', description: 'the title' });
    expect(only('// param title: string = "say \\" — then" — escaped quote')).toMatchObject({
      default: 'say " — then',
      description: 'escaped quote',
    });
    expect(only('// param titles: string[] = ["a — b", "c"] — two titles')).toMatchObject({ default: ['a — b', 'c'], description: 'two titles' });
  });

  it('takes a separator at the end of the line as no description', () => {
    expect(only('// param x: string —')).toEqual({ name: 'x', type: 'string', optional: false });
    expect(only('// param x: string = "a" -')).toEqual({ name: 'x', type: 'string', optional: true, default: 'a' });
  });

  it('does not split at a dash that is not spaced on both sides', () => {
    expect(only('// param n: number = -5').default).toBe(-5);
    expect(only('// param k: "left-right" | "up" — a direction')).toMatchObject({ type: '"left-right" | "up"', description: 'a direction' });
    expect(errorsOf('// param who: string—no spaces')[0]).toContain('unknown type "string—no spaces"');
  });

});

describe('parseSignature: which lines are read', () => {
  it('reads only the leading comment lines, past blank lines and other comments', () => {
    const code = [
      '',
      '// intent: find staff over their limit',
      '   ',
      '// some prose about the program',
      '  // param a: string',
      '// param b: number',
      'const x = 1;',
      '// param c: string',
      '// returns: number',
      'return x;',
    ].join('\n');
    const signature = parseSignature(code);
    expect(signature.parameters.map((p) => p.name)).toEqual(['a', 'b']);
    expect(signature.returns).toBeUndefined();
    expect(signature.errors).toEqual([]);
  });

  it('ignores even broken declarations after the first line of code', () => {
    const signature = parseSignature('return 1;\n// param x: Date\n// returns:');
    expect(signature).toEqual({ parameters: [], errors: [] });
  });

  it('stops at a block comment, which is code as far as declarations go', () => {
    const signature = parseSignature('/* header */\n// param a: string\nreturn 1;');
    expect(signature.parameters).toEqual([]);
  });

  it('ignores // param lines that are plain prose', () => {
    const signature = parseSignature(
      program(
        '// param values are read from args',
        '// parameters: none of these are read',
        '// params: neither',
        '// param',
        '// param: string',
        '// paramount: string',
        '// the param x: string is mentioned in prose',
      ),
    );
    expect(signature).toEqual({ parameters: [], errors: [] });
  });

  it('reads the key whatever its case and spacing', () => {
    const signature = parseSignature(program('//param tight:number', '//  PARAM  Loud? :  boolean', '// Returns: string'));
    expect(signature.errors).toEqual([]);
    expect(signature.parameters).toEqual([
      { name: 'tight', type: 'number', optional: false },
      { name: 'Loud', type: 'boolean', optional: true },
    ]);
    expect(signature.returns).toBe('string');
  });

  it('reads Windows line endings', () => {
    const signature = parseSignature('// param a: string = "x" — first\r\n// returns: string[]\r\nreturn [args.a];\r\n');
    expect(signature.errors).toEqual([]);
    expect(signature.parameters).toEqual([{ name: 'a', type: 'string', optional: true, default: 'x', description: 'first' }]);
    expect(signature.returns).toBe('string[]');
  });

  it('reports a parameter declared twice and keeps the first', () => {
    const signature = parseSignature(['// param who: string', '// param n: number', '// param who?: number = 1', 'return 1;'].join('\n'));
    expect(signature.parameters).toEqual([
      { name: 'who', type: 'string', optional: false },
      { name: 'n', type: 'number', optional: false },
    ]);
    expect(signature.errors).toEqual(['line 3: parameter who is declared twice']);
  });

  it('gives every error its own line number', () => {
    const signature = parseSignature(['// intent: many errors', '// param a: Date', '// param b: number = "x"', '// param a: string', '// returns:', 'return 1;'].join('\n'));
    expect(signature.errors.map((error) => error.slice(0, error.indexOf(':')))).toEqual(['line 2', 'line 3', 'line 5']);
    expect(signature.parameters.map((p) => p.name)).toEqual(['a']);
  });

  it('never throws, whatever the text', () => {
    for (const code of ['', '\n\n', '//', '// param', '// param x: "', '// param x: string = "unterminated', '// param x: ((((string', '// param x: string[', '\u0000']) {
      expect(() => parseSignature(code)).not.toThrow();
    }
    expect(errorsOf('// param x: string = "unterminated')[0]).toContain('is not JSON');
  });
});

describe('parseSignature: returns', () => {
  it('keeps the returned type as written, trimmed', () => {
    expect(parseSignature(program('// returns:   { name: string; over: number }[]  ')).returns).toBe('{ name: string; over: number }[]');
    expect(parseSignature(program('// returns: Promise<"a" | "b">')).returns).toBe('Promise<"a" | "b">');
  });

  it('needs a type after returns:', () => {
    const signature = parseSignature(program('// intent: x', '// returns:   '));
    expect(signature.returns).toBeUndefined();
    expect(signature.errors).toEqual(['line 2: "returns:" needs a type']);
  });

  it('does not take prose that starts with "returns" for the key', () => {
    expect(parseSignature(program('// returns the list of names', '// returned: x'))).toEqual({ parameters: [], errors: [] });
  });

  it('lets a later returns line replace an earlier one', () => {
    expect(parseSignature(program('// returns: string', '// returns: number')).returns).toBe('number');
  });
});

describe('object types', () => {
  it('reads typed properties, optional ones with ?, separated by ; or ,', () => {
    const type = '{ name: string; total?: number, "first day": integer }';
    expect(only(`// param row: ${type}`)).toEqual({ name: 'row', type, optional: false });
    expect(accepts(type, { name: 'Ada', 'first day': 3 })).toBe(true);
    expect(accepts(type, { name: 'Ada', total: 4.5, 'first day': 3 })).toBe(true);
    expect(accepts(type, { name: 'Ada' })).toBe(false);
    expect(accepts(type, { name: 'Ada', total: '4', 'first day': 3 })).toBe(false);
    expect(accepts(type, ['Ada'])).toBe(false);
  });

  it('nests in arrays, unions of literals and other objects, and lets unnamed properties through', () => {
    const type = '{ who: { name: string; tags: string[] }; level: "junior" | "senior" }[]';
    expect(accepts(type, [{ who: { name: 'a', tags: [] }, level: 'senior', extra: true }])).toBe(true);
    expect(accepts(type, [{ who: { name: 'a', tags: [1] }, level: 'senior' }])).toBe(false);
    expect(accepts(type, [{ who: { name: 'a', tags: [] }, level: 'middle' }])).toBe(false);
    expect(accepts('{}', {})).toBe(true);
  });

  it('refuses what it cannot read, naming the forms it can', () => {
    for (const type of ['{ name string }', '{ name: string', '{ a: string; a: number }', '{ a: Date }', '{ a: string }}', '{ 1a: string }']) {
      expect(errorsOf(`// param row: ${type}`)[0], type).toMatch(/unknown type .*\{ name: type; … \}/);
    }
  });

  it('does not take a | inside an object for a union', () => {
    expect(accepts('{ level: "a" | "b" }', { level: 'b' })).toBe(true);
    expect(accepts('{ level: "a" | "b" }', { level: 'c' })).toBe(false);
  });
});

describe('types from a repository', () => {
  it('are not read past 16 levels or 4096 characters, and never overflow the stack', () => {
    const nested = (depth: number) => '('.repeat(depth) + 'string' + ')'.repeat(depth);
    expect(accepts(nested(16), 'a')).toBe(true);
    expect(errorsOf(`// param x: ${nested(17)}`)[0]).toMatch(/unknown type/);
    for (const type of [nested(20_000), `string${'[]'.repeat(20_000)}`, `${'{ a: '.repeat(5_000)}string${' }'.repeat(5_000)}`]) {
      expect(() => parseSignature(`// param x: ${type}\n// returns: ${type}\nreturn 1;`)).not.toThrow();
      expect(returnSchema(type)).toBeUndefined();
    }
    expect(returnSchema(`{ ${Array.from({ length: 400 }, (_, i) => `p${i}: string`).join('; ')} }`)).toBeUndefined();
  });
});

describe('returnSchema', () => {
  it('checks a declared type, saying whether its values are objects', () => {
    const list = returnSchema('string[]');
    expect(list?.object).toBe(false);
    expect(list?.schema.safeParse(['a']).success).toBe(true);
    expect(list?.schema.safeParse([1]).success).toBe(false);
    expect(returnSchema('{ total: number }')?.object).toBe(true);
    expect(returnSchema('object')?.object).toBe(true);
    expect(returnSchema(' "ok" | "late" ')?.schema.safeParse('late').success).toBe(true);
  });

  it('has none for no type, unknown, or a type fence does not read', () => {
    for (const type of [undefined, '', 'unknown', 'Map<string, number>', 'Promise<string>', '{ a: Date }']) expect(returnSchema(type), String(type)).toBeUndefined();
  });
});

describe('parametersSchema', () => {
  const code = program(
    '// intent: find the staff of a department over their travel limit',
    '// param department: string = "engineering" — the department to check',
    '// param levels?: ("junior" | "senior")[] — only these levels (default: all)',
    '// param limit: integer - the limit in euros',
    '// param verbose: boolean = false',
    '// param filters?: object',
    '// returns: string[]',
  );
  const { parameters, errors } = parseSignature(code);

  it('parses the example declarations', () => {
    expect(errors).toEqual([]);
    expect(parameters.map((p) => [p.name, p.optional])).toEqual([
      ['department', true],
      ['levels', true],
      ['limit', false],
      ['verbose', true],
      ['filters', true],
    ]);
  });

  it('needs the required parameters and fills in the defaults', () => {
    const schema = parametersSchema(parameters);
    expect(schema.parse({ limit: 500 })).toEqual({ department: 'engineering', limit: 500, verbose: false });
    expect(schema.parse({ limit: 1, department: 'sales', levels: ['senior'], verbose: true, filters: { a: 1 } })).toEqual({
      department: 'sales',
      levels: ['senior'],
      limit: 1,
      verbose: true,
      filters: { a: 1 },
    });
    const missing = schema.safeParse({});
    expect(missing.success).toBe(false);
    expect(missing.error?.issues.map((issue) => issue.path.join('.'))).toEqual(['limit']);
  });

  it('checks the type of each argument given', () => {
    const schema = parametersSchema(parameters);
    const bad = schema.safeParse({ limit: 1.5, department: 7, levels: ['middle'], verbose: 'yes', filters: [] });
    expect(bad.success).toBe(false);
    expect(new Set(bad.error?.issues.map((issue) => issue.path[0]))).toEqual(new Set(['limit', 'department', 'levels', 'verbose', 'filters']));
  });

  it('does not share a default object between parses', () => {
    const { parameters } = parseSignature(program('// param opts: object = {"a": 1}'));
    const schema = parametersSchema(parameters);
    const first = schema.parse({}) as { opts: Record<string, unknown> };
    first.opts.a = 99;
    expect(schema.parse({})).toEqual({ opts: { a: 1 } });
    expect(parameters[0]?.default).toEqual({ a: 1 });
  });

  it('requires the key of a required unknown parameter, whatever its value', () => {
    const schema = parametersSchema(parseSignature(program('// param anything: unknown')).parameters);
    expect(schema.safeParse({}).success).toBe(false);
    expect(schema.safeParse({ anything: null }).success).toBe(true);
    expect(schema.safeParse({ anything: { deep: [1] } }).success).toBe(true);
  });

  it('is an empty object for a program that declares nothing', () => {
    const schema = parametersSchema([]);
    expect(schema.parse({})).toEqual({});
    expect(defaultArguments([])).toEqual({});
  });

  it('keeps descriptions, defaults, enums and what is required in the JSON schema callers see', () => {
    const json = z.toJSONSchema(parametersSchema(parameters), { io: 'input' }) as {
      properties: Record<string, Record<string, unknown>>;
      required: string[];
    };
    expect(json.required).toEqual(['limit']);
    expect(json.properties.department).toMatchObject({ type: 'string', default: 'engineering', description: 'the department to check' });
    expect(json.properties.levels).toMatchObject({
      type: 'array',
      items: { type: 'string', enum: ['junior', 'senior'] },
      description: 'only these levels (default: all)',
    });
    expect(json.properties.limit).toMatchObject({ type: 'integer', description: 'the limit in euros' });
    expect(json.properties.verbose).toMatchObject({ type: 'boolean', default: false });
    expect(json.properties.verbose).not.toHaveProperty('description');
    expect(json.properties.filters).toMatchObject({ type: 'object' });
  });

  it('keeps the description of a defaulted parameter of every type in the JSON schema', () => {
    const declared = parseSignature(
      program(
        '// param s: string = "x" — a string',
        '// param n: number = 1 — a number',
        '// param i: integer = 2 — an integer',
        '// param b: boolean = true — a boolean',
        '// param o: object = {} — an object',
        '// param u: unknown = null — anything',
        '// param e: "a" | "b" = "a" — a choice',
        '// param l: string[][] = [["x"]] — a grid',
      ),
    );
    expect(declared.errors).toEqual([]);
    const json = z.toJSONSchema(parametersSchema(declared.parameters), { io: 'input' }) as {
      properties: Record<string, Record<string, unknown>>;
      required?: string[];
    };
    expect(json.required ?? []).toEqual([]);
    for (const parameter of declared.parameters) {
      expect(json.properties[parameter.name], parameter.name).toMatchObject({ description: parameter.description, default: parameter.default });
    }
  });

  it('falls back to unknown for a type it cannot read, rather than throwing', () => {
    const schema = parametersSchema([{ name: 'odd', type: 'Date', optional: false }]);
    expect(schema.safeParse({ odd: 'anything' }).success).toBe(true);
  });
});

describe('defaultArguments', () => {
  it('gives the declared defaults, including falsy ones, and nothing for the others', () => {
    const { parameters } = parseSignature(
      program(
        '// param who: string = "sales"',
        '// param zero: integer = 0',
        '// param off: boolean = false',
        '// param empty: string = ""',
        '// param none: unknown = null',
        '// param list: number[] = [1, 2]',
        '// param maybe?: string',
        '// param needed: number',
      ),
    );
    expect(defaultArguments(parameters)).toEqual({ who: 'sales', zero: 0, off: false, empty: '', none: null, list: [1, 2] });
  });

  it('matches what the schema fills in for an empty call', () => {
    const { parameters } = parseSignature(program('// param who: string = "sales"', '// param n: integer = 3', '// param maybe?: string'));
    expect(parametersSchema(parameters).parse({})).toEqual(defaultArguments(parameters));
  });
});
