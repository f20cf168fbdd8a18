/* A scripted HTTP/HTTPS server for integration tests; see kb-test-server.h. */
#include "tests/lib/kb-test-server.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "testbed/apiserver/kas-proto.h"

/*
 * One lock for every server and response of the process: tests run a handful of servers with a
 * handful of connections, so contention does not matter and a single lock cannot deadlock. The
 * condition is broadcast whenever something a waiter may be waiting for changes (a chunk was
 * appended, a server is stopping, a request was recorded).
 */
static GMutex lock;
static GCond cond;

/* How often a connection thread that waits (delay, stall) checks whether its peer went away. */
#define PEER_CHECK_US    (20 * G_TIME_SPAN_MILLISECOND)
#define MAX_REQUEST_BODY (256u << 20)

typedef struct {
    guint delay_ms;
    GBytes *data;
} Chunk;

struct KbTestResponse {
    gint ref;
    guint status;
    GPtrArray *headers; /* name, value, name, value, ... */
    GBytes *body;
    guint delay_ms;
    gboolean stream;
    GPtrArray *chunks; /* Chunk */
    gssize cut_after;  /* -1: never */
    gboolean stall;
};

typedef struct {
    char *method; /* NULL: any */
    char *path;   /* without the trailing '*' of a prefix */
    gboolean prefix;
    GQueue responses;     /* KbTestResponse, owned */
    gboolean head_served; /* the only queued response was served (it repeats until a push) */
    KbTestHandler handler;
    gpointer user_data;
    GDestroyNotify destroy;
} Route;

struct KbTestServer {
    struct MHD_Daemon *daemon;
    char *url;
    guint16 port;
    char *cert_pem, *key_pem, *trust_pem; /* MHD keeps pointers to these */
    GPtrArray *routes;                    /* Route */
    GPtrArray *requests;                  /* KbTestRequest */
    guint concurrent, max_concurrent, connections;
    gboolean stopping;
    GMutex handler_lock;
};

/* Per-request state, from the URI log callback to the completion callback. */
typedef struct {
    KbTestServer *server;
    char *uri;
    GByteArray *body;
    gboolean started;
    gboolean counted;
} Conn;

/* Per-stream state of a chunked response. */
typedef struct {
    KbTestServer *server;
    KbTestResponse *resp;
    int fd;
    guint chunk;
    gsize offset;
    gsize sent;
    gboolean waited;
} StreamState;

/* ---- requests ------------------------------------------------------------------------------ */

static void request_free(KbTestRequest *req)
{
    g_free(req->method);
    g_free(req->target);
    g_free(req->path);
    g_free(req->query);
    g_hash_table_unref(req->headers);
    g_free(req->body);
    g_free(req);
}

const char *kb_test_request_header(const KbTestRequest *req, const char *name)
{
    g_autofree char *lower = g_ascii_strdown(name, -1);
    return g_hash_table_lookup(req->headers, lower);
}

json_object *kb_test_request_json(const KbTestRequest *req)
{
    const char *ctype = kb_test_request_header(req, "Content-Type");
    json_object *obj;
    if (ctype != NULL && g_str_has_prefix(ctype, KB_PROTO_CONTENT_TYPE)) {
        g_autoptr(GError) error = NULL;
        obj = kas_proto_binding((const guchar *)req->body, req->body_len, &error);
        g_assert_no_error(error);
    } else {
        obj = json_tokener_parse(req->body);
    }
    g_assert_nonnull(obj);
    return obj;
}

char *kb_test_request_query_param(const KbTestRequest *req, const char *name)
{
    g_autoptr(GHashTable) params = g_uri_parse_params(req->query, -1, "&", G_URI_PARAMS_NONE, NULL);
    if (params == NULL)
        return NULL;
    return g_strdup(g_hash_table_lookup(params, name));
}

/* ---- responses ----------------------------------------------------------------------------- */

