#!/usr/bin/env bash
# make image-check: run the image `make image` built, as a cluster would, and prove it works.
#
# kb-apiserver (from the host build) serves HTTPS with RBAC and tokens; the default install is
# applied with kubectl apply -k deploy/; kb-kubelet runs 4 nodes of 8 GPUs. Then, from the
# image, with podman:
#   - kube-batchd and tf-operator run as the image's user (65532) with the command and args of
#     the installed Deployments (kube-batchd-conf mounted where they mount it), configured
#     in-cluster exactly as a pod is: KUBERNETES_SERVICE_HOST/PORT and a ServiceAccount token,
#     CA and namespace mounted at /var/run/secrets/kubernetes.io/serviceaccount (so TLS, the CA
#     bundle and RBAC are real);
#   - a 4-pod gang of 4 GPUs each binds whole, and a second one that cannot fit binds nothing;
#   - kbctl from the image submits a TFJob that tf-operator runs and kube-batchd places, to
#     Succeeded;
#   - --version of all three names the commit the image was built from.
# Exits non-zero with the daemons' logs on any failure.
#
# The OCI runtime: podman's default crun cannot start containers on a host whose cgroups are in
# hybrid mode (these build machines: "cgroups in hybrid mode not supported"), runc can; both
# refuse to raise rlimits here, so the limits are set below the host's hard ones.
#   KB_OCI_RUNTIME=crun|runc   (default: runc when installed)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=${KB_BIN_DIR:-$top/build/default/bin}
tagfile=${KB_IMAGE_TAGFILE:-$top/build/image/tag}
[ -s "$tagfile" ] || { echo "test-image: no image built ($tagfile); run make image" >&2; exit 1; }
image=localhost/$(cat "$tagfile")
version=${image##*:}
runtime=${KB_OCI_RUNTIME:-$(command -v runc >/dev/null && echo runc || echo crun)}
work=$(mktemp -d "${TMPDIR:-/tmp}/kb-image-test.XXXXXX")
pids=()
containers=()
failed=1

say() { printf '# %s\n' "$*"; }
cleanup() {
    if [ $failed = 1 ]; then
        for c in "${containers[@]}"; do
            echo "---- podman logs $c"; podman logs "$c" 2>&1 | tail -40 || true
        done
        for f in "$work"/*.log; do echo "---- $f"; tail -20 "$f"; done
    fi
    for c in "${containers[@]}"; do podman rm -f "$c" >/dev/null 2>&1 || true; done
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# wait_for SECONDS DESCRIPTION COMMAND...: poll every 0.2 s until COMMAND succeeds.
wait_for() {
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || { echo "test-image: timed out waiting for $what" >&2; return 1; }
        sleep 0.2
    done
}

# --- PKI and identities -------------------------------------------------------------------------
say "image $image (runtime $runtime)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=kb-test-ca \
    -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kube-apiserver \
    -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$work/san.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
    -days 1 -extfile "$work/san.ext" -out "$work/server.crt" 2>/dev/null
admin=admin-$RANDOM$RANDOM
cat >"$work/tokens.csv" <<EOF
$admin,admin,admin-uid,"system:masters"
sched-$version,system:serviceaccount:kube-batchd:kube-batchd,sa-kb,
oper-$version,system:serviceaccount:kube-batchd:tf-operator,sa-op,
EOF
# A ServiceAccount volume per daemon, readable by the image's user as the kubelet mounts it.
for sa in kube-batchd:sched tf-operator:oper; do
    d=$work/sa-${sa%%:*}
    mkdir -p "$d"
    cp "$work/ca.crt" "$d/ca.crt"
    printf '%s' "${sa##*:}-$version" >"$d/token"
    printf 'kube-batchd' >"$d/namespace"
    chmod 0755 "$d"
    chmod 0444 "$d"/*
done
chmod 0755 "$work"

# --- the cluster --------------------------------------------------------------------------------
"$bin/kb-apiserver" --listen 127.0.0.1:0 --tls-cert-file "$work/server.crt" \
    --tls-private-key-file "$work/server.key" --token-auth-file "$work/tokens.csv" \
    --authorization-mode RBAC >"$work/apiserver.out" 2>"$work/apiserver.log" &
pids+=($!)
wait_for 10 "kb-apiserver" grep -q '^listening on' "$work/apiserver.out"
url=$(sed -n 's/^listening on \(https[^ ]*\).*/\1/p' "$work/apiserver.out" | head -n 1)
port=${url##*:}
say "kb-apiserver at $url"
k() { kubectl --server "$url" --token "$admin" --certificate-authority "$work/ca.crt" "$@"; }
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$url", certificate-authority: "$work/ca.crt"}}]
users: [{name: admin, user: {token: "$admin"}}]
contexts: [{name: c, context: {cluster: c, user: admin}}]
current-context: c
EOF
"$bin/kb-kubelet" --kubeconfig "$work/kubeconfig" --nodes "$top/deploy/demo/nodes.yaml" \
    >"$work/kubelet.out" 2>"$work/kubelet.log" &
pids+=($!)
wait_for 20 "kb-kubelet" grep -q '^registered' "$work/kubelet.out"
# The default install, as an operator applies it (the CRDs' objects need a second pass on any
# server: the first one creates the CRDs).
wait_for 30 "kubectl apply -k deploy/" k apply -k "$top/deploy/"
# ...then, as the README's install goes on, the conversion webhook's Secret and caBundle.
KUBECTL="kubectl --kubeconfig $work/kubeconfig" bash "$top/deploy/tfjob-webhook-certs.sh" \
    "$work/webhook-pki" --apply >/dev/null

# The daemons' command and arguments are those of the installed Deployments, so the image and the
# manifests cannot drift: the program must be in the image at the Deployment's path, and its
# flags must be ones it accepts. Only the listening address moves to loopback (the containers
# share the host's network), and kube-batchd's ConfigMap volume is mounted from the installed
# ConfigMap at the Deployment's mountPath.
deployment() { # NAME JSONPATH
    k get deployment "$1" -n kube-batchd -o jsonpath="$2"
}
container_args() { # NAME: one argument a line, --listen-address moved to 127.0.0.1:0
    deployment "$1" '{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}' |
        sed -e 's/^--listen-address=.*/--listen-address=127.0.0.1:0/' \
            -e 's/^--webhook-address=.*/--webhook-address=127.0.0.1:0/'
}
sched_cmd=$(deployment kube-batchd '{.spec.template.spec.containers[0].command[0]}')
oper_cmd=$(deployment tf-operator '{.spec.template.spec.containers[0].command[0]}')
mapfile -t sched_args < <(container_args kube-batchd)
mapfile -t oper_args < <(container_args tf-operator)
conf_mount=$(deployment kube-batchd \
    '{.spec.template.spec.containers[0].volumeMounts[?(@.name=="conf")].mountPath}')
mkdir -p "$work/conf"
k get configmap kube-batchd-conf -n kube-batchd -o jsonpath='{.data.scheduler\.conf}' \
    >"$work/conf/scheduler.conf"
chmod -R a+rX "$work/conf"
# tf-operator's Secret volume, as the kubelet mounts it (the Secret as installed).
tls_mount=$(deployment tf-operator \
    '{.spec.template.spec.containers[0].volumeMounts[?(@.name=="webhook-tls")].mountPath}')
mkdir -p "$work/webhook-tls"
for key in tls.crt tls.key; do
    k get secret tf-operator-webhook-tls -n kube-batchd -o jsonpath="{.data.${key//./\\.}}" |
        base64 -d >"$work/webhook-tls/$key"
done
chmod -R a+rX "$work/webhook-tls"
[ -n "$tls_mount" ] && [ -s "$work/webhook-tls/tls.key" ] ||
    { echo "test-image: tf-operator's Deployment mounts no webhook-tls Secret, or it is empty" >&2; exit 1; }
[ -n "$sched_cmd" ] && [ -n "$oper_cmd" ] && [ -n "$conf_mount" ] && [ ${#sched_args[@]} -gt 0 ] ||
    { echo "test-image: the installed Deployments lack a command, args or the conf mount" >&2; exit 1; }
say "from the Deployments: $sched_cmd ${sched_args[*]}; $oper_cmd ${oper_args[*]}"

# --- the daemons, from the image ----------------------------------------------------------------
run_image() { # NAME SA-DIR [podman flags...] -- [args...]
    local name=$1 sa=$2
    shift 2
    local flags=()
    while [ "$1" != "--" ]; do flags+=("$1"); shift; done
    shift
    podman --runtime "$runtime" run -d --name "$name" --network host \
        --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 --read-only \
        -e KUBERNETES_SERVICE_HOST=127.0.0.1 -e KUBERNETES_SERVICE_PORT="$port" \
        -v "$sa:/var/run/secrets/kubernetes.io/serviceaccount:ro" "${flags[@]}" "$image" "$@" >/dev/null
    containers+=("$name")
}
sched=kb-image-sched-$$
oper=kb-image-oper-$$
# (--schedule-period shortens the test only.)
run_image "$sched" "$work/sa-kube-batchd" -v "$work/conf:$conf_mount:ro" --entrypoint "$sched_cmd" -- \
    "${sched_args[@]}" --schedule-period=200ms
run_image "$oper" "$work/sa-tf-operator" -v "$work/webhook-tls:$tls_mount:ro" --entrypoint "$oper_cmd" -- \
    "${oper_args[@]}"

user=$(podman top "$sched" user | tail -n 1 | tr -d ' ')
[ "$user" = 65532 ] || [ "$user" = nonroot ] || { echo "test-image: kube-batchd runs as '$user', not 65532" >&2; exit 1; }
say "kube-batchd and tf-operator run from the image as $user"

# --- a gang binds whole; one that cannot fit binds nothing --------------------------------------
gang() { # NAME MEMBERS GPUS-EACH
    printf 'apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n'
    printf 'metadata: {name: %s, namespace: default}\nspec: {minMember: %d, queue: default}\n' "$1" "$2"
    for i in $(seq 0 $(($2 - 1))); do
        printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s-%d\n  namespace: default\n' "$1" "$i"
        printf '  annotations: {scheduling.k8s.io/group-name: %s}\n' "$1"
        printf 'spec:\n  schedulerName: kube-batchd\n  containers:\n  - name: c\n    image: x\n'
        printf '    resources: {limits: {nvidia.com/gpu: %d}}\n' "$3"
    done
}
bound() { # NAME MEMBERS: every member has a node
    local n
    n=$(k get pods -n default -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}' |
        grep -c "^$1-[0-9]*=..*" || true)
    [ "$n" = "$2" ]
}
gang fits 4 4 | k create -f - >/dev/null
wait_for 60 "gang 'fits' bound by kube-batchd from the image" bound fits 4
say "gang fits: 4 of 4 pods bound"
# 4 x 8 GPUs hold 32; fits took 16: a gang of 3 x 8 cannot fit and must stay whole (nothing bound).
gang toobig 3 8 | k create -f - >/dev/null
wait_for 30 "PodGroup toobig's Unschedulable condition" sh -c \
    "kubectl --server '$url' --token '$admin' --certificate-authority '$work/ca.crt' get podgroups.scheduling.volcano.sh toobig -n default -o yaml | grep -q Unschedulable"
placed=$(k get pods -n default -o jsonpath='{range .items[*]}{.metadata.name}={.spec.nodeName}{"\n"}{end}' | grep -c '^toobig-[0-9]*=..*' || true)
[ "$placed" = 0 ] || { echo "test-image: $placed members of the gang that cannot fit were bound" >&2; exit 1; }
say "gang toobig: nothing bound, Unschedulable"
k delete podgroups.scheduling.volcano.sh toobig -n default >/dev/null
k delete pods -n default toobig-0 toobig-1 toobig-2 >/dev/null

# --- kbctl from the image submits a TFJob that runs to Succeeded ----------------------------------
podman --runtime "$runtime" run --rm --network host --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 \
    -v "$work/ca.crt:/ca.crt:ro" --entrypoint /usr/bin/kbctl "$image" \
    --server "$url" --token "$admin" --certificate-authority /ca.crt \
    submit tf --name from-image --image tf --workers 2 --gpus 1 \
    --annotation sim.kube-batchd.io/run-seconds=1 -- python train.py >/dev/null
wait_for 60 "TFJob from-image Succeeded" sh -c \
    "kubectl --server '$url' --token '$admin' --certificate-authority '$work/ca.crt' get tfjob from-image -n default -o jsonpath='{.status.conditions[*].type}' | grep -q Succeeded"
say "TFJob from-image (submitted by the image's kbctl): Succeeded"

# --- versions -----------------------------------------------------------------------------------
for b in kube-batchd tf-operator kbctl; do
    v=$(podman --runtime "$runtime" run --rm --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 \
        --entrypoint "/usr/bin/$b" "$image" --version)
    [ "$v" = "$b $version" ] || { echo "test-image: $b --version says '$v', want '$b $version'" >&2; exit 1; }
done
say "--version of kube-batchd, tf-operator and kbctl: $version"
failed=0
echo "test-image: ok"
