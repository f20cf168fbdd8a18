/*
 * Compact internal records for the Kubernetes objects kube-batchd and tf-operator read, and their
 * json-c decoders/encoders.
 *
 * Ownership: every record is reference counted through its KbObjectMeta (kb_object_ref/unref work
 * on any record, since each starts with a KbObjectMeta). Strings of low cardinality that repeat
 * across many objects (namespaces, node names, scheduler names, label keys, queue names, priority
 * class names, taint and toleration keys and values, node selector keys and values, phases) are
 * interned with g_intern_string() and typed `const char *`. Interned strings are never freed, so
 * anything that grows with the number of jobs or pods ever seen (names, uids, resourceVersions,
 * label values, group names) is owned by its record and typed `char *` (label values: owned by
 * the labels table). Compare strings with strcmp()/g_strcmp0(), never by pointer, except where a
 * field is documented as interned and both sides are interned.
 *
 * Decoders accept the json_object of one item (as found in a List's items[] or a watch event's
 * object) and return a new record or NULL with KB_ERROR_DECODE naming the object, the field and
 * the value ("pod default/p1: spec.containers[0].resources.requests[\"nvidia.com/gpu\"]: invalid
 * quantity \"12Qi\""). Limits: see KB_MAX_* below; crossing one fails with KB_ERROR_LIMIT.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-resource.h"

/* Decoder limits (each has a test that crosses it). */
#define KB_MAX_NAME_LEN 253
#define KB_USAGE_MAX_RESOURCES 64 /* entries of a Queue's status.usage.resourceSeconds */
/* A Queue's status.runtimeHistory: size buckets and runtimes kept per bucket (history.h). */
#define KB_QUEUE_HISTORY_BUCKETS     6
#define KB_QUEUE_HISTORY_KEEP        32
#define KB_QUEUE_HISTORY_MAX_SECONDS ((gint64)1 << 40) /* a runtime past this is refused */
#define KB_MAX_LABELS 256          /* labels or annotations per object */
#define KB_MAX_LABEL_VALUE_LEN 65536 /* annotation values can be large; labels are 63 */
#define KB_MAX_CONTAINERS 64
#define KB_MAX_LIST_ITEMS 64       /* tolerations, taints, owner refs, terms, expressions */
/* Added: a label key is an optional DNS prefix (253) and "/" and a name (63). Also the longest
 * annotation key and resource name accepted. */
#define KB_MAX_LABEL_KEY_LEN 317

typedef enum {
    KB_KIND_POD,
    KB_KIND_NODE,
    KB_KIND_NAMESPACE,
    KB_KIND_PRIORITY_CLASS,
    KB_KIND_LEASE,
    KB_KIND_EVENT,
    KB_KIND_POD_GROUP,
    KB_KIND_QUEUE,
    KB_KIND_TFJOB,
    KB_KIND_PVC,
    KB_KIND_DEVICE_CLASS, /* resource.k8s.io/v1, kube/kb-dra.h */
    KB_KIND_RESOURCE_CLAIM,
    KB_KIND_RESOURCE_CLAIM_TEMPLATE,
    KB_KIND_RESOURCE_SLICE,
    KB_KIND_OTHER,
} KbKind;

typedef struct {
    char *api_version;
    char *kind;
    char *name;
    char *uid;
    gboolean controller;
} KbOwnerRef;

typedef struct {
    KbKind kind;
    gint ref_count;
    char *name;
    const char *namespace_; /* interned; NULL for cluster-scoped objects */
    char *uid;
    char *resource_version;
    gint64 generation;
    gint64 creation_timestamp; /* unix seconds, 0 when absent */
    gint64 deletion_timestamp; /* unix seconds, 0 when not being deleted */
    GHashTable *labels;        /* const char* (interned) -> char* (owned by the table); never NULL */
    GHashTable *annotations;   /* char* -> char*, owned; never NULL */
    KbOwnerRef *owners;
    guint n_owners;
    json_object *raw; /* the whole object when the decoder was asked to keep it, else NULL */
} KbObjectMeta;

