/* Connection configuration: kubeconfig parsing, in-cluster, and the --kubeconfig/--master
 * precedence. */
#include <glib/gstdio.h>
#include <string.h>

#include "kube/kb-client.h"

typedef struct {
    char *dir;
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer data)
{
    f->dir = g_dir_make_tmp("kb-config-XXXXXX", NULL);
    g_assert_nonnull(f->dir);
}

static void remove_tree(const char *path)
{
    GDir *dir = g_dir_open(path, 0, NULL);
    if (dir != NULL) {
        const char *name;
        while ((name = g_dir_read_name(dir)) != NULL) {
            g_autofree char *child = g_build_filename(path, name, NULL);
            remove_tree(child);
        }
        g_dir_close(dir);
        g_rmdir(path);
    } else {
        g_unlink(path);
    }
}

static void fixture_teardown(Fixture *f, gconstpointer data)
{
    remove_tree(f->dir);
    g_free(f->dir);
}

/* Write @text to @name under the fixture directory; returns the path. */
static char *write_file(Fixture *f, const char *name, const char *text)
{
    char *path = g_build_filename(f->dir, name, NULL);
    g_autofree char *parent = g_path_get_dirname(path);
    g_mkdir_with_parents(parent, 0700);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

static const char PEM[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

static char *b64(const char *text)
{
    return g_base64_encode((const guchar *)text, strlen(text));
}

/* A kubeconfig with two contexts; @user_extra and @cluster_extra are indented YAML lines. */
static char *kubeconfig(const char *cluster_extra, const char *user_extra)
{
    return g_strdup_printf("apiVersion: v1\n"
                           "kind: Config\n"
                           "current-context: prod\n"
                           "clusters:\n"
                           "- name: prod-cluster\n"
                           "  cluster:\n"
                           "    server: https://10.0.0.1:6443\n"
                           "%s"
                           "- name: dev-cluster\n"
                           "  cluster:\n"
                           "    server: http://127.0.0.1:8001\n"
                           "contexts:\n"
                           "- name: prod\n"
                           "  context:\n"
                           "    cluster: prod-cluster\n"
                           "    user: admin\n"
                           "    namespace: ml\n"
                           "- name: dev\n"
                           "  context: {cluster: dev-cluster}\n"
                           "users:\n"
                           "- name: admin\n"
                           "  user:\n"
                           "    token: s3cr3t\n"
                           "%s",
                           cluster_extra, user_extra);
}

static KbConfig *load_text(Fixture *f, const char *text, const char *context, GError **error)
{
    g_autofree char *path = write_file(f, "kubeconfig", text);
    return kb_config_load_kubeconfig(path, context, error);
}

/* ---- kubeconfig ---------------------------------------------------------------------------- */

static void test_current_context(Fixture *f, gconstpointer data)
{
    g_autofree char *text = kubeconfig("", "");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = load_text(f, text, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(config->server, ==, "https://10.0.0.1:6443");
    g_assert_cmpstr(config->token, ==, "s3cr3t");
    g_assert_false(config->insecure_skip_tls_verify);
    g_assert_null(config->ca_file);
    g_assert_null(config->ca_data);
    g_assert_cmpuint(config->timeout_ms, ==, 30000);
    g_assert_true(g_str_has_prefix(config->user_agent, "kube-batchd/"));
}

static void test_explicit_context(Fixture *f, gconstpointer data)
{
    g_autofree char *text = kubeconfig("", "");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = load_text(f, text, "dev", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(config->server, ==, "http://127.0.0.1:8001");
    g_assert_null(config->token); /* the dev context has no user */
}

static void test_ca_data(Fixture *f, gconstpointer data)
{
    g_autofree char *ca = b64(PEM);
    g_autofree char *extra = g_strdup_printf("    certificate-authority-data: %s\n", ca);
    g_autofree char *text = kubeconfig(extra, "");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = load_text(f, text, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(config->ca_data);
    g_assert_cmpmem(g_bytes_get_data(config->ca_data, NULL), g_bytes_get_size(config->ca_data), PEM,
                    strlen(PEM));
    g_assert_null(config->ca_file);
}

static void test_relative_paths(Fixture *f, gconstpointer data)
{
    g_autofree char *ca = write_file(f, "sub/pki/ca.crt", PEM);
    g_autofree char *cert = write_file(f, "sub/pki/client.crt", PEM);
    g_autofree char *key = write_file(f, "sub/pki/client.key", "-----BEGIN PRIVATE KEY-----\n");
    g_autofree char *token = write_file(f, "sub/token", "t0k3n\n");
    g_autofree char *text = kubeconfig("    certificate-authority: pki/ca.crt\n",
                                       "    client-certificate: pki/client.crt\n"
                                       "    client-key: pki/client.key\n"
                                       "    tokenFile: token\n");
    g_autofree char *path = write_file(f, "sub/kubeconfig", text);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = kb_config_load_kubeconfig(path, NULL, &error);
    g_assert_no_error(error);
    /* Resolved against the kubeconfig's directory, not the working directory. */
    g_assert_cmpstr(config->ca_file, ==, ca);
    g_assert_cmpstr(config->cert_file, ==, cert);
    g_assert_cmpstr(config->key_file, ==, key);
    g_assert_cmpstr(config->token_file, ==, token);
}

static void test_client_cert_data(Fixture *f, gconstpointer data)
{
    g_autofree char *cert = b64(PEM);
    g_autofree char *key = b64("-----BEGIN EC PRIVATE KEY-----\nAAAA\n");
    g_autofree char *extra = g_strdup_printf("    client-certificate-data: %s\n"
                                             "    client-key-data: %s\n",
                                             cert, key);
    g_autofree char *text = kubeconfig("", extra);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = load_text(f, text, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(config->cert_data);
    g_assert_nonnull(config->key_data);
    g_assert_cmpuint(g_bytes_get_size(config->cert_data), ==, strlen(PEM));
}

static void test_insecure(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *yes = kubeconfig("    insecure-skip-tls-verify: true\n", "");
    g_autoptr(KbConfig) config = load_text(f, yes, NULL, &error);
    g_assert_no_error(error);
    g_assert_true(config->insecure_skip_tls_verify);
    g_autofree char *no = kubeconfig("    insecure-skip-tls-verify: false\n", "");
    g_autoptr(KbConfig) config2 = load_text(f, no, NULL, &error);
    g_assert_no_error(error);
    g_assert_false(config2->insecure_skip_tls_verify);
    g_autofree char *bad = kubeconfig("    insecure-skip-tls-verify: maybe\n", "");
    g_assert_null(load_text(f, bad, NULL, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, "insecure-skip-tls-verify"));
    g_assert_nonnull(strstr(error->message, "maybe"));
}

/* Each broken kubeconfig fails with an error naming what is wrong. */
static void test_errors(Fixture *f, gconstpointer data)
{
    g_autofree char *pem64 = b64(PEM);
    g_autofree char *not_pem = b64("hello world");
    g_autofree char *ca_not_pem = g_strdup_printf("    certificate-authority-data: %s\n", not_pem);
    g_autofree char *cert_only = g_strdup_printf("    client-certificate-data: %s\n", pem64);
    const struct {
        const char *cluster_extra, *user_extra, *context;
        const char *want[3];
    } cases[] = {
            {"    certificate-authority-data: bm90!YmFzZTY0\n",
             "",
             NULL,
             {"cluster \"prod-cluster\"", "certificate-authority-data", "base64"}},
            {"    certificate-authority-data: YWJj\n    other: x\n",
             "",
             NULL,
             {"certificate-authority-data", "PEM", "context \"prod\""}},
            {"    certificate-authority-data: YWJjZA=\n",
             "",
             NULL,
             {"certificate-authority-data", "base64", NULL}},
            {ca_not_pem, "", NULL, {"no PEM block", NULL, NULL}},
            {"",
             "    client-certificate-data: 'ab%c'\n",
             NULL,
             {"user \"admin\"", "client-certificate-data", "base64"}},
            {"",
             cert_only,
             NULL,
             {"user \"admin\"", "client-certificate without client-key", NULL}},
            {"    certificate-authority: does/not/exist.crt\n",
             "",
             NULL,
             {"certificate-authority", "does/not/exist.crt", NULL}},
            {"", "", "staging", {"context \"staging\" not found", NULL, NULL}},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *text = kubeconfig(cases[i].cluster_extra, cases[i].user_extra);
        g_autoptr(KbConfig) config = load_text(f, text, cases[i].context, &error);
        g_assert_null(config);
        g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
        g_assert_nonnull(strstr(error->message, "kubeconfig "));
        g_test_message("%s", error->message);
        for (guint j = 0; j < 3 && cases[i].want[j] != NULL; j++)
            if (strstr(error->message, cases[i].want[j]) == NULL)
                g_error("case %u: \"%s\" not in \"%s\"", i, cases[i].want[j], error->message);
    }
}

static void test_missing_references(Fixture *f, gconstpointer data)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
            {"contexts:\n- name: a\n  context: {cluster: nope, user: u}\n"
             "current-context: a\nclusters: []\n",
             "context \"a\": cluster \"nope\" not found"},
            {"contexts:\n- name: a\n  context: {cluster: c, user: ghost}\ncurrent-context: a\n"
             "clusters:\n- name: c\n  cluster: {server: 'https://x'}\n",
             "context \"a\": user \"ghost\" not found"},
            {"contexts:\n- name: a\n  context: {user: u}\ncurrent-context: a\n",
             "context \"a\": no cluster"},
            {"contexts:\n- name: a\n  context: {cluster: c}\ncurrent-context: a\n"
             "clusters:\n- name: c\n  cluster: {certificate-authority-data: ''}\n",
             "cluster \"c\": no server"},
            {"contexts:\n- name: a\n  context: {cluster: c}\ncurrent-context: a\n"
             "clusters:\n- name: c\n  cluster: {server: 'ftp://x'}\n",
             "server \"ftp://x\""},
            {"apiVersion: v1\nclusters: []\n", "current-context is not set"},
            {"- just\n- a list\n", "not a YAML mapping"},
            {"", "not a YAML mapping"},
            {"clusters: [\n  {name: a\n", "invalid YAML at line"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(KbConfig) config = load_text(f, cases[i].text, NULL, &error);
        g_assert_null(config);
        g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
        g_test_message("%s", error->message);
        if (strstr(error->message, cases[i].want) == NULL)
            g_error("case %u: \"%s\" not in \"%s\"", i, cases[i].want, error->message);
    }
}

static void test_missing_file(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(f->dir, "nope", NULL);
    g_assert_null(kb_config_load_kubeconfig(path, NULL, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, path));
}

static void test_size_limit(Fixture *f, gconstpointer data)
{
    g_autofree char *base = kubeconfig("", "");
    /* Pad with a YAML comment to exactly the limit, then one byte more. */
    for (gsize extra = 0; extra <= 1; extra++) {
        g_autoptr(GError) error = NULL;
        gsize pad = KB_KUBECONFIG_MAX_BYTES - strlen(base) - 2 + extra;
        g_autofree char *comment = g_strnfill(pad, 'x');
        g_autofree char *text = g_strdup_printf("%s#%s\n", base, comment);
        g_assert_cmpuint(strlen(text), ==, KB_KUBECONFIG_MAX_BYTES + extra);
        g_autoptr(KbConfig) config = load_text(f, text, NULL, &error);
        if (extra == 0) {
            g_assert_no_error(error);
            g_assert_nonnull(config);
        } else {
            g_assert_null(config);
            g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
            g_assert_nonnull(strstr(error->message, "kubeconfig"));
        }
    }
}

static void test_json_kubeconfig(Fixture *f, gconstpointer data)
{
    /* kubectl accepts JSON kubeconfigs; YAML is a superset. */
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConfig) config = load_text(
            f,
            "{\"current-context\":\"c\",\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":"
            "\"k\",\"user\":\"u\"}}],\"clusters\":[{\"name\":\"k\",\"cluster\":{\"server\":"
            "\"https://k:6443\",\"insecure-skip-tls-verify\":true}}],\"users\":[{\"name\":\"u\","
            "\"user\":{\"token\":\"t\"}}]}",
            NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(config->server, ==, "https://k:6443");
    g_assert_true(config->insecure_skip_tls_verify);
    g_assert_cmpstr(config->token, ==, "t");
}

static void test_copy(Fixture *f, gconstpointer data)
{
    g_autofree char *ca = b64(PEM);
    g_autofree char *extra = g_strdup_printf("    certificate-authority-data: %s\n", ca);
    g_autofree char *text = kubeconfig(extra, "    tokenFile: /var/token\n");
    g_autoptr(KbConfig) config = load_text(f, text, NULL, NULL);
    g_assert_nonnull(config);
    g_autoptr(KbConfig) copy = kb_config_copy(config);
    g_assert_true(copy->server != config->server);
    g_assert_cmpstr(copy->server, ==, config->server);
    g_assert_cmpstr(copy->token_file, ==, "/var/token");
    g_assert_true(g_bytes_equal(copy->ca_data, config->ca_data));
    KbConfig bare = {.server = (char *)"http://x"};
    g_autoptr(KbConfig) filled = kb_config_copy(&bare);
    g_assert_cmpuint(filled->timeout_ms, ==, 30000);
    g_assert_nonnull(filled->user_agent);
}

/* ---- in-cluster and flags ------------------------------------------------------------------ */

static void set_service_env(const char *host, const char *port)
{
    if (host != NULL)
        g_setenv("KUBERNETES_SERVICE_HOST", host, TRUE);
    else
        g_unsetenv("KUBERNETES_SERVICE_HOST");
    if (port != NULL)
        g_setenv("KUBERNETES_SERVICE_PORT", port, TRUE);
    else
        g_unsetenv("KUBERNETES_SERVICE_PORT");
}

static void test_in_cluster(Fixture *f, gconstpointer data)
{
    g_autofree char *token = write_file(f, "sa/token", "eyJhbGciOi\n");
    g_autofree char *ca = write_file(f, "sa/ca.crt", PEM);
    g_autofree char *sa = g_build_filename(f->dir, "sa", NULL);
    g_autoptr(GError) error = NULL;
    set_service_env("10.96.0.1", "443");
    g_autoptr(KbConfig) config = kb_config_in_cluster(sa, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(config->server, ==, "https://10.96.0.1:443");
    g_assert_cmpstr(config->token, ==, "eyJhbGciOi");
    g_assert_cmpstr(config->token_file, ==, token);
    g_assert_cmpstr(config->ca_file, ==, ca);

    set_service_env("fd00::1", "6443");
    g_autoptr(KbConfig) v6 = kb_config_in_cluster(sa, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(v6->server, ==, "https://[fd00::1]:6443");

    set_service_env(NULL, "443");
    g_assert_null(kb_config_in_cluster(sa, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, "KUBERNETES_SERVICE_HOST"));
    g_clear_error(&error);

    set_service_env("10.96.0.1", "443");
    g_unlink(token);
    g_assert_null(kb_config_in_cluster(sa, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, "token"));
    set_service_env(NULL, NULL);
}

static void test_flags(Fixture *f, gconstpointer data)
{
    g_autofree char *text = kubeconfig("", "");
    g_autofree char *path = write_file(f, "kubeconfig", text);
    g_autofree char *other_text = kubeconfig("", "");
    g_autofree char *env_path = write_file(f, "env-kubeconfig", other_text);
    g_autoptr(GError) error = NULL;
    g_autofree char *home = g_build_filename(f->dir, "home", NULL);
    g_mkdir_with_parents(home, 0700);
    g_setenv("HOME", home, TRUE);
    set_service_env(NULL, NULL);
    g_unsetenv("KUBECONFIG");

    /* --master alone: a plain config. */
    g_autoptr(KbConfig) master = kb_config_from_flags(NULL, "http://127.0.0.1:8080", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(master->server, ==, "http://127.0.0.1:8080");
    g_assert_null(master->token);

    /* --kubeconfig, with --master overriding its server but keeping its credentials. */
    g_autoptr(KbConfig) both = kb_config_from_flags(path, "https://lb:443", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(both->server, ==, "https://lb:443");
    g_assert_cmpstr(both->token, ==, "s3cr3t");

    /* $KUBECONFIG (a list: the first file) when no flag is given. */
    g_autofree char *list = g_strdup_printf("%s:%s", env_path, path);
    g_setenv("KUBECONFIG", list, TRUE);
    g_autoptr(KbConfig) env = kb_config_from_flags("", NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(env->server, ==, "https://10.0.0.1:6443");
    g_unsetenv("KUBECONFIG");

    /* Nothing at all: the error names every source tried. */
    g_assert_null(kb_config_from_flags(NULL, NULL, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, "KUBERNETES_SERVICE_HOST"));
    g_assert_nonnull(strstr(error->message, ".kube/config"));
    g_assert_nonnull(strstr(error->message, "KUBECONFIG"));
    g_clear_error(&error);

    /* ~/.kube/config as the last resort. */
    g_autofree char *home_config = write_file(f, "home/.kube/config", text);
    g_autoptr(KbConfig) from_home = kb_config_from_flags(NULL, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(from_home->server, ==, "https://10.0.0.1:6443");

    /* In a pod whose service-account token is not mounted (the default directory does not
     * exist here), in-cluster fails and ~/.kube/config is used, as client-go does. */
    set_service_env("10.96.0.1", "443");
    g_autoptr(KbConfig) in_cluster = kb_config_from_flags(NULL, NULL, &error);
    set_service_env(NULL, NULL);
    g_assert_no_error(error);
    g_assert_cmpstr(in_cluster->server, ==, "https://10.0.0.1:6443");

    /* A broken --kubeconfig is an error, not a silent fallback. */
    g_autofree char *missing = g_build_filename(f->dir, "missing", NULL);
    g_assert_null(kb_config_from_flags(missing, NULL, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
#define ADD(path, fn) g_test_add(path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
    ADD("/kube/config/kubeconfig/current-context", test_current_context);
    ADD("/kube/config/kubeconfig/explicit-context", test_explicit_context);
    ADD("/kube/config/kubeconfig/ca-data", test_ca_data);
    ADD("/kube/config/kubeconfig/relative-paths", test_relative_paths);
    ADD("/kube/config/kubeconfig/client-cert-data", test_client_cert_data);
    ADD("/kube/config/kubeconfig/insecure-flag", test_insecure);
    ADD("/kube/config/kubeconfig/field-errors", test_errors);
    ADD("/kube/config/kubeconfig/missing-references", test_missing_references);
    ADD("/kube/config/kubeconfig/missing-file", test_missing_file);
    ADD("/kube/config/kubeconfig/size-limit", test_size_limit);
    ADD("/kube/config/kubeconfig/json", test_json_kubeconfig);
    ADD("/kube/config/copy", test_copy);
    ADD("/kube/config/in-cluster", test_in_cluster);
    ADD("/kube/config/flags/precedence", test_flags);
#undef ADD
    return g_test_run();
}
