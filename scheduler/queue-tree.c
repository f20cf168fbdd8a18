/* The queue tree and its deserved shares; see queue-tree.h. */
#include "scheduler/queue-tree.h"

#include <math.h>
#include <string.h>

const int kb_qtree_slots[KB_QTREE_N_SLOTS] = {KB_RES_GPU, KB_RES_CPU, KB_RES_MEMORY};

#define LIMITED(v) ((v) != KB_RESOURCE_UNLIMITED)

void kb_qtree_free(KbQueueTree *t)
{
    if (t == NULL)
        return;
    for (guint i = 0; i <= t->n_queues; i++)
        g_free(t->fault_message[i]);
    g_free(t->parent);
    g_free(t->depth);
    g_free(t->first_child);
    g_free(t->next_sibling);
    g_free(t->n_children);
    g_free(t->order);
    g_free(t->held);
    g_free(t->fault);
    g_free(t->fault_message);
    g_free(t->name);
    g_free(t->weight);
    g_free(t->capability);
    g_free(t->guarantee);
    g_free(t->fixed);
    g_free(t->demand);
    g_free(t->deserved);
    g_free(t->alloc);
    g_free(t);
}

static KbQueueTree *tree_alloc(guint nq)
{
    guint n = nq + 1;
    KbQueueTree *t = g_new0(KbQueueTree, 1);
    t->n_queues = nq;
    t->root = nq;
    t->root_alias = -1;
    t->parent = g_new(gint, n);
    t->depth = g_new0(guint, n);
    t->first_child = g_new(gint, n);
    t->next_sibling = g_new(gint, n);
    t->n_children = g_new0(guint, n);
    t->order = g_new(guint, n);
    t->held = g_new0(guint8, n);
    t->fault = g_new0(KbQtreeFault, n);
    t->fault_message = g_new0(char *, n);
    t->name = g_new0(const char *, n);
    t->weight = g_new(double, n);
    t->capability = g_new(KbResources, n);
    t->guarantee = g_new0(KbResources, n);
    t->fixed = g_new(KbResources, n);
    t->demand = g_new0(KbResources, n);
    t->deserved = g_new0(KbResources, n);
    t->alloc = g_new0(KbResources, n);
    for (guint i = 0; i < n; i++) {
        t->parent[i] = -1;
        t->first_child[i] = -1;
        t->next_sibling[i] = -1;
        kb_resources_set_unlimited(&t->deserved[i]); /* until kb_qtree_compute */
    }
    return t;
}

static void set_fault(KbQueueTree *t, guint node, KbQtreeFault f, char *message)
{
    if (t->fault[node] != KB_QTREE_FAULT_NONE) {
        g_free(message); /* the first fault found is the one reported */
        return;
    }
    t->fault[node] = f;
    t->fault_message[node] = message;
}

/* Resolve parent names; a missing parent is a fault of the child. */
static void link_parents(KbQueueTree *t, const KbQtreeQueue *qs, guint nq)
{
    /* Built at the first queue with a parent: flat queues (most setups, every cycle) need none. */
    g_autoptr(GHashTable) by_name = NULL;
    for (guint i = 0; i < nq; i++) {
        if (strcmp(qs[i].name, "root") == 0) {
            /* Volcano's root Queue object stands for the implicit root (see the header). */
            t->root_alias = (gint)i;
            continue;
        }
        if (qs[i].parent == NULL || strcmp(qs[i].parent, "root") == 0) {
            t->parent[i] = (gint)t->root;
            continue;
        }
        if (by_name == NULL) {
            by_name = g_hash_table_new(g_direct_hash, g_direct_equal);
            for (guint k = 0; k < nq; k++)
                g_hash_table_insert(by_name, (gpointer)g_intern_string(qs[k].name),
                                    GUINT_TO_POINTER(k + 1));
        }
        guint p = GPOINTER_TO_UINT(g_hash_table_lookup(by_name, g_intern_string(qs[i].parent)));
        if (p == 0) {
            set_fault(t, i, KB_QTREE_FAULT_PARENT_NOT_FOUND,
                      g_strdup_printf("queue \"%s\": parent queue \"%s\" does not exist",
                                      qs[i].name, qs[i].parent));
            continue;
        }
        t->parent[i] = (gint)(p - 1);
        t->n_children[p - 1]++;
    }
}

/*
 * Cycles: walking up from each queue either reaches the root, a queue without a parent (missing),
 * or a queue already on the walk. Every queue on a cycle gets the fault, naming the whole cycle.
 */