static void chunk_free(Chunk *chunk)
{
    g_bytes_unref(chunk->data);
    g_free(chunk);
}

KbTestResponse *kb_test_response_new(guint status)
{
    KbTestResponse *resp = g_new0(KbTestResponse, 1);
    resp->ref = 1;
    resp->status = status;
    resp->headers = g_ptr_array_new_with_free_func(g_free);
    resp->body = g_bytes_new(NULL, 0);
    resp->chunks = g_ptr_array_new_with_free_func((GDestroyNotify)chunk_free);
    resp->cut_after = -1;
    return resp;
}

KbTestResponse *kb_test_response_new_body(guint status, const char *body)
{
    KbTestResponse *resp = kb_test_response_new(status);
    if (body != NULL)
        kb_test_response_set_body(resp, body, -1);
    return resp;
}

KbTestResponse *kb_test_response_new_status(guint status, const char *reason, const char *message)
{
    g_autofree char *esc_reason = g_strescape(reason != NULL ? reason : "", NULL);
    g_autofree char *esc_message = g_strescape(message != NULL ? message : "", NULL);
    g_autofree char *body = g_strdup_printf(
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
            "\"message\":\"%s\",\"reason\":\"%s\",\"code\":%u}",
            esc_message, esc_reason, status);
    return kb_test_response_new_body(status, body);
}

KbTestResponse *kb_test_response_ref(KbTestResponse *resp)
{
    g_atomic_int_inc(&resp->ref);
    return resp;
}

void kb_test_response_unref(KbTestResponse *resp)
{
    if (resp == NULL || !g_atomic_int_dec_and_test(&resp->ref))
        return;
    g_ptr_array_unref(resp->headers);
    g_bytes_unref(resp->body);
    g_ptr_array_unref(resp->chunks);
    g_free(resp);
}

void kb_test_response_set_body(KbTestResponse *resp, const char *data, gssize len)
{
    GBytes *body = g_bytes_new(data, len < 0 ? strlen(data) : (gsize)len);
    g_mutex_lock(&lock);
    g_bytes_unref(resp->body);
    resp->body = body;
    g_mutex_unlock(&lock);
}

void kb_test_response_add_header(KbTestResponse *resp, const char *name, const char *value)
{
    g_mutex_lock(&lock);
    g_ptr_array_add(resp->headers, g_strdup(name));
    g_ptr_array_add(resp->headers, g_strdup(value));
    g_mutex_unlock(&lock);
}

void kb_test_response_set_delay(KbTestResponse *resp, guint ms)
{
    g_mutex_lock(&lock);
    resp->delay_ms = ms;
    g_mutex_unlock(&lock);
}

void kb_test_response_add_chunk(KbTestResponse *resp, guint delay_ms, const char *data)
{
    Chunk *chunk = g_new0(Chunk, 1);
    chunk->delay_ms = delay_ms;
    chunk->data = g_bytes_new(data, strlen(data));
    g_mutex_lock(&lock);
    resp->stream = TRUE;
    g_ptr_array_add(resp->chunks, chunk);
    g_cond_broadcast(&cond);
    g_mutex_unlock(&lock);
}

void kb_test_response_append_chunk(KbTestResponse *resp, const char *data)
{
    kb_test_response_add_chunk(resp, 0, data);
}

void kb_test_response_cut_after(KbTestResponse *resp, gsize n_bytes)
{
    g_mutex_lock(&lock);
    resp->stream = TRUE;
    resp->cut_after = (gssize)n_bytes;
    g_mutex_unlock(&lock);
}

void kb_test_response_stall(KbTestResponse *resp)
{
    g_mutex_lock(&lock);
    resp->stream = TRUE;
    resp->stall = TRUE;
    g_mutex_unlock(&lock);
}

/* ---- routes -------------------------------------------------------------------------------- */

static void route_free(Route *route)
{
    g_free(route->method);
    g_free(route->path);
    g_queue_clear_full(&route->responses, (GDestroyNotify)kb_test_response_unref);
    if (route->destroy != NULL)
        route->destroy(route->user_data);
    g_free(route);
}

