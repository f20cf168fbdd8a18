/*
 * preempt and reclaim: evict running jobs so that a waiting gang can start.
 *
 *   preempt  a gang that has not reached minMember evicts jobs of lower priority in its own queue
 *            (never when its PriorityClass says preemptionPolicy: Never);
 *   reclaim  a gang of a queue below its deserved share evicts jobs of other queues that are above
 *            theirs and `reclaimable`, never taking such a queue below its share.
 *
 * Both work per waiting job, in job order, inside a statement: each task the gang still needs to
 * reach minMember is placed on "future idle" resources (idle + requests of pods being evicted -
 * what earlier statements reserved), evicting victims on the best node when nothing is free. Only
 * when every needed task found room are the evictions committed (KbEviction in the result, the
 * tasks RELEASING in the cache); otherwise nothing is evicted at all.
 *
 * Victims come in units: one task, or, when evicting it would leave its running gang below
 * minMember (or its native PodGroup says disruptionMode: all), every running member of that gang
 * (on any node; inside the domain for a preemptor with a topology key: such a preemptor's tasks
 * and victims stay in one domain of the label, each tried in turn). A unit is only taken when the
 * plugins allow every one of its pods (conformance: never critical pods; priority, drf: Volcano's
 * preemptableFn). On a node, two greedy passes take units until the task fits (lowest priority
 * and youngest first; most freed per pod first), each giving back what it did not need after all,
 * and the cheaper set counts; the node whose set evicts the fewest pods, then GPUs, then the
 * lowest highest priority, then the youngest wins. Reclaim only takes units that leave the
 * victim's queue at or above its deserved share in the resources it uses beyond its share.
 * Plugins filter through kb_session_preemptable / kb_session_reclaimable; the rules above (whole
 * gangs, lower priority and the same queue for preempt, the share floor and `reclaimable` for
 * reclaim, preemptionPolicy Never) hold whatever the configured plugins.
 *
 * Minimum run time: a gang whose current incarnation started less than `minRunTime` ago
 * (kb_cache_job_start_time: when its minMember-th pod was bound) is no victim of either action,
 * and with `evictionBackoff` a job already evicted N times needs 2^N x minRunTime (at most 2^6).
 * Both come from the action's entry in Volcano's top-level `configurations`. Without that, a job
 * that restarts after an eviction is the cheapest victim again soon after (the trace replay had
 * one job evicted 36 times). A preemptor that fails while such victims were in scope says so in
 * its condition ("victims protected: running less than 10m").
 *
 * Placement after eviction: the preemptor is not bound here. Its tasks are only "pipelined": the
 * room is reserved for the rest of this cycle (KbSession.pipelined) and the job is admitted
 * (Inqueue), so that the next cycles' allocate binds it once the evicted pods are gone and their
 * resources are idle again. Meanwhile the victims are RELEASING in the cache and count as future
 * idle, so a later cycle pipelines the job onto them again instead of evicting more (no storm).
 *
 * DRA: a preemptor's devices count in its resource vector (docs/dra.md), so victims are chosen
 * by it as for nvidia.com/gpu; its claims are then checked exactly on the node with the devices
 * of the victims' claims free in the plan (kb_dra_plan_evict, undone with the statement; pods
 * already being evicted count so from the start), a MIG device's counters and a share's
 * capacity with them. Where the vector fits but the claims do not (a MIG placement or a share
 * needs the victims on the right GPU, which the vector does not see), more of the node's
 * victims are taken in the same order until the claims fit, and those not needed are given back
 * (choose_in_order). The preemptor's devices are held for the rest of the action, so that its
 * gang's next member and later preemptors do not count them again. Nothing is held past the
 * action: the victims' claims stay allocated until the resource-claim controller frees them.
 */
#include "scheduler/actions.h"

#include <string.h>

#include "policies/plugin.h"
#include "scheduler/dra.h"

static const int share_slots[] = {KB_RES_CPU, KB_RES_MEMORY, KB_RES_GPU};
/* Floor.masks has a bit per subset of share_slots. */
G_STATIC_ASSERT(1u << G_N_ELEMENTS(share_slots) <= 8 * sizeof(guint8));

/*
 * Defaults of the configurations' minRunTime and evictionBackoff (see the top of the file and the
 * docs/configuration.md). Measured on the Philly trace replay (bench-trace -c preempt-reclaim,
 * 10% high priority): see docs/configuration.md, the preempt/reclaim paragraph, for the figures
 * behind the choice.
 */
#define DEFAULT_MIN_RUN (10 * 60)
#define DEFAULT_BACKOFF TRUE

typedef enum { MODE_PREEMPT, MODE_RECLAIM } Mode;

/* A victim unit: one task, or a whole gang (task NULL). */
typedef struct {
    KbJobInfo *job;
    KbTaskInfo *task;
    guint pods;
    gint64 gpus;
    gint32 priority;
    gint64 created;
    KbResources on_node; /* what it frees on the node being considered */
    KbResources total;   /* what it frees everywhere */
} Unit;

typedef struct {
    gboolean queue; /* else node */
    guint id;
    KbResources delta; /* added to queue_alloc / subtracted from pipelined */
} Undo;

/* What a node's units free under tree node @x, all of them together (see memo_floors). */
typedef struct {
    guint x;
    KbResources res;
    guint8 masks; /* bit m: some unit frees exactly the share slots of mask m */
} Floor;

/*
 * What choose_on_node found on one node for a task of the memo's shape, kept while nothing the
 * choice read changes: a gang's tasks ask the same, and kai-reclaim-250's 250 tasks each
 * weighed all 500 nodes' victims again (two greedy orders each) where one node had changed.
 * Kept only when the share floors could not refuse any of the node's units (slack): the choice
 * was then the floors' no-op, and stays right while they still cannot (checked at each use:
 * evictions elsewhere lower the victims' queues). A node's entry goes when its future idle
 * resources change or a task of a job with a unit on it is evicted (a whole-gang unit spans
 * nodes; job_evicted decides single or whole); the whole memo with the statement (allowed,
 * evicted and the queues are undone or committed) and when the task's shape changes.
 */
typedef struct {
    guint gen;      /* valid when Evict.memo_gen */
    gboolean ok;    /* choose_on_node's answer */
    GArray *chosen; /* Unit: e->chosen then */
    GArray *floors; /* Floor: per queue the node's units reach */
} NodeMemo;

