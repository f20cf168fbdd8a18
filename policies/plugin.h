/*
 * Scheduler plugins: decisions only, no I/O, no JSON. Each plugin is a static table of callbacks
 * with designated initializers; the registry (policies/plugin.c) lists them once. A callback left
 * NULL means the plugin has no opinion at that extension point. The enable* switches of the
 * configuration turn extension points off per plugin entry (session.c applies them).
 *
 * Life cycle per session: open() returns the plugin's per-cycle state (may be NULL), every other
 * callback receives it, close() frees it.
 *
 * Order callbacks return <0 when @a goes first, >0 when @b goes first, 0 for no opinion.
 */
#pragma once

#include <glib.h>

#include "scheduler/session.h"

/* What an argument's value must be; the parser refuses a malformed one, naming line and value. */
typedef enum {
    KB_ARG_NUMBER,      /* integer or decimal */
    KB_ARG_GO_DURATION, /* positive, kb_conf_parse_go_duration ("1h30m", "500ms") */
    KB_ARG_STRING,      /* anything */
} KbPluginArgKind;

/* One argument a plugin reads: @name exact, or a prefix when it ends in '*'. */
struct kb_plugin_arg {
    const char *name;
    KbPluginArgKind kind;
};

struct kb_plugin_ops {
    const char *name;
    /* The arguments the plugin reads, ended by {NULL}; NULL when none. The configuration parser
     * checks their values and warns (once) about any other argument given to the plugin. */
    const struct kb_plugin_arg *arguments;
    gpointer (*open)(KbSession *ssn, const KbConfPlugin *conf);
    void (*close)(gpointer state);
    int (*job_order)(gpointer state, const KbJobInfo *a, const KbJobInfo *b);
    int (*queue_order)(gpointer state, const KbQueueInfo *a, const KbQueueInfo *b);
    int (*task_order)(gpointer state, const KbTaskInfo *a, const KbTaskInfo *b);
    gboolean (*job_ready)(gpointer state, const KbJobInfo *job);
    gboolean (*job_pipelined)(gpointer state, const KbJobInfo *job);
    gboolean (*job_enqueueable)(gpointer state, const KbJobInfo *job, GString *why);
    gboolean (*allocatable)(gpointer state, const KbQueueInfo *queue, const KbTaskInfo *task,
                            GString *why);
    gboolean (*overused)(gpointer state, const KbQueueInfo *queue, GString *why);
    gboolean (*predicate)(gpointer state, const KbTaskInfo *task, const KbNodeInfo *node,
                          KbFitFailure *why);
    double (*node_score)(gpointer state, const KbTaskInfo *task, const KbNodeInfo *node);
    /* TRUE when @task's nodes must all be scored (fgd: a gradient over the first 100 feasible
     * nodes scatters shares), not only the first feasible ones the action collects. */
    gboolean (*score_every_node)(gpointer state, const KbTaskInfo *task);
    /* TRUE when the plugin has a verdict; then @victims is filtered in place. */
    gboolean (*preemptable)(gpointer state, const KbTaskInfo *preemptor, GPtrArray *victims);
    /* The same for the reclaim action (victims of other queues). */
    gboolean (*reclaimable)(gpointer state, const KbTaskInfo *reclaimer, GPtrArray *victims);
    /* Resources moved onto/off a node by the session (shares to update). */
    void (*on_allocate)(gpointer state, const KbTaskInfo *task);
    void (*on_deallocate)(gpointer state, const KbTaskInfo *task);
    /* The enqueue action admitted @job (Pending -> Inqueue): reserve its minimum resources. */
    void (*on_job_enqueued)(gpointer state, const KbJobInfo *job);
    /* An action sent admitted @job, nothing of it placed, back to Pending (reserve): release
     * what on_job_enqueued (or the session's start) reserved for it. */
    void (*on_job_dequeued)(gpointer state, const KbJobInfo *job);
    /*
     * @task is about to be placed on @node (called before it is assumed there, whatever the
     * enable* switches): choose its devices, e.g. task->gpu_ids. Added for gpu-topology.
     */
    void (*assign_devices)(gpointer state, KbTaskInfo *task, const KbNodeInfo *node);
};

