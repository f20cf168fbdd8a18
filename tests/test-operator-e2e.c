/*
 * tf-operator end to end: bin/kb-apiserver --simulate-kubelet with four 8-GPU nodes, the
 * project's CRDs and default queue applied with kubectl, bin/kube-batchd and bin/tf-operator
 * running as separate processes, jobs submitted and inspected with kubectl as a user would.
 * The TFJob CRD converts through tf-operator's webhook (kb-test-tfwebhook), as shipped.
 * Skipped when kubectl is not installed.
 */
#include <gio/gio.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-daemon.h"
#include "tests/lib/kb-test-tfwebhook.h"
#include "tests/lib/kb-test-util.h"

typedef struct {
    KbTestApiserver *api;
    KbTestDaemon *scheduler;
    KbTestDaemon *operator_;
    KbTestTfWebhook *webhook;
    char *logdir;
} Cluster;

static Cluster cluster;

static void stop(KbTestDaemon **d, const char *name)
{
    if (*d == NULL)
        return;
    int status = kb_test_daemon_stop(*d, 30000);
    if (status > 128)
        g_printerr("# %s ended by signal %d (log in %s)\n", name, status - 128, cluster.logdir);
    g_clear_pointer(d, kb_test_daemon_free);
}

/* The value of a jsonpath on job @name read as @resource ("tfjobs",
 * "tfjobs.v1alpha1.kubeflow.org"), newly allocated ("" when absent). */
static char *job_path_as(const char *resource, const char *name, const char *jsonpath)
{
    g_autofree char *arg = g_strdup_printf("jsonpath=%s", jsonpath);
    return kb_test_kubectl_run(cluster.api, NULL, "get", resource, name, "-o", arg, NULL);
}

static char *job_path(const char *name, const char *jsonpath)
{
    return job_path_as("tfjobs", name, jsonpath);
}

/* FALSE (and the test marked failed) when @p has exited. */
static gboolean alive(KbTestDaemon *d, const char *name)
{
    if (kb_test_daemon_running(d))
        return TRUE;
    g_test_message("%s exited (log in %s/%s.log)", name, cluster.logdir, name);
    g_test_fail();
    return FALSE;
}

/* Poll until job @name's @jsonpath (read as @resource) equals @want (60 s at most); returns the
 * last value seen. */
static char *wait_job_as(const char *resource, const char *name, const char *jsonpath,
                         const char *want)
{
    char *v = NULL;
    for (int i = 0; i < 300; i++) {
        g_free(v);
        v = job_path_as(resource, name, jsonpath);
        if (g_strcmp0(v, want) == 0)
            return v;
        if (!alive(cluster.operator_, "tf-operator") || !alive(cluster.scheduler, "kube-batchd"))
            return v;
        g_usleep(200 * 1000);
    }
    g_test_message("job %s: %s is \"%s\", wanted \"%s\"", name, jsonpath, v, want);
    return v;
}

static char *wait_job(const char *name, const char *jsonpath, const char *want)
{
    return wait_job_as("tfjobs", name, jsonpath, want);
}

/* Poll until the pods of job @name (kubectl -o name) are @want (60 s at most). */
static char *wait_pods(const char *name, const char *want)
{
    g_autofree char *sel = g_strdup_printf("training.kubeflow.org/job-name=%s", name);
    char *v = NULL;
    for (int i = 0; i < 300; i++) {
        g_free(v);
        v = kb_test_kubectl_run(cluster.api, NULL, "get", "pods", "-l", sel, "-o", "name", NULL);
        if (g_strcmp0(v, want) == 0)
            return v;
        if (!alive(cluster.operator_, "tf-operator") || !alive(cluster.scheduler, "kube-batchd"))
            return v;
        g_usleep(200 * 1000);
    }
    g_test_message("job %s: pods are \"%s\", wanted \"%s\"", name, v, want);
    return v;
}

static void create(const char *yaml)
{
    g_autofree char *out = kb_test_kubectl_run(cluster.api, yaml, "create", "-f", "-", NULL);
    g_assert_nonnull(strstr(out, "created"));
}

static void create_file(const char *rel)
{
    g_autofree char *path = g_build_filename(kb_test_src_dir(), rel, NULL);
    g_autofree char *out = kb_test_kubectl_run(cluster.api, NULL, "create", "-f", path, NULL);
    g_assert_nonnull(strstr(out, "created"));
}

/* ---- cases --------------------------------------------------------------------------------- */

#define ALPHA "tfjobs.v1alpha1.kubeflow.org"

/* The seed's v1alpha1 job, stored as v1 by the CRD's webhook, runs as the v1alpha1 job it is:
 * its runtime id in the pod names, its phase and state; read through v1 it is a v1 job. */
