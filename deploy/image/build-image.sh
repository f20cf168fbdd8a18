#!/usr/bin/env bash
# make image: kube-batchd's OCI image, from Debian's packages alone (no registry base image).
#
#   deploy/image/build-image.sh BINDIR OUTDIR VERSION
#
# 1. mmdebstrap unpacks bookworm's runtime libraries of our binaries (and what they depend on,
#    resolved by apt) into a root of its own: the "extract" variant, so no shell, no package
#    manager, no maintainer scripts (a distroless-style root, about 40 MB).
# 2. An extract hook finishes it as the maintainer scripts would have: the CA bundle libcurl and GnuTLS read
#    (the concatenation update-ca-certificates makes of /usr/share/ca-certificates/mozilla),
#    /etc/passwd and /etc/group with root and nonroot (65532, the Deployments' runAsUser and
#    fsGroup), /etc/nsswitch.conf, /tmp; docs, man pages and locales are dropped.
# 3. kube-batchd, tf-operator and kbctl from BINDIR (stripped) go to /usr/bin; every shared
#    library they need must resolve inside the root (checked here with the root's own loader, so
#    a missing package fails the build, not the first start on a cluster).
# 4. podman imports the root as kube-batchd:VERSION and kube-batchd:latest (USER 65532:65532,
#    ENTRYPOINT kube-batchd, OCI labels naming the commit) and saves it as an OCI archive,
#    OUTDIR/kube-batchd-VERSION.oci.tar, for `podman load`, `skopeo copy` or a registry push.
#
# Needs mmdebstrap and podman (make image installs them) and Debian's archive as apt sees it.
set -euo pipefail

bindir=${1:?usage: build-image.sh BINDIR OUTDIR VERSION}
out=${2:?usage: build-image.sh BINDIR OUTDIR VERSION}
version=${3:?usage: build-image.sh BINDIR OUTDIR VERSION}
here=$(cd "$(dirname "$0")" && pwd)
suite=${KB_IMAGE_SUITE:-bookworm}

# The packages of the libraries our binaries link (see the Makefile's PKGS), their runtime names.
packages=libc6,libglib2.0-0,libjson-c5,libcurl4,libmicrohttpd12,libyaml-0-2,libgnutls30,ca-certificates

# apt's own sources, so the image comes from the archive (or mirror) this machine is set up for.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
    [ -s "$f" ] && grep -qE '^(deb |Types:.*\bdeb\b)' "$f" && sources+=("$f")
done

mkdir -p "$out"
stage=$(mktemp -d "${TMPDIR:-/tmp}/kb-image.XXXXXX")
trap 'rm -rf "$stage"' EXIT
for b in kube-batchd tf-operator kbctl; do
    [ -x "$bindir/$b" ] || { echo "build-image: $bindir/$b missing (run make first)" >&2; exit 1; }
    cp "$bindir/$b" "$stage/$b"
    strip "$stage/$b"
done

echo "image: root filesystem from $suite ($packages)"
mmdebstrap --quiet --variant=extract --include="$packages" \
    --extract-hook="sh '$here/finish-root.sh' \"\$1\" '$stage'" \
    "$suite" "$stage/root.tar" "${sources[@]}"

tag=kube-batchd:$version
echo "image: podman import as $tag"
podman import --quiet \
    --change 'USER 65532:65532' \
    --change 'WORKDIR /' \
    --change 'ENTRYPOINT ["/usr/bin/kube-batchd"]' \
    --change "LABEL org.opencontainers.image.title=kube-batchd" \
    --change "LABEL org.opencontainers.image.revision=$version" \
    --change "LABEL org.opencontainers.image.source=https://github.com/kube-batchd/kube-batchd" \
    --change "LABEL org.opencontainers.image.description=kube-batchd, tf-operator and kbctl" \
    "$stage/root.tar" "localhost/$tag" >/dev/null
podman tag "localhost/$tag" localhost/kube-batchd:latest
rm -f "$out/kube-batchd-$version.oci.tar"
podman save --quiet --format oci-archive -o "$out/kube-batchd-$version.oci.tar" "localhost/$tag"
echo "$tag" >"$out/tag"
size=$(podman image inspect --format '{{.Size}}' "localhost/$tag")
echo "image: localhost/$tag ($((size / 1024 / 1024)) MiB), saved as $out/kube-batchd-$version.oci.tar"
