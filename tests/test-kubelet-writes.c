/*
 * kb-kubelet's engine (testbed/kubelet/kbl-kubelet.c) against a scripted server whose pod watch
 * lags: events older than the kubelet's own status writes must not make it write again (at
 * 150,000 pods a lagging watch turned every such event and every resync into a PUT, a 409 and a
 * read: 1.6 million status writes for 23,548 pods started).
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-c/json.h>
#include <string.h>

#include "kube/kb-client.h"
#include "testbed/kubelet/kbl-kubelet.h"
#include "tests/lib/kb-test-server.h"

#define NODE                                                                                       \
    "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n1\",\"uid\":\"u-n1\","     \
    "\"resourceVersion\":\"1\"},\"status\":{\"allocatable\":{\"cpu\":\"8\"}}}"

typedef struct {
    GMutex lock;
    KbTestResponse *watch; /* the first watch: stalled, events appended by the test */
    guint watches;
    guint puts[3];    /* status PUTs of p1, p2, others */
    guint deletes[3]; /* DELETEs of p1, p2, others */
    char *items;      /* the list's items (NULL: p1 Pending at resourceVersion 4) */
    KbTestServer *srv;
    KbClient *client;
    KblKubelet *kubelet;
    char *dir;
    char *file;
} Fixture;

static char *pod(const char *name, const char *rv, const char *phase)
{
    return g_strdup_printf("{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
                           "\"namespace\":\"default\",\"uid\":\"u-%s\",\"resourceVersion\":\"%s\"},"
                           "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\"}]},"
                           "\"status\":{\"phase\":\"%s\"}}",
                           name, name, rv, phase);
}

static KbTestResponse *on_pods(const KbTestRequest *req, gpointer data)
{
    Fixture *fx = data;
    g_autofree char *watch = kb_test_request_query_param(req, "watch");
    if (watch == NULL || strcmp(watch, "true") != 0) {
        g_autofree char *p1 = pod("p1", "4", "Pending");
        g_autofree char *body = g_strdup_printf(
                "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
                "\"4\"},\"items\":[%s]}",
                fx->items != NULL ? fx->items : p1);
        return kb_test_response_new_body(200, body);
    }
    g_mutex_lock(&fx->lock);
    KbTestResponse *resp = NULL;
    if (fx->watches++ == 0) {
        resp = kb_test_response_ref(fx->watch);
    } else {
        resp = kb_test_response_new(200);
        kb_test_response_stall(resp);
    }
    g_mutex_unlock(&fx->lock);
    return resp;
}

/* A status PUT: the server's answer is the pod as written, at the next resourceVersion of the
 * script (p1 6, p2 8). */
static KbTestResponse *on_status(const KbTestRequest *req, gpointer data)
{
    Fixture *fx = data;
    gboolean p1 = strstr(req->path, "/pods/p1/") != NULL;
    gboolean p2 = strstr(req->path, "/pods/p2/") != NULL;
    g_mutex_lock(&fx->lock);
    fx->puts[p1 ? 0 : p2 ? 1 : 2]++;
    g_mutex_unlock(&fx->lock);
    json_object *obj = json_tokener_parse(req->body);
    json_object *meta = NULL;
    if (obj == NULL || !json_object_object_get_ex(obj, "metadata", &meta))
        return kb_test_response_new_status(400, "BadRequest", "not a pod");
    json_object_object_add(meta, "resourceVersion", json_object_new_string(p1 ? "6" : "8"));
    KbTestResponse *resp = kb_test_response_new_body(200, json_object_to_json_string(obj));
    json_object_put(obj);
    return resp;
}

/* A DELETE of a pod: counted, answered with the pod gone from the server's side (200). */
static KbTestResponse *on_delete(const KbTestRequest *req, gpointer data)
{
    Fixture *fx = data;
    gboolean p1 = strstr(req->path, "/pods/p1") != NULL;
    gboolean p2 = strstr(req->path, "/pods/p2") != NULL;
    g_mutex_lock(&fx->lock);
    fx->deletes[p1 ? 0 : p2 ? 1 : 2]++;
    g_mutex_unlock(&fx->lock);
    return kb_test_response_new_body(200, "{\"kind\":\"Status\",\"status\":\"Success\"}");
}

