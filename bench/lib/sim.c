/* The trace-driven cluster simulator around the real scheduler core; see sim.h. */
#include "bench/lib/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "kube/kb-error.h"
#include "kube/kb-objects.h"
#include "scheduler/cache.h"
#include "scheduler/cycle.h"
#include "scheduler/history.h"

#define SCHEDULER_NAME     "kube-batchd"
#define GROUP_ANNOTATION   "scheduling.k8s.io/group-name"
#define RUNTIME_ANNOTATION "kube-batchd.io/expected-runtime" /* scheduler/reserve.h */

typedef struct {
    const KbTraceJob *tj;
    guint queue; /* index into Sim.queues */
    char *name;  /* "j000123" */
    guint n_pods, gpus_per_pod;
    guint n_min;        /* minMember: n_pods, or fewer for an elastic job (min_fraction) */
    json_object **pods; /* the pods as the API server would hold them, while the job lives */
    json_object *group;
    guint n_bound;
    gint64 start, last_start, finish;
    gint64 remaining; /* seconds the job runs once (re)started */
    gint64 estimate;  /* expected runtime its pods announce; 0: none */
    gint64 ran;       /* seconds run in earlier attempts (and the last, once finished) */
    guint attempt;    /* bumped by each eviction: new pod uids, stale completions */
    guint n_evictions;
    guint evicted_cycle; /* 1 + the cycle that last evicted it; 0: never */
    gboolean running, high;
    KbJobPhase phase; /* last phase the scheduler reported */
    char *reason, *message;
} SimJob;

typedef struct {
    gint64 t;
    guint job;
    guint attempt; /* stale when the job was evicted since */
} Completion;

typedef struct {
    const char *name;
    gint32 weight;
    guint n_waiting; /* arrived, not started */
    guint gpus_held; /* GPUs of its bound pods */
    double received_gpu_s;
} SimQueue;

typedef struct {
    const KbTrace *trace;
    const KbConf *conf;
    KbSimOptions opts;
    KbCache *cache;
    SimJob *jobs;
    GHashTable *by_key; /* "ns/name" of the group -> SimJob* */
    SimQueue *queues;
    guint n_queues;
    GArray *heap; /* Completion, min-heap on (t, job) */
    guint next_arrival;
    gint64 now;
    gboolean rerun; /* the last cycle changed something: run another one period later */
    gint64 last_cycle;
    /* Cluster state between events, and its integrals. */
    guint gpus_held, gpus_busy, gpus_partial;
    guint n_growing; /* running elastic jobs with pods still unbound */
    double held_gpu_s, busy_gpu_s, partial_gpu_s, jain_sum, contended_s;
    double held_arrivals_gpu_s, busy_arrivals_gpu_s; /* within [first, last submit] */
    guint partial_peak;
    GArray *cycle_us; /* double */
    guint64 n_placements;
    guint n_live;         /* arrived, not finished */
    guint n_retained;     /* finished but still in the cache (without delete_finished) */
    guint n_restarts;     /* cache rebuilds */
    gint64 last_activity; /* last arrival, completion or placement */
    gint64 integrated;    /* the integrals above cover [first submit, integrated) */
    guint64 n_evicted_pods;
    guint n_preempted, n_reclaimed;
    double evicted_gpu_s, lost_gpu_s;
    GArray *samples; /* KbSimSample */
    guint n_steps;
    /* Jobs whose gang started and whose noted phase is not Running yet (see settle). */
    GPtrArray *unsettled;
    guint n_skipped; /* cycles not run: nothing waited (see can_skip) */
} Sim;

/* ---- the objects, as JSON an API server would return ---------------------------------------- */

static json_object *meta_new(const char *name, const char *ns, gint64 created)
{
    json_object *m = json_object_new_object();
    json_object_object_add(m, "name", json_object_new_string(name));
    if (ns != NULL)
        json_object_object_add(m, "namespace", json_object_new_string(ns));
    g_autofree char *uid = g_strdup_printf("uid-%s-%s", ns != NULL ? ns : "", name);
    json_object_object_add(m, "uid", json_object_new_string(uid));
    g_autofree char *ts = kb_time_format(created);
    json_object_object_add(m, "creationTimestamp", json_object_new_string(ts));
    return m;
}

static json_object *object_new(const char *api, const char *kind, json_object *meta)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string(api));
    json_object_object_add(o, "kind", json_object_new_string(kind));
    json_object_object_add(o, "metadata", meta);
    return o;
}

static json_object *node_json(guint i, guint gpus)
{
    g_autofree char *name = g_strdup_printf("node-%04u", i);
    json_object *o = object_new("v1", "Node", meta_new(name, NULL, 0));
    json_object *alloc = json_object_new_object();
    json_object_object_add(alloc, "cpu", json_object_new_string("64"));
    json_object_object_add(alloc, "memory", json_object_new_string("512Gi"));
    json_object_object_add(alloc, "pods", json_object_new_string("110"));
    json_object_object_add(alloc, KB_RESOURCE_GPU_NAME, json_object_new_int((int)gpus));
    json_object *status = json_object_new_object();
    json_object_object_add(status, "capacity", json_object_get(alloc));
    json_object_object_add(status, "allocatable", alloc);
    json_object *ready = json_object_new_object();
    json_object_object_add(ready, "type", json_object_new_string("Ready"));
    json_object_object_add(ready, "status", json_object_new_string("True"));
    json_object *conds = json_object_new_array();
    json_object_array_add(conds, ready);
    json_object_object_add(status, "conditions", conds);
    json_object_object_add(o, "status", status);
    return o;
}

static json_object *queue_json(const char *name, gint32 weight, const char *spec_json)
{
    json_object *o = object_new("scheduling.volcano.sh/v1beta1", "Queue", meta_new(name, NULL, 0));
    json_object *spec = spec_json != NULL ? json_tokener_parse(spec_json) : NULL;
    if (spec == NULL)
        spec = json_object_new_object();
    if (!json_object_object_get_ex(spec, "weight", NULL) && weight > 0)
        json_object_object_add(spec, "weight", json_object_new_int(weight));
    json_object_object_add(o, "spec", spec);
    return o;
}

static json_object *group_json(const SimJob *job, gboolean single_queue)
{
    json_object *o = object_new("scheduling.volcano.sh/v1beta1", "PodGroup",
                                meta_new(job->name, job->tj->queue, job->tj->submit));
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "minMember", json_object_new_int((int)job->n_min));
    if (!single_queue)
        json_object_object_add(spec, "queue", json_object_new_string(job->tj->queue));
    if (job->high)
        json_object_object_add(spec, "priorityClassName",
                               json_object_new_string(KB_SIM_HIGH_PRIORITY_CLASS));
    json_object_object_add(o, "spec", spec);
    return o;
}

