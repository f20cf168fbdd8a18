/*
 * kube-batchd around the scheduler core: informers feeding the cache, the cycle timer, the
 * binder, the status writer, leader election, metrics and the probe endpoint, all on the
 * thread-default GMainContext of the caller.
 *
 *   informers (nodes, pods, PodGroups x3, Queues x2, PriorityClasses) -> KbCache
 *   every schedule period, and soon after relevant events (coalesced), while leading and once
 *   every informer synced (a missing CRD counts as synced):
 *       kb_cycle_run -> binder (placements), status writer (statuses, events), metrics
 *
 * Metrics (Prometheus, on /metrics):
 *   kube_batchd_e2e_scheduling_latency_seconds  histogram, pod creation to bind confirmed
 *   kube_batchd_cycle_duration_seconds          histogram, whole cycle
 *   kube_batchd_action_duration_seconds{action} histogram
 *   kube_batchd_cycles_total                    counter
 *   kube_batchd_placements_total                counter, pods placed by cycles
 *   kube_batchd_binds_total{result}             counter: succeeded, conflict, not_found, error
 *   kube_batchd_bind_duration_seconds           histogram, binding request round trip
 *   kube_batchd_gang_rollbacks_total            counter, failed binds that rolled a gang back
 *   kube_batchd_pending_groups{queue}           gauge, jobs in phase Pending or Inqueue
 *   kube_batchd_queue_jobs{queue,phase}         gauge
 *   kube_batchd_queue_allocated{queue,resource} gauge (cpu in cores, memory in bytes, counts)
 *   kube_batchd_queue_deserved{queue,resource}  gauge (proportion's share)
 *   kube_batchd_pending_tasks                   gauge, served pods waiting for a node
 *   kube_batchd_informer_decode_errors_total{resource} counter, malformed objects skipped
 *   kube_batchd_informer_objects{resource}      gauge
 *   kube_batchd_status_writes_total{result}     counter
 *   kube_batchd_events_total{result}            counter: created, patched, dropped, failed
 *   kube_batchd_leader                          gauge, 1 while leading (or not electing)
 *   kube_batchd_ready                           gauge, 1 when /readyz answers 200
 */
#pragma once

#include <glib.h>

#include "kube/kb-client.h"
#include "kube/kb-metrics.h"
#include "scheduler/conf.h"

typedef struct {
    const KbConfig *config;             /* API server connection (copied) */
    const char *const *scheduler_names; /* NULL-terminated; NULL or empty: "kube-batchd" */
    guint schedule_period_ms;           /* default 1000 */
    const char *default_queue;          /* default "default" */
    gboolean leader_elect;
    const char *lock_namespace; /* default "kube-system" */
    const char *lock_name;      /* default "kube-batchd" */
    const char *identity;       /* default kb_leader_default_identity() */
    guint lease_duration_ms;    /* 0: kb-leader defaults (15 s / 10 s / 2 s) */
    guint renew_deadline_ms;
    guint retry_period_ms;
    const char *listen_address; /* NULL: no HTTP endpoint */
    guint bind_max_in_flight;   /* default KB_BINDER_DEFAULT_MAX_IN_FLIGHT */
    guint assume_ttl_s;         /* default 120: a bind the watch never confirms */
    /* Scheduled-event budgets (binder.h); unless set, the binder's defaults. */
    gboolean event_budgets_set;
    double gang_event_qps;
    guint gang_event_burst;
    double pod_event_qps;
    guint pod_event_burst;
    /* Extender mode (scheduler/extender-server.h): kube-scheduler's extender API on this
     * HOST:PORT for pods of other schedulers; NULL or "": off. TLS when both files are given. */
    const char *extender_address;
    const char *extender_tls_cert;
    const char *extender_tls_key;
    /* Client certificates must chain to this CA (PEM); without it the extender listens on
     * loopback only unless extender_insecure (extender-server.h). */
    const char *extender_client_ca;
    gboolean extender_insecure;
    guint extender_reservation_ttl_s; /* default KB_EXTENDER_DEFAULT_RESERVATION_TTL_S */
    /* Pods of these schedulerNames (kube-scheduler profiles that call the extender) are planned
     * for it; NULL or empty: every schedulerName kube-batchd does not serve. */
    const char *const *extender_scheduler_names;
    /* Do not write KB_EXTENDER_REQUEUE_ANNOTATION on parked pods (--extender-no-requeue). */
    gboolean extender_no_requeue;
} KbDaemonOptions;

typedef struct KbDaemon KbDaemon;

/*
 * A daemon for @opts (copied) running configuration @conf (taken over). Creates the client and,
 * when @opts->listen_address is set, binds the HTTP endpoint (so a busy port fails here, with
 * KB_ERROR_TRANSPORT or KB_ERROR_CONFIG). Nothing talks to the API server before
 * kb_daemon_start().
 */
KbDaemon *kb_daemon_new(const KbDaemonOptions *opts, KbConf *conf, GError **error);
/* Start the informers, the leader election (or act as leader at once) and the cycle timer. */
void kb_daemon_start(KbDaemon *daemon);
/*
 * Graceful stop: no more cycles, placements not yet sent are dropped, bindings on the wire get
 * until @deadline_ms to finish (the thread-default context is iterated meanwhile), then pending
 * status writes and events get what remains of it; finally the lease is released (blocking) and a
 * summary line is logged. Idempotent.
 */
void kb_daemon_stop(KbDaemon *daemon, guint deadline_ms);
void kb_daemon_free(KbDaemon *daemon);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbDaemon, kb_daemon_free)

/* Caches synced and leading (the /readyz answer); @reason (may be NULL) says why not. */
gboolean kb_daemon_is_ready(KbDaemon *daemon, char **reason);
/* Run one cycle now if allowed (leading, synced, not stopping); TRUE when one ran. For tests. */
gboolean kb_daemon_run_cycle(KbDaemon *daemon);
/* The extender's port (0 without extender mode). */
guint16 kb_daemon_extender_port(const KbDaemon *daemon);
/* The HTTP endpoint's port (0 without one). */
guint16 kb_daemon_http_port(const KbDaemon *daemon);
KbMetrics *kb_daemon_metrics(KbDaemon *daemon);
