/*
 * Health, readiness and metrics over libmicrohttpd, driven from the GLib main loop (see the
 * header for why). MHD runs with epoll and no thread of its own: the epoll fd is watched with a
 * unix fd source, and MHD's own timeout (idle connections) with a timer re-armed after every run.
 */
#include "kube/kb-httpd.h"

#include <gio/gio.h>
#include <glib-unix.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/kb-error.h"

#define CONNECTION_LIMIT     64
#define CONNECTION_TIMEOUT_S 10

struct KbHttpd {
    struct MHD_Daemon *daemon;
    GMainContext *context;
    GSource *fd_source;
    GSource *timer;
    guint16 port;
    KbMetrics *metrics;
    KbHttpdReadyFunc ready;
    gpointer ready_data;
    guint64 requests;
    /* Application endpoints (kb_httpd_new_full). */
    KbHttpdHandler handler;
    gpointer handler_data;
    gsize max_body;
    guint64 too_large;
    GQueue suspended; /* KbHttpdRequest* waiting for their answer */
    GSource *resume_source;
    char *tls_cert; /* PEM, kept for the daemon's life */
    char *tls_key;
    char *client_ca;      /* PEM; NULL: no client certificates asked for */
    GHashTable *verified; /* GBytes (a client certificate, DER) -> Verified* */
    KbHttpdRefusedFunc refused;
    gpointer refused_data;
    guint64 unauthenticated;
};

struct KbHttpdRequest {
    KbHttpd *httpd;
    struct MHD_Connection *conn;
    char *method;
    char *path;
    GString *body;
    gboolean too_large;
    gboolean dispatched;
    gboolean in_handler;
    gboolean suspended;
    GList *link;                   /* in httpd->suspended while suspended */
    struct MHD_Response *response; /* the answer, once given */
    guint status;
    char *peer; /* the verified client's identity */
};

gboolean kb_httpd_parse_address(const char *address, char **host, guint16 *port, GError **error)
{
    g_autofree char *h = NULL;
    const char *colon;
    const char *p;
    guint64 n;

    g_return_val_if_fail(host != NULL && port != NULL, FALSE);
    colon = address != NULL ? strrchr(address, ':') : NULL;
    if (colon == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "listen address \"%s\": expected HOST:PORT or :PORT",
                    address != NULL ? address : "");
        return FALSE;
    }
    p = colon + 1;
    if (*p == '\0' || strlen(p) > 5 || !g_ascii_string_to_unsigned(p, 10, 0, 65535, &n, NULL)) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "listen address \"%s\": invalid port \"%s\"",
                    address, p);
        return FALSE;
    }
    h = g_strndup(address, (gsize)(colon - address));
    if (h[0] == '[') {
        gsize len = strlen(h);
        if (len < 2 || h[len - 1] != ']') {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                        "listen address \"%s\": unbalanced brackets", address);
            return FALSE;
        }
        memmove(h, h + 1, len - 2);
        h[len - 2] = '\0';
        if (!g_hostname_is_ip_address(h) || strchr(h, ':') == NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                        "listen address \"%s\": \"%s\" is not an IPv6 address", address, h);
            return FALSE;
        }
    } else if (h[0] != '\0' && strcmp(h, "localhost") != 0 &&
               (!g_hostname_is_ip_address(h) || strchr(h, ':') != NULL)) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "listen address \"%s\": host \"%s\" is not an IP address (IPv6 needs "
                    "brackets)",
                    address, h);
        return FALSE;
    }
    *port = (guint16)n;
    if (h[0] == '\0')
        *host = NULL;
    else if (strcmp(h, "localhost") == 0)
        *host = g_strdup("127.0.0.1");
    else
        *host = g_steal_pointer(&h);
    return TRUE;
}

