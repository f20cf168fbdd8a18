/*
 * Load figures for the in-memory API server (testbed/apiserver/), against the targets of issue 3:
 *   - bindings/s: concurrent keep-alive clients POSTing pods/NAME/binding on pre-created pods
 *     (baseline in the same run: GET /healthz round trips with the same clients);
 *   - watch events/s: events written while 10 watchers each receive every one of them;
 *   - memory: resident set growth for 150,000 realistic pods;
 *   - claim status writes: CPU per first status of a ResourceClaim (kube-batchd's allocation and
 *     reservation, one per DRA pod) read from the body's text and spliced into the stored text,
 *     and, alternating, parsed and spliced, and parsed, merged into the parsed claim and printed
 *     again; CPU per Binding of the same pods, all in process.
 * The server runs in this process (same code as bin/kb-apiserver). Figures only, no assertions.
 *
 *   bench-apiserver [--pods N] [--clients N] [--events N] [--watchers N] [--memory-pods N]
 *                   [--claims N]
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testbed/apiserver/kas-json.h"
#include "testbed/apiserver/kas-ops.h"
#include "testbed/apiserver/kas-server.h"

static gint n_pods = 20000, n_clients = 16, n_events = 20000, n_watchers = 10, n_memory = 150000,
            n_claims = 20000;

static double now_s(void)
{
    return (double)g_get_monotonic_time() / G_USEC_PER_SEC;
}

static double rss_mib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

/* A pod as tf-operator creates them: labels, gang annotation, owner, resources, env, ports. */
static json_object *make_pod(const char *ns, guint i)
{
    g_autofree char *text = g_strdup_printf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"job-%u-worker-%u\",\"namespace\":\"%s\","
        "\"labels\":{\"group-name\":\"kubeflow.org\",\"job-name\":\"job-%u\",\"replica-type\":\"worker\","
        "\"replica-index\":\"%u\"},\"annotations\":{\"scheduling.k8s.io/group-name\":\"job-%u\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"name\":\"job-%u\","
        "\"uid\":\"5f0c2a6e-0000-4000-8000-%012u\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
        "\"spec\":{\"schedulerName\":\"kube-batchd\",\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"tensorflow\","
        "\"image\":\"tensorflow/tensorflow:2.15.0-gpu\",\"command\":[\"python\",\"/opt/train.py\",\"--epochs=10\"],"
        "\"env\":[{\"name\":\"TF_CONFIG\",\"value\":\"{\\\"cluster\\\":{\\\"worker\\\":[\\\"job-%u-worker-0:2222\\\"]}}\"}],"
        "\"ports\":[{\"name\":\"tfjob-port\",\"containerPort\":2222,\"protocol\":\"TCP\"}],"
        "\"resources\":{\"limits\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"1\"}}}]}}",
        i / 8, i % 8, ns, i / 8, i % 8, i / 8, i / 8, i / 8, i / 8);
    return json_tokener_parse(text);
}

static void create_namespace(KasStore *store, const char *name)
{
    kas_store_lock(store);
    KasRes *res = kas_store_find_locked(store, "", "v1", "namespaces");
    kas_store_unlock(store);
    g_autofree char *text = g_strdup_printf("{\"metadata\":{\"name\":\"%s\"}}", name);
    json_object *j = json_tokener_parse(text);
    kas_obj_unref(kas_ops_create(store, res, "v1", NULL, j, NULL));
    json_object_put(j);
}

static void create_pods(KasStore *store, const char *ns, guint n)
{
    kas_store_lock(store);
    KasRes *pods = kas_store_find_locked(store, "", "v1", "pods");
    kas_store_unlock(store);
    for (guint i = 0; i < n; i++) {
        json_object *p = make_pod(ns, i);
        g_autoptr(GError) error = NULL;
        KasObj *o = kas_ops_create(store, pods, "v1", ns, p, &error);
        if (o == NULL)
            g_error("creating pod %u: %s", i, error->message);
        kas_obj_unref(o);
        json_object_put(p);
    }
}

