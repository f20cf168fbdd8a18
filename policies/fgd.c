/*
 * fgd: node order by fragmentation gradient descent (FGD: Weng et al., USENIX ATC 2023; the
 * measure is scheduler/fragment.h's). A pod that takes a fraction of a GPU (a DRA share of a GPU's
 * memory, a MIG device) goes to the node where it raises the expected GPU fragmentation least,
 * given the shapes of the pods this scheduler has placed (a decayed histogram the cache keeps):
 * a share lands where what it leaves suits the pods that come, and whole GPUs stay whole.
 *
 *   fgd.weight: 1        the score is scaled by this (0: no score)
 *   fgd.wholeGpus: 1     score pods asking for whole GPUs too (0: fractions only)
 *   fgd.mig: 0           score MIG devices too (a profile as its share of the GPU's counters);
 *                        off by default: bench-gpushare measured it worse than without, since
 *                        MIG's loss is where a profile may start, not how much is left
 *
 * Score of a task on a node: -(fragmentation after - before) / 10 x fgd.weight, in milli-GPUs:
 * a whole GPU's worth newly lost to every known shape is -100; 0 for a pod that asks for no GPU
 * (and for whole GPUs with fgd.wholeGpus 0), and where the pod's devices do not fit. It adds to
 * the other node-order plugins' scores (nodeorder, binpack: 0-100 per unit of weight), so one
 * GPU's worth of fragmentation outweighs them and they decide between nodes it ties.
 *
 * The node's GPUs are its DRA devices (kb_dra_node_gpus: a MIG GPU's counter set, a shared GPU's
 * capacity) or, without any, its nvidia.com/gpu: that many GPUs, the idle ones whole. The pod's
 * shape is what the allocator would take (kb_dra_pod_gpus on the first node scored, kept for the
 * session), or its nvidia.com/gpu request; a fraction is scored on the GPU the allocator gives it
 * (the most used with room). Pods with claims are scored only while some node publishes shared
 * GPUs, or MIG ones with fgd.mig (kb_dra_any_shares: only then can a claim take a fraction;
 * elsewhere planning each candidate again would cost without gain), and then on every node where
 * they fit (score_every_node). Each pod the session places is added to the histogram once (by uid);
 * the scores use the histogram as it was when the session opened.
 */
#include "policies/plugin.h"

#include <string.h>

#include "scheduler/dra.h"
#include "scheduler/fragment.h"

typedef struct {
    KbSession *ssn;
    KbFragModel *snap; /* the cache's histogram when the session opened */
    KbFragMemo memo;   /* snap's fragmentation of whole-GPU views (most nodes share a few) */
    double weight;
    gboolean whole;
    gboolean mig;    /* fgd.mig: MIG devices scored too */
    gboolean shares; /* some node has shared GPUs, or MIG ones with fgd.mig (kb_dra_any_shares) */
    guint n_nodes;
    /* Per node id: the view a fragmentation was last computed for, and that fragmentation
     * (most candidates are scored again and again while their node does not change). */
    KbFragNode *seen;
    double *before;
    /* Per node id: its DRA GPUs (kb_dra_node_gpus), valid while dra_gen[id] == gen: a task
     * placed on the node invalidates its entry, one taken back all of them. */
    KbFragNode *dra;
    guint *dra_gen;
    guint gen;
    /* Per task with claims: its GPU shape as the allocator would take it (kb_dra_pod_gpus on the
     * first node it fits; a share's fraction does not depend on the node for GPUs of one size). */
    GHashTable *shapes; /* KbTaskInfo* -> KbFragShape*; NULL until a task with claims asks */
} Fgd;

static gpointer fgd_open(KbSession *ssn, const KbConfPlugin *conf)
{
    Fgd *f = g_new0(Fgd, 1);
    f->ssn = ssn;
    f->snap = kb_frag_model_copy(kb_cache_fragment(ssn->cache));
    f->weight = kb_conf_plugin_arg_double(conf, "fgd.weight", 1);
    f->whole = kb_conf_plugin_arg_double(conf, "fgd.wholeGpus", 1) != 0;
    f->mig = kb_conf_plugin_arg_double(conf, "fgd.mig", 0) != 0;
    KbDra *dra = kb_cache_dra(ssn->cache);
    f->shares = kb_dra_any_shares(dra, FALSE) || (f->mig && kb_dra_any_shares(dra, TRUE));
    f->n_nodes = ssn->n_nodes;
    f->gen = 1;
    return f;
}

static void fgd_close(gpointer state)
{
    Fgd *f = state;
    kb_frag_model_free(f->snap);
    g_free(f->seen);
    g_free(f->before);
    g_free(f->dra);
    g_free(f->dra_gen);
    g_clear_pointer(&f->shapes, g_hash_table_unref);
    g_free(f);
}

