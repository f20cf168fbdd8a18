#!/usr/bin/env bash
# make demo: the whole system on the embedded in-memory cluster.
#
# Starts bin/kb-apiserver, and bin/kb-kubelet as its own process running a 4 x 8-GPU cluster on it
# (simulated kubelets, as on any API server), applies the project's
# CRDs and a default queue with kubectl, starts bin/kube-batchd and bin/tf-operator (with the TFJob
# CRD's conversion webhook: its certificate from deploy/tfjob-webhook-certs.sh, which needs openssl,
# and the Service's Endpoints pointing at it), submits the
# seed's TFJob examples (kubeflow.org/v1alpha1, and the tutorial's v1beta1 with its `MASTER` key)
# and two v1 jobs, one of which is a 32-GPU gang that must wait for the others to free their GPUs,
# and shows job states and pod placements as they change. Ends with a summary and exits 0 when every job succeeded.
#
#   KEEP=1 make demo     leave the cluster running and print how to point kubectl at it
#   DEMO_TIMEOUT=120     seconds to wait for the jobs (default 120)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
bin=${KB_BIN_DIR:-$top/bin}
demo=$top/deploy/demo
timeout_s=${DEMO_TIMEOUT:-120}
work=$(mktemp -d "${TMPDIR:-/tmp}/kb-demo.XXXXXX")
pids=()

say() { printf '\033[1m%s\033[0m\n' "$*"; }

cleanup() {
    if [ "${KEEP:-0}" = 1 ]; then
        say "KEEP=1: the cluster keeps running (logs in $work)."
        echo "  kubectl --server $url get tfjobs,podgroups,pods -o wide"
        echo "  alias kbctl=\"$bin/kbctl --server $url\"; kbctl list   (then: get, why, logs, top node)"
        echo "  stop it with: kill ${pids[*]}"
        return
    fi
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# --- the cluster --------------------------------------------------------------------------------
say "== starting kb-apiserver"
"$bin/kb-apiserver" --listen 127.0.0.1:0 --runtime-config scheduling.k8s.io/v1beta1=true >"$work/apiserver.out" 2>"$work/apiserver.log" &
pids+=($!)
url=""
for _ in $(seq 1 100); do
    url=$(sed -n 's/^listening on \(http[^ ]*\).*/\1/p' "$work/apiserver.out" | head -n 1)
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { echo "kb-apiserver did not start:"; cat "$work/apiserver.log"; exit 1; }
echo "API server at $url"
k() { kubectl --server "$url" "$@"; }

say "== starting kb-kubelet (simulated kubelets for 4 nodes x 8 GPUs)"
"$bin/kb-kubelet" --master "$url" --nodes "$demo/nodes.yaml" \
    >"$work/kubelet.out" 2>"$work/kubelet.log" &
pids+=($!)
for _ in $(seq 1 100); do
    grep -q '^registered' "$work/kubelet.out" && break
    sleep 0.1
done
grep -q '^registered' "$work/kubelet.out" || { echo "kb-kubelet did not start:"; cat "$work/kubelet.log"; exit 1; }

say "== kubectl apply: CRDs (PodGroup, Queue, TFJob) and the default queue"
k apply -f "$top/deploy/base/crds/" >/dev/null
k apply -f "$top/deploy/base/default-queue.yaml"
k get nodes -L nvidia.com/gpu.product,topology.kubernetes.io/rack

say "== starting kube-batchd and tf-operator"
"$bin/kube-batchd" --master "$url" --schedule-period 500ms --listen-address 127.0.0.1:0 \
    >"$work/kube-batchd.log" 2>&1 &
pids+=($!)
command -v openssl >/dev/null || { echo "demo: openssl is needed for the webhook's certificate (apt-get install openssl)"; exit 1; }
KUBECTL="kubectl --server $url" "$top/deploy/tfjob-webhook-certs.sh" "$work/webhook" --apply
"$bin/tf-operator" --master "$url" --listen-address 127.0.0.1:0 --webhook-address 127.0.0.1:0 \
    --webhook-cert-file "$work/webhook/server.pem" --webhook-key-file "$work/webhook/server-key.pem" \
    >"$work/tf-operator.log" 2>&1 &
pids+=($!)
# The Service the CRD names, and (no cluster network here) its Endpoints: tf-operator's port.
whport=""
for _ in $(seq 1 100); do
    whport=$(sed -n 's/.*conversion webhook (HTTPS, \/convert) on port \([0-9]*\).*/\1/p' "$work/tf-operator.log" | head -n 1)
    [ -n "$whport" ] && break
    sleep 0.1
done
[ -n "$whport" ] || { echo "tf-operator did not start its webhook:"; cat "$work/tf-operator.log"; exit 1; }
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: tf-operator-webhook, namespace: kube-batchd}
spec:
  selector: {app: tf-operator}
  ports:
  - {name: webhook, port: 443, targetPort: webhook}
---
apiVersion: v1
kind: Endpoints
metadata: {name: tf-operator-webhook, namespace: kube-batchd}
subsets:
- addresses: [{ip: 127.0.0.1}]
  ports: [{name: webhook, port: $whport}]
EOF
echo "TFJob conversion webhook on port $whport (Service kube-batchd/tf-operator-webhook)"

say "== submitting jobs"
for f in tfjob-seed-v1alpha1.yaml tfjob-seed-v1beta1.yaml tfjob-smoke-gpu.yaml tfjob-v1-mnist.yaml tfjob-v1-big-gang.yaml; do
    k create -f "$demo/$f"
