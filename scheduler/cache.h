/*
 * The scheduler's cluster cache: nodes, jobs (pod groups), tasks (pods), queues and priority
 * classes, kept as compact records that the scheduling cycle reads without parsing anything.
 *
 * Feeding it: the daemon's informer handlers call kb_cache_{add,update,delete}_* with the decoded
 * records of kube/kb-objects.h. The cache takes its own reference on every record it keeps
 * (kb_object_ref); the caller keeps its own. Everything runs on the thread that owns the cache
 * (the main loop); the cycle (scheduler/cycle.h) runs on the same thread between events.
 *
 * Model:
 * - Nodes sit in an array indexed by a stable id. A node's `used` vector is the sum of the requests
 *   of every non-terminated pod bound to it (pods of every scheduler) plus the pods this scheduler
 *   assumed onto it; `idle` = allocatable - used. A pod bound to a node the cache has not seen yet
 *   is counted as soon as the node arrives.
 * - A job is a pod group (any of the three dialects, keyed "namespace/name") or, for a pod with no
 *   group, a gang of one keyed by the pod. Pods naming a group that does not exist yet are kept
 *   and wait (the job is "group missing" and is not scheduled).
 * - A CompositePodGroup (scheduling.k8s.io/v1alpha3) is one job with the pods of every PodGroup
 *   naming it as parent (scheduler/subgroup.h). A pod's job is resolved when it enters the cache:
 *   its PodGroup's parent when the group names one (whether or not the composite exists yet: the
 *   job waits as "group missing", so no child starts alone), else its group. When a child's
 *   parent link appears, changes or goes, only its pods still Pending with no node move to the
 *   new job; placed, binding and running ones stay where they are and are never dropped.
 * - A task is a pod served by this scheduler (spec.schedulerName one of the served names). Pods of
 *   other schedulers only consume node resources.
 * - Tasks placed by a cycle are "allocated" (assumed) until the watch shows spec.nodeName; the
 *   binder reports the outcome (kb_cache_bind_succeeded / _unknown / _elsewhere / _failed). Only
 *   a binding that certainly failed releases its pod; the other members keep their places.
 * - A job naming a queue that does not exist gets a condition and waits; the default queue's name
 *   is an option (the default queue is implicit: it exists with weight 1 even without an object).
 * - Task priority: the pod's spec.priority when set, else the value of its priorityClassName, else
 *   the value of the global-default PriorityClass, else 0.
 */
#pragma once

#include <glib.h>

#include "kube/kb-objects.h"
#include "kube/kb-resource.h"
#include "scheduler/history.h"
#include "scheduler/usage.h"

typedef enum {
    KB_TASK_PENDING,   /* waiting for a node */
    KB_TASK_ALLOCATED, /* assumed on a node by a cycle; bind not yet reported */
    KB_TASK_BINDING,   /* bind succeeded; waiting for the watch to show spec.nodeName */
    KB_TASK_BOUND,     /* spec.nodeName set, phase Pending */
    KB_TASK_RUNNING,
    KB_TASK_SUCCEEDED,
    KB_TASK_FAILED,
    KB_TASK_RELEASING, /* being deleted (deletionTimestamp set) while on a node */
    KB_TASK_N_STATES
} KbTaskState;

typedef enum {
    KB_JOB_PENDING,
    KB_JOB_INQUEUE,
    KB_JOB_RUNNING,
    KB_JOB_UNKNOWN,
    KB_JOB_COMPLETED,
} KbJobPhase;

typedef struct KbJobInfo KbJobInfo;
typedef struct KbTaskClass KbTaskClass;

