/*
 * Hierarchical queues: the tree through Queue.spec.parent and the deserved share of every queue in
 * it. Pure (no I/O, no JSON); the session builds one per cycle and proportion, enqueue, allocate,
 * preempt and reclaim read it.
 *
 * Shape. Every queue of the cache is a node whose index is its KbQueueInfo.id; one more node, the
 * implicit `root`, owns the whole cluster (its deserved share is the cluster's allocatable, so it
 * grows with the cluster). A queue without a parent hangs under the root: a flat setup is a tree
 * of depth one and shares are what they were. Jobs run in leaf queues only.
 *
 * Volcano creates a Queue named `root`; when one exists it stands for the implicit root: queues
 * naming it as parent are the root's children, its status shows the root's figures, and its
 * capability and guarantee are ignored (fixed figures on the root refused valid children as the
 * cluster grew, volcano #4349; the root owns whatever the cluster has).
 *
 * Faults (a bad tree never stops the queues that are fine):
 *   ParentNotFound      spec.parent names a queue that does not exist;
 *   ParentCycle         following spec.parent comes back to the queue;
 *   GuaranteeExceeded   the children's guarantees add up to more than the parent's (in a resource
 *                       the parent guarantees); the parent is the faulty queue;
 *   CapabilityExceeded  a child's capability is above its parent's (in a resource the parent
 *                       caps);
 *   AncestorInvalid     an ancestor has one of the faults above.
 * A faulty queue and everything below it is `held`: its jobs wait, it takes no share, and its
 * running jobs are no victims of reclaim.
 *
 * Deserved shares, top-down from the root, per resource (GPUs, then cpu, then memory; the
 * resources are split independently): a parent's deserved share is water-filled over its
 * children by weight, each child capped by its capability and by its demand (what its subtree's
 * jobs hold and ask for), and raised to its guarantee; what a capped child cannot use goes to its
 * siblings, and what a whole subtree cannot use goes up to the parent's siblings (borrowing:
 * siblings first, then up the tree, never beyond any ancestor's capability). A child with a
 * fixed `deserved` in a resource (Volcano's capacity form) gets that (capped by its demand, raised
 * to its guarantee) before the weight split of the rest; it may still borrow what its siblings
 * leave idle. Figures are kept as doubles down the tree and rounded up once at the end.
 */
#pragma once

#include <glib.h>

#include "kube/kb-resource.h"

typedef enum {
    KB_QTREE_FAULT_NONE = 0,
    KB_QTREE_FAULT_PARENT_NOT_FOUND,
    KB_QTREE_FAULT_CYCLE,
    KB_QTREE_FAULT_GUARANTEE,
    KB_QTREE_FAULT_CAPABILITY,
    KB_QTREE_FAULT_ANCESTOR,
} KbQtreeFault;

/* The resources shares are computed for, in the order they are computed. */
#define KB_QTREE_N_SLOTS 3
extern const int kb_qtree_slots[KB_QTREE_N_SLOTS];

/* One queue as the tree builder sees it. */
typedef struct {
    const char *name;       /* interned */
    const char *parent;     /* interned; NULL: under the root */
    gint32 weight;          /* >= 1 */
    KbResources capability; /* KB_RESOURCE_UNLIMITED where not given */
    KbResources guarantee;  /* 0 where not given */
    KbResources deserved;   /* fixed deserved share, -1 where not given */
} KbQtreeQueue;

/*
 * The tree. Nodes 0..n_queues-1 are the queues (in the order given to kb_qtree_new), node
 * n_queues is the root. Arrays are indexed by node. Read-only outside this module, except
 * `demand` (the caller fills the leaves before kb_qtree_compute) and `alloc` (see
 * kb_qtree_alloc_add).
 */