static void find_cycles(KbQueueTree *t)
{
    guint nq = t->n_queues;
    g_autofree guint *mark = g_new0(guint, nq + 1); /* 0 new, walk id + 1 while on walk w */
    g_autofree guint8 *done = g_new0(guint8, nq + 1);
    for (guint start = 0; start < nq; start++) {
        gint x = (gint)start;
        while (x >= 0 && (guint)x != t->root && !done[x] && mark[x] == 0) {
            mark[x] = start + 1;
            x = t->parent[x];
        }
        if (x >= 0 && (guint)x != t->root && !done[x] && mark[x] == start + 1) {
            /* x is on a cycle: name it from x round to x. */
            g_autoptr(GString) s = g_string_new(NULL);
            gint y = x;
            do {
                g_string_append_printf(s, "\"%s\" -> ", t->name[y]);
                y = t->parent[y];
            } while (y != x);
            g_string_append_printf(s, "\"%s\"", t->name[x]);
            y = x;
            do {
                set_fault(t, (guint)y, KB_QTREE_FAULT_CYCLE,
                          g_strdup_printf("queue \"%s\": spec.parent forms a cycle: %s", t->name[y],
                                          s->str));
                y = t->parent[y];
            } while (y != x);
        }
        for (x = (gint)start; x >= 0 && (guint)x != t->root && !done[x]; x = t->parent[x])
            done[x] = 1;
    }
    /* Queues in a cycle are not under the root: cut them off so that walks up terminate. */
    for (guint i = 0; i < nq; i++) {
        if (t->fault[i] == KB_QTREE_FAULT_CYCLE)
            t->parent[i] = -1;
    }
}

/* Children lists (every queue with a parent, held or not) and the top-down order. */
static void link_children(KbQueueTree *t)
{
    for (guint i = t->n_queues; i-- > 0;) {
        gint p = t->parent[i];
        if (p < 0)
            continue;
        t->next_sibling[i] = t->first_child[p];
        t->first_child[p] = (gint)i;
    }
    t->n_order = 0;
    t->order[t->n_order++] = t->root;
    for (guint k = 0; k < t->n_order; k++) {
        guint x = t->order[k];
        for (gint c = t->first_child[x]; c >= 0; c = t->next_sibling[c]) {
            t->depth[c] = t->depth[x] + 1;
            t->order[t->n_order++] = (guint)c;
        }
    }
}

static char *format_value(int s, gint64 v)
{
    return kb_resource_format_value(s, v);
}

/* Children's guarantees against the parent's (where it gives one), per resource. */
static void check_guarantees(KbQueueTree *t, guint p)
{
    for (int s = 0; s < kb_resource_count(); s++) {
        gint64 sum = 0;
        for (gint c = t->first_child[p]; c >= 0; c = t->next_sibling[c])
            sum += t->guarantee[c].v[s];
        gint64 own = t->guarantee[p].v[s];
        if (own == 0) {
            /* No guarantee of its own: it guarantees what its children do. */
            t->guarantee[p].v[s] = sum;
            continue;
        }
        if (sum <= own)
            continue;
        g_autoptr(GString) parts = g_string_new(NULL);
        for (gint c = t->first_child[p]; c >= 0; c = t->next_sibling[c]) {
            if (t->guarantee[c].v[s] == 0)
                continue;
            g_autofree char *v = format_value(s, t->guarantee[c].v[s]);
            g_string_append_printf(parts, "%s\"%s\" %s", parts->len > 0 ? ", " : "", t->name[c], v);
        }
        g_autofree char *sum_s = format_value(s, sum), *own_s = format_value(s, own);
        set_fault(t, p, KB_QTREE_FAULT_GUARANTEE,
                  g_strdup_printf("queue \"%s\": children's guarantees add up to %s %s (%s), "
                                  "more than its guarantee of %s",
                                  t->name[p], sum_s, kb_resource_name(s), parts->str, own_s));
        return;
    }
}

static void check_capability(KbQueueTree *t, guint c)
{
    gint p = t->parent[c];
    if (p < 0 || (guint)p == t->root)
        return;
    for (int s = 0; s < kb_resource_count(); s++) {
        gint64 pc = t->capability[p].v[s], cc = t->capability[c].v[s];
        /* An unset capability inherits the parent's: not a fault. */
        if (!LIMITED(pc) || !LIMITED(cc) || cc <= pc)
            continue;
        g_autofree char *cs = format_value(s, cc), *ps = format_value(s, pc);
        set_fault(t, c, KB_QTREE_FAULT_CAPABILITY,
                  g_strdup_printf("queue \"%s\": capability %s %s is above its parent \"%s\"'s "
                                  "capability of %s",
                                  t->name[c], cs, kb_resource_name(s), t->name[p], ps));
        return;
    }
}