/*
 * GPU placement (the gpu-topology plugin reads these; the cache fills them on ingest).
 *
 * Node annotation KB_GPU_TOPOLOGY_ANNOTATION, a JSON object whose members are levels of closeness,
 * each a list of disjoint groups of GPU indices (0..63):
 *   kube-batchd.io/gpu-topology: '{"nvlink":[[0,1,2,3],[4,5,6,7]],"pcie":[[0,1],[2,3],[4,5],[6,7]],
 *                                   "numa":[[0,1,2,3],[4,5,6,7]]}'
 * "nvlink" lists the NVLink islands (a GPU it does not name is an island of its own), "pcie" the
 * GPUs behind one PCIe switch, "numa" the GPUs of one NUMA node; every level is optional and other
 * members are ignored (room for later levels). A node without the annotation, or whose annotation
 * is malformed, is one island of all its GPUs. The node's GPU indices are those the annotation
 * names plus 0..n-1 for its n allocatable nvidia.com/gpu (at most KB_GPU_MAX).
 *
 * Pod annotation KB_GPU_IDS_ANNOTATION: the GPU indices a pod holds, "0,1" (decimal, comma
 * separated, no duplicates). Written by the binder from KbPlacement.gpu_ids before the binding; a
 * device plugin or the container runtime's NVIDIA_VISIBLE_DEVICES hook reads it.
 */
#define KB_GPU_TOPOLOGY_ANNOTATION "kube-batchd.io/gpu-topology"
#define KB_GPU_IDS_ANNOTATION      "kube-batchd.io/gpu-ids"
#define KB_RACK_LABEL              "topology.kubernetes.io/rack"
#define KB_ZONE_LABEL              "topology.kubernetes.io/zone"
#define KB_GPU_MAX                 64    /* GPU indices per node: one guint64 bitmask */
#define KB_GPU_TOPOLOGY_MAX_BYTES  16384 /* longest topology annotation accepted */
#define KB_GPU_IDS_MAX_BYTES       256   /* longest gpu-ids annotation accepted */
#define KB_GPU_INLINE_ISLANDS      4     /* NVLink islands copied into KbNodeInfo */

typedef enum {
    KB_GPU_LEVEL_NVLINK, /* closest: GPUs that share an NVLink island */
    KB_GPU_LEVEL_PCIE,   /* behind one PCIe switch */
    KB_GPU_LEVEL_NUMA,   /* on one NUMA node */
    KB_GPU_N_LEVELS
} KbGpuLevel;

/* A node's GPU topology: per level, disjoint groups (bitmasks of GPU indices). */
typedef struct {
    guint64 all;                      /* every GPU index of the node */
    guint first[KB_GPU_N_LEVELS + 1]; /* level l is groups[first[l] .. first[l + 1]) */
    guint64 groups[];                 /* non-empty masks */
} KbGpuTopology;

/* A node. Read-only outside the cache and the cycle. */
typedef struct {
    guint id;
    const char *name; /* interned */
    KbNode *node;     /* ref; NULL while only known through pods bound to it */
    gboolean present; /* the Node object exists */
    KbResources allocatable;
    KbResources used; /* pods bound or assumed here, every scheduler */
    KbResources idle; /* allocatable - used */
    guint n_pods;     /* pods counted in used */
    /* Added for gpu-topology. */
    const char *rack;                  /* interned KB_RACK_LABEL value, NULL when absent */
    const char *zone;                  /* interned KB_ZONE_LABEL value, NULL when absent */
    const KbGpuTopology *gpu_topology; /* owned by the cache; NULL when the node has no GPU */
    guint64 gpu_used;                  /* GPU indices held by the pods counted in used */
    /* Copies from gpu_topology kept inline: node scoring reads them for every candidate node. */
    guint64 gpu_all;                            /* gpu_topology->all; 0 without GPU */
    guint n_gpu_islands;                        /* NVLink islands in gpu_topology */
    guint64 gpu_islands[KB_GPU_INLINE_ISLANDS]; /* the first of them */
    /* When a cycle first saw the node NotReady or gone (seconds; scheduler/stale.c), 0 while it
     * is Ready. */
    gint64 lost_since;
} KbNodeInfo;

