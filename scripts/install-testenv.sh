#!/usr/bin/env bash
# Installs the binaries of a real local Kubernetes control plane, envtest-style:
#   <assets>/etcd, <assets>/kube-apiserver, <assets>/kube-controller-manager
# etcd comes from Debian's etcd-server; kube-apiserver and kube-controller-manager are built from
# Debian's `kubernetes` source package (v1.20.2) with Debian's Go, once per machine, and cached in
#   ${XDG_CACHE_HOME:-$HOME/.cache}/migration-controller/k8s-1.20.2/
# Idempotent: when the cached binaries exist and run, it does nothing. Prints the assets folder last.
#
# Honours KUBEBUILDER_ASSETS: when it names a folder holding all three binaries, that folder is used.
set -euo pipefail

K8S_VERSION=1.20.2
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/migration-controller"
ASSETS="${CACHE_ROOT}/k8s-${K8S_VERSION}"

log() { printf '[install-testenv] %s\n' "$*" >&2; }

have_all() {
  local dir=$1
  [ -x "$dir/etcd" ] && [ -x "$dir/kube-apiserver" ] && [ -x "$dir/kube-controller-manager" ]
}

if [ -n "${KUBEBUILDER_ASSETS:-}" ] && have_all "$KUBEBUILDER_ASSETS"; then
  log "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
  echo "$KUBEBUILDER_ASSETS"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

apt_updated=0
apt_update() {
  if [ "$apt_updated" = 0 ]; then $SUDO apt-get update -qq >&2; apt_updated=1; fi
}

mkdir -p "$ASSETS"

# --- etcd -------------------------------------------------------------------------------------------
if [ ! -x "$ASSETS/etcd" ]; then
  if [ ! -x /usr/bin/etcd ]; then
    log "installing etcd-server from Debian"
    apt_update
    $SUDO apt-get install -y -qq --no-install-recommends etcd-server >&2
    # The package starts a system etcd on 2379; we never use it, and it must not hold ports or disk.
    $SUDO systemctl disable --now etcd >/dev/null 2>&1 || true
    $SUDO pkill -x etcd >/dev/null 2>&1 || true
  fi
  ln -sf /usr/bin/etcd "$ASSETS/etcd"
fi

# --- kube-apiserver + kube-controller-manager ---------------------------------------------------------
if [ ! -x "$ASSETS/kube-apiserver" ] || [ ! -x "$ASSETS/kube-controller-manager" ]; then
  log "building kube-apiserver and kube-controller-manager v${K8S_VERSION} from Debian's source package (about 9 minutes on 2 cores, once per machine)"
  # deb-src for the same suites as the machine's binary sources.
  if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ 2>/dev/null && ! grep -qs '^deb-src' /etc/apt/sources.list 2>/dev/null; then
    $SUDO tee /etc/apt/sources.list.d/migration-controller-src.sources >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt_updated=0
  fi
  apt_update
  $SUDO apt-get install -y -qq --no-install-recommends golang-go rsync dpkg-dev make \
    golang-github-modern-go-reflect2-dev >&2

  BUILD="${CACHE_ROOT}/build"
  rm -rf "$BUILD"
  mkdir -p "$BUILD"
  (
    cd "$BUILD"
    apt-get source --download-only kubernetes >&2
    orig=$(ls kubernetes_*.orig.tar.* | head -n 1)
    tar -xf "$orig"
    src=$(find . -maxdepth 1 -type d -name 'kubernetes-*' | head -n 1)
    cd "$src"
    # Required fix: the vendored reflect2 v1.0.1 crashes Go >= 1.18 binaries ("fatal error: fault" in
    # mapiterinit) the first time they serialise a custom resource. Use Debian's v1.0.2.
    rm -rf vendor/github.com/modern-go/reflect2
    cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 vendor/github.com/modern-go/reflect2
    rm -f vendor/github.com/modern-go/reflect2/go.mod
    # GOPATH-mode build the way Debian does it (module mode fails with "updates to go.mod needed").
    mkdir -p .go/src/k8s.io
    ln -sfn ../../.. .go/src/k8s.io/kubernetes
    mkdir -p "$BUILD/home"
    GOPATH="$PWD/.go" GO111MODULE=off CGO_ENABLED=0 HOME="$BUILD/home" GOFLAGS= \
      make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" >&2
    install -m 0755 _output/bin/kube-apiserver "$ASSETS/kube-apiserver"
    install -m 0755 _output/bin/kube-controller-manager "$ASSETS/kube-controller-manager"
  )
  rm -rf "$BUILD"
fi

if [ -x /usr/bin/kubectl ] && [ ! -e "$ASSETS/kubectl" ]; then
  ln -sf /usr/bin/kubectl "$ASSETS/kubectl"
fi

"$ASSETS/kube-apiserver" --version >&2
log "assets ready in $ASSETS"
echo "$ASSETS"
