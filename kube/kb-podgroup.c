/*
 * PodGroup (three dialects) and Queue decoding; see kb-objects.h.
 *
 * The PodGroup dialect comes from apiVersion. The three CRDs this project installs share one
 * schema, so every field is read whatever the dialect: minMember, queue and priorityClassName
 * (kube-batch, Volcano), minResources (Volcano, scheduler-plugins, later kube-batch) and
 * scheduleTimeoutSeconds (scheduler-plugins).
 *
 * Kubernetes' own PodGroup (scheduling.k8s.io/v1beta1, 1.37) is a fourth dialect with a schema
 * of its own (native_spec): it is read strictly, since the API server validates it
 * and anything else is a broken object to report, not to guess at. Its v1alpha3 (1.37 alpha)
 * adds spec.parentCompositePodGroupName, and CompositePodGroup, decoded into the same record
 * (native_spec: the same fields but schedulingPolicy.gang.minGroupCount).
 */
#include <string.h>

#include "kube/kb-decode.h"
#include "kube/kb-error.h"
#include "kube/kb-objects.h"

#define NATIVE_V1ALPHA3 "scheduling.k8s.io/v1alpha3"

static gboolean podgroup_dialect(json_object *obj, KbPodGroup *pg, GError **error)
{
    static const struct {
        const char *api_version;
        KbPodGroupDialect dialect;
    } dialects[] = {
            {"scheduling.incubator.k8s.io/v1alpha1", KB_PODGROUP_KUBE_BATCH},
            {"scheduling.volcano.sh/v1beta1", KB_PODGROUP_VOLCANO},
            {"scheduling.x-k8s.io/v1alpha1", KB_PODGROUP_X_K8S},
            {"scheduling.k8s.io/v1beta1", KB_PODGROUP_NATIVE},
            {NATIVE_V1ALPHA3, KB_PODGROUP_NATIVE},
    };
    const char *api;
    if (!kb_decode_string(obj, "apiVersion", KB_MAX_NAME_LEN, &api, error))
        return FALSE;
    for (gsize i = 0; api != NULL && i < G_N_ELEMENTS(dialects); i++) {
        if (strcmp(api, dialects[i].api_version) == 0) {
            pg->dialect = dialects[i].dialect;
            pg->v1alpha3 = strcmp(api, NATIVE_V1ALPHA3) == 0;
            return TRUE;
        }
    }
    g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "apiVersion: unknown PodGroup API \"%s\"",
                api != NULL ? api : "");
    return FALSE;
}

const char *kb_pod_group_object_api_version(const KbPodGroup *pg)
{
    return pg->composite || pg->v1alpha3 ? NATIVE_V1ALPHA3 : kb_pod_group_api_version(pg->dialect);
}

const char *kb_pod_group_kind(const KbPodGroup *pg)
{
    return pg->composite ? "CompositePodGroup" : "PodGroup";
}

const char *kb_pod_group_api_version(KbPodGroupDialect dialect)
{
    switch (dialect) {
    case KB_PODGROUP_KUBE_BATCH:
        return "scheduling.incubator.k8s.io/v1alpha1";
    case KB_PODGROUP_X_K8S:
        return "scheduling.x-k8s.io/v1alpha1";
    case KB_PODGROUP_NATIVE:
        return "scheduling.k8s.io/v1beta1";
    case KB_PODGROUP_VOLCANO:
    default:
        return "scheduling.volcano.sh/v1beta1";
    }
}

void kb_sub_groups_free(KbSubGroupPolicy *policies, guint n)
{
    for (guint i = 0; policies != NULL && i < n; i++) {
        g_free(policies[i].name);
        g_clear_pointer(&policies[i].match_labels, g_hash_table_unref);
    }
    g_free(policies);
}

/* labelSelector: matchLabels only (an expression would select pods kube-batchd cannot tell). */
static gboolean sub_group_selector(json_object *o, KbSubGroupPolicy *p, GError **error)
{
    json_object *sel, *exprs;
    if (!kb_decode_member(o, "labelSelector", json_type_object, &sel, error))
        return FALSE;
    if (sel == NULL)
        return TRUE;
    if (json_object_object_get_ex(sel, "matchExpressions", &exprs) &&
        !json_object_is_type(exprs, json_type_null)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "labelSelector.matchExpressions: not supported (use matchLabels)");
        return FALSE;
    }
    p->match_labels = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    if (!kb_decode_string_map(sel, "matchLabels", KB_MAX_LABEL_VALUE_LEN, KB_STRING_MAP_INTERN_KEYS,
                              p->match_labels, error)) {
        g_prefix_error(error, "labelSelector.");
        return FALSE;
    }
    return TRUE;
}

