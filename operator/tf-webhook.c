/*
 * The conversion webhook's HTTP side (see tf-webhook.h); the conversion is kube/kb-tfconv.
 */
#include "operator/tf-webhook.h"

#include <json-c/json.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-httpd.h"
#include "kube/kb-tfconv.h"

struct TfWebhook {
    KbHttpd *httpd;
    KbMetric *m_conversions;
};

static void count(TfWebhook *w, const char *result)
{
    if (w->m_conversions != NULL)
        kb_series_inc(kb_metric_with(w->m_conversions, result, NULL));
}

static void handle(KbHttpdRequest *req, gpointer user_data)
{
    TfWebhook *w = user_data;
    gsize len = 0;
    if (strcmp(kb_httpd_request_path(req), "/convert") != 0) {
        kb_httpd_request_respond(req, 404, "text/plain", g_strdup("not found\n"));
        return;
    }
    if (strcmp(kb_httpd_request_method(req), "POST") != 0) {
        kb_httpd_request_respond(req, 405, "text/plain", g_strdup("POST a ConversionReview\n"));
        return;
    }
    const char *body = kb_httpd_request_body(req, &len);
    g_autoptr(GError) error = NULL;
    json_object *resp = kb_tfconv_review(body, len, &error);
    if (resp == NULL) {
        g_autofree char *from = kb_httpd_request_address(req);
        g_message("conversion webhook: bad request from %s: %s", from, error->message);
        count(w, "bad_request");
        kb_httpd_request_respond(req, 400, "text/plain", g_strdup_printf("%s\n", error->message));
        return;
    }
    json_object *result = NULL, *r = NULL, *status = NULL, *msg = NULL;
    json_object_object_get_ex(resp, "response", &r);
    json_object_object_get_ex(r, "result", &result);
    json_object_object_get_ex(result, "status", &status);
    gboolean ok = g_strcmp0(json_object_get_string(status), "Success") == 0;
    if (!ok && json_object_object_get_ex(result, "message", &msg))
        g_message("conversion webhook: %s", json_object_get_string(msg));
    count(w, ok ? "success" : "failure");
    kb_httpd_request_respond(
            req, 200, "application/json",
            g_strdup(json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN)));
    json_object_put(resp);
}

TfWebhook *tf_webhook_new(const char *address, const char *cert_file, const char *key_file,
                          KbMetrics *metrics, GError **error)
{
    if (cert_file == NULL || *cert_file == '\0' || key_file == NULL || *key_file == '\0') {
        g_set_error(error, KB_ERROR, KB_ERROR_CONFIG,
                    "the conversion webhook serves HTTPS only: give --webhook-cert-file and "
                    "--webhook-key-file");
        return NULL;
    }
    KbHttpdTls tls = {.cert_file = cert_file, .key_file = key_file};
    KbHttpd *httpd = kb_httpd_new_full(address, NULL, &tls, KB_TFCONV_MAX_BODY, error);
    if (httpd == NULL)
        return NULL;
    TfWebhook *w = g_new0(TfWebhook, 1);
    static const char *const labels[] = {"result", NULL};
    w->httpd = httpd;
    w->m_conversions =
            metrics != NULL ? kb_metrics_lookup(metrics, "tf_operator_conversions_total") : NULL;
    if (w->m_conversions == NULL && metrics != NULL)
        w->m_conversions = kb_metrics_counter(metrics, "tf_operator_conversions_total",
                                              "ConversionReviews answered by the conversion "
                                              "webhook, by result.",
                                              labels);
    kb_httpd_set_handler(httpd, handle, w);
    return w;
}

guint16 tf_webhook_port(const TfWebhook *webhook)
{
    return kb_httpd_port(webhook->httpd);
}

void tf_webhook_free(TfWebhook *webhook)
{
    if (webhook == NULL)
        return;
    kb_httpd_free(webhook->httpd);
    g_free(webhook);
}