/* A pod served by this scheduler. */
typedef struct {
    KbPod *pod;         /* ref, replaced on update */
    KbJobInfo *job;     /* the job the task belongs to */
    KbTaskClass *klass; /* equivalence class within the job (same template) */
    KbTaskState state;
    gint node_id;       /* -1 when not on a node */
    gint32 priority;    /* effective priority (see top of file) */
    KbResources resreq; /* pod requests */
    gint64 bind_time;   /* monotonic-ish "now" when the bind succeeded (BINDING) */
    guint index;        /* position in job->tasks */
    /* GPU indices chosen by the cycle (gpu-topology) while ALLOCATED..RUNNING; 0 when none. */
    guint64 gpu_ids;
    /* Evicted by a cycle (preempt/reclaim): RELEASING until the pod is gone, whatever the watch
     * says meanwhile, unless the eviction is reported failed (kb_cache_evict_failed). */
    gboolean evicting;
    /* Set by each cycle for a pending task that must not be placed yet (schedulingGates, a
     * claim not Bound); why in the job's condition. */
    gboolean held;
    /* ALLOCATED after a certain binding failure, its room kept for a retry
     * (kb_cache_bind_deferred); cleared when the task leaves ALLOCATED. */
    gboolean bind_refused;
} KbTaskInfo;

/* Tasks of one job sharing requests, selectors, affinity, tolerations and priority. */
struct KbTaskClass {
    const KbPod *rep; /* representative pod (one of the class's tasks) */
    KbResources resreq;
    guint n_tasks; /* tasks of the job in this class */
    guint index;   /* position in job->classes */
};

struct KbJobInfo {
    char *key;              /* "ns/name" of the group, or "ns/name" of the pod for a gang of one */
    const char *namespace_; /* interned */
    char *name;             /* group name, or pod name for a gang of one */
    gboolean is_group;      /* a pod group job (else a gang of one) */
    KbPodGroup *group;      /* ref; NULL for a gang of one or while the group is missing */
    gboolean group_missing; /* pods name a group that does not exist (yet) */
    /* A CompositePodGroup's job (group->composite once it exists): its pods are those of the
     * v1alpha3 PodGroups naming it as their parent, its children (KbPodGroup refs, never NULL). */
    gboolean is_composite;
    GPtrArray *children;
    const char *queue;      /* interned; the default queue when the group names none */
    gint32 min_member;      /* 1 for a gang of one */
    gint32 priority;        /* effective job priority (computed each cycle) */
    gint64 creation_timestamp;
    KbJobPhase phase;   /* kept across cycles */
    GPtrArray *tasks;   /* KbTaskInfo*, owned by the job */
    GPtrArray *classes; /* KbTaskClass*, owned */
    guint n_state[KB_TASK_N_STATES];
    KbResources allocated; /* requests of tasks on nodes (allocated..running, releasing) */
    gint64 pending_since;  /* when the job was first seen without enough members placed */
    /* The status last reported (to tell whether a new one changed); owned by the cache. */
    KbJobPhase last_phase;
    char *last_reason;
    char *last_message;
    guint last_counts[4]; /* pending, running, succeeded, failed last reported */
    gboolean reported;
    /* minMember pods were bound at least once (a native PodGroup's PodGroupInitiallyScheduled
     * turns True then and is never reverted), and whether that was reported. */
    gboolean initially_scheduled;
    gboolean reported_initially;
    guint id; /* position in the cache's job table; scratch for the cycle */
    /* Evictions (preempt/reclaim) of this job so far, and when the last was decided (seconds);
     * kept while the job's group (or, for a gang of one, its pod) exists. */
    guint n_evictions;
    gint64 last_evicted;
    /* Bindings refused for certain (kb_cache_bind_refused): rounds so far, no placement before
     * backoff_until (seconds), and the last error (owned). Reset by a successful binding. */
    guint bind_failures;
    gint64 backoff_until;
    char *bind_error;
    /* Bumped whenever the group or a pod of the job changes (starts at 1): what a cycle derives
     * from the objects alone may be kept while it is unchanged. */
    guint version;
    /* The reserve action's memo of what the objects announce (reserve.c), valid while
     * announced_version == version. */
    guint announced_version;
    gint64 announced_runtime;  /* the expected-runtime annotation, or KB_RESERVE_UNKNOWN */
    gint64 announced_deadline; /* the pods' smallest activeDeadlineSeconds, or ..._UNKNOWN */
    gint64 announced_gpus;     /* GPUs of all its pods */
    /* The sla plugin's memo of the job's sla-waiting-time annotation (policies/sla.c), valid
     * while sla_version == version: seconds, 0 when absent or malformed. */
    guint sla_version;
    gint64 sla_waiting;
    /*
     * Gang recovery (scheduler/stale.h). stale_whole: minMember members were placed and healthy
     * at once in the current incarnation (cleared when none is on a node); stale_since: when it
     * was first seen short of minMember since then (0: it is not); stale_retry_at: no eviction
     * before (the backoff after a refused one); stale_rounds: eviction rounds so far. This
     * cycle's verdict: stale_reason (static; NULL while whole) and stale_message (owned).
     */
    gboolean stale_whole;
    gint64 stale_since;
    gint64 stale_retry_at;
    guint stale_rounds;
    const char *stale_reason;
    char *stale_message;
    char *stale_lost; /* the first member found lost in this episode, described (owned) */
};

