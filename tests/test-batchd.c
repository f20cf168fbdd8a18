/*
 * Integration tests of bin/kube-batchd against bin/kb-apiserver, both as child processes, driven
 * through the REST client as a user's tools would: CRDs from deploy/base/crds/, queues, nodes, pods
 * and PodGroups in; bindings, PodGroup conditions, events, /metrics and leader hand-over out.
 *
 * Each test starts its own API server (fresh state) and daemons with --schedule-period 200ms.
 */
#include <curl/curl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "kube/kb-client.h"
#include "kube/kb-error.h"
#include "scheduler/conf.h"
#include "scheduler/reserve.h"
#include "scheduler/history.h"
#include "testbed/apiserver/kas-json.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-confs.h"
#include "tests/lib/kb-test-util.h"

#define WAIT_MS 8000

/* ---- child processes ----------------------------------------------------------------------- */

typedef struct {
    KbTestDaemon *daemon;
    guint http_port;
} Child;

static char *child_log(Child *c)
{
    return kb_test_daemon_log(c->daemon);
}

static void child_free(Child *c)
{
    if (c == NULL)
        return;
    kb_test_daemon_free(c->daemon);
    g_free(c);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Child, child_free)

typedef struct {
    KbTestApiserver *api;
    KbClient *client;
} Cluster;

/* bin/kb-apiserver with @args (NULL-terminated). */
static Cluster *cluster_start_with(const char *const *args)
{
    g_autoptr(GError) error = NULL;
    Cluster *cl = g_new0(Cluster, 1);
    cl->api = kb_test_apiserver_start_full(args, TRUE, &error);
    g_assert_no_error(error);
    g_autoptr(KbConfig) config = kb_config_new(kb_test_apiserver_url(cl->api));
    cl->client = kb_client_new(config, &error);
    g_assert_no_error(error);
    return cl;
}

static Cluster *cluster_start(void)
{
    const char *args[] = {"--simulate-kubelet", NULL};
    return cluster_start_with(args);
}

static void cluster_free(Cluster *cl)
{
    if (cl == NULL)
        return;
    kb_client_free(cl->client);
    kb_test_apiserver_free(cl->api);
    g_free(cl);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Cluster, cluster_free)

/* Start bin/kube-batchd against @cl with the extra arguments (NULL-terminated). */
static Child *daemon_start(Cluster *cl, ...)
{
    Child *c = g_new0(Child, 1);
    c->http_port = kb_test_free_port();
    va_list ap;
    va_start(ap, cl);
    c->daemon = kb_test_batchd_startv(kb_test_apiserver_url(cl->api), c->http_port, ap);
    va_end(ap);
    return c;
}

/* SIGTERM, then expect a clean exit (0) within 7 s. */
static void daemon_stop(Child *c)
{
    int status = kb_test_daemon_stop(c->daemon, 7000);
    if (status != 0) {
        g_autofree char *log = child_log(c);
        g_printerr("%s", log);
    }
    g_assert_cmpint(status, ==, 0);
}

/* ---- HTTP to the daemon ---------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(user, data, (gssize)(size * n));
    return size * n;
}

/* GET @url; returns the status (0 when unreachable), body into @body. */
static long http_get_url(const char *url, char **body)
{
    GString *buf = g_string_new(NULL);
    long status = 0;
    CURL *curl = curl_easy_init();
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, buf);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 3000L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform(curl) == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);
    if (body != NULL)
        *body = g_string_free(buf, FALSE);
    else
        g_string_free(buf, TRUE);
    return status;
}

/* GET http://127.0.0.1:@port@path (the daemon's HTTP server). */
static long http_get(guint port, const char *path, char **body)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u%s", port, path);
    return http_get_url(url, body);
}

/* The value of the sample line starting with @series ("name{labels}") in @text, or -1. */
static double metric_value(const char *text, const char *series)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    gsize n = strlen(series);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (strncmp(lines[i], series, n) == 0 && lines[i][n] == ' ')
            return g_ascii_strtod(lines[i] + n + 1, NULL);
    }
    return -1;
}

/* The first /readyz answer of @d other than "no connection" (0 when none came within @ms). */
static long readyz_when_serving(Child *d, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    long status = 0;
    while (status == 0 && g_get_monotonic_time() < deadline) {
        status = http_get(d->http_port, "/readyz", NULL);
        if (status == 0)
            g_usleep(20000);
    }
    return status;
}

static gboolean wait_ready(Child *d, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    while (g_get_monotonic_time() < deadline) {
        if (http_get(d->http_port, "/readyz", NULL) == 200)
            return TRUE;
        g_usleep(20000);
    }
    return FALSE;
}

/* ---- objects ------------------------------------------------------------------------------- */

/* @text in file @name of a new temporary directory: its path (conf_file_remove() removes both). */
static char *conf_file(const char *name, const char *text)
{
    g_autofree char *dir = g_dir_make_tmp("kb-batchd-XXXXXX", NULL);
    g_assert_nonnull(dir);
    char *path = g_build_filename(dir, name, NULL);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

static void conf_file_remove(const char *path)
{
    g_autofree char *dir = g_path_get_dirname(path);
    g_unlink(path);
    g_rmdir(dir);
}

/* Our CRDs, with @queue_crd as the Volcano Queue's (NULL: ours). */
static void install_crds_with(Cluster *cl, const char *queue_crd)
{
    const char *const files[] = {"deploy/base/crds/podgroup-volcano.yaml",
                                 "deploy/base/crds/podgroup-kube-batch.yaml",
                                 "deploy/base/crds/podgroup-x-k8s.yaml",
                                 queue_crd != NULL ? queue_crd
                                                   : "deploy/base/crds/queue-volcano.yaml",
                                 "deploy/base/crds/queue-kube-batch.yaml",
                                 NULL};
    kb_test_install_crds(cl->client, files, 3000);
}

static void install_crds(Cluster *cl)
{
    install_crds_with(cl, NULL);
}

/* A Ready node with @gpus GPUs, 64 cpus, 256Gi; @taint "k=v:Effect" or NULL. */
static void add_node(Cluster *cl, const char *name, int gpus, const char *taint)
{
    g_autofree char *taints = NULL;
    if (taint != NULL) {
        g_auto(GStrv) kv = g_strsplit_set(taint, "=:", 3);
        taints = g_strdup_printf(",\"spec\":{\"taints\":[{\"key\":\"%s\",\"value\":\"%s\","
                                 "\"effect\":\"%s\"}]}",
                                 kv[0], kv[1], kv[2]);
    }
    kb_test_create_node(
            cl->client,
            kb_test_json_printf("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{"
                                "\"name\":\"%s\",\"labels\":{\"kubernetes.io/hostname\":"
                                "\"%s\"}}%s}",
                                name, name, taints != NULL ? taints : ""),
            gpus);
}

static void add_queue(Cluster *cl, const char *name, int weight)
{
    kb_test_create(cl->client, &kb_type_queues_volcano, NULL,
                   kb_test_json_printf(
                           "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\","
                           "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"weight\":%d}}",
                           name, weight));
}

/* A Volcano PodGroup; @annotations: the metadata's annotations object ("{...}") or NULL. */
static void add_group_annotated(Cluster *cl, const char *name, int min_member, const char *queue,
                                const char *priority_class, const char *annotations)
{
    g_autofree char *extra = g_strdup_printf(
            "%s%s%s%s%s%s", queue != NULL ? ",\"queue\":\"" : "", queue != NULL ? queue : "",
            queue != NULL ? "\"" : "", priority_class != NULL ? ",\"priorityClassName\":\"" : "",
            priority_class != NULL ? priority_class : "", priority_class != NULL ? "\"" : "");
    kb_test_create(
            cl->client, &kb_type_pod_groups_volcano, "default",
            kb_test_json_printf(
                    "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                    "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"%s%s},"
                    "\"spec\":{\"minMember\":%d%s}}",
                    name, annotations != NULL ? ",\"annotations\":" : "",
                    annotations != NULL ? annotations : "", min_member, extra));
}

static void add_group(Cluster *cl, const char *name, int min_member, const char *queue,
                      const char *priority_class)
{
    add_group_annotated(cl, name, min_member, queue, priority_class, NULL);
}

/* A pod requesting @gpus GPUs (and 1 cpu), of @group (may be NULL), served by @scheduler
 * (NULL: kube-batchd); @extra_spec is appended inside spec (",\"tolerations\":[...]") or NULL. */
static void add_pod_full(Cluster *cl, const char *name, const char *group, int gpus,
                         const char *scheduler, const char *extra_spec, const char *gpu_text)
{
    g_autofree char *annotations =
            group != NULL
                    ? g_strdup_printf(",\"annotations\":{\"scheduling.k8s.io/group-name\":\"%s\"}",
                                      group)
                    : g_strdup("");
    g_autofree char *gpu = gpu_text != NULL ? g_strdup(gpu_text) : g_strdup_printf("%d", gpus);
    kb_test_create(
            cl->client, &kb_type_pods, "default",
            kb_test_json_printf(
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                    "\"namespace\":\"default\"%s},\"spec\":{\"schedulerName\":\"%s\","
                    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":{"
                    "\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"%s\"},\"limits\":{"
                    "\"nvidia.com/gpu\":\"%s\"}}}]%s}}",
                    name, annotations, scheduler != NULL ? scheduler : "kube-batchd", gpu, gpu,
                    extra_spec != NULL ? extra_spec : ""));
}

static void add_pod(Cluster *cl, const char *name, const char *group, int gpus)
{
    add_pod_full(cl, name, group, gpus, NULL, NULL, NULL);
}

static void add_priority_class(Cluster *cl, const char *name, int value)
{
    kb_test_create(cl->client, &kb_type_priority_classes, NULL,
                   kb_test_json_printf(
                           "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\","
                           "\"metadata\":{\"name\":\"%s\"},\"value\":%d}",
                           name, value));
}

/* Pods of namespace default whose name starts with @prefix: how many are bound, and how many
 * exist. */
static guint count_bound(Cluster *cl, const char *prefix, guint *n_total)
{
    g_autoptr(GError) error = NULL;
    json_object *list = kb_client_list(cl->client, &kb_type_pods, "default", NULL, &error);
    g_assert_no_error(error);
    json_object *items = json_object_object_get(list, "items");
    guint bound = 0, total = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        const char *name = kas_json_get_string(p, "metadata.name");
        if (!g_str_has_prefix(name, prefix))
            continue;
        total++;
        if (kas_json_get_string(p, "spec.nodeName") != NULL)
            bound++;
    }
    json_object_put(list);
    if (n_total != NULL)
        *n_total = total;
    return bound;
}

static const char *node_of(Cluster *cl, const char *pod, char **owned)
{
    g_autoptr(GError) error = NULL;
    json_object *p = kb_client_get(cl->client, &kb_type_pods, "default", pod, &error);
    g_assert_no_error(error);
    const char *node = kas_json_get_string(p, "spec.nodeName");
    *owned = g_strdup(node);
    json_object_put(p);
    return *owned;
}

/* Poll until @n pods with @prefix are bound; FALSE after @ms. */
static gboolean wait_bound(Cluster *cl, const char *prefix, guint n, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    for (;;) {
        if (count_bound(cl, prefix, NULL) >= n)
            return TRUE;
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(30000);
    }
}

