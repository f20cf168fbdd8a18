/*
 * bin/kb-apiserver as a user meets it: the binary started by the test launcher, and the real
 * kubectl typed against it (skipped when kubectl is not installed).
 */
#include <curl/curl.h>
#include <gio/gio.h>
#include <string.h>

#include "tests/apiserver/kas-json.h"
#include "tests/lib/kb-test-apiserver.h"

static char *src_path(const char *rel)
{
    const char *top = g_getenv("KB_SRCDIR");
    return g_build_filename(top != NULL ? top : ".", rel, NULL);
}

static KbTestApiserver *start(gboolean simulate)
{
    const char *sim[] = { "--simulate-kubelet", "--kubelet-start-delay", "50", NULL };
    g_autoptr(GError) error = NULL;
    KbTestApiserver *api = kb_test_apiserver_start(simulate ? sim : NULL, &error);
    g_assert_no_error(error);
    return api;
}

/* Run kubectl; returns stdout, asserting the exit status is @want_status. */
static char *kubectl(KbTestApiserver *api, int want_status, const char *stdin_text, char **err_out, ...)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    va_list ap;
    va_start(ap, err_out);
    for (const char *a = va_arg(ap, const char *); a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(args, (gpointer)a);
    va_end(ap);
    g_ptr_array_add(args, NULL);
    char *out = NULL, *err = NULL;
    int status = -1;
    g_autoptr(GError) error = NULL;
    g_assert_true(kb_test_kubectl(api, (const char *const *)args->pdata, stdin_text, &out, &err, &status, &error));
    g_assert_no_error(error);
    if (status != want_status)
        g_error("kubectl %s: exit %d (wanted %d)\nstdout: %s\nstderr: %s",
                (char *)g_ptr_array_index(args, 0), status, want_status, out, err);
    if (err_out != NULL)
        *err_out = err;
    else
        g_free(err);
    return out;
}

#define KUBECTL_OK(api, ...) kubectl(api, 0, NULL, NULL, __VA_ARGS__, NULL)

static gboolean need_kubectl(void)
{
    if (kb_test_kubectl_available())
        return TRUE;
    g_test_skip("kubectl is not installed");
    return FALSE;
}

static long http_post(const char *url, const char *body)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    FILE *devnull = fopen("/dev/null", "w");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    fclose(devnull);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return code;
}

/* ---- the binary ------------------------------------------------------------------------------------ */

static void test_binary_start_stop(void)
{
    g_autoptr(KbTestApiserver) api = start(FALSE);
    const char *url = kb_test_apiserver_url(api);
    g_assert_true(g_str_has_prefix(url, "http://127.0.0.1:"));
    g_autofree char *ns = g_strdup_printf("%s/api/v1/namespaces", url);
    g_assert_cmpint(http_post(ns, "{\"metadata\":{\"name\":\"team-a\"}}"), ==, 201);
    /* SIGTERM: a clean exit. */
    g_assert_cmpint(kb_test_apiserver_stop(api), ==, 0);
}

static char *bin(void)
{
    const char *dir = g_getenv("KB_BIN_DIR");
    return g_build_filename(dir != NULL ? dir : "build/default/bin", "kb-apiserver", NULL);
}

