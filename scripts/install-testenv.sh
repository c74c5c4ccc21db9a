#!/usr/bin/env bash
# Installs the binaries of a real local Kubernetes control plane, envtest-style:
#   <assets>/etcd, <assets>/kube-apiserver, <assets>/kube-controller-manager
# etcd comes from Debian's etcd-server; kube-apiserver and kube-controller-manager are built from
# Debian's `kubernetes` source package (v1.20.2) with Debian's Go, once per machine, and cached in
#   ${XDG_CACHE_HOME:-$HOME/.cache}/migration-controller/k8s-1.20.2/
# Idempotent: when the cached binaries exist and run, it does nothing. Prints the assets folder last
# (on stdout; everything else goes to stderr).
#
# Quiet: the screen shows one progress line with the elapsed time (redrawn in place on a terminal, one
# line per step otherwise). apt and the Go build write to a log file, which is named — with its last
# lines — only when a step fails.
#
# Honours KUBEBUILDER_ASSETS: when it names a folder holding all three binaries, that folder is used.
#   --print-deb-src   print the deb-src entries derived from the machine's apt sources, and exit
set -euo pipefail

K8S_VERSION=1.20.2
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/migration-controller"
ASSETS="${CACHE_ROOT}/k8s-${K8S_VERSION}"
# Where apt's configuration lives (a test points it at a fixture).
APT_ETC="${MC_APT_ETC:-/etc/apt}"

