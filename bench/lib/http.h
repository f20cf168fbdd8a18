/*
 * The benchmarks' one plain-HTTP GET (metrics, readiness, kb-apiserver's /admin/stats): no
 * credentials, a deadline, the body whole in memory.
 */
#pragma once

#include <glib.h>

/* GET @url within @timeout_ms. Returns the body (newly allocated; "" when the server did not
 * answer) and sets *@status (may be NULL) to the HTTP status, 0 when there was none. */
char *kb_bench_http_get(const char *url, long timeout_ms, long *status);
