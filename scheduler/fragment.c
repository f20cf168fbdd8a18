/* GPU fragmentation as FGD measures it (see fragment.h). */
#include "scheduler/fragment.h"

#include <math.h>
#include <string.h>

/* Weights only grow (each new observation weighs growth^k times the first), which is the same as
 * decaying the old ones; they are scaled down together before they overflow. */
#define RESCALE_AT 1e100

struct KbFragModel {
    KbFragShape shape[KB_FRAG_MAX_SHAPES];
    double weight[KB_FRAG_MAX_SHAPES];
    guint n;
    double total; /* sum of weight[] */
    double inc;   /* the next observation's weight */
    double growth;
    guint gen;
    GHashTable *uids; /* kb_frag_model_observe_pod's; NULL until used */
    /* Shapes that ask the same of the GPUs (gpus, milli) differ only in CPU: a node's GPU side
     * is judged once per such group (group[i]: shape i's index in need[]). */
    KbFragShape need[KB_FRAG_MAX_SHAPES];
    guint group[KB_FRAG_MAX_SHAPES];
    guint n_need;
};

KbFragModel *kb_frag_model_new(double half_life)
{
    KbFragModel *m = g_new0(KbFragModel, 1);
    m->inc = 1;
    m->growth = pow(2.0, 1.0 / MAX(half_life, 1.0));
    return m;
}

void kb_frag_model_free(KbFragModel *m)
{
    if (m == NULL)
        return;
    g_clear_pointer(&m->uids, g_hash_table_unref);
    g_free(m);
}

KbFragModel *kb_frag_model_copy(const KbFragModel *m)
{
    KbFragModel *c = g_memdup2(m, sizeof(*m));
    c->uids = NULL;
    return c;
}

/* The groups of shapes asking the same GPUs, rebuilt when a shape is added (at most
 * KB_FRAG_MAX_SHAPES^2 comparisons, only for a shape not seen before). */
static void regroup(KbFragModel *m)
{
    m->n_need = 0;
    for (guint i = 0; i < m->n; i++) {
        guint k = 0;
        while (k < m->n_need &&
               (m->need[k].gpus != m->shape[i].gpus || m->need[k].milli != m->shape[i].milli))
            k++;
        if (k == m->n_need)
            m->need[m->n_need++] = (KbFragShape){0, m->shape[i].gpus, m->shape[i].milli};
        m->group[i] = k;
    }
}

static gboolean same_shape(const KbFragShape *a, const KbFragShape *b)
{
    return a->cpu == b->cpu && a->gpus == b->gpus && a->milli == b->milli;
}

static int find_shape(const KbFragModel *m, const KbFragShape *s)
{
    for (guint i = 0; i < m->n; i++)
        if (same_shape(&m->shape[i], s))
            return (int)i;
    return -1;
}

/* The slot for a shape not kept yet: a free one, else the lightest one's (forgotten). */
static guint new_slot(KbFragModel *m)
{
    if (m->n < KB_FRAG_MAX_SHAPES)
        return m->n++;
    guint light = 0;
    for (guint i = 1; i < m->n; i++)
        if (m->weight[i] < m->weight[light])
            light = i;
    m->total -= m->weight[light];
    m->weight[light] = 0;
    return light;
}

gboolean kb_frag_model_observe(KbFragModel *m, const KbFragShape *s)
{
    if (s->gpus > KB_FRAG_MAX_GPUS || s->milli > KB_FRAG_MILLI ||
        (s->gpus > 1 && s->milli != KB_FRAG_MILLI) || (s->gpus == 0) != (s->milli == 0) ||
        s->cpu < 0)
        return FALSE;
    int i = find_shape(m, s);
    if (i < 0) {
        i = (int)new_slot(m);
        m->shape[i] = *s;
        regroup(m);
    }
    m->weight[i] += m->inc;
    m->total += m->inc;
    m->inc *= m->growth;
    if (m->inc > RESCALE_AT) {
        for (guint k = 0; k < m->n; k++)
            m->weight[k] /= m->inc;
        m->total /= m->inc;
        m->inc = 1;
    }
    m->gen++;
    return TRUE;
}

