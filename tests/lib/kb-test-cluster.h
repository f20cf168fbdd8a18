/*
 * An API server run the way a cluster runs it, for integration tests: HTTPS with the test CA
 * (tests/data/tls: ca.pem, server.pem for 127.0.0.1/localhost), static bearer tokens, RBAC, and
 * one kubeconfig file per identity (CA verified, token):
 *
 *   KB_TEST_ADMIN     user kb-admin in system:masters
 *   KB_TEST_SCHEDULER system:serviceaccount:kube-batchd:kube-batchd
 *   KB_TEST_OPERATOR  system:serviceaccount:kube-batchd:tf-operator
 *   KB_TEST_NOBODY    user nobody, bound to nothing
 *
 * The ServiceAccount lines of the token file list the groups system:serviceaccounts and
 * system:serviceaccounts:kube-batchd themselves, so a real kube-apiserver (whose static tokens
 * get no ServiceAccount groups) sees the same users as bin/kb-apiserver.
 *
 * Two servers: bin/kb-apiserver (--tls-cert-file, --tls-private-key-file, --token-auth-file,
 * --authorization-mode RBAC, plus the caller's arguments), or, when $KB_K8S_BIN names a
 * directory holding kube-apiserver and etcd is on PATH (or in $KB_K8S_BIN), a real
 * kube-apiserver on a private etcd with the same certificate, token file and
 * --authorization-mode Node,RBAC.
 *
 *   g_autoptr(KbTestCluster) c = kb_test_cluster_start(KB_TEST_CLUSTER_KAS, args, &error);
 *   kb_test_cluster_kubectl(c, KB_TEST_ADMIN, (const char *[]){"apply", "-f", f, NULL}, ...);
 *   ... --kubeconfig kb_test_cluster_kubeconfig(c, KB_TEST_SCHEDULER) ...
 */
#pragma once

#include <glib.h>

#define KB_TEST_ADMIN     "admin"
#define KB_TEST_SCHEDULER "kube-batchd"
#define KB_TEST_OPERATOR  "tf-operator"
#define KB_TEST_NOBODY    "nobody"

typedef enum {
    KB_TEST_CLUSTER_KAS,  /* bin/kb-apiserver */
    KB_TEST_CLUSTER_REAL, /* $KB_K8S_BIN/kube-apiserver with etcd */
} KbTestClusterServer;

typedef struct KbTestCluster KbTestCluster;

/* Can a real kube-apiserver be run? FALSE with *@why (newly allocated) saying what is missing. */
gboolean kb_test_cluster_real_available(char **why);

/* Start a server of kind @server; @extra_args (NULL-terminated, may be NULL) go to
 * bin/kb-apiserver only. Waits (at most 60 s, 120 s for a real server) until it serves the
 * admin. The files live in a temporary directory removed by kb_test_cluster_free(). */
KbTestCluster *kb_test_cluster_start(KbTestClusterServer server, const char *const *extra_args,
                                     GError **error);
void kb_test_cluster_free(KbTestCluster *c);
/* Stop the API server (SIGTERM, at most 60 s): its exit status as kb_test_daemon_stop() (0 for a
 * clean shutdown, -1 when already stopped). kb_test_cluster_free() is still needed. */
int kb_test_cluster_stop(KbTestCluster *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbTestCluster, kb_test_cluster_free)

KbTestClusterServer kb_test_cluster_server(KbTestCluster *c);
/* "kb-apiserver" or "kube-apiserver vX.Y.Z" (borrowed). */
const char *kb_test_cluster_name(KbTestCluster *c);
/* "https://127.0.0.1:PORT" (borrowed). */
const char *kb_test_cluster_url(KbTestCluster *c);
/* The temporary directory (logs, kubeconfigs, token file; borrowed). */
const char *kb_test_cluster_dir(KbTestCluster *c);
/* The kubeconfig file of @identity (one of KB_TEST_*; borrowed), NULL when unknown. */
const char *kb_test_cluster_kubeconfig(KbTestCluster *c, const char *identity);
/* The bearer token of @identity (borrowed), NULL when unknown. */
const char *kb_test_cluster_token(KbTestCluster *c, const char *identity);
/* The API server's log so far (newly allocated). */
char *kb_test_cluster_log(KbTestCluster *c);
/* The server's processes, for CPU accounting: kube-apiserver and etcd (a real cluster), or
 * kb-apiserver alone (*@etcd NULL). Borrowed. */
void kb_test_cluster_pids(KbTestCluster *c, const char **apiserver, const char **etcd);

/* `kubectl --kubeconfig <identity's> ARGS...` with a private cache directory; as
 * kb_test_kubectl() (kb-test-apiserver.h). */
gboolean kb_test_cluster_kubectl(KbTestCluster *c, const char *identity, const char *const *args,
                                 const char *stdin_text, char **out, char **err, int *status,
                                 GError **error);

/* `kubectl ARGS` as @identity through kb_test_cluster_kubectl(), ARGS being @first and the rest
 * of @ap (NULL-terminated). Returns standard output (newly allocated), the exit status in
 * *@status (may be NULL). Failing to run kubectl fails the test; a non-zero exit is only logged
 * with g_test_message(). For variadic wrappers in tests. */
char *kb_test_cluster_kubectl_valist(KbTestCluster *c, const char *identity, const char *stdin_text,
                                     int *status, const char *first, va_list ap);

/* One HTTPS request as @identity (NULL: no Authorization header; a string that is no identity
 * is sent as the bearer token itself) with the CA verified; @body
 * may be NULL. Returns the response body (newly allocated) and its status in *@status, or NULL
 * with @error when no HTTP answer came. */
char *kb_test_cluster_request(KbTestCluster *c, const char *identity, const char *method,
                              const char *path, const char *content_type, const char *body,
                              guint *status, GError **error);