typedef enum {
    KB_POD_PENDING,
    KB_POD_RUNNING,
    KB_POD_SUCCEEDED,
    KB_POD_FAILED,
    KB_POD_UNKNOWN,
} KbPodPhase;

typedef enum {
    KB_SELECTOR_IN,
    KB_SELECTOR_NOT_IN,
    KB_SELECTOR_EXISTS,
    KB_SELECTOR_DOES_NOT_EXIST,
    KB_SELECTOR_GT,
    KB_SELECTOR_LT,
} KbSelectorOp;

typedef struct {
    const char *key;     /* interned */
    KbSelectorOp op;
    const char **values; /* interned, n_values of them */
    guint n_values;
    /* TRUE for a matchFields entry (key KB_NODE_FIELD_NAME, operator In or NotIn, one value:
     * the decoders refuse anything else), matched against the node's name, not its labels;
     * FALSE for matchExpressions. */
    gboolean match_field;
} KbSelectorRequirement;

/* The one node field a matchFields requirement may name (as in kube-scheduler). */
#define KB_NODE_FIELD_NAME "metadata.name"

/* One nodeSelectorTerm: its matchExpressions are ANDed (matchFields on metadata.name too). */
typedef struct {
    KbSelectorRequirement *exprs;
    guint n_exprs;
} KbNodeSelectorTerm;

typedef enum {
    KB_EFFECT_NO_SCHEDULE,
    KB_EFFECT_PREFER_NO_SCHEDULE,
    KB_EFFECT_NO_EXECUTE,
    KB_EFFECT_ALL, /* a toleration with an empty effect matches every effect */
} KbTaintEffect;

typedef struct {
    const char *key; /* interned */
    const char *value;
    KbTaintEffect effect;
} KbTaint;

typedef struct {
    const char *key;       /* interned; NULL (empty) with Exists tolerates every taint */
    gboolean op_exists;    /* operator Exists, else Equal */
    const char *value;     /* interned, may be NULL */
    KbTaintEffect effect;  /* KB_EFFECT_ALL when empty */
} KbToleration;

typedef struct {
    char *name;
    gboolean running;
    gboolean waiting;
    gboolean terminated;
    gint exit_code;   /* valid when terminated */
    char *reason;     /* terminated or waiting reason, may be NULL */
    gint restart_count;
    /* What the node holds for the container (a resize in place): per resource the larger of
     * allocatedResources and resources.requests; held_mask: the slots either map names. */
    KbResources held;
    guint32 held_mask;
} KbContainerStatus;

/* A volume of a pod backed by a PersistentVolumeClaim: spec.volumes[].persistentVolumeClaim
 * (claim = its claimName) or a generic ephemeral volume (claim NULL: it is named
 * "<pod name>-<volume name>", created by the ephemeral-volume controller). */
typedef struct {
    const char *volume; /* interned */
    const char *claim;  /* interned; NULL for an ephemeral volume */
} KbPodClaim;

/*
 * DRA: one spec.resourceClaims[] entry (name, and exactly one of resourceClaimName and
 * resourceClaimTemplateName), or one status.resourceClaimStatuses[] entry (name, and the claim
 * the resource-claim controller made from the template; template_name NULL). Limit:
 * KB_MAX_POD_RESOURCE_CLAIMS entries each.
 */
#define KB_MAX_POD_RESOURCE_CLAIMS 32
typedef struct {
    const char *name;    /* interned: the entry's name, what containers name */
    char *claim_name;    /* owned, NULL when absent */
    char *template_name; /* owned, NULL when absent */
} KbPodResourceClaim;

