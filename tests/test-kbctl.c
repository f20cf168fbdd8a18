/*
 * bin/kbctl end to end, run as a user runs it: bin/kb-apiserver --simulate-kubelet with four 8-GPU
 * nodes, the project's CRDs and default queue applied with kubectl, bin/kube-batchd and
 * bin/tf-operator as separate processes. A job that fills every GPU runs; a second one waits with
 * kube-batchd's reason and what it is short of; deleting the first lets it run; its logs, GPU
 * placement, queue shares, usage errors (exit 2), missing objects (exit 1), JSON output, and the
 * --dry-run YAML read back by kubectl. Skipped when kubectl is not installed.
 */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <glib.h>
#include <json-c/json.h>
#include <string.h>
#include <sys/wait.h>

#include "cli/kbctl-out.h"
#include "cli/kbctl-view.h"
#include "testbed/apiserver/kas-json.h"
#include "tests/lib/kb-test-apiserver.h"
#include "tests/lib/kb-test-util.h"

typedef struct {
    KbTestApiserver *api;
    KbTestDaemon *scheduler;
    KbTestDaemon *operator_;
    char *logdir;
} Cluster;

static Cluster cluster;

static char *kbctl_path(void)
{
    return g_build_filename(kb_test_bin_dir(), "kbctl", NULL);
}

typedef struct {
    int status;
    char *out;
    char *err;
} Run;

static void run_clear(Run *r)
{
    g_clear_pointer(&r->out, g_free);
    g_clear_pointer(&r->err, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Run, run_clear)

/* Run kbctl with @args (NULL-terminated), @env added to the environment (may be NULL), and
 * --server unless @no_server. */
static void kbctl_argv(Run *r, const char *const *env, gboolean no_server, const char *const *args)
{
    g_autofree char *bin = kbctl_path();
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, bin);
    if (!no_server) {
        g_ptr_array_add(argv, (gpointer) "--server");
        g_ptr_array_add(argv, (gpointer)kb_test_apiserver_url(cluster.api));
    }
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add(argv, (gpointer)args[i]);
    g_ptr_array_add(argv, NULL);
    g_auto(GStrv) envp = g_get_environ();
    envp = g_environ_unsetenv(envp, "KUBECONFIG");
    for (guint i = 0; env != NULL && env[i] != NULL; i += 2)
        envp = g_environ_setenv(envp, env[i], env[i + 1], TRUE);
    g_autoptr(GError) error = NULL;
    int wait_status = 0;
    memset(r, 0, sizeof *r);
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, envp, G_SPAWN_DEFAULT, NULL, NULL,
                               &r->out, &r->err, &wait_status, &error));
    g_assert_no_error(error);
    r->status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

#define KBCTL(r, ...)                                                                              \
    do {                                                                                           \
        const char *a_[] = {__VA_ARGS__, NULL};                                                    \
        kbctl_argv((r), NULL, FALSE, a_);                                                          \
    } while (0)

/* stdout of a kbctl command that must succeed (newly allocated). */
static char *kbctl_ok(const char *const *args)
{
    g_auto(Run) r;
    kbctl_argv(&r, NULL, FALSE, args);
    if (r.status != 0)
        g_test_message("kbctl %s: exit %d: %s", args[0], r.status, r.err);
    g_assert_cmpint(r.status, ==, 0);
    return g_steal_pointer(&r.out);
}

static json_object *parse(const char *text)
{
    json_object *j = json_tokener_parse(text);
    if (j == NULL)
        g_test_message("not JSON: %s", text);
    g_assert_nonnull(j);
    return j;
}