/* ---- concurrent clients -------------------------------------------------------------------------- */

typedef struct {
    const char *base;
    guint index, stride, total;
    gboolean bind;
    guint ok, failed;
} Client;

static size_t discard(char *p, size_t s, size_t n, void *d)
{
    return s * n;
}

static gpointer client_main(gpointer data)
{
    Client *c = data;
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    for (guint i = c->index; i < c->total; i += c->stride) {
        char url[512];
        char body[256];
        if (c->bind) {
            g_snprintf(url, sizeof url, "%s/api/v1/namespaces/bench/pods/job-%u-worker-%u/binding", c->base, i / 8, i % 8);
            g_snprintf(body, sizeof body,
                       "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"job-%u-worker-%u\"},"
                       "\"target\":{\"kind\":\"Node\",\"name\":\"node-%u\"}}",
                       i / 8, i % 8, i % 500);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        } else {
            g_snprintf(url, sizeof url, "%s/healthz", c->base);
            curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        }
        curl_easy_setopt(h, CURLOPT_URL, url);
        long code = 0;
        if (curl_easy_perform(h) == CURLE_OK)
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        if (code == (c->bind ? 201 : 200))
            c->ok++;
        else
            c->failed++;
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    return NULL;
}

/* Run @total requests over n_clients threads; returns requests/s, *ok the successes. */
static double run_clients(const char *base, guint total, gboolean bind, guint *ok)
{
    Client *cs = g_new0(Client, n_clients);
    GThread **ts = g_new0(GThread *, n_clients);
    double t0 = now_s();
    for (gint i = 0; i < n_clients; i++) {
        cs[i] = (Client){ base, (guint)i, (guint)n_clients, total, bind, 0, 0 };
        ts[i] = g_thread_new("client", client_main, &cs[i]);
    }
    *ok = 0;
    for (gint i = 0; i < n_clients; i++) {
        g_thread_join(ts[i]);
        *ok += cs[i].ok;
    }
    double dt = now_s() - t0;
    g_free(cs);
    g_free(ts);
    return total / dt;
}

/* ---- watchers ---------------------------------------------------------------------------------------- */

typedef struct {
    const char *base;
    guint want;
    guint got;
    double done_at;
    const char *rv; /* resourceVersion to watch from */
} Watcher;

static size_t watch_body(char *p, size_t s, size_t n, void *d)
{
    Watcher *w = d;
    for (size_t i = 0; i < s * n; i++)
        if (p[i] == '\n' && ++w->got == w->want)
            w->done_at = now_s();
    return w->got >= w->want ? 0 : s * n;
}

static gpointer watcher_main(gpointer data)
{
    Watcher *w = data;
    CURL *h = curl_easy_init();
    char url[512];
    g_snprintf(url, sizeof url, "%s/api/v1/namespaces/watched/configmaps?watch=true&resourceVersion=%s",
               w->base, w->rv);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 300L);
    curl_easy_perform(h);
    curl_easy_cleanup(h);
    return NULL;
}

/* @n_watchers watcher threads following the server from @rv. */
static GThread **watchers_start(KasServer *srv, const char *rv, Watcher *ws)
{
    GThread **ts = g_new0(GThread *, n_watchers);
    for (gint i = 0; i < n_watchers; i++) {
        ws[i] = (Watcher){ kas_server_url(srv), (guint)n_events, 0, 0, rv };
        ts[i] = g_thread_new("watcher", watcher_main, &ws[i]);
    }
    return ts;
}

/* Joins (and frees) @ts; returns how many watchers got every event, *@last (at least @t0) the
 * time the last of those did. */
static guint watchers_join(GThread **ts, const Watcher *ws, double t0, double *last)
{
    guint complete = 0;
    *last = t0;
    for (gint i = 0; i < n_watchers; i++) {
        g_thread_join(ts[i]);
        if (ws[i].got >= (guint)n_events) {
            complete++;
            *last = MAX(*last, ws[i].done_at);
        }
    }
    g_free(ts);
    return complete;
}

