import { rm } from 'node:fs/promises';
import { afterEach, beforeEach } from 'vitest';
import { createMessage } from '../../src/conversation/message';
import { SessionStore, type SessionInfo } from '../../src/conversation/session-store';
import { startFakeLlm, type FakeLlm } from './fake-llm';
import { makeTempWorkspace } from './tool-context';

/** What each test of an agent-level file works with. */
export interface AgentRig {
  readonly server: FakeLlm;
  readonly workspace: string;
  readonly home: string;
  readonly store: SessionStore;
}

/**
 * Gives every test of the calling file a fresh fake model server, workspace and FENCE_HOME,
 * and a session store (id `test`, model `local/test`) opened on them, with `system` as its
 * pinned first message when given. Everything is closed and removed after each test. Read the
 * fields inside a test.
 */
export function useAgentRig(info: Pick<SessionInfo, 'toolFormat' | 'tools'> & { system?: string }): AgentRig {
  let current: AgentRig | undefined;
  beforeEach(async () => {
    const server = await startFakeLlm();
    const workspace = await makeTempWorkspace('fence-agent-work-');
    const home = await makeTempWorkspace('fence-agent-home-');
    const store = SessionStore.create(home, { id: 'test', model: 'local/test', workspace, toolFormat: info.toolFormat, tools: info.tools });
    if (info.system !== undefined) store.append(createMessage('system', info.system, { pinned: true }));
    current = { server, workspace, home, store };
  });
  afterEach(async () => {
    if (!current) return;
    const { server, workspace, home, store } = current;
    current = undefined;
    store.close();
    await server.close();
    await rm(workspace, { recursive: true, force: true });
    await rm(home, { recursive: true, force: true });
  });
  const inTest = (): AgentRig => {
    if (!current) throw new Error('useAgentRig: the server, folders and store exist only inside a test');
    return current;
  };
  return {
    get server() {
      return inTest().server;
    },
    get workspace() {
      return inTest().workspace;
    },
    get home() {
      return inTest().home;
    },
    get store() {
      return inTest().store;
    },
  };
}