static json_object *pod_json(const SimJob *job, guint k)
{
    g_autofree char *name = g_strdup_printf("%s-%u", job->name, k);
    json_object *meta = meta_new(name, job->tj->queue, job->tj->submit);
    if (job->attempt > 0) {
        /* A pod recreated after an eviction is a new object. */
        g_autofree char *uid = g_strdup_printf("uid-%s-%s-a%u", job->tj->queue, name, job->attempt);
        json_object_object_add(meta, "uid", json_object_new_string(uid));
    }
    json_object *ann = json_object_new_object();
    json_object_object_add(ann, GROUP_ANNOTATION, json_object_new_string(job->name));
    if (job->estimate > 0) {
        g_autofree char *est = g_strdup_printf("%" G_GINT64_FORMAT, job->estimate);
        json_object_object_add(ann, RUNTIME_ANNOTATION, json_object_new_string(est));
    }
    json_object_object_add(meta, "annotations", ann);
    json_object *o = object_new("v1", "Pod", meta);
    json_object *req = json_object_new_object();
    json_object_object_add(req, KB_RESOURCE_GPU_NAME, json_object_new_int((int)job->gpus_per_pod));
    json_object *res = json_object_new_object();
    json_object_object_add(res, "limits", json_object_get(req));
    json_object_object_add(res, "requests", req);
    json_object *c = json_object_new_object();
    json_object_object_add(c, "name", json_object_new_string("worker"));
    json_object_object_add(c, "resources", res);
    json_object *containers = json_object_new_array();
    json_object_array_add(containers, c);
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "schedulerName", json_object_new_string(SCHEDULER_NAME));
    json_object_object_add(spec, "containers", containers);
    if (job->high) {
        /* As the Priority admission plugin resolves it. */
        json_object_object_add(spec, "priorityClassName",
                               json_object_new_string(KB_SIM_HIGH_PRIORITY_CLASS));
        json_object_object_add(spec, "priority", json_object_new_int(KB_SIM_HIGH_PRIORITY));
    }
    json_object_object_add(o, "spec", spec);
    json_object *status = json_object_new_object();
    json_object_object_add(status, "phase", json_object_new_string("Pending"));
    json_object_object_add(o, "status", status);
    return o;
}

static void pod_set(json_object *pod, const char *node, const char *phase)
{
    json_object *spec = NULL, *status = NULL;
    json_object_object_get_ex(pod, "spec", &spec);
    json_object_object_get_ex(pod, "status", &status);
    if (node != NULL)
        json_object_object_add(spec, "nodeName", json_object_new_string(node));
    json_object_object_add(status, "phase", json_object_new_string(phase));
}

/* ---- feeding the cache ---------------------------------------------------------------------- */

/* FEED_UPDATE_DELETE: an update, then the deletion, of the same object (decoded once). */
typedef enum { FEED_ADD, FEED_UPDATE, FEED_DELETE, FEED_UPDATE_DELETE } Feed;

/* Our own objects always decode; a failure is a broken invariant of this file. */
static void feed_pod(Sim *sim, json_object *o, Feed how)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode(o, FALSE, &error);
    if (pod == NULL)
        g_error("sim: pod does not decode: %s", error->message);
    if (how == FEED_ADD)
        kb_cache_add_pod(sim->cache, pod);
    else if (how == FEED_UPDATE || how == FEED_UPDATE_DELETE)
        kb_cache_update_pod(sim->cache, pod);
    if (how == FEED_DELETE || how == FEED_UPDATE_DELETE)
        kb_cache_delete_pod(sim->cache, pod);
}

static void feed_group(Sim *sim, json_object *o, Feed how)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPodGroup) pg = kb_pod_group_decode(o, FALSE, &error);
    if (pg == NULL)
        g_error("sim: pod group does not decode: %s", error->message);
    if (how == FEED_DELETE)
        kb_cache_delete_pod_group(sim->cache, pg);
    else
        kb_cache_add_pod_group(sim->cache, pg);
}

static void add_priority_class(Sim *sim)
{
    json_object *o = object_new("scheduling.k8s.io/v1", "PriorityClass",
                                meta_new(KB_SIM_HIGH_PRIORITY_CLASS, NULL, 0));
    json_object_object_add(o, "value", json_object_new_int(KB_SIM_HIGH_PRIORITY));
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPriorityClass) pc = kb_priority_class_decode(o, FALSE, &error);
    if (pc == NULL)
        g_error("sim: priority class does not decode: %s", error->message);
    kb_cache_add_priority_class(sim->cache, pc);
    json_object_put(o);
}

static void add_queue(Sim *sim, json_object *o)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbQueue) queue = kb_queue_decode(o, FALSE, &error);
    if (queue == NULL)
        g_error("sim: queue does not decode: %s", error->message);
    kb_cache_add_queue(sim->cache, queue);
    json_object_put(o);
}

/* The queues of opts.queue_specs that are not trace queues (parents), in name order. */
static void add_tree_queues(Sim *sim)
{
    if (sim->opts.queue_specs == NULL || sim->opts.single_queue)
        return;
    g_autoptr(GList) names = g_hash_table_get_keys(sim->opts.queue_specs);
    names = g_list_sort(names, (GCompareFunc)strcmp);
    for (GList *l = names; l != NULL; l = l->next) {
        if (kb_cache_lookup_queue(sim->cache, l->data) == NULL)
            add_queue(sim,
                      queue_json(l->data, 0, g_hash_table_lookup(sim->opts.queue_specs, l->data)));
    }
}

static void cluster_setup(Sim *sim)
{
    add_priority_class(sim);
    for (guint q = 0; q < sim->n_queues && !sim->opts.single_queue; q++) {
        const char *spec = sim->opts.queue_specs != NULL
                                   ? g_hash_table_lookup(sim->opts.queue_specs, sim->queues[q].name)
                                   : NULL;
        add_queue(sim, queue_json(sim->queues[q].name, sim->queues[q].weight, spec));
    }
    add_tree_queues(sim);
    for (guint i = 0; i < sim->opts.n_nodes; i++) {
        json_object *o = node_json(i, sim->opts.gpus_per_node);
        g_autoptr(GError) error = NULL;
        g_autoptr(KbNode) node = kb_node_decode(o, FALSE, &error);
        if (node == NULL)
            g_error("sim: node does not decode: %s", error->message);
        kb_cache_add_node(sim->cache, node);
        json_object_put(o);
    }
}

/* ---- completions heap ----------------------------------------------------------------------- */

static gboolean comp_less(const Completion *a, const Completion *b)
{
    return a->t < b->t || (a->t == b->t && a->job < b->job);
}

