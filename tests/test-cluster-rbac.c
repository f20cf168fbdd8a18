/*
 * kube-batchd and tf-operator run the way a cluster runs them: over HTTPS with the CA verified,
 * each with its own ServiceAccount token (kubeconfig), with leader election in the kube-batchd
 * namespace, authorized only by deploy/base/rbac.yaml as shipped (applied by an admin with kubectl,
 * with the CRDs and the default queue). A GPU gang binds completely with its gpu-ids, a pod that
 * fits nowhere gets its PodScheduled=False condition, TFJobs of both API versions run to
 * success, and no request of either daemon is refused (the server's 403 count and log, the
 * daemons' logs), while the same identities are refused what the shipped roles do not grant.
 *
 * The suite runs against bin/kb-apiserver (--simulate-kubelet, four 8-GPU nodes) and, when
 * KB_K8S_BIN names a directory with kube-apiserver (etcd on PATH), against a real
 * kube-apiserver too; otherwise it says that it skipped it and why. Skipped without kubectl.
 */
#include <gio/gio.h>
#include <glib.h>
#include <string.h>

#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-cluster.h"
#include "tests/lib/kb-test-daemon.h"
#include "tests/lib/kb-test-tfwebhook.h"
#include "tests/lib/kb-test-util.h"

typedef struct {
    KbTestClusterServer kind;
    KbTestCluster *cluster;
    KbTestDaemon *scheduler;
    KbTestDaemon *operator_;
    KbTestDaemon *kubelet; /* bin/kb-kubelet on a real server, when it exists */
    KbTestTfWebhook *webhook; /* the TFJob CRD's conversion webhook, served by tf-operator */
    gboolean ready;
    gboolean pods_run; /* something runs pods (simulated kubelet) */
} Env;

static char *src(const char *rel)
{
    return g_build_filename(kb_test_src_dir(), rel, NULL);
}

/* `kubectl ARGS` as @who; returns stdout (newly allocated), *@status the exit status. */
static char *kubectl_as(Env *e, const char *who, const char *stdin_text, int *status,
                        const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    char *out = kb_test_cluster_kubectl_valist(e->cluster, who, stdin_text, status, first, ap);
    va_end(ap);
    return out;
}

/* As the admin; a failure fails the test. */
static char *admin(Env *e, const char *stdin_text, const char *first, ...)
{
    int st = -1;
    va_list ap;
    va_start(ap, first);
    char *out =
            kb_test_cluster_kubectl_valist(e->cluster, KB_TEST_ADMIN, stdin_text, &st, first, ap);
    va_end(ap);
    g_assert_cmpint(st, ==, 0);
    return out;
}

/* Apply @path as the admin, retrying while a CRD it needs is not established yet (a real
 * server takes a moment after the CRD is created). */
static void apply_file(Env *e, const char *rel)
{
    g_autofree char *path = src(rel);
    for (int i = 0; i < 60; i++) {
        int st = -1;
        g_autofree char *out = kubectl_as(e, KB_TEST_ADMIN, NULL, &st, "apply", "-f", path, NULL);
        if (st == 0)
            return;
        g_usleep(500 * 1000);
    }
    g_test_fail();
}

/* ---- setup ---------------------------------------------------------------------------------- */

/* The real server's nodes when no kb-kubelet runs them: created Ready by the admin. */
static const char real_nodes[] = "apiVersion: v1\nkind: Node\nmetadata: {name: gpu-0, labels: "
                                 "{topology.kubernetes.io/rack: rack-0}}\n---\n"
                                 "apiVersion: v1\nkind: Node\nmetadata: {name: gpu-1, labels: "
                                 "{topology.kubernetes.io/rack: rack-0}}\n";
static const char real_node_status[] =
        "{\"status\":{\"capacity\":{\"cpu\":\"64\",\"memory\":\"512Gi\",\"pods\":\"110\","
        "\"nvidia.com/gpu\":\"8\"},\"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\","
        "\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"test\"}]}}";

