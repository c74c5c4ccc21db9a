import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commandHelp, parse, parseDuration, programHelp, UsageError, wrap } from './args.ts';
import { COMMANDS } from './spec.ts';

const parsed = (argv: string[]) => {
  const p = parse(argv);
  assert.ok(!('help' in p), `expected a command, got help for ${argv.join(' ')}`);
  return p;
};

test('the program help names every command with its summary and the global options', () => {
  const h = programHelp();
  for (const c of COMMANDS) assert.match(h, new RegExp(`^  ${c.name} +${c.summary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
  assert.match(h, /-n, --namespace NAMESPACE/);
  for (const argv of [[], ['-h'], ['--help'], ['help']]) assert.deepEqual(parse(argv), { help: undefined });
});

test('every command has --help with its usage, its options, the global ones and an example that parses', () => {
  for (const c of COMMANDS) {
    assert.deepEqual(parse([c.name, '--help']), { help: c });
    assert.deepEqual(parse(['help', c.name]), { help: c });
    const h = commandHelp(c);
    assert.match(h, new RegExp(`^Usage: kubectl vmimport ${c.name}`, 'm'));
    for (const o of Object.keys(c.options)) assert.match(h, new RegExp(`--${o}\\b`));
    assert.match(h, /Global options:\n {2}-n, --namespace/);
    // The example is a command line the parser accepts (the shell's own words split on spaces).
    if (c.name === 'completion') {
      assert.equal(c.example, 'source <(kubectl-vmimport completion bash)');
      continue;
    }
    const words = c.example.replace(/ [<>|].*$/, '').split(' ');
    assert.deepEqual(words.slice(0, 2), ['kubectl', 'vmimport']);
    assert.equal(parsed(words.slice(2)).command.name, c.name);
  }
});

test('options are parsed by parseArgs: repeated flags collect, short forms and --flag=value work', () => {
  const p = parsed(['create', 't', '--source', 'vc', '--vm', 'a', '--vm=b', '-n', 'ns', '--dry-run=client', '-o', 'json']);
  assert.deepEqual(p.positionals, ['t']);
  assert.deepEqual(p.values.vm, ['a', 'b']);
  assert.equal(p.values.namespace, 'ns');
  assert.equal(p.values['dry-run'], 'client');
  assert.equal(parsed(['vms', 'vc', '-owide']).values.output, 'wide');
});

test('a command line that cannot run is a usage error naming what is wrong', () => {
  const msg = (argv: string[]): string => {
    try {
      parse(argv);
    } catch (e) {
      assert.ok(e instanceof UsageError);
      return e.message;
    }
    return 'no error';
  };
  assert.equal(msg(['nope']), 'unknown command "nope"');
  assert.equal(msg(['vms']), 'vms needs 1 argument: kubectl vmimport vms SOURCE [--folder PATH] [--name TEXT] [--blocked | --ready] [-o wide|json|yaml]');
  assert.match(msg(['vms', 'a', 'b']), /takes at most 1 argument, got 2: a b/);
  assert.equal(msg(['vms', 'a', '--bogus']), "Unknown option '--bogus'");
  assert.match(msg(['vms', 'a', '-o', 'xml']), /--output must be one of wide, json, yaml, not "xml"/);
  assert.match(msg(['create', 't', '--dry-run=maybe']), /--dry-run must be one of client, server/);
  assert.match(msg(['completion', 'fish']), /"fish" is not one of bash, zsh/);
  assert.match(msg(['watch']), /watch needs at least 1 argument/);
});

test('a duration is seconds, or hours, minutes and seconds as kubectl writes them; anything else is refused', () => {
  assert.equal(parseDuration('90'), 90_000);
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration('30m'), 1_800_000);
  assert.equal(parseDuration('1h30m'), 5_400_000);
  for (const bad of ['', 'h', '1d', '-5s', '1.5h', '9'.repeat(40)]) assert.equal(parseDuration(bad), undefined, bad);
});

test('help text wraps at word boundaries', () => {
  assert.deepEqual(wrap('aa bb cc dd', 5), ['aa bb', 'cc dd']);
  assert.deepEqual(wrap('a verylongword b', 4), ['a', 'verylongword', 'b']);
});

test('--watch makes create, retry and cutover go on as watch; --timeout belongs to watching and is checked before anything is written', async () => {
  const { timeoutOf } = await import('./commands.ts');
  for (const c of ['create', 'retry', 'cutover']) assert.ok(COMMANDS.find((x) => x.name === c)!.options.watch, c);
  assert.equal(timeoutOf(parsed(['watch', 't', '--timeout', '2m'])), 120_000);
  assert.equal(timeoutOf(parsed(['cutover', 't', '--now', '--watch', '--timeout', '90s'])), 90_000);
  assert.equal(timeoutOf(parsed(['cutover', 't', '--now'])), undefined);
  assert.throws(() => timeoutOf(parsed(['cutover', 't', '--now', '--timeout', '2m'])), /--timeout is for --watch/);
  assert.throws(() => timeoutOf(parsed(['watch', 't', '--timeout', 'soon'])), /expected a duration/);
});
