/*
 * The kube-batchd daemon (see the header): the glue between the informers, the scheduler core,
 * the binder, the status writer, the leader election and the metrics.
 */
#include "scheduler/daemon.h"

#include <string.h>

#include "kube/kb-httpd.h"
#include "kube/kb-informer.h"
#include "kube/kb-leader.h"
#include "kube/kb-recorder.h"
#include "scheduler/binder.h"
#include "scheduler/extender-server.h"
#include "scheduler/cache.h"
#include "scheduler/cycle.h"
#include "scheduler/dra.h"
#include "scheduler/queue-tree.h"
#include "scheduler/status-writer.h"

/* A burst of events schedules one cycle this soon after the first of them... */
#define KICK_DELAY_MS 10
/* ...but cycles never run closer together than this (a fraction of the period, capped). */
#define MIN_GAP_MS_MAX 50
#define CRD_RETRY_MS   10000
/* Discovery of scheduling.k8s.io/v1alpha3 that failed (not a 404) is asked again after this,
 * doubling up to the maximum; the native PodGroup informers wait for its answer. */
#define NATIVE_DISCOVERY_RETRY_MS     500
#define NATIVE_DISCOVERY_RETRY_MAX_MS 30000
/* Status writes wait behind bindings at most this long at a time. On a real kube-apiserver 1.20
 * (bench-e2e, 5,000 pods in gangs of 8, 3 runs each) 2 s let the 625 PodGroup status PATCHes
 * (merge, schema, managedFields, an etcd write and a watch event each) run beside the last 40%
 * of the bindings: 1,015-1,306 pods/s against 1,376-1,528 with 10 s, the server's CPU per
 * binding 1.33-1.72 ms against 1.13-1.26. A group's status is at most 10 s late then. */
#define STATUS_HOLD_MAX_MS 10000
/* ... and while evictions are in flight (see status_hold). */
#define STATUS_HOLD_EVICT_MAX_MS 60000
/* The API server is probed (GET /version) this often; with no answer for PROBE_STALE_MS (or
 * the last answer an error) /readyz says 503: an instance that cannot reach the server can
 * neither see nor bind anything. */
#define PROBE_MS       1000
#define PROBE_STALE_MS 5000

typedef enum {
    SRC_NODES,
    SRC_PODS,
    SRC_PG_KUBE_BATCH,
    SRC_PG_VOLCANO,
    SRC_PG_X_K8S,
    SRC_PG_NATIVE,
    SRC_COMPOSITES,
    SRC_WORKLOADS,
    SRC_QUEUES_VOLCANO,
    SRC_QUEUES_KUBE_BATCH,
    SRC_PRIORITY_CLASSES,
    SRC_PVCS,
    SRC_DEVICE_CLASSES,
    SRC_RESOURCE_CLAIMS,
    SRC_CLAIM_TEMPLATES,
    SRC_RESOURCE_SLICES,
    SRC_N
} SourceId;

typedef struct {
    KbDaemon *daemon;
    SourceId id;
    const char *name; /* metric label */
    const char *kind; /* for events on objects that do not say their kind */
    const KbResourceType *type;
    KbDecodeFunc decode;
    gboolean optional; /* a CRD: may be missing */
    KbInformer *informer;
    gboolean synced;
    gboolean missing;
    guint64 decode_errors_seen; /* already added to the metric */
} Source;

typedef struct {
    KbMetric *e2e_latency;
    KbMetric *cycle_duration;
    KbMetric *action_duration;
    KbMetric *cycles;
    KbMetric *placements;
    KbMetric *binds;
    KbMetric *last_bind;
    KbMetric *bind_duration;
    KbMetric *rollbacks;
    KbMetric *bind_retries;
    KbMetric *evictions;
    KbMetric *eviction_failures;
    KbMetric *pending_groups;
    KbMetric *queue_jobs;
    KbMetric *queue_allocated;
    KbMetric *queue_deserved;
    KbMetric *queue_usage;
    KbMetric *pending_tasks;
    KbMetric *incomplete_gangs;
    KbMetric *decode_errors;
    KbMetric *informer_objects;
    KbMetric *status_writes;
    KbMetric *events;
    KbMetric *leader;
    KbMetric *ready;
    KbMetric *informer_retry_delay;
    KbMetric *requeues;
    KbMetric *informer_synced;
    KbMetric *contact_age;
    KbMetric *partial_gangs;
    KbMetric *partial_gangs_timed_out;
    guint64 status_seen[KB_STATUS_N_RESULTS];
    guint64 events_seen[4];
    guint64 retries_seen;
    guint64 over_budget_seen;
} Metrics;

struct KbDaemon {
    KbDaemonOptions opts; /* strings below are owned copies */
    char **scheduler_names;
    char *default_queue;
    char *lock_namespace;
    char *lock_name;
    char *identity;
    char *listen_address;
    KbConf *conf;
    KbClient *client;
    KbCache *cache;
    KbRecorder *recorder;
    KbBinder *binder;
    KbStatusWriter *status;
    KbLeader *leader;
    KbMetrics *registry;
    KbHttpd *httpd;
    Metrics m;
    Source sources[SRC_N];
    GHashTable *queue_types; /* queue name -> const KbResourceType* that serves it */
    gboolean started;
    gboolean leading;
    gboolean stopping;
    gboolean stopped;
    guint period_source;
    guint kick_source;
    guint restart_source;
    gint64 last_cycle_us;        /* monotonic */
    gint64 status_held_since_us; /* monotonic; 0 while status writes flow */
    guint64 n_cycles;
    /* API server reachability (PROBE_MS): the last good answer (monotonic), the last error. */
    guint probe_source;
    gboolean probe_in_flight;
    gint64 last_contact_us;
    char *probe_error;
    /* Which version native PodGroups are read at: v1alpha3 (with CompositePodGroups) when the
     * server serves it, else v1beta1; decided by discovery before either informer starts. */
    gboolean native_in_flight;
    guint native_retry_source;
    guint native_failures;
    /* Extender mode. */
    char *extender_address;
    char *extender_tls_cert;
    char *extender_tls_key;
    char *extender_client_ca;
    char **extender_scheduler_names;
    KbExtender *extender;
    KbExtenderServer *extender_server;
};

static gint64 now_s(void)
{
    return g_get_real_time() / G_USEC_PER_SEC;
}

/* ---- malformed objects ------------------------------------------------------------------- */

/* An event on a malformed object (informer handler), so that its owner sees why it is ignored. */
static void on_decode_error(json_object *obj, const GError *error, gpointer user_data)
{
    const Source *src = user_data;
    KbRecorder *recorder = src->daemon->recorder;
    /* A native PodGroup also says so in its own condition (SchedulerError). */
    if (src->id == SRC_PG_NATIVE && src->daemon->status != NULL)
        kb_status_writer_native_error(src->daemon->status, obj, error->message,
                                      g_get_real_time() / G_USEC_PER_SEC);
    if (recorder == NULL)
        return;
    g_autoptr(GError) meta_error = NULL;
    KbObjectMeta *meta = kb_meta_object_decode(obj, FALSE, &meta_error);
    if (meta == NULL)
        return;
    if (meta->name != NULL) {
        json_object *jv = NULL;
        /* A built-in type's list items carry no apiVersion: the source's. */
        g_autofree char *listed =
                src->type->group[0] != '\0'
                        ? g_strdup_printf("%s/%s", src->type->group, src->type->version)
                        : g_strdup(src->type->version);
        const char *api = json_object_object_get_ex(obj, "apiVersion", &jv)
                                  ? json_object_get_string(jv)
                                  : listed;
        const char *kind = json_object_object_get_ex(obj, "kind", &jv) ? json_object_get_string(jv)
                                                                       : src->kind;
        kb_recorder_event(recorder, meta, api, kind, "Warning", "InvalidObject",
                          "ignored by kube-batchd: %s", error->message);
    }
    kb_object_unref(meta);
}

/* ---- readiness and scheduling ------------------------------------------------------------ */

static gboolean caches_synced(const KbDaemon *d, const char **which)
{
    for (int i = 0; i < SRC_N; i++) {
        const Source *s = &d->sources[i];
        if (!s->synced && !(s->optional && s->missing)) {
            if (which != NULL)
                *which = s->name;
            return FALSE;
        }
    }
    return TRUE;
}

