/*
 * Dynamic Resource Allocation in the scheduler: the cache's DRA state and the device allocator
 * the gang plan calls.
 *
 * State (owned by the cache, fed on watch events; kube/kb-dra.h records, selectors compiled once
 * per event with kb-cel):
 * - DeviceClasses, ResourceClaims, ResourceClaimTemplates, ResourceSlices (indexed by node);
 * - the devices allocated claims hold (status.allocation.devices.results), and the devices this
 *   scheduler chose for claims whose status is not written or not seen yet ("assumed").
 *   A device is free when neither holds it: it is never given twice.
 *
 * Allocation: for a pod and a node, every claim the pod names is resolved (resourceClaimName, or
 * the claim status.resourceClaimStatuses names for a template), then
 * - a claim already allocated is usable on the node its allocation names (any node when none);
 * - a claim another pod of this scheduler is allocating (a shared claim) on that pod's node;
 * - otherwise its requests are chosen among the node's free devices, in order: `exactly` (count
 *   or All) or the first `firstAvailable` alternative that fits, devices matching the class's
 *   and the request's selectors; with a `matchAttribute` constraint every value of the attribute
 *   is tried (fewest devices first); without one, devices of one NVLink island
 *   (KB_DRA_ISLAND_ATTRIBUTE) are preferred, the island that fits most tightly first;
 * - a partitionable device (consumesCounters, a MIG placement) only while every counter it
 *   consumes, with those of the devices held and planned, stays within its pool's counter set;
 *   a device with allowMultipleAllocations shared, each claim taking its capacity.requests
 *   rounded per requestPolicy, the sum within the capacity (results carry consumedCapacity and a
 *   shareID); both taken from the GPU most used already (packing);
 * - in a gang, firstAvailable's first alternative that fits every member (dra.c alt_order).
 * kb_dra_assume() holds the choice for the pod (kb_session_allocate calls it, inside the gang's
 * statement); kb_dra_release() gives it back (statement discarded, binding failed, pod deleted).
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-dra.h"

/* The device attribute naming a GPU's NVLink island (kb-kubelet --dra publishes it from the
 * node's kube-batchd.io/gpu-topology annotation); any domain. */
#define KB_DRA_ISLAND_ATTRIBUTE "nvlinkIsland"
/* NVIDIA's DeviceClass of MIG devices: counted in nvidia.com/gpu by the part of a GPU each takes
 * and, by number, in a slot of its own. */
#define KB_DRA_MIG_CLASS "mig.nvidia.com"

typedef struct KbDra KbDra;

KbDra *kb_dra_new(void);
void kb_dra_free(KbDra *dra);

/* Ingest: each takes its own reference; set replaces by key, delete of an unknown key is a
 * no-op. */
void kb_dra_set_class(KbDra *dra, KbDeviceClass *dc);
void kb_dra_delete_class(KbDra *dra, const KbDeviceClass *dc);
void kb_dra_set_claim(KbDra *dra, KbResourceClaim *claim);
void kb_dra_delete_claim(KbDra *dra, const KbResourceClaim *claim);
void kb_dra_set_template(KbDra *dra, KbResourceClaimTemplate *t);
void kb_dra_delete_template(KbDra *dra, const KbResourceClaimTemplate *t);
void kb_dra_set_slice(KbDra *dra, KbResourceSlice *slice);
void kb_dra_delete_slice(KbDra *dra, const KbResourceSlice *slice);

/*
 * May @pod be placed as far as its claims go: each exists (a template's has been created by the
 * resource-claim controller), names classes that exist, and every selector of them compiled.
 * FALSE with *@reason (static: "ResourceClaimNotFound", "DeviceClassNotFound",
 * "DeviceSelectorUnsupported") and *@why (newly allocated; quotes an expression kb-cel refused).
 */
gboolean kb_dra_pod_ready(KbDra *dra, const KbPod *pod, const char **reason, char **why);

/*
 * Could @pod's claims be satisfied on node @node now? FALSE with @why (may be NULL) appended:
 * "claim ns/x request gpus: 2 devices of class gpu.nvidia.com wanted, 1 free on node n3"; *@free
 * (may be NULL) receives the free count named there, to pick the most telling node.
 */
