/*
 * One scheduling cycle: open a session over the cache, run the configured actions in order
 * (enqueue, allocate, preempt, reclaim), and return what the daemon must do. The cycle does no I/O
 * and parses nothing; it changes the cache only by assuming the tasks it places
 * (kb_cache_assume_task), by marking the victims it evicts (kb_cache_evict_task) and by recording
 * job phases and the statuses it reported.
 *
 * The daemon then: evicts every eviction (see KbEviction), binds every placement (kb_binding_new
 * through the REST pool), reports each outcome with kb_cache_bind_succeeded / kb_cache_bind_failed
 * (cache.h), writes the job statuses whose `changed` is TRUE, posts the events, and publishes the
 * metrics figures.
 */
#pragma once

#include <glib.h>

#include "kube/kb-objects.h"
#include "kube/kb-resource.h"
#include "scheduler/cache.h"
#include "scheduler/conf.h"

/*
 * One pod to bind.
 *
 * gpu_ids: the GPU indices chosen for the pod ("0,1", see KB_GPU_IDS_ANNOTATION in cache.h), or
 * NULL when the pod asks no GPU or the gpu-topology plugin is not configured. When it is set, the
 * Binding carries it in metadata.annotations; the API server writes it onto the pod in the same
 * write, so a pod is never bound without its indices.
 */
typedef struct {
    KbPod *pod;       /* ref: namespace, name and uid to bind */
    const char *node; /* interned node name */
    char *job;        /* "ns/name" of the job (group, or the pod for a gang of one); owned */
    char *gpu_ids;    /* owned; NULL when none (see above) */
    /* DRA: the claim status writes (KbClaimWrite, scheduler/dra.h) to make before the Binding,
     * one per claim, on the first member of the gang that uses the claim; NULL when none. */
    GPtrArray *claim_writes;
} KbPlacement;

/*
 * One pod to evict (preempt or reclaim). The daemon POSTs pods/NAME/eviction (policy/v1, v1beta1
 * fallback) with the uid as a precondition and reports a refusal with kb_cache_evict_failed; the
 * cache already holds the pod as RELEASING. Before that, for @disrupted_group, the group's
 * DisruptionTarget condition (reason PreemptionByScheduler); the pod's is set by the eviction
 * (kube-apiserver 1.26+; kb-apiserver). The result also carries a `Preempted`/`Reclaimed` event
 * on the pod with the same message.
 */
typedef struct {
    KbPod *pod;         /* ref: namespace, name and uid to evict */
    const char *reason; /* static: "Preempted" or "Reclaimed" */
    char *message;      /* owned: names the preemptor job, e.g. "preempted by job ns/big ..." */
    char *job;          /* owned: "ns/name" of the victim's job */
    char *preemptor;    /* owned: "ns/name" of the job the pod makes room for */
    /* ref: the victim's native PodGroup (scheduling.k8s.io/v1beta1) when this decision takes it
     * whole (disruptionMode all, or every running member): it gets DisruptionTarget first. */
    KbPodGroup *disrupted_group;
} KbEviction;

/* A CompositePodGroup's child PodGroup after the cycle (KbJobStatus.children). */
typedef struct {
    KbPodGroup *group; /* ref */
    guint n_pods;      /* its pods in the composite's job */
    guint n_bound;     /* of those, bound by the API (binding done, bound, running, succeeded) */
    /* minCount of its pods were bound, now or before (its condition says True already) */
    gboolean initially_scheduled;
} KbChildStatus;

/* The status of one job after the cycle. */
typedef struct {
    KbPodGroup *group; /* ref; NULL for a pod without a group */
    KbPod *pod;        /* ref to the pod of a gang of one (its PodScheduled condition), else NULL */
    char *job;         /* "ns/name"; owned */
    const char *queue; /* interned */
    KbJobPhase phase;
    /*
     * The condition to set: type "Unschedulable" (status "True") while the job cannot be placed,
     * or "Scheduled" (status "True") once it reached minMember. NULL type: no condition.
     */
    const char *condition_type;   /* static */
    const char *condition_status; /* static "True" / "False" */
    const char *reason;           /* static: NotEnoughResources, NotEnoughPods, QueueNotFound,
                                     QueueClosed, QueueOverused, ScheduleTimeout, Scheduled, ... */
    char *message;                /* owned */
    /* TRUE when phase, reason or message differ from what the previous cycle reported. */
    gboolean changed;
    gint32 min_member;
    guint n_pending, n_allocated, n_running, n_succeeded,
            n_failed; /* task counts after the cycle */
    guint n_placed;   /* placed by this cycle */
    /* Bound by the API (binding done, bound, running, succeeded), and whether minMember pods
     * were ever bound (kept across cycles: never reverted). */
    guint n_bound;
    gboolean initially_scheduled;
    /* A CompositePodGroup's job: its children (KbChildStatus, one per child PodGroup) and how
     * many are initially scheduled; initially_scheduled once minGroupCount are. NULL otherwise. */
    GArray *children;
    guint n_children_scheduled;
} KbJobStatus;

