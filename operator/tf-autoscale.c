/*
 * Grow/shrink decisions for dynamic workers (see tf-autoscale.h).
 */
#include "operator/tf-autoscale.h"

#define DEFAULT_QUEUE "default"

const char *tf_scale_kind_to_string(TfScaleKind kind)
{
    switch (kind) {
    case TF_SCALE_GROW:
        return "Grow";
    case TF_SCALE_SHRINK:
        return "Shrink";
    default:
        return "None";
    }
}

static const char *queue_name(const char *q)
{
    return q != NULL && *q != '\0' ? q : DEFAULT_QUEUE;
}

void tf_autoscale_decide(const KbTfJob *job, gint32 job_priority, const TfWaitingGroup *waiting,
                         guint n_waiting, gint64 idle_gpus, TfScaleDecision *out)
{
    const char *queue = queue_name(job->queue);
    gint32 current = kb_tfjob_effective_replicas(job, KB_TF_WORKER);
    gint64 per_worker = kb_resource_whole_gpus(job->specs[KB_TF_WORKER].requests.v[KB_RES_GPU]);
    const TfWaitingGroup *higher = NULL;
    gint64 need = 0;
    gboolean need_unknown = FALSE;
    guint same_queue = 0;

    out->kind = TF_SCALE_NONE;
    out->workers = current;
    if (!job->dynamic_workers || job->invalid != NULL || kb_tfjob_is_finished(job)) {
        g_snprintf(out->reason, sizeof(out->reason), "job does not scale (%s)",
                   !job->dynamic_workers  ? "enableDynamicWorker is off"
                   : job->invalid != NULL ? "invalid"
                                          : "finished");
        return;
    }
    for (guint i = 0; i < n_waiting; i++) {
        if (g_strcmp0(queue_name(waiting[i].queue), queue) != 0)
            continue;
        same_queue++;
        if (waiting[i].priority <= job_priority)
            continue;
        if (higher == NULL || waiting[i].priority > higher->priority)
            higher = &waiting[i];
        need += MAX(waiting[i].gpus_needed, 0);
        need_unknown |= waiting[i].gpus_needed <= 0;
    }
    if (higher != NULL) {
        if (current <= job->min_workers) {
            g_snprintf(out->reason, sizeof(out->reason),
                       "group %s (priority %d) waits in queue %s but the job is at its minimum "
                       "of %d workers",
                       higher->name, higher->priority, queue, job->min_workers);
            return;
        }
        gint64 remove = current - job->min_workers;
        if (!need_unknown && per_worker > 0)
            remove = MIN(remove, (need + per_worker - 1) / per_worker);
        out->kind = TF_SCALE_SHRINK;
        out->workers = current - (gint32)remove;
        g_snprintf(out->reason, sizeof(out->reason),
                   "group %s (priority %d > %d) waits in queue %s: %d -> %d workers", higher->name,
                   higher->priority, job_priority, queue, current, out->workers);
        return;
    }
    if (same_queue > 0) {
        g_snprintf(out->reason, sizeof(out->reason), "%u group(s) wait in queue %s", same_queue,
                   queue);
        return;
    }
    if (current >= job->max_workers) {
        g_snprintf(out->reason, sizeof(out->reason), "at the maximum of %d workers",
                   job->max_workers);
        return;
    }
    if (per_worker <= 0 || idle_gpus < per_worker) {
        g_snprintf(out->reason, sizeof(out->reason),
                   "%" G_GINT64_FORMAT " idle GPUs, a worker needs %" G_GINT64_FORMAT, idle_gpus,
                   per_worker);
        return;
    }
    gint64 add = MIN(job->max_workers - current, idle_gpus / per_worker);
    out->kind = TF_SCALE_GROW;
    out->workers = current + (gint32)add;
    g_snprintf(out->reason, sizeof(out->reason),
               "%" G_GINT64_FORMAT " idle GPUs and nothing waits in queue %s: %d -> %d workers",
               idle_gpus, queue, current, out->workers);
}
