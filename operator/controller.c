/*
 * The TFJob controller: informers, work queue and action execution (see controller.h).
 */
#include "operator/controller.h"

#include <string.h>

#include "kube/kb-informer.h"
#include "kube/kb-tfconv.h"
#include "kube/kb-tfjob.h"
#include "operator/tf-autoscale.h"
#include "operator/tf-build.h"
#include "operator/tf-plan.h"

#define OPERATOR_SELECTOR TF_LABEL_OPERATOR "=" TF_OPERATOR_NAME
#define RETRY_BASE_MS     200
#define RETRY_MAX_MS      60000
#define KEYS_PER_DISPATCH 16
#define TF_NATIVE_GV      "scheduling.k8s.io/v1beta1"

struct TfController {
    KbClient *client;
    KbRecorder *recorder;
    KbMetrics *metrics;
    char *namespace_;
    char *gang;
    gboolean autoscaling;
    guint resync_seconds;
    guint autoscale_seconds;
    gboolean active;

    KbInformer *jobs_v1;
    KbInformer *jobs_alpha;
    gboolean v1_missing, alpha_missing, groups_missing, all_groups_missing, workloads_missing;
    KbInformer *pods, *services, *groups, *workloads;
    TfGangApi api;         /* the flag's, then what discovery found for TF_GANG_API_AUTO */
    gboolean api_resolved; /* nothing is reconciled before (with gang scheduling on) */
    guint discovery_failures;
    guint discovery_id;
    struct Discovery *discovery; /* the request in flight, or NULL */
    /* Autoscaling inputs (only with enable_autoscaling). */
    KbInformer *nodes, *all_pods, *all_groups, *priorities;

    GQueue queue;           /* job keys "ns/name" (owned by @queued) */
    GHashTable *queued;     /* key -> NULL */
    GHashTable *delayed;    /* key -> DelayedKey* */
    GHashTable *failures;   /* key -> GUINT count */
    GHashTable *deleted;    /* pod uid -> NULL: deleted by us, maybe still in the cache */
    GHashTable *last_scale; /* key -> gint64* monotonic time (us) of the last decision */
    guint idle_id;
    guint resync_id;
    guint autoscale_id;

    gboolean synced_logged;
    guint64 reconciles, errors, orphans_deleted;
    KbMetric *m_reconciles, *m_errors, *m_actions, *m_jobs, *m_orphans, *m_leader;
};

typedef struct {
    TfController *c;
    char *key;
    gint64 due; /* monotonic microseconds */
    guint source;
} DelayedKey;

/* ---- work queue --------------------------------------------------------------------------- */

static gboolean process_queue(gpointer data);
static gboolean caches_synced(TfController *c);

/* Start draining the queue when there is work, the controller is active and every cache has
 * synced (process_queue checks the last again). */
static void kick(TfController *c)
{
    if (c->idle_id == 0 && c->active && !g_queue_is_empty(&c->queue) && caches_synced(c))
        c->idle_id = g_idle_add(process_queue, c);
}

static void enqueue(TfController *c, const char *key)
{
    if (key == NULL || g_hash_table_contains(c->queued, key))
        return;
    char *k = g_strdup(key);
    g_hash_table_add(c->queued, k);
    g_queue_push_tail(&c->queue, k);
    kick(c);
}

static void delayed_free(gpointer p)
{
    DelayedKey *d = p;
    if (d->source != 0)
        g_source_remove(d->source);
    g_free(d->key);
    g_free(d);
}

static gboolean delayed_fire(gpointer data)
{
    DelayedKey *d = data;
    TfController *c = d->c;
    g_autofree char *key = g_strdup(d->key);
    d->source = 0;
    g_hash_table_remove(c->delayed, key);
    enqueue(c, key);
    return G_SOURCE_REMOVE;
}

/* Queue @key after @ms, unless it is already due sooner. */
static void enqueue_after(TfController *c, const char *key, guint ms)
{
    gint64 due = g_get_monotonic_time() + (gint64)ms * 1000;
    DelayedKey *d = g_hash_table_lookup(c->delayed, key);
    if (d != NULL && d->due <= due)
        return;
    d = g_new0(DelayedKey, 1);
    d->c = c;
    d->key = g_strdup(key);
    d->due = due;
    d->source = g_timeout_add(ms, delayed_fire, d);
    g_hash_table_replace(c->delayed, d->key, d);
}

/* Exponential backoff per key: 0.2 s, 0.4 s, ... up to 60 s. */
static void retry_later(TfController *c, const char *key)
{
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(c->failures, key)) + 1;
    g_hash_table_replace(c->failures, g_strdup(key), GUINT_TO_POINTER(n));
    guint64 ms = (guint64)RETRY_BASE_MS << MIN(n - 1, 20u);
    enqueue_after(c, key, (guint)MIN(ms, RETRY_MAX_MS));
}

static char *job_key(const char *namespace_, const char *name)
{
    return g_strdup_printf("%s/%s", namespace_ != NULL ? namespace_ : "", name);
}

/* ---- informer lookups ---------------------------------------------------------------------- */

static const KbResourceType *job_type_of(TfController *c, KbInformer *inf)
{
    return inf == c->jobs_alpha ? &kb_type_tfjobs_v1alpha1 : &kb_type_tfjobs_v1;
}

/* The job's record and the informer holding it, or NULL. */
static KbObjectMeta *lookup_job(TfController *c, const char *ns, const char *name,
                                KbInformer **from)
{
    KbInformer *order[] = {c->jobs_v1, c->jobs_alpha};
    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
        KbObjectMeta *m = order[i] != NULL ? kb_informer_get(order[i], ns, name) : NULL;
        if (m != NULL) {
            *from = order[i];
            return m;
        }
    }
    return NULL;
}

static const char *label(const KbObjectMeta *m, const char *key)
{
    return m->labels != NULL ? g_hash_table_lookup(m->labels, g_intern_string(key)) : NULL;
}

static gboolean controlled_by(const KbObjectMeta *m, const char *uid)
{
    for (guint i = 0; i < m->n_owners; i++)
        if (m->owners[i].controller && g_strcmp0(m->owners[i].uid, uid) == 0)
            return TRUE;
    return FALSE;
}