static gboolean method_is_any(const char *method)
{
    return method == NULL || strcmp(method, "*") == 0;
}

/* Match score of pattern (@method, @path, @prefix) for a request, or -1 when it does not match. */
static gint64 match_score(const char *method, const char *path, gboolean prefix,
                          const char *req_method, const char *req_path)
{
    gint64 score;
    if (method != NULL && strcmp(method, req_method) != 0)
        return -1;
    if (prefix) {
        if (!g_str_has_prefix(req_path, path))
            return -1;
        score = (gint64)strlen(path) * 2;
    } else {
        if (strcmp(path, req_path) != 0)
            return -1;
        score = G_MAXINT32;
    }
    return score + (method != NULL ? 1 : 0);
}

/* Split "/a/b*" into its path and prefix flag; NULL/"*" method into NULL. */
static void parse_pattern(const char *method, const char *path, char **out_method, char **out_path,
                          gboolean *out_prefix)
{
    gsize len = strlen(path);
    *out_method = method_is_any(method) ? NULL : g_strdup(method);
    *out_prefix = len > 0 && path[len - 1] == '*';
    *out_path = g_strndup(path, *out_prefix ? len - 1 : len);
}

/* The route registered for exactly this pattern, created if needed. Called with the lock. */
static Route *route_for_pattern(KbTestServer *server, const char *method, const char *path)
{
    g_autofree char *m = NULL;
    g_autofree char *p = NULL;
    gboolean prefix;
    parse_pattern(method, path, &m, &p, &prefix);
    for (guint i = 0; i < server->routes->len; i++) {
        Route *route = g_ptr_array_index(server->routes, i);
        if (g_strcmp0(route->method, m) == 0 && strcmp(route->path, p) == 0 &&
            route->prefix == prefix)
            return route;
    }
    Route *route = g_new0(Route, 1);
    route->method = g_steal_pointer(&m);
    route->path = g_steal_pointer(&p);
    route->prefix = prefix;
    g_queue_init(&route->responses);
    g_ptr_array_add(server->routes, route);
    return route;
}

void kb_test_server_push(KbTestServer *server, const char *method, const char *path,
                         KbTestResponse *resp)
{
    g_mutex_lock(&lock);
    Route *route = route_for_pattern(server, method, path);
    if (route->responses.length == 1 && route->head_served)
        kb_test_response_unref(g_queue_pop_head(&route->responses));
    route->head_served = FALSE;
    g_queue_push_tail(&route->responses, resp);
    g_mutex_unlock(&lock);
}

void kb_test_server_respond(KbTestServer *server, const char *method, const char *path,
                            guint status, const char *body)
{
    kb_test_server_push(server, method, path, kb_test_response_new_body(status, body));
}

void kb_test_server_set_handler(KbTestServer *server, const char *method, const char *path,
                                KbTestHandler handler, gpointer user_data, GDestroyNotify destroy)
{
    g_mutex_lock(&lock);
    Route *route = route_for_pattern(server, method, path);
    g_queue_clear_full(&route->responses, (GDestroyNotify)kb_test_response_unref);
    if (route->destroy != NULL)
        route->destroy(route->user_data);
    route->handler = handler;
    route->user_data = user_data;
    route->destroy = destroy;
    g_mutex_unlock(&lock);
}

