/*
 * Tests for informers (kube/kb-informer.c) against the scripted server (tests/lib/kb-test-server):
 * paged lists, watches and their resumption, relists after 410 with synthesized events, backoff,
 * stalls, malformed objects and missing resources; list pages through the page decoder
 * (kb_pod_list_decode_bytes) and its fallback to json-c.
 */
#include <stdlib.h>
#include <string.h>

#include "kube/kb-dra.h"
#include "kube/kb-informer.h"
#include "tests/lib/kb-test-server.h"

#define PODS_PATH "/api/v1/pods"
#define WAIT_MS   10000

typedef struct {
    KbTestServer *srv;
    KbClient *client;
    KbInformer *inf;
    GString *log; /* "add default/a@5;upd default/a@5->6;del default/b;synced;" */
    GString *bad; /* on_decode_error: "x: <message>;" */
    guint n_synced;
    guint n_missing;
    GMutex lock;    /* the scripts below are read by the server's threads */
    GQueue lists;   /* KbTestResponse: answers to list requests, in order; the last repeats */
    GQueue watches; /* answers to watch requests; when empty, a stream that stalls */
    gboolean fast;  /* start() adds the pod page decoder (tests registered with FAST) */
} Fixture;

#define FAST GINT_TO_POINTER(1)

/* ---- objects and events ------------------------------------------------------------------- */

static char *pod(const char *name, const char *rv)
{
    return g_strdup_printf("{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
                           "\"namespace\":\"default\",\"uid\":\"uid-%s\",\"resourceVersion\":"
                           "\"%s\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
                           name, name, rv);
}

/* The same pod name as another incarnation (another uid). */
static char *pod_uid(const char *name, const char *uid, const char *rv)
{
    return g_strdup_printf("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                           "\"default\",\"uid\":\"%s\",\"resourceVersion\":\"%s\"}}",
                           name, uid, rv);
}

/* An object the test decoder rejects (see test_decode). */
static char *bad_pod(const char *name, const char *rv)
{
    return g_strdup_printf("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                           "\"default\",\"uid\":\"uid-%s\",\"resourceVersion\":\"%s\"},"
                           "\"bad\":true}",
                           name, name, rv);
}

static char *event(const char *type, char *object)
{
    char *s = g_strdup_printf("{\"type\":\"%s\",\"object\":%s}\n", type, object);
    g_free(object);
    return s;
}

static char *bookmark(const char *rv)
{
    return g_strdup_printf("{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":"
                           "\"v1\",\"metadata\":{\"resourceVersion\":\"%s\"}}}\n",
                           rv);
}

static char *error_event(int code, const char *reason)
{
    return g_strdup_printf("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":"
                           "\"v1\",\"status\":\"Failure\",\"message\":\"%s\",\"reason\":\"%s\","
                           "\"code\":%d}}\n",
                           reason, reason, code);
}

/* A List body: @items is a NULL-terminated array of objects (consumed). */
static char *list_body(const char *rv, const char *cont, char **items)
{
    GString *s = g_string_new("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{");
    g_string_append_printf(s, "\"resourceVersion\":\"%s\"", rv);
    if (cont != NULL)
        g_string_append_printf(s, ",\"continue\":\"%s\",\"remainingItemCount\":1", cont);
    g_string_append(s, "},\"items\":[");
    for (guint i = 0; items != NULL && items[i] != NULL; i++) {
        g_string_append_printf(s, "%s%s", i > 0 ? "," : "", items[i]);
        g_free(items[i]);
    }
    g_string_append(s, "]}");
    return g_string_free(s, FALSE);
}

#define ITEMS(...) ((char *[]){__VA_ARGS__, NULL})

/* ---- fixture ------------------------------------------------------------------------------ */

static gboolean is_watch(const KbTestRequest *req)
{
    g_autofree char *w = kb_test_request_query_param(req, "watch");
    return w != NULL && strcmp(w, "false") != 0 && strcmp(w, "0") != 0;
}

static KbTestResponse *next_response(GQueue *q)
{
    if (q->length > 1)
        return g_queue_pop_head(q);
    if (q->length == 1)
        return kb_test_response_ref(q->head->data);
    return NULL;
}

static KbTestResponse *handle(const KbTestRequest *req, gpointer user_data)
{
    Fixture *fx = user_data;
    gboolean watch = is_watch(req);
    g_mutex_lock(&fx->lock);
    KbTestResponse *resp = next_response(watch ? &fx->watches : &fx->lists);
    g_mutex_unlock(&fx->lock);
    if (resp == NULL && watch) {
        resp = kb_test_response_new(200);
        kb_test_response_stall(resp);
    } else if (resp == NULL) {
        resp = kb_test_response_new_status(500, "InternalError", "no list scripted");
    }
    return resp;
}

static void push_list(Fixture *fx, guint status, char *body)
{
    g_mutex_lock(&fx->lock);
    g_queue_push_tail(&fx->lists, kb_test_response_new_body(status, body));
    g_mutex_unlock(&fx->lock);
    g_free(body);
}

static void push_list_status(Fixture *fx, guint status, const char *reason)
{
    g_mutex_lock(&fx->lock);
    g_queue_push_tail(&fx->lists, kb_test_response_new_status(status, reason, reason));
    g_mutex_unlock(&fx->lock);
}

static void push_watch(Fixture *fx, KbTestResponse *resp)
{
    g_mutex_lock(&fx->lock);
    g_queue_push_tail(&fx->watches, resp);
    g_mutex_unlock(&fx->lock);
}

/* A watch that sends @events (consumed, concatenated in one chunk) then ends cleanly, or stalls
 * when @stall. */
static KbTestResponse *watch_stream(gboolean stall, char **events)
{
    KbTestResponse *resp = kb_test_response_new(200);
    GString *s = g_string_new(NULL);
    for (guint i = 0; events != NULL && events[i] != NULL; i++) {
        g_string_append(s, events[i]);
        g_free(events[i]);
    }
    kb_test_response_add_chunk(resp, 0, s->str);
    g_string_free(s, TRUE);
    if (stall)
        kb_test_response_stall(resp);
    return resp;
}

static void on_add(gpointer obj, gpointer user_data)
{
    Fixture *fx = user_data;
    const KbObjectMeta *m = obj;
    g_autofree char *key = kb_object_key(m);
    g_assert_nonnull(kb_informer_get(fx->inf, m->namespace_, m->name));
    g_string_append_printf(fx->log, "add %s@%s;", key, m->resource_version);
}

static void on_update(gpointer old_obj, gpointer new_obj, gpointer user_data)
{
    Fixture *fx = user_data;
    const KbObjectMeta *o = old_obj;
    const KbObjectMeta *m = new_obj;
    g_autofree char *key = kb_object_key(m);
    g_assert_true(kb_informer_get(fx->inf, m->namespace_, m->name) == new_obj);
    g_string_append_printf(fx->log, "upd %s@%s->%s;", key, o->resource_version,
                           m->resource_version);
}

static void on_delete(gpointer obj, gpointer user_data)
{
    Fixture *fx = user_data;
    const KbObjectMeta *m = obj;
    g_autofree char *key = kb_object_key(m);
    /* the store already forgot it, and its uid */
    g_assert_true(kb_informer_get(fx->inf, m->namespace_, m->name) != obj);
    g_assert_true(m->uid == NULL || kb_informer_get_by_uid(fx->inf, m->uid) != obj);
    g_string_append_printf(fx->log, "del %s;", key);
}

static void on_synced(gpointer user_data)
{
    Fixture *fx = user_data;
    fx->n_synced++;
    g_string_append(fx->log, "synced;");
}

static void on_missing(gpointer user_data)
{
    Fixture *fx = user_data;
    fx->n_missing++;
    g_string_append(fx->log, "missing;");
}

/* The item as received and the decoder's error reach the caller, e.g. for an Event. */
static void on_decode_error(json_object *obj, const GError *error, gpointer user_data)
{
    Fixture *fx = user_data;
    json_object *meta = NULL, *name = NULL;
    gboolean named = json_object_object_get_ex(obj, "metadata", &meta) &&
                     json_object_object_get_ex(meta, "name", &name);
    g_string_append_printf(fx->bad, "%s: %s;", named ? json_object_get_string(name) : "(no name)",
                           error->message);
}

static const KbInformerHandlers handlers = {
        .on_add = on_add,
        .on_update = on_update,
        .on_delete = on_delete,
        .on_synced = on_synced,
        .on_missing = on_missing,
        .on_decode_error = on_decode_error,
};

/* Metadata only; an object with a top-level "bad" member is malformed. */
static gpointer test_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    json_object *bad = NULL;
    if (json_object_object_get_ex(obj, "bad", &bad)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "bad: unexpected field");
        return NULL;
    }
    return kb_meta_object_decode(obj, keep_raw, error);
}

static void fixture_setup(Fixture *fx, gconstpointer data)
{
    fx->fast = data == FAST;
    g_mutex_init(&fx->lock);
    g_queue_init(&fx->lists);
    g_queue_init(&fx->watches);
    fx->log = g_string_new(NULL);
    fx->bad = g_string_new(NULL);
    fx->srv = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_set_handler(fx->srv, "GET", "/api/v1/*", handle, fx, NULL);
    KbConfig config = {.server = (char *)kb_test_server_url(fx->srv)};
    g_autoptr(GError) error = NULL;
    fx->client = kb_client_new(&config, &error);
    g_assert_no_error(error);
}

static void fixture_teardown(Fixture *fx, gconstpointer data)
{
    kb_informer_free(fx->inf);
    kb_client_free(fx->client);
    kb_test_server_free(fx->srv);
    g_queue_clear_full(&fx->lists, (GDestroyNotify)kb_test_response_unref);
    g_queue_clear_full(&fx->watches, (GDestroyNotify)kb_test_response_unref);
    g_string_free(fx->log, TRUE);
    g_string_free(fx->bad, TRUE);
    g_mutex_clear(&fx->lock);
}

static KbInformer *start(Fixture *fx, const KbInformerOptions *opts)
{
    KbInformerOptions o = {.type = &kb_type_pods, .decode = test_decode};
    if (opts != NULL)
        o = *opts;
    if (fx->fast && o.decode_page == NULL)
        o.decode_page = kb_pod_list_decode_bytes;
    fx->inf = kb_informer_new(fx->client, &o, &handlers, fx);
    kb_informer_set_backoff(fx->inf, 20, 200);
    kb_informer_set_missing_retry(fx->inf, 50);
    kb_informer_start(fx->inf);
    return fx->inf;
}

typedef gboolean (*Cond)(Fixture *fx, gconstpointer arg);

/* Iterate the default main context until @cond holds; FALSE after WAIT_MS. */
static gboolean run_until(Fixture *fx, Cond cond, gconstpointer arg)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_MS * 1000;
    while (!cond(fx, arg)) {
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        if (!g_main_context_iteration(NULL, FALSE))
            g_usleep(1000);
    }
    return TRUE;
}

