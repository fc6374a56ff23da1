#!/usr/bin/env node
// get_members: { department } → [{ id, name, level }], the staff of one department in id order.

import { getMembers } from './finance.js';
import { runTool } from './tool-io.js';

runTool('get_members', getMembers);
