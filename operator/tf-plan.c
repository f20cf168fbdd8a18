/*
 * The TFJob reconcile planner (see tf-plan.h).
 */
#include "operator/tf-plan.h"

#include <stdlib.h>
#include <string.h>

#include "operator/tf-build.h"
#include "operator/tf-replica.h"
#include "operator/tf-status.h"

typedef struct {
    const TfObservation *obs;
    const KbTfJob *job;
    TfPlan *plan;
    TfStatus st;
    char *key; /* "ns/name" for messages */
    gint32 desired[KB_TF_N_TYPES];
    GHashTable *pods;     /* name -> KbPod* (borrowed), pods not being deleted */
    GHashTable *deleting; /* name -> KbPod* being deleted */
    GHashTable *services; /* name -> KbObjectMeta* (borrowed) */
    GHashTable *expected; /* names this job should have (owned keys) */
    gint32 kubelet_restarts;
    gboolean backoff_exceeded;
    gboolean worker0_succeeded;
    gboolean all_pods_exist;
    gboolean restarted;
    /* The scheduler evicted the gang whole (pods with KB_GANG_EVICTED_CONDITION): the round is
     * counted once, already (a pod of it recorded on its service) or in this pass. */
    gboolean gang_round_counted;
    char *restart_why; /* first restart this pass */
    char *fail_why;    /* first permanent failure this pass */
} Planner;

static const char *const action_names[] = {
        [TF_ACTION_SET_RUNTIME_ID] = "SetRuntimeId",
        [TF_ACTION_CREATE_WORKLOAD] = "CreateWorkload",
        [TF_ACTION_CREATE_POD_GROUP] = "CreatePodGroup",
        [TF_ACTION_CREATE_SERVICE] = "CreateService",
        [TF_ACTION_CREATE_POD] = "CreatePod",
        [TF_ACTION_RECORD_RESTART] = "RecordRestart",
        [TF_ACTION_DELETE_POD] = "DeletePod",
        [TF_ACTION_DELETE_SERVICE] = "DeleteService",
        [TF_ACTION_DELETE_POD_GROUP] = "DeletePodGroup",
        [TF_ACTION_UPDATE_STATUS] = "UpdateStatus",
        [TF_ACTION_DELETE_JOB] = "DeleteJob",
        [TF_ACTION_EVENT] = "Event",
};

const char *tf_action_type_to_string(TfActionType type)
{
    return type <= TF_ACTION_EVENT ? action_names[type] : "Unknown";
}

static void action_free(gpointer p)
{
    TfAction *a = p;
    g_free(a->name);
    if (a->body != NULL)
        json_object_put(a->body);
    g_free(a->reason);
    g_free(a->message);
    g_free(a);
}

void tf_plan_free(TfPlan *plan)
{
    if (plan == NULL)
        return;
    g_ptr_array_unref(plan->actions);
    if (plan->status != NULL)
        json_object_put(plan->status);
    g_free(plan);
}

guint tf_plan_count(const TfPlan *plan, TfActionType type)
{
    guint n = 0;
    for (guint i = 0; i < plan->actions->len; i++)
        n += ((const TfAction *)g_ptr_array_index(plan->actions, i))->type == type;
    return n;
}

const TfAction *tf_plan_find(const TfPlan *plan, TfActionType type, const char *name)
{
    for (guint i = 0; i < plan->actions->len; i++) {
        const TfAction *a = g_ptr_array_index(plan->actions, i);
        if (a->type == type && (name == NULL || g_strcmp0(a->name, name) == 0))
            return a;
    }
    return NULL;
}

/* Takes @body. */
static void add_action(Planner *p, TfActionType type, const char *name, json_object *body)
{
    TfAction *a = g_new0(TfAction, 1);
    a->type = type;
    a->name = g_strdup(name);
    a->body = body;
    g_ptr_array_add(p->plan->actions, a);
}

static void add_event(Planner *p, const char *type, const char *reason, const char *fmt, ...)
        G_GNUC_PRINTF(4, 5);
