/*
 * DRA end to end: bin/kube-batchd against bin/kb-apiserver --resource-claim-controller with
 * bin/kb-kubelet --dra publishing each node's GPUs as ResourceSlices, NVIDIA's DeviceClasses
 * from deploy/dra, driven with kubectl as a user would.
 *
 * - A 4-pod gang, 2 GPUs per pod through a template whose selector names the A100 product, on
 *   two A100 nodes and one H100 node of 4 GPUs: every claim allocated, each device once, the
 *   claim's node selector the pod's node (an A100 node), the pods Running.
 * - A gang of 2 pods x 2 H100 GPUs with 3 H100 GPUs left: nothing allocated, nothing bound, the
 *   PodGroup's condition names the short request (enqueue's: GPUs counted as nvidia.com/gpu).
 * - A claim whose selector kb-cel does not support: its pod waits, the condition quotes it.
 * - Preemption on a full node (4 GPUs): a high-priority gang of 2 pods x 2 GPUs evicts the
 *   low-priority gang holding them; the controller removes the victims' reservations and claims;
 *   the preemptor's claims get exactly the victims' devices, each once, and its pods run.
 *
 * Skipped without kubectl.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-util.h"
#include "tests/lib/kb-test-confs.h"

static KbTestApiserver *api;

/* `kubectl get` through the test's server; see kb_test_kubectl_jsonpath(). */
static char *get(const char *kind, const char *name, const char *path)
{
    return kb_test_kubectl_jsonpath(api, kind, name, path);
}

static gint str_ptr_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Poll until `kubectl get KIND NAME -o jsonpath=PATH` satisfies @done (90 s at most). */
static char *wait_until(const char *kind, const char *name, const char *path, KbTestValueFunc done,
                        gconstpointer data)
{
    return kb_test_kubectl_wait(api, kind, name, path, done, data, 90000);
}

static const char nodes_yaml[] =
        "nodes:\n"
        "- count: 2\n"
        "  name: \"a100-{i}\"\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 4}\n"
        "- count: 1\n"
        "  name: \"h100-{i}\"\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 4}\n";

/* A gang @name of @n pods, each with a claim from template @name of @count GPUs of @product. */
static char *gang_yaml(const char *name, guint n, guint count, const char *product)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(
            s,
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
            "metadata: {name: %s, namespace: default}\nspec: {minMember: %u, queue: default}\n"
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
            "metadata: {name: %s, namespace: default}\n"
            "spec:\n  spec:\n    devices:\n      requests:\n      - name: gpus\n"
            "        exactly:\n          deviceClassName: gpu.nvidia.com\n          count: %u\n"
            "          selectors:\n          - cel: {expression: \"device.attributes"
            "['gpu.nvidia.com'].productName == '%s'\"}\n",
            name, n, name, count, product);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(
                s,
                "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s-%u\n  namespace: default\n"
                "  annotations: {scheduling.k8s.io/group-name: %s, "
                "sim.kube-batchd.io/run-seconds: \"3600\"}\n"
                "spec:\n  schedulerName: kube-batchd\n  resourceClaims: [{name: gpus, "
                "resourceClaimTemplateName: %s}]\n  containers:\n  - name: tensorflow\n"
                "    image: tf\n    resources: {claims: [{name: gpus}]}\n",
                name, i, name, name);
    return g_string_free(s, FALSE);
}

static const char unsupported_yaml[] =
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
        "metadata: {name: odd, namespace: default}\n"
        "spec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n"
        "        deviceClassName: gpu.nvidia.com\n        selectors:\n"
        "        - cel: {expression: \"device.driver.lastIndexOf('.') > 0\"}\n"
        "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: odd, namespace: default}\nspec: {minMember: 1, queue: default}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: odd-0\n  namespace: default\n"
        "  annotations: {scheduling.k8s.io/group-name: odd}\n"
        "spec:\n  schedulerName: kube-batchd\n  resourceClaims: [{name: gpu, "
        "resourceClaimName: odd}]\n  containers:\n  - name: c\n    image: x\n";

