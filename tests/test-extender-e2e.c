/*
 * Extender mode end to end: bin/kb-apiserver, the real bin/kube-batchd with --extender-address,
 * and this test acting as kube-scheduler (filter, prioritize, bind for each pod of a gang, in
 * kube-scheduler's order, over HTTP with its request types). Checked through the API server:
 * bindings land on the planned nodes with kube-batchd.io/gpu-ids inside one NVLink island, a gang
 * that does not fit binds nothing and every node fails with the PodGroup condition's message,
 * pods kube-batchd does not manage pass through.
 *
 * With KB_K8S_BIN naming a directory holding a real kube-scheduler binary, the same cluster is
 * also scheduled by that kube-scheduler configured with the extender (see test_real_scheduler);
 * otherwise that case says it is skipped.
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kube/kb-client.h"
#include "kube/kb-error.h"
#include "scheduler/cache.h"
#include "tests/apiserver/kas-json.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-util.h"

#define WAIT_MS  20000
#define TOPOLOGY "{\"nvlink\":[[0,1,2,3],[4,5,6,7]]}"

/* ---- cluster -----------------------------------------------------------------------------------
 */

typedef struct {
    KbTestApiserver *api;
    KbClient *client;
    KbTestDaemon *batchd;
    guint http_port;
    guint ext_port;
} Cluster;

static void install_crds(Cluster *cl)
{
    const char *const files[] = {"deploy/crds/podgroup-volcano.yaml",
                                 "deploy/crds/queue-volcano.yaml", NULL};
    kb_test_install_crds(cl->client, files, 5000);
}

static void add_node(Cluster *cl, const char *name, int gpus)
{
    kb_test_create_node(
            cl->client,
            kb_test_json_printf("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{"
                                "\"name\":\"%s\",\"labels\":{\"kubernetes.io/hostname\":"
                                "\"%s\"},\"annotations\":{\"%s\":\"%s\"}}}",
                                name, name, KB_GPU_TOPOLOGY_ANNOTATION,
                                "{\\\"nvlink\\\":[[0,1,2,3],[4,5,6,7]]}"),
            gpus);
}

static void add_group(Cluster *cl, const char *name, int min_member)
{
    kb_test_create_pod_group(cl->client, name, min_member);
}

/* A pod of kube-scheduler (@scheduler), of @group (may be NULL), asking @gpus GPUs. */
static void add_pod(Cluster *cl, const char *name, const char *group, int gpus,
                    const char *scheduler)
{
    g_autofree char *ann =
            group != NULL
                    ? g_strdup_printf(",\"annotations\":{\"scheduling.k8s.io/group-name\":\"%s\"}",
                                      group)
                    : g_strdup("");
    g_autofree char *res =
            gpus > 0 ? g_strdup_printf("{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"%d\"},"
                                       "\"limits\":{\"nvidia.com/gpu\":\"%d\"}}",
                                       gpus, gpus)
                     : g_strdup("{\"requests\":{\"cpu\":\"1\"}}");
    kb_test_create(cl->client, &kb_type_pods, "default",
                   kb_test_json_printf(
                           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                           "\"namespace\":\"default\"%s},\"spec\":{\"schedulerName\":\"%s\","
                           "\"containers\":[{\"name\":\"tensorflow\",\"image\":\"x\",\"resources\":"
                           "%s}]}}",
                           name, ann, scheduler, res));
}

static json_object *get_pod(Cluster *cl, const char *name)
{
    g_autoptr(GError) error = NULL;
    json_object *p = kb_client_get(cl->client, &kb_type_pods, "default", name, &error);
    g_assert_no_error(error);
    return p;
}

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(user, data, (gssize)(size * n));
    return size * n;
}

/* POST (or GET when @body is NULL) to 127.0.0.1:@port@path; status (0: unreachable), body. */
static long http(guint port, const char *path, const char *body, char **out)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u%s", port, path);
    GString *buf = g_string_new(NULL);
    long status = 0;
    CURL *curl = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_URL, url);
    if (body != NULL) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    }
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, buf);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform(curl) == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(curl);
    if (out != NULL)
        *out = g_string_free(buf, FALSE);
    else
        g_string_free(buf, TRUE);
    return status;
}

