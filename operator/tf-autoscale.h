/*
 * Autoscaling decisions for dynamic-worker TFJobs (spec.enableDynamicWorker with the
 * kube-batchd.io/min-workers and kube-batchd.io/max-workers annotations). Pure.
 *
 *   grow:   the cluster has idle GPUs, nothing waits in the job's queue, and the job is below its
 *           maximum: add as many workers as the idle GPUs hold (bounded by the maximum);
 *   shrink: a group of higher priority waits in the same queue and the job is above its minimum:
 *           remove enough workers to free the GPUs that group needs (all the way to the minimum
 *           when its need is unknown);
 *   none:   otherwise; the reason says why.
 */
#pragma once

#include <glib.h>

#include "kube/kb-tfjob.h"

typedef struct {
    const char *name;  /* "ns/name" of the waiting group, for the reason */
    const char *queue; /* NULL means the default queue */
    gint32 priority;
    gint64 gpus_needed; /* GPUs the group lacks to start; 0 when unknown */
} TfWaitingGroup;

typedef enum {
    TF_SCALE_NONE,
    TF_SCALE_GROW,
    TF_SCALE_SHRINK,
} TfScaleKind;

typedef struct {
    TfScaleKind kind;
    gint32 workers; /* the worker count after the decision (the current one for NONE) */
    char reason[256];
} TfScaleDecision;

/*
 * Decide for @job of priority @job_priority. @waiting: the groups waiting for resources in the
 * cluster (the job's own group left out by the caller); @idle_gpus: GPUs free in the cluster.
 */
void tf_autoscale_decide(const KbTfJob *job, gint32 job_priority, const TfWaitingGroup *waiting,
                         guint n_waiting, gint64 idle_gpus, TfScaleDecision *out);
const char *tf_scale_kind_to_string(TfScaleKind kind);
