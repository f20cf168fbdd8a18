/* Decayed usage per queue; see usage.h. */
#include "scheduler/usage.h"

#include <math.h>

#include "scheduler/queue-tree.h"

typedef struct {
    double v[KB_RES_MAX];
    gint64 t; /* the time v is at; -1: never advanced */
} Entry;

struct KbUsage {
    GHashTable *by_queue; /* interned name -> Entry* */
};

KbUsage *kb_usage_new(void)
{
    KbUsage *u = g_new0(KbUsage, 1);
    u->by_queue = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    return u;
}

void kb_usage_free(KbUsage *u)
{
    if (u == NULL)
        return;
    g_hash_table_unref(u->by_queue);
    g_free(u);
}

static Entry *entry(KbUsage *u, const char *queue)
{
    const char *key = g_intern_string(queue);
    Entry *e = g_hash_table_lookup(u->by_queue, key);
    if (e == NULL) {
        e = g_new0(Entry, 1);
        e->t = -1;
        g_hash_table_insert(u->by_queue, (gpointer)key, e);
    }
    return e;
}

void kb_usage_advance(KbUsage *u, const char *queue, const KbResources *held, gint64 now,
                      gint64 half_life)
{
    Entry *e = entry(u, queue);
    if (e->t < 0 || half_life <= 0) {
        e->t = MAX(e->t, now);
        return;
    }
    if (now <= e->t)
        return;
    double dt = (double)(now - e->t), h = (double)half_life;
    double keep = exp2(-dt / h), gain = h / M_LN2 * (1 - keep);
    for (guint i = 0; i < KB_QTREE_N_SLOTS; i++) {
        int s = kb_qtree_slots[i];
        e->v[s] = e->v[s] * keep + (double)MAX(held->v[s], 0) * gain;
    }
    e->t = now;
}

double kb_usage_get(const KbUsage *u, const char *queue, int slot)
{
    const Entry *e = g_hash_table_lookup(u->by_queue, g_intern_string(queue));
    return e != NULL && slot >= 0 && slot < KB_RES_MAX ? e->v[slot] : 0;
}

void kb_usage_set(KbUsage *u, const char *queue, int slot, double value, gint64 t)
{
    if (slot < 0 || slot >= KB_RES_MAX || !(value >= 0))
        return;
    Entry *e = entry(u, queue);
    e->v[slot] = value;
    e->t = t;
}

gint64 kb_usage_time(const KbUsage *u, const char *queue)
{
    const Entry *e = g_hash_table_lookup(u->by_queue, g_intern_string(queue));
    return e != NULL ? e->t : -1;
}

gboolean kb_usage_restore(KbUsage *u, const char *queue, const double *values, gint64 t)
{
    if (t <= 0)
        return FALSE;
    Entry *e = entry(u, queue);
    if (e->t >= t)
        return FALSE;
    for (int s = 0; s < KB_RES_MAX; s++)
        e->v[s] = values[s] >= 0 ? values[s] : 0;
    e->t = t;
    return TRUE;
}
