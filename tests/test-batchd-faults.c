/*
 * bin/kube-batchd against bin/kb-apiserver under injected faults (--faults, POST /admin/faults)
 * and API server outages, as child processes: the invariants a cluster's users rely on.
 *
 * - Bindings failing 20-30% of the time in several ways (500, 503, 429, 404, 409, 403, answers
 *   that never come): no node ever holds more GPU pods than GPUs, no GPU index is given twice on
 *   a node, and once the faults stop every gang completes (none is left partly bound).
 * - A job whose bindings are refused (403) backs off: a handful of attempts, not a spin.
 * - An API server outage: /readyz says 503 while it is unreachable and 200 once it is back; new
 *   work is bound within seconds of its return.
 * - Pods that must not be bound: an unbound or missing PersistentVolumeClaim, schedulingGates;
 *   the PodGroup condition says why.
 * - PodGroup status: `running` counts running pods; phase Running once minMember pods run.
 * - Gangs that lose a member, with kb-kubelet running the pods: a gang on a node that is deleted
 *   or goes NotReady is evicted whole after its grace and a waiting gang starts on the GPUs; with
 *   kube-batchd.io/tolerate-partial nothing is evicted; a PodDisruptionBudget's refusal is
 *   retried, never bypassed, until the budget allows it.
 */
#include <curl/curl.h>
#include <gio/gio.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kube/kb-client.h"
#include "kube/kb-error.h"
#include "kube/kb-informer.h"
#include "scheduler/conf.h"
#include "testbed/apiserver/kas-json.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-util.h"

#define WAIT_MS 20000

static gboolean have_binaries(void)
{
    g_autofree char *api = g_build_filename(kb_test_bin_dir(), "kb-apiserver", NULL);
    g_autofree char *sched = g_build_filename(kb_test_bin_dir(), "kube-batchd", NULL);
    if (g_file_test(api, G_FILE_TEST_IS_EXECUTABLE) &&
        g_file_test(sched, G_FILE_TEST_IS_EXECUTABLE))
        return TRUE;
    g_test_skip("bin/kb-apiserver or bin/kube-batchd is not built");
    return FALSE;
}

/* ---- processes ----------------------------------------------------------------------------- */

typedef struct {
    KbTestDaemon *api;
    char *url;
    guint port;
    gboolean no_kubelet; /* pods stay Pending once bound; tests set their phase */
    gboolean native;     /* serves scheduling.k8s.io/v1beta1 (Kubernetes' own PodGroup) */
    KbClient *client;
} Cluster;

/* Start bin/kb-apiserver on @port (0: a free one) with --simulate-kubelet and @faults (may be
 * NULL). */
static void api_start(Cluster *cl, const char *faults)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *listen = g_strdup_printf("127.0.0.1:%u", cl->port);
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_ptr_array_add(args, "--listen");
    g_ptr_array_add(args, listen);
    if (!cl->no_kubelet)
        g_ptr_array_add(args, "--simulate-kubelet");
    if (faults != NULL) {
        g_ptr_array_add(args, "--faults");
        g_ptr_array_add(args, (gpointer)faults);
    }
    if (cl->native) {
        g_ptr_array_add(args, "--runtime-config");
        g_ptr_array_add(args, "scheduling.k8s.io/v1beta1=true");
    }
    g_ptr_array_add(args, NULL);
    KbTestDaemonOptions opts = {.stdout_pipe = TRUE, .log = TRUE};
    cl->api = kb_test_daemon_start("kb-apiserver", (const char *const *)args->pdata, &opts, &error);
    g_assert_no_error(error);
    g_autofree char *line = kb_test_daemon_wait_line(cl->api, "listening on ", 20000, &error);
    g_assert_no_error(error);
    g_strstrip(line);
    if (cl->url == NULL)
        cl->url = g_strdup(line);
    g_assert_cmpstr(cl->url, ==, line);
}

static Cluster *cluster_start_native(const char *faults, gboolean kubelet, gboolean native)
{
    g_autoptr(GError) error = NULL;
    Cluster *cl = g_new0(Cluster, 1);
    cl->no_kubelet = !kubelet;
    cl->native = native;
    cl->port = kb_test_free_port();
    api_start(cl, faults);
    g_autoptr(KbConfig) config = kb_config_new(cl->url);
    cl->client = kb_client_new(config, &error);
    g_assert_no_error(error);
    return cl;
}

static void cluster_free(Cluster *cl)
{
    if (cl == NULL)
        return;
    kb_client_free(cl->client);
    g_clear_pointer(&cl->api, kb_test_daemon_free);
    g_free(cl->url);
    g_free(cl);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Cluster, cluster_free)

static Cluster *cluster_start_full(const char *faults, gboolean kubelet)
{
    return cluster_start_native(faults, kubelet, FALSE);
}

static Cluster *cluster_start(const char *faults)
{
    return cluster_start_full(faults, TRUE);
}

typedef struct {
    KbTestDaemon *daemon;
    guint http_port;
} Child;

static void child_free(Child *c)
{
    if (c == NULL)
        return;
    kb_test_daemon_free(c->daemon);
    g_free(c);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Child, child_free)

/* bin/kube-batchd against @cl with --schedule-period 200ms and the extra arguments. */
static Child *daemon_start(Cluster *cl, ...)
{
    Child *c = g_new0(Child, 1);
    c->http_port = kb_test_free_port();
    va_list ap;
    va_start(ap, cl);
    c->daemon = kb_test_batchd_startv(cl->url, c->http_port, ap);
    va_end(ap);
    return c;
}

static void daemon_stop(Child *c)
{
    int status = kb_test_daemon_stop(c->daemon, 10000);
    if (status != 0) {
        g_autofree char *log = kb_test_daemon_log(c->daemon);
        g_printerr("%s", log);
    }
    g_assert_cmpint(status, ==, 0);
}

