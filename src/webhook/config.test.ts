import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildWebhookConfigurations, PATHS } from './config.ts';

test('both configurations fail closed, have no side effects, answer within 5 s and speak admission/v1', () => {
  const { validating, mutating } = buildWebhookConfigurations({ target: { service: { namespace: 'cozy-migration', name: 'mc-webhook' } }, caBundlePEM: 'PEM' });
  const hooks = [...(validating.webhooks as Array<Record<string, unknown>>), ...(mutating.webhooks as Array<Record<string, unknown>>)];
  assert.equal(hooks.length, 4);
  for (const h of hooks) {
    assert.equal(h.failurePolicy, 'Fail');
    assert.equal(h.sideEffects, 'None');
    assert.equal(h.timeoutSeconds, 5);
    assert.deepEqual(h.admissionReviewVersions, ['v1']);
    assert.deepEqual((h.rules as Array<{ operations: string[] }>)[0]!.operations, ['CREATE', 'UPDATE']);
    assert.equal((h.clientConfig as { caBundle: string }).caBundle, Buffer.from('PEM').toString('base64'));
  }
  assert.deepEqual(
    hooks.map((h) => (h.clientConfig as { service: { path: string } }).service.path),
    [PATHS.validateSource, PATHS.validateTask, PATHS.earlySource, PATHS.earlyTask],
  );
});

test('a URL target appends the paths', () => {
  const { validating } = buildWebhookConfigurations({ target: { url: 'https://127.0.0.1:9443/' } });
  assert.deepEqual(
    (validating.webhooks as Array<{ clientConfig: { url: string; caBundle?: string } }>).map((h) => h.clientConfig),
    [{ url: 'https://127.0.0.1:9443/validate-vmimportsource' }, { url: 'https://127.0.0.1:9443/validate-vmimporttask' }],
  );
});
