// The finance example's three queries over its data, shared by the command tools (one script
// each, JSON on stdin and stdout) and the MCP server (mcp-server.js).

import { loadData, requireString, ToolError } from './tool-io.js';

/** { department } → [{ id, name, level }], the staff of one department in id order. */
export function getMembers(args) {
  const department = requireString(args, 'department', 'engineering').trim().toLowerCase();
  const staff = loadData('staff');
  const known = [...new Set(staff.map((person) => person.department))].sort();
  if (!known.includes(department)) {
    throw new ToolError(`unknown department ${JSON.stringify(args.department)}; the departments are ${known.join(', ')}`);
  }
  return staff
    .filter((person) => person.department === department)
    .map((person) => ({ id: person.id, name: person.name, level: person.level }));
}

/** { id } → [{ date, amount, category }], one staff member's travel expenses, oldest first. */
export function getExpenses(args) {
  const id = requireString(args, 'id', 'S001').trim();
  if (!loadData('staff').some((person) => person.id === id)) {
    throw new ToolError(`no staff member has the id ${JSON.stringify(id)}; ids look like S001 (get_members gives them)`);
  }
  return loadData('expenses')
    .filter((expense) => expense.staffId === id)
    .map((expense) => ({ date: expense.date, amount: expense.amount, category: expense.category }))
    .sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
}

/** { levels } → { [level]: limit }, the yearly travel limit of each level asked for. */
export function getLimits(args) {
  const { levels } = args;
  if (!Array.isArray(levels) || !levels.every((level) => typeof level === 'string')) {
    throw new ToolError('"levels" must be an array of level names, e.g. {"levels":["L1","L3"]}');
  }
  const limits = loadData('limits');
  const unknown = levels.filter((level) => !Object.hasOwn(limits, level));
  if (unknown.length > 0) {
    throw new ToolError(`unknown level${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; the levels are ${Object.keys(limits).join(', ')}`);
  }
  return Object.fromEntries(levels.map((level) => [level, limits[level]]));
}