/* ---- HTTP ---------------------------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(user, data, (gssize)(size * n));
    return size * n;
}

/* @method @url with @body (may be NULL); the status (0 when unreachable), the body into @out. */
static long http_call(const char *method, const char *url, const char *body, char **out)
{
    GString *buf = g_string_new(NULL);
    long status = 0;
    CURL *curl = curl_easy_init();
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    if (body != NULL)
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, buf);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform(curl) == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);
    if (out != NULL)
        *out = g_string_free(buf, FALSE);
    else
        g_string_free(buf, TRUE);
    return status;
}

static long readyz(Child *d)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u/readyz", d->http_port);
    return http_call("GET", url, NULL, NULL);
}

/* Poll /readyz until it answers @want; FALSE after @ms. */
static gboolean wait_readyz(Child *d, long want, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    while (g_get_monotonic_time() < deadline) {
        if (readyz(d) == want)
            return TRUE;
        g_usleep(50000);
    }
    return FALSE;
}

static double metric(Child *d, const char *series)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u/metrics", d->http_port);
    g_autofree char *text = NULL;
    g_assert_cmpint(http_call("GET", url, NULL, &text), ==, 200);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    gsize n = strlen(series);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (strncmp(lines[i], series, n) == 0 && lines[i][n] == ' ')
            return g_ascii_strtod(lines[i] + n + 1, NULL);
    }
    return 0;
}

static void set_faults(Cluster *cl, const char *spec)
{
    g_autofree char *url = g_strdup_printf("%s/admin/faults", cl->url);
    g_assert_cmpint(http_call("POST", url, spec, NULL), ==, 200);
}

/* ---- objects ------------------------------------------------------------------------------- */

/* The Volcano CRDs (the dialect these tests use) and the default queue. */
static void install_crds(Cluster *cl)
{
    const char *const files[] = {"deploy/base/crds/podgroup-volcano.yaml",
                                 "deploy/base/crds/queue-volcano.yaml", NULL};
    kb_test_install_crds(cl->client, files, 5000);
}

static void add_node(Cluster *cl, const char *name, int gpus)
{
    kb_test_create_node(cl->client,
                        kb_test_json_printf("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{"
                                            "\"name\":\"%s\",\"labels\":{"
                                            "\"kubernetes.io/hostname\":\"%s\"}}}",
                                            name, name),
                        gpus);
}

static void add_group(Cluster *cl, const char *name, int min_member)
{
    kb_test_create_pod_group(cl->client, name, min_member);
}

/* A pod of @group asking @gpus GPUs; @extra_spec appended inside spec (or NULL). */
static void add_pod(Cluster *cl, const char *name, const char *group, int gpus,
                    const char *extra_spec)
{
    kb_test_create(
            cl->client, &kb_type_pods, "default",
            kb_test_json_printf(
                    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                    "\"namespace\":\"default\",\"annotations\":{"
                    "\"scheduling.k8s.io/group-name\":\"%s\"}},\"spec\":{\"schedulerName\":"
                    "\"kube-batchd\",\"containers\":[{\"name\":\"main\",\"image\":\"busybox\","
                    "\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"%d\"},"
                    "\"limits\":{\"nvidia.com/gpu\":\"%d\"}}}]%s}}",
                    name, group, gpus, gpus, extra_spec != NULL ? extra_spec : ""));
}

static json_object *list_pods(Cluster *cl)
{
    g_autoptr(GError) error = NULL;
    json_object *list = kb_client_list(cl->client, &kb_type_pods, "default", NULL, &error);
    g_assert_no_error(error);
    return list;
}

/* Pods whose name starts with @prefix that are bound. */
static guint count_bound(Cluster *cl, const char *prefix)
{
    json_object *list = list_pods(cl);
    json_object *items = json_object_object_get(list, "items");
    guint bound = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        if (g_str_has_prefix(kas_json_get_string(p, "metadata.name"), prefix) &&
            kas_json_get_string(p, "spec.nodeName") != NULL)
            bound++;
    }
    json_object_put(list);
    return bound;
}

static gboolean wait_bound(Cluster *cl, const char *prefix, guint n, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    for (;;) {
        if (count_bound(cl, prefix) >= n)
            return TRUE;
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(50000);
    }
}

static json_object *get_group(Cluster *cl, const char *name)
{
    g_autoptr(GError) error = NULL;
    json_object *g =
            kb_client_get(cl->client, &kb_type_pod_groups_volcano, "default", name, &error);
    g_assert_no_error(error);
    return g;
}

/* The group's first condition's message (newly allocated, "" when none). */
static char *group_message(Cluster *cl, const char *name)
{
    json_object *g = get_group(cl, name);
    json_object *conds = kas_json_get(g, "status.conditions");
    const char *msg = NULL;
    if (conds != NULL && json_object_is_type(conds, json_type_array) &&
        json_object_array_length(conds) > 0)
        msg = kas_json_get_string(json_object_array_get_idx(conds, 0), "message");
    char *out = g_strdup(msg != NULL ? msg : "");
    json_object_put(g);
    return out;
}

/* Poll until the group's condition message contains @needle; returns it (or the last one). */
static char *wait_message(Cluster *cl, const char *group, const char *needle, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    for (;;) {
        char *m = group_message(cl, group);
        if (strstr(m, needle) != NULL || g_get_monotonic_time() > deadline)
            return m;
        g_free(m);
        g_usleep(50000);
    }
}

/* ---- the invariant under binding faults ---------------------------------------------------- */

typedef struct {
    guint checks;
    guint max_gpus_seen; /* most GPUs held on one node */
} Invariant;

/*
 * Every node: the GPU requests of its bound, non-terminated pods fit its @gpus_per_node, and no
 * GPU index appears twice among their kube-batchd.io/gpu-ids; every bound GPU pod carries ids.
 */
