/*
 * PodGroup (three dialects) and Queue decoding; see kb-objects.h.
 *
 * The PodGroup dialect comes from apiVersion. The three CRDs this project installs share one
 * schema, so every field is read whatever the dialect: minMember, queue and priorityClassName
 * (kube-batch, Volcano), minResources (Volcano, scheduler-plugins, later kube-batch) and
 * scheduleTimeoutSeconds (scheduler-plugins).
 */
#include <string.h>

#include "kube/kb-decode.h"
#include "kube/kb-error.h"
#include "kube/kb-objects.h"

static gboolean podgroup_dialect(json_object *obj, KbPodGroupDialect *dialect, GError **error)
{
    static const struct {
        const char *api_version;
        KbPodGroupDialect dialect;
    } dialects[] = {
        {"scheduling.incubator.k8s.io/v1alpha1", KB_PODGROUP_KUBE_BATCH},
        {"scheduling.volcano.sh/v1beta1", KB_PODGROUP_VOLCANO},
        {"scheduling.x-k8s.io/v1alpha1", KB_PODGROUP_X_K8S},
    };
    const char *api;
    if (!kb_decode_string(obj, "apiVersion", KB_MAX_NAME_LEN, &api, error))
        return FALSE;
    for (gsize i = 0; api != NULL && i < G_N_ELEMENTS(dialects); i++) {
        if (strcmp(api, dialects[i].api_version) == 0) {
            *dialect = dialects[i].dialect;
            return TRUE;
        }
    }
    g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "apiVersion: unknown PodGroup API \"%s\"",
                api != NULL ? api : "");
    return FALSE;
}

const char *kb_pod_group_api_version(KbPodGroupDialect dialect)
{
    switch (dialect) {
    case KB_PODGROUP_KUBE_BATCH:
        return "scheduling.incubator.k8s.io/v1alpha1";
    case KB_PODGROUP_X_K8S:
        return "scheduling.x-k8s.io/v1alpha1";
    case KB_PODGROUP_VOLCANO:
    default:
        return "scheduling.volcano.sh/v1beta1";
    }
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
    /* A group of zero is a group of one: every pod still needs a place. */
    pg->min_member = min_member > 0 ? (gint32)min_member : 1;
    pg->schedule_timeout_seconds = (gint32)timeout;
    return TRUE;
}

static gboolean podgroup_body(json_object *obj, KbPodGroup *pg, GError **error)
{
    json_object *spec, *status;
    if (!podgroup_dialect(obj, &pg->dialect, error) ||
        !kb_decode_member(obj, "spec", json_type_object, &spec, error) ||
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
    return queue_state(obj, "spec", q, error) && queue_state(obj, "status", q, error);
}

KbQueue *kb_queue_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbQueue) q = g_new0(KbQueue, 1);
    if (!kb_meta_decode(obj, KB_KIND_QUEUE, keep_raw, &q->meta, error) ||
        !queue_body(obj, q, error)) {
        kb_decode_prefix_object(error, "queue", &q->meta);
        return NULL;
    }
    /* Queues are cluster-scoped; a namespace in the object is ignored. */
    q->meta.namespace_ = NULL;
    return g_steal_pointer(&q);
}
