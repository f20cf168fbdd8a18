#!/usr/bin/env bash
# make real-k8s: a real control plane for the suites and benchmarks that take KB_K8S_BIN.
#
# Builds kube-apiserver, kube-scheduler and kube-controller-manager 1.20.2 from Debian 12's
# `kubernetes` source package with Debian's Go, next to Debian's etcd-server, OUTSIDE the
# repository (nothing it makes may be committed):
#
#   tools/real-k8s.sh [DIR]         default DIR: $KB_K8S_DIR, else ~/.cache/kube-batchd/k8s-1.20.2
#   export KB_K8S_BIN=DIR/bin     then: make check, bench-extender-gang, test-extender-e2e ...
#
# About 10 minutes on 2 cores the first time; every step skips what is already done, so a second
# run takes seconds. Needs root for apt-get (deb-src stanzas, build dependencies, etcd).
#
# Why 1.20.2: it is the newest Kubernetes Debian packages as source. Debian builds it with Go 1.19,
# under which the vendored github.com/modern-go/reflect2 1.0.1 crashes the server (SIGSEGV on the
# first map that json-iterator encodes: its mapiterinit signature predates Go 1.18), so the
# vendored copy is replaced by Debian's reflect2 1.0.2, which has the Go 1.18 fix and the same API.
set -euo pipefail

dir=${1:-${KB_K8S_DIR:-$HOME/.cache/kube-batchd/k8s-1.20.2}}
repo=$(cd "$(dirname "$0")/.." && pwd)
case "$(cd "$(dirname "$dir")" 2>/dev/null && pwd)/" in
"$repo"/*) echo "real-k8s: $dir is inside the repository; choose a directory outside it" >&2; exit 2 ;;
esac
src=$dir/src
out=$dir/bin
programs="kube-apiserver kube-scheduler kube-controller-manager"
mkdir -p "$src" "$out"

phase() {
    local start=$SECONDS
    echo "== real-k8s: $1"
    shift
    "$@"
    echo "   ($((SECONDS - start)) s)"
}

need_root() {
    [ "$(id -u)" = 0 ] || { echo "real-k8s: $1 needs root (apt-get)" >&2; exit 1; }
}

# Source packages come from the same archive as the binaries: a deb-src twin of debian.sources.
deb_src() {
    if ! apt-cache showsrc kubernetes 2>/dev/null | grep -q '^Version:'; then
        need_root "enabling deb-src"
        local f=/etc/apt/sources.list.d/debian-src.sources
        [ -f "$f" ] || sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$f"
        apt-get update -q >/dev/null
    fi
}

build_deps() {
    local pkgs="golang-go etcd-server rsync jq debhelper bash-completion dpkg-dev openssl curl
        golang-github-modern-go-reflect2-dev" missing=""
    for p in $pkgs; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        need_root "installing$missing"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
    fi
    go version
}

tree() { find "$src" -maxdepth 1 -type d -name 'kubernetes-*' | sort | head -n 1; }

fetch_source() {
    [ -n "$(tree)" ] || (cd "$src" && apt-get source -q kubernetes >/dev/null)
    tree
}

fix_reflect2() {
    local vendored
    vendored=$(tree)/vendor/github.com/modern-go/reflect2
    [ -f "$vendored/go_above_118.go" ] && { echo "   already replaced"; return 0; }
    rm -f "$vendored"/*.go "$vendored"/*.s
    cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go \
        /usr/share/gocode/src/github.com/modern-go/reflect2/*.s "$vendored/"
}

built() {
    for p in $programs; do
        "$out/$p" --version 2>/dev/null | grep -q 'v1\.20\.2' || return 1
    done
}

compile() {
    built && { echo "   already built"; return 0; }
    # The tree's own build (GOPATH mode with vendor/, as debian/rules runs it); static binaries;
    # two Go workers at low priority so that the machine stays usable.
    (cd "$(tree)" && CGO_ENABLED=0 GOMAXPROCS=2 nice -n 15 \
        make WHAT="cmd/kube-apiserver cmd/kube-scheduler cmd/kube-controller-manager")
    for p in $programs; do cp "$(tree)/_output/bin/$p" "$out/$p"; done
}

phase "deb-src for the kubernetes source package" deb_src
phase "build dependencies and etcd" build_deps
phase "source into $src" fetch_source
phase "reflect2 1.0.2 for Go >= 1.18" fix_reflect2
phase "compile $programs" compile
for p in $programs; do "$out/$p" --version; done
command -v etcd >/dev/null && etcd --version | sed -n 1p
echo "real-k8s: ready; export KB_K8S_BIN=$out"
