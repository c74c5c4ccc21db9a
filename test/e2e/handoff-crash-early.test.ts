// The crash-safety proof of the copy-free handoff with the real controller process, first half of its
// kill points (the whole proof and its checks: handoff-crash.ts).
import { crashTests } from './handoff-crash.ts';

crashTests(0);
