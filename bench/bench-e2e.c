/*
 * End-to-end throughput of kube-batchd against bin/kb-apiserver (both child processes):
 *
 *   1. the cluster: N nodes (8 GPUs each by default), the PodGroup/Queue CRDs;
 *   2. baseline, same run, same server: a plain parallel binding loop (64 requests in flight over
 *      keep-alive connections, as the scheduler's binder uses) binds B pre-created pods: the rate
 *      the API server itself accepts bindings at;
 *   3. P pods in gangs of G (one GPU each) and their PodGroups are created first; then kube-batchd
 *      starts (--schedule-period 200ms) and a watch (informer) here sees each pod's
 *      spec.nodeName: pods bound per second from the scheduler's start and from its first
 *      binding to the last confirmed one, and the writes per bound pod by kind, counted by
 *      kb-apiserver itself (GET /admin/stats, successful writes by method and resource) from the
 *      scheduler's start until its writes settle (bindings, PodGroup status, events);
 *   4. the ratios to the raw binding loop, and the most client connections the server saw.
 *
 * Prints figures and the ratio to the baseline; asserts nothing.
 *
 *   bench-e2e [--nodes 1000] [--gpus 8] [--pods 5000] [--gang 8] [--baseline 5000]
 *   (KB_E2E_WRAPPER="perf record -g -o FILE --" runs the daemon under a profiler)
 */
#include <curl/curl.h>
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "kube/kb-client.h"
#include "kube/kb-informer.h"
#include "kube/kb-log.h"
#include "kube/kb-objects.h"
#include "bench/lib/sim.h"
#include "tests/apiserver/kas-json.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-daemon.h"
#include "tests/lib/kb-test-util.h"

#define WINDOW 64

static gint base_window = WINDOW, bind_window = 0;
static gint n_nodes = 1000, n_pods = 5000, gang = 8, n_baseline = 5000, gpus_per_node = 8;

static double now_s(void)
{
    return (double)g_get_monotonic_time() / G_USEC_PER_SEC;
}

/* KB_E2E_MARKS=1: phase boundaries on stderr, in CLOCK_MONOTONIC seconds (as `perf record -k
 * CLOCK_MONOTONIC` stamps its samples), to cut a system-wide profile into phases. */
static void mark_at(double t, const char *what)
{
    if (g_getenv("KB_E2E_MARKS") != NULL)
        fprintf(stderr, "mark %.6f %s\n", t, what);
}

static void mark(const char *what)
{
    mark_at(now_s(), what);
}

/* ---- a window of asynchronous requests ------------------------------------------------------ */

/* Issues requests produced by @next(i) for i in [0, n) with WINDOW in flight; runs the loop until
 * all answered. Returns the number of failures. */
typedef struct {
    KbClient *client;
    guint n, next, done, failed, window;
    void (*issue)(KbClient *client, guint i, KbResponseFunc cb, gpointer data);
    double *acked;      /* per i, the time its response came (may be NULL) */
    double latency_sum; /* seconds, request issued to response, over all requests */
    GMainLoop *loop;
    char *first_error;
} Window;

static void window_pump(Window *w);

static void window_cb(const KbResponse *resp, gpointer data)
{
    Window *w = data;
    w->done++;
    if (resp->error != NULL && !g_error_matches(resp->error, KB_ERROR, KB_ERROR_ALREADY_EXISTS)) {
        w->failed++;
        if (w->first_error == NULL)
            w->first_error = g_strdup(resp->error->message);
    }
    window_pump(w);
    if (w->done == w->n)
        g_main_loop_quit(w->loop);
}

typedef struct {
    Window *w;
    guint i;
    double sent;
} Slot;

static void slot_cb(const KbResponse *resp, gpointer data)
{
    Slot *s = data;
    Window *w = s->w;
    double t = now_s();
    w->latency_sum += t - s->sent;
    if (w->acked != NULL)
        w->acked[s->i] = t;
    g_free(s);
    window_cb(resp, w);
}

