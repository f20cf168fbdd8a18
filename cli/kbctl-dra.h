/*
 * kbctl's view of Dynamic Resource Allocation (resource.k8s.io/v1): which device of which
 * ResourceSlice serves which claim and which pod, read from the ResourceSlices and ResourceClaims
 * as served (raw JSON: kbctl shows what is written, including what kube-batchd's allocator does
 * not hand out itself, such as MIG devices written by another allocator or by hand).
 *
 * - A device is "driver/pool/device"; its node is its slice's nodeName (devices of slices for
 *   all nodes or a node selector have none and are not shown per node).
 * - An allocated claim's results name the devices it holds; the claim's reservedFor names the
 *   pods it serves. A device several claims hold (allowMultipleAllocations) has one share per
 *   result, each with its consumedCapacity and shareID; the capacity left is the device's
 *   capacity less every share's consumedCapacity.
 * - A partitionable device (consumesCounters, a MIG placement) belongs to the counter set it
 *   consumes from (sharedCounters of a slice of the same driver and pool); the set's counters
 *   consumed are the sum over its allocated devices, and a free device of the set "fits" when
 *   each counter it would consume is still left.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-client.h"
#include "kube/kb-objects.h"

/* One allocation result naming a device. Strings borrowed from the claims the view owns. */
typedef struct {
    char *claim;           /* "ns/name", owned */
    const char *request;   /* the result's request ("gpus", "gpus/a100") */
    json_object *consumed; /* consumedCapacity (name -> quantity), borrowed; NULL: none */
    const char *share_id;  /* NULL: none */
    GPtrArray *pods;       /* char* "ns/name" of reservedFor's pods, owned */
} KbctlDraShare;

typedef struct KbctlDraSet KbctlDraSet;

typedef struct {
    char *key;          /* "driver/pool/device", owned */
    const char *node;   /* the slice's nodeName, NULL when it has none */
    const char *driver; /* borrowed from the slice */
    const char *pool;
    const char *name;
    const char *product;   /* attribute productName, NULL when absent */
    char *island;          /* attribute nvlinkIsland (any domain) as text, NULL when absent */
    json_object *raw;      /* the device as served, borrowed */
    gboolean multiple;     /* allowMultipleAllocations */
    KbctlDraSet *set;      /* the counter set it consumes from, NULL when none or unknown */
    json_object *consumes; /* that consumption's counters (name -> {value}), borrowed */
    GPtrArray *shares;     /* KbctlDraShare*, owned; empty: free */
} KbctlDraDevice;

struct KbctlDraSet {
    char *key;        /* "driver/pool/set", owned */
    const char *node; /* the node of the slice that declares it */
    const char *name;
    json_object *counters; /* sharedCounters[].counters (name -> {value}), borrowed */
    GPtrArray *devices;    /* KbctlDraDevice* consuming from it, borrowed */
};

typedef struct {
    json_object *slices; /* owned: the ResourceSlices' items */
    json_object *claims; /* owned: the ResourceClaims' items */
    GPtrArray *devices;  /* KbctlDraDevice*, owned, by node, driver, pool, natural name order */
    GPtrArray *sets;     /* KbctlDraSet*, owned, same order */
    GHashTable *by_key;  /* device key -> KbctlDraDevice*, borrowed */
    GHashTable *by_pod;  /* "ns/pod" -> GPtrArray of KbctlDraDevice* (borrowed) it is served by */
    GPtrArray *unknown;  /* char*: "claim ns/c: device d not in any ResourceSlice", owned */
} KbctlDra;

/*
 * List ResourceSlices (cluster) and ResourceClaims (@namespace_, NULL: all) and join them. A
 * server that does not serve resource.k8s.io/v1 (404) gives an empty view, and so does a list
 * the user may not make (403; a warning on standard error says so). NULL with the error
 * of a failed list. Owned by the caller.
 */
KbctlDra *kbctl_dra_load(KbClient *client, const char *namespace_, GError **error);
/* The same join over given items (arrays of ResourceSlices and ResourceClaims; references taken),
 * for tests. */
KbctlDra *kbctl_dra_new(json_object *slices, json_object *claims);
void kbctl_dra_free(KbctlDra *dra);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbctlDra, kbctl_dra_free)

/* Does the view show any device on @node. */
gboolean kbctl_dra_node_has_devices(const KbctlDra *dra, const char *node);
/* The devices serving pod @namespace_/@name (KbctlDraDevice*, borrowed), NULL when none. */
GPtrArray *kbctl_dra_pod_devices(const KbctlDra *dra, const char *namespace_, const char *name);
/* "gpu.nvidia.com/a100-0/gpu-0,..." for a pod, NULL when it has none. Newly allocated. */
char *kbctl_dra_pod_devices_string(const KbctlDra *dra, const char *namespace_, const char *name);

/*
 * A counter set's figures: per counter (name -> {"total", "consumed", "left"} as quantities) in a
 * new object; *@fitting counts the set's free devices whose consumption fits what is left.
 */
json_object *kbctl_dra_set_counters(const KbctlDraSet *set, guint *fitting);
/* A shared device's capacity left (name -> quantity) after its shares. New object. */
json_object *kbctl_dra_capacity_left(const KbctlDraDevice *d);

/* JSON of @node's devices for `kbctl top node -o json`: {"devices": [...], "counterSets": [...]}
 * members added to @o. */
void kbctl_dra_node_json(const KbctlDra *dra, const char *node, json_object *o);