/* Records of @inf in @ns labelled with job @name (and controlled by @uid when non-NULL). */
static GPtrArray *owned(KbInformer *inf, const char *ns, const char *name, const char *uid)
{
    GPtrArray *out = g_ptr_array_new();
    if (inf == NULL)
        return out;
    g_autoptr(GPtrArray) all = kb_informer_list(inf);
    for (guint i = 0; i < all->len; i++) {
        KbObjectMeta *m = g_ptr_array_index(all, i);
        if (g_strcmp0(m->namespace_, ns) != 0 || g_strcmp0(label(m, TF_LABEL_JOB_NAME), name) != 0)
            continue;
        if (uid != NULL && !controlled_by(m, uid))
            continue;
        g_ptr_array_add(out, m);
    }
    return out;
}

/* ---- event handlers ----------------------------------------------------------------------- */

static void on_job_add(gpointer obj, gpointer data)
{
    TfController *c = data;
    g_autofree char *key = kb_object_key(obj);
    enqueue(c, key);
}

static void on_job_update(gpointer old_obj, gpointer new_obj, gpointer data)
{
    on_job_add(new_obj, data);
}

static void on_owned_change(gpointer obj, gpointer data)
{
    TfController *c = data;
    KbObjectMeta *m = obj;
    const char *job = label(m, TF_LABEL_JOB_NAME);
    if (job == NULL)
        return;
    g_autofree char *key = job_key(m->namespace_, job);
    enqueue(c, key);
}

static void on_owned_update(gpointer old_obj, gpointer new_obj, gpointer data)
{
    on_owned_change(new_obj, data);
}

static void on_pod_delete(gpointer obj, gpointer data)
{
    TfController *c = data;
    KbObjectMeta *m = obj;
    if (m->uid != NULL)
        g_hash_table_remove(c->deleted, m->uid);
    on_owned_change(obj, data);
}

static void enqueue_all(TfController *c)
{
    KbInformer *infs[] = {c->jobs_v1, c->jobs_alpha};
    for (guint k = 0; k < G_N_ELEMENTS(infs); k++) {
        if (infs[k] == NULL)
            continue;
        g_autoptr(GPtrArray) all = kb_informer_list(infs[k]);
        for (guint i = 0; i < all->len; i++)
            on_job_add(g_ptr_array_index(all, i), c);
    }
}

static void on_jobs_synced(gpointer data)
{
    enqueue_all(data);
    kick(data);
}

/* A cache of pods, services or PodGroups synced: work queued meanwhile may now run. */
static void on_owned_synced(gpointer data)
{
    kick(data);
}

static KbInformer *job_informer(TfController *c, const KbResourceType *type);

static void on_v1_missing(gpointer data)
{
    TfController *c = data;
    c->v1_missing = TRUE;
    /* Only the seed's version is served: watch that one instead. */
    if (c->jobs_alpha == NULL) {
        g_message("kubeflow.org/v1 tfjobs not served; watching kubeflow.org/v1alpha1");
        c->jobs_alpha = job_informer(c, &kb_type_tfjobs_v1alpha1);
        kb_informer_start(c->jobs_alpha);
    }
}

static void on_alpha_missing(gpointer data)
{
    ((TfController *)data)->alpha_missing = TRUE;
    kick(data);
}

static void on_groups_missing(gpointer data)
{
    ((TfController *)data)->groups_missing = TRUE;
    kick(data);
}

static void on_workloads_missing(gpointer data)
{
    ((TfController *)data)->workloads_missing = TRUE;
    kick(data);
}

static KbInformer *job_informer(TfController *c, const KbResourceType *type)
{
    KbInformerOptions o = {.type = type, .namespace_ = c->namespace_, .keep_raw = TRUE};
    KbInformerHandlers h = {.on_add = on_job_add,
                            .on_update = on_job_update,
                            .on_delete = on_job_add,
                            .on_synced = on_jobs_synced,
                            .on_missing =
                                    type == &kb_type_tfjobs_v1 ? on_v1_missing : on_alpha_missing};
    return kb_informer_new(c->client, &o, &h, c);
}

static KbInformer *owned_informer(TfController *c, const KbResourceType *type, KbDecodeFunc decode,
                                  gboolean is_pods)
{
    KbInformerOptions o = {.type = type,
                           .namespace_ = c->namespace_,
                           .label_selector = OPERATOR_SELECTOR,
                           .decode = decode};
    KbInformerHandlers h = {.on_add = on_owned_change,
                            .on_update = on_owned_update,
                            .on_delete = is_pods ? on_pod_delete : on_owned_change,
                            .on_synced = on_owned_synced,
                            .on_missing = type == &kb_type_workloads_native ? on_workloads_missing
                                          : type != &kb_type_pods && type != &kb_type_services
                                                  ? on_groups_missing
                                                  : NULL};
    return kb_informer_new(c->client, &o, &h, c);
}

/* ---- which gang API ------------------------------------------------------------------------ */

static const KbResourceType *group_type(TfGangApi api)
{
    switch (api) {
    case TF_GANG_API_KUBE_BATCH:
        return &kb_type_pod_groups_kube_batch;
    case TF_GANG_API_X_K8S:
        return &kb_type_pod_groups_x_k8s;
    case TF_GANG_API_NATIVE:
        return &kb_type_pod_groups_native;
    default:
        return &kb_type_pod_groups_volcano;
    }
}

/* The API is known: watch the job's PodGroups (and Workloads) in it. */
static void start_groups(TfController *c)
{
    c->api_resolved = TRUE;
    c->groups = owned_informer(c, group_type(c->api), NULL, FALSE);
    kb_informer_start(c->groups);
    if (c->api == TF_GANG_API_NATIVE) {
        c->workloads = owned_informer(c, &kb_type_workloads_native, NULL, FALSE);
        kb_informer_start(c->workloads);
    }
}

/* A discovery request in flight: the controller may be freed before it is answered (the client
 * then still calls back), so the callback holds this rather than the controller. */
struct Discovery {
    TfController *c; /* NULL once the controller is gone */
};

static void discover(TfController *c);

static gboolean discover_again(gpointer data)
{
    TfController *c = data;
    c->discovery_id = 0;
    discover(c);
    return G_SOURCE_REMOVE;
}