typedef struct {
    KbObjectMeta meta;
    const char *scheduler_name;      /* interned; "default-scheduler" when empty */
    const char *node_name;           /* interned; NULL when unbound */
    const char *priority_class_name; /* interned, may be NULL */
    gint32 priority;                 /* spec.priority, 0 when absent */
    gboolean has_priority;
    /* spec.activeDeadlineSeconds: the kubelet ends the pod this long after it started (an upper
     * bound of its runtime, reserve.h); 0 when absent or not positive. */
    gint64 active_deadline_seconds;
    /*
     * Effective requests, as the scheduler accounts them: max(sum of containers, max of init
     * containers) + overhead, where a container's request defaults to its limit; pods = 1.
     * Restartable init containers (sidecars, restartPolicy: Always) count as kube-scheduler
     * counts them: added to the sum, and to every later init container's peak.
     */
    KbResources requests;
    GHashTable *node_selector;    /* interned -> interned; never NULL */
    KbNodeSelectorTerm *affinity_terms; /* required node affinity terms, ORed; may be 0 */
    guint n_affinity_terms;
    KbToleration *tolerations;
    guint n_tolerations;
    KbPodPhase phase;
    KbContainerStatus *container_statuses;
    guint n_container_statuses;
    /* The resize in place cannot be granted (status.resize Infeasible, or the condition
     * PodResizePending with reason Infeasible): the node holds what the statuses say. */
    gboolean resize_infeasible;
    /* spec.schedulingGroup.podGroupName (Kubernetes 1.35+): a native PodGroup; owned, NULL when
     * absent or empty. */
    char *scheduling_group;
    /* Gang: spec.schedulingGroup.podGroupName, else annotation scheduling.k8s.io/group-name, else
     * label scheduling.x-k8s.io/pod-group. */
    char *group_name; /* owned, NULL when the pod has no group */
    /* Volumes backed by claims (see KbPodClaim), in spec order. */
    KbPodClaim *claims;
    guint n_claims;
    /* DRA: spec.resourceClaims and status.resourceClaimStatuses, in document order. */
    KbPodResourceClaim *resource_claims;
    guint n_resource_claims;
    KbPodResourceClaim *claim_statuses;
    guint n_claim_statuses;
    /* spec.schedulingGates (1.27+): how many, and the first one's name (interned). A pod with a
     * gate must not be bound. */
    guint n_scheduling_gates;
    const char *scheduling_gate;
    /* status.conditions has KB_GANG_EVICTED_CONDITION True: kube-batchd evicted the pod with the
     * rest of its gang, which had lost a member. */
    gboolean gang_evicted;
} KbPod;

typedef struct {
    KbObjectMeta meta;
    KbResources allocatable;
    KbResources capacity;
    KbTaint *taints;
    guint n_taints;
    gboolean unschedulable;
    gboolean ready; /* condition Ready=True */
} KbNode;

typedef enum {
    KB_PODGROUP_KUBE_BATCH, /* scheduling.incubator.k8s.io/v1alpha1 */
    KB_PODGROUP_VOLCANO,    /* scheduling.volcano.sh/v1beta1 */
    KB_PODGROUP_X_K8S,      /* scheduling.x-k8s.io/v1alpha1 */
    KB_PODGROUP_NATIVE,     /* scheduling.k8s.io/v1beta1 (Kubernetes' own, 1.37 beta) */
} KbPodGroupDialect;

/* The label (else annotation) that names a native PodGroup's queue: the native API has none. */
#define KB_QUEUE_LABEL "kube-batchd.io/queue"
/* A native PodGroup's condition (scheduling.k8s.io/v1beta1). */
#define KB_POD_GROUP_INITIALLY_SCHEDULED "PodGroupInitiallyScheduled"
/* A CompositePodGroup's own condition of that meaning (scheduling.k8s.io/v1alpha3). */
#define KB_COMPOSITE_INITIALLY_SCHEDULED "CompositePodGroupInitiallyScheduled"
/* The condition (pods' and native PodGroups') set before the scheduler evicts them, its reason. */
#define KB_DISRUPTION_TARGET       "DisruptionTarget"
#define KB_PREEMPTION_BY_SCHEDULER "PreemptionByScheduler"
/* A gang below its minimum (scheduler/stale.h): the PodGroup condition type, the eviction reason
 * and, on each pod evicted for it, a condition of its own (the API server rewrites
 * DisruptionTarget's reason to EvictionByEvictionAPI): tf-operator counts such a pod as a
 * retryable failure of the job. */