/* ---- handlers -------------------------------------------------------------------------------- */

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned int status,
                               const char *content_type, char *body, gboolean take)
{
    struct MHD_Response *r;
    enum MHD_Result ret;

    if (take)
        r = MHD_create_response_from_buffer_with_free_callback(strlen(body), body, g_free);
    else
        r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_PERSISTENT);
    if (r == NULL) {
        if (take)
            g_free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

#define TEXT_PLAIN "text/plain; charset=utf-8"

static enum MHD_Result serve_readyz(KbHttpd *httpd, struct MHD_Connection *conn)
{
    g_autofree char *reason = NULL;

    if (httpd->ready == NULL || httpd->ready(httpd->ready_data, &reason))
        return respond(conn, MHD_HTTP_OK, TEXT_PLAIN, "ok", FALSE);
    return respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT_PLAIN,
                   reason != NULL ? g_steal_pointer(&reason) : g_strdup("not ready"), TRUE);
}

static void run_daemon(KbHttpd *httpd);

static gboolean is_probe_path(const KbHttpd *httpd, const char *url)
{
    return strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0 ||
           (strcmp(url, "/metrics") == 0 && httpd->metrics != NULL);
}

static struct MHD_Response *make_response(const char *content_type, char *body)
{
    struct MHD_Response *r;
    if (body == NULL)
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    else
        r = MHD_create_response_from_buffer_with_free_callback(strlen(body), body, g_free);
    if (r == NULL) {
        g_free(body);
        return NULL;
    }
    if (content_type != NULL)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    return r;
}

static enum MHD_Result queue_answer(KbHttpdRequest *req)
{
    if (req->response == NULL)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(req->conn, req->status, req->response);
    MHD_destroy_response(req->response);
    req->response = NULL;
    return ret;
}

static gboolean on_resume(gpointer data)
{
    KbHttpd *httpd = data;
    g_clear_pointer(&httpd->resume_source, g_source_unref);
    run_daemon(httpd);
    return G_SOURCE_REMOVE;
}

void kb_httpd_request_respond(KbHttpdRequest *req, guint status, const char *content_type,
                              char *body)
{
    KbHttpd *httpd = req->httpd;
    g_return_if_fail(req->response == NULL);
    req->response = make_response(content_type, body);
    req->status = status;
    httpd->requests++;
    if (req->in_handler || !req->suspended)
        return;
    g_queue_delete_link(&httpd->suspended, req->link);
    req->link = NULL;
    req->suspended = FALSE;
    MHD_resume_connection(req->conn);
    /* MHD handles resumed connections on its next run: soon, not from inside our caller. */
    if (httpd->resume_source == NULL) {
        httpd->resume_source = g_timeout_source_new(0);
        g_source_set_callback(httpd->resume_source, on_resume, httpd, NULL);
        g_source_attach(httpd->resume_source, httpd->context);
    }
}

/* CN of @crt, else its first SAN when that is a DNS name, else its whole DN; newly allocated. */
static char *crt_identity(gnutls_x509_crt_t crt)
{
    char buf[512];
    size_t size = sizeof(buf);
    if (gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, buf, &size) == 0)
        return g_strdup_printf("CN=%s", buf);
    size = sizeof(buf);
    int type = gnutls_x509_crt_get_subject_alt_name(crt, 0, buf, &size, NULL);
    if (type == GNUTLS_SAN_DNSNAME)
        return g_strdup_printf("DNS=%s", buf);
    gnutls_datum_t dn = {0};
    if (gnutls_x509_crt_get_dn3(crt, &dn, 0) == 0) {
        char *s = g_strndup((const char *)dn.data, dn.size);
        gnutls_free(dn.data);
        return s;
    }
    return g_strdup("(no name)");
}

/* A client certificate that passed: its identity and when it expires. */
typedef struct {
    char *identity;
    time_t expires;
} Verified;

static void verified_free(gpointer data)
{
    Verified *v = data;
    g_free(v->identity);
    g_free(v);
}

#define VERIFIED_CACHE 64

/*
 * Chain verification costs about as much as the call it guards (half the extender's calls per
 * second at 1,000 nodes), and kube-scheduler sends the same certificate on every call: one that
 * passed is remembered by its bytes (the handshake has proven the key anew each time; the trust
 * store never changes) and only its expiry is checked again. At most VERIFIED_CACHE of them.
 */
static gboolean verified_lookup(KbHttpd *httpd, GBytes *der, char **identity)
{
    Verified *v = g_hash_table_lookup(httpd->verified, der);
    if (v == NULL)
        return FALSE;
    if (time(NULL) >= v->expires) {
        g_hash_table_remove(httpd->verified, der);
        return FALSE;
    }
    *identity = g_strdup(v->identity);
    return TRUE;
}