static const char *jstr(json_object *o, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    for (guint i = 0; parts[i] != NULL && o != NULL; i++)
        if (!json_object_object_get_ex(o, parts[i], &o))
            return NULL;
    return json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

static gint64 jint(json_object *o, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    for (guint i = 0; parts[i] != NULL && o != NULL; i++)
        if (!json_object_object_get_ex(o, parts[i], &o))
            return G_MININT64;
    return json_object_is_type(o, json_type_int) ? json_object_get_int64(o) : G_MININT64;
}

static gboolean alive(KbTestDaemon *d, const char *name)
{
    if (kb_test_daemon_running(d))
        return TRUE;
    g_test_message("%s exited (log in %s/%s.log)", name, cluster.logdir, name);
    g_test_fail();
    return FALSE;
}

/* `kbctl get NAME -o json` until @pred holds (90 s at most); returns the last object. */
static json_object *wait_job(const char *name, gboolean (*pred)(json_object *), const char *what)
{
    json_object *last = NULL;
    for (int i = 0; i < 450; i++) {
        g_auto(Run) r;
        KBCTL(&r, "get", name, "-o", "json");
        if (r.status == 0) {
            g_clear_pointer(&last, json_object_put);
            last = parse(r.out);
            if (pred(last))
                return last;
        }
        if (!alive(cluster.operator_, "tf-operator") || !alive(cluster.scheduler, "kube-batchd"))
            break;
        g_usleep(200 * 1000);
    }
    g_test_message("job %s: never %s; last: %s", name, what,
                   last != NULL ? json_object_to_json_string(last) : "(none)");
    g_test_fail();
    return last;
}

static gboolean is_running(json_object *j)
{
    return g_strcmp0(jstr(j, "status"), "Running") == 0;
}

/* Every replica's pod Running (its container has a log). */
static gboolean all_running(json_object *j)
{
    json_object *reps = NULL;
    if (!is_running(j) || !json_object_object_get_ex(j, "replicas", &reps) ||
        json_object_array_length(reps) == 0)
        return FALSE;
    for (size_t i = 0; i < json_object_array_length(reps); i++)
        if (g_strcmp0(jstr(json_object_array_get_idx(reps, i), "status"), "Running") != 0)
            return FALSE;
    return TRUE;
}

static gboolean is_waiting(json_object *j)
{
    return g_strcmp0(jstr(j, "status"), "Waiting") == 0 && jstr(j, "waiting.reason") != NULL;
}

/* Waiting for GPUs: the group's condition is written again once its pods exist ("waiting for
 * pods: 0/2 exist" first), so a test that compares the message later waits for this one. */
static gboolean is_waiting_for_gpus(json_object *j)
{
    return is_waiting(j) && g_strcmp0(jstr(j, "waiting.reason"), "NotEnoughResources") == 0;
}

static gboolean is_succeeded(json_object *j)
{
    return g_strcmp0(jstr(j, "status"), "Succeeded") == 0;
}

/* ---- usage and missing objects ------------------------------------------------------------ */

static void test_usage(void)
{
    static const struct {
        const char *args[12];
        const char *err;
    } cases[] = {
            {{NULL}, "no command given"},
            {{"frobnicate", NULL}, "unknown command \"frobnicate\""},
            {{"top", NULL}, "top what? use top node|job"},
            {{"submit", "tf", "--name", "x", NULL}, "--image is required"},
            {{"submit", "tf", "--name", "x", "--image", "i", "--workers", "many", NULL},
             "--workers: invalid value \"many\""},
            {{"submit", "tf", "--name", "Bad_Name", "--image", "i", NULL},
             "--name \"Bad_Name\": must be a DNS label"},
            {{"submit", "tf", "--name", "x", "--image", "i", "--env", "NOEQUALS", NULL},
             "--env \"NOEQUALS\": expected KEY=VALUE"},
            {{"list", "--bogus", NULL}, "unknown flag --bogus"},
            {{"list", "-o", "xml", NULL}, "-o xml: unknown output format"},
            {{"get", NULL}, "which job?"},
            {{"logs", "x", "--tail", "-5", NULL}, "--tail: invalid value \"-5\""},
            {{"completion", "zsh", NULL}, "only bash is supported"},
            {{"queue", "get", NULL}, "one QUEUE name expected"},
            {{"wait", "x", "--for", "Bogus", NULL}, "--for Bogus: not a job status"},
            {{"wait", "x", "--timeout", "soon", NULL}, "--timeout: invalid value \"soon\""},
            {{"wait", "x", "--timeout", "2d", NULL}, "--timeout: invalid value \"2d\""},
            {{"wait", NULL}, "which job?"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(Run) r;
        kbctl_argv(&r, NULL, FALSE, cases[i].args);
        if (r.status != 2 || strstr(r.err, cases[i].err) == NULL)
            g_test_message("case %u: exit %d, stderr: %s", i, r.status, r.err);
        g_assert_cmpint(r.status, ==, 2);
        g_assert_nonnull(strstr(r.err, cases[i].err));
        g_assert_cmpstr(r.out, ==, "");
    }
}

static void test_help(void)
{
    static const char *const paths[][2] = {
            {"submit", "tf"},  {"list", NULL},   {"get", NULL},        {"why", NULL},
            {"logs", NULL},    {"delete", NULL}, {"top", "node"},      {"top", "job"},
            {"queue", "list"}, {"queue", "get"}, {"completion", NULL}, {"wait", NULL}};
    for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
        g_auto(Run) r;
        const char *args[] = {paths[i][0], paths[i][1] != NULL ? paths[i][1] : "--help",
                              paths[i][1] != NULL ? "--help" : NULL, NULL};
        kbctl_argv(&r, NULL, TRUE, args);
        g_autofree char *usage =
                g_strdup_printf("Usage: kbctl %s%s%s", paths[i][0], paths[i][1] != NULL ? " " : "",
                                paths[i][1] != NULL ? paths[i][1] : "");
        g_assert_cmpint(r.status, ==, 0);
        g_assert_nonnull(strstr(r.out, usage));
        g_assert_nonnull(strstr(r.out, "--namespace"));
    }
    g_auto(Run) top;
    const char *args[] = {"--help", NULL};
    kbctl_argv(&top, NULL, TRUE, args);
    g_assert_cmpint(top.status, ==, 0);
    g_assert_nonnull(strstr(top.out, "queue list"));
    g_assert_nonnull(strstr(top.out, "Exit status: 0 ok, 1"));
}

/* --version anywhere before "--" prints the commit kbctl was built from (the Makefile's
 * KB_VERSION, `git describe`), exit 0, even with a command. */
static void test_version(void)
{
    static const char *const runs[][3] = {{"--version", NULL}, {"list", "--version", NULL}};
    for (guint i = 0; i < G_N_ELEMENTS(runs); i++) {
        g_auto(Run) r;
        kbctl_argv(&r, NULL, TRUE, runs[i]);
        g_assert_cmpint(r.status, ==, 0);
        g_assert_true(g_str_has_prefix(r.out, "kbctl "));
        g_assert_cmpstr(r.out + strlen(r.out) - 1, ==, "\n");
        g_assert_cmpuint(strlen(r.out), >, strlen("kbctl \n"));
        g_assert_null(strstr(r.out, "unknown"));
    }
}

/* A word that only prefixes commands answers --help with every command under it, exit 0, as
 * `kubectl create --help` does; without --help it is still a usage error (test_usage). */
static void test_group_help(void)
{
    static const struct {
        const char *args[5];
        const char *want[3];
    } cases[] = {
            {{"submit", "--help", NULL}, {"Usage: kbctl submit tf", "--workers", "--gpus"}},
            {{"top", "-h", NULL}, {"Usage: kbctl top node", "Usage: kbctl top job", "--namespace"}},
            {{"--namespace", "x", "queue", "--help"},
             {"Usage: kbctl queue list", "Usage: kbctl queue get", "--kubeconfig"}},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(Run) r;
        kbctl_argv(&r, NULL, TRUE, cases[i].args);
        g_assert_cmpint(r.status, ==, 0);
        g_assert_cmpstr(r.err, ==, "");
        for (guint w = 0; w < G_N_ELEMENTS(cases[i].want); w++)
            g_assert_nonnull(strstr(r.out, cases[i].want[w]));
    }
}

static void test_not_found(void)
{
    static const struct {
        const char *args[4];
        const char *err;
    } cases[] = {
            {{"get", "nope", NULL}, "tfjob default/nope: not found"},
            {{"why", "nope", NULL}, "tfjob default/nope: not found"},
            {{"logs", "nope", NULL}, "tfjob default/nope: not found"},
            {{"delete", "nope", NULL}, "tfjob default/nope: not found"},
            {{"queue", "get", "nope", NULL}, "queue nope: not found"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(Run) r;
        kbctl_argv(&r, NULL, FALSE, cases[i].args);
        g_assert_cmpint(r.status, ==, 1);
        g_assert_nonnull(strstr(r.err, cases[i].err));
    }
    /* An unreachable server is an error (1), not a usage mistake. */
    g_auto(Run) down;
    const char *args[] = {"--server", "http://127.0.0.1:1", "list", NULL};
    kbctl_argv(&down, NULL, TRUE, args);
    g_assert_cmpint(down.status, ==, 1);
    g_assert_nonnull(strstr(down.err, "listing tfjobs"));
}

/* ---- submit --dry-run through kubectl ------------------------------------------------------ */

static void test_dry_run_kubectl(void)
{
    const char *args[] = {"submit",
                          "tf",
                          "--name",
                          "dry",
                          "--image",
                          "tensorflow/tensorflow:1.15",
                          "--workers",
                          "3",
                          "--ps",
                          "1",
                          "--chief",
                          "--gpus",
                          "2",
                          "--queue",
                          "default",
                          "--env",
                          "LR=0.01",
                          "--env",
                          "MODE=true",
                          "--annotation",
                          "sim.kube-batchd.io/run-seconds=5",
                          "--min-workers",
                          "2",
                          "--max-workers",
                          "4",
                          "--dry-run",
                          "--",
                          "python",
                          "train.py",
                          "--steps",
                          "100",
                          NULL};
    g_autofree char *yaml = kbctl_ok(args);
    const char *jargs[] = {"submit",
                           "tf",
                           "--name",
                           "dry",
                           "--image",
                           "tensorflow/tensorflow:1.15",
                           "--workers",
                           "3",
                           "--ps",
                           "1",
                           "--chief",
                           "--gpus",
                           "2",
                           "--queue",
                           "default",
                           "--env",
                           "LR=0.01",
                           "--env",
                           "MODE=true",
                           "--annotation",
                           "sim.kube-batchd.io/run-seconds=5",
                           "--min-workers",
                           "2",
                           "--max-workers",
                           "4",
                           "--dry-run",
                           "-o",
                           "json",
                           "--",
                           "python",
                           "train.py",
                           "--steps",
                           "100",
                           NULL};
    g_autofree char *json = kbctl_ok(jargs);
    g_autoptr(GError) error = NULL;
    g_autofree char *out = NULL, *err = NULL;
    int status = -1;
    const char *kargs[] = {"create", "--dry-run=client", "-f", "-", "-o", "json", NULL};
    g_assert_true(kb_test_kubectl(cluster.api, kargs, yaml, &out, &err, &status, &error));
    g_assert_no_error(error);
    if (status != 0)
        g_test_message("kubectl: %s\nYAML was:\n%s", err, yaml);
    g_assert_cmpint(status, ==, 0);
    json_object *back = parse(out), *mine = parse(json);
    json_object *bspec, *mspec, *bmeta, *mmeta;
    g_assert_true(json_object_object_get_ex(back, "spec", &bspec));
    g_assert_true(json_object_object_get_ex(mine, "spec", &mspec));
    g_assert_true(json_object_object_get_ex(back, "metadata", &bmeta));
    g_assert_true(json_object_object_get_ex(mine, "metadata", &mmeta));
    if (!json_object_equal(bspec, mspec))
        g_test_message("kubectl read back %s\nkbctl meant %s", json_object_to_json_string(bspec),
                       json_object_to_json_string(mspec));
    g_assert_true(json_object_equal(bspec, mspec));
    g_assert_cmpstr(jstr(back, "metadata.annotations.kube-batchd.io/min-workers"), ==, NULL);
    json_object *ann = NULL, *v = NULL;
    g_assert_true(json_object_object_get_ex(bmeta, "annotations", &ann));
    g_assert_true(json_object_object_get_ex(ann, "kube-batchd.io/max-workers", &v));
    g_assert_cmpstr(json_object_get_string(v), ==, "4");
    /* Strings that look like other types stay strings ("true", "0.01", "100"). */
    g_assert_nonnull(strstr(out, "\"MODE\""));
    g_assert_nonnull(strstr(out, "\"true\""));
    g_assert_nonnull(strstr(out, "\"100\""));
    g_assert_cmpint(jint(back, "spec.runPolicy.schedulingPolicy.minAvailable"), ==, 4);
    g_assert_cmpstr(jstr(back, "spec.tfReplicaSpecs.Worker.template.spec.schedulerName"), ==,
                    "kube-batchd");
    json_object_put(back);
    json_object_put(mine);
}

/* ---- a job that waits, then runs ---------------------------------------------------------- */

static void test_wait_then_run(void)
{
    /* "fill" takes every GPU of the four nodes and runs until deleted. */
    const char *fill[] = {"submit", "tf",      "--name", "fill", "--workers", "4",       "--gpus",
                          "8",      "--image", "tf:1",   "--",   "python",    "fill.py", NULL};
    g_autofree char *created = kbctl_ok(fill);
    g_assert_nonnull(strstr(created, "tfjob.kubeflow.org/fill created in namespace default"));
    json_object *j = wait_job("fill", is_running, "Running");
    g_assert_cmpint(jint(j, "gpusAllocated"), ==, 32);
    json_object_put(j);

    /* Every GPU index of every GPU node serves a pod of fill; the index comes from gpu-ids. */
    const char *top_json[] = {"top", "node", "-o", "json", NULL};
    g_autofree char *tn = kbctl_ok(top_json);
    json_object *nodes = parse(tn), *items = NULL;
    g_assert_true(json_object_object_get_ex(nodes, "items", &items));
    guint gpu_nodes = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *n = json_object_array_get_idx(items, i), *devs = NULL;
        if (jint(n, "gpusAllocatable") == 0)
            continue;
        gpu_nodes++;
        g_assert_cmpint(jint(n, "gpusAllocated"), ==, 8);
        g_assert_true(json_object_object_get_ex(n, "devices", &devs));
        g_assert_cmpuint(json_object_array_length(devs), ==, 8);
        for (size_t d = 0; d < 8; d++)
            g_assert_true(g_str_has_prefix(jstr(json_object_array_get_idx(devs, d), "pod"),
                                           "default/fill-worker-"));
    }
    g_assert_cmpuint(gpu_nodes, ==, 4);
    json_object_put(nodes);
    const char *top[] = {"top", "node", NULL};
    g_autofree char *tt = kbctl_ok(top);
    g_assert_nonnull(strstr(tt, "GPU 0-7    default/fill-worker-0 (job fill)"));
    g_assert_nonnull(strstr(tt, "32/32 GPUs allocated"));
    g_assert_null(strstr(tt, "\033[")); /* not a terminal: no colour */

    /* "wait" needs 2 x 4 GPUs: none is free. */
    const char *wait[] = {"submit",    "tf",     "--name",       "wait",
                          "--workers", "2",      "--gpus",       "4",
                          "--image",   "tf:1",   "--annotation", "sim.kube-batchd.io/run-seconds=4",
                          "--",        "python", "train.py",     NULL};
    g_free(kbctl_ok(wait));
    j = wait_job("wait", is_waiting_for_gpus, "Waiting for GPUs");
    g_assert_cmpint(jint(j, "waiting.short.gpusNeeded"), ==, 8);
    g_assert_cmpint(jint(j, "waiting.short.gpusFree"), ==, 0);
    g_assert_cmpint(jint(j, "waiting.short.podsThatFitNow"), ==, 0);
    g_assert_cmpint(jint(j, "gpusRequested"), ==, 8);
    g_autofree char *reason = g_strdup(jstr(j, "waiting.reason"));
    g_autofree char *message = g_strdup(jstr(j, "waiting.message"));
    json_object_put(j);
    g_assert_nonnull(message);

    const char *get[] = {"get", "wait", NULL};
    g_autofree char *shown = kbctl_ok(get);
    g_autofree char *line = g_strdup_printf("Waiting:      %s: %s", reason, message);
    if (strstr(shown, line) == NULL)
        g_test_message("kbctl get wait:\n%s", shown);
    g_assert_nonnull(strstr(shown, line));
    g_assert_nonnull(strstr(shown, "8 GPUs for 2 unplaced pods; 0 free in the cluster"));
    g_assert_nonnull(strstr(shown, "Free GPUs:    none (4 GPU nodes full)\n"));
    g_assert_nonnull(strstr(shown, "Events:"));
    g_assert_nonnull(strstr(shown, "podgroup/wait"));
    const char *why[] = {"why", "wait", NULL};
    g_autofree char *said = kbctl_ok(why);
    g_assert_nonnull(strstr(said, "It needs 8 GPUs at once for its 2 unplaced pods"));
    g_assert_nonnull(strstr(said, "32 GPUs held by default/fill (32)"));
    g_assert_nonnull(strstr(said, message));

    const char *list[] = {"list", NULL};
    g_autofree char *listed = kbctl_ok(list);
    g_assert_true(g_str_has_prefix(listed, "NAME   STATUS    TRAINER"));
    g_assert_nonnull(strstr(listed, "\nfill   Running   tfjob"));
    g_assert_nonnull(strstr(listed, "\nwait   Waiting   tfjob"));

    /* kbctl wait gives up at its timeout and says what the job is and why. */
    g_auto(Run) waited;
    KBCTL(&waited, "wait", "wait", "--for", "Running", "--timeout", "1s");
    g_assert_cmpint(waited.status, ==, 1);
    g_autofree char *gave_up = g_strdup_printf(
            "kbctl wait: tfjob default/wait: still Waiting after 1s, not Running; %s: %s", reason,
            message);
    g_assert_nonnull(strstr(waited.err, gave_up));

    /* Deleting fill frees its GPUs; wait runs and succeeds. */
    const char *del[] = {"delete", "fill", NULL};
    g_autofree char *deleted = kbctl_ok(del);
    g_assert_nonnull(strstr(deleted, "tfjob.kubeflow.org/fill deleted"));
    j = wait_job("wait", all_running, "Running");
    json_object_put(j);
    /* -f streams until the container ends (run-seconds 4), then kbctl exits 0. */
    /* Worker 0 decides the job's success; worker 1, finishing a moment later, is left to end on
     * its own (v1 cleanPodPolicy None). */
    const char *follow[] = {"logs", "wait", "--replica", "worker-0", "-f", NULL};
    g_autofree char *log = kbctl_ok(follow);
    g_assert_nonnull(strstr(log, "INFO:tensorflow:TF_CONFIG: task worker 0; cluster worker=2"));
    g_assert_nonnull(strstr(log, "INFO:tensorflow:loss = "));
    g_assert_nonnull(strstr(log, "kb-sim: container tensorflow exited with code 0\n"));
    const char *until_done[] = {"wait", "wait", "--for", "Succeeded", "--timeout", "60", NULL};
    g_autofree char *done = kbctl_ok(until_done);
    g_assert_cmpstr(done, ==, "tfjob.kubeflow.org/wait Succeeded\n");
    j = wait_job("wait", is_succeeded, "Succeeded");
    json_object_put(j);
    /* A finished job is not waited for: Running is met by Succeeded, Failed never comes. */
    const char *ran[] = {"wait", "wait", NULL};
    g_autofree char *ran_out = kbctl_ok(ran);
    g_assert_cmpstr(ran_out, ==, "tfjob.kubeflow.org/wait Succeeded\n");
    g_auto(Run) never;
    KBCTL(&never, "wait", "wait", "--for", "Failed");
    g_assert_cmpint(never.status, ==, 1);
    g_assert_nonnull(
            strstr(never.err, "tfjob default/wait is Succeeded: it will not become Failed"));
    const char *tail[] = {"logs", "wait", "--tail", "1", NULL};
    g_autofree char *last = kbctl_ok(tail);
    g_assert_cmpstr(last, ==, "kb-sim: container tensorflow exited with code 0\n");
    g_auto(Run) bad;
    KBCTL(&bad, "logs", "wait", "--replica", "worker-7");
    g_assert_cmpint(bad.status, ==, 1);
    g_test_message("%s", bad.err);
    g_assert_nonnull(strstr(bad.err, "--replica worker-7: no such replica (it has worker-0"));
}

/* ---- queues --------------------------------------------------------------------------------- */

static gboolean queue_allocated(gint64 want, const char *name)
{
    for (int i = 0; i < 300; i++) {
        const char *args[] = {"queue", "list", "-o", "json", NULL};
        g_autofree char *out = kbctl_ok(args);
        json_object *j = parse(out), *items = NULL;
        gboolean ok = FALSE;
        if (json_object_object_get_ex(j, "items", &items))
            for (size_t k = 0; k < json_object_array_length(items); k++) {
                json_object *q = json_object_array_get_idx(items, k);
                if (g_strcmp0(jstr(q, "name"), name) == 0 && jint(q, "allocatedGpus") == want)
                    ok = TRUE;
            }
        json_object_put(j);
        if (ok)
            return TRUE;
        g_usleep(200 * 1000);
    }
    return FALSE;
}

/* The whitespace-separated cells of the line of @table starting with @prefix (NULL if none). */
static GStrv row(const char *table, const char *prefix)
{
    g_auto(GStrv) lines = g_strsplit(table, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++)
        if (g_str_has_prefix(lines[i], prefix)) {
            g_autoptr(GPtrArray) cells = g_ptr_array_new();
            g_auto(GStrv) parts = g_strsplit_set(lines[i], " ", -1);
            for (guint p = 0; parts[p] != NULL; p++)
                if (*parts[p] != '\0')
                    g_ptr_array_add(cells, g_strdup(parts[p]));
            g_ptr_array_add(cells, NULL);
            return (GStrv)g_ptr_array_free(g_steal_pointer(&cells), FALSE);
        }
    return NULL;
}

static void test_queues(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *out = NULL, *err = NULL;
    int status = -1;
    static const char queues[] =
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: research}\n"
            "spec: {weight: 3, capability: {nvidia.com/gpu: 16}}\n---\n"
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: nlp}\n"
            "spec: {weight: 1, parent: research}\n";
    const char *kargs[] = {"create", "-f", "-", NULL};
    g_assert_true(kb_test_kubectl(cluster.api, kargs, queues, &out, &err, &status, &error));
    g_assert_cmpint(status, ==, 0);
    const char *q[] = {"submit", "tf",      "--name", "qjob",    "--workers", "2", "--gpus",
                       "4",      "--queue", "nlp",    "--image", "tf:1",      NULL};
    g_free(kbctl_ok(q));
    json_object *j = wait_job("qjob", is_running, "Running");
    json_object_put(j);
    /* kube-batchd writes status.allocated on the queue (jobs run in leaf queues: nlp). */
    g_assert_true(queue_allocated(8, "nlp"));
    const char *list[] = {"queue", "list", NULL};
    g_autofree char *table = kbctl_ok(list);
    g_test_message("%s", table);
    g_assert_true(g_str_has_prefix(table, "NAME "));
    g_assert_nonnull(strstr(table, "WEIGHT   STATE   GPU(CAPABILITY)   GPU(DESERVED)   "
                                   "GPU-H(USAGE)   GPU(ALLOCATED)   PENDING JOBS   RUNNING JOBS"));
    g_auto(GStrv) research = row(table, "research ");
    g_assert_nonnull(research);
    g_assert_cmpstr(research[1], ==, "3");
    g_assert_cmpstr(research[2], ==, "Open");
    g_assert_cmpstr(research[3], ==, "16");
    /* The child is indented under its parent. */
    g_auto(GStrv) nlp = row(table, "  nlp ");
    g_assert_nonnull(nlp);
    g_assert_cmpstr(nlp[1], ==, "1");
    g_assert_cmpstr(nlp[5], ==, "-"); /* no usageHalfLife: no decayed usage */
    g_assert_cmpstr(nlp[6], ==, "8");
    /* Deserved comes from the per-resource status kube-batchd writes; no top-level copy. */
    const char *get_nlp[] = {"get", "queues.scheduling.volcano.sh", "nlp", "-o", "json", NULL};
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    g_assert_true(kb_test_kubectl(cluster.api, get_nlp, NULL, &out, &err, &status, &error));
    g_assert_cmpint(status, ==, 0);
    json_object *nlp_obj = parse(out), *st = NULL, *res = NULL, *gpu = NULL, *des = NULL;
    g_assert_true(json_object_object_get_ex(nlp_obj, "status", &st));
    g_assert_false(json_object_object_get_ex(st, "deserved", NULL));
    g_assert_true(json_object_object_get_ex(st, "resources", &res));
    g_assert_true(json_object_object_get_ex(res, "nvidia.com/gpu", &gpu));
    g_assert_true(json_object_object_get_ex(gpu, "deserved", &des));
    g_assert_cmpstr(nlp[4], ==, json_object_get_string(des));
    g_assert_cmpstr(nlp[4], !=, "0");
    json_object_put(nlp_obj);
    g_assert_nonnull(strstr(table, "\nresearch ") < strstr(table, "\n  nlp ") ? table : NULL);
    const char *get_parent[] = {"queue", "get", "research", NULL};
    g_autofree char *parent = kbctl_ok(get_parent);
    g_assert_nonnull(strstr(parent, "Capability:   gpu 16"));
    const char *get[] = {"queue", "get", "nlp", NULL};
    g_autofree char *one = kbctl_ok(get);
    g_auto(GStrv) job = row(one, "  default ");
    g_assert_nonnull(job);
    g_assert_cmpstr(job[1], ==, "qjob");
    g_assert_cmpstr(job[2], ==, "Running");
    g_assert_cmpstr(job[4], ==, "8");
    const char *del[] = {"delete", "qjob", "--wait", NULL};
    g_free(kbctl_ok(del));
    /* The status is a merge patch: the GPUs given back must be written as 0, not left out. */
    g_assert_true(queue_allocated(0, "nlp"));
    /* Decayed usage (status.usage, as kube-batchd writes it with usageHalfLife) beside the
     * deserved share: GPU-hours in the list, GPU- and cpu-hours and the time in get and JSON. */
    static const char usage[] =
            "{\"status\":{\"usage\":{\"time\":\"2026-11-27T07:00:00Z\",\"resourceSeconds\":"
            "{\"nvidia.com/gpu\":45000,\"cpu\":7200,\"memory\":0}}}}";
    const char *patch[] = {"patch",        "queues.scheduling.volcano.sh",
                           "research",     "--subresource=status",
                           "--type=merge", "-p",
                           usage,          NULL};
    g_assert_true(kb_test_kubectl(cluster.api, patch, NULL, NULL, NULL, &status, &error));
    g_assert_cmpint(status, ==, 0);
    g_autofree char *table2 = kbctl_ok(list);
    g_auto(GStrv) research2 = row(table2, "research ");
    g_assert_nonnull(research2);
    g_assert_cmpstr(research2[5], ==, "12.5");
    g_autofree char *parent2 = kbctl_ok(get_parent);
    if (strstr(parent2, "Usage:        12.5 GPU-hours, 2.0 cpu-hours (decayed, as of "
                        "2026-11-27T07:00:00Z)") == NULL)
        g_error("%s", parent2);
    const char *get_json[] = {"queue", "get", "research", "-o", "json", NULL};
    g_autofree char *js = kbctl_ok(get_json);
    json_object *o = parse(js);
    g_assert_cmpfloat(json_object_get_double(json_object_object_get(o, "usageGpuHours")), ==, 12.5);
    json_object_put(o);
    /* Where the Queue CRD prunes status.usage (Volcano's own), kube-batchd keeps it in the
     * annotation kube-batchd.io/usage: shown the same. */
    const char *annotate[] = {"annotate", "queues.scheduling.volcano.sh", "nlp",
                              KB_QUEUE_USAGE_ANNOTATION
                              "={\"time\":\"2026-11-27T08:00:00Z\",\"resourceSeconds\":"
                              "{\"nvidia.com/gpu\":9000,\"cpu\":0}}",
                              NULL};
    g_assert_true(kb_test_kubectl(cluster.api, annotate, NULL, NULL, NULL, &status, &error));
    g_assert_cmpint(status, ==, 0);
    g_autofree char *nlp2 = kbctl_ok(get);
    if (strstr(nlp2, "Usage:        2.5 GPU-hours, 0.0 cpu-hours (decayed, as of "
                     "2026-11-27T08:00:00Z)") == NULL)
        g_error("%s", nlp2);
    /* A queue whose parent does not exist: kube-batchd's Valid False condition, reason and
     * message, in `queue get` (then the queue goes, not to disturb the other tests). */
    static const char orphan[] = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                                 "metadata: {name: orphan}\nspec: {weight: 1, parent: nosuch}\n";
    g_assert_true(kb_test_kubectl(cluster.api, kargs, orphan, NULL, NULL, &status, &error));
    g_assert_cmpint(status, ==, 0);
    const char *get_orphan[] = {"queue", "get", "orphan", NULL};
    g_autofree char *fault = NULL;
    gint64 until = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    do {
        g_free(fault);
        fault = kbctl_ok(get_orphan);
    } while (strstr(fault, "Valid:") == NULL && g_get_monotonic_time() < until &&
             (g_usleep(200000), TRUE));
    if (strstr(fault, "Valid:        False (ParentNotFound)\n") == NULL ||
        strstr(fault, "nosuch") == NULL)
        g_error("%s", fault);
    g_autofree char *fine = kbctl_ok(get);
    g_assert_null(strstr(fine, "Valid:"));
    const char *del_orphan[] = {"delete", "queues.scheduling.volcano.sh", "orphan", NULL};
    g_assert_true(kb_test_kubectl(cluster.api, del_orphan, NULL, NULL, NULL, &status, &error));
    g_assert_cmpint(status, ==, 0);
}