/* Faults of the structure and the figures, then `held` down the tree. */
static void check_tree(KbQueueTree *t)
{
    /* Guarantees bottom-up, so that a parent without its own sums its children's. */
    for (guint k = t->n_order; k-- > 1;) {
        guint x = t->order[k];
        if (t->n_children[x] > 0)
            check_guarantees(t, x);
    }
    for (guint k = 1; k < t->n_order; k++)
        check_capability(t, t->order[k]);
    for (guint i = 0; i < t->n_queues; i++) {
        if (t->fault[i] != KB_QTREE_FAULT_NONE)
            t->held[i] = 1;
    }
    /* Top-down: below a held queue everything is held. */
    for (guint k = 1; k < t->n_order; k++) {
        guint x = t->order[k];
        gint p = t->parent[x];
        if (!t->held[x] && p >= 0 && t->held[p]) {
            t->held[x] = 1;
            set_fault(t, x, KB_QTREE_FAULT_ANCESTOR,
                      g_strdup_printf("queue \"%s\": ancestor queue \"%s\" is invalid", t->name[x],
                                      t->name[p]));
        }
    }
    /* Below queues cut off from the root (missing parent, cycle): not in the order; held. */
    g_autofree guint8 *reached = g_new0(guint8, t->n_queues + 1);
    for (guint k = 0; k < t->n_order; k++)
        reached[t->order[k]] = 1;
    for (guint i = 0; i < t->n_queues; i++) {
        if (reached[i] || t->held[i] || (gint)i == t->root_alias)
            continue;
        t->held[i] = 1;
        gint a = t->parent[i];
        while (a >= 0 && t->fault[a] == KB_QTREE_FAULT_NONE)
            a = t->parent[a];
        set_fault(t, i, KB_QTREE_FAULT_ANCESTOR,
                  g_strdup_printf("queue \"%s\": ancestor queue \"%s\" is invalid", t->name[i],
                                  a >= 0 ? t->name[a] : "?"));
    }
}

KbQueueTree *kb_qtree_new(const KbQtreeQueue *queues, guint n)
{
    KbQueueTree *t = tree_alloc(n);
    for (guint i = 0; i < n; i++) {
        t->name[i] = queues[i].name;
        t->weight[i] = MAX(queues[i].weight, 1);
        t->capability[i] = queues[i].capability;
        t->guarantee[i] = queues[i].guarantee;
        t->fixed[i] = queues[i].deserved;
    }
    t->name[t->root] = g_intern_static_string("root");
    t->weight[t->root] = 1;
    kb_resources_set_unlimited(&t->capability[t->root]);
    for (int s = 0; s < KB_RES_MAX; s++)
        t->fixed[t->root].v[s] = -1;
    link_parents(t, queues, n);
    find_cycles(t);
    link_children(t);
    check_tree(t);
    return t;
}

/* ---- shares --------------------------------------------------------------------------------- */

void kb_qtree_waterfill(double avail, guint k, const double *w, const double *lo, const double *hi,
                        double *out)
{
    double sum_lo = 0, sum_hi = 0, top = 0;
    for (guint i = 0; i < k; i++) {
        double h = MAX(hi[i], lo[i]);
        sum_lo += lo[i];
        sum_hi += h;
        top = MAX(top, h / w[i]);
    }
    if (sum_lo >= avail || sum_hi <= avail) {
        for (guint i = 0; i < k; i++)
            out[i] = sum_lo >= avail ? lo[i] : MAX(hi[i], lo[i]);
        return;
    }
    /* sum(clamp(w L, lo, hi)) grows with L: bisect for the level that hands out @avail. */
    double a = 0, b = top;
    for (guint it = 0; it < 200 && b - a > 1e-12 * MAX(top, 1); it++) {
        double m = (a + b) / 2, f = 0;
        for (guint i = 0; i < k; i++)
            f += CLAMP(w[i] * m, lo[i], MAX(hi[i], lo[i]));
        if (f < avail)
            a = m;
        else
            b = m;
    }
    /* Exact level from the shares that are not at a bound (bisection leaves ~1e-9 of error,
     * which rounding up would turn into a whole GPU). */
    double eps = 1e-9 * MAX(avail, 1), fixed = 0, free_w = 0;
    for (guint i = 0; i < k; i++) {
        double h = MAX(hi[i], lo[i]), v = w[i] * b;
        if (v <= lo[i] + eps || v >= h - eps)
            fixed += CLAMP(v, lo[i], h) <= lo[i] + eps ? lo[i] : h;
        else
            free_w += w[i];
    }
    double level = free_w > 0 ? (avail - fixed) / free_w : b;
    for (guint i = 0; i < k; i++) {
        double h = MAX(hi[i], lo[i]), v = w[i] * b;
        if (free_w > 0 && v > lo[i] + eps && v < h - eps)
            out[i] = CLAMP(w[i] * level, lo[i], h);
        else
            out[i] = CLAMP(v, lo[i], h) <= lo[i] + eps ? lo[i] : h;
    }
}