static void real_server_nodes(Env *e)
{
    g_autofree char *kubelet = NULL;
    const char *bin = g_getenv("KB_BIN_DIR");
    kubelet = g_build_filename(bin != NULL ? bin : "build/default/bin", "kb-kubelet", NULL);
    if (g_file_test(kubelet, G_FILE_TEST_IS_EXECUTABLE)) {
        /* The simulated kubelet as its own process (it acts as the admin: node identities and
         * the Node authorizer's graph are out of scope here). */
        g_autofree char *nodes = src("tests/data/apiserver/nodes.yaml");
        const char *args[] = {"--kubeconfig", kb_test_cluster_kubeconfig(e->cluster, KB_TEST_ADMIN),
                              "--nodes", nodes, NULL};
        KbTestDaemonOptions o = {.log = TRUE, .log_dir = kb_test_cluster_dir(e->cluster)};
        g_autoptr(GError) error = NULL;
        e->kubelet = kb_test_daemon_start("kb-kubelet", args, &o, &error);
        g_assert_no_error(error);
        e->pods_run = TRUE;
        return;
    }
    g_printerr("# %s: no kb-kubelet in %s: nodes are created Ready by the admin and pods do "
               "not run (the TFJob case is skipped)\n",
               kb_test_cluster_name(e->cluster), bin != NULL ? bin : "build/default/bin");
    g_free(admin(e, real_nodes, "create", "-f", "-", NULL));
    /* Ready, and without the not-ready taint the server puts on a new node (no node lifecycle
     * controller runs to take it off). */
    for (const char *const *n = (const char *const[]){"gpu-0", "gpu-1", NULL}; *n != NULL; n++) {
        g_free(admin(e, NULL, "patch", "node", *n, "--subresource=status", "--type=merge", "-p",
                     real_node_status, NULL));
        int st = -1;
        g_free(kubectl_as(e, KB_TEST_ADMIN, NULL, &st, "taint", "node", *n,
                          "node.kubernetes.io/not-ready:NoSchedule-", NULL));
    }
}

/* kubectl for kb_test_tfwebhook_connect(): as the admin. */
static void admin_kubectl(gpointer data, const char *stdin_text, const char *const *args)
{
    Env *e = data;
    g_autoptr(GError) error = NULL;
    g_autofree char *out = NULL, *err = NULL;
    int st = -1;
    g_assert_true(kb_test_cluster_kubectl(e->cluster, KB_TEST_ADMIN, args, stdin_text, &out, &err,
                                          &st, &error));
    if (st != 0)
        g_test_message("kubectl %s: %s%s", args[0], out, err);
    g_assert_cmpint(st, ==, 0);
}

static KbTestDaemon *spawn(Env *e, const char *name, const char *identity, const char *const *extra)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer) "--kubeconfig");
    g_ptr_array_add(argv, (gpointer)kb_test_cluster_kubeconfig(e->cluster, identity));
    g_ptr_array_add(argv, (gpointer) "--listen-address");
    g_ptr_array_add(argv, (gpointer) "127.0.0.1:0");
    for (guint i = 0; extra[i] != NULL; i++)
        g_ptr_array_add(argv, (gpointer)extra[i]);
    g_ptr_array_add(argv, NULL);
    KbTestDaemonOptions o = {.log = TRUE, .log_dir = kb_test_cluster_dir(e->cluster)};
    g_autoptr(GError) error = NULL;
    KbTestDaemon *d = kb_test_daemon_start(name, (const char *const *)argv->pdata, &o, &error);
    g_assert_no_error(error);
    return d;
}

static void test_setup(gconstpointer data)
{
    Env *e = (Env *)data;
    g_autoptr(GError) error = NULL;
    g_autofree char *nodes = src("tests/data/apiserver/nodes.yaml");
    const char *kas_args[] = {"--simulate-kubelet",
                              "--nodes",
                              nodes,
                              "--runtime-config",
                              "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true",
                              NULL};
    e->cluster = kb_test_cluster_start(e->kind, kas_args, &error);
    g_assert_no_error(error);
    g_printerr("# report: cluster-rbac: ran against %s at %s\n", kb_test_cluster_name(e->cluster),
               kb_test_cluster_url(e->cluster));
    apply_file(e, "deploy/base/crds");
    apply_file(e, "deploy/base/rbac.yaml");
    apply_file(e, "deploy/base/default-queue.yaml");
    if (e->kind == KB_TEST_CLUSTER_REAL)
        real_server_nodes(e);
    else
        e->pods_run = TRUE;
    g_autofree char *conf = src("deploy/base/scheduler.conf");
    /* The Deployments' flags (deploy/base/kube-batchd.yaml, tf-operator.yaml), with a short period. */
    const char *sched[] = {"--scheduler-name",
                           "kube-batchd",
                           "--scheduler-conf",
                           conf,
                           "--leader-elect",
                           "--lock-object-namespace",
                           "kube-batchd",
                           "--schedule-period",
                           "200ms",
                           NULL};
    e->scheduler = spawn(e, "kube-batchd", KB_TEST_SCHEDULER, sched);
    const char *oper[] = {"--gang-scheduler-name",    "kube-batchd", "--leader-elect",
                          "--leader-elect-namespace", "kube-batchd", "--enable-autoscaling",
                          "--autoscale-interval",     "1",           NULL};
    /* ... and its conversion webhook, which the shipped TFJob CRD names */
    e->webhook = kb_test_tfwebhook_new();
    e->operator_ = spawn(e, "tf-operator", KB_TEST_OPERATOR,
                         kb_test_tfwebhook_args(e->webhook, oper));
    kb_test_tfwebhook_connect(e->webhook, e->operator_, admin_kubectl, e);
    e->ready = TRUE;
}

