import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resourcePath, gvrApiVersion } from '../../src/runtime/kube.ts';
import { GVRs } from '../../src/runtime/gvr.ts';

test('core kinds live under /api and grouped kinds under /apis, namespaced only when the kind is', () => {
  assert.equal(resourcePath(GVRs.Secret, 'tenant-a', 'x'), '/api/v1/namespaces/tenant-a/secrets/x');
  assert.equal(resourcePath(GVRs.PersistentVolume, 'ignored', 'pv-1'), '/api/v1/persistentvolumes/pv-1');
  assert.equal(resourcePath(GVRs.Plan, 'ns'), '/apis/forklift.konveyor.io/v1beta1/namespaces/ns/plans');
  assert.equal(resourcePath(GVRs.VMImportTask, 'ns', 't', 'status'), '/apis/forklift.cozystack.io/v1alpha1/namespaces/ns/vmimporttasks/t/status');
  assert.equal(resourcePath(GVRs.StorageClass), '/apis/storage.k8s.io/v1/storageclasses');
});

test('names with unsafe characters are escaped in paths', () => {
  assert.equal(resourcePath(GVRs.ConfigMap, 'ns', 'a b'), '/api/v1/namespaces/ns/configmaps/a%20b');
});

test('the apiVersion of a core kind has no group', () => {
  assert.equal(gvrApiVersion(GVRs.Secret), 'v1');
  assert.equal(gvrApiVersion(GVRs.VMDisk), 'apps.cozystack.io/v1alpha1');
});
