/*
 * kbctl top node and kbctl get show which DRA device serves which pod, against bin/kb-apiserver
 * --resource-claim-controller with real objects:
 *
 * - a100-0 (4 GPUs in two NVLink islands, bin/kb-kubelet --dra): the TFJob "train"'s two workers
 *   each get a GPU through a claim from a template, allocated by bin/kube-batchd;
 * - mig-0 (1 GPU, a second bin/kb-kubelet --dra --mig: a counter set and 15 partitionable
 *   devices): two MIG devices (1g.10gb at memory slice 0, 3g.40gb at 4) allocated by hand to two
 *   pods bound by hand, as another allocator would write them;
 * - shared-0 (1 GPU labelled kube-batchd.io/gpu-sharing=memory: allowMultipleAllocations): two
 *   claims sharing the GPU with 10Gi and 20Gi of its memory, written by hand.
 *
 * Table, JSON and YAML outputs are checked. Skipped without kubectl.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-c/json.h>
#include <string.h>
#include <sys/wait.h>

#include "cli/kbctl-dra.h"
#include "cli/kbctl.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-util.h"

static KbTestApiserver *api;
static char *logdir; /* the daemons' logs, kept when a test fails (or with KB_KEEP_LOGS) */

static const char dra_nodes[] =
        "nodes:\n"
        "- name: a100-0\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
        "  annotations: {kube-batchd.io/gpu-topology: '{\"nvlink\": [[0, 1], [2, 3]]}'}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 4}\n"
        "- name: shared-0\n"
        "  labels: {kube-batchd.io/gpu-sharing: memory}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 1}\n";

static const char mig_nodes[] = "nodes:\n"
                                "- name: mig-0\n"
                                "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, "
                                "nvidia.com/gpu: 1}\n";

static const char train_yaml[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: train, namespace: default}\n"
        "spec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n"
        "        spec:\n          schedulerName: kube-batchd\n"
        "          containers: [{name: tensorflow, image: tf}]\n"
        "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: train, namespace: default}\nspec: {minMember: 2, queue: default}\n"
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
        "metadata: {name: one-gpu, namespace: default}\n"
        "spec:\n  spec:\n    devices:\n      requests:\n      - name: gpus\n"
        "        exactly: {deviceClassName: gpu.nvidia.com, count: 1}\n";

/* Worker @i of TFJob train (pods made here, as tf-operator would, with the job's labels). */
static char *worker_yaml(guint i)
{
    return g_strdup_printf(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: train-worker-%u\n"
            "  namespace: default\n"
            "  labels: {training.kubeflow.org/job-name: train, "
            "training.kubeflow.org/replica-type: worker, "
            "training.kubeflow.org/replica-index: \"%u\"}\n"
            "  annotations: {scheduling.k8s.io/group-name: train, "
            "sim.kube-batchd.io/run-seconds: \"3600\"}\n"
            "spec:\n  schedulerName: kube-batchd\n  resourceClaims: [{name: gpus, "
            "resourceClaimTemplateName: one-gpu}]\n  containers:\n  - name: tensorflow\n"
            "    image: tf\n    resources: {claims: [{name: gpus}]}\n",
            i, i);
}

/* A claim @name of class @cls and a pod of the same name bound by hand to @node. */
static char *hand_yaml(const char *name, const char *cls, const char *node)
{
    return g_strdup_printf(
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
            "metadata: {name: %s, namespace: default}\n"
            "spec:\n  devices:\n    requests:\n    - name: dev\n"
            "      exactly: {deviceClassName: %s}\n"
            "---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: default}\n"
            "spec:\n  schedulerName: someone-else\n  nodeName: %s\n"
            "  resourceClaims: [{name: dev, resourceClaimName: %s}]\n"
            "  containers: [{name: c, image: x}]\n",
            name, cls, name, node, name);
}

/* Allocate claim @name (its pod of the same name) on @node with @device of pool @node, the
 * result's extra members @extra (JSON, "" for none), as an allocator writes it. */
