/*
 * proportion: queues share the cluster by weight (Volcano's water-filling over cpu, memory and
 * nvidia.com/gpu): each round gives every queue not yet satisfied its weight's part of what is
 * left, capped by its capability and by what it asks for (allocated + pending), floored at its
 * guarantee; rounds stop when nothing is left or nobody gains. The result is each queue's
 * deserved share (session->deserved):
 *   queue order  the queue with the smaller allocated/deserved goes first;
 *   overused     a queue whose allocation reached its deserved share in every resource it asks
 *                for gets nothing new;
 *   allocatable  a task fits its queue only if allocated + request stays within deserved;
 *   enqueue      a job is admitted only if its minimum resources fit what is left of the share
 *                after the jobs already admitted (Inqueue) are counted.
 */
#include "policies/plugin.h"

#include <math.h>

static const int slots[] = {KB_RES_CPU, KB_RES_MEMORY, KB_RES_GPU};
#define N_SLOTS G_N_ELEMENTS(slots)

typedef struct {
    KbSession *ssn;
    KbResources *inqueue; /* per queue id: reserved by admitted jobs not yet running */
} Proportion;

typedef struct {
    double des[N_SLOTS];
    gboolean meet;
} Fill;

static gboolean fill_round(KbSession *ssn, Fill *fill, double *remaining)
{
    double total_weight = 0, inc[N_SLOTS] = {0}, dec[N_SLOTS] = {0};
    for (guint q = 0; q < ssn->queues->len; q++) {
        if (!fill[q].meet)
            total_weight += ((KbQueueInfo *)ssn->queues->pdata[q])->weight;
    }
    if (total_weight == 0)
        return FALSE;
    for (guint q = 0; q < ssn->queues->len; q++) {
        const KbQueueInfo *qi = ssn->queues->pdata[q];
        if (fill[q].meet)
            continue;
        gboolean satisfied = TRUE, unchanged = TRUE;
        for (guint i = 0; i < N_SLOTS; i++) {
            int s = slots[i];
            double old = fill[q].des[i];
            /* Fractional shares through every round: rounding each round down starves a queue whose
             * share grows by less than one unit per round (1:3 over 8 GPUs gave 1 and 7). */
            double d = old + remaining[i] * qi->weight / total_weight;
            d = MIN(d, (double)qi->capability.v[s]);
            d = MIN(d, (double)ssn->request[q].v[s]);
            d = MAX(d, (double)qi->guarantee.v[s]);
            fill[q].des[i] = d;
            if ((double)ssn->request[q].v[s] > d)
                satisfied = FALSE;
            if (d != old)
                unchanged = FALSE;
            if (d > old)
                inc[i] += d - old;
            else
                dec[i] += old - d;
        }
        fill[q].meet = satisfied || unchanged;
    }
    gboolean left = FALSE;
    for (guint i = 0; i < N_SLOTS; i++) {
        remaining[i] = MAX(remaining[i] - inc[i] + dec[i], 0);
        left = left || remaining[i] > 1e-6;
    }
    return left;
}

static void compute_deserved(KbSession *ssn)
{
    guint nq = ssn->queues->len;
    g_autofree Fill *fill = g_new0(Fill, MAX(nq, 1));
    double remaining[N_SLOTS];
    for (guint i = 0; i < N_SLOTS; i++)
        remaining[i] = (double)ssn->total.v[slots[i]];
    for (guint q = 0; q < nq; q++) {
        const KbQueueInfo *qi = ssn->queues->pdata[q];
        for (guint i = 0; i < N_SLOTS; i++)
            remaining[i] -= (double)qi->guarantee.v[slots[i]];
    }
    for (guint i = 0; i < N_SLOTS; i++)
        remaining[i] = MAX(remaining[i], 0);
    for (guint round = 0; round < 64 && fill_round(ssn, fill, remaining); round++)
        ;
    for (guint q = 0; q < nq; q++) {
        kb_resources_set_unlimited(&ssn->deserved[q]);
        /* Round up once at the end: 3 equal queues over 8 GPUs deserve 3 each rather than 2,
         * which would leave 2 GPUs idle that no queue may take. */
        for (guint i = 0; i < N_SLOTS; i++)
            ssn->deserved[q].v[slots[i]] = (gint64)ceil(fill[q].des[i] - 1e-9);
    }
}