static void add_event(Planner *p, const char *type, const char *reason, const char *fmt, ...)
{
    TfAction *a = g_new0(TfAction, 1);
    va_list ap;
    va_start(ap, fmt);
    a->type = TF_ACTION_EVENT;
    a->event_type = type;
    a->reason = g_strdup(reason);
    a->message = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_ptr_array_add(p->plan->actions, a);
}

/* Set a condition; when it changed, also record an event with the same reason and message. */
static void condition(Planner *p, KbTfConditionType type, const char *reason,
                      const char *event_type, const char *fmt, ...) G_GNUC_PRINTF(5, 6);
static void condition(Planner *p, KbTfConditionType type, const char *reason,
                      const char *event_type, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (tf_status_set_condition(&p->st, type, reason, msg, p->obs->now))
        add_event(p, event_type, reason, "%s", msg);
}

static gboolean gang_on(const Planner *p)
{
    return p->obs->gang_scheduler != NULL && *p->obs->gang_scheduler != '\0';
}

static const char *annotation(const KbObjectMeta *m, const char *key)
{
    return m != NULL && m->annotations != NULL ? g_hash_table_lookup(m->annotations, key) : NULL;
}

/* The restarts recorded on a replica's service (0 when none or malformed). */
static gint32 recorded_restarts(const KbObjectMeta *svc)
{
    const char *v = annotation(svc, TF_ANNOTATION_RESTARTS);
    gint64 n = v != NULL ? g_ascii_strtoll(v, NULL, 10) : 0;
    return (gint32)CLAMP(n, 0, G_MAXINT32);
}

gint32 tf_plan_observed_workers(const KbTfJob *job, KbObjectMeta *const *services, guint n)
{
    gint32 workers = 0;
    for (guint i = 0; i < n; i++) {
        const KbObjectMeta *m = services[i];
        if (m == NULL || m->deletion_timestamp != 0 || m->labels == NULL)
            continue;
        const char *type = g_hash_table_lookup(m->labels, g_intern_string(TF_LABEL_REPLICA_TYPE));
        const char *idx = g_hash_table_lookup(m->labels, g_intern_string(TF_LABEL_REPLICA_INDEX));
        if (g_strcmp0(type, kb_tf_replica_type_to_lower(KB_TF_WORKER)) != 0 || idx == NULL)
            continue;
        gint64 index = g_ascii_strtoll(idx, NULL, 10);
        if (index < 0 || index >= KB_TF_MAX_REPLICAS)
            continue;
        g_autofree char *want = tf_build_replica_name(job, KB_TF_WORKER, (gint32)index);
        if (g_strcmp0(want, m->name) == 0)
            workers = MAX(workers, (gint32)index + 1);
    }
    return workers;
}

/* ---- observation indexes ----------------------------------------------------------------------
 */

