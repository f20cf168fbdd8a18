/*
 * Extender latency with the real kube-scheduler: the time from the creation of a gang's last
 * member to the whole gang bound, for gangs created pod by pod as controllers create them.
 *
 * Two servers: bin/kb-apiserver (simulated kubelets) and, when $KB_K8S_BIN also holds
 * kube-apiserver (and etcd is found), a real kube-apiserver with deploy/base/rbac.yaml applied,
 * kube-batchd as its ServiceAccount and bin/kb-kubelet running the nodes. Four free 8-GPU nodes,
 * bin/kube-batchd with --extender-address, and $KB_K8S_BIN/kube-scheduler configured as
 * docs/extender.md says (a profile whose
 * extender is kube-batchd: filter, prioritize, preempt, bind; nodeCacheCapable; managedResources
 * nvidia.com/gpu; not ignorable). Each gang is a PodGroup of 4 pods x 4 GPUs; its first three
 * members are created one by one, each after kube-scheduler has tried the previous one and
 * parked it (PodScheduled=False), then the last; the clock runs from the last creation until
 * every member has spec.nodeName. The gang is then deleted and the next one created.
 *
 * Two rows from one run: kube-batchd as shipped (the parked members are annotated once the plan
 * exists) and with --extender-no-requeue (the behaviour before: the parked members wait for
 * kube-scheduler's own flush of its unschedulable queue).
 *
 *   bench-extender-gang [GANGS, default 10] [GANGS without the requeue, default 2]
 *
 * Skipped, saying so, when $KB_K8S_BIN holds no kube-scheduler. Prints figures only.
 */
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kube/kb-client.h"
#include "scheduler/cache.h"
#include "testbed/apiserver/kas-json.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-cluster.h"
#include "tests/lib/kb-test-util.h"

#define GANG       4
#define PARK_MS    30000
#define BOUND_MS   180000
#define POLL_US    20000
#define ISSUE_SECS 72.0 /* what the issue measured before the change */

typedef struct {
    KbTestApiserver *api;   /* kb-apiserver, or */
    KbTestCluster *cluster; /* a real kube-apiserver */
    KbTestDaemon *kubelet;  /* bin/kb-kubelet, on the real server */
    const char *url;
    KbClient *client;
    KbTestDaemon *batchd;
    GPid scheduler;
    char *tmp;
    char *log_path;
} Cluster;

static json_object *get_pod(Cluster *cl, const char *name)
{
    g_autoptr(GError) error = NULL;
    return kb_client_get(cl->client, &kb_type_pods, "default", name, &error);
}

static void add_pod(Cluster *cl, const char *name, const char *group)
{
    kb_test_create(cl->client, &kb_type_pods, "default",
                   kb_test_json_printf(
                           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                           "\"namespace\":\"default\",\"annotations\":{\"scheduling.k8s.io/"
                           "group-name\":\"%s\"}},\"spec\":{\"schedulerName\":\"kb-ext\","
                           "\"terminationGracePeriodSeconds\":0,\"containers\":[{\"name\":"
                           "\"tensorflow\",\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":"
                           "\"1\",\"nvidia.com/gpu\":\"4\"},\"limits\":{\"nvidia.com/gpu\":"
                           "\"4\"}}}]}}",
                           name, group));
}

/* Until @wait_ms: has kube-scheduler tried @name and parked it (PodScheduled=False)? */
static gboolean wait_parked(Cluster *cl, const char *name, guint wait_ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)wait_ms * 1000;
    while (g_get_monotonic_time() < deadline) {
        json_object *pod = get_pod(cl, name);
        gboolean parked = kb_test_pod_parked(pod);
        json_object_put(pod);
        if (parked)
            return TRUE;
        g_usleep(POLL_US);
    }
    return FALSE;
}

static guint bound_members(Cluster *cl, const char *group)
{
    guint bound = 0;
    for (int i = 0; i < GANG; i++) {
        g_autofree char *p = g_strdup_printf("%s-%d", group, i);
        json_object *pod = get_pod(cl, p);
        bound += pod != NULL && kas_json_get_string(pod, "spec.nodeName") != NULL;
        json_object_put(pod);
    }
    return bound;
}