gboolean kb_frag_model_observe_pod(KbFragModel *m, const char *uid, const KbFragShape *s)
{
    if (m->uids == NULL)
        m->uids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    if (uid == NULL || g_hash_table_contains(m->uids, uid))
        return FALSE;
    if (!kb_frag_model_observe(m, s))
        return FALSE;
    if (g_hash_table_size(m->uids) >= KB_FRAG_MAX_UIDS)
        g_hash_table_remove_all(m->uids);
    g_hash_table_add(m->uids, g_strdup(uid));
    return TRUE;
}

guint kb_frag_model_shapes(const KbFragModel *m)
{
    return m->n;
}

guint kb_frag_model_gen(const KbFragModel *m)
{
    return m->gen;
}

double kb_frag_model_share(const KbFragModel *m, const KbFragShape *s)
{
    int i = find_shape(m, s);
    return i < 0 || m->total <= 0 ? 0 : m->weight[i] / m->total;
}

gboolean kb_frag_fits(const KbFragNode *n, const KbFragShape *s)
{
    if (n->cpu < s->cpu)
        return FALSE;
    if (s->gpus == 0)
        return TRUE;
    guint whole = 0;
    for (guint g = 0; g < n->n_gpus; g++) {
        if (s->milli < KB_FRAG_MILLI && n->free[g] >= s->milli)
            return TRUE;
        whole += n->free[g] == KB_FRAG_MILLI;
    }
    return s->milli == KB_FRAG_MILLI && whole >= s->gpus;
}

/* What one pass over a node's GPUs tells every whole-GPU demand. */
typedef struct {
    guint total; /* free milli-GPUs */
    guint whole; /* GPUs wholly free */
    guint part;  /* free milli-GPUs of the GPUs with less than a whole one free */
} GpuTally;

/*
 * The free milli-GPUs of @n that GPU demand @need cannot use when the CPU fits: all of them when
 * it asks for no GPU or its GPUs do not fit, else those of GPUs with less room than it asks. A
 * demand of whole GPUs is answered from @tally alone (it fits when enough GPUs are wholly free,
 * and loses the rest), so a node is read once for all of them rather than twice per demand:
 * fgd scores every candidate node of every pod with this.
 */
static guint need_fragment(const KbFragNode *n, const KbFragShape *need, const GpuTally *tally)
{
    if (need->gpus == 0)
        return tally->total;
    if (need->milli == KB_FRAG_MILLI)
        return tally->whole >= need->gpus ? tally->part : tally->total;
    /* a fraction of one GPU: it fits where some GPU has the room */
    gboolean fits = FALSE;
    guint lost = 0;
    for (guint g = 0; g < n->n_gpus; g++) {
        if (n->free[g] < need->milli)
            lost += n->free[g];
        else
            fits = TRUE;
    }
    return fits ? lost : tally->total;
}

double kb_frag_node(const KbFragModel *m, const KbFragNode *n)
{
    GpuTally tally = {0, 0, 0};
    for (guint g = 0; g < n->n_gpus; g++) {
        tally.total += n->free[g];
        if (n->free[g] == KB_FRAG_MILLI)
            tally.whole++;
        else if (n->free[g] < KB_FRAG_MILLI)
            tally.part += n->free[g];
    }
    if (tally.total == 0 || m->total <= 0)
        return 0;
    guint lost[KB_FRAG_MAX_SHAPES];
    for (guint k = 0; k < m->n_need; k++)
        lost[k] = need_fragment(n, &m->need[k], &tally);
    double f = 0;
    for (guint i = 0; i < m->n; i++)
        if (m->weight[i] > 0)
            f += m->weight[i] * (n->cpu < m->shape[i].cpu ? tally.total : lost[m->group[i]]);
    return f / m->total;
}

void kb_frag_memo_init(KbFragMemo *memo)
{
    memset(memo, 0, sizeof(*memo));
}

gboolean kb_frag_memo_keeps(const KbFragNode *n)
{
    for (guint g = 0; g < n->n_gpus; g++) {
        if (n->free[g] != 0 && n->free[g] != KB_FRAG_MILLI)
            return FALSE;
    }
    return TRUE;
}

/* @memo's entry for @whole free GPUs and @cpu, NULL when it has none for @m as it is now. */
static double *memo_entry(const KbFragModel *m, KbFragMemo *memo, gint64 cpu, guint whole)
{
    if (memo->gen != m->gen) {
        memset(memo->valid, 0, sizeof(memo->valid));
        memo->gen = m->gen;
    }
    return memo->valid[whole] && memo->cpu[whole] == cpu ? &memo->value[whole] : NULL;
}

