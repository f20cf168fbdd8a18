/*
 * kb-apiserver as a library: an in-memory Kubernetes API server on libmicrohttpd (one thread
 * per connection, so a slow or streaming client only ever blocks its own thread), with the
 * store, the simulated kubelets and fault injection. bin/kb-apiserver (main.c) is a thin
 * wrapper; tests and benchmarks may embed it.
 *
 * Admin endpoints (not part of the Kubernetes API):
 *   GET  /admin/faults          the active fault rules and how often each fired (JSON)
 *   POST /admin/faults          body: a fault SPEC replacing the active rules ("" clears)
 *   POST /admin/restart         simulate a restart: close every watch, drop the history
 *   POST /admin/expire-history  drop the watch history (older resourceVersions get 410)
 *   GET  /admin/stats           {"resourceVersion":N,"watchers":N,"connections":N,
 *                                "unauthorized":N,"forbidden":N} (401s and 403s answered)
 * The admin endpoints need no credentials (they are for tests, not part of the API).
 */
#pragma once

#include <glib.h>

#include "tests/apiserver/kas-store.h"

typedef struct {
    const char *listen;        /* "HOST:PORT", default "127.0.0.1:0" (any free port) */
    gboolean simulate_kubelet;
    const char *nodes_file;    /* may be NULL */
    const char *faults;        /* initial fault SPEC, may be NULL */
    guint64 faults_seed;       /* for fraction=; default 1 */
    guint watch_history;       /* events kept for resumption (default 10000) */
    guint watch_queue;         /* events a watcher may lag before it is closed (default 10000) */
    guint bookmark_ms;         /* BOOKMARK period for allowWatchBookmarks (default 60000) */
    gsize max_body;            /* request body limit in bytes (default 3 MiB) */
    guint max_connections;     /* beyond this, requests get 429 (default 1000) */
    guint min_watch_timeout;   /* seconds; watches without timeoutSeconds (default 1800) */
    guint idle_timeout;        /* seconds before an idle connection is closed (default 120) */
    guint header_timeout;      /* seconds to send a complete request header (default 10) */
    guint kubelet_start_ms;    /* simulated kubelet: bound -> Running (default 100) */
    guint kubelet_stop_ms;     /* simulated kubelet: deletion confirmed (default 100) */
    guint heartbeat_ms;        /* simulated kubelet: lease renewal (default 10000) */
    /* HTTPS with these PEM files (both or neither; NULL: plain HTTP). */
    const char *tls_cert_file;
    const char *tls_key_file;
    /* Authentication and authorization (see kas-auth.h); NULL: everyone may do everything. */
    const char *token_auth_file;
    const char *authorization_mode; /* "AlwaysAllow" (default), "RBAC", "Node,RBAC", ... */
    gboolean scheduling_v1beta1;    /* serve scheduling.k8s.io/v1beta1 (see kas-gang.h) */
    gboolean resource_claim_controller; /* kube-controller-manager's, see kas-claims.h */
} KasServerOptions;

typedef struct KasServer KasServer;

/* Defaults for every field. */
void kas_server_options_init(KasServerOptions *opts);

/* kube-apiserver's --runtime-config: "group/version=true|false,..." (an empty value is true).
 * Only scheduling.k8s.io/v1beta1 can be switched (on @opts); anything else is an error naming
 * it. */
gboolean kas_server_runtime_config(KasServerOptions *opts, const char *spec, GError **error);

/* Bind, load the nodes file, start serving. Returns NULL with an error naming the address, the
 * file or the fault rule at fault. */
KasServer *kas_server_new(const KasServerOptions *opts, GError **error);

guint kas_server_port(KasServer *srv);
/* "http://HOST:PORT", or "https://HOST:PORT" with TLS (borrowed). */
const char *kas_server_url(KasServer *srv);
KasStore *kas_server_store(KasServer *srv);

/* Stop serving (every watch ends), stop the kubelets, free everything. */
void kas_server_free(KasServer *srv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KasServer, kas_server_free)
