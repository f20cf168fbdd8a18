/* The reserve action: reservations for waiting gangs and backfill admission; see reserve.h. */
#include "scheduler/reserve.h"

#include <stdlib.h>
#include <string.h>

#include "policies/plugin.h"
#include "scheduler/actions.h"

#define DEFAULT_MAX_SCAN  1000
#define DEFAULT_MIN_WAIT  0
#define DEFAULT_MIN_NODES 2

/* Resources @res free on node @node at time @t (negative amounts: a reservation's hold). */
typedef struct {
    gint64 t;
    guint node;
    guint queue; /* queue id of the task that ends; G_MAXUINT for other events */
    KbResources res;
} Ev;

/* A reservation's hold on one node, as allocate checks it. */
typedef struct {
    guint rank; /* the reservation's index */
    guint node;
    gint64 t;           /* its start */
    KbResources budget; /* what jobs running across t may still take on this node */
    gint next;          /* next hold of the node, or -1 */
} Hold;

/* One class of the tasks a job still needs. */
typedef struct {
    const KbTaskInfo *rep;
    KbResources req;
    guint count;
    guint8 *eligible; /* per node: the static predicates pass */
} Need;

struct KbReserve {
    KbSession *ssn;
    GArray *list;    /* KbReservation */
    gint *head;      /* per node: first Hold, or -1 */
    GArray *holds;   /* Hold */
    gint64 *runtime; /* per job id: expected runtime; G_MININT64 until computed */
    guint *rank;     /* per job id: 1 + the rank of its reservation, 0 when none */
    guint8 *first;   /* per job id: expected to start now, before every reservation */
    /* Scratch of the action. */
    GArray *events;        /* Ev: ends of running (and about to start) tasks, sorted by time;
                              NULL until a reservation needs it (timeline()) */
    GArray *started;       /* Ev: ends of the jobs expected to start now, until then */
    KbResources *free_now; /* per node: idle minus the jobs expected to start now */
    guint8 *usable;        /* per node */
};

/* ---- estimates ------------------------------------------------------------------------------ */

static gint64 runtime_from(GHashTable *annotations)
{
    const char *v = annotations != NULL
                            ? g_hash_table_lookup(annotations, KB_RESERVE_RUNTIME_ANNOTATION)
                            : NULL;
    gint64 s = 0;
    if (v == NULL || !kb_conf_parse_duration(v, &s, NULL))
        return KB_RESERVE_UNKNOWN;
    return MAX(s, 1);
}

/* The smallest positive activeDeadlineSeconds of the job's pods, else KB_RESERVE_UNKNOWN. */
static gint64 deadline_of(const KbJobInfo *job)
{
    gint64 d = KB_RESERVE_UNKNOWN;
    for (guint i = 0; i < job->tasks->len; i++) {
        gint64 v = ((const KbTaskInfo *)job->tasks->pdata[i])->pod->active_deadline_seconds;
        if (v > 0)
            d = MIN(d, v);
    }
    return d;
}

/*
 * What the job's objects announce (annotation, deadline, GPUs), kept on the job until the cache
 * changes its group or a pod (KbJobInfo.version): looking the annotation up and parsing it for
 * every running job in every cycle was a third of the action's time.
 */
static void announced(KbJobInfo *job)
{
    if (job->announced_version == job->version)
        return;
    gint64 r = KB_RESERVE_UNKNOWN;
    if (job->group != NULL)
        r = runtime_from(job->group->meta.annotations);
    if (r == KB_RESERVE_UNKNOWN && job->tasks->len > 0)
        r = runtime_from(((const KbTaskInfo *)job->tasks->pdata[0])->pod->meta.annotations);
    gint64 gpus = 0;
    for (guint i = 0; i < job->tasks->len; i++)
        gpus += ((const KbTaskInfo *)job->tasks->pdata[i])->resreq.v[KB_RES_GPU];
    job->announced_runtime = r;
    job->announced_deadline = deadline_of(job);
    job->announced_gpus = kb_resource_whole_gpus(gpus);
    job->announced_version = job->version;
}

gint64 kb_reserve_job_runtime(KbJobInfo *job, const KbHistory *history)
{
    announced(job);
    gint64 r = job->announced_runtime;
    if (r == KB_RESERVE_UNKNOWN && history != NULL) {
        gint64 h = kb_history_estimate(history, job->queue, job->announced_gpus);
        if (h > 0)
            r = h;
    }
    /* The kubelet ends the pods at their deadline: no estimate may exceed it. */
    return MIN(r, job->announced_deadline);
}

static gint64 job_runtime(KbReserve *rs, KbJobInfo *job)
{
    if (rs->runtime[job->id] == G_MININT64)
        rs->runtime[job->id] = kb_reserve_job_runtime(
                job, rs->ssn->cache != NULL ? kb_cache_history(rs->ssn->cache) : NULL);
    return rs->runtime[job->id];
}

static gint64 add_time(gint64 t, gint64 d)
{
    return d == KB_RESERVE_UNKNOWN || t == KB_RESERVE_UNKNOWN ? KB_RESERVE_UNKNOWN : t + d;
}

/* When a task on a node is expected to free its resources. */
static gint64 task_end(KbReserve *rs, const KbTaskInfo *t)
{
    gint64 now = rs->ssn->now;
    if (t->state == KB_TASK_RELEASING || t->evicting)
        return now;
    gint64 run = job_runtime(rs, t->job);
    if (run == KB_RESERVE_UNKNOWN)
        return KB_RESERVE_UNKNOWN;
    gint64 start = t->bind_time != 0 ? t->bind_time : now;
    if (t->state == KB_TASK_BOUND || t->state == KB_TASK_RUNNING) {
        if (t->bind_time == 0 && t->pod->meta.creation_timestamp > 0)
            start = t->pod->meta.creation_timestamp;
    }
    gint64 end = start + run;
    return end > now ? end : now + KB_RESERVE_OVERRUN_S;
}