static void delete_gang(Cluster *cl, const char *group)
{
    KbDeleteOptions now = {.has_grace_period = TRUE, .grace_period_seconds = 0};
    for (int i = 0; i < GANG; i++) {
        g_autofree char *p = g_strdup_printf("%s-%d", group, i);
        kb_client_delete(cl->client, &kb_type_pods, "default", p, &now, NULL);
    }
    kb_client_delete(cl->client, &kb_type_pod_groups_volcano, "default", group, NULL, NULL);
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    for (int i = 0; i < GANG && g_get_monotonic_time() < deadline; i++) {
        g_autofree char *p = g_strdup_printf("%s-%d", group, i);
        json_object *pod;
        while ((pod = get_pod(cl, p)) != NULL && g_get_monotonic_time() < deadline) {
            json_object_put(pod);
            g_usleep(POLL_US);
        }
        json_object_put(pod);
    }
}

static gboolean start_scheduler(Cluster *cl, guint ext_port)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *bin = g_build_filename(g_getenv("KB_K8S_BIN"), "kube-scheduler", NULL);
    cl->tmp = g_dir_make_tmp("kb-bench-gang-XXXXXX", &error);
    g_autofree char *kubeconfig = g_build_filename(cl->tmp, "kubeconfig", NULL);
    g_autofree char *config = g_build_filename(cl->tmp, "scheduler.yaml", NULL);
    cl->log_path = g_build_filename(cl->tmp, "kube-scheduler.log", NULL);
    g_autofree char *kc = g_strdup_printf(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kb\n  cluster: {server: %s}\n"
            "users:\n- name: kb\n  user: {}\ncontexts:\n- name: kb\n  context: {cluster: kb, "
            "user: kb}\ncurrent-context: kb\n",
            cl->url);
    g_autofree char *out = NULL;
    const char *vargv[] = {bin, "--version", NULL};
    g_spawn_sync(NULL, (char **)vargv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL,
                 NULL, NULL);
    const char *v = out != NULL ? strstr(out, "v1.") : NULL;
    int minor = v != NULL ? atoi(v + 3) : 0;
    const char *api = minor >= 25   ? "v1"
                      : minor >= 23 ? "v1beta3"
                      : minor >= 22 ? "v1beta2"
                                    : "v1beta1";
    g_autofree char *cfg = g_strdup_printf(
            "apiVersion: kubescheduler.config.k8s.io/%s\nkind: KubeSchedulerConfiguration\n"
            "leaderElection: {leaderElect: false}\nclientConnection: {kubeconfig: %s}\n"
            "profiles:\n- schedulerName: kb-ext\nextenders:\n- urlPrefix: "
            "\"http://127.0.0.1:%u/scheduler\"\n  filterVerb: filter\n  prioritizeVerb: "
            "prioritize\n  preemptVerb: preempt\n  bindVerb: bind\n  weight: 1\n  enableHTTPS: "
            "false\n  nodeCacheCapable: true\n  managedResources:\n  - {name: nvidia.com/gpu, "
            "ignoredByScheduler: false}\n  ignorable: false\n",
            api, kubeconfig, ext_port);
    if (cl->cluster != NULL) {
        g_free(cfg);
        cfg = g_strdup_printf(
                "apiVersion: kubescheduler.config.k8s.io/%s\nkind: KubeSchedulerConfiguration\n"
                "leaderElection: {leaderElect: false}\nclientConnection: {kubeconfig: %s}\n"
                "profiles:\n- schedulerName: kb-ext\nextenders:\n- urlPrefix: "
                "\"http://127.0.0.1:%u/scheduler\"\n  filterVerb: filter\n  prioritizeVerb: "
                "prioritize\n  preemptVerb: preempt\n  bindVerb: bind\n  weight: 1\n  "
                "enableHTTPS: false\n  nodeCacheCapable: true\n  managedResources:\n  - {name: "
                "nvidia.com/gpu, ignoredByScheduler: false}\n  ignorable: false\n",
                api, kb_test_cluster_kubeconfig(cl->cluster, KB_TEST_ADMIN), ext_port);
    }
    if (!g_file_set_contents(kubeconfig, kc, -1, &error) ||
        !g_file_set_contents(config, cfg, -1, &error))
        return FALSE;
    const char *argv[] = {bin, "--config", config, "--v=2", NULL};
    int fd = g_open(cl->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return FALSE;
    gboolean ok = g_spawn_async_with_fds(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL,
                                         NULL, &cl->scheduler, -1, fd, fd, &error);
    close(fd);
    return ok;
}

