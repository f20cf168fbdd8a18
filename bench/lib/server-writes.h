/*
 * What a benchmark's workload cost the API server in writes, by kind: kb-apiserver's own count
 * (GET /admin/stats, "writes"), or a real kube-apiserver's apiserver_request_total samples with a
 * 2xx code and a writing verb (POST, PUT, PATCH, DELETE, APPLY), keyed "VERB resource[/sub]".
 * Taken before and after a measurement, the difference is what it wrote (every client: the
 * scheduler, the kubelets, the benchmark itself).
 */
#pragma once

#include <glib.h>

#include "tests/lib/kb-test-cluster.h"

/* Successful writes so far by kind (kind -> gint64*, a new table; empty when the server did not
 * answer, said on stderr): @cluster's kube-apiserver when not NULL, else kb-apiserver at @url. */
GHashTable *kb_bench_server_writes(KbTestCluster *cluster, const char *url);
/* @kind's count in @writes (may be NULL), 0 when absent. */
gint64 kb_bench_writes_of(GHashTable *writes, const char *kind);
/* "N writes (X per pod): KIND n, ..." between @before and @after, kinds by count, descending,
 * those under 1% of the whole folded into "other" (newly allocated). */
char *kb_bench_writes_line(GHashTable *before, GHashTable *after, guint n_pods);
