/*
 * The status writer: what a cycle decided, written back where users look.
 *
 * - PodGroup status: for every job status the cycle marked `changed`, a merge PATCH of the
 *   group's /status subresource in its own dialect (phase; the condition with the core's reason
 *   and message, lastTransitionTime; running/succeeded/failed/pending counts; `scheduled` for the
 *   scheduling.x-k8s.io dialect). Kubernetes' own PodGroup (scheduling.k8s.io/v1beta1) gets the
 *   API's condition PodGroupInitiallyScheduled instead, and GangIncomplete while a bound gang
 *   is short (kb_status_native_group_body), as a strategic merge patch (conditions merge on type: DisruptionTarget, set by the binder, stays).
 *   A CompositePodGroup (scheduling.k8s.io/v1alpha3) gets CompositePodGroupInitiallyScheduled
 *   (kb_status_composite_body) and each of its children its own PodGroupInitiallyScheduled
 *   (kb_status_child_body), written from every cycle when it differs from what was last queued;
 *   native groups are written at the version they were read at.
 * - A pod without a group (a gang of one) that cannot be placed: its PodScheduled condition
 *   (status False, reason Unschedulable, the core's message), as kube-scheduler writes it.
 * - The cycle's events (FailedScheduling on pods, Unschedulable/Scheduled on PodGroups) through
 *   the recorder, which aggregates repeats.
 * - Queue status: pending/inqueue/running/unknown/completed job counts and state, `allocated`
 *   (a ResourceList) and `deserved` (proportion's share, when the plugin runs), a merge PATCH of
 *   the queue's /status, only when they differ from what was last written. With it, when
 *   proportion keeps decayed usage (usageHalfLife), `usage`: {"time": RFC 3339, "resourceSeconds":
 *   {cpu (core-seconds), memory, nvidia.com/gpu}}, the figures at that time, written when they
 *   changed and at most every KB_STATUS_USAGE_INTERVAL seconds; kube-batchd reads them back on
 *   start and on taking the lead (kb_usage_restore), so usage survives restarts. Likewise
 *   `runtimeHistory` ({"time", "runtimeSeconds": {bucket: [seconds, oldest first]}}, history.h)
 *   when the cycle reports changed samples, at most every KB_STATUS_USAGE_INTERVAL seconds
 *   (samples that come sooner wait: the next cycle after it or a timer writes them), read back
 *   through kb_history_restore. Where the server drops them from the status it stores (a CRD
 *   whose schema does not declare them: Volcano's own Queue CRD), the writer notices it in the
 *   answer and from then on writes both into the queue's annotations (KB_QUEUE_USAGE_ANNOTATION,
 *   KB_QUEUE_HISTORY_ANNOTATION), a merge patch of the Queue itself; the decoder reads both.
 *
 * Writes are asynchronous on the client's main context and at most one per object is in flight; a
 * newer status replaces a queued one. A 404 (object or CRD gone) drops the write; 409, 429, 5xx
 * and transport errors retry with backoff (1 s doubling to 30 s, at most
 * KB_STATUS_MAX_ATTEMPTS attempts). Nothing here aborts on API errors.
 */
#pragma once

#include <glib.h>

#include "kube/kb-client.h"
#include "kube/kb-recorder.h"
#include "scheduler/cycle.h"

#define KB_STATUS_MAX_ATTEMPTS 8
#define KB_STATUS_USAGE_INTERVAL 5 /* seconds between two writes of a queue's status.usage */
#define KB_STATUS_MAX_ENTRIES  65536 /* objects with a write queued, in flight or retrying */

/* Which API serves queue @name (kb_type_queues_volcano or kb_type_queues_kube_batch), or NULL
 * when the queue has no object (the implicit default queue): no status is written then. */
typedef const KbResourceType *(*KbQueueTypeFunc)(const char *name, gpointer user_data);

typedef enum {
    KB_STATUS_WRITTEN,
    KB_STATUS_GONE,    /* 404: dropped */
    KB_STATUS_RETRIED, /* a failed attempt that will be retried */
    KB_STATUS_FAILED,  /* gave up after KB_STATUS_MAX_ATTEMPTS, or a non-retryable error */
    KB_STATUS_N_RESULTS
} KbStatusResult;

