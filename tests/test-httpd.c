/* /healthz, /readyz, /metrics over real HTTP, with libcurl in a thread while the main loop runs. */
#include <curl/curl.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-httpd.h"

typedef struct {
    char *url;
    const char *method;
    long timeout_ms;
    long status;
    CURLcode rc;
    GString *body;
    char *content_type;
    gint done;
} Fetch;

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(user, data, (gssize)(size * n));
    return size * n;
}

static gboolean wake(gpointer data)
{
    return G_SOURCE_REMOVE;
}

static gpointer fetch_thread(gpointer data)
{
    Fetch *f = data;
    CURL *curl = curl_easy_init();
    char *ct = NULL;

    curl_easy_setopt(curl, CURLOPT_URL, f->url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, f->body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, f->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (strcmp(f->method, "HEAD") == 0)
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    else if (strcmp(f->method, "GET") != 0)
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, f->method);
    f->rc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &f->status);
    if (curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct != NULL)
        f->content_type = g_strdup(ct);
    curl_easy_cleanup(curl);
    g_atomic_int_set(&f->done, 1);
    g_idle_add(wake, NULL); /* wake the main loop */
    return NULL;
}

static void fetch_clear(Fetch *f)
{
    g_free(f->url);
    g_string_free(f->body, TRUE);
    g_free(f->content_type);
}

/* Performs the request in a thread while this thread runs the default main context (or not,
 * when @run_loop is FALSE: a hung main loop). */
static void fetch(Fetch *f, guint16 port, const char *method, const char *path, gboolean run_loop)
{
    GThread *t;

    memset(f, 0, sizeof(*f));
    f->url = g_strdup_printf("http://127.0.0.1:%u%s", port, path);
    f->method = method;
    f->timeout_ms = run_loop ? 5000 : 300;
    f->body = g_string_new(NULL);
    t = g_thread_new("fetch", fetch_thread, f);
    while (!g_atomic_int_get(&f->done)) {
        if (run_loop)
            g_main_context_iteration(NULL, TRUE);
        else
            g_usleep(10000);
    }
    g_thread_join(t);
    while (g_main_context_iteration(NULL, FALSE))
        ;
}

static KbHttpd *new_server(KbMetrics *metrics)
{
    g_autoptr(GError) error = NULL;
    KbHttpd *httpd = kb_httpd_new("127.0.0.1:0", metrics, &error);

    g_assert_no_error(error);
    g_assert_nonnull(httpd);
    g_assert_cmpuint(kb_httpd_port(httpd), >, 0);
    return httpd;
}

static void test_parse_address(void)
{
    static const struct {
        const char *in;
        const char *host;
        guint16 port;
    } ok[] = {
            {":8080", NULL, 8080},
            {"127.0.0.1:0", "127.0.0.1", 0},
            {"0.0.0.0:9090", "0.0.0.0", 9090},
            {"[::1]:8443", "::1", 8443},
            {"localhost:80", "127.0.0.1", 80},
            {":65535", NULL, 65535},
    };
    static const char *const bad[] = {
            "8080",           "",       ":",       ":65536",        ":-1",      ":80x",
            "example.com:80", "::1:80", "[::1:80", "[10.0.0.1]:80", "1.2.3:80", ":000080",
    };

    for (guint i = 0; i < G_N_ELEMENTS(ok); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *host = NULL;
        guint16 port = 1;

        g_assert_true(kb_httpd_parse_address(ok[i].in, &host, &port, &error));
        g_assert_no_error(error);
        g_assert_cmpstr(host, ==, ok[i].host);
        g_assert_cmpuint(port, ==, ok[i].port);
    }
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *host = NULL;
        guint16 port = 0;

        g_assert_false(kb_httpd_parse_address(bad[i], &host, &port, &error));
        g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
        g_assert_nonnull(strstr(error->message, bad[i]));
    }
}

