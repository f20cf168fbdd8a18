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

static KbTestDaemon *start_kubelet(const char *nodes_file, GError **error)
{
    const char *args[] = {"--master",
                          kb_test_apiserver_url(api),
                          "--nodes",
                          nodes_file,
                          "--heartbeat-interval",
                          "200",
                          "--start-delay",
                          "50",
                          NULL};
    KbTestDaemonOptions o = {.stdout_pipe = TRUE, .log = TRUE};
    return kb_test_daemon_start("kb-kubelet", args, &o, error);
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
    int rc = g_test_run();
    kb_test_apiserver_free(api);
    return rc;
}