gboolean kb_dra_fits(KbDra *dra, const KbPod *pod, const char *node, GString *why, gint *free);
/*
 * The same check for a caller that asks about many nodes (allocate's candidate search): @nd is
 * what kb_dra_node(@dra, @node) returned, so that the node's devices are not looked up by name
 * on every call. kb_dra_node's answer (NULL: the node publishes no devices) stays valid while
 * kb_dra_nodes_gen() does not change (a slice set or deleted changes it); it is not owned.
 * @fit (the caller's, zeroed before first use) keeps what was learnt of the last pod's claims
 * (which claim, its class and count) while no claim, class, slice or hold changes, so that
 * asking about the same pod on the next node only reads that node's free count; the caller
 * keeps every pod it asks about alive while it keeps @fit.
 */
typedef struct KbDraNode KbDraNode;
typedef struct {
    const KbPod *pod;
    guint64 gen;
    int shape;
    gconstpointer cl;
    const char *pinned;
    guint count;
} KbDraPodFit;
KbDraNode *kb_dra_node(KbDra *dra, const char *node);
guint kb_dra_nodes_gen(const KbDra *dra);
gboolean kb_dra_fits_on(KbDra *dra, const KbPod *pod, const char *node, KbDraNode *nd,
                        KbDraPodFit *fit);

/* Choose @pod's devices on @node and hold them; FALSE (nothing held) when they do not fit. A pod
 * already holding is released first. */
gboolean kb_dra_assume(KbDra *dra, const KbPod *pod, const char *node);
/* Give back what kb_dra_assume held for the pod of @uid (no-op when nothing). */
void kb_dra_release(KbDra *dra, const char *uid);
/* The pod of @uid was seen bound: its hold ends, claims written stay assumed until the watch
 * shows them allocated. */
void kb_dra_pod_bound(KbDra *dra, const char *uid);
/* Number of devices held (allocated or assumed), for tests and metrics. */
guint kb_dra_devices_held(const KbDra *dra);

/*
 * One claim status write, made before the pod's Binding: a merge patch of the claim's status
 * subresource (@body, kb_resource_claim_status_text) and the one that undoes it (@undo: the
 * allocation removed when this write made it, reservedFor as it was).
 */
typedef struct {
    char *namespace_;
    char *name;
    char *body; /* JSON text (kb_resource_claim_status_text) */
    json_object *undo;
    gboolean allocates; /* the write allocates the claim (else it only reserves it) */
    /* The claim as the write makes it (kb_resource_claim_after_status), from the version
     * @from_rv (the body's precondition); taken by kb_claim_write_take_echo. */
    KbResourceClaim *after;
    char *from_rv;
} KbClaimWrite;

void kb_claim_write_free(gpointer write);

/* The claim record @w makes (a new reference, resourceVersion not set: for kb_informer_expect()
 * with @w->from_rv), taken out of @w; NULL when taken already. */
KbResourceClaim *kb_claim_write_take_echo(KbClaimWrite *w);

/*
 * The claim writes of @pods (KbPod*, a gang's placed members in commit order, all held): one per
 * claim, the allocation and every member using it in reservedFor; a claim already reserved for
 * all its members needs none. Returns a new array per pod (same order; NULL where the pod needs
 * none); each array owns its KbClaimWrite.
 */
GPtrArray **kb_dra_gang_writes(KbDra *dra, KbPod *const *pods, guint n_pods);

/* The binder wrote (@written TRUE) or undid the allocation of claim @ns/@name: a written claim
 * stays assumed until the watch shows it, even after its pods' holds end. */
void kb_dra_claim_written(KbDra *dra, const char *namespace_, const char *name, gboolean written);

/*
 * Does @claim, a watch update of @old, only show an allocation this scheduler assumed: @old
 * unallocated, @claim allocated with exactly the whole devices chosen for it (no share), its
 * reservations kept, same uid and generation? Then no device changes hands (assumed becomes
 * allocated) and no cycle is needed for it. Call before kb_dra_set_claim(), which drops the
 * assumption. Without this, each claim write's echo kicked a cycle.
 */
gboolean kb_dra_claim_confirms_assumed(KbDra *dra, const KbResourceClaim *old,
                                       const KbResourceClaim *claim);

