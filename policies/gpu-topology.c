/*
 * gpu-topology: place GPU pods on GPUs that sit close together, and a gang on as few nodes and
 * racks as it can.
 *
 * What it reads (parsed by the cache on node ingest, never in the cycle; see cache.h):
 * - node annotation kube-batchd.io/gpu-topology, levels of closeness, each a list of disjoint
 *   groups of GPU indices 0..63, every level optional:
 *     {"nvlink":[[0,1,2,3],[4,5,6,7]],          NVLink islands (an unnamed GPU is an island alone)
 *      "pcie":[[0,1],[2,3],[4,5],[6,7]],        GPUs behind one PCIe switch
 *      "numa":[[0,1,2,3],[4,5,6,7]]}            GPUs of one NUMA node
 *   No annotation, or a malformed one (logged and counted once): the node is one island.
 * - node labels topology.kubernetes.io/rack and, one level up, topology.kubernetes.io/zone;
 * - the pod annotation kube-batchd.io/gpu-ids ("0,1") of bound pods: the indices they hold (a pod
 *   without it is taken to hold the lowest free indices).
 *
 * Node score, for tasks that request nvidia.com/gpu (0 for the others), in decreasing weight:
 *   1. closeness: the task's GPUs fit inside one NVLink island (30000), else inside one PCIe
 *      switch (20000), else one NUMA node (10000), else across as few islands as possible
 *      (3000 for two, 500 less per further island);
 *   2. gang packing: the node already holds members of the same job, placed by this cycle's
 *      statement or earlier (6000), else it is in a rack that does (4000), else in a zone that
 *      does (2000);
 *   3. best fit, a tie-break: 10 x GPUs asked / free GPUs of the tightest island that fits.
 * Levels 1 and 2 outweigh everything below them and the nodeorder scores (at most a few hundred),
 * so among nodes equal on them nodeorder still decides (spread or pack, as configured), and the
 * best fit only separates nodes nodeorder scores alike. Inside the chosen node the tightest island
 * is always taken (see below), so whole islands stay free for bigger pods. The sum is multiplied
 * by the argument gpu-topology.weight (default 1).
 *
 * Placement (assign_devices, whatever the enable* switches): the concrete indices, with the same
 * preferences: the tightest island that fits (and inside it the tightest PCIe switch, then NUMA
 * node), else the tightest PCIe switch or NUMA node spanning the fewest islands, else the fewest
 * islands of the node; lowest indices last. They go to KbTaskInfo.gpu_ids, which the cache counts
 * as held, and to KbPlacement.gpu_ids, which the binder writes as the pod's gpu-ids annotation
 * before the binding (cycle.h).
 */
#include "policies/plugin.h"

#define SCORE_ISLAND    30000.0
#define SCORE_PCIE      20000.0
#define SCORE_NUMA      10000.0
#define SCORE_SPAN      3000.0
#define SCORE_SPAN_STEP 500.0
#define SCORE_SAME_NODE 6000.0
#define SCORE_SAME_RACK 4000.0
#define SCORE_SAME_ZONE 2000.0
#define SCORE_BEST_FIT  10.0

/* A rack or zone holding members of the tracked job. */
typedef struct {
    const char *name; /* interned */
    guint n;
} Place;

typedef struct {
    KbSession *ssn;
    double weight;
    const KbJobInfo *job; /* the job whose members are tracked (the one being allocated) */
    guint *on_node;       /* per node id: members of @job there */
    GArray *touched;      /* guint: node ids whose on_node may be non-zero */
    GArray *racks;        /* Place */
    GArray *zones;        /* Place */
} GpuTopo;

static int popcount(guint64 m)
{
    return __builtin_popcountll(m);
}

/* The lowest @k indices of @mask. */
static guint64 lowest(guint64 mask, int k)
{
    guint64 out = 0;
    for (; k > 0 && mask != 0; k--, mask &= mask - 1)
        out |= mask & -mask;
    return out;
}

/* ---- choosing indices ----------------------------------------------------------------------- */

/* The group of @groups (@n of them) with the fewest indices of @avail but at least @k, or 0. */
static guint64 tightest(const guint64 *groups, guint n, guint64 avail, int k)
{
    guint64 best = 0;
    int best_n = G_MAXINT;
    for (guint g = 0; g < n; g++) {
        int f = popcount(groups[g] & avail);
        if (f >= k && f < best_n) {
            best = groups[g];
            best_n = f;
        }
    }
    return best;
}

/* The tightest group of @level for @k indices of @avail, or 0. */
static guint64 best_group(const KbGpuTopology *topo, int level, guint64 avail, int k)
{
    guint first = topo->first[level];
    return tightest(&topo->groups[first], topo->first[level + 1] - first, avail, k);
}