/* A queue (the default queue exists even without an object). */
typedef struct {
    const char *name; /* interned */
    KbQueue *queue;   /* ref; NULL for the implicit default queue */
    gint32 weight;
    KbResources capability; /* KB_RESOURCE_UNLIMITED where not given */
    KbResources guarantee;
    gboolean open;
    KbResources allocated; /* requests of its jobs' tasks on nodes */
    guint id;
    /* The queue-tree fault last reported (condition + event), owned; NULL when none. */
    char *last_fault;
    gint64 fault_since; /* when last_fault was first reported (seconds) */
} KbQueueInfo;

typedef struct KbCache KbCache;

/*
 * A new empty cache serving pods whose schedulerName is one of @scheduler_names (a NULL-terminated
 * array, copied; NULL or empty means "kube-batchd"). @default_queue (copied; NULL means "default")
 * is where groups that name no queue go. Free with kb_cache_free().
 */
KbCache *kb_cache_new(const char *const *scheduler_names, const char *default_queue);
void kb_cache_free(KbCache *cache);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbCache, kb_cache_free)

/*
 * Ingest. Each function takes a reference on the record it keeps; the caller keeps its own.
 * Updates replace the previous record of the same key (namespace/name, or name); an update of an
 * unknown object is an add, a delete of an unknown object is ignored. A pod update whose uid
 * differs from the cached one is handled as delete + add.
 */
void kb_cache_add_node(KbCache *cache, KbNode *node);
void kb_cache_update_node(KbCache *cache, KbNode *node);
void kb_cache_delete_node(KbCache *cache, KbNode *node);
void kb_cache_add_pod(KbCache *cache, KbPod *pod);
void kb_cache_update_pod(KbCache *cache, KbPod *pod);
void kb_cache_delete_pod(KbCache *cache, KbPod *pod);
void kb_cache_add_pod_group(KbCache *cache, KbPodGroup *group);
void kb_cache_update_pod_group(KbCache *cache, KbPodGroup *group);
void kb_cache_delete_pod_group(KbCache *cache, KbPodGroup *group);
void kb_cache_add_queue(KbCache *cache, KbQueue *queue);
void kb_cache_update_queue(KbCache *cache, KbQueue *queue);
void kb_cache_delete_queue(KbCache *cache, KbQueue *queue);
/* DRA (scheduler/dra.h): the daemon feeds classes, claims, templates and slices to it with
 * kb_dra_set_* / kb_dra_delete_*; the cycle allocates from it. Owned by the cache; a pod's
 * devices are released when its task leaves its node, is seen bound, or the pod is deleted. */
struct KbDra;
struct KbDra *kb_cache_dra(KbCache *cache);
/* Count DRA devices as resources (dra.h): nodes' allocatable gains, per class, the devices their
 * slices publish when a class or slice changed; pods' requests gain their claims' demand when a
 * template changed (a pod's own changes are counted as it is ingested). Cheap when nothing
 * changed; kb_cycle_run calls it before each cycle. */
void kb_cache_sync_dra(KbCache *cache);
/* PersistentVolumeClaims, for the volume check (kb_cache_pod_claims_ready). */
void kb_cache_add_pvc(KbCache *cache, KbPvc *pvc);
void kb_cache_update_pvc(KbCache *cache, KbPvc *pvc);
void kb_cache_delete_pvc(KbCache *cache, KbPvc *pvc);
void kb_cache_add_priority_class(KbCache *cache, KbPriorityClass *pc);
void kb_cache_update_priority_class(KbCache *cache, KbPriorityClass *pc);
void kb_cache_delete_priority_class(KbCache *cache, KbPriorityClass *pc);
/* Workloads (scheduling.k8s.io/v1beta1; any decoded metadata will do): a native PodGroup without
 * a queue label of its own takes the queue its workloadRef's Workload names in its label (else
 * annotation) kube-batchd.io/queue, else the default queue. */
