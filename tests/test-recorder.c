/*
 * Event recorder against kb-test-server, whose handler keeps an Event store (POST creates, 409
 * when the name exists; merge PATCH updates, 404 when it does not).
 */
#include <string.h>

#include "kube/kb-client.h"
#include "kube/kb-objects.h"
#include "kube/kb-recorder.h"
#include "tests/lib/kb-test-server.h"

/* A local name, so that a json_object cleanup defined in a shared header cannot clash. */
typedef json_object Json;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Json, json_object_put)

static void json_free(gpointer p)
{
    json_object_put(p);
}

typedef struct {
    GMutex lock;
    GHashTable *events; /* "ns/name" -> json_object */
    guint status;       /* answer everything with this status when non-zero */
} Store;

typedef struct {
    Store store;
    KbTestServer *server;
    KbClient *client;
} Fixture;

/* "/api/v1/namespaces/NS/events[/NAME]" -> ns and name (NULL when absent). */
static gboolean split_path(const char *path, char **ns, char **name)
{
    g_auto(GStrv) parts = g_strsplit(path, "/", -1);
    guint n = g_strv_length(parts);

    /* "", "api", "v1", "namespaces", NS, "events"[, NAME] */
    if (n < 6 || n > 7 || strcmp(parts[3], "namespaces") != 0 || strcmp(parts[5], "events") != 0)
        return FALSE;
    *ns = g_strdup(parts[4]);
    *name = n == 7 ? g_strdup(parts[6]) : NULL;
    return TRUE;
}

static KbTestResponse *events_handler(const KbTestRequest *req, gpointer user_data)
{
    Store *s = user_data;
    g_autofree char *ns = NULL, *name = NULL, *key = NULL;
    json_object *body = json_tokener_parse(req->body);
    json_object *meta, *v, *cur;
    KbTestResponse *resp;

    if (!split_path(req->path, &ns, &name) || body == NULL) {
        json_object_put(body);
        return kb_test_response_new_status(400, "BadRequest", "unexpected request");
    }
    g_mutex_lock(&s->lock);
    if (s->status != 0) {
        resp = kb_test_response_new_status(s->status, "Forbidden", "scripted failure");
    } else if (strcmp(req->method, "POST") == 0 && name == NULL) {
        json_object_object_get_ex(body, "metadata", &meta);
        json_object_object_get_ex(meta, "name", &v);
        key = g_strdup_printf("%s/%s", ns, json_object_get_string(v));
        if (g_hash_table_contains(s->events, key)) {
            resp = kb_test_response_new_status(409, "AlreadyExists", "exists");
        } else {
            g_hash_table_insert(s->events, g_steal_pointer(&key), json_object_get(body));
            resp = kb_test_response_new_body(201, json_object_to_json_string(body));
        }
    } else if (strcmp(req->method, "PATCH") == 0 && name != NULL) {
        key = g_strdup_printf("%s/%s", ns, name);
        cur = g_hash_table_lookup(s->events, key);
        if (cur == NULL) {
            resp = kb_test_response_new_status(404, "NotFound", "not found");
        } else {
            json_object_object_foreach(body, k, val)
            {
                json_object_object_add(cur, k, json_object_get(val));
            }
            resp = kb_test_response_new_body(200, json_object_to_json_string(cur));
        }
    } else {
        resp = kb_test_response_new_status(405, "MethodNotAllowed", "unexpected");
    }
    g_mutex_unlock(&s->lock);
    json_object_put(body);
    return resp;
}

static void fixture_setup(Fixture *f, gconstpointer data)
{
    KbConfig config = {0};
    g_autoptr(GError) error = NULL;

    g_mutex_init(&f->store.lock);
    f->store.events = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, json_free);
    f->store.status = 0;
    f->server = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_set_handler(f->server, "*", "/api/v1/namespaces/*", events_handler, &f->store,
                               NULL);
    config.server = (char *)kb_test_server_url(f->server);
    f->client = kb_client_new(&config, &error);
    g_assert_no_error(error);
}