typedef struct {
    KbSession *ssn;
    Mode mode;
    GPtrArray **node_tasks;    /* per node: BOUND/RUNNING tasks (borrowed) */
    KbResources *future_idle;  /* per node: idle + releasing - pipelined */
    KbResources *queue_alloc;  /* per tree node: allocated - releasing - evicted + pipelined */
    KbQueueTree *tree;         /* the session's queue tree */
    guint min_lca_depth;       /* reclaim: victims' and job's queues meet this deep */
    guint claimer_queue;       /* the queue of the job victims are chosen for */
    guint *job_evicted;        /* per job id: members evicted in the open statement */
    gint32 *queue_min_prio;    /* per queue: lowest priority of its jobs with running pods */
    GHashTable *allowed;       /* tasks the plugins allow for the current preemptor job */
    GHashTable *evicted;       /* tasks evicted in the open statement */
    KbResources job_pipelined; /* what the open statement pipelined for its job */
    GPtrArray *victims;        /* the same, in order */
    GArray *undo;              /* Undo */
    GArray *units, *chosen, *alt, *best; /* Unit scratch */
    gint64 min_run;                      /* minRunTime (seconds) */
    gboolean backoff;                    /* evictionBackoff */
    gboolean borrowed_only;              /* reclaim's borrowedLongJobsOnly */
    gconstpointer proportion;            /* its state: which jobs borrowed (borrowed_only) */
    gboolean *job_protected; /* per job id: started less than its minimum run time ago */
    guint n_protected;       /* in-scope tasks of protected jobs for the current preemptor */
    /* A preemptor with a topology key (a native PodGroup's schedulingConstraints): its tasks
     * go, and its victims are taken, only on nodes whose label domain_key is domain. */
    const char *domain_key;
    const char *domain;
    KbDra *dra;
    GPtrArray *dra_held; /* preemptor tasks whose devices the open statement holds */
    GPtrArray *dra_kept; /* the same of committed statements, held until the action ends */
    /* fewer_victims: the unit choose_in_order leaves out (job NULL: none) */
    const KbJobInfo *ban_job;
    const KbTaskInfo *ban_task;
    NodeMemo *memo;         /* per node; NULL when kb_preempt_set_memo(FALSE) */
    guint memo_gen;         /* entries of another generation are stale */
    KbResources memo_shape; /* the task resources the entries are for */
    guint64 memo_hits;      /* choices taken from the memo (tests, bench-schedule) */
} Evict;

static gboolean memo_enabled = TRUE;
static gsize memo_hits_total; /* atomic: sessions may run on several threads */

static gboolean on_node(const KbTaskInfo *t)
{
    return (t->state == KB_TASK_BOUND || t->state == KB_TASK_RUNNING) && !t->evicting &&
           t->node_id >= 0;
}

static guint ready_tasks(const KbJobInfo *job)
{
    return job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
           job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING] +
           job->n_state[KB_TASK_SUCCEEDED];
}

/*
 * How long @job must have run, in its current incarnation, before it may be evicted: minRunTime,
 * doubled per earlier eviction of the job with evictionBackoff (capped at 2^MAX_BACKOFF_SHIFT).
 */
#define MAX_BACKOFF_SHIFT 6

static gint64 required_run(const Evict *e, const KbJobInfo *job)
{
    guint shift = e->backoff ? MIN(job->n_evictions, MAX_BACKOFF_SHIFT) : 0;
    return e->min_run << shift;
}

static gboolean job_protected(const Evict *e, const KbJobInfo *job)
{
    if (e->min_run <= 0)
        return FALSE;
    gint64 start = kb_cache_job_start_time(job);
    return start != 0 && e->ssn->now - start < required_run(e, job);
}

/* Reclaim's borrowedLongJobsOnly: only long jobs run past their queues' long-job limits go. */
static gboolean borrowed_only(const KbConf *conf, Mode mode)
{
    return mode == MODE_RECLAIM && kb_conf_reclaim_borrowed_only(conf);
}

static void evict_config(Evict *e, const KbConf *conf)
{
    const KbConfPlugin *c =
            kb_conf_find_configuration(conf, e->mode == MODE_PREEMPT ? "preempt" : "reclaim");
    e->min_run = kb_conf_arg_duration(c, "minRunTime", DEFAULT_MIN_RUN);
    e->backoff = kb_conf_arg_bool(c, "evictionBackoff", DEFAULT_BACKOFF);
    e->borrowed_only = borrowed_only(conf, e->mode);
}

static gboolean pod_exists(const char *namespace_, const char *name, gpointer cache)
{
    return kb_cache_has_pod(cache, namespace_, name);
}

static void evict_init(Evict *e, KbSession *ssn, Mode mode)
{
    e->ssn = ssn;
    e->mode = mode;
    e->dra = kb_cache_dra(ssn->cache);
    e->dra_held = g_ptr_array_new();
    e->dra_kept = g_ptr_array_new();
    if (ssn->pipelined == NULL)
        ssn->pipelined = g_new0(KbResources, MAX(ssn->n_nodes, 1));
    e->node_tasks = g_new0(GPtrArray *, MAX(ssn->n_nodes, 1));
    e->future_idle = g_new0(KbResources, MAX(ssn->n_nodes, 1));
    e->tree = ssn->qtree;
    e->queue_alloc = g_new0(KbResources, ssn->queues->len + 1);
    e->job_evicted = g_new0(guint, MAX(ssn->jobs->len, 1));
    e->queue_min_prio = g_new(gint32, MAX(ssn->queues->len, 1));
    evict_config(e, ssn->conf);
    if (e->borrowed_only)
        e->proportion = kb_session_plugin_state(ssn, "proportion");
    e->job_protected = g_new0(gboolean, MAX(ssn->jobs->len, 1));
    for (guint q = 0; q < ssn->queues->len; q++)
        e->queue_min_prio[q] = G_MAXINT32;
    for (guint n = 0; n < ssn->n_nodes; n++) {
        e->future_idle[n] = ssn->nodes[n].idle;
        kb_resources_sub(&e->future_idle[n], &ssn->pipelined[n]);
    }
    for (guint q = 0; q <= ssn->queues->len; q++)
        e->queue_alloc[q] = e->tree->alloc[q]; /* subtrees: a leaf's is its own */
    /* victims already gone whose claims are not deallocated yet */
    kb_dra_plan_orphans(e->dra, pod_exists, ssn->cache);
    for (guint j = 0; j < ssn->jobs->len; j++) {
        KbJobInfo *job = ssn->jobs->pdata[j];
        KbQueueInfo *qi = kb_session_job_queue(ssn, job);
        if (qi != NULL && job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING] > 0) {
            e->queue_min_prio[qi->id] = MIN(e->queue_min_prio[qi->id], job->priority);
            e->job_protected[job->id] = job_protected(e, job);
        }
        for (guint i = 0; i < job->tasks->len; i++) {
            KbTaskInfo *t = job->tasks->pdata[i];
            if (t->node_id < 0 || (guint)t->node_id >= ssn->n_nodes)
                continue;
            if (t->state == KB_TASK_RELEASING) {
                /* its claims' devices are about to be free, as its resources are */
                kb_dra_plan_evict(e->dra, t->pod, TRUE);
                kb_resources_add(&e->future_idle[t->node_id], &t->resreq);
                for (gint x = qi != NULL ? (gint)qi->id : -1; x >= 0; x = e->tree->parent[x])
                    kb_resources_sub(&e->queue_alloc[x], &t->resreq);
            } else if (on_node(t)) {
                if (e->node_tasks[t->node_id] == NULL)
                    e->node_tasks[t->node_id] = g_ptr_array_new();
                g_ptr_array_add(e->node_tasks[t->node_id], t);
            }
        }
    }
    e->allowed = g_hash_table_new(g_direct_hash, g_direct_equal);
    e->evicted = g_hash_table_new(g_direct_hash, g_direct_equal);
    e->victims = g_ptr_array_new();
    e->undo = g_array_new(FALSE, FALSE, sizeof(Undo));
    e->units = g_array_new(FALSE, FALSE, sizeof(Unit));
    e->chosen = g_array_new(FALSE, FALSE, sizeof(Unit));
    e->alt = g_array_new(FALSE, FALSE, sizeof(Unit));
    e->best = g_array_new(FALSE, FALSE, sizeof(Unit));
    if (memo_enabled)
        e->memo = g_new0(NodeMemo, MAX(ssn->n_nodes, 1));
    e->memo_gen = 1;
}

