/*
 * A discrete-event cluster simulator that drives the real scheduler core (scheduler/cache.h,
 * scheduler/cycle.h, the policies) with a job trace (bench/lib/trace.h) on a simulated clock.
 *
 * What it does, as the daemon and the kubelets would:
 * - the cluster is N identical Ready nodes of G GPUs (cpu 64, memory 512Gi, pods 110 each);
 * - every trace cluster is a Queue (weight 1 unless told) and the namespace of its jobs;
 * - a job arrives at its submit time as a Volcano PodGroup (minMember = its pod count, or a
 *   fraction of it with min_fraction, its queue)
 *   and its pods (schedulerName kube-batchd, requests nvidia.com/gpu only; shape from
 *   kb_trace_gang_shape), fed to the cache as decoded records;
 * - a scheduling cycle (kb_cycle_run) runs at every second in which something happened (an
 *   arrival, a completion) and again one period later while the previous cycle placed pods or
 *   moved a job to another phase. Seconds in which nothing changed are skipped: a cycle over an
 *   unchanged cache places nothing (tests/test-trace.c checks it), so the outcome equals a
 *   cycle every period. A cycle due while nothing waits (every live job running) is not run
 *   either: it could only report running jobs Running, which the simulator notes itself
 *   (check_skips verifies it, sim.c explains why);
 * - every placement binds at once (kb_cache_bind_succeeded) and the pod is updated with
 *   spec.nodeName and phase Running;
 * - a job runs once every pod of it is bound (a distributed job needs all its workers; an elastic
 *   one, its minimum) and ends `duration` seconds later (rounded up, at least 1): its pods are
 *   updated to Succeeded, then deleted with the group (delete_finished);
 * - an eviction the cycle decides (preempt, reclaim) is carried out at once, as the API server's
 *   eviction with a zero grace period would be: the victim pods are deleted (their GPUs are free
 *   for the next cycle) and, since a distributed training job cannot run without all its workers,
 *   the victim's job loses its running state: every pod of it is deleted and recreated Pending
 *   (new uids, as its operator would restart it), it waits again and, once its gang is bound
 *   anew, runs for its full duration (restart_cost FULL: the work done is lost) or for what was
 *   left (NONE: as if it had checkpointed). Its PodGroup stays (the scheduler moves it back to
 *   Inqueue);
 * - a fraction of the jobs (or the jobs flagged in `high`) belong to PriorityClass
 *   KB_SIM_HIGH_PRIORITY_CLASS (value KB_SIM_HIGH_PRIORITY): their pods carry the class and
 *   spec.priority, their PodGroup the class; the others have no class (priority 0);
 * - the run ends when no arrival, completion or pending cycle is left. Jobs that never started
 *   (a gang larger than the cluster, or GPUs held forever by partial gangs when gang is off) are
 *   reported with the scheduler's last condition.
 *
 * Everything but wall and CPU times (and cycle times) is deterministic for equal inputs.
 */
#pragma once

#include <glib.h>

#include "bench/lib/trace.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"

#define KB_SIM_MAX_NODES         100000
#define KB_SIM_MAX_GPUS_PER_NODE 1024

#define KB_SIM_HIGH_PRIORITY_CLASS "kb-sim-high"
#define KB_SIM_HIGH_PRIORITY       1000

/* What an evicted job loses: all its work (it restarts from scratch) or none (checkpointed). */
typedef enum { KB_SIM_RESTART_FULL, KB_SIM_RESTART_NONE } KbSimRestartCost;

/* "full" / "none"; FALSE for anything else (@out untouched). */
gboolean kb_sim_restart_cost_from_string(const char *s, KbSimRestartCost *out);
const char *kb_sim_restart_cost_to_string(KbSimRestartCost cost);