static double memo_store(KbFragMemo *memo, gint64 cpu, guint whole, double value)
{
    memo->value[whole] = value;
    memo->cpu[whole] = cpu;
    memo->valid[whole] = TRUE;
    return value;
}

double kb_frag_node_memo(const KbFragModel *m, KbFragMemo *memo, const KbFragNode *n)
{
    if (memo == NULL)
        return kb_frag_node(m, n);
    guint whole = 0;
    for (guint g = 0; g < n->n_gpus; g++) {
        if (n->free[g] == KB_FRAG_MILLI)
            whole++;
        else if (n->free[g] != 0)
            return kb_frag_node(m, n); /* a GPU partly used: the memo's key does not say it */
    }
    const double *hit = memo_entry(m, memo, n->cpu, whole);
    return hit != NULL ? *hit : memo_store(memo, n->cpu, whole, kb_frag_node(m, n));
}

double kb_frag_whole_memo(const KbFragModel *m, KbFragMemo *memo, gint64 cpu, guint whole)
{
    whole = MIN(whole, KB_FRAG_MAX_GPUS);
    const double *hit = memo_entry(m, memo, cpu, whole);
    if (hit != NULL)
        return *hit;
    KbFragNode n = {cpu, whole, {0}};
    for (guint g = 0; g < whole; g++)
        n.free[g] = KB_FRAG_MILLI;
    return memo_store(memo, cpu, whole, kb_frag_node(m, &n));
}

void kb_frag_take(KbFragNode *n, const KbFragShape *s, int gpu)
{
    n->cpu -= s->cpu;
    if (s->gpus == 0)
        return;
    if (s->milli < KB_FRAG_MILLI) {
        if (gpu >= 0 && (guint)gpu < n->n_gpus)
            n->free[gpu] -= MIN(s->milli, n->free[gpu]);
        return;
    }
    guint k = s->gpus;
    for (guint g = 0; g < n->n_gpus && k > 0; g++)
        if (n->free[g] == KB_FRAG_MILLI) {
            n->free[g] = 0;
            k--;
        }
}

/* A fraction on @n: the GPU whose placement leaves the least fragmentation (*@best_f). GPUs with
 * the same room give the same result, so each amount of room is tried once. */
static int best_gpu(const KbFragModel *m, KbFragMemo *memo, const KbFragNode *n,
                    const KbFragShape *s, double *best_f)
{
    int best = -1;
    for (guint g = 0; g < n->n_gpus; g++) {
        if (n->free[g] < s->milli)
            continue;
        gboolean seen = FALSE;
        for (guint h = 0; h < g && !seen; h++)
            seen = n->free[h] == n->free[g];
        if (seen)
            continue;
        KbFragNode after = *n;
        kb_frag_take(&after, s, (int)g);
        double f = kb_frag_node_memo(m, memo, &after);
        /* within rounding, the GPU most used already */
        double eps = 1e-9 * MAX(1.0, fabs(*best_f));
        if (best < 0 || f < *best_f - eps || (f <= *best_f + eps && n->free[g] < n->free[best])) {
            best = (int)g;
            *best_f = f;
        }
    }
    return best;
}

double kb_frag_place_after(const KbFragModel *m, const KbFragNode *n, const KbFragShape *s, int gpu,
                           int *chosen)
{
    return kb_frag_place_after_memo(m, NULL, n, s, gpu, chosen);
}

double kb_frag_place_after_memo(const KbFragModel *m, KbFragMemo *memo, const KbFragNode *n,
                                const KbFragShape *s, int gpu, int *chosen)
{
    if (chosen != NULL)
        *chosen = -1;
    if (!kb_frag_fits(n, s))
        return G_MAXDOUBLE;
    if (s->gpus == 1 && s->milli < KB_FRAG_MILLI) {
        double f = G_MAXDOUBLE;
        if (gpu >= 0) {
            if ((guint)gpu >= n->n_gpus || n->free[gpu] < s->milli)
                return G_MAXDOUBLE;
            KbFragNode after = *n;
            kb_frag_take(&after, s, gpu);
            f = kb_frag_node_memo(m, memo, &after);
        } else {
            gpu = best_gpu(m, memo, n, s, &f);
        }
        if (chosen != NULL)
            *chosen = gpu;
        return f;
    }
    KbFragNode after = *n;
    kb_frag_take(&after, s, -1);
    return kb_frag_node_memo(m, memo, &after);
}