static void evict_clear(Evict *e)
{
    for (guint n = 0; n < e->ssn->n_nodes; n++) {
        if (e->node_tasks[n] != NULL)
            g_ptr_array_unref(e->node_tasks[n]);
    }
    g_free(e->node_tasks);
    for (guint i = 0; i < e->dra_kept->len; i++)
        kb_dra_release(e->dra, ((KbTaskInfo *)e->dra_kept->pdata[i])->pod->meta.uid);
    g_ptr_array_unref(e->dra_kept);
    kb_dra_plan_end(e->dra);
    g_ptr_array_unref(e->dra_held);
    g_free(e->future_idle);
    g_free(e->queue_alloc);
    g_free(e->job_evicted);
    g_free(e->queue_min_prio);
    g_free(e->job_protected);
    g_hash_table_unref(e->allowed);
    g_hash_table_unref(e->evicted);
    g_ptr_array_unref(e->victims);
    g_array_unref(e->undo);
    g_array_unref(e->units);
    g_array_unref(e->chosen);
    g_array_unref(e->alt);
    g_array_unref(e->best);
    for (guint n = 0; e->memo != NULL && n < e->ssn->n_nodes; n++) {
        if (e->memo[n].chosen != NULL)
            g_array_unref(e->memo[n].chosen);
        if (e->memo[n].floors != NULL)
            g_array_unref(e->memo[n].floors);
    }
    g_free(e->memo);
    g_atomic_pointer_add(&memo_hits_total, (gssize)e->memo_hits);
}

static void memo_forget_node(Evict *e, gint node)
{
    if (e->memo != NULL && node >= 0 && (guint)node < e->ssn->n_nodes)
        e->memo[node].gen = 0;
}

/* Every node where a unit of @job's may lie. */
static void memo_forget_job(Evict *e, const KbJobInfo *job)
{
    for (guint i = 0; e->memo != NULL && i < job->tasks->len; i++)
        memo_forget_node(e, ((const KbTaskInfo *)job->tasks->pdata[i])->node_id);
}

static void memo_forget_all(Evict *e)
{
    if (++e->memo_gen == 0)
        e->memo_gen = 1;
}

/* ---- queues --------------------------------------------------------------------------------- */

/* TRUE when tree node @x uses more than its deserved share in some resource (reclaim victims). */
static gboolean queue_over_share(Evict *e, guint x)
{
    for (guint i = 0; i < G_N_ELEMENTS(share_slots); i++) {
        int s = share_slots[i];
        if (e->queue_alloc[x].v[s] > e->tree->deserved[x].v[s])
            return TRUE;
    }
    return FALSE;
}

/*
 * After giving up @res, does tree node @x keep its deserved share? Only the resources it uses
 * beyond its share are contested: @res must free some of one of them, and in each of them the
 * queue must stay at or above its share. (In an abundant resource the deserved share is simply
 * what the queue asks, so going below it there takes nothing from the queue that another one
 * needs.)
 */
static gboolean queue_keeps_share(Evict *e, guint x, const KbResources *res)
{
    gboolean frees = FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(share_slots); i++) {
        int s = share_slots[i];
        gint64 alloc = e->queue_alloc[x].v[s], deserved = e->tree->deserved[x].v[s];
        if (res->v[s] <= 0 || alloc <= deserved)
            continue;
        if (alloc - res->v[s] < deserved)
            return FALSE;
        frees = TRUE;
    }
    return frees;
}

/*
 * Reclaim: may the job of leaf @jq take from leaf @vq? Where their paths meet (the lowest common
 * ancestor), the victim's side must be over its share, and so must the victim's queue; every
 * queue on the victim's side must be reclaimable and the meeting point at least min_lca_depth
 * deep (the nearest over-served queues are tried first).
 */
static gboolean reclaim_pair(Evict *e, guint jq, guint vq)
{
    const KbQueueTree *t = e->tree;
    if (jq == vq || t->held[vq])
        return FALSE;
    gint lca = kb_qtree_lca(t, jq, vq);
    /* One queue above the other: a parent holds no jobs of its own to give. */
    if (lca < 0 || (guint)lca == vq || (guint)lca == jq || t->depth[lca] < e->min_lca_depth)
        return FALSE;
    gint top = kb_qtree_child_toward(t, (guint)lca, vq);
    for (gint x = (gint)vq; x >= 0 && x != lca; x = t->parent[x]) {
        if (!kb_session_node_reclaimable(e->ssn, (guint)x))
            return FALSE;
    }
    return queue_over_share(e, vq) && queue_over_share(e, (guint)top);
}

/* May the preemptor's queue take @t? Capability always, on the queue and every ancestor; for
 * reclaim, the queue must have been below its deserved share before this job started
 * (proportion's rule for one gang). */
static gboolean queue_admits(Evict *e, const KbQueueInfo *qi, const KbTaskInfo *t)
{
    for (gint x = (gint)qi->id; x >= 0; x = e->tree->parent[x]) {
        const KbResources *alloc = &e->queue_alloc[x], *cap = &e->tree->capability[x];
        for (int s = 0; s < KB_RES_MAX; s++) {
            if (t->resreq.v[s] > 0 && cap->v[s] != KB_RESOURCE_UNLIMITED &&
                alloc->v[s] + t->resreq.v[s] > cap->v[s])
                return FALSE;
        }
    }
    if (e->mode != MODE_RECLAIM)
        return TRUE;
    const KbResources *alloc = &e->queue_alloc[qi->id];
    for (guint i = 0; i < G_N_ELEMENTS(share_slots); i++) {
        int s = share_slots[i];
        gint64 before_job = alloc->v[s] - t->job->allocated.v[s] - e->job_pipelined.v[s];
        if (t->resreq.v[s] > 0 && before_job >= e->ssn->deserved[qi->id].v[s])
            return FALSE;
    }
    return TRUE;
}

/* Add (or take) @delta to queue @qi's allocation and its ancestors', undoably. */
static void queue_change(Evict *e, const KbQueueInfo *qi, const KbResources *delta, gboolean add)
{
    Undo u = {TRUE, qi->id, *delta};
    if (!add) {
        for (int s = 0; s < KB_RES_MAX; s++)
            u.delta.v[s] = -u.delta.v[s];
    }
    for (gint x = (gint)qi->id; x >= 0; x = e->tree->parent[x])
        kb_resources_add(&e->queue_alloc[x], &u.delta);
    g_array_append_val(e->undo, u);
}

/* ---- candidates ----------------------------------------------------------------------------- */

/* Could @v be a victim for @job at all (before the plugins say)? */
static gboolean in_scope(Evict *e, const KbJobInfo *job, const KbQueueInfo *jq, const KbTaskInfo *v)
{
    const KbJobInfo *vj = v->job;
    if (vj == job || !on_node(v))
        return FALSE;
    KbQueueInfo *vq = kb_session_job_queue(e->ssn, vj);
    if (vq == NULL)
        return FALSE;
    if (e->mode == MODE_PREEMPT)
        return vq == jq && vj->priority < job->priority;
    if (e->borrowed_only && !kb_plugin_proportion_borrowed(e->proportion, vj))
        return FALSE;
    return reclaim_pair(e, jq->id, vq->id);
}

/* Any victim in scope for @job anywhere? A cheap test, per queue, before building anything. */
static gboolean any_in_scope(Evict *e, const KbJobInfo *job, const KbQueueInfo *jq)
{
    if (e->mode == MODE_PREEMPT)
        return e->queue_min_prio[jq->id] < job->priority;
    for (guint q = 0; q < e->ssn->queues->len; q++) {
        if (reclaim_pair(e, jq->id, q))
            return TRUE;
    }
    return FALSE;
}