static void test_seed_v1alpha1(void)
{
    create_file("deploy/demo/tfjob-seed-v1alpha1.yaml");
    g_autofree char *rid = NULL;
    for (int i = 0; i < 300 && (rid == NULL || strlen(rid) != 4); i++) {
        g_free(rid);
        rid = job_path_as(ALPHA, "example-job", "{.spec.RuntimeId}");
        g_usleep(100 * 1000);
    }
    g_assert_cmpuint(strlen(rid), ==, 4);
    g_autofree char *master = g_strdup_printf("pod/example-job-master-%s-0\n", rid);
    g_autofree char *seen = NULL;
    for (int i = 0; i < 300 && (seen == NULL || strstr(seen, master) == NULL); i++) {
        g_free(seen);
        seen = kb_test_kubectl_run(cluster.api, NULL, "get", "pods", "-l",
                                   "training.kubeflow.org/job-name=example-job", "-o", "name",
                                   NULL);
        g_usleep(100 * 1000);
    }
    if (strstr(seen, master) == NULL)
        g_test_message("pods: %s", seen);
    g_assert_nonnull(strstr(seen, master));
    g_autofree char *state = wait_job_as(ALPHA, "example-job", "{.status.state}", "Succeeded");
    g_assert_cmpstr(state, ==, "Succeeded");
    g_autofree char *phase = wait_job_as(ALPHA, "example-job", "{.status.phase}", "Done");
    g_assert_cmpstr(phase, ==, "Done");
    g_autofree char *mstate =
            job_path_as(ALPHA, "example-job",
                        "{.status.replicaStatuses[?(@.tf_replica_type==\"MASTER\")].state}");
    g_assert_cmpstr(mstate, ==, "Succeeded");
    g_autofree char *rid2 = job_path_as(ALPHA, "example-job", "{.spec.RuntimeId}");
    g_assert_cmpstr(rid2, ==, rid);
    /* through kubeflow.org/v1: the tfReplicaSpecs map and v1 conditions */
    g_autofree char *ps = job_path("example-job", "{.spec.tfReplicaSpecs.PS.replicas}");
    g_assert_cmpstr(ps, ==, "2");
    g_autofree char *cond = job_path("example-job", "{.status.conditions[-1:].type}");
    g_assert_cmpstr(cond, ==, "Succeeded");
    g_autofree char *table = kb_test_kubectl_run(cluster.api, NULL, "get", "tfjobs", NULL);
    g_assert_true(g_regex_match_simple("example-job +Succeeded +[0-9]+[sm]", table, 0, 0));
    /* Cleanup All (v1alpha1): no pod of the job is left. */
    g_autofree char *pods =
            kb_test_kubectl_run(cluster.api, NULL, "get", "pods", "-l",
                                "training.kubeflow.org/job-name=example-job", "-o", "name", NULL);
    g_assert_cmpstr(pods, ==, "");
}

/* The seed tutorial's v1beta1 job (`MASTER` in capitals) and a v1beta2 one, created through
 * their own versions with kubectl as a user would, succeed; STATE shows through both versions. */
static void test_seed_v1beta1(void)
{
    create_file("deploy/demo/tfjob-seed-v1beta1.yaml");
    /* the tutorial's other v1beta1 job, as written there (the image named, and told how long to
     * run by the simulated kubelet's annotation) */
    create("apiVersion: kubeflow.org/v1beta1\nkind: TFJob\nmetadata:\n  name: example-tfjob\n"
           "spec:\n  tfReplicaSpecs:\n    MASTER:\n      replicas: 1\n      template:\n"
           "        metadata: {annotations: {sim.kube-batchd.io/run-seconds: \"2\"}}\n"
           "        spec:\n          containers:\n            - image: someone/tf-mnist:gpu\n"
           "              name: tensorflow\n              resources:\n                limits:\n"
           "                  nvidia.com/gpu: 1\n          restartPolicy: OnFailure\n");
    create("apiVersion: kubeflow.org/v1beta2\nkind: TFJob\nmetadata: {name: beta2-dist}\nspec:\n"
           "  cleanPodPolicy: None\n  tfReplicaSpecs:\n"
           "    ps: {replicas: 1, template: {metadata: {annotations: "
           "{sim.kube-batchd.io/run-seconds:"
           " \"600\"}}, spec: {containers: [{name: tensorflow, image: tf}]}}}\n"
           "    worker: {replicas: 2, template: {metadata: {annotations: "
           "{sim.kube-batchd.io/run-seconds: \"2\", sim.kube-batchd.io/exit-code: \"0\"}},"
           " spec: {containers: [{name: tensorflow, image: tf}]}}}\n");
    g_autofree char *last =
            wait_job("module6-ex1-gpu", "{.status.conditions[-1:].type}", "Succeeded");
    g_assert_cmpstr(last, ==, "Succeeded");
    g_autofree char *pods = wait_pods("module6-ex1-gpu", "pod/module6-ex1-gpu-master-0\n");
    g_assert_cmpstr(pods, ==, "pod/module6-ex1-gpu-master-0\n");
    g_autofree char *ex = wait_job_as("tfjobs.v1beta1.kubeflow.org", "example-tfjob",
                                      "{.status.conditions[-1:].type}", "Succeeded");
    g_assert_cmpstr(ex, ==, "Succeeded");
    g_autofree char *b2 = wait_job("beta2-dist", "{.status.conditions[-1:].type}", "Succeeded");
    g_assert_cmpstr(b2, ==, "Succeeded");
    g_autofree char *workers = job_path("beta2-dist", "{.status.replicaStatuses.Worker.succeeded}");
    g_assert_cmpstr(workers, ==, "2");
    g_autofree char *table =
            kb_test_kubectl_run(cluster.api, NULL, "get", "tfjobs.v1beta1.kubeflow.org", NULL);
    g_assert_nonnull(strstr(table, "STATE"));
    g_assert_true(g_regex_match_simple("module6-ex1-gpu +Succeeded", table, 0, 0));
    g_autofree char *table2 = kb_test_kubectl_run(
            cluster.api, NULL, "get", "tfjobs.v1beta2.kubeflow.org", "beta2-dist", NULL);
    g_assert_true(g_regex_match_simple("beta2-dist +Succeeded", table2, 0, 0));
}