/* ---- kb-apiserver's pod log, read by kubectl --------------------------------------------------
 */

static void test_kubectl_logs(void)
{
    g_autoptr(GError) error = NULL;
    int status = -1;
    g_autofree char *out = NULL, *err = NULL;
    static const char unbound[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: unbound}\n"
                                  "spec: {schedulerName: nobody, containers: [{name: a, image: x}, "
                                  "{name: b, image: img-b}]}\n";
    const char *create[] = {"create", "-f", "-", NULL};
    g_assert_true(kb_test_kubectl(cluster.api, create, unbound, &out, &err, &status, &error));
    g_assert_cmpint(status, ==, 0);
    /* Bound to a node no kubelet runs: its container never starts. */
    static const char ghost[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: ghost}\n"
                                "spec: {nodeName: ghost-node, containers: [{name: c, image: x}]}\n";
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    g_assert_true(kb_test_kubectl(cluster.api, create, ghost, &out, &err, &status, &error));
    g_assert_cmpint(status, ==, 0);
    static const struct {
        const char *args[6];
        const char *err;
    } cases[] = {
            {{"logs", "unbound", "-c", "a", NULL}, "pod unbound does not have a host assigned"},
            {{"logs", "unbound", "-c", "zz", NULL}, "container zz is not valid for pod unbound"},
            {{"logs", "wait-worker-0", "--tail", "-2", NULL}, NULL},
            {{"logs", "nothere", NULL}, "pods \"nothere\" not found"},
            {{"logs", "ghost", NULL},
             "container \"c\" in pod \"ghost\" is waiting to start: ContainerCreating"},
            {{"get", "--raw", "/api/v1/namespaces/default/pods/unbound/log", NULL},
             "a container name must be specified for pod unbound, choose one of: [a b]"},
            {{"get", "--raw", "/api/v1/namespaces/default/pods/wait-worker-0/log?tailLines=-1",
              NULL},
             "tailLines: Invalid value: -1: must be greater than or equal to 0"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_clear_pointer(&out, g_free);
        g_clear_pointer(&err, g_free);
        g_assert_true(
                kb_test_kubectl(cluster.api, cases[i].args, NULL, &out, &err, &status, &error));
        if (cases[i].err == NULL)
            continue; /* kubectl treats a negative --tail as "all" */
        g_assert_cmpint(status, !=, 0);
        if (strstr(err, cases[i].err) == NULL)
            g_test_message("kubectl %s: %s", cases[i].args[1], err);
        g_assert_nonnull(strstr(err, cases[i].err));
    }
    /* A container started 5 h ago: 18,000 steps, of which the last KAS_LOG_MAX_LINES are kept. */
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autoptr(GDateTime) then = g_date_time_add_hours(now, -5);
    g_autofree char *started = g_date_time_format_iso8601(then);
    g_autofree char *patch = g_strdup_printf(
            "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"c\","
            "\"image\":\"x\",\"imageID\":\"\",\"ready\":true,\"restartCount\":0,"
            "\"state\":{\"running\":{\"startedAt\":\"%.19sZ\"}}}]}}",
            started);
    const char *patch_args[] = {"patch",  "pod",   "ghost", "--subresource", "status",
                                "--type", "merge", "-p",    patch,           NULL};
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    g_assert_true(kb_test_kubectl(cluster.api, patch_args, NULL, &out, &err, &status, &error));
    if (status != 0)
        g_test_message("kubectl patch: %s", err);
    g_assert_cmpint(status, ==, 0);
    const char *all[] = {"logs", "ghost", NULL};
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    g_assert_true(kb_test_kubectl(cluster.api, all, NULL, &out, &err, &status, &error));
    g_assert_cmpint(status, ==, 0);
    guint n_lines = 0;
    for (const char *p = out; *p != '\0'; p++)
        n_lines += *p == '\n';
    g_assert_cmpuint(n_lines, ==, 10000);
    g_assert_true(g_str_has_prefix(out, "INFO:tensorflow:loss = "));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *limited[] = {"logs", "ghost", "--limit-bytes", "10", NULL};
    g_assert_true(kb_test_kubectl(cluster.api, limited, NULL, &out, &err, &status, &error));
    g_assert_cmpint(status, ==, 0);
    g_assert_cmpuint(strlen(out), ==, 10);

    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *tail[] = {"logs", "wait-worker-0", "--tail", "2", "--timestamps", NULL};
    g_assert_true(kb_test_kubectl(cluster.api, tail, NULL, &out, &err, &status, &error));
    g_assert_cmpint(status, ==, 0);
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);
    g_assert_nonnull(strstr(lines[0], "Z INFO:tensorflow:Loss for final step: "));
    g_assert_true(g_str_has_prefix(lines[1], "20"));
    g_assert_nonnull(
            strstr(lines[1], ".000000000Z kb-sim: container tensorflow exited with code 0"));
}

