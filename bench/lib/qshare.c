/* Queue tree file and queue shares over a replay; see qshare.h. */
#include "bench/lib/qshare.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kb-error.h"

#define MAX_TREE_BYTES  (4 << 20)
#define MAX_TREE_QUEUES 100000

/* ---- the tree file -------------------------------------------------------------------------- */

static gboolean parse_count(const char *v, gint64 min, gint64 *out)
{
    char *end = NULL;
    gint64 n = g_ascii_strtoll(v, &end, 10);
    if (end == v || *end != '\0' || n < min || n > G_MAXINT32)
        return FALSE;
    *out = n;
    return TRUE;
}

/* One option of a line into @spec; FALSE with an error naming it. */
static gboolean parse_option(const char *opt, json_object *spec, GError **error)
{
    const char *eq = strchr(opt, '=');
    if (eq == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "\"%s\": want name=value", opt);
        return FALSE;
    }
    g_autofree char *key = g_strndup(opt, eq - opt);
    const char *v = eq + 1;
    gint64 n;
    if (strcmp(key, "reclaimable") == 0) {
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "reclaimable=\"%s\": want true or false",
                        v);
            return FALSE;
        }
        json_object_object_add(spec, "reclaimable",
                               json_object_new_boolean(strcmp(v, "true") == 0));
        return TRUE;
    }
    gboolean weight = strcmp(key, "weight") == 0;
    if (!weight && strcmp(key, "capability") != 0 && strcmp(key, "guarantee") != 0 &&
        strcmp(key, "deserved") != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                    "unknown option \"%s\" (weight, capability, guarantee, deserved, reclaimable)",
                    key);
        return FALSE;
    }
    if (!parse_count(v, weight ? 1 : 0, &n)) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "%s=\"%s\": want a whole number%s", key, v,
                    weight ? " >= 1" : " of GPUs");
        return FALSE;
    }
    if (weight) {
        json_object_object_add(spec, "weight", json_object_new_int64(n));
        return TRUE;
    }
    json_object *gpus = json_object_new_object();
    json_object_object_add(gpus, "nvidia.com/gpu", json_object_new_int64(n));
    if (strcmp(key, "guarantee") == 0) {
        json_object *g = json_object_new_object();
        json_object_object_add(g, "resource", gpus);
        gpus = g;
    }
    json_object_object_add(spec, key, gpus);
    return TRUE;
}

static gboolean parse_line(char **fields, GHashTable *out, GError **error)
{
    guint n = g_strv_length(fields);
    if (n < 2) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "want \"name parent [options]\"");
        return FALSE;
    }
    if (strlen(fields[0]) > 253 || g_hash_table_contains(out, fields[0])) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "queue \"%s\": %s", fields[0],
                    strlen(fields[0]) > 253 ? "name too long" : "listed twice");
        return FALSE;
    }
    json_object *spec = json_object_new_object();
    if (strcmp(fields[1], "-") != 0)
        json_object_object_add(spec, "parent", json_object_new_string(fields[1]));
    for (guint i = 2; i < n; i++) {
        if (!parse_option(fields[i], spec, error)) {
            g_prefix_error(error, "queue \"%s\": ", fields[0]);
            json_object_put(spec);
            return FALSE;
        }
    }
    g_hash_table_insert(out, g_strdup(fields[0]),
                        g_strdup(json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN)));
    json_object_put(spec);
    return TRUE;
}

GHashTable *kb_qshare_parse_tree(const char *text, const char *what, GError **error)
{
    g_autoptr(GHashTable) out = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint l = 0; lines[l] != NULL; l++) {
        char *hash = strchr(lines[l], '#');
        if (hash != NULL)
            *hash = '\0';
        g_auto(GStrv) raw = g_strsplit_set(g_strstrip(lines[l]), " \t", -1);
        g_autoptr(GPtrArray) fields = g_ptr_array_new();
        for (guint i = 0; raw[i] != NULL; i++) {
            if (raw[i][0] != '\0')
                g_ptr_array_add(fields, raw[i]);
        }
        if (fields->len == 0)
            continue;
        g_ptr_array_add(fields, NULL);
        if (g_hash_table_size(out) >= MAX_TREE_QUEUES) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s:%u: more than %u queues", what, l + 1,
                        MAX_TREE_QUEUES);
            return NULL;
        }
        if (!parse_line((char **)fields->pdata, out, error)) {
            g_prefix_error(error, "%s:%u: ", what, l + 1);
            return NULL;
        }
    }
    return g_steal_pointer(&out);
}

