/*
 * proportion: queues share the cluster by weight through the queue tree (scheduler/queue-tree.h;
 * queues without a parent hang under its root, so a flat setup is a tree of depth one). The tree
 * water-fills each parent's deserved share over its children by weight (cpu, memory and
 * nvidia.com/gpu), capped by capability and by what they ask for (allocated + pending), floored
 * at their guarantee. The leaves' results are the queues' deserved shares (session->deserved):
 *   queue order  where two queues' paths meet, the less served subtree goes first, then the
 *                queue with the smaller allocated/deserved;
 *   overused     a queue whose allocation reached its deserved share in every resource it asks
 *                for gets nothing new;
 *   allocatable  a task fits its queue only if allocated + request stays within deserved, and
 *                within the capability of the queue and of every ancestor;
 *   enqueue      a job is admitted only if its minimum resources fit what is left of the share
 *                after the jobs already admitted (Inqueue) are counted, and the capability of the
 *                queue and of every ancestor.
 *
 * Long jobs (arguments longRuntime, a Go duration, default 6h, and longBorrowLimit, a number,
 * default 3; 0: off): a job expected to run longer than longRuntime (the estimate of the
 * reserve action: annotation, queue history, activeDeadlineSeconds; a job without one is not
 * limited), is admitted and started
 * only while its queue, with it, holds at most longBorrowLimit times its GPU share by weight (each
 * level's part by weight down the tree, every queue counted, asking or not), or its guarantee if
 * that is more; a gang larger than that limit may start when its queue holds no GPU. With the
 * reclaim action configured there is no limit (what a queue borrows comes back), unless reclaim
 * has borrowedLongJobsOnly (the built-in default since round 7): then past its queue's limit a
 * long job borrows idle GPUs within longClusterLimit (a queue reclaim may not take from keeps the
 * limit alone), and reclaim takes back only such jobs, for queues below their deserved share,
 * youngest first (mark_borrowed(); the marks are made from the jobs' start times, so they
 * survive a restart or a new leader). Without preemption, GPUs a queue borrows stay
 * taken until its jobs end: queues that asked while the others were quiet filled the cluster with
 * jobs of days, and every job of every other queue then waited for them (measured on the Philly
 * slices, docs/benchmarks.md, "The default against kube-batch"); given back on demand, they beat
 * kube-batch on 18 of 21 held-out slices instead of 11 ("Policy quality, round 7").
 *
 * Past its queue's limit (argument longEarnedShare, default 1; 0: off), a long job may start only
 * within the share its queue's other demand earns: the deserved share computed without the long
 * jobs past their queues' limits, which the other queues' shares then get (mark_past(),
 * earned_room()); and (argument longClusterLimit, a part of the cluster's GPUs, default 0.85; 0:
 * off) while every long job of the cluster, with it, holds at most that part of the GPUs (Slurm's
 * long QOS: the rest stays for the jobs that come). Such a job gets no reservation of the reserve
 * action while it is past the limit (its queue's share, without it, does not hold it; judged with
 * it counted, the reservations kept nodes idle for jobs of days: docs/benchmarks.md, "Policy
 * quality, round 6"). With longEarnedShare 0 the cap alone lets a long job past its queue's limit
 * start, and with longHeldDemand 0 (default 1: counted) a long job held by either does not count
 * in its queue's demand: see discount_held_long. longEarnedShare and longClusterLimit 0: the limit
 * alone, the default before round 6.
 *
 * Lending (argument lendUntilReservation, default 1; 0: off): while a reservation of the reserve
 * action keeps GPUs free until a start still to come, a job of a queue at or over its deserved
 * share may be admitted and placed if it is expected to end by the earliest such start (lent()).
 *
 * Usage (arguments usageHalfLife, a Go duration, and usageWeight, a number >= 0, default 0): with
 * a half-life every cycle adds what each queue held since the last cycle to its decayed usage
 * (scheduler/usage.h, kept by the cache). With a weight k > 0 each queue's weight in the
 * water-filling becomes w / (1 + k r), r being its part of its parent's decayed usage (rolled up
 * the tree; the largest over cpu, memory and GPUs) over its part of the siblings' weights: a
 * queue that used its share (r = 1) keeps its place among siblings that did too, one that used
 * twice its share counts as less weight, one that used nothing keeps its weight. The deserved
 * shares move with it, and so does everything that reads them: queue order, overused,
 * allocatable, enqueue, the reserve action's share check and reclaim. k = 0: as before.
 */
#include "policies/plugin.h"

#include "scheduler/reserve.h"

static const int slots[] = {KB_RES_CPU, KB_RES_MEMORY, KB_RES_GPU};
#define N_SLOTS G_N_ELEMENTS(slots)

typedef struct {
    KbSession *ssn;
    KbQueueTree *tree;
    KbResources *inqueue;  /* per tree node: reserved by admitted jobs not yet running */
    double *weight;        /* per tree node: the configured weight (usage may lower the tree's) */
    gint64 long_runtime;   /* seconds; jobs expected to run longer are long */
    double long_limit;     /* times the share by weight a queue may hold with a long job; 0: off */
    double long_idle;      /* no limit while this many times it stays idle after the job; 0: off */
    gboolean lend;         /* lendUntilReservation: see lent() */
    double long_cluster;   /* longClusterLimit: part of the GPUs long jobs may hold; 0: off */
    gint64 long_held;      /* GPUs long jobs hold in the session, -1 until needed */
    gboolean earned;       /* longEarnedShare: see earned_room() */
    guint8 *past;          /* per job id (earned only): waiting past its queue's limit at open */
    guint *n_past;         /* per queue: jobs marked in past */
    KbResources *open;     /* per queue (earned only): allocated when the session opened */
    KbResources *started;  /* per queue: what its past jobs took this session (on_allocate) */
    KbResources *past_inq; /* per queue: what its past jobs admitted this session reserve */
    gboolean borrow;       /* reclaim's borrowedLongJobsOnly: see mark_borrowed() */
    guint8 *borrowed;      /* per job id (borrow only): a long job run past its queue's limit */
    guint n_borrowed;      /* jobs marked in borrowed */
    gint8 over_limit;      /* borrow only: some queue holds more GPUs than its long-job limit; -1:
                            * not known yet (borrowed_marks()) */
} Proportion;

