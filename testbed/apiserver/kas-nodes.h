/*
 * --nodes FILE: nodes to create at startup, from YAML or JSON. Either Node objects (one Node, a
 * List/NodeList with items, or an array of Nodes), or templates:
 *
 *   nodes:
 *   - count: 4                 # how many nodes this entry makes (default 1)
 *     name: "gpu-{i}"          # {i}: index in this entry, {n}: index in the file,
 *                              # {rack}: i / nodesPerRack (default name "node-{n}")
 *     nodesPerRack: 2
 *     allocatable: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
 *     capacity: {...}          # default: allocatable
 *     labels: {nvidia.com/gpu.product: Tesla-V100-SXM2-16GB, topology.kubernetes.io/rack: "rack-{rack}"}
 *     annotations: {...}       # e.g. the GPU-topology annotation
 *     taints: [{key: k, value: v, effect: NoSchedule}]
 *     unschedulable: false
 *
 * The placeholders are replaced in the name and in label and annotation values. Limits: 100,000
 * nodes and 16 MiB of file.
 */
#pragma once

#include "testbed/apiserver/kas-store.h"

#define KAS_NODES_MAX 100000
#define KAS_NODES_MAX_FILE (16 * 1024 * 1024)

/* The Node objects @path describes, as a JSON array (new reference), or NULL with an error naming
 * the file, the entry and the field. bin/kb-kubelet reads the same files. */
json_object *kas_nodes_parse(const char *path, GError **error);

/* Create the nodes described in @path; returns how many, or -1 with an error naming the file,
 * the entry and the field. */
gint64 kas_nodes_load(KasStore *store, const char *path, GError **error);
