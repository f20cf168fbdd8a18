/*
 * tf-operator's conversion webhook (operator/tf-webhook) over HTTPS, verified against a CA of
 * this run: answers, failures, bad requests, limits, paths and methods, and the metric.
 */
#include <curl/curl.h>
#include <glib.h>
#include <json-c/json.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-metrics.h"
#include "kube/kb-tfconv.h"
#include "operator/tf-webhook.h"
#include "tests/lib/kb-test-pki.h"

typedef struct {
    guint port;
    const char *path, *method, *body, *cainfo;
    gsize len;
    long status;
    GString *out;
    gint done;
} Post;

static size_t on_data(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(((Post *)user)->out, data, (gssize)(size * n));
    return size * n;
}

static gpointer post_thread(gpointer data)
{
    Post *p = data;
    CURL *c = curl_easy_init();
    g_autofree char *url = g_strdup_printf("https://127.0.0.1:%u%s", p->port, p->path);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_CAINFO, p->cainfo);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, p->method);
    if (p->body != NULL) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, p->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)p->len);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &p->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    g_atomic_int_set(&p->done, TRUE);
    g_main_context_wakeup(NULL);
    return NULL;
}

typedef struct {
    KbTestPki *pki;
    KbMetrics *metrics;
    TfWebhook *webhook;
} Fixture;

static void setup(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    f->pki = kb_test_pki_new();
    f->metrics = kb_metrics_new();
    f->webhook = tf_webhook_new("127.0.0.1:0", kb_test_pki_path(f->pki, "server.pem"),
                                kb_test_pki_path(f->pki, "server-key.pem"), f->metrics, &error);
    g_assert_no_error(error);
}

static void teardown(Fixture *f, gconstpointer data)
{
    tf_webhook_free(f->webhook);
    kb_metrics_free(f->metrics);
    kb_test_pki_free(f->pki);
}

/* @method @path with @body (@len bytes) from another thread while this one serves. */
static long request(Fixture *f, const char *method, const char *path, const char *body, gsize len,
                    char **out)
{
    Post p = {.port = tf_webhook_port(f->webhook),
              .path = path,
              .method = method,
              .body = body,
              .len = len,
              .cainfo = kb_test_pki_path(f->pki, "ca.pem")};
    p.out = g_string_new(NULL);
    GThread *t = g_thread_new("post", post_thread, &p);
    while (!g_atomic_int_get(&p.done))
        g_main_context_iteration(NULL, TRUE);
    g_thread_join(t);
    *out = g_string_free(p.out, FALSE);
    return p.status;
}

static json_object *at(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (o != NULL)
        json_object_object_get_ex(o, key, &v);
    return v;
}

static double conversions(Fixture *f, const char *result)
{
    KbMetric *m = kb_metrics_lookup(f->metrics, "tf_operator_conversions_total");
    g_assert_nonnull(m);
    g_autofree char *text = kb_metrics_render(f->metrics);
    g_autofree char *key = g_strdup_printf("tf_operator_conversions_total{result=\"%s\"} ", result);
    const char *line = strstr(text, key);
    return line != NULL ? g_ascii_strtod(line + strlen(key), NULL) : 0;
}