static void allocate_by_hand(const char *name, const char *node, const char *device,
                             const char *extra)
{
    g_autofree char *uid = kb_test_kubectl_run(api, NULL, "get", "pod", name, "-o",
                                               "jsonpath={.metadata.uid}", NULL);
    g_assert_cmpuint(strlen(uid), >, 0);
    g_autofree char *patch = g_strdup_printf(
            "{\"status\": {\"allocation\": {\"devices\": {\"results\": [{\"request\": \"dev\", "
            "\"driver\": \"gpu.nvidia.com\", \"pool\": \"%s\", \"device\": \"%s\"%s}]}, "
            "\"nodeSelector\": {\"nodeSelectorTerms\": [{\"matchFields\": [{\"key\": "
            "\"metadata.name\", \"operator\": \"In\", \"values\": [\"%s\"]}]}]}}, "
            "\"reservedFor\": [{\"resource\": \"pods\", \"name\": \"%s\", \"uid\": \"%s\"}]}}",
            node, device, extra, node, name, uid);
    g_autofree char *out =
            kb_test_kubectl_run(api, NULL, "patch", "resourceclaim", name, "--subresource=status",
                                "--type=merge", "-p", patch, NULL);
    g_assert_nonnull(strstr(out, "patched"));
}

static void apply_text(const char *text)
{
    g_free(kb_test_kubectl_run(api, text, "apply", "-f", "-", NULL));
}

static void apply_file(const char *rel)
{
    g_autofree char *path = g_build_filename(kb_test_src_dir(), rel, NULL);
    g_free(kb_test_kubectl_run(api, NULL, "apply", "-f", path, NULL));
}

/* stdout of `kbctl --server URL ARGS...` (NULL-terminated), which must exit 0. */
static char *kbctl(const char *first, ...)
{
    g_autofree char *bin = g_build_filename(kb_test_bin_dir(), "kbctl", NULL);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, bin);
    g_ptr_array_add(argv, (gpointer) "--server");
    g_ptr_array_add(argv, (gpointer)kb_test_apiserver_url(api));
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(argv, (gpointer)a);
    va_end(ap);
    g_ptr_array_add(argv, NULL);
    g_auto(GStrv) envp = g_environ_unsetenv(g_get_environ(), "KUBECONFIG");
    g_autofree char *err = NULL;
    char *out = NULL;
    int status = 0;
    g_autoptr(GError) error = NULL;
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, envp, G_SPAWN_DEFAULT, NULL, NULL, &out,
                               &err, &status, &error));
    g_assert_no_error(error);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        g_test_message("kbctl %s: status %d: %s", first, status, err);
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return out;
}

static json_object *kbctl_json(const char *first, const char *second)
{
    g_autofree char *out = kbctl(first, second, "-o", "json", NULL);
    json_object *j = json_tokener_parse(out);
    if (j == NULL)
        g_test_message("not JSON: %s", out);
    g_assert_nonnull(j);
    return j;
}

static json_object *member(json_object *o, const char *name)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, name, &v) ? v : NULL;
}

static const char *str(json_object *o, const char *name)
{
    return json_object_get_string(member(o, name));
}

/* The item of `top node -o json` for @node. */
static json_object *node_item(json_object *top, const char *node)
{
    json_object *items = member(top, "items");
    for (size_t i = 0; i < json_object_array_length(items); i++)
        if (g_strcmp0(str(json_object_array_get_idx(items, i), "name"), node) == 0)
            return json_object_array_get_idx(items, i);
    g_assert_not_reached();
}

static json_object *device_item(json_object *node, const char *device)
{
    json_object *devs = member(node, "draDevices");
    for (size_t i = 0; i < json_object_array_length(devs); i++)
        if (g_strcmp0(str(json_object_array_get_idx(devs, i), "device"), device) == 0)
            return json_object_array_get_idx(devs, i);
    g_test_message("no device %s", device);
    g_assert_not_reached();
}

/* The claim of @alloc names @pod alone. */
static void assert_serves(json_object *alloc, const char *pod)
{
    json_object *pods = member(alloc, "pods");
    g_assert_cmpuint(json_object_array_length(pods), ==, 1);
    g_assert_cmpstr(json_object_get_string(json_object_array_get_idx(pods, 0)), ==, pod);
}

/* Both workers of train hold one device each, by `kbctl get train -o json` (90 s at most). */
static json_object *wait_train_devices(void)
{
    for (int i = 0; i < 450; i++) {
        json_object *j = kbctl_json("get", "train");
        json_object *reps = member(j, "replicas");
        guint with = 0;
        for (size_t r = 0; reps != NULL && r < json_object_array_length(reps); r++)
            with += json_object_array_length(
                            member(json_object_array_get_idx(reps, r), "devices")) == 1;
        if (with == 2)
            return j;
        json_object_put(j);
        g_usleep(200 * 1000);
    }
    g_test_message("train's workers never got their devices");
    g_assert_not_reached();
}