typedef struct {
    guint n_nodes;       /* 1..KB_SIM_MAX_NODES */
    guint gpus_per_node; /* 1..KB_SIM_MAX_GPUS_PER_NODE */
    KbTracePack pack;
    gint64 period;       /* seconds between cycles while the cluster changes; 0 means 1 */
    guint max_cycles;    /* safety stop; 0: none */
    GHashTable *weights; /* queue name (char*) -> GINT_TO_POINTER(weight >= 1); NULL: all 1 */
    /* Every job goes to the scheduler's default queue (no Queue objects): a scheduler with one
     * queue and no fairness plugin is FIFO across tenants. Figures stay per trace cluster. */
    gboolean single_queue;
    /*
     * Delete a finished job's pods and group from the cache (the operator's cleanPodPolicy: All;
     * on by default). Off: they stay as Succeeded pods (no decision depends on them), and once
     * they outnumber the live jobs the simulator starts a new cache from the live objects, as a
     * restarted daemon would after its relist (n_cache_restarts).
     */
    gboolean delete_finished;
    /* Restart the cache once this many finished jobs are retained (and they outnumber the live
     * ones); 0: 256. G_MAXUINT: never. */
    guint restart_after;
    /* Also run a cycle every period while a job waits, even when nothing changed (slow; to check
     * that skipping idle seconds changes nothing). */
    gboolean every_period;
    /* Run every cycle, also those skipped because nothing waits (slow; see sim.c, settle). */
    gboolean no_skip;
    /* Run the cycles that would be skipped and abort (g_error) unless each of them placed and
     * evicted nothing and reported only what the simulator assumes when it skips one (slow;
     * the outcome is that of no_skip). */
    gboolean check_skips;
    KbSimRestartCost restart_cost; /* default FULL */
    /* Fraction (0..1) of the jobs given the high PriorityClass, chosen by a hash of their trace
     * line (kb_sim_is_high_priority): the same jobs whatever the slice or the configuration. */
    double high_fraction;
    /* When not NULL: per job of the replayed trace (in trace order, trace->n_jobs entries), TRUE
     * for high priority; high_fraction is then ignored. Borrowed for the run. */
    const gboolean *high;
    /*
     * What the jobs tell the scheduler about their runtime (annotation
     * kube-batchd.io/expected-runtime on their pods, read by the reserve action): the trace's
     * expected duration when it has one, else duration x estimate_factor (1: exact; 2: users
     * over-estimate by 2x). 0: no job carries an estimate.
     */
    double estimate_factor;
    /*
     * Elastic jobs: > 0 gives every job minMember = ceil(pods x min_fraction) (at least 1)
     * instead of all its pods. Such a job starts once its minimum is bound, runs its duration
     * from then (pods that join later hold GPUs for the rest of it; no speed-up is modelled) and
     * ends with all its pods. 0 (the default): every job is a rigid gang of all its pods.
     */
    double min_fraction;
    /* Called now and then from the replaying thread with the jobs arrived so far (0..n_jobs);
     * NULL: none. */
    void (*progress)(gpointer data, guint arrived, guint n_jobs);
    gpointer progress_data;
    /*
     * Hierarchical queues (bench-trace --queue-tree, bench/lib/qshare.h): queue name (char*) ->
     * the JSON text of its Queue spec ({"parent": ..., "weight": ...}). A trace queue with an
     * entry gets that spec (its weight when the spec has none); entries that are not trace
     * queues are created too (the parents). Borrowed, read-only; NULL: flat queues.
     */
    GHashTable *queue_specs;
    /* Called after every cycle with its result (borrowed), on the replay's thread. */
    void (*on_cycle)(const KbCycleResult *res, gpointer data);
    gpointer on_cycle_data;
} KbSimOptions;

/* The cluster over time: a sample whenever GPUs in use or jobs waiting changed. */
typedef struct {
    gint64 t;
    guint gpus_busy; /* GPUs of running jobs */
    guint waiting;   /* jobs arrived and not running */
} KbSimSample;

/* Gang-size buckets of the per-size figures: 1, 2-4, 5-8, 9-16, 17+ GPUs. */
#define KB_SIM_N_BUCKETS 5
/* The bucket of a job of @gpus GPUs, and its label ("1", "2-4", ..., "17+"; static). */
guint kb_sim_bucket(guint gpus);
const char *kb_sim_bucket_label(guint bucket);

typedef struct {
    guint n_jobs, n_started, n_finished;
    double wait_mean, wait_p95, wait_p99; /* queueing delay of started jobs, seconds */
    double jct_mean, jct_p95, jct_p99;    /* of finished jobs */
} KbSimBucket;

typedef struct {
    guint index;       /* position in the replayed trace */
    const char *queue; /* interned */
    guint num_gpus;
    guint n_pods;
    gint64 submit;
    gint64 start;      /* first time its minimum was bound; -1 when never */
    gint64 last_start; /* the last such time (after evictions); -1 when never */
    gint64 finish;     /* -1 when not finished */
    gint64 ran;        /* seconds run over all attempts */
    gboolean running;  /* running when the run ended */
    gboolean high_priority;
    guint n_evictions; /* times the job was evicted (lost its running state) */
    char *phase;       /* last PodGroup phase the scheduler reported ("Pending", ...) */
    char *reason;      /* last condition reason of an unfinished job, or NULL */
    char *message;     /* its message, or NULL */
} KbSimJobResult;