static void index_observation(Planner *p)
{
    const TfObservation *obs = p->obs;
    p->pods = g_hash_table_new(g_str_hash, g_str_equal);
    p->deleting = g_hash_table_new(g_str_hash, g_str_equal);
    p->services = g_hash_table_new(g_str_hash, g_str_equal);
    p->expected = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < obs->n_pods; i++) {
        KbPod *pod = obs->pods[i];
        if (pod == NULL || pod->meta.name == NULL)
            continue;
        g_hash_table_insert(pod->meta.deletion_timestamp != 0 ? p->deleting : p->pods,
                            pod->meta.name, pod);
    }
    /* Restarts are what the services recorded, whatever an old status.restartCount said. */
    p->st.restart_count = 0;
    for (guint i = 0; i < obs->n_services; i++) {
        KbObjectMeta *svc = obs->services[i];
        if (svc != NULL && svc->name != NULL && svc->deletion_timestamp == 0) {
            g_hash_table_insert(p->services, svc->name, svc);
            p->st.restart_count += recorded_restarts(svc);
        }
    }
    for (guint i = 0; i < obs->n_pods; i++) {
        const KbPod *pod = obs->pods[i];
        const KbObjectMeta *svc = pod != NULL && pod->meta.name != NULL
                                          ? g_hash_table_lookup(p->services, pod->meta.name)
                                          : NULL;
        if (svc != NULL && pod->gang_evicted && pod->meta.uid != NULL &&
            g_strcmp0(annotation(svc, TF_ANNOTATION_RESTARTED_UID), pod->meta.uid) == 0)
            p->gang_round_counted = TRUE;
    }
    for (int t = 0; t < KB_TF_N_TYPES; t++)
        p->desired[t] = kb_tfjob_effective_replicas(p->job, t);
    if (obs->scale != NULL && obs->scale->kind != TF_SCALE_NONE && p->job->dynamic_workers &&
        p->job->specs[KB_TF_WORKER].present) {
        gint32 w = CLAMP(obs->scale->workers, p->job->min_workers, p->job->max_workers);
        if (w != p->desired[KB_TF_WORKER]) {
            gint32 before = p->desired[KB_TF_WORKER];
            p->desired[KB_TF_WORKER] = w;
            p->st.workers = w;
            p->st.decision = tf_scale_kind_to_string(obs->scale->kind);
            p->st.decision_reason = g_strdup(obs->scale->reason);
            p->st.decision_time = obs->now;
            add_event(p, "Normal", w > before ? "TFJobScaledUp" : "TFJobScaledDown",
                      "TFJob %s workers %d -> %d: %s", p->key, before, w, obs->scale->reason);
        }
    }
}

/* ---- one replica ------------------------------------------------------------------------------
 */

/* Count the restart of @pod on the replica's service @svc (before the pod goes, so that the count
 * survives it): the restarts so far, @add (this one, or 0 for a pod whose restart another pod's
 * record counts), and the container restarts the pod had. */
static void record_restart_add(Planner *p, KbTfReplicaType t, const KbObjectMeta *svc,
                               const KbPod *pod, gint32 add)
{
    KbTfRestartPolicy rp = p->job->specs[t].restart_policy;
    gint32 in_place = rp == KB_TF_RESTART_ALWAYS || rp == KB_TF_RESTART_ON_FAILURE
                              ? tf_replica_kubelet_restarts(pod)
                              : 0;
    gint64 n = (gint64)recorded_restarts(svc) + add + in_place;
    char count[24];
    g_snprintf(count, sizeof(count), "%" G_GINT64_FORMAT, MIN(n, G_MAXINT32));
    json_object *patch = json_object_new_object(), *meta = json_object_new_object();
    json_object *ann = json_object_new_object();
    json_object_object_add(ann, TF_ANNOTATION_RESTARTS, json_object_new_string(count));
    json_object_object_add(ann, TF_ANNOTATION_RESTARTED_UID,
                           json_object_new_string(pod->meta.uid != NULL ? pod->meta.uid : ""));
    json_object_object_add(meta, "annotations", ann);
    json_object_object_add(patch, "metadata", meta);
    add_action(p, TF_ACTION_RECORD_RESTART, svc->name, patch);
}

static void record_restart(Planner *p, KbTfReplicaType t, const KbObjectMeta *svc, const KbPod *pod)
{
    record_restart_add(p, t, svc, pod, 1);
}

/*
 * @pod (Failed, or being deleted) was evicted by the scheduler with the rest of its gang, which
 * had lost a member: one retryable failure of the job, counted once per round against
 * backoffLimit (on the first such pod's service; the others record their uid only), whatever
 * the exit-code table says of the containers the eviction stopped. Returns FALSE when the
 * backoff limit is reached instead.
 */
