/* An API server with TLS, tokens and RBAC for integration tests (see kb-test-cluster.h). */
#include "tests/lib/kb-test-cluster.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/lib/kb-test-daemon.h"

static const struct {
    const char *id, *user, *groups;
} identities[] = {
        {KB_TEST_ADMIN, "kb-admin", "system:masters"},
        {KB_TEST_SCHEDULER, "system:serviceaccount:kube-batchd:kube-batchd",
         "system:serviceaccounts,system:serviceaccounts:kube-batchd"},
        {KB_TEST_OPERATOR, "system:serviceaccount:kube-batchd:tf-operator",
         "system:serviceaccounts,system:serviceaccounts:kube-batchd"},
        {KB_TEST_NOBODY, "nobody", NULL},
};
#define N_IDS G_N_ELEMENTS(identities)

struct KbTestCluster {
    KbTestClusterServer server;
    char *name;
    char *dir;
    char *url;
    char *ca_file;
    char *tokens[N_IDS];
    char *kubeconfigs[N_IDS];
    KbTestDaemon *etcd;
    KbTestDaemon *apiserver;
};

static char *src_path(const char *rel)
{
    const char *s = g_getenv("KB_SRCDIR");
    g_autofree char *dir = g_canonicalize_filename(s != NULL ? s : ".", NULL);
    return g_build_filename(dir, rel, NULL);
}

static int id_index(const char *identity)
{
    for (guint i = 0; identity != NULL && i < N_IDS; i++)
        if (strcmp(identities[i].id, identity) == 0)
            return (int)i;
    return -1;
}

/* A TCP port nobody listens on right now (a real server needs a number up front). */
static guint free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    guint port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static char *k8s_program(const char *name)
{
    const char *bin = g_getenv("KB_K8S_BIN");
    if (bin != NULL && bin[0] != '\0') {
        char *p = g_build_filename(bin, name, NULL);
        if (g_file_test(p, G_FILE_TEST_IS_EXECUTABLE))
            return p;
        g_free(p);
    }
    return strcmp(name, "etcd") == 0 ? g_find_program_in_path(name) : NULL;
}

gboolean kb_test_cluster_real_available(char **why)
{
    const char *bin = g_getenv("KB_K8S_BIN");
    g_autofree char *kas = k8s_program("kube-apiserver");
    g_autofree char *etcd = k8s_program("etcd");
    if (bin == NULL || bin[0] == '\0')
        *why = g_strdup("KB_K8S_BIN is not set (a directory holding kube-apiserver)");
    else if (kas == NULL)
        *why = g_strdup_printf("no executable kube-apiserver in KB_K8S_BIN=%s", bin);
    else if (etcd == NULL)
        *why = g_strdup("etcd is neither on PATH nor in KB_K8S_BIN");
    else
        return TRUE;
    return FALSE;
}

/* ---- files -------------------------------------------------------------------------------------
 */

static gboolean write_tokens(KbTestCluster *c, GError **error)
{
    GString *csv = g_string_new(NULL);
    for (guint i = 0; i < N_IDS; i++) {
        c->tokens[i] = g_uuid_string_random();
        g_string_append_printf(csv, "%s,%s,uid-%s", c->tokens[i], identities[i].user,
                               identities[i].id);
        if (identities[i].groups != NULL)
            g_string_append_printf(csv, ",\"%s\"", identities[i].groups);
        g_string_append_c(csv, '\n');
    }
    g_autofree char *path = g_build_filename(c->dir, "tokens.csv", NULL);
    gboolean ok = g_file_set_contents(path, csv->str, (gssize)csv->len, error);
    g_string_free(csv, TRUE);
    return ok;
}

static gboolean write_kubeconfigs(KbTestCluster *c, GError **error)
{
    for (guint i = 0; i < N_IDS; i++) {
        g_autofree char *text = g_strdup_printf(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n"
                "    server: %s\n    certificate-authority: %s\nusers:\n- name: %s\n  user:\n"
                "    token: %s\ncontexts:\n- name: %s\n  context: {cluster: test, user: %s, "
                "namespace: default}\ncurrent-context: %s\n",
                c->url, c->ca_file, identities[i].id, c->tokens[i], identities[i].id,
                identities[i].id, identities[i].id);
        g_autofree char *name = g_strdup_printf("%s.kubeconfig", identities[i].id);
        c->kubeconfigs[i] = g_build_filename(c->dir, name, NULL);
        if (!g_file_set_contents(c->kubeconfigs[i], text, -1, error))
            return FALSE;
    }
    return TRUE;
}

