#!/usr/bin/env node
// get_limits: { levels } → { [level]: number }, the yearly travel limit of each level asked for.

import { loadData, runTool, ToolError } from './tool-io.js';

runTool('get_limits', (args) => {
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
});
