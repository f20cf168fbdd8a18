/* Connection configuration: kubeconfig, in-cluster, flags; see kb-client.h. */
#include "kube/kb-client.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <yaml.h>

#ifndef KB_VERSION
#define KB_VERSION "unknown"
#endif

#define DEFAULT_SA_DIR     "/var/run/secrets/kubernetes.io/serviceaccount"
#define DEFAULT_TIMEOUT_MS 30000

KbConfig *kb_config_new(const char *server)
{
    KbConfig *config = g_new0(KbConfig, 1);
    config->server = g_strdup(server);
    config->user_agent = g_strdup("kube-batchd/" KB_VERSION);
    config->timeout_ms = DEFAULT_TIMEOUT_MS;
    return config;
}

void kb_config_free(KbConfig *config)
{
    if (config == NULL)
        return;
    g_free(config->server);
    g_free(config->ca_file);
    g_clear_pointer(&config->ca_data, g_bytes_unref);
    g_free(config->cert_file);
    g_clear_pointer(&config->cert_data, g_bytes_unref);
    g_free(config->key_file);
    g_clear_pointer(&config->key_data, g_bytes_unref);
    g_free(config->token);
    g_free(config->token_file);
    g_free(config->user_agent);
    g_free(config);
}

static GBytes *bytes_ref0(GBytes *bytes)
{
    return bytes != NULL ? g_bytes_ref(bytes) : NULL;
}

KbConfig *kb_config_copy(const KbConfig *config)
{
    KbConfig *copy = g_new0(KbConfig, 1);
    *copy = *config;
    copy->server = g_strdup(config->server);
    copy->ca_file = g_strdup(config->ca_file);
    copy->ca_data = bytes_ref0(config->ca_data);
    copy->cert_file = g_strdup(config->cert_file);
    copy->cert_data = bytes_ref0(config->cert_data);
    copy->key_file = g_strdup(config->key_file);
    copy->key_data = bytes_ref0(config->key_data);
    copy->token = g_strdup(config->token);
    copy->token_file = g_strdup(config->token_file);
    copy->user_agent =
            g_strdup(config->user_agent != NULL ? config->user_agent : "kube-batchd/" KB_VERSION);
    if (copy->timeout_ms == 0)
        copy->timeout_ms = DEFAULT_TIMEOUT_MS;
    return copy;
}

/* ---- YAML helpers -------------------------------------------------------------------------- */

/* The scalar value of @node, or NULL when it is not a scalar (or holds a NUL byte). */
static const char *scalar(yaml_node_t *node)
{
    if (node == NULL || node->type != YAML_SCALAR_NODE)
        return NULL;
    const char *value = (const char *)node->data.scalar.value;
    return strlen(value) == node->data.scalar.length ? value : NULL;
}

/* The value of @key in mapping @node, or NULL. */
static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *node, const char *key)
{
    if (node == NULL || node->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(yaml_document_get_node(doc, p->key));
        if (k != NULL && strcmp(k, key) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

static const char *map_get_str(yaml_document_t *doc, yaml_node_t *node, const char *key)
{
    const char *value = scalar(map_get(doc, node, key));
    return value != NULL && *value != '\0' ? value : NULL;
}

/* In the list @list_key of the root ("clusters"), the @inner_key mapping ("cluster") of the
 * item named @name, or NULL. */
static yaml_node_t *find_named(yaml_document_t *doc, const char *list_key, const char *inner_key,
                               const char *name)
{
    yaml_node_t *list = map_get(doc, yaml_document_get_root_node(doc), list_key);
    if (list == NULL || list->type != YAML_SEQUENCE_NODE)
        return NULL;
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top;
         i++) {
        yaml_node_t *item = yaml_document_get_node(doc, *i);
        if (g_strcmp0(map_get_str(doc, item, "name"), name) == 0) {
            yaml_node_t *inner = map_get(doc, item, inner_key);
            return inner != NULL && inner->type == YAML_MAPPING_NODE ? inner : NULL;
        }
    }
    return NULL;
}

static gboolean parse_bool(const char *value, gboolean *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "on", NULL};
    static const char *const no[] = {"false", "False", "FALSE", "no", "off", NULL};
    if (value != NULL && g_strv_contains(yes, value))
        *out = TRUE;
    else if (value != NULL && g_strv_contains(no, value))
        *out = FALSE;
    else
        return FALSE;
    return TRUE;
}

/* Strict base64 (whitespace ignored): g_base64_decode() silently skips garbage. */
static GBytes *decode_base64(const char *what, const char *text, GError **error)
{
    g_autoptr(GString) clean = g_string_new(NULL);
    for (const char *p = text; *p != '\0'; p++) {
        if (g_ascii_isspace(*p))
            continue;
        if (!g_ascii_isalnum(*p) && *p != '+' && *p != '/' && *p != '=') {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "%s: invalid base64 character '%c'", what,
                        *p);
            return NULL;
        }
        if (clean->len > 0 && clean->str[clean->len - 1] == '=' && *p != '=') {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "%s: invalid base64 (data after '=')",
                        what);
            return NULL;
        }
        g_string_append_c(clean, *p);
    }
    if (clean->len == 0 || clean->len % 4 != 0 ||
        (clean->len >= 3 && clean->str[clean->len - 3] == '=')) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "%s: invalid base64 (length %zu)", what,
                    clean->len);
        return NULL;
    }
    gsize len = 0;
    guchar *data = g_base64_decode(clean->str, &len);
    return g_bytes_new_take(data, len);
}