static Cluster *cluster_start(void)
{
    g_autoptr(GError) error = NULL;
    const char *args[] = {"--simulate-kubelet", NULL};
    Cluster *cl = g_new0(Cluster, 1);
    cl->api = kb_test_apiserver_start_full(args, TRUE, &error);
    g_assert_no_error(error);
    g_autoptr(KbConfig) config = kb_config_new(kb_test_apiserver_url(cl->api));
    cl->client = kb_client_new(config, &error);
    g_assert_no_error(error);
    install_crds(cl);
    for (int i = 0; i < 4; i++) {
        g_autofree char *n = g_strdup_printf("node-%d", i);
        add_node(cl, n, 8);
    }
    return cl;
}

/* kube-batchd in extender mode for the pods of kube-scheduler profile @profile. */
static void batchd_start(Cluster *cl, const char *profile)
{
    cl->http_port = kb_test_free_port();
    cl->ext_port = kb_test_free_port();
    g_autofree char *ext = g_strdup_printf("127.0.0.1:%u", cl->ext_port);
    const char *args[] = {"--extender-address", ext, "--extender-reservation-timeout", "60s", NULL};
    cl->batchd = kb_test_batchd_start(kb_test_apiserver_url(cl->api), cl->http_port, args);
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    while (http(cl->http_port, "/readyz", NULL, NULL) != 200) {
        if (g_get_monotonic_time() > deadline) {
            g_autofree char *log = kb_test_daemon_log(cl->batchd);
            g_error("kube-batchd never ready:\n%s", log);
        }
        g_usleep(30000);
    }
}

static void cluster_free(Cluster *cl)
{
    if (cl == NULL)
        return;
    if (cl->batchd != NULL) {
        int st = kb_test_daemon_stop(cl->batchd, 7000);
        if (st != 0) {
            g_autofree char *log = kb_test_daemon_log(cl->batchd);
            g_printerr("%s", log);
        }
        g_assert_cmpint(st, ==, 0);
        kb_test_daemon_free(cl->batchd);
    }
    kb_client_free(cl->client);
    kb_test_apiserver_free(cl->api);
    g_free(cl);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Cluster, cluster_free)

/* ---- kube-scheduler's side ----------------------------------------------------------------------
 */

static const char *const all_nodes[] = {"node-0", "node-1", "node-2", "node-3", NULL};

/* ExtenderArgs for pod @name as the API server has it now, NodeNames (or a NodeList). */
static char *extender_args(Cluster *cl, const char *name, const char *const *nodes,
                           gboolean node_names)
{
    json_object *pod = get_pod(cl, name);
    GString *s = g_string_new("{\"Pod\":");
    g_string_append(s, json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN));
    json_object_put(pod);
    if (node_names) {
        g_string_append(s, ",\"Nodes\":null,\"NodeNames\":[");
        for (guint i = 0; nodes[i] != NULL; i++)
            g_string_append_printf(s, "%s\"%s\"", i > 0 ? "," : "", nodes[i]);
        g_string_append(s, "]}");
    } else {
        g_string_append(s, ",\"Nodes\":{\"metadata\":{},\"items\":[");
        for (guint i = 0; nodes[i] != NULL; i++) {
            g_autoptr(GError) error = NULL;
            json_object *n = kb_client_get(cl->client, &kb_type_nodes, NULL, nodes[i], &error);
            g_assert_no_error(error);
            g_string_append_printf(s, "%s%s", i > 0 ? "," : "",
                                   json_object_to_json_string_ext(n, JSON_C_TO_STRING_PLAIN));
            json_object_put(n);
        }
        g_string_append(s, "]},\"NodeNames\":null}");
    }
    return g_string_free(s, FALSE);
}

typedef struct {
    GPtrArray *passed;  /* node names */
    GHashTable *failed; /* node -> message */
    char *error;
} FilterAnswer;

static void filter_answer_clear(FilterAnswer *a)
{
    g_clear_pointer(&a->passed, g_ptr_array_unref);
    g_clear_pointer(&a->failed, g_hash_table_unref);
    g_clear_pointer(&a->error, g_free);
}

