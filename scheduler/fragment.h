/*
 * GPU fragmentation, as FGD measures it (Weng et al., "Beware of Fragmentation: Scheduling
 * GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023), for choosing the
 * node (and the GPU) of a pod that takes a fraction of a GPU or a few whole ones.
 *
 * The workload is a decayed histogram of the pod shapes seen (milli-CPU, GPUs, milli-GPU of each):
 * recent pods weigh more, so the mix follows the cluster's. From the point of view of one shape a
 * node's free GPU capacity is lost ("fragment") where the shape cannot use it: all of it when the
 * shape does not fit the node at all (too little CPU, no GPU with enough room, too few whole GPUs,
 * or the shape asks for no GPU), else the free part of each GPU with less room than the shape asks
 * of one GPU. A node's expected fragmentation is that amount weighed by each shape's share of the
 * histogram, in milli-GPUs. A placement is scored by how much it raises the node's expected
 * fragmentation (the "gradient"): the smaller, the better. Keeping a whole GPU whole when a partly
 * used one can take a share, and avoiding a remainder no known shape fits, both follow from it.
 *
 * Cost: a node's fragmentation is a pass over its GPUs, one more per shape asking a fraction, and
 * an addition per shape (KB_FRAG_MAX_SHAPES at most); callers that score many pods against one
 * node state keep kb_frag_node() of it and call kb_frag_place_after() for each candidate, or
 * share a KbFragMemo over nodes.
 */
#pragma once

#include <glib.h>

#define KB_FRAG_MAX_GPUS   16 /* GPUs of one node considered */
#define KB_FRAG_MAX_SHAPES 64 /* shapes kept by a model; the lightest gives way to a new one */
#define KB_FRAG_MILLI      1000

/* A pod's shape: @gpus whole GPUs (milli 1000), or one GPU's fraction (gpus 1, milli < 1000), or
 * no GPU (gpus 0, milli 0). */
typedef struct {
    gint64 cpu; /* milli-CPU */
    guint gpus;
    guint milli;
} KbFragShape;

/* What a node has free: milli-CPU and, per GPU, milli-GPU (1000: untouched). */
typedef struct {
    gint64 cpu;
    guint n_gpus;
    guint free[KB_FRAG_MAX_GPUS];
} KbFragNode;

typedef struct KbFragModel KbFragModel;

/* A model whose weights halve every @half_life observations (at least 1). */
KbFragModel *kb_frag_model_new(double half_life);
void kb_frag_model_free(KbFragModel *m);
/* A copy of @m (a session's snapshot: later observations do not move its scores; it remembers
 * no uids). */
KbFragModel *kb_frag_model_copy(const KbFragModel *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbFragModel, kb_frag_model_free)

/* Count one pod of shape @s. A shape with more GPUs than KB_FRAG_MAX_GPUS or milli above 1000
 * is ignored (FALSE). */
gboolean kb_frag_model_observe(KbFragModel *m, const KbFragShape *s);
/* kb_frag_model_observe once per @uid: a pod placed again (its gang's plan given back, a
 * binding failed) is not counted again. The uids remembered are forgotten all at once past
 * KB_FRAG_MAX_UIDS. FALSE when not counted. */
#define KB_FRAG_MAX_UIDS 65536
gboolean kb_frag_model_observe_pod(KbFragModel *m, const char *uid, const KbFragShape *s);
/* Shapes kept, and a number that changes whenever their shares do. */
guint kb_frag_model_shapes(const KbFragModel *m);
guint kb_frag_model_gen(const KbFragModel *m);
/* The share of the histogram of shape @s (0 when not kept). */
double kb_frag_model_share(const KbFragModel *m, const KbFragShape *s);

/* TRUE when @s fits @n (CPU, and a GPU with room for a fraction or enough untouched GPUs). */
gboolean kb_frag_fits(const KbFragNode *n, const KbFragShape *s);

/* @n's expected fragmentation under @m, in milli-GPUs (0 with an empty model). */
double kb_frag_node(const KbFragModel *m, const KbFragNode *n);

/*
 * Place @s on @n: the GPU a fraction goes to is @gpu when >= 0, else the one that raises the
 * fragmentation least (ties: the GPU most used already, then the lowest index); whole GPUs take
 * the untouched ones of lowest index. Returns @n's expected fragmentation after the placement
 * (its increase is this minus kb_frag_node() of @n), G_MAXDOUBLE when @s does not fit (or @gpu
 * has no room); *@chosen (may be NULL) receives the GPU of a fraction, -1 otherwise.
 */
double kb_frag_place_after(const KbFragModel *m, const KbFragNode *n, const KbFragShape *s, int gpu,
                           int *chosen);

/*
 * A memo of kb_frag_node() for one model, over the views whose GPUs are each wholly free or wholly
 * taken (every node fgd sees through nvidia.com/gpu): their fragmentation depends only on the
 * free CPU and how many GPUs are free, so the nodes of a cluster share a handful of values where
 * fgd computed one per candidate node of every pod. An entry is kept per number of free GPUs
 * for the last CPU seen with it; all are dropped when the model's kb_frag_model_gen() moves.
 * Other views are computed each time. Zero it (or kb_frag_memo_init) before first use.
 */
typedef struct {
    guint gen; /* the model's generation the entries are for */
    gboolean valid[KB_FRAG_MAX_GPUS + 1];
    gint64 cpu[KB_FRAG_MAX_GPUS + 1];
    double value[KB_FRAG_MAX_GPUS + 1];
} KbFragMemo;

void kb_frag_memo_init(KbFragMemo *memo);
/* TRUE when @n's GPUs are each wholly free or wholly taken: a memo keeps its fragmentation. */
gboolean kb_frag_memo_keeps(const KbFragNode *n);
/* kb_frag_node(@m, @n), from @memo when it has it (@memo may be NULL: computed). */
double kb_frag_node_memo(const KbFragModel *m, KbFragMemo *memo, const KbFragNode *n);
/* kb_frag_node of a node with @cpu free and @whole GPUs wholly free, the others (if any) wholly
 * taken: from @memo (not NULL), without building the node when it has it. */
double kb_frag_whole_memo(const KbFragModel *m, KbFragMemo *memo, gint64 cpu, guint whole);
/* kb_frag_place_after, its fragmentations taken from @memo (may be NULL). */
double kb_frag_place_after_memo(const KbFragModel *m, KbFragMemo *memo, const KbFragNode *n,
                                const KbFragShape *s, int gpu, int *chosen);

/* Take @s from @n (after kb_frag_fits), a fraction on GPU @gpu. */
void kb_frag_take(KbFragNode *n, const KbFragShape *s, int gpu);