static void test_binary_help_and_bad_flags(void)
{
    g_autofree char *b = bin();
    g_autofree char *out = NULL, *err = NULL;
    int status = 0;
    const char *help[] = { b, "--help", NULL };
    g_assert_true(g_spawn_sync(NULL, (char **)help, NULL, 0, NULL, NULL, &out, &err, &status, NULL));
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    static const char *const documented[] = { "--simulate-kubelet", "--nodes", "--faults", "cut-watch",
                                              "stall-watch", "expire-history", "error=CODE", "fraction=",
                                              "/admin/faults" };
    for (guint i = 0; i < G_N_ELEMENTS(documented); i++)
        if (strstr(out, documented[i]) == NULL)
            g_error("--help does not mention %s", documented[i]);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *bad[] = { b, "--listen", "127.0.0.1:0", "--faults", "error=teapot", NULL };
    g_assert_true(g_spawn_sync(NULL, (char **)bad, NULL, 0, NULL, NULL, &out, &err, &status, NULL));
    g_assert_false(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(err, "error=teapot"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *port[] = { b, "--listen", "127.0.0.1:99999", NULL };
    g_assert_true(g_spawn_sync(NULL, (char **)port, NULL, 0, NULL, NULL, &out, &err, &status, NULL));
    g_assert_false(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(err, "--listen"));
}

/* ---- kubectl -------------------------------------------------------------------------------------------- */

static void apply_crd(KbTestApiserver *api)
{
    g_autofree char *crd = src_path("tests/data/apiserver/crd-tfjob.yaml");
    g_autofree char *out = KUBECTL_OK(api, "apply", "-f", crd);
    g_assert_nonnull(strstr(out, "customresourcedefinition.apiextensions.k8s.io/tfjobs.kubeflow.org created"));
}

static void test_kubectl_crd_and_seed_tfjob(void)
{
    if (!need_kubectl())
        return;
    g_autoptr(KbTestApiserver) api = start(FALSE);
    apply_crd(api);
    g_autofree char *job = src_path("tests/data/apiserver/tfjob-seed.yaml");
    g_autofree char *c = KUBECTL_OK(api, "create", "-f", job);
    g_assert_nonnull(strstr(c, "tfjob.kubeflow.org/example-job created"));
    g_autofree char *list = KUBECTL_OK(api, "get", "tfjobs");
    g_assert_true(g_str_has_prefix(list, "NAME"));
    g_assert_nonnull(strstr(list, "example-job"));
    g_autofree char *alpha = KUBECTL_OK(api, "get", "tfjobs.v1alpha1.kubeflow.org");
    g_assert_nonnull(strstr(alpha, "PHASE"));
    g_autofree char *yaml = KUBECTL_OK(api, "get", "tfj", "example-job", "-o", "yaml");
    g_assert_nonnull(strstr(yaml, "tfReplicaType: MASTER"));
    g_autofree char *err = NULL;
    g_autofree char *again = kubectl(api, 1, NULL, &err, "create", "-f", job, NULL);
    g_assert_nonnull(strstr(err, "AlreadyExists"));
    g_autofree char *del = KUBECTL_OK(api, "delete", "tfjob", "example-job");
    g_assert_nonnull(strstr(del, "deleted"));
    /* The server shuts down cleanly (sanitizer builds fail the exit status on leaks). */
    g_assert_cmpint(kb_test_apiserver_stop(api), ==, 0);
}

static void test_kubectl_project_crds(void)
{
    if (!need_kubectl())
        return;
    g_autofree char *dir = src_path("deploy/crds");
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_test_skip("deploy/crds/ is not there yet");
        return;
    }
    g_autoptr(KbTestApiserver) api = start(FALSE);
    g_autofree char *out = KUBECTL_OK(api, "apply", "-f", dir);
    g_assert_nonnull(strstr(out, "created"));
    g_assert_null(strstr(out, "error"));
    g_autofree char *crds = KUBECTL_OK(api, "get", "crd");
    g_assert_nonnull(strstr(crds, "tfjobs.kubeflow.org"));
    g_assert_nonnull(strstr(crds, "podgroups.scheduling.volcano.sh"));
    g_autofree char *job = src_path("tests/data/apiserver/tfjob-seed.yaml");
    g_autofree char *c = KUBECTL_OK(api, "create", "-f", job);
    g_autofree char *list = KUBECTL_OK(api, "get", "tfjobs");
    g_assert_nonnull(strstr(list, "example-job"));
    /* Applying the same files again changes nothing. */
    g_autofree char *again = KUBECTL_OK(api, "apply", "-f", dir);
    g_assert_nonnull(strstr(again, "unchanged"));
    /* The server shuts down cleanly (sanitizer builds fail the exit status on leaks). */
    g_assert_cmpint(kb_test_apiserver_stop(api), ==, 0);
}

static void create_node_and_pod(KbTestApiserver *api)
{
    g_autofree char *node = src_path("tests/data/apiserver/node.yaml");
    g_autofree char *pod = src_path("tests/data/apiserver/pod.yaml");
    g_autofree char *a = KUBECTL_OK(api, "create", "-f", node);
    g_assert_nonnull(strstr(a, "node/node-a created"));
    g_autofree char *b = KUBECTL_OK(api, "create", "-f", pod);
    g_assert_nonnull(strstr(b, "pod/worker-0 created"));
}

static void test_kubectl_watch_sees_binding(void)
{
    if (!need_kubectl())
        return;
    g_autoptr(KbTestApiserver) api = start(TRUE);
    create_node_and_pod(api);
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
    g_subprocess_launcher_setenv(l, "KUBECONFIG", "/dev/null", TRUE);
    g_autofree char *cache = g_dir_make_tmp("kb-kubectl-w-XXXXXX", NULL);
    g_subprocess_launcher_setenv(l, "HOME", cache, TRUE);
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) w = g_subprocess_launcher_spawn(l, &error, "kubectl", "--server", kb_test_apiserver_url(api),
                                                           "--cache-dir", cache, "get", "pods", "-w", "-o", "wide", NULL);
    g_assert_no_error(error);
    g_autoptr(GDataInputStream) in = g_data_input_stream_new(g_subprocess_get_stdout_pipe(w));
    g_autofree char *header = g_data_input_stream_read_line_utf8(in, NULL, NULL, &error);
    g_assert_nonnull(strstr(header, "NODE"));
    g_autofree char *first = g_data_input_stream_read_line_utf8(in, NULL, NULL, &error);
    g_assert_nonnull(strstr(first, "worker-0"));
    g_assert_nonnull(strstr(first, "Pending"));
    g_autofree char *bind = g_strdup_printf("%s/api/v1/namespaces/default/pods/worker-0/binding", kb_test_apiserver_url(api));
    g_assert_cmpint(http_post(bind, "{\"target\":{\"name\":\"node-a\"}}"), ==, 201);
    /* A new line for the binding, then Running from the simulated kubelet. */
    gboolean bound = FALSE, running = FALSE;
    for (int i = 0; i < 6 && !running; i++) {
        g_autofree char *line = g_data_input_stream_read_line_utf8(in, NULL, NULL, &error);
        g_assert_nonnull(line);
        g_assert_nonnull(strstr(line, "worker-0"));
        bound |= strstr(line, "node-a") != NULL;
        running |= strstr(line, "Running") != NULL;
    }
    g_assert_true(bound);
    g_assert_true(running);
    g_subprocess_force_exit(w);
    g_subprocess_wait(w, NULL, NULL);
    g_autofree char *rm = g_strdup_printf("rm -rf '%s'", cache);
    g_assert_true(g_spawn_command_line_sync(rm, NULL, NULL, NULL, NULL));
}

