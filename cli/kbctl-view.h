/*
 * What kbctl knows about the cluster for one command: TFJobs with their PodGroups and pods, nodes,
 * queues and events, loaded with a handful of list calls and joined here. Every figure a command
 * prints (a job's status, GPUs requested and allocated, what a waiting job is short of, the GPU
 * index each pod holds) is computed in this module, so that `list`, `get`, `why` and `top` agree.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "cli/kbctl-dra.h"
#include "cli/kbctl.h"
#include "kube/kb-objects.h"
#include "kube/kb-tfjob.h"

#define KBCTL_LABEL_JOB_NAME      "training.kubeflow.org/job-name"
#define KBCTL_LABEL_REPLICA_TYPE  "training.kubeflow.org/replica-type"
#define KBCTL_LABEL_REPLICA_INDEX "training.kubeflow.org/replica-index"
#define KBCTL_ANNOTATION_GPU_IDS  "kube-batchd.io/gpu-ids"
#define KBCTL_LABEL_GPU_PRODUCT   "nvidia.com/gpu.product"
#define KBCTL_MAX_EVENTS          10 /* recent events shown by get */

typedef enum {
    KBCTL_LOAD_ALL_PODS = 1 << 0, /* every pod of the cluster (node usage), not only the jobs' */
    KBCTL_LOAD_NODES = 1 << 1,
    KBCTL_LOAD_QUEUES = 1 << 2,
    KBCTL_LOAD_EVENTS = 1 << 3,
    KBCTL_LOAD_NO_JOBS = 1 << 4, /* no TFJobs (node and queue views work without the CRD) */
    KBCTL_LOAD_DRA = 1 << 5,     /* ResourceSlices and ResourceClaims: which device serves whom */
} KbctlLoad;

typedef struct {
    KbTfJob *tf;           /* owned */
    json_object *raw;      /* owned reference: the TFJob as served */
    json_object *group;    /* borrowed from the world; NULL before the operator made it */
    GPtrArray *pods;       /* KbPod*, borrowed, in replica order (chief, master, ps, worker, ...) */
    const char *status;    /* static: Pending, Waiting, Starting, Running, Restarting, Succeeded,
                              Failed */
    char *queue;           /* the group's queue, else the job's, else "default" */
    gint64 gpus_requested; /* every replica the job runs, per its spec */
    gint64 gpus_allocated; /* GPUs of its pods bound to a node and not finished */
    GPtrArray *nodes;      /* char*, the distinct nodes of its bound pods, sorted */
    gint64 start_time;     /* unix seconds, 0 before it started */
    const char *wait_reason;  /* the PodGroup's Unschedulable condition, borrowed; NULL if none */
    const char *wait_message; /* idem */
    /* The PodGroup's GangIncomplete condition (status True: a bound gang lost a member),
     * borrowed; NULL if none. */
    const char *incomplete_reason;
    const char *incomplete_message;
    /* Of the PodGroup's Scheduled condition (status True), the note that the job runs on borrowed
     * GPUs (from KB_BORROWED_NOTE on), borrowed; NULL if none. */
    const char *borrowed_note;
} KbctlJob;

typedef struct {
    gint64 now;
    const char *namespace_; /* NULL: all namespaces */
    GPtrArray *jobs;        /* KbctlJob*, sorted by namespace and name */
    GPtrArray *pods;        /* KbPod* (meta.raw kept) */
    GPtrArray *nodes;       /* KbNode* (meta.raw kept), sorted by name */
    GPtrArray *queues;      /* json_object* (one per name; Volcano's wins), sorted by name */
    GHashTable *groups;     /* "ns/name" -> json_object* (PodGroup, Volcano dialect) */
    /* "ns/name" -> json_object*: Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1), where
     * the server serves them and the user may list them; a job whose pods name one in
     * spec.schedulingGroup (tf-operator --gang-api native) is shown with its conditions. */
    GHashTable *native_groups;
    json_object *events; /* array of core/v1 Events, may be NULL */
    KbctlDra *dra;       /* with KBCTL_LOAD_DRA, else NULL */
} KbctlWorld;

/*
 * Load TFJobs of @namespace_ (NULL: all namespaces; @job: only that one, KBCTL_ERROR_NOT_FOUND
 * naming it when it does not exist), their PodGroups and pods, and what @what asks for. A missing
 * CRD (PodGroup, Queue) counts as none; a missing TFJob CRD is an error that says so.
 */
KbctlWorld *kbctl_world_load(KbClient *client, const char *namespace_, const char *job, guint what,
                             gint64 now, GError **error);
void kbctl_world_free(KbctlWorld *w);
/* The one job of a world loaded for job @namespace_/@name, or NULL with an error naming it when
 * its TFJob could not be decoded. */
const KbctlJob *kbctl_world_job(const KbctlWorld *w, const char *namespace_, const char *name,
                                GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbctlWorld, kbctl_world_free)

/* "worker-0" for a pod of a TFJob (from its labels), else the pod name. Newly allocated. */
char *kbctl_pod_replica(const KbPod *pod);
/* The pod's GPU count (requests, limits standing in) and its kube-batchd.io/gpu-ids (NULL). */
gint64 kbctl_pod_gpus(const KbPod *pod);
const char *kbctl_pod_gpu_ids(const KbPod *pod);
/* "Running", "Pending", ... or "Terminating"; plus "Waiting" for an unbound pod. Static. */
const char *kbctl_pod_status(const KbPod *pod);
/* The pod's restarts (sum over containers). */
gint kbctl_pod_restarts(const KbPod *pod);
/* A node's GPUs: allocatable, and allocated to its non-finished pods in @w. */
gint64 kbctl_node_gpus(const KbNode *node);
gint64 kbctl_node_gpus_allocated(const KbctlWorld *w, const KbNode *node);
gboolean kbctl_node_ready(const KbNode *node);

/* A queue's GPU figures: capability (-1 unlimited), deserved (-1 unknown), allocated (from its
 * status when kube-batchd wrote it, else summed from the pods of its groups). */
gint64 kbctl_queue_gpus(json_object *queue, const char *field);
gint64 kbctl_queue_deserved_gpus(json_object *queue);
gint64 kbctl_queue_allocated_gpus(const KbctlWorld *w, json_object *queue);

/* A PodGroup's minimum: spec.minMember, or Kubernetes' own spec.schedulingPolicy.gang.minCount;
 * @fallback when it has neither. */
gint64 kbctl_group_min_member(json_object *group, gint64 fallback);
/* A queue's deserved share as a ResourceList (name -> quantity, zeros but the GPUs' left out) from
 * the per-resource status kube-batchd writes (`status.resources[NAME].deserved`); an older
 * kube-batchd's `status.deserved` is read as is. NULL when the status has neither. New reference.
 */
json_object *kbctl_queue_deserved(json_object *queue);
/* Resources of a ResourceList as "gpu 8, cpu 16, memory 64Gi" ("-" when absent). */
char *kbctl_resource_list_string(json_object *list);