typedef struct KbStatusWriter KbStatusWriter;

/* @recorder may be NULL (no events). @client and @recorder must outlive the writer. */
KbStatusWriter *kb_status_writer_new(KbClient *client, KbRecorder *recorder);
void kb_status_writer_set_queue_type_func(KbStatusWriter *writer, KbQueueTypeFunc func,
                                          gpointer user_data);
/* Backoff of failed writes (tests use short ones). */
void kb_status_writer_set_backoff(KbStatusWriter *writer, guint initial_ms, guint max_ms);

/* Queue the writes and events of @result (borrowed; everything needed is copied). */
void kb_status_writer_apply(KbStatusWriter *writer, const KbCycleResult *result);

/*
 * While held, new writes are queued but not sent (a newer status for the same object still
 * replaces the queued one); releasing sends them all. kube-batchd holds them while bindings wait
 * to be sent: bindings go first, as events do (see kb_daemon).
 */
void kb_status_writer_set_held(KbStatusWriter *writer, gboolean held);

/* Writes queued, in flight or waiting for a retry. */
guint kb_status_writer_pending(const KbStatusWriter *writer);
guint64 kb_status_writer_count(const KbStatusWriter *writer, KbStatusResult result);
/* "written", "gone", "retried", "failed" (metric label values). Static. */
const char *kb_status_result_to_string(KbStatusResult result);

/*
 * The status body (a new JSON object {"status": {...}}) written for @st at @now (unix seconds),
 * for @dialect. Exposed for tests.
 */
json_object *kb_status_pod_group_body(const KbJobStatus *st, KbPodGroupDialect dialect, gint64 now);

/*
 * A native PodGroup's (scheduling.k8s.io/v1beta1) status for @st at @now: the condition
 * PodGroupInitiallyScheduled, False with reason Unschedulable and the core's message while
 * minMember pods were never bound, True once they were; never reverted. Beside it, kube-batchd's
 * own condition GangIncomplete (scheduler/stale.h): True with reason MemberLost or GangEvicted
 * and the stale pass's message while a bound gang is short, False with reason MembersHealthy
 * once a gang that was short is not; observedGeneration is the group's generation and the
 * transition time moves only when a status changes (metav1.Condition). NULL when nothing is to
 * be written (no condition, or the group already says so). Exposed for tests.
 */
json_object *kb_status_native_group_body(const KbJobStatus *st, gint64 now);

/*
 * A CompositePodGroup's status for @st (its job's, st->group->composite) at @now: the condition
 * CompositePodGroupInitiallyScheduled, False with reason Unschedulable and the core's message
 * (naming the children that fall short) while fewer than minGroupCount children were ever
 * scheduled, True once they were; never reverted. NULL when nothing is to be written. Exposed
 * for tests.
 */
json_object *kb_status_composite_body(const KbJobStatus *st, gint64 now);

/*
 * The PodGroupInitiallyScheduled condition of @cs, a child of the composite of @st: True once its
 * minCount pods were bound; False/Unschedulable with the composite's message while the composite
 * cannot start, or saying that it started without this child. NULL when nothing is to be written
 * (as kb_status_native_group_body). Exposed for tests.
 */
json_object *kb_status_child_body(const KbJobStatus *st, const KbChildStatus *cs, gint64 now);

/*
 * A native PodGroup kube-batchd cannot read (@group: the object as served; @message: the decode
 * error naming field and value): PodGroupInitiallyScheduled False with reason SchedulerError.
 * Nothing when the condition is True already (never reverted) or says @message already (the
 * write comes back as an update that fails to decode again). TRUE when a write was queued.
 */
gboolean kb_status_writer_native_error(KbStatusWriter *writer, json_object *group,
                                       const char *message, gint64 now);

/* Frees the writer; writes in flight complete but their results are ignored. */
void kb_status_writer_free(KbStatusWriter *writer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbStatusWriter, kb_status_writer_free)
