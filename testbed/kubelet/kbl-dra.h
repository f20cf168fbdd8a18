/*
 * kb-kubelet --dra: a node's GPUs as NVIDIA's DRA driver (k8s-dra-driver-gpu) publishes them,
 * and the kubelet's rule that a pod with resource claims starts only once each claim is
 * allocated and reserved for it.
 *
 * Each node's nvidia.com/gpu count from the nodes file becomes one ResourceSlice named
 * "<node>-gpu.nvidia.com": driver gpu.nvidia.com, pool <node> (generation 0, one slice),
 * nodeName <node>, devices gpu-0 .. gpu-(n-1), each with the driver's attributes
 *   type "gpu", uuid "GPU-<uuid derived from node and index>", index, minor, productName,
 *   brand, architecture, cudaComputeCapability (version), driverVersion (version),
 *   cudaDriverVersion (version)
 * and capacity memory, plus KBL_DRA_ISLAND_ATTR, the GPU's NVLink island as an int: the position
 * of its group in the "nvlink" level of the node's kube-batchd.io/gpu-topology annotation (see
 * scheduler/cache.h), a GPU no group names being an island of its own (number of groups + its
 * index), every GPU island 0 without the annotation. The model defaults to an NVIDIA
 * A100-SXM4-80GB; the node labels nvidia.com/gpu.product (productName) and nvidia.com/gpu.memory
 * (MiB) override it, as GPU feature discovery names them. The node itself then advertises no
 * nvidia.com/gpu.
 *
 * With --mig, NVIDIA's split layout for dynamic MIG (Kubernetes 1.35+): slices
 * "<node>-gpu.nvidia.com-counters[-k]" of sharedCounters, a set "gpu-<i>-counter-set" per GPU
 * (memory, multiprocessors, memory-slice-0..7), and per GPU a slice "<node>-gpu.nvidia.com-gpu-<i>"
 * of the whole GPU (consuming the whole set) and every placement of 1g.10gb, 2g.20gb, 3g.40gb,
 * 4g.40gb and 7g.80gb, named "gpu-<i>-mig-<profile>-<id>-<start>" and consuming its slices. A
 * node labelled KBL_DRA_SHARING_LABEL=memory publishes its GPUs with allowMultipleAllocations
 * and a memory requestPolicy (whole GiB) instead. See docs/kb-kubelet.md.
 */
#pragma once

#include <json-c/json.h>

#include "kube/kb-client.h"

#define KBL_DRA_DRIVER        "gpu.nvidia.com"
#define KBL_DRA_ISLAND_ATTR   "kube-batchd.io/nvlinkIsland"
#define KBL_DRA_MAX_GPUS      128 /* devices in one slice (ResourceSliceMaxDevices) */
#define KBL_DRA_COUNTER_SETS  8   /* counter sets in one slice (ResourceSliceMaxCounterSets) */
#define KBL_DRA_SHARING_LABEL "kube-batchd.io/gpu-sharing"

extern const KbResourceType kbl_type_resource_slices; /* resource.k8s.io/v1 */
extern const KbResourceType kbl_type_resource_claims; /* resource.k8s.io/v1 */

/* The ResourceSlices of @node (a Node object as in the nodes file) as a JSON array, or NULL when
 * it declares no nvidia.com/gpu: one slice of whole GPUs, or with @mig the counter-set slices and
 * one slice per GPU (see above). New reference. NULL with @error when the count is not a whole
 * number of at most KBL_DRA_MAX_GPUS or KBL_DRA_SHARING_LABEL is not "memory". */
json_object *kbl_dra_slices(json_object *node, gboolean mig, GError **error);

/* Remove nvidia.com/gpu from @node's status.allocatable and status.capacity. */
void kbl_dra_strip_gpus(json_object *node);

/* NULL when every claim @pod names is allocated and reserved for it (or it names none); else why
 * not, naming the claim ("ResourceClaim default/c: not reserved for the pod"), newly allocated.
 * Reads the claims through @client. */
char *kbl_dra_pod_blocked(KbClient *client, json_object *pod);