/* Four 8-GPU nodes with two NVLink islands each, as kb-apiserver's --nodes file has them. */
static const char nodes_yaml[] =
        "nodes:\n- count: 4\n  name: \"node-{i}\"\n  allocatable: {cpu: 64, memory: 512Gi, pods: "
        "110, nvidia.com/gpu: 8}\n  annotations:\n    kube-batchd.io/gpu-topology: "
        "'{\"nvlink\":[[0,1,2,3],[4,5,6,7]]}'\n";

/* All four nodes Ready and without the not-ready taint (at most 60 s). */
static gboolean nodes_ready(Cluster *cl)
{
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < deadline) {
        g_autoptr(GError) error = NULL;
        json_object *list = kb_client_list(cl->client, &kb_type_nodes, NULL, NULL, &error);
        json_object *items = list != NULL ? json_object_object_get(list, "items") : NULL;
        guint ready = 0;
        for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
            json_object *n = json_object_array_get_idx(items, i);
            g_autofree char *text = g_strdup(json_object_to_json_string(n));
            gboolean tainted = strstr(text, "node.kubernetes.io/not-ready") != NULL;
            json_object *conds = kas_json_get(n, "status.conditions");
            for (size_t k = 0; !tainted && conds != NULL && k < json_object_array_length(conds);
                 k++) {
                json_object *c = json_object_array_get_idx(conds, k);
                ready += g_strcmp0(kas_json_get_string(c, "type"), "Ready") == 0 &&
                         g_strcmp0(kas_json_get_string(c, "status"), "True") == 0;
            }
        }
        json_object_put(list);
        if (ready >= 4)
            return TRUE;
        g_usleep(100000);
    }
    return FALSE;
}

/* The real kube-apiserver: RBAC as shipped, nodes run by bin/kb-kubelet. */
static void real_start(Cluster *cl, GError **error)
{
    cl->cluster = kb_test_cluster_start(KB_TEST_CLUSTER_REAL, NULL, error);
    if (cl->cluster == NULL)
        g_error("kube-apiserver: %s", (*error)->message);
    cl->url = kb_test_cluster_url(cl->cluster);
    g_autoptr(KbConfig) config = kb_config_load_kubeconfig(
            kb_test_cluster_kubeconfig(cl->cluster, KB_TEST_ADMIN), NULL, error);
    cl->client = kb_client_new(config, error);
    g_autofree char *rbac = g_build_filename(kb_test_src_dir(), "deploy/base/rbac.yaml", NULL);
    int status = -1;
    g_autofree char *out = NULL, *err = NULL;
    kb_test_cluster_kubectl(cl->cluster, KB_TEST_ADMIN,
                            (const char *const[]){"apply", "-f", rbac, NULL}, NULL, &out, &err,
                            &status, error);
    if (status != 0)
        g_error("kubectl apply -f deploy/base/rbac.yaml: %s", err != NULL ? err : "");
    g_autofree char *nodes = g_build_filename(kb_test_cluster_dir(cl->cluster), "nodes.yaml", NULL);
    g_file_set_contents(nodes, nodes_yaml, -1, NULL);
    const char *args[] = {"--kubeconfig", kb_test_cluster_kubeconfig(cl->cluster, KB_TEST_ADMIN),
                          "--nodes", nodes, NULL};
    KbTestDaemonOptions o = {.log = TRUE, .log_dir = kb_test_cluster_dir(cl->cluster)};
    cl->kubelet = kb_test_daemon_start("kb-kubelet", args, &o, error);
    if (cl->kubelet == NULL)
        g_error("kb-kubelet: %s", (*error)->message);
}