static void window_pump(Window *w)
{
    while (w->next < w->n && w->next - w->done < w->window) {
        Slot *s = g_new0(Slot, 1);
        s->w = w;
        s->i = w->next++;
        s->sent = now_s();
        w->issue(w->client, s->i, slot_cb, s);
    }
}

static double window_run_full(KbClient *client, guint n, guint window,
                              void (*issue)(KbClient *, guint, KbResponseFunc, gpointer),
                              double *latency_ms, const char *what)
{
    Window w = {.client = client, .n = n, .issue = issue, .window = window};
    if (n == 0)
        return 0;
    w.loop = g_main_loop_new(NULL, FALSE);
    double t0 = now_s();
    window_pump(&w);
    g_main_loop_run(w.loop);
    double dt = now_s() - t0;
    g_main_loop_unref(w.loop);
    if (w.failed > 0)
        fprintf(stderr, "bench-e2e: %s: %u of %u failed (first: %s)\n", what, w.failed, n,
                w.first_error);
    g_free(w.first_error);
    if (latency_ms != NULL)
        *latency_ms = 1000 * w.latency_sum / n;
    return dt;
}

static double window_run(KbClient *client, guint n,
                         void (*issue)(KbClient *, guint, KbResponseFunc, gpointer), double *unused,
                         const char *what)
{
    return window_run_full(client, n, WINDOW, issue, NULL, what);
}

static void post(KbClient *client, const KbResourceType *type, const char *ns, json_object *body,
                 KbResponseFunc cb, gpointer data)
{
    KbRequest req = {.method = "POST", .type = type, .namespace_ = ns, .body = body};
    kb_client_call_async(client, &req, cb, data);
    json_object_put(body);
}

static void issue_node(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%04u\","
            "\"labels\":{\"kubernetes.io/hostname\":\"node-%04u\"}},\"status\":{"
            "\"capacity\":{\"cpu\":\"96\",\"memory\":\"768Gi\",\"pods\":\"110\","
            "\"nvidia.com/gpu\":\"%d\"},\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\","
            "\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            i, i, gpus_per_node, gpus_per_node);
    post(client, &kb_type_nodes, NULL, json_tokener_parse(text), cb, data);
}

/* Node status again through /status, for servers that drop status on create. */
static void issue_node_status(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    g_autofree char *name = g_strdup_printf("node-%04u", i);
    g_autofree char *text = g_strdup_printf(
            "{\"status\":{\"capacity\":{\"cpu\":\"96\",\"memory\":\"768Gi\",\"pods\":\"110\","
            "\"nvidia.com/gpu\":\"%d\"},\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\","
            "\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            gpus_per_node, gpus_per_node);
    json_object *body = json_tokener_parse(text);
    KbRequest req = {.method = "PATCH",
                     .type = &kb_type_nodes,
                     .name = name,
                     .subresource = "status",
                     .body = body,
                     .content_type = "application/merge-patch+json"};
    kb_client_call_async(client, &req, cb, data);
    json_object_put(body);
}

static gboolean base_same_pods = FALSE;

static void issue_baseline_pod(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    if (base_same_pods) {
        /* The workload's pod, another scheduler's name. */
        g_autofree char *text = g_strdup_printf(
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"base-%05u\","
                "\"namespace\":\"baseline\",\"annotations\":{\"scheduling.k8s.io/group-name\":"
                "\"job-%05u\"}},\"spec\":{\"schedulerName\":\"nobody\",\"containers\":[{"
                "\"name\":\"tensorflow\",\"image\":\"tensorflow/tensorflow:2.15.0-gpu\","
                "\"resources\":{\"requests\":{\"cpu\":\"4\",\"memory\":\"16Gi\","
                "\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
                i, i / (guint)gang);
        post(client, &kb_type_pods, "baseline", json_tokener_parse(text), cb, data);
        return;
    }
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"base-%05u\","
            "\"namespace\":\"baseline\"},\"spec\":{\"schedulerName\":\"nobody\","
            "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"requests\":"
            "{\"cpu\":\"10m\"}}}]}}",
            i);
    post(client, &kb_type_pods, "baseline", json_tokener_parse(text), cb, data);
}