static void test_v1_succeeds(void)
{
    create_file("deploy/demo/tfjob-v1-mnist.yaml");
    g_autofree char *last = wait_job("mnist-dist", "{.status.conditions[-1:].type}", "Succeeded");
    g_assert_cmpstr(last, ==, "Succeeded");
    g_autofree char *workers = job_path("mnist-dist", "{.status.replicaStatuses.Worker.succeeded}");
    g_assert_cmpstr(workers, ==, "4");
    /* read through v1alpha1: the replicaSpecs list, and the seed's phase */
    g_autofree char *types =
            job_path_as(ALPHA, "mnist-dist", "{.spec.replicaSpecs[*].tfReplicaType}");
    g_assert_nonnull(strstr(types, "WORKER"));
    g_assert_nonnull(strstr(types, "PS"));
    g_autofree char *phase = job_path_as(ALPHA, "mnist-dist", "{.status.phase}");
    g_assert_cmpstr(phase, ==, "Done");
    /* The TF_CONFIG worker 0 saw (cleanPodPolicy Running keeps the pods that finished). */
    g_autofree char *env =
            kb_test_kubectl_run(cluster.api, NULL, "get", "pod", "mnist-dist-worker-0", "-o",
                                "jsonpath={.spec.containers[0].env[?(@.name==\"TF_CONFIG\")]"
                                ".value}",
                                NULL);
    g_assert_nonnull(strstr(env, "\"task\":{\"type\":\"worker\",\"index\":0}"));
    g_assert_nonnull(strstr(env, "mnist-dist-ps-1.default.svc:2222"));
    /* --gang-api auto on a server without scheduling.k8s.io/v1beta1: a Volcano PodGroup, which
     * the pods join by annotation. */
    g_autofree char *group =
            kb_test_kubectl_run(cluster.api, NULL, "get", "pod", "mnist-dist-worker-0", "-o",
                                "jsonpath={.metadata.annotations.scheduling\\.k8s\\.io/group-name}"
                                "/{.spec.schedulingGroup.podGroupName}",
                                NULL);
    g_assert_cmpstr(group, ==, "mnist-dist/");
}

/* dist-mnist without cleanPodPolicy: parameter servers that serve until deleted, as real ones
 * do, and workers that finish. */
static const char job_ps_outlive[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: dist-mnist}\nspec:\n"
        "  tfReplicaSpecs:\n    PS:\n      replicas: 2\n      restartPolicy: Never\n"
        "      template:\n        spec: {containers: [{name: tensorflow, image: x}]}\n"
        "    Worker:\n      replicas: 2\n      restartPolicy: ExitCode\n      template:\n"
        "        metadata:\n          annotations: {sim.kube-batchd.io/run-seconds: \"1\", "
        "sim.kube-batchd.io/exit-code: \"0\"}\n"
        "        spec: {containers: [{name: tensorflow, image: x}]}\n";

/* A v1 job without cleanPodPolicy (None, as training-operator since v1.7): its PS pods, still
 * running when worker 0 succeeds, are not deleted. The PodGroup's deletion marks the end of the
 * cleanup: the operator deletes the pods it would delete in the same pass. */
