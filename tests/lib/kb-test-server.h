/*
 * A scripted HTTP/HTTPS server for integration tests of the REST client, watches, informers and
 * leader election.
 *
 * It runs libmicrohttpd on its own threads (one per connection, so scripted delays and stalled
 * streams never hold up other requests), listens on 127.0.0.1 on an ephemeral port, and answers
 * from routes the test registers:
 *
 *   - a route is a method ("GET", or "*" / NULL for any) plus a path, either exact
 *     ("/api/v1/namespaces/default/pods/p1") or a prefix when it ends with '*'
 *     ("/api/v1/pods*" matches "/api/v1/pods" and "/api/v1/pods/x/status"); matching ignores the
 *     query string; an exact path wins over a prefix, a longer prefix over a shorter one, an
 *     exact method over "*";
 *   - a route holds a queue of scripted responses served in order; the last one repeats until
 *     another is pushed: pushing onto a route whose last response was already served replaces
 *     it, pushing onto one whose responses were not all served yet appends to the queue;
 *   - a response is either a plain body (status, extra headers, body), or a stream of chunks sent
 *     with delays (chunked transfer encoding), optionally cut after N bytes (the connection is
 *     closed abruptly, mid-chunk if N says so) or stalled forever after its chunks (until the
 *     client goes away or the server is freed); chunks may be appended to a stream while it is
 *     being served (kb_test_response_append_chunk), which wakes the stalled connections;
 *   - a handler route calls a function for each request; it returns the response to send (any
 *     kind above), so a test can keep state (a Lease store, a resourceVersion counter).
 *   - a request that matches no route gets 404 with a metav1.Status NotFound body.
 *
 * Every request is recorded (method, path, query, headers, body) for assertions, and the server
 * tracks how many requests were being answered at once. All functions are thread-safe. Freeing
 * the server closes every connection, stalled streams included, and joins its threads.
 *
 *   g_autoptr(KbTestServer) srv = kb_test_server_new(NULL, NULL, NULL);
 *   kb_test_server_respond(srv, "GET", "/api/v1/namespaces/default/pods/p1", 200,
 *                          "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\"}}");
 *   KbTestResponse *w = kb_test_response_new(200);
 *   kb_test_response_add_chunk(w, 0, "{\"type\":\"ADDED\",\"object\":{...}}\n");
 *   kb_test_response_add_chunk(w, 50, "{\"type\":\"MOD");
 *   kb_test_response_cut_after(w, 40);
 *   kb_test_server_push(srv, "GET", "/api/v1/pods*", w);
 *   ... kb_test_server_url(srv) ...
 *   const KbTestRequest *r = kb_test_server_request(srv, 0);
 *   g_assert_cmpstr(kb_test_request_header(r, "Authorization"), ==, "Bearer abc");
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

typedef struct KbTestServer KbTestServer;
typedef struct KbTestResponse KbTestResponse;

/* One recorded request. Immutable once recorded; owned by the server, valid until it is freed. */
typedef struct {
    char *method;        /* "GET" */
    char *target;        /* path and query as sent: "/api/v1/pods?limit=2&continue=abc" */
    char *path;          /* raw (still percent-encoded) path: "/api/v1/pods" */
    char *query;         /* raw query without '?': "limit=2&continue=abc"; "" when none */
    GHashTable *headers; /* lower-case name -> value */
    char *body;          /* request body, NUL-terminated for convenience ("" when none) */
    gsize body_len;
    guint index;     /* position in the server's request log, from 0 */
    int client_cert; /* HTTPS with a client CA: 1 a client certificate that verified against it,
                      * -1 one that did not (gnutls may refuse such a handshake outright), 0 none */
} KbTestRequest;

/* Header @name (any case) of @req, or NULL. Borrowed. */
const char *kb_test_request_header(const KbTestRequest *req, const char *name);
/* The percent-decoded value of query parameter @name, newly allocated, or NULL when absent. */
char *kb_test_request_query_param(const KbTestRequest *req, const char *name);
/* The body of @req as JSON (new reference), whatever it was sent as: JSON, or a protobuf Binding
 * (read as kb-apiserver reads it). Fails the test when it is neither. */
json_object *kb_test_request_json(const KbTestRequest *req);

/* ---- responses ----------------------------------------------------------------------------- */

/* A new response with HTTP @status, no body, Content-Type application/json. Reference counted:
 * functions that take a response ("push", handler return values) take over the caller's
 * reference. */
KbTestResponse *kb_test_response_new(guint status);
/* Shorthand: @status with @body (copied, may be NULL). */
KbTestResponse *kb_test_response_new_body(guint status, const char *body);
/* Shorthand: a metav1.Status body {"kind":"Status","status":"Failure","reason":@reason,
 * "message":@message,"code":@status}. */
