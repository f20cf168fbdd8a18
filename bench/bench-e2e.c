/*
 * End-to-end throughput of kube-batchd against bin/kb-apiserver (both child processes):
 *
 *   1. the cluster: N nodes (16 GPUs each), the PodGroup/Queue CRDs;
 *   2. baseline, same run, same server: a plain parallel binding loop (64 requests in flight over
 *      keep-alive connections, as the scheduler's binder uses) binds B pre-created pods: the rate
 *      the API server itself accepts bindings at;
 *   3. kube-batchd starts (--schedule-period 200ms); P pods in gangs of G (one GPU each) and their
 *      PodGroups are created as fast as the server takes them; a watch (informer) here sees each
 *      pod's spec.nodeName: pods bound per second from the first creation to the last confirmed
 *      binding, the creation rate, and per-pod latency (creation acknowledged -> binding seen).
 *
 * Prints figures and the ratio to the baseline; asserts nothing.
 *
 *   bench-e2e [--nodes 1000] [--pods 10000] [--gang 8] [--baseline 10000]
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

#define WINDOW 64

static gint n_nodes = 1000, n_pods = 10000, gang = 8, n_baseline = 10000;

static double now_s(void)
{
    return (double)g_get_monotonic_time() / G_USEC_PER_SEC;
}

static const char *src_dir(void)
{
    const char *d = g_getenv("KB_SRCDIR");
    return d != NULL ? d : ".";
}

static guint free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        g_error("no free port");
    close(fd);
    return ntohs(sa.sin_port);
}

/* ---- a window of asynchronous requests ------------------------------------------------------ */

/* Issues requests produced by @next(i) for i in [0, n) with WINDOW in flight; runs the loop until
 * all answered. Returns the number of failures. */
typedef struct {
    KbClient *client;
    guint n, next, done, failed;
    void (*issue)(KbClient *client, guint i, KbResponseFunc cb, gpointer data);
    double *acked; /* per i, the time its response came (may be NULL) */
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
} Slot;

static void slot_cb(const KbResponse *resp, gpointer data)
{
    Slot *s = data;
    Window *w = s->w;
    if (w->acked != NULL)
        w->acked[s->i] = now_s();
    g_free(s);
    window_cb(resp, w);
}

static void window_pump(Window *w)
{
    while (w->next < w->n && w->next - w->done < WINDOW) {
        Slot *s = g_new0(Slot, 1);
        s->w = w;
        s->i = w->next++;
        w->issue(w->client, s->i, slot_cb, s);
    }
}

static double window_run(KbClient *client, guint n,
                         void (*issue)(KbClient *, guint, KbResponseFunc, gpointer), double *acked,
                         const char *what)
{
    Window w = {.client = client, .n = n, .issue = issue, .acked = acked};
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
    return dt;
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
            "\"nvidia.com/gpu\":\"16\"},\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\","
            "\"pods\":\"110\",\"nvidia.com/gpu\":\"16\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            i, i);
    post(client, &kb_type_nodes, NULL, json_tokener_parse(text), cb, data);
}

/* Node status again through /status, for servers that drop status on create. */
static void issue_node_status(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    g_autofree char *name = g_strdup_printf("node-%04u", i);
    json_object *body = json_tokener_parse(
            "{\"status\":{\"capacity\":{\"cpu\":\"96\",\"memory\":\"768Gi\",\"pods\":\"110\","
            "\"nvidia.com/gpu\":\"16\"},\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\","
            "\"pods\":\"110\",\"nvidia.com/gpu\":\"16\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    KbRequest req = {.method = "PATCH",
                     .type = &kb_type_nodes,
                     .name = name,
                     .subresource = "status",
                     .body = body,
                     .content_type = "application/merge-patch+json"};
    kb_client_call_async(client, &req, cb, data);
    json_object_put(body);
}

static void issue_baseline_pod(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
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
    g_autofree char *path = g_build_filename(src_dir(), rel, NULL);
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

static long http_status(guint port, const char *path)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u%s", port, path);
    long status = 0;
    CURL *curl = curl_easy_init();
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 2000L);
    if (curl_easy_perform(curl) == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);
    return status;
}