static gboolean skip_unless_ready(Env *e)
{
    if (e->ready)
        return FALSE;
    g_test_skip("the cluster did not start");
    return TRUE;
}

/* ---- cases ---------------------------------------------------------------------------------- */

static const char gang[] =
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: gang-a, namespace: default}\nspec: {minMember: 4, queue: default}\n";

static char *gang_pod(int i)
{
    return g_strdup_printf(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: gang-a-%d\n  namespace: default\n"
            "  labels: {app: gang-a}\n  annotations: {scheduling.k8s.io/group-name: gang-a}\n"
            "spec:\n  schedulerName: kube-batchd\n  containers:\n  - name: tensorflow\n"
            "    image: tf\n    resources: {limits: {nvidia.com/gpu: 4}}\n",
            i);
}

static const char too_big[] =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: too-big, namespace: default}\n"
        "spec:\n  schedulerName: kube-batchd\n  containers:\n  - name: tensorflow\n"
        "    image: tf\n    resources: {limits: {nvidia.com/gpu: 64}}\n";

static gboolean daemons_alive(Env *e)
{
    if (kb_test_daemon_running(e->scheduler) && kb_test_daemon_running(e->operator_))
        return TRUE;
    g_test_message("a daemon exited (logs in %s)", kb_test_cluster_dir(e->cluster));
    return FALSE;
}

/* Poll `kubectl get` as the admin until @done accepts its output (90 s at most). */
static char *wait_get(Env *e, gboolean (*done)(const char *), const char *const *args)
{
    char *out = NULL;
    for (int i = 0; i < 450; i++) {
        g_free(out);
        g_autoptr(GError) error = NULL;
        int st = -1;
        out = NULL;
        g_assert_true(kb_test_cluster_kubectl(e->cluster, KB_TEST_ADMIN, args, NULL, &out, NULL,
                                              &st, &error));
        if (st == 0 && done(out))
            return out;
        if (!daemons_alive(e))
            return out;
        g_usleep(200 * 1000);
    }
    return out;
}

/* Four lines "NODE IDS" with a node and four GPU ids each. */
static gboolean gang_bound(const char *out)
{
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
    guint n = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        if (lines[i][0] == '\0')
            continue;
        g_auto(GStrv) f = g_strsplit(lines[i], " ", 2);
        if (g_strv_length(f) != 2 || f[0][0] == '\0')
            return FALSE;
        g_auto(GStrv) ids = g_strsplit(f[1], ",", -1);
        if (g_strv_length(ids) != 4)
            return FALSE;
        n++;
    }
    return n == 4;
}

static gboolean unschedulable(const char *out)
{
    return strstr(out, "False Unschedulable") != NULL;
}

static gboolean nonempty(const char *out)
{
    return out[0] != '\0';
}

static void test_gpu_gang(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless_ready(e))
        return;
    GString *yaml = g_string_new(gang);
    for (int i = 0; i < 4; i++) {
        g_autofree char *p = gang_pod(i);
        g_string_append(yaml, p);
    }
    g_free(admin(e, yaml->str, "create", "-f", "-", NULL));
    g_string_free(yaml, TRUE);
    const char *get[] = {"get",
                         "pods",
                         "-n",
                         "default",
                         "-l",
                         "app=gang-a",
                         "-o",
                         "jsonpath={range .items[*]}{.spec.nodeName} "
                         "{.metadata.annotations.kube-batchd\\.io/gpu-ids}{\"\\n\"}{end}",
                         NULL};
    g_autofree char *bound = wait_get(e, gang_bound, get);
    g_test_message("gang placement:\n%s", bound);
    g_assert_true(gang_bound(bound));
    /* kube-batchd wrote the group's status (podgroups/status). */
    const char *phase[] = {"get", "podgroups.scheduling.volcano.sh", "gang-a", "-n", "default",
                           "-o",  "jsonpath={.status.phase}",        NULL};
    g_autofree char *ph = wait_get(e, nonempty, phase);
    g_assert_cmpstr(ph, !=, "");
    /* A pod that fits nowhere: its condition is written (pods/status). */
    g_free(admin(e, too_big, "create", "-f", "-", NULL));
    const char *cond[] = {"get",
                          "pod",
                          "too-big",
                          "-n",
                          "default",
                          "-o",
                          "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].status} "
                          "{.status.conditions[?(@.type==\"PodScheduled\")].reason}",
                          NULL};
    g_autofree char *c = wait_get(e, unschedulable, cond);
    g_assert_nonnull(strstr(c, "False Unschedulable"));
    g_free(admin(e, NULL, "delete", "pod", "too-big", "-n", "default", "--wait=false", NULL));
    g_free(admin(e, NULL, "delete", "pods", "-l", "app=gang-a", "-n", "default", "--wait=false",
                 NULL));
}