# --- deb-src entries, derived from the machine's own sources ------------------------------------------
# The source package must come from the same archive (mirror, suites, signing key) as the machine's
# binary packages, so the deb-src entries are copies of its enabled `Types: deb` stanzas (deb822
# *.sources) and `deb` lines (one-line *.list, sources.list) with the type changed to deb-src. No host
# is named here: a machine behind a mirror or a snapshot keeps using it.
derive_deb_src_sources() {
  local f
  for f in "$APT_ETC"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # Paragraph mode: one stanza per record. Copy stanzas whose Types include `deb`, unless disabled.
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
      {
        n = split($0, lines, "\n"); types = ""; enabled = 1
        for (i = 1; i <= n; i++) {
          if (lines[i] ~ /^Types:/) types = lines[i]
          if (tolower(lines[i]) ~ /^enabled:[ \t]*no/) enabled = 0
        }
        if (!enabled || types !~ /(^Types:|[ \t])deb([ \t]|$)/) next
        out = ""
        for (i = 1; i <= n; i++) {
          line = (lines[i] ~ /^Types:/) ? "Types: deb-src" : lines[i]
          out = out (i > 1 ? "\n" : "") line
        }
        print out
      }' "$f"
  done
}
derive_deb_src_list() {
  local f
  for f in "$APT_ETC"/sources.list "$APT_ETC"/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n 's/^[[:space:]]*deb\([[:space:]]\)/deb-src\1/p' "$f"
  done
}
has_deb_src() {
  grep -rqsE '^Types:.*deb-src' "$APT_ETC"/sources.list.d/ 2>/dev/null && return 0
  grep -qsE '^[[:space:]]*deb-src[[:space:]]' "$APT_ETC"/sources.list "$APT_ETC"/sources.list.d/*.list 2>/dev/null
}

if [ "${1:-}" = "--print-deb-src" ]; then
  derive_deb_src_sources
  derive_deb_src_list
  exit 0
fi

have_all() {
  local dir=$1
  [ -x "$dir/etcd" ] && [ -x "$dir/kube-apiserver" ] && [ -x "$dir/kube-controller-manager" ]
}

if [ -n "${KUBEBUILDER_ASSETS:-}" ] && have_all "$KUBEBUILDER_ASSETS"; then
  echo "$KUBEBUILDER_ASSETS"
  exit 0
fi
if have_all "$ASSETS" && "$ASSETS/kube-apiserver" --version >/dev/null 2>&1; then
  echo "$ASSETS"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

mkdir -p "$CACHE_ROOT" "$ASSETS"
LOG="${CACHE_ROOT}/install-testenv.log"
: >"$LOG"
START=$(date +%s)
STEP_FILE="${CACHE_ROOT}/.install-testenv.step"
TICKER_PID=""
# Kept short: the redrawn line must fit one terminal row, or each redraw leaves a wrapped remnant.
HEADLINE="once, ~9 min"

elapsed() {
  local s=$(( $(date +%s) - START ))
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}
stop_ticker() {
  if [ -n "$TICKER_PID" ]; then
    kill "$TICKER_PID" 2>/dev/null || true
    wait "$TICKER_PID" 2>/dev/null || true
    TICKER_PID=""
  fi
}
# The progress line. On a terminal a background ticker (ended by its pid at exit) redraws it each
# second; elsewhere (CI logs, a test's pipe) each step prints one line.
step() {
  printf '%s' "$*" >"$STEP_FILE"
  if [ -t 2 ]; then
    if [ -z "$TICKER_PID" ]; then
      ( while :; do printf '\r\033[K[testenv] %s  %s (%s)' "$(elapsed)" "$(cat "$STEP_FILE" 2>/dev/null)" "$HEADLINE" >&2; sleep 1; done ) &
      TICKER_PID=$!
    fi
  else
    printf '[testenv] %s  %s (%s)\n' "$(elapsed)" "$*" "$HEADLINE" >&2
  fi
}
finish() {
  local code=$? what
  what=$(cat "$STEP_FILE" 2>/dev/null || true)
  stop_ticker
  rm -f "$STEP_FILE"
  if [ -t 2 ]; then printf '\r\033[K' >&2; fi
  if [ "$code" != 0 ]; then
    printf '[testenv] FAILED after %s while %s\n' "$(elapsed)" "${what:-starting}" >&2
    printf '[testenv] full log: %s — its last lines:\n' "$LOG" >&2
    tail -n 25 "$LOG" | sed 's/^/    /' >&2
  fi
}
trap finish EXIT
# Runs a command with its output in the log only.
quietly() {
  "$@" >>"$LOG" 2>&1
}
# A new step: named on the progress line, headed in the log, and named again if it fails.
begin() {
  printf '\n=== %s (%s)\n' "$*" "$(elapsed)" >>"$LOG"
  step "$*"
}

apt_updated=0
apt_update() {
  if [ "$apt_updated" = 0 ]; then quietly $SUDO apt-get update -q; apt_updated=1; fi
}

# --- etcd -------------------------------------------------------------------------------------------
if [ ! -x "$ASSETS/etcd" ]; then
  if [ ! -x /usr/bin/etcd ]; then
    begin "installing etcd-server"
    apt_update
    quietly $SUDO apt-get install -y -q --no-install-recommends etcd-server
    # The package starts its own etcd service on 2379; we never use it. Stop and disable that service
    # by its unit (or init script) only: any other etcd on this machine is someone else's.
    if [ -d /run/systemd/system ]; then
      quietly $SUDO systemctl disable --now etcd.service || true
    elif [ -x /etc/init.d/etcd ]; then
      quietly $SUDO /etc/init.d/etcd stop || true
      quietly $SUDO update-rc.d etcd disable || true
    fi
  fi
  ln -sf /usr/bin/etcd "$ASSETS/etcd"
fi

# --- kube-apiserver + kube-controller-manager ---------------------------------------------------------
if [ ! -x "$ASSETS/kube-apiserver" ] || [ ! -x "$ASSETS/kube-controller-manager" ]; then
  if ! has_deb_src; then
    begin "adding deb-src from apt sources"
    src_stanzas=$(derive_deb_src_sources)
    src_lines=$(derive_deb_src_list)
    if [ -z "$src_stanzas" ] && [ -z "$src_lines" ]; then
      echo "no enabled 'deb' source in $APT_ETC/sources.list or $APT_ETC/sources.list.d/ to derive deb-src from" >>"$LOG"
      exit 1
    fi
    if [ -n "$src_stanzas" ]; then printf '%s\n' "$src_stanzas" | $SUDO tee "$APT_ETC/sources.list.d/migration-controller-src.sources" >>"$LOG"; fi
    if [ -n "$src_lines" ]; then printf '%s\n' "$src_lines" | $SUDO tee "$APT_ETC/sources.list.d/migration-controller-src.list" >>"$LOG"; fi
    apt_updated=0
  fi
  begin "installing Go and build tools"
  apt_update
  quietly $SUDO apt-get install -y -q --no-install-recommends golang-go rsync dpkg-dev make \
    golang-github-modern-go-reflect2-dev

  BUILD="${CACHE_ROOT}/build"
  rm -rf "$BUILD"
  mkdir -p "$BUILD"
  (
    cd "$BUILD"
    begin "fetching the kubernetes sources"
    quietly apt-get source --download-only kubernetes
    orig=$(ls kubernetes_*.orig.tar.* | head -n 1)
    quietly tar -xf "$orig"
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
    begin "compiling the API server and controller manager"
    GOPATH="$PWD/.go" GO111MODULE=off CGO_ENABLED=0 HOME="$BUILD/home" GOFLAGS= \
      quietly make WHAT="cmd/kube-apiserver cmd/kube-controller-manager"
    install -m 0755 _output/bin/kube-apiserver "$ASSETS/kube-apiserver"
    install -m 0755 _output/bin/kube-controller-manager "$ASSETS/kube-controller-manager"
  )
  rm -rf "$BUILD"
fi

if [ -x /usr/bin/kubectl ] && [ ! -e "$ASSETS/kubectl" ]; then
  ln -sf /usr/bin/kubectl "$ASSETS/kubectl"
fi

printf '%s' "checking the built kube-apiserver" >"$STEP_FILE"
quietly "$ASSETS/kube-apiserver" --version
stop_ticker
if [ -t 2 ]; then printf '\r\033[K' >&2; fi
printf '[testenv] control plane v%s ready in %s (%s)\n' "$K8S_VERSION" "$(elapsed)" "$ASSETS" >&2
echo "$ASSETS"
