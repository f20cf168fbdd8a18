/*
 * The binder: sends the placements a cycle committed to the API server (POST pods/NAME/binding),
 * asynchronously and in parallel, and reports every outcome to the cache.
 *
 * - Placements wait in a FIFO (a gang's pods stay adjacent) and at most max_in_flight bindings
 *   are on the wire at once; the client's pool of keep-alive connections carries them.
 * - Right before a binding is sent the binder checks that the cache still holds the pod as
 *   assumed (kb_cache_pod_is_assumed): a gang rolled back meanwhile is not bound.
 * - The Binding carries the pod's kube-batchd.io/gpu-ids in metadata.annotations: the API server
 *   copies them onto the pod in the same write (no separate PATCH).
 * - Outcomes. A binding cannot be undone, so a member's failure never releases the other members
 *   of its gang:
 *   - 2xx, or 409 "already assigned to node X" with X the node we chose: bound
 *     (kb_cache_bind_succeeded; a Normal "Scheduled" event).
 *   - 409 "already assigned" to another node: the pod lives there (kb_cache_bind_elsewhere).
 *   - Unknown outcome (5xx, 429, timeout, transport): the pod keeps its node and GPU indices and
 *     the same binding is sent again after 100 ms, 200 ms, ... (KB_BINDER_RETRY_MAX_MS at most),
 *     KB_BINDER_MAX_ATTEMPTS in all; a retry is skipped when the watch settled it meanwhile.
 *     After the last, kb_cache_bind_unknown: held until the watch (or the assume timeout).
 *   - Certain failure (404, 400, 403, 422, other 409): kb_cache_bind_refused releases that pod
 *     alone and backs its job off; a Warning "FailedScheduling" event with the reason.
 * - DRA: a placement's claim writes (KbPlacement.claim_writes) go first, one at a time, each a
 *   merge patch of the claim's status with the resourceVersion the cache saw as a precondition;
 *   the Binding only after the last succeeded. When a claim write fails, or the binding fails
 *   for certain (or the pod is found on another node), exactly the writes made for the pod are
 *   undone, each with the resourceVersion its own write returned (a claim changed since by
 *   anyone else is left alone), and the pod is placed again as for a refused binding. A retried
 *   binding does not write its claims again.
 *
 * - Events never hold a binding back and have their own budgets: when every binding of a job's
 *   batch has an outcome, one Normal "Scheduled" event on its PodGroup names the nodes ("bound 8
 *   pods: n1 x4, n2 x4"; for a pod without a group, the usual event on the pod) within the gang
 *   budget; per-pod "Scheduled" events of group members go within a separate pod budget (off by
 *   default). Events over budget are dropped and counted (kb_binder_events_over_budget).
 *
 * Everything runs on the client's main context. The binder keeps a reference on the pods it
 * holds; it borrows the client, the cache and the recorder, which must outlive it, except that
 * responses arriving after kb_binder_free() are ignored harmlessly.
 */
#pragma once

#include <glib.h>

#include "kube/kb-client.h"
#include "kube/kb-informer.h"
#include "kube/kb-recorder.h"
#include "scheduler/cache.h"
#include "scheduler/cycle.h"

#define KB_BINDER_DEFAULT_MAX_IN_FLIGHT 64
/* The most --bind-max-in-flight accepts: each binding in flight may hold a connection. */
#define KB_BINDER_MAX_IN_FLIGHT_LIMIT 1024
#define KB_BINDER_MAX_ATTEMPTS        8
#define KB_BINDER_RETRY_BASE_MS       100
#define KB_BINDER_RETRY_MAX_MS        5000

typedef enum {
    KB_BIND_SUCCEEDED,
    KB_BIND_CONFLICT,  /* 409: already on another node, or the pod changed (uid) */
    KB_BIND_NOT_FOUND, /* 404: the pod (or its namespace) is gone */
    KB_BIND_ERROR,     /* outcome unknown after every retry: 5xx, 429, transport, timeout */
    KB_BIND_REFUSED,   /* 400, 403, 422, other 4xx: certainly not bound */
    KB_BIND_N_RESULTS
} KbBindResult;

/* One finished binding, for the daemon's metrics. Everything is borrowed for the call. */
typedef struct {
    KbBindResult result;
    const KbPod *pod;
    const char *node;
    const char *job;     /* "ns/name" of the job */
    const GError *error; /* NULL on success */
    guint n_rolled_back; /* 1 when the pod was released (certain failure), else 0 */
    gint64 latency_us;   /* submission to response */
} KbBindOutcome;

typedef void (*KbBinderDoneFunc)(const KbBindOutcome *outcome, gpointer user_data);

typedef struct KbBinder KbBinder;

/* @recorder may be NULL (no events). Free with kb_binder_free(). */
KbBinder *kb_binder_new(KbClient *client, KbCache *cache, KbRecorder *recorder);
/* The informer of ResourceClaims (or NULL): each claim status write answered 2xx tells it the
 * claim record the write made (kb_informer_expect), so that the write's watch event is taken in
 * without a decode. It must outlive the binder or be unset first. */
void kb_binder_set_claim_informer(KbBinder *binder, KbInformer *claims);
/* Called after each finished binding (not for dropped ones). */
void kb_binder_set_done_func(KbBinder *binder, KbBinderDoneFunc func, gpointer user_data);
/* Bindings on the wire at once (default KB_BINDER_DEFAULT_MAX_IN_FLIGHT, at least 1). */
void kb_binder_set_max_in_flight(KbBinder *binder, guint n);
/* Attempts per binding whose outcome stays unknown (default KB_BINDER_MAX_ATTEMPTS, at least 1)
 * and the first retry delay in ms (default KB_BINDER_RETRY_BASE_MS; doubles up to
 * KB_BINDER_RETRY_MAX_MS). */