static void filter(Cluster *cl, const char *pod, gboolean node_names, FilterAnswer *a)
{
    g_autofree char *args = extender_args(cl, pod, all_nodes, node_names);
    g_autofree char *out = NULL;
    long st = http(cl->ext_port, "/scheduler/filter", args, &out);
    if (st != 200) {
        g_autofree char *log = kb_test_daemon_log(cl->batchd);
        g_error("filter %s: HTTP %ld (%s); kube-batchd log:\n%s", pod, st, out, log);
    }
    json_object *o = json_tokener_parse(out);
    g_assert_nonnull(o);
    a->passed = g_ptr_array_new_with_free_func(g_free);
    a->failed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    json_object *names = json_object_object_get(o, "NodeNames");
    json_object *items = json_object_object_get(json_object_object_get(o, "Nodes"), "items");
    g_assert_cmpint(names != NULL, ==, node_names);
    for (size_t i = 0; names != NULL && i < json_object_array_length(names); i++)
        g_ptr_array_add(a->passed,
                        g_strdup(json_object_get_string(json_object_array_get_idx(names, i))));
    for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++)
        g_ptr_array_add(a->passed, g_strdup(kas_json_get_string(json_object_array_get_idx(items, i),
                                                                "metadata.name")));
    json_object_object_foreach(json_object_object_get(o, "FailedNodes"), k, v)
    {
        g_hash_table_insert(a->failed, g_strdup(k), g_strdup(json_object_get_string(v)));
    }
    const char *err = json_object_get_string(json_object_object_get(o, "Error"));
    a->error = err != NULL && err[0] != '\0' ? g_strdup(err) : NULL;
    json_object_put(o);
}

/* Filter @pod until kube-batchd has seen its whole gang and passes exactly one node. */
static char *filter_until_one(Cluster *cl, const char *pod, gboolean node_names)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    for (;;) {
        FilterAnswer a = {0};
        filter(cl, pod, node_names, &a);
        if (a.error == NULL && a.passed->len == 1) {
            g_assert_cmpuint(g_hash_table_size(a.failed), ==, 3);
            char *node = g_strdup(a.passed->pdata[0]);
            filter_answer_clear(&a);
            return node;
        }
        g_assert_cmpuint(a.passed->len, ==, 0);
        filter_answer_clear(&a);
        if (g_get_monotonic_time() > deadline)
            g_error("pod %s: no node passed the filter", pod);
        g_usleep(100000);
    }
}

static gint64 prioritize(Cluster *cl, const char *pod, const char *node)
{
    const char *nodes[] = {node, NULL};
    g_autofree char *args = extender_args(cl, pod, nodes, TRUE);
    g_autofree char *out = NULL;
    g_assert_cmpint(http(cl->ext_port, "/scheduler/prioritize", args, &out), ==, 200);
    json_object *o = json_tokener_parse(out);
    g_assert_cmpuint(json_object_array_length(o), ==, 1);
    json_object *hp = json_object_array_get_idx(o, 0);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(hp, "Host")), ==, node);
    gint64 score = json_object_get_int64(json_object_object_get(hp, "Score"));
    json_object_put(o);
    return score;
}

/* kube-scheduler's bind call; returns the answer's Error ("" on success), newly allocated. */
static char *bind_answer(Cluster *cl, const char *pod, const char *node)
{
    json_object *p = get_pod(cl, pod);
    g_autofree char *args = g_strdup_printf("{\"PodName\":\"%s\",\"PodNamespace\":\"default\","
                                            "\"PodUID\":\"%s\",\"Node\":\"%s\"}",
                                            pod, kas_json_get_string(p, "metadata.uid"), node);
    json_object_put(p);
    g_autofree char *out = NULL;
    g_assert_cmpint(http(cl->ext_port, "/scheduler/bind", args, &out), ==, 200);
    json_object *o = json_tokener_parse(out);
    g_assert_nonnull(o);
    char *err = g_strdup(json_object_get_string(json_object_object_get(o, "Error")));
    json_object_put(o);
    return err;
}

static void bind_pod(Cluster *cl, const char *pod, const char *node)
{
    json_object *p = get_pod(cl, pod);
    g_autofree char *args = g_strdup_printf("{\"PodName\":\"%s\",\"PodNamespace\":\"default\","
                                            "\"PodUID\":\"%s\",\"Node\":\"%s\"}",
                                            pod, kas_json_get_string(p, "metadata.uid"), node);
    json_object_put(p);
    g_autofree char *out = NULL;
    g_assert_cmpint(http(cl->ext_port, "/scheduler/bind", args, &out), ==, 200);
    g_assert_cmpstr(out, ==, "{\"Error\":\"\"}");
}