/* A gang @name of @n pods of class @pc, each with a claim from template @name of @count GPUs. */
static char *pc_gang_yaml(const char *name, guint n, guint count, const char *pc)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s,
                           "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
                           "metadata: {name: %s, namespace: default}\n"
                           "spec: {minMember: %u, queue: default, priorityClassName: %s}\n"
                           "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
                           "metadata: {name: %s, namespace: default}\n"
                           "spec:\n  spec:\n    devices:\n      requests:\n      - name: gpus\n"
                           "        exactly: {deviceClassName: gpu.nvidia.com, count: %u}\n",
                           name, n, pc, name, count);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(
                s,
                "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s-%u\n  namespace: default\n"
                "  annotations: {scheduling.k8s.io/group-name: %s, "
                "sim.kube-batchd.io/run-seconds: \"3600\"}\n"
                "spec:\n  schedulerName: kube-batchd\n  priorityClassName: %s\n"
                "  resourceClaims: [{name: gpus, resourceClaimTemplateName: %s}]\n"
                "  containers:\n  - name: tensorflow\n    image: tf\n"
                "    resources: {claims: [{name: gpus}]}\n",
                name, i, name, pc, name);
    return g_string_free(s, FALSE);
}

/* The devices ("pool/device", sorted, space-separated) the claims of gang @gang's pods hold. */
static char *gang_devices(const char *gang, guint n)
{
    g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < n; i++) {
        g_autofree char *pod = g_strdup_printf("%s-%u", gang, i);
        g_autofree char *claim =
                get("pod", pod, "{.status.resourceClaimStatuses[0].resourceClaimName}");
        g_autofree char *devs = get("resourceclaim", claim,
                                    "{range .status.allocation.devices.results[*]}{.pool}/"
                                    "{.device} {end}");
        g_auto(GStrv) list = g_strsplit(g_strstrip(devs), " ", -1);
        for (guint d = 0; list[d] != NULL; d++) {
            if (list[d][0] != '\0')
                g_ptr_array_add(all, g_strdup(list[d]));
        }
    }
    g_ptr_array_sort(all, str_ptr_cmp);
    g_ptr_array_add(all, NULL);
    return g_strjoinv(" ", (char **)all->pdata);
}

static void apply(const char *rel)
{
    g_autofree char *path = g_build_filename(kb_test_src_dir(), rel, NULL);
    g_free(kb_test_kubectl_run(api, NULL, "apply", "-f", path, NULL));
}

/* The first gang: every claim allocated on an A100 node, each device once, pods Running. */
static void check_train(void)
{
    g_autofree char *running = wait_until(
            "pods", "",
            "{range .items[?(@.metadata.annotations.scheduling\\.k8s\\.io/group-name==\"train\")]}"
            "{.status.phase} {end}",
            (gboolean(*)(const char *, gconstpointer))g_str_equal,
            "Running Running Running Running ");
    g_assert_cmpstr(running, ==, "Running Running Running Running ");
    g_autoptr(GHashTable) devices = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < 4; i++) {
        g_autofree char *pod = g_strdup_printf("train-%u", i);
        g_autofree char *node = get("pod", pod, "{.spec.nodeName}");
        g_assert_true(g_str_has_prefix(node, "a100-"));
        g_autofree char *claim =
                get("pod", pod, "{.status.resourceClaimStatuses[0].resourceClaimName}");
        g_autofree char *sel = get("resourceclaim", claim,
                                   "{.status.allocation.nodeSelector.nodeSelectorTerms[0]."
                                   "matchFields[0].values[0]}");
        g_assert_cmpstr(sel, ==, node);
        g_autofree char *uid = get("pod", pod, "{.metadata.uid}");
        g_autofree char *reserved = get("resourceclaim", claim, "{.status.reservedFor[*].uid}");
        g_assert_cmpstr(reserved, ==, uid);
        g_autofree char *devs = get("resourceclaim", claim,
                                    "{range .status.allocation.devices.results[*]}{.pool}/"
                                    "{.device} {end}");
        g_auto(GStrv) list = g_strsplit(g_strstrip(devs), " ", -1);
        g_assert_cmpuint(g_strv_length(list), ==, 2);
        for (guint d = 0; list[d] != NULL; d++) {
            g_assert_true(g_str_has_prefix(list[d], node));
            g_assert_false(g_hash_table_contains(devices, list[d]));
            g_hash_table_add(devices, g_strdup(list[d]));
        }
    }
    g_assert_cmpuint(g_hash_table_size(devices), ==, 8);
}

