/*
 * bin/kb-kubelet against bin/kb-apiserver started without --simulate-kubelet, driven and read
 * with kubectl as a user would: nodes registered Ready (an existing node adopted, the not-ready
 * taint removed), Leases renewed, pods run per their sim.kube-batchd.io annotations and their
 * restartPolicy, graceful deletions confirmed, pods of other nodes left alone, a bad nodes file
 * refused. Skipped when kubectl is not installed.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-util.h"

static KbTestApiserver *api;

/* Poll `kubectl get KIND NAME -o jsonpath=PATH` until it equals @want (30 s at most). */
static char *wait_for(const char *kind, const char *name, const char *path, const char *want)
{
    g_autofree char *arg = g_strdup_printf("jsonpath=%s", path);
    char *v = NULL;
    for (int i = 0; i < 150; i++) {
        g_free(v);
        v = kb_test_kubectl_run(api, NULL, "get", kind, name, "--ignore-not-found", "-o", arg,
                                NULL);
        if (g_strcmp0(v, want) == 0)
            return v;
        g_usleep(200 * 1000);
    }
    g_test_message("%s %s: %s is \"%s\", wanted \"%s\"", kind, name, path, v, want);
    return v;
}

static KbTestDaemon *start_kubelet_with2(const char *nodes_file, const char *extra,
                                         const char *extra2, GError **error)
{
    const char *args[] = {"--master",
                          kb_test_apiserver_url(api),
                          "--nodes",
                          nodes_file,
                          "--heartbeat-interval",
                          "200",
                          "--start-delay",
                          "50",
                          extra,
                          extra2,
                          NULL};
    KbTestDaemonOptions o = {.stdout_pipe = TRUE, .log = TRUE};
    return kb_test_daemon_start("kb-kubelet", args, &o, error);
}

static KbTestDaemon *start_kubelet_with(const char *nodes_file, const char *extra, GError **error)
{
    return start_kubelet_with2(nodes_file, extra, NULL, error);
}

static KbTestDaemon *start_kubelet(const char *nodes_file, GError **error)
{
    return start_kubelet_with(nodes_file, NULL, error);
}

static const char nodes_yaml[] = "nodes:\n"
                                 "- count: 2\n"
                                 "  name: \"sim-{i}\"\n"
                                 "  allocatable: {cpu: 8, memory: 32Gi, pods: 110, "
                                 "nvidia.com/gpu: 4}\n";

static const char pods_yaml[] =
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ok\n  annotations: "
        "{sim.kube-batchd.io/run-seconds: \"0.5\"}\n"
        "spec: {nodeName: sim-0, restartPolicy: Never, containers: [{name: c, image: x}]}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: fails\n  annotations: "
        "{sim.kube-batchd.io/run-seconds: \"0.5\", sim.kube-batchd.io/exit-code: \"3\"}\n"
        "spec: {nodeName: sim-1, restartPolicy: Never, containers: [{name: c, image: x}]}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: retries\n  annotations: "
        "{sim.kube-batchd.io/run-seconds: \"0.2\", sim.kube-batchd.io/exit-code: \"3\"}\n"
        "spec: {nodeName: sim-1, restartPolicy: OnFailure, containers: [{name: c, image: x}]}\n"
        "---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: forever}\n"
        "spec: {nodeName: sim-0, containers: [{name: c, image: x}]}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: elsewhere}\n"
        "spec: {nodeName: not-ours, containers: [{name: c, image: x}]}\n";

