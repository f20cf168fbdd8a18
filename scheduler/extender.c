/*
 * Extender decisions (see the header): reservations from the cycle's plan, filter, prioritize,
 * bind and preempt verdicts. Runs on the thread that owns the cache.
 */
#include "scheduler/extender.h"

#include <string.h>

#include "kube/kb-log.h"
#include "policies/plugin.h"
#include "scheduler/session.h"

typedef struct {
    gint64 since; /* the cycle's clock when the gang was first reserved */
    guint64 seq;  /* which plan: a pod told of an earlier one is told again */
} Reservation;

typedef struct {
    KbPod *pod;   /* a reference */
    gint64 since; /* the caller's clock (seconds) when the request brought it */
} RequestPod;

static void request_pod_free(gpointer data)
{
    RequestPod *rp = data;
    kb_object_unref(rp->pod);
    g_free(rp);
}

/* The claim writes the gang's commit made for a reserved pod (KbPlacement.claim_writes): what a
 * bind onto that node may write when kube-scheduler did not allocate the claims itself. */
typedef struct {
    char *uid;
    char *node;
    GPtrArray *writes; /* KbClaimWrite*, owned */
} PlanWrites;

/* A claim a bind of ours wrote, until the watch shows it: its node and the pods it reserved. */
typedef struct {
    char *node;
    GStrv uids;
} Written;

static void written_free(gpointer p)
{
    Written *w = p;
    g_free(w->node);
    g_strfreev(w->uids);
    g_free(w);
}

static void plan_writes_free(gpointer p)
{
    PlanWrites *pw = p;
    g_free(pw->uid);
    g_free(pw->node);
    g_ptr_array_unref(pw->writes);
    g_free(pw);
}

/* A managed pod kube-scheduler asked about (filter) and that is not bound yet. */
typedef struct {
    char *namespace_;
    char *name;
    char *uid;
    guint64 seen; /* the plan (Reservation.seq) it saw or was told of; 0: none */
} Asked;

struct KbExtender {
    KbCache *cache;
    const KbConf *conf;
    guint ttl_s;
    KbExtenderPlanFunc plan;
    gpointer plan_data;
    GHashTable *reservations; /* job key -> Reservation* */
    GHashTable *seen_us;      /* job key -> gint64* monotonic time a cycle last looked at it */
    guint replan_ms;
    /* "ns/name" -> RequestPod: a pod a request put into the cache before the watch brought it:
     * planned, never bound, until the watch replaces that object; dropped from the cache when
     * the watch has not brought it within the reservation TTL (no such pod, or a forged one). */
    GHashTable *from_request;
    GHashTable *binding; /* "ns/name" of bindings on the wire */
    guint64 next_seq;
    gboolean requeue;
    GHashTable *asked;       /* "ns/name" -> Asked* */
    GPtrArray *pending;      /* KbExtenderRequeue* not taken yet */
    GHashTable *plan_writes; /* "ns/name" -> PlanWrites*: reserved pods' claim writes */
    GHashTable *bind_writes; /* "ns/name" -> GPtrArray*: an accepted bind's, until taken */
    GHashTable *written;     /* claim "ns/name" -> Written*: our writes the cache lacks yet */
};

static void asked_free(gpointer p)
{
    Asked *a = p;
    g_free(a->namespace_);
    g_free(a->name);
    g_free(a->uid);
    g_free(a);
}

static void requeue_free(gpointer p)
{
    KbExtenderRequeue *r = p;
    g_free(r->namespace_);
    g_free(r->name);
    g_free(r->uid);
    g_free(r);
}

KbExtender *kb_extender_new(KbCache *cache, const KbConf *conf, guint reservation_ttl_s)
{
    KbExtender *ext = g_new0(KbExtender, 1);
    ext->cache = cache;
    ext->conf = conf;
    ext->ttl_s = reservation_ttl_s > 0 ? reservation_ttl_s : KB_EXTENDER_DEFAULT_RESERVATION_TTL_S;
    ext->reservations = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    ext->seen_us = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    ext->replan_ms = KB_EXTENDER_REPLAN_MS;
    ext->from_request = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, request_pod_free);
    ext->binding = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    ext->requeue = TRUE;
    ext->asked = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, asked_free);
    ext->pending = g_ptr_array_new_with_free_func(requeue_free);
    ext->plan_writes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, plan_writes_free);
    ext->bind_writes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                             (GDestroyNotify)g_ptr_array_unref);
    ext->written = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, written_free);
    kb_cache_set_extender(cache, TRUE);
    return ext;
}

void kb_extender_free(KbExtender *ext)
{
    if (ext == NULL)
        return;
    g_hash_table_unref(ext->reservations);
    g_hash_table_unref(ext->seen_us);
    g_hash_table_unref(ext->from_request);
    g_hash_table_unref(ext->binding);
    g_hash_table_unref(ext->asked);
    g_ptr_array_unref(ext->pending);
    g_hash_table_unref(ext->plan_writes);
    g_hash_table_unref(ext->bind_writes);
    g_hash_table_unref(ext->written);
    g_free(ext);
}

void kb_extender_set_plan_func(KbExtender *ext, KbExtenderPlanFunc func, gpointer user_data)
{
    ext->plan = func;
    ext->plan_data = user_data;
}

guint kb_extender_reservations(const KbExtender *ext)
{
    return g_hash_table_size(ext->reservations);
}

void kb_extender_set_requeue(KbExtender *ext, gboolean on)
{
    ext->requeue = on;
}

/* ---- requeue --------------------------------------------------------------------------------- */

static guint64 plan_of(KbExtender *ext, const KbJobInfo *job)
{
    const Reservation *r = g_hash_table_lookup(ext->reservations, job->key);
    return r != NULL ? r->seq : 0;
}

/* kube-scheduler asked about @pod and saw plan @seen (0: failed with no plan). */
static void note_asked(KbExtender *ext, const char *namespace_, const char *name, const char *uid,
                       guint64 seen)
{
    g_autofree char *key = g_strdup_printf("%s/%s", namespace_, name);
    Asked *a = g_hash_table_lookup(ext->asked, key);
    if (a == NULL) {
        a = g_new0(Asked, 1);
        a->namespace_ = g_strdup(namespace_);
        a->name = g_strdup(name);
        g_hash_table_insert(ext->asked, g_steal_pointer(&key), a);
    }
    if (g_strcmp0(a->uid, uid) != 0) {
        g_free(a->uid);
        a->uid = g_strdup(uid);
    }
    a->seen = seen;
}