static gboolean sub_group_keys(json_object *o, KbSubGroupPolicy *p, GError **error)
{
    json_object *arr;
    gsize n;
    if (!kb_decode_array(o, "matchLabelKeys", KB_MAX_MATCH_LABEL_KEYS, &arr, &n, error))
        return FALSE;
    for (gsize i = 0; i < n; i++) {
        json_object *k = json_object_array_get_idx(arr, i);
        g_autofree char *where = g_strdup_printf("matchLabelKeys[%" G_GSIZE_FORMAT "]", i);
        if (!json_object_is_type(k, json_type_string) || json_object_get_string_len(k) == 0)
            return kb_decode_type_error(error, where, "a label key", k);
        if (!kb_decode_check_length(where, (gsize)json_object_get_string_len(k),
                                    KB_MAX_LABEL_KEY_LEN, error))
            return FALSE;
        p->keys[p->n_keys++] = g_intern_string(json_object_get_string(k));
    }
    return TRUE;
}

/* networkTopology: highestTierName names the node label whose one domain holds a sub-group
 * (mode hard, the default; soft asks for nothing). */
static gboolean sub_group_topology(json_object *o, KbSubGroupPolicy *p, GError **error)
{
    json_object *nt;
    const char *mode = NULL;
    if (!kb_decode_member(o, "networkTopology", json_type_object, &nt, error))
        return FALSE;
    if (nt == NULL)
        return TRUE;
    if (!kb_decode_string(nt, "mode", KB_MAX_NAME_LEN, &mode, error) ||
        !kb_decode_interned(nt, "highestTierName", KB_MAX_LABEL_KEY_LEN, TRUE, &p->topology_key,
                            error)) {
        g_prefix_error(error, "networkTopology.");
        return FALSE;
    }
    if (mode != NULL && strcmp(mode, "hard") != 0 && strcmp(mode, "soft") != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "networkTopology.mode: Unsupported value: \"%s\": supported values: "
                    "\"hard\", \"soft\"",
                    mode);
        return FALSE;
    }
    if (mode != NULL && strcmp(mode, "soft") == 0)
        p->topology_key = NULL;
    return TRUE;
}

static gboolean sub_group_policy(json_object *o, KbSubGroupPolicy *p, GError **error)
{
    const char *name = NULL;
    gint64 size = 0, min_groups = 0;
    if (!kb_decode_string(o, "name", KB_MAX_NAME_LEN, &name, error) ||
        !kb_decode_int(o, "subGroupSize", 1, G_MAXINT32, &size, NULL, error) ||
        !kb_decode_int(o, "minSubGroups", 0, G_MAXINT32, &min_groups, NULL, error) ||
        !sub_group_selector(o, p, error) || !sub_group_keys(o, p, error) ||
        !sub_group_topology(o, p, error))
        return FALSE;
    p->name = g_strdup(name != NULL ? name : "");
    p->size = (gint32)size;
    p->min_groups = (gint32)min_groups;
    return TRUE;
}

