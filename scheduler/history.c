/* Runtimes of finished jobs per queue and size bucket; see history.h. */
#include "scheduler/history.h"

#include <stdlib.h>
#include <string.h>

#define N_BUCKETS     6
#define MAX_QUEUES    4096  /* queues with samples; more are not recorded (bounded memory) */
#define MAX_UNSTAMPED 10000 /* finished jobs awaiting a stamp (none comes without reserve) */

typedef struct {
    gint64 runtime[KB_HISTORY_KEEP];
    guint n;    /* samples held (<= KB_HISTORY_KEEP) */
    guint next; /* ring position of the next sample */
} Ring;

typedef struct {
    Ring bucket[N_BUCKETS];
} QueueHistory;

typedef struct {
    const char *queue;
    gint64 gpus;
    gint64 started;
} Finished;

struct KbHistory {
    GHashTable *queues; /* interned name -> QueueHistory* */
    GArray *finished;   /* Finished, not stamped yet */
};

static guint bucket_of(gint64 gpus)
{
    if (gpus <= 0)
        return 0;
    if (gpus == 1)
        return 1;
    if (gpus <= 4)
        return 2;
    if (gpus <= 8)
        return 3;
    if (gpus <= 16)
        return 4;
    return 5;
}

KbHistory *kb_history_new(void)
{
    KbHistory *h = g_new0(KbHistory, 1);
    h->queues = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    h->finished = g_array_new(FALSE, FALSE, sizeof(Finished));
    return h;
}

void kb_history_free(KbHistory *h)
{
    if (h == NULL)
        return;
    g_hash_table_unref(h->queues);
    g_array_unref(h->finished);
    g_free(h);
}

void kb_history_finished(KbHistory *h, const char *queue, gint64 gpus, gint64 started)
{
    if (h == NULL || queue == NULL || started <= 0 || h->finished->len >= MAX_UNSTAMPED)
        return;
    Finished f = {g_intern_string(queue), gpus, started};
    g_array_append_val(h->finished, f);
}

void kb_history_add(KbHistory *h, const char *queue, gint64 gpus, gint64 runtime)
{
    if (h == NULL || queue == NULL || runtime < 0)
        return;
    queue = g_intern_string(queue);
    QueueHistory *qh = g_hash_table_lookup(h->queues, queue);
    if (qh == NULL) {
        if (g_hash_table_size(h->queues) >= MAX_QUEUES)
            return;
        qh = g_new0(QueueHistory, 1);
        g_hash_table_insert(h->queues, (gpointer)queue, qh);
    }
    Ring *r = &qh->bucket[bucket_of(gpus)];
    r->runtime[r->next] = MAX(runtime, 1);
    r->next = (r->next + 1) % KB_HISTORY_KEEP;
    r->n = MIN(r->n + 1, KB_HISTORY_KEEP);
}

void kb_history_stamp(KbHistory *h, gint64 now)
{
    if (h == NULL)
        return;
    for (guint i = 0; i < h->finished->len; i++) {
        const Finished *f = &g_array_index(h->finished, Finished, i);
        kb_history_add(h, f->queue, f->gpus, now - f->started);
    }
    g_array_set_size(h->finished, 0);
}

static int cmp_i64(const void *x, const void *y)
{
    gint64 a = *(const gint64 *)x, b = *(const gint64 *)y;
    return a < b ? -1 : a > b;
}

gint64 kb_history_estimate(const KbHistory *h, const char *queue, gint64 gpus)
{
    if (h == NULL || queue == NULL)
        return -1;
    const QueueHistory *qh = g_hash_table_lookup(h->queues, g_intern_string(queue));
    if (qh == NULL)
        return -1;
    const Ring *r = &qh->bucket[bucket_of(gpus)];
    if (r->n < KB_HISTORY_MIN_SAMPLES)
        return -1;
    gint64 v[KB_HISTORY_KEEP];
    memcpy(v, r->runtime, sizeof(gint64) * r->n);
    qsort(v, r->n, sizeof(gint64), cmp_i64);
    /* Nearest rank: the smallest sample with at least PERCENTILE% of them at or below it. */
    guint rank = (r->n * KB_HISTORY_PERCENTILE + 99) / 100;
    return v[MAX(rank, 1) - 1];
}