/* Kubernetes' own gang API: a PodGroup scheduling.k8s.io/v1beta1 and pods naming it in
 * spec.schedulingGroup bind whole, and kube-batchd sets PodGroupInitiallyScheduled True (its
 * informer and the status write go through deploy/base/rbac.yaml). Only where the server serves the
 * API (kb-apiserver with --runtime-config; a real server of 1.37 or later). */
static const char native_gang[] =
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\n"
        "metadata: {name: native-a, namespace: default}\n"
        "spec: {schedulingPolicy: {gang: {minCount: 4}}}\n";

static gboolean native_bound(const char *out)
{
    guint n = 0;
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++)
        n += lines[i][0] != '\0';
    return n == 4;
}

static gboolean condition_true(const char *out)
{
    return strcmp(out, "True") == 0;
}

static void test_native_gang(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless_ready(e))
        return;
    int st = -1;
    g_autofree char *served = kubectl_as(e, KB_TEST_ADMIN, NULL, &st, "get",
                                         "podgroups.scheduling.k8s.io", "-n", "default", NULL);
    if (st != 0) {
        g_test_skip("scheduling.k8s.io/v1beta1 is not served");
        return;
    }
    GString *yaml = g_string_new(native_gang);
    for (int i = 0; i < 4; i++)
        g_string_append_printf(yaml,
                               "---\napiVersion: v1\nkind: Pod\nmetadata: {name: native-a-%d, "
                               "namespace: default, labels: {app: native-a}}\nspec:\n"
                               "  schedulerName: kube-batchd\n  schedulingGroup: {podGroupName: "
                               "native-a}\n  containers:\n  - name: tensorflow\n    image: tf\n"
                               "    resources: {limits: {nvidia.com/gpu: 1}}\n",
                               i);
    g_free(admin(e, yaml->str, "create", "--validate=false", "-f", "-", NULL));
    g_string_free(yaml, TRUE);
    const char *get[] = {"get", "pods", "-n", "default", "-l", "app=native-a", "-o",
                         "jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}", NULL};
    g_autofree char *bound = wait_get(e, native_bound, get);
    g_assert_true(native_bound(bound));
    const char *cond[] = {"get",
                          "podgroups.scheduling.k8s.io",
                          "native-a",
                          "-n",
                          "default",
                          "-o",
                          "jsonpath={.status.conditions[?(@.type==\"PodGroupInitiallyScheduled\")]"
                          ".status}",
                          NULL};
    g_autofree char *c = wait_get(e, condition_true, cond);
    g_assert_cmpstr(c, ==, "True");
    g_free(admin(e, NULL, "delete", "pods", "-l", "app=native-a", "-n", "default", "--wait=false",
                 NULL));
}

/*
 * CompositePodGroup (scheduling.k8s.io/v1alpha3, where served): a composite of minGroupCount 3
 * over 4 children of 2 pods (8 GPUs each, so a child fills a zone of two nodes, each child inside
 * one zone of its topology key). With two zones nothing binds and the composite says
 * Unschedulable naming the children that fall short; a third zone: exactly 3 children bind whole,
 * each inside one zone, the fourth waits, the composite's condition turns True. kube-batchd reads
 * composites and v1alpha3 PodGroups and writes their status through deploy/base/rbac.yaml.
 */
static const char zone_key[] = "e2e.kube-batchd.io/zone";

static void add_zone(Env *e, const char *zone)
{
    for (int i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("%s-%d", zone, i);
        g_autofree char *yaml = g_strdup_printf(
                "apiVersion: v1\nkind: Node\nmetadata: {name: %s, labels: {%s: %s}}\n", name,
                zone_key, zone);
        g_free(admin(e, yaml, "create", "-f", "-", NULL));
        g_free(admin(e, NULL, "patch", "node", name, "--subresource=status", "--type=merge", "-p",
                     real_node_status, NULL));
        int st = -1;
        g_free(kubectl_as(e, KB_TEST_ADMIN, NULL, &st, "taint", "node", name,
                          "node.kubernetes.io/not-ready:NoSchedule-", NULL));
    }
}

/* "child node" lines of the composite's bound pods. */
static char *composite_placements(Env *e)
{
    const char *get[] = {"get",
                         "pods",
                         "-n",
                         "default",
                         "-l",
                         "app=train-c",
                         "-o",
                         "jsonpath={range .items[*]}{.spec.schedulingGroup.podGroupName} "
                         "{.spec.nodeName}{\"\\n\"}{end}",
                         NULL};
    g_autoptr(GError) error = NULL;
    int st = -1;
    char *out = NULL;
    g_assert_true(
            kb_test_cluster_kubectl(e->cluster, KB_TEST_ADMIN, get, NULL, &out, NULL, &st, &error));
    return out;
}