static void check_get(void)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    json_object *j = wait_train_devices();
    json_object *reps = member(j, "replicas");
    for (size_t r = 0; r < json_object_array_length(reps); r++) {
        json_object *rep = json_object_array_get_idx(reps, r);
        const char *dev =
                json_object_get_string(json_object_array_get_idx(member(rep, "devices"), 0));
        g_assert_true(g_str_has_prefix(dev, "gpu.nvidia.com/a100-0/gpu-"));
        g_assert_false(g_hash_table_contains(seen, dev));
        g_hash_table_add(seen, (gpointer)dev);
    }
    /* the table names each worker's device beside it */
    g_autofree char *table = kbctl("get", "train", NULL);
    g_assert_nonnull(strstr(table, "DEVICES"));
    const char *dev0 = json_object_get_string(
            json_object_array_get_idx(member(json_object_array_get_idx(reps, 0), "devices"), 0));
    g_auto(GStrv) lines = g_strsplit(table, "\n", -1);
    gboolean found = FALSE;
    for (guint i = 0; lines[i] != NULL; i++)
        found |= strstr(lines[i], "train-worker-0") != NULL && strstr(lines[i], dev0) != NULL;
    g_test_message("%s", table);
    g_assert_true(found);
    json_object_put(j);
}

static void check_whole_gpus(json_object *top)
{
    json_object *a100 = node_item(top, "a100-0");
    json_object *devs = member(a100, "draDevices");
    g_assert_cmpuint(json_object_array_length(devs), ==, 4);
    guint held = 0;
    for (size_t i = 0; i < 4; i++) {
        json_object *d = json_object_array_get_idx(devs, i);
        g_assert_cmpstr(str(d, "productName"), ==, "NVIDIA-A100-SXM4-80GB");
        /* GPUs 0-1 are island 0, 2-3 island 1 (the topology annotation) */
        g_assert_cmpstr(str(d, "nvlinkIsland"), ==, i < 2 ? "0" : "1");
        json_object *alloc = member(d, "allocations");
        if (json_object_array_length(alloc) == 0)
            continue;
        held++;
        json_object *a = json_object_array_get_idx(alloc, 0);
        g_assert_true(g_str_has_prefix(str(a, "claim"), "default/train-worker-"));
        g_assert_cmpstr(str(a, "request"), ==, "gpus");
        const char *pod = json_object_get_string(json_object_array_get_idx(member(a, "pods"), 0));
        g_assert_true(g_str_has_prefix(pod, "default/train-worker-"));
    }
    g_assert_cmpuint(held, ==, 2);
}

static void check_mig(json_object *top)
{
    json_object *mig = node_item(top, "mig-0");
    json_object *sets = member(mig, "counterSets");
    g_assert_cmpuint(json_object_array_length(sets), ==, 1);
    json_object *set = json_object_array_get_idx(sets, 0);
    g_assert_cmpstr(str(set, "name"), ==, "gpu-0-counter-set");
    json_object *c = member(set, "counters");
    /* 1g.10gb at slice 0 (14 SMs) + 3g.40gb at 4 (slices 4-7, 42 SMs) of an A100's 98 */
    g_assert_cmpstr(str(member(c, "multiprocessors"), "consumed"), ==, "56");
    g_assert_cmpstr(str(member(c, "multiprocessors"), "left"), ==, "42");
    g_assert_cmpstr(str(member(c, "memory-slice-0"), "left"), ==, "0");
    g_assert_cmpstr(str(member(c, "memory-slice-1"), "left"), ==, "1");
    g_assert_cmpstr(str(member(c, "memory-slice-5"), "consumed"), ==, "1");
    g_assert_cmpint(json_object_get_int(member(set, "devices")), ==, 15);
    g_assert_cmpuint(json_object_array_length(member(set, "allocatedDevices")), ==, 2);
    /* slices 1-3 left: 1g.10gb at 1, 2, 3 and 2g.20gb at 2 */
    g_assert_cmpint(json_object_get_int(member(set, "freeDevicesThatFit")), ==, 4);
    json_object *d = device_item(mig, "gpu-0-mig-1g10gb-19-0");
    g_assert_cmpstr(str(d, "counterSet"), ==, "gpu-0-counter-set");
    assert_serves(json_object_array_get_idx(member(d, "allocations"), 0), "default/mig-a");
    d = device_item(mig, "gpu-0-mig-3g40gb-9-4");
    assert_serves(json_object_array_get_idx(member(d, "allocations"), 0), "default/mig-b");
    g_assert_cmpuint(json_object_array_length(member(device_item(mig, "gpu-0"), "allocations")), ==,
                     0);
}

