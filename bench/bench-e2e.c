/*
 * End-to-end throughput of kube-batchd against an API server, with baselines measured on the
 * same server in the same run:
 *
 *   1. the cluster: N nodes (8 GPUs each by default), the PodGroup/Queue CRDs;
 *   2. baseline: a plain parallel binding loop binds pre-created pods (to other nodes' names,
 *      so they hold no room) over keep-alive connections. A trial on B pods tries several
 *      windows of requests in flight (--baseline-in-flight, default 16,64,256; B split between
 *      them) and picks the fastest ("as many connections as helps", measured each run rather
 *      than assumed); then the loop at that window is measured on P pods, as many bindings as
 *      the scheduler's run, once as is and once with a watch of all pods open, as
 *      kube-batchd's informer has one (what binding costs the server once every binding is
 *      also watched); once more on P pods after the scheduler's run;
 *   3. P pods in gangs of G (one GPU each) and their PodGroups are created first; then kube-batchd
 *      starts (--schedule-period 200ms), its bindings counted by its own /metrics as the loop
 *      counts its own (see "watching bindings" below): pods bound per second from the
 *      scheduler's start and from its first binding to the last, and the writes per bound pod
 *      by kind, counted by the server from the scheduler's start until its writes settle
 *      (bindings, PodGroup status, events): kb-apiserver's GET /admin/stats, a real server's
 *      apiserver_request_total;
 *   4. the ratios to the raw binding loop (and to kube-scheduler where it ran, also with each
 *      scheduler's rate taken against the loop measured next to its run), the most client
 *      connections the server saw, CPU seconds per binding of each process (a real server's:
 *      kube-apiserver's and etcd's).
 *
 * Servers: bin/kb-apiserver always (plain HTTP); and when $KB_K8S_BIN names a directory with
 * kube-apiserver (etcd on PATH or in it), a real kube-apiserver on a private etcd, run as a
 * cluster runs it (TLS, tokens, RBAC; tests/lib/kb-test-cluster.h), everything talking to it as
 * its admin. When $KB_K8S_BIN also holds kube-scheduler, the same pods (without gangs) are then
 * scheduled by kube-scheduler with unthrottled client QPS, after kube-batchd's pods are deleted.
 * Without $KB_K8S_BIN the real-server run is skipped, and it says so.
 *
 * Prints figures and the ratios to the baselines; asserts nothing.
 *
 * With --dra the workload is run twice on kb-apiserver (with --resource-claim-controller), once
 * as above and once through Dynamic Resource Allocation: the nodes advertise no nvidia.com/gpu,
 * each publishes its GPUs as the ResourceSlice kb-kubelet --dra would (kbl_dra_slices(), the same
 * code), a DeviceClass gpu.nvidia.com as NVIDIA's driver ships it, and each pod asks for one GPU
 * through a claim the controller makes from ResourceClaimTemplate one-gpu; then the two runs'
 * rates and their ratio. --pairs N repeats the two runs N times, alternated, and prints each
 * pair's ratios and their medians (the machine's speed drifts between runs). The real server is
 * not run with --dra.
 *
 *   bench-e2e [--nodes 1000] [--gpus 8] [--pods 5000] [--gang 8] [--baseline 5000]
 *             [--baseline-in-flight 16,64,256] [--bind-in-flight N] [--json-bindings]
 *             [--dra [--pairs N]]
 *   KB_E2E_WRAPPER="perf record -g -o FILE --"   runs the daemon under a profiler
 *   KB_E2E_LOG_LEVEL=debug                        the daemon's log level (default warning)
 *   KB_E2E_MARKS=1                                phase boundaries on stderr (CLOCK_MONOTONIC)
 */
#include <curl/curl.h>
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "kube/kb-client.h"
#include "kube/kb-log.h"
#include "kube/kb-objects.h"
#include "bench/lib/http.h"
#include "bench/lib/proc.h"
#include "bench/lib/server-writes.h"
#include "bench/lib/sim.h"
#include "testbed/apiserver/kas-json.h"
#include "testbed/kubelet/kbl-dra.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-cluster.h"
#include "tests/lib/kb-test-daemon.h"
#include "tests/lib/kb-test-util.h"

/* Requests in flight while setting the cluster up. */
#define WINDOW     64
#define MAX_WINDOW 1024

static gint bind_window = 0;
static gboolean json_bindings = FALSE; /* --json-bindings: Bindings as JSON, loop and kube-batchd */
static char *base_windows_arg = NULL;
static gint n_nodes = 1000, n_pods = 5000, gang = 8, n_baseline = 5000, gpus_per_node = 8;
static gboolean dra_arg = FALSE;  /* --dra: the DRA run after the nvidia.com/gpu one */
static gboolean dra_mode = FALSE; /* this run's GPUs are DRA devices */
static gint n_pairs = 1;          /* --pairs: alternated nvidia.com/gpu and DRA runs */

/* What one kube-batchd run measured: pods/s from its start and from its first binding, and the
 * CPU both daemons (the server and kube-batchd) spent per bound pod from the first binding. */
typedef struct {
    double start_rate, bind_rate, cpu_ms;
} RunFigures;

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

/* Issues requests produced by @issue(first + i) for i in [0, n) with @window in flight; runs the
 * loop until all answered. */
typedef struct {
    KbClient *client;
    guint first, n, next, done, failed, window;
    void (*issue)(KbClient *client, guint i, KbResponseFunc cb, gpointer data);
    double latency_sum; /* seconds, request issued to response, over all requests */
    GMainLoop *loop;
    char *first_error;
} Window;

typedef struct {
    Window *w;
    double sent;
} Slot;

static void window_pump(Window *w);

static void slot_cb(const KbResponse *resp, gpointer data)
{
    Slot *s = data;
    Window *w = s->w;
    w->latency_sum += now_s() - s->sent;
    g_free(s);
    w->done++;
    if (resp->error != NULL && !g_error_matches(resp->error, KB_ERROR, KB_ERROR_ALREADY_EXISTS) &&
        !g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND)) {
        w->failed++;
        if (w->first_error == NULL)
            w->first_error = g_strdup(resp->error->message);
    }
    window_pump(w);
    if (w->done == w->n)
        g_main_loop_quit(w->loop);
}

static void window_pump(Window *w)
{
    while (w->next < w->n && w->next - w->done < w->window) {
        Slot *s = g_new0(Slot, 1);
        s->w = w;
        s->sent = now_s();
        w->issue(w->client, w->first + w->next++, slot_cb, s);
    }
}

/* Seconds taken; the mean latency in ms in *@latency_ms (may be NULL). */
static double window_run_full(KbClient *client, guint first, guint n, guint window,
                              void (*issue)(KbClient *, guint, KbResponseFunc, gpointer),
                              double *latency_ms, const char *what)
{
    Window w = {.client = client, .first = first, .n = n, .issue = issue, .window = window};
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
                         void (*issue)(KbClient *, guint, KbResponseFunc, gpointer),
                         const char *what)
{
    return window_run_full(client, 0, n, WINDOW, issue, NULL, what);
}

/* ---- requests ---------------------------------------------------------------------------- */

