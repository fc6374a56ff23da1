import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The folders of `src/` and the folders each may import from (type-only imports count too):
 * the layers of the house plan. Imports point down only, so there is no cycle between folders.
 */
const ALLOWED: Record<string, readonly string[]> = {
  cli: ['session', 'tui', 'agent', 'skills', 'images', 'tools', 'ptc', 'policy', 'hooks', 'processes', 'program-vm', 'os-sandbox', 'llm', 'parse', 'conversation', 'config'],
  tui: ['session', 'agent', 'images', 'tools', 'ptc', 'policy', 'processes', 'program-vm', 'os-sandbox', 'llm', 'parse', 'conversation', 'config'],
  // Opening one session (config, trust, OS sandbox, tools, MCP servers, agent): the one way every
  // front end opens a session. Nothing below imports it; what a tool needs of it is handed down.
  session: ['agent', 'skills', 'hooks', 'tools', 'ptc', 'policy', 'processes', 'program-vm', 'os-sandbox', 'llm', 'parse', 'conversation', 'config'],
  agent: ['images', 'tools', 'policy', 'llm', 'parse', 'conversation', 'config'],
  tools: ['images', 'ptc', 'policy', 'processes', 'program-vm', 'os-sandbox', 'web', 'llm', 'parse', 'config'],
  ptc: ['policy', 'program-vm', 'config'],
  policy: [],
  // The processes the model drives run inside the OS sandbox; the OS sandbox knows nothing of
  // them, and the program VM (QuickJS) needs neither: its isolation is the interpreter's own.
  processes: ['os-sandbox', 'config'],
  'os-sandbox': ['config'],
  // The person's hooks, processes fence starts at events: they match calls with the policy's
  // patterns and know nothing of the loop or the tools, which see them through interfaces of their own.
  hooks: ['policy', 'config'],
  // Web pages, fetched in fence's own process: its host list is read as the sandbox's network rules.
  web: ['os-sandbox'],
  'program-vm': [],
  // Preparing images (sharp) for the model: what it makes is plain data of the conversation.
  images: ['conversation'],
  llm: ['conversation'],
  parse: [],
  conversation: [],
  config: ['llm', 'parse', 'policy'],
  // Agent Skills: found in the user's and a trusted project's folders, listed in the system prompt.
  skills: ['config'],
};

const SRC = join(import.meta.dirname, '..', 'src');

/** Every `.ts` file under `dir`, with the folder of `src/` it belongs to. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The `src/` folders that the static and dynamic imports in `text` (of `file`) reach, other than its own. */
function importedFolders(file: string, own: string, text = readFileSync(file, 'utf8')): string[] {
  const folders = new Set<string>();
  for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*)'(\.\.\/[^']+)'/g)) {
    const target = relative(SRC, join(file, '..', match[1] as string));
    const folder = target.split('/')[0];
    if (folder && folder !== own && !folder.startsWith('..')) folders.add(folder);
  }
  return [...folders];
}

describe('layers', () => {
  const files = sourceFiles(SRC);

  it('knows every folder of src/', () => {
    const folders = new Set(files.map((file) => relative(SRC, file).split('/')[0]));
    expect([...folders].sort()).toEqual(Object.keys(ALLOWED).sort());
  });

  it('has no import that points up or sideways', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const own = relative(SRC, file).split('/')[0] as string;
      for (const folder of importedFolders(file, own)) {
        if (!ALLOWED[own]?.includes(folder)) wrong.push(`${relative(SRC, file)} imports ${folder}/`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('sees static, type-only and dynamic imports', () => {
    const text = [
      "import { a } from '../cli/open-session';",
      "import type { B } from '../agent/agent';",
      "const { c } = await import('../llm/create-provider');",
      "import { d } from './chat-view';",
    ].join('\n');
    expect(importedFolders(join(SRC, 'tui', 'chat.ts'), 'tui', text).sort()).toEqual(['agent', 'cli', 'llm']);
  });
});