static void forget_asked(KbExtender *ext, const char *namespace_, const char *name)
{
    g_autofree char *key = g_strdup_printf("%s/%s", namespace_, name);
    g_hash_table_remove(ext->asked, key);
}

/* After a plan: every asked pod whose gang holds a plan it has not seen is due; pods bound or
 * gone are forgotten. */
static void collect_requeues(KbExtender *ext)
{
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, ext->asked);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        Asked *a = v;
        KbTaskInfo *t = kb_cache_lookup_task(ext->cache, a->namespace_, a->name);
        if (t == NULL || (a->uid != NULL && g_strcmp0(t->pod->meta.uid, a->uid) != 0) ||
            (t->state != KB_TASK_PENDING && t->state != KB_TASK_ALLOCATED)) {
            g_hash_table_iter_remove(&it);
            continue;
        }
        guint64 seq = plan_of(ext, t->job);
        if (!ext->requeue || t->state != KB_TASK_ALLOCATED || seq == 0 || seq == a->seen)
            continue;
        a->seen = seq;
        KbExtenderRequeue *r = g_new0(KbExtenderRequeue, 1);
        r->namespace_ = g_strdup(a->namespace_);
        r->name = g_strdup(a->name);
        r->uid = g_strdup(a->uid);
        g_ptr_array_add(ext->pending, r);
    }
}

GPtrArray *kb_extender_take_requeues(KbExtender *ext)
{
    GPtrArray *out = ext->pending;
    ext->pending = g_ptr_array_new_with_free_func(requeue_free);
    return out;
}

/* ---- the plan -------------------------------------------------------------------------------- */

/* Keep @p's claim writes (taken from it) for a bind onto its node; a new plan replaces the old. */
static void keep_plan_writes(KbExtender *ext, KbPlacement *p)
{
    char *key = g_strdup_printf("%s/%s", p->pod->meta.namespace_, p->pod->meta.name);
    if (p->claim_writes == NULL || p->claim_writes->len == 0 || p->pod->meta.uid == NULL) {
        g_hash_table_remove(ext->plan_writes, key);
        g_free(key);
        g_clear_pointer(&p->claim_writes, g_ptr_array_unref);
        return;
    }
    PlanWrites *pw = g_new0(PlanWrites, 1);
    pw->uid = g_strdup(p->pod->meta.uid);
    pw->node = g_strdup(p->node);
    pw->writes = g_steal_pointer(&p->claim_writes);
    g_hash_table_replace(ext->plan_writes, key, pw);
}

void kb_extender_take_placements(KbExtender *ext, KbCycleResult *result)
{
    gint64 now_us = g_get_monotonic_time();
    for (guint i = 0; i < result->job_statuses->len; i++) {
        const KbJobStatus *st = &g_array_index(result->job_statuses, KbJobStatus, i);
        g_hash_table_insert(ext->seen_us, g_strdup(st->job), g_memdup2(&now_us, sizeof(now_us)));
    }
    guint kept = 0;
    for (guint i = 0; i < result->placements->len; i++) {
        KbPlacement *p = &g_array_index(result->placements, KbPlacement, i);
        KbTaskInfo *task =
                kb_cache_lookup_task(ext->cache, p->pod->meta.namespace_, p->pod->meta.name);
        if (task == NULL || !kb_cache_task_is_extender(ext->cache, task)) {
            if (kept != i) {
                g_array_index(result->placements, KbPlacement, kept) = *p;
                memset(p, 0, sizeof(*p));
            }
            kept++;
            continue;
        }
        if (!g_hash_table_contains(ext->reservations, p->job)) {
            Reservation r = {.since = result->now, .seq = ++ext->next_seq};
            g_hash_table_insert(ext->reservations, g_strdup(p->job), g_memdup2(&r, sizeof(r)));
        }
        g_debug("extender: reserved node %s for pod %s/%s (gang %s, gpu-ids %s)", p->node,
                p->pod->meta.namespace_, p->pod->meta.name, p->job,
                p->gpu_ids != NULL ? p->gpu_ids : "-");
        keep_plan_writes(ext, p);
        kb_object_unref(p->pod);
        g_free(p->job);
        g_free(p->gpu_ids);
        memset(p, 0, sizeof(*p));
    }
    /* The array's clear function runs on the tail: leave it nothing to free twice. */
    for (guint i = kept; i < result->placements->len; i++)
        memset(&g_array_index(result->placements, KbPlacement, i), 0, sizeof(KbPlacement));
    g_array_set_size(result->placements, kept);
    collect_requeues(ext);
}

/* No daemon: run the cycle here; placements of served pods (none in tests) are released. */
static gboolean plan_here(KbExtender *ext, gint64 now)
{
    g_autoptr(KbCycleResult) r = kb_cycle_run(ext->cache, ext->conf, now);
    kb_extender_take_placements(ext, r);
    for (guint i = 0; i < r->placements->len; i++) {
        KbPlacement *p = &g_array_index(r->placements, KbPlacement, i);
        KbTaskInfo *t =
                kb_cache_lookup_task(ext->cache, p->pod->meta.namespace_, p->pod->meta.name);
        if (t != NULL)
            kb_cache_forget_task(ext->cache, t);
    }
    return TRUE;
}

static gboolean plan_now(KbExtender *ext, gint64 now)
{
    return ext->plan != NULL ? ext->plan(ext->plan_data) : plan_here(ext, now);
}

/* Did a cycle look at @job within the replan gap? */
static gboolean seen_recently(KbExtender *ext, const KbJobInfo *job)
{
    const gint64 *t = g_hash_table_lookup(ext->seen_us, job->key);
    return t != NULL && g_get_monotonic_time() - *t < (gint64)ext->replan_ms * 1000;
}

static char *pod_key(const char *namespace_, const char *name)
{
    return g_strdup_printf("%s/%s", namespace_, name);
}

/* Did the pod of @t come from a request rather than the watch? */
static gboolean task_from_request(KbExtender *ext, const KbTaskInfo *t)
{
    g_autofree char *key = pod_key(t->pod->meta.namespace_, t->pod->meta.name);
    RequestPod *rp = g_hash_table_lookup(ext->from_request, key);
    if (rp == NULL)
        return FALSE;
    if (rp->pod == t->pod)
        return TRUE;
    g_hash_table_remove(ext->from_request, key); /* the watch has brought it since */
    return FALSE;
}