static void post(KbClient *client, const KbResourceType *type, const char *ns, json_object *body,
                 KbResponseFunc cb, gpointer data)
{
    KbRequest req = {.method = "POST", .type = type, .namespace_ = ns, .body = body};
    kb_client_call_async(client, &req, cb, data);
    json_object_put(body);
}

/* Node @i as created (with nvidia.com/gpu, stripped in DRA mode as kb-kubelet --dra does). */
static json_object *node_new(guint i)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%04u\","
            "\"labels\":{\"kubernetes.io/hostname\":\"node-%04u\"}},\"status\":{"
            "\"capacity\":{\"cpu\":\"96\",\"memory\":\"768Gi\",\"pods\":\"110\","
            "\"nvidia.com/gpu\":\"%d\"},\"allocatable\":{\"cpu\":\"96\",\"memory\":\"768Gi\","
            "\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            i, i, gpus_per_node, gpus_per_node);
    return json_tokener_parse(text);
}

static void issue_node(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    json_object *node = node_new(i);
    if (dra_mode)
        kbl_dra_strip_gpus(node);
    post(client, &kb_type_nodes, NULL, node, cb, data);
}

/* DRA mode: node @i's GPUs as kb-kubelet --dra publishes them. */
static void issue_slice(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    json_object *node = node_new(i);
    g_autoptr(GError) error = NULL;
    json_object *slices = kbl_dra_slices(node, FALSE, &error);
    json_object_put(node);
    if (slices == NULL || json_object_array_length(slices) != 1)
        g_error("node-%04u: %s", i, error != NULL ? error->message : "not one slice of GPUs");
    json_object *slice = json_object_get(json_object_array_get_idx(slices, 0));
    json_object_put(slices);
    post(client, &kb_type_resource_slices, NULL, slice, cb, data);
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
    if (dra_mode)
        kbl_dra_strip_gpus(body);
    KbRequest req = {.method = "PATCH",
                     .type = &kb_type_nodes,
                     .name = name,
                     .subresource = "status",
                     .body = body,
                     .content_type = "application/merge-patch+json"};
    kb_client_call_async(client, &req, cb, data);
    json_object_put(body);
}

/* What the node lifecycle controller does once a node is Ready: the API server put the
 * node.kubernetes.io/not-ready:NoSchedule taint on each new node (TaintNodesByCondition), and a
 * real server without a controller manager keeps it for ever. These nodes have no other taint. */
static void issue_node_untaint(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    g_autofree char *name = g_strdup_printf("node-%04u", i);
    json_object *body = json_tokener_parse("{\"spec\":{\"taints\":null}}");
    KbRequest req = {.method = "PATCH",
                     .type = &kb_type_nodes,
                     .name = name,
                     .body = body,
                     .content_type = "application/merge-patch+json"};
    kb_client_call_async(client, &req, cb, data);
    json_object_put(body);
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

/* The workload's pod: kube-batchd's (prefix "p", namespace bench, in a group), the raw loop's
 * (prefix "b", namespace baseline, the same annotation; no scheduler) or kube-scheduler's (prefix
 * "k", namespace ksched, no group). */
static void issue_workload_pod(KbClient *client, const char *ns, char prefix, const char *scheduler,
                               guint i, KbResponseFunc cb, gpointer data)
{
    g_autofree char *group =
            prefix != 'k' ? g_strdup_printf(",\"annotations\":{\"scheduling.k8s.io/group-name\":"
                                            "\"job-%05u\"}",
                                            i / (guint)gang)
                          : g_strdup("");
    /* DRA mode: kube-batchd's pods ask through a claim from template one-gpu instead */
    gboolean claim = dra_mode && prefix == 'p';
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%c-%05u\","
            "\"namespace\":\"%s\"%s},\"spec\":{\"schedulerName\":\"%s\",\"containers\":[{"
            "\"name\":\"tensorflow\",\"image\":\"tensorflow/tensorflow:2.15.0-gpu\","
            "\"resources\":{\"requests\":{\"cpu\":\"4\",\"memory\":\"16Gi\"%s}%s}}]%s}}",
            prefix, i, ns, group, scheduler, claim ? "" : ",\"nvidia.com/gpu\":\"1\"",
            claim ? ",\"claims\":[{\"name\":\"gpu\"}]" : ",\"limits\":{\"nvidia.com/gpu\":\"1\"}",
            claim ? ",\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":"
                    "\"one-gpu\"}]"
                  : "");
    post(client, &kb_type_pods, ns, json_tokener_parse(text), cb, data);
}

/* The baseline's pods are the workload's (same spec, annotations and size) and its Bindings
 * carry a kube-batchd.io/gpu-ids annotation as kube-batchd's do, so that the raw loop's rate is
 * the server's ceiling for this very workload. */
static void issue_baseline_pod(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    issue_workload_pod(client, "baseline", 'b', "nobody", i, cb, data);
}

static void issue_baseline_bind(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    g_autofree char *pod = g_strdup_printf("b-%05u", i);
    /* Nodes that do not exist (neither server checks): the pods take no room from the
     * scheduler's run, whose pods are the same size. */
    g_autofree char *node = g_strdup_printf("elsewhere-%04u", i % (guint)n_nodes);
    g_autofree char *gpu = g_strdup_printf("%u", i % (guint)gpus_per_node);
    const char *annotations[] = {"kube-batchd.io/gpu-ids", gpu, NULL};
    kb_client_bind_async_full(client, "baseline", pod, NULL, node, annotations, cb, data);
}

static void issue_pod(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    issue_workload_pod(client, "bench", 'p', "kube-batchd", i, cb, data);
}

static void issue_ksched_pod(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    issue_workload_pod(client, "ksched", 'k', "default-scheduler", i, cb, data);
}