static gboolean looks_like_pem(GBytes *bytes)
{
    gsize len;
    const char *data = g_bytes_get_data(bytes, &len);
    return g_strstr_len(data, len, "-----BEGIN ") != NULL;
}

/* @path made absolute against @base_dir; newly allocated. */
static char *resolve_path(const char *base_dir, const char *path)
{
    if (g_path_is_absolute(path))
        return g_strdup(path);
    return g_build_filename(base_dir, path, NULL);
}

/* The file field @file_key or the base64 field @data_key of @node, into @out_file/@out_data.
 * @what names the owner in messages ("user \"admin\""). */
static gboolean load_pem_pair(yaml_document_t *doc, yaml_node_t *node, const char *base_dir,
                              const char *what, const char *file_key, const char *data_key,
                              char **out_file, GBytes **out_data, GError **error)
{
    const char *data = map_get_str(doc, node, data_key);
    const char *file = map_get_str(doc, node, file_key);
    if (data != NULL) {
        g_autofree char *label = g_strdup_printf("%s: %s", what, data_key);
        g_autoptr(GBytes) bytes = decode_base64(label, data, error);
        if (bytes == NULL)
            return FALSE;
        if (!looks_like_pem(bytes)) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "%s: no PEM block in the decoded data",
                        label);
            return FALSE;
        }
        *out_data = g_steal_pointer(&bytes);
    } else if (file != NULL) {
        *out_file = resolve_path(base_dir, file);
        if (!g_file_test(*out_file, G_FILE_TEST_IS_REGULAR)) {
            g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "%s: %s \"%s\" is not a readable file",
                        what, file_key, *out_file);
            return FALSE;
        }
    }
    return TRUE;
}

/* ---- kubeconfig ---------------------------------------------------------------------------- */

static gboolean load_cluster(yaml_document_t *doc, yaml_node_t *cluster, const char *name,
                             const char *base_dir, KbConfig *config, GError **error)
{
    g_autofree char *what = g_strdup_printf("cluster \"%s\"", name);
    const char *server = map_get_str(doc, cluster, "server");
    const char *insecure = scalar(map_get(doc, cluster, "insecure-skip-tls-verify"));
    if (server == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "%s: no server", what);
        return FALSE;
    }
    if (!g_str_has_prefix(server, "https://") && !g_str_has_prefix(server, "http://")) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "%s: server \"%s\" is not an http:// or https:// URL", what, server);
        return FALSE;
    }
    config->server = g_strdup(server);
    if (insecure != NULL && !parse_bool(insecure, &config->insecure_skip_tls_verify)) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "%s: insecure-skip-tls-verify \"%s\" is not a boolean", what, insecure);
        return FALSE;
    }
    return load_pem_pair(doc, cluster, base_dir, what, "certificate-authority",
                         "certificate-authority-data", &config->ca_file, &config->ca_data, error);
}