/* The PodGroup's status field at a dotted path, newly allocated, or NULL. */
static char *group_status(Cluster *cl, const char *name, const char *dotted)
{
    g_autoptr(GError) error = NULL;
    json_object *g =
            kb_client_get(cl->client, &kb_type_pod_groups_volcano, "default", name, &error);
    g_assert_no_error(error);
    json_object *v = kas_json_get(g, dotted);
    char *out = NULL;
    if (v != NULL && json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0)
        v = json_object_array_get_idx(v, 0);
    if (v != NULL && json_object_is_type(v, json_type_object))
        out = g_strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_NOSLASHESCAPE));
    else if (v != NULL)
        out = g_strdup(json_object_get_string(v));
    json_object_put(g);
    return out;
}

/* Poll until the group's first condition mentions @needle; returns the condition or NULL. */
static char *wait_condition(Cluster *cl, const char *group, const char *needle, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    for (;;) {
        char *c = group_status(cl, group, "status.conditions");
        if (c != NULL && strstr(c, needle) != NULL)
            return c;
        if (g_get_monotonic_time() > deadline)
            return c;
        g_free(c);
        g_usleep(30000);
    }
}

/* Events in namespace default about @object with @reason; their messages joined by '\n'. */
static char *events_about(Cluster *cl, const char *object, const char *reason)
{
    g_autoptr(GError) error = NULL;
    json_object *list = kb_client_list(cl->client, &kb_type_events, "default", NULL, &error);
    g_assert_no_error(error);
    json_object *items = json_object_object_get(list, "items");
    GString *out = g_string_new(NULL);
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *e = json_object_array_get_idx(items, i);
        if (g_strcmp0(kas_json_get_string(e, "involvedObject.name"), object) == 0 &&
            g_strcmp0(kas_json_get_string(e, "reason"), reason) == 0)
            g_string_append_printf(out, "%s\n", kas_json_get_string(e, "message"));
    }
    json_object_put(list);
    return g_string_free(out, FALSE);
}

/* ---- tests ------------------------------------------------------------------------------- */

static gboolean have_apiserver(void)
{
    g_autofree char *prog = g_build_filename(kb_test_bin_dir(), "kb-apiserver", NULL);
    if (g_file_test(prog, G_FILE_TEST_IS_EXECUTABLE))
        return TRUE;
    g_test_skip("bin/kb-apiserver is not built");
    return FALSE;
}

typedef struct {
    const char *args[4];
    int status;
    const char *message;
} FlagCase;

static const FlagCase flag_cases[] = {
        {{"--version"}, 0, "kube-batchd "},
        {{"--schedule-period", "5x"}, 2, "--schedule-period: invalid duration \"5x\""},
        {{"--schedule-period", "0ms"}, 2, "out of range"},
        {{"--schedule-period", "-1s"}, 2, "invalid duration \"-1s\""},
        {{"--listen-address", "nohost"}, 2, "--listen-address"},
        {{"--log-level", "loud"}, 2, "invalid log level \"loud\""},
        {{"--scheduler-conf", "/nonexistent/kube-batchd.conf"}, 2, "--scheduler-conf"},
        {{"--scheduler-name", ""}, 2, "--scheduler-name: empty name"},
        {{"--bind-max-in-flight", "0"}, 2, "--bind-max-in-flight: 0 is out of range (1 to 1024)"},
        {{"--bind-max-in-flight", "1025"}, 2, "--bind-max-in-flight: 1025 is out of range"},
        {{"--bind-max-in-flight", "many"}, 2, "bind-max-in-flight"},
        {{"--bind-max-in-flight", "1024", "--version"}, 0, "kube-batchd "},
        {{"--kube-api-content-type", "application/yaml"},
         2,
         "--kube-api-content-type: \"application/yaml\" is neither "
         "application/vnd.kubernetes.protobuf nor application/json"},
        {{"--kube-api-content-type", "application/json", "--version"}, 0, "kube-batchd "},
        {{"--extender-client-ca-file", "/x/ca.pem"},
         2,
         "--extender-client-ca-file /x/ca.pem needs --extender-tls-cert and --extender-tls-key"},
        {{"--extender-client-ca-file", "/x/ca.pem", "--extender-insecure-allow-unauthenticated"},
         2,
         "contradict each other"},
        {{"--extender-address", ":0", "--extender-tls-cert-file", "/x/c.pem"},
         2,
         "--extender-tls-cert and --extender-tls-key go together"},
        {{"stray"}, 2, "unexpected argument \"stray\""},
        {{"--no-such-flag"}, 2, "no-such-flag"},
};

static void test_flags(void)
{
    g_autofree char *prog = g_build_filename(kb_test_bin_dir(), "kube-batchd", NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(flag_cases); i++) {
        const FlagCase *fc = &flag_cases[i];
        g_autoptr(GPtrArray) argv = g_ptr_array_new();
        g_ptr_array_add(argv, prog);
        for (int a = 0; a < 4 && fc->args[a] != NULL; a++)
            g_ptr_array_add(argv, (gpointer)fc->args[a]);
        g_ptr_array_add(argv, NULL);
        g_autofree char *out = NULL, *err = NULL;
        int wait_status = 0;
        g_autoptr(GError) error = NULL;
        g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                   &out, &err, &wait_status, &error));
        g_assert_no_error(error);
        g_assert_true(WIFEXITED(wait_status));
        g_assert_cmpint(WEXITSTATUS(wait_status), ==, fc->status);
        g_autofree char *both = g_strconcat(out, err, NULL);
        if (strstr(both, fc->message) == NULL)
            g_error("kube-batchd %s: expected \"%s\" in: %s", fc->args[0], fc->message, both);
    }
}

static guint count_in(const char *text, const char *needle)
{
    guint n = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Volcano's own file starts kube-batchd, which says once at start what it ignores and places a
 * gang; with --strict-config it refuses to start, naming the plugin and line. */
static void test_volcano_conf(void)
{
    if (!have_apiserver())
        return;
    g_autofree char *conf = conf_file("volcano-scheduler.conf", kb_test_volcano_ci_conf);

    g_autofree char *prog = g_build_filename(kb_test_bin_dir(), "kube-batchd", NULL);
    const char *argv[] = {prog, "--scheduler-conf", conf, "--strict-config", NULL};
    g_autofree char *out = NULL, *err = NULL;
    int wait_status = 0;
    g_autoptr(GError) error = NULL;
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                               &wait_status, &error));
    g_assert_no_error(error);
    g_assert_true(WIFEXITED(wait_status));
    g_assert_cmpint(WEXITSTATUS(wait_status), ==, 2);
    g_assert_nonnull(
            strstr(err, "line 10: plugin \"overcommit\" is not implemented (--strict-config)"));

    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    add_node(cl, "n1", 4, NULL);
    g_autoptr(Child) d = daemon_start(cl, "--scheduler-conf", conf, NULL);
    add_group(cl, "vc", 4, NULL, NULL);
    for (int i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("vc-%d", i);
        add_pod(cl, name, "vc", 1);
    }
    g_assert_true(wait_bound(cl, "vc-", 4, WAIT_MS));
    daemon_stop(d);
    g_autofree char *log = child_log(d);
    g_assert_cmpuint(count_in(log, "plugin \"overcommit\" ignored"), ==, 1);
    g_assert_cmpuint(count_in(log, "plugin \"network-topology-aware\" ignored"), ==, 1);
    g_assert_cmpuint(count_in(log, "predicate.DynamicResourceAllocationEnable"), ==, 1);
    g_assert_cmpuint(count_in(log, "plugin \"sla\": without the reserve action"), ==, 1);
    conf_file_remove(conf);
}

/* 10 one-GPU pods in a gang with 8 free GPUs: nothing binds and the condition says what is
 * short; one more node and all 10 bind. */
static void test_gang_waits_for_capacity(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    add_node(cl, "n1", 4, NULL);
    add_node(cl, "n2", 4, NULL);
    add_group(cl, "gang", 10, NULL, NULL);
    for (int i = 0; i < 10; i++) {
        g_autofree char *name = g_strdup_printf("gang-%d", i);
        add_pod(cl, name, "gang", 1);
    }
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_autofree char *cond = wait_condition(cl, "gang", "nvidia.com/gpu", WAIT_MS);
    g_assert_nonnull(cond);
    g_test_message("condition: %s", cond);
    g_assert_nonnull(strstr(cond, "Unschedulable"));
    g_assert_nonnull(strstr(cond, "nvidia.com/gpu"));
    g_usleep(500000); /* a few more cycles */
    g_assert_cmpuint(count_bound(cl, "gang-", NULL), ==, 0);
    g_autofree char *phase = group_status(cl, "gang", "status.phase");
    g_assert_true(g_strcmp0(phase, "Pending") == 0 || g_strcmp0(phase, "Inqueue") == 0);
    g_autofree char *ev = events_about(cl, "gang-0", "FailedScheduling");
    g_assert_nonnull(strstr(ev, "nvidia.com/gpu"));

    add_node(cl, "n3", 4, NULL);
    g_assert_true(wait_bound(cl, "gang-", 10, WAIT_MS));
    g_autofree char *scheduled = events_about(cl, "gang-3", "Scheduled");
    gint64 deadline = g_get_monotonic_time() + 3 * G_USEC_PER_SEC;
    while (strstr(scheduled, "Successfully assigned default/gang-3 to n") == NULL &&
           g_get_monotonic_time() < deadline) {
        g_usleep(50000);
        g_free(scheduled);
        scheduled = events_about(cl, "gang-3", "Scheduled");
    }
    g_assert_nonnull(strstr(scheduled, "Successfully assigned default/gang-3 to n"));
    g_autofree char *running = wait_condition(cl, "gang", "Scheduled", WAIT_MS);
    g_assert_nonnull(strstr(running, "Scheduled"));

    /* /metrics shows the binds, when the last one was, and the latency. */
    g_autofree char *metrics = NULL;
    g_assert_cmpint(http_get(d->http_port, "/metrics", &metrics), ==, 200);
    g_assert_cmpfloat(metric_value(metrics, "kube_batchd_binds_total{result=\"succeeded\"}"), ==,
                      10);
    double last = metric_value(metrics, "kube_batchd_last_successful_bind_timestamp_seconds");
    double now = (double)g_get_real_time() / 1e6;
    g_assert_cmpfloat(last, <=, now);
    g_assert_cmpfloat(last, >, now - 10);
    g_assert_cmpfloat(last, !=, floor(last)); /* to the microsecond, not the second */
    g_assert_cmpfloat(metric_value(metrics, "kube_batchd_e2e_scheduling_latency_seconds_count"), ==,
                      10);
    g_assert_cmpfloat(metric_value(metrics, "kube_batchd_cycles_total"), >, 0);
    g_assert_cmpint(http_get(d->http_port, "/healthz", NULL), ==, 200);
    g_assert_cmpint(http_get(d->http_port, "/readyz", NULL), ==, 200);
    daemon_stop(d);
}

/* Where the server stands: the resourceVersion of a list (one counter for every resource, as
 * etcd's revision is). */
