/*
 * tf-operator against Kubeflow's own TFJob CRD (training-operator v1.8's structural schema,
 * tests/data/operator/crd-tfjob-kubeflow-v1.8.yaml), on a cluster whose pods are run by the
 * separate simulated kubelet: bin/kb-apiserver (no --simulate-kubelet), bin/kb-kubelet with four
 * 8-GPU nodes, bin/kube-batchd and bin/tf-operator, each its own process, jobs submitted and read
 * with kubectl as a user would. Skipped when kubectl is not installed.
 *
 *   - a TFJob runs to completion on kb-kubelet's nodes, and the PS it deletes when the job ends
 *     goes at once (kb-kubelet confirms graceful deletions);
 *   - backoffLimit holds although the schema prunes status.restartCount, and every status the
 *     operator writes has only the schema's fields (so it holds against a pruning server too);
 *   - restarting tf-operator, with its TFJob list failing or slow (kb-apiserver --faults) so that
 *     the pods are listed first, deletes, recreates or restarts nothing of a running job;
 *   - conflicts injected on status writes do not repeat TFJobCreated or TFJobSucceeded events.
 */
#include <curl/curl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <glib.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-util.h"

typedef struct {
    KbTestApiserver *api;
    KbTestDaemon *kubelet;
    KbTestDaemon *scheduler;
    KbTestDaemon *operator_;
    char *logdir;
} Cluster;

static Cluster cluster;

static void stop(KbTestDaemon **d, const char *name)
{
    if (*d == NULL)
        return;
    int status = kb_test_daemon_stop(*d, 30000);
    if (status != 0)
        g_printerr("# %s ended with status %d (log in %s)\n", name, status, cluster.logdir);
    g_clear_pointer(d, kb_test_daemon_free);
}

/* POST @spec to kb-apiserver's /admin/faults ("" clears the rules). */
static void set_faults(const char *spec)
{
    g_autofree char *url = g_strdup_printf("%s/admin/faults", kb_test_apiserver_url(cluster.api));
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, spec);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, NULL);
    FILE *sink = fopen("/dev/null", "w");
    curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    fclose(sink);
    g_assert_cmpint(rc, ==, CURLE_OK);
    g_assert_cmpint(code, ==, 200);
}

static char *job_path(const char *name, const char *jsonpath)
{
    g_autofree char *arg = g_strdup_printf("jsonpath=%s", jsonpath);
    return kb_test_kubectl_run(cluster.api, NULL, "get", "tfjobs", name, "-o", arg, NULL);
}

static gboolean alive(void)
{
    KbTestDaemon *ds[] = {cluster.operator_, cluster.scheduler, cluster.kubelet};
    const char *names[] = {"tf-operator", "kube-batchd", "kb-kubelet"};
    for (guint i = 0; i < G_N_ELEMENTS(ds); i++) {
        if (ds[i] != NULL && !kb_test_daemon_running(ds[i])) {
            g_test_message("%s exited (log in %s/%s.log)", names[i], cluster.logdir, names[i]);
            g_test_fail();
            return FALSE;
        }
    }
    return TRUE;
}

/* Poll until job @name's @jsonpath equals @want (90 s at most); returns the last value. */
static char *wait_job(const char *name, const char *jsonpath, const char *want)
{
    char *v = NULL;
    for (int i = 0; i < 450; i++) {
        g_free(v);
        v = job_path(name, jsonpath);
        if (g_strcmp0(v, want) == 0 || !alive())
            return v;
        g_usleep(200 * 1000);
    }
    g_test_message("job %s: %s is \"%s\", wanted \"%s\"", name, jsonpath, v, want);
    return v;
}

static void create(const char *yaml)
{
    g_autofree char *out = kb_test_kubectl_run(cluster.api, yaml, "create", "-f", "-", NULL);
    g_assert_nonnull(strstr(out, "created"));
}

/* Kubeflow's schema keeps only these status fields: the operator must write nothing else. */
static void assert_schema_status(const char *name)
{
    g_autofree char *text =
            kb_test_kubectl_run(cluster.api, NULL, "get", "tfjob", name, "-o", "json", NULL);
    json_object *job = json_tokener_parse(text), *status = NULL;
    g_assert_nonnull(job);
    g_assert_true(json_object_object_get_ex(job, "status", &status));
    static const char *const allowed[] = {"conditions", "replicaStatuses", "startTime",
                                          "completionTime", "lastReconcileTime"};
    json_object_object_foreach(status, key, val)
    {
        (void)val;
        gboolean ok = FALSE;
        for (guint i = 0; i < G_N_ELEMENTS(allowed); i++)
            ok |= strcmp(key, allowed[i]) == 0;
        if (!ok)
            g_test_message("tfjob %s: status.%s is outside Kubeflow's schema", name, key);
        g_assert_true(ok);
    }
    json_object_put(job);
}