static void test_healthz(void)
{
    g_autoptr(KbHttpd) httpd = new_server(NULL);
    Fetch f;

    fetch(&f, kb_httpd_port(httpd), "GET", "/healthz", TRUE);
    g_assert_cmpint(f.rc, ==, CURLE_OK);
    g_assert_cmpint(f.status, ==, 200);
    g_assert_cmpstr(f.body->str, ==, "ok");
    g_assert_cmpstr(f.content_type, ==, "text/plain; charset=utf-8");
    fetch_clear(&f);

    fetch(&f, kb_httpd_port(httpd), "HEAD", "/healthz", TRUE);
    g_assert_cmpint(f.status, ==, 200);
    g_assert_cmpstr(f.body->str, ==, "");
    fetch_clear(&f);
    g_assert_cmpuint(kb_httpd_requests(httpd), ==, 2);
}

/* A main loop that does not run answers nothing: the probe times out. */
static void test_healthz_hung_loop(void)
{
    g_autoptr(KbHttpd) httpd = new_server(NULL);
    Fetch f;

    fetch(&f, kb_httpd_port(httpd), "GET", "/healthz", FALSE);
    g_assert_cmpint(f.rc, ==, CURLE_OPERATION_TIMEDOUT);
    fetch_clear(&f);
    /* Once the loop runs again, so do the answers. */
    fetch(&f, kb_httpd_port(httpd), "GET", "/healthz", TRUE);
    g_assert_cmpint(f.status, ==, 200);
    fetch_clear(&f);
}

typedef struct {
    gboolean synced;
    gboolean leading;
    guint calls;
} Readiness;

static gboolean ready(gpointer user_data, char **reason)
{
    Readiness *r = user_data;

    r->calls++;
    if (!r->synced) {
        *reason = g_strdup("caches not synced");
        return FALSE;
    }
    if (!r->leading)
        return FALSE;
    return TRUE;
}

static void test_readyz(void)
{
    g_autoptr(KbHttpd) httpd = new_server(NULL);
    Readiness r = {0};
    Fetch f;

    /* No callback: ready. */
    fetch(&f, kb_httpd_port(httpd), "GET", "/readyz", TRUE);
    g_assert_cmpint(f.status, ==, 200);
    g_assert_cmpstr(f.body->str, ==, "ok");
    fetch_clear(&f);

    kb_httpd_set_ready_func(httpd, ready, &r);
    fetch(&f, kb_httpd_port(httpd), "GET", "/readyz", TRUE);
    g_assert_cmpint(f.status, ==, 503);
    g_assert_cmpstr(f.body->str, ==, "caches not synced");
    fetch_clear(&f);

    r.synced = TRUE;
    fetch(&f, kb_httpd_port(httpd), "GET", "/readyz", TRUE);
    g_assert_cmpint(f.status, ==, 503);
    g_assert_cmpstr(f.body->str, ==, "not ready");
    fetch_clear(&f);

    r.leading = TRUE;
    fetch(&f, kb_httpd_port(httpd), "GET", "/readyz", TRUE);
    g_assert_cmpint(f.status, ==, 200);
    g_assert_cmpstr(f.body->str, ==, "ok");
    fetch_clear(&f);
    g_assert_cmpuint(r.calls, ==, 3);
}

static void test_metrics(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    KbMetric *c = kb_metrics_counter(m, "kb_binds_total", "Pods bound.", NULL);
    g_autoptr(KbHttpd) httpd = new_server(m);
    Fetch f;

    kb_metric_add(c, 7);
    fetch(&f, kb_httpd_port(httpd), "GET", "/metrics", TRUE);
    g_assert_cmpint(f.status, ==, 200);
    g_assert_cmpstr(f.content_type, ==, KB_METRICS_CONTENT_TYPE);
    g_assert_cmpstr(f.body->str, ==,
                    "# HELP kb_binds_total Pods bound.\n"
                    "# TYPE kb_binds_total counter\n"
                    "kb_binds_total 7\n");
    fetch_clear(&f);

    /* Rendered per request: a later increment shows. */
    kb_metric_inc(c);
    fetch(&f, kb_httpd_port(httpd), "GET", "/metrics?x=1", TRUE);
    g_assert_nonnull(strstr(f.body->str, "\nkb_binds_total 8\n"));
    fetch_clear(&f);
}