/* Decayed usage of every tree node: the leaves' own (and a parent's own jobs') rolled up. */
static void node_usage(KbSession *ssn, const KbUsage *usage, double *u)
{
    KbQueueTree *t = ssn->qtree;
    for (guint q = 0; q < ssn->queues->len; q++) {
        const KbQueueInfo *qi = ssn->queues->pdata[q];
        for (guint i = 0; i < N_SLOTS; i++)
            u[(gsize)q * N_SLOTS + i] = kb_usage_get(usage, qi->name, slots[i]);
    }
    for (guint k = t->n_order; k-- > 1;) {
        guint x = t->order[k];
        gint par = t->parent[x];
        if (par < 0)
            continue;
        for (guint i = 0; i < N_SLOTS; i++)
            u[(gsize)par * N_SLOTS + i] += u[(gsize)x * N_SLOTS + i];
    }
}

/* Weights lowered by decayed usage (see the top of the file). */
static void weigh_usage(KbSession *ssn, const KbUsage *usage, double strength)
{
    KbQueueTree *t = ssn->qtree;
    g_autofree double *u = g_new0(double, (gsize)(t->n_queues + 1) * N_SLOTS);
    node_usage(ssn, usage, u);
    g_autofree double *w = g_memdup2(t->weight, sizeof(double) * (t->n_queues + 1));
    for (guint k = 1; k < t->n_order; k++) {
        guint x = t->order[k];
        gint par = t->parent[x];
        if (par < 0)
            continue;
        double sum = 0;
        for (gint c = t->first_child[par]; c >= 0; c = t->next_sibling[c])
            if (!t->held[c])
                sum += w[c];
        double r = 0;
        for (guint i = 0; i < N_SLOTS && sum > 0; i++) {
            double up = u[(gsize)par * N_SLOTS + i];
            if (up > 0)
                r = MAX(r, u[(gsize)x * N_SLOTS + i] / up / (w[x] / sum));
        }
        t->weight[x] = w[x] / (1 + strength * r);
    }
}

/* Deserved shares from the queue tree (a flat setup is a tree of depth one). */
static void compute_deserved(KbSession *ssn)
{
    KbQueueTree *t = ssn->qtree;
    kb_qtree_compute(t, &ssn->total);
    for (guint q = 0; q < ssn->queues->len; q++)
        ssn->deserved[q] = t->deserved[q];
}

/* Reserve @need (cpu, memory, GPUs) for an admitted job of queue @q and its ancestors. */
static void inqueue_add(Proportion *p, guint q, const KbResources *need)
{
    for (gint x = (gint)q; x >= 0; x = p->tree->parent[x]) {
        for (guint i = 0; i < N_SLOTS; i++)
            p->inqueue[x].v[slots[i]] += need->v[slots[i]];
    }
}

/* Add what each queue held since the last cycle to its decayed usage; then, with a weight, lower
 * the tree's weights by it. */
static void account_usage(KbSession *ssn, const KbConfPlugin *conf)
{
    gint64 half_life = kb_conf_arg_duration(conf, "usageHalfLife", 0);
    if (ssn->cache == NULL || half_life <= 0)
        return;
    KbUsage *usage = kb_cache_usage(ssn->cache);
    for (guint q = 0; q < ssn->queues->len; q++) {
        const KbQueueInfo *qi = ssn->queues->pdata[q];
        kb_usage_advance(usage, qi->name, &qi->allocated, ssn->now, half_life);
    }
    double strength = conf != NULL ? kb_conf_plugin_arg_double(conf, "usageWeight", 0) : 0;
    if (strength > 0)
        weigh_usage(ssn, usage, strength);
}

/* Take @job's pending tasks out of its queue @q's demand for the deserved shares. */
static void leave_demand(Proportion *p, guint q, const KbJobInfo *job)
{
    KbResources *d = &p->tree->demand[q];
    for (guint i = 0; i < job->tasks->len; i++) {
        const KbTaskInfo *t = job->tasks->pdata[i];
        if (t->state != KB_TASK_PENDING)
            continue;
        for (guint k = 0; k < N_SLOTS; k++)
            d->v[slots[k]] = MAX(d->v[slots[k]] - t->resreq.v[slots[k]], 0);
    }
}

static gboolean long_over_limit(const Proportion *p, const KbJobInfo *job, guint q, gint64 used,
                                gint64 gpus, gboolean admit);

/*
 * longHeldDemand 0 (default 1: counted): a waiting long job that long_over_limit holds (its
 * queue's limit, the cluster-wide cap) does not count in its queue's demand, so the deserved
 * shares leave what it cannot take to the other queues. Counted, a queue whose long jobs the
 * limit holds keeps a share it cannot use, and the others may wait at theirs beside idle GPUs
 * (measured in docs/benchmarks.md, "Policy quality, round 5": off, it loses more than it wins).
 */
static void discount_held_long(Proportion *p)
{
    KbSession *ssn = p->ssn;
    for (guint j = 0; j < ssn->jobs->len; j++) {
        const KbJobInfo *job = ssn->jobs->pdata[j];
        if (job->allocated.v[KB_RES_GPU] > 0 || job->n_state[KB_TASK_PENDING] == 0)
            continue;
        const KbQueueInfo *qi = kb_session_job_queue(ssn, job);
        if (qi == NULL)
            continue;
        KbResources need;
        kb_session_job_min_request(job, &need);
        if (!long_over_limit(p, job, qi->id, qi->allocated.v[KB_RES_GPU], need.v[KB_RES_GPU],
                             FALSE))
            continue;
        leave_demand(p, qi->id, job);
    }
}

