// A child whose owner label is not the caller's is never written: a forced name collision (the object
// at the desired name carries another source's UID) leaves it byte for byte as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LABEL_SOURCE_UID } from '../../api/labels.ts';
import { GVRs } from '../../runtime/gvr.ts';
import { ApiError, type KubeObject } from '../../runtime/kube.ts';
import type { ReconcileContext } from '../../runtime/reconciler.ts';
import { OwnershipConflict, ensureOwned } from './ownership.ts';

/** A one-object store answering create/get/replace as the API server does; records every write. */
function store(initial?: KubeObject) {
  let obj = initial ? structuredClone(initial) : undefined;
  const writes: string[] = [];
  const deadlines: Array<number | undefined> = [];
  const client = {
    create: (_g: unknown, o: KubeObject, opt?: { timeoutMs?: number }) => {
      if (obj) return Promise.reject(new ApiError(409, 'AlreadyExists', 'already exists'));
      writes.push('create');
      deadlines.push(opt?.timeoutMs);
      obj = structuredClone(o);
      return Promise.resolve(obj);
    },
    get: () => Promise.resolve(obj ? structuredClone(obj) : undefined),
    replace: (_g: unknown, o: KubeObject, _sub?: string, opt?: { timeoutMs?: number }) => {
      writes.push('replace');
      deadlines.push(opt?.timeoutMs);
      obj = structuredClone(o);
      return Promise.resolve(obj);
    },
  };
  const ctx = { client, log: { info: () => undefined } } as unknown as Pick<ReconcileContext, 'client' | 'log'>;
  return { ctx, writes, deadlines, current: () => obj };
}

const secret = (uid: string, password: string): KubeObject & { data: Record<string, string> } => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'vmimport-collided', namespace: 'cozy-migration-controller', labels: { [LABEL_SOURCE_UID]: uid } },
  data: { password: Buffer.from(password).toString('base64') },
});

test("a Secret at the desired name that carries another source's UID is left untouched, and the conflict is reported", async () => {
  const victim = { ...secret('victim-uid', 'victim-password'), metadata: { ...secret('victim-uid', 'x').metadata, resourceVersion: '7' } };
  for (const cached of [victim, undefined]) {
    const s = store(victim);
    await assert.rejects(ensureOwned(s.ctx, GVRs.Secret, secret('attacker-uid', 'attacker-password'), cached, 'attacker-uid'), (e: unknown) => e instanceof OwnershipConflict && /belongs to another source; it was left untouched/.test(e.message) && !e.message.includes('password'));
    assert.deepEqual(s.writes, []);
    assert.deepEqual(s.current(), victim);
  }
});

test('an object carrying no owner label at all is not adopted either', async () => {
  const foreign: KubeObject = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'vmimport-collided', namespace: 'cozy-migration-controller' } };
  const s = store(foreign);
  await assert.rejects(ensureOwned(s.ctx, GVRs.Secret, secret('attacker-uid', 'p'), foreign, 'attacker-uid'), /belongs to no source of the migration controller/);
  assert.deepEqual(s.writes, []);
});

test("the caller's own object is created when absent and brought in line when it differs", async () => {
  const s = store();
  await ensureOwned(s.ctx, GVRs.Secret, secret('uid-1', 'a'), undefined, 'uid-1');
  await ensureOwned(s.ctx, GVRs.Secret, secret('uid-1', 'a'), s.current(), 'uid-1');
  await ensureOwned(s.ctx, GVRs.Secret, secret('uid-1', 'b'), s.current(), 'uid-1');
  assert.deepEqual(s.writes, ['create', 'replace']);
  assert.equal((s.current() as { data: Record<string, string> }).data.password, Buffer.from('b').toString('base64'));
});

test('a write given its own deadline (the credentials Secret, held by Forklift\'s webhook) goes out with it, create and update alike', async () => {
  const s = store();
  await ensureOwned(s.ctx, GVRs.Secret, secret('uid-1', 'a'), undefined, 'uid-1', { timeoutMs: 45_000 });
  await ensureOwned(s.ctx, GVRs.Secret, secret('uid-1', 'b'), s.current(), 'uid-1', { timeoutMs: 45_000 });
  await ensureOwned(s.ctx, GVRs.Secret, secret('uid-1', 'c'), s.current(), 'uid-1');
  assert.deepEqual(s.deadlines, [45_000, 45_000, undefined]);
});