#define KB_GANG_INCOMPLETE        "GangIncomplete"
#define KB_GANG_EVICTED_CONDITION "kube-batchd.io/GangEvicted"
/* A running job's Scheduled message ("8/8 tasks placed") goes on with "; " and this when it runs
 * on GPUs borrowed past its queue's long-job limit (reclaim's borrowedLongJobsOnly): `kbctl why`
 * tells it. */
#define KB_BORROWED_NOTE "on GPUs borrowed past queue"

/* The apiVersion of PodGroups of @dialect (static string); Volcano's for an unknown value. */
const char *kb_pod_group_api_version(KbPodGroupDialect dialect);

/*
 * Sub-gangs (Volcano's spec.subGroupPolicy): the pods a policy selects fall into sub-groups, one
 * per value tuple of its matchLabelKeys; a sub-group counts only when subGroupSize of its pods
 * (all of them when unset) are placed together, inside one domain of the node label
 * topology_key when set; the job starts only with min_groups of them (and minMember in all).
 */
#define KB_MAX_SUB_GROUP_POLICIES 16
#define KB_MAX_MATCH_LABEL_KEYS   8
typedef struct {
    char *name;               /* owned */
    GHashTable *match_labels; /* labelSelector.matchLabels (interned -> owned); NULL: all pods */
    const char *keys[KB_MAX_MATCH_LABEL_KEYS]; /* interned matchLabelKeys */
    guint n_keys;
    gint32 size;              /* subGroupSize; 0: all the sub-group's pods */
    gint32 min_groups;        /* minSubGroups */
    const char *topology_key; /* interned networkTopology.highestTierName (mode hard), or NULL */
} KbSubGroupPolicy;

typedef struct {
    KbObjectMeta meta;
    KbPodGroupDialect dialect;
    gint32 min_member;               /* >= 1 after decoding; 1 when absent */
    const char *queue;               /* interned, NULL when absent (use the default queue) */
    const char *priority_class_name; /* interned, may be NULL */
    KbResources min_resources;       /* zero when absent */
    gint32 schedule_timeout_seconds; /* 0 when absent */
    const char *phase;               /* interned status.phase, may be NULL */
    /* Native PodGroups (KB_PODGROUP_NATIVE) only; zero/NULL for the CRD dialects. min_member is
     * schedulingPolicy.gang.minCount (1 for basic: each pod alone), queue the label or
     * annotation KB_QUEUE_LABEL. */
    gint32 priority; /* spec.priority when has_priority */
    gboolean has_priority;
    gboolean preempt_never;   /* spec.preemptionPolicy: Never */
    gboolean disruption_all;  /* spec.disruptionMode.all */
    const char *topology_key; /* interned schedulingConstraints.topology[0].key, may be NULL */
    char *workload_name;      /* owned spec.workloadRef.workloadName, may be NULL */
    char *workload_template;  /* owned spec.workloadRef.templateName, may be NULL */
    /* status.conditions[type=PodGroupInitiallyScheduled]: its status (interned "True"/"False",
     * NULL when absent), message and lastTransitionTime (owned, may be NULL). */
    const char *scheduled_status;
    char *scheduled_message;
    char *scheduled_since;
    /* status.conditions[type=GangIncomplete] (KB_GANG_INCOMPLETE, kube-batchd's own on a native
     * group, see scheduler/stale.h): the same three, NULL when absent. */
    const char *incomplete_status;
    char *incomplete_message;
    char *incomplete_since;
    KbSubGroupPolicy *sub_groups; /* owned array, NULL when none (Volcano only) */
    guint n_sub_groups;
    /* scheduling.k8s.io/v1alpha3 (1.37 alpha), where PodGroups nest under a CompositePodGroup:
     * read from that version (dialect KB_PODGROUP_NATIVE all the same). */
    gboolean v1alpha3;
    /* A CompositePodGroup (kb_composite_pod_group_decode), not a PodGroup: its children are the
     * PodGroups (and composites) naming it as their parent. min_member is 1; min_groups is
     * schedulingPolicy.gang.minGroupCount, 0 for basic (each child on its own). */
    gboolean composite;
    gint32 min_groups;
    /* spec.parentCompositePodGroupName (v1alpha3 only); owned, NULL when absent or empty. */
    char *parent;
} KbPodGroup;

