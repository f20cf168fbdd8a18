/*
 * kube-scheduler's extender protocol (k8s.io/kube-scheduler/extender/v1) as C structs: request
 * bodies in, answer bodies out. No decisions here (scheduler/extender.c makes them).
 *
 * The Go types carry no JSON tags, so kube-scheduler writes Go's field names (`Pod`, `Nodes`,
 * `NodeNames`, `PodName`, `PodNamespace`, `PodUID`, `Node`, `NodeNameToVictims`,
 * `NodeNameToMetaVictims`, `NumPDBViolations`, `UID`) and decodes answers case-insensitively. The
 * decoders here match keys case-insensitively too (as Go's encoding/json does) and ignore unknown
 * keys; the encoders write the Go names exactly (`NodeNames`, `FailedNodes`,
 * `FailedAndUnresolvableNodes`, `Error`, `Host`, `Score`, `NodeNameToMetaVictims`).
 *
 *   filter, prioritize  ExtenderArgs {Pod, Nodes (a NodeList; nodeCacheCapable false),
 *                       NodeNames (nodeCacheCapable true)}
 *   bind                ExtenderBindingArgs {PodName, PodNamespace, PodUID, Node}
 *   preempt             ExtenderPreemptionArgs {Pod, NodeNameToVictims (full pods),
 *                       NodeNameToMetaVictims (UIDs only; nodeCacheCapable true)}
 *
 * Limits (each refused with KB_ERROR_LIMIT naming the field and value; anything else malformed is
 * KB_ERROR_DECODE): body size KB_EXTENDER_MAX_BODY_BYTES (the HTTP layer answers 413 beyond it),
 * nesting KB_EXTENDER_MAX_DEPTH, candidate nodes and victim nodes KB_EXTENDER_MAX_NODES, victims
 * per node KB_EXTENDER_MAX_VICTIMS, names KB_EXTENDER_MAX_NAME_BYTES.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-json.h"
#include "kube/kb-objects.h"

/* A NodeList of 5,000 nodes as kube-scheduler sends it (managedFields included) is ~17 MiB. */
#define KB_EXTENDER_MAX_BODY_BYTES ((gsize)64 << 20)
#define KB_EXTENDER_MAX_DEPTH      64
#define KB_EXTENDER_MAX_NODES      50000
#define KB_EXTENDER_MAX_VICTIMS    10000
#define KB_EXTENDER_MAX_NAME_BYTES 253
/* MaxExtenderPriority: kube-scheduler multiplies the score by the extender's weight. */
#define KB_EXTENDER_MAX_SCORE 10

/*
 * filter and prioritize. Decoded with the allocation-free reader of kube/kb-json.h (a NodeList of
 * 5,000 nodes is ~17 MiB; no DOM is built): the pod through kb_pod_decode_bytes, the node names
 * into one string chunk, NodeList items kept as spans of the body (echoed back unchanged).
 */
typedef struct {
    char *body; /* a copy of the request body; node_spans point into it */
    KbPod *pod; /* owned */
    /* TRUE when the candidates came as NodeNames (nodeCacheCapable), FALSE for a NodeList. */
    gboolean node_cache_capable;
    guint n_nodes;
    const char **node_names; /* n_nodes names (owned by names) */
    KbJsonStr *node_spans;   /* NodeList mode: each item's JSON text, else NULL */
    GStringChunk *names;
} KbExtenderArgs;

typedef struct {
    json_object *root;
    const char *pod_name; /* borrowed from root; never NULL */
    const char *pod_namespace;
    const char *pod_uid; /* "" when absent */
    const char *node;
} KbExtenderBindingArgs;

/* A victim: by UID (MetaVictims) or a whole pod (Victims; namespace and name are then known). */
typedef struct {
    const char *uid; /* borrowed; never NULL */
    const char *namespace_;
    const char *name; /* NULL for a MetaPod */
} KbExtenderVictim;

typedef struct {
    const char *node; /* borrowed */
    KbExtenderVictim *pods;
    guint n_pods;
    gint64 num_pdb_violations;
} KbExtenderNodeVictims;

typedef struct {
    json_object *root;
    KbPod *pod; /* the preemptor, owned */
    /* TRUE when the request carried NodeNameToMetaVictims (nodeCacheCapable). */
    gboolean meta;
    KbExtenderNodeVictims *nodes;
    guint n_nodes;
} KbExtenderPreemptionArgs;

/*
 * Decoders: @body of @len bytes (need not be NUL-terminated). NULL with an error naming the field
 * ("NodeNames[3]: ...", "Pod: ...") when malformed or over a limit. Free with the matching _free.
 */
KbExtenderArgs *kb_extender_args_decode(const char *body, gsize len, GError **error);
void kb_extender_args_free(KbExtenderArgs *args);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbExtenderArgs, kb_extender_args_free)

KbExtenderBindingArgs *kb_extender_binding_args_decode(const char *body, gsize len, GError **error);
void kb_extender_binding_args_free(KbExtenderBindingArgs *args);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbExtenderBindingArgs, kb_extender_binding_args_free)

KbExtenderPreemptionArgs *kb_extender_preemption_args_decode(const char *body, gsize len,
                                                             GError **error);
void kb_extender_preemption_args_free(KbExtenderPreemptionArgs *args);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbExtenderPreemptionArgs, kb_extender_preemption_args_free)

/*
 * Filter answer for the n candidates of @args: @why[i] NULL when candidate i passes, else the
 * message; @unresolvable[i] (may be NULL) TRUE when preemption cannot help on that node (also
 * written to FailedAndUnresolvableNodes, which kube-scheduler 1.19 ignores). With @error set
 * (non-NULL, non-empty) only Error is written. NodeNames mode answers NodeNames; NodeList mode
 * answers Nodes with the passing items as they came. Returns the body, newly allocated.
 */
char *kb_extender_filter_result_encode(const KbExtenderArgs *args, const char *const *why,
                                       const gboolean *unresolvable, const char *error);
/* HostPriorityList: [{"Host":..,"Score":..}] for the candidates of @args (scores clamped to
 * 0..KB_EXTENDER_MAX_SCORE). Newly allocated. */
char *kb_extender_priorities_encode(const KbExtenderArgs *args, const gint64 *scores);
/* ExtenderBindingResult {"Error": @error or ""}. Newly allocated. */
char *kb_extender_binding_result_encode(const char *error);
/*
 * ExtenderPreemptionResult: for each node i of @args with @keep[i], its victims: the UIDs in
 * @victims[i] (a GPtrArray of const char*, borrowed). Newly allocated.
 */
char *kb_extender_preemption_result_encode(const KbExtenderPreemptionArgs *args,
                                           const gboolean *keep, GPtrArray *const *victims);

/* JSON string literal of @s (quotes included) appended to @out. */
void kb_extender_append_json_string(GString *out, const char *s);