static void test_v1_ps_outlive_success(void)
{
    create(job_ps_outlive);
    g_autofree char *last = wait_job("dist-mnist", "{.status.conditions[-1:].type}", "Succeeded");
    g_assert_cmpstr(last, ==, "Succeeded");
    char *groups = NULL;
    for (int i = 0; i < 300; i++) {
        g_free(groups);
        groups = kb_test_kubectl_run(cluster.api, NULL, "get", "podgroups", "--ignore-not-found",
                                     "-o", "name", NULL);
        if (strstr(groups, "dist-mnist") == NULL)
            break;
        g_usleep(200 * 1000);
    }
    g_assert_null(strstr(groups, "dist-mnist"));
    g_free(groups);
    g_autofree char *pods =
            kb_test_kubectl_run(cluster.api, NULL, "get", "pods", "-l",
                                "training.kubeflow.org/job-name=dist-mnist", "-o",
                                "jsonpath={range .items[*]}{.metadata.name} {.status.phase} "
                                "{.metadata.deletionTimestamp}{\"\\n\"}{end}",
                                NULL);
    g_assert_cmpstr(pods, ==,
                    "dist-mnist-ps-0 Running \ndist-mnist-ps-1 Running \n"
                    "dist-mnist-worker-0 Succeeded \ndist-mnist-worker-1 Succeeded \n");
    g_free(kb_test_kubectl_run(cluster.api, NULL, "delete", "tfjob", "dist-mnist", NULL));
    g_free(kb_test_kubectl_run(cluster.api, NULL, "delete", "pods", "-l",
                               "training.kubeflow.org/job-name=dist-mnist", NULL));
}

static const char jobs_exit[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: kill137}\nspec:\n"
        "  runPolicy: {backoffLimit: 2, cleanPodPolicy: All}\n  tfReplicaSpecs:\n    Worker:\n"
        "      replicas: 2\n      restartPolicy: ExitCode\n      template:\n        metadata:\n"
        "          annotations: {sim.kube-batchd.io/run-seconds: \"1\", "
        "sim.kube-batchd.io/exit-code: \"137\"}\n"
        "        spec: {containers: [{name: tensorflow, image: x}]}\n---\n"
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: exit1}\nspec:\n"
        "  tfReplicaSpecs:\n    Worker:\n      restartPolicy: ExitCode\n      template:\n"
        "        metadata:\n          annotations: {sim.kube-batchd.io/run-seconds: \"1\", "
        "sim.kube-batchd.io/exit-code: \"1\"}\n"
        "        spec: {containers: [{name: tensorflow, image: x}]}\n";

static void test_exit_codes(void)
{
    create(jobs_exit);
    g_autofree char *a = wait_job("kill137", "{.status.conditions[-1:].type}", "Failed");
    g_assert_cmpstr(a, ==, "Failed");
    /* Two restarts, each said as an event (cleanPodPolicy All took the services that counted
     * them). */
    g_autofree char *restarts = kb_test_kubectl_run(
            cluster.api, NULL, "get", "events", "-o",
            "jsonpath={range .items[?(@.involvedObject.name==\"kill137\")]}{.reason} {.count}"
            "{\"\\n\"}{end}",
            NULL);
    g_auto(GStrv) lines = g_strsplit(restarts, "\n", -1);
    int sum = 0;
    for (guint i = 0; lines[i] != NULL; i++)
        if (g_str_has_prefix(lines[i], "ExitedWithCode "))
            sum += atoi(lines[i] + strlen("ExitedWithCode "));
    g_assert_cmpint(sum, ==, 2);
    g_autofree char *why = job_path("kill137", "{.status.conditions[-1:].message}");
    g_assert_nonnull(strstr(why, "backoff limit"));
    g_autofree char *b = wait_job("exit1", "{.status.conditions[-1:].type}", "Failed");
    g_assert_cmpstr(b, ==, "Failed");
    g_autofree char *why1 = job_path("exit1", "{.status.conditions[-1:].message}");
    g_assert_nonnull(strstr(why1, "exit code 1 (general error): permanent"));
}

static const char job_ttl[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: short-lived}\nspec:\n"
        "  runPolicy: {ttlSecondsAfterFinished: 1, cleanPodPolicy: All}\n  tfReplicaSpecs:\n"
        "    Worker:\n      template:\n        metadata:\n"
        "          annotations: {sim.kube-batchd.io/run-seconds: \"1\"}\n"
        "        spec: {containers: [{name: tensorflow, image: x}]}\n";

static void test_ttl(void)
{
    create(job_ttl);
    char *name = NULL;
    for (int i = 0; i < 150; i++) {
        g_free(name);
        name = kb_test_kubectl_run(cluster.api, NULL, "get", "tfjobs", "--ignore-not-found", "-o",
                                   "name", NULL);
        if (strstr(name, "short-lived") == NULL)
            break;
        g_usleep(200 * 1000);
    }
    g_assert_null(strstr(name, "short-lived"));
    g_free(name);
}

static void test_invalid(void)
{
    create("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: no-tf}\nspec:\n"
           "  tfReplicaSpecs:\n    Worker:\n      template:\n"
           "        spec: {containers: [{name: main, image: x}]}\n");
    g_autofree char *t = wait_job("no-tf", "{.status.conditions[-1:].type}", "Failed");
    g_assert_cmpstr(t, ==, "Failed");
    g_autofree char *m = job_path("no-tf", "{.status.conditions[-1:].message}");
    g_assert_nonnull(strstr(m, "spec.tfReplicaSpecs.Worker.template.spec.containers: no "
                               "container named \"tensorflow\""));
    g_autofree char *pods =
            kb_test_kubectl_run(cluster.api, NULL, "get", "pods", "-l",
                                "training.kubeflow.org/job-name=no-tf", "-o", "name", NULL);
    g_assert_cmpstr(pods, ==, "");
}

