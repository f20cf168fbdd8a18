/*
 * A scheduling session: the per-cycle view that actions and plugins work on. It is opened over the
 * cache by kb_cycle_run (cycle.h), carries the plugin instances of the configured tiers, and
 * dispatches the plugin extension points with the kube-batch/Volcano tier semantics:
 *
 *   job/queue/task order  the first enabled plugin (tier by tier) that returns non-zero decides;
 *   job ready/pipelined   every enabled plugin must agree;
 *   job enqueueable       every enabled plugin must agree (the first refusal gives the reason);
 *   allocatable           every enabled plugin must agree;
 *   overused              any enabled plugin that says so;
 *   predicate             every enabled plugin must pass (the first failure gives the reason);
 *   node score            sum of the enabled plugins' scores;
 *   preemptable/reclaimable  the first tier whose plugins return a verdict decides,
 *                         intersected within the tier.
 *
 * The session changes the cache only through kb_session_allocate()/kb_session_deallocate() (which
 * move node and queue accounting and tell the plugins) and the statement commit.
 */
#pragma once

#include <glib.h>

#include "scheduler/cache.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"
#include "scheduler/queue-tree.h"

typedef struct KbSession KbSession;
struct kb_plugin_ops;

/* Why a node does not fit a task (predicates), for the condition messages. */
typedef enum {
    KB_FIT_OK = 0,
    KB_FIT_RESOURCES, /* detail: the slot that is short */
    KB_FIT_NOT_READY,
    KB_FIT_UNSCHEDULABLE,
    KB_FIT_NODE_SELECTOR,
    KB_FIT_AFFINITY,
    KB_FIT_TAINT,    /* detail: the taint */
    KB_FIT_GONE,     /* node object deleted */
    KB_FIT_RESERVED, /* the free capacity is held by a reservation (scheduler/reserve.h) */
    KB_FIT_DEVICES,  /* the pod's DRA claims cannot be allocated there (scheduler/dra.h) */
    KB_FIT_N_REASONS
} KbFitReason;

typedef struct {
    KbFitReason reason;
    int slot;             /* KB_FIT_RESOURCES */
    const KbTaint *taint; /* KB_FIT_TAINT */
} KbFitFailure;

typedef struct {
    const struct kb_plugin_ops *ops;
    const KbConfPlugin *conf;
    guint tier;
    gpointer state; /* from ops->open, freed by ops->close */
} KbPluginInstance;

/* Per-job scratch for one cycle, indexed by KbJobInfo.id. */
typedef struct {
    gboolean considered;        /* the job took part in this cycle */
    gboolean ready_to_schedule; /* has a queue, enough pods, group present */
    guint n_placed;             /* tasks committed by this cycle */
    guint n_pipelined;          /* tasks placed on resources being freed (preempt/reclaim) */
    const char *reason;         /* static; NULL when nothing to say */
    GString *message;           /* why it is not (fully) placed; NULL when nothing to say */
} KbJobScratch;

struct KbSession {
    KbCache *cache;
    const KbConf *conf;
    gint64 now;
    KbNodeInfo *nodes; /* the cache's array */
    guint n_nodes;
    GPtrArray *jobs;   /* the cache's KbJobInfo*; job->id is the index */
    GPtrArray *queues; /* the cache's KbQueueInfo*; queue->id is the index */
    KbJobScratch *job_scratch;
    KbResources total;     /* allocatable of usable nodes */
    KbResources max_alloc; /* largest allocatable per slot over present nodes */
    KbResources *deserved; /* per queue id; set by proportion, else unlimited */
    KbResources *request;  /* per queue id: allocated + pending requests of its jobs */
    /*
     * The queue tree (scheduler/queue-tree.h), built when the session opens: node = queue id,
     * plus the implicit root. Its `alloc` follows kb_session_allocate/deallocate; its `deserved`
     * is filled by proportion (else zero).
     */
    KbQueueTree *qtree;
    KbPluginInstance *plugins;
    guint n_plugins;
    KbCycleResult *result;
    /*
     * Bumped by a plugin whose node scores changed on nodes other than the one a task was just
     * placed on (gpu-topology: the job entered a new rack); actions re-score cached candidates.
     */
    guint score_epoch;
    /*
     * Per node: requests of the tasks preempt/reclaim pipelined there this cycle (waiting for
     * evicted pods to go); NULL until the first of those actions runs, freed with the session.
     */
    KbResources *pipelined;
    /* Reservations of the reserve action (scheduler/reserve.h); NULL when it did not run. */
    struct KbReserve *reserve;
};

/* Open a session (plugins' open in tier order) and close it (plugins' close, scratch freed). */
KbSession *kb_session_open(KbCache *cache, const KbConf *conf, gint64 now, KbCycleResult *result);
void kb_session_close(KbSession *ssn);

