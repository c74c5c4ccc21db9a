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
  assert.doesNotMatch(code, /https?:\/\/(?!\$)/, 'a URL in the script');
  // The one process it ends is its own progress ticker, by pid: no other command whose name holds "kill"
  // (the by-name variants included) appears anywhere.
  assert.deepEqual([...code.matchAll(/\b\w*kill\w*\b[^\n]*/g)].map((m) => m[0]), ['kill "$TICKER_PID" 2>/dev/null || true']);
});

// As root the script runs apt-get directly (the stand-in below); otherwise it would go through sudo.
const notRoot = process.getuid?.() !== 0 ? 'runs only as root: the script calls apt-get through sudo otherwise' : false;

test('a failing first build is quiet: one progress line per step on a non-terminal, package-manager output only in the log, which the failure names with its last lines', { skip: notRoot }, () => {
  const tmp = mkdtempSync(join(tmpdir(), 'testenv-quiet-'));
  try {
    // A machine whose package manager fails after printing its usual chatter; etcd counts as installed
    // (a stand-in binary) so the run goes straight to the control-plane build.
    const bin = join(tmp, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'apt-get'), '#!/bin/sh\necho "Reading package lists... Done"\necho "E: Unable to locate package golang-go" >&2\nexit 100\n', { mode: 0o755 });
    const etc = join(tmp, 'apt');
    mkdirSync(join(etc, 'sources.list.d'), { recursive: true });
    writeFileSync(join(etc, 'sources.list'), 'deb http://mirror.example.org/debian bookworm main\n');
    const cache = join(tmp, 'cache');
    const assets = join(cache, 'migration-controller', 'k8s-1.20.2');
    mkdirSync(assets, { recursive: true });
    writeFileSync(join(assets, 'etcd'), '#!/bin/sh\n', { mode: 0o755 });
    const r = spawnSync('bash', [SCRIPT], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, XDG_CACHE_HOME: cache, MC_APT_ETC: etc, KUBEBUILDER_ASSETS: '' },
      encoding: 'utf8',
      input: '',
    });
    assert.notEqual(r.status, 0);
    assert.equal(r.stdout, '', 'nothing on stdout but the assets folder, and there is none');
    const lines = r.stderr.trimEnd().split('\n');
    const progress = lines.filter((l) => /^\[testenv\] \d+m\d\ds {2}.* \(once, ~9 min\)$/.test(l));
    assert.ok(progress.length >= 1, r.stderr);
    assert.ok(progress.every((l) => l.length <= 80), 'a progress line fits one terminal row');
    const log = join(cache, 'migration-controller', 'install-testenv.log');
    assert.match(r.stderr, /FAILED after \d+m\d\ds while installing Go/);
    assert.ok(r.stderr.includes(`full log: ${log}`), r.stderr);
    // The chatter is in the log (and quoted in the failure's tail), never printed as it happens.
    const unquoted = lines.filter((l) => !l.startsWith('    '));
    assert.ok(!unquoted.some((l) => /Reading package lists|Unable to locate/.test(l)), r.stderr);
    assert.match(readFileSync(log, 'utf8'), /Reading package lists... Done/);
    // The deb-src entries were derived from the machine's sources, not a named host.
    assert.equal(readFileSync(join(etc, 'sources.list.d', 'migration-controller-src.list'), 'utf8'), 'deb-src http://mirror.example.org/debian bookworm main\n');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
