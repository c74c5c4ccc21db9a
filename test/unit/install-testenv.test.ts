// scripts/install-testenv.sh builds the local control plane once per machine. It must leave the
// machine's other processes alone, and take its deb-src entries from the machine's own apt sources
// (mirror, snapshot, signing key) rather than naming a host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../scripts/demo/tools.ts';

const SCRIPT = join(REPO_ROOT, 'scripts/install-testenv.sh');

function printDebSrc(files: Record<string, string>): string {
  const etc = mkdtempSync(join(tmpdir(), 'apt-etc-'));
  try {
    mkdirSync(join(etc, 'sources.list.d'));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(etc, name), text);
    const r = spawnSync('bash', [SCRIPT, '--print-deb-src'], { env: { ...process.env, MC_APT_ETC: etc }, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout;
  } finally {
    rmSync(etc, { recursive: true, force: true });
  }
}

test("deb-src entries are copies of the machine's enabled deb822 `Types: deb` stanzas, comments and signing key included", () => {
  const out = printDebSrc({
    'sources.list.d/debian.sources': [
      'Types: deb',
      '# snapshot of the day',
      'URIs: http://mirror.example.org/debian',
      'Suites: bookworm bookworm-updates',
      'Components: main',
      'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg',
      '',
      'Types: deb',
      'URIs: http://mirror.example.org/debian-security',
      'Suites: bookworm-security',
      'Components: main',
      'Enabled: no',
      '',
      'Types: deb-src',
      'URIs: http://mirror.example.org/only-src',
      'Suites: bookworm',
      'Components: main',
      '',
    ].join('\n'),
  });
  assert.equal(
    out,
    ['Types: deb-src', '# snapshot of the day', 'URIs: http://mirror.example.org/debian', 'Suites: bookworm bookworm-updates', 'Components: main', 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg', '', ''].join('\n'),
  );
});

test('deb-src lines are copies of the one-line `deb` entries of sources.list and sources.list.d/*.list, options kept', () => {
  const out = printDebSrc({
    'sources.list': '# deb http://commented.example.org/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example.org/debian bookworm main contrib\ndeb-src http://x.example.org/debian bookworm main\n',
    'sources.list.d/extra.list': 'deb http://mirror.example.org/debian bookworm-updates main\n',
  });
  assert.equal(out, 'deb-src [arch=amd64 signed-by=/k.gpg] http://mirror.example.org/debian bookworm main contrib\ndeb-src http://mirror.example.org/debian bookworm-updates main\n');
});

test('the script names no package host and never kills processes by name', () => {
  const text = readFileSync(SCRIPT, 'utf8');
  const code = text.split('\n').filter((l) => !/^\s*#/.test(l)).join('\n');
  assert.doesNotMatch(code, /\b(pkill|killall)\b/);
  assert.doesNotMatch(code, /https?:\/\/(?!\$)/, 'a URL in the script');
  // The one kill it does is of its own progress ticker, by pid.
  assert.deepEqual([...code.matchAll(/\bkill\b[^\n]*/g)].map((m) => m[0]), ['kill "$TICKER_PID" 2>/dev/null || true']);
});
