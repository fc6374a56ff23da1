#!/usr/bin/env node
import('../dist/cli.js').catch((error) => {
  if (error && error.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/cli.js')) {
    process.stderr.write('fence: not built yet; run `npm install` (or `npm run build`) in the fence folder\n');
  } else {
    process.stderr.write(`fence: ${error && error.message ? error.message : String(error)}\n`);
  }
  process.exitCode = 1;
});