gboolean kb_daemon_is_ready(KbDaemon *daemon, char **reason)
{
    const char *which = NULL;
    if (daemon->stopping) {
        if (reason != NULL)
            *reason = g_strdup("shutting down");
        return FALSE;
    }
    if (!caches_synced(daemon, &which)) {
        if (reason != NULL)
            *reason = g_strdup_printf("caches not synced (%s)", which);
        return FALSE;
    }
    gint64 since_ms = (g_get_monotonic_time() - daemon->last_contact_us) / 1000;
    if (daemon->started && (daemon->probe_error != NULL || since_ms > PROBE_STALE_MS)) {
        if (reason != NULL)
            *reason = g_strdup_printf(
                    "API server unreachable: no answer for %" G_GINT64_FORMAT " ms (%s)", since_ms,
                    daemon->probe_error != NULL ? daemon->probe_error : "no error yet");
        return FALSE;
    }
    if (!daemon->leading) {
        if (reason != NULL)
            *reason = g_strdup_printf("not leading (holder \"%s\")",
                                      daemon->leader != NULL ? kb_leader_get_holder(daemon->leader)
                                                             : "");
        return FALSE;
    }
    return TRUE;
}

static gboolean ready_func(gpointer user_data, char **reason)
{
    return kb_daemon_is_ready(user_data, reason);
}

static void publish_cycle(KbDaemon *d, const KbCycleResult *r);

static void on_requeued(const KbResponse *resp, gpointer data)
{
    KbDaemon *d = data;
    const char *result = "written";
    if (resp->error != NULL) {
        /* 404 or a UID conflict: the pod is gone or another; else kube-scheduler's own timer. */
        result = g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND) ||
                                 g_error_matches(resp->error, KB_ERROR, KB_ERROR_CONFLICT)
                         ? "gone"
                         : "failed";
        g_message("extender: requeue of a parked pod not written (%s): %s", result,
                  resp->error->message);
    }
    kb_series_inc(kb_metric_with(d->m.requeues, result, NULL));
}

/*
 * The members kube-scheduler parked whose gang now has a plan get one metadata write each (see
 * scheduler/extender.h: an update of a parked pod sends it back to kube-scheduler's active
 * queue). A merge patch with the UID as precondition: a pod recreated under the same name is
 * left alone (409).
 */
static void requeue_parked(KbDaemon *d)
{
    g_autoptr(GPtrArray) due = kb_extender_take_requeues(d->extender);
    if (due->len == 0)
        return;
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autofree char *stamp = g_date_time_format(now, "%Y-%m-%dT%H:%M:%S.%fZ");
    for (guint i = 0; i < due->len; i++) {
        const KbExtenderRequeue *q = due->pdata[i];
        json_object *ann = json_object_new_object();
        json_object_object_add(ann, KB_EXTENDER_REQUEUE_ANNOTATION, json_object_new_string(stamp));
        json_object *meta = json_object_new_object();
        if (q->uid != NULL)
            json_object_object_add(meta, "uid", json_object_new_string(q->uid));
        json_object_object_add(meta, "annotations", ann);
        json_object *body = json_object_new_object();
        json_object_object_add(body, "metadata", meta);
        KbRequest req = {.method = "PATCH",
                         .type = &kb_type_pods,
                         .namespace_ = q->namespace_,
                         .name = q->name,
                         .body = body,
                         .content_type = "application/merge-patch+json"};
        kb_client_call_async(d->client, &req, on_requeued, d);
        json_object_put(body);
    }
    g_debug("extender: %u parked pods of newly planned gangs requeued (first %s/%s)", due->len,
            ((KbExtenderRequeue *)due->pdata[0])->namespace_,
            ((KbExtenderRequeue *)due->pdata[0])->name);
}

/*
 * Bindings first: PodGroup and Queue status writes wait while bindings are queued or in flight
 * (the issue of one write per pod). A large batch's 625 status PATCHes otherwise went into the
 * client's queue right behind the first window of bindings and ahead of all the others; released
 * when only the queue had drained, a tenth of them still ran beside the last window (53 of 625
 * before the last binding on kube-apiserver 1.20). At most STATUS_HOLD_MAX_MS at a time, so that
 * a long backlog still shows its status; released when the last binding is answered and at
 * every cycle that leaves the binder idle. Bindings waiting out a back-off hold nothing.
 * Evictions in flight (with a stale gang's condition writes) hold them too, from the cycle that
 * chose the victims until the last eviction is answered: a reclaim's victims are as many
 * PodGroups whose status changes at once (their pods RELEASING), and those writes beside the
 * evictions slowed them and the preemptor's bindings after them (kai-reclaim-250 on
 * kube-apiserver: 1,761-2,772 PodGroup status PATCHes before the big job was bound). While
 * evictions are in flight the hold lasts up to STATUS_HOLD_EVICT_MAX_MS: 2,000 of them took
 * 12-30 s on a loaded kube-apiserver, and a hold released after 10 s sent the 2,000 writes
 * beside the rest. Victims that linger once evicted (a grace period, a lost node) hold nothing:
 * a gang's GangEvicted condition is not to wait for its pods to go. No release at a cycle's
 * start either: the cycle's own placements decide. @evictions_ending of those in flight are
 * being answered (the binder counts them until its callback returns).
 */
static void status_hold(KbDaemon *d, guint evictions_ending)
{
    guint evicting = kb_binder_evictions_in_flight(d->binder);
    evicting -= MIN(evicting, evictions_ending);
    guint pending = kb_binder_queued(d->binder) + kb_binder_in_flight(d->binder) + evicting;
    gboolean busy = !d->stopping && pending > 0;
    gint64 max_us = (gint64)(evicting > 0 ? STATUS_HOLD_EVICT_MAX_MS : STATUS_HOLD_MAX_MS) * 1000;
    gint64 now = g_get_monotonic_time();
    if (!busy)
        d->status_held_since_us = 0;
    else if (d->status_held_since_us == 0)
        d->status_held_since_us = now;
    kb_status_writer_set_held(d->status, busy && now - d->status_held_since_us < max_us);
}

static void update_status_hold(KbDaemon *d)
{
    status_hold(d, 0);
}

gboolean kb_daemon_run_cycle(KbDaemon *daemon)
{
    KbDaemon *d = daemon;
    if (d->stopping || !d->leading || !caches_synced(d, NULL)) {
        update_status_hold(d);
        return FALSE;
    }
    gint64 now = now_s();
    guint expired = kb_cache_expire_assumed(d->cache, now, d->opts.assume_ttl_s);
    if (expired > 0)
        g_warning("%u pods bound more than %u s ago were never confirmed by the watch; "
                  "released",
                  expired, d->opts.assume_ttl_s);
    g_autoptr(KbCycleResult) r = kb_cycle_run(d->cache, d->conf, now);
    d->last_cycle_us = g_get_monotonic_time();
    d->n_cycles++;
    /* Placements of kube-scheduler's pods are reservations, bound through the extender. */
    if (d->extender != NULL) {
        kb_extender_take_placements(d->extender, r);
        requeue_parked(d);
    }
    /* Victims first: their pods must go before anything lands on the room they hold. */
    kb_binder_evict(d->binder, r->evictions);
    kb_binder_submit(d->binder, r->placements);
    update_status_hold(d);
    kb_status_writer_apply(d->status, r);
    publish_cycle(d, r);
    if (r->evictions->len > 0)
        g_message("cycle %" G_GUINT64_FORMAT ": evicting %u pods (first: %s/%s, %s: %s)",
                  d->n_cycles, r->evictions->len,
                  g_array_index(r->evictions, KbEviction, 0).pod->meta.namespace_,
                  g_array_index(r->evictions, KbEviction, 0).pod->meta.name,
                  g_array_index(r->evictions, KbEviction, 0).reason,
                  g_array_index(r->evictions, KbEviction, 0).message);
    if (r->placements->len > 0 || r->n_jobs_discarded > 0)
        g_debug("cycle %" G_GUINT64_FORMAT ": %u jobs, %u placed (%u pods), %u discarded, "
                "%u pods pending, %" G_GINT64_FORMAT " us",
                d->n_cycles, r->n_jobs, r->n_jobs_placed, r->placements->len, r->n_jobs_discarded,
                r->n_tasks_pending, r->duration_us);
    return TRUE;
}