static void test_not_found_and_method(void)
{
    g_autoptr(KbHttpd) httpd = new_server(NULL);
    static const char *const paths[] = {"/", "/nope", "/healthz/x", "/metrics"};
    Fetch f;

    for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
        fetch(&f, kb_httpd_port(httpd), "GET", paths[i], TRUE);
        g_assert_cmpint(f.status, ==, 404);
        g_assert_cmpstr(f.body->str, ==, "404 page not found\n");
        fetch_clear(&f);
    }
    fetch(&f, kb_httpd_port(httpd), "POST", "/healthz", TRUE);
    g_assert_cmpint(f.status, ==, 405);
    fetch_clear(&f);
    fetch(&f, kb_httpd_port(httpd), "DELETE", "/metrics", TRUE);
    g_assert_cmpint(f.status, ==, 405);
    fetch_clear(&f);
}

static void test_ports(void)
{
    g_autoptr(KbHttpd) a = new_server(NULL);
    g_autoptr(KbHttpd) b = new_server(NULL);
    g_autoptr(GError) error = NULL;
    g_autofree char *taken = g_strdup_printf("127.0.0.1:%u", kb_httpd_port(a));
    KbHttpd *c;

    g_assert_cmpuint(kb_httpd_port(a), !=, kb_httpd_port(b));
    c = kb_httpd_new(taken, NULL, &error);
    g_assert_null(c);
    g_assert_error(error, KB_ERROR, KB_ERROR_TRANSPORT);
    g_assert_nonnull(strstr(error->message, taken));
    g_clear_error(&error);
    g_assert_null(kb_httpd_new("nowhere:80", NULL, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
}

static void test_all_interfaces(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbHttpd) httpd = kb_httpd_new(":0", NULL, &error);
    Fetch f;

    g_assert_no_error(error);
    fetch(&f, kb_httpd_port(httpd), "GET", "/healthz", TRUE);
    g_assert_cmpint(f.status, ==, 200);
    fetch_clear(&f);
}

static void test_shutdown(void)
{
    KbHttpd *httpd = new_server(NULL);
    guint16 port = kb_httpd_port(httpd);
    Fetch f;

    fetch(&f, port, "GET", "/healthz", TRUE);
    g_assert_cmpint(f.status, ==, 200);
    fetch_clear(&f);
    kb_httpd_free(httpd);
    fetch(&f, port, "GET", "/healthz", TRUE);
    g_assert_cmpint(f.rc, ==, CURLE_COULDNT_CONNECT);
    fetch_clear(&f);
    /* The port is free again. */
    {
        g_autoptr(GError) error = NULL;
        g_autofree char *addr = g_strdup_printf("127.0.0.1:%u", port);
        g_autoptr(KbHttpd) again = kb_httpd_new(addr, NULL, &error);
        g_assert_no_error(error);
    }
}

int main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    g_test_add_func("/kube/httpd/parse-address", test_parse_address);
    g_test_add_func("/kube/httpd/healthz/ok", test_healthz);
    g_test_add_func("/kube/httpd/healthz/hung-loop", test_healthz_hung_loop);
    g_test_add_func("/kube/httpd/readyz/reason-then-ok", test_readyz);
    g_test_add_func("/kube/httpd/metrics", test_metrics);
    g_test_add_func("/kube/httpd/not-found-and-method", test_not_found_and_method);
    g_test_add_func("/kube/httpd/ports", test_ports);
    g_test_add_func("/kube/httpd/all-interfaces", test_all_interfaces);
    g_test_add_func("/kube/httpd/shutdown", test_shutdown);
    rc = g_test_run();
    curl_global_cleanup();
    return rc;
}