static gboolean past_queue_limit(const Proportion *p, const KbJobInfo *job, guint q, gint64 used,
                                 gint64 gpus);

/*
 * longEarnedShare: mark the waiting long jobs (@waiting, nothing placed yet) that are past their
 * queue's long-job limit when the session opens, and take them out of their queues' demand, so
 * that the deserved shares are what each queue's other demand earns. The same marks decide their
 * start (earned_room()) for the whole session: a job is judged once, the same way in the shares
 * and at its start. An admitted one moves its reservation from inqueue to past_inq.
 */
static void mark_past(Proportion *p, GPtrArray *waiting)
{
    KbSession *ssn = p->ssn;
    p->past = g_new0(guint8, ssn->jobs->len);
    for (guint j = 0; j < waiting->len; j++) {
        const KbJobInfo *job = waiting->pdata[j];
        const KbQueueInfo *qi = kb_session_job_queue(ssn, job);
        KbResources need;
        kb_session_job_min_request(job, &need);
        if (!past_queue_limit(p, job, qi->id, qi->allocated.v[KB_RES_GPU], need.v[KB_RES_GPU]))
            continue;
        p->past[job->id] = 1;
        p->n_past[qi->id]++;
        leave_demand(p, qi->id, job);
        if (job->phase != KB_JOB_INQUEUE)
            continue;
        kb_resources_sub(&need, &job->allocated);
        for (guint i = 0; i < N_SLOTS; i++) {
            gint64 v = MAX(need.v[slots[i]], 0);
            p->past_inq[qi->id].v[slots[i]] += v;
            for (gint x = (gint)qi->id; x >= 0; x = p->tree->parent[x])
                p->inqueue[x].v[slots[i]] -= v;
        }
    }
}

static gboolean is_long(const Proportion *p, const KbJobInfo *job);
static double long_limit_gpus(const Proportion *p, guint q);

typedef struct {
    const KbJobInfo *job;
    gint64 start; /* kb_cache_job_start_time(); placed in this session (0): G_MAXINT64 */
} Started;

