/* HTTP plumbing of the in-memory API server on libmicrohttpd (see kas-server.h). */
#include "testbed/apiserver/kas-server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "kube/kb-error.h"
#include "testbed/apiserver/kas-auth.h"
#include "testbed/apiserver/kas-faults.h"
#include "testbed/apiserver/kas-kubelet.h"
#include "testbed/apiserver/kas-nodes.h"
#include "testbed/apiserver/kas-ops.h"
#include "testbed/apiserver/kas-rest.h"

#define STREAM_BLOCK (64 * 1024)
#define STREAM_BATCH 256

struct KasServer {
    KasServerOptions opts;
    char *listen;
    char *url;
    KasStore *store;
    KasFaults *faults;
    KasKubelet *kubelet;
    KasRestContext rest;
    KasAuth *auth;
    KasConvert *convert;
    char *tls_cert; /* PEM, alive as long as the daemon */
    char *tls_key;
    struct MHD_Daemon *daemon;
    guint port;
    gint connections; /* connections that have sent a complete request header */
    gint stopping;
    /* Successful writes (POST, PUT, PATCH, DELETE answered 2xx) by kind: "POST pods/binding",
     * "POST events", "PATCH podgroups/status", ... (GET /admin/stats). */
    GMutex writes_lock;
    GHashTable *writes; /* char* kind -> guint64 count (GUINT_TO_POINTER) */
    guint64 writes_total;
};

/* Per connection: has it been counted in srv->connections (its first header completed)? */
typedef struct {
    gboolean counted;
} ConnState;

typedef struct {
    GString *body;
    gboolean too_large;
    gboolean answered;
} ReqCtx;

typedef struct {
    KasServer *srv;
    KasReply reply;
    GString *buf;
    gsize off;
    gint64 next_bookmark;
    KasWatchFault fault;
    gint64 events_sent;
    gboolean stalled;
    gboolean cut;
    gboolean done;
    int fd;
} Stream;

void kas_server_options_init(KasServerOptions *o)
{
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:0";
    o->faults_seed = 1;
    o->watch_history = 10000;
    o->watch_queue = 10000;
    o->bookmark_ms = 60000;
    o->max_body = 3 * 1024 * 1024;
    o->max_connections = 1000;
    o->min_watch_timeout = 1800;
    o->idle_timeout = 120;
    o->header_timeout = 10;
    o->kubelet_start_ms = 100;
    o->kubelet_stop_ms = 100;
    o->heartbeat_ms = 10000;
}

/* ---- responses ---------------------------------------------------------------------------------- */

static enum MHD_Result queue_reply(struct MHD_Connection *conn, KasReply *reply)
{
    gsize len = reply->body->len;
    char *data = g_string_free(reply->body, FALSE);
    reply->body = NULL;
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, reply->content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
    if (reply->retry_after > 0) {
        char buf[16];
        g_snprintf(buf, sizeof buf, "%u", reply->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, buf);
    }
    enum MHD_Result r = MHD_queue_response(conn, reply->status, resp);
    MHD_destroy_response(resp);
    return r;
}

static enum MHD_Result queue_error(struct MHD_Connection *conn, KasErr code, const char *msg,
                                   guint retry_after)
{
    KasReply reply;
    kas_reply_init(&reply);
    reply.retry_after = retry_after;
    kas_reply_error(&reply, code, msg, NULL, NULL);
    enum MHD_Result r = queue_reply(conn, &reply);
    kas_reply_clear(&reply);
    return r;
}

/* ---- watch streams --------------------------------------------------------------------------- */