static gboolean podgroup_sub_groups(json_object *spec, KbPodGroup *pg, GError **error)
{
    json_object *arr, *o;
    gsize n;
    if (!kb_decode_array(spec, "subGroupPolicy", KB_MAX_SUB_GROUP_POLICIES, &arr, &n, error))
        return FALSE;
    if (n == 0)
        return TRUE;
    pg->sub_groups = g_new0(KbSubGroupPolicy, n);
    pg->n_sub_groups = (guint)n;
    for (gsize i = 0; i < n; i++) {
        if (!kb_decode_element(arr, i, &o, error) ||
            !sub_group_policy(o, &pg->sub_groups[i], error)) {
            g_prefix_error(error, "subGroupPolicy[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean podgroup_spec(json_object *spec, KbPodGroup *pg, GError **error)
{
    gint64 min_member = 0, timeout = 0;
    json_object *min_res;
    if (!kb_decode_int(spec, "minMember", 0, G_MAXINT32, &min_member, NULL, error) ||
        !kb_decode_interned(spec, "queue", KB_MAX_NAME_LEN, TRUE, &pg->queue, error) ||
        !kb_decode_interned(spec, "priorityClassName", KB_MAX_NAME_LEN, TRUE,
                            &pg->priority_class_name, error) ||
        !kb_decode_int(spec, "scheduleTimeoutSeconds", 0, G_MAXINT32, &timeout, NULL, error) ||
        !kb_decode_member(spec, "minResources", json_type_object, &min_res, error))
        return FALSE;
    if (min_res != NULL && !kb_resources_decode(min_res, "minResources", &pg->min_resources, error))
        return FALSE;
    if (pg->dialect == KB_PODGROUP_VOLCANO && !podgroup_sub_groups(spec, pg, error))
        return FALSE;
    /* A group of zero is a group of one: every pod still needs a place. */
    pg->min_member = min_member > 0 ? (gint32)min_member : 1;
    pg->schedule_timeout_seconds = (gint32)timeout;
    return TRUE;
}

/* ---- scheduling.k8s.io/v1beta1 -------------------------------------------------------------- */

/* A union of empty structs ({"a": {}} or {"b": {}}): which member is set, -1 when neither. Errors
 * relative to @key's parent. */
static gboolean native_union(json_object *obj, const char *key, const char *a, const char *b,
                             int *which, GError **error)
{
    json_object *u, *va, *vb;
    *which = -1;
    if (!kb_decode_member(obj, key, json_type_object, &u, error))
        return FALSE;
    if (u == NULL)
        return TRUE;
    if (!kb_decode_member(u, a, json_type_object, &va, error) ||
        !kb_decode_member(u, b, json_type_object, &vb, error)) {
        g_prefix_error(error, "%s.", key);
        return FALSE;
    }
    if (va != NULL && vb != NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "%s: exactly one of `%s`, `%s` is required, but multiple fields are set", key,
                    a, b);
        return FALSE;
    }
    *which = va != NULL ? 0 : vb != NULL ? 1 : -1;
    return TRUE;
}

/* schedulingPolicy: gang.minCount is the gang's minimum; basic places each pod alone. */
static gboolean native_policy(json_object *spec, KbPodGroup *pg, GError **error)
{
    int which;
    json_object *policy, *gang;
    gint64 min_count = 0;
    gboolean present = FALSE;
    if (!native_union(spec, "schedulingPolicy", "basic", "gang", &which, error))
        return FALSE;
    if (which == -1) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE,
                            "schedulingPolicy: must specify one of: `basic`, `gang`");
        return FALSE;
    }
    pg->min_member = 1;
    if (which == 0)
        return TRUE;
    policy = json_object_object_get(spec, "schedulingPolicy");
    gang = json_object_object_get(policy, "gang");
    if (!kb_decode_int(gang, "minCount", G_MININT32, G_MAXINT32, &min_count, &present, error)) {
        g_prefix_error(error, "schedulingPolicy.gang.");
        return FALSE;
    }
    if (min_count < 1) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "schedulingPolicy.gang.minCount: must be at least 1, got %" G_GINT64_FORMAT,
                    min_count);
        return FALSE;
    }
    pg->min_member = (gint32)min_count;
    return TRUE;
}