static gint by_start(gconstpointer a, gconstpointer b)
{
    const Started *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/*
 * Reclaim's borrowedLongJobsOnly: mark the long jobs each queue runs past its long-job limit.
 * A queue's running long jobs count in the order they started (those placed in this session
 * last); those that take its long jobs' GPUs past the limit (long_limit_gpus()) are borrowed,
 * the ones that fit within it are not, nor is a queue's first long job (a gang larger than the
 * limit may run alone). The marks are made from the jobs' start times, so a restart or a new
 * leader finds the same ones; only in sessions where some queue holds more GPUs than its limit
 * (borrowed_marks(): reclaim and the cycle's report of running jobs ask).
 */
static void mark_borrowed(Proportion *p)
{
    KbSession *ssn = p->ssn;
    p->borrowed = g_new0(guint8, MAX(ssn->jobs->len, 1));
    g_autoptr(GArray) running = g_array_new(FALSE, FALSE, sizeof(Started));
    for (guint j = 0; j < ssn->jobs->len; j++) {
        const KbJobInfo *job = ssn->jobs->pdata[j];
        if (job->allocated.v[KB_RES_GPU] <= 0 || !is_long(p, job))
            continue;
        gint64 start = kb_cache_job_start_time(job);
        Started s = {job, start != 0 ? start : G_MAXINT64};
        g_array_append_val(running, s);
    }
    g_array_sort(running, by_start);
    g_autofree gint64 *held = g_new0(gint64, ssn->queues->len + 1);
    for (guint j = 0; j < running->len; j++) {
        const KbJobInfo *job = g_array_index(running, Started, j).job;
        const KbQueueInfo *qi = kb_session_job_queue(ssn, job);
        if (qi == NULL)
            continue;
        gint64 gpus = job->allocated.v[KB_RES_GPU];
        if (held[qi->id] > 0 && (double)(held[qi->id] + gpus) > long_limit_gpus(p, qi->id)) {
            p->borrowed[job->id] = 1;
            p->n_borrowed++;
        }
        held[qi->id] += gpus;
    }
}

/* Does some queue hold more GPUs than its long-job limit? Else its long jobs, which hold no more
 * than it, borrow nothing, and mark_borrowed() need not look at every job (kube-batchd reports
 * every running job's borrowing in every cycle). */
static gboolean any_over_limit(Proportion *p)
{
    if (p->over_limit < 0) {
        p->over_limit = 0;
        for (guint q = 0; q < p->ssn->queues->len && !p->over_limit; q++) {
            const KbQueueInfo *qi = p->ssn->queues->pdata[q];
            p->over_limit = (double)qi->allocated.v[KB_RES_GPU] > long_limit_gpus(p, qi->id);
        }
    }
    return p->over_limit;
}

/* The marks of mark_borrowed(), made on first need in the session; NULL when nothing borrows. */
static const guint8 *borrowed_marks(const Proportion *p)
{
    if (p == NULL || !p->borrow || !any_over_limit((Proportion *)p))
        return NULL;
    if (p->borrowed == NULL)
        mark_borrowed((Proportion *)p); /* a cache: filling it changes no answer */
    return p->borrowed;
}

guint kb_plugin_proportion_n_borrowed(gconstpointer state)
{
    return borrowed_marks(state) != NULL ? ((const Proportion *)state)->n_borrowed : 0;
}

gboolean kb_plugin_proportion_borrowed(gconstpointer state, const KbJobInfo *job)
{
    const guint8 *marks = borrowed_marks(state);
    return marks != NULL && job->id < ((const Proportion *)state)->ssn->jobs->len && marks[job->id];
}

static gpointer proportion_open(KbSession *ssn, const KbConfPlugin *conf)
{
    Proportion *p = g_new0(Proportion, 1);
    p->ssn = ssn;
    p->tree = ssn->qtree;
    p->inqueue = g_new0(KbResources, ssn->queues->len + 1);
    p->weight = g_memdup2(p->tree->weight, sizeof(double) * (p->tree->n_queues + 1));
    account_usage(ssn, conf);
    p->long_runtime = kb_conf_arg_duration(conf, "longRuntime", 6 * 3600);
    p->long_limit = kb_conf_plugin_arg_double(conf, "longBorrowLimit", 3);
    p->long_idle = kb_conf_plugin_arg_double(conf, "longIdleLimits", 0);
    p->lend = kb_conf_plugin_arg_double(conf, "lendUntilReservation", 1) > 0;
    p->long_cluster = kb_conf_plugin_arg_double(conf, "longClusterLimit", 0.85);
    p->long_held = -1;
    p->over_limit = -1;
    if (ssn->conf != NULL && kb_conf_has_action(ssn->conf, "reclaim")) {
        if (p->long_limit > 0 && kb_conf_reclaim_borrowed_only(ssn->conf))
            p->borrow = TRUE; /* past the limit a long job borrows, and gives back */
        else
            p->long_limit = 0; /* what a queue borrows comes back: no limit */
    }
    p->earned = p->long_limit > 0 && !p->borrow &&
                kb_conf_plugin_arg_double(conf, "longEarnedShare", 1) > 0;
    g_autoptr(GPtrArray) waiting = p->earned ? g_ptr_array_new() : NULL;
    for (guint j = 0; j < ssn->jobs->len; j++) {
        const KbJobInfo *job = ssn->jobs->pdata[j];
        /* A job with nothing placed and tasks pending may be a long job past its queue's limit
         * (mark_past); besides those, only admitted jobs are counted here, and most jobs are
         * running: no queue lookup for them. */
        gboolean waits = waiting != NULL && job->allocated.v[KB_RES_GPU] <= 0 &&
                         job->n_state[KB_TASK_PENDING] > 0;
        if (job->phase != KB_JOB_INQUEUE && !waits)
            continue;
        KbQueueInfo *qi = kb_session_job_queue(ssn, job);
        if (qi == NULL)
            continue;
        if (waits)
            g_ptr_array_add(waiting, (gpointer)job);
        if (job->phase != KB_JOB_INQUEUE)
            continue;
        KbResources need;
        kb_session_job_min_request(job, &need);
        kb_resources_sub(&need, &job->allocated);
        for (guint i = 0; i < N_SLOTS; i++)
            need.v[slots[i]] = MAX(need.v[slots[i]], 0);
        inqueue_add(p, qi->id, &need);
    }
    if (p->earned) {
        guint nq = ssn->queues->len + 1;
        p->n_past = g_new0(guint, nq);
        p->open = g_new0(KbResources, nq);
        p->started = g_new0(KbResources, nq);
        p->past_inq = g_new0(KbResources, nq);
        for (guint q = 0; q < ssn->queues->len; q++)
            p->open[q] = ((const KbQueueInfo *)ssn->queues->pdata[q])->allocated;
        mark_past(p, waiting);
    } else if (p->borrow || kb_conf_plugin_arg_double(conf, "longHeldDemand", 1) <= 0) {
        discount_held_long(p);
    }
    compute_deserved(ssn);
    return p;
}

static void proportion_close(gpointer state)
{
    Proportion *p = state;
    g_free(p->inqueue);
    g_free(p->weight);
    g_free(p->past);
    g_free(p->n_past);
    g_free(p->open);
    g_free(p->started);
    g_free(p->past_inq);
    g_free(p->borrowed);
    g_free(p);
}

/* allocated / deserved of tree node @x, the largest over the shared resources. */
static double node_share(const Proportion *p, guint x)
{
    double share = 0;
    for (guint i = 0; i < N_SLOTS; i++) {
        gint64 d = p->tree->deserved[x].v[slots[i]];
        gint64 a = p->tree->alloc[x].v[slots[i]];
        double s = d > 0 ? (double)a / (double)d : (a > 0 ? 1.0 : 0.0);
        share = MAX(share, s);
    }
    return share;
}

/*
 * Hierarchical order: two queues are compared where their paths meet, by the shares of the two
 * subtrees below that point (the team of the less served organisation goes first), then by
 * their own shares.
 */
static int queue_order(gpointer state, const KbQueueInfo *a, const KbQueueInfo *b)
{
    const Proportion *p = state;
    gint ca, cb;
    gint lca = kb_qtree_meet(p->tree, a->id, b->id, &ca, &cb);
    if (lca >= 0 && ca >= 0 && cb >= 0 && ((guint)ca != a->id || (guint)cb != b->id)) {
        double sa = node_share(p, (guint)ca), sb = node_share(p, (guint)cb);
        if (sa != sb)
            return sa < sb ? -1 : 1;
    }
    double sa = node_share(p, a->id), sb = node_share(p, b->id);
    if (sa == sb)
        return 0;
    return sa < sb ? -1 : 1;
}

/* The first ancestor of queue @q (not the root) whose capability @req does not fit after
 * @used (per node; NULL: the subtree's allocation), in slot *@slot; -1 when all fit. */
static gint ancestor_over_capability(const Proportion *p, guint q, const KbResources *req,
                                     const KbResources *extra, int *slot)
{
    const KbQueueTree *t = p->tree;
    for (gint x = t->parent[q]; x >= 0 && (guint)x != t->root; x = t->parent[x]) {
        for (int s = 0; s < KB_RES_MAX; s++) {
            if (req->v[s] <= 0 || t->capability[x].v[s] == KB_RESOURCE_UNLIMITED)
                continue;
            gint64 used = t->alloc[x].v[s] + (extra != NULL ? extra[x].v[s] : 0);
            if (used + req->v[s] > t->capability[x].v[s]) {
                *slot = s;
                return x;
            }
        }
    }
    return -1;
}

static void explain_ancestor(const Proportion *p, const KbQueueInfo *qi, guint x, int s,
                             gint64 used, GString *why)
{
    if (why == NULL)
        return;
    g_autofree char *u_s = kb_resource_format_value(s, used);
    g_autofree char *c_s = kb_resource_format_value(s, p->tree->capability[x].v[s]);
    g_string_append_printf(
            why, "queue \"%s\" (an ancestor of \"%s\") is at its capability for %s (%s/%s)",
            p->tree->name[x], qi->name, kb_resource_name(s), u_s, c_s);
}

/* "queue \"q\" is at its capability for nvidia.com/gpu (16/16)" or "... deserved share ...". */
static void explain(const Proportion *p, const KbQueueInfo *qi, int s, GString *why)
{
    if (why == NULL)
        return;
    gint64 d = p->ssn->deserved[qi->id].v[s];
    g_autofree char *a_s = kb_resource_format_value(s, qi->allocated.v[s]);
    g_autofree char *d_s = kb_resource_format_value(s, d);
    g_string_append_printf(why, "queue \"%s\" is at its %s for %s (%s/%s)", qi->name,
                           d >= qi->capability.v[s] ? "capability" : "deserved share",
                           kb_resource_name(s), a_s, d_s);
}

static gint64 lend_until(const Proportion *p);

static gboolean overused(gpointer state, const KbQueueInfo *qi, GString *why)
{
    const Proportion *p = state;
    int asked = -1;
    for (guint i = 0; i < N_SLOTS; i++) {
        int s = slots[i];
        if (p->ssn->request[qi->id].v[s] <= qi->allocated.v[s])
            continue; /* nothing more asked for in this resource */
        gint64 deserved = p->ssn->deserved[qi->id].v[s];
        if (qi->allocated.v[s] < deserved)
            return FALSE;
        /* longEarnedShare: what its jobs past the limit took is not the others' (share_used()),
         * and those jobs have room while the queue's state at the start leaves some. */
        if (p->earned &&
            (qi->allocated.v[s] - p->started[qi->id].v[s] < deserved ||
             (p->n_past[qi->id] > 0 && p->open[qi->id].v[s] + p->started[qi->id].v[s] < deserved)))
            return FALSE;
        if (asked < 0)
            asked = s;
    }
    if (asked < 0 || lend_until(p) != KB_RESERVE_UNKNOWN)
        return FALSE; /* while lending, allocatable judges each job (lent()) */
    explain(p, qi, asked, why);
    return TRUE;
}

/*
 * How the deserved share limits a queue. Capability is a hard limit. The deserved share is not:
 * a queue below its share may start one gang whose minimum takes it over the share (a gang of 8
 * GPUs in a queue that deserves 6 must be able to run, or a cluster of such queues sits idle
 * with every job waiting); once at or over its share, the queue starts nothing new, so nobody
 * hoards. Tasks beyond a job's minMember (elastic members) must fit within the share.
 */
static guint job_placed(const KbJobInfo *job)
{
    return job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
           job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING];
}