static gboolean client_gone(int fd)
{
    if (fd < 0)
        return FALSE;
    struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
    if (poll(&p, 1, 0) <= 0)
        return FALSE;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
        return TRUE;
    char c;
    return (p.revents & POLLIN) && recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* Offset in @buf of the start of the @k-th line (0-based), or buf->len. */
static gsize line_offset(GString *buf, gint64 k)
{
    gsize off = 0;
    for (gint64 i = 0; i < k && off < buf->len; i++) {
        const char *nl = memchr(buf->str + off, '\n', buf->len - off);
        off = nl != NULL ? (gsize)(nl - buf->str) + 1 : buf->len;
    }
    return off;
}

/* Counts the events just rendered into @s's buffer from @start and cuts them as its faults say.
 * A stream's faults are set when it starts: one without any counts nothing (a byte by byte
 * scan of every event's text, 1% of kb-apiserver's CPU in bench-e2e --dra, for nothing). */
static void apply_watch_faults(Stream *s, gsize start)
{
    if (s->fault.cut_after < 0 && s->fault.stall_after < 0)
        return;
    gint64 n = 0;
    for (gsize i = start; i < s->buf->len; i++)
        n += s->buf->str[i] == '\n';
    if (s->fault.cut_after >= 0 && s->events_sent + n > s->fault.cut_after) {
        GString *tail = g_string_new_len(s->buf->str + start, (gssize)(s->buf->len - start));
        gsize keep = line_offset(tail, s->fault.cut_after - s->events_sent);
        if (s->fault.cut_mid && keep < tail->len) {
            const char *nl = memchr(tail->str + keep, '\n', tail->len - keep);
            gsize line_len = nl != NULL ? (gsize)(nl - tail->str) - keep + 1 : tail->len - keep;
            keep += MAX(line_len / 2, 1);
        }
        g_string_truncate(s->buf, start + keep);
        g_string_free(tail, TRUE);
        s->cut = TRUE;
    }
    s->events_sent += n;
}

static void stall(Stream *s)
{
    gint64 until = g_get_monotonic_time() + (gint64)s->fault.stall_ms * 1000;
    while (g_get_monotonic_time() < until && !g_atomic_int_get(&s->srv->stopping))
        g_usleep(10000);
    s->stalled = TRUE;
}

/* When a watch's next periodic bookmark is due, as kube-apiserver's watch cache schedules
 * them: every bookmark_ms (the real server: a minute), and once more 2 s before the watch's
 * deadline so that a client resumes from as recent a resourceVersion as possible; none after
 * that (G_MAXINT64). Whether one is actually sent is kas_watcher_bookmark's decision. */
static gint64 next_bookmark(const KasServer *srv, const KasReply *reply, gint64 now)
{
    gint64 beat = now + (gint64)srv->opts.bookmark_ms * 1000;
    gint64 last = reply->watch_deadline - 2 * G_USEC_PER_SEC;
    if (last < beat)
        beat = last;
    return beat > now ? beat : G_MAXINT64;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    Stream *s = cls;
    KasServer *srv = s->srv;
    for (;;) {
        if (s->off < s->buf->len) {
            size_t n = MIN(max, s->buf->len - s->off);
            memcpy(out, s->buf->str + s->off, n);
            s->off += n;
            return (ssize_t)n;
        }
        g_string_truncate(s->buf, 0);
        s->off = 0;
        if (s->cut)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (s->done || g_atomic_int_get(&srv->stopping))
            return MHD_CONTENT_READER_END_OF_STREAM;
        gint64 now = g_get_monotonic_time();
        if (now >= s->reply.watch_deadline)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (s->reply.text_stream != NULL) {
            s->done = !s->reply.text_stream(s->reply.render_data, s->buf, now + G_USEC_PER_SEC);
            if (s->buf->len == 0 && !s->done && client_gone(s->fd))
                return MHD_CONTENT_READER_END_WITH_ERROR;
            continue;
        }
        if (s->fault.stall_after >= 0 && !s->stalled && s->events_sent >= s->fault.stall_after)
            stall(s);
        gint64 wake = MIN(s->reply.watch_deadline, now + G_USEC_PER_SEC);
        if (s->reply.watch_bookmarks)
            wake = MIN(wake, s->next_bookmark);
        guint batch = (s->fault.cut_after >= 0 || s->fault.stall_after >= 0) ? 1 : STREAM_BATCH;
        switch (kas_watcher_next(s->reply.watcher, wake, s->buf, batch, s->reply.render,
                                 s->reply.render_data)) {
        case KAS_WATCH_EVENT:
            apply_watch_faults(s, 0);
            break;
        case KAS_WATCH_CLOSED:
            s->done = TRUE;
            break;
        case KAS_WATCH_TIMEOUT:
            now = g_get_monotonic_time();
            if (s->reply.watch_bookmarks && now >= s->next_bookmark) {
                if (kas_watcher_bookmark(s->reply.watcher, s->buf, FALSE))
                    apply_watch_faults(s, 0);
                s->next_bookmark = next_bookmark(srv, &s->reply, now);
            }
            if (s->buf->len == 0 && client_gone(s->fd))
                return MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
    }
}

static void stream_free(void *cls)
{
    Stream *s = cls;
    kas_reply_clear(&s->reply);
    g_string_free(s->buf, TRUE);
    g_free(s);
}

static enum MHD_Result queue_stream(KasServer *srv, struct MHD_Connection *conn, KasReply *reply,
                                    const char *path)
{
    Stream *s = g_new0(Stream, 1);
    s->srv = srv;
    s->reply = *reply;
    memset(reply, 0, sizeof *reply);
    s->buf = g_string_sized_new(STREAM_BLOCK);
    s->next_bookmark = next_bookmark(srv, &s->reply, g_get_monotonic_time());
    kas_faults_watch(srv->faults, path, &s->fault);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    s->fd = ci != NULL ? ci->connect_fd : -1;
    const char *ctype = s->reply.content_type;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK,
                                                                  stream_read, s, stream_free);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
    enum MHD_Result r = MHD_queue_response(conn, 200, resp);
    MHD_destroy_response(resp);
    return r;
}

/* ---- admin ------------------------------------------------------------------------------------- */

static void run_once(KasServer *srv, KasFaultOnce once)
{
    if (once & KAS_FAULT_ONCE_RESTART)
        kas_store_close_watchers(srv->store, TRUE);
    if (once & KAS_FAULT_ONCE_EXPIRE_HISTORY)
        kas_store_expire_history(srv->store);
}

static void append_writes(KasServer *srv, GString *out);

static void admin(KasServer *srv, const char *method, const char *path, ReqCtx *rc, KasReply *reply)
{
    reply->status = 200;
    gboolean post = strcmp(method, "POST") == 0;
    if (strcmp(path, "/admin/faults") == 0 && (post || strcmp(method, "PUT") == 0)) {
        g_autoptr(GError) error = NULL;
        KasFaultOnce once;
        if (!kas_faults_set(srv->faults, rc->body->str, &once, &error)) {
            kas_reply_error(reply, KAS_ERR_BAD_REQUEST, error->message, NULL, NULL);
            return;
        }
        run_once(srv, once);
    }
    if (strcmp(path, "/admin/faults") == 0) {
        g_autofree char *d = kas_faults_describe(srv->faults);
        g_string_assign(reply->body, d);
    } else if (strcmp(path, "/admin/restart") == 0 && post) {
        run_once(srv, KAS_FAULT_ONCE_RESTART);
        g_string_assign(reply->body, "{\"restarted\":true}");
    } else if (strcmp(path, "/admin/expire-history") == 0 && post) {
        run_once(srv, KAS_FAULT_ONCE_EXPIRE_HISTORY);
        g_string_assign(reply->body, "{\"expired\":true}");
    } else if (strcmp(path, "/admin/stats") == 0) {
        kas_store_lock(srv->store);
        guint64 rv = kas_store_rv_locked(srv->store);
        kas_store_unlock(srv->store);
        guint64 unauthorized = 0, forbidden = 0;
        kas_auth_counts(srv->auth, &unauthorized, &forbidden);
        g_string_printf(reply->body,
                        "{\"resourceVersion\":%" G_GUINT64_FORMAT ",\"watchers\":%u,\"connections\":%d,"
                        "\"unauthorized\":%" G_GUINT64_FORMAT ",\"forbidden\":%" G_GUINT64_FORMAT
                        ",\"writes\":",
                        rv, kas_store_watcher_count(srv->store), g_atomic_int_get(&srv->connections),
                        unauthorized, forbidden);
        append_writes(srv, reply->body);
        g_string_append_c(reply->body, '}');
    } else {
        kas_reply_error(reply, KAS_ERR_NOT_FOUND, "no such admin endpoint", NULL, NULL);
    }
}

/* ---- requests ------------------------------------------------------------------------------------ */

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    GHashTable *t = cls;
    if (key != NULL && !g_hash_table_contains(t, key))
        g_hash_table_insert(t, g_strdup(key), g_strdup(value != NULL ? value : ""));
    return MHD_YES;
}

