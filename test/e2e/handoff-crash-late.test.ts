// The crash-safety proof of the copy-free handoff with the real controller process, second half of its
// kill points (the whole proof and its checks: handoff-crash.ts).
import { crashTests } from './handoff-crash.ts';

crashTests(1);