/* ---- admission (allocate) ------------------------------------------------------------------- */

/*
 * The reservation rank of @job's own reservation, G_MAXUINT when it owns none. A job expected
 * to start now (before every reservation) respects the holds too: the timeline put it on
 * capacity the reservations leave free, and if allocate's node order put it on held capacity
 * instead, the reserved gang's start would slip (measured: starts moving by days).
 */
static guint job_rank(KbReserve *rs, const KbJobInfo *job)
{
    return rs->rank[job->id] > 0 ? rs->rank[job->id] - 1 : G_MAXUINT;
}

/* Does a task of @job, placed now, still run at time @t? */
static gboolean runs_past(KbReserve *rs, KbJobInfo *job, gint64 t)
{
    gint64 end = add_time(rs->ssn->now, job_runtime(rs, job));
    return end == KB_RESERVE_UNKNOWN || t == KB_RESERVE_UNKNOWN || end > t;
}

static gboolean hold_applies(KbReserve *rs, const Hold *h, const KbTaskInfo *task)
{
    return job_rank(rs, task->job) > h->rank && runs_past(rs, task->job, h->t);
}

gboolean kb_reserve_admits(KbSession *ssn, const KbTaskInfo *task, guint node)
{
    KbReserve *rs = ssn->reserve;
    if (rs == NULL || node >= ssn->n_nodes)
        return TRUE;
    for (gint h = rs->head[node]; h >= 0;) {
        const Hold *hd = &g_array_index(rs->holds, Hold, h);
        if (hold_applies(rs, hd, task) && !kb_resources_fit(&task->resreq, &hd->budget))
            return FALSE;
        h = hd->next;
    }
    return TRUE;
}

static void account(KbSession *ssn, const KbTaskInfo *task, guint node, gboolean take)
{
    KbReserve *rs = ssn->reserve;
    if (rs == NULL || node >= ssn->n_nodes)
        return;
    for (gint h = rs->head[node]; h >= 0;) {
        Hold *hd = &g_array_index(rs->holds, Hold, h);
        if (hold_applies(rs, hd, task)) {
            if (take)
                kb_resources_sub(&hd->budget, &task->resreq);
            else
                kb_resources_add(&hd->budget, &task->resreq);
        }
        h = hd->next;
    }
}

void kb_reserve_on_allocate(KbSession *ssn, const KbTaskInfo *task, guint node)
{
    account(ssn, task, node, TRUE);
}

void kb_reserve_on_deallocate(KbSession *ssn, const KbTaskInfo *task, guint node)
{
    account(ssn, task, node, FALSE);
}

/* ---- fitting a gang onto free vectors ------------------------------------------------------- */

/* How many tasks asking @req fit in @free (capped at @cap). */
static guint fit_count(const KbResources *req, const KbResources *free_res, guint cap)
{
    gint64 n = cap;
    int nslots = kb_resource_count();
    for (int s = 0; s < nslots; s++) {
        if (req->v[s] <= 0)
            continue;
        if (free_res->v[s] == KB_RESOURCE_UNLIMITED)
            continue;
        gint64 k = free_res->v[s] / req->v[s];
        n = MIN(n, MAX(k, 0));
    }
    return (guint)n;
}

static void mul_add(KbResources *dst, const KbResources *req, guint k, int sign)
{
    for (int s = 0; s < KB_RES_MAX; s++) {
        if (req->v[s] != 0 && dst->v[s] != KB_RESOURCE_UNLIMITED)
            dst->v[s] += sign * (gint64)k * req->v[s];
    }
}

/* Is node @a busier now than node @b (fewer GPUs, then CPU, idle in @now)? */
static gboolean busier(const KbResources *now, gint a, gint b)
{
    if (now[a].v[KB_RES_GPU] != now[b].v[KB_RES_GPU])
        return now[a].v[KB_RES_GPU] < now[b].v[KB_RES_GPU];
    return now[a].v[KB_RES_CPU] < now[b].v[KB_RES_CPU];
}

/*
 * Place @needs greedily on @free (the nodes that fit the most tasks of a class first, so that a
 * gang lands on few nodes). Without @take it only answers; with it, @take[c * n + node] receives
 * the tasks of class c put on the node and @free is charged. With @busy (what is idle now), ties
 * go to the node busiest now: a reservation then holds capacity that frees by its start rather
 * than capacity idle now, which stays usable by anyone meanwhile.
 */
static gboolean gang_fit(KbReserve *rs, GArray *needs, KbResources *free_res, guint *take,
                         const KbResources *busy)
{
    guint n = rs->ssn->n_nodes;
    g_autofree KbResources *scratch =
            take == NULL ? g_memdup2(free_res, sizeof(KbResources) * n) : NULL;
    KbResources *fr = take == NULL ? scratch : free_res;
    for (guint c = 0; c < needs->len; c++) {
        const Need *nd = &g_array_index(needs, Need, c);
        guint left = nd->count;
        while (left > 0) {
            guint best = 0;
            gint best_node = -1;
            for (guint i = 0; i < n; i++) {
                if (!rs->usable[i] || !nd->eligible[i])
                    continue;
                guint k = fit_count(&nd->req, &fr[i], left);
                if (k > best ||
                    (k == best && k > 0 && busy != NULL && busier(busy, (gint)i, best_node)))
                    best = k, best_node = (gint)i;
                if (best == left && busy == NULL)
                    break;
            }
            if (best_node < 0)
                return FALSE;
            mul_add(&fr[best_node], &nd->req, best, -1);
            if (take != NULL)
                take[c * n + (guint)best_node] += best;
            left -= best;
        }
    }
    return TRUE;
}

/* ---- candidates ----------------------------------------------------------------------------- */

static guint occupied(const KbJobInfo *job)
{
    return job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
           job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING] +
           job->n_state[KB_TASK_SUCCEEDED];
}

/*
 * Would @job's queue stay within its deserved share (proportion) when the job starts at @t, its
 * tasks that are expected to end by then gone? A reservation beyond that would hold capacity
 * that other queues are due.
 */
