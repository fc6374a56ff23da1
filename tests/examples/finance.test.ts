import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/config';
import { jsonSchemaToTypeScript } from '../../src/tools/declarations';

const exampleDir = fileURLToPath(new URL('../../examples/finance', import.meta.url));

interface Staff {
  id: string;
  name: string;
  department: string;
  level: string;
}

interface Expense {
  id: string;
  staffId: string;
  date: string;
  category: string;
  amount: number;
}

interface DataSet {
  staff: Staff[];
  expenses: Expense[];
  limits: Record<string, number>;
}

/** A copy of the example folder in a fresh temp dir, its committed data included. */
async function copyExample(): Promise<string> {
  const dir = join(await mkdtemp(join(tmpdir(), 'fence-finance-')), 'finance');
  await cp(exampleDir, dir, { recursive: true });
  return dir;
}

function generate(dir: string, ...options: string[]) {
  return execa('node', ['generate-data.js', ...options], { cwd: dir, reject: false });
}

function runTool(dir: string, script: string, input: string) {
  return execa('node', [`tools/${script}`], { cwd: dir, input, reject: false });
}

/** Runs a tool script on `args` and returns the JSON it printed; fails the test on an error exit. */
async function callTool(dir: string, script: string, args: unknown): Promise<unknown> {
  const run = await runTool(dir, script, JSON.stringify(args));
  expect(run.stderr).toBe('');
  expect(run.exitCode).toBe(0);
  return JSON.parse(run.stdout);
}

async function readData(dir: string): Promise<DataSet> {
  const json = async (name: string) => JSON.parse(await readFile(join(dir, 'data', `${name}.json`), 'utf8'));
  return { staff: await json('staff'), expenses: await json('expenses'), limits: await json('limits') };
}

/** The answer computed straight from the data files: engineering staff whose travel total exceeds their limit. */
function overLimitNames(data: DataSet, department = 'engineering'): string[] {
  return data.staff
    .filter((person) => person.department === department)
    .filter((person) => {
      const total = data.expenses.filter((expense) => expense.staffId === person.id).reduce((sum, expense) => sum + expense.amount, 0);
      const limit = data.limits[person.level];
      if (limit === undefined) throw new Error(`no limit for ${person.level}`);
      return total > limit;
    })
    .map((person) => person.name);
}

type ProgramBody = (...args: unknown[]) => Promise<unknown>;
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...params: string[]) => ProgramBody;

/**
 * Runs `over-limit.js` as plain JavaScript with each tool bound to its script, and the
 * program globals it uses (`gather`, `unique`, `print`) as fence defines them. Returns what it printed.
 */
async function runOverLimitProgram(dir: string): Promise<unknown[]> {
  const code = await readFile(join(dir, 'over-limit.js'), 'utf8');
  const printed: unknown[] = [];
  const program = new AsyncFunction('get_members', 'get_expenses', 'get_limits', 'gather', 'unique', 'print', code);
  await program(
    (args: unknown) => callTool(dir, 'get-members.js', args),
    (args: unknown) => callTool(dir, 'get-expenses.js', args),
    (args: unknown) => callTool(dir, 'get-limits.js', args),
    (promises: Promise<unknown>[]) => Promise.all(promises),
    (items: unknown[]) => [...new Set(items)],
    (value: unknown) => printed.push(value),
  );
  return printed;
}