/* Does a discovery document (APIResourceList) list @plural? */
static gboolean lists_resource(json_object *doc, const char *plural)
{
    json_object *list;
    if (doc == NULL || !json_object_object_get_ex(doc, "resources", &list) ||
        !json_object_is_type(list, json_type_array))
        return FALSE;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *name;
        if (json_object_object_get_ex(json_object_array_get_idx(list, i), "name", &name) &&
            g_strcmp0(json_object_get_string(name), plural) == 0)
            return TRUE;
    }
    return FALSE;
}

/* --gang-api auto: the server's answer decides, never a guess. 200 listing podgroups: native;
 * 404 (or a version without podgroups): Volcano; anything else (refused, unreachable, 5xx) is
 * asked again with a doubling delay, and nothing is reconciled meanwhile. */
static void on_discovered(const KbResponse *resp, gpointer data)
{
    struct Discovery *d = data;
    TfController *c = d->c;
    g_free(d);
    if (c == NULL)
        return;
    c->discovery = NULL;
    if (resp->http_status == 200 || resp->http_status == 404) {
        c->api = resp->http_status == 200 && lists_resource(resp->body, "podgroups")
                         ? TF_GANG_API_NATIVE
                         : TF_GANG_API_VOLCANO;
        g_message("--gang-api auto: /apis/%s %s; PodGroups in %s", TF_NATIVE_GV,
                  resp->http_status == 200 ? "served" : "not served", tf_gang_api_version(c->api));
        start_groups(c);
        return;
    }
    guint ms = RETRY_BASE_MS << MIN(c->discovery_failures, 9);
    c->discovery_failures++;
    g_warning("--gang-api auto: discovery of /apis/%s failed (%s); asking again in %u ms",
              TF_NATIVE_GV, resp->error != NULL ? resp->error->message : "no answer",
              MIN(ms, RETRY_MAX_MS));
    c->discovery_id = g_timeout_add(MIN(ms, RETRY_MAX_MS), discover_again, c);
}

static void discover(TfController *c)
{
    KbRequest req = {.method = "GET", .path = "/apis/" TF_NATIVE_GV};
    c->discovery = g_new0(struct Discovery, 1);
    c->discovery->c = c;
    kb_client_call_async(c->client, &req, on_discovered, c->discovery);
}

static void on_all_groups_missing(gpointer data)
{
    ((TfController *)data)->all_groups_missing = TRUE;
}

static KbInformer *plain_informer(TfController *c, const KbResourceType *type, KbDecodeFunc decode)
{
    KbInformerOptions o = {.type = type, .decode = decode};
    KbInformerHandlers h = {
            .on_missing = type == &kb_type_pod_groups_volcano ? on_all_groups_missing : NULL};
    return kb_informer_new(c->client, &o, &h, c);
}

/* ---- executing a plan -------------------------------------------------------------------- */

typedef struct {
    TfController *c;
    const KbTfJob *job;
    json_object *raw; /* the job object the plan was made from (borrowed) */
    const KbResourceType *job_type;
    GPtrArray *pods; /* KbPod* observed */
} Exec;

static gboolean tolerate(GError **error, KbErrorCode ok_code)
{
    if (*error != NULL && g_error_matches(*error, KB_ERROR, ok_code)) {
        g_clear_error(error);
        return TRUE;
    }
    return *error == NULL;
}

static const char *pod_uid(const Exec *x, const char *name)
{
    for (guint i = 0; i < x->pods->len; i++) {
        KbPod *p = g_ptr_array_index(x->pods, i);
        if (g_strcmp0(p->meta.name, name) == 0)
            return p->meta.uid;
    }
    return NULL;
}

/* PUT /status with the resourceVersion of the object the plan was made from. A 409 is returned
 * as is: the caller reads the job again and plans again from what it reads, so that a condition
 * someone (often our own previous pass, not yet in the cache) already wrote is not set, nor its
 * event recorded, twice. */
static gboolean write_status(Exec *x, json_object *status, GError **error)
{
    json_object *body = NULL;
    json_object_deep_copy(x->raw, &body, NULL);
    json_object_object_add(body, "status", json_object_get(status));
    json_object *r = kb_client_update(x->c->client, x->job_type, x->job->meta.namespace_,
                                      x->job->meta.name, "status", body, error);
    json_object_put(body);
    if (r == NULL)
        return FALSE;
    json_object_put(r);
    return TRUE;
}

static gboolean set_runtime_id(Exec *x, const char *id, GError **error)
{
    json_object *body = NULL, *spec;
    json_object_deep_copy(x->raw, &body, NULL);
    if (!json_object_object_get_ex(body, "spec", &spec) ||
        !json_object_is_type(spec, json_type_object)) {
        spec = json_object_new_object();
        json_object_object_add(body, "spec", spec);
    }
    json_object_object_add(spec, "RuntimeId", json_object_new_string(id));
    json_object *r = kb_client_update(x->c->client, x->job_type, x->job->meta.namespace_,
                                      x->job->meta.name, NULL, body, error);
    json_object_put(body);
    if (r != NULL)
        json_object_put(r);
    return r != NULL;
}

static const KbResourceType *created_type(const TfController *c, TfActionType t)
{
    return t == TF_ACTION_CREATE_POD        ? &kb_type_pods
           : t == TF_ACTION_CREATE_SERVICE  ? &kb_type_services
           : t == TF_ACTION_CREATE_WORKLOAD ? &kb_type_workloads_native
                                            : group_type(c->api);
}

/* Every delete the operator makes is said in its log and as an event on the job. */
static void said_delete(Exec *x, const char *kind, const char *name)
{
    g_message("tfjob %s/%s: deleting %s %s", x->job->meta.namespace_ ? x->job->meta.namespace_ : "",
              x->job->meta.name, kind, name);
    if (x->c->recorder != NULL)
        kb_recorder_event(x->c->recorder, &x->job->meta, tf_build_api_version(x->job), "TFJob",
                          "Normal",
                          g_str_equal(kind, "pod")        ? "SuccessfulDeletePod"
                          : g_str_equal(kind, "service")  ? "SuccessfulDeleteService"
                          : g_str_equal(kind, "workload") ? "SuccessfulDeleteWorkload"
                                                          : "SuccessfulDeletePodGroup",
                          "Deleted %s: %s", kind, name);
}