void kb_cache_set_workload(KbCache *cache, const KbObjectMeta *workload);
void kb_cache_delete_workload(KbCache *cache, const KbObjectMeta *workload);

/*
 * Bind outcome, reported by the binder for a task the cycle placed (KbPlacement in cycle.h).
 * Pods are named by namespace, name and uid; a pod that is gone or has another uid is ignored
 * (returns FALSE). A binding cannot be undone, so a member's failure never touches the other
 * members of its gang: those bound (or whose outcome is unknown) keep their node resources until
 * the watch says where their pods are.
 *
 * kb_cache_bind_succeeded: the task stays on its node (state BINDING) until the watch shows
 * spec.nodeName; @now (seconds) starts the assume timeout (kb_cache_expire_assumed). Resets the
 * job's backoff exponent (a backoff under way still runs out).
 *
 * kb_cache_bind_unknown: the outcome is unknown (timeout, 5xx, connection reset, retries spent):
 * the same as succeeded for the accounting (BINDING: resources and GPU indices held until the
 * watch shows the pod or the assume timeout expires), without resetting the backoff.
 *
 * kb_cache_bind_elsewhere: the server says the pod is already on @node_name (409 "already
 * assigned to node X" for another node): the task is held on that node (BINDING) until the watch
 * confirms it.
 *
 * kb_cache_bind_failed: the binding certainly did not happen (404, 400, 403, 422, uid changed) or
 * was never sent: only this pod is released (PENDING, its resources and GPU indices freed).
 * Returns TRUE when the pod was known; @n_rolled_back (may be NULL) receives 1 when the pod held
 * a node, else 0. kb_cache_bind_refused does the same and also backs the job off: no placement of
 * the job before @now + 1 s, 2 s, 4 s, ... (KB_CACHE_BIND_BACKOFF_MAX_S at most; one step per
 * round of failures), with @message (copied) as the reason its status shows meanwhile.
 *
 * kb_cache_bind_deferred: a certain failure of a pod whose gang has other members bound or with
 * bindings in flight: releasing its room would let another job take it and leave the gang
 * split. The pod keeps its node (ALLOCATED, bind_refused) and the job backs off as with
 * kb_cache_bind_refused; *@delay_s says when to send the binding again. FALSE when no other
 * member is bound or in flight (the whole gang was refused): then the other refused members are
 * released here, and the caller releases this one (kb_cache_bind_refused).
 */
#define KB_CACHE_BIND_BACKOFF_MAX_S 60
gboolean kb_cache_bind_deferred(KbCache *cache, const char *namespace_, const char *name,
                                const char *uid, gint64 now, const char *message, guint *delay_s);
gboolean kb_cache_bind_succeeded(KbCache *cache, const char *namespace_, const char *name,
                                 const char *uid, gint64 now);
gboolean kb_cache_bind_unknown(KbCache *cache, const char *namespace_, const char *name,
                               const char *uid, gint64 now);
gboolean kb_cache_bind_elsewhere(KbCache *cache, const char *namespace_, const char *name,
                                 const char *uid, const char *node_name, gint64 now);
gboolean kb_cache_bind_failed(KbCache *cache, const char *namespace_, const char *name,
                              const char *uid, guint *n_rolled_back);
gboolean kb_cache_bind_refused(KbCache *cache, const char *namespace_, const char *name,
                               const char *uid, gint64 now, const char *message);

/*
 * TRUE while the pod is ALLOCATED (placed by a cycle and its bind not yet reported). The binder
 * checks it before sending a queued bind: a gang rolled back meanwhile must not be bound.
 */
gboolean kb_cache_pod_is_assumed(KbCache *cache, const char *namespace_, const char *name,
                                 const char *uid);