/* Frees @n policies of @policies (may be NULL). */
void kb_sub_groups_free(KbSubGroupPolicy *policies, guint n);

/*
 * The runtimes of a queue's recently finished jobs per size bucket, as kube-batchd keeps them in
 * the Queue's status.runtimeHistory (scheduler/history.h): bucket b holds n[b] runtimes in
 * seconds, oldest first; time is when they last changed (unix seconds).
 */
typedef struct {
    gint64 time;
    guint8 n[KB_QUEUE_HISTORY_BUCKETS];
    gint64 runtime[KB_QUEUE_HISTORY_BUCKETS][KB_QUEUE_HISTORY_KEEP];
} KbQueueHistory;

/*
 * Where a Queue's CRD prunes status fields it does not declare (Volcano's own Queue CRD declares
 * only Volcano's), kube-batchd keeps its own status members in these annotations instead, as the
 * same JSON text. The decoder reads usage and runtimeHistory from both places and takes the newer
 * `time`; resources (deserved, allocated, pending per resource) and conditions (`Valid`) are for
 * people and kbctl, which reads each from its annotation when the status lacks it.
 */
#define KB_QUEUE_USAGE_ANNOTATION      "kube-batchd.io/usage"
#define KB_QUEUE_HISTORY_ANNOTATION    "kube-batchd.io/runtime-history"
#define KB_QUEUE_RESOURCES_ANNOTATION  "kube-batchd.io/resources"
#define KB_QUEUE_CONDITIONS_ANNOTATION "kube-batchd.io/conditions"

/* A Queue status member kube-batchd writes, and the annotation that holds it where pruned. */
typedef struct {
    const char *member;
    const char *annotation;
} KbQueueKeptMember;

#define KB_QUEUE_N_KEPT_MEMBERS 4
extern const KbQueueKeptMember kb_queue_kept_members[KB_QUEUE_N_KEPT_MEMBERS];

/* The names of the buckets in status.runtimeHistory.runtimeSeconds, by index: "0" (no GPU), "1",
 * "2-4", "5-8", "9-16", "17+" GPUs. */
extern const char *const kb_queue_history_buckets[KB_QUEUE_HISTORY_BUCKETS];

typedef struct {
    KbObjectMeta meta; /* cluster-scoped */
    gint32 weight;     /* >= 1; 1 when absent */
    KbResources capability; /* KB_RESOURCE_UNLIMITED where not given */
    KbResources guarantee;  /* zero where not given */
    gboolean reclaimable;   /* default TRUE */
    const char *parent;     /* interned, NULL for top-level */
    /* Volcano's capacity form (spec.deserved): a fixed deserved share per resource, -1 where
     * not given (the weight split decides there). */
    KbResources deserved;
    gboolean open;          /* state Open (default) vs Closed/Closing */
    /* status.usage, written by kube-batchd (scheduler/usage.h): each resource's decayed usage in
     * slot units times seconds (cpu in milli-core-seconds) at usage_time (unix seconds); 0 and
     * usage_time 0 when absent. */
    double usage[KB_RES_MAX];
    gint64 usage_time;
    /* status.runtimeHistory, written by kube-batchd (scheduler/history.h); owned, NULL when
     * absent. */
    KbQueueHistory *history;
} KbQueue;

typedef struct {
    KbObjectMeta meta;
    gint32 value;
    gboolean global_default;
    gboolean preempt_never; /* preemptionPolicy: Never */
} KbPriorityClass;

/* A PersistentVolumeClaim: what the scheduler needs to know whether a pod using it may run. */
typedef struct {
    KbObjectMeta meta;
    const char *phase;       /* interned status.phase: "Pending", "Bound", "Lost"; NULL if unset */
    const char *volume_name; /* interned spec.volumeName, NULL when unbound */
} KbPvc;