static guint bound_lines(const char *out)
{
    guint n = 0;
    g_auto(GStrv) lines = g_strsplit(out != NULL ? out : "", "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *sp = strchr(lines[i], ' ');
        n += sp != NULL && sp[1] != '\0';
    }
    return n;
}

static gboolean six_bound(const char *out)
{
    return bound_lines(out) == 6;
}

static gboolean composite_short(const char *out)
{
    return strstr(out, "False Unschedulable") != NULL && strstr(out, "short: ") != NULL;
}

static gboolean composite_started(const char *out)
{
    return g_str_has_prefix(out, "True ");
}

static void test_composite(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless_ready(e))
        return;
    int st = -1;
    g_autofree char *served =
            kubectl_as(e, KB_TEST_ADMIN, NULL, &st, "get", "compositepodgroups.scheduling.k8s.io",
                       "-n", "default", NULL);
    if (st != 0) {
        g_test_skip("scheduling.k8s.io/v1alpha3 is not served");
        return;
    }
    add_zone(e, "zone-a");
    add_zone(e, "zone-b");
    GString *yaml =
            g_string_new("apiVersion: scheduling.k8s.io/v1alpha3\nkind: CompositePodGroup\n"
                         "metadata: {name: train-c, namespace: default}\n"
                         "spec:\n  workloadRef: {workloadName: train-c, templateName: top}\n"
                         "  schedulingPolicy: {gang: {minGroupCount: 3}}\n");
    for (int g = 0; g < 4; g++) {
        g_string_append_printf(yaml,
                               "---\napiVersion: scheduling.k8s.io/v1alpha3\nkind: PodGroup\n"
                               "metadata: {name: train-c-g%d, namespace: default}\nspec:\n"
                               "  parentCompositePodGroupName: train-c\n"
                               "  workloadRef: {workloadName: train-c, templateName: workers}\n"
                               "  schedulingPolicy: {gang: {minCount: 2}}\n"
                               "  schedulingConstraints: {topology: [{key: %s}]}\n",
                               g, zone_key);
        for (int i = 0; i < 2; i++)
            g_string_append_printf(
                    yaml,
                    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: train-c-g%d-%d, namespace: "
                    "default, labels: {app: train-c}}\nspec:\n  schedulerName: kube-batchd\n"
                    "  schedulingGroup: {podGroupName: train-c-g%d}\n  containers:\n"
                    "  - name: tensorflow\n    image: tf\n"
                    "    resources: {limits: {nvidia.com/gpu: 8}}\n",
                    g, i, g);
    }
    g_free(admin(e, yaml->str, "create", "--validate=false", "-f", "-", NULL));
    g_string_free(yaml, TRUE);
    const char *cond[] = {"get",
                          "compositepodgroups.scheduling.k8s.io",
                          "train-c",
                          "-n",
                          "default",
                          "-o",
                          "jsonpath={.status.conditions[?(@.type==\"CompositePodGroupInitially"
                          "Scheduled\")].status} {.status.conditions[?(@.type==\"CompositePod"
                          "GroupInitiallyScheduled\")].reason} {.status.conditions[?(@.type=="
                          "\"CompositePodGroupInitiallyScheduled\")].message}",
                          NULL};
    g_autofree char *c = wait_get(e, composite_short, cond);
    g_test_message("composite: %s", c);
    g_assert_true(composite_short(c));
    g_assert_nonnull(strstr(c, "2/3 child PodGroups placeable whole"));
    g_usleep(1000 * 1000); /* a few more cycles */
    g_autofree char *none = composite_placements(e);
    g_assert_cmpuint(bound_lines(none), ==, 0);

    add_zone(e, "zone-c");
    const char *get[] = {"get",
                         "pods",
                         "-n",
                         "default",
                         "-l",
                         "app=train-c",
                         "-o",
                         "jsonpath={range .items[*]}{.spec.schedulingGroup.podGroupName} "
                         "{.spec.nodeName}{\"\\n\"}{end}",
                         NULL};
    g_autofree char *six = wait_get(e, six_bound, get);
    g_assert_true(six_bound(six));
    g_usleep(1000 * 1000);
    g_autofree char *placed = composite_placements(e);
    g_test_message("placements:\n%s", placed);
    g_assert_cmpuint(bound_lines(placed), ==, 6);
    /* each child whole and inside one zone: both its pods on nodes "zone-X-i" of one zone */
    g_autoptr(GHashTable) zone_of = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) pods_of = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_auto(GStrv) lines = g_strsplit(placed, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], " ", 2);
        if (f[0] == NULL || f[1] == NULL || f[1][0] == '\0')
            continue;
        g_assert_true(g_str_has_prefix(f[1], "zone-"));
        char *zone = g_strndup(f[1], strlen("zone-a"));
        const char *was = g_hash_table_lookup(zone_of, f[0]);
        if (was != NULL)
            g_assert_cmpstr(was, ==, zone);
        g_hash_table_replace(zone_of, g_strdup(f[0]), zone);
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(pods_of, f[0]));
        g_hash_table_replace(pods_of, g_strdup(f[0]), GUINT_TO_POINTER(n + 1));
    }
    g_assert_cmpuint(g_hash_table_size(pods_of), ==, 3);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, pods_of);
    while (g_hash_table_iter_next(&it, &k, &v))
        g_assert_cmpuint(GPOINTER_TO_UINT(v), ==, 2);
    g_autofree char *done = wait_get(e, composite_started, cond);
    g_test_message("composite: %s", done);
    g_assert_true(g_str_has_prefix(done, "True Scheduled 3/3 child PodGroups scheduled"));
    g_free(admin(e, NULL, "delete", "pods", "-l", "app=train-c", "-n", "default", "--wait=false",
                 NULL));
}

