/**
 * Ends the process with `code` once everything written to stdout and stderr has been handed to
 * the operating system. For the end of a run whose own work is over: its session is closed
 * (every message on disk, the shell and the kernel killed, MCP servers stopped). Exiting then,
 * rather than letting the event loop run dry, spares what nobody waits for: Node tearing down
 * its heap, and whatever a library left open (an idle socket, a timer). A stream that was
 * closed or broken (a reader that went away) counts as written.
 */
export async function exitOnceWritten(code: number): Promise<never> {
  await Promise.all([written(process.stdout), written(process.stderr)]);
  process.exit(code);
}

/** Resolves when what was written to `stream` before this call is out (or cannot be). */
function written(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || stream.writableEnded) return Promise.resolve();
  return new Promise((resolve) => stream.write('', () => resolve()));
}
