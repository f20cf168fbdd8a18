/*
 * A program of the project (kb-apiserver, kube-batchd, tf-operator) run as a child process of a
 * test or a benchmark: started with arguments, optionally waited on for a line of its standard
 * output, stopped with SIGTERM and reaped, its log kept for failure messages.
 *
 *   KbTestDaemonOptions opts = { .log = TRUE };
 *   const char *args[] = { "--master", url, NULL };
 *   g_autoptr(KbTestDaemon) d = kb_test_daemon_start("kube-batchd", args, &opts, &error);
 *   ...
 *   if (kb_test_daemon_stop(d, 7000) != 0) { g_autofree char *log = kb_test_daemon_log(d); ... }
 *
 * The program is $KB_BIN_DIR/NAME (default build/default/bin), or NAME itself when it is an
 * absolute path (its log is then named after its base name). The child is killed (SIGKILL) when
 * the process that started it dies, so an aborted test leaves nothing running.
 */
#pragma once

#include <glib.h>

typedef struct KbTestDaemon KbTestDaemon;

typedef struct {
    /* A command put in front of the program (shell syntax, e.g. "valgrind -q"); NULL or "":
     * none. */
    const char *wrapper;
    /* Standard output is a pipe read by kb_test_daemon_wait_line() (otherwise it goes where
     * standard error goes). */
    gboolean stdout_pipe;
    /* Standard error (and standard output, unless piped) go to a log file instead of being
     * inherited. */
    gboolean log;
    /* With @log: the file is LOG_DIR/NAME.log, kept; NULL: a temporary file, removed by
     * kb_test_daemon_free(). */
    const char *log_dir;
} KbTestDaemonOptions;

/* Start $KB_BIN_DIR/@name with @args (NULL-terminated, may be NULL). @opts may be NULL (all
 * defaults: output inherited). Returns NULL with @error when it could not be started. */
KbTestDaemon *kb_test_daemon_start(const char *name, const char *const *args,
                                   const KbTestDaemonOptions *opts, GError **error);

/* With stdout_pipe: wait at most @ms for a line of standard output starting with @prefix and
 * return the rest of that line (newly allocated; earlier lines are skipped). NULL with @error
 * when the child exits first or the time runs out. */
char *kb_test_daemon_wait_line(KbTestDaemon *d, const char *prefix, guint ms, GError **error);

/* Is the child still running (not yet exited, whether reaped or not)? */
gboolean kb_test_daemon_running(KbTestDaemon *d);

/* The child's process id as a string (borrowed), NULL once it has exited. */
const char *kb_test_daemon_pid(KbTestDaemon *d);

/* SIGTERM, then wait at most @ms for the exit (SIGKILL after that). Returns the exit status (0
 * for a clean shutdown), 128+N when it ended by signal N, -1 when it was already stopped. */
int kb_test_daemon_stop(KbTestDaemon *d, guint ms);

/* The log file's path (borrowed), NULL without a log. */
const char *kb_test_daemon_log_path(KbTestDaemon *d);

/* The log so far (newly allocated; "" without a log or when unreadable). */
char *kb_test_daemon_log(KbTestDaemon *d);

/* Kills the child if still running (SIGKILL), reaps it, removes a temporary log, frees @d. */
void kb_test_daemon_free(KbTestDaemon *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbTestDaemon, kb_test_daemon_free)
