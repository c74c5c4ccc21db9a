// Whether a Cozystack application (VMDisk, VMInstance) has deployed, as its aggregated API reports it.
// An application is a Flux HelmRelease; the apps.cozystack.io API copies the HelmRelease's `Ready` and
// `Released` conditions into the application's status.conditions and its lastAttemptedRevision into
// status.version (cozystack/cozystack@v1.6.2:pkg/registry/apps/application/rest.go,
// convertHelmReleaseToApplication). Ready reflects the HelmRelease only — workload health goes into a
// separate WorkloadsReady condition, which is not a verdict on the release.
// A chart that refuses its values fails the install: e.g. the vm-instance chart's
// `fail "Specified instanceType does not exist in the cluster: …"` (cozystack/cozystack@v1.6.2:packages/apps/vm-instance/templates/vm.yaml),
// which Flux reports as Ready=False / Released=False with reason InstallFailed and Helm's error as message.
import type { KubeObject } from '../runtime/kube.ts';

export type ReleaseState = { state: 'deployed' } | { state: 'pending'; message: string } | { state: 'failed'; reason: string; message: string };

interface AppCondition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
}

/**
 * Flux helm-controller reasons that end a release attempt in failure (fluxcd/helm-controller api/v2
 * condition reasons). Others — Progressing, DependencyNotReady, no condition yet — are still on the way.
 */
const FAILED_REASONS: ReadonlySet<string> = new Set(['InstallFailed', 'UpgradeFailed', 'TestFailed', 'RollbackFailed', 'UninstallFailed', 'RetriesExceeded', 'ArtifactFailed', 'InitFailed']);

/** The release state of one application as read through the aggregated API. Pure. */
export function releaseState(app: KubeObject | undefined): ReleaseState {
  if (!app) return { state: 'failed', reason: 'NotFound', message: 'it no longer exists' };
  const conds = (((app.status ?? {}) as { conditions?: AppCondition[] }).conditions ?? []).filter((c) => c && typeof c === 'object');
  const ready = conds.find((c) => c.type === 'Ready');
  const released = conds.find((c) => c.type === 'Released');
  if (ready?.status === 'True') return { state: 'deployed' };
  const failed = [ready, released].find((c) => c?.status === 'False' && FAILED_REASONS.has(c.reason ?? ''));
  if (failed) return { state: 'failed', reason: failed.reason!, message: failed.message || (ready?.message ?? '') || failed.reason! };
  return { state: 'pending', message: ready?.message || released?.message || 'its release has not reported yet' };
}
