/*
 * Sharing GPUs through DRA end to end (issue 28): bin/kube-batchd against bin/kb-apiserver
 * --resource-claim-controller with bin/kb-kubelet --dra --mig publishing every GPU as
 * MIG-capable (a node labelled kube-batchd.io/gpu-sharing=memory publishes GPUs shared by
 * memory instead), NVIDIA's DeviceClasses from deploy/dra, driven with kubectl.
 *
 * - One MIG-capable A100: three claims for a 1g.10gb profile and one for 3g.40gb are allocated
 *   together on placements that share no memory slice, their pods Running; a further 3g.40gb
 *   waits, the PodGroup's condition naming the request and the exhausted counter.
 * - One GPU shared by memory (80Gi): two claims of 40Gi both allocated on it (consumedCapacity
 *   40Gi, distinct shareIDs), their pods Running; a third of 40Gi waits, naming the capacity.
 * - A claim with firstAvailable [an 80 GB GPU, two 40 GB GPUs] gets the 80 GB GPU; a second one,
 *   with no 80 GB GPU free, gets two 40 GB GPUs.
 * - Preemption frees slices (kube-batchd with the preempt action): on an A100 full of
 *   low-priority 1g.10gb pods, a high-priority 3g.40gb claim's pod evicts only pods whose slices
 *   its placement needs, the fewest (three), and runs there once they are gone.
 * - Quotas count slices by the part of a GPU they take: a queue with a capability of one GPU
 *   runs seven 1g.10gb pods; the eighth waits, its condition naming the queue and the resource.
 *
 * Skipped without kubectl.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-util.h"
#include "tests/lib/kb-test-confs.h"

static KbTestApiserver *api;
static KbTestDaemon *scheduler; /* kube-batchd, for its log when a wait fails */

/* `kubectl get` through the test's server; see kb_test_kubectl_jsonpath(). */
static char *get(const char *kind, const char *name, const char *path)
{
    return kb_test_kubectl_jsonpath(api, kind, name, path);
}

/* Poll until `kubectl get KIND NAME -o jsonpath=PATH` satisfies @done (90 s at most). */
static char *wait_until(const char *kind, const char *name, const char *path, KbTestValueFunc done,
                        gconstpointer data)
{
    return kb_test_kubectl_wait(api, kind, name, path, done, data, 90000);
}

static const char nodes_yaml[] =
        "nodes:\n"
        "- name: mig-0\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 1}\n"
        "- name: share-0\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, kube-batchd.io/gpu-sharing: "
        "memory}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 1}\n"
        "- name: big-0\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.memory: "
        "\"81920\"}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 1}\n"
        "- name: small-0\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-A100-PCIE-40GB, nvidia.com/gpu.memory: "
        "\"40960\"}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 2}\n";

/* A one-pod gang @name using claim @name whose one request "gpu" is @request (YAML lines at the
 * request's indentation, after "- name: gpu"), of priority class @pc (NULL: none). */
static char *pc_pod_yaml(const char *name, const char *request, const char *pc)
{
    g_autofree char *gpc =
            pc != NULL ? g_strdup_printf(", priorityClassName: %s", pc) : g_strdup("");
    g_autofree char *ppc =
            pc != NULL ? g_strdup_printf("  priorityClassName: %s\n", pc) : g_strdup("");
    return g_strdup_printf(
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
            "metadata: {name: %s, namespace: default}\n"
            "spec:\n  devices:\n    requests:\n    - name: gpu\n%s"
            "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
            "metadata: {name: %s, namespace: default}\nspec: {minMember: 1, queue: default%s}\n"
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: default\n"
            "  annotations: {scheduling.k8s.io/group-name: %s, "
            "sim.kube-batchd.io/run-seconds: \"3600\"}\n"
            "spec:\n  schedulerName: kube-batchd\n%s  resourceClaims: [{name: gpu, "
            "resourceClaimName: %s}]\n  containers:\n  - name: c\n    image: x\n"
            "    resources: {claims: [{name: gpu}]}\n",
            name, request, name, gpc, name, name, ppc, name);
}