static guint64 gpu_ids_of(json_object *pod)
{
    const char *ids = kas_json_get_string(pod, "metadata.annotations.kube-batchd\\.io/gpu-ids");
    if (ids == NULL) {
        json_object *ann = kas_json_get(pod, "metadata.annotations");
        json_object *v = NULL;
        if (ann != NULL && json_object_object_get_ex(ann, KB_GPU_IDS_ANNOTATION, &v))
            ids = json_object_get_string(v);
    }
    guint64 mask = 0;
    g_assert_nonnull(ids);
    g_assert_true(kb_cache_gpu_ids_parse(ids, &mask, NULL));
    return mask;
}

static gboolean one_island(guint64 ids)
{
    return (ids & ~(guint64)0x0f) == 0 || (ids & ~(guint64)0xf0) == 0;
}

/* The PodGroup's first condition message, newly allocated, or NULL. */
static char *group_message(Cluster *cl, const char *name)
{
    g_autoptr(GError) error = NULL;
    json_object *g =
            kb_client_get(cl->client, &kb_type_pod_groups_volcano, "default", name, &error);
    g_assert_no_error(error);
    json_object *c = kas_json_get(g, "status.conditions");
    char *msg = NULL;
    if (c != NULL && json_object_array_length(c) > 0)
        msg = g_strdup(kas_json_get_string(json_object_array_get_idx(c, 0), "message"));
    json_object_put(g);
    return msg;
}

/* ---- the cases ---------------------------------------------------------------------------------
 */

/*
 * A gang of four 4-GPU pods goes through filter, prioritize and bind one pod after the other;
 * each lands where the filter passed it, with four GPU ids inside one NVLink island, the gang on
 * two nodes. A 2-GPU pod of no group does the same in NodeList mode. A gang of three 8-GPU pods
 * that cannot fit gets every node failed with its PodGroup's message and binds nothing; a pod
 * without GPU or group passes through and is bound by the extender as asked.
 */
/* The requeue annotation on pod @name, or NULL (newly allocated). */
static char *requeue_mark(Cluster *cl, const char *name)
{
    json_object *pod = get_pod(cl, name);
    json_object *ann = NULL;
    char *v = NULL;
    if (json_object_object_get_ex(json_object_object_get(pod, "metadata"), "annotations", &ann)) {
        json_object *m = json_object_object_get(ann, "kube-batchd.io/gang-planned");
        v = m != NULL ? g_strdup(json_object_get_string(m)) : NULL;
    }
    json_object_put(pod);
    return v;
}

/*
 * A gang created pod by pod, the test acting as kube-scheduler: it asks for each member as it
 * is created and, every node failing, would park it. Once the last member is created and the
 * gang planned, kube-batchd writes the requeue annotation on each parked member (one PATCH
 * each, the only change to them) and on none other; the gang then binds whole.
 */
static void test_requeue_parked(void)
{
    g_autoptr(Cluster) cl = cluster_start();
    batchd_start(cl, "default-scheduler");
    add_group(cl, "seq", 4);
    for (int i = 0; i < 3; i++) {
        g_autofree char *p = g_strdup_printf("seq-%d", i);
        add_pod(cl, p, "seq", 4, "default-scheduler");
        FilterAnswer a = {0};
        filter(cl, p, TRUE, &a);
        g_assert_null(a.error);
        g_assert_cmpuint(a.passed->len, ==, 0);
        g_assert_cmpuint(g_hash_table_size(a.failed), ==, 4);
        filter_answer_clear(&a);
    }
    json_object *before = get_pod(cl, "seq-0");
    g_autofree char *rv_before = g_strdup(kas_json_get_string(before, "metadata.resourceVersion"));
    json_object_put(before);
    /* Past the replan gap, so that the last member's first filter plans the gang. */
    g_usleep(600 * 1000);
    add_pod(cl, "seq-3", "seq", 4, "default-scheduler");
    FilterAnswer last = {0};
    filter(cl, "seq-3", TRUE, &last);
    gboolean first_try = last.error == NULL && last.passed->len == 1;
    filter_answer_clear(&last);
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    for (int i = 0; i < 3; i++) {
        g_autofree char *p = g_strdup_printf("seq-%d", i);
        for (;;) {
            g_autofree char *mark = requeue_mark(cl, p);
            if (mark != NULL)
                break;
            if (g_get_monotonic_time() > deadline) {
                g_autofree char *log = kb_test_daemon_log(cl->batchd);
                g_error("pod %s: never got the requeue annotation; kube-batchd log:\n%s", p, log);
            }
            g_usleep(50000);
        }
    }
    /* Nothing else of the pod changed: still pending, one write. */
    json_object *after = get_pod(cl, "seq-0");
    g_assert_null(kas_json_get_string(after, "spec.nodeName"));
    g_assert_cmpstr(kas_json_get_string(after, "metadata.resourceVersion"), !=, rv_before);
    json_object_put(after);
    if (first_try) {
        g_autofree char *mark = requeue_mark(cl, "seq-3");
        g_assert_null(mark);
    }
    for (int i = 0; i < 4; i++) {
        g_autofree char *p = g_strdup_printf("seq-%d", i);
        g_autofree char *node = filter_until_one(cl, p, TRUE);
        bind_pod(cl, p, node);
        json_object *pod = get_pod(cl, p);
        g_assert_cmpstr(kas_json_get_string(pod, "spec.nodeName"), ==, node);
        json_object_put(pod);
    }
}