static void test_kubectl_get_formats(void)
{
    if (!need_kubectl())
        return;
    g_autoptr(KbTestApiserver) api = start(TRUE);
    create_node_and_pod(api);
    g_autofree char *json = KUBECTL_OK(api, "get", "pods", "-o", "json");
    json_object *j = json_tokener_parse(json);
    g_assert_cmpstr(kas_json_get_string(j, "kind"), ==, "List");
    g_assert_cmpuint(json_object_array_length(kas_json_get(j, "items")), ==, 1);
    json_object_put(j);
    g_autofree char *yaml = KUBECTL_OK(api, "get", "pod", "worker-0", "-o", "yaml");
    g_assert_nonnull(strstr(yaml, "kind: Pod"));
    g_assert_nonnull(strstr(yaml, "schedulerName: kube-batchd"));
    g_autofree char *wide = KUBECTL_OK(api, "get", "po", "-o", "wide");
    g_assert_nonnull(strstr(wide, "NOMINATED NODE"));
    g_autofree char *nodes = KUBECTL_OK(api, "get", "nodes");
    g_assert_nonnull(strstr(nodes, "node-a"));
    g_assert_nonnull(strstr(nodes, "Ready"));
    g_autofree char *names = KUBECTL_OK(api, "get", "pods", "-l", "app=demo", "-o", "name");
    g_assert_cmpstr(names, ==, "pod/worker-0\n");
    g_autofree char *jp = KUBECTL_OK(api, "get", "node", "node-a", "-o", "jsonpath={.status.allocatable.nvidia\\.com/gpu}");
    g_assert_cmpstr(jp, ==, "4");
    g_autofree char *err = NULL;
    g_autofree char *missing = kubectl(api, 1, NULL, &err, "get", "pod", "nope", NULL);
    g_assert_nonnull(strstr(err, "pods \"nope\" not found"));
    /* The server shuts down cleanly (sanitizer builds fail the exit status on leaks). */
    g_assert_cmpint(kb_test_apiserver_stop(api), ==, 0);
}