static void check_invariant(Cluster *cl, int gpus_per_node, Invariant *inv)
{
    json_object *list = list_pods(cl);
    json_object *items = json_object_object_get(list, "items");
    g_autoptr(GHashTable) used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        const char *node = kas_json_get_string(p, "spec.nodeName");
        const char *phase = kas_json_get_string(p, "status.phase");
        if (node == NULL || g_strcmp0(phase, "Succeeded") == 0 || g_strcmp0(phase, "Failed") == 0)
            continue;
        const char *name = kas_json_get_string(p, "metadata.name");
        json_object *c = json_object_array_get_idx(kas_json_get(p, "spec.containers"), 0);
        json_object *r = kas_json_get(c, "resources.requests");
        json_object *v = r != NULL ? json_object_object_get(r, "nvidia.com/gpu") : NULL;
        int n = v != NULL ? atoi(json_object_get_string(v)) : 0;
        int total = GPOINTER_TO_INT(g_hash_table_lookup(used, node)) + n;
        g_hash_table_replace(used, g_strdup(node), GINT_TO_POINTER(total));
        inv->max_gpus_seen = MAX(inv->max_gpus_seen, (guint)total);
        if (total > gpus_per_node)
            g_error("node %s overcommitted: %d GPUs held by bound pods, %d allocatable (pod %s)",
                    node, total, gpus_per_node, name);
        json_object *ann = kas_json_get(p, "metadata.annotations");
        json_object *jv =
                ann != NULL ? json_object_object_get(ann, "kube-batchd.io/gpu-ids") : NULL;
        if (n > 0 && jv == NULL)
            g_error("pod %s bound to %s without kube-batchd.io/gpu-ids", name, node);
        if (jv == NULL)
            continue;
        g_auto(GStrv) parts = g_strsplit(json_object_get_string(jv), ",", -1);
        g_assert_cmpuint(g_strv_length(parts), ==, (guint)n);
        for (guint k = 0; parts[k] != NULL; k++) {
            char *key = g_strdup_printf("%s/%s", node, parts[k]);
            const char *holder = g_hash_table_lookup(ids, key);
            if (holder != NULL)
                g_error("GPU %s given twice: pods %s and %s", key, holder, name);
            g_hash_table_insert(ids, key, (gpointer)name);
        }
    }
    json_object_put(list);
    inv->checks++;
}

/* Gangs with some but not all of their pods bound ("g3: 2/4 "), NULL when none. */
static char *partial_gangs(Cluster *cl, guint n_gangs, guint size, guint *complete)
{
    GString *out = NULL;
    *complete = 0;
    for (guint g = 0; g < n_gangs; g++) {
        g_autofree char *prefix = g_strdup_printf("g%u-", g);
        guint b = count_bound(cl, prefix);
        *complete += b == size;
        if (b != 0 && b != size) {
            if (out == NULL)
                out = g_string_new(NULL);
            g_string_append_printf(out, "g%u: %u/%u ", g, b, size);
        }
    }
    return out != NULL ? g_string_free(out, FALSE) : NULL;
}

#define N_NODES 8
#define GPUS    8
#define N_GANGS 14
#define GANG    4

static void test_binding_faults_never_overcommit(void)
{
    if (!have_binaries())
        return;
    /* 20-30% of bindings fail, in every way a binding fails: outcome unknown (500, 503, 429, an
     * answer slower than the client waits: the binding happens, the scheduler never hears) and
     * certain (404, 409, 403). */
    const char *faults = "error=500,method=POST,path=*binding,fraction=0.06;"
                         "error=503,method=POST,path=*binding,fraction=0.04;"
                         "error=429,retry=1,method=POST,path=*binding,fraction=0.04;"
                         "error=404,method=POST,path=*binding,fraction=0.04;"
                         "error=409,method=POST,path=*binding,fraction=0.04;"
                         "error=403,method=POST,path=*binding,fraction=0.04;"
                         "latency=1500,method=POST,path=*binding,fraction=0.05";
    g_autoptr(Cluster) cl = cluster_start(faults);
    install_crds(cl);
    for (int i = 0; i < N_NODES; i++) {
        g_autofree char *name = g_strdup_printf("n%d", i);
        add_node(cl, name, GPUS);
    }
    /* 14 gangs of 4 pods of 1 or 2 GPUs: 72 GPUs asked of 64, so the last gangs wait for room
     * that never frees: a reservation leaked by a failed binding would be handed to them. Any
     * packing holds at least 12 gangs. */
    for (guint g = 0; g < N_GANGS; g++) {
        g_autofree char *group = g_strdup_printf("g%u", g);
        add_group(cl, group, GANG);
        for (guint k = 0; k < GANG; k++) {
            g_autofree char *name = g_strdup_printf("g%u-%u", g, k);
            add_pod(cl, name, group, g % 3 == 2 ? 2 : 1, NULL);
        }
    }
    g_autoptr(Child) d = daemon_start(cl, "--request-timeout", "1s", NULL);
    Invariant inv = {0};
    gint64 until = g_get_monotonic_time() + 6 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < until) {
        check_invariant(cl, GPUS, &inv);
        g_usleep(100000);
    }
    set_faults(cl, "");
    /* Faults over: every gang the cluster can hold completes, and none stays partly bound. The
     * wait outlasts the 120 s assume timeout, the longest a binding of unknown outcome may hold
     * its room on a loaded machine; it ends as soon as the gangs are whole. */
    gint64 deadline = g_get_monotonic_time() + 150 * G_USEC_PER_SEC;
    for (;;) {
        check_invariant(cl, GPUS, &inv);
        guint complete = 0;
        g_autofree char *partial = partial_gangs(cl, N_GANGS, GANG, &complete);
        g_test_message("complete gangs: %u (at least 12 fit); partly bound: %s", complete,
                       partial != NULL ? partial : "none");
        if ((complete >= 12 && partial == NULL) || g_get_monotonic_time() > deadline)
            break;
        g_usleep(250000);
    }
    /* Gangs not bound at all may wait (the cluster is full); none may be partly bound. */
    for (guint g = 0; g < N_GANGS; g++) {
        g_autofree char *prefix = g_strdup_printf("g%u-", g);
        guint b = count_bound(cl, prefix);
        if (b != 0 && b != GANG) {
            g_autofree char *log = kb_test_daemon_log(d->daemon);
            g_printerr("%s", log);
            g_error("gang g%u left partly bound: %u/%u pods", g, b, GANG);
        }
    }
    /* The GPU ids came with the bindings: kube-batchd never PATCHed a pod. */
    g_autofree char *stats_url = g_strdup_printf("%s/admin/stats", cl->url);
    g_autofree char *stats = NULL;
    g_assert_cmpint(http_call("GET", stats_url, NULL, &stats), ==, 200);
    g_test_message("kb-apiserver: %s", stats);
    g_assert_null(strstr(stats, "\"PATCH pods\""));
    g_assert_nonnull(strstr(stats, "\"POST pods/binding\""));
    g_assert_cmpuint(inv.max_gpus_seen, <=, GPUS);
    g_assert_cmpuint(inv.max_gpus_seen, >, 0);
    g_assert_cmpuint(count_bound(cl, "g"), >=, 12 * GANG);
    g_test_message("%u invariant checks; retries %g, refused %g, not found %g, conflicts %g",
                   inv.checks, metric(d, "kube_batchd_bind_retries_total"),
                   metric(d, "kube_batchd_binds_total{result=\"refused\"}"),
                   metric(d, "kube_batchd_binds_total{result=\"not_found\"}"),
                   metric(d, "kube_batchd_binds_total{result=\"conflict\"}"));
    daemon_stop(d);
}