/* ---- configuration, colours, completion ------------------------------------------------------ */

static void test_kubeconfig(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("kbctl-kc-XXXXXX", &error);
    g_assert_no_error(error);
    g_autofree char *path = g_build_filename(dir, "config", NULL);
    g_autofree char *text = g_strdup_printf(
            "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
            "clusters:\n- name: c\n  cluster: {server: \"%s\"}\n"
            "contexts:\n- name: lab\n  context: {cluster: c, user: u, namespace: team-x}\n"
            "- name: main\n  context: {cluster: c, user: u}\n"
            "users:\n- name: u\n  user: {token: abc}\n",
            kb_test_apiserver_url(cluster.api));
    g_assert_true(g_file_set_contents(path, text, -1, &error));
    /* $KUBECONFIG, its context's namespace. */
    const char *env[] = {"KUBECONFIG", path, NULL};
    const char *list[] = {"list", NULL};
    g_auto(Run) r;
    kbctl_argv(&r, env, TRUE, list);
    g_assert_cmpint(r.status, ==, 0);
    g_assert_nonnull(strstr(r.err, "No jobs found in namespace team-x."));
    /* --kubeconfig and --context; -n wins over both. */
    g_auto(Run) r2;
    const char *args2[] = {"--kubeconfig", path, "--context", "main", "list", "-o", "name", NULL};
    kbctl_argv(&r2, NULL, TRUE, args2);
    g_assert_cmpint(r2.status, ==, 0);
    g_assert_nonnull(strstr(r2.out, "wait\n"));
    g_auto(Run) r3;
    const char *args3[] = {"--kubeconfig", path, "--context", "nope", "list", NULL};
    kbctl_argv(&r3, NULL, TRUE, args3);
    g_assert_cmpint(r3.status, ==, 1);
    g_assert_nonnull(strstr(r3.err, "context \"nope\" not found"));
    g_auto(Run) r4;
    const char *args4[] = {"-n", "default", "list", "-o", "name", NULL};
    kbctl_argv(&r4, env, TRUE, args4);
    g_assert_cmpint(r4.status, ==, 0);
    g_assert_nonnull(strstr(r4.out, "wait\n"));
    g_remove(path);
    g_rmdir(dir);
}

