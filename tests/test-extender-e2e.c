/*
 * Extender mode end to end: bin/kb-apiserver, the real bin/kube-batchd with --extender-address
 * as deploy/overlays/extender runs it (HTTPS, client certificates verified against
 * --extender-client-ca-file; certificates made for the run, tests/lib/kb-test-pki.h), and this
 * test acting as kube-scheduler (filter, prioritize, bind for each pod of a gang, in
 * kube-scheduler's order, over HTTPS with its client certificate and request types). Checked
 * through the API server: bindings land on the planned nodes with kube-batchd.io/gpu-ids inside one
 * NVLink island, a gang that does not fit binds nothing and every node fails with the PodGroup
 * condition's message, pods kube-batchd does not manage pass through. The issue's attack and its
 * variants are refused (no certificate: 401; with one, a bind onto a node that fails the pod's
 * selector, taints or capacity), and a seeded storm of random and hostile bodies at every verb
 * binds and evicts nothing the plan would not (checked on the API server's pods).
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
#include "testbed/apiserver/kas-json.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-pki.h"
#include "tests/lib/kb-test-util.h"

/* How long a state the test waits for may take: generous, since a loaded machine running the
 * sanitizer build of every suite at once was seen to need more than 20 s (a deadline for
 * liveness, not a measure of speed). */
#define WAIT_MS  60000
#define TOPOLOGY "{\"nvlink\":[[0,1,2,3],[4,5,6,7]]}"

/* ---- cluster -----------------------------------------------------------------------------------
 */

typedef struct {
    KbTestApiserver *api;
    KbClient *client;
    KbTestDaemon *batchd;
    guint http_port;
    guint ext_port;
    KbTestPki *pki;
    /* Set when kube-batchd runs with deploy/extender-certs.sh's certificates: their directory
     * and the Service name the server certificate is for (resolved to 127.0.0.1). */
    char *cert_dir;
    const char *ext_host;
} Cluster;

static void install_crds(Cluster *cl)
{
    const char *const files[] = {"deploy/base/crds/podgroup-volcano.yaml",
                                 "deploy/base/crds/queue-volcano.yaml", NULL};
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

/* POST (or GET when @body is NULL) to @url; over HTTPS with the run's CA and, when @cert is set,
 * that client certificate (@cert.pem, @cert-key.pem of @pki). Status (0: no answer), body. */
static long request(const char *url, const char *body, const char *dir, const char *cert,
                    const char *resolve, char **out)
{
    GString *buf = g_string_new(NULL);
    long status = 0;
    CURL *curl = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *res = resolve != NULL ? curl_slist_append(NULL, resolve) : NULL;
    curl_easy_setopt(curl, CURLOPT_URL, url);
    g_autofree char *ca_file = dir != NULL ? g_build_filename(dir, "ca.pem", NULL) : NULL;
    g_autofree char *cert_file = cert != NULL ? g_strdup_printf("%s/%s.pem", dir, cert) : NULL;
    g_autofree char *key_file = cert != NULL ? g_strdup_printf("%s/%s-key.pem", dir, cert) : NULL;
    if (dir != NULL)
        curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file);
    if (cert != NULL) {
        curl_easy_setopt(curl, CURLOPT_SSLCERT, cert_file);
        curl_easy_setopt(curl, CURLOPT_SSLKEY, key_file);
    }
    if (res != NULL)
        curl_easy_setopt(curl, CURLOPT_RESOLVE, res);
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
    curl_slist_free_all(res);
    curl_easy_cleanup(curl);
    if (out != NULL)
        *out = g_string_free(buf, FALSE);
    else
        g_string_free(buf, TRUE);
    return status;
}

/* Plain HTTP to 127.0.0.1:@port (kube-batchd's probes and metrics, kb-apiserver's admin). */
static long http(guint port, const char *path, const char *body, char **out)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u%s", port, path);
    return request(url, body, NULL, NULL, NULL, out);
}

/* The extender over HTTPS as @cert ("client": kube-scheduler's; NULL: no certificate). */
static long ext_as(Cluster *cl, const char *cert, const char *path, const char *body, char **out)
{
    const char *host = cl->ext_host != NULL ? cl->ext_host : "127.0.0.1";
    g_autofree char *url = g_strdup_printf("https://%s:%u%s", host, cl->ext_port, path);
    g_autofree char *resolve =
            cl->ext_host != NULL ? g_strdup_printf("%s:%u:127.0.0.1", host, cl->ext_port) : NULL;
    const char *dir = cl->cert_dir != NULL ? cl->cert_dir : kb_test_pki_dir(cl->pki);
    return request(url, body, dir, cert, resolve, out);
}

static long ext(Cluster *cl, const char *path, const char *body, char **out)
{
    return ext_as(cl, "client", path, body, out);
}