static gboolean log_has(Fixture *fx, gconstpointer s)
{
    return strstr(fx->log->str, s) != NULL;
}

/* The @n-th (from 0) watch or list request, or NULL. */
static const KbTestRequest *nth_request(Fixture *fx, gboolean watch, guint n)
{
    guint count = kb_test_server_request_count(fx->srv);
    for (guint i = 0; i < count; i++) {
        const KbTestRequest *req = kb_test_server_request(fx->srv, i);
        if (is_watch(req) == watch && n-- == 0)
            return req;
    }
    return NULL;
}

static gboolean has_watch_request(Fixture *fx, gconstpointer n)
{
    return nth_request(fx, TRUE, GPOINTER_TO_UINT(n)) != NULL;
}

static gboolean has_list_request(Fixture *fx, gconstpointer n)
{
    return nth_request(fx, FALSE, GPOINTER_TO_UINT(n)) != NULL;
}

static gboolean synced_times(Fixture *fx, gconstpointer n)
{
    return fx->n_synced >= GPOINTER_TO_UINT(n);
}

static void wait_log(Fixture *fx, const char *s)
{
    if (!run_until(fx, log_has, s))
        g_error("timed out waiting for \"%s\"; log: %s", s, fx->log->str);
}

static void wait_watch(Fixture *fx, guint n)
{
    if (!run_until(fx, has_watch_request, GUINT_TO_POINTER(n)))
        g_error("timed out waiting for watch request %u; log: %s", n, fx->log->str);
}

static void wait_list(Fixture *fx, guint n)
{
    if (!run_until(fx, has_list_request, GUINT_TO_POINTER(n)))
        g_error("timed out waiting for list request %u; log: %s", n, fx->log->str);
}

static char *param(const KbTestRequest *req, const char *name)
{
    g_assert_nonnull(req);
    return kb_test_request_query_param(req, name);
}

static void assert_param(const KbTestRequest *req, const char *name, const char *want)
{
    g_autofree char *got = param(req, name);
    g_assert_cmpstr(got, ==, want);
}

/* Let the loop run a little so that anything wrongly pending would show up. */
static void settle(Fixture *fx, guint ms)
{
    gint64 until = g_get_monotonic_time() + ms * 1000;
    while (g_get_monotonic_time() < until) {
        if (!g_main_context_iteration(NULL, FALSE))
            g_usleep(1000);
    }
}

/* The usual start: a list of a (rv 5) and b (rv 6) at resourceVersion 10. */
static void push_initial_list(Fixture *fx)
{
    push_list(fx, 200, list_body("10", NULL, ITEMS(pod("a", "5"), pod("b", "6"))));
}

#define INITIAL_LOG "add default/a@5;add default/b@6;synced;"

/* ---- list --------------------------------------------------------------------------------- */

static void test_list_three_pages(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, list_body("100", "c1", ITEMS(pod("p1", "1"), pod("p2", "2"))));
    push_list(fx, 200, list_body("100", "c2", ITEMS(pod("p3", "3"), pod("p4", "4"))));
    push_list(fx, 200, list_body("100", NULL, ITEMS(pod("p5", "5"))));
    KbInformerOptions opts = {.type = &kb_type_pods, .page_size = 2};
    start(fx, &opts);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==,
                    "add default/p1@1;add default/p2@2;add default/p3@3;add default/p4@4;"
                    "add default/p5@5;synced;");
    g_assert_true(kb_informer_has_synced(fx->inf));
    g_assert_cmpuint(kb_informer_size(fx->inf), ==, 5);
    /* three pages: limit on each, continue tokens on the later ones */
    const KbTestRequest *l0 = nth_request(fx, FALSE, 0);
    g_assert_cmpstr(l0->path, ==, PODS_PATH);
    assert_param(l0, "limit", "2");
    assert_param(l0, "continue", NULL);
    assert_param(nth_request(fx, FALSE, 1), "continue", "c1");
    /* no page decoder: every list reads etcd, page by page (see assert_list_rvs) */
    for (guint i = 0; i < 3; i++)
        assert_param(nth_request(fx, FALSE, i), "resourceVersion", NULL);
    assert_param(nth_request(fx, FALSE, 2), "continue", "c2");
    assert_param(nth_request(fx, FALSE, 2), "limit", "2");
    /* then a watch from the list's resourceVersion, with bookmarks and a 5-10 min timeout */
    wait_watch(fx, 0);
    const KbTestRequest *w = nth_request(fx, TRUE, 0);
    g_assert_cmpstr(w->path, ==, PODS_PATH);
    assert_param(w, "resourceVersion", "100");
    assert_param(w, "allowWatchBookmarks", "true");
    g_autofree char *timeout = param(w, "timeoutSeconds");
    g_assert_nonnull(timeout);
    g_assert_cmpint(atoi(timeout), >=, 300);
    g_assert_cmpint(atoi(timeout), <=, 600);
    g_assert_null(nth_request(fx, FALSE, 3));
    g_assert_cmpuint(kb_informer_relists(fx->inf), ==, 0);
    g_assert_cmpstr(kb_informer_resource_version(fx->inf), ==, "100");
}

static void test_list_default_page_size(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    start(fx, NULL);
    wait_log(fx, "synced;");
    assert_param(nth_request(fx, FALSE, 0), "limit", "500");
}

static void test_list_namespace_and_selectors(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    KbInformerOptions opts = {
            .type = &kb_type_pods,
            .namespace_ = "default",
            .label_selector = "app=x,tier!=db",
            .field_selector = "spec.schedulerName=kube-batchd",
    };
    start(fx, &opts);
    wait_watch(fx, 0);
    for (int watch = 0; watch <= 1; watch++) {
        const KbTestRequest *req = nth_request(fx, watch, 0);
        g_assert_cmpstr(req->path, ==, "/api/v1/namespaces/default/pods");
        assert_param(req, "labelSelector", "app=x,tier!=db");
        assert_param(req, "fieldSelector", "spec.schedulerName=kube-batchd");
    }
}

/* Store lookups by key, by uid, the borrowed list; cluster-scoped keys. */
static void test_store_lookups(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    start(fx, NULL);
    wait_log(fx, "synced;");
    KbObjectMeta *a = kb_informer_get(fx->inf, "default", "a");
    g_assert_nonnull(a);
    g_assert_cmpstr(a->name, ==, "a");
    g_assert_true(kb_informer_get_by_uid(fx->inf, "uid-a") == a);
    g_assert_null(kb_informer_get(fx->inf, "other", "a"));
    g_assert_null(kb_informer_get(fx->inf, NULL, "a"));
    g_assert_null(kb_informer_get_by_uid(fx->inf, "uid-zz"));
    g_assert_null(kb_informer_get_by_uid(fx->inf, NULL));
    g_autoptr(GPtrArray) all = kb_informer_list(fx->inf);
    g_assert_cmpuint(all->len, ==, 2);
    g_assert_true(g_ptr_array_find(all, a, NULL));
    /* records are reference counted: a reference outlives the store's */
    KbObjectMeta *kept = kb_object_ref(a);
    kb_informer_free(g_steal_pointer(&fx->inf));
    g_assert_cmpstr(kept->name, ==, "a");
    kb_object_unref(kept);
}

static void test_list_server_error_backoff(Fixture *fx, gconstpointer data)
{
    push_list_status(fx, 500, "InternalError");
    push_list_status(fx, 503, "ServiceUnavailable");
    push_initial_list(fx);
    start(fx, NULL);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG);
    g_assert_nonnull(nth_request(fx, FALSE, 2));
    g_assert_null(nth_request(fx, FALSE, 3));
    g_assert_cmpuint(kb_informer_relists(fx->inf), ==, 0);
}

/* The backoff grows: with 20 ms initial and 200 ms cap, five failures take at least
 * 0.8 * (20 + 40 + 80 + 160) ms; and it does not hammer the server. */
static void test_list_backoff_grows(Fixture *fx, gconstpointer data)
{
    for (int i = 0; i < 5; i++)
        push_list_status(fx, 500, "InternalError");
    push_initial_list(fx);
    gint64 t0 = g_get_monotonic_time();
    start(fx, NULL);
    wait_log(fx, "synced;");
    gint64 elapsed_ms = (g_get_monotonic_time() - t0) / 1000;
    g_assert_cmpint(elapsed_ms, >=, (gint64)(0.8 * (20 + 40 + 80 + 160 + 200)));
    g_assert_cmpuint(kb_test_server_request_count(fx->srv), <=, 7);
}

/* Many failures in a row: the delay stops at the cap (+20% jitter); a success resets it. */
static void test_list_backoff_capped_and_reset(Fixture *fx, gconstpointer data)
{
    for (int i = 0; i < 8; i++)
        push_list_status(fx, 503, "ServiceUnavailable");
    push_initial_list(fx);
    start(fx, NULL);
    wait_log(fx, "synced;");
    guint max = kb_informer_max_retry_delay_ms(fx->inf);
    g_assert_cmpuint(max, >=, (guint)(0.8 * 200));
    g_assert_cmpuint(max, <=, (guint)(1.2 * 200));
    /* The default cap is a few seconds, not client-go's 30 s. */
    g_assert_cmpuint(KB_INFORMER_DEFAULT_BACKOFF_MAX_MS, <=, 5000);
}

static void test_list_missing_404(Fixture *fx, gconstpointer data)
{
    for (int i = 0; i < 3; i++)
        push_list_status(fx, 404, "NotFound");
    push_initial_list(fx);
    start(fx, NULL);
    wait_log(fx, "synced;");
    /* told once, retried until the resource appeared */
    g_assert_cmpstr(fx->log->str, ==, "missing;" INITIAL_LOG);
    g_assert_cmpuint(fx->n_missing, ==, 1);
    g_assert_nonnull(nth_request(fx, FALSE, 3));
}

/* An expired continue token (410 on a later page) restarts the list from the first page. */
static void test_list_continue_expired(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, list_body("100", "c1", ITEMS(pod("p1", "1"))));
    push_list_status(fx, 410, "Expired");
    push_list(fx, 200, list_body("120", "c9", ITEMS(pod("p1", "1"))));
    push_list(fx, 200, list_body("120", NULL, ITEMS(pod("p2", "2"))));
    KbInformerOptions opts = {.type = &kb_type_pods, .page_size = 1};
    start(fx, &opts);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, "add default/p1@1;add default/p2@2;synced;");
    assert_param(nth_request(fx, FALSE, 1), "continue", "c1");
    assert_param(nth_request(fx, FALSE, 2), "continue", NULL);
    assert_param(nth_request(fx, FALSE, 3), "continue", "c9");
    wait_watch(fx, 0);
    assert_param(nth_request(fx, TRUE, 0), "resourceVersion", "120");
}