/* Lists as kube-batchd's informers send them (client-go's reflector): at resourceVersion "0" the
 * watch cache answers in one piece whatever the limit; without a resourceVersion etcd pages. */
static void test_list_from_watch_cache(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless_ready(e))
        return;
    /* (kubectl create namespace/configmap would send protobuf, which kb-apiserver answers 415) */
    GString *yaml = g_string_new("apiVersion: v1\nkind: Namespace\nmetadata: {name: lists}\n");
    for (int i = 0; i < 3; i++)
        g_string_append_printf(yaml, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: "
                                     "cm-%d, namespace: lists}\n", i);
    g_free(admin(e, yaml->str, "create", "-f", "-", NULL));
    g_string_free(yaml, TRUE);
    static const struct {
        const char *query;
        int items;
    } cases[] = {{"resourceVersion=0&limit=1", 3}, {"limit=1", 1}};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *path =
                g_strdup_printf("/api/v1/namespaces/lists/configmaps?%s", cases[i].query);
        g_autofree char *out = admin(e, NULL, "get", "--raw", path, NULL);
        json_object *list = json_tokener_parse(out);
        g_assert_nonnull(list);
        json_object *items = NULL, *meta = NULL, *cont = NULL;
        g_assert_true(json_object_object_get_ex(list, "items", &items));
        g_assert_cmpint((int)json_object_array_length(items), ==, cases[i].items);
        g_assert_true(json_object_object_get_ex(list, "metadata", &meta));
        gboolean paged = json_object_object_get_ex(meta, "continue", &cont);
        g_assert_true(paged == (cases[i].items < 3));
        json_object_put(list);
    }
    g_free(admin(e, NULL, "delete", "namespace", "lists", "--wait=false", NULL));
}

static gboolean succeeded(const char *out)
{
    return strcmp(out, "Succeeded") == 0;
}

static const char tfjob_v1[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: rbac-v1, namespace: default}\n"
        "spec:\n  runPolicy: {cleanPodPolicy: None}\n  tfReplicaSpecs:\n    Worker:\n"
        "      replicas: 2\n      template:\n        metadata:\n"
        "          annotations: {sim.kube-batchd.io/run-seconds: \"1\"}\n"
        "        spec: {containers: [{name: tensorflow, image: tf, resources: {limits: "
        "{nvidia.com/gpu: 2}}}]}\n";

static void test_tfjobs(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless_ready(e))
        return;
    if (!e->pods_run) {
        g_test_skip("nothing runs pods on this server (no bin/kb-kubelet)");
        return;
    }
    g_free(admin(e, tfjob_v1, "create", "-f", "-", NULL));
    g_autofree char *seed = src("deploy/demo/tfjob-seed-v1alpha1.yaml");
    g_free(admin(e, NULL, "create", "-n", "default", "-f", seed, NULL));
    const char *v1[] = {"get",
                        "tfjobs.kubeflow.org",
                        "rbac-v1",
                        "-n",
                        "default",
                        "-o",
                        "jsonpath={.status.conditions[-1:].type}",
                        NULL};
    g_autofree char *a = wait_get(e, succeeded, v1);
    g_assert_cmpstr(a, ==, "Succeeded");
    /* v1alpha1: the operator writes the runtime id into the spec (tfjobs update). */
    const char *v1a[] = {"get", "tfjobs.v1alpha1.kubeflow.org", "example-job", "-n", "default",
                         "-o",  "jsonpath={.status.state}",     NULL};
    g_autofree char *b = wait_get(e, succeeded, v1a);
    g_assert_cmpstr(b, ==, "Succeeded");
    /* --gang-api auto: where the server serves scheduling.k8s.io/v1beta1 the operator created
     * the job's Workload and native PodGroup as its ServiceAccount, and the pods name the group;
     * elsewhere a Volcano PodGroup. */
    int served = -1;
    g_free(kubectl_as(e, KB_TEST_ADMIN, NULL, &served, "get", "podgroups.scheduling.k8s.io", "-n",
                      "default", NULL));
    g_autofree char *group = admin(e, NULL, "get", "pod", "rbac-v1-worker-0", "-n", "default", "-o",
                                   "jsonpath={.spec.schedulingGroup.podGroupName}", NULL);
    g_assert_cmpstr(group, ==, served == 0 ? "rbac-v1" : "");
}