typedef struct {
    guint n_queues;
    guint root;         /* == n_queues */
    gint root_alias;    /* the node of a Queue named "root" (stands for the root), or -1 */
    gint *parent;       /* -1 for the root and for queues whose parent is missing or in a cycle */
    guint *depth;       /* root 0, its children 1, ...; 0 for queues not under the root */
    gint *first_child;  /* -1 when none */
    gint *next_sibling; /* -1 when none */
    guint *n_children;  /* children naming this queue as parent (held or not) */
    guint *order;       /* nodes under the root, parents before children (root first) */
    guint n_order;
    guint8 *held; /* the node or an ancestor is faulty: its jobs wait */
    KbQtreeFault *fault;
    char **fault_message; /* what is wrong, naming queues and figures; NULL when fine */
    const char **name;    /* interned; "root" for the root */
    double *weight;
    KbResources *capability; /* the root's: unlimited */
    KbResources *guarantee;  /* effective: max(own, children's sum) where not given */
    KbResources *fixed;      /* fixed deserved, -1 where not given */
    KbResources *demand;     /* leaves: set by the caller; parents: computed */
    KbResources *deserved;   /* kb_qtree_compute's, rounded up; unlimited before */
    KbResources *alloc;      /* per node: allocation of its subtree (kb_qtree_alloc_add) */
} KbQueueTree;

/*
 * Build the tree of @n queues and check it (faults above). Never fails: a bad tree is reported
 * through fault/fault_message and `held`. Free with kb_qtree_free().
 */
KbQueueTree *kb_qtree_new(const KbQtreeQueue *queues, guint n);
void kb_qtree_free(KbQueueTree *tree);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbQueueTree, kb_qtree_free)

/*
 * Deserved shares of every node for a cluster of @total allocatable, from the leaves' `demand`
 * (parents' demand is computed here: the children's sum, capped by the parent's capability).
 * Held queues get nothing. Slots other than kb_qtree_slots are left unlimited.
 */
void kb_qtree_compute(KbQueueTree *tree, const KbResources *total);

/* Add (or, with @sub, subtract) @r to the allocation of @node and of all its ancestors. */
void kb_qtree_alloc_add(KbQueueTree *tree, guint node, const KbResources *r, gboolean sub);

/* TRUE for a queue with no child naming it as parent. */
gboolean kb_qtree_is_leaf(const KbQueueTree *tree, guint node);
/* The node whose figures @node shows: the root for the root alias, else @node. */
guint kb_qtree_figures_node(const KbQueueTree *tree, guint node);
/* The lowest common ancestor of @a and @b (the root when they are in different top-level
 * subtrees, or -1 when either is not under the root). */
gint kb_qtree_lca(const KbQueueTree *tree, guint a, guint b);
/*
 * Where the paths of @a and @b meet: the lowest common ancestor (returned, -1 as kb_qtree_lca),
 * and the children of it on the way to @a and to @b (*@ca, *@cb; -1 when @a or @b is the
 * meeting point itself). One walk up, for queue order.
 */
gint kb_qtree_meet(const KbQueueTree *tree, guint a, guint b, gint *ca, gint *cb);
/* The child of @ancestor on the path to @node (@node itself when it is a child), or -1. */
gint kb_qtree_child_toward(const KbQueueTree *tree, guint ancestor, guint node);
/* TRUE when @ancestor is @node or one of its ancestors. */
gboolean kb_qtree_is_under(const KbQueueTree *tree, guint node, guint ancestor);
/* "ParentNotFound", "ParentCycle", ... (status condition reasons). Static. */
const char *kb_qtree_fault_reason(KbQtreeFault fault);
/* "teamA1, teamA2": the children of @node, newly allocated. */
char *kb_qtree_children_names(const KbQueueTree *tree, guint node);

/*
 * Water-filling of @avail over @k shares with weights @w: out[i] = clamp(w[i] * L, lo[i], hi[i])
 * for the level L at which they add up to @avail (every out[i] = max(lo[i], hi[i]) when even that
 * does not reach @avail; every out[i] = lo[i] when the floors alone exceed it). Exposed for tests.
 */
void kb_qtree_waterfill(double avail, guint k, const double *w, const double *lo, const double *hi,
                        double *out);
