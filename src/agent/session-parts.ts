import type { RestoreOutcome } from '../conversation/file-checkpoints';
import type { SessionStore } from '../conversation/session-store';
import type { PolicyRule } from '../policy/admit';
import type { ToolContext } from '../tools/define-tool';
import type { ToolRegistry } from '../tools/registry';
import type { AgentOptions } from './agent';
import type { ToolNotices } from './joined-tools';
import type { RunHooks } from './run-hooks';

/**
 * A session with its tools and runtimes, ready for an Agent: what the command line's wiring
 * (`openSession` in `src/cli/`) hands to the one-shot runner and to the chat.
 */
export interface OpenSession {
  /** The session's store: the one opened, or the one `switchStore` gave. */
  readonly store: SessionStore;
  /** Goes on in another store (a fork): the current one is closed, the runtimes stay. */
  switchStore(next: SessionStore): void;
  registry: ToolRegistry;
  /** Admission rules from the config, for the model's own calls too. */
  rules: readonly PolicyRule[];
  toolContext: ToolContext;
  /** Tells the model of tools that joined after the session opened (MCP servers still starting then); see `JoinedTools`. */
  toolNotices?: ToolNotices;
  /** The configuration's hooks at the session's start, before prompts and at a run's end; absent: none. */
  hooks?: RunHooks;
  /**
   * Puts back the files the file tools wrote from log position `from` on (see
   * `FileCheckpoints.restore`), through the file tools' checked writes, so a file the
   * sandbox or the policy keeps from `save` is refused and reported; absent unless the
   * session keeps files (`keepFiles`).
   */
  restoreFiles?(from: number): Promise<RestoreOutcome>;
  /**
   * Stops the runtimes and closes the log. Safe to call more than once. With `exiting` (the
   * process ends right after), the shell and the kernel are killed but not waited for.
   */
  close(options?: { exiting?: boolean }): Promise<void>;
}

/** What an Agent takes from an open session: its tools, log, tools' context, rules, notices of tools that joined and hooks. */
export function agentParts(session: OpenSession): Pick<AgentOptions, 'registry' | 'store' | 'toolContext' | 'rules' | 'toolNotices' | 'hooks'> {
  return {
    registry: session.registry,
    store: session.store,
    toolContext: session.toolContext,
    rules: session.rules,
    ...(session.toolNotices ? { toolNotices: session.toolNotices } : {}),
    ...(session.hooks ? { hooks: session.hooks } : {}),
  };
}
