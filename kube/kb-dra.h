/*
 * Dynamic Resource Allocation (resource.k8s.io/v1): compact records for DeviceClass,
 * ResourceClaim, ResourceClaimTemplate and ResourceSlice, their json-c decoders, and the claim
 * status body the scheduler writes.
 *
 * The records are reference counted like those of kb-objects.h (kb_object_ref/unref). What the
 * scheduler's allocator needs is kept: classes' and requests' CEL selectors as text (the cache
 * compiles them once per watch event, kb-cel.h), requests (exactly / firstAvailable, count,
 * allocationMode), constraints' matchAttribute, a claim's allocation (results and the node its
 * nodeSelector names) and reservedFor, slices' devices with their attributes and capacity, fully
 * qualified (an attribute name without a domain belongs to the slice's driver).
 *
 * Limits are the API server's validation limits (resource/v1 types.go); crossing one fails with
 * KB_ERROR_LIMIT, a wrong type or value with KB_ERROR_DECODE, naming the object, field and value
 * ("resourceclaim default/c: spec.devices.requests[0].exactly.count: 0 is out of range").
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-cel.h"
#include "kube/kb-objects.h"

#define KB_DRA_MAX_REQUESTS       32    /* requests per claim, constraints, results */
#define KB_DRA_MAX_SELECTORS      32    /* selectors per class or request */
#define KB_DRA_MAX_SUBREQUESTS    8     /* firstAvailable alternatives */
#define KB_DRA_MAX_SLICE_DEVICES  128   /* devices per ResourceSlice */
#define KB_DRA_MAX_DEVICE_FIELDS  32    /* attributes + capacity of one device */
#define KB_DRA_MAX_RESERVED_FOR   256   /* consumers of one claim */
#define KB_DRA_MAX_EXPRESSION_LEN 10240 /* one CEL selector */
#define KB_DRA_MAX_COUNT          128   /* count of an ExactCount request */
#define KB_DRA_MAX_ATTRIBUTE_LEN  64    /* string and version attribute values */
#define KB_DRA_MAX_COUNTER_SETS   8     /* sharedCounters of a slice */
#define KB_DRA_MAX_COUNTERS       32    /* counters of one set, or one device consumes from one */
#define KB_DRA_MAX_CONSUMES       2     /* consumesCounters of one device */
#define KB_DRA_MAX_VALID_VALUES   10    /* requestPolicy.validValues */

/* The API group and the node field an allocation's nodeSelector names. */
#define KB_DRA_GROUP "resource.k8s.io"

/* One capacity.requests entry of a request, or one consumedCapacity entry of a result: the
 * capacity's name as written ("memory" is in the device's driver domain), in milli-units. */
typedef struct {
    const char *name; /* interned */
    gint64 milli;
} KbCapacityAmount;

/* One request of a claim, or one of its firstAvailable alternatives. */
typedef struct {
    char *name;               /* owned */
    const char *device_class; /* interned deviceClassName */
    char **selectors;         /* owned CEL expressions */
    guint n_selectors;
    gboolean all; /* allocationMode All (else ExactCount) */
    gint64 count; /* ExactCount: 1..KB_DRA_MAX_COUNT (default 1) */
    gboolean admin_access;
    KbCapacityAmount *capacity; /* owned capacity.requests, NULL when none */
    guint n_capacity;
} KbDeviceSubRequest;

typedef struct {
    KbDeviceSubRequest exactly; /* name is the request's name; unused with firstAvailable */
    KbDeviceSubRequest *first_available; /* owned, NULL for exactly */
    guint n_first_available;
} KbDeviceRequest;

/* constraints[]: every device of the named requests (all when none named) share the value of
 * match_attribute (fully qualified, "gpu.nvidia.com/nvlinkIsland"). */
typedef struct {
    char **requests;
    guint n_requests;
    char *match_attribute; /* owned; NULL: a constraint this allocator does not know, refused */
} KbDeviceConstraint;

typedef struct {
    KbDeviceRequest *requests;
    guint n_requests;
    KbDeviceConstraint *constraints;
    guint n_constraints;
} KbClaimSpec;

/* One status.allocation.devices.results[] entry. */
typedef struct {
    char *request;      /* owned: "gpus" or "gpus/a100" (firstAvailable) */
    const char *driver; /* interned */
    const char *pool;   /* interned */
    char *device;       /* owned */
    /* A share of a device that allows multiple allocations: what it takes of the device's
     * capacity (owned, NULL when none) and its shareID (owned lowercase UUID, NULL when not
     * shared). */
    KbCapacityAmount *consumed;
    guint n_consumed;
    char *share_id;
} KbDeviceResult;