/* ---- watching bindings ------------------------------------------------------------------- */

typedef struct {
    double *bound; /* per pod index: when the watch showed spec.nodeName, 0 before */
    guint n_bound;
    double last;
    GMainLoop *loop;
} Watch;

static void seen(Watch *w, const KbPod *pod)
{
    guint i;
    if (pod->node_name == NULL || sscanf(pod->meta.name, "p-%u", &i) != 1 || i >= (guint)n_pods ||
        w->bound[i] != 0)
        return;
    w->bound[i] = now_s();
    w->last = w->bound[i];
    if (++w->n_bound == (guint)n_pods)
        g_main_loop_quit(w->loop);
}

static void on_add(gpointer obj, gpointer data)
{
    seen(data, obj);
}

static void on_update(gpointer old_obj, gpointer new_obj, gpointer data)
{
    seen(data, new_obj);
}

static gboolean on_timeout(gpointer data)
{
    g_main_loop_quit(data);
    return G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
    GOptionEntry entries[] = {
            {"nodes", 0, 0, G_OPTION_ARG_INT, &n_nodes, "nodes (16 GPUs each)", "N"},
            {"pods", 0, 0, G_OPTION_ARG_INT, &n_pods, "pods scheduled by kube-batchd", "N"},
            {"gang", 0, 0, G_OPTION_ARG_INT, &gang, "pods per PodGroup", "N"},
            {"baseline", 0, 0, G_OPTION_ARG_INT, &n_baseline, "pods bound by the plain loop", "N"},
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
    kb_client_set_max_in_flight(client, WINDOW + 8);

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
    printf("cluster: %d nodes x 16 GPUs created in %.2f s\n", n_nodes, t_nodes);

    /* Baseline: the API server's own binding rate with a plain parallel loop. */
    double t_bcreate = window_run(client, n_baseline, issue_baseline_pod, NULL, "baseline pods");
    double t_bind = window_run(client, n_baseline, issue_baseline_bind, NULL, "baseline binds");
    double base_rate = n_baseline > 0 ? n_baseline / t_bind : 0;
    double create_rate_base = n_baseline > 0 ? n_baseline / t_bcreate : 0;
    printf("baseline: %d pods created at %.0f/s; bound by a plain loop (%d in flight) at %.0f "
           "bindings/s\n",
           n_baseline, create_rate_base, WINDOW, base_rate);

    /* kube-batchd. */
    guint http_port = free_port();
    g_autofree char *listen = g_strdup_printf("127.0.0.1:%u", http_port);
    const char *dargv[] = {"--master", url, "--schedule-period", "200ms", "--listen-address",
                           listen, "--log-level", "warning", NULL};
    /* KB_E2E_WRAPPER="perf record -g -o /tmp/kbd.data --" profiles the daemon. */
    KbTestDaemonOptions dopts = {.wrapper = g_getenv("KB_E2E_WRAPPER")};
    g_autoptr(KbTestDaemon) daemon = kb_test_daemon_start("kube-batchd", dargv, &dopts, &error);
    if (daemon == NULL)
        g_error("%s", error->message);
    double t_wait = now_s();
    while (http_status(http_port, "/readyz") != 200) {
        if (now_s() - t_wait > 30)
            g_error("kube-batchd not ready after 30 s");
        g_usleep(20000);
    }

    Watch w = {.bound = g_new0(double, n_pods), .loop = g_main_loop_new(NULL, FALSE)};
    KbInformerOptions io = {
            .type = &kb_type_pods, .namespace_ = "bench", .decode = (KbDecodeFunc)kb_pod_decode};
    KbInformerHandlers h = {.on_add = on_add, .on_update = on_update};
    KbInformer *inf = kb_informer_new(client, &io, &h, &w);
    kb_informer_start(inf);
    while (!kb_informer_has_synced(inf))
        g_main_context_iteration(NULL, TRUE);

    double cpu_d0 = cpu_seconds(kb_test_daemon_pid(daemon));
    double cpu_a0 = cpu_seconds(kb_test_apiserver_pid(apiserver));
    guint n_groups = (guint)(n_pods + gang - 1) / (guint)gang;
    double t_groups = window_run(client, n_groups, issue_group, NULL, "podgroups");
    double *created = g_new0(double, n_pods);
    double t0 = now_s();
    double t_create = window_run(client, n_pods, issue_pod, created, "pods");
    if (w.n_bound < (guint)n_pods) {
        guint timeout = g_timeout_add_seconds(120, on_timeout, w.loop);
        g_main_loop_run(w.loop);
        if (w.n_bound == (guint)n_pods)
            g_source_remove(timeout);
    }
    double t_end = w.last;
    double cpu_d = cpu_seconds(kb_test_daemon_pid(daemon)) - cpu_d0;
    double cpu_a = cpu_seconds(kb_test_apiserver_pid(apiserver)) - cpu_a0;

    g_autoptr(GArray) lat = g_array_new(FALSE, FALSE, sizeof(double));
    double first_bound = 0;
    for (int i = 0; i < n_pods; i++) {
        if (w.bound[i] == 0 || created[i] == 0)
            continue;
        double l = w.bound[i] - created[i];
        g_array_append_val(lat, l);
        if (first_bound == 0 || w.bound[i] < first_bound)
            first_bound = w.bound[i];
    }
    double p50 = kb_sim_percentile((double *)(void *)lat->data, lat->len, 50);
    double p99 = kb_sim_percentile((double *)(void *)lat->data, lat->len, 99);
    double e2e_rate = w.n_bound > 0 ? w.n_bound / (t_end - t0) : 0;
    double bind_rate = w.n_bound > 1 ? w.n_bound / (t_end - first_bound) : 0;

    printf("kube-batchd: %d PodGroups (gangs of %d) created in %.2f s; %d pods created at %.0f/s\n",
           n_groups, gang, t_groups, n_pods, n_pods / t_create);
    printf("kube-batchd: %u of %d pods bound; first creation to last binding seen: %.2f s\n",
           w.n_bound, n_pods, t_end - t0);
    printf("kube-batchd: end-to-end %.0f pods bound/s (creation to confirmed binding)\n", e2e_rate);
    printf("kube-batchd: %.0f pods bound/s from the first binding to the last\n", bind_rate);
    printf("kube-batchd: latency creation -> binding seen: p50 %.3f s, p99 %.3f s\n", p50, p99);
    printf("ratio: end-to-end / baseline binding rate = %.2f; binding phase / baseline = %.2f\n",
           base_rate > 0 ? e2e_rate / base_rate : 0, base_rate > 0 ? bind_rate / base_rate : 0);

    printf("cpu during the run: kube-batchd %.2f s, kb-apiserver %.2f s (wall %.2f s, %d cores)\n",
           cpu_d, cpu_a, t_end - t0, (int)sysconf(_SC_NPROCESSORS_ONLN));
    g_autofree char *metrics = fetch_metrics(http_port);
    printf("kube-batchd: %.0f cycles (mean %.2f ms); %.0f binds succeeded, %.0f failed; %.0f "
           "events created, %.0f patched, %.0f dropped; %.0f status writes\n",
           metric_sum(metrics, "kube_batchd_cycles_total", NULL),
           1000 * metric_sum(metrics, "kube_batchd_cycle_duration_seconds_sum", NULL) /
                   MAX(metric_sum(metrics, "kube_batchd_cycle_duration_seconds_count", NULL), 1),
           metric_sum(metrics, "kube_batchd_binds_total", "succeeded"),
           metric_sum(metrics, "kube_batchd_binds_total", NULL) -
                   metric_sum(metrics, "kube_batchd_binds_total", "succeeded"),
           metric_sum(metrics, "kube_batchd_events_total", "\"created\""),
           metric_sum(metrics, "kube_batchd_events_total", "\"patched\""),
           metric_sum(metrics, "kube_batchd_events_total", "\"dropped\""),
           metric_sum(metrics, "kube_batchd_status_writes_total", "\"written\""));

    kb_informer_free(inf);
    kb_test_daemon_stop(daemon, 30000);
    kb_test_apiserver_stop(apiserver);
    kb_client_free(client);
    g_main_loop_unref(w.loop);
    g_free(w.bound);
    g_free(created);
    curl_global_cleanup();
    return 0;
}