static gboolean within_share(KbReserve *rs, const KbJobInfo *job, gint64 t)
{
    KbSession *ssn = rs->ssn;
    KbQueueInfo *qi = kb_session_job_queue(ssn, job);
    KbResources need, at_t = qi->allocated;
    kb_session_job_min_request(job, &need);
    kb_resources_sub(&need, &job->allocated);
    for (guint i = 0; i < rs->events->len; i++) {
        const Ev *ev = &g_array_index(rs->events, Ev, i);
        if (ev->t > t)
            break;
        if (ev->queue == qi->id)
            kb_resources_sub(&at_t, &ev->res);
    }
    const KbResources *des = &ssn->deserved[qi->id];
    /* The resources proportion shares. */
    static const int slots[] = {KB_RES_CPU, KB_RES_MEMORY, KB_RES_GPU};
    for (guint k = 0; k < G_N_ELEMENTS(slots); k++) {
        int s = slots[k];
        if (need.v[s] <= 0)
            continue;
        if (at_t.v[s] + need.v[s] > qi->capability.v[s])
            return FALSE;
        if (des->v[s] != KB_RESOURCE_UNLIMITED && at_t.v[s] + need.v[s] > des->v[s])
            return FALSE;
    }
    return TRUE;
}

/* Values of Eligibility.starving. */
enum { NOT_STARVING, STARVING, OVERDUE };

typedef struct {
    gint64 min_wait;
    guint min_gpus, min_nodes;
    guint8 *starving;    /* per job id: NOT_STARVING, STARVING or OVERDUE */
    KbResources largest; /* per slot, the most any usable node has allocatable */
    gconstpointer sla;   /* the sla plugin's state, NULL when it is not configured */
} Eligibility;

static gboolean node_usable(const KbNodeInfo *ni)
{
    return ni->present && ni->node != NULL && ni->node->ready && !ni->node->unschedulable;
}

static void largest_node(KbSession *ssn, KbResources *out)
{
    kb_resources_clear(out);
    for (guint i = 0; i < ssn->n_nodes; i++) {
        if (!node_usable(&ssn->nodes[i]))
            continue;
        for (int s = 0; s < KB_RES_MAX; s++)
            out->v[s] = MAX(out->v[s], ssn->nodes[i].allocatable.v[s]);
    }
}

/*
 * How many nodes @job's minimum takes at least: 1 when some usable node's allocatable holds it
 * whole, else the larger of 2 and its GPUs over the most GPUs a node has (predicates ignored).
 */
static guint nodes_spanned(KbSession *ssn, const KbJobInfo *job, const Eligibility *el)
{
    KbResources need;
    kb_session_job_min_request(job, &need);
    /* Past the largest node in some resource: no node holds it, no need to look at each. */
    for (guint i = 0; kb_resources_fit(&need, &el->largest) && i < ssn->n_nodes; i++) {
        if (node_usable(&ssn->nodes[i]) && kb_resources_fit(&need, &ssn->nodes[i].allocatable))
            return 1;
    }
    gint64 most_gpus = el->largest.v[KB_RES_GPU];
    if (most_gpus <= 0 || need.v[KB_RES_GPU] <= 0)
        return 2;
    return (guint)MAX(2, (need.v[KB_RES_GPU] + most_gpus - 1) / most_gpus);
}

/*
 * May @job get a reservation: it waited past its sla waiting time (OVERDUE, whatever the rest),
 * or it waited minWait, asks minGPUs and spans minNodes (STARVING).
 */
static guint8 starving(KbSession *ssn, const KbJobInfo *job, const Eligibility *el)
{
    if (kb_plugin_sla_overdue(el->sla, job, ssn->now))
        return OVERDUE;
    if (el->min_wait > 0 && ssn->now - job->creation_timestamp < el->min_wait)
        return NOT_STARVING;
    if (el->min_gpus > 1) {
        KbResources need;
        kb_session_job_min_request(job, &need);
        if (need.v[KB_RES_GPU] < (gint64)el->min_gpus * KB_GPU_MILLI)
            return NOT_STARVING;
    }
    if (el->min_nodes <= 1 || nodes_spanned(ssn, job, el) >= el->min_nodes)
        return STARVING;
    return NOT_STARVING;
}

static gint cand_cmp(gconstpointer x, gconstpointer y, gpointer data)
{
    const KbJobInfo *a = *(KbJobInfo *const *)x, *b = *(KbJobInfo *const *)y;
    const Eligibility *el = data;
    const guint8 *st = el->starving;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (st[a->id] != st[b->id])
        return st[a->id] > st[b->id] ? -1 : 1;
    if (st[a->id] == OVERDUE) {
        gint64 da = kb_plugin_sla_deadline(el->sla, a), db = kb_plugin_sla_deadline(el->sla, b);
        if (da != db)
            return da < db ? -1 : 1;
    }
    if (a->creation_timestamp != b->creation_timestamp)
        return a->creation_timestamp < b->creation_timestamp ? -1 : 1;
    return strcmp(a->key, b->key);
}

/*
 * The waiting jobs, by priority, then the jobs past their sla waiting time (the earliest limit
 * first), then the gangs that may get a reservation (starving, see Eligibility) before the
 * others, then age. A starving gang goes before older jobs of the same
 * priority that need no reservation: otherwise each time its reserved capacity frees, an older
 * job that fits it (one node, say) is expected to start first and takes it, and the gang's start
 * slips again (measured on the Philly trace: by days, for every 16-GPU gang).
 */
static GPtrArray *candidates(KbSession *ssn, Eligibility *el)
{
    GPtrArray *out = g_ptr_array_new();
    for (guint j = 0; j < ssn->jobs->len; j++) {
        KbJobInfo *job = ssn->jobs->pdata[j];
        if (!ssn->job_scratch[j].ready_to_schedule || job->n_state[KB_TASK_PENDING] == 0)
            continue;
        if (job->phase != KB_JOB_PENDING && job->phase != KB_JOB_INQUEUE)
            continue;
        if (occupied(job) >= (guint)job->min_member)
            continue;
        el->starving[job->id] = starving(ssn, job, el);
        g_ptr_array_add(out, job);
    }
    g_ptr_array_sort_with_data(out, cand_cmp, el);
    return out;
}

