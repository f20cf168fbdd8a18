#!/bin/sh
# Build bench/data/alibaba-openb-v2023.csv, bench-gpushare's input, from the Alibaba GPU cluster
# trace v2023 ("openb", the trace of FGD: Weng et al., "Beware of Fragmentation: Scheduling
# GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023), published in
# github.com/alibaba/clusterdata, cluster-trace-gpu-v2023/csv/. Reduces its nodes (GPU and CPU-only)
# (openb_node_list_all_node.csv) and its 8,152 pods (openb_pod_list_default.csv) to shape
# histograms: the pods' order and times are not used (the replay draws pods at random, as FGD's
# workload inflation does), nor gpu_spec (empty in this file).
#   bench/alibaba-openb.sh [CLUSTERDATA]   a checkout or bare clone (default: clone it into a
#                                          temporary directory)
set -eu
out=$(dirname "$0")/data/alibaba-openb-v2023.csv
src=${1:-}
tmp=
if [ -z "$src" ]; then
    tmp=$(mktemp -d)
    git clone --depth 1 https://github.com/alibaba/clusterdata "$tmp/clusterdata"
    src=$tmp/clusterdata
fi
show() { git -C "$src" show "HEAD:cluster-trace-gpu-v2023/csv/$1"; }
{
    echo "# Alibaba GPU cluster trace v2023 (openb), github.com/alibaba/clusterdata"
    echo "# cluster-trace-gpu-v2023, as used by FGD (Weng et al., USENIX ATC 2023); shapes with"
    echo "# their counts, built by bench/alibaba-openb.sh. gpu_milli: a fraction of one GPU."
    echo "kind,count,cpu_milli,memory_mib,gpus,gpu_milli,model"
    show openb_node_list_all_node.csv | awk -F, 'NR > 1 { print $2 "," $3 "," $4 "," $5 }' |
        sort -t, -k3,3n -k1,1n -k2,2n | uniq -c |
        awk '{ split($2, f, ","); print "node," $1 "," f[1] "," f[2] "," f[3] ",," f[4] }'
    show openb_pod_list_default.csv | awk -F, 'NR > 1 { print $2 "," $3 "," $4 "," $5 }' |
        sort -t, -k3,3n -k4,4n -k1,1n -k2,2n | uniq -c |
        awk '{ split($2, f, ","); print "pod," $1 "," f[1] "," f[2] "," f[3] "," f[4] "," }'
} > "$out"
[ -z "$tmp" ] || rm -rf "$tmp"
echo "wrote $out"
