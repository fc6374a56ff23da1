#!/usr/bin/env node
// get_limits: { levels } → { [level]: limit }, the yearly travel limit of each level asked for.

import { getLimits } from './finance.js';
import { runTool } from './tool-io.js';

runTool('get_limits', getLimits);
