/* Launcher for bin/kb-apiserver in integration tests (see kb-test-apiserver.h). */
#include "tests/lib/kb-test-apiserver.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

struct KbTestApiserver {
    GSubprocess *proc;
    GDataInputStream *out;
    char *url;
    char *cache_dir;
    gboolean running;
};

static char *bin_path(void)
{
    const char *dir = g_getenv("KB_BIN_DIR");
    return g_build_filename(dir != NULL && dir[0] != '\0' ? dir : "build/default/bin",
                            "kb-apiserver", NULL);
}

static gboolean read_url(KbTestApiserver *api, GError **error)
{
    /* The server prints one line once it listens; a server that dies closes the pipe. */
    for (;;) {
        gsize len = 0;
        g_autofree char *line = g_data_input_stream_read_line_utf8(api->out, &len, NULL, error);
        if (line == NULL) {
            if (error != NULL && *error == NULL)
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "kb-apiserver exited before printing \"listening on\"");
            return FALSE;
        }
        if (g_str_has_prefix(line, "listening on ")) {
            api->url = g_strdup(line + strlen("listening on "));
            return TRUE;
        }
    }
}

/* Kills a server that hangs before listening, so the blocking read returns. */
typedef struct {
    GMutex lock;
    GCond cond;
    gboolean done;
    GSubprocess *proc;
} Watchdog;

static gpointer watchdog_main(gpointer data)
{
    Watchdog *w = data;
    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    g_mutex_lock(&w->lock);
    while (!w->done)
        if (!g_cond_wait_until(&w->cond, &w->lock, deadline))
            break;
    if (!w->done)
        g_subprocess_force_exit(w->proc);
    g_mutex_unlock(&w->lock);
    return NULL;
}

KbTestApiserver *kb_test_apiserver_start(const char *const *extra_args, GError **error)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    const char *wrapper = g_getenv("KB_APISERVER_WRAPPER");
    if (wrapper != NULL && wrapper[0] != '\0') {
        g_auto(GStrv) w = NULL;
        if (!g_shell_parse_argv(wrapper, NULL, &w, error))
            return NULL;
        for (guint i = 0; w[i] != NULL; i++)
            g_ptr_array_add(argv, g_strdup(w[i]));
    }
    g_ptr_array_add(argv, bin_path());
    g_ptr_array_add(argv, g_strdup("--listen"));
    g_ptr_array_add(argv, g_strdup("127.0.0.1:0"));
    for (guint i = 0; extra_args != NULL && extra_args[i] != NULL; i++)
        g_ptr_array_add(argv, g_strdup(extra_args[i]));
    g_ptr_array_add(argv, NULL);
    KbTestApiserver *api = g_new0(KbTestApiserver, 1);
    api->proc = g_subprocess_newv((const char *const *)argv->pdata, G_SUBPROCESS_FLAGS_STDOUT_PIPE, error);
    if (api->proc == NULL) {
        g_free(api);
        return NULL;
    }
    api->running = TRUE;
    api->out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(api->proc));
    Watchdog w = { .proc = api->proc };
    g_mutex_init(&w.lock);
    g_cond_init(&w.cond);
    GThread *t = g_thread_new("kb-apiserver-watchdog", watchdog_main, &w);
    gboolean ok = read_url(api, error);
    g_mutex_lock(&w.lock);
    w.done = TRUE;
    g_cond_signal(&w.cond);
    g_mutex_unlock(&w.lock);
    g_thread_join(t);
    g_mutex_clear(&w.lock);
    g_cond_clear(&w.cond);
    if (!ok) {
        kb_test_apiserver_free(api);
        return NULL;
    }
    api->cache_dir = g_dir_make_tmp("kb-kubectl-XXXXXX", NULL);
    return api;
}

const char *kb_test_apiserver_url(KbTestApiserver *api)
{
    return api->url;
}

int kb_test_apiserver_stop(KbTestApiserver *api)
{
    if (!api->running)
        return -1;
    api->running = FALSE;
    g_subprocess_send_signal(api->proc, SIGTERM);
    g_subprocess_wait(api->proc, NULL, NULL);
    if (g_subprocess_get_if_signaled(api->proc))
        return 128 + g_subprocess_get_term_sig(api->proc);
    return g_subprocess_get_exit_status(api->proc);
}

static void remove_tree(const char *path)
{
    GDir *dir = g_dir_open(path, 0, NULL);
    if (dir != NULL) {
        const char *name;
        while ((name = g_dir_read_name(dir)) != NULL) {
            g_autofree char *child = g_build_filename(path, name, NULL);
            if (g_file_test(child, G_FILE_TEST_IS_DIR) && !g_file_test(child, G_FILE_TEST_IS_SYMLINK))
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
    if (api->running)
        kb_test_apiserver_stop(api);
    g_clear_object(&api->out);
    g_clear_object(&api->proc);
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
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(
        G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_subprocess_launcher_setenv(l, "KUBECONFIG", "/dev/null", TRUE);
    g_subprocess_launcher_setenv(l, "HOME", api->cache_dir, TRUE);
    g_autoptr(GSubprocess) p = g_subprocess_launcher_spawnv(l, (const char *const *)argv->pdata, error);
    if (p == NULL)
        return FALSE;
    g_autofree char *o = NULL, *e = NULL;
    if (!g_subprocess_communicate_utf8(p, stdin_text != NULL ? stdin_text : "", NULL, &o, &e, error))
        return FALSE;
    if (status != NULL)
        *status = g_subprocess_get_if_exited(p) ? g_subprocess_get_exit_status(p) : -1;
    if (out != NULL)
        *out = g_steal_pointer(&o);
    if (err != NULL)
        *err = g_steal_pointer(&e);
    return TRUE;
}