static void heap_push(GArray *h, Completion c)
{
    g_array_append_val(h, c);
    Completion *v = (Completion *)(void *)h->data;
    for (guint i = h->len - 1; i > 0;) {
        guint parent = (i - 1) / 2;
        if (!comp_less(&v[i], &v[parent]))
            break;
        Completion tmp = v[i];
        v[i] = v[parent];
        v[parent] = tmp;
        i = parent;
    }
}

static Completion heap_pop(GArray *h)
{
    Completion *v = (Completion *)(void *)h->data;
    Completion top = v[0];
    v[0] = v[h->len - 1];
    g_array_set_size(h, h->len - 1);
    for (guint i = 0;;) {
        guint l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->len && comp_less(&v[l], &v[m]))
            m = l;
        if (r < h->len && comp_less(&v[r], &v[m]))
            m = r;
        if (m == i)
            break;
        Completion tmp = v[i];
        v[i] = v[m];
        v[m] = tmp;
        i = m;
    }
    return top;
}

/* ---- events --------------------------------------------------------------------------------- */

/*
 * Accumulate the state held over [integrated, t). Called just before the state changes (an
 * arrival, a completion, a bind), so that quiet time after the last change (a gang that never
 * fits, waiting forever) is not counted.
 */
static void integrate(Sim *sim, gint64 t)
{
    double dt = (double)(t - sim->integrated);
    if (dt <= 0)
        return;
    sim->held_gpu_s += sim->gpus_held * dt;
    sim->busy_gpu_s += sim->gpus_busy * dt;
    gint64 last_submit = sim->trace->jobs[sim->trace->n_jobs - 1].submit;
    double in_window = (double)(MIN(t, last_submit) - sim->integrated);
    if (in_window > 0) {
        sim->held_arrivals_gpu_s += sim->gpus_held * in_window;
        sim->busy_arrivals_gpu_s += sim->gpus_busy * in_window;
    }
    sim->partial_gpu_s += sim->gpus_partial * dt;
    double sum = 0, sum_sq = 0;
    guint n = 0;
    for (guint q = 0; q < sim->n_queues; q++) {
        SimQueue *sq = &sim->queues[q];
        sq->received_gpu_s += sq->gpus_held * dt;
        if (sq->n_waiting == 0)
            continue;
        double x = (double)sq->gpus_held / sq->weight;
        sum += x;
        sum_sq += x * x;
        n++;
    }
    if (n >= 2) {
        sim->jain_sum += (sum_sq > 0 ? sum * sum / (n * sum_sq) : 1.0) * dt;
        sim->contended_s += dt;
    }
    sim->integrated = t;
}

static void job_arrive(Sim *sim, SimJob *job)
{
    integrate(sim, sim->now);
    job->group = group_json(job, sim->opts.single_queue);
    feed_group(sim, job->group, FEED_ADD);
    job->pods = g_new0(json_object *, job->n_pods);
    for (guint k = 0; k < job->n_pods; k++) {
        job->pods[k] = pod_json(job, k);
        feed_pod(sim, job->pods[k], FEED_ADD);
    }
    sim->queues[job->queue].n_waiting++;
    sim->n_live++;
}

static void job_complete(Sim *sim, SimJob *job)
{
    integrate(sim, sim->now);
    for (guint k = 0; k < job->n_pods; k++) {
        pod_set(job->pods[k], NULL, "Succeeded");
        feed_pod(sim, job->pods[k], sim->opts.delete_finished ? FEED_UPDATE_DELETE : FEED_UPDATE);
        g_clear_pointer(&job->pods[k], json_object_put);
    }
    g_clear_pointer(&job->pods, g_free);
    if (sim->opts.delete_finished)
        feed_group(sim, job->group, FEED_DELETE);
    g_clear_pointer(&job->group, json_object_put);
    if (job->n_bound < job->n_pods)
        sim->n_growing--;
    guint gpus = job->n_bound * job->gpus_per_pod;
    sim->gpus_held -= gpus;
    sim->gpus_busy -= gpus;
    sim->queues[job->queue].gpus_held -= gpus;
    job->finish = sim->now;
    job->ran += sim->now - job->last_start;
    job->running = FALSE;
    sim->n_live--;
    if (!sim->opts.delete_finished)
        sim->n_retained++;
}

/*
 * Without delete_finished, finished jobs pile up in the cache and every cycle walks them. Once
 * they outnumber the live ones, start over with a new cache fed the live objects in their current
 * state (nodes, queues, groups with their status.phase, pods with spec.nodeName and phase), as a
 * restarted daemon would after its relist. Decisions do not depend on the cache's iteration
 * order (actions sort jobs and queues with total orders).
 */
static void cache_restart(Sim *sim)
{
    kb_cache_free(sim->cache);
    sim->cache = kb_cache_new(NULL, "default");
    cluster_setup(sim);
    for (guint i = 0; i < sim->next_arrival; i++) {
        SimJob *job = &sim->jobs[i];
        if (job->group == NULL)
            continue;
        feed_group(sim, job->group, FEED_ADD);
        for (guint k = 0; k < job->n_pods; k++)
            feed_pod(sim, job->pods[k], FEED_ADD);
    }
    sim->n_retained = 0;
    sim->n_restarts++;
}

/* The scheduler placed pod @k of @job on @node: bind it and let it run. */
static void pod_bind(Sim *sim, SimJob *job, guint k, const KbPod *pod, const char *node)
{
    integrate(sim, sim->now);
    kb_cache_bind_succeeded(sim->cache, pod->meta.namespace_, pod->meta.name, pod->meta.uid,
                            sim->now);
    pod_set(job->pods[k], node, "Running");
    feed_pod(sim, job->pods[k], FEED_UPDATE);
    job->n_bound++;
    sim->gpus_held += job->gpus_per_pod;
    sim->queues[job->queue].gpus_held += job->gpus_per_pod;
    if (job->running) {
        /* An elastic job grows: the pod works from now on. */
        sim->gpus_busy += job->gpus_per_pod;
        if (job->n_bound == job->n_pods)
            sim->n_growing--;
        return;
    }
    if (job->n_bound < job->n_min) {
        sim->gpus_partial += job->gpus_per_pod;
        return;
    }
    /* The gang has its minimum: it starts now. */
    sim->gpus_partial -= (job->n_bound - 1) * job->gpus_per_pod;
    sim->gpus_busy += job->n_bound * job->gpus_per_pod;
    if (job->n_bound < job->n_pods)
        sim->n_growing++;
    sim->queues[job->queue].n_waiting--;
    if (job->start < 0)
        job->start = sim->now;
    job->last_start = sim->now;
    job->running = TRUE;
    g_ptr_array_add(sim->unsettled, job);
    heap_push(sim->heap,
              (Completion){sim->now + job->remaining, (guint)(job - sim->jobs), job->attempt});
}