/* schedulingConstraints.topology: the first key (the gang lands inside one of its domains). */
static gboolean native_topology(json_object *spec, KbPodGroup *pg, GError **error)
{
    json_object *sc, *arr, *o;
    gsize n;
    if (!kb_decode_member(spec, "schedulingConstraints", json_type_object, &sc, error))
        return FALSE;
    if (sc == NULL)
        return TRUE;
    if (!kb_decode_array(sc, "topology", KB_MAX_LIST_ITEMS, &arr, &n, error)) {
        g_prefix_error(error, "schedulingConstraints.");
        return FALSE;
    }
    for (gsize i = 0; i < n; i++) {
        const char *key = NULL;
        if (!kb_decode_element(arr, i, &o, error) ||
            !kb_decode_interned(o, "key", KB_MAX_LABEL_KEY_LEN, TRUE, &key, error)) {
            g_prefix_error(error, "schedulingConstraints.topology[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
        if (key == NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "schedulingConstraints.topology[%" G_GSIZE_FORMAT "].key: Required value",
                        i);
            return FALSE;
        }
        if (i == 0)
            pg->topology_key = key;
    }
    return TRUE;
}

static gboolean native_workload_ref(json_object *spec, KbPodGroup *pg, GError **error)
{
    json_object *ref;
    const char *workload = NULL, *tmpl = NULL;
    if (!kb_decode_member(spec, "workloadRef", json_type_object, &ref, error))
        return FALSE;
    if (ref == NULL)
        return TRUE;
    if (!kb_decode_string(ref, "workloadName", KB_MAX_NAME_LEN, &workload, error) ||
        !kb_decode_string(ref, "templateName", KB_MAX_NAME_LEN, &tmpl, error)) {
        g_prefix_error(error, "workloadRef.");
        return FALSE;
    }
    pg->workload_name = workload != NULL && *workload != '\0' ? g_strdup(workload) : NULL;
    pg->workload_template = tmpl != NULL && *tmpl != '\0' ? g_strdup(tmpl) : NULL;
    return TRUE;
}

static gboolean native_priority(json_object *spec, KbPodGroup *pg, GError **error)
{
    gint64 priority = 0;
    const char *policy = NULL;
    if (!kb_decode_interned(spec, "priorityClassName", KB_MAX_NAME_LEN, TRUE,
                            &pg->priority_class_name, error) ||
        !kb_decode_int(spec, "priority", G_MININT32, G_MAXINT32, &priority, &pg->has_priority,
                       error) ||
        !kb_decode_string(spec, "preemptionPolicy", KB_MAX_NAME_LEN, &policy, error))
        return FALSE;
    pg->priority = (gint32)priority;
    if (policy != NULL && strcmp(policy, "Never") != 0 &&
        strcmp(policy, "PreemptLowerPriority") != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "preemptionPolicy: unsupported value \"%s\": supported values: "
                    "\"Never\", \"PreemptLowerPriority\"",
                    policy);
        return FALSE;
    }
    pg->preempt_never = policy != NULL && strcmp(policy, "Never") == 0;
    return TRUE;
}

/* spec.parentCompositePodGroupName: read at v1alpha3 only (where kube-batchd reads composites;
 * at v1beta1 the same field would name a composite it does not see). */
static gboolean native_parent(json_object *spec, KbPodGroup *pg, GError **error)
{
    const char *parent = NULL;
    if (!pg->v1alpha3)
        return TRUE;
    if (!kb_decode_string(spec, "parentCompositePodGroupName", KB_MAX_NAME_LEN, &parent, error))
        return FALSE;
    pg->parent = parent != NULL && *parent != '\0' ? g_strdup(parent) : NULL;
    return TRUE;
}

/* status.conditions: the PodGroupInitiallyScheduled one (a composite's
 * CompositePodGroupInitiallyScheduled) and a PodGroup's GangIncomplete, if any. */
static gboolean podgroup_native_status(json_object *status, KbPodGroup *pg, GError **error)
{
    json_object *arr, *c;
    gsize n;
    if (!kb_decode_array(status, "conditions", KB_MAX_LIST_ITEMS, &arr, &n, error))
        return FALSE;
    for (gsize i = 0; i < n; i++) {
        const char *type = NULL, *st = NULL, *msg = NULL, *since = NULL;
        if (!kb_decode_element(arr, i, &c, error) ||
            !kb_decode_string(c, "type", KB_MAX_NAME_LEN, &type, error) ||
            !kb_decode_interned(c, "status", KB_MAX_NAME_LEN, TRUE, &st, error) ||
            !kb_decode_string(c, "message", KB_MAX_LABEL_VALUE_LEN, &msg, error) ||
            !kb_decode_string(c, "lastTransitionTime", KB_MAX_NAME_LEN, &since, error)) {
            g_prefix_error(error, "conditions[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
        if (!pg->composite && g_strcmp0(type, KB_GANG_INCOMPLETE) == 0) {
            pg->incomplete_status = st;
            g_free(pg->incomplete_message);
            pg->incomplete_message = g_strdup(msg);
            g_free(pg->incomplete_since);
            pg->incomplete_since = g_strdup(since);
            continue;
        }
        if (g_strcmp0(type, pg->composite ? KB_COMPOSITE_INITIALLY_SCHEDULED
                                          : KB_POD_GROUP_INITIALLY_SCHEDULED) != 0)
            continue;
        pg->scheduled_status = st;
        g_free(pg->scheduled_message);
        pg->scheduled_message = g_strdup(msg);
        g_free(pg->scheduled_since);
        pg->scheduled_since = g_strdup(since);
    }
    return TRUE;
}

/* The queue of a native PodGroup: label, else annotation KB_QUEUE_LABEL. */
static void podgroup_native_queue(KbPodGroup *pg)
{
    const char *q = g_hash_table_lookup(pg->meta.labels, KB_QUEUE_LABEL);
    if (q == NULL || *q == '\0')
        q = g_hash_table_lookup(pg->meta.annotations, KB_QUEUE_LABEL);
    pg->queue = q != NULL && *q != '\0' ? g_intern_string(q) : NULL;
}

/* CompositePodGroup's schedulingPolicy: gang.minGroupCount children must fit; basic: each child
 * on its own. */
static gboolean composite_policy(json_object *spec, KbPodGroup *pg, GError **error)
{
    int which;
    json_object *gang;
    gint64 min_groups = 0;
    gboolean present = FALSE;
    if (!native_union(spec, "schedulingPolicy", "basic", "gang", &which, error))
        return FALSE;
    if (which == -1) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE,
                            "schedulingPolicy: must specify one of: `basic`, `gang`");
        return FALSE;
    }
    pg->min_member = 1;
    pg->min_groups = 0;
    if (which == 0)
        return TRUE;
    gang = json_object_object_get(json_object_object_get(spec, "schedulingPolicy"), "gang");
    if (!kb_decode_int(gang, "minGroupCount", G_MININT32, G_MAXINT32, &min_groups, &present,
                       error)) {
        g_prefix_error(error, "schedulingPolicy.gang.");
        return FALSE;
    }
    if (min_groups < 1) {
        g_set_error(
                error, KB_ERROR, KB_ERROR_DECODE,
                "schedulingPolicy.gang.minGroupCount: must be at least 1, got %" G_GINT64_FORMAT,
                min_groups);
        return FALSE;
    }
    pg->min_groups = (gint32)min_groups;
    return TRUE;
}