/* Watchers resuming from @rv drain events already in the history as fast as they can. */
static void bench_replay(KasServer *srv, const char *rv)
{
    Watcher *ws = g_new0(Watcher, n_watchers);
    double t0 = now_s();
    GThread **ts = watchers_start(srv, rv, ws);
    double last;
    guint complete = watchers_join(ts, ws, t0, &last);
    double dt = last - t0;
    printf("watch replay:    %d events from the history to %d watchers (%u complete) in %.2f s\n",
           n_events, n_watchers, complete, dt);
    printf("  events/s per watcher   %10.0f   (target >= 20,000)\n", n_events / dt);
    printf("  events/s delivered     %10.0f   (all watchers together)\n", (double)n_events * complete / dt);
    g_free(ws);
}

static void bench_watch(KasServer *srv)
{
    KasStore *store = kas_server_store(srv);
    create_namespace(store, "watched");
    kas_store_lock(store);
    g_autofree char *rv = g_strdup_printf("%" G_GUINT64_FORMAT, kas_store_rv_locked(store));
    kas_store_unlock(store);
    Watcher *ws = g_new0(Watcher, n_watchers);
    GThread **ts = watchers_start(srv, rv, ws);
    while (kas_store_watcher_count(store) < (guint)n_watchers)
        g_usleep(1000);
    kas_store_lock(store);
    KasRes *cms = kas_store_find_locked(store, "", "v1", "configmaps");
    kas_store_unlock(store);
    double t0 = now_s();
    for (gint i = 0; i < n_events; i++) {
        g_autofree char *text = g_strdup_printf("{\"metadata\":{\"name\":\"cm-%d\",\"labels\":{\"a\":\"b\"}},"
                                                "\"data\":{\"key\":\"value-%d\"}}", i, i);
        json_object *j = json_tokener_parse(text);
        kas_obj_unref(kas_ops_create(store, cms, "v1", "watched", j, NULL));
        json_object_put(j);
    }
    double produced = now_s() - t0;
    double last;
    guint complete = watchers_join(ts, ws, t0, &last);
    double dt = last - t0;
    printf("watch live:      %d events written while %d watchers follow (%u complete) in %.2f s\n",
           n_events, n_watchers, complete, dt);
    printf("  events/s per watcher   %10.0f   (limited by the writer: %.0f writes/s in-process)\n",
           n_events / dt, n_events / produced);
    printf("  events/s delivered     %10.0f   (all watchers together)\n", (double)n_events * complete / dt);
    g_free(ws);
    bench_replay(srv, rv);
}

/* ---- claim status writes, in process ------------------------------------------------------- */

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A claim as the resource-claim controller makes it from a template asking for one GPU, for the
 * pod made by make_pod(ns, i). */
static json_object *make_claim(const char *ns, guint i)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
            "\"name\":\"job-%u-worker-%u-gpu-x7k2q\",\"namespace\":\"%s\",\"annotations\":{"
            "\"resource.kubernetes.io/pod-claim-name\":\"gpu\"},\"ownerReferences\":[{"
            "\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"job-%u-worker-%u\",\"uid\":"
            "\"7a1c0d2e-0000-4000-8000-%012u\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
            "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
            "\"deviceClassName\":\"gpu.nvidia.com\",\"allocationMode\":\"ExactCount\","
            "\"count\":1}}]}}}",
            i / 8, i % 8, ns, i / 8, i % 8, i);
    return json_tokener_parse(text);
}

/* The status kube-batchd writes for claim @i (kb_resource_claim_status_text's form), as text. */
static char *claim_status_text(const KasObj *claim, guint i)
{
    return g_strdup_printf(
            "{\"metadata\":{\"resourceVersion\":\"%" G_GUINT64_FORMAT "\"},\"status\":{"
            "\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":"
            "\"gpu.nvidia.com\",\"pool\":\"node-%04u\",\"device\":\"gpu-%u\"}]},\"nodeSelector\":"
            "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
            "\"In\",\"values\":[\"node-%04u\"]}]}]}},\"reservedFor\":[{\"resource\":\"pods\","
            "\"name\":\"job-%u-worker-%u\",\"uid\":\"7a1c0d2e-0000-4000-8000-%012u\"}]}}",
            claim->rv, i / 8, i % 8, i / 8, i / 8, i % 8, i);
}