static char *one_pod_yaml(const char *name, const char *request)
{
    return pc_pod_yaml(name, request, NULL);
}

static void create(const char *yaml)
{
    g_free(kb_test_kubectl_run(api, yaml, "apply", "-f", "-", NULL));
}

/* A pod of claim @name for MIG profile @profile, of priority class @pc (NULL: none). */
static void mig_claim_pc(const char *name, const char *profile, const char *pc)
{
    g_autofree char *req = g_strdup_printf(
            "      exactly:\n        deviceClassName: mig.nvidia.com\n        selectors:\n"
            "        - cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == '%s' && "
            "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA-A100-SXM4-80GB'\"}\n",
            profile);
    g_autofree char *yaml = pc_pod_yaml(name, req, pc);
    create(yaml);
}

static void mig_claim(const char *name, const char *profile)
{
    mig_claim_pc(name, profile, NULL);
}

static void share_claim(const char *name, const char *memory)
{
    g_autofree char *req = g_strdup_printf(
            "      exactly:\n        deviceClassName: gpu.nvidia.com\n        selectors:\n"
            "        - cel: {expression: \"device.allowMultipleAllocations\"}\n"
            "        capacity: {requests: {memory: %s}}\n",
            memory);
    g_autofree char *yaml = one_pod_yaml(name, req);
    create(yaml);
}

static void first_available_claim(const char *name)
{
    static const char req[] =
            "      firstAvailable:\n"
            "      - name: gpu-80gb\n        deviceClassName: gpu.nvidia.com\n        selectors:\n"
            "        - cel: {expression: \"device.capacity['gpu.nvidia.com'].memory.compareTo("
            "quantity('80Gi')) >= 0 && !device.allowMultipleAllocations\"}\n"
            "      - name: two-40gb\n        deviceClassName: gpu.nvidia.com\n        count: 2\n"
            "        selectors:\n"
            "        - cel: {expression: \"device.capacity['gpu.nvidia.com'].memory.compareTo("
            "quantity('40Gi')) == 0\"}\n";
    g_autofree char *yaml = one_pod_yaml(name, req);
    create(yaml);
}

static char *wait_running(const char *pod)
{
    char *phase = wait_until("pod", pod, "{.status.phase}", kb_test_value_contains, "Running");
    if (!kb_test_value_contains(phase, "Running")) {
        /* say why, for the log of a failed run */
        g_autofree char *cond =
                get("podgroups.scheduling.volcano.sh", pod, "{.status.conditions[*].message}");
        g_autofree char *node = get("pod", pod, "{.spec.nodeName}");
        g_autofree char *claim = get("resourceclaim", pod, "{.status}");
        g_autofree char *events = kb_test_kubectl_run(api, NULL, "get", "events", NULL);
        g_autofree char *log = NULL;
        gsize len = 0;
        const char *path = scheduler != NULL ? kb_test_daemon_log_path(scheduler) : NULL;
        if (path != NULL)
            g_file_get_contents(path, &log, &len, NULL);
        g_test_message("pod %s on \"%s\"; podgroup: %s; claim status: %s; events:\n%s\n"
                       "kube-batchd's log (end):\n%s",
                       pod, node, cond, claim, events,
                       log != NULL ? log + (len > 8000 ? len - 8000 : 0) : "");
    }
    return phase;
}

/* The memory slices (bits) of MIG device gpu-<g>-mig-<profile>-<id>-<start>. */
static guint mig_slices_of(const char *device)
{
    guint size = strstr(device, "-1g") != NULL ? 1 : strstr(device, "-2g") != NULL ? 2 : 4;
    const char *start = strrchr(device, '-');
    g_assert_nonnull(start);
    return ((1u << size) - 1) << atoi(start + 1);
}