static gboolean delete_child(Exec *x, const KbResourceType *type, const char *kind,
                             const char *name, GError **error)
{
    kb_client_delete(x->c->client, type, x->job->meta.namespace_, name, NULL, error);
    if (*error == NULL)
        said_delete(x, kind, name);
    return tolerate(error, KB_ERROR_NOT_FOUND);
}

/* The Workload of a finished job goes with its PodGroup (native API), when the job controls it. */
static gboolean delete_workload(Exec *x, const char *name, GError **error)
{
    KbObjectMeta *w = x->c->workloads != NULL
                              ? kb_informer_get(x->c->workloads, x->job->meta.namespace_, name)
                              : NULL;
    if (w == NULL || w->deletion_timestamp != 0 || !controlled_by(w, x->job->meta.uid))
        return TRUE;
    return delete_child(x, &kb_type_workloads_native, "workload", name, error);
}

static gboolean execute(Exec *x, const TfAction *a, GError **error)
{
    KbClient *cl = x->c->client;
    const char *ns = x->job->meta.namespace_;
    json_object *r;
    switch (a->type) {
    case TF_ACTION_SET_RUNTIME_ID:
        return set_runtime_id(x, a->name, error);
    case TF_ACTION_CREATE_WORKLOAD:
    case TF_ACTION_CREATE_POD_GROUP:
    case TF_ACTION_CREATE_SERVICE:
    case TF_ACTION_CREATE_POD:
        r = kb_client_create(cl, created_type(x->c, a->type), ns, a->body, error);
        if (r != NULL)
            json_object_put(r);
        return tolerate(error, KB_ERROR_ALREADY_EXISTS);
    case TF_ACTION_RECORD_RESTART:
        g_message("tfjob %s/%s: replica %s restarts: %s", ns ? ns : "", x->job->meta.name, a->name,
                  json_object_to_json_string(a->body));
        r = kb_client_patch(cl, &kb_type_services, ns, a->name, NULL, KB_PATCH_MERGE,
                            json_object_to_json_string(a->body), error);
        if (r != NULL)
            json_object_put(r);
        return r != NULL;
    case TF_ACTION_DELETE_POD: {
        const char *uid = pod_uid(x, a->name);
        if (!delete_child(x, &kb_type_pods, "pod", a->name, error))
            return FALSE;
        if (uid != NULL)
            g_hash_table_add(x->c->deleted, g_strdup(uid));
        return TRUE;
    }
    case TF_ACTION_DELETE_SERVICE:
        return delete_child(x, &kb_type_services, "service", a->name, error);
    case TF_ACTION_DELETE_POD_GROUP:
        return delete_child(x, group_type(x->c->api), "podgroup", a->name, error) &&
               delete_workload(x, a->name, error);
    case TF_ACTION_UPDATE_STATUS:
        return write_status(x, a->body, error);
    case TF_ACTION_DELETE_JOB: {
        KbDeleteOptions o = {.propagation_policy = "Background",
                             .precondition_uid = x->job->meta.uid};
        g_message("tfjob %s/%s: ttlSecondsAfterFinished passed; deleting the job", ns ? ns : "",
                  a->name);
        kb_client_delete(cl, x->job_type, ns, a->name, &o, error);
        return tolerate(error, KB_ERROR_NOT_FOUND);
    }
    case TF_ACTION_EVENT:
        if (x->c->recorder != NULL)
            kb_recorder_event(x->c->recorder, &x->job->meta, tf_build_api_version(x->job), "TFJob",
                              a->event_type, a->reason, "%s", a->message);
        g_message("tfjob %s/%s: %s: %s", ns, x->job->meta.name, a->reason, a->message);
        return TRUE;
    }
    return TRUE;
}

/* ---- autoscaling inputs --------------------------------------------------------------------- */

static gint64 idle_gpus(TfController *c)
{
    gint64 free = 0;
    g_autoptr(GHashTable) used = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GPtrArray) pods = kb_informer_list(c->all_pods);
    g_autoptr(GPtrArray) nodes = kb_informer_list(c->nodes);
    for (guint i = 0; i < pods->len; i++) {
        KbPod *p = g_ptr_array_index(pods, i);
        if (p->node_name == NULL || kb_pod_is_terminated(p))
            continue;
        gint64 n = GPOINTER_TO_SIZE(g_hash_table_lookup(used, p->node_name));
        g_hash_table_insert(
                used, (gpointer)p->node_name,
                GSIZE_TO_POINTER(n + kb_resource_whole_gpus(p->requests.v[KB_RES_GPU])));
    }
    for (guint i = 0; i < nodes->len; i++) {
        KbNode *n = g_ptr_array_index(nodes, i);
        if (!n->ready || n->unschedulable)
            continue;
        gint64 u = GPOINTER_TO_SIZE(g_hash_table_lookup(used, g_intern_string(n->meta.name)));
        free += MAX(n->allocatable.v[KB_RES_GPU] / KB_GPU_MILLI - u, 0);
    }
    return free;
}

static gint32 priority_of(TfController *c, const char *class_name)
{
    KbPriorityClass *pc =
            class_name != NULL ? kb_informer_get(c->priorities, NULL, class_name) : NULL;
    return pc != NULL ? pc->value : 0;
}