/*
 * A native PodGroup's or CompositePodGroup's spec: the same fields but the scheduling policy
 * (gang.minCount or gang.minGroupCount). Errors relative to "spec.".
 */
static gboolean native_spec(json_object *spec, KbPodGroup *pg, GError **error)
{
    int mode;
    if (!native_parent(spec, pg, error) ||
        !(pg->composite ? composite_policy(spec, pg, error) : native_policy(spec, pg, error)) ||
        !native_topology(spec, pg, error) || !native_workload_ref(spec, pg, error) ||
        !native_priority(spec, pg, error) ||
        !native_union(spec, "disruptionMode", "single", "all", &mode, error))
        return FALSE;
    pg->disruption_all = mode == 1;
    return TRUE;
}

static gboolean podgroup_native_body(json_object *obj, KbPodGroup *pg, GError **error)
{
    json_object *spec, *status;
    gboolean ok;
    if (!kb_decode_member(obj, "spec", json_type_object, &spec, error) ||
        !kb_decode_member(obj, "status", json_type_object, &status, error))
        return FALSE;
    if (spec == NULL) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "spec: Required value");
        return FALSE;
    }
    ok = native_spec(spec, pg, error);
    if (!ok) {
        g_prefix_error(error, "spec.");
        return FALSE;
    }
    if (status != NULL && !podgroup_native_status(status, pg, error)) {
        g_prefix_error(error, "status.");
        return FALSE;
    }
    podgroup_native_queue(pg);
    return TRUE;
}

static gboolean podgroup_body(json_object *obj, KbPodGroup *pg, GError **error)
{
    json_object *spec, *status;
    if (!podgroup_dialect(obj, pg, error))
        return FALSE;
    if (pg->dialect == KB_PODGROUP_NATIVE)
        return podgroup_native_body(obj, pg, error);
    if (!kb_decode_member(obj, "spec", json_type_object, &spec, error) ||
        !kb_decode_member(obj, "status", json_type_object, &status, error))
        return FALSE;
    pg->min_member = 1;
    if (spec != NULL && !podgroup_spec(spec, pg, error)) {
        g_prefix_error(error, "spec.");
        return FALSE;
    }
    if (status != NULL &&
        !kb_decode_interned(status, "phase", KB_MAX_NAME_LEN, TRUE, &pg->phase, error)) {
        g_prefix_error(error, "status.");
        return FALSE;
    }
    return TRUE;
}

/* A list of a built-in type does not repeat apiVersion in its items: absent means @expected. */
static gboolean native_body(json_object *obj, const char *expected, KbPodGroup *pg, GError **error)
{
    const char *api;
    if (!kb_decode_string(obj, "apiVersion", KB_MAX_NAME_LEN, &api, error))
        return FALSE;
    if (api != NULL && strcmp(api, expected) != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "apiVersion: \"%s\" where %s was listed", api,
                    expected);
        return FALSE;
    }
    pg->dialect = KB_PODGROUP_NATIVE;
    pg->v1alpha3 = strcmp(expected, NATIVE_V1ALPHA3) == 0;
    return podgroup_native_body(obj, pg, error);
}