static void check_mig(void)
{
    static const char *const names[] = {"mig-a", "mig-b", "mig-c", "mig-d"};
    mig_claim("mig-a", "1g.10gb");
    mig_claim("mig-b", "1g.10gb");
    mig_claim("mig-c", "1g.10gb");
    mig_claim("mig-d", "3g.40gb");
    guint used = 0;
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *phase = wait_running(names[i]);
        g_assert_cmpstr(phase, ==, "Running");
        g_autofree char *node = get("pod", names[i], "{.spec.nodeName}");
        g_assert_cmpstr(node, ==, "mig-0");
        g_autofree char *dev =
                get("resourceclaim", names[i], "{.status.allocation.devices.results[0].device}");
        g_test_message("%s: %s", names[i], dev);
        g_assert_true(g_str_has_prefix(dev, "gpu-0-mig-"));
        guint s = mig_slices_of(dev);
        g_assert_cmpuint(used & s, ==, 0);
        used |= s;
    }
    mig_claim("mig-e", "3g.40gb");
    const char *want = "claim default/mig-e request gpu: 1 device of class mig.nvidia.com wanted, "
                       "0 free on node mig-0 (counter ";
    g_autofree char *cond =
            wait_until("podgroups.scheduling.volcano.sh", "mig-e",
                       "{.status.conditions[*].message}", kb_test_value_contains, want);
    g_assert_nonnull(strstr(cond, want));
    g_assert_nonnull(strstr(cond, " of gpu-0-counter-set exhausted: "));
    g_autofree char *alloc = get("resourceclaim", "mig-e", "{.status.allocation}");
    g_assert_cmpstr(alloc, ==, "");
}

static void check_shares(void)
{
    share_claim("share-a", "40Gi");
    share_claim("share-b", "40Gi");
    for (guint i = 0; i < 2; i++) {
        const char *name = i == 0 ? "share-a" : "share-b";
        g_autofree char *phase = wait_running(name);
        g_assert_cmpstr(phase, ==, "Running");
        g_autofree char *node = get("pod", name, "{.spec.nodeName}");
        g_assert_cmpstr(node, ==, "share-0");
        g_autofree char *took = get("resourceclaim", name,
                                    "{.status.allocation.devices.results[0].device} "
                                    "{.status.allocation.devices.results[0].consumedCapacity."
                                    "memory}");
        g_assert_cmpstr(took, ==, "gpu-0 40Gi");
    }
    g_autofree char *ida =
            get("resourceclaim", "share-a", "{.status.allocation.devices.results[0].shareID}");
    g_autofree char *idb =
            get("resourceclaim", "share-b", "{.status.allocation.devices.results[0].shareID}");
    g_assert_cmpuint(strlen(ida), ==, 36);
    g_assert_cmpstr(ida, !=, idb);
    share_claim("share-c", "40Gi");
    const char *want = "(capacity memory of device gpu.nvidia.com/share-0/gpu-0 exhausted: 40Gi "
                       "wanted, 0 left)";
    g_autofree char *cond =
            wait_until("podgroups.scheduling.volcano.sh", "share-c",
                       "{.status.conditions[*].message}", kb_test_value_contains, want);
    g_assert_nonnull(strstr(cond, want));
}

static void check_first_available(void)
{
    first_available_claim("fa-a");
    g_autofree char *a = wait_running("fa-a");
    g_assert_cmpstr(a, ==, "Running");
    g_autofree char *ra = get("resourceclaim", "fa-a",
                              "{.status.allocation.devices.results[*].request} "
                              "{.status.allocation.devices.results[*].pool}");
    g_assert_cmpstr(ra, ==, "gpu/gpu-80gb big-0");
    /* the only 80 GB GPU is held: the second alternative */
    first_available_claim("fa-b");
    g_autofree char *b = wait_running("fa-b");
    g_assert_cmpstr(b, ==, "Running");
    g_autofree char *rb = get("resourceclaim", "fa-b",
                              "{.status.allocation.devices.results[*].request} "
                              "{.status.allocation.devices.results[*].pool}");
    g_assert_cmpstr(rb, ==, "gpu/two-40gb gpu/two-40gb small-0 small-0");
}