static void test_dra_e2e(void)
{
    g_autoptr(GError) error = NULL;
    const char *aargs[] = {"--resource-claim-controller", NULL};
    g_autoptr(KbTestApiserver) own = kb_test_apiserver_start(aargs, &error);
    g_assert_no_error(error);
    api = own;
    g_autofree char *dir = g_dir_make_tmp("kb-dra-e2e-XXXXXX", &error);
    g_autofree char *file = g_build_filename(dir, "nodes.yaml", NULL);
    g_assert_true(g_file_set_contents(file, nodes_yaml, -1, &error));
    const char *kargs[] = {"--nodes", file, "--heartbeat-interval", "200", "--start-delay", "50",
                           "--dra",   NULL};
    g_autoptr(KbTestDaemon) kubelet =
            kb_test_apiserver_spawn(api, "kb-kubelet", FALSE, kargs, NULL);
    const char *bargs[] = {"--schedule-period", "200ms", NULL};
    g_autoptr(KbTestDaemon) sched = kb_test_apiserver_spawn(api, "kube-batchd", TRUE, bargs, NULL);
    apply("deploy/base/crds/podgroup-volcano.yaml");
    apply("deploy/dra/deviceclasses.yaml");
    g_autofree char *slices = wait_until("resourceslices", "", "{.items[*].metadata.name}",
                                         kb_test_value_n_words, GUINT_TO_POINTER(3));
    g_assert_true(kb_test_value_n_words(slices, GUINT_TO_POINTER(3)));

    g_autofree char *train = gang_yaml("train", 4, 2, "NVIDIA-A100-SXM4-80GB");
    g_free(kb_test_kubectl_run(api, train, "apply", "-f", "-", NULL));
    check_train();

    /* 3 H100 GPUs left once a pod holds one, 4 wanted */
    g_autofree char *holder = gang_yaml("holder", 1, 1, "NVIDIA-H100-80GB-HBM3");
    g_free(kb_test_kubectl_run(api, holder, "apply", "-f", "-", NULL));
    g_autofree char *held =
            wait_until("pod", "holder-0", "{.status.phase}", kb_test_value_contains, "Running");
    g_assert_cmpstr(held, ==, "Running");
    g_autofree char *infer = gang_yaml("infer", 2, 2, "NVIDIA-H100-80GB-HBM3");
    g_free(kb_test_kubectl_run(api, infer, "apply", "-f", "-", NULL));
    /* counted as nvidia.com/gpu, the gang is refused admission; the reason names the request */
    const char *want = "the cluster has 3 nvidia.com/gpu free (after admitted jobs), the job needs "
                       "4 to start (each pod's claim default/infer-";
    g_autofree char *cond =
            wait_until("podgroups.scheduling.volcano.sh", "infer",
                       "{.status.conditions[*].message}", kb_test_value_contains, want);
    g_assert_nonnull(strstr(cond, want));
    g_assert_nonnull(strstr(cond, "request gpus: 2 devices of class gpu.nvidia.com)"));
    g_autofree char *nodes = get("pods", "",
                                 "{range .items[?(@.metadata.annotations.scheduling\\.k8s\\.io/"
                                 "group-name==\"infer\")]}{.spec.nodeName}{end}");
    g_assert_cmpstr(nodes, ==, "");
    /* the claims of the short gang: none allocated (the holder's and train's are) */
    g_autofree char *allocated = get(
            "resourceclaims", "", "{range .items[?(@.status.allocation)]}{.metadata.name} {end}");
    g_assert_nonnull(strstr(allocated, "holder-0-"));
    g_assert_null(strstr(allocated, "infer-"));

    g_free(kb_test_kubectl_run(api, unsupported_yaml, "apply", "-f", "-", NULL));
    const char *quoted = "selector \"device.driver.lastIndexOf('.') > 0\" refused";
    g_autofree char *odd =
            wait_until("podgroups.scheduling.volcano.sh", "odd", "{.status.conditions[*].message}",
                       kb_test_value_contains, quoted);
    g_assert_nonnull(strstr(odd, quoted));
    g_assert_cmpint(kb_test_daemon_stop(sched, 10000), ==, 0);
    g_assert_cmpint(kb_test_daemon_stop(kubelet, 10000), ==, 0);
    g_unlink(file);
    g_rmdir(dir);
    api = NULL;
}

static const char one_node_yaml[] =
        "nodes:\n"
        "- count: 1\n"
        "  name: \"a100-{i}\"\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 4}\n";

static const char priority_classes_yaml[] =
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\n"
        "value: 10\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
        "metadata: {name: high}\nvalue: 1000\n";

static gboolean all_running(const char *v, gconstpointer n)
{
    g_auto(GStrv) w = g_strsplit_set(v != NULL ? v : "", " ", -1);
    guint k = 0;
    for (guint i = 0; w[i] != NULL; i++) {
        if (w[i][0] != '\0' && strcmp(w[i], "Running") != 0)
            return FALSE;
        k += w[i][0] != '\0';
    }
    return k == GPOINTER_TO_UINT(n);
}

/* A high-priority DRA gang preempts the low-priority DRA gang that holds every GPU and gets
 * exactly its devices once the victims are gone. */