GHashTable *kb_qshare_load_tree(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &text, &len, error))
        return NULL;
    if (len > MAX_TREE_BYTES) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s: larger than %d bytes", path,
                    MAX_TREE_BYTES);
        return NULL;
    }
    return kb_qshare_parse_tree(text, path, error);
}

/* ---- shares over time ----------------------------------------------------------------------- */

typedef struct {
    char *name;
    char *parent;
    gint64 first_t, last_t;
    gint64 alloc, des; /* GPUs since last_t */
    double alloc_s, des_s, short_s;
    gint64 ep_start, ep_max; /* the open shortfall episode; ep_start -1 when none */
    gint64 max_short, max_short_lasted, longest;
} Track;

struct KbQshare {
    GHashTable *by_name; /* name -> Track* */
    gboolean finished;
};

static void track_free(gpointer p)
{
    Track *t = p;
    g_free(t->name);
    g_free(t->parent);
    g_free(t);
}

KbQshare *kb_qshare_new(void)
{
    KbQshare *qs = g_new0(KbQshare, 1);
    qs->by_name = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, track_free);
    return qs;
}

void kb_qshare_free(KbQshare *qs)
{
    if (qs == NULL)
        return;
    g_hash_table_unref(qs->by_name);
    g_free(qs);
}

static void close_episode(Track *t, gint64 now)
{
    if (t->ep_start < 0)
        return;
    gint64 len = now - t->ep_start;
    t->longest = MAX(t->longest, len);
    if (t->ep_max > t->max_short || (t->ep_max == t->max_short && len > t->max_short_lasted)) {
        t->max_short = t->ep_max;
        t->max_short_lasted = len;
    }
    t->ep_start = -1;
}

static void advance(Track *t, gint64 now)
{
    double dt = (double)(now - t->last_t);
    t->alloc_s += dt * (double)t->alloc;
    t->des_s += dt * (double)t->des;
    t->short_s += dt * (double)MAX(t->des - t->alloc, 0);
    t->last_t = now;
}

void kb_qshare_on_cycle(const KbCycleResult *res, gpointer data)
{
    KbQshare *qs = data;
    for (guint i = 0; i < res->queue_statuses->len; i++) {
        const KbQueueStatus *st = &g_array_index(res->queue_statuses, KbQueueStatus, i);
        Track *t = g_hash_table_lookup(qs->by_name, st->name);
        if (t == NULL) {
            t = g_new0(Track, 1);
            t->name = g_strdup(st->name);
            t->first_t = t->last_t = res->now;
            t->ep_start = -1;
            g_hash_table_insert(qs->by_name, t->name, t);
        }
        if (g_strcmp0(t->parent, st->parent) != 0) {
            g_free(t->parent);
            t->parent = g_strdup(st->parent);
        }
        advance(t, res->now);
        t->alloc = st->allocated.v[KB_RES_GPU] / KB_GPU_MILLI;
        t->des = st->deserved.v[KB_RES_GPU] / KB_GPU_MILLI;
        gint64 s = MAX(t->des - t->alloc, 0);
        if (s > 0 && t->ep_start < 0) {
            t->ep_start = res->now;
            t->ep_max = 0;
        }
        if (s > 0)
            t->ep_max = MAX(t->ep_max, s);
        else
            close_episode(t, res->now);
    }
}

void kb_qshare_finish(KbQshare *qs, gint64 end)
{
    if (qs->finished)
        return;
    qs->finished = TRUE;
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, qs->by_name);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        Track *t = v;
        advance(t, MAX(end, t->last_t));
        close_episode(t, MAX(end, t->last_t));
    }
}

