import { fenceHome } from '../config/paths';
import { listSessions, SessionStore } from '../conversation/session-store';

/** `fence sessions list`: one line a session, newest first. Returns the exit code. */
export function listSessionsCommand(): number {
  const sessions = listSessions(fenceHome());
  if (sessions.length === 0) {
    process.stdout.write('no sessions yet\n');
    return 0;
  }
  for (const s of sessions) {
    process.stdout.write(`${s.id}  ${s.createdAt.slice(0, 16).replace('T', ' ')}  ${s.model}  ${s.messages} messages  ${s.workspace}\n`);
  }
  return 0;
}

/** `fence sessions show <id>`: the conversation as readable text. Returns the exit code. */
export function showSessionCommand(id: string): number {
  let store: SessionStore;
  try {
    store = SessionStore.open(fenceHome(), id);
  } catch (error) {
    process.stderr.write(`fence: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  const out = process.stdout;
  out.write(`session ${store.id} · model ${store.info.model} · workspace ${store.info.workspace}\n`);
  for (const message of store.log) {
    const label = message.meta?.toolResult ? `result of ${message.meta.tool ?? 'tool'}${message.meta.isError ? ' (error)' : ''}` : message.role;
    const usage = message.meta?.usage;
    const tokens = usage ? ` · ${usage.inputTokens} in / ${usage.outputTokens} out${usage.estimated ? ' (estimated)' : ''}` : '';
    out.write(`\n── ${label} · ${message.timestamp}${tokens}\n${message.content}\n`);
  }
  store.close();
  return 0;
}
