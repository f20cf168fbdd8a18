/* The shipped TFJob CRD's conversion webhook on a test's API server; see kb-test-tfwebhook.h. */
#include "tests/lib/kb-test-tfwebhook.h"

#include <stdlib.h>
#include <string.h>

#include "tests/lib/kb-test-pki.h"

#define PORT_LINE "serving the TFJob conversion webhook (HTTPS, /convert) on port "

struct KbTestTfWebhook {
    KbTestPki *pki;
    GPtrArray *args;
};

KbTestTfWebhook *kb_test_tfwebhook_new(void)
{
    KbTestTfWebhook *wh = g_new0(KbTestTfWebhook, 1);
    wh->pki = kb_test_pki_new();
    wh->args = g_ptr_array_new();
    return wh;
}

void kb_test_tfwebhook_free(KbTestTfWebhook *wh)
{
    if (wh == NULL)
        return;
    kb_test_pki_free(wh->pki);
    g_ptr_array_unref(wh->args);
    g_free(wh);
}

const char *const *kb_test_tfwebhook_args(KbTestTfWebhook *wh, const char *const *extra)
{
    g_ptr_array_set_size(wh->args, 0);
    g_ptr_array_add(wh->args, (gpointer) "--webhook-address");
    g_ptr_array_add(wh->args, (gpointer) "127.0.0.1:0");
    g_ptr_array_add(wh->args, (gpointer) "--webhook-cert-file");
    g_ptr_array_add(wh->args, (gpointer)kb_test_pki_path(wh->pki, "server.pem"));
    g_ptr_array_add(wh->args, (gpointer) "--webhook-key-file");
    g_ptr_array_add(wh->args, (gpointer)kb_test_pki_path(wh->pki, "server-key.pem"));
    for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
        g_ptr_array_add(wh->args, (gpointer)extra[i]);
    g_ptr_array_add(wh->args, NULL);
    return (const char *const *)wh->args->pdata;
}

void kb_test_tfwebhook_kubectl_api(gpointer data, const char *stdin_text, const char *const *args)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *out = NULL, *err = NULL;
    int status = -1;
    g_assert_true(kb_test_kubectl(data, args, stdin_text, &out, &err, &status, &error));
    g_assert_no_error(error);
    if (status != 0)
        g_test_message("kubectl %s: %s%s", args[0], out, err);
    g_assert_cmpint(status, ==, 0);
}

/* The webhook's port from @op's log, 0 when it does not say within 20 s. */
static guint webhook_port(KbTestDaemon *op)
{
    for (guint i = 0; i < 400; i++) {
        g_autofree char *log = kb_test_daemon_log(op);
        const char *at = strstr(log, PORT_LINE);
        if (at != NULL)
            return (guint)strtoul(at + strlen(PORT_LINE), NULL, 10);
        g_usleep(50 * 1000);
    }
    return 0;
}

void kb_test_tfwebhook_connect(KbTestTfWebhook *wh, KbTestDaemon *op, KbTestKubectlFn kubectl,
                               gpointer data)
{
    guint port = webhook_port(op);
    if (port == 0) {
        g_autofree char *log = kb_test_daemon_log(op);
        g_test_message("tf-operator does not serve its webhook:\n%s", log);
    }
    g_assert_cmpuint(port, >, 0);
    g_autofree char *objects = g_strdup_printf(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-batchd}\n---\n"
            "apiVersion: v1\nkind: Service\nmetadata: {name: tf-operator-webhook, namespace: "
            "kube-batchd}\nspec:\n  selector: {app: tf-operator}\n  ports:\n"
            "  - {name: webhook, port: 443, targetPort: webhook}\n---\n"
            "apiVersion: v1\nkind: Endpoints\nmetadata: {name: tf-operator-webhook, namespace: "
            "kube-batchd}\nsubsets:\n- addresses: [{ip: 127.0.0.1}]\n"
            "  ports: [{name: webhook, port: %u}]\n",
            port);
    const char *apply[] = {"apply", "-f", "-", NULL};
    kubectl(data, objects, apply);
    g_autofree char *pem = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(kb_test_pki_path(wh->pki, "ca.pem"), &pem, &len, NULL));
    g_autofree char *ca = g_base64_encode((const guchar *)pem, len);
    g_autofree char *patch = g_strdup_printf(
            "{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"caBundle\":\"%s\"}}}}}",
            ca);
    const char *p[] = {"patch", "crd", "tfjobs.kubeflow.org", "--type", "merge", "-p", patch, NULL};
    kubectl(data, NULL, p);
}