static void apply(const char *rel)
{
    g_autofree char *path = g_build_filename(kb_test_src_dir(), rel, NULL);
    g_free(kb_test_kubectl_run(api, NULL, "apply", "-f", path, NULL));
}

/*
 * A test's cluster, also in the file's statics api and scheduler: kb-apiserver with the
 * resource-claim controller, kb-kubelet --dra --mig running @nodes, @objects (YAML, may be NULL)
 * created, kube-batchd (with @conf as its configuration; NULL: the default), Volcano's PodGroup
 * CRD and the DeviceClasses applied.
 */
typedef struct {
    KbTestApiserver *api;
    KbTestDaemon *kubelet;
    KbTestDaemon *sched;
    char *dir;
} MigCluster;

static void cluster_start(MigCluster *c, const char *nodes, const char *objects, const char *conf)
{
    g_autoptr(GError) error = NULL;
    const char *aargs[] = {"--resource-claim-controller", NULL};
    c->api = kb_test_apiserver_start(aargs, &error);
    g_assert_no_error(error);
    api = c->api;
    c->dir = g_dir_make_tmp("kb-mig-e2e-XXXXXX", &error);
    g_assert_no_error(error);
    g_autofree char *file = g_build_filename(c->dir, "nodes.yaml", NULL);
    g_assert_true(g_file_set_contents(file, nodes, -1, &error));
    const char *kargs[] = {
            "--nodes", file, "--heartbeat-interval", "200", "--start-delay", "50", "--dra",
            "--mig",   NULL};
    c->kubelet = kb_test_apiserver_spawn(api, "kb-kubelet", FALSE, kargs, NULL);
    if (objects != NULL)
        create(objects);
    g_autofree char *conf_file = g_build_filename(c->dir, "scheduler.conf", NULL);
    if (conf != NULL)
        g_assert_true(g_file_set_contents(conf_file, conf, -1, &error));
    const char *bargs[] = {"--schedule-period", "200ms", conf != NULL ? "--scheduler-conf" : NULL,
                           conf_file, NULL};
    c->sched = kb_test_apiserver_spawn(api, "kube-batchd", TRUE, bargs, NULL);
    scheduler = c->sched;
    apply("deploy/base/crds/podgroup-volcano.yaml");
    apply("deploy/dra/deviceclasses.yaml");
}

static void cluster_stop(MigCluster *c)
{
    scheduler = NULL;
    g_assert_cmpint(kb_test_daemon_stop(c->sched, 10000), ==, 0);
    g_assert_cmpint(kb_test_daemon_stop(c->kubelet, 10000), ==, 0);
    g_clear_pointer(&c->sched, kb_test_daemon_free);
    g_clear_pointer(&c->kubelet, kb_test_daemon_free);
    g_clear_pointer(&c->api, kb_test_apiserver_free);
    api = NULL;
    const char *files[] = {"nodes.yaml", "scheduler.conf"};
    for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree char *f = g_build_filename(c->dir, files[i], NULL);
        g_unlink(f);
    }
    g_rmdir(c->dir);
    g_clear_pointer(&c->dir, g_free);
}

static void test_mig_e2e(void)
{
    MigCluster c = {0};
    cluster_start(&c, nodes_yaml, NULL, NULL);
    /* mig-0, big-0: a counter slice and a GPU slice each; small-0: one and two; share-0: one */
    g_autofree char *slices = wait_until("resourceslices", "", "{.items[*].metadata.name}",
                                         kb_test_value_n_words, GUINT_TO_POINTER(8));
    g_assert_true(kb_test_value_n_words(slices, GUINT_TO_POINTER(8)));
    check_mig();
    check_shares();
    check_first_available();
    cluster_stop(&c);
}

static const char preempt_nodes_yaml[] =
        "nodes:\n"
        "- name: mig-0\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 1}\n";

static const char priority_classes_yaml[] =
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\n"
        "value: 10\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
        "metadata: {name: high}\nvalue: 1000\n";

#define N_LOW 7