/* The response for @req (new reference): from its route's queue or handler, else a 404. */
static KbTestResponse *choose_response(KbTestServer *server, const KbTestRequest *req)
{
    Route *best = NULL;
    gint64 best_score = -1;
    g_mutex_lock(&lock);
    for (guint i = 0; i < server->routes->len; i++) {
        Route *route = g_ptr_array_index(server->routes, i);
        gint64 score =
                match_score(route->method, route->path, route->prefix, req->method, req->path);
        if (score > best_score) {
            best = route;
            best_score = score;
        }
    }
    KbTestResponse *resp = NULL;
    KbTestHandler handler = NULL;
    gpointer user_data = NULL;
    if (best != NULL && best->handler != NULL) {
        handler = best->handler;
        user_data = best->user_data;
    } else if (best != NULL && best->responses.length > 1) {
        resp = g_queue_pop_head(&best->responses);
    } else if (best != NULL && best->responses.length == 1) {
        resp = kb_test_response_ref(g_queue_peek_head(&best->responses));
        best->head_served = TRUE;
    }
    g_mutex_unlock(&lock);

    if (handler != NULL) {
        g_mutex_lock(&server->handler_lock);
        resp = handler(req, user_data);
        g_mutex_unlock(&server->handler_lock);
        if (resp == NULL)
            resp = kb_test_response_new_status(500, "InternalError", "handler returned NULL");
    }
    if (resp == NULL) {
        g_autofree char *msg = g_strdup_printf("no route for %s %s", req->method, req->path);
        resp = kb_test_response_new_status(404, "NotFound", msg);
    }
    return resp;
}

/* ---- connection threads -------------------------------------------------------------------- */

/* TRUE when the client closed its end (or the socket failed). */
static gboolean peer_gone(int fd)
{
    if (fd < 0)
        return FALSE;
    struct pollfd pfd = {.fd = fd, .events = POLLRDHUP};
    return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* Wait with the lock held until @deadline (monotonic µs; G_MAXINT64 for ever) or until the
 * condition is broadcast. FALSE when the connection should be dropped: the server is stopping or
 * the peer went away. */
static gboolean wait_step(KbTestServer *server, int fd, gint64 deadline)
{
    if (server->stopping || peer_gone(fd))
        return FALSE;
    gint64 now = g_get_monotonic_time();
    g_cond_wait_until(&cond, &lock, MIN(deadline, now + PEER_CHECK_US));
    return !server->stopping && !peer_gone(fd);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    StreamState *st = cls;
    KbTestResponse *resp = st->resp;
    ssize_t ret = MHD_CONTENT_READER_END_OF_STREAM;
    gint64 deadline = 0;
    g_mutex_lock(&lock);
    for (;;) {
        if (st->server->stopping || (resp->cut_after >= 0 && st->sent >= (gsize)resp->cut_after)) {
            ret = MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        if (st->chunk < resp->chunks->len) {
            Chunk *chunk = g_ptr_array_index(resp->chunks, st->chunk);
            if (!st->waited && chunk->delay_ms > 0) {
                if (deadline == 0)
                    deadline = g_get_monotonic_time() + chunk->delay_ms * G_TIME_SPAN_MILLISECOND;
                if (g_get_monotonic_time() < deadline) {
                    if (!wait_step(st->server, st->fd, deadline)) {
                        ret = MHD_CONTENT_READER_END_WITH_ERROR;
                        break;
                    }
                    continue;
                }
            }
            st->waited = TRUE;
            gsize size;
            const char *data = g_bytes_get_data(chunk->data, &size);
            gsize n = MIN(size - st->offset, max);
            if (resp->cut_after >= 0)
                n = MIN(n, (gsize)resp->cut_after - st->sent);
            if (n > 0) /* an empty chunk's data may be NULL */
                memcpy(buf, data + st->offset, n);
            st->offset += n;
            st->sent += n;
            if (st->offset == size) {
                st->chunk++;
                st->offset = 0;
                st->waited = FALSE;
            }
            if (n == 0)
                continue; /* an empty chunk: nothing to send, go on with the next one */
            ret = (ssize_t)n;
            break;
        }
        if (!resp->stall)
            break;
        if (!wait_step(st->server, st->fd, G_MAXINT64)) {
            ret = MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
    }
    g_mutex_unlock(&lock);
    return ret;
}

static void stream_free(void *cls)
{
    StreamState *st = cls;
    kb_test_response_unref(st->resp);
    g_free(st);
}

static int connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info != NULL ? info->connect_fd : -1;
}

/* Build the MHD response for @resp (reference taken over). */
static struct MHD_Response *build_response(KbTestServer *server, struct MHD_Connection *connection,
                                           KbTestResponse *resp)
{
    struct MHD_Response *r;
    gboolean has_type = FALSE;
    g_mutex_lock(&lock);
    gboolean stream = resp->stream;
    GBytes *body = g_bytes_ref(resp->body);
    g_mutex_unlock(&lock);
    if (stream) {
        StreamState *st = g_new0(StreamState, 1);
        st->server = server;
        st->resp = kb_test_response_ref(resp);
        st->fd = connection_fd(connection);
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, st,
                                              stream_free);
    } else {
        gsize len;
        const void *data = g_bytes_get_data(body, &len);
        r = MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    }
    g_bytes_unref(body);
    g_mutex_lock(&lock);
    for (guint i = 0; i + 1 < resp->headers->len; i += 2) {
        const char *name = g_ptr_array_index(resp->headers, i);
        has_type = has_type || g_ascii_strcasecmp(name, "Content-Type") == 0;
        MHD_add_response_header(r, name, g_ptr_array_index(resp->headers, i + 1));
    }
    g_mutex_unlock(&lock);
    if (!has_type)
        MHD_add_response_header(r, "Content-Type", "application/json");
    kb_test_response_unref(resp);
    return r;
}

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    g_hash_table_insert(cls, g_ascii_strdown(key, -1), g_strdup(value != NULL ? value : ""));
    return MHD_YES;
}