/* Bindings refused (403) for one job: it backs off (1 s, 2 s, 4 s, ...) instead of spinning, and
 * its condition says why; another job binds meanwhile; the refusal lifted, it binds. */
static void test_refused_job_backs_off(void)
{
    if (!have_binaries())
        return;
    g_autoptr(Cluster) cl = cluster_start(
            "error=403,method=POST,path=/api/v1/namespaces/default/pods/bad-*/binding");
    install_crds(cl);
    add_node(cl, "n1", 8);
    add_group(cl, "bad", 2);
    add_pod(cl, "bad-0", "bad", 1, NULL);
    add_pod(cl, "bad-1", "bad", 1, NULL);
    add_group(cl, "good", 2);
    add_pod(cl, "good-0", "good", 1, NULL);
    add_pod(cl, "good-1", "good", 1, NULL);
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_assert_true(wait_bound(cl, "good-", 2, WAIT_MS));
    g_autofree char *msg = wait_message(cl, "bad", "binding refused", WAIT_MS);
    g_test_message("condition: %s", msg);
    g_assert_nonnull(strstr(msg, "binding refused"));
    g_assert_nonnull(strstr(msg, "403"));
    /* Six seconds of refusals: backoff 1+2+4 s allows about four rounds of two pods; a spin at
     * the cycle rate (every 200 ms or faster) would make dozens. */
    g_usleep(6 * G_USEC_PER_SEC);
    double refused = metric(d, "kube_batchd_binds_total{result=\"refused\"}");
    g_test_message("refused bindings over ~6 s: %g", refused);
    g_assert_cmpfloat(refused, >=, 2);
    g_assert_cmpfloat(refused, <=, 12);
    g_assert_cmpuint(count_bound(cl, "bad-"), ==, 0);
    set_faults(cl, "");
    g_assert_true(wait_bound(cl, "bad-", 2, 90000));
    daemon_stop(d);
}

/* The API server goes away for a while (every watch closed, every request answered 503, as a
 * load balancer in front of a restarting server does), then comes back: /readyz says 503
 * meanwhile and 200 after; informers retried every few seconds at most, so new work created
 * during the outage is bound soon after the return. */
static void test_outage_readyz_and_backoff(void)
{
    if (!have_binaries())
        return;
    g_autoptr(Cluster) cl = cluster_start(NULL);
    install_crds(cl);
    add_node(cl, "n1", 8);
    add_group(cl, "before", 2);
    add_pod(cl, "before-0", "before", 1, NULL);
    add_pod(cl, "before-1", "before", 1, NULL);
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_assert_true(wait_bound(cl, "before-", 2, WAIT_MS));
    g_assert_true(wait_readyz(d, 200, WAIT_MS));

    /* Faults match methods and paths, not clients: the test writes outside the outage. */
    add_group(cl, "after", 2);
    set_faults(cl, "restart;error=503,path=/api*;error=503,path=/apis*;error=503,path=/version");
    g_assert_true(wait_readyz(d, 503, WAIT_MS));
    /* Long enough for an uncapped backoff (0.8 s doubling) to pass 6 s between tries. */
    g_usleep(14 * G_USEC_PER_SEC);
    g_assert_cmpint(readyz(d), ==, 503);
    set_faults(cl, "");
    add_pod(cl, "after-0", "after", 1, NULL);
    add_pod(cl, "after-1", "after", 1, NULL);
    g_assert_true(wait_readyz(d, 200, WAIT_MS));
    g_assert_true(wait_bound(cl, "after-", 2, WAIT_MS));
    double delay = metric(d, "kube_batchd_informer_max_retry_delay_seconds{informer=\"pods\"}");
    g_test_message("longest informer retry delay: %.2f s", delay);
    g_assert_cmpfloat(delay, >, 0);
    g_assert_cmpfloat(delay, <=, 1.2 * KB_INFORMER_DEFAULT_BACKOFF_MAX_MS / 1000.0);
    daemon_stop(d);
}