/* CPU seconds of writing the first status of claims [@from, @to): @how 0 read from the body's
 * text (as kb-apiserver takes kube-batchd's), 1 parsed and spliced, 2 parsed, merged and printed
 * (each body's parse counted). */
static double claim_writes(KasStore *store, KasRes *claims, GPtrArray *objs, guint from, guint to,
                           guint how)
{
    kas_ops_set_status_splice(how != 2);
    double t0 = thread_cpu_s();
    for (guint i = from; i < to; i++) {
        KasObj *c = g_ptr_array_index(objs, i);
        g_autofree char *text = claim_status_text(c, i);
        g_autoptr(GError) error = NULL;
        KasObj *o = NULL;
        if (how != 0 || !kas_ops_claim_status_text(store, claims, "bench", c->name, text,
                                                   strlen(text), &o, &error)) {
            json_object *st = json_tokener_parse(text);
            o = kas_ops_patch(store, claims, "v1", "bench", c->name, KAS_PATCH_MERGE, st, TRUE,
                              &error);
            json_object_put(st);
        }
        if (o == NULL)
            g_error("claim %s: %s", c->name, error->message);
        kas_obj_unref(o);
    }
    double dt = thread_cpu_s() - t0;
    kas_ops_set_status_splice(TRUE);
    return dt;
}

static void bench_claims(void)
{
    KasStoreOptions so = {0};
    KasStore *store = kas_store_new(&so);
    kas_ops_bootstrap(store);
    create_namespace(store, "bench");
    create_pods(store, "bench", (guint)n_claims);
    kas_store_lock(store);
    KasRes *claims = kas_store_find_locked(store, "resource.k8s.io", "v1", "resourceclaims");
    kas_store_unlock(store);
    g_autoptr(GPtrArray) objs = g_ptr_array_new_with_free_func((GDestroyNotify)kas_obj_unref);
    for (guint i = 0; i < (guint)n_claims; i++) {
        json_object *c = make_claim("bench", i);
        g_autoptr(GError) error = NULL;
        KasObj *o = kas_ops_create(store, claims, "v1", "bench", c, &error);
        if (o == NULL)
            g_error("creating claim %u: %s", i, error->message);
        g_ptr_array_add(objs, o);
        json_object_put(c);
    }
    /* blocks of 500 alternate, so that the paths see the same store and machine */
    double cpu[3] = {0, 0, 0};
    guint n[3] = {0, 0, 0};
    for (guint b = 0; b * 500 < (guint)n_claims; b++) {
        guint from = b * 500, to = MIN(from + 500, (guint)n_claims);
        cpu[b % 3] += claim_writes(store, claims, objs, from, to, b % 3);
        n[b % 3] += to - from;
    }
    double t0 = thread_cpu_s();
    for (guint i = 0; i < (guint)n_claims; i++) {
        g_autofree char *name = g_strdup_printf("job-%u-worker-%u", i / 8, i % 8);
        g_autofree char *text = g_strdup_printf(
                "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"%s\"},"
                "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"node-%04u\"}}",
                name, i / 8);
        json_object *binding = json_tokener_parse(text);
        g_autoptr(GError) error = NULL;
        if (!kas_ops_bind(store, "bench", name, binding, &error))
            g_error("binding %s: %s", name, error->message);
        json_object_put(binding);
    }
    double bind = thread_cpu_s() - t0;
    printf("claim status writes: %d claims (one GPU each, from a template), in process\n",
           n_claims);
    printf("  read from its text     %10.1f us of CPU each (%u)\n", 1e6 * cpu[0] / n[0], n[0]);
    printf("  parsed, spliced        %10.1f us of CPU each (%u; %.2fx)\n", 1e6 * cpu[1] / n[1],
           n[1], cpu[1] / n[1] / (cpu[0] / n[0]));
    printf("  merged and printed     %10.1f us of CPU each (%u; %.2fx)\n", 1e6 * cpu[2] / n[2],
           n[2], cpu[2] / n[2] / (cpu[0] / n[0]));
    printf("  Binding of a pod       %10.1f us of CPU each\n", 1e6 * bind / n_claims);
    g_clear_pointer(&objs, g_ptr_array_unref);
    kas_store_free(store);
}