/* Fill e->allowed with the tasks the plugins let @rep's job evict. */
static void collect_allowed(Evict *e, const KbJobInfo *job, const KbQueueInfo *jq,
                            const KbTaskInfo *rep)
{
    g_autoptr(GPtrArray) cands = g_ptr_array_new();
    memo_forget_all(e);
    g_hash_table_remove_all(e->allowed);
    e->n_protected = 0;
    for (guint n = 0; n < e->ssn->n_nodes; n++) {
        GPtrArray *tasks = e->node_tasks[n];
        for (guint i = 0; tasks != NULL && i < tasks->len; i++) {
            KbTaskInfo *v = tasks->pdata[i];
            if (!in_scope(e, job, jq, v))
                continue;
            if (e->job_protected[v->job->id])
                e->n_protected++; /* not a candidate: and a whole-gang unit then cannot form */
            else
                g_ptr_array_add(cands, v);
        }
    }
    if (e->mode == MODE_PREEMPT)
        kb_session_preemptable(e->ssn, rep, cands);
    else
        kb_session_reclaimable(e->ssn, rep, cands);
    for (guint i = 0; i < cands->len; i++)
        g_hash_table_add(e->allowed, cands->pdata[i]);
}

static gboolean available(Evict *e, KbTaskInfo *t)
{
    return on_node(t) && !g_hash_table_contains(e->evicted, t) &&
           g_hash_table_contains(e->allowed, t);
}

/*
 * The unit evicting @v means: @v alone when its gang stays at minMember without it, else every
 * running member of the gang, which must all be allowed and none still being bound. FALSE when
 * no unit can be formed.
 */
static gboolean unit_for(Evict *e, KbTaskInfo *v, guint node, Unit *u)
{
    KbJobInfo *vj = v->job;
    memset(u, 0, sizeof(*u));
    u->job = vj;
    u->priority = vj->priority;
    /* A native PodGroup with disruptionMode all is disrupted whole, whatever its minimum. */
    gboolean whole = vj->group != NULL && vj->group->disruption_all;
    if (!whole && ready_tasks(vj) >= e->job_evicted[vj->id] + 1 + (guint)vj->min_member) {
        u->task = v;
        u->pods = 1;
        u->gpus = v->resreq.v[KB_RES_GPU];
        u->created = v->pod->meta.creation_timestamp;
        u->on_node = u->total = v->resreq;
        return TRUE;
    }
    if (vj->n_state[KB_TASK_ALLOCATED] + vj->n_state[KB_TASK_BINDING] > 0)
        return FALSE;
    u->created = vj->creation_timestamp;
    for (guint i = 0; i < vj->tasks->len; i++) {
        KbTaskInfo *m = vj->tasks->pdata[i];
        if (!on_node(m) || g_hash_table_contains(e->evicted, m))
            continue;
        if (!g_hash_table_contains(e->allowed, m))
            return FALSE;
        /* a preemptor held to one domain evicts nothing outside it */
        if (e->domain_key != NULL &&
            g_strcmp0(kb_session_node_domain(e->ssn, (guint)m->node_id, e->domain_key),
                      e->domain) != 0)
            return FALSE;
        u->pods++;
        u->gpus += m->resreq.v[KB_RES_GPU];
        kb_resources_add(&u->total, &m->resreq);
        if ((guint)m->node_id == node)
            kb_resources_add(&u->on_node, &m->resreq);
    }
    return u->pods > 0;
}

/* Lowest priority first, then youngest, then the fewest pods. */
static gint unit_cmp(gconstpointer x, gconstpointer y)
{
    const Unit *a = x, *b = y;
    if (a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    if (a->created != b->created)
        return a->created > b->created ? -1 : 1;
    if (a->pods != b->pods)
        return a->pods < b->pods ? -1 : 1;
    return 0;
}

/* The units on @node, one per whole gang. */
static void node_units(Evict *e, guint node)
{
    GPtrArray *tasks = e->node_tasks[node];
    g_array_set_size(e->units, 0);
    for (guint i = 0; tasks != NULL && i < tasks->len; i++) {
        KbTaskInfo *v = tasks->pdata[i];
        Unit u;
        if (!available(e, v) || !unit_for(e, v, node, &u))
            continue;
        gboolean dup = FALSE;
        for (guint k = 0; k < e->units->len && u.task == NULL && !dup; k++) {
            const Unit *o = &g_array_index(e->units, Unit, k);
            dup = o->task == NULL && o->job == u.job;
        }
        if (!dup)
            g_array_append_val(e->units, u);
    }
}

/*
 * For reclaim: can the units of @chosen plus @u leave their queues at their share? Checked on
 * the victim's queue and every ancestor up to (not including) where its path meets the
 * preemptor's: within that meeting point the resources only move between its subtrees.
 */
static gboolean floor_ok(Evict *e, GArray *chosen, const Unit *u)
{
    if (e->mode != MODE_RECLAIM)
        return TRUE;
    const KbQueueTree *t = e->tree;
    KbQueueInfo *vq = kb_session_job_queue(e->ssn, u->job);
    gint lca = kb_qtree_lca(t, e->claimer_queue, vq->id);
    for (gint x = (gint)vq->id; x >= 0 && x != lca; x = t->parent[x]) {
        KbResources res = u->total;
        for (guint k = 0; k < chosen->len; k++) {
            const Unit *c = &g_array_index(chosen, Unit, k);
            KbQueueInfo *cq = kb_session_job_queue(e->ssn, c->job);
            if (kb_qtree_is_under(t, cq->id, (guint)x))
                kb_resources_add(&res, &c->total);
        }
        if (!queue_keeps_share(e, (guint)x, &res))
            return FALSE;
    }
    return TRUE;
}

/* May @u be taken: the floors allow it beside @chosen, and fewer_victims does not leave it out. */
static gboolean may_take(Evict *e, GArray *chosen, const Unit *u)
{
    if (e->ban_job != NULL && u->job == e->ban_job && u->task == e->ban_task)
        return FALSE;
    return floor_ok(e, chosen, u);
}

static gboolean fits_with(const KbTaskInfo *t, const KbResources *idle, GArray *units, guint skip)
{
    KbResources avail = *idle;
    for (guint k = 0; k < units->len; k++) {
        if (k != skip)
            kb_resources_add(&avail, &g_array_index(units, Unit, k).on_node);
    }
    return kb_resources_fit(&t->resreq, &avail);
}

/* Most freed on the node per pod evicted first (GPUs, then cpu), then as unit_cmp. */
static gint unit_big_first(gconstpointer x, gconstpointer y)
{
    const Unit *a = x, *b = y;
    static const int order[] = {KB_RES_GPU, KB_RES_CPU};
    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
        int s = order[i];
        gint64 pa = a->on_node.v[s] * (gint64)b->pods, pb = b->on_node.v[s] * (gint64)a->pods;
        if (pa != pb)
            return pa > pb ? -1 : 1;
    }
    return unit_cmp(a, b);
}

static gboolean devices_fit(Evict *e, const KbTaskInfo *t, guint node, GArray *units);

/* Does @t fit on @node once @units but the one at @skip (G_MAXUINT: none) are evicted: by the
 * resource vector, then its DRA claims exactly (a MIG placement or a share needs the victims'
 * counters or capacity on the right GPU, which the vector does not see). */
static gboolean room_with(Evict *e, const KbTaskInfo *t, guint node, GArray *units, guint skip)
{
    if (!fits_with(t, &e->future_idle[node], units, skip))
        return FALSE;
    if (t->pod->n_resource_claims == 0)
        return TRUE;
    if (skip >= units->len)
        return devices_fit(e, t, node, units);
    Unit u = g_array_index(units, Unit, skip);
    g_array_remove_index(units, skip);
    gboolean ok = devices_fit(e, t, node, units);
    g_array_insert_val(units, skip, u);
    return ok;
}