/* kube-batchd's pods go (at once, no kubelet to wait for) before kube-scheduler's run. */
static void issue_pod_delete(KbClient *client, guint i, KbResponseFunc cb, gpointer data)
{
    g_autofree char *name = g_strdup_printf("p-%05u", i);
    KbRequest req = {.method = "DELETE",
                     .type = &kb_type_pods,
                     .namespace_ = "bench",
                     .name = name,
                     .query = "gracePeriodSeconds=0"};
    kb_client_call_async(client, &req, cb, data);
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

static void create_namespace(KbClient *client, const char *name)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", name);
    create_blocking(client, &kb_type_namespaces, NULL, json_tokener_parse(text));
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

/* DRA mode: the class NVIDIA's driver ships and the workload's template (one GPU). */
static void create_dra_objects(KbClient *client)
{
    create_blocking(client, &kb_type_device_classes, NULL,
                    json_tokener_parse(
                            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
                            "\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{\"selectors\":[{"
                            "\"cel\":{\"expression\":\"device.driver == 'gpu.nvidia.com' && "
                            "device.attributes['gpu.nvidia.com'].type == 'gpu'\"}}]}}"));
    create_blocking(client, &kb_type_resource_claim_templates, "bench",
                    json_tokener_parse("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                                       "\"ResourceClaimTemplate\",\"metadata\":{\"name\":"
                                       "\"one-gpu\",\"namespace\":\"bench\"},\"spec\":{\"spec\":{"
                                       "\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
                                       "\"deviceClassName\":\"gpu.nvidia.com\"}}]}}}}"));
}

/* ---- the server under test --------------------------------------------------------------- */

typedef struct {
    const char *name;
    gboolean real;
    KbTestApiserver *kas;   /* kb-apiserver */
    KbTestCluster *cluster; /* the real one */
    const char *url;
    KbConfig *config; /* admin */
    /* writes by "METHOD resource[/subresource]" before the scheduler ran, when its last binding
     * was seen, and after (once what the bindings cause has settled) */
    GHashTable *writes0, *writes_bound, *writes1;
} Server;

/* GET @url over plain HTTP (newly allocated body; empty when unreachable). */
static char *http_get(const char *url)
{
    return kb_bench_http_get(url, 5000, NULL);
}

/* kb-apiserver's GET /admin/stats (new reference), or NULL. */
static json_object *fetch_stats(const char *server)
{
    g_autofree char *url = g_strdup_printf("%s/admin/stats", server);
    g_autofree char *text = http_get(url);
    return json_tokener_parse(text);
}

/* Successful writes by kind (bench/lib/server-writes.h). */
static GHashTable *server_writes(Server *srv)
{
    return kb_bench_server_writes(srv->real ? srv->cluster : NULL, srv->url);
}

static gint64 writes_of(GHashTable *writes, const char *kind)
{
    gint64 *n = writes != NULL ? g_hash_table_lookup(writes, kind) : NULL;
    return n != NULL ? *n : 0;
}

/*
 * --dra: wait until the resource-claim controller has made every pod's claim from its template
 * and written the pod's status: kb-apiserver's resourceVersion still for 300 ms (60 s at most),
 * as the scheduler starts on a created workload in the nvidia.com/gpu run. Started at once, it
 * found a quarter of the claims not made yet (3,751 of 5,000 in its first list) and its rate
 * counted the controller's backlog: the claims' creation competing for the 2 cores, and gangs
 * reported unschedulable until their claims came. Returns the seconds waited.
 */
static double controller_settled(Server *srv)
{
    double t0 = now_s(), still_since = t0;
    gint64 last = -1;
    while (now_s() - t0 < 60) {
        json_object *st = fetch_stats(srv->url), *rv = NULL;
        gint64 now = st != NULL && json_object_object_get_ex(st, "resourceVersion", &rv)
                             ? json_object_get_int64(rv)
                             : -1;
        json_object_put(st);
        if (now != last) {
            last = now;
            still_since = now_s();
        } else if (now_s() - still_since >= 0.3) {
            break;
        }
        g_usleep(20000);
    }
    return still_since - t0;
}

/* The number of client connections kb-apiserver has open (0 for other servers). */
static gint server_connections(Server *srv)
{
    if (srv->real)
        return 0;
    json_object *st = fetch_stats(srv->url), *c = NULL;
    gint n = st != NULL && json_object_object_get_ex(st, "connections", &c) ? json_object_get_int(c)
                                                                            : 0;
    json_object_put(st);
    return n;
}

static gboolean server_start(Server *srv, gboolean real, GError **error)
{
    srv->real = real;
    if (!real) {
        const char *args[] = {"--resource-claim-controller", NULL};
        srv->kas = kb_test_apiserver_start(dra_mode ? args : NULL, error);
        if (srv->kas == NULL)
            return FALSE;
        srv->name = "kb-apiserver";
        srv->url = kb_test_apiserver_url(srv->kas);
        srv->config = kb_config_new(srv->url);
        return TRUE;
    }
    srv->cluster = kb_test_cluster_start(KB_TEST_CLUSTER_REAL, NULL, error);
    if (srv->cluster == NULL)
        return FALSE;
    srv->name = kb_test_cluster_name(srv->cluster);
    srv->url = kb_test_cluster_url(srv->cluster);
    srv->config = kb_config_load_kubeconfig(kb_test_cluster_kubeconfig(srv->cluster, KB_TEST_ADMIN),
                                            NULL, error);
    return srv->config != NULL;
}

static void server_stop(Server *srv)
{
    if (srv->kas != NULL)
        kb_test_apiserver_stop(srv->kas);
    g_clear_pointer(&srv->kas, kb_test_apiserver_free);
    if (srv->cluster != NULL)
        kb_test_cluster_stop(srv->cluster);
    g_clear_pointer(&srv->cluster, kb_test_cluster_free);
    g_clear_pointer(&srv->config, kb_config_free);
    g_clear_pointer(&srv->writes0, g_hash_table_unref);
    g_clear_pointer(&srv->writes_bound, g_hash_table_unref);
    g_clear_pointer(&srv->writes1, g_hash_table_unref);
}

/* CPU seconds used so far by the server: kb-apiserver, or kube-apiserver and its etcd; -1 when
 * unknown. */
static double server_cpu(Server *srv)
{
    if (srv->kas != NULL)
        return kb_bench_cpu_seconds(kb_test_apiserver_pid(srv->kas));
    const char *kas = NULL, *etcd = NULL;
    kb_test_cluster_pids(srv->cluster, &kas, &etcd);
    double a = kb_bench_cpu_seconds(kas), e = kb_bench_cpu_seconds(etcd);
    return a < 0 || e < 0 ? -1 : a + e;
}

/* ---- figures ----------------------------------------------------------------------------- */

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

/* ---- watching bindings ------------------------------------------------------------------- */

/*
 * When a run's pods were bound, seen one of two ways. kube-batchd's run is seen as the raw loop
 * sees its own: by the scheduler's count of bindings answered 201 and the time of the last one
 * (its /metrics: every POLL_MS until the first binding shows, which is then at most that late,
 * every POLL_SLOW_MS in the middle of the run, and every POLL_MS again once the rest would take
 * less than two slow polls at the rate so far, so that the writes that follow the last binding
 * are counted soon after it; the last binding's time is the scheduler's own). So the server
 * carries nothing of the bench's in that run either, and the scheduler little: a scrape costs
 * it ~0.4 ms, and 100 a second through the whole run were 4% of a core, a fifth of its CPU in
 * the run.
 *
 * kube-scheduler exposes no such count here, so its run is seen by a watch of its namespace,
 * read raw: each event line is only searched for the pod's name and "nodeName", not decoded (a
 * decoding informer took ~0.05 ms of CPU per binding on the 2 cores the scheduler and the server
 * share). The watch costs kube-scheduler's run one more watch event per binding; at its rate
 * that is lost in the noise.
 */
#define POLL_MS      10
#define POLL_SLOW_MS 100
typedef struct {
    char prefix;   /* pod names are PREFIX-NNNNN */
    double *bound; /* per pod index: when the watch showed spec.nodeName, 0 before */
    guint n_bound;
    double first, last;
    GString *line; /* a partial event line */
    KbStream *stream;
    gboolean ended;
    const char *metrics_url; /* set: counted from the scheduler's metrics, no watch */
    /* CPU seconds of the server, the scheduler and this process when the first binding showed */
    Server *srv;
    const char *daemon_pid;
    double cpu_first[3];
} Watch;

static void seen_first(Watch *w)
{
    w->first = w->last;
    w->cpu_first[0] = server_cpu(w->srv);
    w->cpu_first[1] = kb_bench_cpu_seconds(w->daemon_pid);
    w->cpu_first[2] = kb_bench_cpu_seconds("self");
}

/* How long to wait before the next poll of @w (see above). */
static guint poll_interval_ms(const Watch *w)
{
    if (w->n_bound == 0)
        return POLL_MS;
    double rate = w->n_bound / MAX(now_s() - w->first, 1e-3);
    double rest_ms = 1000 * ((guint)n_pods - MIN(w->n_bound, (guint)n_pods)) / rate;
    return rest_ms < 2 * POLL_SLOW_MS ? POLL_MS : POLL_SLOW_MS;
}

/* One poll of the scheduler's count of bindings that succeeded and of when the last one was
 * (its wall clock, moved onto this process's monotonic one). */
static void poll_bound(Watch *w)
{
    g_autofree char *metrics = http_get(w->metrics_url);
    guint n = (guint)metric_sum(metrics, "kube_batchd_binds_total", "succeeded");
    if (n <= w->n_bound)
        return;
    double now = now_s();
    double real_now = (double)g_get_real_time() / G_USEC_PER_SEC;
    double at = metric_sum(metrics, "kube_batchd_last_successful_bind_timestamp_seconds", NULL);
    w->last = at > 0 && w->n_bound > 0 ? now - (real_now - at) : now;
    if (w->n_bound == 0)
        seen_first(w);
    w->n_bound = n;
}

static void seen_line(Watch *w, const char *line)
{
    char pat[16];
    g_snprintf(pat, sizeof pat, "\"name\":\"%c-", w->prefix);
    const char *at = strstr(line, pat);
    guint i;
    if (at == NULL || strstr(line, "\"nodeName\":\"") == NULL ||
        sscanf(at + strlen(pat), "%u", &i) != 1 || i >= (guint)n_pods || w->bound[i] != 0)
        return;
    w->bound[i] = now_s();
    w->last = w->bound[i];
    if (w->n_bound++ == 0)
        seen_first(w);
}

static gboolean on_watch_data(const char *data, gsize len, gpointer user_data)
{
    Watch *w = user_data;
    const char *end = data + len, *nl;
    while (data < end && (nl = memchr(data, '\n', (gsize)(end - data))) != NULL) {
        g_string_append_len(w->line, data, nl - data);
        seen_line(w, w->line->str);
        g_string_truncate(w->line, 0);
        data = nl + 1;
    }
    g_string_append_len(w->line, data, end - data);
    return TRUE;
}

static void on_watch_done(const KbResponse *resp, gpointer user_data)
{
    Watch *w = user_data;
    w->stream = NULL;
    w->ended = TRUE;
    fprintf(stderr, "bench-e2e: the pods' watch ended: %s\n",
            resp->error != NULL ? resp->error->message : "end of stream");
}

static gboolean on_tick(gpointer data)
{
    return G_SOURCE_CONTINUE;
}

/* Watch the pods of @ns (NULL: all namespaces) from now on: a list for its resourceVersion (one
 * item), then the watch. */
static KbStream *pods_watch_from_now(KbClient *client, const char *ns, KbStreamDataFunc on_data,
                                     KbStreamDoneFunc on_done, gpointer user_data)
{
    g_autoptr(GError) error = NULL;
    KbListOptions lo = {.limit = 1};
    json_object *list = kb_client_list(client, &kb_type_pods, ns, &lo, &error);
    if (list == NULL)
        g_error("list pods in %s: %s", ns != NULL ? ns : "all namespaces", error->message);
    g_autofree char *rv = g_strdup(kas_json_get_string(list, "metadata.resourceVersion"));
    json_object_put(list);
    KbListOptions wo = {.resource_version = rv, .watch = TRUE, .timeout_seconds = 3600};
    KbRequest req = {.method = "GET", .type = &kb_type_pods, .namespace_ = ns, .list = &wo};
    return kb_client_stream(client, &req, on_data, on_done, user_data);
}

/* ---- phases ------------------------------------------------------------------------------ */

/* One timed run of the raw loop: bindings/s, CPU ms per binding of the server (-1 when not
 * known) and of this client, mean round trip. */
typedef struct {
    double rate, cpu_server, cpu_client, latency_ms;
} LoopRun;

typedef struct {
    guint window;    /* the trial's best window of requests in flight (0: none ran) */
    LoopRun before;  /* at that window, over as many bindings as the scheduler's */
    LoopRun watched; /* the same, with a watch of all pods open */
} Baseline;

/* A watch whose events are read and dropped: the load a scheduler's informer puts on the server. */
static gboolean on_sink_data(const char *data, gsize len, gpointer user_data)
{
    return TRUE;
}

static void on_sink_done(const KbResponse *resp, gpointer user_data)
{
    *(KbStream **)user_data = NULL;
}

/* The baseline pods' index ranges ("b-%05u"): the trial's, then three measured runs of --pods
 * each (before, watched, after). */
static guint loop_first(guint run)
{
    return (guint)n_baseline + run * (guint)n_pods;
}

/* Bind the @n baseline pods from @first at @window in flight, timed. */
static LoopRun time_binds(Server *srv, KbClient *client, guint first, guint n, guint window,
                          const char *what)
{
    LoopRun r = {0};
    double a0 = server_cpu(srv), c0 = kb_bench_cpu_seconds("self");
    double dt = window_run_full(client, first, n, window, issue_baseline_bind, &r.latency_ms, what);
    double a = server_cpu(srv) - a0, c = kb_bench_cpu_seconds("self") - c0;
    r.rate = n / dt;
    r.cpu_server = a0 >= 0 ? 1000 * a / n : -1;
    r.cpu_client = 1000 * c / n;
    return r;
}

/* The raw loop at @window on --pods new pods, the scheduler's own count: a real server's Go
 * heap is collected every few thousand bindings, so a shorter run may or may not hold a
 * collection, and its rate with it (the windows of 1,666 bindings here measured 0.6 or 1.2 ms
 * of server CPU per binding, as a collection fell in or not); the best of several such short
 * windows would pick the luckiest. With a watch of every pod open when @watched (what
 * kube-batchd's pod informer adds on the server: each binding also becomes a watch event). */
static LoopRun loop_run(Server *srv, KbClient *client, guint window, guint run, gboolean watched,
                        const char *what)
{
    guint first = loop_first(run);
    g_autofree char *pods = g_strdup_printf("baseline pods (%s)", what);
    g_autofree char *binds = g_strdup_printf("baseline binds (%s)", what);
    g_autofree char *m0 = g_strdup_printf("%s-bind-start", what);
    g_autofree char *m1 = g_strdup_printf("%s-bind-end", what);
    window_run_full(client, first, (guint)n_pods, WINDOW, issue_baseline_pod, NULL, pods);
    KbStream *all = NULL;
    if (watched)
        all = pods_watch_from_now(client, NULL, on_sink_data, on_sink_done, &all);
    mark(m0);
    LoopRun r = time_binds(srv, client, first, (guint)n_pods, window, binds);
    mark(m1);
    if (all != NULL)
        kb_stream_cancel(all);
    return r;
}

/* The trial picks the window ("as many connections as helps", measured each run rather than
 * assumed): the raw loop at each window of @windows on consecutive slices of the --baseline
 * pods. Then the loop at that window is measured on --pods pods, without and with a watch of
 * all pods open. */
static Baseline run_baseline(Server *srv, KbClient *client, GArray *windows)
{
    Baseline base = {.before = {.cpu_server = -1, .cpu_client = -1}};
    double best_trial = 0;
    guint per = (guint)n_baseline / MAX(windows->len, 1u);
    window_run(client, (guint)n_baseline, issue_baseline_pod, "baseline pods");
    mark("baseline-bind-start");
    for (guint k = 0; k < windows->len && per > 0; k++) {
        guint win = g_array_index(windows, guint, k);
        LoopRun t = time_binds(srv, client, k * per, per, win, "baseline binds");
        printf("  trial, %4u in flight: %5.0f bindings/s (%u bindings, round trip %.1f ms; "
               "cpu per binding: server %.3f ms, client %.3f ms)\n",
               win, t.rate, per, t.latency_ms, t.cpu_server, t.cpu_client);
        if (t.rate > best_trial) {
            best_trial = t.rate;
            base.window = win;
        }
    }
    mark("baseline-bind-end");
    if (base.window == 0)
        return base;
    base.before = loop_run(srv, client, base.window, 0, FALSE, "before");
    printf("%s: baseline: a plain binding loop at %.0f bindings/s (%d bindings at the trial's "
           "best window, %u in flight; round trip %.1f ms; cpu per binding: server %.3f ms, "
           "client %.3f ms)\n",
           srv->name, base.before.rate, n_pods, base.window, base.before.latency_ms,
           base.before.cpu_server, base.before.cpu_client);
    base.watched = loop_run(srv, client, base.window, 1, TRUE, "watched");
    printf("  raw loop, %4u in flight, with a watch of all pods open: %5.0f bindings/s (%d "
           "bindings; cpu per binding: server %.3f ms)\n",
           base.window, base.watched.rate, n_pods, base.watched.cpu_server);
    return base;
}

/* The raw loop once more at the best window, after kube-batchd stopped: the machine's load
 * drifts between the phases (other processes share the cores), so the ratio is also given
 * against the mean of the loop before and after the scheduler's run. */
static double run_baseline_after(Server *srv, KbClient *client, const Baseline *base)
{
    if (base->window == 0)
        return 0;
    LoopRun r = loop_run(srv, client, base->window, 2, FALSE, "after");
    printf("  raw loop again after kube-batchd, %4u in flight: %5.0f bindings/s (%d bindings)\n",
           base->window, r.rate, n_pods);
    return r.rate;
}

/* Until @w has seen every pod bound (at most 180 s, or until @d exits), sampling the server's
 * connections. Returns the most connections seen. */
static gint wait_bound(Server *srv, Watch *w, KbTestDaemon *d)
{
    gint max_conns = 0;
    double last_sample = 0, t0 = now_s();
    /* a watch is read on the main context: wake up at least every 250 ms to check the rest */
    guint tick = w->metrics_url == NULL ? g_timeout_add(250, on_tick, NULL) : 0;
    while (w->n_bound < (guint)n_pods) {
        if (w->metrics_url != NULL) {
            g_usleep(poll_interval_ms(w) * 1000);
            poll_bound(w);
        } else {
            g_main_context_iteration(NULL, TRUE);
        }
        if (!srv->real && now_s() - last_sample > 0.25) {
            last_sample = now_s();
            max_conns = MAX(max_conns, server_connections(srv));
        }
        if (now_s() - t0 > 180 || !kb_test_daemon_running(d) || w->ended)
            break;
    }
    if (tick != 0)
        g_source_remove(tick);
    return max_conns;
}

/* Watch namespace @ns from now on for @w. */
static void watch_start(KbClient *client, const char *ns, Watch *w)
{
    w->line = g_string_new(NULL);
    w->stream = pods_watch_from_now(client, ns, on_watch_data, on_watch_done, w);
}

static void watch_stop(Watch *w)
{
    if (w->stream != NULL)
        kb_stream_cancel(w->stream);
    w->stream = NULL;
    if (w->line != NULL)
        g_string_free(w->line, TRUE);
    g_free(w->bound);
}

/* Pods of @ns that have a node, as the server lists them. */
static guint count_bound(KbClient *client, const char *ns)
{
    g_autoptr(GError) error = NULL;
    KbListOptions lo = {.field_selector = "spec.nodeName!="};
    json_object *list = kb_client_list(client, &kb_type_pods, ns, &lo, &error);
    if (list == NULL)
        g_error("list the bound pods of %s: %s", ns, error->message);
    guint n = (guint)json_object_array_length(json_object_object_get(list, "items"));
    json_object_put(list);
    return n;
}

/* Rates of a run: from @t_start and from the first binding. */
static void print_rates(const char *who, Watch *w, double t_start, double *start_rate,
                        double *bind_rate)
{
    *start_rate = w->n_bound > 0 ? w->n_bound / (w->last - t_start) : 0;
    *bind_rate = w->n_bound > 1 ? w->n_bound / (w->last - w->first) : 0;
    printf("%s: %u of %d pods bound; scheduler start to first binding %.2f s, to last %.2f s\n",
           who, w->n_bound, n_pods, w->first - t_start, w->last - t_start);
    printf("%s: %.0f pods/s from scheduler start, %.0f pods/s from the first binding\n", who,
           *start_rate, *bind_rate);
}

static void print_writes(Server *srv, guint n_bound)
{
    gint64 total = 0;
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, srv->writes1);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        if (strcmp(k, "total") != 0)
            total += *(gint64 *)v - writes_of(srv->writes0, k);
    }
    printf("writes per bound pod (%s's count, %" G_GINT64_FORMAT " writes): %.3f\n", srv->name,
           total, n_bound > 0 ? (double)total / n_bound : 0);
    g_hash_table_iter_init(&it, srv->writes1);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        gint64 n = *(gint64 *)v - writes_of(srv->writes0, k);
        if (strcmp(k, "total") == 0 || n <= 0)
            continue;
        printf("  %-28s %7" G_GINT64_FORMAT "  %.3f per bound pod", (const char *)k, n,
               n_bound > 0 ? (double)n / n_bound : 0);
        /* What competed with the bindings for the server (counted up to POLL_MS late). */
        if (srv->writes_bound != NULL)
            printf(", %" G_GINT64_FORMAT " of them by the time the last binding was seen",
                   writes_of(srv->writes_bound, k) - writes_of(srv->writes0, k));
        printf("\n");
    }
}

