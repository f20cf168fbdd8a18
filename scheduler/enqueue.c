/*
 * enqueue: a Pending job enters Inqueue when its minimum resources (minResources, else the
 * requests of minMember tasks) fit what the plugins allow (proportion: the queue's remaining
 * share) and the cluster's idle capacity left after the jobs already admitted. Jobs that do not
 * fit stay Pending with a condition saying what is short; they never block the others.
 */
#include "scheduler/actions.h"
#include "scheduler/dra.h"

/* What of @job's DRA claims asks for @slot, appended to @why as " (...)" (nothing when none). */
static void describe_dra(KbSession *ssn, const KbJobInfo *job, int slot, GString *why)
{
    for (guint i = 0; i < job->tasks->len; i++) {
        const KbTaskInfo *t = job->tasks->pdata[i];
        if (t->state != KB_TASK_PENDING || t->pod->n_resource_claims == 0 ||
            t->resreq.v[slot] == t->pod->requests.v[slot])
            continue;
        g_autoptr(GString) d = g_string_new(NULL);
        if (kb_dra_describe_demand(kb_cache_dra(ssn->cache), t->pod, slot, d))
            g_string_append_printf(why, " (each pod's %s)", d->str);
        return;
    }
}

/* Queue order (proportion: the least served queue first), then job order. */
static gint job_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
    KbSession *ssn = data;
    const KbJobInfo *ja = *(KbJobInfo *const *)a, *jb = *(KbJobInfo *const *)b;
    const KbQueueInfo *qa = kb_session_job_queue(ssn, ja), *qb = kb_session_job_queue(ssn, jb);
    if (qa != qb && qa != NULL && qb != NULL) {
        int c = kb_session_queue_order(ssn, qa, qb);
        if (c != 0)
            return c;
    }
    return kb_session_job_order(ssn, ja, jb);
}

static gboolean usable(const KbNodeInfo *ni)
{
    return ni->present && ni->node != NULL && ni->node->ready && !ni->node->unschedulable;
}

static guint placed(const KbJobInfo *job)
{
    return job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
           job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING];
}

/* Idle capacity of usable nodes minus what admitted (Inqueue) jobs have reserved. */
static void cluster_free(KbSession *ssn, KbResources *out)
{
    kb_resources_clear(out);
    for (guint i = 0; i < ssn->n_nodes; i++) {
        const KbNodeInfo *ni = &ssn->nodes[i];
        if (!usable(ni))
            continue;
        for (int s = 0; s < KB_RES_MAX; s++)
            out->v[s] += MAX(ni->idle.v[s], 0);
    }
    for (guint j = 0; j < ssn->jobs->len; j++) {
        const KbJobInfo *job = ssn->jobs->pdata[j];
        if (job->phase != KB_JOB_INQUEUE)
            continue;
        KbResources need;
        kb_session_job_min_request(job, &need);
        kb_resources_sub(&need, &job->allocated);
        for (int s = 0; s < KB_RES_MAX; s++)
            out->v[s] -= MAX(need.v[s], 0);
    }
}

static void try_enqueue(KbSession *ssn, KbJobInfo *job, KbResources *free_res, GString *why)
{
    KbResources need;
    g_string_truncate(why, 0);
    if (!kb_session_job_enqueueable(ssn, job, why)) {
        kb_session_job_note(ssn, job, "NotEnoughResources", "not admitted: %s", why->str);
        return;
    }
    kb_session_job_min_request(job, &need);
    int short_slot = kb_resources_first_short(&need, free_res);
    if (short_slot >= 0) {
        g_autofree char *n_s = kb_resource_format_value(short_slot, need.v[short_slot]);
        g_autofree char *f_s =
                kb_resource_format_value(short_slot, MAX(free_res->v[short_slot], 0));
        g_string_truncate(why, 0);
        describe_dra(ssn, job, short_slot, why);
        kb_session_job_note(ssn, job, "NotEnoughResources",
                            "not admitted: the cluster has %s %s free (after admitted jobs), the "
                            "job needs %s to start%s",
                            f_s, kb_resource_name(short_slot), n_s, why->str);
        return;
    }
    kb_resources_sub(free_res, &need);
    job->phase = KB_JOB_INQUEUE;
    kb_session_job_enqueued(ssn, job);
}

/*
 * Admit @sorted (by job_cmp: each queue's jobs together, queues in queue order) one job per queue
 * a round, the queues in queue order each round. In job order alone, the jobs of a queue holding
 * most of the cluster were admitted ahead of a starved queue's and took the idle capacity's
 * budget, and allocate places only admitted jobs (measured on the Philly slice: docs/benchmarks.md,
 * "bench-trace"); in queue order alone, the first queue's jobs took the budget up to its whole
 * share before the next queue's first job (the queue order does not change while jobs are only
 * admitted).
 */
static void round_robin(KbSession *ssn, GPtrArray *sorted, KbResources *free_res, GString *why)
{
    g_autoptr(GArray) next = g_array_new(FALSE, FALSE, sizeof(guint)); /* a queue's next job */
    g_autoptr(GArray) end = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint i = 0; i < sorted->len; i++) {
        if (i == 0 || kb_session_job_queue(ssn, sorted->pdata[i]) !=
                              kb_session_job_queue(ssn, sorted->pdata[i - 1])) {
            g_array_append_val(next, i);
            g_array_append_val(end, i);
        }
        g_array_index(end, guint, end->len - 1) = i + 1;
    }
    for (gboolean more = TRUE; more;) {
        more = FALSE;
        for (guint q = 0; q < next->len; q++) {
            guint *i = &g_array_index(next, guint, q);
            if (*i >= g_array_index(end, guint, q))
                continue;
            try_enqueue(ssn, sorted->pdata[(*i)++], free_res, why);
            more = TRUE;
        }
    }
}

/*
 * Admission is decided again every cycle for the admitted jobs that have nothing placed yet: they
 * go back to Pending here and are admitted again in queue and job order with the Pending ones.
 * Admitted once and kept, a job that cannot be placed (its queue's share, fragmentation) held its
 * part of the idle capacity for good, and the jobs admitted later, of a less served queue or
 * smaller, waited behind it with GPUs idle.
 */
static void enqueue_execute(KbSession *ssn)
{
    g_autoptr(GPtrArray) pending = g_ptr_array_new();
    for (guint j = 0; j < ssn->jobs->len; j++) {
        KbJobInfo *job = ssn->jobs->pdata[j];
        if (!ssn->job_scratch[j].ready_to_schedule)
            continue;
        if (job->phase == KB_JOB_INQUEUE && placed(job) == 0) {
            job->phase = KB_JOB_PENDING;
            kb_session_job_dequeued(ssn, job);
        }
        if (job->phase == KB_JOB_PENDING)
            g_ptr_array_add(pending, job);
    }
    if (pending->len == 0)
        return;
    g_ptr_array_sort_with_data(pending, job_cmp, ssn);
    KbResources free_res;
    cluster_free(ssn, &free_res);
    g_autoptr(GString) why = g_string_new(NULL);
    round_robin(ssn, pending, &free_res, why);
}

const struct kb_action_ops kb_action_enqueue = {
        .name = "enqueue",
        .execute = enqueue_execute,
};