static Cluster *cluster_start(void)
{
    g_autoptr(GError) error = NULL;
    const char *args[] = {"--simulate-kubelet", NULL};
    Cluster *cl = g_new0(Cluster, 1);
    cl->pki = kb_test_pki_new();
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

static void batchd_wait_ready(Cluster *cl);

/* kube-batchd in extender mode as deploy/overlays/extender runs it: every interface, HTTPS,
 * client certificates verified. */
static void batchd_start(Cluster *cl, const char *profile)
{
    cl->http_port = kb_test_free_port();
    cl->ext_port = kb_test_free_port();
    g_autofree char *address = g_strdup_printf(":%u", cl->ext_port);
    const char *args[] = {"--extender-address",
                          address,
                          "--extender-tls-cert-file",
                          kb_test_pki_path(cl->pki, "server.pem"),
                          "--extender-tls-key-file",
                          kb_test_pki_path(cl->pki, "server-key.pem"),
                          "--extender-client-ca-file",
                          kb_test_pki_path(cl->pki, "ca.pem"),
                          "--extender-reservation-timeout",
                          "60s",
                          NULL};
    cl->batchd = kb_test_batchd_start(kb_test_apiserver_url(cl->api), cl->http_port, args);
    batchd_wait_ready(cl);
}

static void batchd_wait_ready(Cluster *cl)
{
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
    kb_test_pki_free(cl->pki);
    if (cl->cert_dir != NULL) {
        const char *const files[] = {
                "ca.pem",     "ca-key.pem",     "ca.srl",  "server.pem", "server-key.pem",
                "client.pem", "client-key.pem", "tls.crt", "tls.key",    "ca.crt",
                NULL};
        for (guint i = 0; files[i] != NULL; i++) {
            g_autofree char *f = g_build_filename(cl->cert_dir, files[i], NULL);
            g_unlink(f);
        }
        g_rmdir(cl->cert_dir);
        g_free(cl->cert_dir);
    }
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

/* kube-scheduler's filter call for @pod with the candidates @nodes. */
static void filter(Cluster *cl, const char *pod, const char *const *nodes, gboolean node_names,
                   FilterAnswer *a)
{
    g_autofree char *args = extender_args(cl, pod, nodes, node_names);
    g_autofree char *out = NULL;
    long st = ext(cl, "/scheduler/filter", args, &out);
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

/* Filter @pod among @nodes until kube-batchd has seen its whole gang and passes exactly one. */
static char *filter_until_one(Cluster *cl, const char *pod, const char *const *nodes,
                              gboolean node_names)
{
    guint candidates = g_strv_length((char **)nodes);
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    for (;;) {
        FilterAnswer a = {0};
        filter(cl, pod, nodes, node_names, &a);
        if (a.error == NULL && a.passed->len == 1) {
            g_assert_cmpuint(g_hash_table_size(a.failed), ==, candidates - 1);
            char *node = g_strdup(a.passed->pdata[0]);
            filter_answer_clear(&a);
            return node;
        }
        g_assert_cmpuint(a.passed->len, ==, 0);
        if (g_get_monotonic_time() > deadline) {
            g_autofree char *log = kb_test_daemon_log(cl->batchd);
            GHashTableIter it;
            gpointer k, v;
            g_hash_table_iter_init(&it, a.failed);
            while (g_hash_table_iter_next(&it, &k, &v))
                g_printerr("%s: %s\n", (char *)k, (char *)v);
            g_error("pod %s: no node passed the filter (error %s); kube-batchd log:\n%s", pod,
                    a.error != NULL ? a.error : "none", log);
        }
        filter_answer_clear(&a);
        g_usleep(100000);
    }
}

static gint64 prioritize(Cluster *cl, const char *pod, const char *node)
{
    const char *nodes[] = {node, NULL};
    g_autofree char *args = extender_args(cl, pod, nodes, TRUE);
    g_autofree char *out = NULL;
    g_assert_cmpint(ext(cl, "/scheduler/prioritize", args, &out), ==, 200);
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
    g_assert_cmpint(ext(cl, "/scheduler/bind", args, &out), ==, 200);
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
    g_assert_cmpint(ext(cl, "/scheduler/bind", args, &out), ==, 200);
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
        filter(cl, p, all_nodes, TRUE, &a);
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
    filter(cl, "seq-3", all_nodes, TRUE, &last);
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
        g_autofree char *node = filter_until_one(cl, p, all_nodes, TRUE);
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
        g_autofree char *node = filter_until_one(cl, p, all_nodes, TRUE);
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
    g_autofree char *solo_node = filter_until_one(cl, "solo", all_nodes, FALSE);
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
            filter(cl, "huge-1", all_nodes, TRUE, &a);
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

    /* Not managed: passes every node, but the extender does not bind it (kube-scheduler's
     * managedResources sends it no such call; anyone else's is refused). */
    add_pod(cl, "web", NULL, 0, "default-scheduler");
    FilterAnswer a = {0};
    filter(cl, "web", all_nodes, TRUE, &a);
    g_assert_cmpuint(a.passed->len, ==, 4);
    filter_answer_clear(&a);
    g_autofree char *web_err = bind_answer(cl, "web", "node-3");
    g_assert_nonnull(strstr(web_err, "is not one kube-batchd binds"));
    json_object *web = get_pod(cl, "web");
    g_assert_null(kas_json_get_string(web, "spec.nodeName"));
    json_object_put(web);

    /* A bad request on the live daemon: 400, and it keeps serving. */
    g_assert_cmpint(ext(cl, "/scheduler/filter", "{", NULL), ==, 400);
    g_assert_cmpint(ext(cl, "/scheduler/nope", "{}", NULL), ==, 404);
    FilterAnswer b = {0};
    filter(cl, "huge-0", all_nodes, TRUE, &b);
    g_assert_cmpuint(g_hash_table_size(b.failed), ==, 4);
    filter_answer_clear(&b);
    g_autofree char *metrics = NULL;
    g_assert_cmpint(http(cl->http_port, "/metrics", NULL, &metrics), ==, 200);
    g_assert_nonnull(
            strstr(metrics, "kube_batchd_extender_requests_total{verb=\"filter\",code=\"400\"} 1"));
}

/* kb-apiserver's fault injection (testbed/apiserver/kas-faults.c); "" clears. */
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
    g_autofree char *n0 = filter_until_one(cl, "pair-0", all_nodes, TRUE);
    g_autofree char *n1 = filter_until_one(cl, "pair-1", all_nodes, TRUE);
    g_assert_cmpstr(n0, !=, n1);
    set_faults(cl, "error=500,method=POST,path=*binding,count=1");
    g_autofree char *err = bind_answer(cl, "pair-0", n0);
    g_assert_cmpstr(err, !=, "");
    set_faults(cl, "");
    json_object *p0 = get_pod(cl, "pair-0");
    g_assert_null(kas_json_get_string(p0, "spec.nodeName"));
    json_object_put(p0);
    /* kube-scheduler retries pair-0: a node again, not pair-1's. */
    g_autofree char *again = filter_until_one(cl, "pair-0", all_nodes, TRUE);
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

/* ---- the attack, and hostile bodies ---------------------------------------------------------- */

/* A node with labels and taints (JSON fragments, may be ""). */
static void add_node_with(Cluster *cl, const char *name, int gpus, const char *labels,
                          const char *taints)
{
    kb_test_create_node(
            cl->client,
            kb_test_json_printf("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{"
                                "\"name\":\"%s\",\"labels\":{%s}},\"spec\":{"
                                "\"taints\":[%s]}}",
                                name, labels, taints),
            gpus);
}

/* The issue's victim: a pending pod of default-scheduler, one GPU, nodeSelector secure=yes. */
static void add_victim(Cluster *cl, const char *name, int gpus)
{
    kb_test_create(cl->client, &kb_type_pods, "default",
                   kb_test_json_printf(
                           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                           "\"namespace\":\"default\"},\"spec\":{\"schedulerName\":"
                           "\"default-scheduler\",\"nodeSelector\":{\"secure\":\"yes\"},"
                           "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{"
                           "\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"%d\"},\"limits\":{"
                           "\"nvidia.com/gpu\":\"%d\"}}}]}}",
                           name, gpus, gpus));
}

static char *pod_uid(Cluster *cl, const char *name)
{
    json_object *p = get_pod(cl, name);
    char *uid = g_strdup(kas_json_get_string(p, "metadata.uid"));
    json_object_put(p);
    return uid;
}

/* spec.nodeName of pod @name, newly allocated, NULL while pending. */
static char *pod_node(Cluster *cl, const char *name)
{
    json_object *p = get_pod(cl, name);
    char *n = g_strdup(kas_json_get_string(p, "spec.nodeName"));
    json_object_put(p);
    return n;
}

/* A bind as @cert: HTTP status, and the answer's Error in *@err (newly allocated). */
/* ---- DRA through kube-scheduler and the extender --------------------------------------------- */

/* Each of node-0..3 publishes @n GPUs as a ResourceSlice of driver gpu.nvidia.com, pool the
 * node's name; the class gpu.nvidia.com selects them. */
static void add_dra(Cluster *cl, int n)
{
    kb_test_create(cl->client, &kb_type_device_classes, NULL,
                   kb_test_json_printf("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                                       "\"DeviceClass\",\"metadata\":{\"name\":\"gpu.nvidia.com\"},"
                                       "\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
                                       "\"device.driver == 'gpu.nvidia.com'\"}}]}}"));
    for (guint i = 0; all_nodes[i] != NULL; i++) {
        GString *devs = g_string_new(NULL);
        for (int d = 0; d < n; d++)
            g_string_append_printf(devs,
                                   "%s{\"name\":\"gpu-%d\",\"attributes\":{\"type\":{\"string\":"
                                   "\"gpu\"}}}",
                                   d > 0 ? "," : "", d);
        kb_test_create(cl->client, &kb_type_resource_slices, NULL,
                       kb_test_json_printf("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                                           "\"ResourceSlice\",\"metadata\":{\"name\":\"%s-gpus\"},"
                                           "\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":"
                                           "\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":0,"
                                           "\"resourceSliceCount\":1},\"devices\":[%s]}}",
                                           all_nodes[i], all_nodes[i], all_nodes[i], devs->str));
        g_string_free(devs, TRUE);
    }
}

/* Pod @name of kube-scheduler in gang @group using claim @claim. */
static void add_claim_user(Cluster *cl, const char *name, const char *group, const char *claim)
{
    kb_test_create(
            cl->client, &kb_type_pods, "default",
            kb_test_json_printf(
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                    "\"namespace\":\"default\",\"annotations\":{\"scheduling.k8s.io/group-name\":"
                    "\"%s\"}},\"spec\":{\"schedulerName\":\"default-scheduler\","
                    "\"resourceClaims\":[{\"name\":\"gpus\",\"resourceClaimName\":\"%s\"}],"
                    "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":"
                    "{\"cpu\":\"1\"},\"claims\":[{\"name\":\"gpus\"}]}}]}}",
                    name, group, claim));
}

/* Claim @name of @count GPUs of class gpu.nvidia.com. */
static void add_claim(Cluster *cl, const char *name, int count)
{
    kb_test_create(cl->client, &kb_type_resource_claims, "default",
                   kb_test_json_printf("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                                       "\"ResourceClaim\",\"metadata\":{\"name\":\"%s\","
                                       "\"namespace\":\"default\"},\"spec\":{\"devices\":{"
                                       "\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                                       "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":%d}}]}}}",
                                       name, count));
}

/* Pod @name of kube-scheduler in gang @group, with its own claim @name of @count GPUs. */
static void add_dra_pod(Cluster *cl, const char *name, const char *group, int count)
{
    add_claim(cl, name, count);
    add_claim_user(cl, name, group, name);
}

static json_object *get_claim(Cluster *cl, const char *name)
{
    g_autoptr(GError) error = NULL;
    json_object *c = kb_client_get(cl->client, &kb_type_resource_claims, "default", name, &error);
    g_assert_no_error(error);
    return c;
}

/* kube-scheduler's DynamicResources PreBind: claim @name allocated with @devices of @node's pool
 * (a space-separated list) and reserved for its pod of the same name. */
static void prebind_claim(Cluster *cl, const char *name, const char *node, const char *devices)
{
    g_autofree char *uid = pod_uid(cl, name);
    g_auto(GStrv) devs = g_strsplit(devices, " ", -1);
    GString *results = g_string_new(NULL);
    for (guint i = 0; devs[i] != NULL; i++)
        g_string_append_printf(results,
                               "%s{\"request\":\"gpus\",\"driver\":\"gpu.nvidia.com\",\"pool\":"
                               "\"%s\",\"device\":\"%s\"}",
                               i > 0 ? "," : "", node, devs[i]);
    g_autofree char *patch = g_strdup_printf(
            "{\"status\":{\"allocation\":{\"devices\":{\"results\":[%s]},\"nodeSelector\":{"
            "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
            "\"In\",\"values\":[\"%s\"]}]}]}},\"reservedFor\":[{\"resource\":\"pods\",\"name\":"
            "\"%s\",\"uid\":\"%s\"}]}}",
            results->str, node, name, uid);
    g_string_free(results, TRUE);
    g_autoptr(GError) error = NULL;
    json_object *out = kb_client_patch(cl->client, &kb_type_resource_claims, "default", name,
                                       "status", KB_PATCH_MERGE, patch, &error);
    g_assert_no_error(error);
    json_object_put(out);
}

/* The devices claim @name holds ("pool/device" each, added to @seen, which must not hold them
 * yet: a device given twice fails), asserting it is allocated on @node for its pod. */
static guint claim_devices_on(Cluster *cl, const char *name, const char *node, GHashTable *seen)
{
    json_object *c = get_claim(cl, name);
    json_object *terms = kas_json_get(c, "status.allocation.nodeSelector.nodeSelectorTerms");
    json_object *fields = kas_json_get(json_object_array_get_idx(terms, 0), "matchFields");
    json_object *values = kas_json_get(json_object_array_get_idx(fields, 0), "values");
    g_assert_cmpstr(json_object_get_string(json_object_array_get_idx(values, 0)), ==, node);
    g_autofree char *uid = pod_uid(cl, name);
    json_object *reserved = kas_json_get(c, "status.reservedFor");
    g_assert_cmpuint(json_object_array_length(reserved), ==, 1);
    g_assert_cmpstr(kas_json_get_string(json_object_array_get_idx(reserved, 0), "uid"), ==, uid);
    json_object *results = kas_json_get(c, "status.allocation.devices.results");
    guint n = json_object_array_length(results);
    for (guint i = 0; i < n; i++) {
        json_object *r = json_object_array_get_idx(results, i);
        g_assert_cmpstr(kas_json_get_string(r, "pool"), ==, node);
        char *key = g_strdup_printf("%s/%s", kas_json_get_string(r, "pool"),
                                    kas_json_get_string(r, "device"));
        g_assert_false(g_hash_table_contains(seen, key));
        g_hash_table_add(seen, key);
    }
    json_object_put(c);
    return n;
}

static gint64 metric_value(Cluster *cl, const char *series)
{
    g_autofree char *metrics = NULL;
    g_assert_cmpint(http(cl->http_port, "/metrics", NULL, &metrics), ==, 200);
    const char *at = strstr(metrics, series);
    g_assert_nonnull(at);
    return g_ascii_strtoll(at + strlen(series), NULL, 10);
}

#define CLAIMS_WRITTEN "kube_batchd_extender_claim_writes_total{result=\"written\"} "
#define CLAIMS_ADOPTED "kube_batchd_extender_claim_writes_total{result=\"adopted\"} "

/* Poll until claim @name has no allocation (an undo is sent without waiting for it). */
static void wait_unallocated(Cluster *cl, const char *name)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    for (;;) {
        json_object *c = get_claim(cl, name);
        gboolean allocated = kas_json_get(c, "status.allocation") != NULL;
        json_object_put(c);
        if (!allocated)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("claim %s: still allocated", name);
        g_usleep(100000);
    }
}

/*
 * A DRA gang through kube-scheduler and the extender (docs/extender.md, "DRA"): 4 nodes of 4
 * GPUs published as ResourceSlices; gangs of 2 pods, each with a claim of 4 GPUs, so each member
 * needs a node of its own and the plan names both.
 * - kube-scheduler with DynamicResources: this test writes each claim as its PreBind would
 *   (devices in another order than kube-batchd's plan would take them) before calling bind;
 *   kube-batchd adopts them: it writes no claim, binds, the claims stay as written (the second
 *   with kube-batchd's watch of claims stalled, so that it learns of the claim from its own
 *   write's conflict and a read).
 * - kube-scheduler without it: bind writes the plan's claims (allocated on the planned node,
 *   reserved for the pod) before the Binding; a Binding that fails undoes the claim write.
 * - A bind onto another node than the plan's, or of a pod without a plan, writes nothing and
 *   is refused ("claims"). No device is in two claims.
 */
static void test_dra_gang(void)
{
    g_autoptr(Cluster) cl = cluster_start();
    add_dra(cl, 5);
    batchd_start(cl, "default-scheduler");
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

    /* With kube-scheduler's DynamicResources plugin: it allocates, kube-batchd adopts. */
    add_group(cl, "ks", 2);
    add_dra_pod(cl, "ks-0", "ks", 4);
    add_dra_pod(cl, "ks-1", "ks", 4);
    g_autofree char *k0 = filter_until_one(cl, "ks-0", all_nodes, TRUE);
    g_autofree char *k1 = filter_until_one(cl, "ks-1", all_nodes, TRUE);
    g_assert_cmpstr(k0, !=, k1);
    const char *names[] = {"ks-0", "ks-1"};
    const char *nodes[] = {k0, k1};
    for (guint i = 0; i < 2; i++) {
        if (i == 1) {
            /* kube-batchd's watch of claims held back (after a restart of the server closed
             * it): the claim kube-scheduler writes next is not in its cache when bind comes,
             * so our write meets the precondition and the claim is read and adopted. */
            set_faults(cl, "stall-watch=8000,path=*resourceclaims*;restart");
            g_usleep(2 * G_USEC_PER_SEC);
        }
        prebind_claim(cl, names[i], nodes[i], "gpu-3 gpu-2 gpu-1 gpu-0");
        json_object *before = get_claim(cl, names[i]);
        g_autofree char *rv = g_strdup(kas_json_get_string(before, "metadata.resourceVersion"));
        json_object_put(before);
        bind_pod(cl, names[i], nodes[i]);
        json_object *after = get_claim(cl, names[i]);
        g_assert_cmpstr(kas_json_get_string(after, "metadata.resourceVersion"), ==, rv);
        json_object_put(after);
        json_object *pod = get_pod(cl, names[i]);
        g_assert_cmpstr(kas_json_get_string(pod, "spec.nodeName"), ==, nodes[i]);
        json_object_put(pod);
        g_assert_cmpuint(claim_devices_on(cl, names[i], nodes[i], seen), ==, 4);
    }
    set_faults(cl, "");
    g_assert_cmpint(metric_value(cl, CLAIMS_WRITTEN), ==, 0);
    g_assert_cmpint(metric_value(cl, CLAIMS_ADOPTED), ==, 1);

    /* Without it: kube-batchd writes its plan's claims before each Binding. */
    add_group(cl, "kb", 2);
    add_dra_pod(cl, "kb-0", "kb", 4);
    add_dra_pod(cl, "kb-1", "kb", 4);
    g_autofree char *b0 = filter_until_one(cl, "kb-0", all_nodes, TRUE);
    g_autofree char *b1 = filter_until_one(cl, "kb-1", all_nodes, TRUE);
    g_assert_cmpstr(b0, !=, b1);
    /* another node than the plan's: refused, nothing written */
    const char *other = strcmp(b0, k0) != 0 ? k0 : k1;
    g_autofree char *moved = bind_answer(cl, "kb-0", other);
    g_assert_nonnull(strstr(moved, "claim default/kb-0 is not allocated on node"));
    json_object *c = get_claim(cl, "kb-0");
    g_assert_null(kas_json_get(c, "status.allocation"));
    json_object_put(c);
    /* the plan's node: the claim, then the Binding */
    bind_pod(cl, "kb-0", b0);
    g_assert_cmpuint(claim_devices_on(cl, "kb-0", b0, seen), ==, 4);
    g_assert_cmpint(metric_value(cl, CLAIMS_WRITTEN), ==, 1);
    /* a Binding that fails: the claim write is undone, kube-scheduler retries. kube-batchd's
     * watch of claims shows the write, then stalls before the undo: its next plan, made from a
     * claim it still sees allocated for the pod, writes nothing, is refused at bind and is
     * released, and the plan after the undo shows writes the claim again. */
    set_faults(cl, "error=500,method=POST,path=*binding,count=1;"
                   "stall-watch=6000,path=*resourceclaims*,after=1");
    g_autofree char *failed = bind_answer(cl, "kb-1", b1);
    set_faults(cl, "");
    g_assert_cmpstr(failed, !=, "");
    wait_unallocated(cl, "kb-1");
    /* kube-scheduler retries the pod: filter, then bind where it passed. A plan made before
     * kube-batchd's watch showed the undone claim may still count it allocated, and its bind is
     * refused (nothing written); a later plan writes it. */
    char *again = NULL;
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    for (;;) {
        again = filter_until_one(cl, "kb-1", all_nodes, TRUE);
        g_autofree char *err = bind_answer(cl, "kb-1", again);
        if (strcmp(err, "") == 0)
            break;
        g_test_message("bind kb-1 on %s refused, retrying: %s", again, err);
        if (g_get_monotonic_time() > deadline)
            g_error("kb-1 never bound after its failed Binding: %s", err);
        g_clear_pointer(&again, g_free);
        g_usleep(100000);
    }
    g_assert_cmpuint(claim_devices_on(cl, "kb-1", again, seen), ==, 4);
    g_free(again);
    g_assert_cmpuint(g_hash_table_size(seen), ==, 16);

    /* A claim two members share: written once, by the first bind, reserved for both; the
     * second member binds on the same node without a write of its own. */
    add_group(cl, "sh", 2);
    add_claim(cl, "sh", 1);
    add_claim_user(cl, "sh-0", "sh", "sh");
    add_claim_user(cl, "sh-1", "sh", "sh");
    g_autofree char *s0 = filter_until_one(cl, "sh-0", all_nodes, TRUE);
    g_autofree char *s1 = filter_until_one(cl, "sh-1", all_nodes, TRUE);
    g_assert_cmpstr(s0, ==, s1);
    gint64 written = metric_value(cl, CLAIMS_WRITTEN);
    bind_pod(cl, "sh-0", s0);
    bind_pod(cl, "sh-1", s1);
    g_assert_cmpint(metric_value(cl, CLAIMS_WRITTEN), ==, written + 1);
    c = get_claim(cl, "sh");
    g_assert_cmpuint(json_object_array_length(kas_json_get(c, "status.reservedFor")), ==, 2);
    json_object *results = kas_json_get(c, "status.allocation.devices.results");
    g_assert_cmpuint(json_object_array_length(results), ==, 1);
    g_autofree char *shared = g_strdup_printf(
            "%s/%s", kas_json_get_string(json_object_array_get_idx(results, 0), "pool"),
            kas_json_get_string(json_object_array_get_idx(results, 0), "device"));
    g_assert_true(g_str_has_prefix(shared, s0));
    g_assert_false(g_hash_table_contains(seen, shared));
    json_object_put(c);

    /* No node has 2 GPUs left: a pod without a plan gets no claim written, whoever asks. */
    add_group(cl, "late", 1);
    add_dra_pod(cl, "late-0", "late", 2);
    g_autofree char *late = bind_answer(cl, "late-0", "node-0");
    g_assert_cmpstr(late, !=, "");
    c = get_claim(cl, "late-0");
    g_assert_null(kas_json_get(c, "status.allocation"));
    json_object_put(c);
    json_object *pod = get_pod(cl, "late-0");
    g_assert_null(kas_json_get_string(pod, "spec.nodeName"));
    json_object_put(pod);
}

static long bind_as(Cluster *cl, const char *cert, const char *ns, const char *pod, const char *uid,
                    const char *node, char **err)
{
    g_autofree char *args = g_strdup_printf("{\"PodName\":\"%s\",\"PodNamespace\":\"%s\","
                                            "\"PodUID\":\"%s\",\"Node\":\"%s\"}",
                                            pod, ns, uid, node);
    g_autofree char *out = NULL;
    long st = ext_as(cl, cert, "/scheduler/bind", args, &out);
    *err = NULL;
    if (st == 200) {
        json_object *o = json_tokener_parse(out);
        g_assert_nonnull(o);
        *err = g_strdup(json_object_get_string(json_object_object_get(o, "Error")));
        json_object_put(o);
    }
    return st;
}

/* The secure nodes for the attack: "secure" (label, 8 GPUs), "tainted" (label, a NoSchedule
 * taint), "small" (label, no GPU); "evil" has neither label nor GPUs. */
static void add_attack_nodes(Cluster *cl)
{
    add_node_with(cl, "evil", 0, "", "");
    add_node_with(cl, "secure", 8, "\"secure\":\"yes\"", "");
    add_node_with(cl, "tainted", 8, "\"secure\":\"yes\"",
                  "{\"key\":\"dedicated\",\"value\":\"infra\",\"effect\":\"NoSchedule\"}");
    add_node_with(cl, "small", 0, "\"secure\":\"yes\"", "");
}

/*
 * The issue's attack against kube-batchd as deploy/ runs it: the plain-HTTP request gets no
 * answer, HTTPS without a client certificate (or with one of another CA) 401; with kube-scheduler's
 * certificate, binds onto a node failing the selector, the taints or the capacity, in another
 * namespace or under another UID, are refused and the pod stays pending. kube-scheduler's own
 * path (filter, then bind where it passed) still binds it, and a replay of that bind is refused.
 */
static void test_attack(void)
{
    g_autoptr(Cluster) cl = cluster_start();
    batchd_start(cl, "default-scheduler");
    kb_test_pki_issue(cl->pki, "stranger", "kube-scheduler", KB_TEST_CERT_OTHER_CA);
    add_attack_nodes(cl);
    add_victim(cl, "victim", 1);
    g_autofree char *uid = pod_uid(cl, "victim");
    g_autofree char *body = g_strdup_printf("{\"PodName\":\"victim\",\"PodNamespace\":"
                                            "\"default\",\"PodUID\":\"%s\",\"Node\":\"evil\"}",
                                            uid);
    g_autofree char *plain = g_strdup_printf("http://127.0.0.1:%u/scheduler/bind", cl->ext_port);
    g_assert_cmpint(request(plain, body, NULL, NULL, NULL, NULL), !=, 200);
    g_autofree char *err = NULL;
    g_assert_cmpint(bind_as(cl, NULL, "default", "victim", uid, "evil", &err), ==, 401);
    g_assert_cmpint(bind_as(cl, "stranger", "default", "victim", uid, "evil", &err), ==, 401);
    static const struct {
        const char *ns, *node;
        gboolean right_uid;
        const char *says;
    } variants[] = {
            {"default", "evil", TRUE, "nodeSelector"},
            {"default", "tainted", TRUE, "dedicated=infra:NoSchedule"},
            {"default", "small", TRUE, "short of nvidia.com/gpu"},
            {"default", "node-0", TRUE, "nodeSelector"},
            {"default", "nowhere", TRUE, "unknown"},
            {"default", "secure", FALSE, "is not the pod's"},
            {"kube-system", "secure", TRUE, "is not one kube-batchd binds"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(variants); i++) {
        g_clear_pointer(&err, g_free);
        g_assert_cmpint(bind_as(cl, "client", variants[i].ns, "victim",
                                variants[i].right_uid ? uid : "0000-forged", variants[i].node,
                                &err),
                        ==, 200);
        g_test_message("bind victim -> %s: %s", variants[i].node, err);
        if (err == NULL || strstr(err, variants[i].says) == NULL)
            g_error("variant %u (%s): answer \"%s\", expected it to say \"%s\"", i,
                    variants[i].node, err != NULL ? err : "", variants[i].says);
        g_autofree char *node = pod_node(cl, "victim");
        g_assert_null(node);
    }
    /* kube-scheduler's path: the filter passes only "secure", the bind lands there. */
    FilterAnswer a = {0};
    const char *const nodes[] = {"evil", "secure", "tainted", "small", NULL};
    g_autofree char *args = extender_args(cl, "victim", nodes, TRUE);
    g_autofree char *out = NULL;
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    for (;;) {
        g_clear_pointer(&out, g_free);
        g_assert_cmpint(ext(cl, "/scheduler/filter", args, &out), ==, 200);
        if (strstr(out, "\"NodeNames\":[\"secure\"]") != NULL)
            break;
        if (g_get_monotonic_time() > deadline)
            g_error("the filter never passed node secure: %s", out);
        g_usleep(100000);
    }
    (void)a;
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(bind_as(cl, "client", "default", "victim", uid, "secure", &err), ==, 200);
    g_assert_cmpstr(err, ==, "");
    g_autofree char *node = pod_node(cl, "victim");
    g_assert_cmpstr(node, ==, "secure");
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(bind_as(cl, "client", "default", "victim", uid, "evil", &err), ==, 200);
    g_assert_nonnull(strstr(err, "already bound"));
    g_autofree char *metrics = NULL;
    g_assert_cmpint(http(cl->http_port, "/metrics", NULL, &metrics), ==, 200);
    g_assert_nonnull(strstr(metrics, "kube_batchd_extender_unauthenticated_total 2\n"));
    g_assert_nonnull(
            strstr(metrics, "kube_batchd_extender_bind_refused_total{reason=\"predicates\"} 3\n"));
    g_assert_nonnull(
            strstr(metrics, "kube_batchd_extender_bind_refused_total{reason=\"capacity\"} 1\n"));
    g_autofree char *log = kb_test_daemon_log(cl->batchd);
    g_assert_nonnull(strstr(log, "by CN=kube-scheduler at 127.0.0.1:"));
}

/* The extender flags of deploy/overlays/extender (its patch's "value: --extender-..." lines),
 * the Secret's mount directory replaced by @mount and the port by @port. */
static GPtrArray *deploy_extender_args(const char *mount, guint port)
{
    g_autofree char *path = g_build_filename(
            kb_test_src_dir(), "deploy/overlays/extender/kube-batchd-extender.yaml", NULL);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    GPtrArray *args = g_ptr_array_new_with_free_func(g_free);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_autofree char *port_arg = g_strdup_printf("=:%u", port);
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *l = g_strstrip(lines[i]);
        if (!g_str_has_prefix(l, "value: --extender-"))
            continue;
        g_autoptr(GString) a = g_string_new(l + strlen("value: "));
        g_string_replace(a, "/etc/kube-batchd/extender", mount, 0);
        g_string_replace(a, "=:8888", port_arg, 0);
        g_ptr_array_add(args, g_string_free(g_steal_pointer(&a), FALSE));
    }
    return args;
}

static void copy_file(const char *dir, const char *from, const char *to)
{
    g_autofree char *src = g_build_filename(dir, from, NULL);
    g_autofree char *dst = g_build_filename(dir, to, NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(src, &text, &len, NULL));
    g_assert_true(g_file_set_contents(dst, text, (gssize)len, NULL));
}

/*
 * deploy/ as shipped: deploy/extender-certs.sh makes the certificates (openssl), kube-batchd runs
 * with deploy/overlays/extender's extender flags on them (the Secret's files tls.crt, tls.key,
 * ca.crt), and kube-scheduler's side is what the overlay's kube-scheduler-extender.yaml
 * configures: https to the Service name, its client certificate, the CA verifying the server. A
 * gang binds through it; a call without the certificate gets 401.
 */
static void test_deploy_certificates(void)
{
    g_autofree char *openssl = g_find_program_in_path("openssl");
    if (openssl == NULL) {
        g_printerr("SKIP /extender-e2e/deploy-certificates: no openssl on PATH\n");
        g_test_skip("openssl not installed");
        return;
    }
    g_autoptr(Cluster) cl = cluster_start();
    g_autoptr(GError) error = NULL;
    cl->cert_dir = g_dir_make_tmp("kb-deploy-certs-XXXXXX", &error);
    g_assert_no_error(error);
    g_autofree char *script = g_build_filename(kb_test_src_dir(), "deploy/extender-certs.sh", NULL);
    const char *argv[] = {"bash", script, cl->cert_dir, NULL};
    g_autofree char *err = NULL;
    int status = -1;
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL,
                               &err, &status, &error));
    g_assert_no_error(error);
    if (!g_spawn_check_wait_status(status, NULL))
        g_error("extender-certs.sh failed:\n%s", err);
    copy_file(cl->cert_dir, "server.pem", "tls.crt");
    copy_file(cl->cert_dir, "server-key.pem", "tls.key");
    copy_file(cl->cert_dir, "ca.pem", "ca.crt");
    cl->ext_host = "kube-batchd.kube-batchd.svc";
    cl->http_port = kb_test_free_port();
    cl->ext_port = kb_test_free_port();
    g_autoptr(GPtrArray) args = deploy_extender_args(cl->cert_dir, cl->ext_port);
    g_assert_cmpuint(args->len, ==, 4);
    g_ptr_array_add(args, NULL);
    cl->batchd = kb_test_batchd_start(kb_test_apiserver_url(cl->api), cl->http_port,
                                      (const char *const *)args->pdata);
    batchd_wait_ready(cl);
    add_group(cl, "dep", 2);
    add_pod(cl, "dep-0", "dep", 4, "default-scheduler");
    add_pod(cl, "dep-1", "dep", 4, "default-scheduler");
    for (int i = 0; i < 2; i++) {
        g_autofree char *p = g_strdup_printf("dep-%d", i);
        g_autofree char *node = filter_until_one(cl, p, all_nodes, TRUE);
        bind_pod(cl, p, node);
        g_autofree char *on = pod_node(cl, p);
        g_assert_cmpstr(on, ==, node);
    }
    g_autofree char *uid = pod_uid(cl, "dep-0");
    g_autofree char *answer = NULL;
    g_assert_cmpint(bind_as(cl, NULL, "default", "dep-0", uid, "node-0", &answer), ==, 401);
}

