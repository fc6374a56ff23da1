import { fenceHome } from '../config/paths';
import { listSessions, readSession } from '../conversation/session-store';

/** `fence sessions list`: one line a session, newest first. Returns the exit code. */
export function listSessionsCommand(): number {
  const sessions = listSessions(fenceHome());
  if (sessions.length === 0) {
    process.stdout.write('no sessions yet\n');
    return 0;
  }
  for (const s of sessions) {
    const running = s.running ? '  (running)' : '';
    process.stdout.write(`${s.id}  ${s.createdAt.slice(0, 16).replace('T', ' ')}  ${s.model}  ${s.messages} messages  ${s.workspace}${running}\n`);
  }
  return 0;
}

/** `fence sessions show <id>`: the conversation as readable text, also while it runs. Returns the exit code. */
export function showSessionCommand(id: string): number {
  const session = readSession(fenceHome(), id);
  if (!session) {
    process.stderr.write(`fence: no session "${id}" in ${fenceHome()}/sessions (fence sessions list shows them)\n`);
    return 1;
  }
  const out = process.stdout;
  out.write(`session ${session.info.id} · model ${session.info.model} · workspace ${session.info.workspace}\n`);
  for (const message of session.log) {
    const label = message.meta?.toolResult ? `result of ${message.meta.tool ?? 'tool'}${message.meta.isError ? ' (error)' : ''}` : message.role;
    const usage = message.meta?.usage;
    const tokens = usage ? ` · ${usage.inputTokens} in / ${usage.outputTokens} out${usage.estimated ? ' (estimated)' : ''}` : '';
    out.write(`\n── ${label} · ${message.timestamp}${tokens}\n${message.content}\n`);
  }
  return 0;
}
