/* A plain-HTTP GET for the benchmarks; see http.h. */
#include "bench/lib/http.h"

#include <curl/curl.h>

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(user, data, (gssize)(size * n));
    return size * n;
}

char *kb_bench_http_get(const char *url, long timeout_ms, long *status)
{
    GString *body = g_string_new(NULL);
    long code = 0;
    CURL *curl = curl_easy_init();
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    if (curl_easy_perform(curl) == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    else
        g_string_truncate(body, 0);
    curl_easy_cleanup(curl);
    if (status != NULL)
        *status = code;
    return g_string_free(body, FALSE);
}
