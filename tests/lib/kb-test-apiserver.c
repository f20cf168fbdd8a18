/* Launcher for bin/kb-apiserver in integration tests (see kb-test-apiserver.h). */
#include "tests/lib/kb-test-apiserver.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>

struct KbTestApiserver {
    KbTestDaemon *daemon;
    char *url;
    char *cache_dir;
};

KbTestApiserver *kb_test_apiserver_start_full(const char *const *extra_args, gboolean log,
                                              GError **error)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_ptr_array_add(args, (gpointer) "--listen");
    g_ptr_array_add(args, (gpointer) "127.0.0.1:0");
    for (guint i = 0; extra_args != NULL && extra_args[i] != NULL; i++)
        g_ptr_array_add(args, (gpointer)extra_args[i]);
    g_ptr_array_add(args, NULL);
    KbTestDaemonOptions opts = {
            .wrapper = g_getenv("KB_APISERVER_WRAPPER"), .stdout_pipe = TRUE, .log = log};
    g_autoptr(KbTestDaemon) d =
            kb_test_daemon_start("kb-apiserver", (const char *const *)args->pdata, &opts, error);
    if (d == NULL)
        return NULL;
    /* The server prints one line once it listens. */
    char *url = kb_test_daemon_wait_line(d, "listening on ", 20000, error);
    if (url == NULL)
        return NULL;
    KbTestApiserver *api = g_new0(KbTestApiserver, 1);
    api->daemon = g_steal_pointer(&d);
    api->url = url;
    api->cache_dir = g_dir_make_tmp("kb-kubectl-XXXXXX", NULL);
    return api;
}

KbTestApiserver *kb_test_apiserver_start(const char *const *extra_args, GError **error)
{
    return kb_test_apiserver_start_full(extra_args, FALSE, error);
}

const char *kb_test_apiserver_url(KbTestApiserver *api)
{
    return api->url;
}

const char *kb_test_apiserver_pid(KbTestApiserver *api)
{
    return kb_test_daemon_pid(api->daemon);
}

int kb_test_apiserver_stop(KbTestApiserver *api)
{
    /* Generous: under valgrind a clean shutdown takes seconds. */
    return kb_test_daemon_stop(api->daemon, 60000);
}

static void remove_tree(const char *path)
{
    GDir *dir = g_dir_open(path, 0, NULL);
    if (dir != NULL) {
        const char *name;
        while ((name = g_dir_read_name(dir)) != NULL) {
            g_autofree char *child = g_build_filename(path, name, NULL);
            if (g_file_test(child, G_FILE_TEST_IS_DIR) &&
                !g_file_test(child, G_FILE_TEST_IS_SYMLINK))
                remove_tree(child);
            else
                g_unlink(child);
        }
        g_dir_close(dir);
    }
    g_rmdir(path);
}

void kb_test_apiserver_free(KbTestApiserver *api)
{
    if (api == NULL)
        return;
    kb_test_apiserver_stop(api);
    kb_test_daemon_free(api->daemon);
    if (api->cache_dir != NULL)
        remove_tree(api->cache_dir);
    g_free(api->cache_dir);
    g_free(api->url);
    g_free(api);
}

gboolean kb_test_kubectl_available(void)
{
    g_autofree char *p = g_find_program_in_path("kubectl");
    return p != NULL;
}

gboolean kb_test_kubectl(KbTestApiserver *api, const char *const *args, const char *stdin_text,
                         char **out, char **err, int *status, GError **error)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer) "kubectl");
    g_ptr_array_add(argv, (gpointer) "--server");
    g_ptr_array_add(argv, api->url);
    g_ptr_array_add(argv, (gpointer) "--cache-dir");
    g_ptr_array_add(argv, api->cache_dir);
    g_ptr_array_add(argv, (gpointer) "--request-timeout=30s");
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add(argv, (gpointer)args[i]);
    g_ptr_array_add(argv, NULL);
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDIN_PIPE |
                                                                 G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                                 G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_subprocess_launcher_setenv(l, "KUBECONFIG", "/dev/null", TRUE);
    g_subprocess_launcher_setenv(l, "HOME", api->cache_dir, TRUE);
    g_autoptr(GSubprocess) p =
            g_subprocess_launcher_spawnv(l, (const char *const *)argv->pdata, error);
    if (p == NULL)
        return FALSE;
    g_autofree char *o = NULL, *e = NULL;
    if (!g_subprocess_communicate_utf8(p, stdin_text != NULL ? stdin_text : "", NULL, &o, &e,
                                       error))
        return FALSE;
    if (status != NULL)
        *status = g_subprocess_get_if_exited(p) ? g_subprocess_get_exit_status(p) : -1;
    if (out != NULL)
        *out = g_steal_pointer(&o);
    if (err != NULL)
        *err = g_steal_pointer(&e);
    return TRUE;
}