static void apply_placements(Sim *sim, const KbCycleResult *res)
{
    for (guint i = 0; i < res->placements->len; i++) {
        const KbPlacement *pl = &g_array_index(res->placements, KbPlacement, i);
        SimJob *job = g_hash_table_lookup(sim->by_key, pl->job);
        const char *dash = strrchr(pl->pod->meta.name, '-');
        guint k = dash != NULL ? (guint)strtoul(dash + 1, NULL, 10) : G_MAXUINT;
        if (job == NULL || job->pods == NULL || k >= job->n_pods)
            g_error("sim: placement of unknown pod %s/%s", pl->pod->meta.namespace_,
                    pl->pod->meta.name);
        pod_bind(sim, job, k, pl->pod, pl->node);
    }
    sim->n_placements += res->placements->len;
    if (res->placements->len > 0)
        sim->last_activity = sim->now;
    sim->partial_peak = MAX(sim->partial_peak, sim->gpus_partial);
}

/*
 * @job lost pods to an eviction: every pod of it goes (a training job cannot run without all its
 * workers) and comes back Pending as a new object; a running job waits again, its completion is
 * cancelled (stale in the heap) and its work is lost or kept according to restart_cost.
 */
static void job_evict(Sim *sim, SimJob *job)
{
    integrate(sim, sim->now);
    guint held = job->n_bound * job->gpus_per_pod;
    sim->gpus_held -= held;
    sim->queues[job->queue].gpus_held -= held;
    if (job->running) {
        if (job->n_bound < job->n_pods)
            sim->n_growing--;
        double ran = (double)(sim->now - job->last_start);
        job->ran += sim->now - job->last_start;
        sim->gpus_busy -= held;
        sim->evicted_gpu_s += ran * held;
        if (sim->opts.restart_cost == KB_SIM_RESTART_FULL)
            sim->lost_gpu_s += ran * held;
        else
            job->remaining = MAX(job->remaining - (sim->now - job->last_start), 1);
        job->running = FALSE;
        sim->queues[job->queue].n_waiting++;
    } else {
        sim->gpus_partial -= held;
    }
    job->attempt++;
    job->n_evictions++;
    job->n_bound = 0;
    for (guint k = 0; k < job->n_pods; k++) {
        feed_pod(sim, job->pods[k], FEED_DELETE);
        json_object_put(job->pods[k]);
        job->pods[k] = pod_json(job, k);
        feed_pod(sim, job->pods[k], FEED_ADD);
    }
}

/* Carry out the cycle's evictions; a job whose gang is evicted restarts once per cycle. */
static void apply_evictions(Sim *sim, const KbCycleResult *res)
{
    guint mark = sim->cycle_us->len; /* 1 + this cycle's index: the cycle was counted */
    for (guint i = 0; i < res->evictions->len; i++) {
        const KbEviction *ev = &g_array_index(res->evictions, KbEviction, i);
        SimJob *job = g_hash_table_lookup(sim->by_key, ev->job);
        if (job == NULL || job->pods == NULL)
            g_error("sim: eviction of unknown pod %s/%s", ev->pod->meta.namespace_,
                    ev->pod->meta.name);
        sim->n_evicted_pods++;
        if (job->evicted_cycle == mark)
            continue;
        job->evicted_cycle = mark;
        if (strcmp(ev->reason, "Reclaimed") == 0)
            sim->n_reclaimed++;
        else
            sim->n_preempted++;
        job_evict(sim, job);
    }
    if (res->evictions->len > 0)
        sim->last_activity = sim->now;
}

/* The daemon writes a new phase to the PodGroup's status; the watch brings it back. */
static void group_set_phase(Sim *sim, SimJob *job, KbJobPhase phase)
{
    if (job->group == NULL)
        return;
    json_object *status = json_object_new_object();
    json_object_object_add(status, "phase", json_object_new_string(kb_job_phase_to_string(phase)));
    json_object_object_add(job->group, "status", status);
    feed_group(sim, job->group, FEED_UPDATE);
}

/* Remember what the scheduler said about each job; a phase change asks for another cycle. */
static gboolean note_statuses(Sim *sim, const KbCycleResult *res)
{
    gboolean moved = FALSE;
    for (guint i = 0; i < res->job_statuses->len; i++) {
        const KbJobStatus *st = &g_array_index(res->job_statuses, KbJobStatus, i);
        if (!st->changed)
            continue;
        SimJob *job = g_hash_table_lookup(sim->by_key, st->job);
        if (job == NULL)
            continue;
        if (job->phase != st->phase) {
            moved = TRUE;
            group_set_phase(sim, job, st->phase);
        }
        job->phase = st->phase;
        g_free(job->reason);
        job->reason = g_strdup(st->reason);
        g_free(job->message);
        job->message = g_strdup(st->message);
    }
    return moved;
}

/* Forget the jobs of sim->unsettled whose phase is noted Running, or that stopped running. */
static void unsettled_prune(Sim *sim)
{
    guint n = 0;
    for (guint i = 0; i < sim->unsettled->len; i++) {
        SimJob *job = sim->unsettled->pdata[i];
        if (job->running && job->phase != KB_JOB_RUNNING)
            sim->unsettled->pdata[n++] = job;
    }
    g_ptr_array_set_size(sim->unsettled, n);
}

/*
 * check_skips: @res is the result of a cycle the simulator would have skipped (nothing waited),
 * before the simulator applied it; @n_unsettled the jobs settle would have moved to Running.
 * Abort unless the cycle did what settle assumes: no placement, no eviction, and every status it
 * reports changed is a running job's, in phase Running, with the reason already noted (its
 * message may change: a long job says whether it runs on borrowed GPUs); the phase moved for
 * exactly the unsettled jobs.
 */
static void check_skippable(Sim *sim, const KbCycleResult *res, guint n_unsettled)
{
    if (res->placements->len > 0 || res->evictions->len > 0)
        g_error("sim: check-skips: at %" G_GINT64_FORMAT " nothing waited, yet the cycle made "
                "%u placements and %u evictions",
                sim->now, res->placements->len, res->evictions->len);
    guint moved = 0;
    for (guint i = 0; i < res->job_statuses->len; i++) {
        const KbJobStatus *st = &g_array_index(res->job_statuses, KbJobStatus, i);
        const SimJob *job = st->changed ? g_hash_table_lookup(sim->by_key, st->job) : NULL;
        if (job == NULL)
            continue;
        if (!job->running || st->phase != KB_JOB_RUNNING || g_strcmp0(st->reason, job->reason) != 0)
            g_error("sim: check-skips: at %" G_GINT64_FORMAT " nothing waited, yet job %s "
                    "(running %d) was reported %s \"%s\" \"%s\" (noted %s \"%s\" \"%s\")",
                    sim->now, st->job, job->running, kb_job_phase_to_string(st->phase), st->reason,
                    st->message, kb_job_phase_to_string(job->phase), job->reason, job->message);
        moved += job->phase != st->phase;
    }
    if (moved != n_unsettled)
        g_error("sim: check-skips: at %" G_GINT64_FORMAT " the cycle moved %u jobs to Running, "
                "the simulator would have moved %u",
                sim->now, moved, n_unsettled);
}