/* Events about @name with @reason, repeats (the aggregated count) included. */
static guint event_count(const char *name, const char *reason)
{
    g_autofree char *text =
            kb_test_kubectl_run(cluster.api, NULL, "get", "events", "-o", "json", NULL);
    json_object *list = json_tokener_parse(text), *items, *v;
    guint n = 0;
    g_assert_nonnull(list);
    g_assert_true(json_object_object_get_ex(list, "items", &items));
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *e = json_object_array_get_idx(items, i), *inv;
        if (!json_object_object_get_ex(e, "involvedObject", &inv) ||
            !json_object_object_get_ex(inv, "name", &v) ||
            g_strcmp0(json_object_get_string(v), name) != 0 ||
            !json_object_object_get_ex(e, "reason", &v) ||
            g_strcmp0(json_object_get_string(v), reason) != 0)
            continue;
        n += json_object_object_get_ex(e, "count", &v) ? MAX(json_object_get_int(v), 1) : 1;
    }
    json_object_put(list);
    return n;
}

/* ---- cases --------------------------------------------------------------------------------- */

static const char job_short[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: short}\nspec:\n"
        "  runPolicy: {cleanPodPolicy: Running}\n  tfReplicaSpecs:\n"
        "    PS:\n      template:\n        spec: {containers: [{name: tensorflow, image: x}]}\n"
        "    Worker:\n      replicas: 2\n      template:\n        metadata:\n"
        "          annotations: {sim.kube-batchd.io/run-seconds: \"1\"}\n"
        "        spec:\n          containers:\n"
        "          - {name: tensorflow, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n";

/* kb-kubelet runs the pods: the workers succeed, the job with them; the PS, running when the job
 * ends, is deleted by the operator and confirmed gone by kb-kubelet (no 30 s grace wait). */
static void test_runs_to_completion(void)
{
    create(job_short);
    g_autofree char *last = wait_job("short", "{.status.conditions[-1:].type}", "Succeeded");
    g_assert_cmpstr(last, ==, "Succeeded");
    g_autofree char *phase =
            kb_test_kubectl_run(cluster.api, NULL, "get", "pod", "short-worker-0", "-o",
                                "jsonpath={.status.phase} {.spec.nodeName} "
                                "{.status.containerStatuses[0].state.terminated.exitCode}",
                                NULL);
    g_assert_true(g_str_has_prefix(phase, "Succeeded gpu-"));
    g_assert_true(g_str_has_suffix(phase, " 0"));
    char *ps = NULL;
    for (int i = 0; i < 75; i++) {
        g_free(ps);
        ps = kb_test_kubectl_run(cluster.api, NULL, "get", "pods", "--ignore-not-found", "-o",
                                 "name", "short-ps-0", NULL);
        if (*ps == '\0')
            break;
        g_usleep(200 * 1000);
    }
    g_assert_cmpstr(ps, ==, "");
    g_free(ps);
    assert_schema_status("short");
}

static const char job_backoff[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: kill137}\nspec:\n"
        "  runPolicy: {backoffLimit: 2, cleanPodPolicy: None}\n  tfReplicaSpecs:\n    Worker:\n"
        "      replicas: 2\n      restartPolicy: ExitCode\n      template:\n        metadata:\n"
        "          annotations: {sim.kube-batchd.io/run-seconds: \"1\", "
        "sim.kube-batchd.io/exit-code: \"137\"}\n"
        "        spec: {containers: [{name: tensorflow, image: x}]}\n";

/* backoffLimit with Kubeflow's schema: the restarts are counted where the schema cannot prune
 * them (the replicas' services), and the job fails after exactly two. */
static void test_backoff_limit(void)
{
    create(job_backoff);
    g_autofree char *t = wait_job("kill137", "{.status.conditions[-1:].type}", "Failed");
    g_assert_cmpstr(t, ==, "Failed");
    g_autofree char *why = job_path("kill137", "{.status.conditions[-1:].message}");
    g_assert_nonnull(strstr(why, "reached the specified backoff limit (2 restarts)"));
    g_autofree char *counts = kb_test_kubectl_run(
            cluster.api, NULL, "get", "services", "-l", "training.kubeflow.org/job-name=kill137",
            "-o",
            "jsonpath={range .items[*]}{.metadata.annotations.kube-batchd\\.io/restarts}"
            "{\" \"}{end}",
            NULL);
    g_auto(GStrv) parts = g_strsplit(g_strstrip(counts), " ", -1);
    int sum = 0;
    for (guint i = 0; parts[i] != NULL; i++)
        sum += atoi(parts[i]);
    g_assert_cmpint(sum, ==, 2);
    g_assert_cmpuint(event_count("kill137", "ExitedWithCode"), ==, 2);
    assert_schema_status("kill137");
}