static void test_colour(void)
{
    g_autofree char *script = g_find_program_in_path("script");
    if (script == NULL) {
        g_test_skip("script(1) is not installed: no terminal to test colours on");
        return;
    }
    g_autofree char *bin = kbctl_path();
    g_autofree char *cmd =
            g_strdup_printf("%s --server %s list", bin, kb_test_apiserver_url(cluster.api));
    const char *with_tty[] = {"script", "-qec", cmd, "/dev/null", NULL};
    g_autofree char *out = NULL;
    int wait_status = 0;
    g_autoptr(GError) error = NULL;
    g_auto(GStrv) envp = g_environ_unsetenv(g_get_environ(), "NO_COLOR");
    envp = g_environ_setenv(envp, "TERM", "xterm", TRUE);
    g_assert_true(g_spawn_sync(NULL, (char **)with_tty, envp, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
                               NULL, &wait_status, &error));
    g_assert_no_error(error);
    g_assert_nonnull(strstr(out, "\033["));
    g_assert_nonnull(strstr(out, "\033[1mNAME\033[0m"));
    g_clear_pointer(&out, g_free);
    envp = g_environ_setenv(envp, "NO_COLOR", "1", TRUE);
    g_assert_true(g_spawn_sync(NULL, (char **)with_tty, envp, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
                               NULL, &wait_status, &error));
    g_assert_nonnull(strstr(out, "NAME"));
    g_assert_null(strstr(out, "\033["));
}

