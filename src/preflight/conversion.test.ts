import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GUEST_CONVERSION_DISABLED_MESSAGE, guestConversionProblem } from './conversion.ts';

test('guest conversion needs the platform opt-in; a raw copy (false or absent) needs nothing; a non-boolean is refused', () => {
  assert.equal(guestConversionProblem(true, false), GUEST_CONVERSION_DISABLED_MESSAGE);
  assert.equal(guestConversionProblem(true, true), undefined);
  for (const enabled of [false, true]) {
    assert.equal(guestConversionProblem(undefined, enabled), undefined);
    assert.equal(guestConversionProblem(false, enabled), undefined);
    assert.equal(guestConversionProblem('yes', enabled), 'spec.guestConversion must be true or false (got "yes")');
  }
});