/* Per-queue figures (Queue status and metrics). */
typedef struct {
    const char *name; /* interned */
    KbQueue *queue;   /* ref; NULL for the implicit default queue */
    gint32 weight;
    KbResources allocated; /* after this cycle's placements */
    KbResources deserved;  /* proportion's deserved share (zero when proportion is not enabled) */
    KbResources capability;
    KbResources guarantee;
    KbResources request; /* allocated + what its jobs still ask for */
    /*
     * Hierarchical queues: a parent's allocated and request are its subtree's; pending is
     * request - allocated. A queue-tree fault (scheduler/queue-tree.h) gives the condition
     * (reason static, message owned), NULL when the queue is fine.
     */
    KbResources pending;
    const char *parent; /* interned; "root" for a queue without spec.parent */
    const char *fault_reason;
    char *fault_message;
    gint64 fault_since; /* when the fault was first reported (the condition's transition time) */
    guint n_pending, n_inqueue, n_running, n_unknown, n_completed; /* jobs by phase */
    /* Decayed usage (scheduler/usage.h) per slot at usage_time; usage_time -1 when none. */
    double usage[KB_RES_MAX];
    gint64 usage_time;
    /* The runtimes of its finished jobs (scheduler/history.h), owned; NULL when none. */
    KbQueueHistory *history;
} KbQueueStatus;

/* An event to post through kube/kb-recorder.h. Only emitted when a job's status changed. */
typedef struct {
    KbObjectMeta *object;    /* ref on the involved record (KbPod or KbPodGroup) */
    const char *api_version; /* static: "v1", "scheduling.volcano.sh/v1beta1", ... */
    const char *kind;        /* static: "Pod", "PodGroup" */
    const char *type;        /* static: "Normal", "Warning" */
    const char *reason;      /* static: "FailedScheduling", "Unschedulable", "Scheduled", ... */
    char *message;           /* owned */
} KbSchedEvent;

typedef struct {
    gint64 now;             /* the time the cycle ran for (seconds) */
    GArray *placements;     /* KbPlacement, in commit order (a gang's pods are adjacent) */
    GArray *job_statuses;   /* KbJobStatus, one per job the cycle looked at */
    GArray *queue_statuses; /* KbQueueStatus, one per queue */
    GArray *events;         /* KbSchedEvent */
    GArray *evictions;      /* KbEviction, in decision order (a victim gang's pods adjacent) */
    /* Metrics figures. */
    gint64 duration_us;  /* whole cycle */
    gint64 action_us[8]; /* per configured action, in configured order */
    guint n_actions;
    guint n_jobs;           /* jobs considered */
    guint n_jobs_placed;    /* jobs that got a committed statement */
    guint n_jobs_discarded; /* statements discarded (gang not reached) */
    guint n_tasks_pending;  /* tasks still pending after the cycle */
} KbCycleResult;

/*
 * Run one cycle over @cache with configuration @conf at time @now (unix seconds; used for
 * scheduleTimeoutSeconds and the assume timeout). Returns a new result (free with
 * kb_cycle_result_free). Never fails: a bad object becomes a job status and an event.
 */
KbCycleResult *kb_cycle_run(KbCache *cache, const KbConf *conf, gint64 now);
void kb_cycle_result_free(KbCycleResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbCycleResult, kb_cycle_result_free)

/* The placements from index @first on (one job's, just committed): their claim_writes from the
 * DRA holds the cycle made (kb_dra_gang_writes). */
void kb_cycle_attach_claim_writes(KbCycleResult *result, KbCache *cache, guint first);

/* The status of job @key ("ns/name") in @result, or NULL. Borrowed. */
const KbJobStatus *kb_cycle_result_job(const KbCycleResult *result, const char *key);
