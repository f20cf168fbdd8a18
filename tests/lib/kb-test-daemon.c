/* Child processes of tests and benchmarks (see kb-test-daemon.h). */
#include "tests/lib/kb-test-daemon.h"

#include <errno.h>
#include <gio/gio.h>
#include <gio/gunixinputstream.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

struct KbTestDaemon {
    char *name;
    GSubprocess *proc;
    GString *pending; /* standard output read but not yet split into lines */
    char *log_path;
    gboolean remove_log;
    gboolean stopped;
};

static char *program_path(const char *name)
{
    /* An absolute path runs a program from elsewhere (etcd, a real kube-apiserver). */
    if (g_path_is_absolute(name))
        return g_strdup(name);
    const char *dir = g_getenv("KB_BIN_DIR");
    return g_build_filename(dir != NULL && dir[0] != '\0' ? dir : "build/default/bin", name, NULL);
}

/* Children die with the test (an assertion aborts it without running any cleanup). */
static void die_with_parent(gpointer data)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static GPtrArray *build_argv(const char *name, const char *const *args,
                             const KbTestDaemonOptions *opts, GError **error)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    if (opts->wrapper != NULL && opts->wrapper[0] != '\0') {
        g_auto(GStrv) w = NULL;
        if (!g_shell_parse_argv(opts->wrapper, NULL, &w, error)) {
            g_prefix_error(error, "wrapper \"%s\": ", opts->wrapper);
            return NULL;
        }
        for (guint i = 0; w[i] != NULL; i++)
            g_ptr_array_add(argv, g_strdup(w[i]));
    }
    g_ptr_array_add(argv, program_path(name));
    for (guint i = 0; args != NULL && args[i] != NULL; i++)
        g_ptr_array_add(argv, g_strdup(args[i]));
    g_ptr_array_add(argv, NULL);
    return g_steal_pointer(&argv);
}

/* Where the log goes: LOG_DIR/NAME.log, or a new temporary file. */
static char *make_log_path(const char *name, const char *log_dir, GError **error)
{
    if (log_dir != NULL)
        return g_strdup_printf("%s/%s.log", log_dir, name);
    g_autofree char *tmpl = g_strdup_printf("%s-XXXXXX.log", name);
    char *path = NULL;
    int fd = g_file_open_tmp(tmpl, &path, error);
    if (fd == -1)
        return NULL;
    close(fd);
    return path;
}

KbTestDaemon *kb_test_daemon_start(const char *name, const char *const *args,
                                   const KbTestDaemonOptions *opts, GError **error)
{
    static const KbTestDaemonOptions defaults = {0};
    if (opts == NULL)
        opts = &defaults;
    g_autoptr(GPtrArray) argv = build_argv(name, args, opts, error);
    if (argv == NULL)
        return NULL;
    g_autofree char *log_path = NULL;
    g_autofree char *base = g_path_get_basename(name);
    if (opts->log && (log_path = make_log_path(base, opts->log_dir, error)) == NULL)
        return NULL;
    GSubprocessFlags flags = opts->stdout_pipe ? G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                               : (opts->log ? G_SUBPROCESS_FLAGS_STDERR_MERGE
                                                            : G_SUBPROCESS_FLAGS_NONE);
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(flags);
    if (log_path != NULL && opts->stdout_pipe)
        g_subprocess_launcher_set_stderr_file_path(l, log_path);
    else if (log_path != NULL)
        g_subprocess_launcher_set_stdout_file_path(l, log_path);
    g_subprocess_launcher_set_child_setup(l, die_with_parent, NULL, NULL);
    GSubprocess *proc = g_subprocess_launcher_spawnv(l, (const char *const *)argv->pdata, error);
    if (proc == NULL) {
        g_prefix_error(error, "%s: ", name);
        if (log_path != NULL && opts->log_dir == NULL)
            g_unlink(log_path);
        return NULL;
    }
    KbTestDaemon *d = g_new0(KbTestDaemon, 1);
    d->name = g_strdup(name);
    d->proc = proc;
    d->pending = g_string_new(NULL);
    d->log_path = g_steal_pointer(&log_path);
    d->remove_log = d->log_path != NULL && opts->log_dir == NULL;
    return d;
}

/* Pops complete lines off d->pending; returns the rest of the first that starts with @prefix. */
static char *take_line(KbTestDaemon *d, const char *prefix)
{
    char *nl;
    while ((nl = memchr(d->pending->str, '\n', d->pending->len)) != NULL) {
        gsize n = (gsize)(nl - d->pending->str);
        g_autofree char *line = g_strndup(d->pending->str, n);
        g_string_erase(d->pending, 0, (gssize)n + 1);
        if (g_str_has_prefix(line, prefix))
            return g_strdup(line + strlen(prefix));
    }
    return NULL;
}

char *kb_test_daemon_wait_line(KbTestDaemon *d, const char *prefix, guint ms, GError **error)
{
    GInputStream *out = g_subprocess_get_stdout_pipe(d->proc);
    g_return_val_if_fail(out != NULL, NULL);
    int fd = g_unix_input_stream_get_fd(G_UNIX_INPUT_STREAM(out));
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    for (;;) {
        char *rest = take_line(d, prefix);
        if (rest != NULL)
            return rest;
        gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;
        if (left_ms <= 0) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                        "%s printed no \"%s\" line within %u ms", d->name, prefix, ms);
            return NULL;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)MIN(left_ms, G_MAXINT)) == -1 && errno != EINTR) {
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: poll: %s",
                        d->name, g_strerror(errno));
            return NULL;
        }
        if (p.revents == 0)
            continue;
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n == -1 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            /* A child that dies closes the pipe. */
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                        "%s exited before printing \"%s\"", d->name, prefix);
            return NULL;
        }
        g_string_append_len(d->pending, buf, n);
    }
}

gboolean kb_test_daemon_running(KbTestDaemon *d)
{
    /* GLib clears the identifier as soon as its child watch sees the exit. */
    return g_subprocess_get_identifier(d->proc) != NULL;
}

const char *kb_test_daemon_pid(KbTestDaemon *d)
{
    return g_subprocess_get_identifier(d->proc);
}

int kb_test_daemon_stop(KbTestDaemon *d, guint ms)
{
    if (d->stopped)
        return -1;
    d->stopped = TRUE;
    g_subprocess_send_signal(d->proc, SIGTERM);
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    while (kb_test_daemon_running(d) && g_get_monotonic_time() < deadline)
        g_usleep(5000);
    if (kb_test_daemon_running(d))
        g_subprocess_force_exit(d->proc);
    g_subprocess_wait(d->proc, NULL, NULL);
    if (g_subprocess_get_if_signaled(d->proc))
        return 128 + g_subprocess_get_term_sig(d->proc);
    return g_subprocess_get_exit_status(d->proc);
}

const char *kb_test_daemon_log_path(KbTestDaemon *d)
{
    return d->log_path;
}

char *kb_test_daemon_log(KbTestDaemon *d)
{
    char *text = NULL;
    if (d->log_path != NULL)
        g_file_get_contents(d->log_path, &text, NULL, NULL);
    return text != NULL ? text : g_strdup("");
}

void kb_test_daemon_free(KbTestDaemon *d)
{
    if (d == NULL)
        return;
    if (!d->stopped) {
        g_subprocess_force_exit(d->proc);
        g_subprocess_wait(d->proc, NULL, NULL);
    }
    g_object_unref(d->proc);
    g_string_free(d->pending, TRUE);
    if (d->remove_log)
        g_unlink(d->log_path);
    g_free(d->log_path);
    g_free(d->name);
    g_free(d);
}