static char *server_rv(Cluster *cl)
{
    g_autoptr(GError) error = NULL;
    json_object *list = kb_client_list(cl->client, &kb_type_pods, "default", NULL, &error);
    g_assert_no_error(error);
    char *rv = g_strdup(kas_json_get_string(list, "metadata.resourceVersion"));
    json_object_put(list);
    return rv;
}

/* The resourceVersions of the MODIFIED events of @type in namespace default since @rv, from the
 * server's watch history (a watch of 1 s), in order. */
static GArray *modified_since(Cluster *cl, const KbResourceType *type, const char *rv)
{
    g_autofree char *path = kb_resource_path(type, "default", NULL, NULL);
    g_autofree char *url = g_strdup_printf("%s%s?watch=true&resourceVersion=%s&timeoutSeconds=1",
                                           kb_test_apiserver_url(cl->api), path, rv);
    g_autofree char *body = NULL;
    g_assert_cmpint(http_get_url(url, &body), ==, 200);
    GArray *rvs = g_array_new(FALSE, FALSE, sizeof(guint64));
    g_auto(GStrv) lines = g_strsplit(body, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        json_object *ev = json_tokener_parse(lines[i]);
        if (ev != NULL && g_strcmp0(kas_json_get_string(ev, "type"), "MODIFIED") == 0) {
            guint64 v = g_ascii_strtoull(kas_json_get_string(ev, "object.metadata.resourceVersion"),
                                         NULL, 10);
            g_array_append_val(rvs, v);
        }
        json_object_put(ev);
    }
    return rvs;
}

/* Bindings first: with every binding slowed down (150 ms, one in flight at a time), no PodGroup
 * status is written before the last binding is. The status writes wait while bindings are
 * queued and while they are in flight: released when only the queue had drained, they ran beside
 * the last binding. */
static void test_status_waits_for_bindings(void)
{
    if (!have_apiserver())
        return;
    /* No kubelet: the pods' only changes are their bindings. */
    const char *args[] = {"--faults", "latency=150,method=POST,path=*binding", NULL};
    g_autoptr(Cluster) cl = cluster_start_with(args);
    install_crds(cl);
    add_node(cl, "n1", 4, NULL);
    add_node(cl, "n2", 4, NULL);
    for (int g = 0; g < 3; g++) {
        g_autofree char *group = g_strdup_printf("g%d", g);
        add_group(cl, group, 2, NULL, NULL);
        for (int i = 0; i < 2; i++) {
            g_autofree char *name = g_strdup_printf("g%d-%d", g, i);
            add_pod(cl, name, group, 1);
        }
    }
    g_autofree char *rv = server_rv(cl);
    g_autoptr(Child) d = daemon_start(cl, "--bind-max-in-flight", "1", NULL);
    g_assert_true(wait_bound(cl, "g", 6, WAIT_MS));
    for (int g = 0; g < 3; g++) {
        g_autofree char *group = g_strdup_printf("g%d", g);
        g_autofree char *cond = wait_condition(cl, group, "Scheduled", WAIT_MS);
        g_assert_nonnull(strstr(cond, "Scheduled"));
    }
    g_autoptr(GArray) bindings = modified_since(cl, &kb_type_pods, rv);
    g_autoptr(GArray) statuses = modified_since(cl, &kb_type_pod_groups_volcano, rv);
    g_assert_cmpuint(bindings->len, ==, 6);
    g_assert_cmpuint(statuses->len, >=, 3);
    guint64 last_binding = g_array_index(bindings, guint64, bindings->len - 1);
    guint64 first_status = g_array_index(statuses, guint64, 0);
    g_assert_cmpuint(first_status, >, last_binding);
    daemon_stop(d);
}

/* Two queues with weights 1:3 contending for 16 GPUs (each asks for all of them) get 4 and 12. */
static void test_queue_weights(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    for (int i = 0; i < 4; i++) {
        g_autofree char *node = g_strdup_printf("n%d", i);
        add_node(cl, node, 4, NULL);
    }
    add_queue(cl, "light", 1);
    add_queue(cl, "heavy", 3);
    for (int i = 0; i < 16; i++) {
        g_autofree char *a = g_strdup_printf("light-%d", i);
        g_autofree char *b = g_strdup_printf("heavy-%d", i);
        add_group(cl, a, 1, "light", NULL);
        add_pod(cl, a, a, 1);
        add_group(cl, b, 1, "heavy", NULL);
        add_pod(cl, b, b, 1);
    }
    /* Everything exists before the first cycle, so neither queue can grab GPUs first. */
    g_autoptr(Child) d = daemon_start(cl, NULL);
    gboolean ok = wait_bound(cl, "heavy-", 12, WAIT_MS) && wait_bound(cl, "light-", 4, WAIT_MS);
    g_usleep(600000);
    guint light = count_bound(cl, "light-", NULL), heavy = count_bound(cl, "heavy-", NULL);
    g_autofree char *metrics = NULL;
    g_assert_cmpint(http_get(d->http_port, "/metrics", &metrics), ==, 200);
    if (!ok || light != 4 || heavy != 12)
        g_printerr("light %u heavy %u\n%s\n", light, heavy, metrics);
    g_assert_cmpuint(light, ==, 4);
    g_assert_cmpuint(heavy, ==, 12);
    g_assert_cmpfloat(
            metric_value(
                    metrics,
                    "kube_batchd_queue_allocated{queue=\"heavy\",resource=\"nvidia.com/gpu\"}"),
            ==, 12);
    g_assert_cmpfloat(
            metric_value(metrics,
                         "kube_batchd_queue_deserved{queue=\"light\",resource=\"nvidia.com/gpu\"}"),
            ==, 4);
    g_assert_cmpfloat(metric_value(metrics, "kube_batchd_pending_groups{queue=\"light\"}"), ==, 12);
    daemon_stop(d);
}

/* Of two gangs that cannot both fit, the higher PriorityClass wins. */
static void test_priority_order(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    add_priority_class(cl, "low", 10);
    add_priority_class(cl, "high", 1000);
    add_node(cl, "n1", 4, NULL);
    /* The low group is older: without priorities it would go first. */
    add_group(cl, "lo", 4, NULL, "low");
    for (int i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("lo-%d", i);
        add_pod(cl, name, "lo", 1);
    }
    g_usleep(1100000); /* creationTimestamp has second resolution */
    add_group(cl, "hi", 4, NULL, "high");
    for (int i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("hi-%d", i);
        add_pod(cl, name, "hi", 1);
    }
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_assert_true(wait_bound(cl, "hi-", 4, WAIT_MS));
    g_usleep(500000);
    g_assert_cmpuint(count_bound(cl, "lo-", NULL), ==, 0);
    daemon_stop(d);
}

/* A pod of another scheduler holds 3 of 4 GPUs: a gang of 2 waits until it is deleted. */
static void test_other_schedulers(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    add_node(cl, "n1", 4, NULL);
    add_pod_full(cl, "foreign", NULL, 3, "default-scheduler", ",\"nodeName\":\"n1\"", NULL);
    add_group(cl, "pair", 2, NULL, NULL);
    add_pod(cl, "pair-0", "pair", 1);
    add_pod(cl, "pair-1", "pair", 1);
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_autofree char *cond = wait_condition(cl, "pair", "nvidia.com/gpu", WAIT_MS);
    g_assert_nonnull(cond);
    g_assert_cmpuint(count_bound(cl, "pair-", NULL), ==, 0);
    g_autoptr(GError) error = NULL;
    KbDeleteOptions del = {.grace_period_seconds = 0};
    g_assert_true(kb_client_delete(cl->client, &kb_type_pods, "default", "foreign", &del, &error));
    g_assert_no_error(error);
    g_assert_true(wait_bound(cl, "pair-", 2, WAIT_MS));
    daemon_stop(d);
}

/* A gang whose pods name their nodes by matchFields metadata.name (as DaemonSets and many
 * controllers write) binds each pod to its named node; one pod of the gang is of a second
 * --scheduler-name, and the start-up log names both. */
static void test_node_name_affinity(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    for (int i = 0; i < 4; i++) {
        g_autofree char *n = g_strdup_printf("n%d", i);
        add_node(cl, n, 4, NULL);
    }
    add_group(cl, "pinned", 3, NULL, NULL);
    static const char *const want[] = {"n3", "n1", "n2"};
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autofree char *name = g_strdup_printf("pinned-%u", i);
        g_autofree char *aff = g_strdup_printf(
                ",\"affinity\":{\"nodeAffinity\":{"
                "\"requiredDuringSchedulingIgnoredDuringExecution\":"
                "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
                "\"In\",\"values\":[\"%s\"]}]}]}}}",
                want[i]);
        add_pod_full(cl, name, "pinned", 1, i == 2 ? "gpu-batch" : NULL, aff, NULL);
    }
    g_autoptr(Child) d = daemon_start(cl, "--scheduler-name", "kube-batchd", "--scheduler-name",
                                      "gpu-batch", NULL);
    g_assert_true(wait_bound(cl, "pinned-", 3, WAIT_MS));
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autofree char *name = g_strdup_printf("pinned-%u", i);
        g_autofree char *node = NULL;
        g_assert_cmpstr(node_of(cl, name, &node), ==, want[i]);
    }
    g_autofree char *log = child_log(d);
    g_assert_nonnull(strstr(log, "scheduler names kube-batchd, gpu-batch, schedule period"));
    daemon_stop(d);
}

/* Taints keep pods off a node unless they tolerate them; the condition names the taint. */
static void test_taints(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    add_node(cl, "infra", 8, "dedicated=infra:NoSchedule");
    add_node(cl, "small", 1, NULL);
    add_group(cl, "plain", 2, NULL, NULL);
    add_pod(cl, "plain-0", "plain", 1);
    add_pod(cl, "plain-1", "plain", 1);
    add_pod_full(cl, "tol", NULL, 2, NULL,
                 ",\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\","
                 "\"value\":\"infra\",\"effect\":\"NoSchedule\"}]",
                 NULL);
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_assert_true(wait_bound(cl, "tol", 1, WAIT_MS));
    g_autofree char *node = NULL;
    g_assert_cmpstr(node_of(cl, "tol", &node), ==, "infra");
    g_autofree char *cond = wait_condition(cl, "plain", "dedicated", WAIT_MS);
    g_assert_nonnull(cond);
    g_test_message("condition: %s", cond);
    g_assert_nonnull(strstr(cond, "dedicated=infra:NoSchedule"));
    g_assert_cmpuint(count_bound(cl, "plain-", NULL), ==, 0);
    daemon_stop(d);
}

/* A malformed pod gets an event and a metric; an unknown queue and a short gang get conditions;
 * none of them blocks a healthy pod. Missing x-k8s CRDs are skipped. */