/* kube-batchd's metrics and the events it wrote, after its run. */
static void print_daemon_details(KbClient *client, guint http_port, double base_latency_ms)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u/metrics", http_port);
    g_autofree char *metrics = http_get(url);
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
    printf("kube-batchd: binding round trip %.1f ms on average (the raw loop's best window: %.1f "
           "ms)\n",
           1000 * metric_sum(metrics, "kube_batchd_bind_duration_seconds_sum", NULL) /
                   MAX(metric_sum(metrics, "kube_batchd_bind_duration_seconds_count", NULL), 1),
           base_latency_ms);
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
}

/* kube-batchd schedules the workload; returns its rate from the first binding (0 on failure). */
static RunFigures run_kube_batchd(Server *srv, KbClient *client, const Baseline *base)
{
    /* The workload first: PodGroups and pods, all pending. */
    guint n_groups = (guint)(n_pods + gang - 1) / (guint)gang;
    double t_groups = window_run(client, n_groups, issue_group, "podgroups");
    double t_create = window_run(client, (guint)n_pods, issue_pod, "pods");
    printf("workload: %u PodGroups (gangs of %d) in %.2f s, %d pods in %.2f s (%.0f/s)\n", n_groups,
           gang, t_groups, n_pods, t_create, n_pods / t_create);
    if (dra_mode && !srv->real)
        printf("workload: the resource-claim controller done %.2f s after the last pod\n",
               controller_settled(srv));

    guint http_port = kb_test_free_port();
    g_autofree char *listen = g_strdup_printf("127.0.0.1:%u", http_port);
    g_autofree char *metrics_url = g_strdup_printf("http://%s/metrics", listen);
    Watch w = {.prefix = 'p', .srv = srv, .metrics_url = metrics_url};
    const char *level =
            g_getenv("KB_E2E_LOG_LEVEL") != NULL ? g_getenv("KB_E2E_LOG_LEVEL") : "warning";
    /* As many bindings in flight as the raw loop found this server serves best, unless
     * --bind-in-flight says: the same measured setting for both, as an operator would set
     * --bind-max-in-flight after measuring (a thread-per-connection HTTP/1.1 server such as
     * kb-apiserver does best with few, kube-apiserver's HTTP/2 with many). */
    guint in_flight = bind_window > 0 ? (guint)bind_window : base->window;
    g_autofree char *bw = g_strdup_printf("%u", in_flight);
    GPtrArray *args = g_ptr_array_new();
    if (srv->real) {
        /* As the cluster's admin: RBAC is on, and deploy/base/rbac.yaml is tested elsewhere. */
        g_ptr_array_add(args, (gpointer) "--kubeconfig");
        g_ptr_array_add(args, (gpointer)kb_test_cluster_kubeconfig(srv->cluster, KB_TEST_ADMIN));
    } else {
        g_ptr_array_add(args, (gpointer) "--master");
        g_ptr_array_add(args, (gpointer)srv->url);
    }
    const char *rest[] = {"--schedule-period", "200ms", "--listen-address", listen,
                          "--log-level",       level};
    for (guint i = 0; i < G_N_ELEMENTS(rest); i++)
        g_ptr_array_add(args, (gpointer)rest[i]);
    if (in_flight > 0) { /* 0: no trial ran (--baseline 0); kube-batchd's default then */
        g_ptr_array_add(args, (gpointer) "--bind-max-in-flight");
        g_ptr_array_add(args, bw);
    }
    g_ptr_array_add(args, (gpointer) "--kube-api-content-type");
    g_ptr_array_add(args, json_bindings ? (gpointer) "application/json"
                                        : (gpointer) "application/vnd.kubernetes.protobuf");
    g_ptr_array_add(args, NULL);

    /* kube-batchd starts now. KB_E2E_WRAPPER="perf record -g -o /tmp/kbd.data --" profiles it. */
    KbTestDaemonOptions dopts = {.wrapper = g_getenv("KB_E2E_WRAPPER")};
    g_autoptr(GError) error = NULL;
    srv->writes0 = server_writes(srv);
    double cpu_a0 = server_cpu(srv), cpu_self0 = kb_bench_cpu_seconds("self");
    double t_start = now_s();
    mark("scheduler-start");
    g_autoptr(KbTestDaemon) daemon =
            kb_test_daemon_start("kube-batchd", (const char *const *)args->pdata, &dopts, &error);
    g_ptr_array_unref(args);
    if (daemon == NULL)
        g_error("%s", error->message);
    printf("kube-batchd: --bind-max-in-flight %u%s; Bindings as %s, as the loop's\n", in_flight,
           bind_window > 0 ? ""
           : in_flight > 0 ? " (the raw loop's best window)"
                           : " (not given: kube-batchd's default)",
           json_bindings ? "JSON" : "protobuf");
    w.daemon_pid = kb_test_daemon_pid(daemon);
    gint max_conns = wait_bound(srv, &w, daemon);
    mark("scheduler-bound-all");
    mark_at(w.first, "first-binding-seen");
    mark_at(w.last, "last-binding-seen");
    double cpu_d = kb_bench_cpu_seconds(kb_test_daemon_pid(daemon));
    double cpu_a = server_cpu(srv) - cpu_a0, cpu_self = kb_bench_cpu_seconds("self") - cpu_self0;
    double cpu_bind[3] = {server_cpu(srv) - w.cpu_first[0], cpu_d - w.cpu_first[1],
                          kb_bench_cpu_seconds("self") - w.cpu_first[2]};
    srv->writes_bound = server_writes(srv);
    /* Let the status writes and events the bindings cause settle (a few periods). */
    g_usleep(3 * G_USEC_PER_SEC);
    srv->writes1 = server_writes(srv);

    double start_rate, bind_rate;
    print_rates("kube-batchd", &w, t_start, &start_rate, &bind_rate);
    guint on_server = count_bound(client, "bench");
    if (on_server != w.n_bound)
        printf("kube-batchd: its count of bindings (%u) is not the server's (%u pods with a "
               "node)\n",
               w.n_bound, on_server);
    printf("ratio to the raw binding loop (before): from start %.2f, from first binding %.2f\n",
           base->before.rate > 0 ? start_rate / base->before.rate : 0,
           base->before.rate > 0 ? bind_rate / base->before.rate : 0);
    if (base->watched.rate > 0)
        printf("ratio to the raw loop with a watch of all pods open: from start %.2f, from first "
               "binding %.2f\n",
               start_rate / base->watched.rate, bind_rate / base->watched.rate);
    print_writes(srv, w.n_bound);
    if (!srv->real)
        printf("client connections seen by the server: at most %d (the baseline loop's "
               "included)\n",
               max_conns);
    guint nb = MAX(w.n_bound, 1u);
    printf("cpu from scheduler start: kube-batchd %.2f s, %s %.2f s, this watcher %.2f s (wall "
           "%.2f s, %d cores)\n",
           cpu_d, srv->name, cpu_a, cpu_self, w.last - t_start, (int)sysconf(_SC_NPROCESSORS_ONLN));
    printf("cpu to the first binding: kube-batchd %.3f s (from its start; the cache's lists "
           "decoded)\n",
           w.cpu_first[1]);
    printf("cpu per binding (ms), from the first binding on: server (%s) %.3f, kube-batchd %.3f, "
           "this watcher %.3f; the raw loop: server %.3f, client %.3f\n",
           srv->real ? "kube-apiserver + etcd" : "kb-apiserver", 1000 * cpu_bind[0] / nb,
           1000 * cpu_bind[1] / nb, 1000 * cpu_bind[2] / nb, base->before.cpu_server,
           base->before.cpu_client);
    print_daemon_details(client, http_port, base->before.latency_ms);

    watch_stop(&w);
    kb_test_daemon_stop(daemon, 30000);
    return (RunFigures){start_rate, bind_rate, 1000 * (cpu_bind[0] + cpu_bind[1]) / nb};
}