/* May @job hold a reservation (queue open, not overused)? */
static gboolean may_reserve(KbSession *ssn, KbJobInfo *job, GString *why)
{
    KbQueueInfo *qi = kb_session_job_queue(ssn, job);
    if (qi == NULL || !qi->open)
        return FALSE;
    g_string_truncate(why, 0);
    if (kb_session_overused(ssn, qi, why))
        return FALSE;
    /* Not kb_session_job_enqueueable: it counts the jobs admitted this cycle, which a
     * reservation precedes; within_share checks the share when the job is expected to start. */
    return TRUE;
}

static void needs_clear(GArray *needs)
{
    for (guint c = 0; c < needs->len; c++)
        g_free(g_array_index(needs, Need, c).eligible);
    g_array_set_size(needs, 0);
}

/* The tasks @job still needs to reach minMember, by class, with their eligible nodes. */
static void job_needs(KbReserve *rs, const KbJobInfo *job, GArray *needs)
{
    KbSession *ssn = rs->ssn;
    needs_clear(needs);
    guint want = (guint)job->min_member - occupied(job);
    for (guint i = 0; i < job->tasks->len && want > 0; i++) {
        const KbTaskInfo *t = job->tasks->pdata[i];
        if (t->state != KB_TASK_PENDING)
            continue;
        want--;
        guint c;
        for (c = 0; c < needs->len; c++) {
            Need *nd = &g_array_index(needs, Need, c);
            if (nd->rep->klass == t->klass) {
                nd->count++;
                break;
            }
        }
        if (c < needs->len)
            continue;
        Need nd = {t, t->resreq, 1, g_new0(guint8, MAX(ssn->n_nodes, 1))};
        /* Where the task could run once the node drains: its DRA devices count in the
         * resource vector (free devices now are not the question; allocate checks them). */
        for (guint n = 0; n < ssn->n_nodes; n++)
            nd.eligible[n] = rs->usable[n] &&
                             kb_resources_fit(&t->resreq, &ssn->nodes[n].allocatable) &&
                             kb_session_node_predicate(ssn, t, &ssn->nodes[n], NULL);
        g_array_append_val(needs, nd);
    }
}

/* ---- the timeline --------------------------------------------------------------------------- */

