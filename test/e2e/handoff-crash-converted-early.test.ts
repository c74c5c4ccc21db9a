// The crash-safety proof of the copy-free handoff on the guest-conversion path, with the real controller
// process: the first half of its kill points (the proof and its checks: handoff-crash-suite.ts).
import { convertedCrashSuite } from './handoff-crash-converted.ts';

convertedCrashSuite(0);