static KbPodGroup *native_decode(json_object *obj, const char *api, gboolean composite,
                                 gboolean keep_raw, GError **error)
{
    g_autoptr(KbPodGroup) pg = g_new0(KbPodGroup, 1);
    pg->composite = composite;
    if (!kb_meta_decode(obj, KB_KIND_POD_GROUP, keep_raw, &pg->meta, error) ||
        !native_body(obj, api, pg, error)) {
        kb_decode_prefix_object(error, composite ? "compositepodgroup" : "podgroup", &pg->meta);
        return NULL;
    }
    return g_steal_pointer(&pg);
}

KbPodGroup *kb_pod_group_decode_native(json_object *obj, gboolean keep_raw, GError **error)
{
    return native_decode(obj, kb_pod_group_api_version(KB_PODGROUP_NATIVE), FALSE, keep_raw, error);
}

KbPodGroup *kb_pod_group_decode_v1alpha3(json_object *obj, gboolean keep_raw, GError **error)
{
    return native_decode(obj, NATIVE_V1ALPHA3, FALSE, keep_raw, error);
}

KbPodGroup *kb_composite_pod_group_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    return native_decode(obj, NATIVE_V1ALPHA3, TRUE, keep_raw, error);
}

KbPodGroup *kb_pod_group_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbPodGroup) pg = g_new0(KbPodGroup, 1);
    if (!kb_meta_decode(obj, KB_KIND_POD_GROUP, keep_raw, &pg->meta, error) ||
        !podgroup_body(obj, pg, error)) {
        kb_decode_prefix_object(error, "podgroup", &pg->meta);
        return NULL;
    }
    return g_steal_pointer(&pg);
}

/* ---- Queue ---------------------------------------------------------------------------------- */

/* Volcano's shape: guarantee: {resource: {cpu: ..., memory: ...}}. */
static gboolean queue_guarantee(json_object *spec, KbQueue *q, GError **error)
{
    json_object *g, *res;
    if (!kb_decode_member(spec, "guarantee", json_type_object, &g, error))
        return FALSE;
    if (g == NULL)
        return TRUE;
    if (!kb_decode_member(g, "resource", json_type_object, &res, error) ||
        (res != NULL && !kb_resources_decode_assign(res, "resource", &q->guarantee, error))) {
        g_prefix_error(error, "guarantee.");
        return FALSE;
    }
    return TRUE;
}

static gboolean queue_spec(json_object *spec, KbQueue *q, GError **error)
{
    gint64 weight = 1;
    json_object *cap, *des;
    if (!kb_decode_int(spec, "weight", 0, G_MAXINT32, &weight, NULL, error) ||
        !kb_decode_bool(spec, "reclaimable", &q->reclaimable, error) ||
        !kb_decode_interned(spec, "parent", KB_MAX_NAME_LEN, TRUE, &q->parent, error) ||
        !kb_decode_member(spec, "capability", json_type_object, &cap, error) ||
        !kb_decode_member(spec, "deserved", json_type_object, &des, error))
        return FALSE;
    /* The CRD says minimum 1; an old object with 0 still gets a share rather than none. */
    q->weight = weight > 0 ? (gint32)weight : 1;
    if (cap != NULL && !kb_resources_decode_assign(cap, "capability", &q->capability, error))
        return FALSE;
    if (des != NULL && !kb_resources_decode_assign(des, "deserved", &q->deserved, error))
        return FALSE;
    return queue_guarantee(spec, q, error);
}

/* Closed and Closing queues take no new jobs; Open, Unknown or no state yet (no controller
 * has written it) leave the queue open. */
static gboolean queue_state(json_object *obj, const char *part, KbQueue *q, GError **error)
{
    json_object *o;
    const char *state;
    if (!kb_decode_member(obj, part, json_type_object, &o, error))
        return FALSE;
    if (o == NULL)
        return TRUE;
    if (!kb_decode_string(o, "state", KB_MAX_NAME_LEN, &state, error)) {
        g_prefix_error(error, "%s.", part);
        return FALSE;
    }
    if (state != NULL && (strcmp(state, "Closed") == 0 || strcmp(state, "Closing") == 0))
        q->open = FALSE;
    return TRUE;
}