static gboolean gang_evicted(Planner *p, KbTfReplicaType t, gint32 index, const KbPod *pod,
                             const KbObjectMeta *svc)
{
    if (svc == NULL || g_strcmp0(annotation(svc, TF_ANNOTATION_RESTARTED_UID), pod->meta.uid) == 0)
        return TRUE; /* counted already */
    if (p->gang_round_counted) {
        record_restart_add(p, t, svc, pod, 0);
        return TRUE;
    }
    gint32 used = p->st.restart_count + p->kubelet_restarts;
    if (p->job->backoff_limit >= 0 && used >= p->job->backoff_limit) {
        p->backoff_exceeded = TRUE;
        return FALSE;
    }
    p->gang_round_counted = TRUE;
    record_restart_add(p, t, svc, pod, 1);
    p->st.restart_count++;
    if (!p->restarted)
        p->restart_why = g_strdup_printf("%s replica %d: its gang was evicted whole by the "
                                         "scheduler after losing a member: retryable",
                                         kb_tf_replica_type_to_string(t), index);
    p->restarted = TRUE;
    add_event(p, "Warning", "GangEvicted",
              "Pod %s/%s was evicted with its whole gang (a member was lost): the job restarts",
              p->job->meta.namespace_ ? p->job->meta.namespace_ : "", pod->meta.name);
    return TRUE;
}

/* @folded: this pod's restart is already recorded on @svc (a pass that failed before deleting). */
static void handle_failed_pod(Planner *p, KbTfReplicaType t, gint32 index, KbPod *pod,
                              const KbObjectMeta *svc, gboolean folded)
{
    g_autofree char *why = NULL;
    if (pod->gang_evicted) {
        if (!gang_evicted(p, t, index, pod, svc)) {
            p->st.failed[t]++;
            return;
        }
        add_action(p, TF_ACTION_DELETE_POD, pod->meta.name, NULL);
        p->all_pods_exist = FALSE;
        return;
    }
    TfReplicaDecision d = tf_replica_decide(p->job, p->job->specs[t].restart_policy, pod, &why);
    if (d == TF_REPLICA_RECREATE) {
        gint32 used = p->st.restart_count + p->kubelet_restarts;
        if (!folded && p->job->backoff_limit >= 0 && used >= p->job->backoff_limit) {
            p->backoff_exceeded = TRUE;
            p->st.failed[t]++;
            return;
        }
        if (svc == NULL) {
            /* Nowhere to count it yet: the service is created in this pass, the pod goes in
             * the next one. */
            p->st.pending[t]++;
            p->all_pods_exist = FALSE;
            return;
        }
        if (!folded) {
            record_restart(p, t, svc, pod);
            p->st.restart_count++;
        }
        add_action(p, TF_ACTION_DELETE_POD, pod->meta.name, NULL);
        p->all_pods_exist = FALSE;
        if (!p->restarted)
            p->restart_why = g_strdup_printf("%s replica %d: %s", kb_tf_replica_type_to_string(t),
                                             index, why);
        p->restarted = TRUE;
        add_event(p, "Warning", "ExitedWithCode", "Pod %s/%s will be restarted: %s",
                  p->job->meta.namespace_ ? p->job->meta.namespace_ : "", pod->meta.name, why);
        return;
    }
    p->st.failed[t]++;
    if (p->fail_why == NULL)
        p->fail_why =
                g_strdup_printf("%s replica %d: %s", kb_tf_replica_type_to_string(t), index, why);
}

static void reconcile_replica(Planner *p, KbTfReplicaType t, gint32 index, gboolean pods_allowed)
{
    char *name = tf_build_replica_name(p->job, t, index);
    g_hash_table_add(p->expected, name);
    const KbObjectMeta *svc = g_hash_table_lookup(p->services, name);
    if (svc == NULL)
        add_action(p, TF_ACTION_CREATE_SERVICE, name, tf_build_service(p->job, t, index));
    KbPod *pod = g_hash_table_lookup(p->pods, name);
    if (pod == NULL) {
        const KbPod *gone = g_hash_table_lookup(p->deleting, name);
        if (gone != NULL && gone->gang_evicted)
            gang_evicted(p, t, index, gone, svc);
        p->all_pods_exist = FALSE;
        /* A pod still being deleted holds the name: create once it is gone. */
        if (pods_allowed && g_hash_table_lookup(p->deleting, name) == NULL)
            add_action(p, TF_ACTION_CREATE_POD, name,
                       tf_build_pod_in(p->job, t, index, p->obs->gang_scheduler, p->obs->gang_api));
        return;
    }
    gboolean folded = pod->meta.uid != NULL &&
                      g_strcmp0(annotation(svc, TF_ANNOTATION_RESTARTED_UID), pod->meta.uid) == 0;
    KbTfRestartPolicy rp = p->job->specs[t].restart_policy;
    if ((rp == KB_TF_RESTART_ALWAYS || rp == KB_TF_RESTART_ON_FAILURE) && !folded)
        p->kubelet_restarts += tf_replica_kubelet_restarts(pod);
    switch (pod->phase) {
    case KB_POD_RUNNING:
        p->st.active[t]++;
        break;
    case KB_POD_SUCCEEDED:
        p->st.succeeded[t]++;
        if (t == KB_TF_WORKER && index == 0)
            p->worker0_succeeded = TRUE;
        break;
    case KB_POD_FAILED:
        handle_failed_pod(p, t, index, pod, svc, folded);
        break;
    default:
        p->st.pending[t]++;
        break;
    }
}