static void test_completion(void)
{
    const char *args[] = {"completion", "bash", NULL};
    g_auto(Run) r;
    kbctl_argv(&r, NULL, TRUE, args);
    g_assert_cmpint(r.status, ==, 0);
    g_assert_nonnull(strstr(r.out, "complete -F _kbctl kbctl"));
    g_assert_nonnull(strstr(r.out, "\"submit tf\")"));
    g_assert_nonnull(strstr(r.out, "--min-workers"));
    /* bash accepts it, and completing "kbctl top " offers node and job. */
    g_autofree char *script = g_strdup_printf(
            "%s\nCOMP_WORDS=(kbctl top ''); COMP_CWORD=2; _kbctl; echo \"${COMPREPLY[*]}\"\n"
            "COMP_WORDS=(kbctl --server %s get ''); COMP_CWORD=4; PATH=%s:$PATH _kbctl; "
            "echo \"${COMPREPLY[*]}\"\n",
            r.out, kb_test_apiserver_url(cluster.api),
            g_getenv("KB_BIN_DIR") != NULL ? g_getenv("KB_BIN_DIR") : "build/default/bin");
    const char *bash[] = {"bash", "-c", script, NULL};
    g_autofree char *out = NULL, *err = NULL;
    int wait_status = 0;
    g_autoptr(GError) error = NULL;
    g_assert_true(g_spawn_sync(NULL, (char **)bash, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
                               &err, &wait_status, &error));
    g_assert_cmpstr(err, ==, "");
    g_assert_true(g_str_has_prefix(out, "node job\n"));
    g_assert_nonnull(strstr(out, "wait"));
}