/* ---- watch -------------------------------------------------------------------------------- */

static void test_watch_add_update_delete(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", pod("c", "11")),
                                            event("MODIFIED", pod("a", "12")),
                                            event("DELETED", pod("b", "13")))));
    start(fx, NULL);
    wait_log(fx, "del default/b;");
    g_assert_cmpstr(fx->log->str, ==,
                    INITIAL_LOG "add default/c@11;upd default/a@5->12;del default/b;");
    g_assert_cmpuint(kb_informer_size(fx->inf), ==, 2);
    g_assert_null(kb_informer_get(fx->inf, "default", "b"));
    g_assert_null(kb_informer_get_by_uid(fx->inf, "uid-b"));
    KbObjectMeta *a = kb_informer_get(fx->inf, "default", "a");
    g_assert_cmpstr(a->resource_version, ==, "12");
    g_assert_true(kb_informer_get_by_uid(fx->inf, "uid-a") == a);
    g_assert_cmpuint(kb_informer_events(fx->inf), ==, 3);
    g_assert_cmpstr(kb_informer_resource_version(fx->inf), ==, "13");
}

/* Events for one object arrive split across chunks with delays. */
static void test_watch_events_split_across_chunks(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    g_autofree char *e1 = event("ADDED", pod("c", "11"));
    g_autofree char *e2 = event("MODIFIED", pod("c", "12"));
    KbTestResponse *w = kb_test_response_new(200);
    g_autofree char *head = g_strndup(e1, 17);
    g_autofree char *rest = g_strconcat(e1 + 17, e2, NULL);
    g_autofree char *tail = g_strdup(rest + strlen(rest) - 3);
    rest[strlen(rest) - 3] = '\0';
    kb_test_response_add_chunk(w, 0, head);
    kb_test_response_add_chunk(w, 30, rest);
    kb_test_response_add_chunk(w, 30, tail);
    kb_test_response_stall(w);
    push_watch(fx, w);
    start(fx, NULL);
    wait_log(fx, "upd default/c@11->12;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG "add default/c@11;upd default/c@11->12;");
}

/* Repeats (same uid and resourceVersion) are dropped; ADDED for a stored key is an update. */
static void test_watch_repeats_ignored(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_watch(fx,
               watch_stream(TRUE,
                            ITEMS(event("ADDED", pod("a", "5")), event("MODIFIED", pod("b", "6")),
                                  event("ADDED", pod("c", "11")), event("ADDED", pod("c", "11")),
                                  event("ADDED", pod("a", "12")), event("MODIFIED", pod("a", "12")),
                                  event("ADDED", pod("end", "13")))));
    start(fx, NULL);
    wait_log(fx, "add default/end@13;");
    g_assert_cmpstr(fx->log->str, ==,
                    INITIAL_LOG "add default/c@11;upd default/a@5->12;add default/end@13;");
    g_assert_cmpuint(kb_informer_events(fx->inf), ==, 3);
}

static void test_watch_delete_unknown_ignored(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_watch(fx, watch_stream(TRUE, ITEMS(event("DELETED", pod("zz", "11")),
                                            event("DELETED", pod("b", "12")),
                                            event("DELETED", pod("b", "12")),
                                            event("ADDED", pod("end", "13")))));
    start(fx, NULL);
    wait_log(fx, "add default/end@13;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG "del default/b;add default/end@13;");
}

/* A key that now names another object (other uid): delete the old one, add the new one; a
 * late DELETED of the old incarnation does not remove the new one. */
static void test_watch_recreated_object(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", pod_uid("a", "uid-a2", "11")),
                                            event("DELETED", pod_uid("a", "uid-a", "12")),
                                            event("ADDED", pod("end", "13")))));
    start(fx, NULL);
    wait_log(fx, "add default/end@13;");
    g_assert_cmpstr(fx->log->str, ==,
                    INITIAL_LOG "del default/a;add default/a@11;add default/end@13;");
    g_assert_null(kb_informer_get_by_uid(fx->inf, "uid-a"));
    g_assert_true(kb_informer_get_by_uid(fx->inf, "uid-a2") ==
                  kb_informer_get(fx->inf, "default", "a"));
}

/* A watch cut in the middle of an event resumes from the last complete event: nothing lost,
 * nothing twice. */
static void test_watch_cut_resumes(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    g_autofree char *e1 = event("ADDED", pod("c", "11"));
    g_autofree char *e2 = event("MODIFIED", pod("a", "12"));
    g_autofree char *e3 = event("DELETED", pod("b", "13"));
    g_autofree char *all = g_strconcat(e1, e2, e3, NULL);
    KbTestResponse *w1 = kb_test_response_new(200);
    kb_test_response_add_chunk(w1, 0, all);
    kb_test_response_cut_after(w1, strlen(e1) + strlen(e2) + strlen(e3) / 2);
    push_watch(fx, w1);
    push_watch(fx, watch_stream(TRUE, ITEMS(event("DELETED", pod("b", "13")),
                                            event("ADDED", pod("d", "14")))));
    start(fx, NULL);
    wait_log(fx, "add default/d@14;");
    g_assert_cmpstr(fx->log->str, ==,
                    INITIAL_LOG "add default/c@11;upd default/a@5->12;del default/b;"
                                "add default/d@14;");
    assert_param(nth_request(fx, TRUE, 0), "resourceVersion", "10");
    assert_param(nth_request(fx, TRUE, 1), "resourceVersion", "12");
    g_assert_null(nth_request(fx, FALSE, 1)); /* no relist */
}

/* A watch that ends cleanly (server timeout) is resumed at once from the last event. */
static void test_watch_clean_end_resumes(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_watch(fx, watch_stream(FALSE, ITEMS(event("ADDED", pod("c", "11")))));
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", pod("d", "14")))));
    start(fx, NULL);
    wait_log(fx, "add default/d@14;");
    assert_param(nth_request(fx, TRUE, 1), "resourceVersion", "11");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG "add default/c@11;add default/d@14;");
    g_assert_null(nth_request(fx, FALSE, 1));
}

static void test_watch_bookmark_advances_rv(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_watch(fx, watch_stream(FALSE, ITEMS(event("ADDED", pod("c", "11")), bookmark("50"))));
    start(fx, NULL);
    wait_watch(fx, 1);
    assert_param(nth_request(fx, TRUE, 1), "resourceVersion", "50");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG "add default/c@11;");
    g_assert_cmpuint(kb_informer_events(fx->inf), ==, 1);
}

/* A stream that stops sending past its timeoutSeconds is detected by the client's idle timeout
 * (1 s here, on top of the watch's 1 s) and restarted. */
static void test_watch_stall_restarts(Fixture *fx, gconstpointer data)
{
    kb_client_set_stream_idle_timeout(fx->client, 1);
    push_initial_list(fx);
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", pod("c", "11")))));
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", pod("d", "14")))));
    start(fx, NULL);
    kb_informer_set_watch_timeout(fx->inf, 1, 1); /* before the list's answer starts the watch */
    wait_log(fx, "add default/d@14;");
    assert_param(nth_request(fx, TRUE, 1), "resourceVersion", "11");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG "add default/c@11;add default/d@14;");
}

/* A non-410 ERROR event rewatches from the same resourceVersion, without relisting. */
static void test_watch_error_event_rewatches(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", pod("c", "11")),
                                            error_event(500, "InternalError"),
                                            event("ADDED", pod("never", "12")))));
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", pod("d", "14")))));
    start(fx, NULL);
    wait_log(fx, "add default/d@14;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG "add default/c@11;add default/d@14;");
    assert_param(nth_request(fx, TRUE, 1), "resourceVersion", "11");
    g_assert_null(nth_request(fx, FALSE, 1));
}

/* A watch request that fails (500) backs off and rewatches from the same point. */
static void test_watch_http_error_rewatches(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_watch(fx, kb_test_response_new_status(500, "InternalError", "etcd unavailable"));
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", pod("d", "14")))));
    start(fx, NULL);
    wait_log(fx, "add default/d@14;");
    assert_param(nth_request(fx, TRUE, 1), "resourceVersion", "10");
    g_assert_null(nth_request(fx, FALSE, 1));
}

/* ---- relist after 410 ---------------------------------------------------------------------- */

/*
 * The first two lists' parameters. With a page decoder, as client-go's reflector: the first list
 * at "0", the relist at the last resourceVersion seen (@relist_rv) and without a limit, both for
 * the API server's watch cache to answer in one piece. Without one (json-c would build a tree of
 * the whole list), both read etcd page by page.
 */
static void assert_list_rvs(Fixture *fx, const char *relist_rv)
{
    gboolean page_decoder = kb_informer_fast_pages(fx->inf) > 0; /* it decoded pages */
    assert_param(nth_request(fx, FALSE, 0), "resourceVersion", page_decoder ? "0" : NULL);
    assert_param(nth_request(fx, FALSE, 0), "limit", "500");
    assert_param(nth_request(fx, FALSE, 1), "resourceVersion", page_decoder ? relist_rv : NULL);
    assert_param(nth_request(fx, FALSE, 1), "limit", page_decoder ? NULL : "500");
}

/* The relist: a (5 -> 20) changed, b vanished, c new, plus d unchanged since the first list. */
static void push_relist(Fixture *fx)
{
    push_list(fx, 200, list_body("30", NULL, ITEMS(pod("a", "20"), pod("c", "21"))));
}

static void assert_relisted(Fixture *fx)
{
    wait_log(fx, "add default/c@21;synced;");
    g_assert_cmpstr(fx->log->str, ==,
                    INITIAL_LOG "del default/b;upd default/a@5->20;add default/c@21;synced;");
    g_assert_cmpuint(fx->n_synced, ==, 2);
    g_assert_cmpuint(kb_informer_relists(fx->inf), ==, 1);
    g_assert_cmpuint(kb_informer_size(fx->inf), ==, 2);
    wait_watch(fx, 1);
    assert_param(nth_request(fx, TRUE, 1), "resourceVersion", "30");
    assert_list_rvs(fx, "10");
}

static void test_relist_gone_http(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_relist(fx);
    push_watch(fx, kb_test_response_new_status(410, "Expired", "too old resource version: 10"));
    start(fx, NULL);
    assert_relisted(fx);
}

static void test_relist_gone_in_stream(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_relist(fx);
    push_watch(fx, watch_stream(TRUE, ITEMS(error_event(410, "Expired"),
                                            event("ADDED", pod("never", "99")))));
    start(fx, NULL);
    assert_relisted(fx);
    g_assert_null(kb_informer_get(fx->inf, "default", "never"));
}

