/*
 * Lease-based leader election on coordination.k8s.io/v1, with client-go's leaderelection
 * semantics:
 *
 * - a candidate acquires the Lease when it is absent (create), when its holderIdentity is empty
 *   (released), when it already holds it, or when the Lease has not changed for
 *   leaseDurationSeconds (the Lease's own value) as observed on the local monotonic clock; the
 *   holder's renewTime is never compared with the local clock, so clock skew does not matter;
 * - a takeover bumps leaseTransitions; renewals keep acquireTime and leaseTransitions;
 * - every write is a PUT carrying the resourceVersion last read: a 409 means another candidate
 *   won the race;
 * - while not leading it retries every retry period plus up to 120% jitter; while leading it renews
 *   every retry period; a renewal that has not succeeded within the renew deadline (counted from
 *   the first attempt of that renewal, in-flight requests included) loses leadership: the leader
 *   calls on_stopped_leading and stops; the caller must stop acting as leader at once;
 * - the holder renews with a PUT on the Lease it last wrote (no GET), falling back to GET+PUT when
 *   that fails, as client-go does since 1.29.
 *
 * Requests are asynchronous on the client's main loop, except kb_leader_release(), which blocks
 * so that it can run during shutdown after the loop has stopped.
 */
#pragma once

#include <glib.h>

#include "kube/kb-client.h"

typedef struct {
    const char *namespace_;  /* lease namespace */
    const char *name;        /* lease name */
    const char *identity;    /* holder identity, e.g. kb_leader_default_identity() */
    guint lease_duration_ms; /* default 15000; written as whole seconds, rounded up, at least 1 */
    guint renew_deadline_ms; /* default 10000 */
    guint retry_period_ms;   /* default 2000 */
    void (*on_started_leading)(gpointer user_data);
    /* The renewal failed past the deadline or the lease was taken: stop acting as leader. Not
     * called by kb_leader_release() or kb_leader_free(). */
    void (*on_stopped_leading)(gpointer user_data);
    gpointer user_data;
} KbLeaderOptions;

typedef struct KbLeader KbLeader;

/* @client and the callbacks' data must outlive the leader; @opts is copied. Zero durations take
 * the defaults. Does nothing until kb_leader_start(). */
KbLeader *kb_leader_new(KbClient *client, const KbLeaderOptions *opts);
/* Start (or, after losing the lease, restart) trying to acquire; the first attempt is immediate. */
void kb_leader_start(KbLeader *leader);
gboolean kb_leader_is_leading(const KbLeader *leader);
/* The holderIdentity last observed ("" when none or not yet observed); borrowed. */
const char *kb_leader_get_holder(const KbLeader *leader);
/*
 * Give the lease up if leading: a blocking PUT with an empty holderIdentity and
 * leaseDurationSeconds 1, so that the next candidate takes over at its next attempt. Then stop
 * (no more attempts; kb_leader_start() may start again). Errors are logged.
 */
void kb_leader_release(KbLeader *leader);
/* TRUE while an attempt (acquire or renew) waits for the API server's answer: a caller about to
 * free the client lets it finish first, or its request's data would be dropped with the client. */
gboolean kb_leader_busy(const KbLeader *leader);
/* Stop and free; does not release (call kb_leader_release() first for that). Responses still in
 * flight are ignored when they arrive. */
void kb_leader_free(KbLeader *leader);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbLeader, kb_leader_free)

/* "<hostname>_<random uuid>", newly allocated: unique per process, as client-go users build it. */
char *kb_leader_default_identity(void);