static const char job_steady[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: steady}\nspec:\n"
        "  runPolicy: {backoffLimit: 0}\n  tfReplicaSpecs:\n"
        "    PS:\n      template:\n        spec: {containers: [{name: tensorflow, image: x}]}\n"
        "    Worker:\n      replicas: 2\n      restartPolicy: ExitCode\n      template:\n"
        "        spec: {containers: [{name: tensorflow, image: x}]}\n";

static char *steady_pods(void)
{
    return kb_test_kubectl_run(cluster.api, NULL, "get", "pods", "-l",
                               "training.kubeflow.org/job-name=steady", "-o",
                               "jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}"
                               ",{.status.phase},{.metadata.deletionTimestamp};{end}",
                               NULL);
}

/* Wait for tf-operator's log to say its caches synced (it then reconciles). */
static gboolean operator_synced(guint seconds)
{
    for (guint i = 0; i < seconds * 5; i++) {
        g_autofree char *log = kb_test_daemon_log(cluster.operator_);
        if (strstr(log, "synced; reconciling") != NULL)
            return TRUE;
        if (!alive())
            return FALSE;
        g_usleep(200 * 1000);
    }
    return FALSE;
}

/* Restart tf-operator three times with a running job: its TFJob list failing (500), slow (3 s),
 * then normal. Nothing of the job is deleted, recreated or restarted. */
static void test_operator_restarts_kill_nothing(void)
{
    create(job_steady);
    g_autofree char *running = wait_job("steady", "{.status.conditions[-1:].type}", "Running");
    g_assert_cmpstr(running, ==, "Running");
    g_autofree char *before = NULL;
    for (int i = 0; i < 100; i++) {
        g_free(before);
        before = steady_pods();
        g_auto(GStrv) running_pods = g_strsplit(before, ",Running,;", -1);
        if (g_strv_length(running_pods) == 4) /* three pods, all running */
            break;
        g_usleep(200 * 1000);
    }
    static const char *const faults[] = {
            "error=500,method=GET,path=/apis/kubeflow.org/v1/tfjobs",
            "latency=3000,method=GET,path=/apis/kubeflow.org/v1/tfjobs",
            "",
    };
    const char *op_args[] = {"--resync-seconds", "1", NULL};
    for (guint round = 0; round < G_N_ELEMENTS(faults); round++) {
        g_autofree char *log_path = g_strdup(kb_test_daemon_log_path(cluster.operator_));
        stop(&cluster.operator_, "tf-operator");
        g_unlink(log_path); /* the next one's log starts empty */
        set_faults(faults[round]);
        cluster.operator_ =
                kb_test_apiserver_spawn(cluster.api, "tf-operator", TRUE, op_args, cluster.logdir);
        if (round == 0) {
            /* Pods and services listed, TFJobs failing: nothing may happen. */
            g_usleep(3 * G_USEC_PER_SEC);
            g_assert_false(operator_synced(0));
            g_autofree char *mid = steady_pods();
            g_assert_cmpstr(mid, ==, before);
            set_faults("");
        }
        g_assert_true(operator_synced(60));
        g_usleep(3 * G_USEC_PER_SEC); /* a few resync passes */
        set_faults("");
        g_autofree char *after = steady_pods();
        g_assert_cmpstr(after, ==, before);
        g_autofree char *svcs =
                kb_test_kubectl_run(cluster.api, NULL, "get", "services", "-l",
                                    "training.kubeflow.org/job-name=steady", "-o", "name", NULL);
        g_assert_cmpstr(svcs, ==,
                        "service/steady-ps-0\nservice/steady-worker-0\n"
                        "service/steady-worker-1\n");
        g_autofree char *last = job_path("steady", "{.status.conditions[-1:].type}");
        g_assert_cmpstr(last, ==, "Running");
        g_autofree char *log = kb_test_daemon_log(cluster.operator_);
        g_assert_null(strstr(log, "tfjob default/steady: deleting"));
        g_assert_null(strstr(log, "TFJob steady (uid"));
    }
    g_assert_cmpuint(event_count("steady", "ExitedWithCode"), ==, 0);
    g_assert_cmpuint(event_count("steady", "TFJobRestarting"), ==, 0);
    g_assert_cmpuint(event_count("steady", "SuccessfulDeletePod"), ==, 0);
    /* A job really deleted still loses its pods. */
    g_free(kb_test_kubectl_run(cluster.api, NULL, "delete", "tfjob", "steady", NULL));
    char *left = NULL;
    for (int i = 0; i < 150; i++) {
        g_free(left);
        left = steady_pods();
        if (*left == '\0')
            break;
        g_usleep(200 * 1000);
    }
    g_assert_cmpstr(left, ==, "");
    g_free(left);
}

