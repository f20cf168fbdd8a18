/*
 * Extender throughput: filter + prioritize call pairs per second that kube-batchd's extender
 * answers over HTTP (the real server, codec and decisions, on the main loop, one keep-alive client
 * connection as kube-scheduler uses), at 1,000 and 5,000 nodes of 8 GPUs, with nodeCacheCapable
 * true (NodeNames) and false (a NodeList of full Node objects as kube-scheduler sends them,
 * managedFields included).
 *
 * Managed: the members of an 8-pod gang of 4-GPU pods (the first call plans the gang; the rest
 * answer from its reservations). Baseline, measured in the same run: a pod without GPU or group,
 * which passes through (decode and encode, no decision), so the ratio is what the gang decisions
 * cost over kube-scheduler's protocol itself.
 *
 * At 1,000 nodes the same is measured once more as deploy/ serves it: HTTPS with kube-scheduler's
 * client certificate, verified on every call (certificates made for the run), to show what
 * authentication costs.
 *
 *   bench-extender [SECONDS per row, default 1.5]
 *
 * Prints figures only: no pass/fail on timing.
 */
#include <curl/curl.h>
#include <glib.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/extender-server.h"
#include "tests/lib/kb-test-pki.h"
#include "tests/lib/kb-test-sched.h"

#define GANG 8

typedef struct {
    guint port;
    KbTestPki *pki;         /* HTTPS with its client certificate when set */
    GPtrArray *filters;     /* request bodies, used round-robin */
    GPtrArray *prioritizes; /* the same pods, one candidate each (what filter left) */
    double seconds;
    guint64 pairs;
    double elapsed;
    gboolean failed;
    gboolean done;
} Run;

static size_t discard(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(user, data, (gssize)(size * n));
    return size * n;
}

static gboolean post(CURL *c, const Run *r, const char *path, const char *body, GString *out)
{
    g_autofree char *url = g_strdup_printf("%s://127.0.0.1:%u%s", r->pki != NULL ? "https" : "http",
                                           r->port, path);
    long status = 0;
    g_string_truncate(out, 0);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    return curl_easy_perform(c) == CURLE_OK &&
           curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status == 200;
}

static gpointer client(gpointer data)
{
    Run *r = data;
    CURL *c = curl_easy_init();
    GString *out = g_string_new(NULL);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    if (r->pki != NULL) {
        curl_easy_setopt(c, CURLOPT_CAINFO, kb_test_pki_path(r->pki, "ca.pem"));
        curl_easy_setopt(c, CURLOPT_SSLCERT, kb_test_pki_path(r->pki, "client.pem"));
        curl_easy_setopt(c, CURLOPT_SSLKEY, kb_test_pki_path(r->pki, "client-key.pem"));
    }
    gint64 start = g_get_monotonic_time();
    gint64 end = start + (gint64)(r->seconds * G_USEC_PER_SEC);
    guint i = 0;
    do {
        guint k = i++ % r->filters->len;
        if (!post(c, r, "/filter", r->filters->pdata[k], out) ||
            !post(c, r, "/prioritize", r->prioritizes->pdata[k], out)) {
            r->failed = TRUE;
            break;
        }
        r->pairs++;
    } while (g_get_monotonic_time() < end || r->pairs < 3);
    r->elapsed = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
    curl_slist_free_all(h);
    g_string_free(out, TRUE);
    curl_easy_cleanup(c);
    g_atomic_int_set(&r->done, TRUE);
    g_main_context_wakeup(NULL);
    return NULL;
}