typedef struct {
    KbObjectMeta meta;
    char *holder_identity;
    gint32 lease_duration_seconds;
    gint64 acquire_time_us; /* unix microseconds, 0 when absent */
    gint64 renew_time_us;
    gint32 lease_transitions;
} KbLease;

/* Reference counting on any record above (they all start with KbObjectMeta). */
gpointer kb_object_ref(gpointer obj);
void kb_object_unref(gpointer obj);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbPod, kb_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbNode, kb_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbPodGroup, kb_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbQueue, kb_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbPriorityClass, kb_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbLease, kb_object_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbPvc, kb_object_unref)

/*
 * TRUE when @a and @b hold the same decoded fields (meta.raw and the reference count aside):
 * strings compared by content, tables entry by entry. Otherwise FALSE, and with @why the first
 * field that differs ("spec.tolerations[1].value: \"a\" != \"b\""; newly allocated).
 */
gboolean kb_pod_equal(const KbPod *a, const KbPod *b, char **why);
/* The same for the metadata alone (kind included; kb_resource_claim_equal uses it). */
gboolean kb_meta_equal(const KbObjectMeta *a, const KbObjectMeta *b, char **why);
/* The field comparisons of the *_equal functions (kept equal by the decoders' tests): FALSE with
 * *@why (when not NULL) saying what differs, newly allocated. */
