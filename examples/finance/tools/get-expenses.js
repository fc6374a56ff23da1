#!/usr/bin/env node
// get_expenses: { id } → [{ date, amount, category }], one staff member's travel expenses by date.

import { loadData, requireString, runTool, ToolError } from './tool-io.js';

runTool('get_expenses', (args) => {
  const id = requireString(args, 'id', 'S001').trim();
  if (!loadData('staff').some((person) => person.id === id)) {
    throw new ToolError(`no staff member has the id ${JSON.stringify(id)}; ids look like S001 (get_members gives them)`);
  }
  return loadData('expenses')
    .filter((expense) => expense.staffId === id)
    .map((expense) => ({ date: expense.date, amount: expense.amount, category: expense.category }))
    .sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
});