static gboolean on_period(gpointer data)
{
    kb_daemon_run_cycle(data);
    return G_SOURCE_CONTINUE;
}

static gboolean on_kick(gpointer data)
{
    KbDaemon *d = data;
    d->kick_source = 0;
    kb_daemon_run_cycle(d);
    return G_SOURCE_REMOVE;
}

/* Something changed: run a cycle soon, coalescing bursts, never closer than the minimum gap. */
static void kick(KbDaemon *d)
{
    if (d->kick_source != 0 || d->stopping || !d->leading)
        return;
    guint gap_ms = MIN(MAX(d->opts.schedule_period_ms / 10, 1u), MIN_GAP_MS_MAX);
    gint64 since_ms = (g_get_monotonic_time() - d->last_cycle_us) / 1000;
    guint delay = KICK_DELAY_MS;
    if (since_ms < gap_ms)
        delay = MAX(delay, (guint)(gap_ms - since_ms));
    d->kick_source = g_timeout_add(delay, on_kick, d);
}

/* ---- informer handlers ------------------------------------------------------------------- */

/* A DRA object added or changed (the cache compiles its selectors once, here). */
static void dra_set(KbDaemon *d, SourceId id, gpointer obj)
{
    KbDra *dra = kb_cache_dra(d->cache);
    switch (id) {
    case SRC_DEVICE_CLASSES:
        kb_dra_set_class(dra, obj);
        break;
    case SRC_RESOURCE_CLAIMS:
        kb_dra_set_claim(dra, obj);
        break;
    case SRC_CLAIM_TEMPLATES:
        kb_dra_set_template(dra, obj);
        break;
    default:
        kb_dra_set_slice(dra, obj);
        break;
    }
}

static void on_add(gpointer obj, gpointer data)
{
    Source *s = data;
    KbDaemon *d = s->daemon;
    switch (s->id) {
    case SRC_NODES:
        kb_cache_add_node(d->cache, obj);
        break;
    case SRC_PODS:
        kb_cache_add_pod(d->cache, obj);
        break;
    case SRC_PG_KUBE_BATCH:
    case SRC_PG_VOLCANO:
    case SRC_PG_X_K8S:
    case SRC_PG_NATIVE:
    case SRC_COMPOSITES:
        kb_cache_add_pod_group(d->cache, obj);
        break;
    case SRC_QUEUES_VOLCANO:
    case SRC_QUEUES_KUBE_BATCH:
        g_hash_table_replace(d->queue_types, g_strdup(((KbObjectMeta *)obj)->name),
                             (gpointer)s->type);
        kb_cache_add_queue(d->cache, obj);
        break;
    case SRC_PRIORITY_CLASSES:
        kb_cache_add_priority_class(d->cache, obj);
        break;
    case SRC_WORKLOADS:
        kb_cache_set_workload(d->cache, obj);
        break;
    case SRC_PVCS:
        kb_cache_add_pvc(d->cache, obj);
        break;
    case SRC_DEVICE_CLASSES:
    case SRC_RESOURCE_CLAIMS:
    case SRC_CLAIM_TEMPLATES:
    case SRC_RESOURCE_SLICES:
        dra_set(d, s->id, obj);
        break;
    case SRC_N:
        break;
    }
    kick(d);
}

/*
 * Does @pod (a watch update) only confirm what this scheduler already holds: a task it placed
 * (assumed or bound, not yet seen) now shown on the very node it chose? Then the cache's room
 * does not change and no cycle is needed for it: without this, every confirmation of a large
 * batch kicked a cycle (about one per 20 ms while thousands of bindings came back), each
 * snapshotting the whole cluster on the thread that also reads the binding responses.
 */
static gboolean confirms_own_binding(KbDaemon *d, const KbPod *old_pod, const KbPod *pod)
{
    if (pod->node_name == NULL || old_pod->node_name != NULL || kb_pod_is_terminated(pod) ||
        pod->meta.deletion_timestamp != 0)
        return FALSE;
    KbTaskInfo *t = kb_cache_lookup_task(d->cache, pod->meta.namespace_, pod->meta.name);
    if (t == NULL || t->node_id < 0 || g_strcmp0(t->pod->meta.uid, pod->meta.uid) != 0 ||
        (t->state != KB_TASK_ALLOCATED && t->state != KB_TASK_BINDING))
        return FALSE;
    guint n_nodes = 0;
    KbNodeInfo *nodes = kb_cache_nodes(d->cache, &n_nodes);
    return (guint)t->node_id < n_nodes && strcmp(nodes[t->node_id].name, pod->node_name) == 0;
}

static void on_update(gpointer old_obj, gpointer new_obj, gpointer data)
{
    Source *s = data;
    KbDaemon *d = s->daemon;
    switch (s->id) {
    case SRC_NODES:
        kb_cache_update_node(d->cache, new_obj);
        break;
    case SRC_PODS: {
        const KbPod *old_pod = old_obj, *pod = new_obj;
        gboolean confirmed = confirms_own_binding(d, old_pod, pod);
        kb_cache_update_pod(d->cache, new_obj);
        if (confirmed)
            return;
        /* A bound pod's status changes free nothing until it terminates or is deleted. */
        if (pod->node_name != NULL && old_pod->node_name == pod->node_name &&
            !kb_pod_is_terminated(pod) && pod->meta.deletion_timestamp == 0)
            return;
        break;
    }
    case SRC_PG_KUBE_BATCH:
    case SRC_PG_VOLCANO:
    case SRC_PG_X_K8S:
    case SRC_PG_NATIVE:
    case SRC_COMPOSITES:
        kb_cache_update_pod_group(d->cache, new_obj);
        /* Our own status writes come back as updates: only spec changes matter. */
        if (((KbObjectMeta *)old_obj)->generation == ((KbObjectMeta *)new_obj)->generation &&
            ((KbObjectMeta *)new_obj)->generation != 0)
            return;
        break;
    case SRC_QUEUES_VOLCANO:
    case SRC_QUEUES_KUBE_BATCH:
        g_hash_table_replace(d->queue_types, g_strdup(((KbObjectMeta *)new_obj)->name),
                             (gpointer)s->type);
        kb_cache_update_queue(d->cache, new_obj);
        if (((KbObjectMeta *)old_obj)->generation == ((KbObjectMeta *)new_obj)->generation &&
            ((KbObjectMeta *)new_obj)->generation != 0)
            return;
        break;
    case SRC_PRIORITY_CLASSES:
        kb_cache_update_priority_class(d->cache, new_obj);
        break;
    case SRC_WORKLOADS:
        kb_cache_set_workload(d->cache, new_obj);
        break;
    case SRC_PVCS:
        kb_cache_update_pvc(d->cache, new_obj);
        break;
    case SRC_RESOURCE_CLAIMS: {
        /* Our own claim write coming back (as a bound pod's confirmation above): no room
         * changes, and a cycle per claim snapshotted the cluster every few milliseconds. */
        gboolean confirmed =
                kb_dra_claim_confirms_assumed(kb_cache_dra(d->cache), old_obj, new_obj);
        dra_set(d, s->id, new_obj);
        if (confirmed)
            return;
        break;
    }
    case SRC_DEVICE_CLASSES:
    case SRC_CLAIM_TEMPLATES:
    case SRC_RESOURCE_SLICES:
        dra_set(d, s->id, new_obj);
        break;
    case SRC_N:
        break;
    }
    kick(d);
}