/*
 * An A100 full of low-priority 1g.10gb pods (seven): a high-priority 3g.40gb claim's pod
 * preempts and runs on the freed slices; only pods whose slices its placement spans were
 * evicted, three (the 3g placement at slice 4: the one at 0 would need four), the others still
 * run.
 */
static void test_mig_preempt(void)
{
    /* the victims here just started: no minimum run time */
    g_autofree char *conf_text = kb_test_conf_preempt_now();
    MigCluster c = {0};
    cluster_start(&c, preempt_nodes_yaml, priority_classes_yaml, conf_text);
    g_autofree char *slices = wait_until("resourceslices", "", "{.items[*].metadata.name}",
                                         kb_test_value_n_words, GUINT_TO_POINTER(2));
    g_assert_true(kb_test_value_n_words(slices, GUINT_TO_POINTER(2)));

    char *devs[N_LOW];
    guint full = 0;
    for (guint i = 0; i < N_LOW; i++) {
        g_autofree char *name = g_strdup_printf("lo-%u", i);
        mig_claim_pc(name, "1g.10gb", "low");
        g_autofree char *phase = wait_running(name);
        g_assert_cmpstr(phase, ==, "Running");
        devs[i] = get("resourceclaim", name, "{.status.allocation.devices.results[0].device}");
        g_assert_true(g_str_has_prefix(devs[i], "gpu-0-mig-1g10gb-"));
        full |= mig_slices_of(devs[i]);
    }
    g_assert_cmpuint(full, ==, 0x7f);
    mig_claim_pc("hi", "3g.40gb", "high");
    g_autofree char *phase = wait_running("hi");
    g_assert_cmpstr(phase, ==, "Running");
    g_autofree char *dev =
            get("resourceclaim", "hi", "{.status.allocation.devices.results[0].device}");
    g_test_message("hi: %s", dev);
    g_assert_true(g_str_has_prefix(dev, "gpu-0-mig-3g40gb-"));
    guint hs = mig_slices_of(dev);
    guint evicted = 0;
    for (guint i = 0; i < N_LOW; i++) {
        g_autofree char *name = g_strdup_printf("lo-%u", i);
        g_autofree char *left = get("pod", name, "{.status.phase}");
        gboolean in = (mig_slices_of(devs[i]) & hs) != 0;
        g_test_message("%s on %s: \"%s\"", name, devs[i], left);
        if (strcmp(left, in ? "" : "Running") != 0) {
            g_autofree char *events = kb_test_kubectl_run(api, NULL, "get", "events", NULL);
            g_autofree char *log = NULL;
            gsize len = 0;
            g_file_get_contents(kb_test_daemon_log_path(c.sched), &log, &len, NULL);
            g_test_message("events:\n%s\nkube-batchd's log (end):\n%s", events,
                           log != NULL ? log + (len > 8000 ? len - 8000 : 0) : "");
        }
        /* a pod on the placement's slices is gone (its claim freed them); no other was evicted */
        g_assert_cmpstr(left, ==, in ? "" : "Running");
        evicted += in;
        g_free(devs[i]);
    }
    /* the placement at slice 4 needs three victims, the one at 0 four: the fewest are taken */
    g_assert_cmpuint(evicted, ==, 3);
    cluster_stop(&c);
}

static const char quota_nodes_yaml[] =
        "nodes:\n"
        "- name: mig-0\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
        "  allocatable: {cpu: 32, memory: 128Gi, pods: 110, nvidia.com/gpu: 2}\n";

/* Queue research (capability 1 GPU) and template slice (one 1g.10gb of an A100). */
static const char quota_yaml[] =
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: research}\n"
        "spec: {weight: 1, capability: {nvidia.com/gpu: 1}}\n"
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"
        "metadata: {name: slice, namespace: default}\n"
        "spec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n"
        "        exactly:\n          deviceClassName: mig.nvidia.com\n          selectors:\n"
        "          - cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == "
        "'1g.10gb'\"}\n";

