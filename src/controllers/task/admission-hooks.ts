// Test seams of the transfer budget's admission (the crash tests' kill points, set by a module they
// preload: test/e2e/kill-after-admission.ts). The product sets none of them.
export const admissionHooks: {
  /** Right after a pass wrote its task's admission checkpoints, before any of their Migrations is created. */
  afterRecord?: (taskUID: string, vmIds: readonly string[]) => void;
  /** Right after a VM's Migration was created, before the status write that records its start. */
  afterMigrationCreate?: (taskUID: string, vmId: string) => void;
} = {};