static void on_delete(gpointer obj, gpointer data)
{
    Source *s = data;
    KbDaemon *d = s->daemon;
    switch (s->id) {
    case SRC_NODES:
        kb_cache_delete_node(d->cache, obj);
        break;
    case SRC_PODS:
        kb_cache_delete_pod(d->cache, obj);
        break;
    case SRC_PG_KUBE_BATCH:
    case SRC_PG_VOLCANO:
    case SRC_PG_X_K8S:
    case SRC_PG_NATIVE:
    case SRC_COMPOSITES:
        kb_cache_delete_pod_group(d->cache, obj);
        break;
    case SRC_QUEUES_VOLCANO:
    case SRC_QUEUES_KUBE_BATCH:
        if (g_hash_table_lookup(d->queue_types, ((KbObjectMeta *)obj)->name) == s->type)
            g_hash_table_remove(d->queue_types, ((KbObjectMeta *)obj)->name);
        kb_cache_delete_queue(d->cache, obj);
        break;
    case SRC_PRIORITY_CLASSES:
        kb_cache_delete_priority_class(d->cache, obj);
        break;
    case SRC_WORKLOADS:
        kb_cache_delete_workload(d->cache, obj);
        break;
    case SRC_PVCS:
        kb_cache_delete_pvc(d->cache, obj);
        break;
    case SRC_DEVICE_CLASSES:
        kb_dra_delete_class(kb_cache_dra(d->cache), obj);
        break;
    case SRC_RESOURCE_CLAIMS:
        kb_dra_delete_claim(kb_cache_dra(d->cache), obj);
        break;
    case SRC_CLAIM_TEMPLATES:
        kb_dra_delete_template(kb_cache_dra(d->cache), obj);
        break;
    case SRC_RESOURCE_SLICES:
        kb_dra_delete_slice(kb_cache_dra(d->cache), obj);
        break;
    case SRC_N:
        break;
    }
    kick(d);
}

static void on_synced(gpointer data)
{
    Source *s = data;
    if (!s->synced)
        g_message("informer %s: synced (%u objects)", s->name, kb_informer_size(s->informer));
    s->synced = TRUE;
    s->missing = FALSE;
    kick(s->daemon);
}

static void on_missing(gpointer data)
{
    Source *s = data;
    if (s->optional)
        g_message("%s are not served (CRD not installed); skipping them for now", s->name);
    s->missing = TRUE;
    kick(s->daemon);
}

static const KbInformerHandlers handlers = {
        .on_add = on_add,
        .on_update = on_update,
        .on_delete = on_delete,
        .on_synced = on_synced,
        .on_missing = on_missing,
        .on_decode_error = on_decode_error,
};

static void sources_init(KbDaemon *d)
{
    static const struct {
        SourceId id;
        const char *name;
        const char *kind;
        const KbResourceType *type;
        KbDecodeFunc decode;
        gboolean optional;
    } table[SRC_N] = {
            {SRC_NODES, "nodes", "Node", &kb_type_nodes, (KbDecodeFunc)kb_node_decode, FALSE},
            {SRC_PODS, "pods", "Pod", &kb_type_pods, (KbDecodeFunc)kb_pod_decode, FALSE},
            {SRC_PG_KUBE_BATCH, "podgroups.scheduling.incubator.k8s.io", "PodGroup",
             &kb_type_pod_groups_kube_batch, (KbDecodeFunc)kb_pod_group_decode, TRUE},
            {SRC_PG_VOLCANO, "podgroups.scheduling.volcano.sh", "PodGroup",
             &kb_type_pod_groups_volcano, (KbDecodeFunc)kb_pod_group_decode, TRUE},
            {SRC_PG_X_K8S, "podgroups.scheduling.x-k8s.io", "PodGroup", &kb_type_pod_groups_x_k8s,
             (KbDecodeFunc)kb_pod_group_decode, TRUE},
            /* Kubernetes' own (1.37 beta): served only where the cluster enables
             * scheduling.k8s.io/v1beta1; a 404 is retried like a missing CRD. */
            {SRC_PG_NATIVE, "podgroups.scheduling.k8s.io", "PodGroup", &kb_type_pod_groups_native,
             (KbDecodeFunc)kb_pod_group_decode_native, TRUE},
            /* CompositePodGroups (1.37 alpha): only where v1alpha3 is served, see native_discover.
             */
            {SRC_COMPOSITES, "compositepodgroups.scheduling.k8s.io", "CompositePodGroup",
             &kb_type_composite_pod_groups, (KbDecodeFunc)kb_composite_pod_group_decode, TRUE},
            /* Their Workloads, for the queue a group without a queue label of its own takes. */
            {SRC_WORKLOADS, "workloads.scheduling.k8s.io", "Workload", &kb_type_workloads_native,
             (KbDecodeFunc)kb_meta_object_decode, TRUE},
            {SRC_QUEUES_VOLCANO, "queues.scheduling.volcano.sh", "Queue", &kb_type_queues_volcano,
             (KbDecodeFunc)kb_queue_decode, TRUE},
            {SRC_QUEUES_KUBE_BATCH, "queues.scheduling.incubator.k8s.io", "Queue",
             &kb_type_queues_kube_batch, (KbDecodeFunc)kb_queue_decode, TRUE},
            {SRC_PRIORITY_CLASSES, "priorityclasses", "PriorityClass", &kb_type_priority_classes,
             (KbDecodeFunc)kb_priority_class_decode, FALSE},
            /* For the volume check; every apiserver serves them, an old test server may not. */
            {SRC_PVCS, "persistentvolumeclaims", "PersistentVolumeClaim", &kb_type_pvcs,
             (KbDecodeFunc)kb_pvc_decode, TRUE},
            /* DRA (resource.k8s.io/v1, GA in 1.34): a server without it answers 404, retried. */
            {SRC_DEVICE_CLASSES, "deviceclasses", "DeviceClass", &kb_type_device_classes,
             (KbDecodeFunc)kb_device_class_decode, TRUE},
            {SRC_RESOURCE_CLAIMS, "resourceclaims", "ResourceClaim", &kb_type_resource_claims,
             (KbDecodeFunc)kb_resource_claim_decode, TRUE},
            {SRC_CLAIM_TEMPLATES, "resourceclaimtemplates", "ResourceClaimTemplate",
             &kb_type_resource_claim_templates, (KbDecodeFunc)kb_resource_claim_template_decode,
             TRUE},
            {SRC_RESOURCE_SLICES, "resourceslices", "ResourceSlice", &kb_type_resource_slices,
             (KbDecodeFunc)kb_resource_slice_decode, TRUE},
    };
    for (int i = 0; i < SRC_N; i++) {
        Source *s = &d->sources[table[i].id];
        s->daemon = d;
        s->id = table[i].id;
        s->name = table[i].name;
        s->kind = table[i].kind;
        s->type = table[i].type;
        s->decode = table[i].decode;
        s->optional = table[i].optional;
    }
}

static void source_start(KbDaemon *d, Source *s)
{
    /* Pods list through the fast page decoder: the informer picks it for kb_pod_decode. */
    KbInformerOptions io = {.type = s->type, .decode = s->decode};
    s->informer = kb_informer_new(d->client, &io, &handlers, s);
    if (s->id == SRC_RESOURCE_CLAIMS)
        kb_binder_set_claim_informer(d->binder, s->informer);
    if (s->optional)
        kb_informer_set_missing_retry(s->informer, CRD_RETRY_MS);
    kb_informer_start(s->informer);
}

static void native_discover(KbDaemon *d);

static gboolean native_discover_again(gpointer data)
{
    KbDaemon *d = data;
    d->native_retry_source = 0;
    native_discover(d);
    return G_SOURCE_REMOVE;
}

/* Does an APIResourceList list @plural? */
static gboolean lists_resource(json_object *doc, const char *plural)
{
    json_object *list = json_object_object_get(doc, "resources");
    for (size_t i = 0;
         json_object_is_type(list, json_type_array) && i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        if (g_strcmp0(json_object_get_string(json_object_object_get(e, "name")), plural) == 0)
            return TRUE;
    }
    return FALSE;
}

/*
 * /apis/scheduling.k8s.io/v1alpha3 listing compositepodgroups and podgroups: PodGroups are read
 * there (they carry the parent link) with the composites, and not at v1beta1 too (the same
 * objects twice). 404, or a version without them: v1beta1 alone, no composites. Anything else
 * is asked again; the two sources stay unsynced (not ready) meanwhile.
 */