static double as_double(gint64 v)
{
    return LIMITED(v) ? (double)v : HUGE_VAL;
}

/* Demand bottom-up: a parent asks what its children ask, up to its capability. */
static void compute_demand(KbQueueTree *t)
{
    for (guint k = t->n_order; k-- > 0;) {
        guint x = t->order[k];
        if (t->first_child[x] >= 0) {
            kb_resources_clear(&t->demand[x]);
            for (gint c = t->first_child[x]; c >= 0; c = t->next_sibling[c])
                kb_resources_add(&t->demand[x], &t->demand[c]);
        }
        if (t->held[x])
            kb_resources_clear(&t->demand[x]);
        for (int s = 0; s < KB_RES_MAX; s++)
            t->demand[x].v[s] = MIN(t->demand[x].v[s], t->capability[x].v[s]);
    }
}

typedef struct {
    guint k;
    guint *node;
    double *w, *lo, *hi, *out, *fixed_out;
} Split;

/* Split @avail of slot @s of parent @p over its (not held) children into des[child]. */
static void split_children(KbQueueTree *t, guint p, int s, double avail, Split *sp, double *des)
{
    sp->k = 0;
    double fixed_sum = 0;
    for (gint c = t->first_child[p]; c >= 0; c = t->next_sibling[c]) {
        if (t->held[c])
            continue;
        guint i = sp->k++;
        sp->node[i] = (guint)c;
        sp->w[i] = t->weight[c];
        double g = (double)t->guarantee[c].v[s];
        double want = MIN(as_double(t->capability[c].v[s]), (double)t->demand[c].v[s]);
        sp->hi[i] = want;
        gint64 f = t->fixed[c].v[s];
        if (f >= 0) {
            sp->fixed_out[i] = MAX(MIN((double)f, want), g);
            fixed_sum += sp->fixed_out[i];
            sp->lo[i] = sp->fixed_out[i];
        } else {
            sp->fixed_out[i] = -1;
            sp->lo[i] = g;
        }
    }
    if (sp->k == 0)
        return;
    /* Phase 1: the weight split of what the fixed shares leave, among the others. */
    g_autofree double *w1 = g_new(double, sp->k), *lo1 = g_new(double, sp->k),
                      *hi1 = g_new(double, sp->k);
    for (guint i = 0; i < sp->k; i++) {
        gboolean fixed = sp->fixed_out[i] >= 0;
        w1[i] = sp->w[i];
        lo1[i] = fixed ? 0 : sp->lo[i];
        hi1[i] = fixed ? 0 : sp->hi[i];
    }
    kb_qtree_waterfill(MAX(avail - fixed_sum, 0), sp->k, w1, lo1, hi1, sp->out);
    /* Phase 2: what is still idle goes to anyone who wants more, by weight (borrowing). */
    for (guint i = 0; i < sp->k; i++)
        sp->lo[i] = sp->fixed_out[i] >= 0 ? sp->fixed_out[i] : sp->out[i];
    kb_qtree_waterfill(avail, sp->k, sp->w, sp->lo, sp->hi, sp->out);
    for (guint i = 0; i < sp->k; i++)
        des[sp->node[i]] = sp->out[i];
}