static void check_shared(json_object *top)
{
    json_object *d = device_item(node_item(top, "shared-0"), "gpu-0");
    g_assert_true(json_object_get_boolean(member(d, "allowMultipleAllocations")));
    json_object *alloc = member(d, "allocations");
    g_assert_cmpuint(json_object_array_length(alloc), ==, 2);
    guint tens = 0, twenties = 0;
    for (size_t i = 0; i < 2; i++) {
        json_object *a = json_object_array_get_idx(alloc, i);
        const char *mem = str(member(a, "consumedCapacity"), "memory");
        tens += g_strcmp0(mem, "10Gi") == 0;
        twenties += g_strcmp0(mem, "20Gi") == 0;
        assert_serves(a, g_strcmp0(mem, "10Gi") == 0 ? "default/share-a" : "default/share-b");
        g_assert_nonnull(str(a, "shareID"));
    }
    g_assert_cmpuint(tens + twenties, ==, 2);
    g_assert_cmpstr(str(member(d, "capacityLeft"), "memory"), ==, "50Gi");
}

static void check_top_table(void)
{
    g_autofree char *t = kbctl("top", "node", NULL);
    g_assert_nonnull(strstr(t, "DRA device -> claim -> pod:"));
    g_assert_nonnull(strstr(t, "counter set gpu.nvidia.com/mig-0/gpu-0-counter-set: "));
    g_assert_nonnull(strstr(t, "multiprocessors 56/98 (42 left)"));
    g_assert_nonnull(strstr(t, "2 of 15 devices allocated; 4 of the 13 free still fit"));
    g_assert_nonnull(strstr(t, "memory 50Gi left"));
    g_auto(GStrv) lines = g_strsplit(t, "\n", -1);
    guint mig_a = 0, share_b = 0;
    for (guint i = 0; lines[i] != NULL; i++) {
        mig_a += strstr(lines[i], "gpu.nvidia.com/mig-0/gpu-0-mig-1g10gb-19-0") != NULL &&
                 strstr(lines[i], "default/mig-a (dev)") != NULL &&
                 strstr(lines[i], "multiprocessors 14") != NULL;
        share_b += strstr(lines[i], "gpu.nvidia.com/shared-0/gpu-0") != NULL &&
                   strstr(lines[i], "memory 20Gi") != NULL &&
                   strstr(lines[i], "default/share-b") != NULL;
    }
    g_test_message("%s", t);
    g_assert_cmpuint(mig_a, ==, 1);
    g_assert_cmpuint(share_b, ==, 1);
    g_autofree char *yaml = kbctl("top", "node", "-o", "yaml", NULL);
    g_assert_nonnull(strstr(yaml, "counterSets:"));
    g_assert_nonnull(strstr(yaml, "freeDevicesThatFit: 4"));
}

static gboolean file_in(const char *dir, const char *name, const char *text, char **path)
{
    *path = g_build_filename(dir, name, NULL);
    return g_file_set_contents(*path, text, -1, NULL);
}