static void on_native_discovered(const KbResponse *resp, gpointer data)
{
    KbDaemon *d = data;
    d->native_in_flight = FALSE;
    if (d->stopping)
        return;
    if (resp->http_status != 200 && resp->http_status != 404) {
        guint ms = NATIVE_DISCOVERY_RETRY_MS << MIN(d->native_failures, 8u);
        ms = MIN(ms, NATIVE_DISCOVERY_RETRY_MAX_MS);
        d->native_failures++;
        g_warning("discovery of /apis/scheduling.k8s.io/v1alpha3 failed (%s); asking again in "
                  "%u ms",
                  resp->error != NULL ? resp->error->message : "no answer", ms);
        d->native_retry_source = g_timeout_add(ms, native_discover_again, d);
        return;
    }
    Source *pg = &d->sources[SRC_PG_NATIVE], *cpg = &d->sources[SRC_COMPOSITES];
    gboolean alpha = resp->http_status == 200 && lists_resource(resp->body, "podgroups") &&
                     lists_resource(resp->body, "compositepodgroups");
    if (alpha) {
        pg->type = &kb_type_pod_groups_v1alpha3;
        pg->decode = (KbDecodeFunc)kb_pod_group_decode_v1alpha3;
        source_start(d, cpg);
    } else {
        cpg->missing = TRUE; /* not served: nothing to wait for */
    }
    g_message("native PodGroups read at scheduling.k8s.io/%s%s", pg->type->version,
              alpha ? " with CompositePodGroups" : " (v1alpha3 not served: no CompositePodGroups)");
    source_start(d, pg);
}

static void native_discover(KbDaemon *d)
{
    KbRequest req = {.method = "GET", .path = "/apis/scheduling.k8s.io/v1alpha3"};
    d->native_in_flight = TRUE;
    kb_client_call_async(d->client, &req, on_native_discovered, d);
}

static void sources_start(KbDaemon *d)
{
    for (int i = 0; i < SRC_N; i++) {
        Source *s = &d->sources[i];
        if (s->id == SRC_PG_NATIVE || s->id == SRC_COMPOSITES)
            continue; /* native_discover decides which version */
        source_start(d, s);
    }
    native_discover(d);
}

/* ---- metrics ----------------------------------------------------------------------------- */

static const double latency_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                         2.5,   5,    10,    30,   60,  120,  300};
static const double cycle_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                       0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};

static void metrics_init(KbDaemon *d)
{
    KbMetrics *r = d->registry;
    Metrics *m = &d->m;
    static const char *const l_action[] = {"action", NULL};
    static const char *const l_result[] = {"result", NULL};
    static const char *const l_queue[] = {"queue", NULL};
    static const char *const l_queue_phase[] = {"queue", "phase", NULL};
    static const char *const l_queue_res[] = {"queue", "resource", NULL};
    static const char *const l_resource[] = {"resource", NULL};

    m->e2e_latency = kb_metrics_histogram(
            r, "kube_batchd_e2e_scheduling_latency_seconds",
            "Time from pod creation to its binding confirmed by the API server.", NULL,
            latency_buckets, G_N_ELEMENTS(latency_buckets));
    m->cycle_duration = kb_metrics_histogram(r, "kube_batchd_cycle_duration_seconds",
                                             "Duration of one scheduling cycle.", NULL,
                                             cycle_buckets, G_N_ELEMENTS(cycle_buckets));
    m->action_duration = kb_metrics_histogram(r, "kube_batchd_action_duration_seconds",
                                              "Duration of one action in a cycle.", l_action,
                                              cycle_buckets, G_N_ELEMENTS(cycle_buckets));
    m->cycles = kb_metrics_counter(r, "kube_batchd_cycles_total", "Scheduling cycles run.", NULL);
    m->placements = kb_metrics_counter(r, "kube_batchd_placements_total",
                                       "Pods placed by cycles (committed gangs).", NULL);
    m->binds = kb_metrics_counter(r, "kube_batchd_binds_total",
                                  "Bindings finished, by result (succeeded, conflict, "
                                  "not_found, error).",
                                  l_result);
    m->last_bind = kb_metrics_gauge(r, "kube_batchd_last_successful_bind_timestamp_seconds",
                                    "Unix time of the last binding the API server accepted: "
                                    "while pods wait, a value that stops moving means nothing "
                                    "binds.",
                                    NULL);
    m->bind_duration = kb_metrics_histogram(r, "kube_batchd_bind_duration_seconds",
                                            "Round trip of one binding request.", NULL,
                                            latency_buckets, G_N_ELEMENTS(latency_buckets));
    m->rollbacks = kb_metrics_counter(r, "kube_batchd_gang_rollbacks_total",
                                      "Bindings that failed for certain: the pod was released "
                                      "and placed again (its gang members keep theirs).",
                                      NULL);
    m->bind_retries = kb_metrics_counter(r, "kube_batchd_bind_retries_total",
                                         "Bindings sent again after an unknown outcome (5xx, "
                                         "429, timeout, connection lost).",
                                         NULL);
    static const char *const l_reason[] = {"reason", NULL};
    m->evictions = kb_metrics_counter(r, "kube_batchd_evictions_total",
                                      "Pods evicted (eviction accepted, or the pod already gone), "
                                      "by reason (Preempted, Reclaimed).",
                                      l_reason);
    m->eviction_failures =
            kb_metrics_counter(r, "kube_batchd_eviction_failures_total",
                               "Evictions refused (disruption budget, conflict, error); the "
                               "pods keep running.",
                               l_reason);
    m->pending_groups = kb_metrics_gauge(r, "kube_batchd_pending_groups",
                                         "Jobs of a queue in phase Pending or Inqueue.", l_queue);
    m->queue_jobs = kb_metrics_gauge(r, "kube_batchd_queue_jobs", "Jobs of a queue by phase.",
                                     l_queue_phase);
    m->queue_allocated = kb_metrics_gauge(r, "kube_batchd_queue_allocated",
                                          "Resources allocated to a queue's jobs (cpu in cores, "
                                          "memory in bytes).",
                                          l_queue_res);
    m->queue_deserved =
            kb_metrics_gauge(r, "kube_batchd_queue_deserved",
                             "A queue's deserved share (proportion plugin).", l_queue_res);
    m->queue_usage = kb_metrics_gauge(r, "kube_batchd_queue_usage",
                                      "A queue's decayed usage (proportion's usageHalfLife), in "
                                      "resource-seconds (cpu in core-seconds).",
                                      l_queue_res);
    m->pending_tasks =
            kb_metrics_gauge(r, "kube_batchd_pending_tasks",
                             "Served pods waiting for a node after the last cycle.", NULL);
    m->incomplete_gangs =
            kb_metrics_gauge(r, "kube_batchd_incomplete_gangs",
                             "Bound gangs below minMember after the last cycle (condition "
                             "GangIncomplete), by reason: MemberLost, GangEvicted.",
                             l_reason);
    m->decode_errors = kb_metrics_counter(r, "kube_batchd_informer_decode_errors_total",
                                          "Malformed objects skipped by an informer.", l_resource);
    m->informer_objects = kb_metrics_gauge(r, "kube_batchd_informer_objects",
                                           "Objects in an informer's store.", l_resource);
    m->status_writes =
            kb_metrics_counter(r, "kube_batchd_status_writes_total",
                               "PodGroup, pod and Queue status writes by result.", l_result);
    m->events = kb_metrics_counter(r, "kube_batchd_events_total",
                                   "Events by result (created, patched, dropped by the per-object "
                                   "spam filter, failed, over_budget: Scheduled events over their "
                                   "budget).",
                                   l_result);
    m->leader = kb_metrics_gauge(r, "kube_batchd_leader", "1 while this instance leads.", NULL);
    m->ready = kb_metrics_gauge(r, "kube_batchd_ready", "1 when /readyz answers 200.", NULL);
    static const char *const l_informer[] = {"informer", NULL};
    m->informer_retry_delay = kb_metrics_gauge(
            r, "kube_batchd_informer_max_retry_delay_seconds",
            "Longest delay an informer waited before retrying a failed list or watch.", l_informer);
    m->requeues = kb_metrics_counter(r, "kube_batchd_extender_requeues_total",
                                     "Parked pods of newly planned gangs annotated so that "
                                     "kube-scheduler tries them again, by result (written, gone, "
                                     "failed).",
                                     l_result);
    /* What an operator is woken for (deploy/overlays/monitoring's alerts). */
    m->informer_synced = kb_metrics_gauge(r, "kube_batchd_informer_synced",
                                          "1 once an informer has listed its objects (or its "
                                          "optional API is not served), else 0.",
                                          l_informer);
    m->contact_age = kb_metrics_gauge(r, "kube_batchd_api_server_contact_age_seconds",
                                      "Seconds since the API server last answered: while it "
                                      "grows, the informers' caches are stale.",
                                      NULL);
    m->partial_gangs = kb_metrics_gauge(r, "kube_batchd_partial_gangs",
                                        "Gangs with some but fewer than minMember pods bound, "
                                        "after the last cycle.",
                                        NULL);
    m->partial_gangs_timed_out = kb_metrics_gauge(
            r, "kube_batchd_partial_gangs_timed_out",
            "Partly bound gangs still short past their deadline: scheduleTimeoutSeconds, or "
            "staleGangGrace for a gang that lost a member (its eviction not yet done).",
            NULL);
}

