/*
 * Typed access to the members of a json-c object, for the object decoders of kube/
 * (kb-meta.c, kb-pod.c, kb-node.c, kb-podgroup.c, ...).
 *
 * Error messages start with the member's name relative to the object given ("priority: expected
 * an integer, got \"high\""); callers prefix their own path on the way up with g_prefix_error()
 * ("spec." then "pod default/p1: "), so nothing is formatted unless something is wrong.
 *
 * A member that is absent or JSON null is "absent": getters return TRUE and leave the output
 * untouched (or NULL for pointers). A member of the wrong JSON type fails with KB_ERROR_DECODE;
 * a string or array over its limit fails with KB_ERROR_LIMIT.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-json.h"
#include "kube/kb-objects.h"

/* A short printable rendering of @v for messages (JSON text, cut at 64 bytes); newly allocated. */
char *kb_decode_describe(json_object *v);

/* Member @key of @obj when present and of @type; *out = NULL when absent. */
gboolean kb_decode_member(json_object *obj, const char *key, json_type type, json_object **out,
                          GError **error);

/* A string member no longer than @max_len bytes. *out borrows from @obj (NULL when absent). */
gboolean kb_decode_string(json_object *obj, const char *key, gsize max_len, const char **out,
                          GError **error);

/* The same, interned with g_intern_string(); "" reads as absent (NULL) when @empty_is_null. */
gboolean kb_decode_interned(json_object *obj, const char *key, gsize max_len, gboolean empty_is_null,
                            const char **out, GError **error);

/* An integer member in [@min, @max]; *out untouched when absent. @present may be NULL. */
gboolean kb_decode_int(json_object *obj, const char *key, gint64 min, gint64 max, gint64 *out,
                       gboolean *present, GError **error);

/* A boolean member; *out untouched when absent. */
gboolean kb_decode_bool(json_object *obj, const char *key, gboolean *out, GError **error);

/* An array member with at most @max_items elements; *out = NULL and *n = 0 when absent. */
gboolean kb_decode_array(json_object *obj, const char *key, gsize max_items, json_object **out,
                         gsize *n, GError **error);

/* Element @i of @array, which must be an object ("[3]: expected an object, got 7" otherwise). */
gboolean kb_decode_element(json_object *array, gsize i, json_object **out, GError **error);

/* Set a type error "@key: expected @what, got <value>". Returns FALSE. */
gboolean kb_decode_type_error(GError **error, const char *key, const char *what, json_object *v);

/* How kb_decode_string_map() stores entries; the table's free functions must match. */
typedef enum {
    KB_STRING_MAP_OWNED,       /* keys and values copied (annotations) */
    KB_STRING_MAP_INTERN_KEYS, /* keys interned, values copied (labels) */
    KB_STRING_MAP_INTERNED,    /* keys and values interned (nodeSelector) */
} KbStringMapMode;

/*
 * A string-to-string map member (labels, annotations, nodeSelector): at most KB_MAX_LABELS
 * entries, keys of 1..KB_MAX_LABEL_KEY_LEN bytes, values up to @max_value bytes. Entries are
 * inserted into @table as @mode says.
 */
gboolean kb_decode_string_map(json_object *obj, const char *key, gsize max_value,
                              KbStringMapMode mode, GHashTable *table, GError **error);

/* Insert one entry into a table filled by kb_decode_string_map() with @mode (shared with the
 * byte-buffer decoder so that both store entries alike). @k_interned: @k is already interned
 * (the byte decoder caches interned strings), for the modes that intern keys. */
void kb_decode_string_map_insert(GHashTable *table, KbStringMapMode mode, const char *k,
                                 gboolean k_interned, const char *v);

/* Prefix "<kind> ns/name: " (or "<kind> name: ", "<kind>: " while the name is unknown). */
void kb_decode_prefix_object(GError **error, const char *kind, const KbObjectMeta *meta);

/* "NoSchedule", "PreferNoSchedule" or "NoExecute"; FALSE for anything else (empty included). */
gboolean kb_decode_taint_effect(const char *s, KbTaintEffect *effect);