static void test_bad_objects(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    add_node(cl, "n1", 4, NULL);
    add_pod_full(cl, "bad-quantity", NULL, 0, NULL, NULL, "12Qi");
    add_group(cl, "lost", 1, "no-such-queue", NULL);
    add_pod(cl, "lost-0", "lost", 1);
    add_group(cl, "short", 3, NULL, NULL);
    add_pod(cl, "short-0", "short", 1);
    add_pod(cl, "ok", NULL, 1);
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_assert_true(wait_bound(cl, "ok", 1, WAIT_MS));
    g_autofree char *lost = wait_condition(cl, "lost", "no-such-queue", WAIT_MS);
    g_assert_nonnull(strstr(lost, "no-such-queue"));
    g_autofree char *shortc = wait_condition(cl, "short", "1/3", WAIT_MS);
    g_assert_nonnull(strstr(shortc, "1/3"));
    g_autofree char *metrics = NULL;
    g_assert_cmpint(http_get(d->http_port, "/metrics", &metrics), ==, 200);
    g_assert_cmpfloat(
            metric_value(metrics, "kube_batchd_informer_decode_errors_total{resource=\"pods\"}"),
            >=, 1);
    g_autofree char *ev = events_about(cl, "bad-quantity", "InvalidObject");
    g_assert_nonnull(strstr(ev, "12Qi"));
    daemon_stop(d);
}

/* Without any PodGroup/Queue CRD the daemon still gets ready and binds plain pods. */
static void test_missing_crds(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    add_node(cl, "n1", 2, NULL);
    add_pod(cl, "solo", NULL, 1);
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_assert_true(wait_ready(d, WAIT_MS));
    g_assert_true(wait_bound(cl, "solo", 1, WAIT_MS));
    daemon_stop(d);
}

/* ---- Kubernetes' own gang API (scheduling.k8s.io/v1beta1) ---------------------------------- */

static void add_native_group(Cluster *cl, const char *name, int min_count)
{
    kb_test_create(cl->client, &kb_type_pod_groups_native, "default",
                   kb_test_json_printf(
                           "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\","
                           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
                           "\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":%d}}}}",
                           name, min_count));
}

/* The native group's condition of @type as JSON text, newly allocated, or NULL. */
static char *native_condition_of(Cluster *cl, const char *name, const char *type);

/* The native group's PodGroupInitiallyScheduled condition as JSON text, newly allocated, or
 * NULL. */
static char *native_condition(Cluster *cl, const char *name)
{
    return native_condition_of(cl, name, "PodGroupInitiallyScheduled");
}

static char *native_condition_of(Cluster *cl, const char *name, const char *type)
{
    g_autoptr(GError) error = NULL;
    json_object *g = kb_client_get(cl->client, &kb_type_pod_groups_native, "default", name, &error);
    g_assert_no_error(error);
    json_object *conds = kas_json_get(g, "status.conditions");
    char *out = NULL;
    for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kas_json_get_string(c, "type"), type) == 0)
            out = g_strdup(json_object_to_json_string_ext(c, JSON_C_TO_STRING_NOSLASHESCAPE));
    }
    json_object_put(g);
    return out;
}

static char *wait_native_condition(Cluster *cl, const char *name, const char *needle, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    for (;;) {
        char *c = native_condition(cl, name);
        if ((c != NULL && strstr(c, needle) != NULL) || g_get_monotonic_time() > deadline)
            return c;
        g_free(c);
        g_usleep(30000);
    }
}

/* A native gang of 4 (pods naming it in spec.schedulingGroup) with 3 free GPUs binds nothing and
 * says Unschedulable with the shortfall; once room frees it binds whole and the condition turns
 * True, and stays True when a pod goes. A pod naming a group that does not exist waits with an
 * event saying so; a pod-level spec.resources request counts (100 cpus fit nowhere, although
 * its container asks for 1). No CRD is installed: the native API needs none. */
static void test_native_gang(void)
{
    if (!have_apiserver())
        return;
    const char *args[] = {"--simulate-kubelet", "--runtime-config",
                          "scheduling.k8s.io/v1beta1=true", NULL};
    g_autoptr(Cluster) cl = cluster_start_with(args);
    add_node(cl, "n1", 3, NULL);
    add_native_group(cl, "native", 4);
    static const char member[] = ",\"schedulingGroup\":{\"podGroupName\":\"native\"}";
    for (int i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("native-%d", i);
        add_pod_full(cl, name, NULL, 1, NULL, member, NULL);
    }
    add_pod_full(cl, "ghost-0", NULL, 1, NULL, ",\"schedulingGroup\":{\"podGroupName\":\"ghost\"}",
                 NULL);
    add_pod_full(cl, "wide", NULL, 0, NULL, ",\"resources\":{\"requests\":{\"cpu\":\"100\"}}",
                 NULL);
    /* a status the scheduler cannot read (the server does not validate status) */
    add_native_group(cl, "broken", 1);
    g_autoptr(GError) error = NULL;
    json_object *patched = kb_client_patch(
            cl->client, &kb_type_pod_groups_native, "default", "broken", "status", KB_PATCH_MERGE,
            "{\"status\":{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\",\"status\":"
            "true}]}}",
            &error);
    g_assert_no_error(error);
    json_object_put(patched);
    /* an annotation the server takes (256 KiB in all) over kube-batchd's 64 KiB a value */
    g_autofree char *big = g_strnfill(65536 + 1, 'x');
    kb_test_create(cl->client, &kb_type_pod_groups_native, "default",
                   kb_test_json_printf(
                           "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\","
                           "\"metadata\":{\"name\":\"huge\",\"namespace\":\"default\","
                           "\"annotations\":{\"note\":\"%s\"}},\"spec\":{\"schedulingPolicy\":{"
                           "\"basic\":{}}}}",
                           big));
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_autofree char *cond = wait_native_condition(cl, "native", "nvidia.com/gpu", WAIT_MS);
    g_test_message("condition: %s", cond);
    if (cond == NULL) {
        g_autofree char *log = child_log(d);
        g_test_message("kube-batchd:\n%s", log);
    }
    g_assert_nonnull(cond);
    g_assert_nonnull(strstr(cond, "\"status\":\"False\""));
    g_assert_nonnull(strstr(cond, "\"reason\":\"Unschedulable\""));
    g_assert_nonnull(strstr(cond, "3 nvidia.com/gpu free"));
    g_usleep(500000); /* a few more cycles */
    g_assert_cmpuint(count_bound(cl, "native-", NULL), ==, 0);
    g_autofree char *ghost = events_about(cl, "ghost-0", "FailedScheduling");
    g_assert_nonnull(strstr(ghost, "pod group \"default/ghost\" does not exist"));
    g_autofree char *wide = events_about(cl, "wide", "FailedScheduling");
    g_assert_nonnull(strstr(wide, "cpu"));
    g_autofree char *broken = events_about(cl, "broken", "InvalidObject");
    g_assert_nonnull(strstr(broken, "status.conditions[0].status: expected a string, got true"));
    /* a group kube-batchd cannot read says so in its condition, naming the field */
    g_autofree char *herr = wait_native_condition(cl, "huge", "SchedulerError", WAIT_MS);
    g_assert_nonnull(herr);
    g_assert_nonnull(strstr(herr, "\"status\":\"False\""));
    g_assert_nonnull(strstr(herr, "metadata.annotations"));
    json_object *evs = kb_client_list(cl->client, &kb_type_events, "default", NULL, &error);
    g_assert_no_error(error);
    json_object *items = json_object_object_get(evs, "items");
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *e = json_object_array_get_idx(items, i);
        if (g_strcmp0(kas_json_get_string(e, "reason"), "InvalidObject") == 0)
            g_assert_cmpstr(kas_json_get_string(e, "involvedObject.apiVersion"), ==,
                            "scheduling.k8s.io/v1beta1");
    }
    json_object_put(evs);

    add_node(cl, "n2", 1, NULL);
    g_assert_true(wait_bound(cl, "native-", 4, WAIT_MS));
    g_autofree char *done = wait_native_condition(cl, "native", "\"status\":\"True\"", WAIT_MS);
    g_assert_nonnull(strstr(done, "\"status\":\"True\""));
    g_assert_nonnull(strstr(done, "4/4 pods bound"));
    g_assert_cmpuint(count_bound(cl, "ghost-", NULL), ==, 0);
    g_assert_cmpuint(count_bound(cl, "wide", NULL), ==, 0);

    /* never reverted: one member gone, the gang short of minCount again */
    kb_client_delete(cl->client, &kb_type_pods, "default", "native-0", NULL, &error);
    g_assert_no_error(error);
    g_usleep(1000000);
    g_autofree char *after = native_condition(cl, "native");
    g_assert_nonnull(strstr(after, "\"status\":\"True\""));
    daemon_stop(d);
}

/* ---- CompositePodGroup (scheduling.k8s.io/v1alpha3) ---------------------------------------- */

static void add_composite(Cluster *cl, const char *name, int min_groups)
{
    kb_test_create(
            cl->client, &kb_type_composite_pod_groups, "default",
            kb_test_json_printf("{\"apiVersion\":\"scheduling.k8s.io/v1alpha3\",\"kind\":"
                                "\"CompositePodGroup\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                                "\"default\"},\"spec\":{\"workloadRef\":{\"workloadName\":\"%s\","
                                "\"templateName\":\"top\"},\"schedulingPolicy\":{\"gang\":{"
                                "\"minGroupCount\":%d}}}}",
                                name, name, min_groups));
}

/* Child @name of @parent (minCount 2, inside one rack), created at @type's version, with its
 * two 1-GPU pods naming it. */
static void add_child_group(Cluster *cl, const KbResourceType *type, const char *name,
                            const char *parent)
{
    kb_test_create(cl->client, type, "default",
                   kb_test_json_printf(
                           "{\"apiVersion\":\"scheduling.k8s.io/%s\",\"kind\":\"PodGroup\","
                           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{"
                           "\"parentCompositePodGroupName\":\"%s\",\"workloadRef\":{"
                           "\"workloadName\":\"%s\",\"templateName\":\"workers\"},"
                           "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},"
                           "\"schedulingConstraints\":{\"topology\":[{\"key\":"
                           "\"topology.kubernetes.io/rack\"}]}}}",
                           type->version, name, parent, parent));
    for (int i = 0; i < 2; i++) {
        g_autofree char *pod = g_strdup_printf("%s-%d", name, i);
        g_autofree char *member =
                g_strdup_printf(",\"schedulingGroup\":{\"podGroupName\":\"%s\"}", name);
        add_pod_full(cl, pod, NULL, 1, NULL, member, NULL);
    }
}

/* A node of @gpus GPUs in rack @rack. */
static void add_rack_node(Cluster *cl, const char *name, const char *rack, int gpus)
{
    kb_test_create_node(
            cl->client,
            kb_test_json_printf("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{"
                                "\"name\":\"%s\",\"labels\":{\"kubernetes.io/hostname\":"
                                "\"%s\",\"topology.kubernetes.io/rack\":\"%s\"}}}",
                                name, name, rack),
            gpus);
}

/* Condition @cond of @type @name as JSON text once it contains @needle (or the deadline passes:
 * whatever it is then), newly allocated, or NULL. */
static char *wait_condition_at(Cluster *cl, const KbResourceType *type, const char *name,
                               const char *cond, const char *needle)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    for (;;) {
        g_autoptr(GError) error = NULL;
        json_object *g = kb_client_get(cl->client, type, "default", name, &error);
        g_assert_no_error(error);
        json_object *conds = kas_json_get(g, "status.conditions");
        char *out = NULL;
        for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
            json_object *c = json_object_array_get_idx(conds, i);
            if (g_strcmp0(kas_json_get_string(c, "type"), cond) == 0)
                out = g_strdup(json_object_to_json_string_ext(c, JSON_C_TO_STRING_NOSLASHESCAPE));
        }
        json_object_put(g);
        if ((out != NULL && strstr(out, needle) != NULL) || g_get_monotonic_time() > deadline)
            return out;
        g_free(out);
        g_usleep(30000);
    }
}