static void cycle(Sim *sim, gboolean skippable)
{
    g_autoptr(KbCycleResult) res = kb_cycle_run(sim->cache, sim->conf, sim->now);
    double us = (double)res->duration_us;
    g_array_append_val(sim->cycle_us, us);
    if (sim->opts.on_cycle != NULL)
        sim->opts.on_cycle(res, sim->opts.on_cycle_data);
    if (skippable) {
        unsettled_prune(sim);
        check_skippable(sim, res, sim->unsettled->len);
        sim->n_skipped++;
    }
    apply_placements(sim, res);
    apply_evictions(sim, res);
    gboolean moved = note_statuses(sim, res);
    sim->rerun = res->placements->len > 0 || res->evictions->len > 0 || moved;
    sim->last_cycle = sim->now;
    unsettled_prune(sim);
}

/*
 * Nothing waits: every live job has all its pods bound and running. A cycle then places and
 * evicts nothing (every action works for pending pods: allocate, backfill, reserve, and preempt
 * and reclaim for pending preemptors), and reports every job Running with the reason of the cycle
 * that placed it ("Scheduled"; the message, "N/N tasks placed", may say since that the job runs
 * on borrowed GPUs, or no longer does: --trace-job shows it at the next cycle that runs); of its
 * report the simulator uses only the phases that moved (a phase change asks for another cycle and
 * is written to the PodGroup). The cache state such a cycle updates (job phase, pending_since, the
 * last report) is recomputed by the next cycle before anything reads it, but for the end of the
 * jobs that finished since the last cycle, which the runtime history takes from the cycle's clock.
 * So the simulator does not run it: settle notes what it would have reported and stamps the
 * history, and the cycles where something waits, the only ones that decide anything, run at the
 * same seconds on the same cache. check_skips runs the cycle anyway and aborts if it does anything
 * else (tests/test-trace.c). Not with on_cycle (its callback wants every cycle's queue figures),
 * nor without delete_finished (finished jobs stay in the cache, and the next cycle reports them
 * Completed).
 */
static void settle(Sim *sim)
{
    gboolean moved = FALSE;
    for (guint i = 0; i < sim->unsettled->len; i++) {
        SimJob *job = sim->unsettled->pdata[i];
        if (!job->running || job->phase == KB_JOB_RUNNING)
            continue;
        job->phase = KB_JOB_RUNNING;
        group_set_phase(sim, job, KB_JOB_RUNNING);
        moved = TRUE;
    }
    g_ptr_array_set_size(sim->unsettled, 0);
    /* The reserve action stamps the jobs finished since the last cycle with the cycle's clock
     * (history.h): do it now, as the skipped cycle would, or their runtimes would stretch to the
     * next cycle that runs. */
    kb_history_stamp(kb_cache_history(sim->cache), sim->now);
    sim->rerun = moved;
    sim->last_cycle = sim->now;
    sim->n_skipped++;
}

/* A job waits to start, or a running elastic job for more of its pods. */
static gboolean waiting(const Sim *sim)
{
    if (sim->n_growing > 0)
        return TRUE;
    for (guint q = 0; q < sim->n_queues; q++) {
        if (sim->queues[q].n_waiting > 0)
            return TRUE;
    }
    return FALSE;
}

static gboolean can_skip(const Sim *sim)
{
    return !sim->opts.no_skip && sim->opts.on_cycle == NULL && sim->opts.delete_finished &&
           !waiting(sim);
}

static gboolean stale(const Sim *sim, const Completion *c)
{
    const SimJob *job = &sim->jobs[c->job];
    return !job->running || c->attempt != job->attempt;
}

/* The time of the next thing to happen, or G_MAXINT64. */
static gint64 next_time(Sim *sim)
{
    gint64 next = G_MAXINT64;
    /* Completions cancelled by evictions are no events. */
    while (sim->heap->len > 0 && stale(sim, &g_array_index(sim->heap, Completion, 0)))
        heap_pop(sim->heap);
    if (sim->next_arrival < sim->trace->n_jobs)
        next = sim->trace->jobs[sim->next_arrival].submit;
    if (sim->heap->len > 0)
        next = MIN(next, g_array_index(sim->heap, Completion, 0).t);
    /* Idle cycles only while something can still change (an arrival or a completion ahead). */
    if (sim->rerun || (sim->opts.every_period && next != G_MAXINT64 && waiting(sim)))
        next = MIN(next, sim->last_cycle + sim->opts.period);
    return next;
}

static void sample(Sim *sim)
{
    guint waiting = 0;
    for (guint q = 0; q < sim->n_queues; q++)
        waiting += sim->queues[q].n_waiting;
    if (sim->samples->len > 0) {
        KbSimSample *last = &g_array_index(sim->samples, KbSimSample, sim->samples->len - 1);
        if (last->gpus_busy == sim->gpus_busy && last->waiting == waiting)
            return;
        if (last->t == sim->now) {
            last->gpus_busy = sim->gpus_busy;
            last->waiting = waiting;
            return;
        }
    }
    KbSimSample s = {sim->now, sim->gpus_busy, waiting};
    g_array_append_val(sim->samples, s);
}

static void step(Sim *sim, gint64 t)
{
    sim->now = t;
    while (sim->heap->len > 0 && g_array_index(sim->heap, Completion, 0).t <= t) {
        Completion c = heap_pop(sim->heap);
        if (stale(sim, &c))
            continue;
        job_complete(sim, &sim->jobs[c.job]);
        sim->last_activity = t;
    }
    while (sim->next_arrival < sim->trace->n_jobs &&
           sim->trace->jobs[sim->next_arrival].submit <= t) {
        job_arrive(sim, &sim->jobs[sim->next_arrival++]);
        sim->last_activity = t;
    }
    guint restart_after = sim->opts.restart_after > 0 ? sim->opts.restart_after : 256;
    if (sim->n_retained >= restart_after && sim->n_retained >= sim->n_live)
        cache_restart(sim);
    if (!can_skip(sim))
        cycle(sim, FALSE);
    else if (sim->opts.check_skips)
        cycle(sim, TRUE);
    else
        settle(sim);
    sample(sim);
    if (sim->opts.progress != NULL && ++sim->n_steps % 4096 == 0)
        sim->opts.progress(sim->opts.progress_data, sim->next_arrival, sim->trace->n_jobs);
}