static Cluster *cluster_start(gboolean requeue, gboolean real)
{
    g_autoptr(GError) error = NULL;
    Cluster *cl = g_new0(Cluster, 1);
    if (real) {
        real_start(cl, &error);
    } else {
        const char *args[] = {"--simulate-kubelet", NULL};
        cl->api = kb_test_apiserver_start_full(args, TRUE, &error);
        if (cl->api == NULL)
            g_error("kb-apiserver: %s", error->message);
        cl->url = kb_test_apiserver_url(cl->api);
        g_autoptr(KbConfig) config = kb_config_new(cl->url);
        cl->client = kb_client_new(config, &error);
    }
    const char *const crds[] = {"deploy/base/crds/podgroup-volcano.yaml",
                                "deploy/base/crds/queue-volcano.yaml", NULL};
    kb_test_install_crds(cl->client, crds, 5000);
    for (int i = 0; i < 4 && !real; i++)
        kb_test_create_node(
                cl->client,
                kb_test_json_printf("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{"
                                    "\"name\":\"node-%d\",\"labels\":{\"kubernetes.io/hostname\":"
                                    "\"node-%d\"},\"annotations\":{\"%s\":\"%s\"}}}",
                                    i, i, KB_GPU_TOPOLOGY_ANNOTATION,
                                    "{\\\"nvlink\\\":[[0,1,2,3],[4,5,6,7]]}"),
                8);
    if (!nodes_ready(cl))
        g_error("the nodes never became Ready");
    guint ext_port = kb_test_free_port();
    g_autofree char *ext = g_strdup_printf("127.0.0.1:%u", ext_port);
    if (real) {
        const char *args[] = {"--kubeconfig",
                              kb_test_cluster_kubeconfig(cl->cluster, KB_TEST_SCHEDULER),
                              "--listen-address",
                              "127.0.0.1:0",
                              "--extender-address",
                              ext,
                              requeue ? NULL : "--extender-no-requeue",
                              NULL};
        KbTestDaemonOptions o = {.log = TRUE, .log_dir = kb_test_cluster_dir(cl->cluster)};
        cl->batchd = kb_test_daemon_start("kube-batchd", args, &o, &error);
        if (cl->batchd == NULL)
            g_error("kube-batchd: %s", error->message);
    } else {
        const char *on[] = {"--extender-address", ext, NULL};
        const char *off[] = {"--extender-address", ext, "--extender-no-requeue", NULL};
        cl->batchd = kb_test_batchd_start(cl->url, kb_test_free_port(), requeue ? on : off);
    }
    if (!start_scheduler(cl, ext_port))
        g_error("cannot start kube-scheduler");
    return cl;
}

static void cluster_free(Cluster *cl)
{
    if (cl->scheduler != 0) {
        kill(cl->scheduler, SIGTERM);
        waitpid(cl->scheduler, NULL, 0);
        g_spawn_close_pid(cl->scheduler);
    }
    kb_test_daemon_stop(cl->batchd, 7000);
    kb_test_daemon_free(cl->batchd);
    kb_client_free(cl->client);
    if (cl->kubelet != NULL) {
        kb_test_daemon_stop(cl->kubelet, 30000);
        kb_test_daemon_free(cl->kubelet);
    }
    if (cl->api != NULL)
        kb_test_apiserver_free(cl->api);
    if (cl->cluster != NULL) {
        kb_test_cluster_stop(cl->cluster);
        kb_test_cluster_free(cl->cluster);
    }
    if (cl->log_path != NULL)
        g_unlink(cl->log_path);
    if (cl->tmp != NULL) {
        g_autofree char *a = g_build_filename(cl->tmp, "kubeconfig", NULL);
        g_autofree char *b = g_build_filename(cl->tmp, "scheduler.yaml", NULL);
        g_unlink(a);
        g_unlink(b);
        g_rmdir(cl->tmp);
    }
    g_free(cl->tmp);
    g_free(cl->log_path);
    g_free(cl);
}

/* One gang created pod by pod; the seconds from its last member's creation to all bound, or a
 * negative number when it did not bind within BOUND_MS. */