static void test_kubectl_patch_label_annotate(void)
{
    if (!need_kubectl())
        return;
    g_autoptr(KbTestApiserver) api = start(FALSE);
    create_node_and_pod(api);
    g_autofree char *a = KUBECTL_OK(api, "label", "pod", "worker-0", "tier=gpu");
    g_assert_nonnull(strstr(a, "pod/worker-0 labeled"));
    g_autofree char *b = KUBECTL_OK(api, "annotate", "pod", "worker-0", "owner=alice");
    g_assert_nonnull(strstr(b, "annotated"));
    g_autofree char *c = KUBECTL_OK(api, "patch", "pod", "worker-0", "--type", "merge", "-p", "{\"metadata\":{\"labels\":{\"m\":\"1\"}}}");
    g_autofree char *d = KUBECTL_OK(api, "patch", "pod", "worker-0", "--type", "json", "-p",
                                    "[{\"op\":\"add\",\"path\":\"/metadata/labels/j\",\"value\":\"2\"}]");
    g_autofree char *e = KUBECTL_OK(api, "patch", "pod", "worker-0", "-p", "{\"metadata\":{\"labels\":{\"s\":\"3\"}}}");
    g_assert_nonnull(strstr(e, "patched"));
    g_autofree char *labels = KUBECTL_OK(api, "get", "pod", "worker-0", "--show-labels");
    g_assert_nonnull(strstr(labels, "app=demo,j=2,m=1,s=3,tier=gpu"));
    g_autofree char *ann = KUBECTL_OK(api, "get", "pod", "worker-0", "-o", "jsonpath={.metadata.annotations.owner}");
    g_assert_cmpstr(ann, ==, "alice");
    g_autofree char *un = KUBECTL_OK(api, "label", "pod", "worker-0", "tier-");
    g_autofree char *after = KUBECTL_OK(api, "get", "pod", "worker-0", "--show-labels");
    g_assert_null(strstr(after, "tier=gpu"));
    /* The server shuts down cleanly (sanitizer builds fail the exit status on leaks). */
    g_assert_cmpint(kb_test_apiserver_stop(api), ==, 0);
}

static void test_kubectl_cordon(void)
{
    if (!need_kubectl())
        return;
    g_autoptr(KbTestApiserver) api = start(TRUE);
    create_node_and_pod(api);
    g_autofree char *c = KUBECTL_OK(api, "cordon", "node-a");
    g_assert_nonnull(strstr(c, "node/node-a cordoned"));
    g_autofree char *nodes = KUBECTL_OK(api, "get", "nodes");
    g_assert_nonnull(strstr(nodes, "SchedulingDisabled"));
    g_autofree char *u = KUBECTL_OK(api, "uncordon", "node-a");
    g_assert_nonnull(strstr(u, "uncordoned"));
    g_autofree char *spec = KUBECTL_OK(api, "get", "node", "node-a", "-o", "jsonpath={.spec.unschedulable}");
    g_assert_cmpstr(spec, !=, "true");
    /* The server shuts down cleanly (sanitizer builds fail the exit status on leaks). */
    g_assert_cmpint(kb_test_apiserver_stop(api), ==, 0);
}

static void test_kubectl_describe(void)
{
    if (!need_kubectl())
        return;
    g_autoptr(KbTestApiserver) api = start(TRUE);
    create_node_and_pod(api);
    g_autofree char *bind = g_strdup_printf("%s/api/v1/namespaces/default/pods/worker-0/binding", kb_test_apiserver_url(api));
    g_assert_cmpint(http_post(bind, "{\"target\":{\"name\":\"node-a\"}}"), ==, 201);
    g_autofree char *pod = KUBECTL_OK(api, "describe", "pod", "worker-0");
    g_assert_nonnull(strstr(pod, "Name:"));
    g_assert_nonnull(strstr(pod, "node-a"));
    g_autofree char *node = KUBECTL_OK(api, "describe", "node", "node-a");
    g_assert_nonnull(strstr(node, "worker-0"));
    g_assert_nonnull(strstr(node, "nvidia.com/gpu"));
    /* The server shuts down cleanly (sanitizer builds fail the exit status on leaks). */
    g_assert_cmpint(kb_test_apiserver_stop(api), ==, 0);
}