/* The decision for @job, or FALSE when none is due (cool-down, not dynamic, inputs not synced). */
static gboolean autoscale(TfController *c, const char *key, const KbTfJob *job,
                          TfScaleDecision *out)
{
    /* Decide only on complete inputs: a group or class not yet listed would be a wrong
     * decision, and a shrink deletes workers. */
    if (!c->autoscaling || !job->dynamic_workers || c->nodes == NULL ||
        !kb_informer_has_synced(c->nodes) || !kb_informer_has_synced(c->all_pods) ||
        !(kb_informer_has_synced(c->all_groups) || c->all_groups_missing) ||
        !kb_informer_has_synced(c->priorities))
        return FALSE;
    gint64 now = g_get_monotonic_time();
    gint64 *last = g_hash_table_lookup(c->last_scale, key);
    if (last != NULL && now - *last < (gint64)c->autoscale_seconds * G_USEC_PER_SEC)
        return FALSE;
    g_autoptr(GArray) waiting = g_array_new(FALSE, TRUE, sizeof(TfWaitingGroup));
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) groups = kb_informer_list(c->all_groups);
    for (guint i = 0; i < groups->len; i++) {
        KbPodGroup *g = g_ptr_array_index(groups, i);
        if (g_strcmp0(g->meta.namespace_, job->meta.namespace_) == 0 &&
            g_strcmp0(g->meta.name, job->meta.name) == 0)
            continue; /* the job's own group */
        if (g->phase != NULL && strcmp(g->phase, "Pending") != 0 &&
            strcmp(g->phase, "Inqueue") != 0)
            continue;
        char *name = kb_object_key(&g->meta);
        g_ptr_array_add(names, name);
        TfWaitingGroup w = {.name = name,
                            .queue = g->queue,
                            .priority = priority_of(c, g->priority_class_name),
                            .gpus_needed = kb_resource_whole_gpus(g->min_resources.v[KB_RES_GPU])};
        g_array_append_val(waiting, w);
    }
    tf_autoscale_decide(job, priority_of(c, job->priority_class),
                        (const TfWaitingGroup *)(void *)waiting->data, waiting->len, idle_gpus(c),
                        out);
    if (out->kind == TF_SCALE_NONE)
        return FALSE;
    gint64 *stamp = g_new(gint64, 1);
    *stamp = now;
    g_hash_table_replace(c->last_scale, g_strdup(key), stamp);
    return TRUE;
}

/* ---- reconcile ---------------------------------------------------------------------------- */

static const KbOwnerRef *controller_ref(const KbObjectMeta *m)
{
    for (guint i = 0; i < m->n_owners; i++)
        if (m->owners[i].controller && g_strcmp0(m->owners[i].kind, "TFJob") == 0)
            return &m->owners[i];
    return NULL;
}

/* Is the TFJob @owner names gone? A live GET decides, never the cache: 1 when the server says
 * 404 or has a job of that name with another uid, 0 when the owner exists, -1 on error. @why
 * receives what the server said (static string). */
static int owner_gone(TfController *c, const char *ns, const KbOwnerRef *owner, const char **why,
                      GError **error)
{
    const KbResourceType *type = g_strcmp0(owner->api_version, "kubeflow.org/v1alpha1") == 0
                                         ? &kb_type_tfjobs_v1alpha1
                                         : &kb_type_tfjobs_v1;
    g_autoptr(GError) e = NULL;
    json_object *job = kb_client_get(c->client, type, ns, owner->name, &e);
    if (job == NULL && g_error_matches(e, KB_ERROR, KB_ERROR_NOT_FOUND)) {
        *why = "not found";
        return 1;
    }
    if (job == NULL) {
        g_propagate_prefixed_error(error, g_steal_pointer(&e),
                                   "tfjob %s/%s: confirming the owner is gone: ", ns ? ns : "",
                                   owner->name);
        return -1;
    }
    json_object *meta, *uid = NULL;
    if (json_object_object_get_ex(job, "metadata", &meta))
        json_object_object_get_ex(meta, "uid", &uid);
    gboolean other = g_strcmp0(json_object_get_string(uid), owner->uid) != 0;
    json_object_put(job);
    *why = "replaced by a job with another uid";
    return other ? 1 : 0;
}

/*
 * The job @name is not in the cache: delete what it controlled (garbage collection does it on a
 * real cluster; the test API server has none). Only once a live GET confirms that the owner the
 * child names is gone: a cache that lags (a relist after an outage, a restart whose job list is
 * slow) must never cost a running job its pods. Each deletion is logged and recorded as an event
 * on the child.
 */
static gboolean cleanup_orphans(TfController *c, const char *ns, const char *name, GError **error)
{
    struct {
        KbInformer *inf;
        const KbResourceType *type;
        const char *api_version, *kind;
    } kinds[] = {{c->pods, &kb_type_pods, "v1", "Pod"},
                 {c->services, &kb_type_services, "v1", "Service"},
                 {c->groups, group_type(c->api), tf_gang_api_version(c->api), "PodGroup"},
                 {c->workloads, &kb_type_workloads_native, TF_NATIVE_GV, "Workload"}};
    /* owner uid -> verdict: GINT_TO_POINTER(1) gone, (2) alive */
    g_autoptr(GHashTable) verdicts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
        g_autoptr(GPtrArray) list = owned(kinds[k].inf, ns, name, NULL);
        for (guint i = 0; i < list->len; i++) {
            KbObjectMeta *m = g_ptr_array_index(list, i);
            const KbOwnerRef *owner = controller_ref(m);
            if (m->deletion_timestamp != 0 || owner == NULL || owner->uid == NULL)
                continue;
            int v = GPOINTER_TO_INT(g_hash_table_lookup(verdicts, owner->uid));
            const char *why = "not found";
            if (v == 0) {
                int gone = owner_gone(c, ns, owner, &why, error);
                if (gone < 0)
                    return FALSE;
                v = gone ? 1 : 2;
                g_hash_table_insert(verdicts, g_strdup(owner->uid), GINT_TO_POINTER(v));
                if (!gone)
                    g_message("tfjob %s/%s: not in the cache but still on the server; keeping "
                              "its children",
                              ns ? ns : "", name);
            }
            if (v != 1)
                continue;
            KbDeleteOptions o = {.precondition_uid = m->uid};
            /* 404: gone already; 409: the uid precondition failed, a new object holds the
             * name. Neither is ours to delete any more. */
            if (!kb_client_delete(c->client, kinds[k].type, ns, m->name, &o, error)) {
                if (!tolerate(error, KB_ERROR_NOT_FOUND) && !tolerate(error, KB_ERROR_CONFLICT))
                    return FALSE;
                continue;
            }
            c->orphans_deleted++;
            if (c->m_orphans != NULL)
                kb_metric_inc(c->m_orphans);
            g_message("tfjob %s/%s (uid %s) is gone (%s on the server): deleted its %s %s",
                      ns ? ns : "", name, owner->uid, why, kinds[k].kind, m->name);
            if (c->recorder != NULL)
                kb_recorder_event(c->recorder, m, kinds[k].api_version, kinds[k].kind, "Normal",
                                  "OwnerDeleted", "TFJob %s (uid %s) is gone (%s): deleted %s",
                                  name, owner->uid, why, m->name);
        }
    }
    return TRUE;
}