static guint deletes_of(Fixture *fx, guint i)
{
    g_mutex_lock(&fx->lock);
    guint n = fx->deletes[i];
    g_mutex_unlock(&fx->lock);
    return n;
}

static guint puts_of(Fixture *fx, guint i)
{
    g_mutex_lock(&fx->lock);
    guint n = fx->puts[i];
    g_mutex_unlock(&fx->lock);
    return n;
}

/* Run the main loop until @n status PUTs of pod @i were answered (60 s at most). */
static void wait_puts(Fixture *fx, guint i, guint n)
{
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (puts_of(fx, i) < n && g_get_monotonic_time() < deadline) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    g_assert_cmpuint(puts_of(fx, i), >=, n);
}

static void settle(guint ms)
{
    gint64 end = g_get_monotonic_time() + (gint64)ms * 1000;
    while (g_get_monotonic_time() < end) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
}

static void append_event(Fixture *fx, const char *type, char *object)
{
    g_autofree char *line = g_strdup_printf("{\"type\":\"%s\",\"object\":%s}\n", type, object);
    kb_test_response_append_chunk(fx->watch, line);
    g_free(object);
}

/*
 * A scripted server for node n1 (its status and lease answered), its pods listed from @fx->items
 * and watched from @fx->watch (stalled: the test appends events), pod status PUTs and DELETEs
 * counted; and a kubelet running n1 against it (a pod deleted with a grace period is confirmed
 * gone after @stop_delay_ms).
 */
static void fixture_start(Fixture *fx, guint stop_delay_ms)
{
    g_mutex_init(&fx->lock);
    fx->watch = kb_test_response_new(200);
    kb_test_response_stall(fx->watch);
    fx->srv = kb_test_server_new(NULL, NULL, NULL);
    kb_test_server_respond(fx->srv, "POST", "/api/v1/nodes", 201, NODE);
    kb_test_server_respond(fx->srv, "GET", "/api/v1/nodes/n1", 200, NODE);
    kb_test_server_respond(fx->srv, "PUT", "/api/v1/nodes/n1/status", 200, NODE);
    kb_test_server_respond(fx->srv, "*", "/api/v1/nodes/n1", 200, NODE);
    kb_test_server_respond(fx->srv, "*", "/apis/coordination.k8s.io/*", 200, "{}");
    kb_test_server_set_handler(fx->srv, "GET", "/api/v1/pods", on_pods, fx, NULL);
    kb_test_server_set_handler(fx->srv, "PUT", "/api/v1/namespaces/default/pods/*", on_status, fx,
                               NULL);
    kb_test_server_set_handler(fx->srv, "DELETE", "/api/v1/namespaces/default/pods/*", on_delete,
                               fx, NULL);
    fx->dir = g_dir_make_tmp("kubelet-writes-XXXXXX", NULL);
    g_assert_nonnull(fx->dir);
    fx->file = g_build_filename(fx->dir, "nodes.json", NULL);
    g_assert_true(g_file_set_contents(fx->file, "[" NODE "]", -1, NULL));
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = kb_config_from_flags(NULL, kb_test_server_url(fx->srv), &error);
    g_assert_no_error(error);
    fx->client = kb_client_new(config, &error);
    g_assert_no_error(error);
    KblKubeletOptions o = {.nodes_file = fx->file,
                           .start_delay_ms = 10,
                           .stop_delay_ms = stop_delay_ms,
                           .heartbeat_ms = 600000,
                           .node_status_ms = 600000};
    fx->kubelet = kbl_kubelet_new(fx->client, &o, &error);
    g_assert_no_error(error);
    g_assert_true(kbl_kubelet_start(fx->kubelet, &error));
    g_assert_no_error(error);
}