/* Counters mirrored from modules that count on their own: add what is new since last time. */
static void mirror(KbMetric *metric, const char *label, guint64 now_value, guint64 *seen)
{
    KbSeries *s = kb_metric_with(metric, label, NULL);
    if (now_value > *seen) {
        kb_series_add(s, (double)(now_value - *seen));
        *seen = now_value;
    }
}

static void collect(KbMetrics *registry, gpointer data)
{
    KbDaemon *d = data;
    Metrics *m = &d->m;
    for (int i = 0; i < SRC_N; i++) {
        Source *s = &d->sources[i];
        if (s->informer == NULL)
            continue;
        mirror(m->decode_errors, s->name, kb_informer_decode_errors(s->informer),
               &s->decode_errors_seen);
        kb_series_set(kb_metric_with(m->informer_objects, s->name, NULL),
                      kb_informer_size(s->informer));
        kb_series_set(kb_metric_with(m->informer_retry_delay, s->name, NULL),
                      kb_informer_max_retry_delay_ms(s->informer) / 1000.0);
        kb_series_set(kb_metric_with(m->informer_synced, s->name, NULL),
                      s->synced || (s->optional && s->missing) ? 1 : 0);
    }
    kb_metric_set(m->contact_age, (double)(g_get_monotonic_time() - d->last_contact_us) / 1e6);
    for (int i = 0; i < KB_STATUS_N_RESULTS; i++)
        mirror(m->status_writes, kb_status_result_to_string(i),
               kb_status_writer_count(d->status, i), &m->status_seen[i]);
    if (kb_binder_retries(d->binder) > m->retries_seen) {
        kb_metric_add(m->bind_retries, (double)(kb_binder_retries(d->binder) - m->retries_seen));
        m->retries_seen = kb_binder_retries(d->binder);
    }
    mirror(m->events, "created", kb_recorder_created(d->recorder), &m->events_seen[0]);
    mirror(m->events, "patched", kb_recorder_patched(d->recorder), &m->events_seen[1]);
    mirror(m->events, "dropped", kb_recorder_dropped(d->recorder), &m->events_seen[2]);
    mirror(m->events, "failed", kb_recorder_failed(d->recorder), &m->events_seen[3]);
    mirror(m->events, "over_budget", kb_binder_events_over_budget(d->binder), &m->over_budget_seen);
    kb_metric_set(m->leader, d->leading ? 1 : 0);
    kb_metric_set(m->ready, kb_daemon_is_ready(d, NULL) ? 1 : 0);
}

static double resource_value(int slot, gint64 v)
{
    return kb_resource_is_milli(slot) ? (double)v / 1000.0 : (double)v;
}

static void publish_queue(KbDaemon *d, const KbQueueStatus *qs)
{
    Metrics *m = &d->m;
    static const struct {
        const char *phase;
        gsize offset;
    } phases[] = {
            {"Pending", G_STRUCT_OFFSET(KbQueueStatus, n_pending)},
            {"Inqueue", G_STRUCT_OFFSET(KbQueueStatus, n_inqueue)},
            {"Running", G_STRUCT_OFFSET(KbQueueStatus, n_running)},
            {"Unknown", G_STRUCT_OFFSET(KbQueueStatus, n_unknown)},
            {"Completed", G_STRUCT_OFFSET(KbQueueStatus, n_completed)},
    };
    kb_series_set(kb_metric_with(m->pending_groups, qs->name, NULL), qs->n_pending + qs->n_inqueue);
    for (gsize i = 0; i < G_N_ELEMENTS(phases); i++)
        kb_series_set(kb_metric_with(m->queue_jobs, qs->name, phases[i].phase, NULL),
                      G_STRUCT_MEMBER(guint, qs, phases[i].offset));
    for (int s = 0; s < kb_resource_count(); s++) {
        const char *res = kb_resource_name(s);
        gboolean main_slot = s == KB_RES_CPU || s == KB_RES_MEMORY || s == KB_RES_GPU;
        if (res == NULL || s == KB_RES_PODS ||
            (!main_slot && qs->allocated.v[s] == 0 && qs->deserved.v[s] == 0))
            continue;
        kb_series_set(kb_metric_with(m->queue_allocated, qs->name, res, NULL),
                      resource_value(s, qs->allocated.v[s]));
        kb_series_set(kb_metric_with(m->queue_deserved, qs->name, res, NULL),
                      resource_value(s, qs->deserved.v[s]));
    }
    for (guint i = 0; i < KB_QTREE_N_SLOTS && qs->usage_time > 0; i++) {
        int s = kb_qtree_slots[i];
        double v = kb_resource_is_milli(s) ? qs->usage[s] / 1000 : qs->usage[s];
        kb_series_set(kb_metric_with(m->queue_usage, qs->name, kb_resource_name(s), NULL), v);
    }
}

static void publish_cycle(KbDaemon *d, const KbCycleResult *r)
{
    Metrics *m = &d->m;
    kb_metric_inc(m->cycles);
    kb_metric_observe(m->cycle_duration, (double)r->duration_us / 1e6);
    for (guint i = 0; i < r->n_actions && i < d->conf->n_actions; i++)
        kb_series_observe(kb_metric_with(m->action_duration, d->conf->actions[i], NULL),
                          (double)r->action_us[i] / 1e6);
    kb_metric_add(m->placements, r->placements->len);
    kb_metric_set(m->pending_tasks, r->n_tasks_pending);
    guint incomplete[2] = {0, 0}, partial = 0, timed_out = 0;
    for (guint i = 0; i < r->job_statuses->len; i++) {
        const KbJobStatus *js = &g_array_index(r->job_statuses, KbJobStatus, i);
        if (g_strcmp0(js->condition_type, KB_GANG_INCOMPLETE) == 0)
            incomplete[g_strcmp0(js->reason, "GangEvicted") == 0]++;
        if (js->n_bound == 0 || js->n_bound >= (guint)js->min_member)
            continue;
        partial++;
        /* Past its deadline: never whole by scheduleTimeoutSeconds, or short of a lost member
         * past staleGangGrace with the rest not yet evicted (a budget refusing, say). */
        timed_out += g_strcmp0(js->reason, "ScheduleTimeout") == 0 ||
                     g_strcmp0(js->reason, "GangEvicted") == 0;
    }
    kb_series_set(kb_metric_with(m->incomplete_gangs, "MemberLost", NULL), incomplete[0]);
    kb_series_set(kb_metric_with(m->incomplete_gangs, "GangEvicted", NULL), incomplete[1]);
    kb_metric_set(m->partial_gangs, partial);
    kb_metric_set(m->partial_gangs_timed_out, timed_out);
    /* Queues come and go: recompute their label sets every cycle. */
    kb_metric_reset(m->pending_groups);
    kb_metric_reset(m->queue_jobs);
    kb_metric_reset(m->queue_allocated);
    kb_metric_reset(m->queue_deserved);
    kb_metric_reset(m->queue_usage);
    for (guint i = 0; i < r->queue_statuses->len; i++)
        publish_queue(d, &g_array_index(r->queue_statuses, KbQueueStatus, i));
}