static char *node_json(guint i)
{
    return g_strdup_printf(
            "{\"metadata\":{\"name\":\"node-%05u\",\"uid\":\"uid-%05u\",\"resourceVersion\":\"%u\","
            "\"creationTimestamp\":\"2026-11-23T23:58:28Z\",\"labels\":{\"kubernetes.io/"
            "hostname\":\"node-%05u\",\"nvidia.com/gpu.product\":\"H100\",\"rack\":\"r%u\"},"
            "\"annotations\":{\"kube-batchd.io/gpu-topology\":"
            "\"{\\\"nvlink\\\":[[0,1,2,3],[4,5,6,7]]}\"},"
            "\"managedFields\":[{\"manager\":\"unknown\",\"operation\":\"Update\",\"apiVersion\":"
            "\"v1\",\"time\":\"2026-11-23T23:58:28Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
            "\"f:metadata\":{\"f:labels\":{\".\":{},\"f:kubernetes.io/hostname\":{},"
            "\"f:nvidia.com/gpu.product\":{},\"f:rack\":{}}},\"f:status\":{\"f:allocatable\":{"
            "\".\":{},\"f:cpu\":{},\"f:memory\":{},\"f:nvidia.com/gpu\":{},\"f:pods\":{}},"
            "\"f:capacity\":{\".\":{},\"f:cpu\":{},\"f:memory\":{},\"f:nvidia.com/gpu\":{},"
            "\"f:pods\":{}},\"f:conditions\":{\".\":{},\"k:{\\\"type\\\":\\\"Ready\\\"}\":{"
            "\".\":{},\"f:lastHeartbeatTime\":{},\"f:lastTransitionTime\":{},\"f:reason\":{},"
            "\"f:status\":{},\"f:type\":{}}}}}}]},\"spec\":{},\"status\":{\"capacity\":{\"cpu\":"
            "\"64\",\"memory\":\"512Gi\",\"nvidia.com/gpu\":\"8\",\"pods\":\"110\"},"
            "\"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\",\"nvidia.com/gpu\":\"8\","
            "\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
            "\"lastHeartbeatTime\":\"2026-11-23T23:58:28Z\",\"lastTransitionTime\":null,"
            "\"reason\":\"KubeletReady\"}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":0}},"
            "\"nodeInfo\":{\"machineID\":\"\",\"systemUUID\":\"\",\"bootID\":\"\","
            "\"kernelVersion\":\"\",\"osImage\":\"\",\"containerRuntimeVersion\":\"\","
            "\"kubeletVersion\":\"\",\"kubeProxyVersion\":\"\",\"operatingSystem\":\"\","
            "\"architecture\":\"\"}}}",
            i, i, i, i, i / 32);
}

static char *pod_json(const char *name, gboolean managed)
{
    return g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"u-%s\","
            "\"creationTimestamp\":\"2026-11-24T00:05:19Z\",\"annotations\":{%s}},"
            "\"spec\":{\"schedulerName\":\"default-scheduler\",\"containers\":[{\"name\":"
            "\"tensorflow\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"1\","
            "\"memory\":\"1Gi\"%s}}}],\"priority\":0},\"status\":{\"phase\":\"Pending\"}}",
            name, name, managed ? "\"scheduling.k8s.io/group-name\":\"bench\"" : "",
            managed ? ",\"nvidia.com/gpu\":\"4\"" : "");
}

/* {"Pod":..., "NodeNames": [...]} or {"Pod":..., "Nodes": {"items": [...]}}. */
static char *args_body(const char *pod, GPtrArray *names, GPtrArray *nodes, gboolean cache_capable)
{
    GString *s = g_string_sized_new(cache_capable ? 64 + 16 * names->len : 4096 * names->len);
    g_string_append_printf(s, "{\"Pod\":%s,", pod);
    if (cache_capable) {
        g_string_append(s, "\"Nodes\":null,\"NodeNames\":[");
        for (guint i = 0; i < names->len; i++)
            g_string_append_printf(s, "%s\"%s\"", i > 0 ? "," : "", (char *)names->pdata[i]);
        g_string_append(s, "]}");
    } else {
        g_string_append(s, "\"Nodes\":{\"metadata\":{},\"items\":[");
        for (guint i = 0; i < nodes->len; i++)
            g_string_append_printf(s, "%s%s", i > 0 ? "," : "", (char *)nodes->pdata[i]);
        g_string_append(s, "]},\"NodeNames\":null}");
    }
    return g_string_free(s, FALSE);
}

static double run(KbExtenderServer *srv, KbTestPki *pki, GPtrArray *filters, GPtrArray *prioritizes,
                  double seconds, guint64 *pairs)
{
    Run r = {.port = kb_extender_server_port(srv),
             .pki = pki,
             .filters = filters,
             .prioritizes = prioritizes,
             .seconds = seconds};
    GThread *t = g_thread_new("client", client, &r);
    while (!g_atomic_int_get(&r.done))
        g_main_context_iteration(NULL, TRUE);
    g_thread_join(t);
    if (r.failed) {
        g_printerr("bench-extender: a call failed\n");
        exit(1);
    }
    *pairs = r.pairs;
    return (double)r.pairs / r.elapsed;
}

/* The reservations' clock: the fixture's (reservations must not expire during the run). */
static gint64 bench_now(void)
{
    return 1000;
}