void kb_binder_set_retry(KbBinder *binder, guint max_attempts, guint base_ms);
/*
 * Event budgets (token buckets: @qps tokens a second, at most @burst saved; qps 0 with burst 0
 * turns the kind off). Defaults: KB_BINDER_GANG_EVENT_* and KB_BINDER_POD_EVENT_*: a burst for
 * `kubectl describe` on a quiet cluster, a trickle under load (client-go's per-object spam
 * filter still applies in the recorder).
 */
#define KB_BINDER_GANG_EVENT_QPS   5.0
#define KB_BINDER_GANG_EVENT_BURST 50
#define KB_BINDER_POD_EVENT_QPS    1.0
#define KB_BINDER_POD_EVENT_BURST  10
void kb_binder_set_gang_event_budget(KbBinder *binder, double qps, guint burst);
void kb_binder_set_pod_event_budget(KbBinder *binder, double qps, guint burst);
/* Events posted (gang and per pod) and dropped over budget since creation. */
guint64 kb_binder_events_posted(const KbBinder *binder);
guint64 kb_binder_events_over_budget(const KbBinder *binder);
/* The cache's clock for kb_cache_bind_succeeded (unix seconds); default g_get_real_time(). */
void kb_binder_set_clock(KbBinder *binder, gint64 (*now_s)(void));

/* Queue every KbPlacement of @placements (the pods are referenced, the strings copied) and send
 * as many as the window allows. */
void kb_binder_submit(KbBinder *binder, const GArray *placements);

/*
 * Forget the placements not yet sent and the retries not yet due (losing leadership, shutting
 * down), without an event or a done call: a placement never sent is released
 * (kb_cache_bind_failed), one sent before is held (kb_cache_bind_unknown). Bindings already on
 * the wire still complete. Returns how many were dropped.
 */
guint kb_binder_drop_queued(KbBinder *binder);
/* While paused, nothing new is sent (queued placements wait). */
void kb_binder_set_paused(KbBinder *binder, gboolean paused);

guint kb_binder_queued(const KbBinder *binder);
guint kb_binder_in_flight(const KbBinder *binder);
/* Bindings finished with @result since creation. */
guint64 kb_binder_count(const KbBinder *binder, KbBindResult result);
/* Queued placements skipped because they were released before they were sent. */
guint64 kb_binder_skipped(const KbBinder *binder);
/* DRA claim status writes that succeeded, were undone after a failure, and failed. */
guint64 kb_binder_claims_written(const KbBinder *binder);
guint64 kb_binder_claims_undone(const KbBinder *binder);
guint64 kb_binder_claim_failures(const KbBinder *binder);
/* Bindings sent again after an unknown outcome, and placements waiting for such a retry. */
guint64 kb_binder_retries(const KbBinder *binder);
guint kb_binder_retrying(const KbBinder *binder);
/* "succeeded", "conflict", "not_found", "error", "refused" (metric label values). Static. */
const char *kb_bind_result_to_string(KbBindResult result);

/*
 * Evictions (preempt/reclaim). kb_binder_evict sends every KbEviction of @evictions at once (the
 * client's pool bounds the connections; evictions, their condition writes and bindings are urgent
 * requests, ahead of the status writes and events waiting in the client's queue). First, as
 * kube-scheduler does, the condition DisruptionTarget True/PreemptionByScheduler with the
 * eviction's message (strategic merge patch of status) on each disrupted_group once, before any of
 * its pods; a pod's own status is written only when its gang is stale (reason GangIncomplete:
 * DisruptionTarget and kube-batchd.io/GangEvicted), since the eviction sets the pod's
 * DisruptionTarget itself (kube-apiserver 1.26+, see binder.c); a failed write is logged and the
 * eviction goes ahead. Then POST pods/NAME/eviction as policy/v1 with the pod's uid as a
 * precondition, again as policy/v1beta1
 * when the server does not know v1. Accepted (2xx) or pod already gone (404): nothing more to do,
 * the watch shows the deletion. Anything else (429 refused by a PodDisruptionBudget, 409 uid
 * changed, 5xx, transport): kb_cache_evict_failed, so the pod counts as running again and a later
 * cycle may choose again, and a Warning "FailedEviction" event. The evict func (if set) is called
 * for each outcome.
 */
typedef enum {
    KB_EVICT_ACCEPTED,
    KB_EVICT_GONE,    /* 404: the pod was already deleted */
    KB_EVICT_REFUSED, /* anything else */
    KB_EVICT_N_RESULTS
} KbEvictResult;

typedef struct {
    KbEvictResult result;
    const KbPod *pod;
    const char *reason;  /* "Preempted" / "Reclaimed" */
    const GError *error; /* NULL unless refused */
} KbEvictOutcome;

typedef void (*KbBinderEvictFunc)(const KbEvictOutcome *outcome, gpointer user_data);

void kb_binder_set_evict_func(KbBinder *binder, KbBinderEvictFunc func, gpointer user_data);
void kb_binder_evict(KbBinder *binder, const GArray *evictions);
/* Evictions on the wire; finished ones with @result since creation. */
guint kb_binder_evictions_in_flight(const KbBinder *binder);
guint64 kb_binder_evict_count(const KbBinder *binder, KbEvictResult result);
/* "accepted", "gone", "refused". Static. */
const char *kb_evict_result_to_string(KbEvictResult result);

void kb_binder_free(KbBinder *binder);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbBinder, kb_binder_free)
