/*
 * The conversion webhook's HTTP side (see tf-webhook.h); the conversion is kube/kb-tfconv.
 */
#include "operator/tf-webhook.h"

#include <json-c/json.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-httpd.h"
#include "kube/kb-tfconv.h"

/* The webhook runs on a thread and main context of its own: tf-operator's own writes of a job
 * through another version than the stored one (a v1alpha1 job, see controller.c) are converted
 * by this webhook, and they are synchronous calls on the daemon's main loop. Answers are counted
 * in atomics and published into the (single-threaded) metrics when they are rendered. */
enum { R_SUCCESS, R_FAILURE, R_BAD_REQUEST, N_RESULTS };
static const char *const result_names[N_RESULTS] = {"success", "failure", "bad_request"};

struct TfWebhook {
    KbHttpd *httpd;
    GMainContext *context;
    GMainLoop *loop;
    GThread *thread;
    KbMetrics *metrics;
    KbMetric *m_conversions;
    gint counts[N_RESULTS];   /* atomics, written by the webhook's thread */
    gint reported[N_RESULTS]; /* what the metric already has (main thread) */
};

static void count(TfWebhook *w, int result)
{
    g_atomic_int_inc(&w->counts[result]);
}

static void collect(KbMetrics *metrics, gpointer data)
{
    TfWebhook *w = data;
    for (int i = 0; i < N_RESULTS; i++) {
        gint now = g_atomic_int_get(&w->counts[i]);
        if (now != w->reported[i])
            kb_series_add(kb_metric_with(w->m_conversions, result_names[i], NULL),
                          (double)(now - w->reported[i]));
        w->reported[i] = now;
    }
}

static gboolean quit_loop(gpointer loop)
{
    g_main_loop_quit(loop);
    return G_SOURCE_REMOVE;
}

static gpointer serve(gpointer data)
{
    TfWebhook *w = data;
    g_main_context_push_thread_default(w->context);
    g_main_loop_run(w->loop);
    g_main_context_pop_thread_default(w->context);
    return NULL;
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
        count(w, R_BAD_REQUEST);
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
    count(w, ok ? R_SUCCESS : R_FAILURE);
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
    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    KbHttpd *httpd = kb_httpd_new_full(address, NULL, &tls, KB_TFCONV_MAX_BODY, error);
    g_main_context_pop_thread_default(context);
    if (httpd == NULL) {
        g_main_context_unref(context);
        return NULL;
    }
    TfWebhook *w = g_new0(TfWebhook, 1);
    static const char *const labels[] = {"result", NULL};
    w->httpd = httpd;
    w->context = context;
    w->loop = g_main_loop_new(context, FALSE);
    w->m_conversions =
            metrics != NULL ? kb_metrics_lookup(metrics, "tf_operator_conversions_total") : NULL;
    if (w->m_conversions == NULL && metrics != NULL)
        w->m_conversions = kb_metrics_counter(metrics, "tf_operator_conversions_total",
                                              "ConversionReviews answered by the conversion "
                                              "webhook, by result.",
                                              labels);
    if (w->m_conversions != NULL) {
        w->metrics = metrics;
        kb_metrics_add_collector(metrics, collect, w);
    }
    kb_httpd_set_handler(httpd, handle, w);
    w->thread = g_thread_new("tf-webhook", serve, w);
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
    /* through the loop's own context, so that a loop not yet running still ends */
    g_main_context_invoke(webhook->context, quit_loop, webhook->loop);
    g_thread_join(webhook->thread);
    if (webhook->metrics != NULL)
        kb_metrics_remove_collector(webhook->metrics, collect, webhook);
    g_main_context_push_thread_default(webhook->context);
    kb_httpd_free(webhook->httpd);
    g_main_context_pop_thread_default(webhook->context);
    g_main_loop_unref(webhook->loop);
    g_main_context_unref(webhook->context);
    g_free(webhook);
}