static void issue_baseline_bind(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    g_autofree char *pod = g_strdup_printf("base-%05u", i);
    g_autofree char *node = g_strdup_printf("node-%04u", i % (guint)n_nodes);
    if (base_same_pods) {
        /* What kube-batchd sends: the pod's GPU index on the Binding. To nodes that do not
         * exist (the API server does not check), so that these pods hold no room the workload
         * needs. */
        g_free(node);
        node = g_strdup_printf("gone-%04u", i % (guint)n_nodes);
        g_autofree char *ids = g_strdup_printf("%u", i % (guint)gpus_per_node);
        const char *annotations[] = {"kube-batchd.io/gpu-ids", ids, NULL};
        kb_client_bind_async_full(client, "baseline", pod, NULL, node, annotations, cb, data);
        return;
    }
    kb_client_bind_async(client, "baseline", pod, NULL, node, cb, data);
}

static void issue_group(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"job-%05u\",\"namespace\":\"bench\"},"
            "\"spec\":{\"minMember\":%d}}",
            i, gang);
    post(client, &kb_type_pod_groups_volcano, "bench", json_tokener_parse(text), cb, data);
}

static void issue_pod(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%05u\","
            "\"namespace\":\"bench\",\"annotations\":{\"scheduling.k8s.io/group-name\":"
            "\"job-%05u\"}},\"spec\":{\"schedulerName\":\"kube-batchd\",\"containers\":[{"
            "\"name\":\"tensorflow\",\"image\":\"tensorflow/tensorflow:2.15.0-gpu\","
            "\"resources\":{\"requests\":{\"cpu\":\"4\",\"memory\":\"16Gi\","
            "\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
            i, i / (guint)gang);
    post(client, &kb_type_pods, "bench", json_tokener_parse(text), cb, data);
}

static void create_blocking(KbClient *client, const KbResourceType *type, const char *ns,
                            json_object *body)
{
    g_autoptr(GError) error = NULL;
    json_object *r = kb_client_create(client, type, ns, body, &error);
    if (error != NULL && !g_error_matches(error, KB_ERROR, KB_ERROR_ALREADY_EXISTS))
        g_error("create: %s", error->message);
    json_object_put(r);
    json_object_put(body);
}

static void create_crd(KbClient *client, const char *rel)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(kb_test_src_dir(), rel, NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &text, &len, &error))
        g_error("%s", error->message);
    json_object *obj = kas_yaml_to_json(text, len, &error);
    if (obj == NULL)
        g_error("%s: %s", rel, error->message);
    create_blocking(client, &kb_type_crds, NULL, obj);
}

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(user, data, (gssize)(size * n));
    return size * n;
}

/* The daemon's /metrics text (newly allocated; empty when unreachable). */
static char *fetch_metrics(guint port)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u/metrics", port);
    GString *buf = g_string_new(NULL);
    CURL *curl = curl_easy_init();
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, buf);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_perform(curl);
    curl_easy_cleanup(curl);
    return g_string_free(buf, FALSE);
}

/* kb-apiserver's GET /admin/stats (new reference), or NULL. */
static json_object *fetch_stats(const char *server)
{
    g_autofree char *url = g_strdup_printf("%s/admin/stats", server);
    GString *buf = g_string_new(NULL);
    CURL *curl = curl_easy_init();
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, buf);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_perform(curl);
    curl_easy_cleanup(curl);
    json_object *o = json_tokener_parse(buf->str);
    g_string_free(buf, TRUE);
    return o;
}

static gint64 stats_writes(json_object *stats, const char *kind)
{
    json_object *w = NULL, *v = NULL;
    if (stats == NULL || !json_object_object_get_ex(stats, "writes", &w) ||
        !json_object_object_get_ex(w, kind, &v))
        return 0;
    return json_object_get_int64(v);
}