/* "pods/binding" for /api/v1/namespaces/NS/pods/NAME/binding, "podgroups/status",
 * "nodes" for /api/v1/nodes/NAME, ...: the resource and subresource of a REST path (newly
 * allocated), or NULL. */
static char *write_kind(const char *url)
{
    g_auto(GStrv) parts = g_strsplit(url, "/", -1);
    guint n = g_strv_length(parts), i;
    /* "", "api", "v1", ... or "", "apis", GROUP, VERSION, ... */
    if (n >= 3 && strcmp(parts[1], "api") == 0)
        i = 3;
    else if (n >= 4 && strcmp(parts[1], "apis") == 0)
        i = 4;
    else
        return NULL;
    if (i + 2 < n && strcmp(parts[i], "namespaces") == 0)
        i += 2;
    if (i >= n || parts[i][0] == '\0')
        return NULL;
    if (i + 2 < n && parts[i + 2][0] != '\0')
        return g_strdup_printf("%s/%s", parts[i], parts[i + 2]);
    return g_strdup(parts[i]);
}

static void count_write(KasServer *srv, const char *method, const char *url, guint status)
{
    if (status < 200 || status >= 300 || strcmp(method, "GET") == 0 ||
        strcmp(method, "HEAD") == 0 || strcmp(method, "OPTIONS") == 0)
        return;
    g_autofree char *what = write_kind(url);
    if (what == NULL)
        return;
    char *kind = g_strdup_printf("%s %s", method, what);
    g_mutex_lock(&srv->writes_lock);
    gpointer n = g_hash_table_lookup(srv->writes, kind);
    g_hash_table_replace(srv->writes, kind, GUINT_TO_POINTER(GPOINTER_TO_UINT(n) + 1));
    srv->writes_total++;
    g_mutex_unlock(&srv->writes_lock);
}

