// Argument parsing (node:util parseArgs over the table in spec.ts) and the help texts. Pure.
import { parseArgs } from 'node:util';
import { COMMANDS, GLOBAL_OPTIONS, allOptions, commandSpec, type CommandSpec, type OptionSpec } from './spec.ts';

/** A command line that cannot be run as written: printed with the command's usage, exit 2. */
export class UsageError extends Error {
  readonly command: CommandSpec | undefined;
  constructor(message: string, command?: CommandSpec) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}

export interface Parsed {
  command: CommandSpec;
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** The whole program's help: the commands and the global options. */
export function programHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'kubectl vmimport: import vSphere VMs into Cozystack from the terminal, with your own kubeconfig and rights.',
    '',
    'Usage: kubectl vmimport COMMAND [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Options of every command:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'Run `kubectl vmimport COMMAND --help` for a command. Docs: docs/cli.md.',
  ].join('\n');
}

function flag(name: string, o: OptionSpec): string {
  return `${o.short ? `-${o.short}, ` : '    '}--${name}${o.value ? ` ${o.value}` : ''}`;
}

function optionLines(opts: Record<string, OptionSpec>): string[] {
  const entries = Object.entries(opts);
  const width = Math.max(0, ...entries.map(([n, o]) => flag(n, o).length));
  return entries.map(([n, o]) => `  ${flag(n, o).padEnd(width)}  ${o.help}`);
}

/** A command's help: usage, description, its options, the global ones, an example. */
export function commandHelp(c: CommandSpec): string {
  return [
    `${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.`,
    '',
    `Usage: kubectl vmimport ${c.usage}`,
    '',
    ...wrap(c.description, 100),
    '',
    ...(Object.keys(c.options).length ? ['Options:', ...optionLines(c.options), ''] : []),
    'Global options:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'Example:',
    `  ${c.example}`,
  ].join('\n');
}

/** Words of `text` on lines of at most `width` characters (a longer word keeps its own line). */
export function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  let line = '';
  for (const w of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + w.length > width) {
      out.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) out.push(line);
  return out;
}

/**
 * Parses a command line (without the program name). `undefined` command: the program's help was asked
 * for (no arguments, `help`, `-h`, `--help`). Throws UsageError for anything it cannot run.
 */
export function parse(argv: readonly string[]): Parsed | { help: CommandSpec | undefined } {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help') return { help: undefined };
  if (first === 'help') {
    if (rest[0] === undefined) return { help: undefined };
    const c = commandSpec(rest[0]);
    if (!c) throw new UsageError(`unknown command "${rest[0]}"`);
    return { help: c };
  }
  const c = commandSpec(first);
  if (!c) throw new UsageError(`unknown command "${first}"`);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...rest], options: toParseArgs(allOptions(c)), allowPositionals: true, strict: true });
  } catch (e) {
    // parseArgs' own words ("Unknown option '--x'", "Option '--source <value>' argument missing").
    throw new UsageError((e as Error).message.replace(/\. To specify a positional argument.*$/s, ''), c);
  }
  const values = parsed.values as Parsed['values'];
  if (values.help) return { help: c };
  const [min, max] = c.args;
  if (parsed.positionals.length < min) throw new UsageError(`${c.name} needs ${min === max ? min : `at least ${min}`} argument${min === 1 ? '' : 's'}: kubectl vmimport ${c.usage}`, c);
  if (parsed.positionals.length > max) throw new UsageError(`${c.name} takes at most ${max} argument${max === 1 ? '' : 's'}, got ${parsed.positionals.length}: ${parsed.positionals.join(' ')}`, c);
  for (const [name, o] of Object.entries(c.options)) {
    const v = values[name];
    if (typeof v === 'string' && Array.isArray(o.complete) && !o.complete.includes(v)) throw new UsageError(`--${name} must be one of ${o.complete.join(', ')}, not "${v}"`, c);
  }
  if (Array.isArray(c.positional)) {
    for (const p of parsed.positionals) if (!c.positional.includes(p)) throw new UsageError(`${c.name}: "${p}" is not one of ${c.positional.join(', ')}`, c);
  }
  return { command: c, values, positionals: parsed.positionals };
}

function toParseArgs(opts: Record<string, OptionSpec>): NonNullable<Parameters<typeof parseArgs>[0]>['options'] {
  const out: NonNullable<NonNullable<Parameters<typeof parseArgs>[0]>['options']> = {};
  for (const [n, o] of Object.entries(opts)) out[n] = { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) };
  return out;
}

/** A duration as kubectl writes one: 90s, 30m, 2h, 1h30m (no unit: seconds). Undefined when malformed. */
export function parseDuration(s: string): number | undefined {
  // Bounded before matching: a duration is a few characters, and the pattern is linear anyway.
  if (s.length > 32) return undefined;
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(s);
  if (!m || s === '') return undefined;
  return ((Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 1000;
}
