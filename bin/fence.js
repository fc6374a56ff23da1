#!/usr/bin/env node
// CommonJS (see package.json beside it): Node starts a CommonJS program without setting up its
// ES module loader, which is most of what `fence --version` would cost over a bare `node`.
try {
  require('../dist/cli.cjs');
} catch (error) {
  if (error && error.code === 'MODULE_NOT_FOUND' && String(error.message).includes('dist/cli.cjs')) {
    process.stderr.write('fence: not built yet; run `npm install` (or `npm run build`) in the fence folder\n');
  } else {
    process.stderr.write(`fence: ${error && error.message ? error.message : String(error)}\n`);
  }
  process.exitCode = 1;
}