int kb_session_job_order(KbSession *ssn, const KbJobInfo *a, const KbJobInfo *b);
int kb_session_queue_order(KbSession *ssn, const KbQueueInfo *a, const KbQueueInfo *b);
int kb_session_task_order(KbSession *ssn, const KbTaskInfo *a, const KbTaskInfo *b);
gboolean kb_session_job_ready(KbSession *ssn, const KbJobInfo *job);
gboolean kb_session_job_pipelined(KbSession *ssn, const KbJobInfo *job);
/* @why (may be NULL) receives the refusal ("queue \"q\" ..."). */
gboolean kb_session_job_enqueueable(KbSession *ssn, const KbJobInfo *job, GString *why);
gboolean kb_session_allocatable(KbSession *ssn, const KbQueueInfo *queue, const KbTaskInfo *task,
                                GString *why);
gboolean kb_session_overused(KbSession *ssn, const KbQueueInfo *queue, GString *why);
/* @node's value of the node label @key (borrowed): the topology domain it is in; NULL when the
 * node has no such label or is not present. */
const char *kb_session_node_domain(const KbSession *ssn, guint node, const char *key);

/* The domains of label @key that @job may use (borrowed strings, in a new array): the one its
 * members on present nodes are in (a member left on a deleted node does not count), else every
 * value of the label over the present nodes, first seen first. */
GPtrArray *kb_session_job_domains(const KbSession *ssn, const KbJobInfo *job, const char *key);

/* Static predicates (labels, taints, affinity, node flags) and the pod's DRA claims (devices
 * free on the node, KB_FIT_DEVICES); resource fit is the action's. */
gboolean kb_session_predicate(KbSession *ssn, const KbTaskInfo *task, const KbNodeInfo *node,
                              KbFitFailure *why);
/* The static predicates alone (plugins), without the pod's devices: where the pod could run once
 * devices are freed (reservations, preemption, which check devices themselves). */
gboolean kb_session_node_predicate(KbSession *ssn, const KbTaskInfo *task,
                                   const KbNodeInfo *node, KbFitFailure *why);
gboolean kb_session_has_node_order(KbSession *ssn);
double kb_session_node_score(KbSession *ssn, const KbTaskInfo *task, const KbNodeInfo *node);
/* TRUE when an enabled node-order plugin wants every feasible node scored for @task (fgd), not
 * only the first ones the action collects. */
gboolean kb_session_score_every_node(KbSession *ssn, const KbTaskInfo *task);
/*
 * Filter @victims (KbTaskInfo*) in place down to those the plugins allow @preemptor to evict
 * (conformance removes critical kube-system pods). Used by preempt/reclaim actions.
 */
void kb_session_preemptable(KbSession *ssn, const KbTaskInfo *preemptor, GPtrArray *victims);
/* The same for the reclaim action (switch enableReclaimable). */
void kb_session_reclaimable(KbSession *ssn, const KbTaskInfo *reclaimer, GPtrArray *victims);

/* Place @task on @node (PENDING -> ALLOCATED) and tell the plugins (drf, proportion shares);
 * plugins with assign_devices choose the task's devices first (gpu-topology: task->gpu_ids), and
 * the pod's DRA claims get their devices (kb_dra_assume; the caller checked they fit). */
void kb_session_allocate(KbSession *ssn, KbTaskInfo *task, KbNodeInfo *node);
/* Undo kb_session_allocate (statement discard). */
void kb_session_deallocate(KbSession *ssn, KbTaskInfo *task);

/* Tell the plugins that the enqueue action admitted @job. */
void kb_session_job_enqueued(KbSession *ssn, const KbJobInfo *job);
/* Tell the plugins that an admitted @job with nothing placed went back to Pending. */
void kb_session_job_dequeued(KbSession *ssn, const KbJobInfo *job);
/*
 * The least a job needs to start: its group's minResources when given, else the requests of
 * minMember of its tasks (occupied tasks first, then pending ones in index order). Into @out.
 */
void kb_session_job_min_request(const KbJobInfo *job, KbResources *out);

/* Record why @job is not placed: @reason static, message printf-style (replaces any previous). */
void kb_session_job_note(KbSession *ssn, const KbJobInfo *job, const char *reason, const char *fmt,
                         ...) G_GNUC_PRINTF(4, 5);

/* A plugin's state in this session, or NULL when the plugin is not configured. */
gpointer kb_session_plugin_state(KbSession *ssn, const char *name);
/* The queue a job belongs to, or NULL when it does not exist. */
KbQueueInfo *kb_session_job_queue(KbSession *ssn, const KbJobInfo *job);
/* May reclaim take from queue tree node @x's queue (its `reclaimable` is not false)? The root, and
 * a node without a Queue object, may: the preempt action and proportion's borrowing both ask. */
gboolean kb_session_node_reclaimable(KbSession *ssn, guint x);
/* Human text for a fit failure ("short of nvidia.com/gpu", "taint k=v:NoSchedule"); newly
 * allocated. */
char *kb_fit_failure_to_string(const KbFitFailure *why);