/* @n's fragmentation, from the last computation for node @id when its view is the same. */
static double node_before(Fgd *f, guint id, const KbFragNode *n)
{
    /* whole-GPU views: the memo has it, no per-node copy needed */
    if (id >= f->n_nodes || kb_frag_memo_keeps(n))
        return kb_frag_node_memo(f->snap, &f->memo, n);
    if (f->seen == NULL) {
        f->seen = g_new0(KbFragNode, MAX(f->n_nodes, 1));
        f->before = g_new(double, MAX(f->n_nodes, 1));
        for (guint i = 0; i < f->n_nodes; i++)
            f->seen[i].cpu = -1; /* no view yet */
    }
    KbFragNode *s = &f->seen[id];
    if (s->cpu != n->cpu || s->n_gpus != n->n_gpus ||
        memcmp(s->free, n->free, n->n_gpus * sizeof(n->free[0])) != 0) {
        *s = *n;
        f->before[id] = kb_frag_node_memo(f->snap, &f->memo, n);
    }
    return f->before[id];
}

/* @node's DRA GPUs into @n (n_gpus 0 without any). */
static void dra_view(Fgd *f, const KbNodeInfo *node, KbFragNode *n)
{
    KbDra *dra = kb_cache_dra(f->ssn->cache);
    if (node->id >= f->n_nodes) {
        n->n_gpus = kb_dra_node_gpus(dra, node->name, n->free, KB_FRAG_MAX_GPUS);
        return;
    }
    if (f->dra == NULL) {
        f->dra = g_new0(KbFragNode, MAX(f->n_nodes, 1));
        f->dra_gen = g_new0(guint, MAX(f->n_nodes, 1));
    }
    KbFragNode *c = &f->dra[node->id];
    if (f->dra_gen[node->id] != f->gen) {
        c->n_gpus = kb_dra_node_gpus(dra, node->name, c->free, KB_FRAG_MAX_GPUS);
        f->dra_gen[node->id] = f->gen;
    }
    n->n_gpus = c->n_gpus;
    memcpy(n->free, c->free, c->n_gpus * sizeof(c->free[0]));
}

/* @node's free CPU and GPUs. */
static void node_view(Fgd *f, const KbNodeInfo *node, KbFragNode *n)
{
    n->cpu = node->idle.v[KB_RES_CPU];
    n->n_gpus = 0;
    if (f->shares)
        dra_view(f, node, n);
    if (n->n_gpus > 0)
        return;
    /* nvidia.com/gpu in milli-GPUs: whole GPUs, and the ones wholly free */
    gint64 all = kb_resource_whole_gpus(node->allocatable.v[KB_RES_GPU]);
    gint64 idle = MAX(node->idle.v[KB_RES_GPU], 0) / KB_GPU_MILLI;
    n->n_gpus = (guint)CLAMP(all, 0, KB_FRAG_MAX_GPUS);
    for (guint g = 0; g < n->n_gpus; g++)
        n->free[g] = (gint64)g < idle ? KB_FRAG_MILLI : 0;
}

/* @task's GPU shape (@node: where to ask the allocator for a task with claims, the first time);
 * FALSE when it asks for no GPU, or its claims do not fit on @node and no shape is known yet. */
static gboolean task_shape(Fgd *f, const KbTaskInfo *task, const KbNodeInfo *node, KbFragShape *s)
{
    *s = (KbFragShape){task->resreq.v[KB_RES_CPU], 0, 0};
    if (task->pod->n_resource_claims > 0) {
        if (!f->shares)
            return FALSE;
        if (f->shapes == NULL)
            f->shapes = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        const KbFragShape *known = g_hash_table_lookup(f->shapes, task);
        if (known == NULL) {
            gint gpu = -1;
            gboolean mig = FALSE;
            if (!kb_dra_pod_gpus(kb_cache_dra(f->ssn->cache), task->pod, node->name, FALSE,
                                 &s->gpus, &s->milli, &gpu, &mig))
                return FALSE;
            if (mig && !f->mig)
                s->gpus = s->milli = 0; /* left to the other plugins */
            known = g_memdup2(s, sizeof(*s));
            g_hash_table_insert(f->shapes, (gpointer)task, (gpointer)known);
        }
        s->gpus = known->gpus;
        s->milli = known->milli;
        return s->gpus > 0;
    }
    gint64 gpus = kb_resource_whole_gpus(task->resreq.v[KB_RES_GPU]);
    if (gpus <= 0 || gpus > KB_FRAG_MAX_GPUS)
        return FALSE;
    s->gpus = (guint)gpus;
    s->milli = KB_FRAG_MILLI;
    return TRUE;
}

/* The GPU of @n the allocator gives a fraction @milli: the most used with room (packing), the
 * first among equals; -1 when none has room. */