static void test_gang_through_extender(void)
{
    g_autoptr(Cluster) cl = cluster_start();
    batchd_start(cl, "default-scheduler");
    add_group(cl, "fit", 4);
    for (int i = 0; i < 4; i++) {
        g_autofree char *p = g_strdup_printf("fit-%d", i);
        add_pod(cl, p, "fit", 4, "default-scheduler");
    }
    g_autoptr(GHashTable) nodes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (int i = 0; i < 4; i++) {
        g_autofree char *p = g_strdup_printf("fit-%d", i);
        g_autofree char *node = filter_until_one(cl, p, TRUE);
        g_assert_cmpint(prioritize(cl, p, node), ==, 10);
        bind_pod(cl, p, node);
        json_object *pod = get_pod(cl, p);
        g_assert_cmpstr(kas_json_get_string(pod, "spec.nodeName"), ==, node);
        guint64 ids = gpu_ids_of(pod);
        g_assert_cmpuint(__builtin_popcountll(ids), ==, 4);
        g_assert_true(one_island(ids));
        json_object_put(pod);
        g_hash_table_add(nodes, g_steal_pointer(&node));
    }
    g_assert_cmpuint(g_hash_table_size(nodes), ==, 2);

    /* NodeList mode (nodeCacheCapable false), a gang of one with GPUs. */
    add_pod(cl, "solo", NULL, 2, "default-scheduler");
    g_autofree char *solo_node = filter_until_one(cl, "solo", FALSE);
    bind_pod(cl, "solo", solo_node);
    json_object *solo = get_pod(cl, "solo");
    g_assert_cmpstr(kas_json_get_string(solo, "spec.nodeName"), ==, solo_node);
    g_assert_true(one_island(gpu_ids_of(solo)));
    json_object_put(solo);

    /* A gang that cannot fit: 3 x 8 GPUs with one free node and a half left. */
    add_group(cl, "huge", 3);
    for (int i = 0; i < 3; i++) {
        g_autofree char *p = g_strdup_printf("huge-%d", i);
        add_pod(cl, p, "huge", 8, "default-scheduler");
    }
    g_autofree char *message = NULL;
    g_autofree char *last_answer = NULL;
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    for (;;) {
        /* Wait until kube-batchd has all three pods and says so in the PodGroup. */
        g_autofree char *m = group_message(cl, "huge");
        if (m != NULL && strstr(m, "waiting for pods") == NULL) {
            FilterAnswer a = {0};
            filter(cl, "huge-1", TRUE, &a);
            g_assert_null(a.error);
            g_assert_cmpuint(a.passed->len, ==, 0);
            g_assert_cmpuint(g_hash_table_size(a.failed), ==, 4);
            const char *first = g_hash_table_lookup(a.failed, "node-0");
            GHashTableIter it;
            gpointer v;
            g_hash_table_iter_init(&it, a.failed);
            while (g_hash_table_iter_next(&it, NULL, &v))
                g_assert_cmpstr(v, ==, first);
            g_autofree char *expect = g_strdup_printf("gang default/huge: %s", m);
            gboolean same = strcmp(first, expect) == 0;
            g_free(last_answer);
            last_answer = g_strdup(first);
            filter_answer_clear(&a);
            if (same) {
                message = g_steal_pointer(&m);
                break;
            }
        }
        if (g_get_monotonic_time() > deadline)
            g_error("gang huge: the filter never answered the PodGroup's message (%s); it "
                    "said: %s",
                    m != NULL ? m : "none", last_answer != NULL ? last_answer : "nothing");
        g_usleep(100000);
    }
    g_test_message("gang huge refused: %s", message);
    for (int i = 0; i < 3; i++) {
        g_autofree char *p = g_strdup_printf("huge-%d", i);
        json_object *pod = get_pod(cl, p);
        g_assert_null(kas_json_get_string(pod, "spec.nodeName"));
        json_object_put(pod);
    }

    /* Not managed: passes every node; bound by the extender where kube-scheduler says. */
    add_pod(cl, "web", NULL, 0, "default-scheduler");
    FilterAnswer a = {0};
    filter(cl, "web", TRUE, &a);
    g_assert_cmpuint(a.passed->len, ==, 4);
    filter_answer_clear(&a);
    bind_pod(cl, "web", "node-3");
    json_object *web = get_pod(cl, "web");
    g_assert_cmpstr(kas_json_get_string(web, "spec.nodeName"), ==, "node-3");
    json_object_put(web);

    /* A bad request on the live daemon: 400, and it keeps serving. */
    g_assert_cmpint(http(cl->ext_port, "/scheduler/filter", "{", NULL), ==, 400);
    g_assert_cmpint(http(cl->ext_port, "/scheduler/nope", "{}", NULL), ==, 404);
    FilterAnswer b = {0};
    filter(cl, "huge-0", TRUE, &b);
    g_assert_cmpuint(g_hash_table_size(b.failed), ==, 4);
    filter_answer_clear(&b);
    g_autofree char *metrics = NULL;
    g_assert_cmpint(http(cl->http_port, "/metrics", NULL, &metrics), ==, 200);
    g_assert_nonnull(
            strstr(metrics, "kube_batchd_extender_requests_total{verb=\"filter\",code=\"400\"} 1"));
}