static GPtrArray *observed_pods(TfController *c, const KbTfJob *job)
{
    GPtrArray *pods = owned(c->pods, job->meta.namespace_, job->meta.name, job->meta.uid);
    for (guint i = 0; i < pods->len;) {
        KbPod *p = g_ptr_array_index(pods, i);
        /* Deleted by us but not yet gone from the cache: never count a failure twice. */
        if (p->meta.uid != NULL && g_hash_table_contains(c->deleted, p->meta.uid))
            g_ptr_array_remove_index(pods, i);
        else
            i++;
    }
    return pods;
}

/* Execute @plan. Events go last, once everything else (the status with the conditions they
 * announce, in particular) is written: a pass that fails half-way records none, and the pass that
 * succeeds records each once. */
static gboolean run_plan(TfController *c, const char *key, Exec *x, TfPlan *plan, GError **error)
{
    for (int events = 0; events < 2; events++) {
        for (guint i = 0; i < plan->actions->len; i++) {
            const TfAction *a = g_ptr_array_index(plan->actions, i);
            if ((a->type == TF_ACTION_EVENT) != events)
                continue;
            if (c->m_actions != NULL)
                kb_series_inc(
                        kb_metric_with(c->m_actions, tf_action_type_to_string(a->type), NULL));
            if (!execute(x, a, error)) {
                g_prefix_error(error, "tfjob %s: %s %s: ", key, tf_action_type_to_string(a->type),
                               a->name != NULL ? a->name : "");
                return FALSE;
            }
        }
    }
    if (plan->requeue_after > 0)
        enqueue_after(c, key, (guint)MIN(plan->requeue_after, 86400) * 1000);
    return TRUE;
}

/* A TFJob the decoder refuses (a field of the wrong type, a limit crossed): the user still gets
 * a Failed condition naming the field, written once; retrying cannot fix the object. */
static gboolean fail_undecodable(TfController *c, KbObjectMeta *jm, const KbResourceType *type,
                                 const char *message, GError **error)
{
    json_object *st = NULL, *conds = NULL;
    if (json_object_object_get_ex(jm->raw, "status", &st) &&
        json_object_object_get_ex(st, "conditions", &conds) &&
        json_object_is_type(conds, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(conds); i++) {
            json_object *cond = json_object_array_get_idx(conds, i), *t, *m;
            if (json_object_object_get_ex(cond, "type", &t) &&
                g_strcmp0(json_object_get_string(t), "Failed") == 0 &&
                json_object_object_get_ex(cond, "message", &m) &&
                g_strcmp0(json_object_get_string(m), message) == 0)
                return TRUE;
        }
    }
    g_warning("%s", message);
    if (c->recorder != NULL)
        kb_recorder_event(c->recorder, jm,
                          type == &kb_type_tfjobs_v1 ? "kubeflow.org/v1" : "kubeflow.org/v1alpha1",
                          "TFJob", "Warning", "InvalidTFJobSpec", "%s", message);
    g_autofree char *now = kb_time_format(g_get_real_time() / G_USEC_PER_SEC);
    json_object *body = NULL, *status = json_object_new_object(), *list = json_object_new_array();
    json_object *cond = json_object_new_object();
    json_object_object_add(cond, "type", json_object_new_string("Failed"));
    json_object_object_add(cond, "status", json_object_new_string("True"));
    json_object_object_add(cond, "reason", json_object_new_string("TFJobFailed"));
    json_object_object_add(cond, "message", json_object_new_string(message));
    json_object_object_add(cond, "lastUpdateTime", json_object_new_string(now));
    json_object_object_add(cond, "lastTransitionTime", json_object_new_string(now));
    json_object_array_add(list, cond);
    json_object_object_add(status, "conditions", list);
    if (type == &kb_type_tfjobs_v1alpha1) {
        json_object_object_add(status, "phase", json_object_new_string("Failed"));
        json_object_object_add(status, "state", json_object_new_string("Failed"));
        json_object_object_add(status, "reason", json_object_new_string(message));
    }
    json_object_deep_copy(jm->raw, &body, NULL);
    json_object_object_add(body, "status", status);
    json_object *r =
            kb_client_update(c->client, type, jm->namespace_, jm->name, "status", body, error);
    json_object_put(body);
    if (r != NULL)
        json_object_put(r);
    return r != NULL;
}

