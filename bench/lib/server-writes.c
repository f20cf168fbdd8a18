/* API server writes by kind; see server-writes.h. */
#include "bench/lib/server-writes.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "bench/lib/http.h"
#include "tests/lib/kb-test-util.h"

/* kb-apiserver's GET /admin/stats (new reference), or NULL. */
static json_object *fetch_stats(const char *server)
{
    g_autofree char *url = g_strdup_printf("%s/admin/stats", server);
    g_autofree char *text = kb_bench_http_get(url, 5000, NULL);
    return json_tokener_parse(text);
}

static void add(GHashTable *out, const char *kind, gint64 n)
{
    gint64 *v = g_hash_table_lookup(out, kind);
    if (v == NULL) {
        v = g_new0(gint64, 1);
        g_hash_table_replace(out, g_strdup(kind), v);
    }
    *v += n;
}

/* One apiserver_request_total sample (after the family's "{"): counted when it is a write. */
static void add_sample(GHashTable *out, const char *l)
{
    const char *close = strrchr(l, '}');
    if (close == NULL)
        return;
    g_autofree char *labels = g_strndup(l, (gsize)(close - l));
    const char *verb = NULL, *code = NULL, *resource = NULL, *sub = NULL;
    g_auto(GStrv) pairs = g_strsplit(labels, ",", -1);
    for (guint k = 0; pairs[k] != NULL; k++) {
        char *eq = strchr(pairs[k], '=');
        if (eq == NULL || eq[1] != '"')
            continue;
        *eq = '\0';
        char *val = eq + 2, *q = strchr(val, '"');
        if (q != NULL)
            *q = '\0';
        if (strcmp(pairs[k], "verb") == 0)
            verb = val;
        else if (strcmp(pairs[k], "code") == 0)
            code = val;
        else if (strcmp(pairs[k], "resource") == 0)
            resource = val;
        else if (strcmp(pairs[k], "subresource") == 0)
            sub = val;
    }
    static const char *const writing[] = {"POST", "PUT", "PATCH", "DELETE", "APPLY", NULL};
    if (verb == NULL || code == NULL || resource == NULL || code[0] != '2' ||
        !g_strv_contains(writing, verb))
        return;
    g_autofree char *kind =
            g_strdup_printf("%s %s%s%s", verb, resource, sub != NULL && *sub != '\0' ? "/" : "",
                            sub != NULL ? sub : "");
    add(out, kind, (gint64)g_ascii_strtod(close + 1, NULL));
}

GHashTable *kb_bench_server_writes(KbTestCluster *cluster, const char *url)
{
    GHashTable *out = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    if (cluster == NULL) {
        json_object *stats = fetch_stats(url), *w = NULL;
        if (stats != NULL && json_object_object_get_ex(stats, "writes", &w)) {
            json_object_object_foreach(w, kind, v)
            {
                add(out, kind, json_object_get_int64(v));
            }
        } else {
            fprintf(stderr, "bench: %s/admin/stats: no writes\n", url);
        }
        json_object_put(stats);
        return out;
    }
    guint status = 0;
    g_autoptr(GError) error = NULL;
    g_autofree char *text = kb_test_cluster_request(cluster, KB_TEST_ADMIN, "GET", "/metrics", NULL,
                                                    NULL, &status, &error);
    if (text == NULL || status != 200) {
        fprintf(stderr, "bench: %s /metrics: %s (HTTP %u)\n", kb_test_cluster_name(cluster),
                error != NULL ? error->message : "no answer", status);
        return out;
    }
    static const char family[] = "apiserver_request_total{";
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (g_str_has_prefix(lines[i], family))
            add_sample(out, lines[i] + sizeof family - 1);
    }
    return out;
}

gint64 kb_bench_writes_of(GHashTable *writes, const char *kind)
{
    gint64 *n = writes != NULL ? g_hash_table_lookup(writes, kind) : NULL;
    return n != NULL ? *n : 0;
}

typedef struct {
    const char *kind;
    gint64 n;
} KindCount;

static gint by_count(gconstpointer a, gconstpointer b)
{
    const KindCount *x = a, *y = b;
    return x->n != y->n ? (x->n > y->n ? -1 : 1) : strcmp(x->kind, y->kind);
}

char *kb_bench_writes_line(GHashTable *before, GHashTable *after, guint n_pods)
{
    g_autoptr(GArray) kinds = g_array_new(FALSE, FALSE, sizeof(KindCount));
    gint64 total = 0;
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, after);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        KindCount kc = {k, *(gint64 *)v - kb_bench_writes_of(before, k)};
        if (strcmp(kc.kind, "total") == 0 || kc.n <= 0)
            continue;
        g_array_append_val(kinds, kc);
        total += kc.n;
    }
    g_array_sort(kinds, by_count);
    GString *out = g_string_new(NULL);
    g_string_append_printf(out, "%" G_GINT64_FORMAT " writes (%.2f per pod):", total,
                           n_pods > 0 ? (double)total / n_pods : 0.0);
    gint64 other = 0;
    for (guint i = 0; i < kinds->len; i++) {
        const KindCount *kc = &g_array_index(kinds, KindCount, i);
        if (kc->n * 100 < total)
            other += kc->n;
        else
            g_string_append_printf(out, " %s %" G_GINT64_FORMAT ",", kc->kind, kc->n);
    }
    if (other > 0)
        g_string_append_printf(out, " other %" G_GINT64_FORMAT ",", other);
    if (out->str[out->len - 1] == ',')
        g_string_truncate(out, out->len - 1);
    return g_string_free(out, FALSE);
}
