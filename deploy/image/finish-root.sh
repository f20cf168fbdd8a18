#!/bin/sh
# mmdebstrap extract hook of build-image.sh (the extract variant runs no customize hooks): finish the unpacked root ROOT as the skipped
# maintainer scripts would have, put the binaries from STAGE in it, and prove they load.
#
#   finish-root.sh ROOT STAGE
set -eu
root=$1
stage=$2

# What update-ca-certificates would have written: every certificate Debian ships, one bundle,
# at the path libcurl (built against GnuTLS) and GnuTLS's system trust read.
mkdir -p "$root/etc/ssl/certs"
cat "$root"/usr/share/ca-certificates/mozilla/*.crt >"$root/etc/ssl/certs/ca-certificates.crt"

# Users: root, and nonroot as the Deployments run us (runAsUser/runAsGroup/fsGroup 65532).
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
nonroot:x:65532:
EOF
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
mkdir -p "$root/tmp" "$root/home/nonroot" "$root/root"
chmod 1777 "$root/tmp"
chown 65532:65532 "$root/home/nonroot"

# No shell or package manager is there to use them.
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/info" \
    "$root/usr/share/locale" "$root/usr/share/lintian" "$root/var/cache/apt" "$root/var/lib/apt/lists"

for b in kube-batchd tf-operator kbctl; do
    install -m 0755 "$stage/$b" "$root/usr/bin/$b"
done

# Every library the binaries need resolves inside the root: ask the root's own loader, and
# refuse any library it found outside the root (the host's cache or default directories).
loader=$(find "$root" -name 'ld-linux-x86-64.so.2' -type f | head -n 1)
[ -n "$loader" ] || { echo "finish-root: no dynamic loader in the root" >&2; exit 1; }
libpath="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
for b in kube-batchd tf-operator kbctl; do
    outside=$("$loader" --inhibit-cache --library-path "$libpath" --list "$root/usr/bin/$b" |
        awk -v root="$root" '/=>/ && (index($3, root) != 1) { print }')
    if [ -n "$outside" ]; then
        echo "finish-root: $b needs libraries the image lacks (add their packages):" >&2
        echo "$outside" >&2
        exit 1
    fi
    "$loader" --inhibit-cache --library-path "$libpath" "$root/usr/bin/$b" --version >/dev/null
done