static void add_pvc(Cluster *cl, const char *name, const char *phase)
{
    kb_test_create(cl->client, &kb_type_pvcs, "default",
                   kb_test_json_printf(
                           "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\","
                           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{"
                           "\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":{"
                           "\"storage\":\"1Gi\"}}}}",
                           name));
    g_autoptr(GError) error = NULL;
    g_autofree char *patch = g_strdup_printf("{\"status\":{\"phase\":\"%s\"}}", phase);
    json_object *r = kb_client_patch(cl->client, &kb_type_pvcs, "default", name, "status",
                                     KB_PATCH_MERGE, patch, &error);
    g_assert_no_error(error);
    json_object_put(r);
}

static void set_pvc_phase(Cluster *cl, const char *name, const char *phase)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *patch = g_strdup_printf("{\"status\":{\"phase\":\"%s\"}}", phase);
    json_object *r = kb_client_patch(cl->client, &kb_type_pvcs, "default", name, "status",
                                     KB_PATCH_MERGE, patch, &error);
    g_assert_no_error(error);
    json_object_put(r);
}

/* A pod whose claim is missing, then Pending, is not bound and its gang waits (the condition
 * names the claim); once the claim is Bound the gang binds. */
static void test_volume_claims(void)
{
    if (!have_binaries())
        return;
    g_autoptr(Cluster) cl = cluster_start(NULL);
    install_crds(cl);
    add_node(cl, "n1", 8);
    add_group(cl, "vol", 2);
    add_pod(cl, "vol-0", "vol", 1,
            ",\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":"
            "\"ckpt\"}}]");
    add_pod(cl, "vol-1", "vol", 1, NULL);
    add_group(cl, "free", 1);
    add_pod(cl, "free-0", "free", 1, NULL);
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_assert_true(wait_bound(cl, "free-", 1, WAIT_MS));
    g_autofree char *m1 = wait_message(cl, "vol", "not found", WAIT_MS);
    g_assert_cmpstr(m1, ==,
                    "1/2 pods may be bound: pod default/vol-0: persistentvolumeclaim "
                    "\"default/ckpt\" not found");
    add_pvc(cl, "ckpt", "Pending");
    g_autofree char *m2 = wait_message(cl, "vol", "not bound", WAIT_MS);
    g_assert_cmpstr(m2, ==,
                    "1/2 pods may be bound: pod default/vol-0: persistentvolumeclaim "
                    "\"default/ckpt\" is not bound (phase Pending)");
    g_assert_cmpuint(count_bound(cl, "vol-"), ==, 0);
    set_pvc_phase(cl, "ckpt", "Bound");
    g_assert_true(wait_bound(cl, "vol-", 2, WAIT_MS));
    daemon_stop(d);
}

/* A pod with schedulingGates is never bound; its gang waits with the gate named; once the gate
 * is removed the gang binds. */
static void test_scheduling_gates(void)
{
    if (!have_binaries())
        return;
    g_autoptr(Cluster) cl = cluster_start(NULL);
    install_crds(cl);
    add_node(cl, "n1", 8);
    add_group(cl, "gated", 2);
    add_pod(cl, "gated-0", "gated", 1, ",\"schedulingGates\":[{\"name\":\"example.com/quota\"}]");
    add_pod(cl, "gated-1", "gated", 1, NULL);
    add_group(cl, "solo", 1);
    add_pod(cl, "solo-0", "solo", 1, ",\"schedulingGates\":[{\"name\":\"a\"},{\"name\":\"b\"}]");
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_autofree char *m = wait_message(cl, "gated", "scheduling gate", WAIT_MS);
    g_assert_cmpstr(m, ==,
                    "1/2 pods may be bound: pod default/gated-0 has 1 scheduling gate (first: "
                    "\"example.com/quota\"): it is not scheduled until they are removed");
    g_autofree char *m2 = wait_message(cl, "solo", "scheduling gates", WAIT_MS);
    g_assert_nonnull(strstr(m2, "has 2 scheduling gates (first: \"a\")"));
    g_usleep(600000); /* a few more cycles */
    g_assert_cmpuint(count_bound(cl, "gated-"), ==, 0);
    g_assert_cmpuint(count_bound(cl, "solo-"), ==, 0);
    /* The gate lifted (as Kueue does on admission). */
    g_autoptr(GError) error = NULL;
    json_object *r =
            kb_client_patch(cl->client, &kb_type_pods, "default", "gated-0", NULL, KB_PATCH_MERGE,
                            "{\"spec\":{\"schedulingGates\":null}}", &error);
    g_assert_no_error(error);
    json_object_put(r);
    g_assert_true(wait_bound(cl, "gated-", 2, WAIT_MS));
    g_assert_cmpuint(count_bound(cl, "solo-"), ==, 0);
    daemon_stop(d);
}

static void set_pod_phase(Cluster *cl, const char *name, const char *phase)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *patch = g_strdup_printf("{\"status\":{\"phase\":\"%s\"}}", phase);
    json_object *r = kb_client_patch(cl->client, &kb_type_pods, "default", name, "status",
                                     KB_PATCH_MERGE, patch, &error);
    g_assert_no_error(error);
    json_object_put(r);
}

/* Poll until the group's status.phase is @phase and status.running is @running. */
static gboolean wait_group(Cluster *cl, const char *name, const char *phase, int running, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    for (;;) {
        json_object *g = get_group(cl, name);
        const char *p = kas_json_get_string(g, "status.phase");
        json_object *r = kas_json_get(g, "status.running");
        gboolean ok = g_strcmp0(p, phase) == 0 && r != NULL && json_object_get_int(r) == running;
        if (!ok && g_get_monotonic_time() > deadline)
            g_test_message("group %s: phase %s, running %s", name, p != NULL ? p : "(none)",
                           r != NULL ? json_object_get_string(r) : "(none)");
        json_object_put(g);
        if (ok)
            return TRUE;
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(50000);
    }
}

/* Bound is not running: the group is Inqueue with running 0 until its pods run; running counts
 * the pods whose phase is Running; phase Running once minMember (3 of 4) run. */
static void test_podgroup_running_counts(void)
{
    if (!have_binaries())
        return;
    g_autoptr(Cluster) cl = cluster_start_full(NULL, FALSE);
    install_crds(cl);
    add_node(cl, "n1", 8);
    add_group(cl, "tf", 3);
    for (int i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("tf-%d", i);
        add_pod(cl, name, "tf", 1, NULL);
    }
    g_autoptr(Child) d = daemon_start(cl, NULL);
    g_assert_true(wait_bound(cl, "tf-", 4, WAIT_MS));
    g_assert_true(wait_group(cl, "tf", "Inqueue", 0, WAIT_MS));
    set_pod_phase(cl, "tf-0", "Running");
    set_pod_phase(cl, "tf-1", "Running");
    g_assert_true(wait_group(cl, "tf", "Inqueue", 2, WAIT_MS));
    set_pod_phase(cl, "tf-2", "Running");
    g_assert_true(wait_group(cl, "tf", "Running", 3, WAIT_MS));
    set_pod_phase(cl, "tf-3", "Running");
    g_assert_true(wait_group(cl, "tf", "Running", 4, WAIT_MS));
    daemon_stop(d);
}