/* Lines of @log mentioning a refusal. */
/* " 403" as a status, not the start of a number ("on port 40331"). */
static gboolean has_403(const char *l)
{
    for (const char *p = strstr(l, " 403"); p != NULL; p = strstr(p + 1, " 403")) {
        if (!g_ascii_isdigit(p[4]))
            return TRUE;
    }
    return FALSE;
}

static guint count_forbidden(const char *log, const char *what)
{
    guint n = 0;
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        g_autofree char *l = g_ascii_strdown(lines[i], -1);
        if (strstr(l, "forbidden") != NULL || has_403(l)) {
            g_test_message("%s: %s", what, lines[i]);
            n++;
        }
    }
    return n;
}

static guint64 server_forbidden(Env *e)
{
    guint status = 0;
    g_autoptr(GError) error = NULL;
    g_autofree char *s = kb_test_cluster_request(e->cluster, NULL, "GET", "/admin/stats", NULL,
                                                 NULL, &status, &error);
    g_assert_no_error(error);
    const char *f = s != NULL ? strstr(s, "\"forbidden\":") : NULL;
    g_assert_nonnull(f);
    return g_ascii_strtoull(f + strlen("\"forbidden\":"), NULL, 10);
}

static void test_no_forbidden(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless_ready(e))
        return;
    g_autofree char *slog = kb_test_daemon_log(e->scheduler);
    g_autofree char *olog = kb_test_daemon_log(e->operator_);
    g_assert_cmpuint(count_forbidden(slog, "kube-batchd"), ==, 0);
    g_assert_cmpuint(count_forbidden(olog, "tf-operator"), ==, 0);
    if (e->kind == KB_TEST_CLUSTER_KAS) {
        g_autofree char *alog = kb_test_cluster_log(e->cluster);
        g_assert_cmpuint(count_forbidden(alog, "kb-apiserver"), ==, 0);
        g_assert_cmpuint(server_forbidden(e), ==, 0);
    }
    /* Both hold their leases (leases get/create/update in kube-batchd). */
    g_autofree char *leases =
            admin(e, NULL, "get", "leases", "-n", "kube-batchd", "-o", "name", NULL);
    g_assert_nonnull(strstr(leases, "lease"));
}

/* DRA: a pod's claim allocated and reserved by kube-batchd (it lists and watches the four kinds
 * and patches resourceclaims/status) before the pod is bound. */
static const char dra_objects[] =
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: gpu-0-rbac}\n"
        "spec: {driver: gpu.nvidia.com, nodeName: gpu-0, pool: {name: gpu-0, generation: 1, "
        "resourceSliceCount: 1}, devices: [{name: gpu-0, attributes: {type: {string: gpu}}}, "
        "{name: gpu-1, attributes: {type: {string: gpu}}}]}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
        "metadata: {name: rbac-gpus, namespace: default}\n"
        "spec: {devices: {requests: [{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, "
        "count: 2}}]}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: dra-a, namespace: default}\n"
        "spec: {schedulerName: kube-batchd, resourceClaims: [{name: gpus, resourceClaimName: "
        "rbac-gpus}], containers: [{name: c, image: x, resources: {claims: [{name: gpus}]}}]}\n";

static gboolean dra_done(const char *out)
{
    return g_str_has_prefix(out, "gpu-0 gpu-0 dra-a");
}

static void test_dra_claim(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless_ready(e))
        return;
    apply_file(e, "deploy/dra/deviceclasses.yaml");
    g_free(admin(e, dra_objects, "create", "-f", "-", NULL));
    const char *claim[] = {"get",
                           "resourceclaim",
                           "rbac-gpus",
                           "-n",
                           "default",
                           "-o",
                           "jsonpath={.status.allocation.nodeSelector.nodeSelectorTerms[0]."
                           "matchFields[0].values[0]} {.status.allocation.devices.results[0]."
                           "pool} {.status.reservedFor[0].name}",
                           NULL};
    g_autofree char *c = wait_get(e, dra_done, claim);
    g_assert_true(dra_done(c));
    const char *pod[] = {"get", "pod", "dra-a", "-n", "default", "-o", "jsonpath={.spec.nodeName}",
                         NULL};
    g_autofree char *node = wait_get(e, nonempty, pod);
    g_assert_cmpstr(node, ==, "gpu-0");
    g_free(admin(e, NULL, "delete", "pod", "dra-a", "-n", "default", "--wait=false", NULL));
}