/* kube-scheduler (from $KB_K8S_BIN, unthrottled client QPS) schedules the same pods without
 * gangs, after kube-batchd's are deleted. Returns its rate from the first binding (0 when it did
 * not run). */
static double run_kube_scheduler(Server *srv, KbClient *client, const Baseline *base)
{
    const char *bin = g_getenv("KB_K8S_BIN");
    g_autofree char *ks = bin != NULL ? g_build_filename(bin, "kube-scheduler", NULL) : NULL;
    if (ks == NULL || !g_file_test(ks, G_FILE_TEST_IS_EXECUTABLE)) {
        printf("%s: kube-scheduler: not run (no kube-scheduler in KB_K8S_BIN)\n", srv->name);
        return 0;
    }
    window_run(client, (guint)n_pods, issue_pod_delete, "delete kube-batchd's pods");
    create_namespace(client, "ksched");
    window_run(client, (guint)n_pods, issue_ksched_pod, "kube-scheduler's pods");
    Watch w = {.prefix = 'k', .srv = srv, .bound = g_new0(double, n_pods)};
    watch_start(client, "ksched", &w);
    /* Unthrottled: client-go's default 50 QPS would measure the throttle, not the scheduler. */
    const char *args[] = {"--kubeconfig",
                          kb_test_cluster_kubeconfig(srv->cluster, KB_TEST_ADMIN),
                          "--leader-elect=false",
                          "--port=0",
                          "--secure-port=0",
                          "--kube-api-qps=100000",
                          "--kube-api-burst=100000",
                          NULL};
    KbTestDaemonOptions dopts = {.log = TRUE};
    g_autoptr(GError) error = NULL;
    g_clear_pointer(&srv->writes0, g_hash_table_unref);
    g_clear_pointer(&srv->writes_bound, g_hash_table_unref);
    g_clear_pointer(&srv->writes1, g_hash_table_unref);
    srv->writes0 = server_writes(srv);
    double t_start = now_s();
    g_autoptr(KbTestDaemon) d = kb_test_daemon_start(ks, args, &dopts, &error);
    double start_rate = 0, bind_rate = 0;
    if (d == NULL) {
        printf("%s: kube-scheduler did not start: %s\n", srv->name, error->message);
    } else {
        wait_bound(srv, &w, d);
        g_usleep(3 * G_USEC_PER_SEC);
        srv->writes1 = server_writes(srv);
        print_rates("kube-scheduler", &w, t_start, &start_rate, &bind_rate);
        printf("kube-scheduler: ratio to the raw binding loop: from first binding %.2f\n",
               base->before.rate > 0 ? bind_rate / base->before.rate : 0);
        print_writes(srv, w.n_bound);
        if (w.n_bound == 0) {
            g_autofree char *log = kb_test_daemon_log(d);
            printf("kube-scheduler's log:\n%s\n", log);
        }
        kb_test_daemon_stop(d, 30000);
    }
    watch_stop(&w);
    return bind_rate;
}