/* gnutls is loaded by libmicrohttpd; look its functions up rather than link it ourselves. */
typedef int (*VerifyPeersFunc)(void *session, unsigned int *status);
typedef const void *(*GetPeersFunc)(void *session, unsigned int *list_size);

static int client_cert_state(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    VerifyPeersFunc verify =
            (VerifyPeersFunc)dlsym(RTLD_DEFAULT, "gnutls_certificate_verify_peers2");
    GetPeersFunc get_peers = (GetPeersFunc)dlsym(RTLD_DEFAULT, "gnutls_certificate_get_peers");
    unsigned int n = 0, status = 0;
    if (info == NULL || info->tls_session == NULL || verify == NULL || get_peers == NULL)
        return 0;
    if (get_peers(info->tls_session, &n) == NULL || n == 0)
        return 0;
    return verify(info->tls_session, &status) == 0 && status == 0 ? 1 : -1;
}

/* Record the request now complete on @conn; returns it (owned by the server's log). */
static KbTestRequest *record_request(KbTestServer *server, struct MHD_Connection *connection,
                                     const char *method, Conn *conn)
{
    KbTestRequest *req = g_new0(KbTestRequest, 1);
    const char *q = strchr(conn->uri, '?');
    req->method = g_strdup(method);
    req->target = g_strdup(conn->uri);
    req->path = q != NULL ? g_strndup(conn->uri, q - conn->uri) : g_strdup(conn->uri);
    req->query = g_strdup(q != NULL ? q + 1 : "");
    req->headers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    MHD_get_connection_values(connection, MHD_HEADER_KIND, collect_header, req->headers);
    req->body_len = conn->body->len;
    g_byte_array_append(conn->body, (const guint8 *)"", 1);
    req->body = (char *)g_byte_array_free(g_steal_pointer(&conn->body), FALSE);
    if (server->trust_pem != NULL)
        req->client_cert = client_cert_state(connection);

    g_mutex_lock(&lock);
    req->index = server->requests->len;
    g_ptr_array_add(server->requests, req);
    conn->counted = TRUE;
    server->concurrent++;
    server->max_concurrent = MAX(server->max_concurrent, server->concurrent);
    g_cond_broadcast(&cond);
    g_mutex_unlock(&lock);
    return req;
}