/* ---- the property: hostile bodies change nothing the plan would not ------------------------- */

#define STORM_CALLS 240

typedef struct {
    const char *name;
    char *uid;
    json_object *pod; /* as the API server had it before the storm */
} Target;

static const char *const storm_nodes[] = {"evil",   "secure", "tainted", "small",   "node-0",
                                          "node-1", "node-2", "node-3",  "nowhere", ""};
static const char *const storm_namespaces[] = {"default", "kube-system", "team-b", ""};

/* What kube-scheduler's own filters leave for a GPU pod without a selector: the nodes with GPUs
 * and no taint it does not tolerate. */
static const char *const gpu_candidates[] = {"secure", "node-0", "node-1",
                                             "node-2", "node-3", NULL};

static const char *pick(GRand *r, const char *const *v, guint n)
{
    return v[g_rand_int_range(r, 0, (gint32)n)];
}

/* A pod body: one of the targets, perhaps bent (selector dropped, UID, namespace or resources
 * changed, bound elsewhere), or a pod nobody created. */
static char *storm_pod(GRand *r, Target *t, guint n_targets)
{
    Target *x = &t[g_rand_int_range(r, 0, (gint32)n_targets)];
    json_object *p = NULL;
    json_object_deep_copy(x->pod, &p, NULL);
    json_object *meta = json_object_object_get(p, "metadata");
    json_object *spec = json_object_object_get(p, "spec");
    switch (g_rand_int_range(r, 0, 7)) {
    case 0:
        json_object_object_del(spec, "nodeSelector");
        break;
    case 1:
        json_object_object_add(meta, "uid", json_object_new_string("forged-uid"));
        json_object_object_del(spec, "nodeSelector");
        break;
    case 2:
        json_object_object_add(meta, "namespace",
                               json_object_new_string(pick(r, storm_namespaces, 4)));
        break;
    case 3:
        json_object_object_add(spec, "nodeName", json_object_new_string(pick(r, storm_nodes, 8)));
        break;
    case 4:
        json_object_object_add(meta, "name", json_object_new_string("ghost"));
        json_object_object_add(meta, "uid", json_object_new_string("ghost-uid"));
        break;
    case 5:
        json_object_object_add(spec, "priority", json_object_new_int(2000000000));
        break;
    default:
        break;
    }
    char *s = g_strdup(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN));
    json_object_put(p);
    return s;
}

