/*
 * The REST layer of the in-memory API server, independent of the HTTP library: a request
 * (method, path, query, a few headers, body) in, a reply (status, JSON body, or a watcher to
 * stream) out. Covers discovery (/version, /api, /apis, /openapi/v3), resources with their
 * subresources, lists (selectors, limit/continue), watches and Table output.
 */
#pragma once

#include <glib.h>

#include "testbed/apiserver/kas-convert.h"
#include "testbed/apiserver/kas-store.h"

typedef struct {
    const char *method;
    const char *path;       /* without the query string, percent-decoded */
    GHashTable *query;      /* char* -> char* (first value), may be NULL */
    const char *accept;     /* may be NULL */
    const char *content_type; /* may be NULL */
    const char *body;
    gsize body_len;
} KasRequest;

typedef struct {
    guint status;
    GString *body;            /* JSON or text */
    const char *content_type; /* static string */
    guint retry_after;        /* seconds; 0: no Retry-After header */
    /* A watch: the body is streamed from the watcher until the deadline. */
    KasWatcher *watcher;
    gint64 watch_deadline;    /* monotonic µs */
    gboolean watch_bookmarks;
    KasWatchRender render;    /* may be NULL */
    gpointer render_data;
    GDestroyNotify render_free;
    /* A text stream instead of a watch (pods/NAME/log?follow=true): called with render_data for
     * more of the body until it returns FALSE; it may wait until @wake_us (monotonic). */
    gboolean (*text_stream)(gpointer data, GString *out, gint64 wake_us);
} KasReply;

typedef struct {
    KasStore *store;
    guint port;                   /* for /api serverAddressByClientCIDRs */
    guint min_watch_timeout;      /* seconds; default watch timeout is in [min, 2*min) */
    KasConvert *convert;          /* CRD conversion webhooks; may be NULL (none called) */
} KasRestContext;

void kas_reply_init(KasReply *reply);
void kas_reply_clear(KasReply *reply);

/* Fill @reply with a metav1.Status failure. @res and @name (both may be NULL) give details. */
void kas_reply_error(KasReply *reply, KasErr code, const char *message, const KasRes *res,
                     const char *name);
/* The same from a GError of the KAS_ERROR domain (other domains give 500 InternalError). */
void kas_reply_gerror(KasReply *reply, const GError *error, const KasRes *res, const char *name);

/* Serve @req. */
void kas_rest_handle(const KasRestContext *ctx, const KasRequest *req, KasReply *reply);