/* @job's expected runtime in seconds (the reserve action's estimate), KB_RESERVE_UNKNOWN. */
static gint64 expected_runtime(const Proportion *p, const KbJobInfo *job)
{
    KbHistory *history = p->ssn->cache != NULL ? kb_cache_history(p->ssn->cache) : NULL;
    return kb_reserve_job_runtime((KbJobInfo *)job, history);
}

/* The earliest start still to come of a reservation (the reserve action keeping GPUs free for a
 * gang until then), KB_RESERVE_UNKNOWN when none, or when lendUntilReservation is off. */
static gint64 lend_until(const Proportion *p)
{
    if (!p->lend)
        return KB_RESERVE_UNKNOWN;
    guint n;
    const KbReservation *rv = kb_reserve_list(p->ssn, &n);
    gint64 first = KB_RESERVE_UNKNOWN;
    for (guint i = 0; i < n; i++) {
        if (rv[i].start != KB_RESERVE_UNKNOWN && rv[i].start > p->ssn->now)
            first = MIN(first, rv[i].start);
    }
    return first;
}

/*
 * lendUntilReservation: may @job go past its queue's deserved share? Only while a reservation
 * keeps GPUs free for a gang until a start still to come (lend_until()), and only if the job is
 * expected to end by the earliest such start: until then those GPUs serve nobody else (a job
 * running past the start may not use them; the queues within their share are placed first, in
 * queue order), and the job gives them back before the gang comes. On a synthetic load with
 * 64-GPU gangs on 256 GPUs, a queue over its share waited beside GPUs kept for such gangs.
 */
static gboolean lent(const Proportion *p, const KbJobInfo *job)
{
    gint64 first = lend_until(p);
    if (first == KB_RESERVE_UNKNOWN)
        return FALSE;
    gint64 r = expected_runtime(p, job);
    return r != KB_RESERVE_UNKNOWN && p->ssn->now + r <= first;
}

/*
 * Queue @q's part by weight of the cluster's GPUs: its weight's part of each level down the tree,
 * as if every queue asked, by the configured weights (usage does not lower them here, or the limit
 * would squeeze the queues that used much twice). Idle queues count: counting only the queues
 * asking now let the busy ones fill the cluster with long jobs while the others were quiet
 * (measured on the Philly slice: p95 wait 3.75 h against 0 s).
 */
static double weight_share(const Proportion *p, guint q)
{
    const KbQueueTree *t = p->tree;
    double frac = 1;
    for (gint x = (gint)q; x >= 0 && (guint)x != t->root; x = t->parent[x]) {
        gint par = t->parent[x];
        if (par < 0)
            return 0;
        double sum = 0;
        for (gint c = t->first_child[par]; c >= 0; c = t->next_sibling[c]) {
            if (!t->held[c])
                sum += p->weight[c];
        }
        frac *= sum > 0 ? p->weight[x] / sum : 0;
    }
    return frac * (double)p->ssn->total.v[KB_RES_GPU];
}