/*
 * status.usage: {"time": RFC 3339, "resourceSeconds": {resource: number >= 0}} (what
 * kb_status_writer writes; cpu in core-seconds). Resources kube-batchd does not know are skipped.
 */
static gboolean queue_usage(json_object *status, KbQueue *q, GError **error)
{
    json_object *u, *res;
    const char *time;
    gint64 t = 0;
    if (!kb_decode_member(status, "usage", json_type_object, &u, error))
        return FALSE;
    if (u == NULL)
        return TRUE;
    if (!kb_decode_string(u, "time", 64, &time, error) ||
        (time != NULL && !kb_decode_time_text("time", time, &t, error)) ||
        !kb_decode_member(u, "resourceSeconds", json_type_object, &res, error)) {
        g_prefix_error(error, "usage.");
        return FALSE;
    }
    if (time == NULL || res == NULL)
        return TRUE;
    if (json_object_object_length(res) > KB_USAGE_MAX_RESOURCES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "usage.resourceSeconds: %d resources, more than %d",
                    json_object_object_length(res), KB_USAGE_MAX_RESOURCES);
        return FALSE;
    }
    json_object_object_foreach(res, name, v)
    {
        int slot = kb_resource_slot(name);
        json_type ty = json_object_get_type(v);
        double x = ty == json_type_int || ty == json_type_double ? json_object_get_double(v) : -1;
        if (!(x >= 0 && x < 1e300)) {
            g_autofree char *got = kb_decode_describe(v);
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "usage.resourceSeconds.%s: expected a number >= 0, got %s", name, got);
            return FALSE;
        }
        if (slot >= 0 && slot < KB_RES_MAX)
            q->usage[slot] = kb_resource_is_milli(slot) ? x * 1000 : x;
    }
    q->usage_time = t;
    return TRUE;
}

const KbQueueKeptMember kb_queue_kept_members[KB_QUEUE_N_KEPT_MEMBERS] = {
        {"usage", KB_QUEUE_USAGE_ANNOTATION},
        {"runtimeHistory", KB_QUEUE_HISTORY_ANNOTATION},
        {"resources", KB_QUEUE_RESOURCES_ANNOTATION},
        {"conditions", KB_QUEUE_CONDITIONS_ANNOTATION},
};

const char *const kb_queue_history_buckets[KB_QUEUE_HISTORY_BUCKETS] = {"0",   "1",    "2-4",
                                                                        "5-8", "9-16", "17+"};

/* Bucket @name's runtimes (an array of whole seconds, 0 < s <= KB_QUEUE_HISTORY_MAX_SECONDS, at
 * most KB_QUEUE_HISTORY_KEEP) into @h. */
static gboolean history_bucket(json_object *arr, const char *name, KbQueueHistory *h,
                               GError **error)
{
    int b = -1;
    for (int i = 0; i < KB_QUEUE_HISTORY_BUCKETS; i++)
        if (strcmp(kb_queue_history_buckets[i], name) == 0)
            b = i;
    if (b < 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "runtimeSeconds: unknown size bucket \"%s\" (expected 0, 1, 2-4, 5-8, 9-16 "
                    "or 17+)",
                    name);
        return FALSE;
    }
    if (!json_object_is_type(arr, json_type_array)) {
        g_autofree char *got = kb_decode_describe(arr);
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "runtimeSeconds.%s: expected an array, got %s", name, got);
        return FALSE;
    }
    size_t n = json_object_array_length(arr);
    if (n > KB_QUEUE_HISTORY_KEEP) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "runtimeSeconds.%s: %zu runtimes, more than %d", name, n,
                    KB_QUEUE_HISTORY_KEEP);
        return FALSE;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        gint64 x = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
        if (x <= 0 || x > KB_QUEUE_HISTORY_MAX_SECONDS) {
            g_autofree char *got = kb_decode_describe(v);
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "runtimeSeconds.%s[%zu]: expected whole seconds from 1 to %" G_GINT64_FORMAT
                        ", got %s",
                        name, i, KB_QUEUE_HISTORY_MAX_SECONDS, got);
            return FALSE;
        }
        h->runtime[b][i] = x;
    }
    h->n[b] = (guint8)n;
    return TRUE;
}

/*
 * status.runtimeHistory: {"time": RFC 3339, "runtimeSeconds": {bucket: [seconds, ...]}} (what
 * kb_status_writer writes; scheduler/history.h).
 */
