// A small MCP server over stdio, written as plain JSON-RPC (no dependencies), whose start can be
// slow, endless or failing, for tests of servers that join a session late (mcp-late-*.test.ts).
//
// Tools: `get-sum` ({ a, b } → "The sum is <a + b>"), `echo` ({ text } → the text) and `drop-echo`,
// which takes `echo` out of its list and tells the client its tools changed (a call of a tool it
// no longer lists is an error result).
//
// Environment:
// - ANSWER_AFTER_MS: waits that long before it answers anything (requests wait in the pipe);
// - NEVER_ANSWER=1: reads its input and answers nothing, ever;
// - EXIT_AFTER_MS: writes "exiting" in MARKS, says why on stderr and exits with code 3 after
//   that long, without answering;
// - MARKS: a folder where it writes `answered` once its answer to `initialize` is written,
//   and `listed-<n>` once its answer to the n-th `tools/list` is.
// Arguments are ignored (a test may pass a tag to find the process by).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const marks = process.env.MARKS;
const mark = (name) => {
  if (marks) writeFileSync(join(marks, name), `${process.pid}\n`);
};
const send = (message, then) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`, then);

let tools = [
  {
    name: 'get-sum',
    description: 'Adds two numbers.',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  },
  { name: 'echo', description: 'Says the text back.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'drop-echo', description: 'Stops offering echo.', inputSchema: { type: 'object', properties: {} } },
];
let listings = 0;

function answer(message) {
  if (message.id === undefined) return;
  if (message.method === 'initialize') {
    const result = { protocolVersion: message.params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'late', version: '1.0.0' } };
    return send({ id: message.id, result }, () => mark('answered'));
  }
  if (message.method === 'tools/list') {
    listings += 1;
    const mine = `listed-${listings}`;
    return send({ id: message.id, result: { tools } }, () => mark(mine));
  }
  if (message.method === 'tools/call') {
    const { name, arguments: args = {} } = message.params;
    if (!tools.some((tool) => tool.name === name)) return send({ id: message.id, result: { content: [{ type: 'text', text: `unknown tool ${name}` }], isError: true } });
    if (name === 'drop-echo') {
      tools = tools.filter((tool) => tool.name !== 'echo');
      send({ id: message.id, result: { content: [{ type: 'text', text: 'echo dropped' }] } });
      return send({ method: 'notifications/tools/list_changed' });
    }
    const text = name === 'get-sum' ? `The sum is ${Number(args.a) + Number(args.b)}` : String(args.text ?? '');
    return send({ id: message.id, result: { content: [{ type: 'text', text }] } });
  }
  send({ id: message.id, error: { code: -32601, message: 'no such method' } });
}

let ready = !process.env.ANSWER_AFTER_MS;
const waiting = [];
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  for (let end = pending.indexOf('\n'); end !== -1; end = pending.indexOf('\n')) {
    const line = pending.slice(0, end);
    pending = pending.slice(end + 1);
    if (line.trim() === '' || process.env.NEVER_ANSWER === '1' || process.env.EXIT_AFTER_MS) continue;
    const message = JSON.parse(line);
    if (ready) answer(message);
    else waiting.push(message);
  }
});
// A server that never answers does not end with its input either.
if (process.env.NEVER_ANSWER === '1') setInterval(() => undefined, 60_000);
else process.stdin.on('end', () => process.exit(0));

if (process.env.ANSWER_AFTER_MS) {
  setTimeout(() => {
    ready = true;
    for (const message of waiting.splice(0)) answer(message);
  }, Number(process.env.ANSWER_AFTER_MS));
}
if (process.env.EXIT_AFTER_MS) {
  setTimeout(() => {
    mark('exiting');
    process.stderr.write('late: no LATE_TOKEN given\n');
    process.exit(3);
  }, Number(process.env.EXIT_AFTER_MS));
}