/* {"total":N,"pods/binding":N,...} */
static void append_writes(KasServer *srv, GString *out)
{
    g_mutex_lock(&srv->writes_lock);
    g_string_append_printf(out, "{\"total\":%" G_GUINT64_FORMAT, srv->writes_total);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, srv->writes);
    while (g_hash_table_iter_next(&it, &k, &v))
        g_string_append_printf(out, ",\"%s\":%u", (const char *)k, GPOINTER_TO_UINT(v));
    g_string_append_c(out, '}');
    g_mutex_unlock(&srv->writes_lock);
}

static enum MHD_Result handle(KasServer *srv, struct MHD_Connection *conn, const char *url,
                              const char *method, ReqCtx *rc)
{
    KasReply reply;
    kas_reply_init(&reply);
    if (g_str_has_prefix(url, "/admin/")) {
        admin(srv, method, url, rc, &reply);
        enum MHD_Result r = queue_reply(conn, &reply);
        kas_reply_clear(&reply);
        return r;
    }
    g_autoptr(GHashTable) query = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, query);
    KasRequest req = {
        .method = method,
        .path = url,
        .query = query,
        .accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
        .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
        .body = rc->body->str,
        .body_len = rc->body->len,
    };
    /* Authentication and authorization come first, as in kube-apiserver's handler chain. */
    const char *authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (kas_auth_serve(srv->auth, &req, authz, &reply)) {
        enum MHD_Result r = queue_reply(conn, &reply);
        kas_reply_clear(&reply);
        return r;
    }
    KasFaultAction fa;
    kas_faults_request(srv->faults, method, url, &fa);
    if (fa.latency_ms > 0)
        g_usleep((gulong)fa.latency_ms * 1000);
    if (fa.status != 0) {
        reply.retry_after = fa.status == 429 || fa.status == 503 ? fa.retry_after : 0;
        g_autofree char *msg = g_strdup_printf("injected fault: HTTP %u for %s %s", fa.status, method, url);
        kas_reply_error(&reply, kas_err_from_http(fa.status), msg, NULL, NULL);
        /* A custom status keeps its own code even when no reason matches it exactly. */
        reply.status = fa.status;
        enum MHD_Result r = queue_reply(conn, &reply);
        kas_reply_clear(&reply);
        return r;
    }
    kas_rest_handle(&srv->rest, &req, &reply);
    count_write(srv, method, url, reply.status);
    enum MHD_Result r;
    if (reply.watcher != NULL || reply.text_stream != NULL)
        r = queue_stream(srv, conn, &reply, url);
    else
        r = queue_reply(conn, &reply);
    kas_reply_clear(&reply);
    return r;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_size, void **con_cls)
{
    KasServer *srv = cls;
    ReqCtx *rc = *con_cls;
    if (rc == NULL) {
        /* A complete header: from now on the connection is a client's (counted against
         * --max-connections) and may idle as long as --idle-timeout allows. */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        ConnState *cs = ci != NULL ? ci->socket_context : NULL;
        /* The count this connection's own increment made: judged on it, of connections whose
         * headers complete at once (a thread each) only those past the limit are refused;
         * judged on the count read after the others' increments, all of them could be. */
        gint counted = -1;
        if (cs != NULL && !cs->counted) {
            cs->counted = TRUE;
            counted = g_atomic_int_add(&srv->connections, 1) + 1;
            MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                      (unsigned int)srv->opts.idle_timeout);
        }
        rc = g_new0(ReqCtx, 1);
        rc->body = g_string_new(NULL);
        *con_cls = rc;
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        guint64 length = cl != NULL ? g_ascii_strtoull(cl, NULL, 10) : 0;
        if (length > srv->opts.max_body && length <= 4 * (guint64)srv->opts.max_body) {
            /* Read and drop a moderately oversized body before answering, so that the client,
             * still sending, reads a clean 413 instead of a reset connection. */
            rc->too_large = TRUE;
        } else if (length > srv->opts.max_body) {
            rc->answered = TRUE;
            g_autofree char *msg = g_strdup_printf("Request entity too large: limit is %zu",
                                                   srv->opts.max_body);
            return queue_error(conn, KAS_ERR_TOO_LARGE, msg, 0);
        }
        if (counted < 0)
            counted = g_atomic_int_get(&srv->connections);
        if ((guint)counted > srv->opts.max_connections) {
            rc->answered = TRUE;
            return queue_error(conn, KAS_ERR_TOO_MANY,
                               "too many open connections, please try again later", 1);
        }
        return MHD_YES;
    }
    if (rc->answered) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (!rc->too_large && rc->body->len + *upload_size > srv->opts.max_body) {
            rc->too_large = TRUE;
            g_string_truncate(rc->body, 0);
        }
        if (!rc->too_large)
            g_string_append_len(rc->body, upload_data, (gssize)*upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    rc->answered = TRUE;
    if (rc->too_large) {
        g_autofree char *msg = g_strdup_printf("Request entity too large: limit is %zu",
                                               srv->opts.max_body);
        return queue_error(conn, KAS_ERR_TOO_LARGE, msg, 0);
    }
    return handle(srv, conn, url, method, rc);
}