static int compare_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Pods and services of the job that no replica wants (scaled down, stale runtime id). */
static void delete_strays(Planner *p)
{
    GHashTableIter it;
    gpointer key, val;
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    g_hash_table_iter_init(&it, p->pods);
    while (g_hash_table_iter_next(&it, &key, &val))
        if (!g_hash_table_contains(p->expected, key))
            g_ptr_array_add(names, key);
    g_ptr_array_sort(names, compare_names);
    for (guint i = 0; i < names->len; i++)
        add_action(p, TF_ACTION_DELETE_POD, g_ptr_array_index(names, i), NULL);
    g_ptr_array_set_size(names, 0);
    g_hash_table_iter_init(&it, p->services);
    while (g_hash_table_iter_next(&it, &key, &val))
        if (!g_hash_table_contains(p->expected, key))
            g_ptr_array_add(names, key);
    g_ptr_array_sort(names, compare_names);
    for (guint i = 0; i < names->len; i++)
        add_action(p, TF_ACTION_DELETE_SERVICE, g_ptr_array_index(names, i), NULL);
}

/* ---- job-level decisions ------------------------------------------------------------------------
 */

static KbTfReplicaType chief_type(const KbTfJob *job)
{
    return job->specs[KB_TF_CHIEF].present ? KB_TF_CHIEF : KB_TF_MASTER;
}

static gboolean job_succeeded(const Planner *p)
{
    const KbTfJob *job = p->job;
    if (kb_tfjob_has_chief(job)) {
        KbTfReplicaType c = chief_type(job);
        return p->desired[c] > 0 && p->st.succeeded[c] >= p->desired[c];
    }
    if (job->specs[KB_TF_WORKER].present && p->desired[KB_TF_WORKER] > 0) {
        if (job->success_all_workers)
            return p->st.succeeded[KB_TF_WORKER] >= p->desired[KB_TF_WORKER];
        return p->worker0_succeeded;
    }
    /* Neither chief nor workers: every replica must succeed. */
    gint32 want = 0, done = 0;
    for (int t = 0; t < KB_TF_N_TYPES; t++) {
        want += p->desired[t];
        done += MIN(p->st.succeeded[t], p->desired[t]);
    }
    return want > 0 && done >= want;
}

static gboolean job_running(const Planner *p)
{
    if (kb_tfjob_has_chief(p->job))
        return p->st.active[chief_type(p->job)] > 0;
    if (p->job->specs[KB_TF_WORKER].present)
        return p->st.active[KB_TF_WORKER] > 0;
    for (int t = 0; t < KB_TF_N_TYPES; t++)
        if (p->st.active[t] > 0)
            return TRUE;
    return FALSE;
}

static gint32 total_failed(const Planner *p, KbTfReplicaType *first)
{
    gint32 n = 0;
    for (int t = KB_TF_N_TYPES - 1; t >= 0; t--) {
        if (p->st.failed[t] > 0)
            *first = t;
        n += p->st.failed[t];
    }
    return n;
}