/* Would every unit from @from on that the floors allow, added to @out, make room for @t's
 * claims? Spares the unit-by-unit exact checks when even all of them would not. */
static gboolean all_make_room(Evict *e, const KbTaskInfo *t, guint node, GArray *out, guint from)
{
    guint had = out->len;
    for (guint k = from; k < e->units->len; k++) {
        const Unit *u = &g_array_index(e->units, Unit, k);
        if (may_take(e, out, u))
            g_array_append_val(out, *u);
    }
    gboolean ok = devices_fit(e, t, node, out);
    g_array_set_size(out, had);
    return ok;
}

/* Take e->units in @cmp order until @t fits (its claims exactly too), then give back what is not
 * needed after all (the last taken first). FALSE when even all of them leave no room. */
static gboolean choose_in_order(Evict *e, const KbTaskInfo *t, guint node, GCompareFunc cmp,
                                GArray *out)
{
    const KbResources *idle = &e->future_idle[node];
    g_array_sort(e->units, cmp);
    g_array_set_size(out, 0);
    guint k = 0;
    for (; k < e->units->len && !fits_with(t, idle, out, G_MAXUINT); k++) {
        const Unit *u = &g_array_index(e->units, Unit, k);
        if (may_take(e, out, u))
            g_array_append_val(out, *u);
    }
    if (!fits_with(t, idle, out, G_MAXUINT))
        return FALSE;
    /* the vector fits; the claims may need more of the node's victims */
    if (t->pod->n_resource_claims > 0 && !devices_fit(e, t, node, out)) {
        if (!all_make_room(e, t, node, out, k))
            return FALSE;
        for (; k < e->units->len && !devices_fit(e, t, node, out); k++) {
            const Unit *u = &g_array_index(e->units, Unit, k);
            if (may_take(e, out, u))
                g_array_append_val(out, *u);
        }
    }
    for (guint r = out->len; r-- > 0;) {
        if (room_with(e, t, node, out, r))
            g_array_remove_index(out, r);
    }
    return TRUE;
}

typedef struct {
    guint pods;
    gint64 gpus;
    gint32 prio;   /* highest priority evicted */
    gint64 oldest; /* creation time of the oldest unit evicted */
} Cost;

static Cost cost_of(GArray *units)
{
    Cost c = {0, 0, G_MININT32, G_MAXINT64};
    for (guint k = 0; k < units->len; k++) {
        const Unit *u = &g_array_index(units, Unit, k);
        c.pods += u->pods;
        c.gpus += u->gpus;
        c.prio = MAX(c.prio, u->priority);
        c.oldest = MIN(c.oldest, u->created);
    }
    return c;
}

/* Fewest pods, then fewest GPUs, then the lowest priority, then the youngest evicted. */
static gboolean cheaper(Cost a, Cost b)
{
    if (a.pods != b.pods)
        return a.pods < b.pods;
    if (a.gpus != b.gpus)
        return a.gpus < b.gpus;
    if (a.prio != b.prio)
        return a.prio < b.prio;
    return a.oldest > b.oldest;
}

static void swap_arrays(GArray **a, GArray **b)
{
    GArray *tmp = *a;
    *a = *b;
    *b = tmp;
}

/* Units of e->chosen fewer_victims leaves out, one at a time (a MIG GPU has 7 slices). */
#define FEWER_TRIES 8

/*
 * For a preemptor with claims, e->chosen made cheaper where it can be: the greedy orders free
 * the devices of whichever placement their victims reach first (the four 1g.10gb pods under a
 * 3g.40gb placement at memory slice 0 where the three at slice 4 would do, which the resource
 * vector cannot tell apart). Each chosen unit in turn is left out and both orders run again;
 * the cheapest set (cost_of) stays. Every set is minimal (choose_in_order gives back what is
 * not needed), so no victim the placement does not need is taken.
 */
static void fewer_victims(Evict *e, const KbTaskInfo *t, guint node)
{
    guint n = MIN(e->chosen->len, FEWER_TRIES);
    if (n < 2)
        return;
    Unit base[FEWER_TRIES];
    memcpy(base, e->chosen->data, n * sizeof(Unit));
    static const GCompareFunc orders[] = {unit_cmp, unit_big_first};
    for (guint i = 0; i < n; i++) {
        e->ban_job = base[i].job;
        e->ban_task = base[i].task;
        for (guint o = 0; o < G_N_ELEMENTS(orders); o++) {
            if (choose_in_order(e, t, node, orders[o], e->alt) &&
                cheaper(cost_of(e->alt), cost_of(e->chosen)))
                swap_arrays(&e->chosen, &e->alt);
        }
    }
    e->ban_job = NULL;
    e->ban_task = NULL;
}

/* ---- the node memo (see NodeMemo) ------------------------------------------------------------ */

/* The entry for @t on @node, or NULL when the memo does not serve @t: its claims are checked
 * against the victims' devices (and fewer_victims weighs sets the vector cannot tell apart). */
static NodeMemo *memo_entry(Evict *e, const KbTaskInfo *t, guint node)
{
    if (e->memo == NULL || t->pod->n_resource_claims > 0)
        return NULL;
    if (!kb_resources_equal(&t->resreq, &e->memo_shape)) {
        memo_forget_all(e);
        e->memo_shape = t->resreq;
    }
    return &e->memo[node];
}

static guint8 share_mask(const KbResources *r)
{
    guint8 m = 0;
    for (guint i = 0; i < G_N_ELEMENTS(share_slots); i++) {
        if (r->v[share_slots[i]] > 0)
            m |= (guint8)(1u << i);
    }
    return m;
}

/* Into @floors (Floor), for the units in e->units: per tree node floor_ok checks for any of them
 * (from its queue up to, not including, where it meets the preemptor's), what they all free
 * there together and which share slots each frees. Nothing for preempt (no floors). */
static void memo_floors(Evict *e, GArray *floors)
{
    g_array_set_size(floors, 0);
    if (e->mode != MODE_RECLAIM)
        return;
    for (guint k = 0; k < e->units->len; k++) {
        const Unit *u = &g_array_index(e->units, Unit, k);
        const KbQueueInfo *vq = kb_session_job_queue(e->ssn, u->job);
        gint lca = kb_qtree_lca(e->tree, e->claimer_queue, vq->id);
        for (gint x = (gint)vq->id; x >= 0 && x != lca; x = e->tree->parent[x]) {
            Floor *f = NULL;
            for (guint i = 0; i < floors->len && f == NULL; i++) {
                if (g_array_index(floors, Floor, i).x == (guint)x)
                    f = &g_array_index(floors, Floor, i);
            }
            if (f == NULL) {
                Floor nf = {.x = (guint)x};
                g_array_append_val(floors, nf);
                f = &g_array_index(floors, Floor, floors->len - 1);
            }
            kb_resources_add(&f->res, &u->total);
            f->masks |= (guint8)(1u << share_mask(&u->total));
        }
    }
}

/*
 * Can the floors refuse none of the units @floors sums, whichever of them are taken together?
 * Each queue keeps its share in every slot it uses beyond it after all of them go, and every
 * unit frees some such slot: then queue_keeps_share holds for any set of them, and floor_ok
 * never says no.
 */
