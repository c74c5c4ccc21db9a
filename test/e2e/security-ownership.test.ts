// A projected Secret whose name another source's object holds is never written: the forced collision
// below hands the attacker's Secret name to the victim (its owner label and password become the
// victim's, as a name collision would have them), and the attacker's next pass must leave it as it is
// and say why. Also: projected Secrets left under the names of earlier versions are cleaned up.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { vcenter } from '../sim/index.ts';
import { GVRs } from '../../src/runtime/gvr.ts';
import type { KubeClient, KubeObject } from '../../src/runtime/kube.ts';
import { LABEL_SOURCE_UID } from '../../src/api/labels.ts';
import { legacyProjectedSecretName } from '../../src/forklift/provider.ts';
import { freshNamespace, waitFor } from './env/index.ts';
import { bootWorld, type BootedWorld } from './fixtures.ts';
import { CONTROLLER_NS, createSource, getSource, projectedSecret, projectedSecretNameOf, readyOf, waitForReason } from './source-helpers.ts';

const URL_VC = 'https://vcenter-ownership.example.com/sdk';
const world = vcenter({ url: URL_VC, vms: [{ id: 'vm-1', name: 'app01' }] });
const creds = { username: world.user, password: world.password, caCert: world.caPEM };

let booted: BootedWorld;
let c: KubeClient;
type SecretObj = KubeObject & { data?: Record<string, string> };

before(async () => {
  booted = await bootWorld({ worlds: [world] });
  ({ c } = booted);
});
after(async () => {
  await booted?.shutdown();
});

test("a forced collision leaves the victim's Secret untouched and the attacker's source reports NameConflict", async () => {
  const ns = await freshNamespace('attacker');
  await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: creds });
  await waitForReason(c, ns, 'vc', 'Connected');
  const name = (await projectedSecretNameOf(c, ns, 'vc'))!;
  // The collision: the object at that name is now the victim's (its owner label; the simulated
  // Forklift's Secret webhook tests the credentials it holds on every write, so they stay valid ones).
  const cur = (await c.get<SecretObj>(GVRs.Secret, CONTROLLER_NS, name))!;
  const victim = await c.replace<SecretObj>(GVRs.Secret, { ...cur, metadata: { ...cur.metadata, labels: { ...cur.metadata!.labels, [LABEL_SOURCE_UID]: 'victim-uid' } } });
  // The attacker changes its TLS settings: its next pass wants to write that Secret.
  await c.patch(GVRs.VMImportSource, ns, 'vc', { spec: { credentials: { caCert: null, insecureSkipVerify: true } } });
  const conflicted = await waitForReason(c, ns, 'vc', 'NameConflict');
  assert.match(readyOf(conflicted)!.message, /^The Secret .* this source would write already exists and belongs to another source; it was left untouched/);
  const after = (await c.get<SecretObj>(GVRs.Secret, CONTROLLER_NS, name))!;
  assert.equal(after.metadata?.resourceVersion, victim.metadata?.resourceVersion, 'not written');
  assert.deepEqual(after.data, victim.data);
  assert.equal(after.metadata?.labels?.[LABEL_SOURCE_UID], 'victim-uid');
});

test("a projected Secret this source left under the name of an earlier version goes with the source; another source's under such a name stays", async () => {
  const ns = await freshNamespace('upgrade');
  const src = await createSource(c, ns, 'vc', { type: 'vsphere', url: URL_VC, credentials: creds });
  const legacy = legacyProjectedSecretName(ns, 'vc');
  const foreign = legacyProjectedSecretName(ns, 'other');
  const mk = (name: string, uid: string) => c.create(GVRs.Secret, { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: CONTROLLER_NS, labels: { [LABEL_SOURCE_UID]: uid } }, data: { password: 'eA==' } } as KubeObject);
  await mk(legacy, src.metadata.uid!);
  await mk(foreign, 'someone-else');
  await waitForReason(c, ns, 'vc', 'Connected');
  assert.ok(await projectedSecret(c, ns, 'vc'));
  await c.delete(GVRs.VMImportSource, ns, 'vc');
  await waitFor('the source gone', async () => !(await getSource(c, ns, 'vc')));
  assert.equal(await c.get(GVRs.Secret, CONTROLLER_NS, legacy), undefined, "this source's Secret under the earlier name went with it");
  assert.ok(await c.get(GVRs.Secret, CONTROLLER_NS, foreign), "another source's stayed");
  await c.delete(GVRs.Secret, CONTROLLER_NS, foreign);
});
