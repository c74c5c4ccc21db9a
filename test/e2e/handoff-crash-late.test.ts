// The crash-safety proof of the copy-free handoff on the raw-copy path, with the real controller process:
// the second half of its kill points (the proof and its checks: handoff-crash-suite.ts).
import { rawCrashSuite } from './handoff-crash-raw.ts';

rawCrashSuite(1);