/* The same identities are refused what the shipped roles do not grant, and it shows. */
static void test_refused(gconstpointer data)
{
    Env *e = (Env *)data;
    if (skip_unless_ready(e))
        return;
    guint64 before = e->kind == KB_TEST_CLUSTER_KAS ? server_forbidden(e) : 0;
    int st = -1;
    g_autofree char *a =
            kubectl_as(e, KB_TEST_SCHEDULER, NULL, &st, "get", "secrets", "-n", "default", NULL);
    g_assert_cmpint(st, !=, 0);
    g_autofree char *b = kubectl_as(e, KB_TEST_OPERATOR, NULL, &st, "auth", "can-i", "create",
                                    "pods", "--subresource=binding", "-n", "default", NULL);
    g_assert_cmpstr(g_strstrip(b), ==, "no");
    g_autofree char *c = kubectl_as(e, KB_TEST_SCHEDULER, NULL, &st, "auth", "can-i", "delete",
                                    "pods", "-n", "default", NULL);
    g_assert_cmpstr(g_strstrip(c), ==, "no");
    g_autofree char *d = kubectl_as(e, KB_TEST_SCHEDULER, NULL, &st, "auth", "can-i", "create",
                                    "pods", "--subresource=binding", "-n", "default", NULL);
    g_assert_cmpstr(g_strstrip(d), ==, "yes");
    /* DRA: the claims' status only, never the claims themselves */
    g_autofree char *f = kubectl_as(e, KB_TEST_SCHEDULER, NULL, &st, "auth", "can-i", "update",
                                    "resourceclaims.resource.k8s.io", "-n", "default", NULL);
    g_assert_cmpstr(g_strstrip(f), ==, "no");
    g_autofree char *g = kubectl_as(e, KB_TEST_SCHEDULER, NULL, &st, "auth", "can-i", "patch",
                                    "resourceclaims.resource.k8s.io", "--subresource=status", "-n",
                                    "default", NULL);
    g_assert_cmpstr(g_strstrip(g), ==, "yes");
    if (e->kind == KB_TEST_CLUSTER_KAS)
        g_assert_cmpuint(server_forbidden(e), ==, before + 1);
}

static void test_teardown(gconstpointer data)
{
    Env *e = (Env *)data;
    if (e->operator_ != NULL)
        g_assert_cmpint(kb_test_daemon_stop(e->operator_, 30000), ==, 0);
    if (e->scheduler != NULL)
        g_assert_cmpint(kb_test_daemon_stop(e->scheduler, 30000), ==, 0);
    if (e->kubelet != NULL)
        kb_test_daemon_stop(e->kubelet, 30000);
    g_clear_pointer(&e->operator_, kb_test_daemon_free);
    g_clear_pointer(&e->webhook, kb_test_tfwebhook_free);
    g_clear_pointer(&e->scheduler, kb_test_daemon_free);
    g_clear_pointer(&e->kubelet, kb_test_daemon_free);
    g_clear_pointer(&e->cluster, kb_test_cluster_free);
}

static void add_suite(Env *e, const char *server)
{
    static const struct {
        const char *name;
        GTestDataFunc fn;
    } steps[] = {{"setup", test_setup},
                 {"gpu-gang", test_gpu_gang},
                 {"native-gang", test_native_gang},
                 {"composite", test_composite},
                 {"list-from-watch-cache", test_list_from_watch_cache},
                 {"tfjobs", test_tfjobs},
                 {"dra-claim", test_dra_claim},
                 {"no-forbidden", test_no_forbidden},
                 {"refused", test_refused},
                 {"teardown", test_teardown}};
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
        g_autofree char *path = g_strdup_printf("/cluster-rbac/%s/%s", server, steps[i].name);
        g_test_add_data_func(path, e, steps[i].fn);
    }
}

static void skip_real(gconstpointer why)
{
    g_printerr("# report: cluster-rbac: skipped the real kube-apiserver: %s\n", (const char *)why);
    g_test_skip(why);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    /* A failed check must still stop the daemons and the servers. */
    g_test_set_nonfatal_assertions();
    if (!kb_test_kubectl_available()) {
        g_test_add_func("/cluster-rbac/skipped", kb_test_skip_no_kubectl);
        return g_test_run();
    }
    Env kas = {.kind = KB_TEST_CLUSTER_KAS}, real = {.kind = KB_TEST_CLUSTER_REAL};
    add_suite(&kas, "kb-apiserver");
    g_autofree char *why = NULL;
    if (kb_test_cluster_real_available(&why))
        add_suite(&real, "kube-apiserver");
    else
        g_test_add_data_func("/cluster-rbac/kube-apiserver/skipped", why, skip_real);
    int rc = g_test_run();
    test_teardown(&kas);
    test_teardown(&real);
    return rc;
}