/* Is @job expected to run longer than longRuntime? */
static gboolean is_long(const Proportion *p, const KbJobInfo *job)
{
    gint64 r = expected_runtime(p, job);
    return r != KB_RESERVE_UNKNOWN && r > p->long_runtime;
}

/* The GPUs every long job holds, counted on first need in the session and kept up to date by
 * on_allocate and on_deallocate from then on (most cycles hold no long job back). */
static gint64 long_held(const Proportion *p)
{
    if (p->long_held >= 0)
        return p->long_held;
    gint64 held = 0;
    for (guint j = 0; j < p->ssn->jobs->len; j++) {
        const KbJobInfo *job = p->ssn->jobs->pdata[j];
        if (job->allocated.v[KB_RES_GPU] > 0 && is_long(p, job))
            held += job->allocated.v[KB_RES_GPU];
    }
    ((Proportion *)p)->long_held = held; /* a cache: filling it changes no answer */
    return held;
}

static void long_held_change(gpointer state, const KbTaskInfo *task, gint64 sign)
{
    Proportion *p = state;
    if (p->long_held >= 0 && task->resreq.v[KB_RES_GPU] > 0 && is_long(p, task->job))
        p->long_held += sign * task->resreq.v[KB_RES_GPU];
}

/* longEarnedShare: count what a job past its queue's limit takes (share_used()). */
static void started_change(Proportion *p, const KbTaskInfo *task, gint64 sign)
{
    if (!p->earned || !p->past[task->job->id])
        return;
    const KbQueueInfo *qi = kb_session_job_queue(p->ssn, task->job);
    if (qi == NULL)
        return;
    for (guint i = 0; i < N_SLOTS; i++)
        p->started[qi->id].v[slots[i]] += sign * task->resreq.v[slots[i]];
}

static void on_allocate(gpointer state, const KbTaskInfo *task)
{
    long_held_change(state, task, 1);
    started_change(state, task, 1);
}

static void on_deallocate(gpointer state, const KbTaskInfo *task)
{
    long_held_change(state, task, -1);
    started_change(state, task, -1);
}

/* Queue @q's long-job limit in GPUs: longBorrowLimit times its share by weight, or its guarantee
 * if that is more. */
static double long_limit_gpus(const Proportion *p, guint q)
{
    return MAX(p->long_limit * weight_share(p, q), (double)p->tree->guarantee[q].v[KB_RES_GPU]);
}

/* TRUE when long job @job is past its queue @q's long-job limit: the queue, holding @used GPUs,
 * would hold more than the limit with its @gpus (see the top of the file). */
static gboolean past_queue_limit(const Proportion *p, const KbJobInfo *job, guint q, gint64 used,
                                 gint64 gpus)
{
    if (p->long_limit <= 0 || gpus <= 0)
        return FALSE;
    double cap = long_limit_gpus(p, q);
    /* A gang of the queue reserved for later has its GPUs booked: the queue's other long jobs
     * may not take the room it waits for (on Philly --skip 10000 the 32-GPU gangs waited 5.7 d
     * while the queue's 8-GPU jobs of days took each GPU its running jobs gave back). */
    used += kb_reserve_queue_gpus(p->ssn, q, job);
    if ((double)(used + gpus) <= cap || (used <= 0 && (double)gpus > cap))
        return FALSE; /* within the limit, or a gang larger than it alone in its queue */
    /* longIdleLimits: no limit while the GPUs idle after the job (neither held nor admitted)
     * are that many times the limit (on Philly --skip 50000, 8-GPU jobs of days waited 5 days
     * beside 350 idle GPUs; off by default: it cost the first 5,000 jobs their p95 wait). */
    guint root = p->tree->root;
    gint64 idle = p->ssn->total.v[KB_RES_GPU] - p->tree->alloc[root].v[KB_RES_GPU] -
                  p->inqueue[root].v[KB_RES_GPU];
    if (job->phase == KB_JOB_INQUEUE)
        idle += gpus; /* its own admission is counted above */
    if (p->long_idle > 0 && (double)(idle - gpus) >= p->long_idle * cap)
        return FALSE;
    /* A job without an estimate is not held back: on a cluster that announces none (a full
     * one restarted, bench-scale volcano-restart) the limit left new gangs beside idle GPUs. */
    return is_long(p, job);
}

/* May reclaim take from queue @q: it and every queue above it are reclaimable? */
static gboolean path_reclaimable(const Proportion *p, guint q)
{
    for (gint x = (gint)q; x >= 0; x = p->tree->parent[x]) {
        if (!kb_session_node_reclaimable(p->ssn, (guint)x))
            return FALSE;
    }
    return TRUE;
}

/* longClusterLimit: would the long jobs of the cluster, with @gpus more, hold more than that
 * part of its GPUs? FALSE while it is off. */
static gboolean over_cluster_cap(const Proportion *p, gint64 gpus)
{
    return p->long_cluster > 0 &&
           (double)(long_held(p) + gpus) > p->long_cluster * (double)p->ssn->total.v[KB_RES_GPU];
}

/*
 * longEarnedShare: may @job, marked past its queue @q's long-job limit (mark_past()), start now?
 * Only while the queue is below the share its other demand earns (the deserved share computed
 * without the jobs past the limit) in every resource the job asks for, counting what the queue
 * held when the session opened and what its jobs past the limit took since (@admit: and were
 * admitted with), not its jobs within the limit placed since: those jobs' room is theirs (the
 * job's own GPUs may take the queue over the share, as any gang's may). The room is judged
 * against the queue's state at the session's start, so it does not depend on which of the
 * queue's jobs allocate tries first.
 */
static gboolean earned_room(const Proportion *p, const KbJobInfo *job, guint q, gboolean admit)
{
    KbResources need;
    kb_session_job_min_request(job, &need);
    for (guint i = 0; i < N_SLOTS; i++) {
        int s = slots[i];
        if (need.v[s] <= 0)
            continue;
        gint64 used = p->open[q].v[s] + p->started[q].v[s] - job->allocated.v[s];
        if (admit)
            used += p->past_inq[q].v[s];
        if (used >= p->ssn->deserved[q].v[s])
            return FALSE;
    }
    return TRUE;
}