gboolean kb_eq_differ(char **why, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
gboolean kb_eq_str(const char *field, const char *a, const char *b, char **why);
gboolean kb_eq_int(const char *field, gint64 a, gint64 b, char **why);

/*
 * The name of the ResourceClaim behind @pod's resourceClaims[@i]: its resourceClaimName, else
 * the claim status.resourceClaimStatuses names for the entry (a template's claim), else NULL
 * (the claim is not created yet). Borrowed from @pod.
 */
const char *kb_pod_resource_claim_name(const KbPod *pod, guint i);

/* "ns/name" or "name" for cluster-scoped objects; newly allocated. */
char *kb_object_key(const KbObjectMeta *meta);

/*
 * Decoders. @keep_raw stores a reference to @obj in meta.raw (controllers that write objects
 * back keep it; the scheduler does not, to save memory).
 */
KbPod *kb_pod_decode(json_object *obj, gboolean keep_raw, GError **error);
KbNode *kb_node_decode(json_object *obj, gboolean keep_raw, GError **error);
KbPodGroup *kb_pod_group_decode(json_object *obj, gboolean keep_raw, GError **error);
/* A PodGroup listed or watched from scheduling.k8s.io/v1beta1: the items of a built-in type's
 * list carry no apiVersion, so none is needed (another one is an error). */
KbPodGroup *kb_pod_group_decode_native(json_object *obj, gboolean keep_raw, GError **error);
/* The same from scheduling.k8s.io/v1alpha3 (v1alpha3 set; parentCompositePodGroupName read). */
KbPodGroup *kb_pod_group_decode_v1alpha3(json_object *obj, gboolean keep_raw, GError **error);
/* A CompositePodGroup scheduling.k8s.io/v1alpha3 (apiVersion absent or that one) as a record
 * with composite set: errors name "compositepodgroup ns/name". */
KbPodGroup *kb_composite_pod_group_decode(json_object *obj, gboolean keep_raw, GError **error);
/* The apiVersion and kind of @pg's own object, for events: a CompositePodGroup's, a v1alpha3
 * PodGroup's, else those of its dialect. Static strings. */
const char *kb_pod_group_object_api_version(const KbPodGroup *pg);
const char *kb_pod_group_kind(const KbPodGroup *pg);
KbQueue *kb_queue_decode(json_object *obj, gboolean keep_raw, GError **error);
KbPriorityClass *kb_priority_class_decode(json_object *obj, gboolean keep_raw, GError **error);
KbLease *kb_lease_decode(json_object *obj, gboolean keep_raw, GError **error);
KbPvc *kb_pvc_decode(json_object *obj, gboolean keep_raw, GError **error);
/*
 * The same pod record, decoded straight from JSON text (kb-pod-fast.c, over kb-json): about 20
 * times faster than json-c + kb_pod_decode() on API server pods, same fields, same error codes
 * and messages. Stricter than json-c (see kb-json.h): invalid UTF-8, bad escapes, "\u0000",
 * trailing garbage and duplicate members among those the decoder reads are refused. meta.raw is
 * always NULL. When an object has several errors, the two decoders may report different ones.
 * A new extended resource takes its slot (kb_resource_slot) in document order, where
 * kb_pod_decode() reads requests before limits: the first pods of a process may number slots
 * differently, never name them differently.
 */
KbPod *kb_pod_decode_bytes(const char *json, gsize len, GError **error);
/*
 * A PodList page (a list response body): its items appended to @out_pods (new references; the
 * array should free with kb_object_unref), and metadata.resourceVersion / metadata.continue in
 * *@resource_version / *@continue_token (newly allocated, NULL when absent; either pointer may be
 * NULL). Fails on the first item that does not decode ("items[3]: pod default/p: ..."), and then
 * appends nothing and sets nothing.
 */
gboolean kb_pod_list_decode_bytes(const char *json, gsize len, GPtrArray *out_pods,
                                  char **resource_version, char **continue_token, GError **error);
/* Any object: metadata only (namespaces, services, events, ...). meta.kind is
 * KB_KIND_NAMESPACE or KB_KIND_EVENT from the object's "kind", else KB_KIND_OTHER. */
KbObjectMeta *kb_meta_object_decode(json_object *obj, gboolean keep_raw, GError **error);

/* Decode "metadata" of @obj into @meta (used by the decoders above and by kb-tfjob). */
gboolean kb_meta_decode(json_object *obj, KbKind kind, gboolean keep_raw, KbObjectMeta *meta,
                        GError **error);
void kb_meta_clear(KbObjectMeta *meta);

/*
 * Parse a map of quantities ({"cpu": "500m", "nvidia.com/gpu": 2}) into @out (added to it).
 * @what names the field in errors. Numbers and strings are both accepted, as the API server does
 * (surrounding white space too). Negative quantities and more than KB_MAX_LABELS entries are
 * errors; a zero quantity of a resource without a slot is skipped without taking one (nodes list
 * hugepages-* at 0); a non-zero one when every slot is taken fails with KB_ERROR_LIMIT.
 */
gboolean kb_resources_decode(json_object *map, const char *what, KbResources *out, GError **error);
/* Added: the same, but each listed resource's slot is assigned rather than added to, zeros
 * included (a queue capability {"cpu": 0} means no cpu, not unlimited). */
gboolean kb_resources_decode_assign(json_object *map, const char *what, KbResources *out,
                                    GError **error);
/* The inverse: a new JSON map of the non-zero, non-unlimited slots in canonical form. */
json_object *kb_resources_encode(const KbResources *r);

/* The status patch {"status": {"conditions": [@condition]}}: a new object that takes the
 * condition's reference. As a strategic merge patch it sets that one condition, by type. */
json_object *kb_conditions_patch_new(json_object *condition);

/* Encoders for the subresource bodies the scheduler posts. New references. */
json_object *kb_binding_new(const char *namespace_, const char *pod, const char *pod_uid,
                            const char *node);
/* policy/v1 when @v1 is TRUE, else policy/v1beta1. */
json_object *kb_eviction_new(const char *namespace_, const char *pod, gboolean v1);

/* RFC 3339 timestamps as the API server writes them ("2026-11-22T05:05:48Z"). */
gboolean kb_time_parse(const char *s, gint64 *unix_seconds);
char *kb_time_format(gint64 unix_seconds);
/* MicroTime ("2026-11-22T05:05:48.123456Z") as used by Lease and Event. */
gboolean kb_micro_time_parse(const char *s, gint64 *unix_us);
char *kb_micro_time_format(gint64 unix_us);

const char *kb_pod_phase_to_string(KbPodPhase phase);
/* Terminal: Succeeded or Failed; such pods no longer hold node resources. */
gboolean kb_pod_is_terminated(const KbPod *pod);
