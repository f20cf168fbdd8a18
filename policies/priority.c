/*
 * priority: PriorityClass values order jobs and, within a job, tasks (higher first); a preemptor
 * may only evict tasks of jobs of lower priority (Volcano's preemptableFn between jobs; the
 * preempt action never offers tasks of the preemptor's own job, so those are left alone here).
 */
#include "policies/plugin.h"

static int job_order(gpointer state, const KbJobInfo *a, const KbJobInfo *b)
{
    if (a->priority == b->priority)
        return 0;
    return a->priority > b->priority ? -1 : 1;
}

static int task_order(gpointer state, const KbTaskInfo *a, const KbTaskInfo *b)
{
    if (a->priority == b->priority)
        return 0;
    return a->priority > b->priority ? -1 : 1;
}

static gboolean preemptable(gpointer state, const KbTaskInfo *preemptor, GPtrArray *victims)
{
    for (guint i = victims->len; i-- > 0;) {
        const KbTaskInfo *v = victims->pdata[i];
        if (v->job != preemptor->job && v->job->priority >= preemptor->job->priority)
            g_ptr_array_remove_index(victims, i);
    }
    return TRUE;
}

const struct kb_plugin_ops kb_plugin_priority = {
        .name = "priority",
        .job_order = job_order,
        .task_order = task_order,
        .preemptable = preemptable,
};