static char *wait_event(Cluster *cl, const char *object, const char *reason, const char *needle)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    for (;;) {
        char *e = events_about(cl, object, reason);
        if (strstr(e, needle) != NULL || g_get_monotonic_time() > deadline)
            return e;
        g_free(e);
        g_usleep(30000);
    }
}

/*
 * Where the server serves scheduling.k8s.io/v1alpha3, kube-batchd reads PodGroups there (with
 * their parent link) and the CompositePodGroups, and not the v1beta1 copies too: a composite of
 * minGroupCount 3 over 4 children of 2 pods with room for 2 children binds nothing (were the
 * v1beta1 copies read, the children would be gangs of their own and two would start); with room
 * for 3, exactly 3 children bind whole, each in one rack. Children are created at both versions.
 */
static void test_native_composite(void)
{
    if (!have_apiserver())
        return;
    const char *args[] = {"--simulate-kubelet", "--runtime-config",
                          "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true", NULL};
    g_autoptr(Cluster) cl = cluster_start_with(args);
    add_rack_node(cl, "ra-0", "rack-a", 1);
    add_rack_node(cl, "ra-1", "rack-a", 1);
    add_rack_node(cl, "rb-0", "rack-b", 2);
    add_composite(cl, "train", 3);
    for (int g = 0; g < 4; g++) {
        g_autofree char *child = g_strdup_printf("train-g%d", g);
        add_child_group(cl, g % 2 == 0 ? &kb_type_pod_groups_v1alpha3 : &kb_type_pod_groups_native,
                        child, "train");
    }
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_autofree char *ev = wait_event(cl, "train", "Unschedulable", "2/3");
    g_test_message("events: %s", ev);
    if (strstr(ev, "2/3") == NULL) {
        g_autofree char *log = child_log(d);
        g_test_message("kube-batchd:\n%s", log);
    }
    g_assert_nonnull(strstr(ev, "2/3"));
    /* the composite's condition and its children's say which children fall short */
    g_autofree char *cc = wait_condition_at(cl, &kb_type_composite_pod_groups, "train",
                                            "CompositePodGroupInitiallyScheduled", "short: ");
    g_test_message("composite: %s", cc);
    g_assert_nonnull(cc);
    g_assert_nonnull(strstr(cc, "\"status\":\"False\""));
    g_assert_nonnull(strstr(cc, "\"reason\":\"Unschedulable\""));
    g_assert_nonnull(strstr(cc, "2/3 child PodGroups placeable whole"));
    g_autofree char *c1 = wait_condition_at(cl, &kb_type_pod_groups_native, "train-g1",
                                            "PodGroupInitiallyScheduled", "2/3 child");
    g_assert_nonnull(c1);
    g_assert_nonnull(strstr(c1, "\"status\":\"False\""));
    g_usleep(500000); /* a few more cycles */
    g_assert_cmpuint(count_bound(cl, "train-", NULL), ==, 0);

    add_rack_node(cl, "rc-0", "rack-c", 2);
    g_assert_true(wait_bound(cl, "train-", 6, WAIT_MS));
    g_usleep(500000);
    g_assert_cmpuint(count_bound(cl, "train-", NULL), ==, 6);
    guint whole = 0;
    for (int g = 0; g < 4; g++) {
        g_autofree char *prefix = g_strdup_printf("train-g%d-", g);
        guint n = count_bound(cl, prefix, NULL);
        g_assert_true(n == 0 || n == 2);
        whole += n == 2;
    }
    g_assert_cmpuint(whole, ==, 3);
    g_autofree char *cd = wait_condition_at(cl, &kb_type_composite_pod_groups, "train",
                                            "CompositePodGroupInitiallyScheduled", "True");
    g_test_message("composite: %s", cd);
    g_assert_nonnull(strstr(cd, "\"status\":\"True\""));
    g_assert_nonnull(strstr(cd, "3/3 child PodGroups scheduled (6 pods bound)"));
    for (int g = 0; g < 4; g++) {
        g_autofree char *prefix = g_strdup_printf("train-g%d-", g);
        g_autofree char *child = g_strdup_printf("train-g%d", g);
        gboolean started = count_bound(cl, prefix, NULL) == 2;
        g_autofree char *c = wait_condition_at(cl, &kb_type_pod_groups_v1alpha3, child,
                                               "PodGroupInitiallyScheduled",
                                               started ? "2/2 pods bound" : "started without it");
        g_test_message("%s: %s", child, c);
        g_assert_nonnull(strstr(c, started ? "\"status\":\"True\"" : "\"status\":\"False\""));
    }
    daemon_stop(d);
}

/* Two daemons with --leader-elect: one binds; it stops; the other takes over within a few retry
 * periods; no binding is ever refused as a conflict and every pod is bound once. */
static void test_leader_handover(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    add_node(cl, "n1", 64, NULL);
    const char *le[] = {"--leader-elect",
                        "--leader-elect-retry-period",
                        "200ms",
                        "--leader-elect-lease-duration",
                        "2s",
                        "--leader-elect-renew-deadline",
                        "1s"};
    g_autoptr(Child) a = daemon_start(cl, le[0], le[1], le[2], le[3], le[4], le[5], le[6], NULL);
    g_assert_true(wait_ready(a, WAIT_MS));
    g_autoptr(Child) b = daemon_start(cl, le[0], le[1], le[2], le[3], le[4], le[5], le[6], NULL);
    for (int i = 0; i < 10; i++) {
        g_autofree char *name = g_strdup_printf("first-%d", i);
        add_pod(cl, name, NULL, 1);
    }
    g_assert_true(wait_bound(cl, "first-", 10, WAIT_MS));
    /* b may still be starting (slow under sanitizers): once it serves, it is not ready. */
    g_assert_cmpint(readyz_when_serving(b, WAIT_MS), ==, 503);
    daemon_stop(a);
    g_autofree char *log_a = child_log(a);
    g_assert_nonnull(strstr(log_a, "0 conflicts"));
    for (int i = 0; i < 10; i++) {
        g_autofree char *name = g_strdup_printf("second-%d", i);
        add_pod(cl, name, NULL, 1);
    }
    g_assert_true(wait_ready(b, 3000));
    g_assert_true(wait_bound(cl, "second-", 10, WAIT_MS));
    g_usleep(300000);
    g_autofree char *metrics = NULL;
    g_assert_cmpint(http_get(b->http_port, "/metrics", &metrics), ==, 200);
    g_assert_cmpfloat(metric_value(metrics, "kube_batchd_binds_total{result=\"conflict\"}"), <=, 0);
    g_assert_cmpfloat(metric_value(metrics, "kube_batchd_binds_total{result=\"succeeded\"}"), ==,
                      10);
    daemon_stop(b);
    g_autofree char *log_b = child_log(b);
    g_assert_nonnull(strstr(log_b, "10 succeeded, 0 conflicts"));
}

/*
 * With preempt configured, a high-priority gang evicts a running low-priority gang and binds only
 * once the victims are gone: the victims get a Preempted event naming the preemptor, and
 * kube_batchd_evictions_total counts them.
 */
static void test_preempt(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    add_priority_class(cl, "low", 10);
    add_priority_class(cl, "high", 1000);
    add_node(cl, "n1", 4, NULL);
    /* the victims here just started: no minimum run time */
    g_autofree char *conf_text = kb_test_conf_preempt_now();
    g_autofree char *conf = conf_file("scheduler.conf", conf_text);
    g_autoptr(Child) d = daemon_start(cl, "--scheduler-conf", conf, NULL);

    add_group(cl, "lo", 4, NULL, "low");
    for (int i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("lo-%d", i);
        add_pod(cl, name, "lo", 1);
    }
    g_assert_true(wait_bound(cl, "lo-", 4, WAIT_MS));
    add_group(cl, "hi", 2, NULL, "high");
    for (int i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("hi-%d", i);
        add_pod(cl, name, "hi", 2);
    }
    /* Never a hi pod bound while a lo pod still exists (the victims hold the GPUs until gone). */
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    guint hi_bound = 0, lo_total = 0;
    while ((hi_bound = count_bound(cl, "hi-", NULL)) < 2 && g_get_monotonic_time() < deadline) {
        count_bound(cl, "lo-", &lo_total);
        g_assert_true(hi_bound == 0 || lo_total == 0);
        g_usleep(20000);
    }
    if (hi_bound < 2) {
        g_autofree char *log = child_log(d);
        g_printerr("%s", log);
    }
    g_assert_cmpuint(hi_bound, ==, 2);
    count_bound(cl, "lo-", &lo_total);
    g_assert_cmpuint(lo_total, ==, 0);
    g_autofree char *ev = events_about(cl, "lo-0", "Preempted");
    g_assert_nonnull(strstr(ev, "default/hi"));
    g_autofree char *metrics = NULL;
    g_assert_cmpint(http_get(d->http_port, "/metrics", &metrics), ==, 200);
    g_assert_cmpfloat(metric_value(metrics, "kube_batchd_evictions_total{reason=\"Preempted\"}"),
                      ==, 4);
    daemon_stop(d);
    conf_file_remove(conf);
}

/*
 * Native PodGroups on kb-apiserver: a waiting high group preempts a running low one with
 * disruptionMode all; the low group says DisruptionTarget/PreemptionByScheduler (set before its
 * pods were evicted: it outlives them) and the high one binds whole once they are gone.
 */
