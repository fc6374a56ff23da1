import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/**
 * The folder where fence keeps its data: `$FENCE_HOME`, else `$XDG_DATA_HOME/fence`,
 * else `~/.local/share/fence`. Never creates it.
 */
export function fenceHome(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FENCE_HOME) return env.FENCE_HOME;
  if (env.XDG_DATA_HOME) return join(env.XDG_DATA_HOME, 'fence');
  return join(homedir(), '.local', 'share', 'fence');
}

/**
 * The folder of the user's configuration: `$XDG_CONFIG_HOME/fence` when that is an absolute
 * path (the XDG rule), else `~/.config/fence`. Never creates it.
 */
export function configHome(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'fence');
  return join(homedir(), '.config', 'fence');
}
