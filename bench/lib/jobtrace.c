/* Why jobs wait over a replay; see jobtrace.h. */
#include "bench/lib/jobtrace.h"

#include <string.h>

struct KbJobTrace {
    GHashTable *traced;  /* "ns/name" -> last line printed (char*) */
    GHashTable *holding; /* "ns/name" -> folded reason (interned) of a waiting job */
    GHashTable *seconds; /* folded reason (interned) -> double* job-seconds */
    gboolean reasons;
    gint64 last_now;
    gint64 total_gpus;
    FILE *out;
};

KbJobTrace *kb_jobtrace_new(const char *const *jobs, gboolean reasons, gint64 total_gpus, FILE *out)
{
    KbJobTrace *jt = g_new0(KbJobTrace, 1);
    jt->traced = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; jobs != NULL && jobs[i] != NULL; i++)
        g_hash_table_insert(jt->traced, g_strdup(jobs[i]), NULL);
    jt->holding = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    jt->seconds = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    jt->reasons = reasons;
    jt->last_now = -1;
    jt->total_gpus = total_gpus;
    jt->out = out;
    return jt;
}

void kb_jobtrace_free(KbJobTrace *jt)
{
    if (jt == NULL)
        return;
    g_hash_table_unref(jt->traced);
    g_hash_table_unref(jt->holding);
    g_hash_table_unref(jt->seconds);
    g_free(jt);
}

char *kb_jobtrace_fold(const char *msg)
{
    GString *s = g_string_new(NULL);
    for (const char *p = msg; *p != '\0';) {
        if (g_ascii_isdigit(*p)) {
            while (g_ascii_isdigit(*p) || (*p == '.' && g_ascii_isdigit(p[1])))
                p++;
            g_string_append_c(s, 'N');
        } else if (*p == '"') {
            const char *end = strchr(p + 1, '"');
            if (end == NULL)
                break;
            g_string_append(s, "\"Q\"");
            p = end + 1;
        } else {
            g_string_append_c(s, *p++);
        }
    }
    return g_string_free(s, FALSE);
}

static void add_seconds(KbJobTrace *jt, const char *reason, double dt)
{
    double *v = g_hash_table_lookup(jt->seconds, reason);
    if (v == NULL) {
        v = g_new0(double, 1);
        g_hash_table_insert(jt->seconds, (gpointer)reason, v);
    }
    *v += dt;
}

static gboolean job_waits(const KbJobStatus *st)
{
    return st->phase != KB_JOB_RUNNING && st->n_allocated + st->n_running < (guint)st->min_member;
}

static const KbQueueStatus *find_queue(const KbCycleResult *res, const char *name)
{
    for (guint i = 0; i < res->queue_statuses->len; i++) {
        const KbQueueStatus *q = &g_array_index(res->queue_statuses, KbQueueStatus, i);
        if (q->name == name || g_strcmp0(q->name, name) == 0)
            return q;
    }
    return NULL;
}

/* GPUs held in the cluster: the allocations of the queues under the root. */
static gint64 cluster_busy(const KbCycleResult *res)
{
    gint64 busy = 0;
    for (guint i = 0; i < res->queue_statuses->len; i++) {
        const KbQueueStatus *x = &g_array_index(res->queue_statuses, KbQueueStatus, i);
        if (x->parent == NULL || strcmp(x->parent, "root") == 0)
            busy += x->allocated.v[KB_RES_GPU] / KB_GPU_MILLI;
    }
    return busy;
}

