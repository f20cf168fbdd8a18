/*
 * backfill, as kube-batch shipped it: pending pods that request no resources (BestEffort; only
 * the pod count) are placed on the first node, in node order, that passes the predicates and has
 * a pod slot left. Pods that request anything are allocate's. A job's placements commit when it
 * reaches minMember, else they are undone (kube-batch's statement semantics).
 */
#include "scheduler/actions.h"

static gboolean best_effort(const KbTaskInfo *t)
{
    for (int s = 0; s < KB_RES_MAX; s++) {
        if (s != KB_RES_PODS && t->resreq.v[s] != 0)
            return FALSE;
    }
    return TRUE;
}

static gint first_node(KbSession *ssn, const KbTaskInfo *t)
{
    for (guint n = 0; n < ssn->n_nodes; n++) {
        const KbNodeInfo *ni = &ssn->nodes[n];
        if (!ni->present || !kb_resources_fit(&t->resreq, &ni->idle))
            continue;
        if (kb_session_predicate(ssn, t, ni, NULL))
            return (gint)n;
    }
    return -1;
}

static void backfill_job(KbSession *ssn, KbJobInfo *job, GPtrArray *placed)
{
    g_ptr_array_set_size(placed, 0);
    for (guint i = 0; i < job->tasks->len; i++) {
        KbTaskInfo *t = job->tasks->pdata[i];
        if (t->state != KB_TASK_PENDING || !best_effort(t))
            continue;
        gint n = first_node(ssn, t);
        if (n < 0)
            break;
        kb_session_allocate(ssn, t, &ssn->nodes[n]);
        g_ptr_array_add(placed, t);
    }
    if (placed->len == 0)
        return;
    if (!kb_session_job_ready(ssn, job)) {
        for (guint i = placed->len; i-- > 0;)
            kb_session_deallocate(ssn, placed->pdata[i]);
        return;
    }
    guint first = ssn->result->placements->len;
    for (guint i = 0; i < placed->len; i++) {
        KbTaskInfo *t = placed->pdata[i];
        KbPlacement p = {kb_object_ref(t->pod), ssn->nodes[t->node_id].name, g_strdup(job->key),
                         kb_cache_gpu_ids_format(t->gpu_ids)};
        g_array_append_val(ssn->result->placements, p);
    }
    kb_cycle_attach_claim_writes(ssn->result, ssn->cache, first);
    ssn->job_scratch[job->id].n_placed += placed->len;
    ssn->result->n_jobs_placed++;
}

static void backfill_execute(KbSession *ssn)
{
    g_autoptr(GPtrArray) placed = g_ptr_array_new();
    for (guint j = 0; j < ssn->jobs->len; j++) {
        KbJobInfo *job = ssn->jobs->pdata[j];
        if (!ssn->job_scratch[j].ready_to_schedule || job->n_state[KB_TASK_PENDING] == 0)
            continue;
        backfill_job(ssn, job, placed);
    }
}

const struct kb_action_ops kb_action_backfill = {
        .name = "backfill",
        .execute = backfill_execute,
};
