/*
 * Fault injection for reliability tests (bin/kb-apiserver --faults SPEC, POST /admin/faults).
 * The SPEC syntax is documented at the top of kas-faults.c and in `kb-apiserver --help`.
 */
#pragma once

#include <glib.h>

typedef struct KasFaults KasFaults;

KasFaults *kas_faults_new(guint64 seed);
void kas_faults_free(KasFaults *faults);

/* One-shot actions a SPEC may ask for; the server carries them out. */
typedef enum {
    KAS_FAULT_ONCE_NONE = 0,
    KAS_FAULT_ONCE_EXPIRE_HISTORY = 1 << 0,
    KAS_FAULT_ONCE_RESTART = 1 << 1,
} KasFaultOnce;

/* Replace the active rules with @spec ("" or NULL clears them). On a syntax error the rules are
 * unchanged and the message names the rule and the key. *@once receives the one-shot actions. */
gboolean kas_faults_set(KasFaults *faults, const char *spec, KasFaultOnce *once, GError **error);

/* The active rules and how often each fired, as JSON (newly allocated). */
char *kas_faults_describe(KasFaults *faults);

typedef struct {
    guint status;      /* 0: no injected error; else the HTTP status to answer */
    guint retry_after; /* seconds, for 429/503 */
    guint latency_ms;  /* delay before handling */
} KasFaultAction;

/* What to do with a request (watch requests included). */
void kas_faults_request(KasFaults *faults, const char *method, const char *path,
                        KasFaultAction *out);

typedef struct {
    gint64 cut_after;  /* -1: never; else cut the stream after this many events */
    gboolean cut_mid;  /* cut in the middle of the next event rather than between events */
    gint64 stall_after; /* -1: never */
    guint stall_ms;
} KasWatchFault;

/* What to do with a new watch stream on @path. */
void kas_faults_watch(KasFaults *faults, const char *path, KasWatchFault *out);