static void test_native_preempt_disruption_target(void)
{
    if (!have_apiserver())
        return;
    const char *args[] = {"--simulate-kubelet", "--runtime-config",
                          "scheduling.k8s.io/v1beta1=true", NULL};
    g_autoptr(Cluster) cl = cluster_start_with(args);
    add_priority_class(cl, "low", 10);
    add_priority_class(cl, "high", 1000);
    add_node(cl, "n1", 4, NULL);
    /* the victims here just started: no minimum run time */
    g_autofree char *conf_text = kb_test_conf_preempt_now();
    g_autofree char *conf = conf_file("scheduler.conf", conf_text);
    g_autoptr(Child) d = daemon_start(cl, "--scheduler-conf", conf, NULL);

    static const char *const groups[][3] = {{"lo", "low", "all"}, {"hi", "high", "single"}};
    for (guint k = 0; k < G_N_ELEMENTS(groups); k++) {
        kb_test_create(
                cl->client, &kb_type_pod_groups_native, "default",
                kb_test_json_printf("{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":"
                                    "\"PodGroup\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                                    "\"default\"},\"spec\":{\"schedulingPolicy\":{\"gang\":{"
                                    "\"minCount\":2}},\"priorityClassName\":\"%s\","
                                    "\"disruptionMode\":{\"%s\":{}}}}",
                                    groups[k][0], groups[k][1], groups[k][2]));
        if (k == 1)
            break;
        for (int i = 0; i < 4; i++) {
            g_autofree char *name = g_strdup_printf("lo-%d", i);
            add_pod_full(cl, name, NULL, 1, NULL, ",\"schedulingGroup\":{\"podGroupName\":\"lo\"}",
                         NULL);
        }
        g_assert_true(wait_bound(cl, "lo-", 4, WAIT_MS));
        g_autofree char *up = wait_native_condition(cl, "lo", "\"status\":\"True\"", WAIT_MS);
        g_assert_nonnull(strstr(up, "\"status\":\"True\""));
    }
    for (int i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("hi-%d", i);
        add_pod_full(cl, name, NULL, 2, NULL, ",\"schedulingGroup\":{\"podGroupName\":\"hi\"}",
                     NULL);
    }
    if (!wait_bound(cl, "hi-", 2, WAIT_MS)) {
        g_autofree char *log = child_log(d);
        g_printerr("%s", log);
        g_assert_not_reached();
    }
    guint lo_total = 0;
    count_bound(cl, "lo-", &lo_total);
    g_assert_cmpuint(lo_total, ==, 0);
    g_autofree char *cond = native_condition_of(cl, "lo", "DisruptionTarget");
    g_assert_nonnull(cond);
    g_assert_nonnull(strstr(cond, "\"status\":\"True\""));
    g_assert_nonnull(strstr(cond, "\"reason\":\"PreemptionByScheduler\""));
    g_assert_nonnull(strstr(cond, "preempted by job default/hi"));
    /* the preemptor's group is not disrupted; the victim's other condition stays (both are
     * strategic merge patches, merged on type) */
    g_autofree char *none = native_condition_of(cl, "hi", "DisruptionTarget");
    g_assert_null(none);
    g_autofree char *sched = native_condition(cl, "lo");
    g_assert_nonnull(sched);
    g_assert_nonnull(strstr(sched, "\"status\":\"True\""));
    daemon_stop(d);
    conf_file_remove(conf);
}

/* Whether pod @name (default) has condition @type, status True. */
static gboolean pod_has_condition(Cluster *cl, const char *name, const char *type)
{
    json_object *p = kb_client_get(cl->client, &kb_type_pods, "default", name, NULL);
    json_object *conds = kas_json_get(p, "status.conditions");
    gboolean found = FALSE;
    for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kas_json_get_string(c, "type"), type) == 0 &&
            g_strcmp0(kas_json_get_string(c, "status"), "True") == 0)
            found = TRUE;
    }
    json_object_put(p);
    return found;
}

/*
 * Status writes wait while evictions are in flight, as they do while bindings go: a reclaim's
 * victims are as many PodGroups whose status changes, and their writes slowed the evictions and
 * the preemptor's bindings (kai-reclaim-250 on kube-apiserver). The evictions answer 25 s late
 * (kb-apiserver --faults): 12 s after kube-batchd logged them, longer than a hold for bindings
 * lasts, the preemptor's group still shows the condition it had before its pods came (the
 * evicting cycle's write waits); once the evictions are answered (the victims then carry the
 * eviction's DisruptionTarget, no write of kube-batchd's) and the victims gone it binds whole
 * and its status is written.
 */
static void test_native_status_held_while_evicting(void)
{
    if (!have_apiserver())
        return;
    const char *args[] = {"--simulate-kubelet",
                          "--runtime-config",
                          "scheduling.k8s.io/v1beta1=true",
                          "--faults",
                          "latency=25000,method=POST,path=*/eviction",
                          NULL};
    g_autoptr(Cluster) cl = cluster_start_with(args);
    add_priority_class(cl, "low", 10);
    add_priority_class(cl, "high", 1000);
    add_node(cl, "n1", 4, NULL);
    /* the victims here just started: no minimum run time */
    g_autofree char *conf_text = kb_test_conf_preempt_now();
    g_autofree char *conf = conf_file("scheduler.conf", conf_text);
    g_autoptr(Child) d = daemon_start(cl, "--scheduler-conf", conf, NULL);

    static const char *const groups[][2] = {{"lo", "low"}, {"hi", "high"}};
    for (guint k = 0; k < G_N_ELEMENTS(groups); k++)
        kb_test_create(cl->client, &kb_type_pod_groups_native, "default",
                       kb_test_json_printf("{\"apiVersion\":\"scheduling.k8s.io/v1beta1\","
                                           "\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"%s\","
                                           "\"namespace\":\"default\"},\"spec\":{"
                                           "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},"
                                           "\"priorityClassName\":\"%s\"}}",
                                           groups[k][0], groups[k][1]));
    for (int i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("lo-%d", i);
        add_pod_full(cl, name, NULL, 2, NULL, ",\"schedulingGroup\":{\"podGroupName\":\"lo\"}",
                     NULL);
    }
    g_assert_true(wait_bound(cl, "lo-", 2, WAIT_MS));
    g_autofree char *up = wait_native_condition(cl, "lo", "\"status\":\"True\"", WAIT_MS);
    g_assert_nonnull(strstr(up, "\"status\":\"True\""));
    g_autofree char *before = native_condition(cl, "hi");
    for (int i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("hi-%d", i);
        add_pod_full(cl, name, NULL, 2, NULL, ",\"schedulingGroup\":{\"podGroupName\":\"hi\"}",
                     NULL);
    }
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    gboolean evicting = FALSE;
    while (!evicting && g_get_monotonic_time() < deadline) {
        g_autofree char *log = child_log(d);
        evicting = strstr(log, "evicting 2 pods") != NULL;
        if (!evicting)
            g_usleep(20000);
    }
    g_assert_true(evicting);
    g_usleep(12 * G_USEC_PER_SEC);
    /* the evictions are not answered yet; kube-batchd wrote no condition on its victims */
    g_assert_false(pod_has_condition(cl, "lo-0", "DisruptionTarget"));
    g_autofree char *during = native_condition(cl, "hi");
    /* Before the change: "not admitted: queue \"default\" has 0 nvidia.com/gpu left ..." */
    g_assert_nonnull(before);
    g_assert_cmpstr(during, ==, before);
    if (!wait_bound(cl, "hi-", 2, 60000)) {
        g_autofree char *log = child_log(d);
        g_printerr("%s", log);
        g_assert_not_reached();
    }
    g_autofree char *after = wait_native_condition(cl, "hi", "\"status\":\"True\"", WAIT_MS);
    g_assert_nonnull(strstr(after, "\"reason\":\"Scheduled\""));
    daemon_stop(d);
    conf_file_remove(conf);
}

/* A one-pod job of @gpus GPUs in @queue announcing @runtime (kube-batchd.io/expected-runtime). */
static void add_job_runtime(Cluster *cl, const char *name, const char *queue, int gpus,
                            const char *runtime)
{
    g_autofree char *ann =
            g_strdup_printf("{\"" KB_RESERVE_RUNTIME_ANNOTATION "\":\"%s\"}", runtime);
    add_group_annotated(cl, name, 1, queue, NULL, ann);
    g_autofree char *pod = g_strdup_printf("%s-0", name);
    add_pod(cl, pod, name, gpus);
}

/*
 * The built-in default's borrowing end to end (reclaim's minRunTime 0: the borrowers have just
 * started). Queue a (weight 1 of 13 with c's 10 and the default queue's: a long-job limit of 3 x
 * 32 / 13 = 7.4 GPUs) starts three 8-GPU jobs of 24 h on 4 nodes of 8, one after another: the
 * second and third run past its limit on idle GPUs (round 6's default held them, and their
 * PodGroups say so), and an 8-GPU job of 1 h fills the cluster. kube-batchd restarts; queue b's
 * 8-GPU job then takes back the youngest borrower's GPUs, never the job within the limit nor the
 * short one, and binds.
 */
static void test_borrowed_reclaimed(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    for (int i = 1; i <= 4; i++) {
        g_autofree char *node = g_strdup_printf("n%d", i);
        add_node(cl, node, 8, NULL);
    }
    add_queue(cl, "a", 1);
    add_queue(cl, "b", 1);
    add_queue(cl, "c", 10);
    const char *dflt = kb_conf_default_yaml();
    const char *opt = "    borrowedLongJobsOnly: true\n";
    const char *at = strstr(dflt, opt);
    g_assert_nonnull(at);
    g_autofree char *conf_text = g_strdup_printf("%.*s%s    minRunTime: \"0\"\n%s",
                                                 (int)(at - dflt), dflt, opt, at + strlen(opt));
    g_autofree char *conf = conf_file("scheduler.conf", conf_text);
    g_autoptr(Child) d = daemon_start(cl, "--scheduler-conf", conf, NULL);
    for (int i = 1; i <= 3; i++) {
        g_autofree char *name = g_strdup_printf("a%d", i);
        add_job_runtime(cl, name, "a", 8, "24h");
        g_assert_true(wait_bound(cl, name, 1, WAIT_MS));
        g_usleep(1100 * 1000); /* creation times a second apart: the start order after a restart */
    }
    add_job_runtime(cl, "s1", "a", 8, "1h");
    g_assert_true(wait_bound(cl, "s1", 1, WAIT_MS));
    /* The borrowers' PodGroups say so before any reclaim; the job within the limit does not. */
    g_autofree char *said = wait_condition(cl, "a3", "borrowed past queue", WAIT_MS);
    g_assert_nonnull(strstr(said, "reclaim may take them back"));
    g_autofree char *within = group_status(cl, "a1", "status.conditions");
    g_assert_null(strstr(within, "borrowed"));
    daemon_stop(d);
    g_autoptr(Child) again = daemon_start(cl, "--scheduler-conf", conf, NULL);
    add_job_runtime(cl, "b1", "b", 8, "1h");
    if (!wait_bound(cl, "b1", 1, 30000)) {
        g_autofree char *log = child_log(again);
        g_printerr("%s", log);
        g_assert_not_reached();
    }
    g_assert_cmpuint(count_bound(cl, "a3", NULL), ==, 0); /* evicted: gone or waiting again */
    g_assert_cmpuint(count_bound(cl, "a1", NULL), ==, 1);
    g_assert_cmpuint(count_bound(cl, "a2", NULL), ==, 1);
    g_assert_cmpuint(count_bound(cl, "s1", NULL), ==, 1);
    g_autofree char *log = child_log(again);
    g_assert_nonnull(strstr(log, "evicting 1 pods"));
    daemon_stop(again);
    conf_file_remove(conf);
}

/* ---- hierarchical queues ------------------------------------------------------------------ */

static void add_queue_spec(Cluster *cl, const char *name, const char *spec)
{
    kb_test_create(cl->client, &kb_type_queues_volcano, NULL,
                   kb_test_json_printf(
                           "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\","
                           "\"metadata\":{\"name\":\"%s\"},\"spec\":{%s}}",
                           name, spec));
}