/* A one-pod gang nb-@i of queue research whose claim comes from template slice. */
static void slice_pod(guint i)
{
    g_autofree char *yaml = g_strdup_printf(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
            "metadata: {name: nb-%u, namespace: default}\nspec: {minMember: 1, queue: research}\n"
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: nb-%u\n  namespace: default\n"
            "  annotations: {scheduling.k8s.io/group-name: nb-%u, "
            "sim.kube-batchd.io/run-seconds: \"3600\"}\n"
            "spec:\n  schedulerName: kube-batchd\n  resourceClaims: [{name: gpu, "
            "resourceClaimTemplateName: slice}]\n  containers:\n  - name: c\n    image: x\n"
            "    resources: {claims: [{name: gpu}]}\n",
            i, i, i);
    create(yaml);
}

/*
 * A queue whose capability is one GPU, on a node of two MIG-capable A100s: seven 1g.10gb pods
 * run (each 1/7 of a GPU, 0.142 counted), the eighth waits though the second GPU is free, its
 * PodGroup's condition naming the queue and nvidia.com/gpu; the queue's status says 0.994 GPUs
 * allocated.
 */
static void test_mig_quota(void)
{
    MigCluster c = {0};
    cluster_start(&c, quota_nodes_yaml, NULL, NULL);
    apply("deploy/base/crds/queue-volcano.yaml");
    /* the counter sets' slice and one slice per GPU */
    g_autofree char *slices = wait_until("resourceslices", "", "{.items[*].metadata.name}",
                                         kb_test_value_n_words, GUINT_TO_POINTER(3));
    g_assert_true(kb_test_value_n_words(slices, GUINT_TO_POINTER(3)));
    create(quota_yaml);
    for (guint i = 0; i < 7; i++) {
        slice_pod(i);
        g_autofree char *name = g_strdup_printf("nb-%u", i);
        g_autofree char *phase = wait_running(name);
        g_assert_cmpstr(phase, ==, "Running");
    }
    slice_pod(7);
    g_autofree char *why =
            wait_until("podgroups.scheduling.volcano.sh", "nb-7", "{.status.conditions[*].message}",
                       kb_test_value_contains, "nvidia.com/gpu");
    g_test_message("nb-7: %s", why);
    g_assert_nonnull(strstr(why, "\"research\""));
    g_assert_nonnull(strstr(why, "nvidia.com/gpu"));
    g_autofree char *node = get("pod", "nb-7", "{.spec.nodeName}");
    g_assert_cmpstr(node, ==, "");
    g_autofree char *used =
            wait_until("queues.scheduling.volcano.sh", "research",
                       "{.status.allocated.nvidia\\.com/gpu}", kb_test_value_contains, "0.994");
    g_assert_cmpstr(used, ==, "0.994");
    /* kbctl shows it so */
    g_autofree char *bin = g_build_filename(kb_test_bin_dir(), "kbctl", NULL);
    const char *argv[] = {bin, "--server", kb_test_apiserver_url(api), "queue", "list", NULL};
    g_auto(GStrv) envp = g_environ_unsetenv(g_get_environ(), "KUBECONFIG");
    g_autofree char *out = NULL;
    int status = -1;
    g_autoptr(GError) error = NULL;
    g_assert_true(g_spawn_sync(NULL, (char **)argv, envp, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                               &out, NULL, &status, &error));
    g_test_message("%s", out);
    g_assert_cmpint(status, ==, 0);
    g_autofree char *row = g_strdup(strstr(out, "research"));
    g_assert_nonnull(row);
    *strchrnul(row, '\n') = '\0';
    g_assert_nonnull(strstr(row, " 0.994 "));
    cluster_stop(&c);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!kb_test_kubectl_available()) {
        g_test_add_func("/mig-e2e/skipped", kb_test_skip_no_kubectl);
        return g_test_run();
    }
    g_test_add_func("/mig-e2e/mig-shares-first-available", test_mig_e2e);
    g_test_add_func("/mig-e2e/preempt-frees-slices", test_mig_preempt);
    g_test_add_func("/mig-e2e/quota-counts-slices", test_mig_quota);
    return g_test_run();
}