typedef struct {
    const char *name; /* interned */
    gint32 weight;
    guint n_jobs, n_finished;
    double demand_gpu_s;        /* duration x GPUs of its jobs */
    double received_gpu_s;      /* GPU-seconds held by its pods (partial gangs included) */
    double jct_mean, wait_mean; /* over its finished / started jobs; 0 when none */
} KbSimQueueResult;

typedef struct {
    guint n_jobs, n_started, n_finished;
    guint n_gpus; /* cluster size */
    gint64 first_submit;
    gint64 end;      /* time of the last arrival, completion or placement */
    gint64 makespan; /* last completion - first submit; 0 when nothing finished */
    /* Job completion time (finish - submit) over finished jobs, queueing delay (start - submit)
     * over started jobs; seconds. */
    double jct_mean, jct_p50, jct_p95, jct_p99;
    double wait_mean, wait_p50, wait_p95, wait_p99;
    /* Over [first_submit, end]: GPUs of running jobs, and GPUs held by any bound pod. */
    double util_busy, util_alloc;
    /* The same over [first submit, last submit], while the trace offers load (a long last job
     * stretches the whole run and hides the differences). */
    double util_busy_arrivals, util_alloc_arrivals;
    /* Pods bound while their gang is not complete: held, unable to run. */
    double partial_gpu_s;
    guint partial_gpus_peak;
    guint partial_gpus_end; /* still held when the run ended */
    /* Jain's index of allocated GPUs / weight over the queues with waiting jobs, averaged over
     * the time at least two queues wait (1 = every waiting queue gets its weighted share);
     * -1 when that never happens. */
    double jain;
    double contended_s;
    guint n_cycles;         /* cycles run (but those below) */
    guint n_cycles_skipped; /* seconds a cycle was due while nothing waited: not run (with
                             * check_skips: run and checked); n_cycles + n_cycles_skipped is
                             * the same whether cycles are skipped or not */
    guint64 n_placements;
    guint n_cache_restarts; /* see delete_finished */
    /* Evictions: pods evicted; job evictions (a job losing its running state; a job evicted
     * twice counts twice) by reason; distinct jobs evicted at least once; GPU-seconds the evicted
     * jobs had run in the attempt they lost (evicted) and what of it must be redone (lost: all
     * of it with restart_cost FULL, none with NONE). */
    guint64 n_evicted_pods;
    guint n_preempted, n_reclaimed, n_jobs_evicted;
    guint max_job_evictions; /* most times one job was evicted */
    double evicted_gpu_s, lost_gpu_s;
    /* Mean over finished jobs of the time they spent not running (JCT - time run in all their
     * attempts): the queueing delay including the waits after evictions. */
    double idle_mean;
    /* High-priority jobs (see high_fraction) and the others: count, queueing delay to their first
     * start and JCT, as above. */
    guint n_high;
    double high_wait_mean, high_wait_p95, high_jct_mean, high_jct_p95;
    double low_wait_mean, low_wait_p95, low_jct_mean, low_jct_p95;
    double cycle_us_mean, cycle_us_p99, cycle_us_max;
    double wall_s;    /* whole simulation */
    double cpu_s;     /* CPU time of the replaying thread (user + system), whole simulation */
    gboolean stopped; /* max_cycles reached */
    KbSimBucket buckets[KB_SIM_N_BUCKETS];
    KbSimSample *samples; /* in time order */
    guint n_samples;
    /* Largest time a job that never started had waited when the run ended (0 when none). */
    double max_unstarted_wait;
    KbSimQueueResult *queues; /* sorted by name */
    guint n_queues;
    KbSimJobResult *jobs; /* in trace order */
} KbSimReport;

/* Defaults: 64 nodes x 8 GPUs, node packing, period 1, no cycle limit, equal weights,
 * delete_finished. */
void kb_sim_options_init(KbSimOptions *opts);

/*
 * Replay @trace (sorted by submit time, e.g. from kb_trace_select) under @conf. Returns a new
 * report (free with kb_sim_report_free) or NULL with KB_ERROR_INVALID for bad options.
 */
KbSimReport *kb_sim_run(const KbTrace *trace, const KbConf *conf, const KbSimOptions *opts,
                        GError **error);
void kb_sim_report_free(KbSimReport *report);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbSimReport, kb_sim_report_free)

/* Is the job of trace line @line high priority under @fraction (0..1)? A fixed hash of the line:
 * deterministic, and about @fraction of any large set of lines. */
gboolean kb_sim_is_high_priority(guint line, double fraction);

/* The nearest-rank @p-th percentile (0 < p <= 100) of @n values (sorted in place); 0 when n=0. */
double kb_sim_percentile(double *values, guint n, double p);