static void completed_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    ReqCtx *rc = *con_cls;
    if (rc == NULL)
        return;
    g_string_free(rc->body, TRUE);
    g_free(rc);
    *con_cls = NULL;
}

static void connection_cb(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    KasServer *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        *socket_context = g_new0(ConnState, 1);
        return;
    }
    ConnState *cs = *socket_context;
    if (cs != NULL && cs->counted)
        g_atomic_int_add(&srv->connections, -1);
    g_free(cs);
    *socket_context = NULL;
}

/* ---- life cycle ---------------------------------------------------------------------------------- */

static gboolean parse_listen(const char *listen, struct sockaddr_in *addr, char **host, GError **error)
{
    const char *colon = strrchr(listen, ':');
    if (colon == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "--listen \"%s\": expected HOST:PORT", listen);
        return FALSE;
    }
    *host = g_strndup(listen, (gsize)(colon - listen));
    if (strcmp(*host, "localhost") == 0 || (*host)[0] == '\0') {
        g_free(*host);
        *host = g_strdup("127.0.0.1");
    }
    char *end = NULL;
    guint64 port = g_ascii_strtoull(colon + 1, &end, 10);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_port = htons((uint16_t)port);
    if (*end != '\0' || colon[1] == '\0' || port > 65535 ||
        inet_pton(AF_INET, *host, &addr->sin_addr) != 1) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "--listen \"%s\": expected an IPv4 address and a port", listen);
        g_clear_pointer(host, g_free);
        return FALSE;
    }
    return TRUE;
}