/* @k indices of @avail inside the tightest groups of the levels from @level on. */
static guint64 refine(const KbGpuTopology *topo, int level, guint64 avail, int k)
{
    for (int l = level; l < KB_GPU_N_LEVELS; l++) {
        guint64 g = best_group(topo, l, avail, k);
        if (g != 0)
            avail &= g;
    }
    return lowest(avail, k);
}

/*
 * @k indices of @avail over the fewest NVLink islands: whole islands, largest first, until the
 * rest fits in one, which is then the tightest that does. Number of islands to @n_islands.
 */
static guint64 spread(const KbGpuTopology *topo, guint64 avail, int k, int *n_islands)
{
    guint64 out = 0;
    *n_islands = 0;
    while (k > 0 && avail != 0) {
        (*n_islands)++;
        guint64 fit = best_group(topo, KB_GPU_LEVEL_NVLINK, avail, k);
        if (fit != 0)
            return out | refine(topo, KB_GPU_LEVEL_PCIE, avail & fit, k);
        guint64 largest = 0;
        for (guint g = topo->first[0]; g < topo->first[1]; g++) {
            if (popcount(topo->groups[g] & avail) > popcount(largest & avail))
                largest = topo->groups[g];
        }
        out |= largest & avail;
        k -= popcount(largest & avail);
        avail &= ~largest;
    }
    return k > 0 ? 0 : out;
}

/* @k free indices of @topo (see the top of the file), or 0 when there are not enough. */
static guint64 choose(const KbGpuTopology *topo, guint64 avail, int k)
{
    int n;
    if (k <= 0 || popcount(avail) < k)
        return 0;
    guint64 g = best_group(topo, KB_GPU_LEVEL_NVLINK, avail, k);
    if (g != 0)
        return refine(topo, KB_GPU_LEVEL_PCIE, avail & g, k);
    for (int l = KB_GPU_LEVEL_PCIE; l < KB_GPU_N_LEVELS; l++) {
        g = best_group(topo, l, avail, k);
        if (g != 0)
            return spread(topo, avail & g, k, &n);
    }
    return spread(topo, avail, k, &n);
}

/* Score parts 1 and 3: how close @k free GPUs of @node can be. */
static double closeness(const KbNodeInfo *node, int k)
{
    guint64 avail = node->gpu_all & ~node->gpu_used;
    if (popcount(avail) < k)
        return 0;
    /* The islands copied into the node record first: no pointer to chase in the common case. */
    guint64 g = node->n_gpu_islands <= KB_GPU_INLINE_ISLANDS
                        ? tightest(node->gpu_islands, node->n_gpu_islands, avail, k)
                        : best_group(node->gpu_topology, KB_GPU_LEVEL_NVLINK, avail, k);
    if (g != 0)
        return SCORE_ISLAND + SCORE_BEST_FIT * k / popcount(g & avail);
    const KbGpuTopology *topo = node->gpu_topology;
    if (best_group(topo, KB_GPU_LEVEL_PCIE, avail, k) != 0)
        return SCORE_PCIE;
    if (best_group(topo, KB_GPU_LEVEL_NUMA, avail, k) != 0)
        return SCORE_NUMA;
    int n = 0;
    spread(topo, avail, k, &n);
    return MAX(0.0, SCORE_SPAN - SCORE_SPAN_STEP * (n - 2));
}

/* ---- where the job's members are ------------------------------------------------------------ */

static guint place_count(GArray *places, const char *name)
{
    for (guint i = 0; name != NULL && i < places->len; i++) {
        if (g_array_index(places, Place, i).name == name)
            return g_array_index(places, Place, i).n;
    }
    return 0;
}

/* Count a member in (@delta 1) or out (-1) of @name; TRUE when the set of names changed. */
static gboolean place_add(GArray *places, const char *name, int delta)
{
    if (name == NULL)
        return FALSE;
    for (guint i = 0; i < places->len; i++) {
        Place *p = &g_array_index(places, Place, i);
        if (p->name != name)
            continue;
        p->n = (guint)((int)p->n + delta);
        if (p->n > 0)
            return FALSE;
        g_array_remove_index_fast(places, i);
        return TRUE;
    }
    if (delta < 0)
        return FALSE;
    Place p = {name, 1};
    g_array_append_val(places, p);
    return TRUE;
}

static void member_add(GpuTopo *gt, gint node_id, int delta)
{
    if (node_id < 0 || (guint)node_id >= gt->ssn->n_nodes)
        return;
    const KbNodeInfo *ni = &gt->ssn->nodes[node_id];
    if (gt->on_node[node_id] == 0 && delta > 0)
        g_array_append_val(gt->touched, node_id);
    gt->on_node[node_id] = (guint)((int)gt->on_node[node_id] + delta);
    gboolean moved = place_add(gt->racks, ni->rack, delta);
    moved |= place_add(gt->zones, ni->zone, delta);
    if (moved) /* nodes other than @node_id score differently now */
        gt->ssn->score_epoch++;
}