static enum MHD_Result handle_request(void *cls, struct MHD_Connection *connection, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **con_cls)
{
    KbTestServer *server = cls;
    Conn *conn = *con_cls;
    if (!conn->started) {
        conn->started = TRUE;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (conn->body->len + *upload_data_size > MAX_REQUEST_BODY)
            return MHD_NO;
        g_byte_array_append(conn->body, (const guint8 *)upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }

    const KbTestRequest *req = record_request(server, connection, method, conn);
    KbTestResponse *resp = choose_response(server, req);
    g_mutex_lock(&lock);
    gint64 deadline = g_get_monotonic_time() + resp->delay_ms * G_TIME_SPAN_MILLISECOND;
    int fd = resp->delay_ms > 0 ? connection_fd(connection) : -1;
    gboolean alive = TRUE;
    while (alive && g_get_monotonic_time() < deadline)
        alive = wait_step(server, fd, deadline);
    guint status = resp->status;
    g_mutex_unlock(&lock);
    if (!alive) {
        kb_test_response_unref(resp);
        return MHD_NO;
    }
    struct MHD_Response *r = build_response(server, connection, resp);
    enum MHD_Result ret = MHD_queue_response(connection, status, r);
    MHD_destroy_response(r);
    return ret;
}

static void *log_uri(void *cls, const char *uri, struct MHD_Connection *connection)
{
    Conn *conn = g_new0(Conn, 1);
    conn->server = cls;
    conn->uri = g_strdup(uri);
    conn->body = g_byte_array_new();
    return conn;
}

static void request_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                              enum MHD_RequestTerminationCode toe)
{
    Conn *conn = *con_cls;
    if (conn == NULL)
        return;
    g_mutex_lock(&lock);
    if (conn->counted)
        conn->server->concurrent--;
    g_mutex_unlock(&lock);
    g_free(conn->uri);
    if (conn->body != NULL)
        g_byte_array_unref(conn->body);
    g_free(conn);
    *con_cls = NULL;
}

static void connection_notify(void *cls, struct MHD_Connection *connection, void **socket_context,
                              enum MHD_ConnectionNotificationCode toe)
{
    KbTestServer *server = cls;
    if (toe != MHD_CONNECTION_NOTIFY_STARTED)
        return;
    g_mutex_lock(&lock);
    server->connections++;
    g_mutex_unlock(&lock);
}

/* ---- the server ---------------------------------------------------------------------------- */

static char *read_pem(const char *path)
{
    g_autoptr(GError) error = NULL;
    char *data = NULL;
    if (path == NULL)
        return NULL;
    if (!g_file_get_contents(path, &data, NULL, &error))
        g_error("kb-test-server: %s", error->message);
    return data;
}

