/*
 * Where kbctl connects, as kubectl decides it: --kubeconfig, else the first file of $KUBECONFIG,
 * else ~/.kube/config when it exists (--context picks the context, --server, --token and
 * --certificate-authority override what it says); with none of them, --server alone; else the
 * in-cluster service account. --server without a kubeconfig file named by flag or environment
 * does not read ~/.kube/config, so that `kbctl --server URL` means exactly that server.
 */
#include "cli/kbctl.h"

#include <string.h>

#ifndef KB_VERSION
#define KB_VERSION "unknown"
#endif

#define SA_NAMESPACE_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

/* The kubeconfig file to read (newly allocated), or NULL. */
static char *kubeconfig_path(Kbctl *k)
{
    const char *flag = kbctl_args_str(k->args, "kubeconfig");
    const char *env = g_getenv("KUBECONFIG");
    if (flag != NULL && *flag != '\0')
        return g_strdup(flag);
    if (env != NULL && *env != '\0') {
        /* $KUBECONFIG may be a list; kbctl reads the first file, as kube-batchd does. */
        g_auto(GStrv) parts = g_strsplit(env, G_SEARCHPATH_SEPARATOR_S, 2);
        return g_strdup(parts[0]);
    }
    if (kbctl_args_str(k->args, "server") != NULL)
        return NULL;
    g_autofree char *home = g_build_filename(g_get_home_dir(), ".kube", "config", NULL);
    return g_file_test(home, G_FILE_TEST_EXISTS) ? g_steal_pointer(&home) : NULL;
}

static KbConfig *load_config(Kbctl *k, GError **error)
{
    g_autofree char *path = kubeconfig_path(k);
    const char *server = kbctl_args_str(k->args, "server");
    const char *context = kbctl_args_str(k->args, "context");
    g_autoptr(KbConfig) config = NULL;
    if (path != NULL) {
        config = kb_config_load_kubeconfig(path, context, error);
        if (config == NULL)
            return NULL;
    } else if (context != NULL) {
        g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED,
                    "--context %s: no kubeconfig (no --kubeconfig, $KUBECONFIG unset, "
                    "~/.kube/config does not exist)",
                    context);
        return NULL;
    } else if (server == NULL) {
        g_autoptr(GError) local = NULL;
        config = kb_config_in_cluster(NULL, &local);
        if (config == NULL) {
            g_set_error(error, KBCTL_ERROR, KBCTL_ERROR_FAILED,
                        "no API server configured: no --kubeconfig or --server, $KUBECONFIG "
                        "unset, ~/.kube/config does not exist, and %s",
                        local->message);
            return NULL;
        }
    } else {
        config = kb_config_new(server);
    }
    if (server != NULL) {
        g_free(config->server);
        config->server = g_strdup(server);
    }
    const char *token = kbctl_args_str(k->args, "token");
    if (token != NULL) {
        g_free(config->token);
        g_clear_pointer(&config->token_file, g_free);
        config->token = g_strdup(token);
    }
    const char *ca = kbctl_args_str(k->args, "certificate-authority");
    if (ca != NULL) {
        g_clear_pointer(&config->ca_data, g_bytes_unref);
        g_free(config->ca_file);
        config->ca_file = g_strdup(ca);
    }
    if (kbctl_args_bool(k->args, "insecure-skip-tls-verify"))
        config->insecure_skip_tls_verify = TRUE;
    g_free(config->user_agent);
    config->user_agent = g_strdup("kbctl/" KB_VERSION);
    config->compression = TRUE; /* as kubectl: it may run far from the cluster */
    return g_steal_pointer(&config);
}

KbClient *kbctl_client(Kbctl *k, GError **error)
{
    if (k->client != NULL)
        return k->client;
    g_autoptr(KbConfig) config = load_config(k, error);
    if (config == NULL)
        return NULL;
    k->client = kb_client_new(config, error);
    return k->client;
}

const char *kbctl_namespace(Kbctl *k)
{
    if (k->namespace_ != NULL)
        return k->namespace_;
    const char *flag = kbctl_args_str(k->args, "namespace");
    if (flag != NULL && *flag != '\0') {
        k->namespace_ = g_strdup(flag);
        return k->namespace_;
    }
    g_autofree char *path = kubeconfig_path(k);
    if (path != NULL)
        k->namespace_ =
                kb_config_kubeconfig_namespace(path, kbctl_args_str(k->args, "context"), NULL);
    if (k->namespace_ == NULL && path == NULL && kbctl_args_str(k->args, "server") == NULL &&
        g_file_get_contents(SA_NAMESPACE_FILE, &k->namespace_, NULL, NULL))
        g_strstrip(k->namespace_);
    if (k->namespace_ == NULL || *k->namespace_ == '\0') {
        g_free(k->namespace_);
        k->namespace_ = g_strdup("default");
    }
    return k->namespace_;
}