static void fixture_teardown(Fixture *f, gconstpointer data)
{
    for (int i = 0; i < 200 && kb_client_pending(f->client) > 0; i++)
        g_main_context_iteration(NULL, TRUE);
    kb_client_free(f->client);
    kb_test_server_free(f->server);
    g_hash_table_unref(f->store.events);
    g_mutex_clear(&f->store.lock);
}

static gboolean tick(gpointer data)
{
    return G_SOURCE_CONTINUE;
}

/* Run the main loop until the recorder has nothing in flight (or 3 s). */
static void drain(KbRecorder *r)
{
    guint id = g_timeout_add(10, tick, NULL);
    gint64 end = g_get_monotonic_time() + 3 * G_USEC_PER_SEC;

    while (kb_recorder_pending(r) > 0 && g_get_monotonic_time() < end)
        g_main_context_iteration(NULL, TRUE);
    g_source_remove(id);
    g_assert_cmpuint(kb_recorder_pending(r), ==, 0);
}

static void sleep_loop(guint ms)
{
    guint id = g_timeout_add(10, tick, NULL);
    gint64 end = g_get_monotonic_time() + (gint64)ms * 1000;

    while (g_get_monotonic_time() < end)
        g_main_context_iteration(NULL, TRUE);
    g_source_remove(id);
}

static json_object *request_body(KbTestServer *srv, guint index)
{
    const KbTestRequest *req = kb_test_server_request(srv, index);

    g_assert_nonnull(req);
    return json_tokener_parse(req->body);
}

static const char *str_at(json_object *obj, const char *a, const char *b)
{
    json_object *v = obj;

    if (!json_object_object_get_ex(v, a, &v))
        return NULL;
    if (b != NULL && !json_object_object_get_ex(v, b, &v))
        return NULL;
    return json_object_get_string(v);
}

static int int_at(json_object *obj, const char *a)
{
    json_object *v;

    return json_object_object_get_ex(obj, a, &v) ? json_object_get_int(v) : -1;
}

static const KbObjectMeta pod_p1 = {
        .kind = KB_KIND_POD, .name = "p1", .namespace_ = "default", .uid = "uid-p1"};
static const KbObjectMeta pod_p2 = {
        .kind = KB_KIND_POD, .name = "p2", .namespace_ = "default", .uid = "uid-p2"};

static void test_posts_event(Fixture *f, gconstpointer data)
{
    KbRecorderOptions opts = {.component = "kube-batchd", .host = "node-7"};
    g_autoptr(KbRecorder) r = kb_recorder_new_full(f->client, &opts);
    g_autoptr(Json) ev = NULL;
    const KbTestRequest *req;
    const char *name;
    gint64 first = 0, last = 0;

    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Warning", "FailedScheduling",
                      "0/%d nodes are available: %s", 3, "3 Insufficient nvidia.com/gpu");
    drain(r);
    g_assert_cmpuint(kb_recorder_created(r), ==, 1);
    g_assert_cmpuint(kb_test_server_request_count(f->server), ==, 1);
    req = kb_test_server_request(f->server, 0);
    g_assert_cmpstr(req->method, ==, "POST");
    g_assert_cmpstr(req->path, ==, "/api/v1/namespaces/default/events");
    ev = json_tokener_parse(req->body);
    g_assert_cmpstr(str_at(ev, "apiVersion", NULL), ==, "v1");
    g_assert_cmpstr(str_at(ev, "kind", NULL), ==, "Event");
    name = str_at(ev, "metadata", "name");
    g_assert_true(g_str_has_prefix(name, "p1."));
    g_assert_cmpuint(strspn(name + 3, "0123456789abcdef"), ==, strlen(name + 3));
    g_assert_cmpuint(strlen(name + 3), >=, 15);
    g_assert_cmpstr(str_at(ev, "metadata", "namespace"), ==, "default");
    g_assert_cmpstr(str_at(ev, "involvedObject", "kind"), ==, "Pod");
    g_assert_cmpstr(str_at(ev, "involvedObject", "namespace"), ==, "default");
    g_assert_cmpstr(str_at(ev, "involvedObject", "name"), ==, "p1");
    g_assert_cmpstr(str_at(ev, "involvedObject", "uid"), ==, "uid-p1");
    g_assert_cmpstr(str_at(ev, "involvedObject", "apiVersion"), ==, "v1");
    g_assert_cmpstr(str_at(ev, "reason", NULL), ==, "FailedScheduling");
    g_assert_cmpstr(str_at(ev, "message", NULL), ==,
                    "0/3 nodes are available: 3 Insufficient nvidia.com/gpu");
    g_assert_cmpstr(str_at(ev, "type", NULL), ==, "Warning");
    g_assert_cmpstr(str_at(ev, "source", "component"), ==, "kube-batchd");
    g_assert_cmpstr(str_at(ev, "source", "host"), ==, "node-7");
    g_assert_cmpstr(str_at(ev, "reportingComponent", NULL), ==, "kube-batchd");
    g_assert_cmpstr(str_at(ev, "reportingInstance", NULL), ==, "node-7");
    g_assert_cmpint(int_at(ev, "count"), ==, 1);
    g_assert_true(kb_time_parse(str_at(ev, "firstTimestamp", NULL), &first));
    g_assert_true(kb_time_parse(str_at(ev, "lastTimestamp", NULL), &last));
    g_assert_cmpint(first, ==, last);
    g_assert_cmpint(llabs(first - g_get_real_time() / G_USEC_PER_SEC), <=, 5);
}

