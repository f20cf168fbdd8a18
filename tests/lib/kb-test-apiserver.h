/*
 * Integration tests against the real bin/kb-apiserver: start it as a child process on a free
 * port, talk to it over HTTP (or with kubectl), stop it with SIGTERM.
 *
 *   const char *args[] = { "--simulate-kubelet", NULL };
 *   g_autoptr(KbTestApiserver) api = kb_test_apiserver_start(args, &error);
 *   ... kb_test_apiserver_url(api) ...              "http://127.0.0.1:PORT"
 *   const char *kargs[] = { "get", "pods", "-o", "wide", NULL };
 *   kb_test_kubectl(api, kargs, NULL, &out, &err, &status, &error);
 *   g_assert_cmpint(kb_test_apiserver_stop(api), ==, 0);
 *
 * The binary is $KB_BIN_DIR/kb-apiserver (default build/default/bin). $KB_APISERVER_WRAPPER,
 * when set (e.g. "valgrind -q --error-exitcode=99"), is put in front of it. The server is killed
 * when the test process dies.
 */
#pragma once

#include <glib.h>

#include "tests/lib/kb-test-daemon.h"

typedef struct KbTestApiserver KbTestApiserver;

/* Start the server with @extra_args (NULL-terminated, may be NULL) after "--listen
 * 127.0.0.1:0" and wait (at most 20 s) for its "listening on URL" line. */
KbTestApiserver *kb_test_apiserver_start(const char *const *extra_args, GError **error);

/* The same; with @log the server's standard error goes to a temporary file (removed by
 * kb_test_apiserver_free()) instead of the test's own. */
KbTestApiserver *kb_test_apiserver_start_full(const char *const *extra_args, gboolean log,
                                              GError **error);

/* "http://127.0.0.1:PORT" (borrowed). */
const char *kb_test_apiserver_url(KbTestApiserver *api);

/* The server's process id (borrowed), NULL once it has exited. */
const char *kb_test_apiserver_pid(KbTestApiserver *api);

/* SIGTERM, then wait for the exit (at most 60 s, then SIGKILL). Returns the exit status (0 for
 * a clean shutdown), 128+N when it ended by signal N, -1 when it was already stopped. */
int kb_test_apiserver_stop(KbTestApiserver *api);

/* Stops the server if still running and frees everything (including kubectl's cache dir). */
void kb_test_apiserver_free(KbTestApiserver *api);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbTestApiserver, kb_test_apiserver_free)

/* Is a kubectl binary on PATH? */
gboolean kb_test_kubectl_available(void);

/* A test case for when kubectl is missing: marks the running test skipped with "kubectl is not
 * installed" (for g_test_add_func() when kb_test_kubectl_available() is FALSE). */
void kb_test_skip_no_kubectl(void);

/* Run `kubectl --server URL ARGS...` with no kubeconfig and a private cache directory, feeding
 * @stdin_text (may be NULL) on its standard input. *@out and *@err (both may be NULL) receive
 * the captured output (newly allocated), *@status the exit status. FALSE only when kubectl
 * could not be run at all (or ran longer than 60 s). */
gboolean kb_test_kubectl(KbTestApiserver *api, const char *const *args, const char *stdin_text,
                         char **out, char **err, int *status, GError **error);

/* `kubectl ARGS...` (@first and what follows, NULL-terminated) through kb_test_kubectl() with
 * @stdin_text (may be NULL). Returns its standard output (newly allocated, the caller frees).
 * Failing to run kubectl fails the test; a non-zero exit status is only logged with
 * g_test_message() (the caller asserts on the output). */
char *kb_test_kubectl_run(KbTestApiserver *api, const char *stdin_text, const char *first,
                          ...) G_GNUC_NULL_TERMINATED;

/* `kubectl get KIND [NAME] -o jsonpath=PATH` (@name "" for every object of @kind; a missing
 * object gives ""). Newly allocated. */
char *kb_test_kubectl_jsonpath(KbTestApiserver *api, const char *kind, const char *name,
                               const char *path);

/* Does @value (may be NULL) satisfy the condition @data stands for? */
typedef gboolean (*KbTestValueFunc)(const char *value, gconstpointer data);

/* Poll kb_test_kubectl_jsonpath() every 200 ms until @done(value, @data), at most @timeout_ms (a
 * liveness deadline for a loaded machine, never a speed check). Returns the last value, newly
 * allocated; when it never satisfied @done, the value is logged (the caller asserts). */
char *kb_test_kubectl_wait(KbTestApiserver *api, const char *kind, const char *name,
                           const char *path, KbTestValueFunc done, gconstpointer data,
                           guint timeout_ms);

/* KbTestValueFuncs: @value contains the string @part; @value holds GPOINTER_TO_UINT(@n) words. */
gboolean kb_test_value_contains(const char *value, gconstpointer part);
gboolean kb_test_value_n_words(const char *value, gconstpointer n);

/* Start bin/@name (kb_test_daemon_start()) with "--master URL-of-@api", then "--listen-address
 * 127.0.0.1:0" when @listen, then @extra (NULL-terminated, may be NULL), its output logged in
 * @log_dir/@name.log (@log_dir NULL: a temporary file). Failing to start fails the test. Returns
 * the daemon, owned by the caller (kb_test_daemon_free()). */
KbTestDaemon *kb_test_apiserver_spawn(KbTestApiserver *api, const char *name, gboolean listen,
                                      const char *const *extra, const char *log_dir);

/* The end of a test program that kept its daemons' logs in @log_dir: when @rc is 0 and
 * $KB_KEEP_LOGS is unset, removes @log_dir and all it holds; frees @log_dir in any case. Returns
 * @rc. */
int kb_test_log_dir_finish(char *log_dir, int rc);
