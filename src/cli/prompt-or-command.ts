import type { Command, Option } from 'commander';

/**
 * How fence reads a command line whose first word that is not an option names one of its
 * commands (`sandbox`, `trust`, …):
 * - `command`: as the command (or the line holds no such word): commander reads it as usual;
 * - `prompt`: as a prompt for the model, the command's name its first word;
 * - `ambiguous`: it could be either (`fence trust`, `fence -n sandbox check`): it stays the
 *   command, and a failure of it should say how to write `prompt`, the words from the
 *   command's name on, as a prompt.
 */
export type CommandLineReading = { kind: 'command' } | { kind: 'prompt' } | { kind: 'ambiguous'; prompt: string };

const COMMAND: CommandLineReading = { kind: 'command' };
const PROMPT: CommandLineReading = { kind: 'prompt' };

/**
 * Reads `words` (the command line after `fence`) against `program`'s options and commands:
 * - words after `--` are a prompt, a command's name among them too;
 * - a command's name alone is a prompt after one of the program's options that ask for a run
 *   of the model (`fence -n sandbox`, `fence --auto trust`): any but `--help`, `--version` and
 *   those whose long names are in `settings`, the ones a shell alias may always add
 *   (`alias fence='fence -m openai/gpt-5'`); without one it is `ambiguous` (`fence sandbox`);
 * - a command's name followed by words the command would refuse is a prompt: a word that is
 *   not one of its subcommands, more arguments than it takes, or one of the program's prompt
 *   options that the command does not have (`fence trust me on this`, `fence sandbox -n`);
 * - a command's name followed by words the command takes is the command (`fence trust ..`),
 *   `ambiguous` after the program's own options (`fence -m local/x sandbox check`: those
 *   options are the program's, and the command ignores them, as commander reads it).
 * Lines commander would refuse anyway (an unknown option) are left to it. Never throws.
 */
export function readCommandLine(program: Command, words: readonly string[], settings: readonly string[] = []): CommandLineReading {
  let promptOptions = false;
  let options = false;
  for (let at = 0; at < words.length; ) {
    const word = words[at] as string;
    if (word === '--') return at + 1 < words.length ? PROMPT : COMMAND;
    if (word.startsWith('-') && word !== '-') {
      if (isHelpOrVersion(program, word)) return COMMAND;
      const step = optionWords(program, words, at);
      if (step === undefined) return COMMAND;
      options = true;
      if (!shortFlags(program, word).every((option) => option.long !== undefined && settings.includes(option.long))) promptOptions = true;
      at += step;
      continue;
    }
    const command = commandNamed(program, word);
    if (!command) return COMMAND;
    const rest = words.slice(at + 1);
    if (rest.length > 0 && !takes(command, rest, program)) return PROMPT;
    if (rest.length === 0 && promptOptions) return PROMPT;
    if (rest.length > 0 && !options) return COMMAND;
    return { kind: 'ambiguous', prompt: words.slice(at).join(' ') };
  }
  return COMMAND;
}

/** Whether `command` (a subcommand of `root`) accepts `words` after its name. */
function takes(command: Command, words: readonly string[], root: Command): boolean {
  if (command.commands.length > 0) {
    const [first, ...rest] = words;
    if (first === undefined) return true;
    if (first.startsWith('-')) return !isPromptOption(root, command, first);
    const sub = commandNamed(command, first);
    // commander's own `help [command]` of a group is no member of `commands`.
    if (!sub) return first === 'help' && helpTakes(command, rest);
    return takes(sub, rest, root);
  }
  let operands = 0;
  for (let at = 0; at < words.length; ) {
    const word = words[at] as string;
    if (word === '--') {
      operands += words.length - at - 1;
      break;
    }
    if (word.startsWith('-') && word !== '-') {
      if (isPromptOption(root, command, word)) return false;
      // An option neither knows is commander's to refuse, as a mistake in the command.
      at += optionWords(command, words, at) ?? 1;
      continue;
    }
    operands++;
    at++;
  }
  const declared = command.registeredArguments;
  if (declared.some((argument) => argument.variadic)) return true;
  return operands <= declared.length;
}

/** Whether `help` of `parent` takes `words`: nothing, or the name of one of its commands. */
function helpTakes(parent: Command, words: readonly string[]): boolean {
  return words.length === 0 || (words.length === 1 && commandNamed(parent, words[0] as string) !== undefined);
}

/** A subcommand of `parent` called `name` (or by an alias of it). */
function commandNamed(parent: Command, name: string): Command | undefined {
  return parent.commands.find((command) => command.name() === name || command.aliases().includes(name));
}

/** `-h`, `--help`, or the program's version option. */
function isHelpOrVersion(program: Command, word: string): boolean {
  if (word === '-h' || word === '--help') return true;
  const option = optionOf(program, word);
  return option?.long === '--version';
}

/** An option of `root` that `command` does not have: it belongs to a run of the model. */
function isPromptOption(root: Command, command: Command, word: string): boolean {
  return optionOf(command, word) === undefined && optionOf(root, word) !== undefined && !isHelpOrVersion(root, word);
}

/** The option of `command` that `word` starts with (`--long`, `--long=value`, `-x`, `-xVALUE`, `-xy`). */
function optionOf(command: Command, word: string): Option | undefined {
  const flag = word.startsWith('--') ? word.split('=')[0] : word.slice(0, 2);
  return command.options.find((option) => option.long === flag || option.short === flag);
}

/** The options `word` names: one for a long option, each flag of combined short ones (`-ny`) up to one that takes a value. */
function shortFlags(command: Command, word: string): Option[] {
  if (word.startsWith('--')) return [optionOf(command, word)].filter((option) => option !== undefined);
  const found: Option[] = [];
  for (let index = 1; index < word.length; index++) {
    const option = optionOf(command, `-${word[index]}`);
    if (!option) break;
    found.push(option);
    if (option.required || option.optional) break;
  }
  return found;
}

/**
 * How many words the option at `words[at]` takes, its value included, as commander reads it:
 * a required value is the next word unless attached; an optional one is the next word when
 * that does not start with `-`. Combined short flags (`-ny`) are read one by one. Undefined
 * for an option `command` does not have.
 */
function optionWords(command: Command, words: readonly string[], at: number): number | undefined {
  const word = words[at] as string;
  if (word.startsWith('--')) {
    const option = optionOf(command, word);
    if (!option) return undefined;
    return word.includes('=') ? 1 : valueWords(option, words[at + 1]);
  }
  for (let index = 1; index < word.length; index++) {
    const option = optionOf(command, `-${word[index]}`);
    if (!option) return undefined;
    if (option.required || option.optional) return index + 1 < word.length ? 1 : valueWords(option, words[at + 1]);
  }
  return 1;
}

/** The words an option without an attached value takes: itself, and its value if it has one. */
function valueWords(option: Option, next: string | undefined): number {
  if (option.required) return 2;
  if (option.optional && next !== undefined && !next.startsWith('-')) return 2;
  return 1;
}