static void verified_add(KbHttpd *httpd, GBytes *der, const char *identity, time_t expires)
{
    if (g_hash_table_size(httpd->verified) >= VERIFIED_CACHE)
        g_hash_table_remove_all(httpd->verified);
    Verified *v = g_new0(Verified, 1);
    v->identity = g_strdup(identity);
    v->expires = expires;
    g_hash_table_replace(httpd->verified, g_bytes_ref(der), v);
}

/*
 * MHD asks for a client certificate (MHD_OPTION_HTTPS_MEM_TRUST) but leaves judging it to us:
 * the chain must reach the client CA, the certificate be within its validity dates and allowed
 * for TLS client authentication. TRUE with *@identity, or FALSE with *@why (newly allocated).
 */
static gboolean verify_peer(KbHttpd *httpd, struct MHD_Connection *conn, char **identity,
                            char **why)
{
    const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (ci == NULL || ci->tls_session == NULL) {
        *why = g_strdup("not a TLS connection");
        return FALSE;
    }
    gnutls_session_t session = (gnutls_session_t)ci->tls_session;
    unsigned int n = 0;
    const gnutls_datum_t *certs = gnutls_certificate_get_peers(session, &n);
    if (certs == NULL || n == 0) {
        *why = g_strdup("no client certificate");
        return FALSE;
    }
    g_autoptr(GBytes) der = g_bytes_new(certs[0].data, certs[0].size);
    if (verified_lookup(httpd, der, identity))
        return TRUE;
    gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
                                     .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT};
    unsigned int status = 0;
    int rc = gnutls_certificate_verify_peers(session, &purpose, 1, &status);
    if (rc < 0) {
        *why = g_strdup_printf("client certificate not verified: %s", gnutls_strerror(rc));
        return FALSE;
    }
    gnutls_x509_crt_t crt = NULL;
    g_autofree char *name = NULL;
    time_t expires = 0;
    if (gnutls_x509_crt_init(&crt) == 0) {
        if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0) {
            name = crt_identity(crt);
            expires = gnutls_x509_crt_get_expiration_time(crt);
        }
        gnutls_x509_crt_deinit(crt);
    }
    if (status != 0) {
        gnutls_datum_t out = {0};
        gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0);
        g_autofree char *text = g_strndup(out.data != NULL ? (const char *)out.data : "", out.size);
        *why = g_strdup_printf("client certificate %s refused: %s", name != NULL ? name : "",
                               g_strstrip(text));
        gnutls_free(out.data);
        return FALSE;
    }
    *identity = name != NULL ? g_steal_pointer(&name) : g_strdup("(no name)");
    if (expires > 0)
        verified_add(httpd, der, *identity, expires);
    return TRUE;
}

static char *conn_address(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci == NULL || ci->client_addr == NULL)
        return g_strdup("?");
    gsize len = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                       : sizeof(struct sockaddr_in);
    g_autoptr(GSocketAddress) a = g_socket_address_new_from_native(ci->client_addr, len);
    if (a == NULL)
        return g_strdup("?");
    return g_socket_connectable_to_string(G_SOCKET_CONNECTABLE(a));
}

/* No (valid) client certificate: 401 before the body is read; nothing reaches the handler. */
static enum MHD_Result refuse_unauthenticated(KbHttpd *httpd, struct MHD_Connection *conn,
                                              const char *url, const char *method, const char *why)
{
    g_autofree char *address = conn_address(conn);
    httpd->unauthenticated++;
    httpd->requests++;
    g_warning("httpd: %s %.128s from %s: 401: %s", method, url, address, why);
    if (httpd->refused != NULL)
        httpd->refused(method, url, address, why, httpd->refused_data);
    return respond(conn, MHD_HTTP_UNAUTHORIZED, TEXT_PLAIN,
                   g_strdup_printf("unauthenticated: %s\n", why), TRUE);
}