static void test_kubelet(void)
{
    g_autoptr(GError) error = NULL;
    /* A node that exists already, with the taint a server puts on new nodes. */
    g_free(kb_test_kubectl_run(
            api,
            "apiVersion: v1\nkind: Node\nmetadata: {name: sim-0}\nspec:\n  taints:\n"
            "  - {key: node.kubernetes.io/not-ready, effect: NoSchedule}\n"
            "  - {key: dedicated, value: ml, effect: NoSchedule}\n",
            "create", "-f", "-", NULL));
    g_autofree char *dir = g_dir_make_tmp("kb-kubelet-XXXXXX", &error);
    g_assert_no_error(error);
    g_autofree char *file = g_build_filename(dir, "nodes.yaml", NULL);
    g_assert_true(g_file_set_contents(file, nodes_yaml, -1, &error));
    g_autoptr(KbTestDaemon) k = start_kubelet(file, &error);
    g_assert_no_error(error);
    g_autofree char *line = kb_test_daemon_wait_line(k, "registered ", 30000, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(line, ==, "2 nodes");

    g_autofree char *ready = kb_test_kubectl_run(
            api, NULL, "get", "nodes", "-o",
            "jsonpath={range .items[*]}{.metadata.name} "
            "{.status.conditions[?(@.type==\"Ready\")].status} "
            "{.status.allocatable.nvidia\\.com/gpu} {.spec.taints[*].key};{end}",
            NULL);
    g_assert_cmpstr(ready, ==, "sim-0 True 4 dedicated;sim-1 True 4 ;");
    /* Leases renewed every heartbeat. */
    g_autofree char *t1 = kb_test_kubectl_run(api, NULL, "get", "lease", "-n", "kube-node-lease",
                                              "sim-1", "-o", "jsonpath={.spec.renewTime}", NULL);
    g_assert_cmpstr(t1, !=, "");
    g_usleep(600 * 1000);
    g_autofree char *t2 = kb_test_kubectl_run(api, NULL, "get", "lease", "-n", "kube-node-lease",
                                              "sim-1", "-o", "jsonpath={.spec.renewTime}", NULL);
    g_assert_cmpstr(t2, !=, t1);

    g_free(kb_test_kubectl_run(api, pods_yaml, "create", "-f", "-", NULL));
    g_autofree char *ok = wait_for("pod", "ok", "{.status.phase}", "Succeeded");
    g_assert_cmpstr(ok, ==, "Succeeded");
    g_autofree char *fails = wait_for(
            "pod", "fails",
            "{.status.phase} {.status.containerStatuses[0].state.terminated.exitCode}", "Failed 3");
    g_assert_cmpstr(fails, ==, "Failed 3");
    g_autofree char *retries =
            wait_for("pod", "retries",
                     "{.status.phase} {.status.containerStatuses[0].lastState.terminated.exitCode}",
                     "Running 3");
    g_assert_cmpstr(retries, ==, "Running 3");
    g_autofree char *forever = wait_for("pod", "forever", "{.status.phase}", "Running");
    g_assert_cmpstr(forever, ==, "Running");
    g_autofree char *ip = kb_test_kubectl_run(api, NULL, "get", "pod", "forever", "-o",
                                              "jsonpath={.status.hostIP}", NULL);
    g_assert_true(g_str_has_prefix(ip, "10.0."));
    /* Another node's pod: no kubelet of ours runs it. */
    g_autofree char *other = kb_test_kubectl_run(api, NULL, "get", "pod", "elsewhere", "-o",
                                                 "jsonpath={.status.phase}", NULL);
    g_assert_cmpstr(other, ==, "Pending");
    /* A graceful deletion (2 minutes here) is confirmed by the kubelet at once. */
    g_free(kb_test_kubectl_run(api, NULL, "delete", "pod", "forever", "--grace-period=120",
                               "--wait=false", NULL));
    g_autofree char *gone = wait_for("pod", "forever", "{.metadata.name}", "");
    g_assert_cmpstr(gone, ==, "");
    g_assert_cmpint(kb_test_daemon_stop(k, 30000), ==, 0);
    /* What it cost the server, by kind: 2 nodes registered (create, read, status), leases
     * renewed, the five status writes of 3 pods at least, one deletion confirmed. */
    g_autofree char *log = kb_test_daemon_log(k);
    const char *cost = strstr(log, "cost to the server: ");
    g_assert_nonnull(cost);
    guint64 reg = 0, lease = 0, status = 0, del = 0;
    const char *p = strstr(cost, " register ");
    g_assert_nonnull(p);
    reg = g_ascii_strtoull(p + strlen(" register "), NULL, 10);
    g_assert_nonnull((p = strstr(cost, " lease ")));
    lease = g_ascii_strtoull(p + strlen(" lease "), NULL, 10);
    g_assert_nonnull((p = strstr(cost, " pod-status ")));
    status = g_ascii_strtoull(p + strlen(" pod-status "), NULL, 10);
    g_assert_nonnull((p = strstr(cost, " pod-delete ")));
    del = g_ascii_strtoull(p + strlen(" pod-delete "), NULL, 10);
    g_assert_cmpuint(reg, >=, 6);
    g_assert_cmpuint(lease, >=, 4);
    g_assert_cmpuint(status, >=, 5);
    g_assert_cmpuint(del, ==, 1);
    g_unlink(file);
    g_rmdir(dir);
}

static void test_bad_nodes_file(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("kb-kubelet-XXXXXX", &error);
    g_autofree char *file = g_build_filename(dir, "nodes.yaml", NULL);
    g_assert_true(g_file_set_contents(file, "nodes:\n- count: -1\n", -1, &error));
    g_autoptr(KbTestDaemon) k = start_kubelet(file, &error);
    g_assert_no_error(error);
    g_autofree char *line = kb_test_daemon_wait_line(k, "registered ", 30000, &error);
    g_assert_null(line);
    g_assert_cmpint(kb_test_daemon_stop(k, 30000), ==, 2);
    g_autofree char *log = kb_test_daemon_log(k);
    g_assert_nonnull(strstr(log, "nodes.yaml: nodes[0].count: -1"));
    g_unlink(file);
    g_rmdir(dir);
}

/* ---- --dra ------------------------------------------------------------------------------------
 */

static const char dra_nodes_yaml[] =
        "nodes:\n"
        "- count: 1\n"
        "  name: \"dra-{i}\"\n"
        "  allocatable: {cpu: 8, memory: 32Gi, pods: 110, nvidia.com/gpu: 4}\n"
        "  annotations: {kube-batchd.io/gpu-topology: '{\"nvlink\":[[2,3],[0]]}'}\n"
        "- count: 1\n"
        "  name: \"h100-{i}\"\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.memory: "
        "\"81559\"}\n"
        "  allocatable: {cpu: 8, memory: 32Gi, pods: 110, nvidia.com/gpu: 2}\n"
        "- count: 1\n"
        "  name: \"cpu-{i}\"\n"
        "  allocatable: {cpu: 8, memory: 32Gi, pods: 110}\n";

static const char dra_objects_yaml[] =
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: one-gpu}\n"
        "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]}}\n"
        "---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: gpu}\n"
        "spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: "
        "gpu.nvidia.com}}]}}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: claims}\n"
        "spec: {nodeName: dra-0, containers: [{name: c, image: x, resources: {claims: [{name: a}, "
        "{name: b}]}}], resourceClaims: [{name: a, resourceClaimName: one-gpu}, {name: b, "
        "resourceClaimTemplateName: gpu}]}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: plain}\n"
        "spec: {nodeName: dra-0, containers: [{name: c, image: x}]}\n";