/* A relist that finds nothing changed calls nothing but on_synced. */
static void test_relist_unchanged_quiet(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_watch(fx, kb_test_response_new_status(410, "Expired", "too old"));
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", pod("end", "13")))));
    start(fx, NULL);
    wait_log(fx, "add default/end@13;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG "synced;add default/end@13;");
}

/* A relist at a resourceVersion the server refuses (410: compacted; 504 ResourceVersionTooLarge:
 * its watch cache is behind) is sent again at once as a consistent read, paged; the one after a
 * successful list goes back to the watch cache. */
static void assert_refused_then_consistent(Fixture *fx, KbTestResponse *refusal)
{
    push_initial_list(fx);
    g_mutex_lock(&fx->lock);
    g_queue_push_tail(&fx->lists, refusal);
    g_mutex_unlock(&fx->lock);
    push_relist(fx);
    push_watch(fx, kb_test_response_new_status(410, "Expired", "too old resource version: 10"));
    push_watch(fx, kb_test_response_new_status(410, "Expired", "too old resource version: 30"));
    push_list(fx, 200, list_body("40", NULL, ITEMS(pod("a", "20"), pod("c", "21"))));
    start(fx, NULL);
    wait_list(fx, 3);
    assert_param(nth_request(fx, FALSE, 1), "resourceVersion", "10");
    assert_param(nth_request(fx, FALSE, 1), "limit", NULL);
    assert_param(nth_request(fx, FALSE, 2), "resourceVersion", NULL);
    assert_param(nth_request(fx, FALSE, 2), "limit", "500");
    assert_param(nth_request(fx, FALSE, 3), "resourceVersion", "30");
    assert_param(nth_request(fx, FALSE, 3), "limit", NULL);
    if (!run_until(fx, synced_times, GUINT_TO_POINTER(3)))
        g_error("timed out waiting for the third list; log: %s", fx->log->str);
    g_assert_cmpstr(fx->log->str, ==,
                    INITIAL_LOG
                    "del default/b;upd default/a@5->20;add default/c@21;synced;synced;");
    /* the refusal was no failure: no backoff was chosen for it */
    g_assert_cmpuint(kb_informer_max_retry_delay_ms(fx->inf), ==, 0);
}

static void test_relist_rv_expired(Fixture *fx, gconstpointer data)
{
    assert_refused_then_consistent(
            fx, kb_test_response_new_status(410, "Expired", "too old resource version: 10 (25)"));
}

static void test_relist_rv_too_large(Fixture *fx, gconstpointer data)
{
    /* kube-apiserver 1.19's answer, causes and all */
    KbTestResponse *resp = kb_test_response_new_body(
            504, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                 "\"Failure\",\"message\":\"Timeout: Too large resource version: 10, current: "
                 "9\",\"reason\":\"Timeout\",\"details\":{\"causes\":[{\"reason\":"
                 "\"ResourceVersionTooLarge\",\"message\":\"Too large resource version\"}],"
                 "\"retryAfterSeconds\":1},\"code\":504}");
    assert_refused_then_consistent(fx, resp);
}

/* Any other 504 is a failure like a 500: backed off, then the same list again. */
static void test_relist_other_timeout(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_list_status(fx, 504, "Timeout");
    push_relist(fx);
    push_watch(fx, kb_test_response_new_status(410, "Expired", "too old resource version: 10"));
    start(fx, NULL);
    assert_relisted(fx);
    assert_param(nth_request(fx, FALSE, 2), "resourceVersion", "10");
    g_assert_cmpuint(kb_informer_max_retry_delay_ms(fx->inf), >, 0);
}

/* A server that pages a "0" list has no watch cache for it (client-go's paginatedResult): the
 * later pages carry only their continue token, and every later list reads etcd in pages. */
static void test_relist_server_pages_rv0(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, list_body("10", "c1", ITEMS(pod("a", "5"))));
    push_list(fx, 200, list_body("10", NULL, ITEMS(pod("b", "6"))));
    push_relist(fx);
    push_watch(fx, kb_test_response_new_status(410, "Expired", "too old resource version: 10"));
    start(fx, NULL);
    wait_log(fx, "add default/c@21;synced;");
    assert_param(nth_request(fx, FALSE, 0), "resourceVersion", "0");
    assert_param(nth_request(fx, FALSE, 1), "resourceVersion", NULL);
    assert_param(nth_request(fx, FALSE, 1), "continue", "c1");
    assert_param(nth_request(fx, FALSE, 2), "resourceVersion", NULL);
    assert_param(nth_request(fx, FALSE, 2), "continue", NULL);
    assert_param(nth_request(fx, FALSE, 2), "limit", "500");
}

/* ---- malformed input --------------------------------------------------------------------- */

static void test_malformed_objects_skipped(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200,
              list_body("10", NULL, ITEMS(pod("a", "5"), bad_pod("x", "6"), pod("b", "7"))));
    push_watch(fx, watch_stream(TRUE, ITEMS(event("MODIFIED", bad_pod("a", "11")),
                                            g_strdup("{\"type\":\"ADDED\",\"object\":{\n"),
                                            g_strdup("{\"type\":\"SOMETHING\",\"object\":{}}\n"),
                                            event("ADDED", pod("c", "12")))));
    start(fx, NULL);
    wait_log(fx, "add default/c@12;");
    g_assert_cmpstr(fx->log->str, ==, "add default/a@5;add default/b@7;synced;add default/c@12;");
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), ==, 4);
    /* the two malformed objects reach the handler; the two broken events have no object */
    g_auto(GStrv) bad = g_strsplit(fx->bad->str, ";", -1);
    g_assert_cmpuint(g_strv_length(bad), ==, 3); /* two entries and the empty tail */
    g_assert_true(g_str_has_prefix(bad[0], "x: "));
    g_assert_true(g_str_has_prefix(bad[1], "a: "));
    /* the malformed update left the stored a as it was */
    KbObjectMeta *a = kb_informer_get(fx->inf, "default", "a");
    g_assert_cmpstr(a->resource_version, ==, "5");
    g_assert_cmpstr(kb_informer_resource_version(fx->inf), ==, "12");
}

/* A list page that is not a List is an error: back off and list again. */
static void test_list_not_a_list(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, g_strdup("{\"kind\":\"Status\"}"));
    push_list(fx, 200, g_strdup("{\"items\":{\"a\":1}}"));
    push_initial_list(fx);
    start(fx, NULL);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG);
    g_assert_nonnull(nth_request(fx, FALSE, 2));
    /* the Status has no item (json-c directly), the items object fails the page decoder */
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, fx->fast ? 1 : 0);
    g_assert_cmpuint(kb_informer_fallback_pages(fx->inf), ==, fx->fast ? 1 : 0);
}

/* A page over the byte limit is refused (and the limit applies per page). */
static void test_list_page_over_limit(Fixture *fx, gconstpointer data)
{
    char *big[12] = {NULL};
    for (int i = 0; i < 11; i++) {
        g_autofree char *name = g_strdup_printf("big%d", i);
        big[i] = pod(name, "1");
    }
    g_autofree char *big_body = list_body("10", NULL, big);
    g_assert_cmpuint(strlen(big_body), >, 1500);
    push_list(fx, 200, g_strdup(big_body));
    push_initial_list(fx);
    KbInformerOptions opts = {.type = &kb_type_pods,
                              .decode = test_decode,
                              .decode_page = fx->fast ? kb_pod_list_decode_bytes : NULL};
    fx->inf = kb_informer_new(fx->client, &opts, &handlers, fx);
    kb_informer_set_backoff(fx->inf, 20, 200);
    kb_informer_set_max_page_bytes(fx->inf, 1500);
    kb_informer_start(fx->inf);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG);
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, fx->fast ? 1 : 0);
    /* With a page decoder the first list, at "0", is what a watch cache answers in one piece:
     * the next one reads etcd, in pages (and so does every later list). */
    assert_param(nth_request(fx, FALSE, 0), "resourceVersion", fx->fast ? "0" : NULL);
    assert_param(nth_request(fx, FALSE, 1), "resourceVersion", NULL);
    assert_param(nth_request(fx, FALSE, 1), "limit", "500");
}

/* Malformed, truncated and cut pages are errors: back off and list again from the start. */
static void test_list_malformed_pages(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, g_strdup("{\"metadata\":{},\"items\":["));
    push_list(fx, 200, g_strdup("{\"metadata\":{},\"items\":[]} {\"x\":1}"));
    push_list(fx, 200, g_strdup("{\"metadata\":{},\"items\":[}"));
    g_autofree char *good = list_body("10", NULL, ITEMS(pod("a", "5"), pod("b", "6")));
    KbTestResponse *cut = kb_test_response_new(200);
    kb_test_response_add_chunk(cut, 0, good);
    kb_test_response_cut_after(cut, strlen(good) / 2);
    g_mutex_lock(&fx->lock);
    g_queue_push_tail(&fx->lists, cut);
    g_mutex_unlock(&fx->lock);
    push_list(fx, 200, g_strdup(good));
    start(fx, NULL);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG);
    g_assert_nonnull(nth_request(fx, FALSE, 4));
    g_assert_null(nth_request(fx, FALSE, 5));
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, fx->fast ? 1 : 0);
}

/* A relist that fails half-way keeps the store and the resume point as they were. */
static void test_relist_partial_failure_keeps_store(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, list_body("10", NULL, ITEMS(pod("a", "5"), pod("b", "6"))));
    push_list(fx, 200, list_body("30", "c1", ITEMS(pod("a", "20"))));
    push_list_status(fx, 500, "InternalError");
    push_list(fx, 200, list_body("40", NULL, ITEMS(pod("a", "20"), pod("b", "6"))));
    push_watch(fx, kb_test_response_new_status(410, "Expired", "too old"));
    KbInformerOptions opts = {.type = &kb_type_pods, .decode = test_decode, .page_size = 1};
    start(fx, &opts);
    wait_list(fx, 2);
    /* after the failed page: nothing delivered, nothing forgotten */
    settle(fx, 5);
    g_assert_cmpstr(kb_informer_resource_version(fx->inf), ==, "10");
    g_assert_cmpuint(kb_informer_size(fx->inf), ==, 2);
    wait_log(fx, "upd default/a@5->20;synced;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG "upd default/a@5->20;synced;");
    wait_watch(fx, 1);
    assert_param(nth_request(fx, TRUE, 1), "resourceVersion", "40");
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, fx->fast ? 3 : 0);
}

/* With no decode function the store keeps KbObjectMeta records. */
static void test_default_meta_decode(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    KbInformerOptions opts = {.type = &kb_type_pods};
    start(fx, &opts);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG);
    KbObjectMeta *b = kb_informer_get(fx->inf, "default", "b");
    g_assert_cmpstr(b->uid, ==, "uid-b");
}

/* Freeing an informer while its list request is still out must not call back into it. */
static void test_free_while_listing(Fixture *fx, gconstpointer data)
{
    KbTestResponse *slow = kb_test_response_new_body(200, "{\"metadata\":{},\"items\":[]}");
    kb_test_response_set_delay(slow, 200);
    g_mutex_lock(&fx->lock);
    g_queue_push_tail(&fx->lists, slow);
    g_mutex_unlock(&fx->lock);
    start(fx, NULL);
    wait_list(fx, 0);
    kb_informer_free(g_steal_pointer(&fx->inf));
    settle(fx, 400);
    g_assert_cmpstr(fx->log->str, ==, "");
}