/* The queue's status at a dotted path (kas_json_get), as text, newly allocated, or NULL. */
static char *queue_status_at(Cluster *cl, const char *queue, const char *dotted)
{
    g_autoptr(GError) error = NULL;
    json_object *q = kb_client_get(cl->client, &kb_type_queues_volcano, NULL, queue, &error);
    g_assert_no_error(error);
    json_object *v = kas_json_get(q, dotted);
    char *out = NULL;
    if (v != NULL && json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0)
        v = json_object_array_get_idx(v, 0);
    if (v != NULL)
        out = g_strdup(
                json_object_is_type(v, json_type_string)
                        ? json_object_get_string(v)
                        : json_object_to_json_string_ext(
                                  v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(q);
    return out;
}

static gboolean wait_queue_status(Cluster *cl, const char *queue, const char *dotted,
                                  const char *needle, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    for (;;) {
        g_autofree char *v = queue_status_at(cl, queue, dotted);
        if (v != NULL && strstr(v, needle) != NULL)
            return TRUE;
        if (g_get_monotonic_time() > deadline) {
            g_printerr("queue %s %s: %s (waiting for %s)\n", queue, dotted, v, needle);
            return FALSE;
        }
        g_usleep(50000);
    }
}

/* Queue @queue's status.usage.resourceSeconds GPU figure, or -1 when none was written. */
/* Queue @queue's decayed GPU usage as written in its status.usage, or else in its annotation
 * (where the CRD prunes the status: KB_QUEUE_USAGE_ANNOTATION); -1 when in neither. */
static double queue_gpu_usage(Cluster *cl, const char *queue)
{
    g_autofree char *text = queue_status_at(cl, queue, "status.usage");
    if (text == NULL) {
        g_autoptr(GError) error = NULL;
        json_object *q = kb_client_get(cl->client, &kb_type_queues_volcano, NULL, queue, &error);
        g_assert_no_error(error);
        json_object *ann = kas_json_get(q, "metadata.annotations");
        text = g_strdup(
                json_object_get_string(json_object_object_get(ann, KB_QUEUE_USAGE_ANNOTATION)));
        json_object_put(q);
    }
    json_object *o = text != NULL ? json_tokener_parse(text) : NULL, *v = NULL;
    double gpu =
            o != NULL && json_object_object_get_ex(json_object_object_get(o, "resourceSeconds"),
                                                   "nvidia.com/gpu", &v)
                    ? json_object_get_double(v)
                    : -1;
    json_object_put(o);
    return gpu;
}

/* @n one-GPU jobs "<prefix><i>" (a PodGroup of one pod each) in @queue. */
static void add_jobs(Cluster *cl, const char *prefix, const char *queue, guint n)
{
    for (guint i = 0; i < n; i++) {
        g_autofree char *name = g_strdup_printf("%s%u", prefix, i);
        add_group(cl, name, 1, queue, NULL);
        add_pod(cl, name, name, 1);
    }
}

/*
 * Fair share that remembers, across a restart: with usageHalfLife (short here) and usageWeight
 * 1, queue busy holds the whole cluster (8 GPUs) for a few seconds; kube-batchd writes its
 * decayed usage to the Queue's status.usage and the metric. kube-batchd stops, busy's jobs end,
 * and both equal-weight queues submit 8 one-GPU jobs; a new kube-batchd reads the usage back and
 * its first cycles give the rested queue the larger part (6 of 8: busy counts as a third of its
 * weight); the Queue status still shows busy's usage. Without status.usage it would split 4/4.
 * With @data, the Queue CRD to install: Volcano's own status schema prunes status.usage, so the
 * usage must survive in the queue's annotation instead (and be absent from its status).
 */
static void test_usage_survives_restart(gconstpointer data)
{
    const char *queue_crd = data;
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds_with(cl, queue_crd);
    add_node(cl, "n1", 4, NULL);
    add_node(cl, "n2", 4, NULL);
    add_queue(cl, "busy", 1);
    add_queue(cl, "rested", 1);
    const char *def = kb_conf_default_yaml();
    const char *at = strstr(def, "  - name: proportion\n");
    g_assert_nonnull(at);
    g_autofree char *conf_text = g_strdup_printf(
            "%.*s  - name: proportion\n    arguments: {usageHalfLife: 30s, usageWeight: 1}\n%s",
            (int)(at - def), def, at + strlen("  - name: proportion\n"));
    g_autofree char *conf = conf_file("scheduler.conf", conf_text);

    g_autoptr(Child) d1 = daemon_start(cl, "--scheduler-conf", conf, NULL);
    add_jobs(cl, "old-", "busy", 8);
    g_assert_true(wait_bound(cl, "old-", 8, WAIT_MS));
    /* 8 GPUs for a few seconds: written at most every 5 s, so wait for a second write. */
    gint64 deadline = g_get_monotonic_time() + 4 * (gint64)WAIT_MS * 1000;
    double used = -1;
    while ((used = queue_gpu_usage(cl, "busy")) < 40 && g_get_monotonic_time() < deadline)
        g_usleep(100000);
    g_assert_cmpfloat(used, >=, 40);
    g_autofree char *metrics = NULL;
    g_assert_cmpint(http_get(d1->http_port, "/metrics", &metrics), ==, 200);
    /* the status holds GPU-seconds rounded to the milli-GPU */
    g_assert_cmpfloat(
            metric_value(metrics,
                         "kube_batchd_queue_usage{queue=\"busy\",resource=\"nvidia.com/gpu\"}"),
            >=, used - 0.0005);
    g_assert_cmpfloat(
            metric_value(metrics,
                         "kube_batchd_queue_usage{queue=\"rested\",resource=\"nvidia.com/gpu\"}"),
            ==, 0);
    daemon_stop(d1);

    KbDeleteOptions del = {.grace_period_seconds = 0};
    for (guint i = 0; i < 8; i++) {
        g_autofree char *name = g_strdup_printf("old-%u", i);
        g_autoptr(GError) error = NULL;
        g_assert_true(kb_client_delete(cl->client, &kb_type_pods, "default", name, &del, &error));
        g_assert_no_error(error);
    }
    add_jobs(cl, "b-", "busy", 8);
    add_jobs(cl, "r-", "rested", 8);
    g_autoptr(Child) d2 = daemon_start(cl, "--scheduler-conf", conf, NULL);
    gboolean ok = wait_bound(cl, "r-", 6, WAIT_MS) && wait_bound(cl, "b-", 2, WAIT_MS);
    g_usleep(600000);
    guint busy = count_bound(cl, "b-", NULL), rested = count_bound(cl, "r-", NULL);
    if (!ok || busy != 2 || rested != 6) {
        g_autofree char *log = child_log(d2);
        g_printerr("busy %u rested %u\n%s\n", busy, rested, log);
    }
    g_assert_cmpuint(rested, ==, 6);
    g_assert_cmpuint(busy, ==, 2);
    g_assert_cmpfloat(queue_gpu_usage(cl, "busy"), >, 0);
    if (queue_crd != NULL) {
        g_autofree char *status_usage = queue_status_at(cl, "busy", "status.usage");
        g_assert_null(status_usage);
        g_autofree char *state = queue_status_at(cl, "busy", "status.state");
        g_assert_cmpstr(state, ==, "Open");
        /* The deserved share, pruned from the status too, is kept in its annotation, and
         * kbctl shows it from there (half of the 8 GPUs each). */
        g_autofree char *kbctl = g_build_filename(kb_test_bin_dir(), "kbctl", NULL);
        const char *argv[] = {kbctl,  "--server", kb_test_apiserver_url(cl->api), "queue", "get",
                              "busy", NULL};
        g_autofree char *out = NULL, *err = NULL;
        int wait_status = 0;
        g_autoptr(GError) error = NULL;
        gint64 until = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
        do {
            g_clear_pointer(&out, g_free);
            g_clear_pointer(&err, g_free);
            g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                                       &err, &wait_status, &error));
            g_assert_no_error(error);
        } while (strstr(out, "gpu 4") == NULL && g_get_monotonic_time() < until &&
                 (g_usleep(200000), TRUE));
        g_autofree char *resources = queue_status_at(cl, "busy", "status.resources");
        g_assert_null(resources);
        if (strstr(out, "Deserved:") == NULL || strstr(out, "gpu 4") == NULL)
            g_error("kbctl queue get busy: %s%s", out, err);
    }
    daemon_stop(d2);
    conf_file_remove(conf);
}

/* A job "<name>" of one pod of @gpus GPUs in @queue; with @run_seconds > 0 the simulated kubelet
 * ends it with exit code 0 after that long (Succeeded), else it runs until deleted. */
static void add_timed_job(Cluster *cl, const char *name, const char *queue, int gpus,
                          int run_seconds)
{
    add_group(cl, name, 1, queue, NULL);
    g_autofree char *run = run_seconds > 0
                                   ? g_strdup_printf(",\"sim.kube-batchd.io/run-seconds\":\"%d\","
                                                     "\"sim.kube-batchd.io/exit-code\":\"0\"",
                                                     run_seconds)
                                   : g_strdup("");
    kb_test_create(cl->client, &kb_type_pods, "default",
                   kb_test_json_printf(
                           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                           "\"namespace\":\"default\",\"annotations\":{"
                           "\"scheduling.k8s.io/group-name\":\"%s\"%s}},\"spec\":{"
                           "\"schedulerName\":\"kube-batchd\",\"restartPolicy\":\"Never\","
                           "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":"
                           "{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"%d\"},\"limits\":{"
                           "\"nvidia.com/gpu\":\"%d\"}}}]}}",
                           name, name, run, gpus, gpus));
}

/* Pods of @prefix whose phase is Succeeded. */
static guint count_succeeded(Cluster *cl, const char *prefix)
{
    g_autoptr(GError) error = NULL;
    json_object *list = kb_client_list(cl->client, &kb_type_pods, "default", NULL, &error);
    g_assert_no_error(error);
    json_object *items = json_object_object_get(list, "items");
    guint n = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        if (g_str_has_prefix(kas_json_get_string(p, "metadata.name"), prefix) &&
            g_strcmp0(kas_json_get_string(p, "status.phase"), "Succeeded") == 0)
            n++;
    }
    json_object_put(list);
    return n;
}

/* Merge-patch queue @queue's status with @body. */
static void patch_queue_status(Cluster *cl, const char *queue, const char *body)
{
    g_autoptr(GError) error = NULL;
    json_object *r = kb_client_patch(cl->client, &kb_type_queues_volcano, NULL, queue, "status",
                                     KB_PATCH_MERGE, body, &error);
    g_assert_no_error(error);
    json_object_put(r);
}

/* Start kube-batchd, wait until gang "big" says it holds a reservation, stop it; the condition. */
static char *reservation_after_start(Cluster *cl)
{
    g_autoptr(Child) d = daemon_start(cl, NULL);
    char *cond = wait_condition(cl, "big", "reserved", 4 * WAIT_MS);
    if (cond == NULL || strstr(cond, "reserved") == NULL) {
        g_autofree char *log = child_log(d);
        g_printerr("big: %s\n%s\n", cond, log);
    }
    daemon_stop(d);
    return cond;
}

/*
 * The queue history survives a restart: 5 jobs of 4 GPUs run a second each and succeed, and
 * kube-batchd writes their runtimes to the Queue's status.runtimeHistory. Two 4-GPU jobs without
 * an estimate then hold both nodes, kube-batchd stops, and a gang of 2 x 4 GPUs arrives. A new
 * kube-batchd that reads the history back estimates the running jobs from it (past their
 * estimate: ending within a minute), so the gang's reservation has a start; the same restart
 * with status.runtimeHistory taken away knows no end for them: `expected start unknown`.
 */