static gint allocator_gpu(const KbFragNode *n, guint milli)
{
    gint best = -1;
    for (guint g = 0; g < n->n_gpus; g++)
        if (n->free[g] >= milli && (best < 0 || n->free[g] < n->free[best]))
            best = (gint)g;
    return best;
}

/*
 * node_score of whole GPUs @s on @node's nvidia.com/gpu (no shared GPUs anywhere): what node_view
 * and kb_frag_place_after would compute, from the count of idle GPUs alone (the node's
 * fragmentation depends on nothing else; see KbFragMemo), without building the node's GPUs.
 */
static double whole_score(Fgd *f, const KbNodeInfo *node, const KbFragShape *s)
{
    gint64 all = kb_resource_whole_gpus(node->allocatable.v[KB_RES_GPU]);
    gint64 idle = MAX(node->idle.v[KB_RES_GPU], 0) / KB_GPU_MILLI;
    guint n_gpus = (guint)CLAMP(all, 0, KB_FRAG_MAX_GPUS);
    guint whole = (guint)MIN(idle, (gint64)n_gpus);
    gint64 cpu = node->idle.v[KB_RES_CPU];
    if (n_gpus == 0 || cpu < s->cpu || whole < s->gpus)
        return 0; /* no GPU, or it does not fit (kb_frag_fits) */
    double after = kb_frag_whole_memo(f->snap, &f->memo, cpu - s->cpu, whole - s->gpus);
    return -(after - kb_frag_whole_memo(f->snap, &f->memo, cpu, whole)) / 10 * f->weight;
}

static double node_score(gpointer state, const KbTaskInfo *task, const KbNodeInfo *node)
{
    Fgd *f = state;
    if (f->weight == 0 || kb_frag_model_shapes(f->snap) == 0)
        return 0;
    KbFragShape s;
    if (!task_shape(f, task, node, &s))
        return 0;
    if (s.milli == KB_FRAG_MILLI && !f->whole)
        return 0;
    if (!f->shares && s.milli == KB_FRAG_MILLI)
        return whole_score(f, node, &s);
    KbFragNode n;
    node_view(f, node, &n);
    if (n.n_gpus == 0)
        return 0;
    gint gpu = -1;
    if (s.milli < KB_FRAG_MILLI && (gpu = allocator_gpu(&n, s.milli)) < 0)
        return 0;
    double after = kb_frag_place_after_memo(f->snap, &f->memo, &n, &s, gpu, NULL);
    if (after == G_MAXDOUBLE)
        return 0;
    return -(after - node_before(f, node->id, &n)) / 10 * f->weight;
}

/* Pods with claims in a cluster with shared or MIG GPUs are scored on every node where they fit,
 * as FGD does: the gradient over a window of nodes rotating from pod to pod scatters shares
 * (bench-gpushare). */
static gboolean score_every_node(gpointer state, const KbTaskInfo *task)
{
    const Fgd *f = state;
    return f->weight != 0 && f->shares && task->pod->n_resource_claims > 0;
}

static void on_allocate(gpointer state, const KbTaskInfo *task)
{
    Fgd *f = state;
    if (task->node_id < 0 || (guint)task->node_id >= f->ssn->n_nodes)
        return;
    if (f->dra_gen != NULL && (guint)task->node_id < f->n_nodes)
        f->dra_gen[task->node_id] = 0;
    const KbNodeInfo *node = &f->ssn->nodes[task->node_id];
    KbFragShape s = {task->resreq.v[KB_RES_CPU], 0, 0};
    gint gpu = -1;
    if (task->pod->n_resource_claims > 0) {
        if (!kb_dra_pod_gpus(kb_cache_dra(f->ssn->cache), task->pod, node->name, TRUE, &s.gpus,
                             &s.milli, &gpu, NULL))
            s.gpus = s.milli = 0;
    } else if (task->resreq.v[KB_RES_GPU] > 0) {
        s.gpus = (guint)MIN(kb_resource_whole_gpus(task->resreq.v[KB_RES_GPU]),
                            KB_FRAG_MAX_GPUS + 1);
        s.milli = KB_FRAG_MILLI;
    }
    kb_frag_model_observe_pod(kb_cache_fragment(f->ssn->cache), task->pod->meta.uid, &s);
}

static void on_deallocate(gpointer state, const KbTaskInfo *task)
{
    Fgd *f = state;
    f->gen++;
}

static const struct kb_plugin_arg fgd_arguments[] = {
        {"fgd.weight", KB_ARG_NUMBER},
        {"fgd.wholeGpus", KB_ARG_NUMBER},
        {"fgd.mig", KB_ARG_NUMBER},
        {NULL, 0},
};

const struct kb_plugin_ops kb_plugin_fgd = {
        .name = "fgd",
        .arguments = fgd_arguments,
        .open = fgd_open,
        .close = fgd_close,
        .node_score = node_score,
        .score_every_node = score_every_node,
        .on_allocate = on_allocate,
        .on_deallocate = on_deallocate,
};
