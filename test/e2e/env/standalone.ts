// Starts a private control plane and keeps it up until this process is told to stop.
//   node test/e2e/env/standalone.ts [--audit-log] [--pv-sync-period=15s]
// Prints `PIDS {...}` and `KUBECONFIG <path>` once ready. Used by the harness test (to prove nothing
// outlives its parent) and by hand: `KUBECONFIG=<path> kubectl get ns`.
import { ControlPlane } from './controlplane.ts';

const args = process.argv.slice(2);
const pvSync = args.find((a) => a.startsWith('--pv-sync-period='))?.split('=')[1];
const cp = await ControlPlane.start({ auditLog: args.includes('--audit-log'), ...(pvSync ? { pvSyncPeriod: pvSync } : {}) });
console.log(`PIDS ${JSON.stringify(cp.info.pids)}`);
console.log(`KUBECONFIG ${cp.info.admin.kubeconfigPath}`);
for (const t of cp.info.tenants) console.log(`TENANT ${t.name} ${t.kubeconfigPath}`);
const stop = async (): Promise<void> => {
  await cp.stop();
  process.exit(0);
};
process.removeAllListeners('SIGINT');
process.removeAllListeners('SIGTERM');
process.once('SIGINT', () => void stop());
process.once('SIGTERM', () => void stop());
// Keep the event loop alive until a signal arrives.
setInterval(() => {}, 1 << 30);