/* @pki: serve HTTPS verifying client certificates of its CA (NodeNames only), else plain HTTP. */
static void bench_size(guint n_nodes, double seconds, KbTestPki *pki)
{
    KbTestSched *fx = kb_test_sched_new(NULL);
    KbExtender *ext = kb_extender_new(fx->cache, fx->conf, 3600);
    KbExtenderServerOptions o = {.address = "127.0.0.1:0", .now_s = bench_now};
    if (pki != NULL) {
        o.tls_cert = kb_test_pki_path(pki, "server.pem");
        o.tls_key = kb_test_pki_path(pki, "server-key.pem");
        o.client_ca = kb_test_pki_path(pki, "ca.pem");
    }
    g_autoptr(GError) error = NULL;
    KbExtenderServer *srv = kb_extender_server_new(&o, ext, NULL, NULL, &error);
    g_assert_no_error(error);
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) nodes = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < n_nodes; i++) {
        char *n = node_json(i);
        kb_test_sched_add_node(fx, n);
        g_ptr_array_add(nodes, n);
        g_ptr_array_add(names, g_strdup_printf("node-%05u", i));
    }
    kb_test_sched_add_pod_group(
            fx, "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"bench\",\"namespace\":\"default\",\"uid\":\"pg\"},"
                "\"spec\":{\"minMember\":8}}");
    g_autoptr(GPtrArray) pods = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < GANG; i++) {
        g_autofree char *name = g_strdup_printf("w%u", i);
        char *p = pod_json(name, TRUE);
        kb_test_sched_put_pod(fx, kb_test_sched_parse(p));
        g_ptr_array_add(pods, p);
    }
    g_autofree char *web = pod_json("web", FALSE);
    /* Plan the gang once (the first filter call would): then each member's node is known. */
    {
        g_autofree char *b = args_body(pods->pdata[0], names, nodes, TRUE);
        g_autoptr(KbExtenderArgs) a = kb_extender_args_decode(b, strlen(b), NULL);
        KbExtenderFilter f;
        kb_extender_filter(ext, a, fx->now, &f);
        kb_extender_filter_clear(&f);
    }
    guint n_all = 0;
    KbNodeInfo *all = kb_cache_nodes(fx->cache, &n_all);
    GPtrArray *one_name[GANG], *one_node[GANG];
    for (guint k = 0; k < GANG; k++) {
        g_autofree char *name = g_strdup_printf("w%u", k);
        KbTaskInfo *t = kb_cache_lookup_task(fx->cache, "default", name);
        if (t == NULL || t->node_id < 0) {
            g_printerr("bench-extender: the gang was not planned\n");
            exit(1);
        }
        one_name[k] = g_ptr_array_new_with_free_func(g_free);
        one_node[k] = g_ptr_array_new_with_free_func(g_free);
        g_ptr_array_add(one_name[k], g_strdup(all[t->node_id].name));
        guint idx = (guint)atoi(all[t->node_id].name + strlen("node-"));
        g_ptr_array_add(one_node[k], g_strdup(nodes->pdata[idx]));
    }
    for (int mode = 1; mode >= (pki != NULL ? 1 : 0); mode--) {
        gboolean cache_capable = mode == 1;
        double rate[2];
        guint64 pairs[2];
        for (int managed = 0; managed < 2; managed++) {
            g_autoptr(GPtrArray) f = g_ptr_array_new_with_free_func(g_free);
            g_autoptr(GPtrArray) p = g_ptr_array_new_with_free_func(g_free);
            guint n = managed ? GANG : 1;
            for (guint k = 0; k < n; k++) {
                const char *pod = managed ? pods->pdata[k] : web;
                g_ptr_array_add(f, args_body(pod, names, nodes, cache_capable));
                /* prioritize gets what filter left: one node for a gang member; for the
                 * pass-through pod, every node. */
                g_ptr_array_add(p, managed ? args_body(pod, one_name[k], one_node[k], cache_capable)
                                           : args_body(pod, names, nodes, cache_capable));
            }
            rate[managed] = run(srv, pki, f, p, seconds, &pairs[managed]);
        }
        printf("%5u nodes, %-17s filter+prioritize pairs/s: gang member %9.1f, pass-through "
               "%9.1f (baseline), ratio %.2f  [%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
               " pairs]%s\n",
               n_nodes, cache_capable ? "NodeNames" : "NodeList (full)", rate[1], rate[0],
               rate[1] / rate[0], pairs[1], pairs[0],
               pki != NULL ? "  HTTPS, client certificate checked per call" : "");
        fflush(stdout);
    }
    for (guint k = 0; k < GANG; k++) {
        g_ptr_array_unref(one_name[k]);
        g_ptr_array_unref(one_node[k]);
    }
    kb_extender_server_free(srv);
    kb_extender_free(ext);
    kb_test_sched_free(fx);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? g_ascii_strtod(argv[1], NULL) : 1.5;
    if (seconds <= 0)
        seconds = 1.5;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    printf("bench-extender: kube-batchd's extender over HTTP, one keep-alive connection, "
           "%.1f s per row\n",
           seconds);
    bench_size(1000, seconds, NULL);
    g_autoptr(KbTestPki) pki = kb_test_pki_new();
    bench_size(1000, seconds, pki);
    bench_size(5000, seconds, NULL);
    curl_global_cleanup();
    return 0;
}