/* Freeing an informer with a watch open cancels it. */
static void test_free_while_watching(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    start(fx, NULL);
    wait_watch(fx, 0);
    settle(fx, 50);
    kb_informer_free(g_steal_pointer(&fx->inf));
    settle(fx, 50);
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG);
}

/* ---- list pages through the page decoder ------------------------------------------------ */

/* A pod with the fields the scheduler reads, for comparing the two decoders' records. */
static char *rich_pod(const char *name, const char *rv)
{
    return g_strdup_printf(
            "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
            "\"default\",\"uid\":\"uid-%s\",\"resourceVersion\":\"%s\",\"labels\":{\"app\":"
            "\"train\"},\"annotations\":{\"scheduling.k8s.io/group-name\":\"pg-%s\"}},\"spec\":"
            "{\"schedulerName\":\"kube-batch\",\"priority\":7,\"nodeSelector\":{\"zone\":\"a\"},"
            "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
            "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"500m\","
            "\"memory\":\"1Gi\",\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Pending\"}}",
            name, name, rv, name);
}

/* A pod kb_pod_decode rejects (a quantity that does not parse). */
static char *invalid_pod(const char *name, const char *rv)
{
    return g_strdup_printf("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                           "\"default\",\"uid\":\"uid-%s\",\"resourceVersion\":\"%s\"},\"spec\":"
                           "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
                           "{\"cpu\":\"12Qi\"}}}]}}",
                           name, name, rv);
}

static guint n_json_decodes;

/* kb_pod_decode under another name (as scheduler/daemon.c wraps it), counting its calls: the
 * informer cannot pick the page decoder for it by itself. */
static gpointer counting_pod_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    n_json_decodes++;
    return kb_pod_decode(obj, keep_raw, error);
}

/* The stored record of @name is the one json-c + kb_pod_decode make of @text (consumed). */
static void assert_same_as_json_c(Fixture *fx, const char *name, char *text)
{
    json_object *obj = json_tokener_parse(text);
    g_assert_nonnull(obj);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) want = kb_pod_decode(obj, FALSE, &error);
    g_assert_no_error(error);
    const KbPod *got = kb_informer_get(fx->inf, "default", name);
    g_assert_nonnull(got);
    g_assert_null(got->meta.raw);
    g_autofree char *why = NULL;
    if (!kb_pod_equal(got, want, &why))
        g_error("pod %s: the page decoder's record differs: %s", name, why);
    json_object_put(obj);
    g_free(text);
}

/* An informer decoding with kb_pod_decode takes its pages through the page decoder by itself. */
static void test_fast_three_pages(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, list_body("100", "c1", ITEMS(rich_pod("p1", "1"), rich_pod("p2", "2"))));
    push_list(fx, 200, list_body("100", "c2", ITEMS(rich_pod("p3", "3"), rich_pod("p4", "4"))));
    push_list(fx, 200, list_body("100", NULL, ITEMS(rich_pod("p5", "5"))));
    KbInformerOptions opts = {
            .type = &kb_type_pods, .decode = (KbDecodeFunc)kb_pod_decode, .page_size = 2};
    start(fx, &opts);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==,
                    "add default/p1@1;add default/p2@2;add default/p3@3;add default/p4@4;"
                    "add default/p5@5;synced;");
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 3);
    g_assert_cmpuint(kb_informer_fallback_pages(fx->inf), ==, 0);
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), ==, 0);
    for (int i = 1; i <= 5; i++) {
        g_autofree char *name = g_strdup_printf("p%d", i);
        g_autofree char *rv = g_strdup_printf("%d", i);
        assert_same_as_json_c(fx, name, rich_pod(name, rv));
    }
    const KbPod *p3 = kb_informer_get(fx->inf, "default", "p3");
    g_assert_cmpstr(p3->group_name, ==, "pg-p3");
    g_assert_cmpint(p3->priority, ==, 7);
    /* the continue tokens and the resourceVersion came through the page decoder */
    assert_param(nth_request(fx, FALSE, 1), "continue", "c1");
    assert_param(nth_request(fx, FALSE, 2), "continue", "c2");
    wait_watch(fx, 0);
    assert_param(nth_request(fx, TRUE, 0), "resourceVersion", "100");
    g_assert_cmpstr(kb_informer_resource_version(fx->inf), ==, "100");
}

/* One malformed pod fails the page decoder's page: json-c takes that page, skips and counts the
 * pod, delivers the others; the next page goes fast again. */
static void test_fast_malformed_pod_falls_back(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, list_body("10", "c1", ITEMS(rich_pod("a", "1"))));
    push_list(fx, 200,
              list_body("10", "c2",
                        ITEMS(rich_pod("b", "2"), invalid_pod("x", "3"), rich_pod("c", "4"))));
    push_list(fx, 200, list_body("10", NULL, ITEMS(rich_pod("d", "5"))));
    n_json_decodes = 0;
    KbInformerOptions opts = {.type = &kb_type_pods,
                              .decode = counting_pod_decode,
                              .decode_page = kb_pod_list_decode_bytes,
                              .page_size = 3};
    start(fx, &opts);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==,
                    "add default/a@1;add default/b@2;add default/c@4;add default/d@5;synced;");
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), ==, 1);
    g_assert_null(kb_informer_get(fx->inf, "default", "x"));
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 2);
    g_assert_cmpuint(kb_informer_fallback_pages(fx->inf), ==, 1);
    g_assert_cmpuint(n_json_decodes, ==, 3); /* the middle page's items only */
    assert_same_as_json_c(fx, "c", rich_pod("c", "4"));
    assert_param(nth_request(fx, FALSE, 2), "continue", "c2");
}

/* A page the page decoder refuses for strictness (a member twice in metadata, where json-c keeps
 * the last) is delivered as json-c reads it, without a decode error. */
static void test_fast_strict_refusal_falls_back(Fixture *fx, gconstpointer data)
{
    char *dup =
            g_strdup("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"d\",\"namespace\":"
                     "\"default\",\"uid\":\"uid-d\",\"resourceVersion\":\"1\","
                     "\"resourceVersion\":\"2\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    push_list(fx, 200, list_body("10", NULL, ITEMS(rich_pod("a", "1"), dup)));
    KbInformerOptions opts = {.type = &kb_type_pods, .decode = (KbDecodeFunc)kb_pod_decode};
    start(fx, &opts);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, "add default/a@1;add default/d@2;synced;");
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), ==, 0);
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 0);
    g_assert_cmpuint(kb_informer_fallback_pages(fx->inf), ==, 1);
    assert_same_as_json_c(fx, "a", rich_pod("a", "1"));
}

/* A List as the server streams it, in @piece-byte chunks a millisecond apart. */
static void push_list_in_pieces(Fixture *fx, const char *body, gsize piece)
{
    KbTestResponse *resp = kb_test_response_new(200);
    for (gsize off = 0; off < strlen(body); off += piece) {
        g_autofree char *part = g_strndup(body + off, piece);
        kb_test_response_add_chunk(resp, 1, part);
    }
    g_mutex_lock(&fx->lock);
    g_queue_push_tail(&fx->lists, resp);
    g_mutex_unlock(&fx->lock);
}

/* A List in one piece (as a watch cache answers) is decoded in chunks as it arrives: the same
 * records in the same order, and never more than about a chunk held undecoded, so a page limit
 * far below the whole page is not crossed. Members before "items" with brackets, quotes and
 * an "items" of their own inside strings and nested objects do not fool the item scan. */
static void test_fast_chunks(Fixture *fx, gconstpointer data)
{
    char *pods[13] = {NULL};
    for (int i = 0; i < 12; i++) {
        g_autofree char *name = g_strdup_printf("p%02d", i);
        g_autofree char *rv = g_strdup_printf("%d", i + 1);
        pods[i] = rich_pod(name, rv);
    }
    gsize one = strlen(pods[0]);
    g_autofree char *list = list_body("100", NULL, pods);
    g_autofree char *body = g_strconcat(
            "{\"x\":{\"items\":[\"a\\\"]\",{\"items\":\"[,\"}]},\"y\":\"items\",", list + 1, NULL);
    push_list_in_pieces(fx, body, 200);
    KbInformerOptions opts = {.type = &kb_type_pods, .decode = (KbDecodeFunc)kb_pod_decode};
    fx->inf = kb_informer_new(fx->client, &opts, &handlers, fx);
    kb_informer_set_list_chunk_bytes(fx->inf, one);
    kb_informer_set_max_page_bytes(fx->inf, 3 * one + 400);
    g_assert_cmpuint(strlen(body), >, 3 * (3 * one + 400));
    kb_informer_start(fx->inf);
    wait_log(fx, "synced;");
    g_autoptr(GString) want = g_string_new(NULL);
    for (int i = 0; i < 12; i++)
        g_string_append_printf(want, "add default/p%02d@%d;", i, i + 1);
    g_string_append(want, "synced;");
    g_assert_cmpstr(fx->log->str, ==, want->str);
    g_assert_cmpuint(kb_informer_list_chunks(fx->inf), >=, 3);
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 1);
    g_assert_cmpuint(kb_informer_fallback_pages(fx->inf), ==, 0);
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), ==, 0);
    for (int i = 0; i < 12; i++) {
        g_autofree char *name = g_strdup_printf("p%02d", i);
        g_autofree char *rv = g_strdup_printf("%d", i + 1);
        assert_same_as_json_c(fx, name, rich_pod(name, rv));
    }
    wait_watch(fx, 0);
    assert_param(nth_request(fx, TRUE, 0), "resourceVersion", "100");
}

/* A malformed pod in a chunk: that chunk goes through json-c (the pod skipped and counted, the
 * others delivered, in order); a malformed List fails however it was cut, and is listed again. */