/* ---- setup, run, report --------------------------------------------------------------------- */

void kb_sim_options_init(KbSimOptions *opts)
{
    *opts = (KbSimOptions){.n_nodes = 64,
                           .gpus_per_node = 8,
                           .pack = KB_TRACE_PACK_NODE,
                           .period = 1,
                           .delete_finished = TRUE,
                           .estimate_factor = 1};
}

gboolean kb_sim_restart_cost_from_string(const char *s, KbSimRestartCost *out)
{
    if (s != NULL && strcmp(s, "full") == 0)
        *out = KB_SIM_RESTART_FULL;
    else if (s != NULL && strcmp(s, "none") == 0)
        *out = KB_SIM_RESTART_NONE;
    else
        return FALSE;
    return TRUE;
}

const char *kb_sim_restart_cost_to_string(KbSimRestartCost cost)
{
    return cost == KB_SIM_RESTART_NONE ? "none" : "full";
}

gboolean kb_sim_is_high_priority(guint line, double fraction)
{
    if (!(fraction > 0))
        return FALSE;
    if (fraction >= 1)
        return TRUE;
    /* splitmix64's finalizer: lines are consecutive, their hashes are not. */
    guint64 z = (guint64)line + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0 < fraction; /* top 53 bits in [0, 1) */
}

static gboolean options_check(const KbTrace *trace, const KbSimOptions *opts, GError **error)
{
    if (!(opts->high_fraction >= 0 && opts->high_fraction <= 1)) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "high-priority fraction: %g is not in 0..1",
                    opts->high_fraction);
        return FALSE;
    }
    if (!(opts->min_fraction >= 0 && opts->min_fraction <= 1)) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "minimum fraction: %g is not in 0..1",
                    opts->min_fraction);
        return FALSE;
    }
    if (opts->restart_cost != KB_SIM_RESTART_FULL && opts->restart_cost != KB_SIM_RESTART_NONE) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "restart cost: %d is not full or none",
                    (int)opts->restart_cost);
        return FALSE;
    }
    if (opts->n_nodes < 1 || opts->n_nodes > KB_SIM_MAX_NODES) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "nodes: %u is not in 1..%d", opts->n_nodes,
                    KB_SIM_MAX_NODES);
        return FALSE;
    }
    if (opts->gpus_per_node < 1 || opts->gpus_per_node > KB_SIM_MAX_GPUS_PER_NODE) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "GPUs per node: %u is not in 1..%d",
                    opts->gpus_per_node, KB_SIM_MAX_GPUS_PER_NODE);
        return FALSE;
    }
    if (opts->period < 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "period: %" G_GINT64_FORMAT " < 0",
                    opts->period);
        return FALSE;
    }
    for (guint i = 1; i < trace->n_jobs; i++) {
        if (trace->jobs[i].submit < trace->jobs[i - 1].submit) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                        "trace not sorted by submit time (job %u, line %u)", i,
                        trace->jobs[i].line);
            return FALSE;
        }
    }
    return TRUE;
}

static void sim_init(Sim *sim, const KbTrace *trace, const KbConf *conf, const KbSimOptions *opts)
{
    sim->trace = trace;
    sim->conf = conf;
    sim->opts = *opts;
    if (sim->opts.period == 0)
        sim->opts.period = 1;
    sim->cache = kb_cache_new(NULL, "default");
    g_autoptr(GPtrArray) names = kb_trace_queues(trace);
    sim->n_queues = names->len;
    sim->queues = g_new0(SimQueue, MAX(names->len, 1));
    g_autoptr(GHashTable) index = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint q = 0; q < names->len; q++) {
        SimQueue *sq = &sim->queues[q];
        sq->name = names->pdata[q];
        gpointer w = opts->weights != NULL ? g_hash_table_lookup(opts->weights, sq->name) : NULL;
        sq->weight = w != NULL ? MAX(GPOINTER_TO_INT(w), 1) : 1;
        g_hash_table_insert(index, (gpointer)sq->name, GUINT_TO_POINTER(q));
    }
    sim->by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    sim->jobs = g_new0(SimJob, MAX(trace->n_jobs, 1));
    for (guint i = 0; i < trace->n_jobs; i++) {
        SimJob *job = &sim->jobs[i];
        job->tj = &trace->jobs[i];
        job->queue = GPOINTER_TO_UINT(g_hash_table_lookup(index, job->tj->queue));
        job->name = g_strdup_printf("j%06u", i);
        if (job->tj->pods > 0) {
            job->n_pods = job->tj->pods;
            job->gpus_per_pod = job->tj->num_gpus / job->tj->pods;
        } else {
            job->n_pods = kb_trace_gang_shape(job->tj->num_gpus, opts->gpus_per_node, opts->pack,
                                              &job->gpus_per_pod);
        }
        job->n_min = job->n_pods;
        if (opts->min_fraction > 0)
            job->n_min = CLAMP((guint)ceil(job->n_pods * opts->min_fraction), 1, job->n_pods);
        job->start = job->last_start = job->finish = -1;
        job->remaining = MAX((gint64)ceil(job->tj->duration), 1);
        if (job->tj->expected > 0)
            job->estimate = MAX((gint64)ceil(job->tj->expected), 1);
        else if (opts->estimate_factor > 0)
            job->estimate = MAX((gint64)ceil(job->tj->duration * opts->estimate_factor), 1);
        job->high = opts->high != NULL
                            ? opts->high[i]
                            : job->tj->priority > 0 ||
                                      kb_sim_is_high_priority(job->tj->line, opts->high_fraction);
        job->phase = KB_JOB_PENDING;
        g_hash_table_insert(sim->by_key, g_strdup_printf("%s/%s", job->tj->queue, job->name), job);
    }
    sim->heap = g_array_new(FALSE, FALSE, sizeof(Completion));
    sim->cycle_us = g_array_new(FALSE, FALSE, sizeof(double));
    sim->samples = g_array_new(FALSE, FALSE, sizeof(KbSimSample));
    sim->unsettled = g_ptr_array_new();
    cluster_setup(sim);
}

