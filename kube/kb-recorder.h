/*
 * core/v1 Event recorder, after client-go's record package:
 *
 * - events are posted asynchronously on the client's main loop, named "<object>.<hex unique>" in
 *   the object's namespace ("default" for cluster-scoped objects), with involvedObject, reason,
 *   message, type, source.component/host, firstTimestamp/lastTimestamp, count, reportingComponent
 *   and reportingInstance;
 * - a repeat of the same (object, type, reason, message) within the aggregation window (10 min)
 *   PATCHes count and lastTimestamp of the existing Event instead of creating one; a repeat while
 *   the first write is still in flight is folded into one PATCH after it; a PATCH that finds the
 *   Event gone (404: events expire) creates it again with the running count;
 * - a per-object token bucket (burst 25, one token back every 5 minutes, as client-go) drops and
 *   counts what exceeds it, repeats included, so a hot loop cannot flood the API server;
 * - the aggregation entries and the buckets are LRU caches of at most max_entries (4096) each;
 * - messages are cut at KB_RECORDER_MAX_MESSAGE bytes (on a UTF-8 boundary).
 */
#pragma once

#include <glib.h>

#include "kube/kb-client.h"
#include "kube/kb-objects.h"

#define KB_RECORDER_MAX_MESSAGE 1024

typedef struct {
    const char *component;     /* source.component and reportingComponent ("kube-batchd") */
    const char *host;          /* source.host and reportingInstance; may be NULL */
    guint burst;               /* default 25 */
    guint refill_ms;           /* one token back every refill_ms; default 300000 */
    guint aggregate_window_ms; /* default 600000 */
    guint max_entries;         /* default 4096 */
} KbRecorderOptions;

typedef struct KbRecorder KbRecorder;

/* Defaults for everything but @component. @client must outlive the recorder. */
KbRecorder *kb_recorder_new(KbClient *client, const char *component);
/* Zero fields take the defaults; @opts is copied. */
KbRecorder *kb_recorder_new_full(KbClient *client, const KbRecorderOptions *opts);
/* Frees the recorder; writes still in flight complete but their results are ignored. */
void kb_recorder_free(KbRecorder *recorder);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbRecorder, kb_recorder_free)

/* @type "Normal" or "Warning". @involved: any decoded record (its namespace, name and uid are
 * used), @api_version/@kind name it ("v1", "Pod"). */
void kb_recorder_event(KbRecorder *recorder, const KbObjectMeta *involved, const char *api_version,
                       const char *kind, const char *type, const char *reason, const char *fmt, ...)
        G_GNUC_PRINTF(7, 8);

/* Counters for metrics: events dropped by the rate limit; Events created (POST); repeats sent as
 * PATCH; writes the API server refused or that failed in transport. */
guint64 kb_recorder_dropped(const KbRecorder *recorder);
guint64 kb_recorder_created(const KbRecorder *recorder);
guint64 kb_recorder_patched(const KbRecorder *recorder);
guint64 kb_recorder_failed(const KbRecorder *recorder);
/* Writes queued or in flight. */
guint kb_recorder_pending(const KbRecorder *recorder);
