#!/usr/bin/env node
// get_expenses: { id } → [{ date, amount, category }], one staff member's travel expenses, oldest first.

import { getExpenses } from './finance.js';
import { runTool } from './tool-io.js';

runTool('get_expenses', getExpenses);