/* One status.reservedFor[] entry. */
typedef struct {
    const char *resource; /* interned: "pods" */
    char *name;
    char *uid;
} KbClaimConsumer;

typedef struct {
    KbObjectMeta meta;
    KbClaimSpec spec;
    gboolean allocated; /* status.allocation present */
    KbDeviceResult *results;
    guint n_results;
    /* The node the allocation's nodeSelector names (matchFields metadata.name In [node], as
     * schedulers write it), interned; NULL when it names none (any node, or a form this
     * decoder does not read). */
    const char *node;
    KbClaimConsumer *reserved_for;
    guint n_reserved_for;
    /* The record whose spec this one shares (a reference; kb_resource_claim_after_status), NULL
     * when the spec is its own. A claim's spec is immutable: the same claim after a status write
     * has the same spec. */
    KbObjectMeta *spec_owner;
} KbResourceClaim;

typedef struct {
    KbObjectMeta meta;
    KbClaimSpec spec; /* spec.spec */
} KbResourceClaimTemplate;

typedef struct {
    KbObjectMeta meta; /* cluster-scoped */
    char **selectors;  /* owned CEL expressions */
    guint n_selectors;
} KbDeviceClass;

/* One counter: its name (interned) and value in milli-units. */
typedef struct {
    const char *name;
    gint64 milli;
} KbCounter;

/* A slice's sharedCounters[] entry, or a device's consumesCounters[] entry (name: the set it
 * consumes from, interned; counter sets belong to the pool, any slice of it may hold the set). */
typedef struct {
    const char *name;
    KbCounter *counters; /* owned */
    guint n_counters;
} KbCounterSet;

/* A capacity's requestPolicy (devices with allowMultipleAllocations): how much of it one
 * allocation takes (milli-units). */
typedef struct {
    gboolean has_default;
    gint64 default_milli;
    gint64 *valid_values; /* owned, ascending; NULL when none */
    guint n_valid_values;
    gboolean has_range;
    gint64 min, max, step; /* validRange; max and step 0 when not set */
} KbCapacityPolicy;

/* One device of a slice: its attributes and capacity fully qualified (strings owned by the
 * device: domain and name interned, string values owned). */
typedef struct {
    char *name;
    KbCelAttribute *attributes;
    guint n_attributes;
    KbCelCapacity *capacity;
    KbCapacityPolicy *policies; /* owned, per capacity (same index), NULL when none has one */
    guint n_capacity;
    /* A partitionable device (a MIG profile) consumes counters of its GPU's sets: it may be
     * allocated only while every counter stays within its set's value. */
    KbCounterSet *consumes; /* owned */
    guint n_consumes;
    /* allowMultipleAllocations: several claims may share the device, each taking part of its
     * capacity (KbDeviceResult.consumed). */
    gboolean multiple;
} KbDevice;

typedef struct {
    KbObjectMeta meta;  /* cluster-scoped */
    const char *driver; /* interned */
    const char *pool;   /* interned pool.name */
    gint64 pool_generation;
    const char *node; /* interned nodeName; NULL with allNodes or a nodeSelector */
    gboolean all_nodes;
    KbDevice *devices;
    guint n_devices;
    KbCounterSet *counter_sets; /* sharedCounters, owned */
    guint n_counter_sets;
} KbResourceSlice;

G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbResourceClaim, kb_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbResourceClaimTemplate, kb_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbDeviceClass, kb_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbResourceSlice, kb_object_unref)

/* Decoders (see kb-objects.h for the conventions). */
KbDeviceClass *kb_device_class_decode(json_object *obj, gboolean keep_raw, GError **error);
KbResourceClaim *kb_resource_claim_decode(json_object *obj, gboolean keep_raw, GError **error);
/*
 * The same claim record straight from JSON text (kb-dra-fast.c, over kb-json), for the claims
 * schedulers write; without keep_raw. A claim it does not read (firstAvailable, capacity, shares,
 * another node selector form, null or duplicate members, anything malformed or over a limit)
 * fails (KB_ERROR_DECODE, or KB_ERROR_LIMIT past the reader's nesting or string limits): decode
 * it with json-c and kb_resource_claim_decode() then, which gives the record or the error to
 * report. What it returns equals kb_resource_claim_decode()'s record (tests/test-dra-fast.c).
 * The list form is a KbPageDecodeFunc (kb-informer.h).
 */