/* ---- servers
 * ------------------------------------------------------------------------------------- */

static gboolean start_kas(KbTestCluster *c, const char *const *extra, GError **error)
{
    g_autofree char *cert = src_path("tests/data/tls/server.pem");
    g_autofree char *key = src_path("tests/data/tls/server-key.pem");
    g_autofree char *tokens = g_build_filename(c->dir, "tokens.csv", NULL);
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    const char *fixed[] = {"--listen",
                           "127.0.0.1:0",
                           "--tls-cert-file",
                           cert,
                           "--tls-private-key-file",
                           key,
                           "--token-auth-file",
                           tokens,
                           "--authorization-mode",
                           "RBAC"};
    for (guint i = 0; i < G_N_ELEMENTS(fixed); i++)
        g_ptr_array_add(args, (gpointer)fixed[i]);
    for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
        g_ptr_array_add(args, (gpointer)extra[i]);
    g_ptr_array_add(args, NULL);
    KbTestDaemonOptions opts = {.wrapper = g_getenv("KB_APISERVER_WRAPPER"),
                                .stdout_pipe = TRUE,
                                .log = TRUE,
                                .log_dir = c->dir};
    c->apiserver =
            kb_test_daemon_start("kb-apiserver", (const char *const *)args->pdata, &opts, error);
    if (c->apiserver == NULL)
        return FALSE;
    c->url = kb_test_daemon_wait_line(c->apiserver, "listening on ", 60000, error);
    c->name = g_strdup("kb-apiserver");
    return c->url != NULL;
}

/* "v1.19.0" from `kube-apiserver --version` ("Kubernetes v1.19.0"), newly allocated. */
static char *real_version(const char *kas)
{
    const char *argv[] = {kas, "--version", NULL};
    g_autofree char *out = NULL;
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL,
                      NULL, NULL))
        return g_strdup("unknown");
    const char *v = out != NULL ? strstr(out, "v1.") : NULL;
    return v != NULL ? g_strstrip(g_strdup(v)) : g_strdup("unknown");
}

static gboolean start_real(KbTestCluster *c, GError **error)
{
    g_autofree char *kas = k8s_program("kube-apiserver");
    g_autofree char *etcd = k8s_program("etcd");
    g_autofree char *cert = src_path("tests/data/tls/server.pem");
    g_autofree char *key = src_path("tests/data/tls/server-key.pem");
    g_autofree char *tokens = g_build_filename(c->dir, "tokens.csv", NULL);
    g_autofree char *data = g_build_filename(c->dir, "etcd-data", NULL);
    g_autofree char *version = real_version(kas);
    guint client = free_port(), peer = free_port(), secure = free_port();
    g_autofree char *curl = g_strdup_printf("http://127.0.0.1:%u", client);
    g_autofree char *purl = g_strdup_printf("http://127.0.0.1:%u", peer);
    g_autofree char *initial = g_strdup_printf("kb-test=%s", purl);
    const char *eargs[] = {"--name",
                           "kb-test",
                           "--data-dir",
                           data,
                           "--listen-client-urls",
                           curl,
                           "--advertise-client-urls",
                           curl,
                           "--listen-peer-urls",
                           purl,
                           "--initial-advertise-peer-urls",
                           purl,
                           "--initial-cluster",
                           initial,
                           NULL};
    KbTestDaemonOptions opts = {.log = TRUE, .log_dir = c->dir};
    c->etcd = kb_test_daemon_start(etcd, eargs, &opts, error);
    if (c->etcd == NULL)
        return FALSE;
    g_autofree char *port = g_strdup_printf("%u", secure);
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    const char *fixed[] = {"--etcd-servers", curl, "--bind-address", "127.0.0.1", "--secure-port",
                           port, "--tls-cert-file", cert, "--tls-private-key-file", key,
                           "--token-auth-file", tokens, "--authorization-mode", "Node,RBAC",
                           /* No controller manager creates the default ServiceAccounts; the
                            * recorded fixture ran the same way. */
                           "--disable-admission-plugins", "ServiceAccount",
                           /* The certificate: 1.20's key-file reader takes no PKCS#8 EC
                            * private key, and the public key is all it needs. */
                           "--service-account-key-file", cert, "--service-account-signing-key-file",
                           key, "--service-account-issuer", "https://kubernetes.default.svc",
                           "--service-cluster-ip-range", "10.96.0.0/16", "--cert-dir", c->dir};
    for (guint i = 0; i < G_N_ELEMENTS(fixed); i++)
        g_ptr_array_add(args, (gpointer)fixed[i]);
    /* Before 1.20 an insecure port listened on 8080 unless turned off (the flag is gone in
     * 1.24). */
    if (g_str_has_prefix(version, "v1.1"))
        g_ptr_array_add(args, (gpointer) "--insecure-port=0");
    g_ptr_array_add(args, NULL);
    c->apiserver = kb_test_daemon_start(kas, (const char *const *)args->pdata, &opts, error);
    if (c->apiserver == NULL)
        return FALSE;
    c->url = g_strdup_printf("https://127.0.0.1:%u", secure);
    c->name = g_strdup_printf("kube-apiserver %s", version);
    return TRUE;
}