/* Application requests: collect the body (within the limit), then hand it to the handler. */
static enum MHD_Result handle_app(KbHttpd *httpd, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    KbHttpdRequest *req = *req_cls;
    if (req == NULL) {
        g_autofree char *peer = NULL;
        if (httpd->client_ca != NULL) {
            g_autofree char *why = NULL;
            if (!verify_peer(httpd, conn, &peer, &why))
                return refuse_unauthenticated(httpd, conn, url, method, why);
        }
        const char *cl =
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        guint64 n = 0;
        if (cl != NULL && g_ascii_string_to_unsigned(cl, 10, 0, G_MAXUINT64, &n, NULL) &&
            n > httpd->max_body) {
            httpd->too_large++;
            g_warning("httpd: %s %s: body of %" G_GUINT64_FORMAT
                      " bytes refused (limit %" G_GSIZE_FORMAT ")",
                      method, url, n, httpd->max_body);
            httpd->requests++;
            return respond(conn, MHD_HTTP_CONTENT_TOO_LARGE, TEXT_PLAIN, "request body too large\n",
                           FALSE);
        }
        req = g_new0(KbHttpdRequest, 1);
        req->httpd = httpd;
        req->conn = conn;
        req->method = g_strdup(method);
        req->path = g_strdup(url);
        req->peer = g_steal_pointer(&peer);
        /* Sized from Content-Length (within the limit): no regrowing a 17 MiB body. */
        req->body = g_string_sized_new(cl != NULL && n > 0 ? (gsize)n + 1 : 256);
        *req_cls = req;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (!req->too_large && req->body->len + *upload_data_size > httpd->max_body) {
            req->too_large = TRUE;
            g_string_truncate(req->body, 0);
        }
        if (!req->too_large)
            g_string_append_len(req->body, upload_data, (gssize)*upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->response != NULL)
        return queue_answer(req);
    if (req->dispatched)
        return MHD_YES;
    req->dispatched = TRUE;
    if (req->too_large) {
        httpd->too_large++;
        g_warning("httpd: %s %s: body over %" G_GSIZE_FORMAT " bytes refused", method, url,
                  httpd->max_body);
        kb_httpd_request_respond(req, MHD_HTTP_CONTENT_TOO_LARGE, TEXT_PLAIN,
                                 g_strdup("request body too large\n"));
        return queue_answer(req);
    }
    req->in_handler = TRUE;
    httpd->handler(req, httpd->handler_data);
    req->in_handler = FALSE;
    if (req->response != NULL)
        return queue_answer(req);
    req->suspended = TRUE;
    g_queue_push_tail(&httpd->suspended, req);
    req->link = httpd->suspended.tail;
    MHD_suspend_connection(conn);
    return MHD_YES;
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                              enum MHD_RequestTerminationCode toe)
{
    KbHttpdRequest *req = *req_cls;
    if (req == NULL)
        return;
    if (req->link != NULL)
        g_queue_delete_link(&req->httpd->suspended, req->link);
    if (req->response != NULL)
        MHD_destroy_response(req->response);
    g_string_free(req->body, TRUE);
    g_free(req->method);
    g_free(req->path);
    g_free(req->peer);
    g_free(req);
    *req_cls = NULL;
}

const char *kb_httpd_request_method(const KbHttpdRequest *req)
{
    return req->method;
}

const char *kb_httpd_request_path(const KbHttpdRequest *req)
{
    return req->path;
}

const char *kb_httpd_request_peer(const KbHttpdRequest *req)
{
    return req->peer;
}

char *kb_httpd_request_address(const KbHttpdRequest *req)
{
    return conn_address(req->conn);
}

const char *kb_httpd_request_body(const KbHttpdRequest *req, gsize *len)
{
    if (len != NULL)
        *len = req->body->len;
    return req->body->str;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
    KbHttpd *httpd = cls;

    if (httpd->handler != NULL && (*req_cls != NULL || !is_probe_path(httpd, url)))
        return handle_app(httpd, conn, url, method, upload_data, upload_data_size, req_cls);
    httpd->requests++;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT_PLAIN, "method not allowed\n",
                       FALSE);
    if (strcmp(url, "/healthz") == 0)
        return respond(conn, MHD_HTTP_OK, TEXT_PLAIN, "ok", FALSE);
    if (strcmp(url, "/readyz") == 0)
        return serve_readyz(httpd, conn);
    if (strcmp(url, "/metrics") == 0 && httpd->metrics != NULL)
        return respond(conn, MHD_HTTP_OK, KB_METRICS_CONTENT_TYPE,
                       kb_metrics_render(httpd->metrics), TRUE);
    return respond(conn, MHD_HTTP_NOT_FOUND, TEXT_PLAIN, "404 page not found\n", FALSE);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);

    g_strchomp(msg);
    g_debug("httpd: %s", msg);
}

