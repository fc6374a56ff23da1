import { createInterface } from 'node:readline/promises';

/**
 * Reads further prompts from the terminal, one line each, until end of input (Ctrl-D) or
 * `/exit`. A plain line reader: the full chat (history, rendering, confirmations) is built on
 * top of the same agent later.
 */
export async function* readChatLines(input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stdout): AsyncGenerator<string> {
  const rl = createInterface({ input, output, terminal: true });
  try {
    while (true) {
      let line: string;
      try {
        line = await rl.question('\n> ');
      } catch {
        return; // closed: Ctrl-D or Ctrl-C at the prompt
      }
      const text = line.trim();
      if (text === '/exit' || text === '/quit') return;
      if (text) yield text;
    }
  } finally {
    rl.close();
  }
}
