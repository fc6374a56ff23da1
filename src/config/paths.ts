import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The folder where fence keeps its data: `$FENCE_HOME`, else `$XDG_DATA_HOME/fence`,
 * else `~/.local/share/fence`. Never creates it.
 */
export function fenceHome(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FENCE_HOME) return env.FENCE_HOME;
  if (env.XDG_DATA_HOME) return join(env.XDG_DATA_HOME, 'fence');
  return join(homedir(), '.local', 'share', 'fence');
}
