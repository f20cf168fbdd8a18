/*
 * The daemons' HTTP endpoint for probes and scraping, on --listen-address:
 *
 *   /healthz  200 "ok"
 *   /readyz   200 "ok", or 503 with the reason the readiness callback gives
 *             ("caches not synced", "not leading")
 *   /metrics  the registry in Prometheus text format 0.0.4
 *   anything else 404; methods other than GET and HEAD 405.
 *
 * libmicrohttpd runs on the caller's GMainContext, not on a thread of its own: its epoll fd is a
 * source on the main loop and MHD_run() is called from there. Handlers therefore run on the main
 * loop, where the registry and the readiness state live, with no locks and no copies handed
 * between threads. It also makes /healthz mean what a probe wants: a main loop that is stuck
 * answers nothing, so the kubelet's probe times out and counts a failure. The cost is that a long
 * scheduling cycle delays answers by its length, which probe timeouts of a few seconds absorb.
 * Sockets are non-blocking, so a slow client never stalls the loop.
 */
#pragma once

#include <glib.h>

#include "kube/kb-metrics.h"

typedef struct KbHttpd KbHttpd;

/* Readiness: TRUE when ready; else FALSE and *@reason a newly allocated explanation (may be left
 * NULL, then "not ready" is served). */
typedef gboolean (*KbHttpdReadyFunc)(gpointer user_data, char **reason);

/*
 * Split "HOST:PORT" into its parts: ":8080" (all interfaces: *@host NULL), "127.0.0.1:0" (0 asks
 * for an ephemeral port), "[::1]:9090", "localhost:8080". HOST must be an IP literal or
 * "localhost". FALSE with KB_ERROR_CONFIG naming the value otherwise.
 */
gboolean kb_httpd_parse_address(const char *address, char **host, guint16 *port, GError **error);

/*
 * Listen on @listen_address and serve on the thread-default GMainContext. @metrics (may be NULL:
 * /metrics then answers 404) is borrowed and must outlive the server. Returns NULL with
 * KB_ERROR_CONFIG for a bad address or KB_ERROR_TRANSPORT when the port cannot be bound.
 */
KbHttpd *kb_httpd_new(const char *listen_address, KbMetrics *metrics, GError **error);
void kb_httpd_set_ready_func(KbHttpd *httpd, KbHttpdReadyFunc func, gpointer user_data);

/*
 * Application endpoints (the scheduler extender): a server made with kb_httpd_new_full() and a
 * handler passes every request whose path is not one of the three above to the handler, any
 * method, once its whole body has arrived. A body longer than @max_body is answered 413 without
 * calling the handler (by its Content-Length before reading it, or once it passed the limit).
 * The handler answers with kb_httpd_request_respond(), at once or later from the main loop (the
 * connection is suspended meanwhile); a request still unanswered when the server is freed gets a
 * 503. @tls (may be NULL: plain HTTP) names PEM files read once here.
 */
typedef struct KbHttpdRequest KbHttpdRequest;
typedef void (*KbHttpdHandler)(KbHttpdRequest *req, gpointer user_data);

typedef struct {
    const char *cert_file;
    const char *key_file;
    /* Client certificates (needs cert_file): the CA bundle (PEM) they must chain to. The TLS
     * handshake asks for a certificate without requiring one; every application request is then
     * verified here (chain, validity dates, client-auth key purpose) and one that fails is
     * answered 401 before its body is read. Probe paths stay open to anyone (read-only). */
    const char *client_ca_file;
} KbHttpdTls;

KbHttpd *kb_httpd_new_full(const char *listen_address, KbMetrics *metrics, const KbHttpdTls *tls,
                           gsize max_body, GError **error);
void kb_httpd_set_handler(KbHttpd *httpd, KbHttpdHandler handler, gpointer user_data);
const char *kb_httpd_request_method(const KbHttpdRequest *req);
const char *kb_httpd_request_path(const KbHttpdRequest *req);
/* The body (NUL-terminated for convenience; may hold NULs itself) and its length. */
const char *kb_httpd_request_body(const KbHttpdRequest *req, gsize *len);
/* The verified client certificate's identity ("CN=kube-scheduler", else its first DNS SAN), or
 * NULL when the server verifies no client certificates (borrowed, lives as long as @req). */
const char *kb_httpd_request_peer(const KbHttpdRequest *req);
/* The peer's address ("10.0.0.7:51122"; newly allocated), for logs. */
char *kb_httpd_request_address(const KbHttpdRequest *req);

/* Called for each application request refused 401 (no or no valid client certificate), with the
 * method, path, the peer's address and why; for the caller's logs and metrics. */
typedef void (*KbHttpdRefusedFunc)(const char *method, const char *path, const char *address,
                                   const char *why, gpointer user_data);
void kb_httpd_set_refused_func(KbHttpd *httpd, KbHttpdRefusedFunc func, gpointer user_data);
/* Requests answered 401 so far. */
guint64 kb_httpd_unauthenticated(const KbHttpd *httpd);
/* Answer @req with @status and @body (taken; may be NULL for an empty body). @req is invalid
 * afterwards. */
void kb_httpd_request_respond(KbHttpdRequest *req, guint status, const char *content_type,
                              char *body);
/* Requests answered 413 because of their size. */
guint64 kb_httpd_too_large(const KbHttpd *httpd);
/* The bound port (the ephemeral one when 0 was asked for). */
guint16 kb_httpd_port(const KbHttpd *httpd);
/* Requests answered so far (any path and status). */
guint64 kb_httpd_requests(const KbHttpd *httpd);
/* Close the listening socket and every connection, detach from the main loop, free. */
void kb_httpd_free(KbHttpd *httpd);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbHttpd, kb_httpd_free)