static gpointer proportion_open(KbSession *ssn, const KbConfPlugin *conf)
{
    Proportion *p = g_new0(Proportion, 1);
    p->ssn = ssn;
    p->inqueue = g_new0(KbResources, MAX(ssn->queues->len, 1));
    compute_deserved(ssn);
    for (guint j = 0; j < ssn->jobs->len; j++) {
        const KbJobInfo *job = ssn->jobs->pdata[j];
        KbQueueInfo *qi = kb_session_job_queue(ssn, job);
        if (qi == NULL || job->phase != KB_JOB_INQUEUE)
            continue;
        KbResources need;
        kb_session_job_min_request(job, &need);
        kb_resources_sub(&need, &job->allocated);
        for (guint i = 0; i < N_SLOTS; i++)
            p->inqueue[qi->id].v[slots[i]] += MAX(need.v[slots[i]], 0);
    }
    return p;
}

static void proportion_close(gpointer state)
{
    Proportion *p = state;
    g_free(p->inqueue);
    g_free(p);
}

static double queue_share(const Proportion *p, const KbQueueInfo *qi)
{
    double share = 0;
    for (guint i = 0; i < N_SLOTS; i++) {
        gint64 d = p->ssn->deserved[qi->id].v[slots[i]];
        gint64 a = qi->allocated.v[slots[i]];
        double s = d > 0 ? (double)a / (double)d : (a > 0 ? 1.0 : 0.0);
        share = MAX(share, s);
    }
    return share;
}

static int queue_order(gpointer state, const KbQueueInfo *a, const KbQueueInfo *b)
{
    double sa = queue_share(state, a), sb = queue_share(state, b);
    if (sa == sb)
        return 0;
    return sa < sb ? -1 : 1;
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

static gboolean overused(gpointer state, const KbQueueInfo *qi, GString *why)
{
    const Proportion *p = state;
    int asked = -1;
    for (guint i = 0; i < N_SLOTS; i++) {
        int s = slots[i];
        if (p->ssn->request[qi->id].v[s] <= qi->allocated.v[s])
            continue; /* nothing more asked for in this resource */
        if (qi->allocated.v[s] < p->ssn->deserved[qi->id].v[s])
            return FALSE;
        if (asked < 0)
            asked = s;
    }
    if (asked < 0)
        return FALSE;
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

static gboolean allocatable(gpointer state, const KbQueueInfo *qi, const KbTaskInfo *task,
                            GString *why)
{
    const Proportion *p = state;
    const KbJobInfo *job = task->job;
    gboolean in_gang = job_placed(job) < (guint)job->min_member;
    for (guint i = 0; i < N_SLOTS; i++) {
        int s = slots[i];
        if (task->resreq.v[s] <= 0)
            continue;
        gint64 deserved = p->ssn->deserved[qi->id].v[s];
        gint64 after = qi->allocated.v[s] + task->resreq.v[s];
        /* Within the gang's minimum, the queue's use before this job started is what counts. */
        gint64 before_job = qi->allocated.v[s] - job->allocated.v[s];
        gboolean over_share = in_gang ? before_job >= deserved : after > deserved;
        if (after > qi->capability.v[s] || over_share) {
            explain(p, qi, s, why);
            return FALSE;
        }
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
    for (guint i = 0; i < N_SLOTS; i++) {
        int s = slots[i];
        if (need.v[s] <= 0)
            continue;
        gint64 used = qi->allocated.v[s] + p->inqueue[qi->id].v[s];
        gint64 deserved = p->ssn->deserved[qi->id].v[s];
        gboolean over_cap = used + need.v[s] > qi->capability.v[s];
        if (over_cap || used >= deserved) {
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
    return TRUE;
}

static void on_job_enqueued(gpointer state, const KbJobInfo *job)
{
    Proportion *p = state;
    KbQueueInfo *qi = kb_session_job_queue(p->ssn, job);
    if (qi == NULL)
        return;
    KbResources need;
    kb_session_job_min_request(job, &need);
    for (guint i = 0; i < N_SLOTS; i++)
        p->inqueue[qi->id].v[slots[i]] += need.v[slots[i]];
}

const struct kb_plugin_ops kb_plugin_proportion = {
        .name = "proportion",
        .open = proportion_open,
        .close = proportion_close,
        .queue_order = queue_order,
        .overused = overused,
        .allocatable = allocatable,
        .job_enqueueable = job_enqueueable,
        .on_job_enqueued = on_job_enqueued,
};