/*
 * Forget tasks whose bind succeeded more than @ttl_seconds before @now but that the watch never
 * confirmed (the pod was deleted and recreated, or an event was lost): their node resources are
 * released and they return to PENDING. Returns how many were forgotten.
 */
guint kb_cache_expire_assumed(KbCache *cache, gint64 now, gint64 ttl_seconds);

/*
 * Evictions (preempt/reclaim). kb_cache_evict_task: the cycle chose @task (BOUND or RUNNING) as a
 * victim; it becomes RELEASING at once and stays so until its pod is deleted or terminates, so
 * that later cycles count its resources as being freed and choose no further victims for it. Its
 * node resources stay used until then.
 *
 * kb_cache_evict_failed: the eviction of the pod was refused or failed (the daemon reports it);
 * the task returns to the state its pod shows. Returns FALSE when the pod is unknown, has another
 * uid, or was not being evicted.
 */
void kb_cache_evict_task(KbCache *cache, KbTaskInfo *task);
/* The cycle evicted (some of) @job's pods at @now: counts one eviction of the job. */
void kb_cache_job_evicted(KbCache *cache, KbJobInfo *job, gint64 now);
/*
 * When @job's current incarnation started: the earliest time at which minMember of its present
 * tasks (BINDING, BOUND, RUNNING or SUCCEEDED) were on nodes, i.e. the minMember-th smallest of
 * their start times. A task's start time is its bind_time; for a pod this scheduler did not bind
 * (found on a node after a restart) it is the pod's creationTimestamp, a lower bound. Pods evicted
 * and recreated are new tasks, so a restarted job starts a new incarnation. Returns 0 when fewer
 * than minMember tasks are on nodes (the job is not running as a gang).
 */
gint64 kb_cache_job_start_time(const KbJobInfo *job);
gboolean kb_cache_evict_failed(KbCache *cache, const char *namespace_, const char *name,
                               const char *uid);

/*
 * Extender mode (scheduler/extender.h). When enabled (before pods are added), pods of schedulers
 * this cache does not serve become tasks too when the extender manages them (they ask for
 * nvidia.com/gpu or name a group): the cycle plans them with the served ones, on the same nodes
 * and queues, and the extender holds their placements as reservations that kube-scheduler binds.
 * Other pods of other schedulers only consume node resources, as before.
 */
void kb_cache_set_extender(KbCache *cache, gboolean enabled);
/* Restrict extender mode to pods of these schedulerNames (NULL-terminated, copied); NULL or empty:
 * every name the cache does not serve. */
void kb_cache_set_extender_names(KbCache *cache, const char *const *names);
gboolean kb_cache_extender_manages(const KbCache *cache, const KbPod *pod);
/* Does the cache hold pod @namespace_/@name at all (a task or not)? */
gboolean kb_cache_has_pod(KbCache *cache, const char *namespace_, const char *name);
/* TRUE when @task is a pod of another scheduler planned for the extender. */
gboolean kb_cache_task_is_extender(const KbCache *cache, const KbTaskInfo *task);
/* Every pod the cache knows: its task (NULL for pods only counted on nodes), the node it is
 * counted on (-1: none) and what is counted there. Nothing may change the cache meanwhile. */
typedef void (*KbCachePodFunc)(const KbPod *pod, KbTaskInfo *task, gint counted_node,
                               const KbResources *counted, gpointer user_data);
void kb_cache_foreach_pod(KbCache *cache, KbCachePodFunc func, gpointer user_data);

/* ---- queries (for the cycle, metrics, tests) ------------------------------------------------ */

const char *kb_cache_default_queue(const KbCache *cache);
/* TRUE when pods with this schedulerName are served. */
gboolean kb_cache_serves(const KbCache *cache, const char *scheduler_name);

/* Nodes: the array (indexed by id; includes slots of deleted or not-yet-seen nodes, whose
 * `present` is FALSE). Borrowed; valid until the next ingest call. */
KbNodeInfo *kb_cache_nodes(KbCache *cache, guint *n_nodes);
/* By name, or NULL. Borrowed. */
KbNodeInfo *kb_cache_lookup_node(KbCache *cache, const char *name);