#define REVIEW(desired, objects)                                                                   \
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{"      \
    "\"uid\":\"4a9c-1\",\"desiredAPIVersion\":\"" desired "\",\"objects\":[" objects "]}}"

/* The seed tutorial's v1beta1 job, stored as v1 with the betas' cleanPodPolicy made explicit. */
static void test_convert(Fixture *f, gconstpointer data)
{
    static const char body[] = REVIEW(
            "kubeflow.org/v1",
            "{\"apiVersion\":\"kubeflow.org/v1beta1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":"
            "\"module6-ex1-gpu\"},\"spec\":{\"tfReplicaSpecs\":{\"MASTER\":{\"replicas\":1}}}}");
    g_autofree char *out = NULL;
    g_assert_cmpint(request(f, "POST", "/convert", body, strlen(body), &out), ==, 200);
    json_object *resp = json_tokener_parse(out);
    json_object *r = at(resp, "response");
    g_assert_cmpstr(json_object_get_string(at(r, "uid")), ==, "4a9c-1");
    g_assert_cmpstr(json_object_get_string(at(at(r, "result"), "status")), ==, "Success");
    json_object *job = json_object_array_get_idx(at(r, "convertedObjects"), 0);
    g_assert_cmpstr(json_object_get_string(at(job, "apiVersion")), ==, "kubeflow.org/v1");
    g_assert_cmpstr(json_object_get_string(at(at(at(job, "spec"), "runPolicy"), "cleanPodPolicy")),
                    ==, "Running");
    json_object_put(resp);
    g_assert_cmpfloat(conversions(f, "success"), ==, 1);
}

/* An object the target version cannot express: 200 with result Failure naming job and field. */
static void test_failure(Fixture *f, gconstpointer data)
{
    static const char body[] =
            REVIEW("kubeflow.org/v1alpha1",
                   "{\"apiVersion\":\"kubeflow.org/v1\",\"metadata\":{\"name\":\"e\",\"namespace\":"
                   "\"ns\"},\"spec\":{\"tfReplicaSpecs\":{\"Evaluator\":{}}}}");
    g_autofree char *out = NULL;
    g_assert_cmpint(request(f, "POST", "/convert", body, strlen(body), &out), ==, 200);
    json_object *resp = json_tokener_parse(out);
    json_object *result = at(at(resp, "response"), "result");
    g_assert_cmpstr(json_object_get_string(at(result, "status")), ==, "Failure");
    g_assert_cmpstr(json_object_get_string(at(result, "message")), ==,
                    "tfjob ns/e: spec.tfReplicaSpecs.Evaluator: kubeflow.org/v1alpha1 has no "
                    "Evaluator replicas");
    json_object_put(resp);
    g_assert_cmpfloat(conversions(f, "failure"), ==, 1);
}

/* Not a ConversionReview, too large, wrong path or method: refused, and the webhook serves on. */
static void test_refusals(Fixture *f, gconstpointer data)
{
    g_autofree char *out = NULL;
    g_assert_cmpint(request(f, "POST", "/convert", "{\"kind\":", 8, &out), ==, 400);
    g_assert_cmpstr(out, ==, "ConversionReview: truncated JSON\n");
    g_clear_pointer(&out, g_free);
    g_assert_cmpfloat(conversions(f, "bad_request"), ==, 1);

    gsize big_len = KB_TFCONV_MAX_BODY + 1;
    g_autofree char *big = g_strnfill(big_len, ' ');
    g_assert_cmpint(request(f, "POST", "/convert", big, big_len, &out), ==, 413);
    g_clear_pointer(&out, g_free);
    g_assert_cmpint(request(f, "GET", "/convert", NULL, 0, &out), ==, 405);
    g_clear_pointer(&out, g_free);
    g_assert_cmpint(request(f, "POST", "/mutate", "{}", 2, &out), ==, 404);
    g_clear_pointer(&out, g_free);

    static const char body[] = REVIEW("kubeflow.org/v1beta2", "");
    g_assert_cmpint(request(f, "POST", "/convert", body, strlen(body), &out), ==, 200);
    g_assert_nonnull(strstr(out, "\"status\":\"Success\""));
}

static void test_https_only(void)
{
    g_autoptr(GError) error = NULL;
    TfWebhook *w = tf_webhook_new("127.0.0.1:0", NULL, NULL, NULL, &error);
    g_assert_null(w);
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, "--webhook-cert-file"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* The server's warning about a refused body is part of the behaviour under test. */
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    g_test_add("/operator/webhook/convert", Fixture, NULL, setup, test_convert, teardown);
    g_test_add("/operator/webhook/failure", Fixture, NULL, setup, test_failure, teardown);
    g_test_add("/operator/webhook/refusals", Fixture, NULL, setup, test_refusals, teardown);
    g_test_add_func("/operator/webhook/https-only", test_https_only);
    int rc = g_test_run();
    curl_global_cleanup();
    return rc;
}
