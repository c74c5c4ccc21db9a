import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BLOCKER_FAILURE_PREFIX, blockerFailure } from './blocker.ts';
import { translateFailure } from './failures.ts';

// The words Forklift v2.12.5 writes (controller.go failExecutingMigrationOnBlocker with the messages of
// plan/validation.go): the sim writes the same (test/sim/forklift.ts failOnBlocker).
const SOURCE_NOT_READY = `${BLOCKER_FAILURE_PREFIX}The source provider is not ready.`;

test('a v2.12 blocker failure of the source ends the VM SourceNotReady, naming the blocker and saying a new task copies everything again', () => {
  const t = translateFailure(SOURCE_NOT_READY, { sourceName: 'vc' });
  assert.equal(t.reason, 'SourceNotReady');
  assert.match(t.message, /VMImportSource "vc" stopped being Ready/);
  assert.match(t.message, /Fix what blocked \(The source provider is not ready\.\)/);
  assert.match(t.message, /a new task copies every disk again from the start/);
  assert.ok(t.message.endsWith(`Forklift said: ${SOURCE_NOT_READY}`), 'Forklift\'s words are kept');
});

test('a blocker failure is read before the other rules: a quoted auth failure does not turn it into a credentials message', () => {
  const text = `${BLOCKER_FAILURE_PREFIX}The source provider is not ready.; Connection auth failed, error: Cannot complete login due to an incorrect user name or password.`;
  const t = translateFailure(text);
  assert.equal(t.reason, 'SourceNotReady');
  assert.deepEqual(blockerFailure(text)!.blockers, ['The source provider is not ready.', 'Connection auth failed, error: Cannot complete login due to an incorrect user name or password.']);
});

test('a blocker failure on something else than the providers is PlanNotValid with the blockers named', () => {
  const t = blockerFailure(`${BLOCKER_FAILURE_PREFIX}Map.Storage does not have Ready condition.`)!;
  assert.equal(t.reason, 'PlanNotValid');
  assert.match(t.message, /Map\.Storage does not have Ready condition\./);
  assert.match(t.message, /new task/);
});

test('a failure text without the blocker words is not a blocker failure', () => {
  assert.equal(blockerFailure('The VM migration has FAILED.'), undefined);
  assert.equal(translateFailure('The VM migration has FAILED.').reason, 'TransferFailed');
});