int main(int argc, char **argv)
{
    GOptionEntry entries[] = {
        { "pods", 0, 0, G_OPTION_ARG_INT, &n_pods, "Pods to bind (default 20000)", "N" },
        { "clients", 0, 0, G_OPTION_ARG_INT, &n_clients, "Concurrent binding clients (default 16)", "N" },
        { "events", 0, 0, G_OPTION_ARG_INT, &n_events, "Watch events (default 20000)", "N" },
        { "watchers", 0, 0, G_OPTION_ARG_INT, &n_watchers, "Watchers (default 10)", "N" },
        { "memory-pods", 0, 0, G_OPTION_ARG_INT, &n_memory, "Pods for the memory figure (default 150000)", "N" },
        { "claims", 0, 0, G_OPTION_ARG_INT, &n_claims, "Claims for the claim status writes (default 20000)", "N" },
        { NULL },
    };
    g_autoptr(GOptionContext) oc = g_option_context_new("- load figures for kb-apiserver");
    g_option_context_add_main_entries(oc, entries, NULL);
    g_autoptr(GError) error = NULL;
    if (!g_option_context_parse(oc, &argc, &argv, &error) || n_pods <= 0 || n_clients <= 0 ||
        n_events <= 0 || n_watchers <= 0 || n_memory <= 0 || n_claims <= 0) {
        fprintf(stderr, "bench-apiserver: %s\n", error != NULL ? error->message : "counts must be positive");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    KasServerOptions o;
    kas_server_options_init(&o);
    o.watch_queue = (guint)n_events + 1000;
    o.watch_history = (guint)n_events + 1000;
    o.max_connections = 4096;
    g_autoptr(KasServer) srv = kas_server_new(&o, &error);
    if (srv == NULL) {
        fprintf(stderr, "bench-apiserver: %s\n", error->message);
        return 1;
    }
    KasStore *store = kas_server_store(srv);
    printf("kb-apiserver load figures (%ld CPUs online; server and clients share them)\n",
           sysconf(_SC_NPROCESSORS_ONLN));

    create_namespace(store, "bench");
    create_pods(store, "bench", (guint)n_pods);
    guint ok = 0;
    double base = run_clients(kas_server_url(srv), (guint)n_pods, FALSE, &ok);
    double rate = run_clients(kas_server_url(srv), (guint)n_pods, TRUE, &ok);
    printf("bindings:        %d pods, %d keep-alive clients, %u bound (201)\n", n_pods, n_clients, ok);
    printf("  bindings/s             %10.0f   (target >= 5,000)\n", rate);
    printf("  baseline GET /healthz  %10.0f/s (same clients; bindings at %.0f%% of it)\n", base, 100 * rate / base);

    bench_watch(srv);

    g_clear_pointer(&srv, kas_server_free);
    KasStoreOptions so = { 0 };
    double before = rss_mib();
    KasStore *mem = kas_store_new(&so);
    kas_ops_bootstrap(mem);
    create_namespace(mem, "bench");
    double t0 = now_s();
    create_pods(mem, "bench", (guint)n_memory);
    double dt = now_s() - t0;
    double after = rss_mib();
    printf("memory:          %d pods created in %.1f s (%.0f creates/s in-process)\n", n_memory, dt, n_memory / dt);
    printf("  RSS growth             %10.0f MiB (target < 1024 MiB; %.0f bytes/pod, history included)\n",
           after - before, (after - before) * 1024 * 1024 / n_memory);
    kas_store_free(mem);
    bench_claims();
    curl_global_cleanup();
    return 0;
}