void kb_qtree_compute(KbQueueTree *t, const KbResources *total)
{
    guint n = t->n_queues + 1;
    compute_demand(t);
    g_autofree double *des = g_new0(double, n);
    Split sp = {0};
    sp.node = g_new(guint, n);
    sp.w = g_new(double, n);
    sp.lo = g_new(double, n);
    sp.hi = g_new(double, n);
    sp.out = g_new(double, n);
    sp.fixed_out = g_new(double, n);
    for (guint i = 0; i < n; i++)
        kb_resources_set_unlimited(&t->deserved[i]);
    for (guint si = 0; si < KB_QTREE_N_SLOTS; si++) {
        int s = kb_qtree_slots[si];
        memset(des, 0, sizeof(double) * n);
        des[t->root] = (double)total->v[s];
        for (guint k = 0; k < t->n_order; k++) {
            guint x = t->order[k];
            if (t->first_child[x] >= 0)
                split_children(t, x, s, des[x], &sp, des);
        }
        /* Rounded up, past the floating-point error (relative, for memory in bytes) but never
         * by as much as half a unit: a share of exactly 1600Gi stays 1600Gi, not one byte less
         * (which made a queue at its share in memory look over it, and reclaim refuse every
         * victim there: bench-scale kai-reclaim-250). */
        /* GPUs (in milli-GPUs) are shared out in whole GPUs, as before parts of GPUs were
         * counted: a queue's share of 6.4 GPUs is 7 */
        double unit = s == KB_RES_GPU ? KB_GPU_MILLI : 1;
        for (guint i = 0; i < n; i++)
            t->deserved[i].v[s] =
                    t->held[i] ? 0
                               : (gint64)(unit * ceil(des[i] / unit -
                                                      MIN(1e-6 + des[i] / unit * 1e-12, 0.5)));
        if (t->root_alias >= 0)
            t->deserved[t->root_alias].v[s] = t->deserved[t->root].v[s];
    }
    g_free(sp.node);
    g_free(sp.w);
    g_free(sp.lo);
    g_free(sp.hi);
    g_free(sp.out);
    g_free(sp.fixed_out);
}

/* ---- queries -------------------------------------------------------------------------------- */

void kb_qtree_alloc_add(KbQueueTree *t, guint node, const KbResources *r, gboolean sub)
{
    for (gint x = (gint)node; x >= 0; x = t->parent[x]) {
        if (sub)
            kb_resources_sub(&t->alloc[x], r);
        else
            kb_resources_add(&t->alloc[x], r);
    }
}

gboolean kb_qtree_is_leaf(const KbQueueTree *t, guint node)
{
    return t->n_children[node] == 0 && (gint)node != t->root_alias;
}

guint kb_qtree_figures_node(const KbQueueTree *t, guint node)
{
    return (gint)node == t->root_alias ? t->root : node;
}

gint kb_qtree_lca(const KbQueueTree *t, guint a, guint b)
{
    gint x = (gint)a, y = (gint)b;
    if (t->held[a] || t->held[b])
        return -1;
    while (t->depth[x] > t->depth[y])
        x = t->parent[x];
    while (t->depth[y] > t->depth[x])
        y = t->parent[y];
    while (x != y && x >= 0 && y >= 0) {
        x = t->parent[x];
        y = t->parent[y];
    }
    return x == y ? x : -1;
}

gint kb_qtree_meet(const KbQueueTree *t, guint a, guint b, gint *ca, gint *cb)
{
    gint x = (gint)a, y = (gint)b, px = -1, py = -1;
    *ca = *cb = -1;
    if (t->held[a] || t->held[b])
        return -1;
    while (t->depth[x] > t->depth[y]) {
        px = x;
        x = t->parent[x];
    }
    while (t->depth[y] > t->depth[x]) {
        py = y;
        y = t->parent[y];
    }
    while (x != y && x >= 0 && y >= 0) {
        px = x;
        py = y;
        x = t->parent[x];
        y = t->parent[y];
    }
    if (x != y || x < 0)
        return -1;
    *ca = px;
    *cb = py;
    return x;
}

gint kb_qtree_child_toward(const KbQueueTree *t, guint ancestor, guint node)
{
    gint x = (gint)node;
    while (x >= 0 && t->parent[x] != (gint)ancestor)
        x = t->parent[x];
    return x;
}

gboolean kb_qtree_is_under(const KbQueueTree *t, guint node, guint ancestor)
{
    for (gint x = (gint)node; x >= 0; x = t->parent[x]) {
        if ((guint)x == ancestor)
            return TRUE;
    }
    return FALSE;
}

const char *kb_qtree_fault_reason(KbQtreeFault fault)
{
    switch (fault) {
    case KB_QTREE_FAULT_PARENT_NOT_FOUND:
        return "ParentNotFound";
    case KB_QTREE_FAULT_CYCLE:
        return "ParentCycle";
    case KB_QTREE_FAULT_GUARANTEE:
        return "GuaranteeExceeded";
    case KB_QTREE_FAULT_CAPABILITY:
        return "CapabilityExceeded";
    case KB_QTREE_FAULT_ANCESTOR:
        return "AncestorInvalid";
    case KB_QTREE_FAULT_NONE:
    default:
        return NULL;
    }
}

char *kb_qtree_children_names(const KbQueueTree *t, guint node)
{
    GString *s = g_string_new(NULL);
    for (gint c = t->first_child[node]; c >= 0; c = t->next_sibling[c])
        g_string_append_printf(s, "%s\"%s\"", s->len > 0 ? ", " : "", t->name[c]);
    return g_string_free(s, FALSE);
}