static const char job_elastic[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: elastic\n"
        "  annotations: {kube-batchd.io/min-workers: \"1\", kube-batchd.io/max-workers: \"4\"}\n"
        "spec:\n  enableDynamicWorker: true\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n"
        "      restartPolicy: ExitCode\n      template:\n        spec:\n          containers:\n"
        "          - {name: tensorflow, image: x, resources: {limits: {nvidia.com/gpu: 2}}}\n";

static const char job_urgent[] =
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: urgent}\n"
        "value: 1000\n---\n"
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: urgent}\nspec:\n"
        "  runPolicy: {schedulingPolicy: {priorityClass: urgent}}\n  tfReplicaSpecs:\n"
        "    Worker:\n      replicas: 4\n      template:\n        spec:\n          containers:\n"
        "          - {name: tensorflow, image: x, resources: {limits: {nvidia.com/gpu: 8}}}\n";

static void test_autoscaling(void)
{
    /* Idle GPUs and an empty queue: the job grows to its maximum. */
    create(job_elastic);
    g_autofree char *up = wait_pods("elastic", "pod/elastic-worker-0\npod/elastic-worker-1\n"
                                               "pod/elastic-worker-2\npod/elastic-worker-3\n");
    g_assert_cmpstr(up, ==,
                    "pod/elastic-worker-0\npod/elastic-worker-1\npod/elastic-worker-2\n"
                    "pod/elastic-worker-3\n");
    /* A gang of higher priority waits in the same queue: back to the minimum. */
    create(job_urgent);
    g_autofree char *pods = wait_pods("elastic", "pod/elastic-worker-0\n");
    g_assert_cmpstr(pods, ==, "pod/elastic-worker-0\n");
    /* Each decision is an event. */
    g_autofree char *why = kb_test_kubectl_run(
            cluster.api, NULL, "get", "events", "-o",
            "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}", NULL);
    g_assert_nonnull(strstr(why, "TFJobScaledUp: TFJob default/elastic workers 2 -> 4"));
    g_assert_nonnull(strstr(why, "default/urgent (priority 1000 > 0) waits in queue default"));
    g_free(kb_test_kubectl_run(cluster.api, NULL, "delete", "tfjob", "elastic", "urgent", NULL));
}

/* ---- Kubernetes' own gang API ----------------------------------------------------------- */

static const char job_native[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: %s}\nspec:\n"
        "  runPolicy: {schedulingPolicy: {minAvailable: 3}}\n  tfReplicaSpecs:\n"
        "    PS:\n      template:\n        spec: {containers: [{name: tensorflow, image: x}]}\n"
        "    Worker:\n      replicas: 3\n      template:\n        spec:\n          containers:\n"
        "          - {name: tensorflow, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n";

/* Poll `kubectl get @args` on @api until it prints @want (60 s at most); the last output. */
static char *wait_out(KbTestApiserver *api, const char *want, const char *const *args)
{
    char *v = NULL;
    for (int i = 0; i < 300; i++) {
        g_free(v);
        v = kb_test_kubectl_run(api, NULL, "get", args[0], args[1], args[2], args[3], args[4],
                                NULL);
        if (g_strcmp0(v, want) == 0)
            return v;
        g_usleep(200 * 1000);
    }
    g_test_message("kubectl get %s %s: \"%s\", wanted \"%s\"", args[0], args[1], v, want);
    return v;
}

/* A TFJob on kb-apiserver serving scheduling.k8s.io/v1beta1: its Workload and PodGroup, pods
 * naming the group, bound whole by kube-batchd, PodGroupInitiallyScheduled True; deleting the
 * job takes them all. */