/* The claim @namespace_/@name as the cache last saw it (borrowed, valid until the next claim
 * event), or NULL: the extender's bind reads whether kube-scheduler allocated it. */
const KbResourceClaim *kb_dra_lookup_claim(KbDra *dra, const char *namespace_, const char *name);

/*
 * What fraction of a GPU result @r takes (an allocated claim's result, or one this allocator
 * chose: KbClaimWrite bodies carry the same), from 0 to 1, in steps of 1/1000 rounded down (what
 * queue accounting counts in nvidia.com/gpu, docs/dra.md "Devices as resources"): a
 * partitionable device (a MIG placement) its share of its first counter set's
 * "multiprocessors" (a 1g.10gb of an A100 0.142, a 3g.40gb 0.428), else of "memory", else the
 * largest share of a counter worth more than 1; a share of a device allowing multiple
 * allocations its consumedCapacity "memory" over the device's (else the largest such share); any
 * other device 1. -1 when no slice the cache holds has the device.
 */
double kb_dra_gpu_fraction(KbDra *dra, const KbDeviceResult *r);

/*
 * DRA demand as resources (docs/dra.md, "Devices as resources"): each DeviceClass name is a
 * resource (a slot of KbResources, kb_resource_slot), so that node pruning, queues,
 * capabilities, guarantees, DRF and reclaim count devices as they count nvidia.com/gpu. GPU
 * classes (KB_RESOURCE_GPU_CLASS, KB_DRA_MIG_CLASS) count in nvidia.com/gpu, in milli-GPUs, the
 * part of a GPU their devices consume (kb_dra_gpu_fraction): a whole GPU 1000, a MIG slice or a
 * share of a GPU's memory its part. The vector is a necessary condition only: kb_dra_fits has
 * the final word.
 *
 * kb_dra_pod_demand adds to @out, per claim of @pod from a template:
 * - once the claim is allocated (as the cache sees it): in nvidia.com/gpu the part of a GPU each
 *   of its results takes, in mig.nvidia.com's slot its MIG devices; the rest as below;
 * - before: per request of the template, in nvidia.com/gpu `count` times the least part of a
 *   GPU any published device of its class and selectors could give it (a share: the capacity
 *   requested, rounded by the device's policy, over the device's), the least over
 *   firstAvailable alternatives when all name GPU classes; in the slot of any other class
 *   (mig.nvidia.com included) `count` devices (`allocationMode: All`: 1) when every
 *   alternative names that class and no capacity.requests.
 * Nothing for adminAccess, for a claim named directly (resourceClaimName: it may be shared,
 * and its devices are held once whoever uses it) or for a template not known yet. The
 * templates' demand is computed once per template and per change of classes or slices;
 * kb_dra_demand_gen() changes when some template's does (it recomputes them first, as
 * kb_dra_pod_demand does), and kb_dra_take_recount() names the pods whose claims were seen
 * allocated or deallocated since it was last called.
 *
 * kb_dra_node_capacity adds to @out, per class that has a slot (a pod's demand or a queue named
 * it: a class nobody asks for takes none), the devices of node @node's slices (and of the
 * allNodes slices) that match the class, held or not; in nvidia.com/gpu 1000 per GPU: per
 * device of KB_RESOURCE_GPU_CLASS that consumes no counters and per counter set the devices of
 * the GPU classes consume from. kb_dra_capacity_gen() changes when a class, a slice or the set
 * of slots does.
 *
 * A class whose name finds no free slot (KB_RES_MAX) is not counted: its pods are checked by
 * kb_dra_fits alone.
 */
void kb_dra_pod_demand(KbDra *dra, const KbPod *pod, KbResources *out);
/*
 * What a pod's demand was computed from, so that a caller may keep it (the cache, per pod,
 * instead of recounting it on every update of the pod): kb_dra_pod_demand_stamped is
 * kb_dra_pod_demand that also fills @stamp; kb_dra_pod_demand_current says whether @pod's
 * demand is still what it was when @stamp was filled: FALSE once a template's demand, a class,
 * a slice or the set of resource slots changed, any claim was deleted, or a claim @pod names
 * was created or set since. It reads the claims the pod names now: the caller must drop what
 * it keeps when the pod's spec.resourceClaims or status.resourceClaimStatuses change.
 */