/* ---- a job that can never fit says so ---------------------------------------------------------
 */

static void test_never_fits(void)
{
    const char *huge[] = {"submit", "tf", "--name",  "huge", "--workers", "5",
                          "--gpus", "8",  "--image", "tf:1", NULL};
    const char *fat[] = {"submit", "tf", "--name",  "fat",  "--workers", "1",
                         "--gpus", "16", "--image", "tf:1", NULL};
    g_free(kbctl_ok(huge));
    g_free(kbctl_ok(fat));
    json_object *j = wait_job("huge", is_waiting, "Waiting with a reason");
    g_assert_cmpint(jint(j, "waiting.short.clusterGpus"), ==, 32);
    json_object_put(j);
    j = wait_job("fat", is_waiting, "Waiting with a reason");
    json_object_put(j);
    const char *why_huge[] = {"why", "huge", NULL};
    g_autofree char *h = kbctl_ok(why_huge);
    g_assert_nonnull(strstr(h, "It can never start as it is: it needs 40 GPUs at once and the "
                               "cluster has 32 in all"));
    const char *why_fat[] = {"why", "fat", NULL};
    g_autofree char *f = kbctl_ok(why_fat);
    g_assert_nonnull(strstr(f, "It can never start as it is: a pod asks 16 GPUs and no Ready node "
                               "has more than 8"));
    /* The server's refusals reach the user with the object named, exit 1. */
    g_auto(Run) log;
    KBCTL(&log, "logs", "huge");
    g_assert_cmpint(log.status, ==, 1);
    g_assert_nonnull(strstr(log.err, "kbctl logs: tfjob default/huge: replica worker-0 (pod "
                                     "huge-worker-0): pod huge-worker-0 does not have a host "
                                     "assigned\n"));
    g_auto(Run) ns;
    KBCTL(&ns, "-n", "nowhere", "submit", "tf", "--name", "x", "--image", "i");
    g_assert_cmpint(ns.status, ==, 1);
    g_test_message("%s", ns.err);
    g_assert_true(g_str_has_prefix(ns.err, "kbctl submit tf: tfjob nowhere/x: "));
    g_assert_nonnull(strstr(ns.err, "\"nowhere\""));
    const char *d1[] = {"delete", "huge", NULL}, *d2[] = {"delete", "fat", NULL};
    g_free(kbctl_ok(d1));
    g_free(kbctl_ok(d2));
}

/* Submit a running job @name of 2 one-GPU workers and set its PodGroup's status to @patch (a
 * merge patch), as kube-batchd writes it. */
static void running_job_with_group_status(const char *name, const char *patch)
{
    const char *sub[] = {"submit", "tf", "--name",  name,   "--workers", "2",
                         "--gpus", "1",  "--image", "tf:1", NULL};
    g_free(kbctl_ok(sub));
    json_object *j = wait_job(name, all_running, "Running");
    json_object_put(j);
    const char *args[] = {"patch",        "podgroups.scheduling.volcano.sh",
                          name,           "--subresource=status",
                          "--type=merge", "-p",
                          patch,          NULL};
    g_autoptr(GError) error = NULL;
    int status = -1;
    g_assert_true(kb_test_kubectl(cluster.api, args, NULL, NULL, NULL, &status, &error));
    g_assert_cmpint(status, ==, 0);
}

/* A gang kube-batchd found short of a member (condition GangIncomplete on its PodGroup, set here
 * as kube-batchd writes it): `kbctl why` and `kbctl get` say so with the condition's message. */
static void test_why_gang_incomplete(void)
{
    running_job_with_group_status(
            "inc", "{\"status\":{\"conditions\":[{\"type\":\"GangIncomplete\",\"status\":"
                   "\"True\",\"reason\":\"MemberLost\",\"message\":\"1/2 members healthy: pod "
                   "default/inc-worker-1 on a lost node (node n9 deleted)\"}]}}");
    const char *why[] = {"why", "inc", NULL};
    g_autofree char *said = kbctl_ok(why);
    g_assert_nonnull(strstr(said, "Its gang is incomplete (MemberLost): 1/2 members healthy: pod "
                                  "default/inc-worker-1 on a lost node (node n9 deleted)."));
    const char *get[] = {"get", "inc", NULL};
    g_autofree char *shown = kbctl_ok(get);
    g_assert_nonnull(strstr(shown, "Its gang is incomplete (MemberLost)"));
    const char *del[] = {"delete", "inc", NULL};
    g_free(kbctl_ok(del));
}

/* A job on GPUs borrowed past its queue's long-job limit (the note kube-batchd adds to the
 * PodGroup's Scheduled condition, set here as it writes it): `kbctl why` says reclaim may take
 * them back. */
static void test_why_borrowed(void)
{
    running_job_with_group_status(
            "bor",
            "{\"status\":{\"conditions\":[{\"type\":\"Scheduled\",\"status\":\"True\","
            "\"reason\":\"Scheduled\",\"message\":\"2/2 tasks placed; " KB_BORROWED_NOTE
            " \\\"default\\\"'s long-job limit: reclaim may take them back for a queue below "
            "its deserved share\"}]}}");
    const char *why[] = {"why", "bor", NULL};
    g_autofree char *said = kbctl_ok(why);
    g_assert_nonnull(strstr(said, "nothing waits. It runs on GPUs borrowed past queue "
                                  "\"default\"'s long-job limit: reclaim may take them back for a "
                                  "queue below its deserved share."));
    const char *del[] = {"delete", "bor", NULL};
    g_free(kbctl_ok(del));
}

/* ---- units: YAML and durations (no cluster) ------------------------------------------------- */