KbResourceClaim *kb_resource_claim_decode_bytes(const char *json, gsize len, GError **error);
/* TRUE when @a and @b hold the same decoded claim (meta.raw and the reference count aside);
 * else FALSE, and with @why the first field that differs (newly allocated). */
gboolean kb_resource_claim_equal(const KbResourceClaim *a, const KbResourceClaim *b, char **why);
/* TRUE when two claims ask for the same devices (their decoded specs are equal). */
gboolean kb_claim_spec_equal(const KbClaimSpec *a, const KbClaimSpec *b);
gboolean kb_resource_claim_list_decode_bytes(const char *json, gsize len, GPtrArray *out,
                                             char **resource_version, char **continue_token,
                                             GError **error);
KbResourceClaimTemplate *kb_resource_claim_template_decode(json_object *obj, gboolean keep_raw,
                                                           GError **error);
KbResourceSlice *kb_resource_slice_decode(json_object *obj, gboolean keep_raw, GError **error);
/*
 * The same slice record straight from JSON text (kb-dra-fast.c), for the slices kb-kubelet --dra
 * (--mig) and NVIDIA's driver publish: devices with attributes, capacity and its requestPolicy,
 * consumesCounters, allowMultipleAllocations, and sharedCounters; without keep_raw. Anything it
 * does not read (null or duplicate members, devices before the driver, a NUL in a string,
 * anything malformed or over a limit) fails with KB_ERROR_DECODE or KB_ERROR_LIMIT: decode it
 * with json-c and kb_resource_slice_decode() then. What it returns equals
 * kb_resource_slice_decode()'s record (tests/test-dra-fast.c). The list form is a
 * KbPageDecodeFunc.
 */
KbResourceSlice *kb_resource_slice_decode_bytes(const char *json, gsize len, GError **error);
gboolean kb_resource_slice_list_decode_bytes(const char *json, gsize len, GPtrArray *out,
                                             char **resource_version, char **continue_token,
                                             GError **error);
/* As kb_resource_claim_equal, for slices. */
gboolean kb_resource_slice_equal(const KbResourceSlice *a, const KbResourceSlice *b, char **why);

/* Frees what a DRA record owns beyond its meta (kb_object_unref calls it). */
void kb_dra_record_clear(KbObjectMeta *meta);

/* TRUE when @claim is reserved for the pod of @uid. */
gboolean kb_resource_claim_reserved_for(const KbResourceClaim *claim, const char *uid);

/*
 * The status a scheduler writes to allocate @claim for a pod on @node: allocation (devices
 * results as given, nodeSelector matchFields metadata.name In [@node]) and reservedFor: the
 * claim's present consumers and the pod (@pod_name, @pod_uid). With @results NULL (an already
 * allocated claim) the allocation is not repeated. A new object {"metadata": {"resourceVersion"},
 * "status": {...}}: a merge patch for the claim's status subresource, that fails with a conflict
 * when the claim changed since the cache saw it (the resourceVersion is a precondition).
 */
/* Does @written (a capacity.requests or consumedCapacity key: "name" in the driver's domain, or
 * "domain/name") name capacity @domain/@name of a device of @driver? */
gboolean kb_capacity_name_is(const char *written, const char *driver, const char *domain,
                             const char *name);

/*
 * The claim record kb_resource_claim_status_text() with the same arguments makes of @claim once
 * the server has taken it: @claim's metadata (resourceVersion NULL: the caller sets the version
 * the write's answer gives) and spec (shared, not copied), the allocation written (or @claim's
 * when @results is NULL) and reservedFor as the body lists it. What the watch then shows, decoded,
 * equals it (kb_resource_claim_equal; tests/test-informer.c compares them). A new reference.
 */
KbResourceClaim *kb_resource_claim_after_status(const KbResourceClaim *claim,
                                                const KbDeviceResult *results, guint n_results,
                                                const char *node, const KbClaimConsumer *pods,
                                                guint n_pods);

json_object *kb_resource_claim_status_new(const KbResourceClaim *claim,
                                          const KbDeviceResult *results, guint n_results,
                                          const char *node, const char *pod_name,
                                          const char *pod_uid);

/*
 * The same body as JSON text (newly allocated), reserving the claim for @pods: the first as
 * kb_resource_claim_status_new()'s pod, each other one unless the claim already is reserved for
 * it. What the binder sends: built as text, the json-c tree and its serialisation cost
 * kube-batchd as much as the rest of a claim write (bench-e2e --dra).
 */
char *kb_resource_claim_status_text(const KbResourceClaim *claim, const KbDeviceResult *results,
                                    guint n_results, const char *node, const KbClaimConsumer *pods,
                                    guint n_pods);