static void test_history_survives_restart(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    add_node(cl, "n1", 4, NULL);
    add_node(cl, "n2", 4, NULL);
    add_queue(cl, "q", 1);
    g_autoptr(Child) d1 = daemon_start(cl, NULL);
    for (guint i = 0; i < KB_HISTORY_MIN_SAMPLES; i++) {
        g_autofree char *name = g_strdup_printf("done-%u", i);
        add_timed_job(cl, name, "q", 4, 1);
    }
    /* A sample is stamped by the cycle after its job succeeded: once all five did, the hold
     * jobs bring one. Written at most every 5 s: wait for all five. */
    gint64 deadline = g_get_monotonic_time() + 4 * (gint64)WAIT_MS * 1000;
    while (count_succeeded(cl, "done-") < KB_HISTORY_MIN_SAMPLES &&
           g_get_monotonic_time() < deadline)
        g_usleep(100000);
    g_assert_cmpuint(count_succeeded(cl, "done-"), ==, KB_HISTORY_MIN_SAMPLES);
    add_timed_job(cl, "hold-0", "q", 4, 0);
    add_timed_job(cl, "hold-1", "q", 4, 0);
    deadline = g_get_monotonic_time() + 4 * (gint64)WAIT_MS * 1000;
    guint n = 0;
    while (g_get_monotonic_time() < deadline) {
        g_autofree char *v = queue_status_at(cl, "q", "status.runtimeHistory.runtimeSeconds");
        json_object *o = v != NULL ? json_tokener_parse(v) : NULL;
        n = (guint)json_object_array_length(json_object_object_get(o, "2-4"));
        json_object_put(o);
        if (n >= KB_HISTORY_MIN_SAMPLES)
            break;
        g_usleep(100000);
    }
    if (n != KB_HISTORY_MIN_SAMPLES) {
        g_autofree char *v = queue_status_at(cl, "q", "status");
        g_autofree char *log = child_log(d1);
        g_printerr("queue status: %s\nkube-batchd:\n%s\n", v, log);
    }
    g_assert_cmpuint(n, ==, KB_HISTORY_MIN_SAMPLES);
    g_assert_true(wait_bound(cl, "hold-", 2, WAIT_MS));
    daemon_stop(d1);

    add_group(cl, "big", 2, "q", NULL);
    add_pod(cl, "big-0", "big", 4);
    add_pod(cl, "big-1", "big", 4);
    g_autofree char *saved = queue_status_at(cl, "q", "status.runtimeHistory");
    g_assert_nonnull(saved);

    /* Read-back disabled: the history is gone from the status. */
    patch_queue_status(cl, "q", "{\"status\":{\"runtimeHistory\":null}}");
    g_autofree char *without = reservation_after_start(cl);
    g_test_message("without the history: %s", without);
    g_assert_nonnull(strstr(without, "expected start unknown"));

    g_autofree char *body = g_strdup_printf("{\"status\":{\"runtimeHistory\":%s}}", saved);
    patch_queue_status(cl, "q", body);
    g_autofree char *with = NULL;
    g_autoptr(Child) d3 = daemon_start(cl, NULL);
    with = wait_condition(cl, "big", "expected start in", 4 * WAIT_MS);
    g_test_message("with the history: %s", with);
    if (with == NULL || strstr(with, "expected start in") == NULL) {
        g_autofree char *log = child_log(d3);
        g_printerr("big: %s\n%s\n", with, log);
    }
    g_assert_nonnull(strstr(with, "expected start in 1m"));
    daemon_stop(d3);
}

/* @count gangs "<prefix>-<i>" of 2 pods x 1 GPU in @queue. */
static void add_gangs(Cluster *cl, const char *prefix, const char *queue, guint count)
{
    for (guint i = 0; i < count; i++) {
        g_autofree char *g = g_strdup_printf("%s-%02u", prefix, i);
        add_group(cl, g, 2, queue, NULL);
        for (guint k = 0; k < 2; k++) {
            g_autofree char *p = g_strdup_printf("%s-%u", g, k);
            add_pod(cl, p, g, 1);
        }
    }
}

/*
 * The check on a cluster: org A (weight 1) with two teams (weight 1 each), org B (weight
 * 3), 32 GPUs, everything saturated: the teams get 4 GPUs each and org B 24; the queues' status
 * says so per resource. A cycle in parents (x <-> y) is reported on its queues (condition and
 * event), its job waits and says why, and nobody else is blocked.
 */
static void test_hierarchical_queues(void)
{
    if (!have_apiserver())
        return;
    g_autoptr(Cluster) cl = cluster_start();
    install_crds(cl);
    for (int i = 0; i < 4; i++) {
        g_autofree char *node = g_strdup_printf("n%d", i);
        add_node(cl, node, 8, NULL);
    }
    add_queue_spec(cl, "org-a", "\"weight\":1");
    add_queue_spec(cl, "team-a1", "\"weight\":1,\"parent\":\"org-a\"");
    add_queue_spec(cl, "team-a2", "\"weight\":1,\"parent\":\"org-a\"");
    add_queue_spec(cl, "org-b", "\"weight\":3");
    add_queue_spec(cl, "x", "\"weight\":1,\"parent\":\"y\"");
    add_queue_spec(cl, "y", "\"weight\":1,\"parent\":\"x\"");
    add_gangs(cl, "a1", "team-a1", 16);
    add_gangs(cl, "a2", "team-a2", 16);
    add_gangs(cl, "b", "org-b", 16);
    add_gangs(cl, "cyc", "x", 1);
    g_autoptr(Child) d = daemon_start(cl, NULL);
    gboolean ok = wait_bound(cl, "b-", 24, 3 * WAIT_MS) && wait_bound(cl, "a1-", 4, WAIT_MS) &&
                  wait_bound(cl, "a2-", 4, WAIT_MS);
    g_usleep(600000); /* a few more cycles: nothing more may be bound */
    guint a1 = count_bound(cl, "a1-", NULL), a2 = count_bound(cl, "a2-", NULL);
    guint b = count_bound(cl, "b-", NULL), cyc = count_bound(cl, "cyc-", NULL);
    if (!ok || a1 != 4 || a2 != 4 || b != 24) {
        g_autofree char *log = child_log(d);
        g_printerr("team-a1 %u team-a2 %u org-b %u\n%s\n", a1, a2, b, log);
    }
    g_assert_cmpuint(a1, ==, 4);
    g_assert_cmpuint(a2, ==, 4);
    g_assert_cmpuint(b, ==, 24);
    g_assert_cmpuint(cyc, ==, 0);
    g_assert_true(wait_queue_status(cl, "org-b", "status.resources",
                                    "\"nvidia.com/gpu\":{\"deserved\":\"24\",\"allocated\":"
                                    "\"24\",\"pending\":\"8\"}",
                                    WAIT_MS));
    g_assert_true(wait_queue_status(cl, "org-a", "status.resources",
                                    "\"nvidia.com/gpu\":{\"deserved\":\"8\",\"allocated\":"
                                    "\"8\",\"pending\":\"56\"}",
                                    WAIT_MS));
    g_assert_true(wait_queue_status(cl, "team-a1", "status.parent", "org-a", WAIT_MS));
    g_assert_true(
            wait_queue_status(cl, "x", "status.conditions", "\"reason\":\"ParentCycle\"", WAIT_MS));
    g_autofree char *cond = queue_status_at(cl, "y", "status.conditions");
    g_assert_nonnull(cond);
    g_assert_nonnull(strstr(cond, "spec.parent forms a cycle"));
    g_autofree char *pg = wait_condition(cl, "cyc-00", "forms a cycle", WAIT_MS);
    g_assert_nonnull(pg);
    g_assert_nonnull(strstr(pg, "QueueInvalid"));
    gint64 deadline = g_get_monotonic_time() + (gint64)WAIT_MS * 1000;
    g_autofree char *events = NULL;
    for (;;) {
        g_free(events);
        events = events_about(cl, "x", "ParentCycle");
        if (strstr(events, "cycle") != NULL || g_get_monotonic_time() > deadline)
            break;
        g_usleep(50000);
    }
    g_assert_nonnull(strstr(events, "queue \"x\": spec.parent forms a cycle"));
    /* Nothing changes any more: five more cycles write no queue status. */
    g_autofree char *rv_b = queue_status_at(cl, "org-b", "metadata.resourceVersion");
    g_autofree char *rv_x = queue_status_at(cl, "x", "metadata.resourceVersion");
    g_usleep(1000000);
    g_autofree char *rv_b2 = queue_status_at(cl, "org-b", "metadata.resourceVersion");
    g_autofree char *rv_x2 = queue_status_at(cl, "x", "metadata.resourceVersion");
    g_assert_cmpstr(rv_b, ==, rv_b2);
    g_assert_cmpstr(rv_x, ==, rv_x2);
    daemon_stop(d);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    g_test_add_func("/batchd/flags/errors-and-version", test_flags);
    g_test_add_func("/batchd/conf/volcano-file-starts-strict-refuses", test_volcano_conf);
    g_test_add_func("/batchd/gang/waits-for-capacity-then-binds-all", test_gang_waits_for_capacity);
    g_test_add_func("/batchd/queues/weights-share-gpus", test_queue_weights);
    g_test_add_func("/batchd/priority/higher-class-first", test_priority_order);
    g_test_add_func("/batchd/resources/other-schedulers-pods-count", test_other_schedulers);
    g_test_add_func("/batchd/predicates/taints", test_taints);
    g_test_add_func("/batchd/predicates/node-name-affinity", test_node_name_affinity);
    g_test_add_func("/batchd/robustness/bad-objects", test_bad_objects);
    g_test_add_func("/batchd/robustness/missing-crds", test_missing_crds);
    g_test_add_func("/batchd/native/gang-waits-then-binds-whole", test_native_gang);
    g_test_add_func("/batchd/native/composite-v1alpha3", test_native_composite);
    g_test_add_func("/batchd/native/status-held-while-evicting",
                    test_native_status_held_while_evicting);
    g_test_add_func("/batchd/leader/handover-without-double-binding", test_leader_handover);
    g_test_add_func("/batchd/preempt/high-priority-gang-binds-after-victims-go", test_preempt);
    g_test_add_func("/batchd/reclaim/borrowed-long-job-taken-back-after-restart",
                    test_borrowed_reclaimed);
    g_test_add_func("/batchd/preempt/native-group-disruption-target",
                    test_native_preempt_disruption_target);
    g_test_add_func("/batchd/queues/hierarchy-shares-and-cycle", test_hierarchical_queues);
    g_test_add_data_func("/batchd/queues/usage-survives-restart", NULL,
                         test_usage_survives_restart);
    g_test_add_data_func("/batchd/queues/usage-survives-restart-volcano-crd",
                         "tests/data/crds/queue-volcano-upstream.yaml",
                         test_usage_survives_restart);
    g_test_add_func("/batchd/queues/runtime-history-survives-restart",
                    test_history_survives_restart);
    g_test_add_func("/batchd/status/waits-for-bindings", test_status_waits_for_bindings);
    int rc = g_test_run();
    curl_global_cleanup();
    return rc;
}