/* TRUE when long job @job may not start now: past its queue @q's limit (@used GPUs held, @gpus
 * its own) and, with longClusterLimit, past the cluster's cap too; with longEarnedShare, a job
 * marked past the limit when the session opened starts only within the share its queue's other
 * demand earns (earned_room(), @admit) and the cap, and one that went past it since waits for
 * the next session's judgement (its demand counted in this one's shares). */
static gboolean long_over_limit(const Proportion *p, const KbJobInfo *job, guint q, gint64 used,
                                gint64 gpus, gboolean admit)
{
    /* Reclaim's borrowedLongJobsOnly: past the limit a long job borrows idle GPUs within the
     * cluster-wide cap, and reclaim may take them back (mark_borrowed()); a queue reclaim may not
     * take from keeps the limit alone. */
    if (p->borrow)
        return past_queue_limit(p, job, q, used, gpus) &&
               (!path_reclaimable(p, q) || over_cluster_cap(p, gpus));
    if (p->earned && p->past[job->id])
        return !earned_room(p, job, q, admit) || over_cluster_cap(p, gpus);
    if (!past_queue_limit(p, job, q, used, gpus))
        return FALSE;
    return p->earned || p->long_cluster <= 0 || over_cluster_cap(p, gpus);
}

gboolean kb_plugin_proportion_long_held(gconstpointer state, const KbJobInfo *job, gint64 used)
{
    const Proportion *p = state;
    if (p == NULL)
        return FALSE;
    const KbQueueInfo *qi = kb_session_job_queue(p->ssn, job);
    if (qi == NULL)
        return FALSE;
    KbResources need;
    kb_session_job_min_request(job, &need);
    /* The reserve action asks at a time to come (@used: the queue's GPUs then): with
     * longEarnedShare, the earned room is this session's, so past the limit is held then. */
    if (p->earned)
        return past_queue_limit(p, job, qi->id, used, need.v[KB_RES_GPU]);
    return long_over_limit(p, job, qi->id, used, need.v[KB_RES_GPU], FALSE);
}

static void explain_long(const Proportion *p, const KbQueueInfo *qi, const KbJobInfo *job,
                         gint64 used, GString *why)
{
    if (why == NULL)
        return;
    g_autofree char *rt = g_strdup_printf("%" G_GINT64_FORMAT "s", p->long_runtime);
    g_autofree char *held = kb_resource_format_value(KB_RES_GPU, used);
    g_string_append_printf(why,
                           "queue \"%s\" holds %s nvidia.com/gpu, %.3g times "
                           "its share by weight is %.0f, and the job is expected to run longer "
                           "than %s",
                           qi->name, held, p->long_limit,
                           p->long_limit * weight_share(p, qi->id) / KB_GPU_MILLI, rt);
    if (p->earned && p->past[job->id]) {
        g_autofree char *d =
                kb_resource_format_value(KB_RES_GPU, p->ssn->deserved[qi->id].v[KB_RES_GPU]);
        g_autofree char *u = kb_resource_format_value(
                KB_RES_GPU, p->open[qi->id].v[KB_RES_GPU] + p->started[qi->id].v[KB_RES_GPU]);
        g_string_append_printf(why,
                               "; past it, a long job starts only below the share its queue's "
                               "other jobs earn (%s nvidia.com/gpu; the queue counts %s)",
                               d, u);
    }
    if (p->long_cluster > 0) {
        g_autofree char *all = kb_resource_format_value(KB_RES_GPU, long_held(p));
        g_string_append_printf(why,
                               "; the cluster's long jobs hold %s nvidia.com/gpu, "
                               "longClusterLimit %.3g of the cluster is %.0f",
                               all, p->long_cluster,
                               p->long_cluster * (double)p->ssn->total.v[KB_RES_GPU] /
                                       KB_GPU_MILLI);
    }
}

/*
 * What queue @qi holds in slot @s for @job's share check. With longEarnedShare a job past its
 * queue's long-job limit counts what the queue held when the session opened and what its jobs
 * past the limit took since (earned_room()), and the queue's other jobs do not count what those
 * took: a long job never takes the share room its queue's other jobs earned.
 */
static gint64 share_used(const Proportion *p, const KbQueueInfo *qi, const KbJobInfo *job, int s)
{
    if (!p->earned)
        return qi->allocated.v[s];
    if (p->past[job->id])
        return p->open[qi->id].v[s] + p->started[qi->id].v[s];
    return qi->allocated.v[s] - p->started[qi->id].v[s];
}

static gboolean allocatable(gpointer state, const KbQueueInfo *qi, const KbTaskInfo *task,
                            GString *why)
{
    const Proportion *p = state;
    const KbJobInfo *job = task->job;
    gboolean in_gang = job_placed(job) < (guint)job->min_member;
    /* The long-job limit first: a long job it holds leaves its queue's demand (longHeldDemand,
     * longEarnedShare), so the deserved share would name the wrong cause. */
    if (in_gang && job_placed(job) == 0 && task->resreq.v[KB_RES_GPU] > 0) {
        KbResources need;
        kb_session_job_min_request(job, &need);
        if (long_over_limit(p, job, qi->id, qi->allocated.v[KB_RES_GPU], need.v[KB_RES_GPU],
                            FALSE)) {
            explain_long(p, qi, job, qi->allocated.v[KB_RES_GPU], why);
            return FALSE;
        }
    }
    for (guint i = 0; i < N_SLOTS; i++) {
        int s = slots[i];
        if (task->resreq.v[s] <= 0)
            continue;
        gint64 deserved = p->ssn->deserved[qi->id].v[s];
        gint64 used = share_used(p, qi, job, s);
        gint64 after = used + task->resreq.v[s];
        /* Within the gang's minimum, the queue's use before this job started is what counts. */
        gint64 before_job = used - job->allocated.v[s];
        gboolean over_share = in_gang ? before_job >= deserved : after > deserved;
        if (over_share && lent(p, job))
            over_share = FALSE;
        if (qi->allocated.v[s] + task->resreq.v[s] > qi->capability.v[s] || over_share) {
            explain(p, qi, s, why);
            return FALSE;
        }
    }
    int s;
    gint x = ancestor_over_capability(p, qi->id, &task->resreq, NULL, &s);
    if (x >= 0) {
        explain_ancestor(p, qi, (guint)x, s, p->tree->alloc[x].v[s], why);
        return FALSE;
    }
    return TRUE;
}

