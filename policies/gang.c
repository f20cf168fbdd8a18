/*
 * gang: a job is ready when minMember of its tasks hold a node (allocated, binding, bound,
 * running) or succeeded; jobs that are not ready yet go before ready ones (Volcano's order), so
 * that a running job's extra tasks never starve a gang waiting to start.
 */
#include "policies/plugin.h"

static guint ready_tasks(const KbJobInfo *job)
{
    return job->n_state[KB_TASK_ALLOCATED] + job->n_state[KB_TASK_BINDING] +
           job->n_state[KB_TASK_BOUND] + job->n_state[KB_TASK_RUNNING] +
           job->n_state[KB_TASK_SUCCEEDED];
}

static gboolean job_ready(gpointer state, const KbJobInfo *job)
{
    return ready_tasks(job) >= (guint)job->min_member;
}

static gboolean job_pipelined(gpointer state, const KbJobInfo *job)
{
    return job_ready(state, job);
}

static int job_order(gpointer state, const KbJobInfo *a, const KbJobInfo *b)
{
    gboolean ra = job_ready(state, a), rb = job_ready(state, b);
    if (ra == rb) {
        /* A gang partly on nodes (a member's binding failed for certain, or was evicted) holds
         * resources while it waits: it is placed again first. */
        gboolean pa = !ra && ready_tasks(a) > 0, pb = !rb && ready_tasks(b) > 0;
        return pa == pb ? 0 : pa ? -1 : 1;
    }
    return ra ? 1 : -1;
}

const struct kb_plugin_ops kb_plugin_gang = {
        .name = "gang",
        .job_order = job_order,
        .job_ready = job_ready,
        .job_pipelined = job_pipelined,
};
