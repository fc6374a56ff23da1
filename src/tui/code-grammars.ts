/**
 * The languages `code-highlight` colours: the grammars its generic scanner follows (keywords,
 * constants, comments, string delimiters and the like per language) and the table of language
 * names, as written after a fence or as file extensions, with the family that colours each.
 */

/** A string delimiter, and whether a backslash escapes inside it. */
interface Quote {
  readonly open: string;
  readonly close: string;
  readonly escapes: boolean;
}

/** What the generic scanner needs to know about a language. */
export interface Grammar {
  readonly keywords: ReadonlySet<string>;
  readonly constants: ReadonlySet<string>;
  /** Keywords after which the next word is the name being defined (painted blue). */
  readonly definers: ReadonlySet<string>;
  /** Keywords and constants are matched lowercased (SQL). */
  readonly caseInsensitive: boolean;
  readonly lineComments: readonly string[];
  /** `#` starts a comment only at the start of a word (shell, YAML), not inside `a#b`. */
  readonly hashAtWordStart: boolean;
  readonly blockComment?: readonly [string, string];
  /** Strings that may span lines (triple quotes, template literals, raw strings). Checked first. */
  readonly multiline: readonly Quote[];
  /** Strings that end at the end of their line at the latest. */
  readonly quotes: readonly Quote[];
  /** `'` starts a string only as a short character literal (`'a'`, `'\n'`), so Rust lifetimes stay plain. */
  readonly charLiterals: boolean;
  /** `$name`, `${...}`, `$1`, `$?` are variables (shell, PHP). */
  readonly variables: boolean;
  /** `@name` is a decorator or annotation. */
  readonly decorators: boolean;
  /** `#include`-style directives at the start of a line (C, C++, C#). */
  readonly preprocessor: boolean;
  /** A string followed by `:` is a key (JSON). */
  readonly keyStrings: boolean;
  /** Recognises a key or table header at the start of a line (YAML, TOML): returns where it ends. */
  readonly lineStart?: (text: string) => { start: number; end: number; table: boolean } | undefined;
}

const words = (text: string): ReadonlySet<string> => new Set(text.split(' ').filter(Boolean));

const JS_KEYWORDS = words(
  'break case catch class const continue debugger default delete do else export extends finally for function if import in instanceof let new return super switch this throw try typeof var void while with yield async await of static interface type enum implements private protected public readonly abstract declare namespace as from keyof satisfies',
);
const JVM_KEYWORDS = words(
  'abstract assert boolean break byte case catch char class const continue default do double else enum extends final finally float for if implements import instanceof int interface long native new package private protected public return short static super switch synchronized this throw throws try void volatile while var val fun when object data sealed override open internal companion lateinit init is in out namespace using struct readonly ref base async await let func guard protocol extension self Self where defer inout typealias record yield get set string bool decimal',
);
const C_KEYWORDS = words(
  'auto break case char const continue default do double else enum extern float for goto if inline int long register return short signed sizeof static struct switch typedef union unsigned void volatile while class namespace template typename public private protected virtual override new delete this using constexpr noexcept bool try catch throw operator friend explicit mutable static_cast dynamic_cast reinterpret_cast const_cast decltype concept requires co_await co_return co_yield',
);
const GO_KEYWORDS = words(
  'break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var',
);
const RUST_KEYWORDS = words(
  'as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while',
);
const PHP_KEYWORDS = words(
  'abstract and array as break callable case catch class clone const continue declare default do echo else elseif empty endfor endforeach endif endswitch endwhile extends final finally fn for foreach function global goto if implements include include_once instanceof interface isset list match namespace new or print private protected public readonly require require_once return static switch throw trait try unset use var while xor yield',
);
const PYTHON_KEYWORDS = words(
  'and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield',
);
const SHELL_KEYWORDS = words(
  'if then else elif fi for while until do done case esac in function return local export readonly declare unset shift break continue exit select time',
);
const SQL_KEYWORDS = words(
  'select from where and or not insert into values update set delete create table view index drop alter add column primary key foreign references join left right inner outer full cross on as group by order having limit offset distinct union all case when then else end is like in between exists default unique constraint check with returning begin commit rollback transaction if asc desc cast replace temporary',
);
const NO_WORDS: ReadonlySet<string> = new Set();

const C_CONSTANTS = words('true false null nullptr nil undefined NaN Infinity NULL TRUE FALSE iota None');
const DEFINERS = words('function class def fn func struct enum interface trait fun');

const DOUBLE: Quote = { open: '"', close: '"', escapes: true };
const SINGLE: Quote = { open: "'", close: "'", escapes: true };
const SINGLE_RAW: Quote = { open: "'", close: "'", escapes: false };
const TRIPLE_DOUBLE: Quote = { open: '"""', close: '"""', escapes: true };

/** A C-like grammar with the given keywords; `extra` overrides the defaults. */
function cLike(keywords: ReadonlySet<string>, extra: Partial<Grammar> = {}): Grammar {
  return {
    keywords,
    constants: C_CONSTANTS,
    definers: DEFINERS,
    caseInsensitive: false,
    lineComments: ['//'],
    hashAtWordStart: false,
    blockComment: ['/*', '*/'],
    multiline: [],
    quotes: [DOUBLE, SINGLE],
    charLiterals: true,
    variables: false,
    decorators: false,
    preprocessor: false,
    keyStrings: false,
    ...extra,
  };
}