/* ---- main-loop integration ------------------------------------------------------------------- */

static gboolean on_timer(gpointer data)
{
    KbHttpd *httpd = data;
    GSource *self = g_steal_pointer(&httpd->timer);

    run_daemon(httpd);
    g_source_unref(self);
    return G_SOURCE_REMOVE;
}

/* MHD wants to run again after its timeout (0 when work is pending, none when idle). */
static void rearm_timer(KbHttpd *httpd)
{
    MHD_UNSIGNED_LONG_LONG ms;

    if (httpd->timer != NULL) {
        g_source_destroy(httpd->timer);
        g_clear_pointer(&httpd->timer, g_source_unref);
    }
    if (MHD_get_timeout(httpd->daemon, &ms) != MHD_YES)
        return;
    httpd->timer = g_timeout_source_new((guint)MIN(ms, (MHD_UNSIGNED_LONG_LONG)G_MAXUINT));
    g_source_set_callback(httpd->timer, on_timer, httpd, NULL);
    g_source_set_name(httpd->timer, "kb-httpd timer");
    g_source_attach(httpd->timer, httpd->context);
}

static void run_daemon(KbHttpd *httpd)
{
    MHD_run(httpd->daemon);
    rearm_timer(httpd);
}

static gboolean on_epoll_ready(gint fd, GIOCondition condition, gpointer data)
{
    run_daemon(data);
    return G_SOURCE_CONTINUE;
}

/* ---- life cycle ------------------------------------------------------------------------------ */

/* Per-connection buffer: MHD's default (32 KiB) for probes; application servers taking large
 * bodies (a 17 MiB NodeList) read them in 1 MiB slices rather than thousands of small ones. */
static size_t memory_limit(const KbHttpd *httpd)
{
    return httpd->max_body > 0 ? (size_t)1 << 20 : (size_t)32 << 10;
}