/* Poll until the admin reads the default namespace (the bootstrap is done). */
static gboolean wait_ready(KbTestCluster *c, guint seconds, GError **error)
{
    gint64 until = g_get_monotonic_time() + (gint64)seconds * G_USEC_PER_SEC;
    guint status = 0;
    while (g_get_monotonic_time() < until) {
        if (!kb_test_daemon_running(c->apiserver))
            break;
        g_autofree char *b = kb_test_cluster_request(
                c, KB_TEST_ADMIN, "GET", "/api/v1/namespaces/default", NULL, NULL, &status, NULL);
        if (b != NULL && status == 200)
            return TRUE;
        g_usleep(200 * 1000);
    }
    g_autofree char *log = kb_test_cluster_log(c);
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                "%s at %s did not become ready (last status %u); log:\n%s", c->name, c->url, status,
                log);
    return FALSE;
}

KbTestCluster *kb_test_cluster_start(KbTestClusterServer server, const char *const *extra_args,
                                     GError **error)
{
    g_autoptr(KbTestCluster) c = g_new0(KbTestCluster, 1);
    c->server = server;
    c->dir = g_dir_make_tmp("kb-cluster-XXXXXX", error);
    if (c->dir == NULL)
        return NULL;
    c->ca_file = src_path("tests/data/tls/ca.pem");
    if (!write_tokens(c, error))
        return NULL;
    gboolean ok =
            server == KB_TEST_CLUSTER_REAL ? start_real(c, error) : start_kas(c, extra_args, error);
    if (!ok || !write_kubeconfigs(c, error))
        return NULL;
    if (!wait_ready(c, server == KB_TEST_CLUSTER_REAL ? 120 : 60, error))
        return NULL;
    return g_steal_pointer(&c);
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

void kb_test_cluster_free(KbTestCluster *c)
{
    if (c == NULL)
        return;
    if (c->apiserver != NULL)
        kb_test_daemon_stop(c->apiserver, 60000);
    g_clear_pointer(&c->apiserver, kb_test_daemon_free);
    if (c->etcd != NULL)
        kb_test_daemon_stop(c->etcd, 30000);
    g_clear_pointer(&c->etcd, kb_test_daemon_free);
    if (c->dir != NULL && g_getenv("KB_KEEP_LOGS") == NULL)
        remove_tree(c->dir);
    else if (c->dir != NULL)
        g_printerr("# %s: files kept in %s\n", c->name != NULL ? c->name : "cluster", c->dir);
    for (guint i = 0; i < N_IDS; i++) {
        g_free(c->tokens[i]);
        g_free(c->kubeconfigs[i]);
    }
    g_free(c->name);
    g_free(c->dir);
    g_free(c->url);
    g_free(c->ca_file);
    g_free(c);
}

int kb_test_cluster_stop(KbTestCluster *c)
{
    return c->apiserver != NULL ? kb_test_daemon_stop(c->apiserver, 60000) : -1;
}

KbTestClusterServer kb_test_cluster_server(KbTestCluster *c)
{
    return c->server;
}

const char *kb_test_cluster_name(KbTestCluster *c)
{
    return c->name;
}

const char *kb_test_cluster_url(KbTestCluster *c)
{
    return c->url;
}

const char *kb_test_cluster_dir(KbTestCluster *c)
{
    return c->dir;
}

const char *kb_test_cluster_kubeconfig(KbTestCluster *c, const char *identity)
{
    int i = id_index(identity);
    return i >= 0 ? c->kubeconfigs[i] : NULL;
}

const char *kb_test_cluster_token(KbTestCluster *c, const char *identity)
{
    int i = id_index(identity);
    return i >= 0 ? c->tokens[i] : NULL;
}

char *kb_test_cluster_log(KbTestCluster *c)
{
    return c->apiserver != NULL ? kb_test_daemon_log(c->apiserver) : g_strdup("");
}

/* ---- clients
 * ------------------------------------------------------------------------------------- */

gboolean kb_test_cluster_kubectl(KbTestCluster *c, const char *identity, const char *const *args,
                                 const char *stdin_text, char **out, char **err, int *status,
                                 GError **error)
{
    g_autofree char *cache = g_build_filename(c->dir, "kubectl-cache", NULL);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer) "kubectl");
    g_ptr_array_add(argv, (gpointer) "--kubeconfig");
    g_ptr_array_add(argv, (gpointer)kb_test_cluster_kubeconfig(c, identity));
    g_ptr_array_add(argv, (gpointer) "--cache-dir");
    g_ptr_array_add(argv, cache);
    g_ptr_array_add(argv, (gpointer) "--request-timeout=30s");
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add(argv, (gpointer)args[i]);
    g_ptr_array_add(argv, NULL);
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDIN_PIPE |
                                                                 G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                                 G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_subprocess_launcher_setenv(l, "HOME", c->dir, TRUE);
    g_subprocess_launcher_unsetenv(l, "KUBECONFIG");
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

