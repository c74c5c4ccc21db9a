import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../runtime/kube.ts';
import { describeError, PluginError } from './errors.ts';
import { parseWarningHeader } from './commands.ts';

const ctx = { namespace: 'tenant-a', server: 'https://api.example:6443', context: 'prod' };

test('an API refusal is printed in the API server\'s words, as kubectl prints it, with the fix when known', () => {
  const forbidden = new ApiError(403, 'Forbidden', 'vmimporttasks.forklift.cozystack.io is forbidden: User "u" cannot create resource "vmimporttasks" in API group "forklift.cozystack.io" in the namespace "tenant-a"');
  assert.deepEqual(describeError(forbidden, ctx), [
    'Error from server (Forbidden): vmimporttasks.forklift.cozystack.io is forbidden: User "u" cannot create resource "vmimporttasks" in API group "forklift.cozystack.io" in the namespace "tenant-a"',
    'fix: creating or changing imports in tenant-a needs a tenant admin role there (cozy:tenant:admin); ask the tenant\'s owner, or check the namespace with -n',
  ]);
  assert.match(describeError(new ApiError(403, 'Forbidden', 'x is forbidden: User "u" cannot list resource "vmimportsources"'), ctx)[1]!, /cozy:tenant:view or above/);
  assert.deepEqual(describeError(new ApiError(409, 'AlreadyExists', 'vmimporttasks.forklift.cozystack.io "t" already exists'), ctx)[1], 'fix: a task is one-shot and its name is taken: choose another name');
  assert.match(describeError(new ApiError(404, 'NotFound', 'the server could not find the requested resource'), ctx)[1]!, /not installed on this cluster/);
  assert.match(describeError(new ApiError(404, '404', '404 page not found'), ctx)[1]!, /not installed on this cluster .*or the API server is still starting/);
});

test('a webhook denial is printed as it is: its message carries its own fix', () => {
  const denied = new ApiError(400, 'BadRequest', 'admission webhook "vmimporttask.forklift.cozystack.io" denied the request: spec.storageClass: storage class "local" has volumeBindingMode WaitForFirstConsumer');
  assert.deepEqual(describeError(denied, ctx), [`Error from server (BadRequest): ${denied.message}`]);
});

test('an unreachable API server names the server and the context to check; the plugin\'s own errors carry their fix', () => {
  assert.deepEqual(describeError(new ApiError(0, 'ConnectionError', 'connect ECONNREFUSED 127.0.0.1:6443'), ctx), [
    'error: connect ECONNREFUSED 127.0.0.1:6443',
    'fix: the API server at https://api.example:6443 did not answer; check the kubeconfig context (prod) with kubectl cluster-info',
  ]);
  assert.deepEqual(describeError(new PluginError('no VM named "x"', 'list them'), ctx), ['error: no VM named "x"', 'fix: list them']);
  assert.deepEqual(describeError(new Error('boom'), ctx), ['error: boom']);
});

test('a Warning header yields each warning\'s text, quotes unescaped', () => {
  assert.deepEqual(parseWarningHeader('299 - "spec.vms[0]: VM \\"db\\" (vm-2): UEFI firmware"'), ['spec.vms[0]: VM "db" (vm-2): UEFI firmware']);
  assert.deepEqual(parseWarningHeader('299 - "one", 299 - "two, with a comma"'), ['one', 'two, with a comma']);
  assert.deepEqual(parseWarningHeader('not the RFC form'), ['not the RFC form']);
  assert.equal(parseWarningHeader(`299 - "${'x'.repeat(100_000)}"`)[0]!.length, 64 * 1024);
});