static RunFigures run_server(Server *srv, GArray *windows)
{
    g_autoptr(GError) error = NULL;
    srv->config->json_only = json_bindings;
    KbClient *client = kb_client_new(srv->config, &error);
    guint max_window = 0;
    for (guint k = 0; k < windows->len; k++)
        max_window = MAX(max_window, g_array_index(windows, guint, k));
    kb_client_set_max_in_flight(client, MAX(max_window, WINDOW) + 8);

    create_crd(client, "deploy/base/crds/podgroup-volcano.yaml");
    create_crd(client, "deploy/base/crds/queue-volcano.yaml");
    create_namespace(client, "baseline");
    create_namespace(client, "bench");
    /* Until the PodGroups are served (at most 60 s; a real server takes a few seconds). */
    for (guint tries = 0; tries < 600; tries++) {
        g_autoptr(GError) crd_error = NULL;
        KbListOptions lo = {.limit = 1};
        json_object *l =
                kb_client_list(client, &kb_type_pod_groups_volcano, "bench", &lo, &crd_error);
        json_object_put(l);
        if (l != NULL)
            break;
        g_usleep(100000);
    }

    double t_nodes = window_run(client, (guint)n_nodes, issue_node, "nodes");
    window_run(client, (guint)n_nodes, issue_node_status, "node status");
    window_run(client, (guint)n_nodes, issue_node_untaint, "node taints");
    if (dra_mode) {
        create_dra_objects(client);
        window_run(client, (guint)n_nodes, issue_slice, "resource slices");
    }
    printf("== %s%s\ncluster: %d nodes x %d GPUs%s created in %.2f s\n", srv->name,
           dra_mode ? " (DRA: a claim per pod from a template)" : "", n_nodes, gpus_per_node,
           dra_mode ? " (ResourceSlices)" : "", t_nodes);

    Baseline base = run_baseline(srv, client, windows);
    RunFigures fig = run_kube_batchd(srv, client, &base);
    double start_rate = fig.start_rate, bind_rate = fig.bind_rate;
    double after = run_baseline_after(srv, client, &base);
    if (after > 0) {
        double mean = (base.before.rate + after) / 2;
        printf("ratio to the raw binding loop's mean before and after (%.0f bindings/s): from "
               "start %.2f, from first binding %.2f\n",
               mean, start_rate / mean, bind_rate / mean);
    }
    if (srv->real) {
        double ks_rate = run_kube_scheduler(srv, client, &base);
        if (ks_rate > 0)
            printf("%s: kube-batchd / kube-scheduler (from first binding): %.2f\n", srv->name,
                   bind_rate / ks_rate);
        /* kube-scheduler runs a minute after kube-batchd, and this machine's speed drifts by up
         * to 2x between phases: the loop once more, right after kube-scheduler's run, puts each
         * scheduler against the server as it ran next to it. */
        if (ks_rate > 0 && after > 0) {
            LoopRun r = loop_run(srv, client, base.window, 3, FALSE, "after-kube-scheduler");
            double kbd = bind_rate / ((base.before.rate + after) / 2), ks = ks_rate / r.rate;
            printf("  raw loop again after kube-scheduler, %4u in flight: %5.0f bindings/s (%d "
                   "bindings)\n",
                   base.window, r.rate, n_pods);
            printf("%s: kube-batchd / kube-scheduler, each against the raw loop next to its run "
                   "(%.2f and %.2f of it): %.2f\n",
                   srv->name, kbd, ks, kbd / ks);
        }
    }
    kb_client_free(client);
    return fig;
}