static void run_native_job(KbTestApiserver *api, const char *name)
{
    g_autofree char *yaml = g_strdup_printf(job_native, name);
    g_autofree char *out = kb_test_kubectl_run(api, yaml, "create", "-f", "-", NULL);
    g_assert_nonnull(strstr(out, "created"));
    const char *cond[] = {"podgroups.v1beta1.scheduling.k8s.io", name, "-o",
                          "jsonpath={.status.conditions[?(@.type==\"PodGroupInitiallyScheduled\")]"
                          ".status}",
                          NULL};
    g_autofree char *c = wait_out(api, "True", cond);
    g_assert_cmpstr(c, ==, "True");
    g_autofree char *spec = kb_test_kubectl_run(
            api, NULL, "get", "podgroups.v1beta1.scheduling.k8s.io", name, "-o",
            "jsonpath={.spec.schedulingPolicy.gang.minCount} {.spec.workloadRef.workloadName} "
            "{.metadata.ownerReferences[0].kind}",
            NULL);
    g_autofree char *want_spec = g_strdup_printf("3 %s TFJob", name);
    g_assert_cmpstr(spec, ==, want_spec);
    g_autofree char *wl = kb_test_kubectl_run(
            api, NULL, "get", "workloads.v1beta1.scheduling.k8s.io", name, "-o",
            "jsonpath={.spec.podGroupTemplates[0].schedulingPolicy.gang.minCount}", NULL);
    g_assert_cmpstr(wl, ==, "3");
    g_autofree char *sel = g_strdup_printf("training.kubeflow.org/job-name=%s", name);
    g_autofree char *want_pods = g_strdup_printf("%s Running\n%s Running\n%s Running\n%s Running\n",
                                                 name, name, name, name);
    const char *pods[] = {"pods", "-l", sel, "-o",
                          "jsonpath={range .items[*]}{.spec.schedulingGroup.podGroupName} "
                          "{.status.phase}{\"\\n\"}{end}"};
    g_autofree char *bound = wait_out(api, want_pods, pods);
    g_assert_cmpstr(bound, ==, want_pods);
    g_free(kb_test_kubectl_run(api, NULL, "delete", "tfjob", name, NULL));
    const char *gone[] = {"workloads.v1beta1.scheduling.k8s.io", "--ignore-not-found", "-o", "name",
                          NULL};
    g_autofree char *left = wait_out(api, "", gone);
    g_assert_cmpstr(left, ==, "");
}

/* `kubectl get pods -o custom-columns` of the job's pods on @api: "name uid" lines. */
static char *pods_of(KbTestApiserver *api, const char *job)
{
    g_autofree char *sel = g_strdup_printf("training.kubeflow.org/job-name=%s", job);
    return kb_test_kubectl_run(api, NULL, "get", "pods", "-l", sel, "--no-headers", "-o",
                               "custom-columns=N:.metadata.name,U:.metadata.uid", NULL);
}

/* A v1alpha1 job created while the CRD did not convert (stored in v1alpha1's shape), then the CRD
 * switched to the webhook and the job rewritten through v1alpha1 (now stored as v1): tf-operator
 * keeps its pods, names and uids, and runs it as before. Nothing schedules the pods (gang off). */
static void test_storage_switch(void)
{
    g_autoptr(GError) error = NULL;
    KbTestApiserver *api = kb_test_apiserver_start(NULL, &error);
    g_assert_no_error(error);
    g_autofree char *crd = g_build_filename(kb_test_src_dir(), "deploy/base/crds/tfjob.yaml", NULL);
    g_free(kb_test_kubectl_run(api, NULL, "apply", "-f", crd, NULL));
    g_autofree char *logdir = g_build_filename(cluster.logdir, "switch", NULL);
    g_mkdir_with_parents(logdir, 0700);
    g_autoptr(KbTestTfWebhook) wh = kb_test_tfwebhook_new();
    const char *gang_off[] = {"--gang-scheduler-name", "", NULL};
    KbTestDaemon *op = kb_test_apiserver_spawn(api, "tf-operator", TRUE,
                                               kb_test_tfwebhook_args(wh, gang_off), logdir);
    kb_test_tfwebhook_connect(wh, op, kb_test_tfwebhook_kubectl_api, api);
    g_autofree char *conv = kb_test_kubectl_run(api, NULL, "get", "crd", "tfjobs.kubeflow.org",
                                                "-o", "jsonpath={.spec.conversion}", NULL);
    g_free(kb_test_kubectl_run(
            api, NULL, "patch", "crd", "tfjobs.kubeflow.org", "--type", "merge", "-p",
            "{\"spec\":{\"conversion\":{\"strategy\":\"None\",\"webhook\":null}}}", NULL));
    g_autofree char *seed =
            g_build_filename(kb_test_src_dir(), "deploy/demo/tfjob-seed-v1alpha1.yaml", NULL);
    g_free(kb_test_kubectl_run(api, NULL, "create", "-f", seed, NULL));
    g_autofree char *before = NULL;
    for (int i = 0; i < 300; i++) {
        g_free(before);
        before = pods_of(api, "example-job");
        if (strstr(before, "worker") != NULL && strstr(before, "-ps-") != NULL &&
            strstr(before, "master") != NULL)
            break;
        g_usleep(100 * 1000);
    }
    g_autofree char *raw =
            kb_test_kubectl_run(api, NULL, "get", "tfjobs", "example-job", "-o",
                                "jsonpath={.spec.replicaSpecs[0].tfReplicaType}", NULL);
    g_assert_cmpstr(raw, ==, "MASTER"); /* stored in v1alpha1's shape */
    g_autofree char *phase_before = NULL;
    for (int i = 0; i < 100 && (phase_before == NULL || *phase_before == '\0'); i++) {
        g_free(phase_before);
        phase_before = kb_test_kubectl_run(api, NULL, "get", "tfjobs.v1alpha1.kubeflow.org",
                                           "example-job", "-o", "jsonpath={.status.phase}", NULL);
        g_usleep(100 * 1000);
    }
    /* the webhook again, and the job written through v1alpha1: now stored as v1 */
    g_autofree char *back = g_strdup_printf("{\"spec\":{\"conversion\":%s}}", conv);
    g_free(kb_test_kubectl_run(api, NULL, "patch", "crd", "tfjobs.kubeflow.org", "--type", "merge",
                               "-p", back, NULL));
    g_free(kb_test_kubectl_run(api, NULL, "label", "tfjobs.v1alpha1.kubeflow.org", "example-job",
                               "rewritten=yes", NULL));
    g_autofree char *master =
            kb_test_kubectl_run(api, NULL, "get", "tfjobs.v1.kubeflow.org", "example-job", "-o",
                                "jsonpath={.spec.tfReplicaSpecs.Master.replicas}", NULL);
    g_assert_cmpstr(master, ==, "1");
    /* while the operator reconciles the rewritten job (2 s of it): the same pods */
    for (int i = 0; i < 20; i++) {
        g_autofree char *after = pods_of(api, "example-job");
        g_assert_cmpstr(after, ==, before);
        g_usleep(100 * 1000);
    }
    g_autofree char *phase =
            kb_test_kubectl_run(api, NULL, "get", "tfjobs.v1alpha1.kubeflow.org", "example-job",
                                "-o", "jsonpath={.status.phase}", NULL);
    g_assert_cmpstr(phase, ==, phase_before);
    stop(&op, "tf-operator");
    kb_test_apiserver_free(api);
}