static void test_devices(void)
{
    g_autoptr(GError) error = NULL;
    const char *aargs[] = {"--resource-claim-controller", NULL};
    g_autoptr(KbTestApiserver) own = kb_test_apiserver_start(aargs, &error);
    g_assert_no_error(error);
    api = own;
    g_autofree char *dir = g_dir_make_tmp("kb-kbctl-dra-XXXXXX", &error);
    g_autofree char *f1 = NULL, *f2 = NULL;
    g_assert_true(file_in(dir, "dra.yaml", dra_nodes, &f1));
    g_assert_true(file_in(dir, "mig.yaml", mig_nodes, &f2));
    const char *k1[] = {"--nodes", f1, "--heartbeat-interval", "200", "--dra", NULL};
    const char *k2[] = {"--nodes", f2, "--heartbeat-interval", "200", "--dra", "--mig", NULL};
    g_autoptr(KbTestDaemon) kubelet1 =
            kb_test_apiserver_spawn(api, "kb-kubelet", FALSE, k1, logdir);
    g_autofree char *logdir2 = g_build_filename(logdir, "mig", NULL);
    g_assert_cmpint(g_mkdir(logdir2, 0700), ==, 0);
    g_autoptr(KbTestDaemon) kubelet2 =
            kb_test_apiserver_spawn(api, "kb-kubelet", FALSE, k2, logdir2);
    const char *bargs[] = {"--schedule-period", "200ms", NULL};
    g_autoptr(KbTestDaemon) sched =
            kb_test_apiserver_spawn(api, "kube-batchd", TRUE, bargs, logdir);
    apply_file("deploy/base/crds");
    apply_file("deploy/base/default-queue.yaml");
    apply_file("deploy/dra/deviceclasses.yaml");

    apply_text(train_yaml);
    for (guint i = 0; i < 2; i++) {
        g_autofree char *w = worker_yaml(i);
        apply_text(w);
    }
    static const struct {
        const char *name, *cls, *node, *device, *extra;
    } hand[] = {
            {"mig-a", "mig.nvidia.com", "mig-0", "gpu-0-mig-1g10gb-19-0", ""},
            {"mig-b", "mig.nvidia.com", "mig-0", "gpu-0-mig-3g40gb-9-4", ""},
            {"share-a", "gpu.nvidia.com", "shared-0", "gpu-0",
             ", \"shareID\": \"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\", "
             "\"consumedCapacity\": {\"memory\": \"10Gi\"}"},
            {"share-b", "gpu.nvidia.com", "shared-0", "gpu-0",
             ", \"shareID\": \"1f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\", "
             "\"consumedCapacity\": {\"memory\": \"20Gi\"}"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(hand); i++) {
        g_autofree char *y = hand_yaml(hand[i].name, hand[i].cls, hand[i].node);
        apply_text(y);
        allocate_by_hand(hand[i].name, hand[i].node, hand[i].device, hand[i].extra);
    }

    check_get();
    /* the slices are there before kube-batchd could allocate train's claims */
    g_autoptr(KbctlJson) top = kbctl_json("top", "node");
    check_whole_gpus(top);
    check_mig(top);
    check_shared(top);
    check_top_table();

    g_assert_cmpint(kb_test_daemon_stop(sched, 10000), ==, 0);
    g_assert_cmpint(kb_test_daemon_stop(kubelet1, 10000), ==, 0);
    g_assert_cmpint(kb_test_daemon_stop(kubelet2, 10000), ==, 0);
    g_unlink(f1);
    g_unlink(f2);
    g_rmdir(dir);
    api = NULL;
}

/* A claim naming a device no slice publishes is reported, not shown on a node; devices sort in
 * natural order (gpu-2 before gpu-10). */
static void test_join(void)
{
    g_autoptr(KbctlJson) slices = json_tokener_parse(
            "[{\"spec\": {\"driver\": \"d\", \"nodeName\": \"n\", \"pool\": {\"name\": \"n\"},"
            " \"devices\": [{\"name\": \"gpu-10\"}, {\"name\": \"gpu-2\"}]}}]");
    g_autoptr(KbctlJson) claims = json_tokener_parse(
            "[{\"metadata\": {\"namespace\": \"ns\", \"name\": \"c\"}, \"status\": {"
            "\"allocation\": {\"devices\": {\"results\": [{\"request\": \"r\", \"driver\": "
            "\"d\", \"pool\": \"n\", \"device\": \"gpu-10\"}, {\"request\": \"r\", \"driver\": "
            "\"d\", \"pool\": \"n\", \"device\": \"gone\"}]}}, \"reservedFor\": [{\"resource\": "
            "\"pods\", \"name\": \"p\", \"uid\": \"u\"}]}}]");
    g_autoptr(KbctlDra) dra = kbctl_dra_new(slices, claims);
    g_assert_cmpuint(dra->devices->len, ==, 2);
    g_assert_cmpstr(((KbctlDraDevice *)g_ptr_array_index(dra->devices, 0))->name, ==, "gpu-2");
    g_autofree char *s = kbctl_dra_pod_devices_string(dra, "ns", "p");
    g_assert_cmpstr(s, ==, "d/n/gpu-10");
    g_assert_cmpuint(dra->unknown->len, ==, 1);
    g_assert_cmpstr(g_ptr_array_index(dra->unknown, 0), ==,
                    "claim ns/c: device d/n/gone is in no ResourceSlice");
    g_assert_null(kbctl_dra_pod_devices(dra, "ns", "q"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kbctl-dra/unit/join", test_join);
    if (!kb_test_kubectl_available()) {
        g_test_add_func("/kbctl-dra/skipped", kb_test_skip_no_kubectl);
        return g_test_run();
    }
    g_test_add_func("/kbctl-dra/top-node-and-get", test_devices);
    logdir = g_dir_make_tmp("kb-kbctl-dra-logs-XXXXXX", NULL);
    g_assert_nonnull(logdir);
    g_test_message("daemons' logs in %s (kept when a test fails)", logdir);
    int rc = g_test_run();
    return kb_test_log_dir_finish(logdir, rc);
}