static void trace_one(KbJobTrace *jt, const KbCycleResult *res, const KbJobStatus *st)
{
    if (!g_hash_table_contains(jt->traced, st->job))
        return;
    g_autofree char *line = g_strdup_printf(
            "%s %u/%d placed, %s: %s", kb_job_phase_to_string(st->phase),
            st->n_allocated + st->n_running, st->min_member, st->reason != NULL ? st->reason : "-",
            st->message != NULL ? st->message : "");
    if (g_strcmp0(g_hash_table_lookup(jt->traced, st->job), line) == 0)
        return;
    const KbQueueStatus *q = find_queue(res, st->queue);
    gint64 busy = cluster_busy(res), inqueue = 0;
    for (guint i = 0; i < res->queue_statuses->len; i++)
        inqueue += g_array_index(res->queue_statuses, KbQueueStatus, i).n_inqueue;
    fprintf(jt->out,
            "trace %s t=%.2f h: cluster %" G_GINT64_FORMAT " GPUs held, %" G_GINT64_FORMAT
            " jobs admitted; queue %s %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
            " GPUs deserved; %s\n",
            st->job, (double)res->now / 3600, busy, inqueue, st->queue,
            q != NULL ? q->allocated.v[KB_RES_GPU] / KB_GPU_MILLI : 0,
            q != NULL ? q->deserved.v[KB_RES_GPU] / KB_GPU_MILLI : 0, line);
    g_hash_table_insert(jt->traced, g_strdup(st->job), g_steal_pointer(&line));
}

void kb_jobtrace_on_cycle(const KbCycleResult *res, gpointer data)
{
    KbJobTrace *jt = data;
    if (jt->reasons && jt->last_now >= 0) {
        double dt = (double)(res->now - jt->last_now);
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, jt->holding);
        while (g_hash_table_iter_next(&it, &k, &v))
            add_seconds(jt, v, dt);
    }
    jt->last_now = res->now;
    const char *when = jt->total_gpus > 0 && cluster_busy(res) < jt->total_gpus ? " [GPUs idle]"
                                                                                : " [cluster full]";
    for (guint i = 0; i < res->job_statuses->len; i++) {
        const KbJobStatus *st = &g_array_index(res->job_statuses, KbJobStatus, i);
        trace_one(jt, res, st);
        if (!jt->reasons)
            continue;
        if (!job_waits(st)) {
            g_hash_table_remove(jt->holding, st->job);
            continue;
        }
        g_autofree char *m = g_strconcat(st->message != NULL ? st->message : "", when, NULL);
        g_autofree char *f = kb_jobtrace_fold(m);
        g_hash_table_insert(jt->holding, g_strdup(st->job), (gpointer)g_intern_string(f));
    }
}

double kb_jobtrace_seconds(const KbJobTrace *jt, const char *part)
{
    double sum = 0;
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, jt->seconds);
    while (g_hash_table_iter_next(&it, &k, &v))
        if (part == NULL || strstr(k, part) != NULL)
            sum += *(double *)v;
    return sum;
}

static gint by_seconds(gconstpointer a, gconstpointer b, gpointer data)
{
    GHashTable *seconds = data;
    double x = *(double *)g_hash_table_lookup(seconds, *(gpointer const *)a);
    double y = *(double *)g_hash_table_lookup(seconds, *(gpointer const *)b);
    return x > y ? -1 : x < y ? 1 : strcmp(*(char *const *)a, *(char *const *)b);
}

void kb_jobtrace_print(const KbJobTrace *jt, guint top)
{
    g_autoptr(GPtrArray) keys = g_ptr_array_new();
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, jt->seconds);
    while (g_hash_table_iter_next(&it, &k, NULL))
        g_ptr_array_add(keys, k);
    g_ptr_array_sort_with_data(keys, by_seconds, jt->seconds);
    double total = 0;
    for (guint i = 0; i < keys->len; i++)
        total += *(double *)g_hash_table_lookup(jt->seconds, keys->pdata[i]);
    fprintf(jt->out, "  why jobs waited     %.0f job-hours in all\n", total / 3600);
    for (guint i = 0; i < keys->len && i < top; i++) {
        double s = *(double *)g_hash_table_lookup(jt->seconds, keys->pdata[i]);
        fprintf(jt->out, "    %10.0f h %5.1f%%  %.160s\n", s / 3600,
                total > 0 ? 100 * s / total : 0, (const char *)keys->pdata[i]);
    }
}