static void finish(Planner *p, KbTfConditionType type)
{
    if (p->st.completion_time == 0)
        p->st.completion_time = p->obs->now;
    if (type == KB_TF_COND_SUCCEEDED && p->job->api != KB_TF_API_V1ALPHA1) {
        /* As kubeflow common: replicas still active when the job succeeded count as done.
         * v1alpha1 keeps them Running, as the seed's sample output shows. */
        for (int t = 0; t < KB_TF_N_TYPES; t++) {
            p->st.succeeded[t] += p->st.active[t];
            p->st.active[t] = 0;
        }
    }
}

static void decide_job(Planner *p)
{
    const KbTfJob *job = p->job;
    KbTfReplicaType ft = KB_TF_WORKER;
    gint32 nfailed = total_failed(p, &ft);
    gint64 now = p->obs->now;

    if (p->backoff_exceeded || (job->backoff_limit >= 0 &&
                                p->st.restart_count + p->kubelet_restarts > job->backoff_limit)) {
        condition(p, KB_TF_COND_FAILED, "TFJobFailed", "Warning",
                  "TFJob %s has failed because it has reached the specified backoff limit (%d "
                  "restarts)",
                  p->key, job->backoff_limit);
    } else if (nfailed > 0) {
        condition(p, KB_TF_COND_FAILED, "TFJobFailed", "Warning",
                  "TFJob %s has failed because %d %s replica(s) failed: %s", p->key, nfailed,
                  kb_tf_replica_type_to_string(ft), p->fail_why ? p->fail_why : "pod failed");
    } else if (job_succeeded(p)) {
        condition(p, KB_TF_COND_SUCCEEDED, "TFJobSucceeded", "Normal",
                  "TFJob %s successfully completed.", p->key);
    } else if (job->active_deadline_seconds > 0 && p->st.start_time > 0 &&
               now >= p->st.start_time + job->active_deadline_seconds) {
        condition(p, KB_TF_COND_FAILED, "TFJobFailed", "Warning",
                  "TFJob %s has failed because it was active longer than specified deadline "
                  "(%" G_GINT64_FORMAT "s)",
                  p->key, job->active_deadline_seconds);
    } else if (p->restarted) {
        condition(p, KB_TF_COND_RESTARTING, "TFJobRestarting", "Warning",
                  "TFJob %s is restarting because %s", p->key, p->restart_why);
    } else if (job_running(p)) {
        condition(p, KB_TF_COND_RUNNING, "TFJobRunning", "Normal", "TFJob %s is running.", p->key);
    }
    if (tf_status_is(&p->st, KB_TF_COND_SUCCEEDED))
        finish(p, KB_TF_COND_SUCCEEDED);
    else if (tf_status_is(&p->st, KB_TF_COND_FAILED))
        finish(p, KB_TF_COND_FAILED);
    else if (job->active_deadline_seconds > 0 && p->st.start_time > 0)
        p->plan->requeue_after = MAX(p->st.start_time + job->active_deadline_seconds - now, 1);
}

/* ---- a running job ----------------------------------------------------------------------------
 */

static void reconcile_running(Planner *p)
{
    const KbTfJob *job = p->job;
    gboolean pods_allowed = TRUE;

    if (p->st.start_time == 0)
        p->st.start_time = p->obs->now;
    if (gang_on(p) && p->obs->pod_group == NULL) {
        /* The Workload first: the PodGroup's workloadRef names it. An existing one is a 409,
         * which counts as done. */
        if (p->obs->gang_api == TF_GANG_API_NATIVE)
            add_action(p, TF_ACTION_CREATE_WORKLOAD, job->meta.name, tf_build_workload(job));
        add_action(p, TF_ACTION_CREATE_POD_GROUP, job->meta.name,
                   tf_build_pod_group_in(job, p->obs->gang_api));
        pods_allowed = FALSE; /* all-or-nothing starts with the group */
    }
    p->all_pods_exist = TRUE;
    p->st.counted = TRUE;
    for (int t = 0; t < KB_TF_N_TYPES; t++)
        for (gint32 i = 0; job->specs[t].present && i < p->desired[t]; i++)
            reconcile_replica(p, t, i, pods_allowed);
    delete_strays(p);
    decide_job(p);
    p->st.alpha_phase = p->all_pods_exist ? "Running" : "Creating";
}