extern const struct kb_plugin_ops kb_plugin_priority;
extern const struct kb_plugin_ops kb_plugin_gang;
extern const struct kb_plugin_ops kb_plugin_drf;
extern const struct kb_plugin_ops kb_plugin_proportion;
extern const struct kb_plugin_ops kb_plugin_predicates;
extern const struct kb_plugin_ops kb_plugin_nodeorder;
extern const struct kb_plugin_ops kb_plugin_conformance;
extern const struct kb_plugin_ops kb_plugin_gpu_topology;
extern const struct kb_plugin_ops kb_plugin_sla;     /* policies/sla.c */
extern const struct kb_plugin_ops kb_plugin_binpack; /* policies/binpack.c */
extern const struct kb_plugin_ops kb_plugin_fgd;     /* policies/fgd.c */

/* The plugin called @name, or NULL. */
const struct kb_plugin_ops *kb_plugin_lookup(const char *name);
/* "priority, gang, ..." for error messages. Static. */
const char *kb_plugin_names(void);

/* ---- helpers shared by plugins and tests ---------------------------------------------------- */

/* Required node affinity / nodeSelector / toleration matching, as kube-scheduler does. */
gboolean kb_plugin_node_selector_matches(const KbPod *pod, const KbNode *node);
gboolean kb_plugin_node_affinity_matches(const KbPod *pod, const KbNode *node);
/* The first NoSchedule/NoExecute taint of @node that @pod does not tolerate, or NULL. */
const KbTaint *kb_plugin_untolerated_taint(const KbPod *pod, const KbNode *node);
/* TRUE for a pod that must never be evicted (Volcano's conformance): priority class
 * system-cluster-critical or system-node-critical, or any pod in kube-system. */
gboolean kb_plugin_pod_is_critical(const KbPod *pod);

/* ---- sla (policies/sla.c) ------------------------------------------------------------------- */

/* Job annotations (on the PodGroup, else on the job's first pod) with a job's own waiting-time
 * limit, a Go duration; the first overrides the second, either overrides the plugin argument. */
#define KB_SLA_ANNOTATION       "volcano.sh/sla-waiting-time"
#define KB_SLA_ANNOTATION_SHORT "sla-waiting-time"
#define KB_SLA_ARGUMENT         "sla-waiting-time"

/*
 * When @job's waiting-time limit ran or runs out (unix seconds: its creation plus its limit), or
 * G_MAXINT64 when it has none. @state is the sla plugin's state in the session
 * (kb_session_plugin_state(ssn, "sla")); NULL (sla not configured) gives G_MAXINT64.
 */
gint64 kb_plugin_sla_deadline(gconstpointer state, const KbJobInfo *job);
/* TRUE when @job still waits (fewer than minMember of its tasks placed) at @now, past its
 * deadline. */
gboolean kb_plugin_sla_overdue(gconstpointer state, const KbJobInfo *job, gint64 now);

/*
 * proportion's long-job limit (longRuntime, longBorrowLimit): TRUE when @job, not started, may
 * not start while its queue holds @used GPUs. @state is the proportion plugin's state in the
 * session (kb_session_plugin_state(ssn, "proportion")); NULL (not configured) gives FALSE. The
 * reserve action asks it for the queue's GPUs at a reservation's start.
 */
gboolean kb_plugin_proportion_long_held(gconstpointer state, const KbJobInfo *job, gint64 used);
/*
 * With the reclaim action's borrowedLongJobsOnly: TRUE when running @job is a long job its queue
 * runs past its long-job limit (borrowed idle GPUs reclaim may take back). FALSE otherwise, and
 * when proportion (@state NULL) or the option is not configured.
 */
gboolean kb_plugin_proportion_borrowed(gconstpointer state, const KbJobInfo *job);
/* How many jobs kb_plugin_proportion_borrowed() says TRUE of in the session. */
guint kb_plugin_proportion_n_borrowed(gconstpointer state);