static gboolean start_daemon(KasServer *srv, GError **error)
{
    struct sockaddr_in addr;
    g_autofree char *host = NULL;
    if (!parse_listen(srv->listen, &addr, &host, error))
        return FALSE;
    gboolean tls = srv->tls_cert != NULL;
    /* Without TLS the array is empty (its first item ends it). */
    struct MHD_OptionItem tls_opts[] = {
        { tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, srv->tls_cert },
        { MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls_key },
        { MHD_OPTION_END, 0, NULL },
    };
    srv->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
            (tls ? MHD_USE_TLS : 0),
        0, NULL, NULL, access_cb, srv,
        MHD_OPTION_ARRAY, tls_opts,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_NOTIFY_COMPLETED, completed_cb, srv,
        MHD_OPTION_NOTIFY_CONNECTION, connection_cb, srv,
        /* Connections that never finish their header (slowloris) must not lock clients out:
         * they are dropped after --read-header-timeout (kube-apiserver's http.Server has a
         * ReadHeaderTimeout too), do not count against --max-connections, and the hard limit
         * leaves room for several thousand of them besides the clients. */
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(4 * srv->opts.max_connections + 1024),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)srv->opts.header_timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
        MHD_OPTION_END);
    if (srv->daemon == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "cannot listen on %s: %s", srv->listen,
                    g_strerror(errno != 0 ? errno : EADDRINUSE));
        return FALSE;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_in bound;
    socklen_t blen = sizeof bound;
    if (di != NULL && getsockname(di->listen_fd, (struct sockaddr *)&bound, &blen) == 0)
        srv->port = ntohs(bound.sin_port);
    srv->url = g_strdup_printf("%s://%s:%u", tls ? "https" : "http", host, srv->port);
    return TRUE;
}

/* TLS material and the authenticator/authorizer (kas-auth.h); the bootstrap RBAC policy. */
static gboolean server_auth_init(KasServer *srv, const KasServerOptions *opts, GError **error)
{
    if ((opts->tls_cert_file == NULL) != (opts->tls_key_file == NULL)) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "--tls-cert-file and --tls-private-key-file go together");
        return FALSE;
    }
    if (opts->tls_cert_file != NULL) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                        "--tls-cert-file: this libmicrohttpd was built without TLS support");
            return FALSE;
        }
        if (!g_file_get_contents(opts->tls_cert_file, &srv->tls_cert, NULL, error)) {
            g_prefix_error(error, "--tls-cert-file: ");
            return FALSE;
        }
        if (!g_file_get_contents(opts->tls_key_file, &srv->tls_key, NULL, error)) {
            g_prefix_error(error, "--tls-private-key-file: ");
            return FALSE;
        }
    }
    KasAuthOptions ao = { .token_file = opts->token_auth_file,
                          .authorization_mode = opts->authorization_mode };
    srv->auth = kas_auth_new(srv->store, &ao, error);
    if (srv->auth == NULL)
        return FALSE;
    kas_rbac_bootstrap(srv->store);
    return TRUE;
}

gboolean kas_server_runtime_config(KasServerOptions *opts, const char *spec, GError **error)
{
    g_auto(GStrv) items = g_strsplit(spec, ",", -1);
    for (guint i = 0; items[i] != NULL; i++) {
        if (items[i][0] == '\0')
            continue;
        g_auto(GStrv) kv = g_strsplit(items[i], "=", 2);
        const char *v = kv[1] != NULL ? kv[1] : "true";
        gboolean on = strcmp(v, "true") == 0 || v[0] == '\0';
        if (!on && strcmp(v, "false") != 0) {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "--runtime-config: invalid value \"%s\" for %s (true or false)", v,
                        kv[0]);
            return FALSE;
        }
        if (strcmp(kv[0], "scheduling.k8s.io/v1beta1") == 0) {
            opts->scheduling_v1beta1 = on;
        } else if (strcmp(kv[0], "scheduling.k8s.io/v1alpha3") == 0) {
            opts->scheduling_v1alpha3 = on;
        } else {
            g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "--runtime-config: \"%s\" cannot be switched here (only "
                        "scheduling.k8s.io/v1beta1 and scheduling.k8s.io/v1alpha3)",
                        kv[0]);
            return FALSE;
        }
    }
    return TRUE;
}