/* ---- gangs that lose a member ---------------------------------------------------------------- */

#define STALE_GRACE 4 /* seconds: the PodGroup annotation's grace */

/* bin/kb-kubelet for the nodes "NAME-{i}" (@count of them, 2 GPUs each), in directory @dir. */
static KbTestDaemon *kubelet_start(Cluster *cl, const char *dir, const char *name, int count)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *file = g_strdup_printf("%s/%s.yaml", dir, name);
    g_autofree char *yaml = g_strdup_printf("nodes:\n- count: %d\n  name: \"%s-{i}\"\n"
                                            "  allocatable: {cpu: 8, memory: 32Gi, pods: 110, "
                                            "nvidia.com/gpu: 2}\n",
                                            count, name);
    g_assert_true(g_file_set_contents(file, yaml, -1, &error));
    const char *args[] = {"--master",
                          cl->url,
                          "--nodes",
                          file,
                          "--start-delay",
                          "50",
                          "--stop-delay",
                          "50",
                          "--heartbeat-interval",
                          "200",
                          NULL};
    KbTestDaemonOptions o = {.stdout_pipe = TRUE, .log = TRUE};
    KbTestDaemon *k = kb_test_daemon_start("kb-kubelet", args, &o, &error);
    g_assert_no_error(error);
    g_autofree char *line = kb_test_daemon_wait_line(k, "registered ", WAIT_MS, &error);
    g_assert_no_error(error);
    return k;
}

/* A gang "NAME" of @n pods of 2 GPUs (label app=NAME) and its PodGroup (minMember @n) with
 * annotation members @annotations. */
static void add_labelled_gang_in(Cluster *cl, const char *name, int n, const char *annotations,
                                 gboolean native)
{
    g_autofree char *member =
            native ? g_strdup_printf(",\"schedulingGroup\":{\"podGroupName\":\"%s\"}", name)
                   : g_strdup("");
    if (native)
        kb_test_create(
                cl->client, &kb_type_pod_groups_native, "default",
                kb_test_json_printf("{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":"
                                    "\"PodGroup\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
                                    "\"default\",\"annotations\":{%s}},\"spec\":{"
                                    "\"schedulingPolicy\":{\"gang\":{\"minCount\":%d}}}}",
                                    name, annotations, n));
    else
        kb_test_create(cl->client, &kb_type_pod_groups_volcano, "default",
                       kb_test_json_printf("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\","
                                           "\"kind\":\"PodGroup\",\"metadata\":{\"name\":"
                                           "\"%s\",\"namespace\":\"default\",\"annotations\":"
                                           "{%s}},\"spec\":{\"minMember\":%d}}",
                                           name, annotations, n));
    for (int i = 0; i < n; i++)
        kb_test_create(
                cl->client, &kb_type_pods, "default",
                kb_test_json_printf(
                        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-%d\","
                        "\"namespace\":\"default\",\"labels\":{\"app\":\"%s\"},\"annotations\":{"
                        "\"scheduling.k8s.io/group-name\":\"%s\"}},\"spec\":{\"schedulerName\":"
                        "\"kube-batchd\",\"containers\":[{\"name\":\"main\",\"image\":\"busybox\","
                        "\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"2\"},"
                        "\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]%s}}",
                        name, i, name, name, member));
}

static void add_labelled_gang(Cluster *cl, const char *name, int n, const char *annotations)
{
    add_labelled_gang_in(cl, name, n, annotations, FALSE);
}

/* Pods of @prefix that are Running and not being deleted; the node of one of them into @node
 * when it is on a node whose name starts with @node_prefix (may be NULL). */
static guint count_running(Cluster *cl, const char *prefix, const char *node_prefix, char **node)
{
    json_object *list = list_pods(cl);
    json_object *items = json_object_object_get(list, "items");
    guint n = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        const char *where = kas_json_get_string(p, "spec.nodeName");
        if (!g_str_has_prefix(kas_json_get_string(p, "metadata.name"), prefix) ||
            kas_json_get(p, "metadata.deletionTimestamp") != NULL ||
            g_strcmp0(kas_json_get_string(p, "status.phase"), "Running") != 0)
            continue;
        n++;
        if (node != NULL && node_prefix != NULL && g_str_has_prefix(where, node_prefix)) {
            g_free(*node);
            *node = g_strdup(where);
        }
    }
    json_object_put(list);
    return n;
}

static gboolean wait_running(Cluster *cl, const char *prefix, guint n, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    while (count_running(cl, prefix, NULL, NULL) != n) {
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(50000);
    }
    return TRUE;
}

/* The group's GangIncomplete condition: reason and message (newly allocated), FALSE when none
 * or when its status is not True. A native group (Kubernetes' own PodGroup, read at v1beta1) must
 * carry it as metav1.Condition does: observedGeneration and lastTransitionTime. */
static gboolean incomplete_condition(Cluster *cl, const char *group, char **reason, char **message)
{
    g_autoptr(GError) error = NULL;
    json_object *g = cl->native ? kb_client_get(cl->client, &kb_type_pod_groups_native, "default",
                                                group, &error)
                                : get_group(cl, group);
    g_assert_no_error(error);
    json_object *conds = kas_json_get(g, "status.conditions");
    gboolean found = FALSE;
    for (size_t i = 0; conds != NULL && json_object_is_type(conds, json_type_array) &&
                       i < json_object_array_length(conds);
         i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (g_strcmp0(kas_json_get_string(c, "type"), KB_GANG_INCOMPLETE) != 0 ||
            g_strcmp0(kas_json_get_string(c, "status"), "True") != 0)
            continue;
        if (cl->native) {
            json_object *gen = kas_json_get(c, "observedGeneration");
            g_assert_nonnull(gen);
            g_assert_cmpint(json_object_get_int64(gen), ==,
                            json_object_get_int64(kas_json_get(g, "metadata.generation")));
            g_assert_nonnull(kas_json_get_string(c, "lastTransitionTime"));
        }
        found = TRUE;
        *reason = g_strdup(kas_json_get_string(c, "reason"));
        *message = g_strdup(kas_json_get_string(c, "message"));
    }
    json_object_put(g);
    return found;
}