static void test_dra_preempt(void)
{
    g_autoptr(GError) error = NULL;
    const char *aargs[] = {"--resource-claim-controller", NULL};
    g_autoptr(KbTestApiserver) own = kb_test_apiserver_start(aargs, &error);
    g_assert_no_error(error);
    api = own;
    g_autofree char *dir = g_dir_make_tmp("kb-dra-e2e-XXXXXX", &error);
    g_autofree char *file = g_build_filename(dir, "nodes.yaml", NULL);
    g_assert_true(g_file_set_contents(file, one_node_yaml, -1, &error));
    /* the victims here just started: no minimum run time */
    g_autofree char *conf_text = kb_test_conf_preempt_now();
    g_autofree char *conf = g_build_filename(dir, "scheduler.conf", NULL);
    g_assert_true(g_file_set_contents(conf, conf_text, -1, &error));
    const char *kargs[] = {"--nodes", file, "--heartbeat-interval", "200", "--start-delay", "50",
                           "--dra",   NULL};
    g_autoptr(KbTestDaemon) kubelet =
            kb_test_apiserver_spawn(api, "kb-kubelet", FALSE, kargs, NULL);
    g_free(kb_test_kubectl_run(api, priority_classes_yaml, "apply", "-f", "-", NULL));
    const char *bargs[] = {"--schedule-period", "200ms", "--scheduler-conf", conf, NULL};
    g_autoptr(KbTestDaemon) sched = kb_test_apiserver_spawn(api, "kube-batchd", TRUE, bargs, NULL);
    apply("deploy/base/crds/podgroup-volcano.yaml");
    apply("deploy/dra/deviceclasses.yaml");
    g_autofree char *slices = wait_until("resourceslices", "", "{.items[*].metadata.name}",
                                         kb_test_value_n_words, GUINT_TO_POINTER(1));
    g_assert_true(kb_test_value_n_words(slices, GUINT_TO_POINTER(1)));

    const char *lo_phases = "{range .items[?(@.metadata.annotations.scheduling\\.k8s\\.io/"
                            "group-name==\"lo\")]}{.status.phase} {end}";
    const char *hi_phases = "{range .items[?(@.metadata.annotations.scheduling\\.k8s\\.io/"
                            "group-name==\"hi\")]}{.status.phase} {end}";
    g_autofree char *lo = pc_gang_yaml("lo", 2, 2, "low");
    g_free(kb_test_kubectl_run(api, lo, "apply", "-f", "-", NULL));
    g_autofree char *lo_run = wait_until("pods", "", lo_phases, all_running, GUINT_TO_POINTER(2));
    g_assert_true(all_running(lo_run, GUINT_TO_POINTER(2)));
    g_autofree char *victims = gang_devices("lo", 2);
    g_assert_cmpstr(victims, ==, "a100-0/gpu-0 a100-0/gpu-1 a100-0/gpu-2 a100-0/gpu-3");

    g_autofree char *hi = pc_gang_yaml("hi", 2, 2, "high");
    g_free(kb_test_kubectl_run(api, hi, "apply", "-f", "-", NULL));
    g_autofree char *hi_run = wait_until("pods", "", hi_phases, all_running, GUINT_TO_POINTER(2));
    g_assert_true(all_running(hi_run, GUINT_TO_POINTER(2)));
    /* the victims are gone, their generated claims with them */
    g_autofree char *lo_left =
            wait_until("pods", "", lo_phases, kb_test_value_n_words, GUINT_TO_POINTER(0));
    g_assert_cmpstr(lo_left, ==, "");
    g_autofree char *claims = wait_until("resourceclaims", "", "{.items[*].metadata.name}",
                                         kb_test_value_n_words, GUINT_TO_POINTER(2));
    g_assert_null(strstr(claims, "lo-"));
    g_autofree char *got = gang_devices("hi", 2);
    g_assert_cmpstr(got, ==, victims);
    g_assert_cmpint(kb_test_daemon_stop(sched, 10000), ==, 0);
    g_assert_cmpint(kb_test_daemon_stop(kubelet, 10000), ==, 0);
    g_unlink(conf);
    g_unlink(file);
    g_rmdir(dir);
    api = NULL;
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!kb_test_kubectl_available()) {
        g_test_add_func("/dra-e2e/skipped", kb_test_skip_no_kubectl);
        return g_test_run();
    }
    g_test_add_func("/dra-e2e/gang-short-selector-unsupported", test_dra_e2e);
    g_test_add_func("/dra-e2e/preempt-frees-claims", test_dra_preempt);
    return g_test_run();
}