static void on_evict_done(const KbEvictOutcome *out, gpointer data)
{
    KbDaemon *d = data;
    Metrics *m = &d->m;
    gboolean done = out->result != KB_EVICT_REFUSED;
    status_hold(d, 1);
    kb_series_inc(kb_metric_with(done ? m->evictions : m->eviction_failures, out->reason, NULL));
    if (out->result == KB_EVICT_GONE)
        kick(d); /* the room is free already */
}

static void on_bind_done(const KbBindOutcome *out, gpointer data)
{
    KbDaemon *d = data;
    Metrics *m = &d->m;
    update_status_hold(d);
    kb_series_inc(kb_metric_with(m->binds, kb_bind_result_to_string(out->result), NULL));
    kb_metric_observe(m->bind_duration, (double)out->latency_us / 1e6);
    if (out->result == KB_BIND_SUCCEEDED) {
        double now = (double)g_get_real_time() / 1e6;
        kb_metric_set(m->last_bind, now);
        gint64 created = out->pod->meta.creation_timestamp;
        if (created > 0) {
            double latency = now - (double)created;
            kb_metric_observe(m->e2e_latency, MAX(latency, 0.0));
        }
    } else if (out->n_rolled_back > 0) {
        kb_metric_inc(m->rollbacks);
        /* A pod is pending again (its job backs off; the cycle says until when). */
        kick(d);
    }
}

/* ---- leader election --------------------------------------------------------------------- */

static void start_leading(gpointer data)
{
    KbDaemon *d = data;
    g_message("leading (lease %s/%s, identity %s)", d->lock_namespace, d->lock_name, d->identity);
    d->leading = TRUE;
    kb_binder_set_paused(d->binder, FALSE);
    kick(d);
}

static gboolean restart_election(gpointer data)
{
    KbDaemon *d = data;
    d->restart_source = 0;
    if (!d->stopping)
        kb_leader_start(d->leader);
    return G_SOURCE_REMOVE;
}

static void stop_leading(gpointer data)
{
    KbDaemon *d = data;
    g_warning("lost the lease %s/%s: no more scheduling until it is acquired again",
              d->lock_namespace, d->lock_name);
    d->leading = FALSE;
    g_clear_handle_id(&d->kick_source, g_source_remove);
    kb_binder_set_paused(d->binder, TRUE);
    guint dropped = kb_binder_drop_queued(d->binder);
    update_status_hold(d);
    if (dropped > 0)
        g_message("dropped %u placements not yet bound", dropped);
    if (d->restart_source == 0 && !d->stopping)
        d->restart_source = g_idle_add(restart_election, d);
}

/* ---- API server reachability -------------------------------------------------------------- */

static void on_probe(const KbResponse *resp, gpointer data)
{
    KbDaemon *d = data;
    d->probe_in_flight = FALSE;
    gboolean was_down = d->probe_error != NULL;
    g_clear_pointer(&d->probe_error, g_free);
    if (resp->error == NULL) {
        d->last_contact_us = g_get_monotonic_time();
        if (was_down)
            g_message("API server reachable again");
        return;
    }
    d->probe_error = g_strdup(resp->error->message);
    if (!was_down)
        g_warning("API server unreachable (%s): not ready until it answers", d->probe_error);
}

static gboolean on_probe_timer(gpointer data)
{
    KbDaemon *d = data;
    if (!d->probe_in_flight && !d->stopping) {
        KbRequest req = {.method = "GET", .path = "/version"};
        d->probe_in_flight = TRUE;
        kb_client_call_async(d->client, &req, on_probe, d);
    }
    return G_SOURCE_CONTINUE;
}

/* ---- life cycle -------------------------------------------------------------------------- */

static const KbResourceType *queue_type(const char *name, gpointer data)
{
    KbDaemon *d = data;
    return g_hash_table_lookup(d->queue_types, name);
}

static void copy_options(KbDaemon *d, const KbDaemonOptions *opts)
{
    d->opts = *opts;
    d->scheduler_names = g_strdupv((char **)opts->scheduler_names);
    d->default_queue = g_strdup(opts->default_queue != NULL ? opts->default_queue : "default");
    d->lock_namespace =
            g_strdup(opts->lock_namespace != NULL ? opts->lock_namespace : "kube-system");
    d->lock_name = g_strdup(opts->lock_name != NULL ? opts->lock_name : "kube-batchd");
    d->identity = opts->identity != NULL ? g_strdup(opts->identity) : kb_leader_default_identity();
    d->listen_address = g_strdup(opts->listen_address);
    d->extender_address = g_strdup(opts->extender_address);
    d->extender_tls_cert = g_strdup(opts->extender_tls_cert);
    d->extender_tls_key = g_strdup(opts->extender_tls_key);
    d->extender_client_ca = g_strdup(opts->extender_client_ca);
    d->extender_scheduler_names = g_strdupv((char **)opts->extender_scheduler_names);
    if (d->opts.schedule_period_ms == 0)
        d->opts.schedule_period_ms = 1000;
    if (d->opts.assume_ttl_s == 0)
        d->opts.assume_ttl_s = 120;
    if (d->opts.bind_max_in_flight == 0)
        d->opts.bind_max_in_flight = KB_BINDER_DEFAULT_MAX_IN_FLIGHT;
}

static gboolean extender_plan(gpointer data)
{
    return kb_daemon_run_cycle(data);
}

static gboolean extender_init(KbDaemon *d, GError **error)
{
    d->extender = kb_extender_new(d->cache, d->conf, d->opts.extender_reservation_ttl_s);
    kb_extender_set_plan_func(d->extender, extender_plan, d);
    kb_extender_set_requeue(d->extender, !d->opts.extender_no_requeue);
    kb_cache_set_extender_names(d->cache, (const char *const *)d->extender_scheduler_names);
    KbExtenderServerOptions eo = {.address = d->extender_address,
                                  .tls_cert = d->extender_tls_cert,
                                  .tls_key = d->extender_tls_key,
                                  .client_ca = d->extender_client_ca,
                                  .allow_unauthenticated = d->opts.extender_insecure};
    d->extender_server = kb_extender_server_new(&eo, d->extender, d->client, d->registry, error);
    if (d->extender_server == NULL) {
        g_prefix_error(error, "--extender-address %s: ", d->extender_address);
        return FALSE;
    }
    g_message("serving the scheduler extender (filter, prioritize, bind, preempt) over %s on "
              "%s (port %u), %s",
              d->extender_tls_cert != NULL ? "https" : "http",
              kb_extender_server_address(d->extender_server),
              kb_extender_server_port(d->extender_server),
              d->extender_client_ca != NULL ? "client certificates verified"
                                            : "no client certificates");
    return TRUE;
}

KbDaemon *kb_daemon_new(const KbDaemonOptions *opts, KbConf *conf, GError **error)
{
    g_autoptr(KbConf) owned_conf = conf;
    g_autoptr(KbClient) client = kb_client_new(opts->config, error);
    if (client == NULL)
        return NULL;
    KbDaemon *d = g_new0(KbDaemon, 1);
    copy_options(d, opts);
    d->conf = g_steal_pointer(&owned_conf);
    d->client = g_steal_pointer(&client);
    /* Bindings and informer streams share the pool: leave room for the eight watches. */
    kb_client_set_max_in_flight(d->client, d->opts.bind_max_in_flight + SRC_N + 16);
    d->cache = kb_cache_new((const char *const *)d->scheduler_names, d->default_queue);
    KbRecorderOptions ro = {.component = "kube-batchd", .host = g_get_host_name()};
    d->recorder = kb_recorder_new_full(d->client, &ro);
    d->binder = kb_binder_new(d->client, d->cache, d->recorder);
    kb_binder_set_max_in_flight(d->binder, d->opts.bind_max_in_flight);
    if (d->opts.event_budgets_set) {
        kb_binder_set_gang_event_budget(d->binder, d->opts.gang_event_qps,
                                        d->opts.gang_event_burst);
        kb_binder_set_pod_event_budget(d->binder, d->opts.pod_event_qps, d->opts.pod_event_burst);
    }
    kb_binder_set_done_func(d->binder, on_bind_done, d);
    kb_binder_set_evict_func(d->binder, on_evict_done, d);
    d->status = kb_status_writer_new(d->client, d->recorder);
    d->queue_types = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    kb_status_writer_set_queue_type_func(d->status, queue_type, d);
    d->registry = kb_metrics_new();
    metrics_init(d);
    kb_metrics_add_collector(d->registry, collect, d);
    sources_init(d);
    if (d->listen_address != NULL && d->listen_address[0] != '\0') {
        d->httpd = kb_httpd_new(d->listen_address, d->registry, error);
        if (d->httpd == NULL) {
            g_prefix_error(error, "--listen-address %s: ", d->listen_address);
            kb_daemon_free(d);
            return NULL;
        }
        kb_httpd_set_ready_func(d->httpd, ready_func, d);
        /* The bound port matters when the address asked for port 0 (tests, the demo). */
        g_message("serving /healthz, /readyz and /metrics on port %u", kb_httpd_port(d->httpd));
    }
    if (d->extender_address != NULL && d->extender_address[0] != '\0' && !extender_init(d, error)) {
        kb_daemon_free(d);
        return NULL;
    }
    return d;
}

