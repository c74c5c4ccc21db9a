// Preloaded into a controller process by the transfer budget's crash test (`node --import <this file>
// src/main.ts …`): with MC_KILL_AFTER_ADMISSION=<point>:<task UID> in its environment, the process SIGKILLs
// itself at that point of that task's admission, before anything after it happens. Points:
// - `record`: right after the status write that recorded the task's admission checkpoints, before any
//   of their Migrations is created;
// - `migration`: right after one of the task's Migrations was created, before its start is recorded.
// Only the named task triggers it: a controller watching a shared control plane sees other files' tasks.
// It sets the admission's test seams (src/controllers/task/admission-hooks.ts); the product carries no kill switch.
import { admissionHooks } from '../../src/controllers/task/admission-hooks.ts';

export const ENV_KILL_AFTER_ADMISSION = 'MC_KILL_AFTER_ADMISSION';

const [point, uid] = (process.env[ENV_KILL_AFTER_ADMISSION] ?? '').split(':');
const die = (taskUID: string): void => {
  if (taskUID === uid) process.kill(process.pid, 'SIGKILL');
};
if (uid && point === 'record') admissionHooks.afterRecord = (taskUID) => die(taskUID);
if (uid && point === 'migration') admissionHooks.afterMigrationCreate = (taskUID) => die(taskUID);
