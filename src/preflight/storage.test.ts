import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkStorageClass, defaultStorageClass, recheckStorageClass, type StorageClassLike } from './storage.ts';

const sc = (name: string, mode?: string, def?: 'ga' | 'beta', reclaimPolicy?: string): StorageClassLike => ({
  metadata: { name, annotations: def === 'ga' ? { 'storageclass.kubernetes.io/is-default-class': 'true' } : def === 'beta' ? { 'storageclass.beta.kubernetes.io/is-default-class': 'true' } : {} },
  provisioner: 'example.com/x',
  ...(mode ? { volumeBindingMode: mode } : {}),
  ...(reclaimPolicy ? { reclaimPolicy } : {}),
});

test('the default class is the one annotated is-default-class, GA or beta annotation', () => {
  assert.equal(defaultStorageClass([sc('a'), sc('b', 'Immediate', 'ga')])?.metadata.name, 'b');
  assert.equal(defaultStorageClass([sc('a'), sc('c', 'Immediate', 'beta')])?.metadata.name, 'c');
  assert.equal(defaultStorageClass([sc('a'), sc('b')]), undefined);
  assert.equal(defaultStorageClass([{ metadata: { name: 'x', annotations: { 'storageclass.kubernetes.io/is-default-class': 'false' } } }]), undefined);
});

test('a named Immediate class passes with its reclaim policy; an absent binding mode means Immediate', () => {
  assert.deepEqual(checkStorageClass('fast', [sc('fast', 'Immediate', undefined, 'Retain')]), { ok: true, className: 'fast', reclaimPolicy: 'Retain', isDefault: false });
  assert.deepEqual(checkStorageClass('fast', [sc('fast')]), { ok: true, className: 'fast', reclaimPolicy: 'Delete', isDefault: false });
});

test('an empty storageClass resolves to the cluster default', () => {
  assert.deepEqual(checkStorageClass(undefined, [sc('a', 'Immediate'), sc('d', 'Immediate', 'ga')]), { ok: true, className: 'd', reclaimPolicy: 'Delete', isDefault: true });
  assert.deepEqual(checkStorageClass('', [sc('d', 'Immediate', 'ga')]), { ok: true, className: 'd', reclaimPolicy: 'Delete', isDefault: true });
});

test('a missing class is named, with the Immediate classes available', () => {
  const r = checkStorageClass('nope', [sc('b', 'Immediate'), sc('a', 'Immediate'), sc('w', 'WaitForFirstConsumer')]);
  assert.equal(r.ok, false);
  assert.ok(!r.ok);
  assert.equal(r.reason, 'StorageClassNotFound');
  assert.equal(r.message, 'storage class "nope" does not exist; storage classes that bind Immediate: a, b');
});

test('a WaitForFirstConsumer class is refused naming the class, its mode and the Immediate classes', () => {
  const r = checkStorageClass('local', [sc('local', 'WaitForFirstConsumer'), sc('replicated', 'Immediate')]);
  assert.ok(!r.ok);
  assert.equal(r.reason, 'StorageClassWaitForFirstConsumer');
  assert.equal(r.message, 'storage class "local" has volumeBindingMode WaitForFirstConsumer; the import needs a class that binds Immediate, or its transfer volumes never bind (storage classes that bind Immediate: replicated)');
});

test('a WaitForFirstConsumer default class is refused and called the default', () => {
  const r = checkStorageClass(undefined, [sc('local', 'WaitForFirstConsumer', 'ga')]);
  assert.ok(!r.ok);
  assert.equal(r.reason, 'StorageClassWaitForFirstConsumer');
  assert.match(r.message, /^the cluster default storage class "local" has volumeBindingMode WaitForFirstConsumer/);
  assert.match(r.message, /no storage class in this cluster binds Immediate/);
});

test('no default class and none named is NoDefaultStorageClass', () => {
  const r = checkStorageClass(undefined, [sc('a', 'Immediate')]);
  assert.ok(!r.ok);
  assert.equal(r.reason, 'NoDefaultStorageClass');
  assert.match(r.message, /spec.storageClass is empty and the cluster has no default storage class.*storage classes that bind Immediate: a/);
});

test('the class is read again before each Plan: one replaced by a WaitForFirstConsumer class, or gone, fails the VM with what changed', () => {
  const sc = (mode?: string) => ({ metadata: { name: 'fast' }, ...(mode ? { volumeBindingMode: mode } : {}) }) as StorageClassLike;
  assert.equal(recheckStorageClass('fast', sc()), undefined);
  assert.equal(recheckStorageClass('fast', sc('Immediate')), undefined);
  const w = recheckStorageClass('fast', sc('WaitForFirstConsumer'))!;
  assert.equal(w.reason, 'StorageClassWaitForFirstConsumer');
  assert.match(w.message, /now has volumeBindingMode WaitForFirstConsumer.*PendingPopulation/);
  assert.equal(recheckStorageClass('fast', undefined)!.reason, 'StorageClassNotFound');
});
