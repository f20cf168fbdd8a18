/* Fairness per window of a replay; see fairness.h. */
#include "bench/lib/fairness.h"

#include <math.h>
#include <string.h>

typedef struct {
    double held_s, demand_s;
} Cell;

typedef struct {
    const char *name; /* interned */
    double weight;
    gint64 held, demand; /* GPUs since the last sample */
    GArray *cells;       /* Cell per window */
} Track;

struct KbFairness {
    gint64 total_gpus, window;
    gint64 t0, last; /* first and last sample; -1 before the first */
    GPtrArray *tracks;
    GHashTable *by_name; /* interned name -> Track* */
};

static void track_free(gpointer p)
{
    Track *t = p;
    g_array_unref(t->cells);
    g_free(t);
}

KbFairness *kb_fairness_new(gint64 total_gpus, gint64 window)
{
    KbFairness *f = g_new0(KbFairness, 1);
    f->total_gpus = total_gpus;
    f->window = MAX(window, 1);
    f->t0 = f->last = -1;
    f->tracks = g_ptr_array_new_with_free_func(track_free);
    f->by_name = g_hash_table_new(g_direct_hash, g_direct_equal);
    return f;
}

void kb_fairness_free(KbFairness *f)
{
    if (f == NULL)
        return;
    g_ptr_array_unref(f->tracks);
    g_hash_table_unref(f->by_name);
    g_free(f);
}

static Cell *cell(Track *t, guint w)
{
    if (t->cells->len <= w)
        g_array_set_size(t->cells, w + 1);
    return &g_array_index(t->cells, Cell, w);
}

/* Add every queue's last sample over [f->last, @now), split at window boundaries. */
static void advance(KbFairness *f, gint64 now)
{
    gint64 t = f->last;
    while (t < now) {
        guint w = (guint)((t - f->t0) / f->window);
        gint64 end = MIN(now, f->t0 + (gint64)(w + 1) * f->window);
        double dt = (double)(end - t);
        for (guint i = 0; i < f->tracks->len; i++) {
            Track *tr = f->tracks->pdata[i];
            Cell *c = cell(tr, w);
            c->held_s += dt * (double)tr->held;
            c->demand_s += dt * (double)tr->demand;
        }
        t = end;
    }
    f->last = now;
}

void kb_fairness_on_cycle(const KbCycleResult *res, gpointer data)
{
    KbFairness *f = data;
    if (f->t0 < 0)
        f->t0 = f->last = res->now;
    advance(f, res->now);
    for (guint i = 0; i < res->queue_statuses->len; i++) {
        const KbQueueStatus *st = &g_array_index(res->queue_statuses, KbQueueStatus, i);
        if (st->parent != NULL && strcmp(st->parent, "root") != 0)
            continue; /* a flat view: the top-level queues */
        const char *name = g_intern_string(st->name);
        Track *t = g_hash_table_lookup(f->by_name, name);
        if (t == NULL) {
            t = g_new0(Track, 1);
            t->name = name;
            t->cells = g_array_new(FALSE, TRUE, sizeof(Cell));
            g_ptr_array_add(f->tracks, t);
            g_hash_table_insert(f->by_name, (gpointer)name, t);
        }
        t->weight = MAX(st->weight, 1);
        t->held = st->allocated.v[KB_RES_GPU] / KB_GPU_MILLI;
        t->demand = MAX(st->request.v[KB_RES_GPU] / KB_GPU_MILLI, t->held);
    }
}

