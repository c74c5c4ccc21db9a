import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bashScript, cobraOutput, completionFor, zshScript } from './complete.ts';

test('the first word completes to the commands; a dash to the command\'s flags and the global ones', () => {
  assert.deepEqual(completionFor(['']), { kind: 'static', candidates: ['vms', 'create', 'watch', 'retry', 'cutover', 'report', 'completion', 'help'] });
  assert.deepEqual(completionFor(['re']), { kind: 'static', candidates: ['retry', 'report'] });
  assert.deepEqual(completionFor(['vms', 'vc', '--b']), { kind: 'static', candidates: ['--blocked'] });
  assert.deepEqual(completionFor(['watch', '--n']), { kind: 'static', candidates: ['--namespace'] });
  assert.deepEqual(completionFor(['help', 'cu']), { kind: 'static', candidates: ['cutover'] });
});

test('an option value completes to its choices, with or without =, and a short flag\'s too', () => {
  assert.deepEqual(completionFor(['report', 't', '-o', 'm']), { kind: 'static', candidates: ['markdown'] });
  assert.deepEqual(completionFor(['create', 't', '--dry-run=c']), { kind: 'static', candidates: ['--dry-run=client'] });
  assert.deepEqual(completionFor(['completion', '']), { kind: 'static', candidates: ['bash', 'zsh'] });
  assert.deepEqual(completionFor(['create', 't', '--storage-class', '']), { kind: 'static', candidates: [] });
});

test('task, source and VM names are asked of the API, with the namespace, context and source given so far', () => {
  assert.deepEqual(completionFor(['watch', '-n', 'tenant-a', 'imp']), { kind: 'task', partial: 'imp', prefix: '', globals: { namespace: 'tenant-a', context: undefined, kubeconfig: undefined } });
  assert.deepEqual(completionFor(['create', 't', '--source', '']), { kind: 'source', partial: '', prefix: '', globals: { namespace: undefined, context: undefined, kubeconfig: undefined } });
  assert.deepEqual(completionFor(['create', 't', '--context', 'prod', '--source', 'vc', '--vm', 'we']), { kind: 'vm', partial: 'we', prefix: '', source: 'vc', globals: { namespace: undefined, context: 'prod', kubeconfig: undefined } });
  assert.equal(completionFor(['vms', '']).kind, 'source');
});

test('the answer is in Cobra\'s format, ending with the no-file directive; the scripts call the same engine', () => {
  assert.equal(cobraOutput(['a', 'b']), 'a\nb\n:4\n');
  assert.equal(cobraOutput([]), ':4\n');
  assert.match(bashScript(), /kubectl-vmimport __complete "\$\{COMP_WORDS\[@\]:1:COMP_CWORD\}"/);
  assert.match(bashScript(), /^complete -F _kubectl_vmimport kubectl-vmimport$/m);
  assert.match(zshScript(), /^#compdef kubectl-vmimport$/m);
  assert.match(zshScript(), /kubectl-vmimport __complete "\$\{\(@\)words\[2,CURRENT\]\}"/);
});