/* `kbctl get @job -o json` on @api, parsed (NULL when kbctl fails). */
static json_object *kbctl_job(KbTestApiserver *api, const char *job)
{
    g_autofree char *bin = g_build_filename(kb_test_bin_dir(), "kbctl", NULL);
    const char *argv[] = {bin,    "--server", kb_test_apiserver_url(api), "get", job, "-o",
                          "json", NULL};
    g_autofree char *out = NULL, *err = NULL;
    int wait_status = 0;
    g_autoptr(GError) error = NULL;
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                               &wait_status, &error));
    g_assert_no_error(error);
    if (!g_spawn_check_wait_status(wait_status, NULL)) {
        g_test_message("kbctl get %s: %s", job, err);
        return NULL;
    }
    return json_tokener_parse(out);
}

/*
 * A native TFJob that cannot start (5 workers of 8 GPUs on 32): kube-batchd says why on its
 * PodGroup (PodGroupInitiallyScheduled False, Unschedulable), and kbctl shows the job Waiting with
 * that reason and message, the group's minCount and the queue of its label.
 */
static void native_job_waits_in_kbctl(KbTestApiserver *api)
{
    static const char wide[] =
            "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: wide}\nspec:\n"
            "  tfReplicaSpecs:\n    Worker:\n      replicas: 5\n      template:\n        spec:\n"
            "          containers:\n"
            "          - {name: tensorflow, image: x, resources: {limits: {nvidia.com/gpu: 8}}}\n";
    g_free(kb_test_kubectl_run(api, wide, "create", "-f", "-", NULL));
    const char *cond[] = {"podgroups.v1beta1.scheduling.k8s.io", "wide", "-o",
                          "jsonpath={.status.conditions[?(@.type==\"PodGroupInitiallyScheduled\")]"
                          ".reason}",
                          NULL};
    g_autofree char *c = wait_out(api, "Unschedulable", cond);
    g_assert_cmpstr(c, ==, "Unschedulable");
    g_autofree char *message = kb_test_kubectl_run(
            api, NULL, "get", "podgroups.v1beta1.scheduling.k8s.io", "wide", "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodGroupInitiallyScheduled\")].message}",
            NULL);
    json_object *j = kbctl_job(api, "wide");
    g_assert_nonnull(j);
    json_object *waiting = json_object_object_get(j, "waiting");
    const char *status = json_object_get_string(json_object_object_get(j, "status"));
    const char *reason = json_object_get_string(json_object_object_get(waiting, "reason"));
    const char *said = json_object_get_string(json_object_object_get(waiting, "message"));
    json_object *group = json_object_object_get(j, "podGroup");
    if (g_strcmp0(status, "Waiting") != 0 || g_strcmp0(reason, "Unschedulable") != 0 ||
        g_strcmp0(said, message) != 0 ||
        json_object_get_int64(json_object_object_get(group, "minMember")) != 5)
        g_error("kbctl get wide: %s (the PodGroup says: %s)",
                json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY), message);
    json_object_put(j);
    g_free(kb_test_kubectl_run(api, NULL, "delete", "tfjob", "wide", NULL));
}