/* Entitlements of window @w: its capacity water-filled by weight, capped by demand. */
static void entitle(KbFairness *f, guint w, double cap, double *ent)
{
    guint n = f->tracks->len;
    g_autofree gboolean *fixed = g_new0(gboolean, n);
    double left = cap;
    for (;;) {
        double wsum = 0;
        for (guint i = 0; i < n; i++) {
            Track *t = f->tracks->pdata[i];
            if (!fixed[i] && w < t->cells->len && g_array_index(t->cells, Cell, w).demand_s > 0)
                wsum += t->weight;
        }
        if (wsum <= 0 || left <= 0)
            break;
        double level = left / wsum;
        gboolean capped = FALSE;
        for (guint i = 0; i < n; i++) {
            Track *t = f->tracks->pdata[i];
            if (fixed[i] || w >= t->cells->len)
                continue;
            double d = g_array_index(t->cells, Cell, w).demand_s;
            if (d > 0 && d <= level * t->weight) {
                ent[i] = d;
                left -= d;
                fixed[i] = capped = TRUE;
            }
        }
        if (capped)
            continue;
        for (guint i = 0; i < n; i++) {
            Track *t = f->tracks->pdata[i];
            if (!fixed[i] && w < t->cells->len && g_array_index(t->cells, Cell, w).demand_s > 0)
                ent[i] = level * t->weight;
        }
        break;
    }
}

static guint n_windows(const KbFairness *f)
{
    guint n = 0;
    for (guint i = 0; i < f->tracks->len; i++)
        n = MAX(n, ((Track *)f->tracks->pdata[i])->cells->len);
    return n;
}

/* Ratios of window @w into @ratio (-1 where not entitled); the number entitled. */
static guint window_ratios(KbFairness *f, guint w, gint64 end, double *ratio)
{
    guint n = f->tracks->len;
    g_autofree double *ent = g_new0(double, n);
    gint64 start = f->t0 + (gint64)w * f->window;
    double len = (double)(MIN(end, start + f->window) - start);
    entitle(f, w, len * (double)f->total_gpus, ent);
    guint k = 0;
    for (guint i = 0; i < n; i++) {
        Track *t = f->tracks->pdata[i];
        ratio[i] = -1;
        if (ent[i] >= 3600 && w < t->cells->len) {
            ratio[i] = g_array_index(t->cells, Cell, w).held_s / ent[i];
            k++;
        }
    }
    return k;
}

void kb_fairness_summary(KbFairness *f, gint64 end, KbFairnessSummary *out)
{
    memset(out, 0, sizeof(*out));
    out->worst_min = out->jain_min = INFINITY;
    if (f->t0 >= 0)
        advance(f, end);
    guint nw = n_windows(f), n = f->tracks->len;
    g_autofree double *ratio = g_new0(double, MAX(n, 1));
    for (guint w = 0; w < nw; w++) {
        if (window_ratios(f, w, end, ratio) < 2)
            continue;
        double worst = INFINITY, sum = 0, sum_sq = 0;
        guint k = 0;
        for (guint i = 0; i < n; i++) {
            if (ratio[i] < 0)
                continue;
            if (ratio[i] < worst)
                worst = ratio[i];
            if (ratio[i] < out->worst_min) {
                out->worst_min = ratio[i];
                out->worst_min_window = w;
                out->worst_queue = ((Track *)f->tracks->pdata[i])->name;
            }
            sum += ratio[i];
            sum_sq += ratio[i] * ratio[i];
            k++;
        }
        double jain = sum_sq > 0 ? sum * sum / (k * sum_sq) : 1;
        out->n_windows++;
        out->worst_mean += worst;
        out->jain_mean += jain;
        out->jain_min = MIN(out->jain_min, jain);
    }
    if (out->n_windows > 0) {
        out->worst_mean /= out->n_windows;
        out->jain_mean /= out->n_windows;
    } else {
        out->worst_min = out->jain_min = 0;
    }
}

void kb_fairness_print(KbFairness *f, gint64 end, FILE *out)
{
    KbFairnessSummary s;
    kb_fairness_summary(f, end, &s);
    fprintf(out,
            "  fairness by window   %u windows of %.0f h with >= 2 queues entitled; worst queue's "
            "received/entitled GPU-hours: mean %.3f, lowest %.3f (%s, window %u); Jain per "
            "window: mean %.3f, lowest %.3f\n",
            s.n_windows, (double)f->window / 3600, s.worst_mean, s.worst_min,
            s.worst_queue != NULL ? s.worst_queue : "-", s.worst_min_window, s.jain_mean,
            s.jain_min);
}