/*
 * ---- Field semantics shared with the byte-buffer pod decoder (kb-pod-fast.c) -------------------
 * Both decoders call these, so that a pod decodes to the same record and the same messages
 * whichever path read it.
 */

/* Longest RFC 3339 time text accepted. */
#define KB_MAX_TIME_LEN 64

/* A printable rendering of the JSON text @json (@len bytes), as kb_decode_describe() renders
 * the value it parses to; newly allocated. */
char *kb_decode_describe_text(const char *json, gsize len);

/* "@key: @len bytes, more than @max" (KB_ERROR_LIMIT) when @len > @max. */
gboolean kb_decode_check_length(const char *key, gsize len, gsize max, GError **error);
/* "@key: @got out of range [@min, @max]" (KB_ERROR_DECODE) when @v is outside. */
gboolean kb_decode_check_range(const char *key, gint64 v, const char *got, gint64 min, gint64 max,
                               GError **error);
/* An RFC 3339 time member @key with text @s (not NULL). */
gboolean kb_decode_time_text(const char *key, const char *s, gint64 *out, GError **error);
/* Checks on a string map (@key names it) of @n entries, and on one entry's key. */
gboolean kb_decode_check_map_size(const char *key, gsize n, GError **error);
gboolean kb_decode_check_map_key(const char *key, const char *k, gsize klen, GError **error);

/*
 * One entry of a resource map: @name (@name_len bytes) with quantity @text: a JSON string's
 * content when @is_string (surrounding white space is trimmed, as Quantity.UnmarshalJSON does),
 * else a JSON number as json-c prints it. Added to @out (or assigned with @set). @what names the
 * map in errors.
 */
gboolean kb_resources_decode_entry(const char *what, const char *name, gsize name_len,
                                   const char *text, gboolean is_string, gboolean set,
                                   KbResources *out, GError **error);

/* A container's requests: each resource it only limits is requested at its limit. @requested
 * says whether the container's requests map names the resource of a slot. */
typedef gboolean (*KbRequestedFunc)(int slot, gpointer data);
void kb_pod_default_requests(KbResources *requests, const KbResources *limits,
                             KbRequestedFunc requested, gpointer data);

/* Effective pod requests, folded container by container (any order of the two lists). */
typedef struct {
    KbResources sum;       /* app containers and sidecars */
    KbResources init_peak; /* the largest init container, with the sidecars started before it */
    KbResources sidecars;  /* sidecars started so far */
    /* Pod-level spec.resources (cpu, memory, hugepages-*): which slots it requests or limits. */
    KbResources pod_requests, pod_limits;
    guint32 pod_requested, pod_limited; /* bit 1 << slot */
    /* App containers by name (a resize in place changes what the node holds for them), and the
     * pod's overhead: both are applied by kb_pod_requests_fold_finish, once the status is read. */
    const char *app_names[KB_MAX_CONTAINERS]; /* interned, NULL for a container without name */
    KbResources apps[KB_MAX_CONTAINERS];
    guint n_apps;
    KbResources overhead;
} KbPodRequestsFold;
void kb_pod_requests_fold_init(KbPodRequestsFold *f);
/* An app container @name (interned, may be NULL) requesting @r. */
void kb_pod_requests_fold_container(KbPodRequestsFold *f, const char *name, const KbResources *r);
/* @restart_policy: the init container's restartPolicy, may be NULL ("Always" is a sidecar). */
void kb_pod_requests_fold_init_container(KbPodRequestsFold *f, const KbResources *r,
                                         const char *restart_policy);
/*
 * Pod-level spec.resources: @requests and @limits as decoded, @requested/@limited say whether
 * each map names the resource of a slot. Only the resources kube-scheduler takes at pod level
 * count (cpu, memory, hugepages-*; component-helpers' IsSupportedPodLevelResource).
 */
void kb_pod_requests_fold_pod_level(KbPodRequestsFold *f, const KbResources *requests,
                                    KbRequestedFunc requested, gpointer req_data,
                                    const KbResources *limits, KbRequestedFunc limited,
                                    gpointer lim_data);
