/*
 * reserve: big gangs never starve. An action (listed before allocate:
 * `enqueue, reserve, allocate`) that gives the highest-priority waiting jobs that cannot start now
 * a reservation: concrete nodes and amounts, and an estimated start time computed from when the
 * running jobs are expected to end. allocate then keeps other jobs off the reserved capacity
 * unless they are expected to finish before the reservation starts (backfill).
 *
 * Expected runtime of a job (kb_reserve_job_runtime, seconds):
 *   1. annotation KB_RESERVE_RUNTIME_ANNOTATION on the PodGroup, else on the job's first pod:
 *      a duration "2h30m", "90m", "3600" (kb_conf_parse_duration) - the user's own word wins;
 *   2. else the queue's history (history.h): the 90th percentile of the last 32 runtimes of
 *      finished jobs of the same queue and size bucket, once 5 are known;
 *   3. either is capped by the smallest positive spec.activeDeadlineSeconds of the job's pods
 *      (the kubelet kills the pod then: it is an upper bound), which alone is the estimate when
 *      1 and 2 give none;
 *   4. none: the job has no estimate. A running job without one is never expected to end (what
 *      it holds never frees on the timeline); a waiting job without one never backfills onto
 *      reserved capacity, and a reservation for it holds its nodes until it starts.
 * A running job past its expected end is expected to end KB_RESERVE_OVERRUN_S from now.
 *
 * Which jobs: candidates are jobs with pending tasks that are not running as a gang (Pending or
 * Inqueue), ready to schedule, of an open queue that is not overused. A candidate is starving
 * (may get a reservation) when it has waited minWait (default 0), asks minGPUs (default any)
 * and its minimum spans minNodes nodes (default 2: it fits no single node; packing keeps whole
 * nodes coming free, so one-node jobs need no reservation, and reserving for them measured a
 * 37% mean-JCT cost on the Philly trace). With the sla plugin, a job waiting past its waiting
 * time (policies/sla.c) is starving whatever those three say, and goes before the other
 * candidates of its priority. They are sorted by priority (highest first), then past their sla
 * waiting time (earliest limit first), then starving before not, then creation time (oldest
 * first), then key. Walking them, a starving
 * gang gets the next reservation, computed on the timeline that holds the earlier ones
 * (conservative backfill), up to maxReservations; it gets one even when it fits now (then it
 * starts now, admitted Inqueue, and its hold keeps others off the capacity while allocate
 * places it). Before the first reservation, a job whose gang fits the idle capacity left by the
 * jobs before it is expected to start now (its capacity is taken on the timeline) and is
 * admitted. A job whose queue would exceed its deserved share (proportion) when it is
 * expected to start gets no reservation, so a reservation never holds capacity that another
 * queue is due for ever (see docs/configuration.md, "Reservations and backfill").
 * A reserved job stays Pending until its gang fits the idle capacity (admitting it earlier
 * would make enqueue count its whole request against the idle capacity and hold every job
 * out).
 *
 * Admission around the holds: after the reservations, the jobs with nothing placed that are
 * neither reserved nor expected to start first are admitted again in job order against the
 * idle capacity, where a job expected to run past the earliest reservation start (or without
 * an estimate) counts only the capacity the holds leave open: an admitted job that no longer
 * fits goes back to Pending (kb_session_job_dequeued), a Pending one that now fits is admitted.
 * Otherwise long jobs admitted against the reserved capacity, which they may not use, take
 * the admission budget of the short jobs that could backfill, and the capacity stays idle.
 *
 * Admission (allocate calls kb_reserve_admits for every candidate node): reservation i holds
 * amount R(i,n) on node n from its start T(i) until its expected end. A task of a job that owns
 * no reservation, or owns one of lower rank, may use node n only if, at every T(i) of a
 * reservation holding n that comes before the task's job is expected to end (unknown end: every
 * one), the capacity n is expected to have free then, minus the holds active then, minus what
 * earlier such placements took, still fits the task. A job with no estimate is never expected
 * to end. Owners of reservation i ignore the holds of reservations i..max (lower priority).
 *
 * Configuration (Volcano's per-action `configurations`):
 *   configurations:
 *   - name: reserve
 *     arguments:
 *       maxReservations: 1   # 1..32 jobs reserved per cycle (conservative backfill above 1)
 *       maxScan: 1000        # waiting jobs examined per cycle to find them
 *       minWait: 0           # starving: waited at least this long
 *       minGPUs: 0           # starving: asks at least this many GPUs
 *       minNodes: 2          # starving: its minimum spans at least this many nodes
 */
#pragma once

#include "scheduler/history.h"
#include "scheduler/session.h"

#define KB_RESERVE_RUNTIME_ANNOTATION "kube-batchd.io/expected-runtime"
#define KB_RESERVE_MAX                32
#define KB_RESERVE_OVERRUN_S          60
#define KB_RESERVE_UNKNOWN            G_MAXINT64

typedef struct KbReserve KbReserve;

/* One reservation, as the action decided it. */
typedef struct {
    const KbJobInfo *job;
    gint64 start;        /* estimated start (unix seconds); KB_RESERVE_UNKNOWN when not known */
    gint64 end;          /* start + the job's expected runtime; KB_RESERVE_UNKNOWN when not known */
    guint n_nodes;       /* nodes holding some of it */
    guint *nodes;        /* node ids */
    KbResources *amount; /* per node of @nodes: what is held there */
} KbReservation;

/* The job's expected runtime in seconds, or KB_RESERVE_UNKNOWN (see the top of the file);
 * @history may be NULL (no history estimates). */
gint64 kb_reserve_job_runtime(KbJobInfo *job, const KbHistory *history);

/* TRUE when @task may be placed on node @node now (free resources are the caller's check). */
gboolean kb_reserve_admits(KbSession *ssn, const KbTaskInfo *task, guint node);
/* Placement bookkeeping, from kb_session_allocate / kb_session_deallocate. */
void kb_reserve_on_allocate(KbSession *ssn, const KbTaskInfo *task, guint node);
void kb_reserve_on_deallocate(KbSession *ssn, const KbTaskInfo *task, guint node);
/*
 * " (reserved 4 nodes, expected start in 2h10m)" for a job holding a reservation in this
 * session, else NULL; newly allocated. Minutes are rounded up so that the message changes at
 * most once a minute (each change is a status write).
 */
char *kb_reserve_describe(KbSession *ssn, const KbJobInfo *job);
/* The reservations of this session (0 when the action did not run). Borrowed. */
const KbReservation *kb_reserve_list(KbSession *ssn, guint *n);
/* GPUs the reservations of jobs of queue @queue (a queue id), @job's own aside, hold for them;
 * a reservation that starts after @job is expected to end (when @job is not NULL) is left out. */
gint64 kb_reserve_queue_gpus(KbSession *ssn, guint queue, const KbJobInfo *job);
void kb_reserve_free(KbReserve *rs);