static double one_gang(Cluster *cl, const char *group)
{
    kb_test_create_pod_group(cl->client, group, GANG);
    for (int i = 0; i < GANG - 1; i++) {
        g_autofree char *p = g_strdup_printf("%s-%d", group, i);
        add_pod(cl, p, group);
        if (!wait_parked(cl, p, PARK_MS)) {
            g_autofree char *log = NULL;
            g_file_get_contents(cl->log_path, &log, NULL, NULL);
            g_error("kube-scheduler never tried %s:\n%s", p, log != NULL ? log : "");
        }
    }
    g_autofree char *last = g_strdup_printf("%s-%d", group, GANG - 1);
    add_pod(cl, last, group);
    gint64 t0 = g_get_monotonic_time();
    gint64 deadline = t0 + (gint64)BOUND_MS * 1000;
    while (bound_members(cl, group) < GANG) {
        if (g_get_monotonic_time() > deadline)
            return -1;
        g_usleep(POLL_US);
    }
    return (double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
}

static gint cmp_double(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs @n gangs; prints one row; returns the median (negative when a gang never bound). */
static double run(gboolean requeue, gboolean real, guint n)
{
    if (n == 0)
        return 0;
    Cluster *cl = cluster_start(requeue, real);
    g_autofree double *s = g_new0(double, n);
    gboolean failed = FALSE;
    GString *each = g_string_new(NULL);
    for (guint g = 0; g < n; g++) {
        g_autofree char *group = g_strdup_printf("gang-%u", g);
        s[g] = one_gang(cl, group);
        failed |= s[g] < 0;
        g_string_append_printf(each, "%s%.2f", g > 0 ? " " : "", s[g]);
        fflush(stdout);
        delete_gang(cl, group);
    }
    cluster_free(cl);
    qsort(s, n, sizeof(double), (int (*)(const void *, const void *))cmp_double);
    double sum = 0;
    for (guint g = 0; g < n; g++)
        sum += s[g];
    double median = n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    printf("%-15s %-22s %5u  %8.2f  %8.2f  %8.2f  %8.2f   %s%s\n",
           real ? "kube-apiserver" : "kb-apiserver",
           requeue ? "requeue (shipped)" : "--extender-no-requeue", n, s[0], median, sum / n,
           s[n - 1], each->str, failed ? "  (a gang never bound: -1)" : "");
    g_string_free(each, TRUE);
    return failed ? -1 : median;
}

int main(int argc, char **argv)
{
    guint gangs = argc > 1 ? (guint)atoi(argv[1]) : 10;
    guint old_gangs = argc > 2 ? (guint)atoi(argv[2]) : 2;
    const char *dir = g_getenv("KB_K8S_BIN");
    g_autofree char *bin = dir != NULL ? g_build_filename(dir, "kube-scheduler", NULL) : NULL;
    if (bin == NULL || !g_file_test(bin, G_FILE_TEST_IS_EXECUTABLE)) {
        printf("bench-extender-gang: skipped (KB_K8S_BIN does not name a directory with a "
               "kube-scheduler binary; ../shared/tools/build-kube-apiserver.sh builds one)\n");
        return 0;
    }
    g_autofree char *version = NULL;
    const char *vargv[] = {bin, "--version", NULL};
    g_spawn_sync(NULL, (char **)vargv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &version, NULL,
                 NULL, NULL);
    printf("bench-extender-gang: %s with the extender, 4 nodes x 8 GPUs; gangs of %d pods x "
           "4 GPUs created pod by pod; seconds from the last member's creation to the gang "
           "bound whole\n",
           version != NULL ? g_strstrip(version) : "kube-scheduler", GANG);
    printf("%-15s %-22s %5s  %8s  %8s  %8s  %8s   %s\n", "server", "kube-batchd", "gangs", "min",
           "median", "mean", "max", "each");
    g_autofree char *why = NULL;
    gboolean real = kb_test_cluster_real_available(&why);
    for (int r = 0; r < 2; r++) {
        if (r == 1 && !real) {
            printf("kube-apiserver: skipped (%s)\n", why);
            break;
        }
        double now = run(TRUE, r == 1, gangs);
        double before = run(FALSE, r == 1, old_gangs);
        if (now > 0 && before > 0)
            printf("%s: median before / after: %.0fx (the issue measured %.0f s before: %.0fx)\n",
                   r == 1 ? "kube-apiserver" : "kb-apiserver", before / now, ISSUE_SECS,
                   ISSUE_SECS / now);
        fflush(stdout);
    }
    return 0;
}