static void json_unref(json_object *o)
{
    json_object_put(o);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(json_object, json_unref)

/*
 * A job read through v1 that was written as v1alpha1 (a CRD that converts and stores v1; see
 * kb_tfconv_written_as_alpha) is run as the v1alpha1 job it is: its pod and service names, its
 * defaults, its status; it is converted here and written back through v1alpha1 (*@type), which
 * the API server converts to what it stores. Returns that view (new), or NULL for any other job.
 */
static json_object *alpha_view(json_object *raw, const KbResourceType **type)
{
    if (*type != &kb_type_tfjobs_v1 || !kb_tfconv_written_as_alpha(raw))
        return NULL;
    g_autoptr(GError) error = NULL;
    json_object *alpha = kb_tfconv_convert(raw, KB_TF_API_V1ALPHA1, &error);
    if (alpha == NULL) {
        /* changed through v1 into what v1alpha1 cannot say: it runs as the v1 job it now is */
        g_message("%s; running it as kubeflow.org/v1", error->message);
        return NULL;
    }
    *type = &kb_type_tfjobs_v1alpha1;
    return alpha;
}

/* Conflicts on the status write answered by reading the job again and planning again. */
#define STATUS_ATTEMPTS 3

static gboolean reconcile(TfController *c, const char *key, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(key, "/", 2);
    if (parts[0] == NULL || parts[1] == NULL)
        return TRUE;
    const char *ns = *parts[0] != '\0' ? parts[0] : NULL;
    KbInformer *from = NULL;
    KbObjectMeta *jm = lookup_job(c, ns, parts[1], &from);
    if (jm == NULL)
        return cleanup_orphans(c, ns, parts[1], error);
    if (jm->raw == NULL)
        return TRUE;
    const KbResourceType *jtype = job_type_of(c, from);
    g_autoptr(json_object) alpha = alpha_view(jm->raw, &jtype);
    json_object *raw = alpha != NULL ? alpha : jm->raw;
    g_autoptr(GError) decode_error = NULL;
    g_autoptr(KbTfJob) job = kb_tfjob_decode(raw, FALSE, &decode_error);
    if (job == NULL)
        return fail_undecodable(c, jm, jtype, decode_error->message, error);
    g_autoptr(GPtrArray) pods = observed_pods(c, job);
    g_autoptr(GPtrArray) services = owned(c->services, ns, job->meta.name, job->meta.uid);
    KbObjectMeta *group = c->groups != NULL ? kb_informer_get(c->groups, ns, job->meta.name) : NULL;
    if (group != NULL && !controlled_by(group, job->meta.uid))
        group = NULL;
    /* The worker count of a dynamic job is what its services say (status.autoscaling may be
     * pruned by the CRD's schema), so that scaling survives a restart of the operator. */
    job->status.workers =
            tf_plan_observed_workers(job, (KbObjectMeta *const *)services->pdata, services->len);
    TfScaleDecision scale;
    gboolean scaled = autoscale(c, key, job, &scale);
    json_object *fresh = NULL;
    gboolean ok = FALSE;
    for (int attempt = 1; !ok; attempt++) {
        TfObservation obs = {
                .job = job,
                .pods = (KbPod *const *)pods->pdata,
                .n_pods = pods->len,
                .services = (KbObjectMeta *const *)services->pdata,
                .n_services = services->len,
                .pod_group = group,
                .now = g_get_real_time() / G_USEC_PER_SEC,
                .gang_scheduler = c->gang,
                .gang_api = c->api,
                .scale = scaled ? &scale : NULL,
        };
        g_autoptr(TfPlan) plan = tf_plan_compute(&obs);
        Exec x = {.c = c,
                  .job = job,
                  .raw = fresh != NULL ? fresh : raw,
                  .job_type = jtype,
                  .pods = pods};
        ok = run_plan(c, key, &x, plan, error);
        if (ok || attempt == STATUS_ATTEMPTS ||
            !g_error_matches(*error, KB_ERROR, KB_ERROR_CONFLICT))
            break;
        /* Someone wrote the job since the cache saw it (often our own previous pass): read it
         * and plan again from what the server has, so no condition nor event is repeated. */
        g_clear_error(error);
        g_clear_pointer(&fresh, json_object_put);
        fresh = kb_client_get(c->client, jtype, ns, parts[1], error);
        if (fresh == NULL) {
            ok = tolerate(error, KB_ERROR_NOT_FOUND);
            break;
        }
        g_autoptr(KbTfJob) again = kb_tfjob_decode(fresh, FALSE, error);
        if (again == NULL || g_strcmp0(again->meta.uid, job->meta.uid) != 0) {
            ok = again != NULL; /* replaced: the new job gets its own pass */
            break;
        }
        again->status.workers = job->status.workers;
        kb_tfjob_free(job);
        job = g_steal_pointer(&again);
    }
    if (fresh != NULL)
        json_object_put(fresh);
    return ok;
}

static gboolean caches_synced(TfController *c)
{
    g_autofree char *reason = NULL;
    return tf_controller_ready(c, &reason);
}

static gboolean process_queue(gpointer data)
{
    TfController *c = data;
    /* Nothing is decided (above all, nothing deleted) before every cache is complete. */
    if (!caches_synced(c)) {
        c->idle_id = 0;
        return G_SOURCE_REMOVE;
    }
    if (!c->synced_logged) {
        c->synced_logged = TRUE;
        g_message("caches of tfjobs, pods, services and podgroups synced; reconciling");
    }
    for (guint n = 0; n < KEYS_PER_DISPATCH && c->active; n++) {
        char *key = g_queue_pop_head(&c->queue);
        if (key == NULL)
            break;
        g_hash_table_steal(c->queued, key);
        g_autoptr(GError) error = NULL;
        c->reconciles++;
        if (c->m_reconciles != NULL)
            kb_metric_inc(c->m_reconciles);
        if (reconcile(c, key, &error)) {
            g_hash_table_remove(c->failures, key);
        } else {
            c->errors++;
            if (c->m_errors != NULL)
                kb_metric_inc(c->m_errors);
            /* A conflict is the cache lagging behind our own writes: routine, not a warning. */
            if (g_error_matches(error, KB_ERROR, KB_ERROR_CONFLICT) ||
                g_error_matches(error, KB_ERROR, KB_ERROR_ALREADY_EXISTS))
                g_message("%s; retrying", error->message);
            else
                g_warning("%s", error != NULL ? error->message : key);
            retry_later(c, key);
        }
        g_free(key);
    }
    if (c->active && !g_queue_is_empty(&c->queue))
        return G_SOURCE_CONTINUE;
    c->idle_id = 0;
    return G_SOURCE_REMOVE;
}

static gboolean resync(gpointer data)
{
    enqueue_all(data);
    return G_SOURCE_CONTINUE;
}

/* ---- life cycle --------------------------------------------------------------------------- */

static void collect(KbMetrics *metrics, gpointer data)
{
    TfController *c = data;
    guint n = (c->jobs_v1 ? kb_informer_size(c->jobs_v1) : 0) +
              (c->jobs_alpha ? kb_informer_size(c->jobs_alpha) : 0);
    kb_metric_set(c->m_jobs, n);
    kb_metric_set(c->m_leader, c->active ? 1 : 0);
}

static void register_metrics(TfController *c)
{
    static const char *const action_label[] = {"action", NULL};
    if (c->metrics == NULL)
        return;
    c->m_reconciles = kb_metrics_counter(c->metrics, "tf_operator_reconciles_total",
                                         "Reconcile passes over TFJobs.", NULL);
    c->m_errors = kb_metrics_counter(c->metrics, "tf_operator_reconcile_errors_total",
                                     "Reconcile passes that failed and were retried.", NULL);
    c->m_actions = kb_metrics_counter(c->metrics, "tf_operator_actions_total",
                                      "Actions executed, by kind.", action_label);
    c->m_jobs = kb_metrics_gauge(c->metrics, "tf_operator_tfjobs", "TFJobs in the cache.", NULL);
    c->m_leader = kb_metrics_gauge(c->metrics, "tf_operator_leader",
                                   "1 while this instance reconciles (it leads, or runs without "
                                   "--leader-elect), 0 while it stands by.",
                                   NULL);
    kb_metrics_add_collector(c->metrics, collect, c);
}

TfController *tf_controller_new(KbClient *client, KbRecorder *recorder, KbMetrics *metrics,
                                const TfControllerOptions *opts)
{
    TfController *c = g_new0(TfController, 1);
    c->client = client;
    c->recorder = recorder;
    c->metrics = metrics;
    c->namespace_ =
            g_strdup(opts->namespace_ != NULL && *opts->namespace_ ? opts->namespace_ : NULL);
    c->gang = g_strdup(opts->gang_scheduler != NULL ? opts->gang_scheduler : "");
    c->autoscaling = opts->enable_autoscaling;
    c->resync_seconds = opts->resync_seconds > 0 ? opts->resync_seconds : 30;
    c->autoscale_seconds = opts->autoscale_seconds > 0 ? opts->autoscale_seconds : 30;
    c->api = opts->gang_api;
    c->active = TRUE;
    g_queue_init(&c->queue);
    c->queued = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    c->delayed = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, delayed_free);
    c->failures = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    c->deleted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    c->last_scale = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    register_metrics(c);
    return c;
}

