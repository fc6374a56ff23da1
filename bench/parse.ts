/**
 * Parser figures for `npm run bench`: the markdown stream scanner over long replies, fed in
 * small chunks as a provider streams them.
 */
import { performance } from 'node:perf_hooks';
import { MarkdownStreamScanner } from '../src/parse/stream-scanner';
import type { ToolUse } from '../src/parse/tool-use';
import { median } from './ptc';

/** A reply of about `bytes`: prose, `ts` blocks with prose written right after their closing fence, a shell block at the end. */
function makeReply(bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const part =
      i % 3 === 2
        ? `Some code:\n\`\`\`ts\nconst value${i} = compute(${i});\nconsole.log(value${i});\n\`\`\`\n`
        : `Line ${i} of prose with **markdown**, \`inline code\` and more words to fill the reply.\n`;
    parts.push(part);
    size += part.length;
  }
  parts.push('```shell\necho done\n```\n');
  return parts.join('');
}

/** A reply that saves a markdown file of about `lines` lines whose samples are bare and tagged inner blocks. */
export function makeNestedSave(lines: number): { reply: string; content: string } {
  const sections: string[] = [];
  for (let i = 0; sections.length * 12 < lines; i++) {
    sections.push(
      [
        `## Step ${i}`,
        '',
        'Run:',
        '```',
        `make step-${i}`,
        '```',
        'Then check the output:',
        '```bash',
        `test -f out/${i}.txt && echo ok`,
        '```',
        'It prints `ok`.',
        '',
      ].join('\n'),
    );
  }
  const content = sections.join('\n');
  return { reply: `Writing the guide.\n\`\`\`save GUIDE.md\n${content}\n\`\`\`\n\nDone.\n`, content };
}

/** Median ms to scan `reply` in `chunk`-character pieces to its first tool use (15 runs); checks what was found. */
function scanTime(reply: string, chunk: number, check: (use: ToolUse | undefined) => boolean): number {
  const times: number[] = [];
  for (let run = 0; run < 15; run++) {
    const t0 = performance.now();
    const scanner = new MarkdownStreamScanner((tag) => tag === 'shell' || tag === 'save');
    let use: ToolUse | undefined;
    for (let i = 0; i < reply.length && !use; i += chunk) use = scanner.push(reply.slice(i, i + chunk));
    use ??= scanner.finish();
    times.push(performance.now() - t0);
    if (!check(use)) throw new Error('the scanner did not find the expected tool block');
  }
  return median(times);
}

/** A 1 MB reply of prose and `ts` blocks, in 16-byte chunks. */
export function scanOneMegabyte(): number {
  return scanTime(makeReply(1_000_000), 16, (use) => use?.content === 'echo done');
}

/** A reply saving a file of `lines` lines with nested bare and tagged blocks, in 64-byte chunks. */
export function scanNestedSave(lines: number): number {
  const { reply, content } = makeNestedSave(lines);
  return scanTime(reply, 64, (use) => use?.content === content);
}