static gboolean floors_slack(const Evict *e, GArray *floors)
{
    for (guint i = 0; i < floors->len; i++) {
        const Floor *f = &g_array_index(floors, Floor, i);
        guint over = 0;
        for (guint k = 0; k < G_N_ELEMENTS(share_slots); k++) {
            int s = share_slots[k];
            gint64 alloc = e->queue_alloc[f->x].v[s], deserved = e->tree->deserved[f->x].v[s];
            if (alloc <= deserved)
                continue;
            if (alloc - f->res.v[s] < deserved)
                return FALSE;
            over |= 1u << k;
        }
        for (guint m = 0; m < 8; m++) {
            if ((f->masks & (1u << m)) != 0 && (m & over) == 0)
                return FALSE;
        }
    }
    return TRUE;
}

/* Keep choose_on_node's answer @ok (e->chosen, e->units as it found them) when the floors had no
 * say in it. A failure then stays one while the node does not change (not all the node's units
 * together make room), a choice while the floors still have no say (checked at use). */
static void memo_store(Evict *e, NodeMemo *m, gboolean ok)
{
    if (m->floors == NULL) {
        m->floors = g_array_new(FALSE, FALSE, sizeof(Floor));
        m->chosen = g_array_new(FALSE, FALSE, sizeof(Unit));
    }
    memo_floors(e, m->floors);
    m->gen = floors_slack(e, m->floors) ? e->memo_gen : 0;
    m->ok = ok;
    g_array_set_size(m->chosen, 0);
    if (ok)
        g_array_append_vals(m->chosen, e->chosen->data, e->chosen->len);
}

/* The memo's answer for @m into e->chosen, when it has one. */
static gboolean memo_recall(Evict *e, const NodeMemo *m, gboolean *ok)
{
    if (m == NULL || m->gen != e->memo_gen || (m->ok && !floors_slack(e, m->floors)))
        return FALSE;
    g_array_set_size(e->chosen, 0);
    if (m->ok)
        g_array_append_vals(e->chosen, m->chosen->data, m->chosen->len);
    *ok = m->ok;
    e->memo_hits++;
    return TRUE;
}

/*
 * Choose the victims on @node for @t into e->chosen; FALSE when evicting cannot make room. Two
 * greedy orders (lowest priority and youngest first; largest first) and the cheaper result; for
 * a preemptor with claims, fewer_victims then. The node memo answers when it can.
 */
static gboolean choose_on_node(Evict *e, const KbTaskInfo *t, guint node)
{
    NodeMemo *m = memo_entry(e, t, node);
    gboolean ok;
    if (memo_recall(e, m, &ok))
        return ok;
    node_units(e, node);
    gboolean a = choose_in_order(e, t, node, unit_cmp, e->chosen);
    gboolean b = choose_in_order(e, t, node, unit_big_first, e->alt);
    if (b && (!a || cheaper(cost_of(e->alt), cost_of(e->chosen))))
        swap_arrays(&e->chosen, &e->alt);
    if ((a || b) && t->pod->n_resource_claims > 0)
        fewer_victims(e, t, node);
    if (m != NULL)
        memo_store(e, m, a || b);
    return a || b;
}

/* The static predicates: @t's devices are checked once its victims are known (devices_fit). */
static gboolean node_usable(Evict *e, const KbTaskInfo *t, guint node)
{
    const KbNodeInfo *ni = &e->ssn->nodes[node];
    return ni->present && kb_resources_fit(&t->resreq, &ni->allocatable) &&
           (e->domain_key == NULL ||
            g_strcmp0(kb_session_node_domain(e->ssn, node, e->domain_key), e->domain) == 0) &&
           kb_session_node_predicate(e->ssn, t, ni, NULL);
}

/* The victims of @units (KbTaskInfo*, not yet evicted in the statement) into @out. */
static void units_tasks(Evict *e, GArray *units, GPtrArray *out)
{
    for (guint k = 0; k < units->len; k++) {
        const Unit *u = &g_array_index(units, Unit, k);
        for (guint i = 0; i < (u->task != NULL ? 1 : u->job->tasks->len); i++) {
            KbTaskInfo *m = u->task != NULL ? u->task : u->job->tasks->pdata[i];
            if (on_node(m) && !g_hash_table_contains(e->evicted, m))
                g_ptr_array_add(out, m);
        }
    }
}

/* Do @t's DRA claims fit on @node once @units (may be NULL) are evicted, the devices of their
 * claims free? The resource vector counted devices; this is the exact check (kb_dra_fits). */
static gboolean devices_fit(Evict *e, const KbTaskInfo *t, guint node, GArray *units)
{
    if (t->pod->n_resource_claims == 0)
        return TRUE;
    g_autoptr(GPtrArray) victims = g_ptr_array_new();
    if (units != NULL)
        units_tasks(e, units, victims);
    for (guint i = 0; i < victims->len; i++)
        kb_dra_plan_evict(e->dra, ((KbTaskInfo *)victims->pdata[i])->pod, TRUE);
    gboolean ok = kb_dra_fits(e->dra, t->pod, e->ssn->nodes[node].name, NULL, NULL);
    for (guint i = 0; i < victims->len; i++)
        kb_dra_plan_evict(e->dra, ((KbTaskInfo *)victims->pdata[i])->pod, FALSE);
    return ok;
}

/* The node whose victims for @t cost least (into e->best), or -1. */
static gint best_node(Evict *e, const KbTaskInfo *t)
{
    gint best = -1;
    Cost bc = {0, 0, 0, 0};
    for (guint n = 0; n < e->ssn->n_nodes; n++) {
        if (e->node_tasks[n] == NULL || !node_usable(e, t, n) || !choose_on_node(e, t, n) ||
            !devices_fit(e, t, n, e->chosen))
            continue;
        Cost c = cost_of(e->chosen);
        if (best < 0 || cheaper(c, bc)) {
            best = (gint)n;
            bc = c;
            swap_arrays(&e->best, &e->chosen);
        }
    }
    return best;
}

/* A node where @t fits on future idle resources without evicting anything, or -1. */
static gint free_node(Evict *e, const KbTaskInfo *t)
{
    for (guint n = 0; n < e->ssn->n_nodes; n++) {
        if (kb_resources_fit(&t->resreq, &e->future_idle[n]) && node_usable(e, t, n) &&
            devices_fit(e, t, n, NULL))
            return (gint)n;
    }
    return -1;
}

/* ---- statement ------------------------------------------------------------------------------ */

static void idle_change(Evict *e, guint node, const KbResources *delta, gboolean add)
{
    Undo u = {FALSE, node, *delta};
    memo_forget_node(e, (gint)node);
    if (add) {
        kb_resources_add(&e->future_idle[node], delta);
    } else {
        kb_resources_sub(&e->future_idle[node], delta);
        for (int s = 0; s < KB_RES_MAX; s++)
            u.delta.v[s] = -u.delta.v[s];
    }
    g_array_append_val(e->undo, u);
}

static void evict_task(Evict *e, KbTaskInfo *v)
{
    memo_forget_job(e, v->job);
    g_hash_table_add(e->evicted, v);
    g_ptr_array_add(e->victims, v);
    kb_dra_plan_evict(e->dra, v->pod, TRUE);
    e->job_evicted[v->job->id]++;
    idle_change(e, (guint)v->node_id, &v->resreq, TRUE);
    KbQueueInfo *vq = kb_session_job_queue(e->ssn, v->job);
    if (vq != NULL)
        queue_change(e, vq, &v->resreq, FALSE);
}

