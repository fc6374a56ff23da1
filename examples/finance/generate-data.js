#!/usr/bin/env node
// Writes the finance example's data set into data/ beside this script:
//   data/staff.json     [{ id, name, department, level }]
//   data/expenses.json  [{ id, staffId, date, category, amount }]
//   data/limits.json    { [level]: yearly travel limit }
// The same --count and --seed always give the same files, byte for byte.
//
// Usage: node generate-data.js [--count N] [--seed S]   (defaults: 100 staff, seed 2024)

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DEPARTMENTS = ['engineering', 'sales', 'marketing', 'finance', 'operations'];

/** Levels with their share of the staff and their yearly travel limit. */
const LEVELS = [
  { level: 'L1', weight: 25, limit: 2000 },
  { level: 'L2', weight: 30, limit: 2500 },
  { level: 'L3', weight: 25, limit: 3500 },
  { level: 'L4', weight: 13, limit: 5000 },
  { level: 'L5', weight: 7, limit: 8000 },
];

/** Expense categories with how often they occur and their typical size. */
const CATEGORIES = [
  { category: 'flight', weight: 3, size: 3 },
  { category: 'hotel', weight: 3, size: 2.5 },
  { category: 'train', weight: 2, size: 1 },
  { category: 'taxi', weight: 2, size: 0.3 },
  { category: 'meals', weight: 2, size: 0.4 },
];

const FIRST_NAMES = [
  'Ada', 'Ben', 'Chloé', 'Dmitri', 'Elena', 'Farid', 'Grace', 'Hiro', 'Ines', 'Jonas',
  'Kemi', 'Lars', 'Maya', 'Nikhil', 'Olga', 'Pablo', 'Quinn', 'Rosa', 'Sami', 'Tara',
  'Umar', 'Vera', 'Wen', 'Ximena', 'Yusuf', 'Zoë',
];

const LAST_NAMES = [
  'Abara', 'Berg', 'Costa', 'Dubois', 'Eriksen', 'Fischer', 'Garcia', 'Haddad', 'Ivanova', 'Jensen',
  'Kowalski', 'Lindqvist', 'Moreau', 'Nakamura', 'Okafor', 'Petrov', 'Quintero', 'Rossi', 'Singh', 'Tanaka',
  'Urbina', 'Varga', 'Weber', 'Yilmaz', 'Zhang',
];

/** mulberry32: a small seeded generator of floats in [0, 1), the same on every platform. */
function makeRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick(random, items) {
  return items[Math.floor(random() * items.length)];
}

function pickWeighted(random, items) {
  const total = items.reduce((sum, item) => sum + item.weight, 0);
  let left = random() * total;
  for (const item of items) {
    left -= item.weight;
    if (left < 0) return item;
  }
  return items[items.length - 1];
}

function between(random, low, high) {
  return low + random() * (high - low);
}

/** `first last`, or with a middle initial (or, past Z, a number) when that name is taken. */
function uniqueName(first, last, taken) {
  const plain = `${first} ${last}`;
  if (!taken.has(plain)) return plain;
  for (let letter = 0; letter < 26; letter += 1) {
    const name = `${first} ${String.fromCharCode(65 + letter)}. ${last}`;
    if (!taken.has(name)) return name;
  }
  for (let number = 2; ; number += 1) {
    const name = `${plain} ${number}`;
    if (!taken.has(name)) return name;
  }
}

/** The first staff member of each department comes first, so that every department has someone. */
function makeStaff(random, count) {
  const width = Math.max(3, String(count).length);
  const taken = new Set();
  const staff = [];
  for (let i = 1; i <= count; i += 1) {
    const name = uniqueName(pick(random, FIRST_NAMES), pick(random, LAST_NAMES), taken);
    taken.add(name);
    staff.push({
      id: `S${String(i).padStart(width, '0')}`,
      name,
      department: i <= DEPARTMENTS.length ? DEPARTMENTS[i - 1] : pick(random, DEPARTMENTS),
      level: pickWeighted(random, LEVELS).level,
    });
  }
  return staff;
}

/** Two to six travel expenses a person, whose total lands between 30% and 125% of the limit. */
function makeExpenses(random, staff) {
  const limits = Object.fromEntries(LEVELS.map((entry) => [entry.level, entry.limit]));
  const expenses = [];
  for (const person of staff) {
    const count = 2 + Math.floor(random() * 5);
    const items = Array.from({ length: count }, () => {
      const kind = pickWeighted(random, CATEGORIES);
      const day = Math.floor(random() * 366);
      return { category: kind.category, share: kind.size * between(random, 0.6, 1.4), day };
    });
    const target = limits[person.level] * between(random, 0.3, 1.25);
    const shares = items.reduce((sum, item) => sum + item.share, 0);
    items.sort((a, b) => a.day - b.day);
    for (const item of items) {
      expenses.push({
        id: `X${String(expenses.length + 1).padStart(5, '0')}`,
        staffId: person.id,
        date: new Date(Date.UTC(2024, 0, 1 + item.day)).toISOString().slice(0, 10),
        category: item.category,
        amount: Math.round((target * item.share) / shares * 100) / 100,
      });
    }
  }
  return expenses;
}

/** JSON with one record a line: small, and easy to read and diff. */
function recordsJson(records) {
  return `[\n${records.map((record) => `  ${JSON.stringify(record)}`).join(',\n')}\n]\n`;
}

function readOptions(argv) {
  const options = { count: 100, seed: 2024 };
  for (let i = 0; i < argv.length; i += 1) {
    const name = argv[i];
    if (name !== '--count' && name !== '--seed') throw new Error(`unknown option ${name}; usage: node generate-data.js [--count N] [--seed S]`);
    const value = argv[i + 1];
    i += 1;
    if (value === undefined || !/^\d+$/.test(value)) throw new Error(`${name} needs a whole number, got ${value ?? 'nothing'}`);
    options[name.slice(2)] = Number(value);
  }
  if (options.count < 1) throw new Error('--count must be at least 1');
  return options;
}

function main() {
  let options;
  try {
    options = readOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`generate-data: ${error.message}\n`);
    process.exit(1);
  }
  const random = makeRandom(options.seed);
  const staff = makeStaff(random, options.count);
  const expenses = makeExpenses(random, staff);
  const limits = Object.fromEntries(LEVELS.map((entry) => [entry.level, entry.limit]));
  const folder = join(dirname(fileURLToPath(import.meta.url)), 'data');
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'staff.json'), recordsJson(staff));
  writeFileSync(join(folder, 'expenses.json'), recordsJson(expenses));
  writeFileSync(join(folder, 'limits.json'), `${JSON.stringify(limits, null, 2)}\n`);
  process.stdout.write(`wrote ${staff.length} staff and ${expenses.length} expenses to ${folder}\n`);
}

main();