/*
 * @pod->requests := max(sum, init_peak), where pod-level requests replace it resource by
 * resource (as resource.PodRequests); a resource only limited at pod level is requested at that
 * limit when no container requests it (the API server's defaultPodRequests). Then + overhead,
 * pods = 1. An app container with a status that holds resources (resized in place, see
 * KbContainerStatus.held) counts max(its request, what is held), as kube-scheduler does; only
 * what is held when the resize is infeasible. Call once @pod's status is decoded.
 */
void kb_pod_requests_fold_finish(KbPodRequestsFold *f, KbPod *pod);
/* The slots of the resources @map (a JSON object, may be NULL) names: a held_mask. */
guint32 kb_pod_resource_mask(json_object *map);

/* A node selector requirement from its key and operator texts (either may be NULL): checks
 * them, sets r->key (interned) and r->op. */
gboolean kb_decode_requirement_head(const char *key, const char *op, KbSelectorRequirement *r,
                                    GError **error);
/* One string of a requirement's values (checked, interned, appended). */
gboolean kb_decode_requirement_value(gsize i, const char *v, gsize len, KbSelectorRequirement *r,
                                     GError **error);
/* A decoded requirement as a whole: a matchFields entry (r->match_field) must be what
 * kube-apiserver admits, key metadata.name, operator In or NotIn, exactly one value; anything
 * else is refused here rather than matched some other way. */
gboolean kb_decode_requirement_check(const KbSelectorRequirement *r, GError **error);

/* A toleration's operator and effect texts (either may be NULL) into @t. */
gboolean kb_decode_toleration_tail(const char *op, const char *effect, KbToleration *t,
                                   GError **error);

/* Frees @n entries of @claims and the array (may be NULL). */
void kb_pod_resource_claims_free(KbPodResourceClaim *claims, guint n);
/*
 * A decoded spec.resourceClaims[] entry (@spec TRUE) or status.resourceClaimStatuses[] entry: a
 * name is required, and a spec entry names exactly one of resourceClaimName and
 * resourceClaimTemplateName. Errors relative to the entry. Both pod decoders call it.
 */
gboolean kb_pod_resource_claim_check(const KbPodResourceClaim *c, gboolean spec, GError **error);

/* status.phase text (may be NULL) as a phase. */
KbPodPhase kb_pod_phase_parse(const char *s);

/*
 * Shared by the decoders that read JSON text (kb-pod-fast.c, kb-dra-fast.c) over kb-json:
 * the object at @r as metadata into @meta (kb_meta_init'ed by the caller), as kb_meta_decode()
 * reads it; errors relative to "metadata.".
 */
gboolean kb_fast_decode_metadata(KbJsonReader *r, KbObjectMeta *meta, GError **error);

/* @s interned, through a small per-thread cache of the strings interned last (kb-pod-fast.c):
 * g_intern_string() takes a global lock. @s is cut at a NUL, as g_intern_string() would. */
const char *kb_fast_intern(const KbJsonStr *s);

/* One list item at @r: a new record, or NULL with @error. */
typedef KbObjectMeta *(*KbFastItemDecoder)(KbJsonReader *r, GError **error);

/* A whole List ({"metadata": {...}, "items": [...]}) from its bytes through @item, as
 * kb_pod_list_decode_bytes() for pods (a KbPageDecodeFunc once @item is bound). */
gboolean kb_fast_list_decode(const char *json, gsize len, KbFastItemDecoder item, GPtrArray *out,
                             char **resource_version, char **continue_token, GError **error);

/* Set up @meta for decoding: kind, one reference, empty labels and annotations (tables that
 * are already there are kept, so a second call is harmless). */
void kb_meta_init(KbObjectMeta *meta, KbKind kind);
/* A new pod record ready for decoding (kb_meta_init'ed, empty node selector). */
KbPod *kb_pod_new(void);

/* After decoding: the default scheduler name, and the group from annotations and labels; empty
 * labels, annotations and node selector tables are replaced by one shared empty table each. */
void kb_pod_finish(KbPod *pod);