static void evict_unit(Evict *e, const Unit *u)
{
    if (u->task != NULL) {
        evict_task(e, u->task);
        return;
    }
    for (guint i = 0; i < u->job->tasks->len; i++) {
        KbTaskInfo *m = u->job->tasks->pdata[i];
        if (on_node(m) && !g_hash_table_contains(e->evicted, m))
            evict_task(e, m);
    }
}

static void stmt_reset(Evict *e)
{
    /* A discarded statement's preemptor holds nothing (a committed one's holds moved to
     * dra_kept); the preemptor binds in a later cycle, once its victims are gone. */
    for (guint i = 0; i < e->dra_held->len; i++)
        kb_dra_release(e->dra, ((KbTaskInfo *)e->dra_held->pdata[i])->pod->meta.uid);
    g_ptr_array_set_size(e->dra_held, 0);
    for (guint i = 0; i < e->victims->len; i++)
        e->job_evicted[((KbTaskInfo *)e->victims->pdata[i])->job->id] = 0;
    memo_forget_all(e);
    g_array_set_size(e->undo, 0);
    g_hash_table_remove_all(e->evicted);
    g_ptr_array_set_size(e->victims, 0);
    kb_resources_clear(&e->job_pipelined);
}

static void discard(Evict *e)
{
    for (guint i = 0; i < e->victims->len; i++)
        kb_dra_plan_evict(e->dra, ((KbTaskInfo *)e->victims->pdata[i])->pod, FALSE);
    for (guint i = e->undo->len; i-- > 0;) {
        const Undo *u = &g_array_index(e->undo, Undo, i);
        if (!u->queue) {
            kb_resources_sub(&e->future_idle[u->id], &u->delta);
            continue;
        }
        for (gint x = (gint)u->id; x >= 0; x = e->tree->parent[x])
            kb_resources_sub(&e->queue_alloc[x], &u->delta);
    }
    stmt_reset(e);
}

/*
 * The victim jobs of the statement whose native PodGroup is taken whole (disruptionMode all, or
 * every member on a node): those groups are "about to be terminated" (the API's DisruptionTarget).
 * A set of KbJobInfo*, borrowed; call before the victims are marked evicted.
 */
static GHashTable *disrupted_groups(const Evict *e)
{
    GHashTable *set = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < e->victims->len; i++) {
        const KbTaskInfo *v = e->victims->pdata[i];
        const KbJobInfo *vj = v->job;
        /* A CompositePodGroup's condition is not written yet (status-writer.c). */
        if (vj->group == NULL || vj->group->dialect != KB_PODGROUP_NATIVE || vj->group->composite)
            continue;
        guint on_nodes = vj->n_state[KB_TASK_BOUND] + vj->n_state[KB_TASK_RUNNING];
        if (vj->group->disruption_all || e->job_evicted[vj->id] >= on_nodes)
            g_hash_table_add(set, (gpointer)vj);
    }
    return set;
}

static void commit(Evict *e, KbJobInfo *job, const KbQueueInfo *jq, GPtrArray *placed)
{
    KbSession *ssn = e->ssn;
    gboolean pre = e->mode == MODE_PREEMPT;
    const char *reason = pre ? "Preempted" : "Reclaimed";
    g_autofree char *msg =
            pre ? g_strdup_printf("preempted by job %s (priority %d) in queue \"%s\"", job->key,
                                  job->priority, jq->name)
                : g_strdup_printf(
                          "reclaimed by queue \"%s\" (below its deserved share) for job %s%s",
                          jq->name, job->key,
                          e->borrowed_only ? "; the job ran past its queue's long-job "
                                             "limit on idle GPUs"
                                           : "");
    g_autoptr(GHashTable) disrupted = disrupted_groups(e);
    for (guint i = 0; i < e->victims->len; i++) {
        KbTaskInfo *v = e->victims->pdata[i];
        if (e->job_evicted[v->job->id] > 0) {
            kb_cache_job_evicted(ssn->cache, v->job, ssn->now); /* once per victim job */
            e->job_evicted[v->job->id] = 0;
        }
        KbEviction ev = {kb_object_ref(v->pod), reason, g_strdup(msg), g_strdup(v->job->key),
                         g_strdup(job->key),    NULL};
        if (g_hash_table_contains(disrupted, v->job))
            ev.disrupted_group = kb_object_ref(v->job->group);
        g_array_append_val(ssn->result->evictions, ev);
        KbSchedEvent sev = {
                kb_object_ref(&v->pod->meta), "v1", "Pod", "Normal", reason, g_strdup(msg)};
        g_array_append_val(ssn->result->events, sev);
        kb_cache_evict_task(ssn->cache, v);
    }
    for (guint i = 0; i < placed->len; i += 2) {
        const KbTaskInfo *t = placed->pdata[i];
        guint node = GPOINTER_TO_UINT(placed->pdata[i + 1]);
        kb_resources_add(&ssn->pipelined[node], &t->resreq);
    }
    guint n = placed->len / 2;
    ssn->job_scratch[job->id].n_pipelined = n;
    if (job->phase == KB_JOB_PENDING)
        job->phase = KB_JOB_INQUEUE; /* admitted: enqueue keeps its room from others */
    /* The same text every cycle until the job starts: the status is not rewritten meanwhile. */
    kb_session_job_note(ssn, job, "NotEnoughResources",
                        "%u/%d tasks placeable once evicted pods terminate", ready_tasks(job) + n,
                        job->min_member);
    /* the victims' devices, counters and capacity stay free in the plan until the action ends:
     * the preemptor keeps what it took of them, so no later preemptor is given them again */
    for (guint i = 0; i < e->dra_held->len; i++)
        g_ptr_array_add(e->dra_kept, e->dra_held->pdata[i]);
    g_ptr_array_set_size(e->dra_held, 0);
    stmt_reset(e);
}

/* ---- one preemptor job ---------------------------------------------------------------------- */

static gint task_cmp(gconstpointer x, gconstpointer y, gpointer data)
{
    return kb_session_task_order(data, *(KbTaskInfo *const *)x, *(KbTaskInfo *const *)y);
}

/* Room for @t: future idle resources, else the cheapest victims. FALSE when there is none. */
static gboolean place_task(Evict *e, KbTaskInfo *t, const KbQueueInfo *jq, GPtrArray *placed)
{
    if (!queue_admits(e, jq, t))
        return FALSE;
    gint node = free_node(e, t);
    if (node < 0) {
        node = best_node(e, t);
        if (node < 0)
            return FALSE;
        for (guint k = 0; k < e->best->len; k++)
            evict_unit(e, &g_array_index(e->best, Unit, k));
    }
    /* The victims' devices are free in the plan: hold the preemptor's, so that the gang's next
     * member does not count them again. */
    if (t->pod->n_resource_claims > 0) {
        if (!kb_dra_assume(e->dra, t->pod, e->ssn->nodes[node].name))
            return FALSE;
        g_ptr_array_add(e->dra_held, t);
    }
    idle_change(e, (guint)node, &t->resreq, FALSE);
    queue_change(e, jq, &t->resreq, TRUE);
    kb_resources_add(&e->job_pipelined, &t->resreq);
    g_ptr_array_add(placed, t);
    g_ptr_array_add(placed, GUINT_TO_POINTER((guint)node));
    return TRUE;
}

static const char *job_priority_class(const KbJobInfo *job)
{
    if (job->group != NULL && job->group->priority_class_name != NULL)
        return job->group->priority_class_name;
    for (guint i = 0; i < job->tasks->len; i++) {
        const KbTaskInfo *t = job->tasks->pdata[i];
        if (t->pod->priority_class_name != NULL)
            return t->pod->priority_class_name;
    }
    return NULL;
}

