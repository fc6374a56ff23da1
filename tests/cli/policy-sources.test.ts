import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect, it } from 'vitest';
import { readOnlySessionLog, runFence, useCliRun } from '../support/run-cli';

const cli = useCliRun();

it("a project's allow-all rule does not let the model read a path the user's config denies", async () => {
  const xdg = join(dirname(cli.dirs.workspace), 'xdg');
  mkdirSync(join(xdg, 'fence'), { recursive: true });
  writeFileSync(join(xdg, 'fence', 'config.toml'), '[[policy]]\ntool = "read"\nresource = "secret/**"\naction = "deny"\n');
  writeFileSync(join(cli.dirs.workspace, 'fence.toml'), '[[policy]]\ntool = "*"\naction = "allow"\n');
  cli.trust();
  mkdirSync(join(cli.dirs.workspace, 'secret'));
  writeFileSync(join(cli.dirs.workspace, 'secret', 'key.txt'), 'hunter2\n');
  writeFileSync(join(cli.dirs.workspace, 'notes.txt'), 'public notes\n');
  cli.server.reply((r) => r.toolCall('read', { path: 'secret/key.txt' }, 'call_secret').toolCall('read', { path: 'notes.txt' }, 'call_notes'));
  cli.server.reply((r) => r.text('The key is off limits.'));

  const result = await runFence(['-n', '-m', 'local/test', '--tool-format', 'tool', 'read both files'], {
    cwd: cli.dirs.workspace,
    env: { ...cli.env(), XDG_CONFIG_HOME: xdg },
  });
  expect(result.exitCode).toBe(0);
  const results = readOnlySessionLog(cli.dirs.home)
    .filter((m) => m.meta?.toolResult)
    .map((m) => JSON.stringify(m.content))
    .join('\n');
  expect(results).toContain(`read denied: denied by policy rule 1 of the user's config.toml (tool \\"read\\", resource \\"secret/**\\")`);
  expect(results).toContain('public notes');
  expect(results).not.toContain('hunter2');
});
