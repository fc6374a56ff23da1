#!/usr/bin/env node
// get_members: { department } → [{ id, name, level }], the staff of one department in id order.

import { loadData, requireString, runTool, ToolError } from './tool-io.js';

runTool('get_members', (args) => {
  const department = requireString(args, 'department', 'engineering').trim().toLowerCase();
  const staff = loadData('staff');
  const known = [...new Set(staff.map((person) => person.department))].sort();
  if (!known.includes(department)) {
    throw new ToolError(`unknown department ${JSON.stringify(args.department)}; the departments are ${known.join(', ')}`);
  }
  return staff
    .filter((person) => person.department === department)
    .map((person) => ({ id: person.id, name: person.name, level: person.level }));
});