/* kb-apiserver's fault injection (tests/apiserver/kas-faults.c); "" clears. */
static void set_faults(Cluster *cl, const char *spec)
{
    const char *url = kb_test_apiserver_url(cl->api);
    guint port = (guint)atoi(strrchr(url, ':') + 1);
    g_assert_cmpint(http(port, "/admin/faults", spec, NULL), ==, 200);
}

/*
 * A bind that fails (the API server answers 500 once): kube-scheduler gets the Error and forgets
 * the pod; kube-batchd releases that pod's reservation only, so its gang mate keeps its node and
 * GPUs, the retried pod is planned again elsewhere (never onto the mate's GPUs), and both bind.
 */
static void test_bind_failure(void)
{
    g_autoptr(Cluster) cl = cluster_start();
    batchd_start(cl, "default-scheduler");
    add_group(cl, "pair", 2);
    add_pod(cl, "pair-0", "pair", 8, "default-scheduler");
    add_pod(cl, "pair-1", "pair", 8, "default-scheduler");
    g_autofree char *n0 = filter_until_one(cl, "pair-0", TRUE);
    g_autofree char *n1 = filter_until_one(cl, "pair-1", TRUE);
    g_assert_cmpstr(n0, !=, n1);
    set_faults(cl, "error=500,method=POST,path=*binding,count=1");
    g_autofree char *err = bind_answer(cl, "pair-0", n0);
    g_assert_cmpstr(err, !=, "");
    set_faults(cl, "");
    json_object *p0 = get_pod(cl, "pair-0");
    g_assert_null(kas_json_get_string(p0, "spec.nodeName"));
    json_object_put(p0);
    /* kube-scheduler retries pair-0: a node again, not pair-1's. */
    g_autofree char *again = filter_until_one(cl, "pair-0", TRUE);
    g_assert_cmpstr(again, !=, n1);
    bind_pod(cl, "pair-0", again);
    bind_pod(cl, "pair-1", n1);
    for (int i = 0; i < 2; i++) {
        g_autofree char *p = g_strdup_printf("pair-%d", i);
        json_object *pod = get_pod(cl, p);
        g_assert_cmpstr(kas_json_get_string(pod, "spec.nodeName"), ==, i == 0 ? again : n1);
        g_assert_cmpuint(gpu_ids_of(pod), ==, 0xff);
        json_object_put(pod);
    }
}