/*
 * The cache's task for the pod of a request, adding the request's copy when the watch has not
 * brought it yet (kube-scheduler asks as soon as the pod exists). A request never replaces what
 * the watch brought (its copy could carry another UID, no nodeSelector, ...), and a pod taken
 * from a request is planned but not bound until the watch confirms it (task_from_request).
 * NULL when not a managed pod.
 */
static KbTaskInfo *request_task(KbExtender *ext, KbPod *pod, gint64 now)
{
    KbTaskInfo *t = kb_cache_lookup_task(ext->cache, pod->meta.namespace_, pod->meta.name);
    if (t == NULL || (pod->meta.uid != NULL && g_strcmp0(t->pod->meta.uid, pod->meta.uid) != 0 &&
                      task_from_request(ext, t))) {
        if (t == NULL && kb_cache_has_pod(ext->cache, pod->meta.namespace_, pod->meta.name))
            return NULL; /* the watch's pod, not planned for the extender */
        if (pod->node_name != NULL)
            return NULL; /* kube-scheduler asks about pending pods only */
        kb_cache_update_pod(ext->cache, pod);
        t = kb_cache_lookup_task(ext->cache, pod->meta.namespace_, pod->meta.name);
        if (t != NULL && t->pod == pod) {
            RequestPod *rp = g_new0(RequestPod, 1);
            rp->pod = kb_object_ref(pod);
            rp->since = now;
            g_hash_table_replace(ext->from_request, pod_key(pod->meta.namespace_, pod->meta.name),
                                 rp);
        }
    }
    if (t != NULL && pod->meta.uid != NULL && g_strcmp0(t->pod->meta.uid, pod->meta.uid) != 0)
        return NULL;
    return t != NULL && kb_cache_task_is_extender(ext->cache, t) ? t : NULL;
}

static gboolean on_node(KbTaskState s)
{
    return s == KB_TASK_ALLOCATED || s == KB_TASK_BINDING || s == KB_TASK_BOUND ||
           s == KB_TASK_RUNNING;
}

static const char *node_name(KbExtender *ext, gint id)
{
    guint n = 0;
    KbNodeInfo *nodes = kb_cache_nodes(ext->cache, &n);
    return id >= 0 && (guint)id < n ? nodes[id].name : NULL;
}

/* ---- filter ---------------------------------------------------------------------------------- */

static void filter_all(KbExtenderFilter *out, guint n, const char *why, gboolean unresolvable)
{
    for (guint i = 0; i < n; i++) {
        out->why[i] = why;
        out->unresolvable[i] = unresolvable;
    }
}

static const char *keep_string(KbExtenderFilter *out, char *s)
{
    g_ptr_array_add(out->strings, s);
    return s;
}

void kb_extender_filter(KbExtender *ext, const KbExtenderArgs *args, gint64 now,
                        KbExtenderFilter *out)
{
    memset(out, 0, sizeof(*out));
    out->why = g_new0(const char *, args->n_nodes + 1);
    out->unresolvable = g_new0(gboolean, args->n_nodes + 1);
    out->strings = g_ptr_array_new_with_free_func(g_free);
    if (!kb_cache_extender_manages(ext->cache, args->pod))
        return; /* pass-through: every candidate passes */
    out->managed = TRUE;
    const KbPod *pod = args->pod;
    KbTaskInfo *task = request_task(ext, args->pod, now);
    if (task == NULL) {
        out->error = g_strdup_printf("pod %s/%s: not managed by the extender", pod->meta.namespace_,
                                     pod->meta.name);
        return;
    }
    if (!on_node(task->state) && !seen_recently(ext, task->job)) {
        if (!plan_now(ext, now)) {
            out->error = g_strdup("kube-batchd cannot plan now (not leading, or its caches are "
                                  "not synced yet)");
            return;
        }
        task = kb_cache_lookup_task(ext->cache, pod->meta.namespace_, pod->meta.name);
        if (task == NULL) {
            out->error = g_strdup_printf("pod %s/%s: gone", pod->meta.namespace_, pod->meta.name);
            return;
        }
    }
    const KbJobInfo *job = task->job;
    /* What kube-scheduler learns now: a node (the plan) or none (it parks the pod). */
    if (task->state == KB_TASK_PENDING || task->state == KB_TASK_ALLOCATED)
        note_asked(ext, pod->meta.namespace_, pod->meta.name, task->pod->meta.uid,
                   task->state == KB_TASK_ALLOCATED ? plan_of(ext, job) : 0);
    if (!on_node(task->state)) {
        const char *why = job->last_message != NULL && job->last_message[0] != '\0'
                                  ? job->last_message
                                  : "gang not placed yet";
        filter_all(out, args->n_nodes,
                   keep_string(out, g_strdup_printf("gang %s: %s", job->key, why)), FALSE);
        return;
    }
    const char *target = node_name(ext, task->node_id);
    gboolean found = FALSE;
    const char *elsewhere = keep_string(
            out, g_strdup_printf("kube-batchd reserved node %s for pod %s/%s of gang %s", target,
                                 pod->meta.namespace_, pod->meta.name, job->key));
    for (guint i = 0; i < args->n_nodes; i++) {
        if (g_strcmp0(args->node_names[i], target) == 0) {
            found = TRUE;
            continue;
        }
        out->why[i] = elsewhere;
        out->unresolvable[i] = TRUE;
    }
    if (!found)
        filter_all(out, args->n_nodes,
                   keep_string(out, g_strdup_printf("kube-batchd reserved node %s for pod %s/%s "
                                                    "of gang %s; it is not among the candidates",
                                                    target, pod->meta.namespace_, pod->meta.name,
                                                    job->key)),
                   FALSE);
}

void kb_extender_filter_clear(KbExtenderFilter *out)
{
    g_clear_pointer(&out->why, g_free);
    g_clear_pointer(&out->unresolvable, g_free);
    g_clear_pointer(&out->error, g_free);
    g_clear_pointer(&out->strings, g_ptr_array_unref);
}

/* ---- prioritize ------------------------------------------------------------------------------ */