static void sim_clear(Sim *sim)
{
    for (guint i = 0; i < sim->trace->n_jobs; i++) {
        SimJob *job = &sim->jobs[i];
        for (guint k = 0; job->pods != NULL && k < job->n_pods; k++)
            g_clear_pointer(&job->pods[k], json_object_put);
        g_free(job->pods);
        g_clear_pointer(&job->group, json_object_put);
        g_free(job->name);
        g_free(job->reason);
        g_free(job->message);
    }
    g_free(sim->jobs);
    g_free(sim->queues);
    g_hash_table_unref(sim->by_key);
    g_array_unref(sim->heap);
    g_array_unref(sim->cycle_us);
    g_ptr_array_unref(sim->unsettled);
    if (sim->samples != NULL)
        g_array_unref(sim->samples);
    kb_cache_free(sim->cache);
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

double kb_sim_percentile(double *values, guint n, double p)
{
    if (n == 0)
        return 0;
    qsort(values, n, sizeof(double), double_cmp);
    double rank = ceil(p / 100.0 * n);
    guint idx = rank < 1 ? 0 : (guint)rank - 1;
    return values[MIN(idx, n - 1)];
}

static double mean(const double *v, guint n)
{
    double s = 0;
    for (guint i = 0; i < n; i++)
        s += v[i];
    return n > 0 ? s / n : 0;
}

static void report_job(KbSimReport *r, const SimJob *job, guint i)
{
    KbSimJobResult *jr = &r->jobs[i];
    jr->index = i;
    jr->queue = job->tj->queue;
    jr->num_gpus = job->tj->num_gpus;
    jr->n_pods = job->n_pods;
    jr->submit = job->tj->submit;
    jr->start = job->start;
    jr->last_start = job->last_start;
    jr->finish = job->finish;
    jr->running = job->running;
    jr->ran = job->ran;
    jr->high_priority = job->high;
    jr->n_evictions = job->n_evictions;
    jr->phase = g_strdup(job->finish >= 0 ? "Completed" : kb_job_phase_to_string(job->phase));
    if (job->finish < 0) {
        jr->reason = g_strdup(job->reason);
        jr->message = g_strdup(job->message);
    }
}

/* Job figures: times, per-queue sums. */
static void report_jobs(KbSimReport *r, const Sim *sim)
{
    g_autofree double *jct = g_new0(double, MAX(sim->trace->n_jobs, 1));
    g_autofree double *wait = g_new0(double, MAX(sim->trace->n_jobs, 1));
    g_autofree double *q_jct = g_new0(double, MAX(sim->n_queues, 1));
    g_autofree double *q_wait = g_new0(double, MAX(sim->n_queues, 1));
    g_autofree guint *q_started = g_new0(guint, MAX(sim->n_queues, 1));
    gint64 last_finish = -1;
    r->jobs = g_new0(KbSimJobResult, MAX(sim->trace->n_jobs, 1));
    for (guint i = 0; i < sim->trace->n_jobs; i++) {
        const SimJob *job = &sim->jobs[i];
        KbSimQueueResult *qr = &r->queues[job->queue];
        report_job(r, job, i);
        qr->n_jobs++;
        qr->demand_gpu_s += job->tj->duration * job->tj->num_gpus;
        if (job->start >= 0) {
            wait[r->n_started++] = (double)(job->start - job->tj->submit);
            q_wait[job->queue] += (double)(job->start - job->tj->submit);
            q_started[job->queue]++;
        }
        if (job->finish >= 0) {
            jct[r->n_finished++] = (double)(job->finish - job->tj->submit);
            q_jct[job->queue] += (double)(job->finish - job->tj->submit);
            qr->n_finished++;
            last_finish = MAX(last_finish, job->finish);
        }
    }
    for (guint q = 0; q < sim->n_queues; q++) {
        KbSimQueueResult *qr = &r->queues[q];
        qr->jct_mean = qr->n_finished > 0 ? q_jct[q] / qr->n_finished : 0;
        qr->wait_mean = q_started[q] > 0 ? q_wait[q] / q_started[q] : 0;
    }
    r->makespan = last_finish >= 0 ? last_finish - r->first_submit : 0;
    r->jct_mean = mean(jct, r->n_finished);
    r->jct_p50 = kb_sim_percentile(jct, r->n_finished, 50);
    r->jct_p95 = kb_sim_percentile(jct, r->n_finished, 95);
    r->jct_p99 = kb_sim_percentile(jct, r->n_finished, 99);
    r->wait_mean = mean(wait, r->n_started);
    r->wait_p50 = kb_sim_percentile(wait, r->n_started, 50);
    r->wait_p95 = kb_sim_percentile(wait, r->n_started, 95);
    r->wait_p99 = kb_sim_percentile(wait, r->n_started, 99);
}

guint kb_sim_bucket(guint gpus)
{
    return gpus <= 1 ? 0 : gpus <= 4 ? 1 : gpus <= 8 ? 2 : gpus <= 16 ? 3 : 4;
}

const char *kb_sim_bucket_label(guint bucket)
{
    static const char *const labels[KB_SIM_N_BUCKETS] = {"1", "2-4", "5-8", "9-16", "17+"};
    return bucket < KB_SIM_N_BUCKETS ? labels[bucket] : "?";
}

/* Per gang-size bucket: waits and JCTs. */
static void report_buckets(KbSimReport *r)
{
    g_autofree double *jct = g_new0(double, MAX(r->n_jobs, 1));
    g_autofree double *wait = g_new0(double, MAX(r->n_jobs, 1));
    for (guint b = 0; b < KB_SIM_N_BUCKETS; b++) {
        KbSimBucket *kb = &r->buckets[b];
        guint n_jct = 0, n_wait = 0;
        for (guint i = 0; i < r->n_jobs; i++) {
            const KbSimJobResult *j = &r->jobs[i];
            if (kb_sim_bucket(j->num_gpus) != b)
                continue;
            kb->n_jobs++;
            if (j->start >= 0)
                wait[n_wait++] = (double)(j->start - j->submit);
            if (j->finish >= 0)
                jct[n_jct++] = (double)(j->finish - j->submit);
        }
        kb->n_started = n_wait;
        kb->n_finished = n_jct;
        kb->wait_mean = mean(wait, n_wait);
        kb->wait_p95 = kb_sim_percentile(wait, n_wait, 95);
        kb->wait_p99 = kb_sim_percentile(wait, n_wait, 99);
        kb->jct_mean = mean(jct, n_jct);
        kb->jct_p95 = kb_sim_percentile(jct, n_jct, 95);
        kb->jct_p99 = kb_sim_percentile(jct, n_jct, 99);
    }
    for (guint i = 0; i < r->n_jobs; i++) {
        const KbSimJobResult *j = &r->jobs[i];
        if (j->start < 0)
            r->max_unstarted_wait = MAX(r->max_unstarted_wait, (double)(r->end - j->submit));
    }
}

/* Waits and JCTs of the jobs whose priority is @high, into the four figures. */
static void report_class(const KbSimReport *r, gboolean high, double *wait_mean, double *wait_p95,
                         double *jct_mean, double *jct_p95)
{
    g_autofree double *jct = g_new0(double, MAX(r->n_jobs, 1));
    g_autofree double *wait = g_new0(double, MAX(r->n_jobs, 1));
    guint n_jct = 0, n_wait = 0;
    for (guint i = 0; i < r->n_jobs; i++) {
        const KbSimJobResult *j = &r->jobs[i];
        if (j->high_priority != high)
            continue;
        if (j->start >= 0)
            wait[n_wait++] = (double)(j->start - j->submit);
        if (j->finish >= 0)
            jct[n_jct++] = (double)(j->finish - j->submit);
    }
    *wait_mean = mean(wait, n_wait);
    *wait_p95 = kb_sim_percentile(wait, n_wait, 95);
    *jct_mean = mean(jct, n_jct);
    *jct_p95 = kb_sim_percentile(jct, n_jct, 95);
}

static void report_evictions(KbSimReport *r, const Sim *sim)
{
    r->n_evicted_pods = sim->n_evicted_pods;
    r->n_preempted = sim->n_preempted;
    r->n_reclaimed = sim->n_reclaimed;
    r->evicted_gpu_s = sim->evicted_gpu_s;
    r->lost_gpu_s = sim->lost_gpu_s;
    double idle = 0;
    for (guint i = 0; i < r->n_jobs; i++) {
        const KbSimJobResult *j = &r->jobs[i];
        r->n_jobs_evicted += j->n_evictions > 0;
        r->max_job_evictions = MAX(r->max_job_evictions, j->n_evictions);
        r->n_high += j->high_priority;
        if (j->finish >= 0)
            idle += (double)(j->finish - j->submit - j->ran);
    }
    r->idle_mean = r->n_finished > 0 ? idle / r->n_finished : 0;
    report_class(r, TRUE, &r->high_wait_mean, &r->high_wait_p95, &r->high_jct_mean,
                 &r->high_jct_p95);
    report_class(r, FALSE, &r->low_wait_mean, &r->low_wait_p95, &r->low_jct_mean, &r->low_jct_p95);
}

static KbSimReport *report_new(Sim *sim)
{
    KbSimReport *r = g_new0(KbSimReport, 1);
    r->n_jobs = sim->trace->n_jobs;
    r->n_gpus = sim->opts.n_nodes * sim->opts.gpus_per_node;
    r->first_submit = sim->trace->n_jobs > 0 ? sim->trace->jobs[0].submit : 0;
    r->end = sim->last_activity;
    r->n_queues = sim->n_queues;
    r->queues = g_new0(KbSimQueueResult, MAX(sim->n_queues, 1));
    for (guint q = 0; q < sim->n_queues; q++) {
        r->queues[q].name = sim->queues[q].name;
        r->queues[q].weight = sim->queues[q].weight;
        r->queues[q].received_gpu_s = sim->queues[q].received_gpu_s;
    }
    report_jobs(r, sim);
    report_evictions(r, sim);
    report_buckets(r);
    double span = (double)(r->end - r->first_submit) * r->n_gpus;
    r->util_busy = span > 0 ? sim->busy_gpu_s / span : 0;
    r->util_alloc = span > 0 ? sim->held_gpu_s / span : 0;
    double window =
            r->n_jobs > 0
                    ? (double)(sim->trace->jobs[r->n_jobs - 1].submit - r->first_submit) * r->n_gpus
                    : 0;
    r->util_busy_arrivals = window > 0 ? sim->busy_arrivals_gpu_s / window : r->util_busy;
    r->util_alloc_arrivals = window > 0 ? sim->held_arrivals_gpu_s / window : r->util_alloc;
    r->partial_gpu_s = sim->partial_gpu_s;
    r->partial_gpus_peak = sim->partial_peak;
    r->partial_gpus_end = sim->gpus_partial;
    r->jain = sim->contended_s > 0 ? sim->jain_sum / sim->contended_s : -1;
    r->contended_s = sim->contended_s;
    /* With check_skips the skipped cycles ran too (their times are in the cycle figures). */
    r->n_cycles = sim->cycle_us->len - (sim->opts.check_skips ? sim->n_skipped : 0);
    r->n_cycles_skipped = sim->n_skipped;
    r->n_placements = sim->n_placements;
    r->n_cache_restarts = sim->n_restarts;
    double *us = (double *)(void *)sim->cycle_us->data;
    r->cycle_us_mean = mean(us, sim->cycle_us->len);
    r->cycle_us_p99 = kb_sim_percentile(us, sim->cycle_us->len, 99);
    r->cycle_us_max = sim->cycle_us->len > 0 ? us[sim->cycle_us->len - 1] : 0;
    return r;
}

/* User + system CPU seconds of the calling thread (replays may run on several threads). */
static double thread_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

KbSimReport *kb_sim_run(const KbTrace *trace, const KbConf *conf, const KbSimOptions *opts,
                        GError **error)
{
    if (!options_check(trace, opts, error))
        return NULL;
    gint64 t0 = g_get_monotonic_time();
    double cpu0 = thread_cpu_s();
    Sim sim = {0};
    sim_init(&sim, trace, conf, opts);
    gboolean stopped = FALSE;
    sim.now = sim.integrated = trace->n_jobs > 0 ? trace->jobs[0].submit : 0;
    for (;;) {
        gint64 t = next_time(&sim);
        if (t == G_MAXINT64)
            break;
        guint done = sim.cycle_us->len + (opts->check_skips ? 0 : sim.n_skipped);
        if (opts->max_cycles > 0 && done >= opts->max_cycles) {
            stopped = TRUE;
            break;
        }
        step(&sim, t);
    }
    KbSimReport *r = report_new(&sim);
    r->stopped = stopped;
    r->n_samples = sim.samples->len;
    r->samples = (KbSimSample *)(void *)g_array_free(g_steal_pointer(&sim.samples), FALSE);
    if (opts->progress != NULL)
        opts->progress(opts->progress_data, trace->n_jobs, trace->n_jobs);
    sim_clear(&sim);
    r->wall_s = (double)(g_get_monotonic_time() - t0) / 1e6;
    r->cpu_s = thread_cpu_s() - cpu0;
    return r;
}

void kb_sim_report_free(KbSimReport *report)
{
    if (report == NULL)
        return;
    for (guint i = 0; i < report->n_jobs; i++) {
        g_free(report->jobs[i].phase);
        g_free(report->jobs[i].reason);
        g_free(report->jobs[i].message);
    }
    g_free(report->jobs);
    g_free(report->samples);
    g_free(report->queues);
    g_free(report);
}