done
# Kubernetes' own gang API (kubectl's schema predates spec.schedulingGroup: no client validation)
k create --validate=false -f "$demo/native-gang.yaml"

# --- watch it happen ----------------------------------------------------------------------------
job_states() {
    # NAME STATE for both API shapes: v1 conditions, v1alpha1 state.
    k get tfjobs -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.state}{.status.conditions[-1:].type}{"\n"}{end}' 2>/dev/null |
        awk '{ print $1, ($2 == "" ? "Pending" : $2) }' | sort
}
placements() {
    k get pods --no-headers -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,PHASE:.status.phase 2>/dev/null | sort
}
# The condition kube-batchd wrote on each PodGroup that is not running: what it is short of.
waiting_groups() {
    k get podgroups.scheduling.volcano.sh -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.phase}{": "}{.status.conditions[-1:].message}{"\n"}{end}' 2>/dev/null |
        awk '$2 != "Running:" && $2 != "Completed:" && NF > 2' | sort
}
metric() {
    curl -s "http://127.0.0.1:$1/metrics" 2>/dev/null | awk -v m="$2" 'index($0, m) == 1 { print $2; exit }'
}

declare -A placed
start=$(date +%s)
prev_jobs=""
prev_pods=""
prev_wait=""
say "== job states and pod placements as they change"
while :; do
    now=$(( $(date +%s) - start ))
    jobs=$(job_states)
    pods=$(placements)
    if [ "$jobs" != "$prev_jobs" ]; then
        echo "[t=${now}s] jobs: $(echo "$jobs" | tr '\n' ';' | sed 's/;$//; s/;/; /g')"
        prev_jobs=$jobs
    fi
    wait_msgs=$(waiting_groups)
    if [ -n "$wait_msgs" ] && [ "$wait_msgs" != "$prev_wait" ]; then
        echo "$wait_msgs" | sed "s/^/[t=${now}s]   waiting: podgroup /"
    fi
    prev_wait=$wait_msgs
    # The users' view, once, while a gang waits: why it waits and where the GPUs are (kbctl).
    if [ -n "$wait_msgs" ] && [ -z "${kbctl_shown:-}" ] && [ -x "$bin/kbctl" ]; then
        kbctl_shown=1
        "$bin/kbctl" --server "$url" why "$(echo "$wait_msgs" | head -n 1 | cut -d' ' -f1)" | fold -s -w 100 | sed 's/^/    kbctl why: /' || true
        "$bin/kbctl" --server "$url" top node | sed 's/^/    /' || true
    fi
    if [ "$pods" != "$prev_pods" ]; then
        while read -r name node phase; do
            [ -n "${name:-}" ] || continue
            if [ "${node:-<none>}" != "<none>" ] && [ -z "${placed[$name]:-}" ]; then
                placed[$name]=$node
                echo "[t=${now}s]   $name -> $node"
            fi
        done <<<"$pods"
        prev_pods=$pods
    fi
    if [ -n "$jobs" ] && ! echo "$jobs" | awk '$2 != "Succeeded" && $2 != "Failed" { found = 1 } END { exit !found }'; then
        break
    fi
    if [ "$now" -ge "$timeout_s" ]; then
        say "timed out after ${timeout_s}s"
        break
    fi
    sleep 1
done

# --- summary ------------------------------------------------------------------------------------
say "== summary"
[ -x "$bin/kbctl" ] && "$bin/kbctl" --server "$url" list -A && "$bin/kbctl" --server "$url" queue list
echo "$jobs" | while read -r name state; do printf '  %-16s %s\n' "$name" "$state"; done
echo "  the seed's v1alpha1 job: $(k get tfjobs.v1alpha1.kubeflow.org example-job \
    -o jsonpath='phase {.status.phase}, state {.status.state}' 2>/dev/null)"
echo "  native PodGroup native-gang: $(k get podgroups.scheduling.k8s.io native-gang \
    -o jsonpath='{.status.conditions[0].type}={.status.conditions[0].status} ({.status.conditions[0].message})' 2>/dev/null)"
echo "  its pods on: $(for i in 0 1 2 3; do k get pod "native-gang-$i" -o jsonpath='{.spec.nodeName} ' 2>/dev/null; done)"
echo "  pods placed: ${#placed[@]}"
for node in $(printf '%s\n' "${placed[@]}" | sort -u); do
    n=0
    for p in "${!placed[@]}"; do [ "${placed[$p]}" = "$node" ] && n=$((n + 1)); done
    echo "    $node: $n pods"
done
port=$(sed -n 's/.*serving \/healthz.* on port \([0-9]*\).*/\1/p' "$work/kube-batchd.log" | head -n 1)
if [ -n "$port" ]; then
    say "== kube-batchd /metrics"
    echo "  bindings succeeded: $(metric "$port" 'kube_batchd_binds_total{result="succeeded"}')"
    echo "  bindings failed:    $(curl -s "http://127.0.0.1:$port/metrics" |
        awk '/^kube_batchd_binds_total/ && !/succeeded/ { s += $2 } END { print s + 0 }')"
    echo "  scheduling cycles:  $(metric "$port" 'kube_batchd_cycles_total')"
fi
failed=$(echo "$jobs" | awk '$2 != "Succeeded"' | wc -l)
if [ "$failed" -ne 0 ]; then
    say "demo: $failed job(s) did not succeed; logs:"
    tail -n 20 "$work"/*.log
    exit 1
fi
say "demo: all jobs succeeded"