KasServer *kas_server_new(const KasServerOptions *opts, GError **error)
{
    KasServer *srv = g_new0(KasServer, 1);
    srv->opts = *opts;
    srv->listen = g_strdup(opts->listen != NULL ? opts->listen : "127.0.0.1:0");
    srv->opts.listen = srv->listen;
    srv->opts.nodes_file = NULL;
    srv->opts.faults = NULL;
    srv->opts.tls_cert_file = srv->opts.tls_key_file = NULL;
    srv->opts.token_auth_file = srv->opts.authorization_mode = NULL;
    srv->opts.service_addresses = NULL;
    KasStoreOptions so = { .history = opts->watch_history,
                           .watch_queue = opts->watch_queue,
                           .scheduling_v1beta1 = opts->scheduling_v1beta1,
                           .scheduling_v1alpha3 = opts->scheduling_v1alpha3 };
    srv->store = kas_store_new(&so);
    kas_ops_bootstrap(srv->store);
    srv->faults = kas_faults_new(opts->faults_seed);
    g_mutex_init(&srv->writes_lock);
    srv->writes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    KasFaultOnce once = KAS_FAULT_ONCE_NONE;
    if (opts->faults != NULL && !kas_faults_set(srv->faults, opts->faults, &once, error)) {
        g_prefix_error(error, "--faults: ");
        kas_server_free(srv);
        return NULL;
    }
    KasKubeletOptions ko = { .simulate = opts->simulate_kubelet,
                             .start_delay_ms = opts->kubelet_start_ms,
                             .stop_delay_ms = opts->kubelet_stop_ms,
                             .heartbeat_ms = opts->heartbeat_ms,
                             .resource_claims = opts->resource_claim_controller };
    srv->kubelet = kas_kubelet_new(srv->store, &ko);
    if (opts->nodes_file != NULL && kas_nodes_load(srv->store, opts->nodes_file, error) < 0) {
        g_prefix_error(error, "--nodes: ");
        kas_server_free(srv);
        return NULL;
    }
    run_once(srv, once);
    KasConvertOptions co = { .service_addresses = opts->service_addresses,
                             .timeout_ms = opts->conversion_timeout_ms };
    srv->convert = kas_convert_new(srv->store, &co, error);
    if (srv->convert == NULL || !server_auth_init(srv, opts, error)) {
        kas_server_free(srv);
        return NULL;
    }
    if (!start_daemon(srv, error)) {
        kas_server_free(srv);
        return NULL;
    }
    srv->rest.store = srv->store;
    srv->rest.port = srv->port;
    srv->rest.min_watch_timeout = opts->min_watch_timeout;
    srv->rest.convert = srv->convert;
    return srv;
}

guint kas_server_port(KasServer *srv)
{
    return srv->port;
}

const char *kas_server_url(KasServer *srv)
{
    return srv->url;
}

KasStore *kas_server_store(KasServer *srv)
{
    return srv->store;
}

void kas_server_free(KasServer *srv)
{
    if (srv == NULL)
        return;
    g_atomic_int_set(&srv->stopping, 1);
    if (srv->store != NULL)
        kas_store_shutdown(srv->store);
    if (srv->daemon != NULL)
        MHD_stop_daemon(srv->daemon);
    kas_kubelet_free(srv->kubelet);
    kas_store_free(srv->store);
    kas_faults_free(srv->faults);
    kas_auth_free(srv->auth);
    kas_convert_free(srv->convert);
    g_free(srv->tls_cert);
    g_free(srv->tls_key);
    g_clear_pointer(&srv->writes, g_hash_table_unref);
    g_mutex_clear(&srv->writes_lock);
    g_free(srv->listen);
    g_free(srv->url);
    g_free(srv);
}