static void test_repeat_patches_count(Fixture *f, gconstpointer data)
{
    g_autoptr(KbRecorder) r = kb_recorder_new(f->client, "kube-batchd");
    g_autoptr(Json) created = NULL;
    g_autoptr(Json) patch = NULL;
    g_autofree char *path = NULL;
    const KbTestRequest *req;

    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Scheduled", "bound to %s", "n1");
    drain(r);
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Scheduled", "bound to %s", "n1");
    drain(r);
    g_assert_cmpuint(kb_test_server_request_count(f->server), ==, 2);
    created = request_body(f->server, 0);
    req = kb_test_server_request(f->server, 1);
    g_assert_cmpstr(req->method, ==, "PATCH");
    path = g_strdup_printf("/api/v1/namespaces/default/events/%s",
                           str_at(created, "metadata", "name"));
    g_assert_cmpstr(req->path, ==, path);
    g_assert_cmpstr(kb_test_request_header(req, "Content-Type"), ==,
                    "application/merge-patch+json");
    patch = json_tokener_parse(req->body);
    g_assert_cmpint(int_at(patch, "count"), ==, 2);
    g_assert_nonnull(str_at(patch, "lastTimestamp", NULL));
    g_assert_cmpuint(kb_recorder_created(r), ==, 1);
    g_assert_cmpuint(kb_recorder_patched(r), ==, 1);
    g_mutex_lock(&f->store.lock);
    g_assert_cmpuint(g_hash_table_size(f->store.events), ==, 1);
    g_mutex_unlock(&f->store.lock);
}

/* Repeats while the create is in flight become one PATCH with the total count. */
static void test_repeats_in_flight_fold(Fixture *f, gconstpointer data)
{
    g_autoptr(KbRecorder) r = kb_recorder_new(f->client, "kube-batchd");
    g_autoptr(Json) patch = NULL;

    for (int i = 0; i < 3; i++)
        kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Scheduled", "bound");
    drain(r);
    g_assert_cmpuint(kb_test_server_request_count(f->server), ==, 2);
    patch = request_body(f->server, 1);
    g_assert_cmpint(int_at(patch, "count"), ==, 3);
}

static void test_different_message_new_event(Fixture *f, gconstpointer data)
{
    g_autoptr(KbRecorder) r = kb_recorder_new(f->client, "kube-batchd");
    g_autoptr(Json) a = NULL;
    g_autoptr(Json) b = NULL;

    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Warning", "FailedScheduling", "1 short");
    drain(r);
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Warning", "FailedScheduling", "2 short");
    kb_recorder_event(r, &pod_p2, "v1", "Pod", "Warning", "FailedScheduling", "1 short");
    drain(r);
    g_assert_cmpuint(kb_recorder_created(r), ==, 3);
    g_assert_cmpuint(kb_recorder_patched(r), ==, 0);
    a = request_body(f->server, 0);
    b = request_body(f->server, 1);
    g_assert_cmpstr(str_at(a, "metadata", "name"), !=, str_at(b, "metadata", "name"));
}