KbTestServer *kb_test_server_new(const char *tls_cert_file, const char *tls_key_file,
                                 const char *client_ca_file)
{
    KbTestServer *server = g_new0(KbTestServer, 1);
    gboolean tls = tls_cert_file != NULL && tls_key_file != NULL;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    server->routes = g_ptr_array_new_with_free_func((GDestroyNotify)route_free);
    server->requests = g_ptr_array_new_with_free_func((GDestroyNotify)request_free);
    g_mutex_init(&server->handler_lock);
    if (tls) {
        server->cert_pem = read_pem(tls_cert_file);
        server->key_pem = read_pem(tls_key_file);
        server->trust_pem = read_pem(client_ca_file);
    }

    unsigned int flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
                         MHD_USE_THREAD_PER_CONNECTION | (tls ? MHD_USE_TLS : 0);
    if (g_getenv("KB_TEST_SERVER_DEBUG") != NULL)
        flags |= MHD_USE_ERROR_LOG;
    struct MHD_OptionItem tls_opts[] = {
            {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, server->cert_pem},
            {MHD_OPTION_HTTPS_MEM_KEY, 0, server->key_pem},
            {server->trust_pem != NULL ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0,
             server->trust_pem},
            {MHD_OPTION_END, 0, NULL},
    };
    server->daemon = MHD_start_daemon(
            flags, 0, NULL, NULL, handle_request, server, MHD_OPTION_SOCK_ADDR, &addr,
            MHD_OPTION_URI_LOG_CALLBACK, log_uri, server, MHD_OPTION_NOTIFY_COMPLETED,
            request_completed, server, MHD_OPTION_NOTIFY_CONNECTION, connection_notify, server,
            MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
    if (server->daemon == NULL)
        g_error("kb-test-server: MHD_start_daemon failed%s", tls ? " (TLS)" : "");
    const union MHD_DaemonInfo *info =
            MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
    server->port = info->port;
    server->url = g_strdup_printf("%s://127.0.0.1:%u", tls ? "https" : "http", server->port);
    return server;
}

void kb_test_server_free(KbTestServer *server)
{
    if (server == NULL)
        return;
    g_mutex_lock(&lock);
    server->stopping = TRUE;
    g_cond_broadcast(&cond);
    g_mutex_unlock(&lock);
    MHD_stop_daemon(server->daemon);
    g_ptr_array_unref(server->routes);
    g_ptr_array_unref(server->requests);
    g_mutex_clear(&server->handler_lock);
    g_free(server->cert_pem);
    g_free(server->key_pem);
    g_free(server->trust_pem);
    g_free(server->url);
    g_free(server);
}

const char *kb_test_server_url(const KbTestServer *server)
{
    return server->url;
}

guint16 kb_test_server_port(const KbTestServer *server)
{
    return server->port;
}

/* ---- what the server saw ------------------------------------------------------------------- */

guint kb_test_server_request_count(KbTestServer *server)
{
    g_mutex_lock(&lock);
    guint n = server->requests->len;
    g_mutex_unlock(&lock);
    return n;
}

const KbTestRequest *kb_test_server_request(KbTestServer *server, guint index)
{
    const KbTestRequest *req = NULL;
    g_mutex_lock(&lock);
    if (index < server->requests->len)
        req = g_ptr_array_index(server->requests, index);
    g_mutex_unlock(&lock);
    return req;
}

const KbTestRequest *kb_test_server_last_request(KbTestServer *server, const char *method,
                                                 const char *path)
{
    g_autofree char *m = NULL;
    g_autofree char *p = NULL;
    gboolean prefix;
    const KbTestRequest *found = NULL;
    parse_pattern(method, path, &m, &p, &prefix);
    g_mutex_lock(&lock);
    for (guint i = server->requests->len; i > 0 && found == NULL; i--) {
        const KbTestRequest *req = g_ptr_array_index(server->requests, i - 1);
        if (match_score(m, p, prefix, req->method, req->path) >= 0)
            found = req;
    }
    g_mutex_unlock(&lock);
    return found;
}

gboolean kb_test_server_wait_requests(KbTestServer *server, guint n, guint timeout_ms)
{
    gint64 deadline = g_get_monotonic_time() + timeout_ms * G_TIME_SPAN_MILLISECOND;
    g_mutex_lock(&lock);
    while (server->requests->len < n && g_get_monotonic_time() < deadline)
        g_cond_wait_until(&cond, &lock, deadline);
    gboolean reached = server->requests->len >= n;
    g_mutex_unlock(&lock);
    return reached;
}

guint kb_test_server_concurrent(KbTestServer *server)
{
    g_mutex_lock(&lock);
    guint n = server->concurrent;
    g_mutex_unlock(&lock);
    return n;
}

guint kb_test_server_max_concurrent(KbTestServer *server)
{
    g_mutex_lock(&lock);
    guint n = server->max_concurrent;
    g_mutex_unlock(&lock);
    return n;
}

guint kb_test_server_connection_count(KbTestServer *server)
{
    g_mutex_lock(&lock);
    guint n = server->connections;
    g_mutex_unlock(&lock);
    return n;
}