char *kb_test_cluster_kubectl_valist(KbTestCluster *c, const char *identity, const char *stdin_text,
                                     int *status, const char *first, va_list ap)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    for (const char *a = first; a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(args, (gpointer)a);
    g_ptr_array_add(args, NULL);
    g_autoptr(GError) error = NULL;
    char *out = NULL;
    g_autofree char *err = NULL;
    int st = -1;
    g_assert_true(kb_test_cluster_kubectl(c, identity, (const char *const *)args->pdata, stdin_text,
                                          &out, &err, &st, &error));
    g_assert_no_error(error);
    if (st != 0)
        g_test_message("kubectl %s (as %s): exit %d: %s", first, identity, st, err);
    if (status != NULL)
        *status = st;
    return out;
}

static size_t collect(char *ptr, size_t size, size_t n, void *data)
{
    g_string_append_len(data, ptr, (gssize)(size * n));
    return size * n;
}

char *kb_test_cluster_request(KbTestCluster *c, const char *identity, const char *method,
                              const char *path, const char *content_type, const char *body,
                              guint *status, GError **error)
{
    CURL *h = curl_easy_init();
    g_autofree char *url = g_strdup_printf("%s%s", c->url, path);
    struct curl_slist *headers = NULL;
    const char *token = id_index(identity) >= 0 ? kb_test_cluster_token(c, identity) : identity;
    g_autofree char *auth =
            token != NULL ? g_strdup_printf("Authorization: Bearer %s", token) : NULL;
    g_autofree char *ct = g_strdup_printf("Content-Type: %s",
                                          content_type != NULL ? content_type : "application/json");
    if (auth != NULL)
        headers = curl_slist_append(headers, auth);
    headers = curl_slist_append(headers, ct);
    headers = curl_slist_append(headers, "Accept: application/json");
    GString *out = g_string_new(NULL);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (body != NULL) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    if (rc != CURLE_OK) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s %s: %s", method, url,
                    curl_easy_strerror(rc));
        g_string_free(out, TRUE);
        return NULL;
    }
    if (status != NULL)
        *status = (guint)code;
    return g_string_free(out, FALSE);
}

void kb_test_cluster_pids(KbTestCluster *c, const char **apiserver, const char **etcd)
{
    *apiserver = c->apiserver != NULL ? kb_test_daemon_pid(c->apiserver) : NULL;
    *etcd = c->etcd != NULL ? kb_test_daemon_pid(c->etcd) : NULL;
}