void kb_daemon_start(KbDaemon *daemon)
{
    KbDaemon *d = daemon;
    if (d->started)
        return;
    d->started = TRUE;
    /* Every name served, not the first only: a pod of a name left out would wait unexplained. */
    g_autofree char *names = d->scheduler_names != NULL && d->scheduler_names[0] != NULL
                                     ? g_strjoinv(", ", d->scheduler_names)
                                     : g_strdup("kube-batchd");
    g_message("kube-batchd: API server %s, scheduler names %s, schedule period %u ms, "
              "default queue \"%s\"%s",
              kb_client_server(d->client), names, d->opts.schedule_period_ms, d->default_queue,
              d->opts.leader_elect ? ", leader election on" : "");
    sources_start(d);
    d->period_source = g_timeout_add(d->opts.schedule_period_ms, on_period, d);
    d->last_contact_us = g_get_monotonic_time();
    d->probe_source = g_timeout_add(PROBE_MS, on_probe_timer, d);
    on_probe_timer(d);
    if (d->opts.leader_elect) {
        KbLeaderOptions lo = {.namespace_ = d->lock_namespace,
                              .name = d->lock_name,
                              .identity = d->identity,
                              .lease_duration_ms = d->opts.lease_duration_ms,
                              .renew_deadline_ms = d->opts.renew_deadline_ms,
                              .retry_period_ms = d->opts.retry_period_ms,
                              .on_started_leading = start_leading,
                              .on_stopped_leading = stop_leading,
                              .user_data = d};
        d->leader = kb_leader_new(d->client, &lo);
        kb_binder_set_paused(d->binder, TRUE);
        kb_leader_start(d->leader);
    } else {
        d->leading = TRUE;
    }
}

/* Iterate the context until @done says so or @deadline_us (monotonic) passes. */
static void iterate_until(KbDaemon *d, gboolean (*done)(KbDaemon *), gint64 deadline_us)
{
    GMainContext *ctx = g_main_context_get_thread_default();
    while (!done(d) && g_get_monotonic_time() < deadline_us) {
        if (!g_main_context_iteration(ctx, FALSE))
            g_usleep(2000);
    }
}

static gboolean binds_done(KbDaemon *d)
{
    return kb_binder_in_flight(d->binder) == 0;
}

static gboolean writes_done(KbDaemon *d)
{
    return kb_binder_in_flight(d->binder) == 0 && kb_status_writer_pending(d->status) == 0 &&
           kb_recorder_pending(d->recorder) == 0;
}

static gboolean requests_done(KbDaemon *d)
{
    return !kb_leader_busy(d->leader) && !d->probe_in_flight && !d->native_in_flight;
}

void kb_daemon_stop(KbDaemon *daemon, guint deadline_ms)
{
    KbDaemon *d = daemon;
    if (d->stopped)
        return;
    d->stopped = TRUE;
    d->stopping = TRUE;
    g_clear_handle_id(&d->period_source, g_source_remove);
    g_clear_handle_id(&d->kick_source, g_source_remove);
    g_clear_handle_id(&d->restart_source, g_source_remove);
    g_clear_handle_id(&d->probe_source, g_source_remove);
    g_clear_handle_id(&d->native_retry_source, g_source_remove);
    guint dropped = kb_binder_drop_queued(d->binder);
    guint in_flight = kb_binder_in_flight(d->binder);
    update_status_hold(d); /* what is queued is written before the exit */
    g_message("stopping: %u bindings in flight, %u placements dropped", in_flight, dropped);
    gint64 deadline = g_get_monotonic_time() + (gint64)deadline_ms * 1000;
    iterate_until(d, binds_done, deadline);
    if (kb_binder_in_flight(d->binder) > 0)
        g_warning("stopping: gave up on %u bindings after %u ms", kb_binder_in_flight(d->binder),
                  deadline_ms);
    iterate_until(d, writes_done, deadline);
    /* A lease renewal or probe on the wire finishes before the client goes. */
    iterate_until(d, requests_done, deadline);
    if (d->leader != NULL && d->leading) {
        d->leading = FALSE;
        kb_leader_release(d->leader);
    }
    d->leading = FALSE;
    g_message("stopped after %" G_GUINT64_FORMAT " cycles; binds: %" G_GUINT64_FORMAT
              " succeeded, %" G_GUINT64_FORMAT " conflicts, %" G_GUINT64_FORMAT
              " not found, %" G_GUINT64_FORMAT " errors",
              d->n_cycles, kb_binder_count(d->binder, KB_BIND_SUCCEEDED),
              kb_binder_count(d->binder, KB_BIND_CONFLICT),
              kb_binder_count(d->binder, KB_BIND_NOT_FOUND),
              kb_binder_count(d->binder, KB_BIND_ERROR));
}

void kb_daemon_free(KbDaemon *daemon)
{
    KbDaemon *d = daemon;
    if (d == NULL)
        return;
    g_clear_handle_id(&d->period_source, g_source_remove);
    g_clear_handle_id(&d->kick_source, g_source_remove);
    g_clear_handle_id(&d->restart_source, g_source_remove);
    g_clear_handle_id(&d->probe_source, g_source_remove);
    g_clear_handle_id(&d->native_retry_source, g_source_remove);
    g_clear_pointer(&d->httpd, kb_httpd_free);
    g_clear_pointer(&d->extender_server, kb_extender_server_free);
    g_clear_pointer(&d->extender, kb_extender_free);
    g_clear_pointer(&d->leader, kb_leader_free);
    if (d->binder != NULL)
        kb_binder_set_claim_informer(d->binder, NULL);
    for (int i = 0; i < SRC_N; i++)
        g_clear_pointer(&d->sources[i].informer, kb_informer_free);
    g_clear_pointer(&d->binder, kb_binder_free);
    g_clear_pointer(&d->status, kb_status_writer_free);
    g_clear_pointer(&d->recorder, kb_recorder_free);
    /* Requests still on the wire are dropped with the client, and their callbacks' data with
     * them: kb_daemon_stop() first lets them finish. */
    g_clear_pointer(&d->client, kb_client_free);
    g_clear_pointer(&d->cache, kb_cache_free);
    g_clear_pointer(&d->registry, kb_metrics_free);
    g_clear_pointer(&d->queue_types, g_hash_table_unref);
    g_clear_pointer(&d->conf, kb_conf_free);
    g_strfreev(d->scheduler_names);
    g_free(d->default_queue);
    g_free(d->lock_namespace);
    g_free(d->lock_name);
    g_free(d->identity);
    g_free(d->listen_address);
    g_free(d->probe_error);
    g_free(d->extender_address);
    g_free(d->extender_tls_cert);
    g_free(d->extender_tls_key);
    g_free(d->extender_client_ca);
    g_strfreev(d->extender_scheduler_names);
    g_free(d);
}

guint16 kb_daemon_extender_port(const KbDaemon *daemon)
{
    return daemon->extender_server != NULL ? kb_extender_server_port(daemon->extender_server) : 0;
}

guint16 kb_daemon_http_port(const KbDaemon *daemon)
{
    return daemon->httpd != NULL ? kb_httpd_port(daemon->httpd) : 0;
}

KbMetrics *kb_daemon_metrics(KbDaemon *daemon)
{
    return daemon->registry;
}
