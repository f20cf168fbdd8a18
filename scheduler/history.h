/*
 * history: the runtimes of recently finished jobs per queue and gang size, an estimate for jobs
 * that announce none (the reserve action's third source, see reserve.h).
 *
 * The cache records a job when its last pod succeeds (kb_history_finished, with the time its
 * pods were bound); the end is stamped with the next cycle's clock (kb_history_stamp), since the
 * cache learns of a success without a clock. A failed or evicted job is not a sample: it says
 * nothing about how long the work takes.
 *
 * Sizes are bucketed as the simulator reports them: 0 (no GPU), 1, 2-4, 5-8, 9-16, 17+ GPUs. Per
 * queue and bucket the last KB_HISTORY_KEEP runtimes are kept; the estimate is their
 * KB_HISTORY_PERCENTILE-th percentile (a conservative one: a job expected to end too early may
 * backfill onto capacity a reservation needs) once KB_HISTORY_MIN_SAMPLES are known, else none.
 *
 * The samples survive restarts and leader changes as decayed usage does: the status writer puts
 * each queue's in its Queue's status.runtimeHistory (kb_history_export: {time, runtimeSeconds:
 * {bucket: [seconds, oldest first]}}) when they changed and at most every few seconds, and the
 * cache adopts what it reads back there when it is newer than its own (kb_history_restore).
 */
#pragma once

#include <glib.h>

#include "kube/kb-objects.h"

#define KB_HISTORY_KEEP        32
#define KB_HISTORY_MIN_SAMPLES 5
#define KB_HISTORY_PERCENTILE  90

typedef struct KbHistory KbHistory;

KbHistory *kb_history_new(void);
void kb_history_free(KbHistory *h);
/* A job of queue @queue (interned) asking @gpus GPUs in all, bound at @started (unix seconds),
 * has just finished; its end is the next kb_history_stamp. @started <= 0 is ignored. */
void kb_history_finished(KbHistory *h, const char *queue, gint64 gpus, gint64 started);
/* Stamp the jobs finished since the last call as ending at @now. */
void kb_history_stamp(KbHistory *h, gint64 now);
/* Add a sample directly (tests, and kb_history_stamp). */
void kb_history_add(KbHistory *h, const char *queue, gint64 gpus, gint64 runtime);
/* The estimate for a job of @queue asking @gpus GPUs in seconds, or -1 when too few samples. */
gint64 kb_history_estimate(const KbHistory *h, const char *queue, gint64 gpus);
/* @queue's samples into @out (each bucket oldest first) with the time they were last stamped,
 * when they changed since the last export or restore (each change is exported once, so a cycle
 * may ask every time at little cost); FALSE (and @out untouched) otherwise. */
gboolean kb_history_export(KbHistory *h, const char *queue, KbQueueHistory *out);
/*
 * Adopt @in, read back from the Queue's status.runtimeHistory, as @queue's samples, but only when
 * @in->time is later than the time of what @h holds for it (a leader's own write coming back
 * through its informer changes nothing; a restart or a new leader starts from the last written
 * samples). TRUE when adopted.
 */
gboolean kb_history_restore(KbHistory *h, const char *queue, const KbQueueHistory *in);