/* Topology (0 or 5: the GPUs fit in one NVLink island's free GPUs) + packing (0..5: the node's
 * GPU fill after the pod, or cpu fill for pods without GPU). */
static gint64 node_score(const KbNodeInfo *n, const KbResources *req)
{
    gint64 gpus = kb_resource_whole_gpus(req->v[KB_RES_GPU]);
    if (!n->present || !kb_resources_fit(req, &n->idle))
        return 0;
    if (gpus <= 0) {
        gint64 alloc = n->allocatable.v[KB_RES_CPU];
        if (alloc <= 0)
            return 0;
        return 5 * MIN(alloc, n->used.v[KB_RES_CPU] + req->v[KB_RES_CPU]) / alloc;
    }
    gint64 total = __builtin_popcountll(n->gpu_all);
    if (total <= 0)
        return 0;
    gint64 used = __builtin_popcountll(n->gpu_used & n->gpu_all);
    gint64 score = 5 * MIN(total, used + gpus) / total;
    const KbGpuTopology *t = n->gpu_topology;
    if (t != NULL) {
        guint first = t->first[KB_GPU_LEVEL_NVLINK], last = t->first[KB_GPU_LEVEL_NVLINK + 1];
        gboolean any = first < last;
        for (guint g = first; g < last; g++) {
            if (__builtin_popcountll(t->groups[g] & ~n->gpu_used) >= gpus) {
                score += 5;
                break;
            }
        }
        /* Without NVLink groups the node is one island. */
        if (!any && __builtin_popcountll(n->gpu_all & ~n->gpu_used) >= gpus)
            score += 5;
    }
    return score;
}

void kb_extender_prioritize(KbExtender *ext, const KbExtenderArgs *args, gint64 *scores)
{
    memset(scores, 0, sizeof(*scores) * args->n_nodes);
    if (!kb_cache_extender_manages(ext->cache, args->pod))
        return;
    KbTaskInfo *task =
            kb_cache_lookup_task(ext->cache, args->pod->meta.namespace_, args->pod->meta.name);
    const char *target =
            task != NULL && on_node(task->state) ? node_name(ext, task->node_id) : NULL;
    for (guint i = 0; i < args->n_nodes; i++) {
        if (target != NULL) {
            scores[i] = strcmp(args->node_names[i], target) == 0 ? KB_EXTENDER_MAX_SCORE : 0;
            continue;
        }
        const KbNodeInfo *n = kb_cache_lookup_node(ext->cache, args->node_names[i]);
        scores[i] = n != NULL ? node_score(n, &args->pod->requests) : 0;
    }
}

/* ---- bind ----------------------------------------------------------------------------------- */

const char *const kb_extender_bind_refusals[] = {
        "no-uid",  "not-managed",  "uid-mismatch", "unconfirmed", "already-bound", "in-flight",
        "no-plan", "unknown-node", "predicates",   "capacity",    "claims",        NULL};

/* Would binding @t (not reserved) leave its gang whole: a gang of one, or every other member
 * needed for minMember already placed? Else binding it alone starts a partial gang. */
static gboolean gang_allows_alone(const KbTaskInfo *t)
{
    const KbJobInfo *job = t->job;
    gint placed = (gint)(job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
                         job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING]);
    return job->min_member <= 1 || placed + 1 >= job->min_member;
}

/* The managed task @args names by namespace, name and UID, or NULL. */
static KbTaskInfo *bind_task(KbExtender *ext, const KbExtenderBindingArgs *args)
{
    KbTaskInfo *t = kb_cache_lookup_task(ext->cache, args->pod_namespace, args->pod_name);
    if (t == NULL || !kb_cache_task_is_extender(ext->cache, t))
        return NULL;
    if (g_strcmp0(t->pod->meta.uid, args->pod_uid) != 0)
        return NULL;
    return t;
}

static const char *refuse_bind(char **why, const char *reason, char *message)
{
    *why = message;
    return reason;
}

/* Can @task go to @node now: the predicates filter's plan applies (node Ready and schedulable,
 * taints tolerated, nodeSelector and required affinity matched) and, unless the plan already
 * holds its room there, free capacity? The refusal's reason label, or NULL. */
static const char *node_admits(KbExtender *ext, KbTaskInfo *task, const KbNodeInfo *node,
                               gboolean reserved_here, char **why)
{
    const KbPod *pod = task->pod;
    KbFitFailure fit = {0};
    if (!kb_plugin_predicates.predicate(NULL, task, node, &fit)) {
        g_autofree char *what = kb_fit_failure_to_string(&fit);
        return refuse_bind(why, "predicates",
                           g_strdup_printf("pod %s/%s cannot go to node %s: it fails the pod's "
                                           "predicates (%s)",
                                           pod->meta.namespace_, pod->meta.name, node->name, what));
    }
    if (reserved_here)
        return NULL;
    int slot = kb_resources_first_short(&task->resreq, &node->idle);
    if (slot >= 0)
        return refuse_bind(why, "capacity",
                           g_strdup_printf("pod %s/%s cannot go to node %s: short of %s",
                                           pod->meta.namespace_, pod->meta.name, node->name,
                                           kb_resource_name(slot) != NULL ? kb_resource_name(slot)
                                                                          : "resources"));
    return NULL;
}

/* Did a bind of ours write claim @ns/@name onto @node reserving it for the pod of @uid (the
 * watch has not shown the write yet)? */
static gboolean written_for(KbExtender *ext, const char *ns, const char *name, const char *uid,
                            const char *node)
{
    g_autofree char *key = g_strdup_printf("%s/%s", ns, name);
    const Written *w = g_hash_table_lookup(ext->written, key);
    return w != NULL && strcmp(w->node, node) == 0 &&
           g_strv_contains((const char *const *)w->uids, uid);
}

/* The plan's write for claim @ns/@name in @pw, or NULL. */
static KbClaimWrite *plan_write_for(const PlanWrites *pw, const char *ns, const char *name)
{
    for (guint i = 0; pw != NULL && i < pw->writes->len; i++) {
        KbClaimWrite *w = pw->writes->pdata[i];
        if (strcmp(w->namespace_, ns) == 0 && strcmp(w->name, name) == 0)
            return w;
    }
    return NULL;
}

gboolean kb_extender_claim_adoptable(const KbResourceClaim *claim,
                                     const KbExtenderBindingArgs *args)
{
    return claim != NULL && claim->allocated &&
           kb_resource_claim_reserved_for(claim, args->pod_uid) &&
           (claim->node == NULL || strcmp(claim->node, args->node) == 0);
}

