// A test file's scratch directory: made on its first use, removed when the file's tests have ended, so a
// suite run leaves nothing behind in the machine's temporary directory.
import { after } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Returns a function that gives a fresh path (`<n>-<name>`) in this file's scratch directory. */
export function scratch(prefix: string): (name: string) => string {
  let dir: string | undefined;
  let n = 0;
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return (name) => {
    dir ??= mkdtempSync(join(tmpdir(), prefix));
    return join(dir, `${++n}-${name}`);
  };
}