/* Sum of the samples of metric family @name (every label set) in @text. */
static double metric_sum(const char *text, const char *name, const char *label_filter)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    gsize n = strlen(name);
    double sum = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *l = lines[i];
        if (strncmp(l, name, n) != 0 || (l[n] != ' ' && l[n] != '{'))
            continue;
        if (label_filter != NULL && strstr(l, label_filter) == NULL)
            continue;
        const char *sp = strrchr(l, ' ');
        if (sp != NULL)
            sum += g_ascii_strtod(sp + 1, NULL);
    }
    return sum;
}

/* CPU seconds (user + system) used so far by process @pid, or -1. */
static double cpu_seconds(const char *pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%s/stat", pid);
    g_autofree char *text = NULL;
    if (pid == NULL || !g_file_get_contents(path, &text, NULL, NULL))
        return -1;
    const char *p = strrchr(text, ')');
    unsigned long utime = 0, stime = 0;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- watching bindings ------------------------------------------------------------------- */

typedef struct {
    double *bound; /* per pod index: when the watch showed spec.nodeName, 0 before */
    guint n_bound;
    double last;
    GMainLoop *loop;
    /* CPU seconds of the server, kube-batchd and this process when the first binding showed */
    const char *server_pid, *daemon_pid;
    double cpu_first[3];
} Watch;

static void seen(Watch *w, const KbPod *pod)
{
    guint i;
    if (pod->node_name == NULL || sscanf(pod->meta.name, "p-%u", &i) != 1 || i >= (guint)n_pods ||
        w->bound[i] != 0)
        return;
    w->bound[i] = now_s();
    w->last = w->bound[i];
    if (w->n_bound++ == 0) {
        w->cpu_first[0] = cpu_seconds(w->server_pid);
        w->cpu_first[1] = cpu_seconds(w->daemon_pid);
        w->cpu_first[2] = cpu_seconds("self");
    }
}

static void on_add(gpointer obj, gpointer data)
{
    seen(data, obj);
}

static void on_update(gpointer old_obj, gpointer new_obj, gpointer data)
{
    seen(data, new_obj);
}

static gboolean on_tick(gpointer data)
{
    return G_SOURCE_CONTINUE;
}

int main(int argc, char **argv)
{
    GOptionEntry entries[] = {
            {"nodes", 0, 0, G_OPTION_ARG_INT, &n_nodes, "nodes", "N"},
            {"gpus", 0, 0, G_OPTION_ARG_INT, &gpus_per_node, "GPUs per node (default 8)", "N"},
            {"pods", 0, 0, G_OPTION_ARG_INT, &n_pods, "pods scheduled by kube-batchd", "N"},
            {"gang", 0, 0, G_OPTION_ARG_INT, &gang, "pods per PodGroup", "N"},
            {"baseline", 0, 0, G_OPTION_ARG_INT, &n_baseline, "pods bound by the plain loop", "N"},
            {"baseline-same-pods", 0, 0, G_OPTION_ARG_NONE, &base_same_pods, "x", NULL},
            {"baseline-in-flight", 0, 0, G_OPTION_ARG_INT, &base_window, "the loop's window", "N"},
            {"bind-in-flight", 0, 0, G_OPTION_ARG_INT, &bind_window,
             "kube-batchd --bind-max-in-flight (default: its own)", "N"},
            {NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(GOptionContext) ctx = g_option_context_new("- kube-batchd end to end");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || n_nodes < 1 || n_pods < 1 ||
        gang < 1 || n_baseline < 0) {
        fprintf(stderr, "bench-e2e: %s\n", error != NULL ? error->message : "bad values");
        return 2;
    }
    kb_log_init(KB_LOG_WARNING);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    g_autoptr(KbTestApiserver) apiserver = kb_test_apiserver_start(NULL, &error);
    if (apiserver == NULL)
        g_error("%s", error->message);
    const char *url = kb_test_apiserver_url(apiserver);
    g_autoptr(KbConfig) config = kb_config_new(url);
    KbClient *client = kb_client_new(config, &error);
    kb_client_set_max_in_flight(client, (guint)MAX(base_window, WINDOW) + 8);

    create_crd(client, "deploy/crds/podgroup-volcano.yaml");
    create_crd(client, "deploy/crds/queue-volcano.yaml");
    create_blocking(client, &kb_type_namespaces, NULL,
                    json_tokener_parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                                       "\"metadata\":{\"name\":\"baseline\"}}"));
    create_blocking(client, &kb_type_namespaces, NULL,
                    json_tokener_parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                                       "\"metadata\":{\"name\":\"bench\"}}"));
    g_usleep(200000); /* let the CRDs be served */

    double t_nodes = window_run(client, n_nodes, issue_node, NULL, "nodes");
    window_run(client, n_nodes, issue_node_status, NULL, "node status");
    printf("cluster: %d nodes x %d GPUs created in %.2f s\n", n_nodes, gpus_per_node, t_nodes);

    /* Baseline: the API server's own binding rate with a plain parallel loop. */
    double t_bcreate = window_run(client, n_baseline, issue_baseline_pod, NULL, "baseline pods");
    mark("baseline-bind-start");
    double base_latency_ms = 0;
    double cpu_b0 = cpu_seconds(kb_test_apiserver_pid(apiserver)), cpu_self0 = cpu_seconds("self");
    double t_bind = window_run_full(client, n_baseline, (guint)base_window, issue_baseline_bind,
                                    &base_latency_ms, "baseline binds");
    double cpu_base_api = cpu_seconds(kb_test_apiserver_pid(apiserver)) - cpu_b0;
    double cpu_base_self = cpu_seconds("self") - cpu_self0;
    mark("baseline-bind-end");
    double base_rate = n_baseline > 0 ? n_baseline / t_bind : 0;
    double create_rate_base = n_baseline > 0 ? n_baseline / t_bcreate : 0;
    printf("baseline: %d pods created at %.0f/s; bound by a plain loop (%d in flight) at %.0f "
           "bindings/s\n",
           n_baseline, create_rate_base, base_window, base_rate);

    /* The workload first: PodGroups and pods, all pending. */
    guint n_groups = (guint)(n_pods + gang - 1) / (guint)gang;
    double t_groups = window_run(client, n_groups, issue_group, NULL, "podgroups");
    double t_create = window_run(client, n_pods, issue_pod, NULL, "pods");
    printf("workload: %u PodGroups (gangs of %d) in %.2f s, %d pods in %.2f s (%.0f/s)\n", n_groups,
           gang, t_groups, n_pods, t_create, n_pods / t_create);

    Watch w = {.bound = g_new0(double, n_pods), .loop = g_main_loop_new(NULL, FALSE)};
    KbInformerOptions io = {
            .type = &kb_type_pods, .namespace_ = "bench", .decode = (KbDecodeFunc)kb_pod_decode};
    KbInformerHandlers h = {.on_add = on_add, .on_update = on_update};
    KbInformer *inf = kb_informer_new(client, &io, &h, &w);
    kb_informer_start(inf);
    while (!kb_informer_has_synced(inf))
        g_main_context_iteration(NULL, TRUE);

    /* kube-batchd starts now. */
    guint http_port = kb_test_free_port();
    g_autofree char *listen = g_strdup_printf("127.0.0.1:%u", http_port);
    /* KB_E2E_LOG_LEVEL=debug shows each cycle's placements with timestamps. */
    const char *level =
            g_getenv("KB_E2E_LOG_LEVEL") != NULL ? g_getenv("KB_E2E_LOG_LEVEL") : "warning";
    g_autofree char *bw = g_strdup_printf("%d", bind_window);
    const char *dargv[] = {"--master",
                           url,
                           "--schedule-period",
                           "200ms",
                           "--listen-address",
                           listen,
                           "--log-level",
                           level,
                           bind_window > 0 ? "--bind-max-in-flight" : NULL,
                           bw,
                           NULL};
    /* KB_E2E_WRAPPER="perf record -g -o /tmp/kbd.data --" profiles the daemon. */
    KbTestDaemonOptions dopts = {.wrapper = g_getenv("KB_E2E_WRAPPER")};
    json_object *stats0 = fetch_stats(url);
    double cpu_a0 = cpu_seconds(kb_test_apiserver_pid(apiserver));
    double cpu_self1 = cpu_seconds("self");
    double t_start = now_s();
    mark("scheduler-start");
    g_autoptr(KbTestDaemon) daemon = kb_test_daemon_start("kube-batchd", dargv, &dopts, &error);
    if (daemon == NULL)
        g_error("%s", error->message);
    w.server_pid = kb_test_apiserver_pid(apiserver);
    w.daemon_pid = kb_test_daemon_pid(daemon);
    /* Sample the server's open connections while waiting. */
    gint max_conns = 0;
    guint tick = g_timeout_add(250, on_tick, NULL);
    double last_sample = 0;
    while (w.n_bound < (guint)n_pods) {
        g_main_context_iteration(NULL, TRUE);
        if (now_s() - last_sample > 0.25) {
            last_sample = now_s();
            json_object *st = fetch_stats(url);
            json_object *c = NULL;
            if (st != NULL && json_object_object_get_ex(st, "connections", &c))
                max_conns = MAX(max_conns, json_object_get_int(c));
            json_object_put(st);
        }
        if (now_s() - t_start > 180 || !kb_test_daemon_running(daemon))
            break;
    }
    g_source_remove(tick);
    mark("scheduler-bound-all");
    double t_end = w.last;
    double cpu_d = cpu_seconds(kb_test_daemon_pid(daemon));
    double cpu_self = cpu_seconds("self") - cpu_self1;
    double cpu_bind[3] = {cpu_seconds(kb_test_apiserver_pid(apiserver)) - w.cpu_first[0],
                          cpu_d - w.cpu_first[1], cpu_seconds("self") - w.cpu_first[2]};
    double cpu_a = cpu_seconds(kb_test_apiserver_pid(apiserver)) - cpu_a0;
    /* Let the status writes and events the bindings cause settle (a few periods). */
    g_usleep(3 * G_USEC_PER_SEC);
    json_object *stats1 = fetch_stats(url);

    double first_bound = 0;
    for (int i = 0; i < n_pods; i++) {
        if (w.bound[i] != 0 && (first_bound == 0 || w.bound[i] < first_bound))
            first_bound = w.bound[i];
    }
    mark_at(first_bound, "first-binding-seen");
    mark_at(t_end, "last-binding-seen");
    double start_rate = w.n_bound > 0 ? w.n_bound / (t_end - t_start) : 0;
    double bind_rate = w.n_bound > 1 ? w.n_bound / (t_end - first_bound) : 0;

    printf("kube-batchd: %u of %d pods bound; scheduler start to first binding %.2f s, to last "
           "%.2f s\n",
           w.n_bound, n_pods, first_bound - t_start, t_end - t_start);
    printf("kube-batchd: %.0f pods/s from scheduler start, %.0f pods/s from the first binding\n",
           start_rate, bind_rate);
    printf("ratio to the raw binding loop: from start %.2f, from first binding %.2f\n",
           base_rate > 0 ? start_rate / base_rate : 0, base_rate > 0 ? bind_rate / base_rate : 0);

    /* Writes per bound pod, by kind, as the server counted them. */
    json_object *writes1 = NULL;
    gint64 total = stats_writes(stats1, "total") - stats_writes(stats0, "total");
    printf("writes per bound pod (kb-apiserver's count, %" G_GINT64_FORMAT " writes): %.3f\n",
           total, w.n_bound > 0 ? (double)total / w.n_bound : 0);
    if (stats1 != NULL && json_object_object_get_ex(stats1, "writes", &writes1)) {
        json_object_object_foreach(writes1, kind, v)
        {
            gint64 n = json_object_get_int64(v) - stats_writes(stats0, kind);
            if (strcmp(kind, "total") != 0 && n > 0)
                printf("  %-28s %7" G_GINT64_FORMAT "  %.3f per bound pod\n", kind, n,
                       w.n_bound > 0 ? (double)n / w.n_bound : 0);
        }
    }
    printf("client connections seen by the server: at most %d (baseline loop and watch included)\n",
           max_conns);
    printf("cpu from scheduler start: kube-batchd %.2f s, kb-apiserver %.2f s, this watcher %.2f s "
           "(wall %.2f s, %d cores)\n",
           cpu_d, cpu_a, cpu_self, t_end - t_start, (int)sysconf(_SC_NPROCESSORS_ONLN));
    printf("cpu per binding (ms): raw loop: server %.3f, client %.3f; kube-batchd run: server "
           "%.3f, kube-batchd %.3f, this watcher %.3f\n",
           1000 * cpu_base_api / MAX(n_baseline, 1), 1000 * cpu_base_self / MAX(n_baseline, 1),
           1000 * cpu_a / MAX(w.n_bound, 1), 1000 * cpu_d / MAX(w.n_bound, 1),
           1000 * cpu_self / MAX(w.n_bound, 1));
    printf("cpu per binding (ms) from the first binding on: server %.3f, kube-batchd %.3f, this "
           "watcher %.3f\n",
           1000 * cpu_bind[0] / MAX(w.n_bound, 1), 1000 * cpu_bind[1] / MAX(w.n_bound, 1),
           1000 * cpu_bind[2] / MAX(w.n_bound, 1));
    g_autofree char *metrics = fetch_metrics(http_port);
    printf("kube-batchd: %.0f cycles (mean %.2f ms); %.0f binds succeeded, %.0f failed; %.0f "
           "events created, %.0f patched, %.0f dropped, %.0f over budget; %.0f status writes\n",
           metric_sum(metrics, "kube_batchd_cycles_total", NULL),
           1000 * metric_sum(metrics, "kube_batchd_cycle_duration_seconds_sum", NULL) /
                   MAX(metric_sum(metrics, "kube_batchd_cycle_duration_seconds_count", NULL), 1),
           metric_sum(metrics, "kube_batchd_binds_total", "succeeded"),
           metric_sum(metrics, "kube_batchd_binds_total", NULL) -
                   metric_sum(metrics, "kube_batchd_binds_total", "succeeded"),
           metric_sum(metrics, "kube_batchd_events_total", "\"created\""),
           metric_sum(metrics, "kube_batchd_events_total", "\"patched\""),
           metric_sum(metrics, "kube_batchd_events_total", "\"dropped\""),
           metric_sum(metrics, "kube_batchd_events_total", "\"over_budget\""),
           metric_sum(metrics, "kube_batchd_status_writes_total", "\"written\""));
    printf("kube-batchd: binding round trip %.1f ms on average (the raw loop: %.1f ms)\n",
           1000 * metric_sum(metrics, "kube_batchd_bind_duration_seconds_sum", NULL) /
                   MAX(metric_sum(metrics, "kube_batchd_bind_duration_seconds_count", NULL), 1),
           base_latency_ms);
    json_object_put(stats0);
    json_object_put(stats1);
    /* Events by reason (what the event writes were). */
    json_object *evs = kb_client_list(client, &kb_type_events, "bench", NULL, NULL);
    json_object *items = evs != NULL ? json_object_object_get(evs, "items") : NULL;
    g_autoptr(GHashTable) reasons = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
        json_object *e = json_object_array_get_idx(items, i);
        g_autofree char *key =
                g_strdup_printf("%s %s", kas_json_get_string(e, "involvedObject.kind"),
                                kas_json_get_string(e, "reason"));
        gpointer n = g_hash_table_lookup(reasons, key);
        g_hash_table_replace(reasons, g_steal_pointer(&key),
                             GUINT_TO_POINTER(GPOINTER_TO_UINT(n) + 1));
    }
    GHashTableIter it;
    gpointer rk, rv;
    g_hash_table_iter_init(&it, reasons);
    printf("events in namespace bench by object and reason:");
    while (g_hash_table_iter_next(&it, &rk, &rv))
        printf(" %s %u;", (const char *)rk, GPOINTER_TO_UINT(rv));
    printf("\n");
    json_object_put(evs);

    kb_informer_free(inf);
    kb_test_daemon_stop(daemon, 30000);
    kb_test_apiserver_stop(apiserver);
    kb_client_free(client);
    g_main_loop_unref(w.loop);
    g_free(w.bound);
    curl_global_cleanup();
    return 0;
}