/*
 * May task @t be bound onto @node as far as its ResourceClaims go (see "DRA" in the header): each
 * claim is either allocated there and reserved for the pod in the cache (kube-scheduler's
 * DynamicResources wrote it: adopted, not written), or one the gang's plan holds devices for on
 * that very node (@reserved_here) with a write of its own. NULL, with @writes (may be NULL)
 * filled with the plan's writes to make (borrowed from ext->plan_writes), or the refusal
 * "claims" with *@why.
 */
static const char *claims_allow(KbExtender *ext, KbTaskInfo *t, const char *node,
                                gboolean reserved_here, GPtrArray *writes, char **why)
{
    const KbPod *pod = t->pod;
    const char *ns = pod->meta.namespace_;
    if (pod->n_resource_claims == 0)
        return NULL;
    g_autofree char *key = pod_key(ns, pod->meta.name);
    const PlanWrites *pw = g_hash_table_lookup(ext->plan_writes, key);
    if (pw != NULL &&
        (!reserved_here || g_strcmp0(pw->uid, pod->meta.uid) != 0 || strcmp(pw->node, node) != 0))
        pw = NULL;
    KbExtenderBindingArgs me = {.pod_uid = (char *)pod->meta.uid, .node = (char *)node};
    for (guint i = 0; i < pod->n_resource_claims; i++) {
        const char *name = kb_pod_resource_claim_name(pod, i);
        if (name == NULL)
            return refuse_bind(why, "claims",
                               g_strdup_printf("pod %s/%s: the claim of resourceClaims %s is not "
                                               "created yet",
                                               ns, pod->meta.name, pod->resource_claims[i].name));
        const KbResourceClaim *c = kb_dra_lookup_claim(kb_cache_dra(ext->cache), ns, name);
        if (kb_extender_claim_adoptable(c, &me))
            continue; /* kube-scheduler allocated it (its PreBind runs before our bind) */
        if (written_for(ext, ns, name, pod->meta.uid, node))
            continue; /* a gang mate's bind wrote this shared claim for it too */
        KbClaimWrite *w = plan_write_for(pw, ns, name);
        if (w != NULL) {
            if (writes != NULL)
                g_ptr_array_add(writes, w);
            continue;
        }
        const char *planned = t->state == KB_TASK_ALLOCATED ? node_name(ext, t->node_id) : NULL;
        return refuse_bind(
                why, "claims",
                g_strdup_printf("pod %s/%s: claim %s/%s is not allocated on node %s and reserved "
                                "for the pod, and kube-batchd's plan writes no allocation for it "
                                "there (the plan's node: %s); with kube-scheduler's "
                                "DynamicResources plugin the claims are allocated before bind",
                                ns, pod->meta.name, ns, name, node,
                                planned != NULL ? planned : "none"));
    }
    return NULL;
}

/*
 * Is this bind one kube-scheduler could rightly ask of us? Only a pending pod of a served profile
 * that is GPU or gang work, known from the watch under this UID, with no binding on the wire,
 * onto the node its gang's plan reserved for it or onto one that admits it now (node_admits).
 * NULL, or the reason label with *@why.
 */
static const char *authorize_bind(KbExtender *ext, const KbExtenderBindingArgs *args,
                                  KbTaskInfo **task_out, char **why)
{
    const char *ns = args->pod_namespace, *name = args->pod_name;
    if (args->pod_uid[0] == '\0')
        return refuse_bind(why, "no-uid",
                           g_strdup_printf("pod %s/%s: the request has no PodUID", ns, name));
    KbTaskInfo *t = kb_cache_lookup_task(ext->cache, ns, name);
    if (t == NULL || !kb_cache_task_is_extender(ext->cache, t) ||
        !kb_cache_extender_manages(ext->cache, t->pod))
        return refuse_bind(why, "not-managed",
                           g_strdup_printf("pod %s/%s is not one kube-batchd binds for "
                                           "kube-scheduler (unknown, or not GPU or gang work of "
                                           "a served profile)",
                                           ns, name));
    if (g_strcmp0(t->pod->meta.uid, args->pod_uid) != 0)
        return refuse_bind(
                why, "uid-mismatch",
                g_strdup_printf("pod %s/%s: UID %.64s is not the pod's", ns, name, args->pod_uid));
    if (task_from_request(ext, t))
        return refuse_bind(
                why, "unconfirmed",
                g_strdup_printf("pod %s/%s: not seen from the API server yet", ns, name));
    g_autofree char *key = pod_key(ns, name);
    if (g_hash_table_contains(ext->binding, key))
        return refuse_bind(why, "in-flight",
                           g_strdup_printf("pod %s/%s: a binding is already on its way", ns, name));
    if (t->pod->node_name != NULL || (t->state != KB_TASK_PENDING && t->state != KB_TASK_ALLOCATED))
        return refuse_bind(why, "already-bound",
                           g_strdup_printf("pod %s/%s is already bound or being bound (%s)", ns,
                                           name, kb_task_state_to_string(t->state)));
    if (t->state == KB_TASK_PENDING && !gang_allows_alone(t))
        return refuse_bind(why, "no-plan",
                           g_strdup_printf("pod %s/%s: gang %s has no plan for it (members not "
                                           "all placed); filter places the gang first",
                                           ns, name, t->job->key));
    KbNodeInfo *node = kb_cache_lookup_node(ext->cache, args->node);
    if (node == NULL || !node->present)
        return refuse_bind(
                why, "unknown-node",
                g_strdup_printf("pod %s/%s: node %.253s is unknown", ns, name, args->node));
    gboolean reserved_here = t->state == KB_TASK_ALLOCATED && t->node_id == (gint)node->id;
    const char *reason = node_admits(ext, t, node, reserved_here, why);
    if (reason == NULL) {
        reason = claims_allow(ext, t, node->name, reserved_here, NULL, why);
        if (reason != NULL && reserved_here) {
            /* The plan reserved this node yet writes nothing for a claim the cache now shows
             * unallocated: it was made while the cache still showed a write that has since been
             * undone (a failed Binding's claim write, seen before its undo). Nothing plans a
             * reserved pod again, so release it, as a failed bind does: the next cycle places it
             * from what the cache shows now, and kube-scheduler's retry binds it. */
            kb_cache_forget_task(ext->cache, t);
            note_asked(ext, ns, name, t->pod->meta.uid, 0);
        }
    }
    if (reason != NULL)
        return reason;
    *task_out = t;
    return NULL;
}