static gboolean load_user(yaml_document_t *doc, yaml_node_t *user, const char *name,
                          const char *base_dir, KbConfig *config, GError **error)
{
    g_autofree char *what = g_strdup_printf("user \"%s\"", name);
    const char *token_file = map_get_str(doc, user, "tokenFile");
    if (!load_pem_pair(doc, user, base_dir, what, "client-certificate", "client-certificate-data",
                       &config->cert_file, &config->cert_data, error) ||
        !load_pem_pair(doc, user, base_dir, what, "client-key", "client-key-data",
                       &config->key_file, &config->key_data, error))
        return FALSE;
    gboolean has_cert = config->cert_file != NULL || config->cert_data != NULL;
    gboolean has_key = config->key_file != NULL || config->key_data != NULL;
    if (has_cert != has_key) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "%s: %s without %s", what,
                    has_cert ? "client-certificate" : "client-key",
                    has_cert ? "client-key" : "client-certificate");
        return FALSE;
    }
    config->token = g_strdup(map_get_str(doc, user, "token"));
    if (token_file != NULL)
        config->token_file = resolve_path(base_dir, token_file);
    if (map_get(doc, user, "exec") != NULL || map_get(doc, user, "auth-provider") != NULL)
        g_warning("kubeconfig %s: exec and auth-provider credentials are not supported; "
                  "using only the certificate and token fields",
                  what);
    return TRUE;
}

/* Read @path, refusing files over KB_KUBECONFIG_MAX_BYTES. */
static char *read_limited(const char *path, gsize *len, GError **error)
{
    GStatBuf st;
    char *data = NULL;
    if (g_stat(path, &st) != 0) {
        int err = errno;
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "kubeconfig %s: %s", path, g_strerror(err));
        return NULL;
    }
    if (st.st_size > KB_KUBECONFIG_MAX_BYTES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "kubeconfig %s: %lld bytes, over the limit of %d", path, (long long)st.st_size,
                    KB_KUBECONFIG_MAX_BYTES);
        return NULL;
    }
    g_autoptr(GError) local = NULL;
    if (!g_file_get_contents(path, &data, len, &local)) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "kubeconfig %s", local->message);
        return NULL;
    }
    if (*len > KB_KUBECONFIG_MAX_BYTES) { /* it grew since stat() */
        g_free(data);
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "kubeconfig %s: over the limit of %d bytes",
                    path, KB_KUBECONFIG_MAX_BYTES);
        return NULL;
    }
    return data;
}

static gboolean load_document(yaml_document_t *doc, const char *path, const char *text, gsize len,
                              GError **error)
{
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    gboolean ok = yaml_parser_load(&parser, doc) != 0;
    if (!ok)
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "kubeconfig %s: invalid YAML at line %zu: %s",
                    path, parser.problem_mark.line + 1,
                    parser.problem != NULL ? parser.problem : "parse error");
    yaml_parser_delete(&parser);
    if (!ok)
        return FALSE;
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (root == NULL || root->type != YAML_MAPPING_NODE) {
        yaml_document_delete(doc);
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "kubeconfig %s: not a YAML mapping", path);
        return FALSE;
    }
    return TRUE;
}

static KbConfig *config_from_document(yaml_document_t *doc, const char *base_dir,
                                      const char *context, GError **error)
{
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (context == NULL)
        context = map_get_str(doc, root, "current-context");
    if (context == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "no context given and current-context is not set");
        return NULL;
    }
    yaml_node_t *ctx = find_named(doc, "contexts", "context", context);
    if (ctx == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "context \"%s\" not found", context);
        return NULL;
    }
    const char *cluster_name = map_get_str(doc, ctx, "cluster");
    const char *user_name = map_get_str(doc, ctx, "user");
    if (cluster_name == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "context \"%s\": no cluster", context);
        return NULL;
    }
    yaml_node_t *cluster = find_named(doc, "clusters", "cluster", cluster_name);
    if (cluster == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "context \"%s\": cluster \"%s\" not found",
                    context, cluster_name);
        return NULL;
    }
    yaml_node_t *user = user_name != NULL ? find_named(doc, "users", "user", user_name) : NULL;
    if (user_name != NULL && user == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "context \"%s\": user \"%s\" not found",
                    context, user_name);
        return NULL;
    }

    g_autoptr(KbConfig) config = kb_config_new(NULL);
    g_clear_pointer(&config->server, g_free);
    if (!load_cluster(doc, cluster, cluster_name, base_dir, config, error) ||
        (user != NULL && !load_user(doc, user, user_name, base_dir, config, error))) {
        g_prefix_error(error, "context \"%s\": ", context);
        return NULL;
    }
    return g_steal_pointer(&config);
}

