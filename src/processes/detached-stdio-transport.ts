import { spawn, type ChildProcess } from 'node:child_process';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** How a stdio server is started: exactly this program, arguments, environment and folder. */
export interface DetachedStdioOptions {
  command: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd: string;
  /** Each chunk the server writes to its stderr. */
  onStderr?: (chunk: Buffer) => void;
  /** Told once the process has started, with its id. */
  onStart?: (pid: number) => void;
  /** Told once, when the process has ended. */
  onExit?: (exit: { code: number | null; signal: NodeJS.Signals | null }) => void;
}

/** How long `close` waits after closing stdin, then after SIGTERM, before the next step. */
const STOP_STEP_MS = 2000;

/**
 * MCP over a subprocess's stdin and stdout, started in a session and process group of its own
 * (`setsid`): it has no controlling terminal, so it cannot open `/dev/tty`, and its standard
 * descriptors are pipes, so none of them is a terminal either. The SDK's own stdio transport
 * starts the server in fence's session and adds variables to its environment; this one gives
 * the environment as it is. `close()` closes stdin, then sends SIGTERM and SIGKILL to the
 * server's process group, so what it started in its group goes with it.
 */
export class DetachedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly options: DetachedStdioOptions;
  private readonly buffer = new ReadBuffer();
  private child: ChildProcess | undefined;
  private ended: Promise<void> | undefined;

  constructor(options: DetachedStdioOptions) {
    this.options = options;
  }

  /** The server's process id once it started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    if (this.child) return Promise.reject(new Error('the server was already started'));
    return new Promise((resolve, reject) => {
      const child = spawn(this.options.command, [...this.options.args], {
        cwd: this.options.cwd,
        env: this.options.env,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
      this.child = child;
      this.ended = new Promise((done) => {
        child.once('exit', (code, signal) => {
          this.options.onExit?.({ code, signal });
          done();
        });
      });
      child.once('close', () => this.onclose?.());
      child.once('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once('spawn', () => {
        if (child.pid !== undefined) this.options.onStart?.(child.pid);
        resolve();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('error', (error) => this.onerror?.(error));
      child.stderr?.on('data', (chunk: Buffer) => this.options.onStderr?.(chunk));
      child.stdout?.on('data', (chunk: Buffer) => {
        try {
          this.buffer.append(chunk);
          for (let message = this.buffer.readMessage(); message !== null; message = this.buffer.readMessage()) this.onmessage?.(message);
        } catch (error) {
          this.onerror?.(error instanceof Error ? error : new Error(String(error)));
        }
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed || !stdin.writable) return Promise.reject(new Error('Not connected'));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    const ended = this.ended;
    if (!child || !ended) return;
    const gone = () => child.exitCode !== null || child.signalCode !== null;
    const wait = () => Promise.race([ended, new Promise((resolve) => setTimeout(resolve, STOP_STEP_MS).unref())]);
    try {
      child.stdin?.end();
    } catch {
      // Already closed.
    }
    if (!gone()) await wait();
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      if (gone()) break;
      signalGroup(child, signal);
      await wait();
    }
    // What the server started in its group and left running (its number stays the group's while any member lives).
    signalGroup(child, 'SIGTERM', 'group only');
    this.buffer.clear();
  }
}

/** `signal` to the process group the server leads (unless `only`, to the process alone if that fails). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals, only?: 'group only'): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    if (only) return;
    try {
      child.kill(signal);
    } catch {
      // Gone meanwhile.
    }
  }
}