/* The plan's writes an accepted bind makes (claims_allow's choice), moved from ext->plan_writes
 * to ext->bind_writes: the plan's other writes are dropped with it, none is made twice. */
static void take_bind_writes(KbExtender *ext, KbTaskInfo *task, const KbExtenderBindingArgs *args,
                             gboolean reserved_here)
{
    g_autoptr(GPtrArray) chosen = g_ptr_array_new();
    g_autofree char *why = NULL;
    if (claims_allow(ext, task, args->node, reserved_here, chosen, &why) != NULL)
        return; /* authorize_bind said yes a moment ago: not reached */
    g_autofree char *key = pod_key(args->pod_namespace, args->pod_name);
    gpointer stolen_key = NULL, value = NULL;
    if (!g_hash_table_steal_extended(ext->plan_writes, key, &stolen_key, &value))
        return;
    g_free(stolen_key);
    PlanWrites *pw = value;
    GPtrArray *writes = g_ptr_array_new_with_free_func(kb_claim_write_free);
    for (guint i = 0; i < pw->writes->len; i++) {
        gboolean keep = FALSE;
        for (guint j = 0; j < chosen->len && !keep; j++)
            keep = chosen->pdata[j] == pw->writes->pdata[i];
        if (keep) {
            g_ptr_array_add(writes, pw->writes->pdata[i]);
            pw->writes->pdata[i] = NULL; /* moved */
        }
    }
    g_ptr_array_set_free_func(pw->writes, NULL);
    for (guint i = 0; i < pw->writes->len; i++)
        kb_claim_write_free(pw->writes->pdata[i]);
    plan_writes_free(pw);
    if (writes->len == 0) {
        g_ptr_array_unref(writes);
        return;
    }
    g_hash_table_replace(ext->bind_writes, g_steal_pointer(&key), writes);
}

GPtrArray *kb_extender_bind_claim_writes(KbExtender *ext, const KbExtenderBindingArgs *args)
{
    g_autofree char *key = pod_key(args->pod_namespace, args->pod_name);
    gpointer stolen_key = NULL, value = NULL;
    if (!g_hash_table_steal_extended(ext->bind_writes, key, &stolen_key, &value))
        return NULL;
    g_free(stolen_key);
    return value;
}

void kb_extender_claim_written(KbExtender *ext, const KbClaimWrite *w, const char *node,
                               gboolean written)
{
    if (w->allocates)
        kb_dra_claim_written(kb_cache_dra(ext->cache), w->namespace_, w->name, written);
    char *key = g_strdup_printf("%s/%s", w->namespace_, w->name);
    if (!written) {
        g_hash_table_remove(ext->written, key);
        g_free(key);
        return;
    }
    json_object *body = json_tokener_parse(w->body);
    json_object *status = json_object_object_get(body, "status");
    json_object *reserved = json_object_object_get(status, "reservedFor");
    g_autoptr(GStrvBuilder) b = g_strv_builder_new();
    for (size_t i = 0;
         json_object_is_type(reserved, json_type_array) && i < json_object_array_length(reserved);
         i++) {
        json_object *uid = json_object_object_get(json_object_array_get_idx(reserved, i), "uid");
        if (json_object_is_type(uid, json_type_string))
            g_strv_builder_add(b, json_object_get_string(uid));
    }
    json_object_put(body);
    Written *wr = g_new0(Written, 1);
    wr->node = g_strdup(node);
    wr->uids = g_strv_builder_end(b);
    g_hash_table_replace(ext->written, key, wr);
}

json_object *kb_extender_bind_begin(KbExtender *ext, const KbExtenderBindingArgs *args,
                                    const char **reason, char **error_message)
{
    KbTaskInfo *task = NULL;
    *reason = authorize_bind(ext, args, &task, error_message);
    if (*reason != NULL)
        return NULL;
    guint64 gpu_ids = 0;
    KbNodeInfo *node = kb_cache_lookup_node(ext->cache, args->node);
    const char *reserved = task->state == KB_TASK_ALLOCATED ? node_name(ext, task->node_id) : NULL;
    take_bind_writes(ext, task, args, reserved != NULL && g_strcmp0(reserved, args->node) == 0);
    if (reserved != NULL && g_strcmp0(reserved, args->node) == 0) {
        gpu_ids = task->gpu_ids;
    } else {
        /* kube-scheduler chose (its choice is what it assumes): hold the pod there. */
        if (reserved != NULL)
            g_message("extender: pod %s/%s reserved on %s, kube-scheduler binds it to %s",
                      args->pod_namespace, args->pod_name, reserved, args->node);
        kb_cache_forget_task(ext->cache, task);
        task->gpu_ids = 0;
        kb_cache_assume_task(ext->cache, task, node->id);
    }
    g_hash_table_add(ext->binding, pod_key(args->pod_namespace, args->pod_name));
    json_object *binding =
            kb_binding_new(args->pod_namespace, args->pod_name, args->pod_uid, args->node);
    if (gpu_ids != 0) {
        g_autofree char *ids = kb_cache_gpu_ids_format(gpu_ids);
        json_object *meta = NULL;
        if (!json_object_object_get_ex(binding, "metadata", &meta)) {
            meta = json_object_new_object();
            json_object_object_add(binding, "metadata", meta);
        }
        json_object *ann = json_object_new_object();
        json_object_object_add(ann, KB_GPU_IDS_ANNOTATION, json_object_new_string(ids));
        json_object_object_add(meta, "annotations", ann);
    }
    return binding;
}

static gboolean job_has_allocated(const KbJobInfo *job)
{
    return job->n_state[KB_TASK_ALLOCATED] > 0;
}