describe('finance example with generated data', () => {
  let dir = '';
  let data: DataSet;

  beforeAll(async () => {
    dir = await copyExample();
    const run = await generate(dir, '--count', '30');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/^wrote 30 staff and \d+ expenses to /);
    data = await readData(dir);
  });

  afterAll(async () => {
    if (dir) await rm(join(dir, '..'), { recursive: true, force: true });
  });

  it('generates staff, expenses and limits of the documented shape', () => {
    expect(data.staff).toHaveLength(30);
    expect(data.staff.map((person) => person.id)).toEqual(Array.from({ length: 30 }, (_, i) => `S${String(i + 1).padStart(3, '0')}`));
    expect(new Set(data.staff.map((person) => person.name)).size).toBe(30);
    expect(new Set(data.staff.map((person) => person.department))).toEqual(new Set(['engineering', 'sales', 'marketing', 'finance', 'operations']));
    expect(Object.keys(data.limits)).toEqual(['L1', 'L2', 'L3', 'L4', 'L5']);
    for (const person of data.staff) {
      expect(Object.keys(person)).toEqual(['id', 'name', 'department', 'level']);
      expect(data.limits[person.level]).toBeGreaterThan(0);
      const own = data.expenses.filter((expense) => expense.staffId === person.id);
      expect(own.length).toBeGreaterThanOrEqual(2);
      expect(own.length).toBeLessThanOrEqual(6);
    }
    for (const expense of data.expenses) {
      expect(expense.date).toMatch(/^2024-\d\d-\d\d$/);
      expect(['flight', 'hotel', 'train', 'taxi', 'meals']).toContain(expense.category);
      expect(expense.amount).toBeGreaterThan(0);
      expect(Math.round(expense.amount * 100) / 100).toBe(expense.amount);
    }
  });

  it('get_members lists one department in id order, with id, name and level only', async () => {
    const expected = data.staff.filter((person) => person.department === 'engineering').map(({ id, name, level }) => ({ id, name, level }));
    expect(expected.length).toBeGreaterThan(0);
    expect(await callTool(dir, 'get-members.js', { department: 'engineering' })).toEqual(expected);
    expect(await callTool(dir, 'get-members.js', { department: ' Engineering ' })).toEqual(expected);
  });

  it('get_expenses lists one person’s expenses, oldest first', async () => {
    const person = data.staff[0];
    if (!person) throw new Error('no staff');
    const expected = data.expenses
      .filter((expense) => expense.staffId === person.id)
      .map(({ date, amount, category }) => ({ date, amount, category }))
      .sort((a, b) => a.date.localeCompare(b.date));
    expect(await callTool(dir, 'get-expenses.js', { id: person.id })).toEqual(expected);
  });

  it('get_limits gives the limit of each level asked for, once each', async () => {
    expect(await callTool(dir, 'get-limits.js', { levels: ['L3', 'L1', 'L3'] })).toEqual({ L3: data.limits.L3, L1: data.limits.L1 });
    expect(await callTool(dir, 'get-limits.js', { levels: [] })).toEqual({});
  });

  it.each([
    ['get-members.js', '{"department":"legal"}', 'get_members: unknown department "legal"; the departments are engineering, finance, marketing, operations, sales'],
    ['get-members.js', '{}', 'get_members: "department" must be a non-empty string, e.g. {"department":"engineering"}'],
    ['get-members.js', '{"department":7}', 'get_members: "department" must be a non-empty string, e.g. {"department":"engineering"}'],
    ['get-members.js', 'engineering', 'get_members: the input is not JSON'],
    ['get-members.js', '["engineering"]', 'get_members: the input must be a JSON object of arguments'],
    ['get-expenses.js', '{"id":"S999"}', 'get_expenses: no staff member has the id "S999"; ids look like S001 (get_members gives them)'],
    ['get-expenses.js', '', 'get_expenses: "id" must be a non-empty string, e.g. {"id":"S001"}'],
    ['get-limits.js', '{"levels":"L1"}', 'get_limits: "levels" must be an array of level names, e.g. {"levels":["L1","L3"]}'],
    ['get-limits.js', '{"levels":["L1","L9","boss"]}', 'get_limits: unknown levels L9, boss; the levels are L1, L2, L3, L4, L5'],
  ])('%s refuses %j with exit code 1 and one line on stderr', async (script, input, message) => {
    const run = await runTool(dir, script, input);
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.split('\n')).toHaveLength(1);
    expect(run.stderr.startsWith(message)).toBe(true);
  });

  it('over-limit.js, run through the three tools, prints the names computed from the data', async () => {
    const expected = overLimitNames(data);
    const engineers = data.staff.filter((person) => person.department === 'engineering');
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(engineers.length);
    expect(await runOverLimitProgram(dir)).toEqual([expected]);
  });
});