void tf_controller_start(TfController *c)
{
    c->jobs_v1 = job_informer(c, &kb_type_tfjobs_v1);
    c->pods = owned_informer(c, &kb_type_pods, (KbDecodeFunc)kb_pod_decode, TRUE);
    c->services = owned_informer(c, &kb_type_services, NULL, FALSE);
    if (*c->gang != '\0' && c->api == TF_GANG_API_AUTO)
        discover(c);
    else if (*c->gang != '\0')
        start_groups(c);
    if (c->autoscaling) {
        c->nodes = plain_informer(c, &kb_type_nodes, (KbDecodeFunc)kb_node_decode);
        c->all_pods = plain_informer(c, &kb_type_pods, (KbDecodeFunc)kb_pod_decode);
        c->all_groups =
                plain_informer(c, &kb_type_pod_groups_volcano, (KbDecodeFunc)kb_pod_group_decode);
        c->priorities = plain_informer(c, &kb_type_priority_classes,
                                       (KbDecodeFunc)kb_priority_class_decode);
    }
    KbInformer *all[] = {c->pods,       c->services,   c->nodes,  c->all_pods,
                         c->all_groups, c->priorities, c->jobs_v1};
    for (guint i = 0; i < G_N_ELEMENTS(all); i++)
        if (all[i] != NULL)
            kb_informer_start(all[i]);
    c->resync_id = g_timeout_add_seconds(c->resync_seconds, resync, c);
    /* Scaling depends on other jobs' groups and on free GPUs: look again at that pace. */
    if (c->autoscaling)
        c->autoscale_id = g_timeout_add_seconds(c->autoscale_seconds, resync, c);
}

void tf_controller_set_active(TfController *c, gboolean active)
{
    c->active = active;
    if (active) {
        enqueue_all(c);
        if (c->idle_id == 0 && !g_queue_is_empty(&c->queue))
            c->idle_id = g_idle_add(process_queue, c);
    }
}

gboolean tf_controller_ready(TfController *c, char **reason)
{
    gboolean jobs = (c->jobs_v1 != NULL && kb_informer_has_synced(c->jobs_v1)) ||
                    (c->jobs_alpha != NULL && kb_informer_has_synced(c->jobs_alpha)) ||
                    (c->v1_missing && c->alpha_missing);
    const char *what =
            !jobs                                                 ? "tfjobs"
            : c->pods == NULL || !kb_informer_has_synced(c->pods) ? "pods"
            : !kb_informer_has_synced(c->services)                ? "services"
            : *c->gang != '\0' && !c->api_resolved ? "the gang API (discovery of " TF_NATIVE_GV ")"
            : c->groups != NULL && !c->groups_missing && !kb_informer_has_synced(c->groups)
                    ? "podgroups"
            : c->workloads != NULL && !c->workloads_missing && !kb_informer_has_synced(c->workloads)
                    ? "workloads"
                    : NULL;
    if (what == NULL)
        return TRUE;
    *reason = c->api_resolved || *c->gang == '\0' ? g_strdup_printf("cache of %s not synced", what)
                                                  : g_strdup_printf("%s not done", what);
    return FALSE;
}

TfGangApi tf_controller_gang_api(const TfController *c)
{
    return c->api_resolved ? c->api : TF_GANG_API_AUTO;
}

guint64 tf_controller_reconciles(const TfController *c)
{
    return c->reconciles;
}

guint64 tf_controller_errors(const TfController *c)
{
    return c->errors;
}

void tf_controller_free(TfController *c)
{
    if (c == NULL)
        return;
    if (c->idle_id != 0)
        g_source_remove(c->idle_id);
    if (c->resync_id != 0)
        g_source_remove(c->resync_id);
    if (c->autoscale_id != 0)
        g_source_remove(c->autoscale_id);
    if (c->discovery_id != 0)
        g_source_remove(c->discovery_id);
    if (c->discovery != NULL)
        c->discovery->c = NULL; /* freed by its callback */
    KbInformer *all[] = {c->jobs_v1, c->jobs_alpha, c->pods,       c->services,   c->groups,
                         c->nodes,   c->all_pods,   c->all_groups, c->priorities, c->workloads};
    for (guint i = 0; i < G_N_ELEMENTS(all); i++)
        if (all[i] != NULL)
            kb_informer_free(all[i]);
    g_queue_clear(&c->queue);
    g_hash_table_unref(c->queued);
    g_hash_table_unref(c->delayed);
    g_hash_table_unref(c->failures);
    g_hash_table_unref(c->deleted);
    g_hash_table_unref(c->last_scale);
    g_free(c->namespace_);
    g_free(c->gang);
    g_free(c);
}
