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
    gint64 time;     /* when a sample was last stamped or restored (unix seconds), 0: never */
    gint64 exported; /* the time of the samples last exported or restored */
    guint64 round;   /* the kb_history_stamp call that last added samples */
} QueueHistory;

G_STATIC_ASSERT(N_BUCKETS == KB_QUEUE_HISTORY_BUCKETS);
G_STATIC_ASSERT(KB_HISTORY_KEEP == KB_QUEUE_HISTORY_KEEP);

typedef struct {
    const char *queue;
    gint64 gpus;
    gint64 started;
} Finished;

struct KbHistory {
    GHashTable *queues; /* interned name -> QueueHistory* */
    GArray *finished;   /* Finished, not stamped yet */
    guint64 round;      /* kb_history_stamp calls so far, from 1 */
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
    h->round = 1;
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

/* @queue's entry, created when missing (NULL past MAX_QUEUES). */
static QueueHistory *queue_entry(KbHistory *h, const char *queue)
{
    queue = g_intern_string(queue);
    QueueHistory *qh = g_hash_table_lookup(h->queues, queue);
    if (qh == NULL) {
        if (g_hash_table_size(h->queues) >= MAX_QUEUES)
            return NULL;
        qh = g_new0(QueueHistory, 1);
        g_hash_table_insert(h->queues, (gpointer)queue, qh);
    }
    return qh;
}

static void ring_push(Ring *r, gint64 runtime)
{
    r->runtime[r->next] = MAX(runtime, 1);
    r->next = (r->next + 1) % KB_HISTORY_KEEP;
    r->n = MIN(r->n + 1, KB_HISTORY_KEEP);
}

void kb_history_add(KbHistory *h, const char *queue, gint64 gpus, gint64 runtime)
{
    if (h == NULL || queue == NULL || runtime < 0)
        return;
    QueueHistory *qh = queue_entry(h, queue);
    if (qh != NULL)
        ring_push(&qh->bucket[bucket_of(gpus)], runtime);
}

void kb_history_stamp(KbHistory *h, gint64 now)
{
    if (h == NULL)
        return;
    for (guint i = 0; i < h->finished->len; i++) {
        const Finished *f = &g_array_index(h->finished, Finished, i);
        QueueHistory *qh = queue_entry(h, f->queue);
        if (qh == NULL)
            continue;
        ring_push(&qh->bucket[bucket_of(f->gpus)], now - f->started);
        /* Each change gets a later time, even within one second (the status says seconds): an
         * export or a restore tells changes apart by it. */
        if (qh->round != h->round)
            qh->time = MAX(qh->time + 1, now);
        qh->round = h->round;
    }
    h->round++;
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

gboolean kb_history_export(KbHistory *h, const char *queue, KbQueueHistory *out)
{
    QueueHistory *qh = h != NULL && queue != NULL
                               ? g_hash_table_lookup(h->queues, g_intern_string(queue))
                               : NULL;
    if (qh == NULL || qh->time <= qh->exported)
        return FALSE;
    qh->exported = qh->time;
    memset(out, 0, sizeof *out);
    out->time = qh->time;
    for (guint b = 0; b < N_BUCKETS; b++) {
        const Ring *r = &qh->bucket[b];
        /* Oldest first: the ring's next slot holds the oldest once it is full. */
        guint first = r->n < KB_HISTORY_KEEP ? 0 : r->next;
        for (guint i = 0; i < r->n; i++)
            out->runtime[b][i] = r->runtime[(first + i) % KB_HISTORY_KEEP];
        out->n[b] = (guint8)r->n;
    }
    return TRUE;
}

gboolean kb_history_restore(KbHistory *h, const char *queue, const KbQueueHistory *in)
{
    if (h == NULL || queue == NULL || in == NULL || in->time <= 0)
        return FALSE;
    QueueHistory *qh = queue_entry(h, queue);
    if (qh == NULL || qh->time >= in->time)
        return FALSE;
    for (guint b = 0; b < N_BUCKETS; b++) {
        Ring *r = &qh->bucket[b];
        memset(r, 0, sizeof *r);
        for (guint i = 0; i < MIN(in->n[b], KB_HISTORY_KEEP); i++)
            ring_push(r, in->runtime[b][i]);
    }
    qh->time = qh->exported = in->time;
    return TRUE;
}