/* kb-apiserver, the cluster and one kube-batchd run: through DRA claims when @dra. */
static RunFigures run_kb_apiserver(GArray *windows, gboolean dra)
{
    g_autoptr(GError) error = NULL;
    Server kas = {0};
    dra_mode = dra;
    if (!server_start(&kas, FALSE, &error))
        g_error("kb-apiserver: %s", error->message);
    RunFigures fig = run_server(&kas, windows);
    server_stop(&kas);
    return fig;
}

static int cmp_double(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts @v. */
static void print_spread(const char *what, GArray *v)
{
    g_array_sort(v, cmp_double);
    const double *d = (const double *)(gpointer)v->data;
    guint n = v->len;
    double median = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
    printf("   %-34s median %.2fx (%.2f-%.2fx)\n", what, median, d[0], d[n - 1]);
}

/* --dra: the DRA run after @plain (the nvidia.com/gpu run), then --pairs - 1 more pairs, each
 * plain run first: this machine's speed drifts between runs, so a ratio is taken within a pair
 * and the pairs' ratios are summarised. The CPU ratio (both daemons' CPU per bound pod from the
 * first binding, plain over DRA) is the rate ratio the two cores would allow if they were full. */
static void run_dra_pairs(GArray *windows, RunFigures plain)
{
    g_autoptr(GArray) from_start = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) from_first = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) cpu = g_array_new(FALSE, FALSE, sizeof(double));
    for (gint i = 0; i < n_pairs; i++) {
        if (i > 0)
            plain = run_kb_apiserver(windows, FALSE);
        RunFigures dra = run_kb_apiserver(windows, TRUE);
        double r[3] = {plain.start_rate > 0 ? dra.start_rate / plain.start_rate : 0,
                       plain.bind_rate > 0 ? dra.bind_rate / plain.bind_rate : 0,
                       dra.cpu_ms > 0 ? plain.cpu_ms / dra.cpu_ms : 0};
        g_autofree char *which =
                n_pairs > 1 ? g_strdup_printf(" (pair %d of %d)", i + 1, n_pairs) : g_strdup("");
        printf("== DRA / nvidia.com/gpu on kb-apiserver%s: from scheduler start %.0f / %.0f pods/s "
               "= %.2fx, from first binding %.0f / %.0f = %.2fx (goal >= 0.5x); CPU per bound pod "
               "(server + kube-batchd) %.3f / %.3f ms = %.2fx\n",
               which, dra.start_rate, plain.start_rate, r[0], dra.bind_rate, plain.bind_rate, r[1],
               plain.cpu_ms, dra.cpu_ms, r[2]);
        g_array_append_val(from_start, r[0]);
        g_array_append_val(from_first, r[1]);
        g_array_append_val(cpu, r[2]);
    }
    if (n_pairs > 1) {
        printf("== DRA / nvidia.com/gpu on kb-apiserver over %d alternated pairs (goal >= 0.5x):\n",
               n_pairs);
        print_spread("from scheduler start", from_start);
        print_spread("from first binding", from_first);
        print_spread("CPU per bound pod (plain / DRA)", cpu);
    }
}