/* The allocation and reservation a scheduler writes for @claim and pod @uid. */
static void allocate(const char *claim, const char *device, const char *uid)
{
    g_autofree char *patch = g_strdup_printf(
            "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
            "\"driver\":\"gpu.nvidia.com\",\"pool\":\"dra-0\",\"device\":\"%s\"}]}},"
            "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"claims\",\"uid\":\"%s\"}]}}",
            device, uid);
    g_free(kb_test_kubectl_run(api, NULL, "patch", "resourceclaim", claim, "--subresource=status",
                               "--type=merge", "-p", patch, NULL));
}

/* GPUs published as NVIDIA's driver does, no longer an extended resource; a pod with claims
 * starts only once each is allocated and reserved for it, and says why until then. */
static void test_kubelet_dra(void)
{
    g_autoptr(GError) error = NULL;
    KbTestApiserver *shared = api;
    const char *aargs[] = {"--resource-claim-controller", NULL};
    g_autoptr(KbTestApiserver) own = kb_test_apiserver_start(aargs, &error);
    g_assert_no_error(error);
    api = own;
    g_autofree char *dir = g_dir_make_tmp("kb-kubelet-XXXXXX", &error);
    g_autofree char *file = g_build_filename(dir, "nodes.yaml", NULL);
    g_assert_true(g_file_set_contents(file, dra_nodes_yaml, -1, &error));
    g_autoptr(KbTestDaemon) k = start_kubelet_with(file, "--dra", &error);
    g_assert_no_error(error);
    g_autofree char *line = kb_test_daemon_wait_line(k, "registered ", 30000, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(line, ==, "3 nodes");
    g_autofree char *gpus = kb_test_kubectl_run(
            api, NULL, "get", "nodes", "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.status.allocatable.nvidia\\.com/gpu};"
            "{end}",
            NULL);
    g_assert_cmpstr(gpus, ==, "cpu-0=;dra-0=;h100-0=;");
    g_autofree char *slices = kb_test_kubectl_run(
            api, NULL, "get", "resourceslices", "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.spec.pool.name} "
            "{.spec.driver} {.spec.devices[*].name};{end}",
            NULL);
    g_assert_cmpstr(slices, ==,
                    "dra-0-gpu.nvidia.com dra-0 dra-0 gpu.nvidia.com gpu-0 gpu-1 gpu-2 gpu-3;"
                    "h100-0-gpu.nvidia.com h100-0 h100-0 gpu.nvidia.com gpu-0 gpu-1;");
    /* the islands: [2,3] is 0, [0] is 1, gpu-1 is named by none: 2 + 1 */
    g_autofree char *isl = kb_test_kubectl_run(
            api, NULL, "get", "resourceslice", "dra-0-gpu.nvidia.com", "-o",
            "jsonpath={range .spec.devices[*]}{.attributes.kube-batchd\\.io/nvlinkIsland.int} "
            "{.attributes.type.string} {.attributes.index.int} {.capacity.memory.value};{end}",
            NULL);
    g_assert_cmpstr(isl, ==, "1 gpu 0 80Gi;3 gpu 1 80Gi;0 gpu 2 80Gi;0 gpu 3 80Gi;");
    g_autofree char *h100 = kb_test_kubectl_run(
            api, NULL, "get", "resourceslice", "h100-0-gpu.nvidia.com", "-o",
            "jsonpath={.spec.devices[0].attributes.productName.string} "
            "{.spec.devices[0].attributes.architecture.string} "
            "{.spec.devices[0].attributes.cudaComputeCapability.version} "
            "{.spec.devices[0].capacity.memory.value} {.spec.devices[0].attributes.uuid.string}",
            NULL);
    g_assert_true(g_str_has_prefix(h100, "NVIDIA-H100-80GB-HBM3 Hopper 9.0.0 81559Mi GPU-"));

    g_autofree char *classes =
            g_build_filename(kb_test_src_dir(), "deploy/dra/deviceclasses.yaml", NULL);
    g_free(kb_test_kubectl_run(api, NULL, "create", "-f", classes, NULL));
    g_free(kb_test_kubectl_run(api, dra_objects_yaml, "create", "-f", "-", NULL));
    /* a pod without claims runs as before; the other waits and says for what */
    g_autofree char *plain = wait_for("pod", "plain", "{.status.phase}", "Running");
    g_assert_cmpstr(plain, ==, "Running");
    g_autofree char *sel =
            g_strdup("involvedObject.name=claims,reason=FailedPrepareDynamicResources");
    g_autofree char *ev = NULL;
    for (int i = 0; i < 150; i++) {
        g_free(ev);
        ev = kb_test_kubectl_run(api, NULL, "get", "events", "--field-selector", sel, "-o",
                                 "jsonpath={.items[*].message}", NULL);
        if (strstr(ev, "ResourceClaim default/one-gpu: not allocated") != NULL)
            break;
        g_usleep(200 * 1000);
    }
    g_assert_nonnull(strstr(ev, "Failed to prepare dynamic resources: ResourceClaim "
                                "default/one-gpu: not allocated"));
    g_autofree char *uid = kb_test_kubectl_run(api, NULL, "get", "pod", "claims", "-o",
                                               "jsonpath={.metadata.uid}", NULL);
    allocate("one-gpu", "gpu-0", uid);
    g_autofree char *gen =
            wait_for("pod", "claims", "{.status.resourceClaimStatuses[0].name}", "b");
    g_assert_cmpstr(gen, ==, "b");
    g_autofree char *generated = kb_test_kubectl_run(
            api, NULL, "get", "pod", "claims", "-o",
            "jsonpath={.status.resourceClaimStatuses[0].resourceClaimName}", NULL);
    /* one claim ready, the generated one not yet: still Pending, naming the second */
    g_autofree char *why = g_strdup_printf("ResourceClaim default/%s: not allocated", generated);
    for (int i = 0; i < 150; i++) {
        g_free(ev);
        ev = kb_test_kubectl_run(api, NULL, "get", "events", "--field-selector", sel, "-o",
                                 "jsonpath={.items[*].message}", NULL);
        if (strstr(ev, why) != NULL)
            break;
        g_usleep(200 * 1000);
    }
    g_assert_nonnull(strstr(ev, why));
    g_autofree char *pending = kb_test_kubectl_run(api, NULL, "get", "pod", "claims", "-o",
                                                   "jsonpath={.status.phase}", NULL);
    g_assert_cmpstr(pending, ==, "Pending");
    allocate(generated, "gpu-1", uid);
    g_autofree char *running = wait_for("pod", "claims", "{.status.phase}", "Running");
    g_assert_cmpstr(running, ==, "Running");
    g_assert_cmpint(kb_test_daemon_stop(k, 30000), ==, 0);
    api = shared;
    g_unlink(file);
    g_rmdir(dir);
}

static const char mig_nodes_yaml[] =
        "nodes:\n"
        "- count: 1\n"
        "  name: \"a100-{i}\"\n"
        "  allocatable: {cpu: 8, memory: 32Gi, pods: 110, nvidia.com/gpu: 2}\n"
        "- count: 1\n"
        "  name: \"h100-{i}\"\n"
        "  labels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
        "  allocatable: {cpu: 8, memory: 32Gi, pods: 110, nvidia.com/gpu: 1}\n"
        "- count: 1\n"
        "  name: \"shared-{i}\"\n"
        "  labels: {kube-batchd.io/gpu-sharing: memory, nvidia.com/gpu.memory: \"81559\"}\n"
        "  allocatable: {cpu: 8, memory: 32Gi, pods: 110, nvidia.com/gpu: 1}\n";

static const char mig_objects_yaml[] =
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: mig-1g}\n"
        "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: mig.nvidia.com, "
        "selectors: [{cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == "
        "'1g.10gb'\"}}]}}]}}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: half-a}\n"
        "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, "
        "capacity: {requests: {memory: 40Gi}}}}]}}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: half-b}\n"
        "spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, "
        "capacity: {requests: {memory: 39Gi}}}}]}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: mig}\n"
        "spec: {nodeName: a100-0, containers: [{name: c, image: x, resources: {claims: [{name: "
        "g}]}}], resourceClaims: [{name: g, resourceClaimName: mig-1g}]}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: share-a}\n"
        "spec: {nodeName: shared-0, containers: [{name: c, image: x, resources: {claims: [{name: "
        "g}]}}], resourceClaims: [{name: g, resourceClaimName: half-a}]}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: share-b}\n"
        "spec: {nodeName: shared-0, containers: [{name: c, image: x, resources: {claims: [{name: "
        "g}]}}], resourceClaims: [{name: g, resourceClaimName: half-b}]}\n";