static const char job_conflicts[] =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: conflicted}\nspec:\n"
        "  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      template:\n        metadata:\n"
        "          annotations: {sim.kube-batchd.io/run-seconds: \"1\"}\n"
        "        spec: {containers: [{name: tensorflow, image: x}]}\n";

/* Half the status writes answered 409: every condition's event is still recorded once. */
static void test_conflicts_no_duplicate_events(void)
{
    set_faults("error=409,method=PUT,path=/apis/kubeflow.org/v1/namespaces/*/tfjobs/*/status,"
               "fraction=0.5");
    create(job_conflicts);
    g_autofree char *last = wait_job("conflicted", "{.status.conditions[-1:].type}", "Succeeded");
    g_assert_cmpstr(last, ==, "Succeeded");
    g_usleep(3 * G_USEC_PER_SEC); /* resync passes under the same faults */
    set_faults("");
    g_assert_cmpuint(event_count("conflicted", "TFJobCreated"), ==, 1);
    g_assert_cmpuint(event_count("conflicted", "TFJobSucceeded"), ==, 1);
    assert_schema_status("conflicted");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    g_test_set_nonfatal_assertions();
    if (!kb_test_kubectl_available()) {
        g_test_add_func("/operator/kubeflow/skipped", kb_test_skip_no_kubectl);
        return g_test_run();
    }
    g_autoptr(GError) error = NULL;
    cluster.logdir = g_dir_make_tmp("kb-operator-kubeflow-XXXXXX", &error);
    g_assert_no_error(error);
    cluster.api = kb_test_apiserver_start(NULL, &error);
    g_assert_no_error(error);
    g_autofree char *nodes =
            g_build_filename(kb_test_src_dir(), "tests/data/apiserver/nodes.yaml", NULL);
    const char *kubelet_args[] = {"--nodes", nodes, NULL};
    cluster.kubelet =
            kb_test_apiserver_spawn(cluster.api, "kb-kubelet", FALSE, kubelet_args, cluster.logdir);
    for (int i = 0; i < 300; i++) {
        g_autofree char *log = kb_test_daemon_log(cluster.kubelet);
        if (strstr(log, "registered 4 nodes") != NULL || !alive())
            break;
        g_usleep(100 * 1000);
    }
    g_autofree char *crd = g_build_filename(
            kb_test_src_dir(), "tests/data/operator/crd-tfjob-kubeflow-v1.8.yaml", NULL);
    g_autofree char *pg =
            g_build_filename(kb_test_src_dir(), "deploy/base/crds/podgroup-volcano.yaml", NULL);
    g_autofree char *q =
            g_build_filename(kb_test_src_dir(), "deploy/base/crds/queue-volcano.yaml", NULL);
    g_autofree char *queue = g_build_filename(kb_test_src_dir(), "deploy/base/default-queue.yaml", NULL);
    g_free(kb_test_kubectl_run(cluster.api, NULL, "apply", "-f", crd, "-f", pg, "-f", q, NULL));
    g_free(kb_test_kubectl_run(cluster.api, NULL, "apply", "-f", queue, NULL));
    const char *sched_args[] = {"--schedule-period", "200ms", NULL};
    cluster.scheduler =
            kb_test_apiserver_spawn(cluster.api, "kube-batchd", TRUE, sched_args, cluster.logdir);
    const char *op_args[] = {"--resync-seconds", "1", NULL};
    cluster.operator_ =
            kb_test_apiserver_spawn(cluster.api, "tf-operator", TRUE, op_args, cluster.logdir);

    g_test_add_func("/operator/kubeflow/kb-kubelet-runs-to-completion", test_runs_to_completion);
    g_test_add_func("/operator/kubeflow/backoff-limit", test_backoff_limit);
    g_test_add_func("/operator/kubeflow/operator-restarts-kill-nothing",
                    test_operator_restarts_kill_nothing);
    g_test_add_func("/operator/kubeflow/conflicts-no-duplicate-events",
                    test_conflicts_no_duplicate_events);
    int rc = g_test_run();

    stop(&cluster.operator_, "tf-operator");
    stop(&cluster.scheduler, "kube-batchd");
    stop(&cluster.kubelet, "kb-kubelet");
    kb_test_apiserver_free(cluster.api);
    return kb_test_log_dir_finish(cluster.logdir, rc);
}