/* ---- a finished job: cleanup and TTL ------------------------------------------------------------
 */

static gboolean clean_pod(const KbTfJob *job, const KbPod *pod)
{
    switch (job->clean_pod_policy) {
    case KB_TF_CLEAN_ALL:
        return TRUE;
    case KB_TF_CLEAN_RUNNING:
        return pod->phase == KB_POD_RUNNING || pod->phase == KB_POD_PENDING ||
               pod->phase == KB_POD_UNKNOWN;
    default:
        return FALSE;
    }
}

static void cleanup_finished(Planner *p)
{
    const KbTfJob *job = p->job;
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    GHashTableIter it;
    gpointer key, val;
    gboolean pending =
            g_hash_table_size(p->deleting) > 0 && job->clean_pod_policy != KB_TF_CLEAN_NONE;

    g_hash_table_iter_init(&it, p->pods);
    while (g_hash_table_iter_next(&it, &key, &val))
        if (clean_pod(job, val))
            g_ptr_array_add(names, key);
    g_ptr_array_sort(names, compare_names);
    for (guint i = 0; i < names->len; i++) {
        const char *name = g_ptr_array_index(names, i);
        add_action(p, TF_ACTION_DELETE_POD, name, NULL);
        if (g_hash_table_remove(p->services, name))
            add_action(p, TF_ACTION_DELETE_SERVICE, name, NULL);
        pending = TRUE;
    }
    if (job->clean_pod_policy == KB_TF_CLEAN_ALL) {
        /* Services whose pod is already gone. */
        g_ptr_array_set_size(names, 0);
        g_hash_table_iter_init(&it, p->services);
        while (g_hash_table_iter_next(&it, &key, &val))
            if (g_hash_table_lookup(p->pods, key) == NULL)
                g_ptr_array_add(names, key);
        g_ptr_array_sort(names, compare_names);
        for (guint i = 0; i < names->len; i++)
            add_action(p, TF_ACTION_DELETE_SERVICE, g_ptr_array_index(names, i), NULL);
        pending |= names->len > 0;
    }
    if (p->obs->pod_group != NULL && p->obs->pod_group->deletion_timestamp == 0)
        add_action(p, TF_ACTION_DELETE_POD_GROUP, p->obs->pod_group->name, NULL);
    p->st.alpha_phase = pending                                   ? "CleanUp"
                        : tf_status_is(&p->st, KB_TF_COND_FAILED) ? "Failed"
                                                                  : "Done";
}

static void check_ttl(Planner *p)
{
    gint64 ttl = p->job->ttl_seconds_after_finished;
    if (ttl < 0 || p->st.completion_time == 0)
        return;
    gint64 left = p->st.completion_time + ttl - p->obs->now;
    if (left <= 0)
        add_action(p, TF_ACTION_DELETE_JOB, p->job->meta.name, NULL);
    else
        p->plan->requeue_after = left;
}

/* ---- entry ------------------------------------------------------------------------------------
 */

/* A job that ended during this pass creates nothing more, and deletes each object once. */
static void drop_moot_actions(Planner *p)
{
    GPtrArray *a = p->plan->actions;
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < a->len;) {
        const TfAction *x = g_ptr_array_index(a, i);
        gboolean drop = FALSE;
        if (x->type == TF_ACTION_CREATE_POD || x->type == TF_ACTION_CREATE_SERVICE ||
            x->type == TF_ACTION_CREATE_POD_GROUP || x->type == TF_ACTION_CREATE_WORKLOAD) {
            drop = TRUE;
        } else if (x->type == TF_ACTION_DELETE_POD || x->type == TF_ACTION_DELETE_SERVICE) {
            char *k = g_strdup_printf("%d/%s", x->type, x->name);
            drop = !g_hash_table_add(seen, k);
        }
        if (drop)
            g_ptr_array_remove_index(a, i);
        else
            i++;
    }
}

