import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildSystemPrompt, readAgentsFile } from '../agent/system-prompt';
import type { FenceConfig } from '../config/config';
import { createMessage } from '../conversation/message';
import { newSessionId, SessionStore } from '../conversation/session-store';
import type { BashSession } from '../runtime/bash-session';
import type { PolicyRule } from '../policy/admit';
import type { ToolContext } from '../tools/define-tool';
import { ToolRegistry } from '../tools/registry';
import { buildToolset } from './toolset';

/** A new session with its tools and runtimes, ready for an Agent. */
export interface OpenSession {
  store: SessionStore;
  registry: ToolRegistry;
  /** Admission rules from the config, for the model's own calls too. */
  rules: readonly PolicyRule[];
  toolContext: ToolContext;
  /** Stops the runtimes and closes the log. Safe to call more than once. */
  close(): Promise<void>;
}

/** Resolves and checks the workspace folder; returns an error line for the user when unusable. */
export function resolveWorkspace(dir: string | undefined): { path: string } | { error: string } {
  const path = resolve(dir ?? process.cwd());
  if (!existsSync(path)) return { error: `workspace ${path} does not exist` };
  if (!statSync(path).isDirectory()) return { error: `workspace ${path} is not a folder` };
  return { path };
}

/**
 * Creates a session folder, writes the system prompt as its first (pinned) message and wires
 * the tools the config describes. The shell is started at once in the background, since
 * most runs use it and its start-up then overlaps the first model request.
 */
export function openSession(options: {
  home: string;
  workspace: string;
  modelId: string;
  config: FenceConfig;
  name?: string;
  signal: AbortSignal;
}): OpenSession {
  const id = options.name ?? newSessionId();
  const { tools, rules } = buildToolset(options.config, { id, dir: join(options.home, 'sessions', id) });
  const registry = new ToolRegistry(tools);
  const store = SessionStore.create(options.home, {
    id,
    ...(options.name ? { name: options.name } : {}),
    model: options.modelId,
    workspace: options.workspace,
    toolFormat: 'markdown',
    tools: tools.map((t) => t.name),
  });
  const system = buildSystemPrompt({ tools, workspace: options.workspace, agentsFile: readAgentsFile(options.workspace) });
  store.append(createMessage('system', system, { pinned: true }));

  let bash: Promise<BashSession> | undefined;
  const startBash = () => {
    bash ??= import('../runtime/bash-session').then(({ BashSession }) => BashSession.start({ cwd: options.workspace }));
    return bash;
  };
  if (registry.get('shell')) startBash().catch(() => undefined);

  let closed = false;
  return {
    store,
    registry,
    rules,
    toolContext: { workspace: options.workspace, signal: options.signal, bash: startBash },
    async close() {
      if (closed) return;
      closed = true;
      const shell = await bash?.catch(() => undefined);
      await shell?.close();
      store.close();
    },
  };
}