void kb_extender_bind_end(KbExtender *ext, const KbExtenderBindingArgs *args, gboolean ok,
                          gint64 now)
{
    g_autofree char *key = pod_key(args->pod_namespace, args->pod_name);
    g_hash_table_remove(ext->binding, key);
    g_hash_table_remove(ext->bind_writes, key); /* not taken: never sent */
    KbTaskInfo *task = bind_task(ext, args);
    if (task == NULL)
        return;
    if (ok) {
        forget_asked(ext, args->pod_namespace, args->pod_name);
        kb_cache_bind_succeeded(ext->cache, args->pod_namespace, args->pod_name, args->pod_uid,
                                now);
        if (!job_has_allocated(task->job))
            g_hash_table_remove(ext->reservations, task->job->key);
        return;
    }
    /* kube-scheduler forgets the pod after a failed bind: so does the cache, for this pod only.
     * kube-scheduler parks it: the plan that places it again tells it. */
    kb_cache_forget_task(ext->cache, task);
    note_asked(ext, args->pod_namespace, args->pod_name, task->pod->meta.uid, 0);
}

/* ---- expiry ---------------------------------------------------------------------------------- */

/* Pods taken from requests that the watch never confirmed: out of the cache after the TTL. */
static void expire_request_pods(KbExtender *ext, gint64 now)
{
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, ext->from_request);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        RequestPod *rp = value;
        KbTaskInfo *t =
                kb_cache_lookup_task(ext->cache, rp->pod->meta.namespace_, rp->pod->meta.name);
        if (t != NULL && t->pod == rp->pod) {
            if (now - rp->since < (gint64)ext->ttl_s)
                continue;
            g_message("extender: pod %s never came from the API server within %u s; forgotten",
                      (const char *)key, ext->ttl_s);
            kb_cache_delete_pod(ext->cache, rp->pod);
        }
        g_hash_table_iter_remove(&it);
    }
}

/* Forget the claim writes of pods no longer reserved (plan released, pod gone or bound
 * otherwise), and our own writes once the cache shows them (or their claim is gone). */
static void sweep_writes(KbExtender *ext)
{
    GHashTableIter wi;
    gpointer wkey, wval;
    g_hash_table_iter_init(&wi, ext->plan_writes);
    while (g_hash_table_iter_next(&wi, &wkey, &wval)) {
        const char *k = wkey, *slash = strchr(k, '/');
        g_autofree char *ns = slash != NULL ? g_strndup(k, slash - k) : NULL;
        KbTaskInfo *t = ns != NULL ? kb_cache_lookup_task(ext->cache, ns, slash + 1) : NULL;
        if (t == NULL || t->state != KB_TASK_ALLOCATED ||
            g_strcmp0(t->pod->meta.uid, ((PlanWrites *)wval)->uid) != 0)
            g_hash_table_iter_remove(&wi);
    }
    g_hash_table_iter_init(&wi, ext->written);
    while (g_hash_table_iter_next(&wi, &wkey, &wval)) {
        const char *k = wkey, *slash = strchr(k, '/');
        g_autofree char *ns = slash != NULL ? g_strndup(k, slash - k) : NULL;
        const KbResourceClaim *c =
                ns != NULL ? kb_dra_lookup_claim(kb_cache_dra(ext->cache), ns, slash + 1) : NULL;
        gboolean seen = c != NULL && c->allocated;
        for (GStrv u = ((Written *)wval)->uids; seen && *u != NULL; u++)
            seen = kb_resource_claim_reserved_for(c, *u);
        if (c == NULL || seen)
            g_hash_table_iter_remove(&wi);
    }
}

guint kb_extender_expire(KbExtender *ext, gint64 now)
{
    guint released = 0;
    expire_request_pods(ext, now);
    GPtrArray *jobs = kb_cache_jobs(ext->cache);
    for (guint i = 0; i < jobs->len; i++) {
        KbJobInfo *job = jobs->pdata[i];
        Reservation *r = g_hash_table_lookup(ext->reservations, job->key);
        if (r == NULL)
            continue;
        if (!job_has_allocated(job)) {
            g_hash_table_remove(ext->reservations, job->key);
            continue;
        }
        if (now - r->since < (gint64)ext->ttl_s)
            continue;
        guint n = 0;
        for (guint j = 0; j < job->tasks->len; j++) {
            KbTaskInfo *t = job->tasks->pdata[j];
            if (t->state == KB_TASK_ALLOCATED && kb_cache_task_is_extender(ext->cache, t)) {
                kb_cache_forget_task(ext->cache, t);
                n++;
            }
        }
        g_message("extender: gang %s not completed within %u s; released %u reservations", job->key,
                  ext->ttl_s, n);
        released += n;
        g_hash_table_remove(ext->reservations, job->key);
    }
    sweep_writes(ext);
    /* Reservations of jobs that are gone. */
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, ext->reservations);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        gboolean alive = FALSE;
        for (guint i = 0; i < jobs->len && !alive; i++)
            alive = strcmp(((KbJobInfo *)jobs->pdata[i])->key, key) == 0;
        if (!alive)
            g_hash_table_iter_remove(&it);
    }
    return released;
}

/* ---- preempt --------------------------------------------------------------------------------- */

typedef struct {
    const KbPod *pod;
    KbTaskInfo *task;
    gint node;
    KbResources counted;
} PodRef;

static void index_pod(const KbPod *pod, KbTaskInfo *task, gint counted_node,
                      const KbResources *counted, gpointer data)
{
    if (pod->meta.uid == NULL)
        return;
    PodRef *r = g_new0(PodRef, 1);
    r->pod = pod;
    r->task = task;
    r->node = counted_node;
    r->counted = *counted;
    g_hash_table_insert(data, (gpointer)pod->meta.uid, r);
}

static gboolean node_usable(const KbNodeInfo *n)
{
    return n->present && n->node != NULL && n->node->ready && !n->node->unschedulable;
}

/* Can @preemptor's gang start with @freed given back on node @target? Counts resources only. */
static gboolean gang_fits(KbExtender *ext, KbTaskInfo *preemptor, guint target,
                          const KbResources *freed)
{
    guint n_nodes = 0;
    KbNodeInfo *nodes = kb_cache_nodes(ext->cache, &n_nodes);
    g_autofree KbResources *idle = g_new(KbResources, n_nodes);
    for (guint i = 0; i < n_nodes; i++)
        idle[i] = nodes[i].idle;
    kb_resources_add(&idle[target], freed);
    if (!kb_resources_fit(&preemptor->resreq, &idle[target]))
        return FALSE;
    kb_resources_sub(&idle[target], &preemptor->resreq);
    const KbJobInfo *job = preemptor->job;
    gint occupied = 0;
    for (guint i = 0; i < job->tasks->len; i++)
        occupied += on_node(((KbTaskInfo *)job->tasks->pdata[i])->state);
    gint needed = job->min_member - occupied - 1;
    for (guint i = 0; i < job->tasks->len && needed > 0; i++) {
        KbTaskInfo *t = job->tasks->pdata[i];
        if (t == preemptor || t->state != KB_TASK_PENDING)
            continue;
        for (guint k = 0; k < n_nodes; k++) {
            guint n = (target + k) % n_nodes;
            if (node_usable(&nodes[n]) && kb_resources_fit(&t->resreq, &idle[n])) {
                kb_resources_sub(&idle[n], &t->resreq);
                needed--;
                break;
            }
        }
    }
    return needed <= 0;
}