/* "16,64,256" into window sizes (1 to MAX_WINDOW each). */
static GArray *parse_windows(const char *text)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(guint));
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    for (guint i = 0; parts[i] != NULL; i++) {
        guint64 v = 0;
        if (!g_ascii_string_to_unsigned(g_strstrip(parts[i]), 10, 1, MAX_WINDOW, &v, NULL)) {
            g_array_unref(out);
            return NULL;
        }
        guint w = (guint)v;
        g_array_append_val(out, w);
    }
    return out;
}

int main(int argc, char **argv)
{
    GOptionEntry entries[] = {
            {"nodes", 0, 0, G_OPTION_ARG_INT, &n_nodes, "nodes", "N"},
            {"gpus", 0, 0, G_OPTION_ARG_INT, &gpus_per_node, "GPUs per node (default 8)", "N"},
            {"pods", 0, 0, G_OPTION_ARG_INT, &n_pods, "pods scheduled by kube-batchd", "N"},
            {"gang", 0, 0, G_OPTION_ARG_INT, &gang, "pods per PodGroup", "N"},
            {"baseline", 0, 0, G_OPTION_ARG_INT, &n_baseline,
             "pods the plain loop's trial binds (split between its windows)", "N"},
            {"json-bindings", 0, 0, G_OPTION_ARG_NONE, &json_bindings,
             "Bindings as JSON, the loop's and kube-batchd's (default protobuf)", NULL},
            {"baseline-in-flight", 0, 0, G_OPTION_ARG_STRING, &base_windows_arg,
             "the trial's windows; the loop is measured at the fastest (default 16,64,256)",
             "N,N,..."},
            {"bind-in-flight", 0, 0, G_OPTION_ARG_INT, &bind_window,
             "kube-batchd --bind-max-in-flight (default: the raw loop's best window)", "N"},
            {"dra", 0, 0, G_OPTION_ARG_NONE, &dra_arg,
             "then the same through DRA claims on kb-apiserver, and the ratio (no real server)",
             NULL},
            {"pairs", 0, 0, G_OPTION_ARG_INT, &n_pairs,
             "with --dra: alternated nvidia.com/gpu and DRA runs, and the ratios' medians "
             "(default 1)",
             "N"},
            {NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(GOptionContext) ctx = g_option_context_new("- kube-batchd end to end");
    g_option_context_add_main_entries(ctx, entries, NULL);
    gboolean ok = g_option_context_parse(ctx, &argc, &argv, &error);
    g_autoptr(GArray) windows =
            ok ? parse_windows(base_windows_arg != NULL ? base_windows_arg : "16,64,256") : NULL;
    if (!ok || windows == NULL || windows->len == 0 || n_nodes < 1 || n_nodes > 9999 ||
        n_pods < 1 || n_pods > 99999 || gang < 1 || n_baseline < 0 || n_baseline > 99999 ||
        bind_window < 0 || bind_window > MAX_WINDOW || n_pairs < 1 || n_pairs > 50) {
        fprintf(stderr, "bench-e2e: %s\n", error != NULL ? error->message : "bad values");
        return 2;
    }
    if (n_pairs > 1 && !dra_arg) {
        fprintf(stderr,
                "bench-e2e: --pairs %d: pairs are of the nvidia.com/gpu and DRA runs, "
                "give --dra too\n",
                n_pairs);
        return 2;
    }
    kb_log_init(KB_LOG_WARNING);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    RunFigures plain = run_kb_apiserver(windows, FALSE);
    g_autofree char *why = NULL;
    if (dra_arg) {
        run_dra_pairs(windows, plain);
        printf("== kube-apiserver: skipped with --dra\n");
    } else if (!kb_test_cluster_real_available(&why)) {
        printf("== kube-apiserver: skipped (%s; set KB_K8S_BIN to a directory with "
               "kube-apiserver, and kube-scheduler for that baseline)\n",
               why);
    } else {
        Server real = {0};
        g_clear_error(&error);
        if (!server_start(&real, TRUE, &error))
            printf("== kube-apiserver: did not start: %s\n", error->message);
        else
            run_server(&real, windows);
        server_stop(&real);
    }
    g_free(base_windows_arg);
    curl_global_cleanup();
    return 0;
}