static void test_rate_limit_burst(Fixture *f, gconstpointer data)
{
    g_autoptr(KbRecorder) r = kb_recorder_new(f->client, "kube-batchd");

    for (int i = 0; i < 30; i++)
        kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Reason", "message %d", i);
    /* Repeats draw from the same bucket. */
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Reason", "message %d", 0);
    /* Another object has its own bucket. */
    kb_recorder_event(r, &pod_p2, "v1", "Pod", "Normal", "Reason", "message %d", 0);
    drain(r);
    g_assert_cmpuint(kb_recorder_dropped(r), ==, 6);
    g_assert_cmpuint(kb_recorder_created(r), ==, 26);
    g_assert_cmpuint(kb_test_server_request_count(f->server), ==, 26);
}

static void test_rate_limit_refill(Fixture *f, gconstpointer data)
{
    KbRecorderOptions opts = {.component = "kube-batchd", .burst = 2, .refill_ms = 100};
    g_autoptr(KbRecorder) r = kb_recorder_new_full(f->client, &opts);

    for (int i = 0; i < 3; i++)
        kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "R", "m%d", i);
    g_assert_cmpuint(kb_recorder_dropped(r), ==, 1);
    drain(r);
    sleep_loop(150);
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "R", "m%d", 3);
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "R", "m%d", 4);
    drain(r);
    g_assert_cmpuint(kb_recorder_dropped(r), ==, 2);
    g_assert_cmpuint(kb_recorder_created(r), ==, 3);
}

static void test_window_expires(Fixture *f, gconstpointer data)
{
    KbRecorderOptions opts = {.component = "kube-batchd", .aggregate_window_ms = 100};
    g_autoptr(KbRecorder) r = kb_recorder_new_full(f->client, &opts);
    g_autoptr(Json) a = NULL;
    g_autoptr(Json) b = NULL;

    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Scheduled", "bound");
    drain(r);
    sleep_loop(150);
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Scheduled", "bound");
    drain(r);
    g_assert_cmpuint(kb_recorder_created(r), ==, 2);
    a = request_body(f->server, 0);
    b = request_body(f->server, 1);
    g_assert_cmpstr(str_at(b, "metadata", "name"), !=, str_at(a, "metadata", "name"));
    g_assert_cmpint(int_at(b, "count"), ==, 1);
}

/* Events expire on the server: the PATCH gets 404 and the Event is created again. */
static void test_patch_not_found_recreates(Fixture *f, gconstpointer data)
{
    g_autoptr(KbRecorder) r = kb_recorder_new(f->client, "kube-batchd");
    g_autoptr(Json) first = NULL;
    g_autoptr(Json) again = NULL;

    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Scheduled", "bound");
    drain(r);
    g_mutex_lock(&f->store.lock);
    g_hash_table_remove_all(f->store.events);
    g_mutex_unlock(&f->store.lock);
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Scheduled", "bound");
    drain(r);
    g_assert_cmpuint(kb_test_server_request_count(f->server), ==, 3);
    g_assert_cmpstr(kb_test_server_request(f->server, 1)->method, ==, "PATCH");
    g_assert_cmpstr(kb_test_server_request(f->server, 2)->method, ==, "POST");
    first = request_body(f->server, 0);
    again = request_body(f->server, 2);
    g_assert_cmpstr(str_at(again, "metadata", "name"), ==, str_at(first, "metadata", "name"));
    g_assert_cmpint(int_at(again, "count"), ==, 2);
    g_assert_cmpuint(kb_recorder_created(r), ==, 2);
}