char *kb_test_kubectl_run(KbTestApiserver *api, const char *stdin_text, const char *first, ...)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(args, (gpointer)a);
    va_end(ap);
    g_ptr_array_add(args, NULL);
    g_autoptr(GError) error = NULL;
    char *out = NULL;
    g_autofree char *err = NULL;
    int status = -1;
    g_assert_true(kb_test_kubectl(api, (const char *const *)args->pdata, stdin_text, &out, &err,
                                  &status, &error));
    g_assert_no_error(error);
    if (status != 0)
        g_test_message("kubectl %s: exit %d: %s", first, status, err);
    return out;
}

void kb_test_skip_no_kubectl(void)
{
    g_test_skip("kubectl is not installed");
}

KbTestDaemon *kb_test_apiserver_spawn(KbTestApiserver *api, const char *name, gboolean listen,
                                      const char *const *extra, const char *log_dir)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer) "--master");
    g_ptr_array_add(argv, (gpointer)kb_test_apiserver_url(api));
    if (listen) {
        g_ptr_array_add(argv, (gpointer) "--listen-address");
        g_ptr_array_add(argv, (gpointer) "127.0.0.1:0");
    }
    for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
        g_ptr_array_add(argv, (gpointer)extra[i]);
    g_ptr_array_add(argv, NULL);
    KbTestDaemonOptions opts = {.log = TRUE, .log_dir = log_dir};
    KbTestDaemon *d = kb_test_daemon_start(name, (const char *const *)argv->pdata, &opts, &error);
    g_assert_no_error(error);
    return d;
}

int kb_test_log_dir_finish(char *log_dir, int rc)
{
    if (rc == 0 && g_getenv("KB_KEEP_LOGS") == NULL) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", log_dir);
        g_spawn_command_line_sync(cmd, NULL, NULL, NULL, NULL);
    }
    g_free(log_dir);
    return rc;
}

char *kb_test_kubectl_jsonpath(KbTestApiserver *api, const char *kind, const char *name,
                               const char *path)
{
    g_autofree char *arg = g_strdup_printf("jsonpath=%s", path);
    if (*name == '\0')
        return kb_test_kubectl_run(api, NULL, "get", kind, "-o", arg, NULL);
    return kb_test_kubectl_run(api, NULL, "get", kind, name, "--ignore-not-found", "-o", arg, NULL);
}

char *kb_test_kubectl_wait(KbTestApiserver *api, const char *kind, const char *name,
                           const char *path, KbTestValueFunc done, gconstpointer data,
                           guint timeout_ms)
{
    char *v = NULL;
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    for (;;) {
        g_free(v);
        v = kb_test_kubectl_jsonpath(api, kind, name, path);
        if (done(v, data))
            return v;
        if (g_get_monotonic_time() > deadline)
            break;
        g_usleep(200 * 1000);
    }
    g_test_message("%s %s: %s is \"%s\"", kind, name, path, v);
    return v;
}

gboolean kb_test_value_contains(const char *value, gconstpointer part)
{
    return value != NULL && strstr(value, part) != NULL;
}

gboolean kb_test_value_n_words(const char *value, gconstpointer n)
{
    g_auto(GStrv) w = g_strsplit_set(value != NULL ? value : "", " ", -1);
    guint k = 0;
    for (guint i = 0; w[i] != NULL; i++)
        k += w[i][0] != '\0';
    return k == GPOINTER_TO_UINT(n);
}