static void test_fast_chunk_malformed(Fixture *fx, gconstpointer data)
{
    char *pods[9] = {NULL};
    for (int i = 0; i < 8; i++) {
        g_autofree char *name = g_strdup_printf("p%d", i);
        pods[i] = i == 3 ? invalid_pod(name, "9") : rich_pod(name, "1");
    }
    gsize one = strlen(pods[0]);
    g_autofree char *list = list_body("100", NULL, pods);
    g_autofree char *broken = g_strdup(list);
    char *cut = strstr(broken, "\"p5\"");
    g_assert_nonnull(cut);
    memcpy(cut - 8, "]]]]", 4); /* a bracket too many inside item 5 */
    push_list_in_pieces(fx, broken, 300);
    push_list_in_pieces(fx, list, 300);
    KbInformerOptions opts = {.type = &kb_type_pods, .decode = (KbDecodeFunc)kb_pod_decode};
    fx->inf = kb_informer_new(fx->client, &opts, &handlers, fx);
    kb_informer_set_backoff(fx->inf, 20, 200);
    kb_informer_set_list_chunk_bytes(fx->inf, one);
    kb_informer_start(fx->inf);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==,
                    "add default/p0@1;add default/p1@1;add default/p2@1;add default/p4@1;"
                    "add default/p5@1;add default/p6@1;add default/p7@1;synced;");
    g_assert_nonnull(nth_request(fx, FALSE, 1));
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), >=, 1);
    g_assert_cmpuint(kb_informer_fallback_pages(fx->inf), >=, 1);
    g_assert_null(kb_informer_get(fx->inf, "default", "p3"));
    assert_same_as_json_c(fx, "p7", rich_pod("p7", "1"));
}

/* Watch events of pods skip json-c as list pages do: the same records, the resourceVersion
 * advanced; bookmarks and deletions still go through json-c. */
static void test_fast_watch_events(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, list_body("10", NULL, ITEMS(rich_pod("a", "1"), rich_pod("b", "2"))));
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", rich_pod("c", "11")),
                                            event("MODIFIED", rich_pod("a", "12")), bookmark("13"),
                                            event("DELETED", rich_pod("b", "14")),
                                            event("ADDED", rich_pod("d", "15")))));
    KbInformerOptions opts = {.type = &kb_type_pods, .decode = (KbDecodeFunc)kb_pod_decode};
    start(fx, &opts);
    wait_log(fx, "add default/d@15;");
    g_assert_cmpstr(fx->log->str, ==,
                    "add default/a@1;add default/b@2;synced;add default/c@11;"
                    "upd default/a@1->12;del default/b;add default/d@15;");
    g_assert_cmpuint(kb_informer_fast_events(fx->inf), ==, 3);
    g_assert_cmpuint(kb_informer_events(fx->inf), ==, 4);
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), ==, 0);
    g_assert_cmpstr(kb_informer_resource_version(fx->inf), ==, "15");
    assert_same_as_json_c(fx, "a", rich_pod("a", "12"));
    assert_same_as_json_c(fx, "c", rich_pod("c", "11"));
}

static char *claim(const char *name, const char *rv, gboolean first_available)
{
    return g_strdup_printf(
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
            "\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\",\"resourceVersion\":"
            "\"%s\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",%s}]}},\"status\":{"
            "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"u\"}]}}",
            name, name, rv,
            first_available ? "\"firstAvailable\":[{\"name\":\"a\",\"deviceClassName\":\"gpu\"}]"
                            : "\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}");
}

static void assert_claim_as_json_c(Fixture *fx, const char *name, char *text)
{
    json_object *obj = json_tokener_parse(text);
    g_assert_nonnull(obj);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbResourceClaim) want = kb_resource_claim_decode(obj, FALSE, &error);
    g_assert_no_error(error);
    const KbResourceClaim *got = kb_informer_get(fx->inf, "default", name);
    g_assert_nonnull(got);
    g_autofree char *why = NULL;
    if (!kb_resource_claim_equal(got, want, &why))
        g_error("claim %s differs: %s", name, why);
    json_object_put(obj);
    g_free(text);
}

/* Claims are listed and watched through their byte decoder too; a claim it does not read
 * (firstAvailable) goes through json-c, in the list and in the watch, and is delivered. */
static void test_fast_claims(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200,
              list_body("10", NULL, ITEMS(claim("a", "1", FALSE), claim("b", "2", FALSE))));
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", claim("c", "11", FALSE)),
                                            event("MODIFIED", claim("a", "12", FALSE)),
                                            event("ADDED", claim("f", "13", TRUE)),
                                            event("ADDED", claim("d", "15", FALSE)))));
    kb_test_server_set_handler(fx->srv, "GET", "/apis/resource.k8s.io/v1/*", handle, fx, NULL);
    KbInformerOptions opts = {.type = &kb_type_resource_claims,
                              .decode = (KbDecodeFunc)kb_resource_claim_decode};
    start(fx, &opts);
    wait_log(fx, "add default/d@15;");
    g_assert_cmpstr(fx->log->str, ==,
                    "add default/a@1;add default/b@2;synced;add default/c@11;"
                    "upd default/a@1->12;add default/f@13;add default/d@15;");
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 1);
    g_assert_cmpuint(kb_informer_fast_events(fx->inf), ==, 3);
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), ==, 0);
    assert_claim_as_json_c(fx, "a", claim("a", "12", FALSE));
    assert_claim_as_json_c(fx, "f", claim("f", "13", TRUE));
    assert_claim_as_json_c(fx, "d", claim("d", "15", FALSE));
}

static char *slice(const char *name, const char *rv, gboolean all_nodes)
{
    return g_strdup_printf(
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{"
            "\"name\":\"%s\",\"uid\":\"uid-%s\",\"resourceVersion\":\"%s\"},\"spec\":{"
            "\"driver\":\"gpu.nvidia.com\",\"pool\":{\"name\":\"n1\",\"generation\":1},%s,"
            "\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"index\":{\"int\":0},"
            "\"productName\":{\"string\":\"NVIDIA A100-SXM4-80GB\"}},\"capacity\":{\"memory\":{"
            "\"value\":\"80Gi\"}}}]}}",
            name, name, rv,
            all_nodes ? "\"allNodes\":true,\"nodeName\":null" : "\"nodeName\":\"n1\"");
}

static void assert_slice_as_json_c(Fixture *fx, const char *name, char *text)
{
    json_object *obj = json_tokener_parse(text);
    g_assert_nonnull(obj);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbResourceSlice) want = kb_resource_slice_decode(obj, FALSE, &error);
    g_assert_no_error(error);
    const KbResourceSlice *got = kb_informer_get(fx->inf, NULL, name);
    g_assert_nonnull(got);
    g_autofree char *why = NULL;
    if (!kb_resource_slice_equal(got, want, &why))
        g_error("slice %s differs: %s", name, why);
    json_object_put(obj);
    g_free(text);
}

/* Slices are listed and watched through their byte decoder too (kube-batchd lists a thousand
 * at start); one it does not read (a null member) goes through json-c and is delivered. */
static void test_fast_slices(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200,
              list_body("10", NULL, ITEMS(slice("a", "1", FALSE), slice("b", "2", FALSE))));
    push_watch(fx, watch_stream(TRUE, ITEMS(event("ADDED", slice("c", "11", FALSE)),
                                            event("MODIFIED", slice("a", "12", FALSE)),
                                            event("ADDED", slice("f", "13", TRUE)),
                                            event("ADDED", slice("d", "15", FALSE)))));
    kb_test_server_set_handler(fx->srv, "GET", "/apis/resource.k8s.io/v1/*", handle, fx, NULL);
    KbInformerOptions opts = {.type = &kb_type_resource_slices,
                              .decode = (KbDecodeFunc)kb_resource_slice_decode};
    start(fx, &opts);
    wait_log(fx, "add d@15;");
    g_assert_cmpstr(fx->log->str, ==,
                    "add a@1;add b@2;synced;add c@11;upd a@1->12;add f@13;add d@15;");
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 1);
    g_assert_cmpuint(kb_informer_fast_events(fx->inf), ==, 3);
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), ==, 0);
    assert_slice_as_json_c(fx, "a", slice("a", "12", FALSE));
    assert_slice_as_json_c(fx, "f", slice("f", "13", TRUE));
    assert_slice_as_json_c(fx, "d", slice("d", "15", FALSE));
}

/* A pod event the fast decoder refuses goes through json-c, which skips and counts it with its
 * message; the events after it go fast again, and an ERROR event still ends the watch. */
static void test_fast_watch_malformed_falls_back(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, list_body("10", NULL, ITEMS(rich_pod("a", "1"))));
    push_watch(fx, watch_stream(FALSE, ITEMS(event("MODIFIED", invalid_pod("x", "11")),
                                             event("ADDED", rich_pod("c", "12")),
                                             g_strdup("{\"type\":\"ADDED\",\"object\":[]}\n"))));
    KbInformerOptions opts = {.type = &kb_type_pods, .decode = (KbDecodeFunc)kb_pod_decode};
    start(fx, &opts);
    wait_log(fx, "add default/c@12;");
    g_assert_cmpuint(kb_informer_fast_events(fx->inf), ==, 1);
    /* the invalid pod, and the event whose object is no object */
    while (kb_informer_decode_errors(fx->inf) < 2)
        g_main_context_iteration(NULL, TRUE);
    g_assert_null(kb_informer_get(fx->inf, "default", "x"));
    g_assert_cmpstr(fx->log->str, ==, "add default/a@1;synced;add default/c@12;");
    assert_same_as_json_c(fx, "c", rich_pod("c", "12"));
}

/* A page decoder more lenient than kb_pod_list_decode_bytes: it loses the name of pods called
 * "lost", as if it accepted pods without metadata.name. */
static gboolean lenient_page_decode(const char *json, gsize len, GPtrArray *out, char **rv,
                                    char **cont, GError **error)
{
    guint first = out->len;
    if (!kb_pod_list_decode_bytes(json, len, out, rv, cont, error))
        return FALSE;
    for (guint i = first; i < out->len; i++) {
        KbObjectMeta *m = g_ptr_array_index(out, i);
        if (strcmp(m->name, "lost") == 0)
            g_clear_pointer(&m->name, g_free);
    }
    return TRUE;
}

/* A pod without metadata.name: kb_pod_list_decode_bytes fails the page, json-c skips and counts
 * the pod. A page decoder that returns a record without a name is not trusted with the page
 * either (the store could not hold it). */
static void test_fast_nameless_pod_falls_back(Fixture *fx, gconstpointer data)
{
    char *nameless = g_strdup("{\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"default\","
                              "\"resourceVersion\":\"3\"}}");
    push_list(fx, 200, list_body("10", NULL, ITEMS(rich_pod("a", "1"), nameless)));
    push_list(fx, 200, list_body("20", NULL, ITEMS(rich_pod("a", "1"), rich_pod("lost", "2"))));
    KbInformerOptions opts = {.type = &kb_type_pods, .decode = (KbDecodeFunc)kb_pod_decode};
    start(fx, &opts);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, "add default/a@1;synced;");
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), ==, 1);
    g_assert_cmpuint(kb_informer_fallback_pages(fx->inf), ==, 1);
    g_assert_cmpuint(kb_informer_size(fx->inf), ==, 1);
    kb_informer_free(g_steal_pointer(&fx->inf));

    g_string_truncate(fx->log, 0);
    KbInformerOptions lenient = {.type = &kb_type_pods,
                                 .decode = (KbDecodeFunc)kb_pod_decode,
                                 .decode_page = lenient_page_decode};
    start(fx, &lenient);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, "add default/a@1;add default/lost@2;synced;");
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 0);
    g_assert_cmpuint(kb_informer_fallback_pages(fx->inf), ==, 1);
    g_assert_cmpuint(kb_informer_decode_errors(fx->inf), ==, 0);
}