static void test_lru_bound(Fixture *f, gconstpointer data)
{
    KbRecorderOptions opts = {.component = "kube-batchd", .max_entries = 2};
    g_autoptr(KbRecorder) r = kb_recorder_new_full(f->client, &opts);

    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "A", "a");
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "B", "b");
    drain(r);
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "A", "a"); /* aggregated */
    drain(r);
    g_assert_cmpuint(kb_recorder_patched(r), ==, 1);
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "C", "c"); /* evicts B */
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "B", "b"); /* new Event again */
    drain(r);
    g_assert_cmpuint(kb_recorder_created(r), ==, 4);
    g_assert_cmpuint(kb_recorder_patched(r), ==, 1);
}

static void test_cluster_scoped(Fixture *f, gconstpointer data)
{
    static const KbObjectMeta node = {.kind = KB_KIND_NODE, .name = "n1", .uid = "uid-n1"};
    g_autoptr(KbRecorder) r = kb_recorder_new(f->client, "kube-batchd");
    g_autoptr(Json) ev = NULL;
    json_object *obj;

    kb_recorder_event(r, &node, "v1", "Node", "Warning", "GPUUnhealthy", "gpu %d lost", 3);
    drain(r);
    g_assert_cmpstr(kb_test_server_request(f->server, 0)->path, ==,
                    "/api/v1/namespaces/default/events");
    ev = request_body(f->server, 0);
    g_assert_cmpstr(str_at(ev, "metadata", "namespace"), ==, "default");
    g_assert_true(json_object_object_get_ex(ev, "involvedObject", &obj));
    g_assert_false(json_object_object_get_ex(obj, "namespace", NULL));
    g_assert_cmpstr(str_at(ev, "involvedObject", "kind"), ==, "Node");
}

static void test_message_limit(Fixture *f, gconstpointer data)
{
    g_autoptr(KbRecorder) r = kb_recorder_new(f->client, "kube-batchd");
    g_autoptr(GString) big = g_string_new("x");
    g_autoptr(Json) ev = NULL;
    const char *msg;

    for (int i = 0; i < 600; i++)
        g_string_append(big, "\xc3\xa9"); /* U+00E9, two bytes */
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Long", "%s", big->str);
    drain(r);
    ev = request_body(f->server, 0);
    msg = str_at(ev, "message", NULL);
    /* 1024 bytes would split a character: cut one byte earlier. */
    g_assert_cmpuint(strlen(msg), ==, 1023);
    g_assert_true(g_utf8_validate(msg, -1, NULL));
}

static void test_server_error_counted(Fixture *f, gconstpointer data)
{
    g_autoptr(KbRecorder) r = kb_recorder_new(f->client, "kube-batchd");

    f->store.status = 403;
    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Scheduled", "bound");
    drain(r);
    g_assert_cmpuint(kb_recorder_failed(r), ==, 1);
    g_assert_cmpuint(kb_recorder_created(r), ==, 0);
}

static void test_free_in_flight(Fixture *f, gconstpointer data)
{
    KbRecorder *r = kb_recorder_new(f->client, "kube-batchd");

    kb_recorder_event(r, &pod_p1, "v1", "Pod", "Normal", "Scheduled", "bound");
    kb_recorder_free(r);
    sleep_loop(200);
    g_assert_cmpuint(kb_test_server_request_count(f->server), ==, 1);
}

#define ADD(path, fn)                                                                              \
    g_test_add("/kube/recorder/" path, Fixture, NULL, fixture_setup, fn, fixture_teardown)

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    ADD("post/fields", test_posts_event);
    ADD("post/cluster-scoped", test_cluster_scoped);
    ADD("post/message-limit", test_message_limit);
    ADD("post/server-error-counted", test_server_error_counted);
    ADD("aggregate/repeat-patches-count", test_repeat_patches_count);
    ADD("aggregate/in-flight-repeats-fold", test_repeats_in_flight_fold);
    ADD("aggregate/different-message", test_different_message_new_event);
    ADD("aggregate/window-expires", test_window_expires);
    ADD("aggregate/patch-404-recreates", test_patch_not_found_recreates);
    ADD("aggregate/lru-bound", test_lru_bound);
    ADD("rate-limit/burst", test_rate_limit_burst);
    ADD("rate-limit/refill", test_rate_limit_refill);
    ADD("free-in-flight", test_free_in_flight);
    return g_test_run();
}