static gboolean job_enqueueable(gpointer state, const KbJobInfo *job, GString *why)
{
    const Proportion *p = state;
    KbQueueInfo *qi = kb_session_job_queue(p->ssn, job);
    if (qi == NULL)
        return FALSE;
    KbResources need;
    kb_session_job_min_request(job, &need);
    gint64 held = qi->allocated.v[KB_RES_GPU] + p->inqueue[qi->id].v[KB_RES_GPU];
    if (long_over_limit(p, job, qi->id, held, need.v[KB_RES_GPU], TRUE)) {
        explain_long(p, qi, job, held, why);
        return FALSE;
    }
    for (guint i = 0; i < N_SLOTS; i++) {
        int s = slots[i];
        if (need.v[s] <= 0)
            continue;
        gint64 used = qi->allocated.v[s] + p->inqueue[qi->id].v[s];
        gint64 deserved = p->ssn->deserved[qi->id].v[s];
        gboolean over_cap = used + need.v[s] > qi->capability.v[s];
        if (p->earned) /* what its share check counts (share_used()), and the admitted */
            used = share_used(p, qi, job, s) +
                   (p->past[job->id] ? p->past_inq[qi->id].v[s] : p->inqueue[qi->id].v[s]);
        if (over_cap || (used >= deserved && !lent(p, job))) {
            if (why != NULL) {
                gint64 limit = over_cap ? qi->capability.v[s] : deserved;
                g_autofree char *n_s = kb_resource_format_value(s, need.v[s]);
                g_autofree char *l_s = kb_resource_format_value(s, MAX(limit - used, 0));
                g_string_append_printf(why,
                                       "queue \"%s\" has %s %s left of its %s, the job "
                                       "needs %s to start",
                                       qi->name, l_s, kb_resource_name(s),
                                       over_cap ? "capability" : "deserved share", n_s);
            }
            return FALSE;
        }
    }
    int s;
    gint x = ancestor_over_capability(p, qi->id, &need, p->inqueue, &s);
    if (x >= 0) {
        if (why != NULL) {
            gint64 used = p->tree->alloc[x].v[s] + p->inqueue[x].v[s];
            g_autofree char *n_s = kb_resource_format_value(s, need.v[s]);
            g_autofree char *l_s =
                    kb_resource_format_value(s, MAX(p->tree->capability[x].v[s] - used, 0));
            g_string_append_printf(why,
                                   "queue \"%s\" (an ancestor of \"%s\") has %s %s left of its "
                                   "capability, the job needs %s to start",
                                   p->tree->name[x], qi->name, l_s, kb_resource_name(s), n_s);
        }
        return FALSE;
    }
    return TRUE;
}

/* @job entered Inqueue (@entered) or went back to Pending: its queue's inqueue figure takes its
 * minimum request, or gives back what of it is not yet allocated. */
static void inqueue_change(Proportion *p, const KbJobInfo *job, gboolean entered)
{
    KbQueueInfo *qi = kb_session_job_queue(p->ssn, job);
    if (qi == NULL)
        return;
    KbResources need;
    kb_session_job_min_request(job, &need);
    if (!entered) {
        kb_resources_sub(&need, &job->allocated);
        for (guint i = 0; i < N_SLOTS; i++)
            need.v[slots[i]] = -MAX(need.v[slots[i]], 0);
    }
    if (p->earned && p->past[job->id]) {
        for (guint i = 0; i < N_SLOTS; i++)
            p->past_inq[qi->id].v[slots[i]] += need.v[slots[i]];
        return;
    }
    inqueue_add(p, qi->id, &need);
}

static void on_job_enqueued(gpointer state, const KbJobInfo *job)
{
    inqueue_change(state, job, TRUE);
}

static void on_job_dequeued(gpointer state, const KbJobInfo *job)
{
    inqueue_change(state, job, FALSE);
}

static const struct kb_plugin_arg proportion_arguments[] = {
        {"usageHalfLife", KB_ARG_GO_DURATION},
        {"usageWeight", KB_ARG_NUMBER},
        {"longRuntime", KB_ARG_GO_DURATION},
        {"longBorrowLimit", KB_ARG_NUMBER},
        {"longIdleLimits", KB_ARG_NUMBER},       /* off by default: see long_over_limit */
        {"lendUntilReservation", KB_ARG_NUMBER}, /* on by default: see lent() */
        {"longClusterLimit", KB_ARG_NUMBER},     /* 0.85 by default: see long_over_limit */
        {"longHeldDemand", KB_ARG_NUMBER},       /* 1 by default: see discount_held_long */
        {"longEarnedShare", KB_ARG_NUMBER},      /* on by default: see mark_past */
        {NULL, 0},
};

const struct kb_plugin_ops kb_plugin_proportion = {
        .name = "proportion",
        .arguments = proportion_arguments,
        .open = proportion_open,
        .close = proportion_close,
        .queue_order = queue_order,
        .overused = overused,
        .allocatable = allocatable,
        .job_enqueueable = job_enqueueable,
        .on_job_enqueued = on_job_enqueued,
        .on_job_dequeued = on_job_dequeued,
        .on_allocate = on_allocate,
        .on_deallocate = on_deallocate,
};