describe('finance example as shipped', () => {
  it('ships exactly the data the generator makes by default', async () => {
    const dir = await copyExample();
    try {
      const run = await generate(dir);
      expect(run.exitCode).toBe(0);
      for (const name of ['staff.json', 'expenses.json', 'limits.json']) {
        const shipped = await readFile(join(exampleDir, 'data', name), 'utf8');
        expect(await readFile(join(dir, 'data', name), 'utf8'), name).toBe(shipped);
      }
      expect((await readData(dir)).staff).toHaveLength(100);
      await generate(dir, '--seed', '7');
      expect(await readFile(join(dir, 'data', 'staff.json'), 'utf8')).not.toBe(await readFile(join(exampleDir, 'data', 'staff.json'), 'utf8'));
    } finally {
      await rm(join(dir, '..'), { recursive: true, force: true });
    }
  });

  it('has an answer worth asking for, and the README shows it', async () => {
    const data = await readData(exampleDir);
    const names = overLimitNames(data);
    const engineers = data.staff.filter((person) => person.department === 'engineering');
    expect(names.length).toBeGreaterThan(0);
    expect(names.length).toBeLessThan(engineers.length);
    const readme = await readFile(join(exampleDir, 'README.md'), 'utf8');
    expect(readme).toContain(`\n${JSON.stringify(names)}\n`);
    expect(readme).toContain(`for ${engineers.length} engineers, ${engineers.length + 2} tool calls`);
    expect(readme).toContain('npx fence trust examples/finance\nnpx fence run examples/finance/over-limit.js -w examples/finance');
  });

  it.each([
    ['--count', '0', 'generate-data: --count must be at least 1'],
    ['--count', 'many', 'generate-data: --count needs a whole number, got many'],
    ['--size', '3', 'generate-data: unknown option --size'],
  ])('generate-data.js refuses %s %s', async (option, value, message) => {
    const run = await execa('node', [join(exampleDir, 'generate-data.js'), option, value], { reject: false });
    expect(run.exitCode).toBe(1);
    expect(run.stderr.startsWith(message)).toBe(true);
  });

  it('a tool says how to make the data when it is missing', async () => {
    const dir = await copyExample();
    try {
      await rm(join(dir, 'data'), { recursive: true });
      const run = await runTool(dir, 'get-limits.js', '{"levels":["L1"]}');
      expect(run.exitCode).toBe(1);
      expect(run.stderr).toMatch(/^get_limits: .*limits\.json is missing: run node generate-data\.js in the example folder first\n?$/);
    } finally {
      await rm(join(dir, '..'), { recursive: true, force: true });
    }
  });

  it('fence.toml registers the three tools for programs, each command a script of the example', async () => {
    const parsed = parseConfigText(await readFile(join(exampleDir, 'fence.toml'), 'utf8'), 'fence.toml');
    if ('error' in parsed) throw new Error(parsed.error);
    const tools = parsed.file.tools ?? {};
    expect(Object.keys(tools)).toEqual(['get_members', 'get_expenses', 'get_limits']);
    for (const tool of Object.values(tools)) {
      expect(tool.callers).toEqual(['program']);
      expect(tool.command[0]).toBe('node');
      expect(existsSync(join(exampleDir, tool.command[1] ?? ''))).toBe(true);
    }
    const types = Object.fromEntries(Object.entries(tools).map(([name, tool]) => [name, [jsonSchemaToTypeScript(tool.parameters), tool.returns]]));
    expect(types).toEqual({
      get_members: [
        '{\n  /** Department name: engineering, sales, marketing, finance or operations */\n  department: string;\n}',
        '{ id: string; name: string; level: string }[]',
      ],
      get_expenses: ['{\n  /** Staff id, as get_members gives it (S001) */\n  id: string;\n}', '{ date: string; amount: number; category: string }[]'],
      get_limits: ['{\n  /** Levels such as L1 to L5 */\n  levels: string[];\n}', '{ [level: string]: number }'],
    });
  });
});