/* Poll until the group's GangIncomplete condition has @want_reason; its message (newly
 * allocated), NULL after @ms. */
static char *wait_incomplete(Cluster *cl, const char *group, const char *want_reason, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    for (;;) {
        g_autofree char *reason = NULL;
        char *message = NULL;
        if (incomplete_condition(cl, group, &reason, &message) &&
            g_strcmp0(reason, want_reason) == 0)
            return message;
        g_free(message);
        if (g_get_monotonic_time() > deadline)
            return NULL;
        g_usleep(50000);
    }
}

typedef enum { LOSE_DELETE, LOSE_NOT_READY } Loss;

/* The machine of node @name is gone: its kubelet stops; the Node is deleted, or marked as the
 * node lifecycle controller marks a node whose heartbeats stopped. */
static void lose_node(Cluster *cl, KbTestDaemon *kubelet, const char *name, Loss how)
{
    g_assert_cmpint(kb_test_daemon_stop(kubelet, 10000), ==, 0);
    g_autoptr(GError) error = NULL;
    if (how == LOSE_DELETE) {
        g_assert_true(kb_client_delete(cl->client, &kb_type_nodes, NULL, name, NULL, &error));
        g_assert_no_error(error);
        return;
    }
    json_object *r =
            kb_client_patch(cl->client, &kb_type_nodes, NULL, name, "status", KB_PATCH_MERGE,
                            "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
                            "\"Unknown\",\"reason\":\"NodeStatusUnknown\",\"message\":"
                            "\"Kubelet stopped posting node status.\"}]}}",
                            &error);
    g_assert_no_error(error);
    json_object_put(r);
}

/* The scheduler configuration of these tests: the default with nodeLostAfter 1s. */
static char *stale_conf(const char *dir)
{
    g_autoptr(GError) error = NULL;
    char *path = g_strdup_printf("%s/scheduler.conf", dir);
    g_autofree char *text = g_strdup_printf("nodeLostAfter: 1s\n%s", kb_conf_default_yaml());
    g_assert_true(g_file_set_contents(path, text, -1, &error));
    return path;
}

typedef struct {
    const char *path;
    Loss loss;
    gboolean tolerate;
    gboolean native; /* the gang is a scheduling.k8s.io/v1beta1 PodGroup */
} StaleCase;

/*
 * A full cluster: gang "tf" (4 x 2 GPUs) on 4 nodes of 2 GPUs, the fourth run by a kubelet of its
 * own; gang "next" (3 x 2 GPUs) waits. The fourth machine goes. The loss is reported at once, the
 * other 3 pods run through the grace, then are evicted and "next" starts on their GPUs; with
 * kube-batchd.io/tolerate-partial they keep running and "next" waits.
 */
static void test_stale_gang(gconstpointer data)
{
    const StaleCase *tc = data;
    if (!have_binaries())
        return;
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("kb-stale-XXXXXX", &error);
    g_assert_no_error(error);
    g_autoptr(Cluster) cl = cluster_start_native(NULL, FALSE, tc->native);
    install_crds(cl);
    g_autoptr(KbTestDaemon) keep = kubelet_start(cl, dir, "keep", 3);
    g_autoptr(KbTestDaemon) lost = kubelet_start(cl, dir, "lost", 1);
    g_autofree char *ann =
            g_strdup_printf("\"kube-batchd.io/stale-gang-grace\":\"%ds\"%s", STALE_GRACE,
                            tc->tolerate ? ",\"kube-batchd.io/tolerate-partial\":\"true\"" : "");
    add_labelled_gang_in(cl, "tf", 4, ann, tc->native);
    g_autofree char *conf = stale_conf(dir);
    g_autoptr(Child) d = daemon_start(cl, "--scheduler-conf", conf, NULL);
    g_assert_true(wait_running(cl, "tf-", 4, WAIT_MS));
    add_labelled_gang(cl, "next", 3, "");
    g_autofree char *on_lost = NULL;
    count_running(cl, "tf-", "lost-", &on_lost);
    g_assert_cmpstr(on_lost, ==, "lost-0");

    lose_node(cl, lost, "lost-0", tc->loss);
    g_autofree char *lost_msg = wait_incomplete(cl, "tf", "MemberLost", WAIT_MS);
    if (lost_msg == NULL) {
        json_object *g = cl->native ? NULL : get_group(cl, "tf");
        g_autofree char *log = kb_test_daemon_log(d->daemon);
        g_autoptr(GError) e2 = NULL;
        json_object *nodes = kb_client_list(cl->client, &kb_type_nodes, NULL, NULL, &e2);
        json_object *pods = list_pods(cl);
        g_printerr("group: %s\nnodes: %s\npods: %s\nlog:\n%s\n", json_object_to_json_string(g),
                   json_object_to_json_string(nodes), json_object_to_json_string(pods), log);
        json_object_put(g);
    }
    g_assert_nonnull(lost_msg);
    /* Reported at once; the other members run through the grace. */
    g_assert_cmpuint(count_running(cl, "tf-", NULL, NULL), >=, 3);
    g_assert_nonnull(strstr(lost_msg, "on a lost node (node lost-0 "));
    g_assert_nonnull(strstr(lost_msg, "3/4 members healthy"));
    if (tc->tolerate) {
        g_assert_nonnull(strstr(lost_msg, "left partly running"));
        g_assert_cmpfloat(metric(d, "kube_batchd_incomplete_gangs{reason=\"MemberLost\"}"), ==, 1);
        /* Well past the grace: nothing evicted, "next" still waits. */
        g_usleep((STALE_GRACE + 3) * G_USEC_PER_SEC);
        g_assert_cmpuint(count_running(cl, "tf-", "keep-", NULL), >=, 3);
        g_assert_cmpuint(count_bound(cl, "next-"), ==, 0);
        g_assert_cmpfloat(metric(d, "kube_batchd_evictions_total{reason=\"GangIncomplete\"}"), ==,
                          0);
        daemon_stop(d);
        return;
    }
    /* Within the grace plus a few seconds: evicted, said why, and "next" runs on the GPUs. */
    g_autofree char *evicted_msg =
            wait_incomplete(cl, "tf", "GangEvicted", (STALE_GRACE + 10) * 1000);
    g_assert_nonnull(evicted_msg);
    g_assert_nonnull(strstr(evicted_msg, "lost-0"));
    g_assert_nonnull(strstr(evicted_msg, "evicting the rest of the gang"));
    g_assert_true(wait_running(cl, "next-", 3, WAIT_MS));
    g_assert_cmpuint(count_running(cl, "tf-", NULL, NULL), ==, 0);
    g_assert_cmpfloat(metric(d, "kube_batchd_evictions_total{reason=\"GangIncomplete\"}"), >=, 3);
    daemon_stop(d);
    g_assert_cmpint(kb_test_daemon_stop(keep, 10000), ==, 0);
}