static gint ev_cmp(gconstpointer x, gconstpointer y)
{
    const Ev *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

/* Insert @ev into the sorted @events after every event that sorts equal to it, as appending it
 * and sorting again (a stable sort) would, without sorting the whole timeline once per job. */
static void ev_insert(GArray *events, const Ev *ev)
{
    guint lo = 0, hi = events->len;
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        if (ev_cmp(&g_array_index(events, Ev, mid), ev) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    g_array_insert_val(events, lo, *ev);
}

static void timeline_init(KbReserve *rs)
{
    KbSession *ssn = rs->ssn;
    rs->free_now = g_new0(KbResources, MAX(ssn->n_nodes, 1));
    rs->usable = g_new0(guint8, MAX(ssn->n_nodes, 1));
    rs->started = g_array_new(FALSE, FALSE, sizeof(Ev));
    for (guint n = 0; n < ssn->n_nodes; n++) {
        const KbNodeInfo *ni = &ssn->nodes[n];
        rs->usable[n] =
                ni->present && ni->node != NULL && ni->node->ready && !ni->node->unschedulable;
        rs->free_now[n] = ni->idle;
    }
}

/*
 * The timeline (rs->events), built when a reservation first needs it: most cycles reserve
 * nothing, and reading every running task for it was a tenth of a replay's CPU on the whole
 * Philly trace. The ends of the jobs started meanwhile go in after it is sorted, in the order
 * they came, as when they were added one by one.
 */
static GArray *timeline(KbReserve *rs)
{
    KbSession *ssn = rs->ssn;
    if (rs->events != NULL)
        return rs->events;
    rs->events = g_array_new(FALSE, FALSE, sizeof(Ev));
    for (guint j = 0; j < ssn->jobs->len; j++) {
        const KbJobInfo *job = ssn->jobs->pdata[j];
        /* Most jobs hold nothing (waiting or done): skipped without reading their tasks, whose
         * loads were a third of this action's time on the whole Philly trace. */
        if (job->n_state[KB_TASK_PENDING] + job->n_state[KB_TASK_SUCCEEDED] +
                    job->n_state[KB_TASK_FAILED] ==
            job->tasks->len)
            continue;
        for (guint i = 0; i < job->tasks->len; i++) {
            const KbTaskInfo *t = job->tasks->pdata[i];
            if (t->node_id < 0 || t->state == KB_TASK_PENDING || t->state == KB_TASK_SUCCEEDED ||
                t->state == KB_TASK_FAILED)
                continue;
            gint64 end = task_end(rs, t); /* unknown: sorts last, "never" */
            KbQueueInfo *qi = kb_session_job_queue(ssn, job);
            Ev ev = {end, (guint)t->node_id, qi != NULL ? qi->id : G_MAXUINT, t->resreq};
            g_array_append_val(rs->events, ev);
        }
    }
    g_array_sort(rs->events, ev_cmp);
    for (guint i = 0; i < rs->started->len; i++)
        ev_insert(rs->events, &g_array_index(rs->started, Ev, i));
    return rs->events;
}

/* @job is expected to start now: take its capacity, give it back when it is expected to end. */
static void start_now(KbReserve *rs, KbJobInfo *job, GArray *needs)
{
    guint n = rs->ssn->n_nodes;
    g_autofree guint *take = g_new0(guint, MAX(needs->len * n, 1));
    if (!gang_fit(rs, needs, rs->free_now, take, NULL))
        return;
    gint64 end = add_time(rs->ssn->now, job_runtime(rs, job));
    for (guint c = 0; c < needs->len; c++) {
        const Need *nd = &g_array_index(needs, Need, c);
        for (guint i = 0; i < n; i++) {
            if (take[c * n + i] == 0)
                continue;
            Ev ev = {end, i, G_MAXUINT, {{0}}};
            mul_add(&ev.res, &nd->req, take[c * n + i], 1);
            if (rs->events != NULL)
                ev_insert(rs->events, &ev);
            else
                g_array_append_val(rs->started, ev);
        }
    }
}

/* The holds of earlier reservations as timeline events (negative at start, back at end). */
static GArray *hold_events(KbReserve *rs)
{
    GArray *evs = g_array_new(FALSE, FALSE, sizeof(Ev));
    for (guint r = 0; r < rs->list->len; r++) {
        const KbReservation *rv = &g_array_index(rs->list, KbReservation, r);
        for (guint k = 0; k < rv->n_nodes; k++) {
            Ev on = {rv->start, rv->nodes[k], G_MAXUINT, {{0}}};
            mul_add(&on.res, &rv->amount[k], 1, -1);
            g_array_append_val(evs, on);
            if (rv->end != KB_RESERVE_UNKNOWN) {
                Ev off = {rv->end, rv->nodes[k], G_MAXUINT, rv->amount[k]};
                g_array_append_val(evs, off);
            }
        }
    }
    g_array_sort(evs, ev_cmp);
    return evs;
}

/*
 * Capacity on held nodes as a new job running [t, end) may use it: no more than the budget of
 * any earlier reservation that starts within that window (conservative backfill).
 */
/* Does a job running [t, end) cross the start of hold @hd (which it must then respect)? */
static gboolean hold_in_window(const Hold *hd, gint64 t, gint64 end)
{
    if (t == KB_RESERVE_UNKNOWN || hd->t == KB_RESERVE_UNKNOWN)
        return hd->t > t || t == KB_RESERVE_UNKNOWN;
    return hd->t > t && (end == KB_RESERVE_UNKNOWN || hd->t < end);
}

static void cap_by_holds(KbReserve *rs, KbResources *fr, gint64 t, gint64 end)
{
    for (guint h = 0; h < rs->holds->len; h++) {
        const Hold *hd = &g_array_index(rs->holds, Hold, h);
        if (!hold_in_window(hd, t, end))
            continue;
        for (int s = 0; s < KB_RES_MAX; s++)
            fr[hd->node].v[s] = MIN(fr[hd->node].v[s], hd->budget.v[s]);
    }
}

/* Add the holds of reservation @rv (rank @rank), computed on free capacity @at_start. */
static void add_holds(KbReserve *rs, const KbReservation *rv, guint rank,
                      const KbResources *at_start)
{
    for (guint k = 0; k < rv->n_nodes; k++) {
        guint n = rv->nodes[k];
        Hold h = {rank, n, rv->start, at_start[n], rs->head[n]};
        kb_resources_sub(&h.budget, &rv->amount[k]);
        g_array_append_val(rs->holds, h);
        rs->head[n] = (gint)rs->holds->len - 1;
    }
    /* Earlier holds that this job runs across lose what it takes (it is placed before them). */
    for (guint h = 0; h + rv->n_nodes < rs->holds->len; h++) {
        Hold *hd = &g_array_index(rs->holds, Hold, h);
        if (!hold_in_window(hd, rv->start, rv->end))
            continue;
        for (guint k = 0; k < rv->n_nodes; k++) {
            if (rv->nodes[k] == hd->node)
                kb_resources_sub(&hd->budget, &rv->amount[k]);
        }
    }
}

/* Fill @rv's nodes and amounts from @take (per class x node). */
static void reservation_nodes(KbReserve *rs, KbReservation *rv, GArray *needs, const guint *take)
{
    guint n = rs->ssn->n_nodes;
    rv->nodes = g_new0(guint, MAX(n, 1));
    rv->amount = g_new0(KbResources, MAX(n, 1));
    for (guint i = 0; i < n; i++) {
        KbResources amt = {{0}};
        gboolean any = FALSE;
        for (guint c = 0; c < needs->len; c++) {
            guint k = take[c * n + i];
            if (k == 0)
                continue;
            mul_add(&amt, &g_array_index(needs, Need, c).req, k, 1);
            any = TRUE;
        }
        if (!any)
            continue;
        rv->nodes[rv->n_nodes] = i;
        rv->amount[rv->n_nodes++] = amt;
    }
}

/* Fit counts of a single-class gang per node, kept up to date as the timeline moves. */
typedef struct {
    guint *cnt;
    guint64 total;
} Counts;

static void counts_set(KbReserve *rs, const Need *nd, Counts *k, const KbResources *fr, guint n)
{
    k->total -= k->cnt[n];
    k->cnt[n] = rs->usable[n] && nd->eligible[n] ? fit_count(&nd->req, &fr[n], nd->count) : 0;
    k->total += k->cnt[n];
}

/* Does the gang fit at @t on @fr, as a job running [t, end) that respects earlier holds? */
static gboolean fits_at(KbReserve *rs, GArray *needs, const KbResources *fr, KbResources *capped,
                        Counts *k, gint64 t, gint64 end)
{
    guint n = rs->ssn->n_nodes;
    gboolean capped_any = FALSE;
    for (guint h = 0; h < rs->holds->len && !capped_any; h++)
        capped_any = hold_in_window(&g_array_index(rs->holds, Hold, h), t, end);
    if (needs->len != 1) {
        memcpy(capped, fr, sizeof(KbResources) * n);
        cap_by_holds(rs, capped, t, end);
        return gang_fit(rs, needs, capped, NULL, NULL);
    }
    const Need *nd = &g_array_index(needs, Need, 0);
    if (k->total < nd->count)
        return FALSE;
    if (!capped_any)
        return TRUE;
    /* Only held nodes differ from the counts: recount those. */
    guint64 total = k->total;
    for (guint h = 0; h < rs->holds->len; h++) {
        const Hold *hd = &g_array_index(rs->holds, Hold, h);
        if (!hold_in_window(hd, t, end))
            continue;
        KbResources c = fr[hd->node];
        gboolean seen = FALSE;
        for (guint x = 0; x < rs->holds->len && !seen; x++) {
            const Hold *hx = &g_array_index(rs->holds, Hold, x);
            if (hx->node != hd->node || !hold_in_window(hx, t, end))
                continue;
            if (x < h)
                seen = TRUE; /* node already recounted */
            for (int s = 0; s < KB_RES_MAX; s++)
                c.v[s] = MIN(c.v[s], hx->budget.v[s]);
        }
        if (seen)
            continue;
        guint now_cnt = nd->eligible[hd->node] ? fit_count(&nd->req, &c, nd->count) : 0;
        total = total - k->cnt[hd->node] + MIN(now_cnt, k->cnt[hd->node]);
    }
    return total >= nd->count;
}

/*
 * Walk the timeline (ends of running tasks and earlier holds, in time order) until @job's gang
 * fits; reserve where it fits then. FALSE when it never does (it waits without reservation).
 */
static gboolean reserve_job(KbReserve *rs, KbJobInfo *job, GArray *needs)
{
    KbSession *ssn = rs->ssn;
    guint n = ssn->n_nodes;
    g_autofree KbResources *fr = g_memdup2(rs->free_now, sizeof(KbResources) * MAX(n, 1));
    g_autofree KbResources *capped = g_new(KbResources, MAX(n, 1));
    g_autofree guint *cnt = g_new0(guint, MAX(n, 1));
    Counts k = {cnt, 0};
    g_autoptr(GArray) holds = hold_events(rs);
    timeline(rs);
    gint64 run = job_runtime(rs, job);
    const Need *nd0 = needs->len == 1 ? &g_array_index(needs, Need, 0) : NULL;
    for (guint x = 0; nd0 != NULL && x < n; x++)
        counts_set(rs, nd0, &k, fr, x);
    /*
     * proportion's long-job limit is judged at the start too: a gang reserved where it fits but
     * held back by the limit there kept its nodes empty for as long as its queue stayed over
     * it (measured on Philly --skip 5000: 32-GPU gangs of a queue at the limit, four nodes
     * reserved and idle for up to 24 h). The walk goes on until the queue's GPUs, as its
     * running tasks end, leave room for it.
     */
    gconstpointer prop = kb_session_plugin_state(ssn, "proportion");
    const KbQueueInfo *qi = kb_session_job_queue(ssn, job);
    gint64 q_gpus = qi != NULL ? qi->allocated.v[KB_RES_GPU] : 0, asked_gpus = G_MININT64;
    gboolean held = FALSE;
    guint i = 0, h = 0;
    gint64 t = ssn->now;
    for (;;) {
        /* Apply every event at or before t. */
        while (i < rs->events->len && g_array_index(rs->events, Ev, i).t <= t) {
            const Ev *ev = &g_array_index(rs->events, Ev, i++);
            kb_resources_add(&fr[ev->node], &ev->res);
            if (nd0 != NULL)
                counts_set(rs, nd0, &k, fr, ev->node);
            if (qi != NULL && ev->queue == qi->id)
                q_gpus -= ev->res.v[KB_RES_GPU];
        }
        while (h < holds->len && g_array_index(holds, Ev, h).t <= t) {
            const Ev *ev = &g_array_index(holds, Ev, h++);
            kb_resources_add(&fr[ev->node], &ev->res);
            if (nd0 != NULL)
                counts_set(rs, nd0, &k, fr, ev->node);
        }
        if (fits_at(rs, needs, fr, capped, &k, t, add_time(t, run))) {
            /* The queue's GPUs change only at its own tasks' ends: ask again only then. */
            if (q_gpus != asked_gpus) {
                asked_gpus = q_gpus;
                held = kb_plugin_proportion_long_held(prop, job, q_gpus);
            }
            if (!held)
                break;
        }
        if (i >= rs->events->len && h >= holds->len)
            return FALSE;
        gint64 next = G_MAXINT64;
        if (i < rs->events->len)
            next = g_array_index(rs->events, Ev, i).t;
        if (h < holds->len)
            next = MIN(next, g_array_index(holds, Ev, h).t);
        t = next;
    }
    if (!within_share(rs, job, t))
        return FALSE;
    g_autofree guint *take = g_new0(guint, MAX(needs->len * n, 1));
    memcpy(capped, fr, sizeof(KbResources) * n);
    cap_by_holds(rs, capped, t, add_time(t, run));
    gang_fit(rs, needs, capped, take, rs->free_now);
    KbReservation rv = {job, t, add_time(t, run), 0, NULL, NULL};
    reservation_nodes(rs, &rv, needs, take);
    add_holds(rs, &rv, rs->list->len, fr);
    g_array_append_val(rs->list, rv);
    rs->rank[job->id] = rs->list->len;
    return TRUE;
}

/* ---- admission around the holds ------------------------------------------------------------- */

static gint job_order_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
    return kb_session_job_order(data, *(KbJobInfo *const *)a, *(KbJobInfo *const *)b);
}

/* Idle capacity now: @all over usable nodes, @open what jobs that must respect the holds may use
 * (each node's idle capped by the budgets of its holds). */
static void idle_budgets(KbReserve *rs, KbResources *all, KbResources *open)
{
    KbSession *ssn = rs->ssn;
    kb_resources_clear(all);
    kb_resources_clear(open);
    for (guint i = 0; i < ssn->n_nodes; i++) {
        if (!rs->usable[i])
            continue;
        KbResources idle = ssn->nodes[i].idle, o;
        for (int s = 0; s < KB_RES_MAX; s++)
            idle.v[s] = MAX(idle.v[s], 0);
        o = idle;
        for (gint h = rs->head[i]; h >= 0; h = g_array_index(rs->holds, Hold, h).next) {
            const KbResources *b = &g_array_index(rs->holds, Hold, h).budget;
            for (int s = 0; s < KB_RES_MAX; s++)
                o.v[s] = CLAMP(b->v[s], 0, o.v[s]);
        }
        kb_resources_add(all, &idle);
        kb_resources_add(open, &o);
    }
}

/* A job with nothing placed, neither reserved nor expected to start first: admission is ours. */
static gboolean readmittable(KbReserve *rs, const KbJobInfo *job)
{
    if (rs->rank[job->id] != 0 || rs->first[job->id] || occupied(job) != 0 ||
        job->n_state[KB_TASK_PENDING] == 0 || !rs->ssn->job_scratch[job->id].ready_to_schedule)
        return FALSE;
    return job->phase == KB_JOB_PENDING || job->phase == KB_JOB_INQUEUE;
}

/*
 * enqueue admitted jobs against all idle capacity, the reserved capacity included. A job that
 * would run past a reservation's start may not use that capacity, and while it sits admitted
 * but unplaceable it takes the admission budget of the jobs that could backfill, which then
 * never get admitted: the reserved capacity stays idle. So redo the admission of the jobs with
 * nothing placed, in job order, against two budgets: all idle capacity, and the capacity the
 * holds leave open (for jobs expected to run past the earliest reservation start, or without an
 * estimate). A job that no longer fits goes back to Pending; a Pending one that now fits (a
 * short job, typically) is admitted, if the plugins allow it (enqueueable).
 */
static void admit_around_holds(KbReserve *rs)
{
    KbSession *ssn = rs->ssn;
    if (rs->holds->len == 0)
        return;
    KbResources all, open;
    idle_budgets(rs, &all, &open);
    gint64 first_t = KB_RESERVE_UNKNOWN;
    for (guint h = 0; h < rs->holds->len; h++)
        first_t = MIN(first_t, g_array_index(rs->holds, Hold, h).t);
    g_autoptr(GPtrArray) mine = g_ptr_array_new();
    for (guint j = 0; j < ssn->jobs->len; j++) {
        KbJobInfo *job = ssn->jobs->pdata[j];
        if (readmittable(rs, job)) {
            g_ptr_array_add(mine, job);
        } else if (job->phase == KB_JOB_INQUEUE) {
            KbResources need;
            kb_session_job_min_request(job, &need);
            kb_resources_sub(&need, &job->allocated);
            for (int s = 0; s < KB_RES_MAX; s++) {
                all.v[s] -= MAX(need.v[s], 0);
                open.v[s] -= MAX(need.v[s], 0);
            }
        }
    }
    g_ptr_array_sort_with_data(mine, job_order_cmp, ssn);
    g_autoptr(GString) why = g_string_new(NULL);
    for (guint j = 0; j < mine->len; j++) {
        KbJobInfo *job = mine->pdata[j];
        KbResources need;
        kb_session_job_min_request(job, &need);
        gboolean respects = runs_past(rs, job, first_t);
        gboolean fits =
                kb_resources_fit(&need, &all) && (!respects || kb_resources_fit(&need, &open));
        if (job->phase == KB_JOB_PENDING) {
            g_string_truncate(why, 0);
            if (!fits || !kb_session_job_enqueueable(ssn, job, why))
                continue;
            job->phase = KB_JOB_INQUEUE;
            kb_session_job_enqueued(ssn, job);
        } else if (!fits) {
            job->phase = KB_JOB_PENDING;
            kb_session_job_dequeued(ssn, job);
            kb_session_job_note(ssn, job, "NotEnoughResources",
                                "not admitted: the free capacity is reserved for a waiting gang "
                                "and the job is expected to run past the reservation's start");
            continue;
        }
        for (int s = 0; s < KB_RES_MAX; s++) {
            gint64 slack = MAX(all.v[s] - open.v[s], 0); /* held: backfill takes it first */
            all.v[s] -= need.v[s];
            if (respects)
                open.v[s] -= need.v[s];
            else if (need.v[s] > slack)
                open.v[s] -= need.v[s] - slack;
        }
    }
}

/* ---- the action ----------------------------------------------------------------------------- */

static void reservation_clear(gpointer p)
{
    KbReservation *rv = p;
    g_free(rv->nodes);
    g_free(rv->amount);
}

static KbReserve *reserve_new(KbSession *ssn)
{
    KbReserve *rs = g_new0(KbReserve, 1);
    rs->ssn = ssn;
    rs->list = g_array_new(FALSE, FALSE, sizeof(KbReservation));
    g_array_set_clear_func(rs->list, reservation_clear);
    rs->holds = g_array_new(FALSE, FALSE, sizeof(Hold));
    rs->head = g_new(gint, MAX(ssn->n_nodes, 1));
    for (guint n = 0; n < ssn->n_nodes; n++)
        rs->head[n] = -1;
    rs->runtime = g_new(gint64, MAX(ssn->jobs->len, 1));
    for (guint j = 0; j < ssn->jobs->len; j++)
        rs->runtime[j] = G_MININT64;
    rs->rank = g_new0(guint, MAX(ssn->jobs->len, 1));
    rs->first = g_new0(guint8, MAX(ssn->jobs->len, 1));
    return rs;
}

void kb_reserve_free(KbReserve *rs)
{
    if (rs == NULL)
        return;
    g_array_unref(rs->list);
    g_array_unref(rs->holds);
    g_free(rs->head);
    g_free(rs->runtime);
    g_free(rs->rank);
    g_free(rs->first);
    g_free(rs->free_now);
    g_free(rs->usable);
    if (rs->events != NULL)
        g_array_unref(rs->events);
    if (rs->started != NULL)
        g_array_unref(rs->started);
    g_free(rs);
}

static void reserve_execute(KbSession *ssn)
{
    const KbConfPlugin *cf = kb_conf_find_configuration(ssn->conf, "reserve");
    guint max_res =
            (guint)CLAMP(kb_conf_plugin_arg_double(cf, "maxReservations", 1), 1, KB_RESERVE_MAX);
    guint max_scan =
            (guint)CLAMP(kb_conf_plugin_arg_double(cf, "maxScan", DEFAULT_MAX_SCAN), 1, 1000000);
    kb_reserve_free(ssn->reserve);
    KbReserve *rs = ssn->reserve = reserve_new(ssn);
    if (ssn->cache != NULL)
        kb_history_stamp(kb_cache_history(ssn->cache), ssn->now);
    g_autofree guint8 *starving_by_id = g_new0(guint8, MAX(ssn->jobs->len, 1));
    Eligibility el = {
            kb_conf_arg_duration(cf, "minWait", DEFAULT_MIN_WAIT),
            (guint)CLAMP(kb_conf_plugin_arg_double(cf, "minGPUs", 0), 0, 1000000),
            (guint)CLAMP(kb_conf_plugin_arg_double(cf, "minNodes", DEFAULT_MIN_NODES), 1, 1000000),
            starving_by_id,
            {{0}},
            kb_session_plugin_state(ssn, "sla"),
    };
    largest_node(ssn, &el.largest);
    g_autoptr(GPtrArray) cands = candidates(ssn, &el);
    /*
     * Even without a starving gang the walk below matters: it admits the jobs that fit the idle
     * capacity node by node, where enqueue admits against the cluster's idle total and a job
     * that fits no node (fragmentation) then sits admitted, taking the budget of jobs that fit
     * (measured on the Philly slice: 23.35 h mean JCT when this action returns early without a
     * starving gang, 15.59 h with the walk).
     */
    if (cands->len == 0)
        return;
    timeline_init(rs);
    g_autoptr(GArray) needs = g_array_new(FALSE, FALSE, sizeof(Need));
    g_autoptr(GString) why = g_string_new(NULL);
    for (guint c = 0; c < cands->len && c < max_scan && rs->list->len < max_res; c++) {
        KbJobInfo *job = cands->pdata[c];
        if (!may_reserve(ssn, job, why))
            continue;
        job_needs(rs, job, needs);
        gboolean fits = gang_fit(rs, needs, rs->free_now, NULL, NULL);
        gboolean big = el.starving[job->id] != NOT_STARVING;
        /*
         * A gang that may hold a reservation gets one even when it fits now (starting now):
         * else the capacity it waited for goes, in allocate's job order, to whichever admitted
         * job comes first, and its start slips again (measured: by days).
         */
        if (big && reserve_job(rs, job, needs)) {
            const KbReservation *rv = &g_array_index(rs->list, KbReservation, rs->list->len - 1);
            if (rv->start <= ssn->now && job->phase == KB_JOB_PENDING) {
                job->phase = KB_JOB_INQUEUE;
                kb_session_job_enqueued(ssn, job);
            }
            continue;
        }
        /*
         * Expected to start now; jobs after the first reservation are allocate's. A job that
         * fits is admitted here: the jobs enqueue admitted meanwhile (held off the reserved
         * capacity) would otherwise keep a reserved job out of Inqueue once its capacity is
         * free.
         */
        if (fits && rs->list->len == 0) {
            start_now(rs, job, needs);
            rs->first[job->id] = TRUE;
            if (job->phase == KB_JOB_PENDING) {
                job->phase = KB_JOB_INQUEUE;
                kb_session_job_enqueued(ssn, job);
            }
        }
    }
    needs_clear(needs);
    admit_around_holds(rs);
}

const struct kb_action_ops kb_action_reserve = {
        .name = "reserve",
        .execute = reserve_execute,
};

/* ---- reporting ------------------------------------------------------------------------------ */

const KbReservation *kb_reserve_list(KbSession *ssn, guint *n)
{
    KbReserve *rs = ssn->reserve;
    *n = rs != NULL ? rs->list->len : 0;
    return rs != NULL ? (const KbReservation *)(void *)rs->list->data : NULL;
}

gint64 kb_reserve_queue_gpus(KbSession *ssn, guint queue, const KbJobInfo *job)
{
    KbReserve *rs = ssn->reserve;
    gint64 gpus = 0;
    for (guint r = 0; rs != NULL && r < rs->list->len; r++) {
        const KbReservation *rv = &g_array_index(rs->list, KbReservation, r);
        const KbQueueInfo *qi = kb_session_job_queue(ssn, rv->job);
        if (rv->job == job || qi == NULL || qi->id != queue)
            continue;
        /* A job expected to end by the reserved start leaves the queue before the gang comes:
         * the booking is not its business. */
        if (job != NULL && !runs_past(rs, (KbJobInfo *)job, rv->start))
            continue;
        for (guint k = 0; k < rv->n_nodes; k++)
            gpus += rv->amount[k].v[KB_RES_GPU];
    }
    return gpus;
}

char *kb_reserve_describe(KbSession *ssn, const KbJobInfo *job)
{
    KbReserve *rs = ssn->reserve;
    if (rs == NULL || rs->rank[job->id] == 0)
        return NULL;
    const KbReservation *rv = &g_array_index(rs->list, KbReservation, rs->rank[job->id] - 1);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "reserved %u node%s", rv->n_nodes, rv->n_nodes == 1 ? "" : "s");
    if (rv->start == KB_RESERVE_UNKNOWN) {
        g_string_append(s, ", expected start unknown");
        return g_string_free(s, FALSE);
    }
    gint64 mins = (MAX(rv->start - ssn->now, 0) + 59) / 60;
    if (mins >= 60)
        g_string_append_printf(s,
                               ", expected start in %" G_GINT64_FORMAT "h%02" G_GINT64_FORMAT "m",
                               mins / 60, mins % 60);
    else
        g_string_append_printf(s, ", expected start in %" G_GINT64_FORMAT "m", mins);
    return g_string_free(s, FALSE);
}