/* Victims on one node widened to whole gangs into @out (UIDs) and what they free into @freed;
 * FALSE (with @why) when a victim gang cannot go whole from this node. */
static gboolean widen_victims(KbExtender *ext, GHashTable *by_uid, const KbExtenderNodeVictims *nv,
                              guint node_id, gint32 priority, GPtrArray *out, KbResources *freed,
                              const char **why)
{
    g_autoptr(GHashTable) taken = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint v = 0; v < nv->n_pods; v++) {
        const PodRef *ref = g_hash_table_lookup(by_uid, nv->pods[v].uid);
        if (ref == NULL || ref->node != (gint)node_id) {
            *why = "a victim is unknown to kube-batchd or not on the node";
            return FALSE;
        }
        if (ref->task == NULL) { /* not a gang: goes alone */
            if (kb_cache_pod_priority(ext->cache, ref->pod) >= priority) {
                *why = "a victim is of no lower priority";
                return FALSE;
            }
            if (g_hash_table_add(taken, (gpointer)nv->pods[v].uid)) {
                g_ptr_array_add(out, (gpointer)nv->pods[v].uid);
                kb_resources_add(freed, &ref->counted);
            }
            continue;
        }
        const KbJobInfo *job = ref->task->job;
        for (guint i = 0; i < job->tasks->len; i++) {
            KbTaskInfo *t = job->tasks->pdata[i];
            if (!on_node(t->state) && t->state != KB_TASK_RELEASING)
                continue;
            if (t->node_id != (gint)node_id) {
                *why = "a victim gang has members on other nodes";
                return FALSE;
            }
            if (t->priority >= priority) {
                *why = "a victim gang has a member of no lower priority";
                return FALSE;
            }
            if (g_hash_table_add(taken, (gpointer)t->pod->meta.uid)) {
                g_ptr_array_add(out, (gpointer)t->pod->meta.uid);
                kb_resources_add(freed, &t->resreq);
            }
        }
    }
    return TRUE;
}

/*
 * A pod kube-batchd does not plan: kube-scheduler's victims stand as proposed, but only where
 * each is a pod the cache knows on that node, of lower priority than the preemptor, and no gang
 * member or pod of kube-batchd's own (evicting one would split a gang the plan placed whole).
 * Other nodes are dropped, so an answer never names more than kube-scheduler itself could evict.
 */
static void pass_through_preempt(KbExtender *ext, const KbExtenderPreemptionArgs *args,
                                 gboolean *keep, GPtrArray **victims)
{
    g_autoptr(GHashTable) by_uid = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    kb_cache_foreach_pod(ext->cache, index_pod, by_uid);
    gint32 priority = kb_cache_pod_priority(ext->cache, args->pod);
    for (guint i = 0; i < args->n_nodes; i++) {
        const KbExtenderNodeVictims *nv = &args->nodes[i];
        const KbNodeInfo *node = kb_cache_lookup_node(ext->cache, nv->node);
        gboolean ok = node != NULL;
        for (guint v = 0; ok && v < nv->n_pods; v++) {
            const PodRef *ref = g_hash_table_lookup(by_uid, nv->pods[v].uid);
            ok = ref != NULL && ref->task == NULL && ref->node == (gint)node->id &&
                 kb_cache_pod_priority(ext->cache, ref->pod) < priority;
        }
        if (!ok) {
            g_debug("extender: preempt for %s/%s: node %s dropped (a victim unknown, elsewhere, "
                    "of no lower priority, or planned by kube-batchd)",
                    args->pod->meta.namespace_, args->pod->meta.name, nv->node);
            continue;
        }
        keep[i] = TRUE;
        victims[i] = g_ptr_array_new();
        for (guint v = 0; v < nv->n_pods; v++)
            g_ptr_array_add(victims[i], (gpointer)nv->pods[v].uid);
    }
}

void kb_extender_preempt(KbExtender *ext, const KbExtenderPreemptionArgs *args, gint64 now,
                         gboolean *keep, GPtrArray **victims)
{
    memset(keep, 0, sizeof(*keep) * args->n_nodes);
    memset(victims, 0, sizeof(*victims) * args->n_nodes);
    if (!kb_cache_extender_manages(ext->cache, args->pod)) {
        pass_through_preempt(ext, args, keep, victims);
        return;
    }
    /* Only for a pod the API server has: a request's copy could claim any priority. */
    KbTaskInfo *preemptor = request_task(ext, args->pod, now);
    if (preemptor == NULL || task_from_request(ext, preemptor) ||
        preemptor->state != KB_TASK_PENDING)
        return;
    g_autoptr(GHashTable) by_uid = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    kb_cache_foreach_pod(ext->cache, index_pod, by_uid);
    for (guint i = 0; i < args->n_nodes; i++) {
        const KbExtenderNodeVictims *nv = &args->nodes[i];
        KbNodeInfo *node = kb_cache_lookup_node(ext->cache, nv->node);
        const char *why = NULL;
        g_autoptr(GPtrArray) out = g_ptr_array_new();
        KbResources freed;
        kb_resources_clear(&freed);
        if (node == NULL || !node_usable(node))
            why = "node unknown or not usable";
        else if (widen_victims(ext, by_uid, nv, node->id, preemptor->priority, out, &freed, &why) &&
                 !gang_fits(ext, preemptor, node->id, &freed))
            why = "the preemptor's whole gang would still not fit";
        if (why != NULL) {
            g_debug("extender: preempt for %s/%s: node %s refused: %s", args->pod->meta.namespace_,
                    args->pod->meta.name, nv->node, why);
            continue;
        }
        keep[i] = TRUE;
        victims[i] = g_steal_pointer(&out);
    }
}