/* PodDisruptionBudget @name over app=@app allowing @allowed disruptions (status as a disruption
 * controller writes it). */
static void put_pdb(Cluster *cl, const char *app, int allowed, gboolean create)
{
    g_autoptr(GError) error = NULL;
    if (create) {
        json_object *body = kb_test_json_printf(
                "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{"
                "\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{\"minAvailable\":4,"
                "\"selector\":{\"matchLabels\":{\"app\":\"%s\"}}}}",
                app, app);
        KbRequest req = {.method = "POST",
                         .path = "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
                         .body = body};
        json_object *r = kb_client_call(cl->client, &req, NULL, &error);
        g_assert_no_error(error);
        json_object_put(r);
        json_object_put(body);
    }
    json_object *st = kb_test_json_printf(
            "{\"status\":{\"observedGeneration\":1,\"disruptionsAllowed\":%d,\"currentHealthy\":4,"
            "\"desiredHealthy\":4,\"expectedPods\":4}}",
            allowed);
    g_autofree char *path = g_strdup_printf(
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets/%s/status", app);
    KbRequest req = {.method = "PATCH",
                     .path = path,
                     .body = st,
                     .content_type = "application/merge-patch+json"};
    json_object *r = kb_client_call(cl->client, &req, NULL, &error);
    g_assert_no_error(error);
    json_object_put(r);
    json_object_put(st);
}

/* A PodDisruptionBudget refuses the evictions (429): retried with backoff, never bypassed; the
 * members run until the budget allows them to go. */
static void test_stale_gang_pdb(void)
{
    if (!have_binaries())
        return;
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("kb-stale-XXXXXX", &error);
    g_assert_no_error(error);
    g_autoptr(Cluster) cl = cluster_start_full(NULL, FALSE);
    install_crds(cl);
    g_autoptr(KbTestDaemon) keep = kubelet_start(cl, dir, "keep", 3);
    g_autoptr(KbTestDaemon) lost = kubelet_start(cl, dir, "lost", 1);
    add_labelled_gang(cl, "tf", 4, "\"kube-batchd.io/stale-gang-grace\":\"1s\"");
    put_pdb(cl, "tf", 0, TRUE);
    g_autofree char *conf = stale_conf(dir);
    g_autoptr(Child) d = daemon_start(cl, "--scheduler-conf", conf, NULL);
    g_assert_true(wait_running(cl, "tf-", 4, WAIT_MS));
    lose_node(cl, lost, "lost-0", LOSE_DELETE);
    /* Refused, and tried again. */
    const char *failures = "kube_batchd_eviction_failures_total{reason=\"GangIncomplete\"}";
    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    while (metric(d, failures) < 6 && g_get_monotonic_time() < deadline)
        g_usleep(100000);
    g_assert_cmpfloat(metric(d, failures), >=, 6);
    g_assert_cmpuint(count_running(cl, "tf-", "keep-", NULL), >=, 3);
    g_autofree char *msg = wait_incomplete(cl, "tf", "GangEvicted", WAIT_MS);
    g_assert_nonnull(msg);
    /* The budget allows it: the next round evicts them. */
    put_pdb(cl, "tf", 4, FALSE);
    g_assert_true(wait_running(cl, "tf-", 0, 40000));
    daemon_stop(d);
    g_assert_cmpint(kb_test_daemon_stop(keep, 10000), ==, 0);
}

static const StaleCase stale_cases[] = {
        {"/batchd/stale-gang/node-deleted-evicted-next-starts", LOSE_DELETE, FALSE},
        {"/batchd/stale-gang/node-not-ready-evicted-next-starts", LOSE_NOT_READY, FALSE},
        {"/batchd/stale-gang/node-deleted-tolerated", LOSE_DELETE, TRUE},
        {"/batchd/stale-gang/native-node-deleted-evicted-next-starts", LOSE_DELETE, FALSE, TRUE},
        {"/batchd/stale-gang/native-node-not-ready-tolerated", LOSE_NOT_READY, TRUE, TRUE},
};

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    g_test_add_func("/batchd/faults/binding-failures-never-overcommit",
                    test_binding_faults_never_overcommit);
    g_test_add_func("/batchd/faults/refused-job-backs-off", test_refused_job_backs_off);
    g_test_add_func("/batchd/faults/outage-readyz-and-capped-backoff",
                    test_outage_readyz_and_backoff);
    g_test_add_func("/batchd/predicates/volume-claims-bound-first", test_volume_claims);
    g_test_add_func("/batchd/predicates/scheduling-gates-hold", test_scheduling_gates);
    g_test_add_func("/batchd/status/podgroup-running-counts", test_podgroup_running_counts);
    for (guint i = 0; i < G_N_ELEMENTS(stale_cases); i++)
        g_test_add_data_func(stale_cases[i].path, &stale_cases[i], test_stale_gang);
    g_test_add_func("/batchd/stale-gang/pdb-refusal-retried-not-bypassed", test_stale_gang_pdb);
    int rc = g_test_run();
    curl_global_cleanup();
    return rc;
}
