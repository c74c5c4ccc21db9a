import { test } from 'node:test';
import assert from 'node:assert/strict';
import { memoize } from './memo.ts';
import { caCertProblem, caCertWarnings } from './tls.ts';
import { ipInCIDR } from './cidr.ts';
import { checkHost, isIPLiteral } from './egress.ts';
import { EMPTY_POLICY } from './egress.ts';

test('a memo computes each distinct input once and keeps at most its bound, oldest out first', () => {
  let calls = 0;
  const f = memoize((s: string) => (calls++, s.length), 2);
  assert.equal(f('a'), 1);
  assert.equal(f('a'), 1);
  assert.equal(calls, 1);
  f('bb');
  f('ccc');
  assert.equal(f.size(), 2);
  f('a');
  assert.equal(calls, 4, 'the oldest input was evicted and is computed again');
});

test('memoized address and CA checks answer as before, however often they are asked', () => {
  for (let i = 0; i < 3; i++) {
    assert.equal(ipInCIDR('10.96.0.10', '10.96.0.0/12'), true);
    assert.equal(ipInCIDR('::ffff:10.96.0.10', '10.96.0.0/12'), true);
    assert.equal(ipInCIDR('10.96.0.10', '::ffff:10.96.0.0/108'), true);
    assert.equal(ipInCIDR('192.168.1.1', '10.96.0.0/12'), false);
    assert.equal(ipInCIDR('junk', '10.96.0.0/12'), false);
    assert.equal(isIPLiteral('vc.example.com'), false);
    // Non-decimal IPv4 forms are literals too, judged by the address rules (127.1 is loopback).
    assert.equal(isIPLiteral('127.1'), true);
    assert.equal(checkHost('127.1', EMPTY_POLICY, { serviceCIDRs: [], podCIDRs: [] }).allowed, false);
    assert.match(caCertProblem('not a pem') ?? '', /not a PEM certificate/);
    assert.deepEqual(caCertWarnings('not a pem'), []);
  }
});