static struct MHD_Daemon *start_daemon(KbHttpd *httpd, GSocketAddress *addr, gboolean ipv6,
                                       GError **error)
{
    struct sockaddr_storage native;
    unsigned int flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    struct MHD_Daemon *d;

    if (!g_socket_address_to_native(addr, &native, sizeof(native), error))
        return NULL;
    if (ipv6)
        flags |= MHD_USE_DUAL_STACK;
    if (httpd->tls_cert != NULL) {
        /* The trust store makes MHD ask for (not require) a client certificate. */
        struct MHD_OptionItem tls[] = {
                {MHD_OPTION_HTTPS_MEM_CERT, 0, httpd->tls_cert},
                {MHD_OPTION_HTTPS_MEM_KEY, 0, httpd->tls_key},
                {httpd->client_ca != NULL ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0,
                 httpd->client_ca},
                {MHD_OPTION_END, 0, NULL},
        };
        flags |= MHD_USE_TLS;
        d = MHD_start_daemon(flags, 0, NULL, NULL, handle, httpd, MHD_OPTION_SOCK_ADDR, &native,
                             MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONNECTION_LIMIT,
                             MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONNECTION_TIMEOUT_S,
                             MHD_OPTION_NOTIFY_COMPLETED, request_completed, httpd,
                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit(httpd),
                             MHD_OPTION_ARRAY, tls, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                             MHD_OPTION_END);
    } else {
        d = MHD_start_daemon(flags, 0, NULL, NULL, handle, httpd, MHD_OPTION_SOCK_ADDR, &native,
                             MHD_OPTION_CONNECTION_LIMIT, (unsigned int)CONNECTION_LIMIT,
                             MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONNECTION_TIMEOUT_S,
                             MHD_OPTION_NOTIFY_COMPLETED, request_completed, httpd,
                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit(httpd),
                             MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
    }
    if (d == NULL) {
        g_autofree char *s = g_socket_connectable_to_string(G_SOCKET_CONNECTABLE(addr));
        g_set_error(error, KB_ERROR, KB_ERROR_TRANSPORT, "cannot listen on %s", s);
    }
    return d;
}

/* ":PORT" listens on every interface: IPv6 dual-stack where the host has IPv6, else IPv4. */
static struct MHD_Daemon *listen_on(KbHttpd *httpd, const char *host, guint16 port, GError **error)
{
    g_autoptr(GInetAddress) ia = NULL;
    g_autoptr(GSocketAddress) addr = NULL;

    if (host == NULL) {
        g_autoptr(GInetAddress) any6 = g_inet_address_new_any(G_SOCKET_FAMILY_IPV6);
        g_autoptr(GSocketAddress) addr6 = g_inet_socket_address_new(any6, port);
        struct MHD_Daemon *d = start_daemon(httpd, addr6, TRUE, NULL);

        if (d != NULL)
            return d;
        ia = g_inet_address_new_any(G_SOCKET_FAMILY_IPV4);
    } else {
        ia = g_inet_address_new_from_string(host);
    }
    addr = g_inet_socket_address_new(ia, port);
    return start_daemon(httpd, addr, g_inet_address_get_family(ia) == G_SOCKET_FAMILY_IPV6, error);
}

KbHttpd *kb_httpd_new(const char *listen_address, KbMetrics *metrics, GError **error)
{
    return kb_httpd_new_full(listen_address, metrics, NULL, 0, error);
}

/* A client CA file must hold at least one certificate: MHD would only say it cannot start. */
static gboolean check_ca(const char *file, const char *pem, GError **error)
{
    gnutls_x509_crt_t *list = NULL;
    unsigned int n = 0;
    gnutls_datum_t d = {.data = (unsigned char *)pem, .size = (unsigned int)strlen(pem)};
    int rc = gnutls_x509_crt_list_import2(&list, &n, &d, GNUTLS_X509_FMT_PEM, 0);
    for (unsigned int i = 0; rc >= 0 && i < n; i++)
        gnutls_x509_crt_deinit(list[i]);
    gnutls_free(list);
    if (rc < 0 || n == 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "client CA file %s: no PEM certificate in it (%s)", file,
                    rc < 0 ? gnutls_strerror(rc) : "empty");
        return FALSE;
    }
    return TRUE;
}

static gboolean load_tls(KbHttpd *httpd, const KbHttpdTls *tls, GError **error)
{
    if (tls != NULL && tls->client_ca_file != NULL && tls->cert_file == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "client certificates (CA %s) need TLS: a certificate and a key",
                    tls->client_ca_file);
        return FALSE;
    }
    if (tls == NULL || (tls->cert_file == NULL && tls->key_file == NULL))
        return TRUE;
    if (tls->cert_file == NULL || tls->key_file == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "TLS needs both a certificate and a key");
        return FALSE;
    }
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "libmicrohttpd was built without TLS");
        return FALSE;
    }
    if (!g_file_get_contents(tls->cert_file, &httpd->tls_cert, NULL, error) ||
        !g_file_get_contents(tls->key_file, &httpd->tls_key, NULL, error) ||
        (tls->client_ca_file != NULL &&
         !g_file_get_contents(tls->client_ca_file, &httpd->client_ca, NULL, error))) {
        g_prefix_error(error, "TLS: ");
        if (error != NULL && *error != NULL)
            (*error)->domain = KB_ERROR, (*error)->code = KB_ERROR_CONFIG;
        return FALSE;
    }
    return httpd->client_ca == NULL || check_ca(tls->client_ca_file, httpd->client_ca, error);
}