/* Jobs, in no particular order (borrowed array of KbJobInfo*; valid until the next ingest). */
GPtrArray *kb_cache_jobs(KbCache *cache);
/* The job of a pod group ("ns/name"), else of a composite of that name, else of a pod without a
 * group ("ns/podname"), or NULL. */
KbJobInfo *kb_cache_lookup_job(KbCache *cache, const char *namespace_, const char *name);
/* Runtimes of the jobs finished so far (history.h); borrowed, lives as long as the cache. */
KbHistory *kb_cache_history(KbCache *cache);
/* Decayed usage per queue (usage.h); borrowed, lives as long as the cache. */
KbUsage *kb_cache_usage(KbCache *cache);
/* The task of a served pod, or NULL. Borrowed. */
KbTaskInfo *kb_cache_lookup_task(KbCache *cache, const char *namespace_, const char *name);

/* Queues (borrowed array of KbQueueInfo*, the default queue always among them). */
GPtrArray *kb_cache_queues(KbCache *cache);
/* By name, or NULL when no such queue exists. */
KbQueueInfo *kb_cache_lookup_queue(KbCache *cache, const char *name);

/*
 * Effective priority of a pod (see the top of the file) and the value of a priority class name
 * (the global default's value, or 0, when @name is NULL or unknown; @found tells which).
 */
gint32 kb_cache_pod_priority(const KbCache *cache, const KbPod *pod);
gint32 kb_cache_priority_class_value(const KbCache *cache, const char *name, gboolean *found);
/* TRUE when priority class @name exists and says preemptionPolicy: Never. */
gboolean kb_cache_priority_class_preempt_never(const KbCache *cache, const char *name);

/*
 * Whether @pod may be bound as far as its volumes go (kube-scheduler's VolumeBinding, for claims
 * bound beforehand): every claim it uses exists and is Bound. FALSE with @why (may be NULL)
 * naming the first claim that is not: "persistentvolumeclaim \"ns/data\" not found" or
 * "... is not bound (phase Pending)"; newly allocated.
 */
gboolean kb_cache_pod_claims_ready(KbCache *cache, const KbPod *pod, char **why);

/* Sum of allocatable over present, Ready, schedulable nodes (for proportion and enqueue). */
void kb_cache_cluster_allocatable(KbCache *cache, KbResources *out);

/* Move a task to another state, keeping job counters and node/queue accounting in step.
 * For the cycle: PENDING -> ALLOCATED on @node_id (other transitions come from the watch). */
void kb_cache_assume_task(KbCache *cache, KbTaskInfo *task, guint node_id);
/* The inverse of kb_cache_assume_task (ALLOCATED -> PENDING), used by rollback. */
void kb_cache_forget_task(KbCache *cache, KbTaskInfo *task);

/*
 * GPU annotations (formats at the top of the file).
 *
 * kb_cache_gpu_topology_new: the topology of a node with @n_gpus allocatable GPUs and topology
 * annotation @annotation (NULL: none, one island). Returns a new topology (g_free), or NULL with
 * KB_ERROR_DECODE / KB_ERROR_LIMIT naming the member and value. Returns NULL without error when
 * the node has no GPU at all.
 *
 * kb_cache_gpu_ids_parse: "0,1,5" into a bitmask; FALSE with an error naming the value when it is
 * malformed, too long (KB_GPU_IDS_MAX_BYTES), out of range (KB_GPU_MAX) or repeats an index.
 * kb_cache_gpu_ids_format: a bitmask as "0,1,5"; NULL for 0; newly allocated.
 *
 * kb_cache_gpu_topology_errors: malformed topology annotations seen so far (each distinct value
 * of a node's annotation is logged and counted once).
 */
KbGpuTopology *kb_cache_gpu_topology_new(const char *annotation, gint64 n_gpus, GError **error);
gboolean kb_cache_gpu_ids_parse(const char *text, guint64 *out, GError **error);
char *kb_cache_gpu_ids_format(guint64 ids);
guint kb_cache_gpu_topology_errors(const KbCache *cache);

const char *kb_task_state_to_string(KbTaskState state);
/* "Pending", "Inqueue", "Running", "Unknown", "Completed". */
const char *kb_job_phase_to_string(KbJobPhase phase);