static void test_yaml(void)
{
    static const char *const quoted[] = {
            "true", "Yes", "y",    "N",  "off",   "null",        "~",   "",    "0.5",
            "100",  "-x",  "a: b", "#c", " lead", "trail ",      "1e3", "[x]", "{y}",
            "*a",   "&b",  "!t",   "%p", "@q",    "line\nbreak", ".5",  "+1",  "x,y"};
    static const char *const plain[] = {"tensorflow", "kube-batchd.io/gpu-ids", "img-1", "python",
                                        "a-b_c.d"};
    for (guint i = 0; i < G_N_ELEMENTS(quoted); i++) {
        g_autoptr(KbctlJson) v = json_object_new_string(quoted[i]);
        g_autofree char *y = kbctl_yaml(v);
        g_assert_cmpint(y[0], ==, '"');
        /* Read back by the project's YAML reader, it is the same string. */
        g_autoptr(GError) error = NULL;
        g_autoptr(KbctlJson) back = kas_yaml_to_json(y, strlen(y), &error);
        g_assert_no_error(error);
        g_assert_true(json_object_is_type(back, json_type_string));
        g_assert_cmpstr(json_object_get_string(back), ==, quoted[i]);
    }
    for (guint i = 0; i < G_N_ELEMENTS(plain); i++) {
        g_autoptr(KbctlJson) v = json_object_new_string(plain[i]);
        g_autofree char *y = kbctl_yaml(v);
        g_autofree char *want = g_strdup_printf("%s\n", plain[i]);
        g_assert_cmpstr(y, ==, want);
    }
    g_autoptr(KbctlJson) doc = json_tokener_parse(
            "{\"a\":{\"b\":[{\"c\":1,\"d\":[\"x\"]},[]],\"e\":{}},\"f\":null,\"g\":false}");
    g_autofree char *y = kbctl_yaml(doc);
    g_assert_cmpstr(y, ==,
                    "a:\n  b:\n  - c: 1\n    d:\n    - x\n  - []\n  e: {}\nf: null\ng: false\n");
}

/* The deserved share kbctl shows: from status.resources (a GPU share of 0 is 0, other zeros are
 * left out), else an older kube-batchd's status.deserved, else unknown. */
static void test_queue_deserved(void)
{
    static const struct {
        const char *queue;
        gint64 gpus;
        const char *list;
    } rows[] = {
            {"{\"status\":{\"resources\":{\"nvidia.com/gpu\":{\"deserved\":\"0\"},"
             "\"cpu\":{\"deserved\":\"0\"},\"memory\":{\"deserved\":\"4Gi\"}}}}",
             0, "gpu 0, memory 4Gi"},
            {"{\"status\":{\"resources\":{\"nvidia.com/gpu\":{\"deserved\":\"24\"}},"
             "\"deserved\":{\"nvidia.com/gpu\":\"8\"}}}",
             24, "gpu 24"},
            {"{\"status\":{\"deserved\":{\"nvidia.com/gpu\":\"8\"}}}", 8, "gpu 8"},
            {"{\"status\":{\"resources\":{\"cpu\":{\"deserved\":\"2\"}}}}", -1, "cpu 2"},
            {"{\"spec\":{\"weight\":2}}", -1, "-"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
        json_object *q = json_tokener_parse(rows[i].queue);
        g_assert_nonnull(q);
        json_object *list = kbctl_queue_deserved(q);
        g_autofree char *text = kbctl_resource_list_string(list);
        g_assert_cmpstr(text, ==, rows[i].list);
        g_assert_cmpint(kbctl_queue_deserved_gpus(q), ==, rows[i].gpus);
        json_object_put(list);
        json_object_put(q);
    }
}

static void test_duration(void)
{
    static const struct {
        gint64 s;
        const char *want;
    } cases[] = {{-5, "<invalid>"},   {0, "0s"},
                 {119, "119s"},       {120, "2m"},
                 {125, "2m5s"},       {600, "10m"},
                 {10799, "179m"},     {10800, "3h"},
                 {11000, "3h3m"},     {8 * 3600, "8h"},
                 {47 * 3600, "47h"},  {49 * 3600, "2d1h"},
                 {8 * 86400, "8d"},   {800 * 86400, "2y70d"},
                 {3000 * 86400, "8y"}};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *d = kbctl_duration(cases[i].s);
        g_assert_cmpstr(d, ==, cases[i].want);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    g_test_set_nonfatal_assertions();
    g_test_add_func("/kbctl/unit/yaml-quoting", test_yaml);
    g_test_add_func("/kbctl/unit/duration", test_duration);
    g_test_add_func("/kbctl/unit/queue-deserved", test_queue_deserved);
    if (!kb_test_kubectl_available()) {
        g_test_add_func("/kbctl/skipped", kb_test_skip_no_kubectl);
        return g_test_run();
    }
    g_autoptr(GError) error = NULL;
    g_autofree char *nodes =
            g_build_filename(kb_test_src_dir(), "tests/data/apiserver/nodes.yaml", NULL);
    const char *args[] = {"--simulate-kubelet", "--nodes", nodes, NULL};
    cluster.logdir = g_dir_make_tmp("kb-kbctl-XXXXXX", &error);
    g_assert_no_error(error);
    cluster.api = kb_test_apiserver_start(args, &error);
    g_assert_no_error(error);
    g_autofree char *crds = g_build_filename(kb_test_src_dir(), "deploy/base/crds", NULL);
    g_autofree char *queue =
            g_build_filename(kb_test_src_dir(), "deploy/base/default-queue.yaml", NULL);
    const char *a1[] = {"apply", "-f", crds, NULL};
    const char *a2[] = {"apply", "-f", queue, NULL};
    int status = -1;
    g_assert_true(kb_test_kubectl(cluster.api, a1, NULL, NULL, NULL, &status, &error));
    g_assert_true(kb_test_kubectl(cluster.api, a2, NULL, NULL, NULL, &status, &error));
    g_assert_cmpint(status, ==, 0);
    const char *sched[] = {"--schedule-period", "200ms", NULL};
    cluster.scheduler =
            kb_test_apiserver_spawn(cluster.api, "kube-batchd", TRUE, sched, cluster.logdir);
    cluster.operator_ =
            kb_test_apiserver_spawn(cluster.api, "tf-operator", TRUE, NULL, cluster.logdir);

    g_test_add_func("/kbctl/usage-exits-2", test_usage);
    g_test_add_func("/kbctl/help", test_help);
    g_test_add_func("/kbctl/help/command-group", test_group_help);
    g_test_add_func("/kbctl/version", test_version);
    g_test_add_func("/kbctl/not-found-exits-1", test_not_found);
    g_test_add_func("/kbctl/dry-run-read-by-kubectl", test_dry_run_kubectl);
    g_test_add_func("/kbctl/wait-then-run", test_wait_then_run);
    g_test_add_func("/kbctl/kubectl-logs", test_kubectl_logs);
    g_test_add_func("/kbctl/kubeconfig", test_kubeconfig);
    g_test_add_func("/kbctl/colour-on-a-terminal", test_colour);
    g_test_add_func("/kbctl/completion", test_completion);
    g_test_add_func("/kbctl/queues", test_queues);
    g_test_add_func("/kbctl/never-fits", test_never_fits);
    g_test_add_func("/kbctl/why-gang-incomplete", test_why_gang_incomplete);
    g_test_add_func("/kbctl/why-borrowed", test_why_borrowed);
    int rc = g_test_run();

    kb_test_daemon_stop(cluster.operator_, 30000);
    kb_test_daemon_stop(cluster.scheduler, 30000);
    g_clear_pointer(&cluster.operator_, kb_test_daemon_free);
    g_clear_pointer(&cluster.scheduler, kb_test_daemon_free);
    /* Under ASan a leak (say, in the pod log streams) makes kb-apiserver exit non-zero. */
    int api_status = kb_test_apiserver_stop(cluster.api);
    if (api_status != 0) {
        g_printerr("# kb-apiserver exited with status %d\n", api_status);
        rc = 1;
    }
    kb_test_apiserver_free(cluster.api);
    return kb_test_log_dir_finish(cluster.logdir, rc);
}