KbHttpd *kb_httpd_new_full(const char *listen_address, KbMetrics *metrics, const KbHttpdTls *tls,
                           gsize max_body, GError **error)
{
    g_autofree char *host = NULL;
    guint16 port;
    const union MHD_DaemonInfo *info;
    KbHttpd *httpd;

    if (!kb_httpd_parse_address(listen_address, &host, &port, error))
        return NULL;
    if (MHD_is_feature_supported(MHD_FEATURE_EPOLL) != MHD_YES) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "libmicrohttpd was built without epoll");
        return NULL;
    }
    httpd = g_new0(KbHttpd, 1);
    httpd->metrics = metrics;
    httpd->max_body = max_body;
    g_queue_init(&httpd->suspended);
    httpd->context = g_main_context_ref_thread_default();
    httpd->verified = g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
                                            (GDestroyNotify)g_bytes_unref, verified_free);
    if (!load_tls(httpd, tls, error)) {
        kb_httpd_free(httpd);
        return NULL;
    }
    httpd->daemon = listen_on(httpd, host, port, error);
    if (httpd->daemon == NULL) {
        g_prefix_error(error, "listen address \"%s\": ", listen_address);
        kb_httpd_free(httpd);
        return NULL;
    }
    info = MHD_get_daemon_info(httpd->daemon, MHD_DAEMON_INFO_BIND_PORT);
    httpd->port = info != NULL ? info->port : port;
    info = MHD_get_daemon_info(httpd->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    httpd->fd_source = g_unix_fd_source_new(info->epoll_fd, G_IO_IN);
    g_source_set_callback(httpd->fd_source, G_SOURCE_FUNC(on_epoll_ready), httpd, NULL);
    g_source_set_name(httpd->fd_source, "kb-httpd");
    g_source_attach(httpd->fd_source, httpd->context);
    g_debug("httpd: listening on %s (port %u)", listen_address, httpd->port);
    return httpd;
}

void kb_httpd_set_ready_func(KbHttpd *httpd, KbHttpdReadyFunc func, gpointer user_data)
{
    g_return_if_fail(httpd != NULL);
    httpd->ready = func;
    httpd->ready_data = user_data;
}

void kb_httpd_set_handler(KbHttpd *httpd, KbHttpdHandler handler, gpointer user_data)
{
    g_return_if_fail(httpd != NULL);
    httpd->handler = handler;
    httpd->handler_data = user_data;
}

void kb_httpd_set_refused_func(KbHttpd *httpd, KbHttpdRefusedFunc func, gpointer user_data)
{
    g_return_if_fail(httpd != NULL);
    httpd->refused = func;
    httpd->refused_data = user_data;
}

guint64 kb_httpd_unauthenticated(const KbHttpd *httpd)
{
    return httpd->unauthenticated;
}

guint64 kb_httpd_too_large(const KbHttpd *httpd)
{
    return httpd->too_large;
}

guint16 kb_httpd_port(const KbHttpd *httpd)
{
    g_return_val_if_fail(httpd != NULL, 0);
    return httpd->port;
}

guint64 kb_httpd_requests(const KbHttpd *httpd)
{
    g_return_val_if_fail(httpd != NULL, 0);
    return httpd->requests;
}

void kb_httpd_free(KbHttpd *httpd)
{
    if (httpd == NULL)
        return;
    if (httpd->fd_source != NULL) {
        g_source_destroy(httpd->fd_source);
        g_source_unref(httpd->fd_source);
    }
    if (httpd->timer != NULL) {
        g_source_destroy(httpd->timer);
        g_source_unref(httpd->timer);
    }
    /* MHD must not be stopped with suspended connections: answer them first. */
    while (!g_queue_is_empty(&httpd->suspended)) {
        KbHttpdRequest *req = g_queue_peek_head(&httpd->suspended);
        kb_httpd_request_respond(req, MHD_HTTP_SERVICE_UNAVAILABLE, TEXT_PLAIN,
                                 g_strdup("shutting down\n"));
    }
    if (httpd->resume_source != NULL) {
        g_source_destroy(httpd->resume_source);
        g_clear_pointer(&httpd->resume_source, g_source_unref);
    }
    if (httpd->daemon != NULL)
        MHD_stop_daemon(httpd->daemon);
    g_free(httpd->tls_cert);
    g_free(httpd->tls_key);
    g_free(httpd->client_ca);
    g_hash_table_unref(httpd->verified);
    g_main_context_unref(httpd->context);
    g_free(httpd);
}