static int action_rank(TfActionType t)
{
    /* The enum order, with services deleted before pods (a dynamic job's worker count is its
     * services: a shrink stopped half-way must not grow back) and events before the status. */
    static const int rank[] = {
            [TF_ACTION_SET_RUNTIME_ID] = 0,   [TF_ACTION_CREATE_WORKLOAD] = 1,
            [TF_ACTION_CREATE_POD_GROUP] = 2, [TF_ACTION_CREATE_SERVICE] = 3,
            [TF_ACTION_CREATE_POD] = 4,       [TF_ACTION_RECORD_RESTART] = 5,
            [TF_ACTION_DELETE_SERVICE] = 6,   [TF_ACTION_DELETE_POD] = 7,
            [TF_ACTION_DELETE_POD_GROUP] = 8, [TF_ACTION_EVENT] = 9,
            [TF_ACTION_UPDATE_STATUS] = 10,   [TF_ACTION_DELETE_JOB] = 11,
    };
    return rank[t];
}

static int compare_actions(gconstpointer a, gconstpointer b)
{
    const TfAction *x = *(const TfAction *const *)a, *y = *(const TfAction *const *)b;
    return action_rank(x->type) - action_rank(y->type);
}

static void finalize_status(Planner *p)
{
    json_object *status = tf_status_to_json(&p->st, p->job);
    if (p->job->status.raw == NULL || !json_object_equal(status, p->job->status.raw))
        add_action(p, TF_ACTION_UPDATE_STATUS, p->job->meta.name, json_object_get(status));
    p->plan->status = status;
}

static void planner_clear(Planner *p)
{
    tf_status_clear(&p->st);
    g_clear_pointer(&p->pods, g_hash_table_unref);
    g_clear_pointer(&p->deleting, g_hash_table_unref);
    g_clear_pointer(&p->services, g_hash_table_unref);
    g_clear_pointer(&p->expected, g_hash_table_unref);
    g_free(p->key);
    g_free(p->restart_why);
    g_free(p->fail_why);
}

TfPlan *tf_plan_compute(const TfObservation *obs)
{
    const KbTfJob *job = obs->job;
    TfPlan *plan = g_new0(TfPlan, 1);
    Planner p = {.obs = obs, .job = job, .plan = plan};

    plan->actions = g_ptr_array_new_with_free_func(action_free);
    plan->requeue_after = -1;
    tf_status_init(&p.st, job);
    p.key = g_strdup_printf("%s/%s", job->meta.namespace_ ? job->meta.namespace_ : "",
                            job->meta.name);
    if (!kb_tfjob_is_finished(job) && job->invalid == NULL && job->api == KB_TF_API_V1ALPHA1 &&
        job->runtime_id == NULL) {
        /* Every name depends on it: write it first, plan the rest on the next observation. */
        char *id = tf_build_runtime_id();
        add_action(&p, TF_ACTION_SET_RUNTIME_ID, id, NULL);
        g_free(id);
        planner_clear(&p);
        return plan;
    }
    index_observation(&p);
    condition(&p, KB_TF_COND_CREATED, "TFJobCreated", "Normal", "TFJob %s is created.", p.key);
    if (job->invalid != NULL && !kb_tfjob_is_finished(job)) {
        if (tf_status_set_condition(&p.st, KB_TF_COND_FAILED, "TFJobFailed", job->invalid,
                                    obs->now))
            add_event(&p, "Warning", "InvalidTFJobSpec", "%s", job->invalid);
        finish(&p, KB_TF_COND_FAILED);
    } else if (!kb_tfjob_is_finished(job)) {
        reconcile_running(&p);
    }
    if (tf_status_is(&p.st, KB_TF_COND_SUCCEEDED) || tf_status_is(&p.st, KB_TF_COND_FAILED)) {
        cleanup_finished(&p);
        drop_moot_actions(&p);
        check_ttl(&p);
    }
    finalize_status(&p);
    /* Stable (GLib's sort is a merge sort): creates, deletes, events, status, job deletion. */
    g_ptr_array_sort(plan->actions, compare_actions);
    planner_clear(&p);
    return plan;
}