/* ---- a real kube-scheduler (KB_K8S_BIN) --------------------------------------------------------
 */

/* Has kube-scheduler tried pod @name and found no node (PodScheduled=False)? Waits up to
 * @wait_ms. */
static gboolean wait_parked(Cluster *cl, const char *name, guint wait_ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)wait_ms * 1000;
    while (g_get_monotonic_time() < deadline) {
        json_object *pod = get_pod(cl, name);
        json_object *conds = kas_json_get(pod, "status.conditions");
        gboolean parked = FALSE;
        for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
            json_object *c = json_object_array_get_idx(conds, i);
            parked |= g_strcmp0(kas_json_get_string(c, "type"), "PodScheduled") == 0 &&
                      g_strcmp0(kas_json_get_string(c, "status"), "False") == 0;
        }
        json_object_put(pod);
        if (parked)
            return TRUE;
        g_usleep(50000);
    }
    return FALSE;
}

/* "1.19" -> 19 from `kube-scheduler --version` ("Kubernetes v1.19.16"); 0 when unknown. */
static int scheduler_minor(const char *bin)
{
    g_autofree char *out = NULL;
    const char *argv[] = {bin, "--version", NULL};
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL,
                      NULL, NULL))
        return 0;
    const char *v = out != NULL ? strstr(out, "v1.") : NULL;
    return v != NULL ? atoi(v + 3) : 0;
}

/* The KubeSchedulerConfiguration apiVersion a kube-scheduler of minor @minor reads. */
static const char *config_api(int minor)
{
    if (minor >= 25)
        return "kubescheduler.config.k8s.io/v1";
    if (minor >= 23)
        return "kubescheduler.config.k8s.io/v1beta3";
    if (minor >= 22)
        return "kubescheduler.config.k8s.io/v1beta2";
    return "kubescheduler.config.k8s.io/v1beta1";
}

/*
 * kube-scheduler itself, configured with the extender (the README's configuration), against the
 * same kb-apiserver: a gang created pod by pod, its first members parked by kube-scheduler, binds
 * whole once the last is created (the parked ones carry the requeue annotation), packed, with GPU
 * ids inside one island; a gang that cannot fit binds no member.
 */
