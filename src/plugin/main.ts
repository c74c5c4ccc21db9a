#!/usr/bin/env node
// kubectl-vmimport: the kubectl plugin of migration-controller (docs/cli.md). kubectl runs it for
// `kubectl vmimport …` when it is on PATH; it runs with the user's kubeconfig, context and rights alone.
// Exit codes: 0 done (watch: every VM succeeded), 1 failed (watch: a VM failed or the timeout passed),
// 2 a command line it cannot run.
//
// The Kubernetes client and the commands load only for a command that talks to the API: --help, the
// completion scripts and the completion of commands and flags answer from the command table alone, in a
// tenth of the time, as a shell waits on them at every <TAB>.
import { commandHelp, parse, programHelp, UsageError } from './args.ts';
import type { IO, Session } from './commands.ts';
import { bashScript, cobraOutput, completionFor, zshScript } from './complete.ts';
import { describeError } from './errors.ts';

export async function run(argv: string[], io: IO): Promise<number> {
  if (argv[0] === '__complete') {
    const words = argv.slice(1);
    const req = completionFor(words.length ? words : ['']);
    if (req.kind === 'static') {
      io.out(cobraOutput(req.candidates));
      return 0;
    }
    const c = await import('./commands.ts');
    return await c.cmdComplete(words, io, c.session);
  }
  let s: Session | undefined;
  try {
    const p = parse(argv);
    if ('help' in p) {
      io.out(`${p.help ? commandHelp(p.help) : programHelp()}\n`);
      return 0;
    }
    if (p.command.name === 'completion') {
      io.out(p.positionals[0] === 'zsh' ? zshScript() : bashScript());
      return 0;
    }
    const { cmdCreate, cmdCutover, cmdReport, cmdRetry, cmdVMs, cmdWatch, session, timeoutOf } = await import('./commands.ts');
    // Checked before anything is written: a malformed --timeout must not surface after a task was created.
    timeoutOf(p);
    s = session(p.values);
    switch (p.command.name) {
      case 'vms':
        return await cmdVMs(p, s, io);
      case 'create':
        return await cmdCreate(p, s, io);
      case 'watch':
        return await cmdWatch(p, s, io);
      case 'retry':
        return await cmdRetry(p, s, io);
      case 'cutover':
        return await cmdCutover(p, s, io);
      case 'report':
        return await cmdReport(p, s, io);
    }
    throw new UsageError(`unknown command "${p.command.name}"`);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`error: ${e.message}\n${e.command ? `usage: kubectl vmimport ${e.command.usage}\nsee kubectl vmimport ${e.command.name} --help` : 'see kubectl vmimport --help'}\n`);
      return 2;
    }
    for (const l of describeError(e, { namespace: s?.namespace ?? '', server: s?.server, context: s?.context })) io.err(`${l}\n`);
    return 1;
  } finally {
    s?.client.close();
  }
}

const io: IO = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  tty: process.stdout.isTTY === true,
  now: Date.now,
};

run(process.argv.slice(2), io).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`error: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exitCode = 1;
  },
);