KbConfig *kb_config_load_kubeconfig(const char *path, const char *context, GError **error)
{
    gsize len = 0;
    g_autofree char *text = read_limited(path, &len, error);
    if (text == NULL)
        return NULL;
    yaml_document_t doc;
    if (!load_document(&doc, path, text, len, error))
        return NULL;
    g_autofree char *abs = g_canonicalize_filename(path, NULL);
    g_autofree char *base_dir = g_path_get_dirname(abs);
    KbConfig *config = config_from_document(&doc, base_dir, context, error);
    yaml_document_delete(&doc);
    if (config == NULL)
        g_prefix_error(error, "kubeconfig %s: ", path);
    return config;
}

char *kb_config_kubeconfig_namespace(const char *path, const char *context, GError **error)
{
    gsize len = 0;
    g_autofree char *text = read_limited(path, &len, error);
    if (text == NULL)
        return NULL;
    yaml_document_t doc;
    if (!load_document(&doc, path, text, len, error))
        return NULL;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (context == NULL)
        context = map_get_str(&doc, root, "current-context");
    yaml_node_t *ctx = context != NULL ? find_named(&doc, "contexts", "context", context) : NULL;
    char *ns = g_strdup(map_get_str(&doc, ctx, "namespace"));
    yaml_document_delete(&doc);
    return ns;
}

/* ---- in-cluster and flags ------------------------------------------------------------------ */

KbConfig *kb_config_in_cluster(const char *sa_dir, GError **error)
{
    const char *host = g_getenv("KUBERNETES_SERVICE_HOST");
    const char *port = g_getenv("KUBERNETES_SERVICE_PORT");
    if (sa_dir == NULL)
        sa_dir = DEFAULT_SA_DIR;
    if (host == NULL || *host == '\0' || port == NULL || *port == '\0') {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "not in a cluster: KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT unset");
        return NULL;
    }
    g_autofree char *token_file = g_build_filename(sa_dir, "token", NULL);
    g_autofree char *ca_file = g_build_filename(sa_dir, "ca.crt", NULL);
    g_autofree char *token = NULL;
    g_autoptr(GError) local = NULL;
    if (!g_file_get_contents(token_file, &token, NULL, &local)) {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG, "in-cluster: service-account token: %s",
                    local->message);
        return NULL;
    }
    /* An IPv6 service address needs brackets in the URL. */
    gboolean v6 = strchr(host, ':') != NULL;
    g_autofree char *server =
            g_strdup_printf("https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    KbConfig *config = kb_config_new(server);
    config->token = g_strdup(g_strstrip(token));
    config->token_file = g_steal_pointer(&token_file);
    if (g_file_test(ca_file, G_FILE_TEST_IS_REGULAR))
        config->ca_file = g_steal_pointer(&ca_file);
    else
        g_warning("in-cluster: no %s; verifying the API server against the system CAs", ca_file);
    return config;
}

KbConfig *kb_config_from_flags(const char *kubeconfig, const char *master, GError **error)
{
    const char *env = g_getenv("KUBECONFIG");
    g_autofree char *env_first = NULL;
    if (kubeconfig != NULL && *kubeconfig == '\0')
        kubeconfig = NULL;
    if (master != NULL && *master == '\0')
        master = NULL;
    if (kubeconfig == NULL && master == NULL && env != NULL && *env != '\0') {
        /* $KUBECONFIG may be a list; merging is not supported, the first file is used. */
        g_auto(GStrv) parts = g_strsplit(env, G_SEARCHPATH_SEPARATOR_S, 2);
        env_first = g_strdup(parts[0]);
        kubeconfig = env_first;
    }
    if (kubeconfig != NULL) {
        KbConfig *config = kb_config_load_kubeconfig(kubeconfig, NULL, error);
        if (config != NULL && master != NULL) {
            g_free(config->server);
            config->server = g_strdup(master);
        }
        return config;
    }
    if (master != NULL)
        return kb_config_new(master);

    g_autoptr(GError) in_cluster_error = NULL;
    KbConfig *config = kb_config_in_cluster(NULL, &in_cluster_error);
    if (config != NULL)
        return config;
    g_autofree char *home = g_build_filename(g_get_home_dir(), ".kube", "config", NULL);
    if (g_file_test(home, G_FILE_TEST_EXISTS))
        return kb_config_load_kubeconfig(home, NULL, error);
    g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                "no API server configuration: no --kubeconfig or --master, $KUBECONFIG unset, "
                "%s, and %s does not exist",
                in_cluster_error->message, home);
    return NULL;
}