static void test_real_scheduler(void)
{
    const char *dir = g_getenv("KB_K8S_BIN");
    g_autofree char *bin = dir != NULL ? g_build_filename(dir, "kube-scheduler", NULL) : NULL;
    if (bin == NULL || !g_file_test(bin, G_FILE_TEST_IS_EXECUTABLE)) {
        g_printerr("SKIP /extender-e2e/real-kube-scheduler: KB_K8S_BIN does not name a directory "
                   "with a kube-scheduler binary%s%s\n",
                   dir != NULL ? ": " : "", dir != NULL ? dir : "");
        g_test_skip("KB_K8S_BIN with kube-scheduler not given");
        return;
    }
    int minor = scheduler_minor(bin);
    g_test_message("kube-scheduler %s, minor %d", bin, minor);
    g_autoptr(Cluster) cl = cluster_start();
    batchd_start(cl, "kb-ext");
    g_autoptr(GError) error = NULL;
    g_autofree char *tmp = g_dir_make_tmp("kb-ext-XXXXXX", &error);
    g_assert_no_error(error);
    g_autofree char *kubeconfig = g_build_filename(tmp, "kubeconfig", NULL);
    g_autofree char *config = g_build_filename(tmp, "scheduler.yaml", NULL);
    g_autofree char *kc = g_strdup_printf(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kb\n  cluster: {server: %s}\n"
            "users:\n- name: kb\n  user: {}\ncontexts:\n- name: kb\n  context: {cluster: kb, "
            "user: kb}\ncurrent-context: kb\n",
            kb_test_apiserver_url(cl->api));
    g_assert_true(g_file_set_contents(kubeconfig, kc, -1, &error));
    g_autofree char *cfg = g_strdup_printf(
            "apiVersion: %s\nkind: KubeSchedulerConfiguration\nleaderElection: {leaderElect: "
            "false}\nclientConnection: {kubeconfig: %s}\nprofiles:\n- schedulerName: kb-ext\n"
            "extenders:\n- urlPrefix: \"http://127.0.0.1:%u/scheduler\"\n  filterVerb: filter\n"
            "  prioritizeVerb: prioritize\n  preemptVerb: preempt\n  bindVerb: bind\n"
            "  weight: 1\n  enableHTTPS: false\n  nodeCacheCapable: true\n  managedResources:\n"
            "  - {name: nvidia.com/gpu, ignoredByScheduler: false}\n  ignorable: false\n",
            config_api(minor), kubeconfig, cl->ext_port);
    g_assert_true(g_file_set_contents(config, cfg, -1, &error));
    const char *args[] = {bin, "--config", config, "--v=2", NULL};
    g_autofree char *log_path = g_build_filename(tmp, "kube-scheduler.log", NULL);
    int log_fd = g_open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    g_assert_cmpint(log_fd, >=, 0);
    GPid pid = 0;
    g_assert_true(g_spawn_async_with_fds(NULL, (char **)args, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL,
                                         NULL, &pid, -1, log_fd, log_fd, &error));
    close(log_fd);

    /* Pod by pod, as controllers create them: kube-scheduler tries each member as it arrives
     * and parks it (the gang is not complete), which the test sees as PodScheduled=False. */
    add_group(cl, "rfit", 4);
    for (int i = 0; i < 4; i++) {
        g_autofree char *p = g_strdup_printf("rfit-%d", i);
        add_pod(cl, p, "rfit", 4, "kb-ext");
        if (i < 3 && !wait_parked(cl, p, 20000)) {
            g_autofree char *log = NULL;
            g_file_get_contents(log_path, &log, NULL, NULL);
            g_error("kube-scheduler never tried %s:\n%s", p, log != NULL ? log : "");
        }
    }
    add_group(cl, "rhuge", 3);
    for (int i = 0; i < 3; i++) {
        g_autofree char *p = g_strdup_printf("rhuge-%d", i);
        add_pod(cl, p, "rhuge", 8, "kb-ext");
    }
    /* Well inside kube-scheduler's own retry of parked pods (60 s in 1.20): without the
     * requeue write the parked members would still wait when this gives up. */
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    guint bound = 0;
    g_autoptr(GHashTable) nodes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    while (bound < 4 && g_get_monotonic_time() < deadline) {
        bound = 0;
        g_hash_table_remove_all(nodes);
        for (int i = 0; i < 4; i++) {
            g_autofree char *p = g_strdup_printf("rfit-%d", i);
            json_object *pod = get_pod(cl, p);
            const char *n = kas_json_get_string(pod, "spec.nodeName");
            if (n != NULL) {
                bound++;
                g_assert_true(one_island(gpu_ids_of(pod)));
                g_hash_table_add(nodes, g_strdup(n));
            }
            json_object_put(pod);
        }
        g_usleep(200000);
    }
    /* A few more seconds for rhuge: nothing of it may bind. */
    g_usleep(3 * G_USEC_PER_SEC);
    guint huge_bound = 0;
    for (int i = 0; i < 3; i++) {
        g_autofree char *p = g_strdup_printf("rhuge-%d", i);
        json_object *pod = get_pod(cl, p);
        huge_bound += kas_json_get_string(pod, "spec.nodeName") != NULL;
        json_object_put(pod);
    }
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    g_spawn_close_pid(pid);
    if (bound != 4 || huge_bound != 0) {
        g_autofree char *log = NULL;
        g_file_get_contents(log_path, &log, NULL, NULL);
        g_printerr("kube-scheduler log:\n%s\n", log != NULL ? log : "");
    }
    g_assert_cmpuint(bound, ==, 4);
    for (int i = 0; i < 3; i++) {
        g_autofree char *p = g_strdup_printf("rfit-%d", i);
        g_autofree char *mark = requeue_mark(cl, p);
        g_assert_nonnull(mark);
    }
    g_assert_cmpuint(g_hash_table_size(nodes), ==, 2);
    g_assert_cmpuint(huge_bound, ==, 0);
    g_unlink(log_path);
    g_unlink(config);
    g_unlink(kubeconfig);
    g_rmdir(tmp);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    g_test_add_func("/extender-e2e/gang-through-extender", test_gang_through_extender);
    g_test_add_func("/extender-e2e/bind-failure-keeps-gang-mates", test_bind_failure);
    g_test_add_func("/extender-e2e/requeue-parked-members", test_requeue_parked);
    g_test_add_func("/extender-e2e/real-kube-scheduler", test_real_scheduler);
    int rc = g_test_run();
    curl_global_cleanup();
    return rc;
}