typedef struct {
    guint64 claims;
    guint demand_gen;
    guint fraction_gen;
    int slots;
} KbDraDemandStamp;
void kb_dra_pod_demand_stamped(KbDra *dra, const KbPod *pod, KbResources *out,
                               KbDraDemandStamp *stamp);
gboolean kb_dra_pod_demand_current(KbDra *dra, const KbPod *pod, const KbDraDemandStamp *stamp);
/* Append to @out the first request of @pod's template claims counted in @slot ("claim ns/x
 * request gpus: 2 devices of class gpu.nvidia.com"); FALSE (nothing appended) when none is. */
gboolean kb_dra_describe_demand(KbDra *dra, const KbPod *pod, int slot, GString *out);
void kb_dra_node_capacity(KbDra *dra, const char *node, KbResources *out);
guint kb_dra_demand_gen(KbDra *dra);
/* The pods ("ns/name", a set owned by the caller) whose claims were seen allocated or
 * deallocated since the last call, or NULL when none. Nothing is recorded before the first call
 * (the cache makes it when it creates its KbDra). */
GHashTable *kb_dra_take_recount(KbDra *dra);
guint kb_dra_capacity_gen(const KbDra *dra);

/*
 * A preemption plan (preempt and reclaim): with @evict TRUE, @victim is evicted in the plan: the
 * devices of each allocated claim it consumes become free for the plan once every consumer in
 * the claim's reservedFor is evicted in it; @evict FALSE undoes one such call (statement
 * discarded). kb_dra_plan_end() makes every device held again (the claims stay allocated until
 * the victims are gone and the resource-claim controller deallocates them).
 */
void kb_dra_plan_evict(KbDra *dra, const KbPod *victim, gboolean evict);
/*
 * In a preemption plan, the devices (counters, capacity) of every allocated claim none of whose
 * reservedFor pods @exists (namespace, name, @data) says is still there are free, as a victim's:
 * the pods are gone and the resource-claim controller is about to deallocate the claim, so a
 * preemptor waiting for them does not evict again meanwhile. Undone by kb_dra_plan_end().
 */
typedef gboolean (*KbDraPodExists)(const char *namespace_, const char *name, gpointer data);
void kb_dra_plan_orphans(KbDra *dra, KbDraPodExists exists, gpointer data);
void kb_dra_plan_end(KbDra *dra);

/*
 * GPUs for node scoring (the fgd plugin, scheduler/fragment.h). kb_dra_node_gpus: node @node's
 * GPUs in its slices' order (at most @max): a partitionable device's counter set is one GPU (its
 * MIG placements and the whole GPU consume it), any other device is one; @free receives each
 * one's milli-GPU free: 1000 less the mean share of its counters held (as packing measures it),
 * or of its capacity for a shared device; a plain device 0 when held, else 1000. Every device of
 * the node's slices counts as a GPU (kb-kubelet --dra publishes GPUs).
 *
 * kb_dra_pod_gpus: what @pod's claims would take on @node, as the allocator would choose now
 * (nothing held): *@gpus whole devices (*@milli 1000), or one fraction (*@gpus 1, *@milli below
 * 1000, a MIG device or a share, kb_dra_gpu_fraction) on the GPU of index *@gpu in
 * kb_dra_node_gpus' order. Claims already allocated or assumed take nothing new unless @held
 * (then what they hold counts: the shape of a pod already placed). A fraction beside whole
 * devices counts as one more whole GPU; *@partitionable (may be NULL) says whether that fraction
 * is a partitionable device (MIG) rather than a share. FALSE (zeros) when the pod has no claims
 * or they do not fit on @node.
 */
guint kb_dra_node_gpus(KbDra *dra, const char *node, guint *free, guint max);
/* TRUE when some node publishes devices allowing multiple allocations (consumable capacity;
 * @partitionable FALSE) or consuming counters (MIG; TRUE): only then can a claim take a fraction
 * of a GPU. O(devices of such nodes). */
gboolean kb_dra_any_shares(KbDra *dra, gboolean partitionable);
gboolean kb_dra_pod_gpus(KbDra *dra, const KbPod *pod, const char *node, gboolean held, guint *gpus,
                         guint *milli, gint *gpu, gboolean *partitionable);