/* tf-operator --gang-api native, then auto (which picks native on this server). */
static void test_native_gang_api(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *nodes =
            g_build_filename(kb_test_src_dir(), "tests/data/apiserver/nodes.yaml", NULL);
    const char *args[] = {"--simulate-kubelet",
                          "--runtime-config",
                          "scheduling.k8s.io/v1beta1=true",
                          "--nodes",
                          nodes,
                          NULL};
    KbTestApiserver *api = kb_test_apiserver_start(args, &error);
    g_assert_no_error(error);
    g_autofree char *crds = g_build_filename(kb_test_src_dir(), "deploy/base/crds", NULL);
    g_autofree char *queue =
            g_build_filename(kb_test_src_dir(), "deploy/base/default-queue.yaml", NULL);
    g_free(kb_test_kubectl_run(api, NULL, "apply", "-f", crds, NULL));
    g_free(kb_test_kubectl_run(api, NULL, "apply", "-f", queue, NULL));
    g_autofree char *logdir = g_build_filename(cluster.logdir, "native", NULL);
    g_mkdir_with_parents(logdir, 0700);
    const char *sched_args[] = {"--schedule-period", "200ms", NULL};
    KbTestDaemon *sched = kb_test_apiserver_spawn(api, "kube-batchd", TRUE, sched_args, logdir);
    const char *native[] = {"--gang-api", "native", NULL};
    KbTestDaemon *op = kb_test_apiserver_spawn(api, "tf-operator", TRUE, native, logdir);
    run_native_job(api, "native-job");
    native_job_waits_in_kbctl(api);
    stop(&op, "tf-operator");
    op = kb_test_apiserver_spawn(api, "tf-operator", TRUE, NULL, logdir);
    run_native_job(api, "auto-job");
    stop(&op, "tf-operator");
    stop(&sched, "kube-batchd");
    kb_test_apiserver_free(api);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    /* A failed check must still stop the daemons and the API server below. */
    g_test_set_nonfatal_assertions();
    if (!kb_test_kubectl_available()) {
        g_test_add_func("/operator/e2e/skipped", kb_test_skip_no_kubectl);
        return g_test_run();
    }
    g_autoptr(GError) error = NULL;
    g_autofree char *nodes =
            g_build_filename(kb_test_src_dir(), "tests/data/apiserver/nodes.yaml", NULL);
    const char *args[] = {"--simulate-kubelet", "--nodes", nodes, NULL};
    cluster.logdir = g_dir_make_tmp("kb-operator-e2e-XXXXXX", &error);
    g_assert_no_error(error);
    cluster.api = kb_test_apiserver_start(args, &error);
    g_assert_no_error(error);
    g_autofree char *crds = g_build_filename(kb_test_src_dir(), "deploy/base/crds", NULL);
    g_autofree char *queue =
            g_build_filename(kb_test_src_dir(), "deploy/base/default-queue.yaml", NULL);
    g_free(kb_test_kubectl_run(cluster.api, NULL, "apply", "-f", crds, NULL));
    g_free(kb_test_kubectl_run(cluster.api, NULL, "apply", "-f", queue, NULL));
    const char *sched_args[] = {"--schedule-period", "200ms", NULL};
    cluster.scheduler =
            kb_test_apiserver_spawn(cluster.api, "kube-batchd", TRUE, sched_args, cluster.logdir);
    const char *op_args[] = {"--enable-autoscaling", "--autoscale-interval", "1", NULL};
    cluster.webhook = kb_test_tfwebhook_new();
    cluster.operator_ = kb_test_apiserver_spawn(cluster.api, "tf-operator", TRUE,
                                                kb_test_tfwebhook_args(cluster.webhook, op_args),
                                                cluster.logdir);
    kb_test_tfwebhook_connect(cluster.webhook, cluster.operator_, kb_test_tfwebhook_kubectl_api,
                              cluster.api);

    g_test_add_func("/operator/e2e/seed-v1alpha1", test_seed_v1alpha1);
    g_test_add_func("/operator/e2e/seed-v1beta1", test_seed_v1beta1);
    g_test_add_func("/operator/e2e/v1-2ps-4w", test_v1_succeeds);
    g_test_add_func("/operator/e2e/v1-ps-outlive-success", test_v1_ps_outlive_success);
    g_test_add_func("/operator/e2e/exit-codes", test_exit_codes);
    g_test_add_func("/operator/e2e/ttl", test_ttl);
    g_test_add_func("/operator/e2e/invalid", test_invalid);
    g_test_add_func("/operator/e2e/autoscaling", test_autoscaling);
    g_test_add_func("/operator/e2e/native-gang-api", test_native_gang_api);
    g_test_add_func("/operator/e2e/storage-version-switch", test_storage_switch);
    int rc = g_test_run();

    stop(&cluster.operator_, "tf-operator");
    stop(&cluster.scheduler, "kube-batchd");
    kb_test_apiserver_free(cluster.api);
    kb_test_tfwebhook_free(cluster.webhook);
    return kb_test_log_dir_finish(cluster.logdir, rc);
}
