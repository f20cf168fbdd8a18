/*
 * One job explained: its JSON view, what a waiting job is short of, the paragraph `kbctl why`
 * prints, and the events about it.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "cli/kbctl-view.h"

/* What a job that waits would need, against what the cluster and its queue have now. */
typedef struct {
    guint n_unbound;         /* its pods not yet placed */
    gint64 need_gpus;        /* their GPUs */
    gint64 pod_gpus_max;     /* the largest GPU request among them */
    gint64 free_total;       /* free GPUs on Ready, schedulable nodes */
    gint64 free_largest;     /* the most free GPUs on one node */
    gint64 cluster_gpus;     /* allocatable GPUs of Ready, schedulable nodes */
    gint64 node_gpus_max;    /* the most allocatable GPUs of one such node */
    gint64 job_gpus;         /* GPUs of all its pods not finished, placed or not */
    guint fit_pods;          /* how many of them fit the free GPUs now (first fit, largest first) */
    gint64 queue_capability; /* GPUs; -1: no cap */
    gint64 queue_deserved;   /* GPUs; -1: unknown */
    gint64 queue_allocated;
    gint64 queue_weight; /* 0 when the queue has no object */
    gint32 min_member;   /* the PodGroup's, 0 without one */
} KbctlShort;

/* Fill @s for @job (nodes, all pods and queues loaded). */
void kbctl_job_short(const KbctlWorld *w, const KbctlJob *job, KbctlShort *s);

/* A job's summary as a new JSON object (name, namespace, status, trainer, created, gpus,
 * queue, nodes); @detail adds replicas, podGroup, waiting (condition, shortage, why) and events. */
json_object *kbctl_job_json(const KbctlWorld *w, const KbctlJob *job, gboolean detail);

/* Why @job is in its state and what would change it: one paragraph, newly allocated. */
char *kbctl_job_why(const KbctlWorld *w, const KbctlJob *job);

/* Events whose involvedObject is the job, its PodGroup or one of its pods, oldest first, the
 * last @max of them; each {"lastSeen","type","reason","object","message","count"}. New array. */
json_object *kbctl_job_events(const KbctlWorld *w, const KbctlJob *job, guint max);

/* Free GPUs per Ready node with any free: "gpu-1 8, gpu-3 4 (2 nodes have none)", at most @max
 * named; newly allocated. @json, when not NULL, receives {node: free} for every such node. */
char *kbctl_free_per_node(const KbctlWorld *w, guint max, json_object *json);

/* "24 GPUs held by default/mnist (16), team-b/bert (8)": the jobs holding GPUs, largest first,
 * @job excluded, at most @max named; newly allocated, "" when none. */
char *kbctl_gpu_holders(const KbctlWorld *w, const KbctlJob *job, guint max);