static gboolean queue_history(json_object *status, KbQueue *q, GError **error)
{
    json_object *h, *res;
    const char *time;
    gint64 t = 0;
    if (!kb_decode_member(status, "runtimeHistory", json_type_object, &h, error))
        return FALSE;
    if (h == NULL)
        return TRUE;
    if (!kb_decode_string(h, "time", 64, &time, error) ||
        (time != NULL && !kb_decode_time_text("time", time, &t, error)) ||
        !kb_decode_member(h, "runtimeSeconds", json_type_object, &res, error)) {
        g_prefix_error(error, "runtimeHistory.");
        return FALSE;
    }
    if (time == NULL || res == NULL || t <= 0)
        return TRUE;
    g_autofree KbQueueHistory *out = g_new0(KbQueueHistory, 1);
    json_object_object_foreach(res, name, arr)
    {
        if (!history_bucket(arr, name, out, error)) {
            g_prefix_error(error, "runtimeHistory.");
            return FALSE;
        }
    }
    out->time = t;
    g_free(q->history);
    q->history = g_steal_pointer(&out);
    return TRUE;
}

static gboolean queue_body(json_object *obj, KbQueue *q, GError **error)
{
    json_object *spec;
    q->weight = 1;
    q->reclaimable = TRUE;
    q->open = TRUE;
    kb_resources_set_unlimited(&q->capability);
    for (int s = 0; s < KB_RES_MAX; s++)
        q->deserved.v[s] = -1;
    if (!kb_decode_member(obj, "spec", json_type_object, &spec, error))
        return FALSE;
    if (spec != NULL && !queue_spec(spec, q, error)) {
        g_prefix_error(error, "spec.");
        return FALSE;
    }
    if (!queue_state(obj, "spec", q, error) || !queue_state(obj, "status", q, error))
        return FALSE;
    json_object *status = NULL;
    json_object_object_get_ex(obj, "status", &status);
    if (status != NULL && json_object_is_type(status, json_type_object) &&
        (!queue_usage(status, q, error) || !queue_history(status, q, error))) {
        g_prefix_error(error, "status.");
        return FALSE;
    }
    return TRUE;
}

/*
 * Annotation @key of @q (KB_QUEUE_USAGE_ANNOTATION or KB_QUEUE_HISTORY_ANNOTATION), if present,
 * read as status.@member would be (@read), taken when its time is newer than what the status
 * gave. Errors name the annotation.
 */
static gboolean queue_annotation(KbQueue *q, const char *key, const char *member,
                                 gboolean (*read)(json_object *, KbQueue *, GError **),
                                 GError **error)
{
    const char *text = g_hash_table_lookup(q->meta.annotations, key);
    if (text == NULL)
        return TRUE;
    json_object *parsed = json_tokener_parse(text);
    if (parsed == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "metadata.annotations[%s]: expected a JSON object, got \"%.40s%s\"", key, text,
                    strlen(text) > 40 ? "..." : "");
        return FALSE;
    }
    json_object *holder = json_object_new_object();
    json_object_object_add(holder, member, parsed);
    g_autofree KbQueue *from = g_new0(KbQueue, 1);
    gboolean ok = read(holder, from, error);
    json_object_put(holder);
    if (!ok) {
        g_prefix_error(error, "metadata.annotations[%s]: ", key);
        return FALSE;
    }
    if (from->usage_time > q->usage_time) {
        memcpy(q->usage, from->usage, sizeof q->usage);
        q->usage_time = from->usage_time;
    }
    if (from->history != NULL && (q->history == NULL || from->history->time > q->history->time)) {
        g_free(q->history);
        q->history = g_steal_pointer(&from->history);
    }
    g_free(from->history);
    return TRUE;
}

KbQueue *kb_queue_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbQueue) q = g_new0(KbQueue, 1);
    if (!kb_meta_decode(obj, KB_KIND_QUEUE, keep_raw, &q->meta, error) ||
        !queue_body(obj, q, error) ||
        !queue_annotation(q, KB_QUEUE_USAGE_ANNOTATION, "usage", queue_usage, error) ||
        !queue_annotation(q, KB_QUEUE_HISTORY_ANNOTATION, "runtimeHistory", queue_history, error)) {
        kb_decode_prefix_object(error, "queue", &q->meta);
        return NULL;
    }
    /* Queues are cluster-scoped; a namespace in the object is ignored. */
    q->meta.namespace_ = NULL;
    return g_steal_pointer(&q);
}