/* One random body for @verb. */
static char *storm_body(GRand *r, const char *verb, Target *t, guint n_targets)
{
    guint kind = (guint)g_rand_int_range(r, 0, 10);
    if (kind == 0) { /* bytes */
        guint n = (guint)g_rand_int_range(r, 0, 300);
        char *b = g_malloc(n + 1);
        for (guint i = 0; i < n; i++)
            b[i] = (char)g_rand_int_range(r, 1, 256);
        b[n] = '\0';
        return b;
    }
    GString *s = g_string_new(NULL);
    Target *x = &t[g_rand_int_range(r, 0, (gint32)n_targets)];
    Target *y = &t[g_rand_int_range(r, 0, (gint32)n_targets)];
    if (strcmp(verb, "bind") == 0) {
        /* Biased towards the real pod (its namespace and UID), where only the plan refuses. */
        const char *uids[] = {x->uid, x->uid, x->uid,
                              y->uid, "",     "00000000-0000-0000-0000-000000000000"};
        const char *ns = g_rand_int_range(r, 0, 4) > 0 ? "default" : pick(r, storm_namespaces, 4);
        g_string_printf(s,
                        "{\"PodName\":\"%s\",\"PodNamespace\":\"%s\",\"PodUID\":\"%s\","
                        "\"Node\":\"%s\"}",
                        g_rand_int_range(r, 0, 8) == 0 ? "ghost" : x->name, ns, pick(r, uids, 6),
                        pick(r, storm_nodes, G_N_ELEMENTS(storm_nodes)));
    } else if (strcmp(verb, "preempt") == 0) {
        g_autofree char *pod = storm_pod(r, t, n_targets);
        g_string_printf(s,
                        "{\"Pod\":%s,\"NodeNameToMetaVictims\":{\"%s\":{\"Pods\":["
                        "{\"UID\":\"%s\"},{\"UID\":\"%s\"}],\"NumPDBViolations\":0}}}",
                        pod, pick(r, storm_nodes, 8), x->uid, y->uid);
    } else {
        g_autofree char *pod = storm_pod(r, t, n_targets);
        g_string_printf(s, "{\"Pod\":%s,\"NodeNames\":[", pod);
        guint n = (guint)g_rand_int_range(r, 0, 9);
        for (guint i = 0; i < n; i++)
            g_string_append_printf(s, "%s\"%s\"", i > 0 ? "," : "",
                                   pick(r, storm_nodes, G_N_ELEMENTS(storm_nodes)));
        g_string_append(s, "]}");
    }
    if (kind == 1) /* cut short */
        g_string_truncate(s, (gsize)g_rand_int_range(r, 0, (gint32)s->len));
    return g_string_free(s, FALSE);
}