/* An empty list syncs (through json-c, which checks it is a List). */
static void test_fast_empty_list(Fixture *fx, gconstpointer data)
{
    push_list(fx, 200, list_body("10", NULL, NULL));
    KbInformerOptions opts = {.type = &kb_type_pods, .decode = (KbDecodeFunc)kb_pod_decode};
    start(fx, &opts);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, "synced;");
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 0);
    g_assert_cmpuint(kb_informer_fallback_pages(fx->inf), ==, 0);
    g_assert_cmpstr(kb_informer_resource_version(fx->inf), ==, "10");
}

/* The relist after a 410 goes through the page decoder too, with its synthesized events. */
static void test_fast_relist_gone(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    push_relist(fx);
    push_watch(fx, kb_test_response_new_status(410, "Expired", "too old resource version: 10"));
    KbInformerOptions opts = {.type = &kb_type_pods, .decode = (KbDecodeFunc)kb_pod_decode};
    start(fx, &opts);
    assert_relisted(fx);
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 2);
    g_assert_cmpuint(kb_informer_fallback_pages(fx->inf), ==, 0);
    assert_same_as_json_c(fx, "a", pod("a", "20"));
}

/* keep_raw stays on json-c (the page decoder keeps no raw object), even when asked for; so does
 * a wrapped kb_pod_decode that does not ask for it. */
static void test_fast_not_used(Fixture *fx, gconstpointer data)
{
    push_initial_list(fx);
    KbInformerOptions opts = {.type = &kb_type_pods,
                              .decode = (KbDecodeFunc)kb_pod_decode,
                              .decode_page = kb_pod_list_decode_bytes,
                              .keep_raw = TRUE};
    start(fx, &opts);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG);
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 0);
    const KbPod *a = kb_informer_get(fx->inf, "default", "a");
    g_assert_nonnull(a->meta.raw);
    kb_informer_free(g_steal_pointer(&fx->inf));

    g_string_truncate(fx->log, 0);
    n_json_decodes = 0;
    KbInformerOptions wrapped = {.type = &kb_type_pods, .decode = counting_pod_decode};
    start(fx, &wrapped);
    wait_log(fx, "synced;");
    g_assert_cmpstr(fx->log->str, ==, INITIAL_LOG);
    g_assert_cmpuint(kb_informer_fast_pages(fx->inf), ==, 0);
    g_assert_cmpuint(n_json_decodes, ==, 2);
}

/* ---- own writes' events taken in without a decode (kb_informer_expect) ------------------- */

#define ECHO_CLAIMS 4

/* A server's claims as json-c objects, the watch lines and write answers not delivered yet, and
 * two informers fed the same lines: one told of its own writes (kb_informer_expect), one that
 * decodes every event (the reference). */
typedef struct {
    KbClient *client;
    KbInformer *fast;
    KbInformer *plain;
    json_object *objs[ECHO_CLAIMS]; /* NULL when absent */
    guint64 rv;
    guint uids;
    GQueue events;      /* char *: watch lines, in order */
    GPtrArray *answers; /* EchoAnswer *: writes not answered yet */
    GRand *rand;
    guint writes, refused, noops, compared;
    /* per informer: "ns/name" -> the versions its handlers were told of, in order */
    GHashTable *seen_fast, *seen_plain;
} Echo;

static void echo_seen(GHashTable *seen, const KbObjectMeta *m, const char *what)
{
    g_autofree char *key = g_strdup_printf("%s/%s", m->namespace_, m->name);
    GString *log = g_hash_table_lookup(seen, key);
    if (log == NULL) {
        log = g_string_new(NULL);
        g_hash_table_insert(seen, g_strdup(key), log);
    }
    g_string_append_printf(log, "%s %s@%s;", what, m->uid, m->resource_version);
}

static void echo_log_free(gpointer log)
{
    g_string_free(log, TRUE);
}

static void echo_on_add(gpointer obj, gpointer data)
{
    echo_seen(data, obj, "add");
}

static void echo_on_update(gpointer old, gpointer obj, gpointer data)
{
    echo_seen(data, obj, "upd");
}

static void echo_on_delete(gpointer obj, gpointer data)
{
    echo_seen(data, obj, "del");
}

typedef struct {
    guint claim;
    char *rv; /* NULL: the write was refused (409) */
} EchoAnswer;

static void echo_answer_free(gpointer data)
{
    EchoAnswer *a = data;
    g_free(a->rv);
    g_free(a);
}

/* Give claim @i the next resourceVersion and queue its watch event. */
static void echo_emit(Echo *e, const char *type, guint i)
{
    json_object *meta = json_object_object_get(e->objs[i], "metadata");
    g_autofree char *rv = g_strdup_printf("%" G_GUINT64_FORMAT, ++e->rv);
    json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
    g_queue_push_tail(&e->events, g_strdup_printf("{\"type\":\"%s\",\"object\":%s}\n", type,
                                                  json_object_to_json_string_ext(
                                                          e->objs[i], JSON_C_TO_STRING_PLAIN)));
}

static void echo_create(Echo *e, guint i)
{
    guint uid = ++e->uids;
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
            "\"name\":\"c%u\",\"namespace\":\"default\",\"uid\":\"uid-%u\",\"generation\":1,"
            "\"labels\":{\"app\":\"a%u\"},\"annotations\":{\"resource.kubernetes.io/"
            "pod-claim-name\":\"gpu\"},\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":"
            "\"Pod\",\"name\":\"p%u\",\"uid\":\"pod-%u\",\"controller\":true}]},\"spec\":{"
            "\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"
            "\"gpu.nvidia.com\",\"count\":%u}}]}}}",
            i, uid, uid % 3, i, uid, 1 + uid % 2);
    e->objs[i] = json_tokener_parse(text);
    g_assert_nonnull(e->objs[i]);
    echo_emit(e, "ADDED", i);
}

/* A merge patch's status members (null removes one) applied to @obj. */
static void echo_merge_status(json_object *obj, json_object *patch)
{
    json_object *pst = NULL, *st = NULL;
    if (!json_object_object_get_ex(patch, "status", &pst))
        return;
    if (!json_object_object_get_ex(obj, "status", &st)) {
        st = json_object_new_object();
        json_object_object_add(obj, "status", st);
    }
    json_object_object_foreach(pst, k, v)
    {
        if (v == NULL) {
            json_object_object_del(st, k);
        } else {
            json_object *copy = NULL;
            g_assert_cmpint(json_object_deep_copy(v, &copy, NULL), ==, 0);
            json_object_object_add(st, k, copy);
        }
    }
}

/* Random status content: up to two results (none: @results NULL), a node, up to two pods. */
static guint echo_status(Echo *e, KbDeviceResult *results, KbClaimConsumer *pods, guint *n_pods,
                         const char **node, char names[4][16])
{
    guint n = (guint)g_rand_int_range(e->rand, 0, 3);
    guint at = (guint)g_rand_int_range(e->rand, 0, 3);
    for (guint r = 0; r < n; r++) {
        g_snprintf(names[r], 16, "gpu-%d", g_rand_int_range(e->rand, 0, 8));
        results[r] = (KbDeviceResult){.request = (char *)"gpu",
                                      .driver = g_intern_static_string("gpu.nvidia.com"),
                                      .pool = g_intern_string(at == 0 ? "n0" : "n1"),
                                      .device = names[r]};
    }
    *node = at == 2 ? NULL : at == 0 ? "n0" : "n1";
    *n_pods = (guint)g_rand_int_range(e->rand, 0, 3);
    for (guint p = 0; p < *n_pods; p++) {
        g_snprintf(names[2 + p], 16, "p%d", g_rand_int_range(e->rand, 0, 4));
        pods[p] = (KbClaimConsumer){.resource = "pods", .name = names[2 + p], .uid = names[2 + p]};
    }
    return n;
}

/* Someone else writes claim @i's status (no precondition), or its labels. */
static void echo_other_write(Echo *e, guint i)
{
    if (g_rand_int_range(e->rand, 0, 4) == 0) {
        json_object *meta = json_object_object_get(e->objs[i], "metadata");
        json_object *labels = json_object_new_object();
        g_autofree char *v = g_strdup_printf("v%d", g_rand_int_range(e->rand, 0, 3));
        json_object_object_add(labels, "app", json_object_new_string(v));
        json_object_object_add(meta, "labels", labels);
    } else {
        g_autofree char *bname = g_strdup_printf("c%u", i);
        const KbResourceClaim *base = kb_informer_get(e->plain, "default", bname);
        KbResourceClaim empty = {0};
        KbDeviceResult results[2];
        KbClaimConsumer pods[2];
        char names[4][16];
        const char *node;
        guint n_pods, n = echo_status(e, results, pods, &n_pods, &node, names);
        g_autofree char *body = kb_resource_claim_status_text(
                base != NULL ? base : &empty, n > 0 ? results : NULL, n, node, pods, n_pods);
        json_object *patch = json_tokener_parse(body);
        if (n == 0 && n_pods == 0)
            json_object_object_add(json_object_object_get(patch, "status"), "allocation", NULL);
        echo_merge_status(e->objs[i], patch);
        json_object_put(patch);
    }
    echo_emit(e, "MODIFIED", i);
}

/* This process writes claim @i's status from what its informer holds (at most one write in
 * flight per claim, as the binder writes them): the server takes it when that is still the
 * claim's version, else refuses it; the answer is delivered later. */
static void echo_own_write(Echo *e, guint i)
{
    for (guint k = 0; k < e->answers->len; k++)
        if (((EchoAnswer *)e->answers->pdata[k])->claim == i)
            return;
    g_autofree char *name = g_strdup_printf("c%u", i);
    const KbResourceClaim *stored = kb_informer_get(e->fast, "default", name);
    if (stored == NULL)
        return;
    KbDeviceResult results[2];
    KbClaimConsumer pods[2];
    char names[4][16];
    const char *node;
    guint n_pods, n = echo_status(e, results, pods, &n_pods, &node, names);
    const KbDeviceResult *res = n > 0 || !stored->allocated ? results : NULL;
    g_autofree char *body = kb_resource_claim_status_text(stored, res, n, node, pods, n_pods);
    kb_informer_expect(e->fast, kb_resource_claim_after_status(stored, res, n, node, pods, n_pods),
                       stored->meta.resource_version);
    EchoAnswer *a = g_new0(EchoAnswer, 1);
    a->claim = i;
    json_object *patch = json_tokener_parse(body);
    const char *want = json_object_get_string(
            json_object_object_get(json_object_object_get(patch, "metadata"), "resourceVersion"));
    json_object *obj = e->objs[i];
    const char *have =
            obj != NULL ? json_object_get_string(json_object_object_get(
                                  json_object_object_get(obj, "metadata"), "resourceVersion"))
                        : NULL;
    e->writes++;
    if (have != NULL && g_strcmp0(want, have) == 0) {
        g_autofree char *before =
                g_strdup(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN));
        echo_merge_status(obj, patch);
        if (strcmp(before, json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN)) == 0) {
            /* a write that changes nothing: answered with the same version, and no event */
            a->rv = g_strdup(have);
            e->noops++;
        } else {
            echo_emit(e, "MODIFIED", i);
            a->rv = g_strdup_printf("%" G_GUINT64_FORMAT, e->rv);
        }
    } else {
        e->refused++;
    }
    json_object_put(patch);
    g_ptr_array_add(e->answers, a);
}