/* What a scheduler writes for a MIG or shared claim: @extra adds shareID and consumedCapacity. */
static void allocate_on(const char *claim, const char *pod, const char *pool, const char *device,
                        const char *extra)
{
    g_autofree char *uid = kb_test_kubectl_run(api, NULL, "get", "pod", pod, "-o",
                                               "jsonpath={.metadata.uid}", NULL);
    g_autofree char *patch = g_strdup_printf(
            "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
            "\"driver\":\"gpu.nvidia.com\",\"pool\":\"%s\",\"device\":\"%s\"%s}]}},"
            "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"%s\",\"uid\":\"%s\"}]}}",
            pool, device, extra, pod, uid);
    g_autofree char *out =
            kb_test_kubectl_run(api, NULL, "patch", "resourceclaim", claim, "--subresource=status",
                                "--type=merge", "-p", patch, NULL);
    g_assert_nonnull(strstr(out, "patched"));
}

/* --dra --mig: NVIDIA's split layout (a counter-set slice, a slice per GPU of its MIG placements
 * and the whole GPU), H100 figures on an H100, a labelled node's GPU shared by memory; pods whose
 * MIG and shared claims are allocated and reserved start. */
static void test_kubelet_mig(void)
{
    g_autoptr(GError) error = NULL;
    KbTestApiserver *shared = api;
    g_autoptr(KbTestApiserver) own = kb_test_apiserver_start(NULL, &error);
    g_assert_no_error(error);
    api = own;
    g_autofree char *dir = g_dir_make_tmp("kb-kubelet-XXXXXX", &error);
    g_autofree char *file = g_build_filename(dir, "nodes.yaml", NULL);
    g_assert_true(g_file_set_contents(file, mig_nodes_yaml, -1, &error));
    g_autoptr(KbTestDaemon) k = start_kubelet_with2(file, "--dra", "--mig", &error);
    g_assert_no_error(error);
    g_autofree char *line = kb_test_daemon_wait_line(k, "registered ", 30000, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(line, ==, "3 nodes");
    g_autofree char *slices = kb_test_kubectl_run(
            api, NULL, "get", "resourceslices", "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.spec.pool.resourceSliceCount} "
            "{.spec.sharedCounters[*].name};{end}",
            NULL);
    g_assert_cmpstr(slices, ==,
                    "a100-0-gpu.nvidia.com-counters 3 gpu-0-counter-set gpu-1-counter-set;"
                    "a100-0-gpu.nvidia.com-gpu-0 3 ;a100-0-gpu.nvidia.com-gpu-1 3 ;"
                    "h100-0-gpu.nvidia.com-counters 2 gpu-0-counter-set;"
                    "h100-0-gpu.nvidia.com-gpu-0 2 ;shared-0-gpu.nvidia.com 1 ;");
    g_autofree char *set = kb_test_kubectl_run(
            api, NULL, "get", "resourceslice", "a100-0-gpu.nvidia.com-counters", "-o",
            "jsonpath={.spec.sharedCounters[1].counters.multiprocessors.value} "
            "{.spec.sharedCounters[1].counters.memory.value} "
            "{.spec.sharedCounters[1].counters.memory-slice-7.value}",
            NULL);
    g_assert_cmpstr(set, ==, "98 81152Mi 1");
    g_autofree char *devs =
            kb_test_kubectl_run(api, NULL, "get", "resourceslice", "a100-0-gpu.nvidia.com-gpu-1",
                                "-o", "jsonpath={.spec.devices[*].name}", NULL);
    g_assert_cmpstr(devs, ==,
                    "gpu-1 gpu-1-mig-1g10gb-19-0 gpu-1-mig-1g10gb-19-1 gpu-1-mig-1g10gb-19-2 "
                    "gpu-1-mig-1g10gb-19-3 gpu-1-mig-1g10gb-19-4 gpu-1-mig-1g10gb-19-5 "
                    "gpu-1-mig-1g10gb-19-6 gpu-1-mig-2g20gb-14-0 gpu-1-mig-2g20gb-14-2 "
                    "gpu-1-mig-2g20gb-14-4 gpu-1-mig-3g40gb-9-0 gpu-1-mig-3g40gb-9-4 "
                    "gpu-1-mig-4g40gb-5-0 gpu-1-mig-7g80gb-0-0");
    /* a 3g.40gb at slice 4 takes memory slices 4-7 and 42 of the 98 multiprocessors */
    g_autofree char *mig3 = kb_test_kubectl_run(
            api, NULL, "get", "resourceslice", "a100-0-gpu.nvidia.com-gpu-1", "-o",
            "jsonpath={.spec.devices[12].attributes.type.string} "
            "{.spec.devices[12].attributes.profile.string} "
            "{.spec.devices[12].consumesCounters[0].counterSet} "
            "{.spec.devices[12].consumesCounters[0].counters}",
            NULL);
    g_assert_cmpstr(mig3, ==,
                    "mig 3g.40gb gpu-1-counter-set "
                    "{\"memory\":{\"value\":\"40192Mi\"},\"memory-slice-4\":{\"value\":\"1\"},"
                    "\"memory-slice-5\":{\"value\":\"1\"},\"memory-slice-6\":{\"value\":\"1\"},"
                    "\"memory-slice-7\":{\"value\":\"1\"},\"multiprocessors\":{\"value\":\"42\"}}");
    /* the whole GPU consumes every counter of its set */
    g_autofree char *whole = kb_test_kubectl_run(
            api, NULL, "get", "resourceslice", "a100-0-gpu.nvidia.com-gpu-1", "-o",
            "jsonpath={.spec.devices[0].attributes.type.string} "
            "{.spec.devices[0].consumesCounters[0].counters.memory-slice-0.value} "
            "{.spec.devices[0].consumesCounters[0].counters.multiprocessors.value}",
            NULL);
    g_assert_cmpstr(whole, ==, "gpu 1 98");
    g_autofree char *h100 = kb_test_kubectl_run(
            api, NULL, "get", "resourceslice", "h100-0-gpu.nvidia.com-gpu-0", "-o",
            "jsonpath={.spec.devices[14].name} {.spec.devices[14].capacity.multiprocessors.value}",
            NULL);
    g_assert_cmpstr(h100, ==, "gpu-0-mig-7g80gb-0-0 132");
    g_autofree char *sh =
            kb_test_kubectl_run(api, NULL, "get", "resourceslice", "shared-0-gpu.nvidia.com", "-o",
                                "jsonpath={.spec.devices[0].allowMultipleAllocations} "
                                "{.spec.devices[0].capacity.memory.value} "
                                "{.spec.devices[0].capacity.memory.requestPolicy}",
                                NULL);
    g_assert_cmpstr(sh, ==,
                    "true 79Gi {\"default\":\"79Gi\",\"validRange\":{\"min\":\"1Gi\",\"step\":"
                    "\"1Gi\"}}");

    g_autofree char *classes =
            g_build_filename(kb_test_src_dir(), "deploy/dra/deviceclasses.yaml", NULL);
    g_free(kb_test_kubectl_run(api, NULL, "create", "-f", classes, NULL));
    g_free(kb_test_kubectl_run(api, mig_objects_yaml, "create", "-f", "-", NULL));
    allocate_on("mig-1g", "mig", "a100-0", "gpu-0-mig-1g10gb-19-3", "");
    allocate_on("half-a", "share-a", "shared-0", "gpu-0",
                ",\"shareID\":\"5b0e1c52-8d3f-4a61-9c7e-2f4b6a8d0e13\","
                "\"consumedCapacity\":{\"memory\":\"40Gi\"}");
    allocate_on("half-b", "share-b", "shared-0", "gpu-0",
                ",\"shareID\":\"9a7c3e15-2b4d-4f68-8e01-6c5d3b2a1f90\","
                "\"consumedCapacity\":{\"memory\":\"39Gi\"}");
    static const char *const pods[] = {"mig", "share-a", "share-b"};
    for (guint i = 0; i < G_N_ELEMENTS(pods); i++) {
        g_autofree char *phase = wait_for("pod", pods[i], "{.status.phase}", "Running");
        g_assert_cmpstr(phase, ==, "Running");
    }
    g_assert_cmpint(kb_test_daemon_stop(k, 30000), ==, 0);
    api = shared;
    g_unlink(file);
    g_rmdir(dir);
}

/* A sharing label other than memory, and --mig without --dra, refused. */
static void test_kubelet_mig_refused(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("kb-kubelet-XXXXXX", &error);
    g_autofree char *file = g_build_filename(dir, "nodes.yaml", NULL);
    g_assert_true(g_file_set_contents(file,
                                      "nodes:\n- count: 1\n  name: \"t-{i}\"\n"
                                      "  labels: {kube-batchd.io/gpu-sharing: time}\n"
                                      "  allocatable: {cpu: 8, nvidia.com/gpu: 1}\n",
                                      -1, &error));
    g_autoptr(KbTestDaemon) k = start_kubelet_with2(file, "--dra", "--mig", &error);
    g_assert_no_error(error);
    g_assert_null(kb_test_daemon_wait_line(k, "registered ", 30000, NULL));
    g_assert_cmpint(kb_test_daemon_stop(k, 30000), ==, 2);
    g_autofree char *log = kb_test_daemon_log(k);
    g_assert_nonnull(strstr(log, "node t-0: label kube-batchd.io/gpu-sharing \"time\": the only "
                                 "sharing is \"memory\""));
    g_autoptr(KbTestDaemon) k2 = start_kubelet_with(file, "--mig", &error);
    g_assert_no_error(error);
    g_assert_null(kb_test_daemon_wait_line(k2, "registered ", 30000, NULL));
    g_assert_cmpint(kb_test_daemon_stop(k2, 30000), ==, 2);
    g_autofree char *log2 = kb_test_daemon_log(k2);
    g_assert_nonnull(strstr(log2, "--mig needs --dra"));
    g_unlink(file);
    g_rmdir(dir);
}

/* Stopped while lease renewals are in flight (each answered 1.5 s late), kb-kubelet lets them
 * end before it frees its client: exit 0, and nothing leaks (under the sanitizer build a request
 * dropped with its callback's data made it exit 1). */
static void test_stop_drains_writes(void)
{
    g_autoptr(GError) error = NULL;
    const char *aargs[] = {"--faults", "latency=1500,method=PATCH,path=*leases*", NULL};
    g_autoptr(KbTestApiserver) slow = kb_test_apiserver_start(aargs, &error);
    g_assert_no_error(error);
    g_autofree char *dir = g_dir_make_tmp("kb-kubelet-XXXXXX", &error);
    g_autofree char *file = g_build_filename(dir, "nodes.yaml", NULL);
    g_assert_true(g_file_set_contents(file, nodes_yaml, -1, &error));
    const char *args[] = {"--master", kb_test_apiserver_url(slow), "--nodes",
                          file,       "--heartbeat-interval",      "200",
                          NULL};
    KbTestDaemonOptions o = {.stdout_pipe = TRUE, .log = TRUE};
    g_autoptr(KbTestDaemon) k = kb_test_daemon_start("kb-kubelet", args, &o, &error);
    g_assert_no_error(error);
    g_autofree char *line = kb_test_daemon_wait_line(k, "registered ", 30000, &error);
    g_assert_no_error(error);
    g_usleep(1000 * 1000); /* renewals every 200 ms, each answered 1.5 s later */
    int rc = kb_test_daemon_stop(k, 30000);
    if (rc != 0) {
        g_autofree char *log = kb_test_daemon_log(k);
        g_test_message("kb-kubelet's log:\n%s", log);
    }
    g_assert_cmpint(rc, ==, 0);
    g_unlink(file);
    g_rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_set_nonfatal_assertions();
    if (!kb_test_kubectl_available()) {
        g_test_add_func("/kubelet/skipped", kb_test_skip_no_kubectl);
        return g_test_run();
    }
    g_autoptr(GError) error = NULL;
    api = kb_test_apiserver_start(NULL, &error);
    g_assert_no_error(error);
    g_test_add_func("/kubelet/nodes-pods-deletions", test_kubelet);
    g_test_add_func("/kubelet/bad-nodes-file", test_bad_nodes_file);
    g_test_add_func("/kubelet/dra", test_kubelet_dra);
    g_test_add_func("/kubelet/dra-mig", test_kubelet_mig);
    g_test_add_func("/kubelet/dra-mig-refused", test_kubelet_mig_refused);
    g_test_add_func("/kubelet/stop-drains-writes", test_stop_drains_writes);
    int rc = g_test_run();
    kb_test_apiserver_free(api);
    return rc;
}