/* Start tracking @job: its members already on nodes (earlier cycles) count. */
static void track(GpuTopo *gt, const KbJobInfo *job)
{
    if (gt->job == job)
        return;
    for (guint i = 0; i < gt->touched->len; i++)
        gt->on_node[g_array_index(gt->touched, guint, i)] = 0;
    g_array_set_size(gt->touched, 0);
    g_array_set_size(gt->racks, 0);
    g_array_set_size(gt->zones, 0);
    gt->job = job;
    for (guint i = 0; i < job->tasks->len; i++) {
        const KbTaskInfo *t = job->tasks->pdata[i];
        if (t->node_id < 0 || t->state == KB_TASK_SUCCEEDED || t->state == KB_TASK_FAILED)
            continue;
        if ((guint)t->node_id >= gt->ssn->n_nodes)
            continue;
        const KbNodeInfo *ni = &gt->ssn->nodes[t->node_id];
        if (gt->on_node[t->node_id]++ == 0)
            g_array_append_val(gt->touched, t->node_id);
        place_add(gt->racks, ni->rack, 1);
        place_add(gt->zones, ni->zone, 1);
    }
}

/* ---- plugin --------------------------------------------------------------------------------- */

static gpointer gpu_topology_open(KbSession *ssn, const KbConfPlugin *conf)
{
    GpuTopo *gt = g_new0(GpuTopo, 1);
    gt->ssn = ssn;
    gt->weight = kb_conf_plugin_arg_double(conf, "gpu-topology.weight",
                                           kb_conf_plugin_arg_double(conf, "weight", 1));
    gt->on_node = g_new0(guint, MAX(ssn->n_nodes, 1));
    gt->touched = g_array_new(FALSE, FALSE, sizeof(guint));
    gt->racks = g_array_new(FALSE, FALSE, sizeof(Place));
    gt->zones = g_array_new(FALSE, FALSE, sizeof(Place));
    return gt;
}

static void gpu_topology_close(gpointer state)
{
    GpuTopo *gt = state;
    g_free(gt->on_node);
    g_array_unref(gt->touched);
    g_array_unref(gt->racks);
    g_array_unref(gt->zones);
    g_free(gt);
}

/* GPU indices are the device plugin's: GPUs a pod gets through DRA claims (counted in resreq
 * too) are chosen by the DRA allocator, islands included (scheduler/dra.h). */
static gint64 plugin_gpus(const KbTaskInfo *task)
{
    return kb_resource_whole_gpus(task->pod->requests.v[KB_RES_GPU]);
}

static double node_score(gpointer state, const KbTaskInfo *task, const KbNodeInfo *node)
{
    GpuTopo *gt = state;
    gint64 k = plugin_gpus(task);
    if (k <= 0 || k > KB_GPU_MAX || node->gpu_all == 0)
        return 0;
    track(gt, task->job);
    double score = closeness(node, (int)k);
    if (gt->on_node[node->id] > 0)
        score += SCORE_SAME_NODE;
    else if (place_count(gt->racks, node->rack) > 0)
        score += SCORE_SAME_RACK;
    else if (place_count(gt->zones, node->zone) > 0)
        score += SCORE_SAME_ZONE;
    return gt->weight * score;
}

static void assign_devices(gpointer state, KbTaskInfo *task, const KbNodeInfo *node)
{
    gint64 k = plugin_gpus(task);
    const KbGpuTopology *topo = node->gpu_topology;
    task->gpu_ids = 0;
    if (k <= 0 || k > KB_GPU_MAX || topo == NULL)
        return; /* no index to give: the cache counts the pod on its lowest free ones */
    task->gpu_ids = choose(topo, topo->all & ~node->gpu_used, (int)k);
}

static void on_allocate(gpointer state, const KbTaskInfo *task)
{
    GpuTopo *gt = state;
    track(gt, task->job);
    member_add(gt, task->node_id, 1);
}

static void on_deallocate(gpointer state, const KbTaskInfo *task)
{
    GpuTopo *gt = state;
    /* The task already left its node (node_id -1): re-read the job's members when next asked. */
    if (gt->job == task->job) {
        gt->job = NULL;
        gt->ssn->score_epoch++;
    }
}

static const struct kb_plugin_arg gpu_topology_arguments[] = {
        {"gpu-topology.weight", KB_ARG_NUMBER},
        {"weight", KB_ARG_NUMBER},
        {NULL, 0},
};

const struct kb_plugin_ops kb_plugin_gpu_topology = {
        .name = "gpu-topology",
        .arguments = gpu_topology_arguments,
        .open = gpu_topology_open,
        .close = gpu_topology_close,
        .node_score = node_score,
        .on_allocate = on_allocate,
        .on_deallocate = on_deallocate,
        .assign_devices = assign_devices,
};