static void echo_deliver_event(Echo *e)
{
    g_autofree char *line = g_queue_pop_head(&e->events);
    if (line == NULL)
        return;
    kb_informer_feed_watch(e->fast, line, strlen(line));
    kb_informer_feed_watch(e->plain, line, strlen(line));
}

static void echo_deliver_answer(Echo *e)
{
    if (e->answers->len == 0)
        return;
    guint k = (guint)g_rand_int_range(e->rand, 0, (gint32)e->answers->len);
    EchoAnswer *a = g_ptr_array_steal_index(e->answers, k);
    g_autofree char *name = g_strdup_printf("c%u", a->claim);
    kb_informer_expect_answered(e->fast, "default", name, a->rv);
    echo_answer_free(a);
}

/* With every answer in, the informer told of its writes holds what the one decoding every event
 * holds. */
static void echo_compare(Echo *e, guint step)
{
    for (guint i = 0; i < ECHO_CLAIMS; i++) {
        g_autofree char *name = g_strdup_printf("c%u", i);
        const KbResourceClaim *got = kb_informer_get(e->fast, "default", name);
        const KbResourceClaim *want = kb_informer_get(e->plain, "default", name);
        g_autofree char *why = NULL;
        if ((got == NULL) != (want == NULL))
            g_error("step %u: claim %s: %s with expectations, %s without", step, name,
                    got != NULL ? "present" : "absent", want != NULL ? "present" : "absent");
        if (got != NULL && !kb_resource_claim_equal(got, want, &why))
            g_error("step %u: claim %s differs from its decoded events: %s", step, name, why);
        g_autofree char *key = g_strdup_printf("default/%s", name);
        const GString *a = g_hash_table_lookup(e->seen_fast, key);
        const GString *b = g_hash_table_lookup(e->seen_plain, key);
        if (g_strcmp0(a != NULL ? a->str : NULL, b != NULL ? b->str : NULL) != 0)
            g_error("step %u: claim %s: handlers told %s with expectations, %s without", step, name,
                    a != NULL ? a->str : "nothing", b != NULL ? b->str : "nothing");
    }
    e->compared++;
}

/*
 * Random claim histories: creations, deletions, status and label writes by someone else (at
 * any point between this process's write and its event, or its answer), this process's writes
 * (from a store that may lag the server: the server refuses those), their answers delivered
 * before or after their events, writes that change nothing (no event: the answer names the
 * version the store holds). The store that takes in its own writes' events as the records the
 * writes made equals the store that decodes every event, and its handlers were told of the same
 * versions of each claim in the same order, whenever no answer is awaited.
 */
static void test_fast_claim_echoes_random(void)
{
    Echo e = {.rand = g_rand_new_with_seed(22)};
    KbConfig config = {.server = (char *)"http://127.0.0.1:9"};
    g_autoptr(GError) error = NULL;
    e.client = kb_client_new(&config, &error);
    g_assert_no_error(error);
    KbInformerOptions opts = {.type = &kb_type_resource_claims,
                              .decode = (KbDecodeFunc)kb_resource_claim_decode};
    KbInformerHandlers echo_handlers = {
            .on_add = echo_on_add, .on_update = echo_on_update, .on_delete = echo_on_delete};
    e.seen_fast = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, echo_log_free);
    e.seen_plain = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, echo_log_free);
    e.fast = kb_informer_new(e.client, &opts, &echo_handlers, e.seen_fast);
    e.plain = kb_informer_new(e.client, &opts, &echo_handlers, e.seen_plain);
    e.answers = g_ptr_array_new_with_free_func(echo_answer_free);
    g_queue_init(&e.events);
    for (guint step = 0; step < 20000; step++) {
        guint i = (guint)g_rand_int_range(e.rand, 0, ECHO_CLAIMS);
        gint op = g_rand_int_range(e.rand, 0, 100);
        if (op < 8 && e.objs[i] == NULL) {
            echo_create(&e, i);
        } else if (op < 11 && e.objs[i] != NULL) {
            echo_emit(&e, "DELETED", i);
            g_clear_pointer(&e.objs[i], json_object_put);
        } else if (op < 25 && e.objs[i] != NULL) {
            echo_other_write(&e, i);
        } else if (op < 50) {
            echo_own_write(&e, i);
        } else if (op < 78) {
            echo_deliver_event(&e);
        } else {
            echo_deliver_answer(&e);
        }
        if (e.answers->len == 0)
            echo_compare(&e, step);
    }
    while (e.events.length > 0 || e.answers->len > 0) {
        echo_deliver_event(&e);
        echo_deliver_answer(&e);
    }
    echo_compare(&e, G_MAXUINT);
    g_test_message("%u own writes (%u refused, %u changing nothing), %" G_GUINT64_FORMAT
                   " taken in without a decode, %u comparisons",
                   e.writes, e.refused, e.noops, kb_informer_echoes(e.fast), e.compared);
    g_assert_cmpuint(kb_informer_echoes(e.plain), ==, 0);
    g_assert_cmpuint(kb_informer_echoes(e.fast), >, e.writes / 4);
    g_assert_cmpuint(e.refused, >, 0);
    g_assert_cmpuint(e.noops, >, 0);
    g_assert_cmpuint(e.compared, >, 1000);
    g_hash_table_unref(e.seen_fast);
    g_hash_table_unref(e.seen_plain);
    for (guint i = 0; i < ECHO_CLAIMS; i++)
        g_clear_pointer(&e.objs[i], json_object_put);
    g_ptr_array_unref(e.answers);
    kb_informer_free(e.fast);
    kb_informer_free(e.plain);
    kb_client_free(e.client);
    g_rand_free(e.rand);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    g_test_add_func("/kube/informer/fast/claim-echoes-random", test_fast_claim_echoes_random);
#define ADD(path, fn)                                                                              \
    g_test_add("/kube/informer/" path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
    ADD("list/three-pages", test_list_three_pages);
    ADD("list/default-page-size", test_list_default_page_size);
    ADD("list/namespace-and-selectors", test_list_namespace_and_selectors);
    ADD("list/server-error-backoff", test_list_server_error_backoff);
    ADD("list/backoff-grows", test_list_backoff_grows);
    ADD("list/backoff-capped", test_list_backoff_capped_and_reset);
    ADD("list/missing-404", test_list_missing_404);
    ADD("list/continue-expired", test_list_continue_expired);
    ADD("list/not-a-list", test_list_not_a_list);
    ADD("list/page-over-limit", test_list_page_over_limit);
    ADD("list/malformed-pages", test_list_malformed_pages);
    ADD("relist/partial-failure-keeps-store", test_relist_partial_failure_keeps_store);
    ADD("store/lookups", test_store_lookups);
    ADD("store/default-meta-decode", test_default_meta_decode);
    ADD("watch/add-update-delete", test_watch_add_update_delete);
    ADD("watch/split-across-chunks", test_watch_events_split_across_chunks);
    ADD("watch/repeats-ignored", test_watch_repeats_ignored);
    ADD("watch/delete-unknown-ignored", test_watch_delete_unknown_ignored);
    ADD("watch/recreated-object", test_watch_recreated_object);
    ADD("watch/cut-resumes", test_watch_cut_resumes);
    ADD("watch/clean-end-resumes", test_watch_clean_end_resumes);
    ADD("watch/bookmark-advances-rv", test_watch_bookmark_advances_rv);
    ADD("watch/stall-restarts", test_watch_stall_restarts);
    ADD("watch/error-event-rewatches", test_watch_error_event_rewatches);
    ADD("watch/http-error-rewatches", test_watch_http_error_rewatches);
    ADD("relist/gone-http", test_relist_gone_http);
    ADD("relist/gone-in-stream", test_relist_gone_in_stream);
    ADD("relist/unchanged-quiet", test_relist_unchanged_quiet);
    ADD("decode/malformed-skipped", test_malformed_objects_skipped);
    ADD("lifecycle/free-while-listing", test_free_while_listing);
    ADD("lifecycle/free-while-watching", test_free_while_watching);
    ADD("fast/three-pages", test_fast_three_pages);
    ADD("fast/malformed-pod-falls-back", test_fast_malformed_pod_falls_back);
    ADD("fast/strict-refusal-falls-back", test_fast_strict_refusal_falls_back);
    ADD("fast/nameless-pod-falls-back", test_fast_nameless_pod_falls_back);
    ADD("fast/empty-list", test_fast_empty_list);
    ADD("fast/relist-gone", test_fast_relist_gone);
    ADD("fast/not-used", test_fast_not_used);
    ADD("fast/watch-events", test_fast_watch_events);
    ADD("fast/claims", test_fast_claims);
    ADD("fast/slices", test_fast_slices);
    ADD("fast/list-chunks", test_fast_chunks);
    ADD("fast/list-chunk-malformed", test_fast_chunk_malformed);
    ADD("fast/watch-malformed-falls-back", test_fast_watch_malformed_falls_back);
#undef ADD
    /* list tests again with the page decoder on the pages (json-c + test_decode as fallback) */
#define ADD_FAST(path, fn)                                                                         \
    g_test_add("/kube/informer/fast/" path, Fixture, FAST, fixture_setup, fn, fixture_teardown)
    ADD_FAST("list/not-a-list", test_list_not_a_list);
    ADD_FAST("list/page-over-limit", test_list_page_over_limit);
    ADD_FAST("list/malformed-pages", test_list_malformed_pages);
    ADD_FAST("relist/partial-failure-keeps-store", test_relist_partial_failure_keeps_store);
    ADD_FAST("relist/gone-http", test_relist_gone_http);
    ADD_FAST("relist/gone-in-stream", test_relist_gone_in_stream);
    /* lists at a resourceVersion: informers with a page decoder only */
    ADD_FAST("relist/rv-expired-consistent", test_relist_rv_expired);
    ADD_FAST("relist/rv-too-large-consistent", test_relist_rv_too_large);
    ADD_FAST("relist/other-timeout-backs-off", test_relist_other_timeout);
    ADD_FAST("relist/server-pages-rv0", test_relist_server_pages_rv0);
#undef ADD_FAST
    return g_test_run();
}
