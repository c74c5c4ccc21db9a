// Preloaded into a controller process by the crash tests (`node --import <this file> src/main.ts …`):
// with MC_KILL_AFTER_STEP=<step>[:<disk index>] in its environment, the process SIGKILLs itself right
// after that handoff step's API write, before anything after it (its status write included) happens.
// It sets the handoff's test seam (handoffHooks.afterStep); the product carries no kill switch.
import { handoffHooks, type StepName } from '../../src/controllers/handoff/index.ts';

export const ENV_KILL_AFTER_STEP = 'MC_KILL_AFTER_STEP';

/** True when `point` (`<step>` or `<step>:<disk>`) names this step of this disk. */
export function killPointMatches(point: string, step: StepName, disk: number | undefined): boolean {
  const [s, d] = point.split(':');
  return s === step && (d === undefined || d === '' || Number(d) === disk);
}

const point = process.env[ENV_KILL_AFTER_STEP];
if (point) {
  handoffHooks.afterStep = (step, disk) => {
    if (killPointMatches(point, step, disk)) process.kill(process.pid, 'SIGKILL');
  };
}
