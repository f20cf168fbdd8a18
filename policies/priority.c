/* priority: PriorityClass values order jobs and, within a job, tasks (higher first). */
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

const struct kb_plugin_ops kb_plugin_priority = {
        .name = "priority",
        .job_order = job_order,
        .task_order = task_order,
};