static void test_kubectl_apply_and_delete(void)
{
    if (!need_kubectl())
        return;
    g_autoptr(KbTestApiserver) api = start(TRUE);
    static const char cm[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"1\"\n";
    static const char cm2[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"2\"\n";
    g_autofree char *a = kubectl(api, 0, cm, NULL, "apply", "-f", "-", NULL);
    g_assert_nonnull(strstr(a, "configmap/settings created"));
    g_autofree char *b = kubectl(api, 0, cm, NULL, "apply", "-f", "-", NULL);
    g_assert_nonnull(strstr(b, "unchanged"));
    g_autofree char *c = kubectl(api, 0, cm2, NULL, "apply", "-f", "-", NULL);
    g_assert_nonnull(strstr(c, "configured"));
    g_autofree char *v = KUBECTL_OK(api, "get", "cm", "settings", "-o", "jsonpath={.data.a}");
    g_assert_cmpstr(v, ==, "2");
    g_autofree char *pod = src_path("tests/data/apiserver/pod.yaml");
    g_autofree char *p1 = KUBECTL_OK(api, "apply", "-f", pod);
    g_autofree char *p2 = KUBECTL_OK(api, "apply", "-f", pod);
    g_assert_nonnull(strstr(p2, "unchanged"));
    g_autofree char *d = KUBECTL_OK(api, "delete", "-f", pod);
    g_assert_nonnull(strstr(d, "pod \"worker-0\" deleted"));
    g_autofree char *err = NULL;
    g_autofree char *gone = kubectl(api, 1, NULL, &err, "get", "pod", "worker-0", NULL);
    g_assert_nonnull(strstr(err, "not found"));
    g_autofree char *dcm = KUBECTL_OK(api, "delete", "configmap", "settings");
    g_assert_nonnull(strstr(dcm, "deleted"));
    /* The server shuts down cleanly (sanitizer builds fail the exit status on leaks). */
    g_assert_cmpint(kb_test_apiserver_stop(api), ==, 0);
}

/* resource.k8s.io/v1 through kubectl: the project's DeviceClasses, a claim and a template, and
 * a bad claim refused with the real server's message. */
static void test_kubectl_dra(void)
{
    if (!need_kubectl())
        return;
    g_autoptr(KbTestApiserver) api = start(FALSE);
    g_autofree char *classes = src_path("deploy/dra/deviceclasses.yaml");
    g_autofree char *c = KUBECTL_OK(api, "create", "-f", classes);
    g_assert_nonnull(strstr(c, "deviceclass.resource.k8s.io/gpu.nvidia.com created"));
    g_assert_nonnull(strstr(c, "deviceclass.resource.k8s.io/mig.nvidia.com created"));
    g_autofree char *claims = src_path("deploy/dra/example-claims.yaml");
    g_autofree char *e = KUBECTL_OK(api, "create", "-f", claims);
    g_assert_nonnull(strstr(e, "resourceclaimtemplate.resource.k8s.io/single-gpu created"));
    g_assert_nonnull(strstr(e, "resourceclaim.resource.k8s.io/two-linked-gpus created"));
    g_autofree char *mode =
            KUBECTL_OK(api, "get", "resourceclaim", "two-linked-gpus", "-o",
                       "jsonpath={.spec.devices.requests[0].exactly.allocationMode}");
    g_assert_cmpstr(mode, ==, "ExactCount");
    static const char bad[] = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n"
                              "  name: bad\nspec:\n  devices:\n    requests:\n    - name: gpu\n";
    g_autofree char *err = NULL;
    g_autofree char *b = kubectl(api, 1, bad, &err, "create", "-f", "-", NULL);
    g_assert_nonnull(strstr(err, "The ResourceClaim \"bad\" is invalid: spec.devices.requests[0]: "
                                 "Required value: exactly one of `exactly` or `firstAvailable` is "
                                 "required"));
    g_autofree char *list = KUBECTL_OK(api, "get", "deviceclasses", "-o", "name");
    g_assert_nonnull(strstr(list, "deviceclass.resource.k8s.io/gpu.nvidia.com"));
    g_assert_cmpint(kb_test_apiserver_stop(api), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    curl_global_init(CURL_GLOBAL_ALL);
    g_test_add_func("/apiserver/binary/start-stop", test_binary_start_stop);
    g_test_add_func("/apiserver/binary/help-and-bad-flags", test_binary_help_and_bad_flags);
    g_test_add_func("/apiserver/kubectl/crd-and-seed-tfjob", test_kubectl_crd_and_seed_tfjob);
    g_test_add_func("/apiserver/kubectl/project-crds", test_kubectl_project_crds);
    g_test_add_func("/apiserver/kubectl/watch-sees-binding", test_kubectl_watch_sees_binding);
    g_test_add_func("/apiserver/kubectl/get-formats", test_kubectl_get_formats);
    g_test_add_func("/apiserver/kubectl/patch-label-annotate", test_kubectl_patch_label_annotate);
    g_test_add_func("/apiserver/kubectl/cordon-uncordon", test_kubectl_cordon);
    g_test_add_func("/apiserver/kubectl/describe", test_kubectl_describe);
    g_test_add_func("/apiserver/kubectl/apply-and-delete", test_kubectl_apply_and_delete);
    g_test_add_func("/apiserver/kubectl/dra", test_kubectl_dra);
    int rc = g_test_run();
    curl_global_cleanup();
    return rc;
}
