import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { readRecord, sweepAfterFence } from './git-guard';

/**
 * The guardian's sweep, run by Node once fence died without closing its session:
 * `node git-guard-sweep.cjs <record file>`. Sweeps the workspace against the record (see
 * `sweepAfterFence`), writes what it changed on stderr (the terminal may be gone: then nowhere),
 * and removes the record.
 */
function main(file: string | undefined): void {
  process.stderr.on('error', () => undefined);
  if (!file) return;
  const record = readRecord(file);
  if (record) sweepAfterFence(record, (line) => process.stderr.write(`fence: ${line}\n`), dirname(file));
  rmSync(file, { force: true });
}

main(process.argv[2]);