/** A YAML key (`name:`, `- name:`, `"quoted key":`) at the start of a line. */
const YAML_KEY = /^(\s*(?:- +)*)([^\s#:"'{}[\],&*!|>%@`][^:#]*?|"[^"]*"|'[^']*')(?=:(?:\s|$))/;
/** A TOML table header (`[table]`, `[[array]]`) at the start of a line. */
const TOML_TABLE = /^(\s*)(\[\[?[^\]]*\]\]?)/;
/** A TOML key (`name =`, `a.b =`, `"quoted" =`) at the start of a line. */
const TOML_KEY = /^(\s*)([A-Za-z0-9_.-]+|"[^"]*"|'[^']*')(?=\s*=)/;

function matchAtStart(pattern: RegExp, text: string, table: boolean): { start: number; end: number; table: boolean } | undefined {
  const match = pattern.exec(text);
  if (!match) return undefined;
  const lead = match[1]?.length ?? 0;
  return { start: lead, end: match[0].length, table };
}

const JS = cLike(JS_KEYWORDS, { quotes: [DOUBLE, SINGLE], charLiterals: false, multiline: [{ open: '`', close: '`', escapes: true }], decorators: true });
const JVM = cLike(JVM_KEYWORDS, { multiline: [TRIPLE_DOUBLE], decorators: true, preprocessor: true });
const C = cLike(C_KEYWORDS, { preprocessor: true });
const GO = cLike(GO_KEYWORDS, { multiline: [{ open: '`', close: '`', escapes: false }] });
const RUST = cLike(RUST_KEYWORDS);
const PHP = cLike(PHP_KEYWORDS, { quotes: [DOUBLE, SINGLE], charLiterals: false, lineComments: ['//', '#'], variables: true });
const PYTHON: Grammar = {
  ...cLike(PYTHON_KEYWORDS),
  constants: words('True False None'),
  lineComments: ['#'],
  blockComment: undefined,
  multiline: [TRIPLE_DOUBLE, { open: "'''", close: "'''", escapes: true }],
  quotes: [DOUBLE, SINGLE],
  charLiterals: false,
  decorators: true,
};
export const SHELL: Grammar = {
  ...cLike(SHELL_KEYWORDS),
  constants: NO_WORDS,
  definers: words('function'),
  lineComments: ['#'],
  hashAtWordStart: true,
  blockComment: undefined,
  quotes: [DOUBLE, SINGLE_RAW],
  charLiterals: false,
  variables: true,
};
const SQL: Grammar = {
  ...cLike(SQL_KEYWORDS),
  constants: words('null true false'),
  definers: NO_WORDS,
  caseInsensitive: true,
  lineComments: ['--'],
  quotes: [SINGLE, DOUBLE],
  charLiterals: false,
};
const JSON_GRAMMAR: Grammar = { ...cLike(NO_WORDS), constants: words('true false null'), definers: NO_WORDS, charLiterals: false, keyStrings: true };
const YAML: Grammar = {
  ...cLike(NO_WORDS),
  constants: words('true false null yes no on off True False Null'),
  definers: NO_WORDS,
  lineComments: ['#'],
  hashAtWordStart: true,
  blockComment: undefined,
  quotes: [DOUBLE, SINGLE_RAW],
  charLiterals: false,
  lineStart: (text) => matchAtStart(YAML_KEY, text, false),
};
const TOML: Grammar = {
  ...cLike(NO_WORDS),
  constants: words('true false inf nan'),
  definers: NO_WORDS,
  lineComments: ['#'],
  blockComment: undefined,
  multiline: [TRIPLE_DOUBLE, { open: "'''", close: "'''", escapes: false }],
  quotes: [DOUBLE, SINGLE_RAW],
  charLiterals: false,
  lineStart: (text) => matchAtStart(TOML_TABLE, text, true) ?? matchAtStart(TOML_KEY, text, false),
};

type Family = Grammar | 'markup' | 'css' | 'diff' | 'console';

/** Language names (as written after a fence, lowercased) and the family that colours them. */
const LANGUAGES = new Map<string, Family>();
function register(family: Family, names: string): void {
  for (const name of names.split(' ')) LANGUAGES.set(name, family);
}
register(JS, 'js javascript mjs cjs jsx ts typescript mts cts tsx node');
register(JVM, 'java kotlin kt kts swift csharp cs c# scala');
register(C, 'c h cpp c++ cc cxx hpp hh hxx');
register(GO, 'go golang');
register(RUST, 'rust rs');
register(PHP, 'php');
register(PYTHON, 'py python python3 py3 pyi ipython');
register(SHELL, 'sh bash shell zsh ksh');
register('console', 'console shellsession terminal');
register(JSON_GRAMMAR, 'json jsonc json5');
register(YAML, 'yaml yml');
register(TOML, 'toml');
register(SQL, 'sql mysql postgres postgresql psql sqlite plsql');
register('markup', 'html htm xml xhtml svg vue');
register('css', 'css scss less');
register('diff', 'diff patch udiff');

/** The family that colours `language` (a name or an extension, with or without its dot, any case). */
export function familyOf(language: string): Family | undefined {
  const name = language.trim().toLowerCase();
  return LANGUAGES.get(name.startsWith('.') ? name.slice(1) : name);
}
