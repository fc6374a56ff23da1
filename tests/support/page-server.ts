import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A page the server answers one path with: a status, headers and a body, or no answer at all. */
export type PageAnswer = { status?: number; headers?: Record<string, string>; body?: string | Buffer } | 'hang';

/** A local web server for tests of the `fetch` tool: never the internet. */
export interface PageServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** The requests received, in order: path and headers. */
  readonly requests: { path: string; headers: IncomingMessage['headers'] }[];
  /** Answers `path` with `answer` from now on. */
  page(path: string, answer: PageAnswer | ((req: IncomingMessage) => PageAnswer)): PageServer;
  close(): Promise<void>;
}

/** Starts a page server on 127.0.0.1 with a random port; a path without a page is a 404. */
export async function startPageServer(): Promise<PageServer> {
  const pages = new Map<string, PageAnswer | ((req: IncomingMessage) => PageAnswer)>();
  const requests: PageServer['requests'] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    requests.push({ path, headers: req.headers });
    const found = pages.get(path);
    const answer = typeof found === 'function' ? found(req) : found;
    if (answer === 'hang') return;
    if (!answer) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(answer.status ?? 200, answer.headers ?? { 'content-type': 'text/html; charset=utf-8' });
    res.end(answer.body ?? '');
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const self: PageServer = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    page(path, answer) {
      pages.set(path, answer);
      return self;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return self;
}

/**
 * A documentation page as sites serve them: a navigation bar, a sidebar, a footer, and an
 * article with headings, a code block, a table and links.
 */
export const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Widget API — Widget docs</title>
  <link rel="stylesheet" href="/style.css">
  <script>window.analytics = { track() {} };</script>
</head>
<body>
  <header class="site-header">
    <nav class="topnav"><a href="/">Home</a> <a href="/guide/">Guide</a> <a href="/api/">API</a> <a href="/blog/">Blog</a> <a href="/login">Sign in</a></nav>
  </header>
  <div class="layout">
    <aside class="sidebar">
      <ul>
        <li><a href="/guide/install">Installation</a></li>
        <li><a href="/guide/config">Configuration</a></li>
        <li><a href="/api/widget">Widget API</a></li>
      </ul>
    </aside>
    <main>
      <article>
        <h1>Widget API</h1>
        <p>The widget module creates widgets that spin on an axis. Each widget keeps its own speed and axis, and the module keeps no state between calls, so widgets can be made in parallel from many places in a program.</p>
        <h2>Installing</h2>
        <p>Install the package from the registry, then import the <code>spin</code> function where you need it. Widgets need Node 20 or later, because they use the platform's own timers.</p>
        <pre><code class="language-js">import { spin } from 'widget';
const w = spin({ speed: 3, axis: 'y' });
w.stop();</code></pre>
        <h2>Options</h2>
        <p>Every option has a default, listed below. Options you leave out take their default, and unknown options are refused with an error that names them.</p>
        <table>
          <thead><tr><th>Option</th><th>Default</th><th>Meaning</th></tr></thead>
          <tbody>
            <tr><td>speed</td><td>1</td><td>Turns per second</td></tr>
            <tr><td>axis</td><td>y</td><td>Axis to spin on</td></tr>
          </tbody>
        </table>
        <p>See <a href="/api/stop">stop()</a> to end a spin, or the <a href="https://example.org/widgets/guide">full guide</a>.</p>
      </article>
    </main>
  </div>
  <footer class="site-footer"><p>Copyright 2026 Widget Corp. <a href="/privacy">Privacy policy</a>. Subscribe to our newsletter!</p></footer>
</body>
</html>`;
