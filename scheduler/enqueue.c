/*
 * enqueue: a Pending job enters Inqueue when its minimum resources (minResources, else the
 * requests of minMember tasks) fit what the plugins allow (proportion: the queue's remaining
 * share) and the cluster's idle capacity left after the jobs already admitted. Jobs that do not
 * fit stay Pending with a condition saying what is short; they never block the others.
 */
#include "scheduler/actions.h"

static gint job_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
    KbSession *ssn = data;
    return kb_session_job_order(ssn, *(KbJobInfo *const *)a, *(KbJobInfo *const *)b);
}

static gboolean usable(const KbNodeInfo *ni)
{
    return ni->present && ni->node != NULL && ni->node->ready && !ni->node->unschedulable;
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
        kb_session_job_note(ssn, job, "NotEnoughResources",
                            "not admitted: the cluster has %s %s free (after admitted jobs), the "
                            "job needs %s to start",
                            f_s, kb_resource_name(short_slot), n_s);
        return;
    }
    kb_resources_sub(free_res, &need);
    job->phase = KB_JOB_INQUEUE;
    kb_session_job_enqueued(ssn, job);
}

static void enqueue_execute(KbSession *ssn)
{
    g_autoptr(GPtrArray) pending = g_ptr_array_new();
    for (guint j = 0; j < ssn->jobs->len; j++) {
        KbJobInfo *job = ssn->jobs->pdata[j];
        if (ssn->job_scratch[j].ready_to_schedule && job->phase == KB_JOB_PENDING)
            g_ptr_array_add(pending, job);
    }
    if (pending->len == 0)
        return;
    g_ptr_array_sort_with_data(pending, job_cmp, ssn);
    KbResources free_res;
    cluster_free(ssn, &free_res);
    g_autoptr(GString) why = g_string_new(NULL);
    for (guint i = 0; i < pending->len; i++)
        try_enqueue(ssn, pending->pdata[i], &free_res, why);
}

const struct kb_action_ops kb_action_enqueue = {
        .name = "enqueue",
        .execute = enqueue_execute,
};