/* May pod @name be on @node? What the plan allows: its selector, no taint it does not
 * tolerate, a node with GPUs; "web" is not kube-batchd's to bind at all. */
static gboolean admissible(const char *name, const char *node)
{
    if (strcmp(name, "web") == 0)
        return FALSE;
    gboolean gpu_node = strcmp(node, "secure") == 0 || g_str_has_prefix(node, "node-");
    if (strcmp(name, "victim") == 0)
        return strcmp(node, "secure") == 0;
    return gpu_node;
}

/*
 * The property test: STORM_CALLS random and hostile bodies (seeded by GTest's --seed) at every
 * verb, nine in ten with kube-scheduler's certificate (a compromised or confused caller: the
 * plan is then all that stands), one in ten without. Then on the API server: every pod bound is
 * on a node the plan allows it, the pod bound before the storm has not moved, none is deleted or
 * evicted, no node holds more GPUs than it has; kube-batchd still serves, and kube-scheduler's
 * own path still binds the gang.
 */
static void test_hostile_bodies(void)
{
    g_autoptr(Cluster) cl = cluster_start();
    batchd_start(cl, "default-scheduler");
    add_attack_nodes(cl);
    add_victim(cl, "victim", 1);
    add_group(cl, "pair", 2);
    add_pod(cl, "pair-0", "pair", 4, "default-scheduler");
    add_pod(cl, "pair-1", "pair", 4, "default-scheduler");
    add_pod(cl, "web", NULL, 0, "default-scheduler");
    add_pod(cl, "settled", NULL, 2, "default-scheduler");
    g_autofree char *settled_node = filter_until_one(cl, "settled", gpu_candidates, TRUE);
    bind_pod(cl, "settled", settled_node);
    Target t[] = {{"victim"}, {"pair-0"}, {"pair-1"}, {"web"}, {"settled"}};
    for (guint i = 0; i < G_N_ELEMENTS(t); i++) {
        t[i].pod = get_pod(cl, t[i].name);
        t[i].uid = g_strdup(kas_json_get_string(t[i].pod, "metadata.uid"));
    }
    guint32 seed = g_test_rand_int();
    g_test_message("storm seed %u", seed);
    g_autoptr(GRand) r = g_rand_new_with_seed(seed);
    static const char *const verbs[] = {"filter", "prioritize", "bind", "preempt"};
    guint codes[600] = {0};
    for (guint i = 0; i < STORM_CALLS; i++) {
        const char *verb = pick(r, verbs, 4);
        g_autofree char *body = storm_body(r, verb, t, G_N_ELEMENTS(t));
        g_autofree char *path = g_strdup_printf("/scheduler/%s", verb);
        const char *cert = g_rand_int_range(r, 0, 10) == 0 ? NULL : "client";
        long st = ext_as(cl, cert, path, body, NULL);
        if (st != 200 && st != 400 && st != 401 && st != 413)
            g_error("call %u (%s): HTTP %ld for body %s", i, verb, st, body);
        g_assert_true(cert != NULL || st == 401);
        codes[st]++;
    }
    g_test_message("storm: %u answered 200, %u 400, %u 401, %u 413", codes[200], codes[400],
                   codes[401], codes[413]);
    g_assert_cmpint(http(cl->http_port, "/healthz", NULL, NULL), ==, 200);
    /* What the API server holds now. */
    g_autoptr(GError) error = NULL;
    json_object *list = kb_client_list(cl->client, &kb_type_pods, "default", NULL, &error);
    g_assert_no_error(error);
    json_object *items = json_object_object_get(list, "items");
    g_assert_cmpuint(json_object_array_length(items), ==, G_N_ELEMENTS(t));
    g_autoptr(GHashTable) gpus = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < json_object_array_length(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        const char *name = kas_json_get_string(p, "metadata.name");
        const char *node = kas_json_get_string(p, "spec.nodeName");
        g_assert_null(kas_json_get(p, "metadata.deletionTimestamp"));
        if (strcmp(name, "settled") == 0) {
            g_assert_cmpstr(node, ==, settled_node);
        } else if (node != NULL && !admissible(name, node)) {
            g_error("pod %s was bound to %s, which the plan does not allow", name, node);
        }
        if (node != NULL) {
            const char *q = kas_json_get_string(
                    json_object_array_get_idx(kas_json_get(p, "spec.containers"), 0),
                    "resources.requests.nvidia\\.com/gpu");
            gint n = GPOINTER_TO_INT(g_hash_table_lookup(gpus, node)) + (q != NULL ? atoi(q) : 0);
            g_assert_cmpint(n, <=, 8);
            g_hash_table_insert(gpus, (gpointer)node, GINT_TO_POINTER(n));
        }
        g_test_message("after the storm: %s on %s", name, node != NULL ? node : "(pending)");
    }
    json_object_put(list);
    for (guint i = 0; i < G_N_ELEMENTS(t); i++) {
        json_object_put(t[i].pod);
        g_free(t[i].uid);
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
        gboolean parked = kb_test_pod_parked(pod);
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
 * kube-scheduler itself, configured with the extender (docs/extender.md's configuration), against
 * the same kb-apiserver: a gang created pod by pod, its first members parked by kube-scheduler,
 * binds whole once the last is created (the parked ones carry the requeue annotation), packed, with
 * GPU ids inside one island; a gang that cannot fit binds no member.
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
            "extenders:\n- urlPrefix: \"https://127.0.0.1:%u/scheduler\"\n  filterVerb: filter\n"
            "  prioritizeVerb: prioritize\n  preemptVerb: preempt\n  bindVerb: bind\n"
            "  weight: 1\n  enableHTTPS: true\n  tlsConfig:\n    certFile: %s\n"
            "    keyFile: %s\n    caFile: %s\n  nodeCacheCapable: true\n"
            "  managedResources:\n  - {name: nvidia.com/gpu, ignoredByScheduler: false}\n"
            "  ignorable: false\n",
            config_api(minor), kubeconfig, cl->ext_port, kb_test_pki_path(cl->pki, "client.pem"),
            kb_test_pki_path(cl->pki, "client-key.pem"), kb_test_pki_path(cl->pki, "ca.pem"));
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
    g_test_add_func("/extender-e2e/dra-gang", test_dra_gang);
    g_test_add_func("/extender-e2e/attack-refused", test_attack);
    g_test_add_func("/extender-e2e/hostile-bodies", test_hostile_bodies);
    g_test_add_func("/extender-e2e/deploy-certificates", test_deploy_certificates);
    g_test_add_func("/extender-e2e/requeue-parked-members", test_requeue_parked);
    g_test_add_func("/extender-e2e/real-kube-scheduler", test_real_scheduler);
    int rc = g_test_run();
    curl_global_cleanup();
    return rc;
}