static guint depth_of(KbQshare *qs, const Track *t)
{
    guint d = 1;
    for (const Track *p = t; p->parent != NULL && strcmp(p->parent, "root") != 0 && d < 64; d++) {
        p = g_hash_table_lookup(qs->by_name, p->parent);
        if (p == NULL)
            break;
    }
    return d;
}

gboolean kb_qshare_queue(KbQshare *qs, const char *name, KbQshareQueue *out)
{
    const Track *t = g_hash_table_lookup(qs->by_name, name);
    if (t == NULL)
        return FALSE;
    double span = (double)MAX(t->last_t - t->first_t, 1);
    *out = (KbQshareQueue){depth_of(qs, t),     t->alloc_s / span, t->des_s / span, t->max_short,
                           t->max_short_lasted, t->longest,        t->short_s};
    return TRUE;
}

static char *hours(gint64 secs)
{
    if (secs < 60)
        return g_strdup_printf("%" G_GINT64_FORMAT " s", secs);
    if (secs < 3600)
        return g_strdup_printf("%.1f min", (double)secs / 60);
    return g_strdup_printf("%.1f h", (double)secs / 3600);
}

typedef struct {
    guint depth;
    const char *name;
} Row;

static gint row_cmp(gconstpointer a, gconstpointer b)
{
    const Row *x = a, *y = b;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return strcmp(x->name, y->name);
}

void kb_qshare_print(KbQshare *qs, gint64 end)
{
    kb_qshare_finish(qs, end);
    g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(Row));
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, qs->by_name);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        Row r = {depth_of(qs, v), ((Track *)v)->name};
        g_array_append_val(rows, r);
    }
    g_array_sort(rows, row_cmp);
    printf("  queue shares (nvidia.com/gpu; shortfall = deserved - allocated while positive)\n");
    printf("  %-5s %-10s %-10s %9s %9s %6s %9s %10s %10s %9s\n", "level", "queue", "parent",
           "mean held", "mean des.", "share", "max short", "it lasted", "longest", "GPUh short");
    guint level = 0;
    KbQshareQueue lv = {0};
    const char *lv_worst = NULL;
    guint lv_n = 0;
    for (guint i = 0; i <= rows->len; i++) {
        const Row *r = i < rows->len ? &g_array_index(rows, Row, i) : NULL;
        if (level != 0 && (r == NULL || r->depth != level)) {
            g_autofree char *l1 = hours(lv.max_short_lasted), *l2 = hours(lv.longest_short);
            printf("  level %u: %u queues, %.0f GPU-hours short, largest shortfall "
                   "%" G_GINT64_FORMAT " GPUs (%s) lasting %s, longest shortfall %s\n",
                   level, lv_n, lv.short_gpu_s / 3600, lv.max_short,
                   lv_worst != NULL ? lv_worst : "-", l1, l2);
            memset(&lv, 0, sizeof(lv));
            lv_worst = NULL;
            lv_n = 0;
        }
        if (r == NULL)
            break;
        level = r->depth;
        KbQshareQueue q;
        kb_qshare_queue(qs, r->name, &q);
        const Track *t = g_hash_table_lookup(qs->by_name, r->name);
        g_autofree char *l1 = hours(q.max_short_lasted), *l2 = hours(q.longest_short);
        printf("  %-5u %-10s %-10s %9.1f %9.1f %5.0f%% %9" G_GINT64_FORMAT " %10s %10s %9.0f\n",
               q.depth, r->name, t->parent != NULL ? t->parent : "root", q.alloc_mean,
               q.deserved_mean, q.deserved_mean > 0 ? 100 * q.alloc_mean / q.deserved_mean : 0,
               q.max_short, l1, l2, q.short_gpu_s / 3600);
        lv_n++;
        lv.short_gpu_s += q.short_gpu_s;
        lv.longest_short = MAX(lv.longest_short, q.longest_short);
        if (q.max_short > lv.max_short ||
            (q.max_short == lv.max_short && q.max_short_lasted > lv.max_short_lasted)) {
            lv.max_short = q.max_short;
            lv.max_short_lasted = q.max_short_lasted;
            lv_worst = r->name;
        }
    }
}