static void fixture_stop(Fixture *fx)
{
    g_clear_pointer(&fx->kubelet, kbl_kubelet_free);
    g_clear_pointer(&fx->client, kb_client_free);
    kb_test_response_unref(fx->watch);
    g_clear_pointer(&fx->srv, kb_test_server_free);
    g_mutex_clear(&fx->lock);
    g_free(fx->items);
    g_unlink(fx->file);
    g_rmdir(fx->dir);
    g_free(fx->file);
    g_free(fx->dir);
}

/* p1 is started (one PUT, answered at resourceVersion 6); the watch then brings an older copy of
 * p1 (5, still Pending): no second start. p2's start afterwards shows the events were handled.
 * Once the watch shows p1 at 6 (Running), nothing more is written for it either. */
static void test_stale_event_no_rewrite(void)
{
    Fixture fx = {0};
    fixture_start(&fx, 0);

    wait_puts(&fx, 0, 1);
    settle(100); /* the answer (resourceVersion 6) handled */
    append_event(&fx, "MODIFIED", pod("p1", "5", "Pending"));
    append_event(&fx, "ADDED", pod("p2", "7", "Pending"));
    wait_puts(&fx, 1, 1);
    settle(300);
    g_assert_cmpuint(puts_of(&fx, 0), ==, 1);
    append_event(&fx, "MODIFIED", pod("p1", "6", "Running"));
    append_event(&fx, "MODIFIED", pod("p2", "8", "Running"));
    settle(300);
    g_assert_cmpuint(puts_of(&fx, 0), ==, 1);
    g_assert_cmpuint(puts_of(&fx, 1), ==, 1);
    guint64 started, finished, deleted;
    kbl_kubelet_counts(fx.kubelet, &started, &finished, &deleted);
    g_assert_cmpuint(started, ==, 2);
    fixture_stop(&fx);
}

static char *pod_deleting(const char *name, const char *rv, int grace)
{
    return g_strdup_printf("{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
                           "\"namespace\":\"default\",\"uid\":\"u-%s\",\"resourceVersion\":\"%s\","
                           "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\","
                           "\"deletionGracePeriodSeconds\":%d},"
                           "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\"}]},"
                           "\"status\":{\"phase\":\"Running\"}}",
                           name, name, rv, grace);
}

/* A graceless deletion (deletionGracePeriodSeconds 0) is the server's to finish: kube-apiserver
 * shows the pod marked, then removes it in the same request. p1 is marked so: no DELETE from
 * the kubelet. p2, marked with a grace period of 30 s, is confirmed gone with a DELETE after the
 * stop delay (and shows that p1's event, before it, was handled). */
static void test_graceless_deletion_left_to_server(void)
{
    Fixture fx = {0};
    g_mutex_init(&fx.lock);
    g_autofree char *p1 = pod("p1", "4", "Running");
    g_autofree char *p2 = pod("p2", "5", "Running");
    fx.items = g_strdup_printf("%s,%s", p1, p2);
    fixture_start(&fx, 50);

    settle(200); /* the list handled */
    append_event(&fx, "MODIFIED", pod_deleting("p1", "6", 0));
    append_event(&fx, "MODIFIED", pod_deleting("p2", "7", 30));
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (deletes_of(&fx, 1) < 1 && g_get_monotonic_time() < deadline) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    g_assert_cmpuint(deletes_of(&fx, 1), ==, 1);
    append_event(&fx, "DELETED", pod_deleting("p1", "8", 0));
    settle(300);
    g_assert_cmpuint(deletes_of(&fx, 0), ==, 0);
    g_assert_cmpuint(deletes_of(&fx, 1), ==, 1);
    fixture_stop(&fx);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kubelet/writes/stale-event-no-rewrite", test_stale_event_no_rewrite);
    g_test_add_func("/kubelet/writes/graceless-deletion-left-to-server",
                    test_graceless_deletion_left_to_server);
    return g_test_run();
}