KbTestResponse *kb_test_response_new_status(guint status, const char *reason, const char *message);
KbTestResponse *kb_test_response_ref(KbTestResponse *resp);
void kb_test_response_unref(KbTestResponse *resp);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbTestResponse, kb_test_response_unref)

/* Replace the body with @len bytes of @data (copied); @len -1 means NUL-terminated. */
void kb_test_response_set_body(KbTestResponse *resp, const char *data, gssize len);
/* Add an extra response header ("Retry-After", "3"); "Content-Type" replaces the default. */
void kb_test_response_add_header(KbTestResponse *resp, const char *name, const char *value);
/* Wait @ms (on the server's connection thread) before answering at all. */
void kb_test_response_set_delay(KbTestResponse *resp, guint ms);

/* Make @resp a stream (if it is not already) and add a chunk: wait @delay_ms, then send @data
 * (NUL-terminated, copied). A stream ignores the plain body. */
void kb_test_response_add_chunk(KbTestResponse *resp, guint delay_ms, const char *data);
/* Close the connection abruptly once @n_bytes of the stream's body have been sent. */
void kb_test_response_cut_after(KbTestResponse *resp, gsize n_bytes);
/* After the last chunk, keep the connection open and send nothing until the client goes away
 * or the server is freed (instead of ending the stream cleanly). */
void kb_test_response_stall(KbTestResponse *resp);
/* Add a chunk (no delay) to a stream, also while it is being served: connections that already
 * sent every earlier chunk and stall send it at once. For live watch events. */
void kb_test_response_append_chunk(KbTestResponse *resp, const char *data);

/* ---- the server ---------------------------------------------------------------------------- */

/* Start a server. With @tls_cert_file and @tls_key_file (PEM files) it speaks HTTPS only; with
 * @client_ca_file as well it asks for a client certificate (without requiring one) and records
 * its verification in KbTestRequest.client_cert. All may be NULL. Aborts the test when the server
 * cannot start (that is a broken test environment, not a behaviour under test). */
KbTestServer *kb_test_server_new(const char *tls_cert_file, const char *tls_key_file,
                                 const char *client_ca_file);
void kb_test_server_free(KbTestServer *server);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbTestServer, kb_test_server_free)

/* "http://127.0.0.1:PORT" or "https://127.0.0.1:PORT". Borrowed. */
const char *kb_test_server_url(const KbTestServer *server);
guint16 kb_test_server_port(const KbTestServer *server);

/* Append @resp (reference taken over) to the queue of route @method @path (replacing the last
 * response when that one was already served). */
void kb_test_server_push(KbTestServer *server, const char *method, const char *path,
                         KbTestResponse *resp);
/* Shorthand: push a plain response with @status and @body (may be NULL). */
void kb_test_server_respond(KbTestServer *server, const char *method, const char *path,
                            guint status, const char *body);

/* Called on a server thread for each request of its route. Calls are serialized per server, so
 * the handler's state needs no lock against itself, only against the test thread. It must not
 * block for long: freeing the server waits for it. Returns the response to send (new reference;
 * a stream works too), or NULL for a 500. */
typedef KbTestResponse *(*KbTestHandler)(const KbTestRequest *req, gpointer user_data);
/* Route @method @path to @handler. Replaces any queue on that route. @destroy frees @user_data
 * when the server is freed (may be NULL). */
void kb_test_server_set_handler(KbTestServer *server, const char *method, const char *path,
                                KbTestHandler handler, gpointer user_data, GDestroyNotify destroy);

/* ---- what the server saw ------------------------------------------------------------------- */

/* Number of requests recorded so far (complete requests, counted before they are answered). */
guint kb_test_server_request_count(KbTestServer *server);
/* The @index-th request (from 0), or NULL. Borrowed; valid until the server is freed. */
const KbTestRequest *kb_test_server_request(KbTestServer *server, guint index);
/* The last request whose method and path match (same rules as routes: "*" / prefix '*'), or
 * NULL. Borrowed. */
const KbTestRequest *kb_test_server_last_request(KbTestServer *server, const char *method,
                                                 const char *path);
/* Block until at least @n requests were recorded or @timeout_ms passed; TRUE when reached. Does
 * not iterate any main context. */
gboolean kb_test_server_wait_requests(KbTestServer *server, guint n, guint timeout_ms);
/* Requests being answered right now, and the most there ever were at once (a request counts from
 * when it was fully received until its response was sent or its connection died). */
guint kb_test_server_concurrent(KbTestServer *server);
guint kb_test_server_max_concurrent(KbTestServer *server);
/* Number of TCP connections the server accepted so far (to check keep-alive reuse). */
guint kb_test_server_connection_count(KbTestServer *server);