/* Is @job a gang waiting for room that this action may evict for? */
static gboolean starving(Evict *e, KbJobInfo *job)
{
    KbSession *ssn = e->ssn;
    const KbJobScratch *js = &ssn->job_scratch[job->id];
    if (!js->ready_to_schedule || js->n_pipelined > 0 || job->n_state[KB_TASK_PENDING] == 0 ||
        ready_tasks(job) >= (guint)job->min_member || job->phase == KB_JOB_COMPLETED)
        return FALSE;
    /* preemptionPolicy: Never forbids evicting anything for the job (either action); a native
     * PodGroup says so itself. */
    if (job->group != NULL && job->group->preempt_never)
        return FALSE;
    return !kb_cache_priority_class_preempt_never(ssn->cache, job_priority_class(job));
}

/* "10m", "1h30m", "45s": newly allocated. */
static char *duration_text(gint64 secs)
{
    GString *s = g_string_new(NULL);
    if (secs >= 3600)
        g_string_append_printf(s, "%" G_GINT64_FORMAT "h", secs / 3600);
    if (secs % 3600 >= 60)
        g_string_append_printf(s, "%" G_GINT64_FORMAT "m", secs % 3600 / 60);
    if (secs % 60 != 0 || secs == 0)
        g_string_append_printf(s, "%" G_GINT64_FORMAT "s", secs % 60);
    return g_string_free(s, FALSE);
}

/*
 * @job waits although evicting jobs that started recently would have made room: say so after
 * what allocate already noted. The text does not count down, so the status is not rewritten
 * every cycle while the job waits.
 */
static void note_protected(Evict *e, const KbJobInfo *job)
{
    g_autofree char *min = duration_text(e->min_run);
    g_autofree char *why = g_strdup_printf("victims protected: running less than %s%s", min,
                                           e->backoff ? " (doubled per earlier eviction)" : "");
    GString *msg = e->ssn->job_scratch[job->id].message;
    if (msg == NULL)
        kb_session_job_note(e->ssn, job, "NotEnoughResources", "%s", why);
    else if (strstr(msg->str, why) == NULL)
        g_string_append_printf(msg, "; %s", why);
}

/* One statement for @job's first @need tasks; TRUE when it was committed. */
static gboolean try_statement(Evict *e, KbJobInfo *job, KbQueueInfo *jq, GPtrArray *tasks,
                              guint need, guint *n_protected)
{
    collect_allowed(e, job, jq, tasks->pdata[0]);
    *n_protected += e->n_protected;
    g_autoptr(GPtrArray) placed = g_ptr_array_new(); /* task, node, task, node, ... */
    for (guint i = 0; i < need; i++) {
        if (!place_task(e, tasks->pdata[i], jq, placed)) {
            discard(e);
            return FALSE;
        }
    }
    commit(e, job, jq, placed);
    return TRUE;
}

/*
 * A statement per domain of the preemptor's topology key, in turn (the first where the whole
 * minimum finds room wins): no gang is placed, and nothing evicted, across two domains. Without
 * a key, one statement.
 */
static gboolean try_domains(Evict *e, KbJobInfo *job, KbQueueInfo *jq, GPtrArray *tasks, guint need,
                            guint *n_protected)
{
    const char *key = job->group != NULL ? job->group->topology_key : NULL;
    if (key == NULL)
        return try_statement(e, job, jq, tasks, need, n_protected);
    g_autoptr(GPtrArray) domains = kb_session_job_domains(e->ssn, job, key);
    gboolean ok = FALSE;
    e->domain_key = key;
    for (guint d = 0; d < domains->len && !ok; d++) {
        e->domain = domains->pdata[d];
        ok = try_statement(e, job, jq, tasks, need, n_protected);
    }
    e->domain_key = e->domain = NULL;
    return ok;
}

/*
 * Preempt: one statement (one per topology domain, see try_domains). Reclaim: the nearest
 * over-served queues first, i.e. with victims only from queues meeting the job's as deep in the
 * tree as possible (its siblings, then its parent's siblings' subtrees, ...) and widening one
 * level at a time up to the root.
 */
static void evict_for_job(Evict *e, KbJobInfo *job)
{
    KbSession *ssn = e->ssn;
    KbQueueInfo *jq = kb_session_job_queue(ssn, job);
    e->min_lca_depth = 0;
    if (jq == NULL || !any_in_scope(e, job, jq))
        return;
    g_autoptr(GPtrArray) tasks = g_ptr_array_new();
    for (guint i = 0; i < job->tasks->len; i++) {
        KbTaskInfo *t = job->tasks->pdata[i];
        if (t->state == KB_TASK_PENDING && !t->held)
            g_ptr_array_add(tasks, t);
    }
    g_ptr_array_sort_with_data(tasks, task_cmp, ssn);
    guint need = (guint)job->min_member - ready_tasks(job);
    if (need > tasks->len)
        return;
    e->claimer_queue = jq->id;
    guint n_protected = 0;
    guint depth = e->mode == MODE_RECLAIM ? e->tree->depth[jq->id] : 1;
    for (guint level = depth; level-- > 0;) {
        e->min_lca_depth = level;
        if (level > 0 && !any_in_scope(e, job, jq))
            continue;
        if (try_domains(e, job, jq, tasks, need, &n_protected))
            return;
    }
    if (n_protected > 0)
        note_protected(e, job);
}

static gint job_cmp(gconstpointer x, gconstpointer y, gpointer data)
{
    return kb_session_job_order(data, *(KbJobInfo *const *)x, *(KbJobInfo *const *)y);
}

static void evict_execute(KbSession *ssn, Mode mode)
{
    Evict e = {0};
    g_autoptr(GPtrArray) jobs = g_ptr_array_new();
    for (guint j = 0; j < ssn->jobs->len; j++) {
        KbJobInfo *job = ssn->jobs->pdata[j];
        const KbJobScratch *js = &ssn->job_scratch[job->id];
        if (js->ready_to_schedule && js->n_pipelined == 0 && job->n_state[KB_TASK_PENDING] > 0 &&
            ready_tasks(job) < (guint)job->min_member)
            g_ptr_array_add(jobs, job);
    }
    /* Most cycles of the default have nothing borrowed, hence nothing to reclaim. */
    if (jobs->len == 0 ||
        (borrowed_only(ssn->conf, mode) &&
         kb_plugin_proportion_n_borrowed(kb_session_plugin_state(ssn, "proportion")) == 0))
        return;
    g_ptr_array_sort_with_data(jobs, job_cmp, ssn);
    evict_init(&e, ssn, mode);
    for (guint j = 0; j < jobs->len; j++) {
        KbJobInfo *job = jobs->pdata[j];
        if (starving(&e, job))
            evict_for_job(&e, job);
    }
    evict_clear(&e);
}

static void preempt_execute(KbSession *ssn)
{
    evict_execute(ssn, MODE_PREEMPT);
}

static void reclaim_execute(KbSession *ssn)
{
    evict_execute(ssn, MODE_RECLAIM);
}

const struct kb_action_ops kb_action_preempt = {
        .name = "preempt",
        .execute = preempt_execute,
};

const struct kb_action_ops kb_action_reclaim = {
        .name = "reclaim",
        .execute = reclaim_execute,
};

void kb_preempt_set_memo(gboolean on)
{
    memo_enabled = on;
}

guint64 kb_preempt_memo_hits(void)
{
    return (guint64)g_atomic_pointer_get(&memo_hits_total);
}
