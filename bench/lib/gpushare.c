/* GPU-sharing placement model for bench-gpushare (see gpushare.h). */
#include "bench/lib/gpushare.h"

#include <stdlib.h>
#include <string.h>

#include "kube/kb-dra.h"
#include "kube/kb-error.h"
#include "scheduler/dra.h"
#include "scheduler/fragment.h"
#include "testbed/kubelet/kbl-dra.h"

typedef struct {
    guint count;
    gint64 cpu, mem;
    guint gpus, milli; /* pods: num_gpu and gpu_milli; nodes: GPUs */
} Shape;

struct KbGpushareTrace {
    GArray *nodes; /* Shape */
    GArray *pods;  /* Shape */
    guint n_nodes, n_gpus, n_pods, n_gpu_pods, n_fractional;
};

static guint dra_disagreements;

typedef struct {
    gint64 cpu, mem;
    guint n_gpus;
    guint free[KB_GPUSHARE_MAX_NODE_GPU]; /* milli-GPU free on each GPU */
} Node;

void kb_gpushare_trace_free(KbGpushareTrace *t)
{
    if (t == NULL)
        return;
    g_array_unref(t->nodes);
    g_array_unref(t->pods);
    g_free(t);
}

static gboolean field_int(const char *s, gint64 max, gint64 *out)
{
    char *end = NULL;
    if (s == NULL || *s == '\0')
        return FALSE;
    gint64 v = g_ascii_strtoll(s, &end, 10);
    if (*end != '\0' || v < 0 || v > max)
        return FALSE;
    *out = v;
    return TRUE;
}

/* One data line "kind,count,cpu,mem,gpus,milli,model" into @t. */
static gboolean parse_line(KbGpushareTrace *t, char **f, guint nf, const char *where,
                           GError **error)
{
    static const char *const names[] = {"kind",       "count", "cpu_milli",
                                        "memory_mib", "gpus",  "gpu_milli"};
    if (nf < 6) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: %u fields, want 7", where, nf);
        return FALSE;
    }
    gboolean node = strcmp(f[0], "node") == 0;
    if (!node && strcmp(f[0], "pod") != 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: kind \"%s\": want node or pod", where,
                    f[0]);
        return FALSE;
    }
    gint64 v[6] = {0};
    const gint64 max[6] = {0,
                           1000000,
                           G_GINT64_CONSTANT(1) << 40,
                           G_GINT64_CONSTANT(1) << 40,
                           KB_GPUSHARE_MAX_NODE_GPU,
                           1000};
    for (guint i = 1; i < 6; i++) {
        if (i == 5 && node)
            continue;
        if (!field_int(f[i], max[i], &v[i])) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "%s: %s \"%s\": want a whole number from 0 to %" G_GINT64_FORMAT, where,
                        names[i], f[i], max[i]);
            return FALSE;
        }
    }
    Shape s = {(guint)v[1], v[2], v[3], (guint)v[4], (guint)v[5]};
    if (!node && s.gpus > 1 && s.milli != 1000) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "%s: gpu_milli %u with %u GPUs: a fraction is of one GPU only", where, s.milli,
                    s.gpus);
        return FALSE;
    }
    GArray *a = node ? t->nodes : t->pods;
    if (a->len >= KB_GPUSHARE_MAX_SHAPES) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: more than %d %s shapes", where,
                    KB_GPUSHARE_MAX_SHAPES, f[0]);
        return FALSE;
    }
    if (node) {
        if (t->n_nodes + s.count > KB_GPUSHARE_MAX_NODES) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: more than %d nodes", where,
                        KB_GPUSHARE_MAX_NODES);
            return FALSE;
        }
        t->n_nodes += s.count;
        t->n_gpus += s.count * s.gpus;
    } else {
        t->n_pods += s.count;
        t->n_gpu_pods += s.gpus > 0 ? s.count : 0;
        t->n_fractional += s.gpus == 1 && s.milli < 1000 ? s.count : 0;
    }
    g_array_append_val(a, s);
    return TRUE;
}

KbGpushareTrace *kb_gpushare_trace_parse(const char *text, const char *name, GError **error)
{
    g_autoptr(KbGpushareTrace) t = g_new0(KbGpushareTrace, 1);
    t->nodes = g_array_new(FALSE, FALSE, sizeof(Shape));
    t->pods = g_array_new(FALSE, FALSE, sizeof(Shape));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        char *l = g_strstrip(lines[i]);
        if (*l == '\0' || *l == '#' || g_str_has_prefix(l, "kind,"))
            continue;
        g_auto(GStrv) f = g_strsplit(l, ",", 8);
        g_autofree char *where = g_strdup_printf("%s:%u", name, i + 1);
        if (!parse_line(t, f, g_strv_length(f), where, error))
            return NULL;
    }
    if (t->n_gpus == 0 || t->n_gpu_pods == 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: no %s", name,
                    t->n_gpus == 0 ? "GPU node" : "pod asking for a GPU");
        return NULL;
    }
    return g_steal_pointer(&t);
}

KbGpushareTrace *kb_gpushare_trace_load(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, error))
        return NULL;
    return kb_gpushare_trace_parse(text, path, error);
}

guint kb_gpushare_trace_nodes(const KbGpushareTrace *t)
{
    return t->n_nodes;
}

guint kb_gpushare_trace_gpus(const KbGpushareTrace *t)
{
    return t->n_gpus;
}

guint kb_gpushare_trace_pods(const KbGpushareTrace *t, guint *fractional)
{
    if (fractional != NULL)
        *fractional = t->n_fractional;
    return t->n_pods;
}

const char *kb_gpushare_policy_name(KbGpusharePolicy p)
{
    return p == KB_GPUSHARE_DRA_MIG_FGD         ? "kube-batchd MIG FGD"
           : p == KB_GPUSHARE_DRA_FGD_CPU       ? "kube-batchd FGD cpu pods"
           : p == KB_GPUSHARE_DRA_FGD_WINDOW    ? "kube-batchd FGD window"
           : p == KB_GPUSHARE_DRA_FGD_FRACTIONS ? "kube-batchd FGD fractions"
           : p == KB_GPUSHARE_DRA_FGD           ? "kube-batchd FGD"
           : p == KB_GPUSHARE_FGD               ? "FGD"
           : p == KB_GPUSHARE_DRA_MIG           ? "kube-batchd MIG"
           : p == KB_GPUSHARE_DRA               ? "kube-batchd"
           : p == KB_GPUSHARE_PACKING           ? "packing"
                                                : "first-fit";
}

/* ---- placement ------------------------------------------------------------------------------ */

static guint free_gpus(const Node *n)
{
    guint k = 0;
    for (guint g = 0; g < n->n_gpus; g++)
        k += n->free[g] == 1000;
    return k;
}

static guint free_milli(const Node *n)
{
    guint m = 0;
    for (guint g = 0; g < n->n_gpus; g++)
        m += n->free[g];
    return m;
}

/* The GPU of @n for a fraction @milli: first-fit's first with room, or packing's tightest (a GPU
 * partly used before a free one). -1 when none has room. */
static int pick_gpu(const Node *n, guint milli, gboolean tight)
{
    int best = -1;
    for (guint g = 0; g < n->n_gpus; g++) {
        if (n->free[g] < milli)
            continue;
        if (!tight)
            return (int)g;
        if (best < 0 || n->free[g] < n->free[best])
            best = (int)g;
    }
    return best;
}

static gboolean fits(const Node *n, const Shape *p)
{
    if (n->cpu < p->cpu || n->mem < p->mem)
        return FALSE;
    if (p->gpus == 0)
        return TRUE;
    if (p->gpus == 1 && p->milli < 1000)
        return pick_gpu(n, p->milli, FALSE) >= 0;
    return free_gpus(n) >= p->gpus;
}

/* packing's score of placing @p on @n: lower is better. */
static gint64 pack_score(const Node *n, const Shape *p)
{
    if (p->gpus == 0)
        return free_milli(n);
    if (p->gpus == 1 && p->milli < 1000) {
        int g = pick_gpu(n, p->milli, TRUE);
        /* a GPU partly used beats any free one; then the tightest; then the fuller node */
        gint64 partly = n->free[g] < 1000 ? 0 : 1;
        return partly * 1000000 + (gint64)(n->free[g] - p->milli) * 100 + free_gpus(n);
    }
    return free_gpus(n);
}

static void take(Node *n, const Shape *p, gboolean tight)
{
    n->cpu -= p->cpu;
    n->mem -= p->mem;
    if (p->gpus == 1 && p->milli < 1000) {
        n->free[pick_gpu(n, p->milli, tight)] -= p->milli;
        return;
    }
    guint k = p->gpus;
    for (guint g = 0; g < n->n_gpus && k > 0; g++)
        if (n->free[g] == 1000) {
            n->free[g] = 0;
            k--;
        }
}

/* Place @p on @nodes: TRUE when it fitted somewhere. */
static gboolean place(Node *nodes, guint n, const Shape *p, KbGpusharePolicy policy)
{
    int best = -1;
    gint64 best_score = 0;
    for (guint i = 0; i < n; i++) {
        if (!fits(&nodes[i], p))
            continue;
        if (policy == KB_GPUSHARE_FIRST_FIT) {
            best = (int)i;
            break;
        }
        gint64 s = pack_score(&nodes[i], p);
        if (best < 0 || s < best_score) {
            best = (int)i;
            best_score = s;
        }
    }
    if (best < 0)
        return FALSE;
    take(&nodes[best], p, policy == KB_GPUSHARE_PACKING);
    return TRUE;
}

/* ---- FGD: node and GPU by the fragmentation gradient ---------------------------------------- */

/*
 * The shapes seen so far (every pod drawn, before it is placed, as the scheduler sees a pod before
 * placing it) and the snapshot the scores use, taken every KB_GPUSHARE_FGD_SNAPSHOT pods as a
 * scheduling cycle would; each node's fragmentation under the snapshot is kept until the node
 * or the snapshot changes.
 */
typedef struct {
    KbFragModel *seen, *snap;
    guint since, epoch;
    double *before;
    guint *before_epoch; /* epoch + 1 when before[] is valid */
    /* KB_GPUSHARE_DRA_MIG_FGD: nodes' GPUs as the allocator says (valid while view_ok), and the
     * shape of the pod being placed, instead of the model's milli-GPUs */
    KbDra *dra;
    KbFragNode *views;
    gboolean *view_ok;
    KbFragShape shape;
} Fgd;

static Fgd *fgd_new(guint n_nodes)
{
    Fgd *f = g_new0(Fgd, 1);
    f->seen = kb_frag_model_new(KB_GPUSHARE_FGD_HALF_LIFE);
    f->snap = kb_frag_model_copy(f->seen);
    f->before = g_new0(double, MAX(n_nodes, 1));
    f->before_epoch = g_new0(guint, MAX(n_nodes, 1));
    return f;
}

static void fgd_free(Fgd *f)
{
    if (f == NULL)
        return;
    kb_frag_model_free(f->seen);
    kb_frag_model_free(f->snap);
    g_free(f->before);
    g_free(f->before_epoch);
    g_free(f->views);
    g_free(f->view_ok);
    g_free(f);
}

static KbFragShape frag_shape(const Shape *p)
{
    gboolean fraction = p->gpus == 1 && p->milli < 1000;
    return (KbFragShape){p->cpu, p->gpus, p->gpus == 0 ? 0 : fraction ? p->milli : 1000};
}

static KbFragNode frag_node(const Node *n)
{
    KbFragNode fn = {n->cpu, MIN(n->n_gpus, KB_FRAG_MAX_GPUS), {0}};
    for (guint g = 0; g < fn.n_gpus; g++)
        fn.free[g] = n->free[g];
    return fn;
}

static void fgd_observe_shape(Fgd *f, const KbFragShape *s)
{
    kb_frag_model_observe(f->seen, s);
    if (++f->since >= KB_GPUSHARE_FGD_SNAPSHOT || kb_frag_model_shapes(f->snap) == 0) {
        kb_frag_model_free(f->snap);
        f->snap = kb_frag_model_copy(f->seen);
        f->since = 0;
        f->epoch++;
    }
}

static void fgd_observe(Fgd *f, const Shape *p)
{
    KbFragShape s = frag_shape(p);
    fgd_observe_shape(f, &s);
}

/* Node @k as the gradient sees it: the model's, or with the allocator's views its CPU and the
 * GPUs kb_dra_node_gpus reports. */
static KbFragNode fgd_node(Fgd *f, const Node *nodes, guint k)
{
    KbFragNode fn = frag_node(&nodes[k]);
    if (f->dra == NULL)
        return fn;
    if (!f->view_ok[k]) {
        g_autofree char *name = g_strdup_printf("node-%u", k);
        f->views[k].n_gpus = kb_dra_node_gpus(f->dra, name, f->views[k].free, KB_FRAG_MAX_GPUS);
        f->view_ok[k] = TRUE;
    }
    fn.n_gpus = f->views[k].n_gpus;
    memcpy(fn.free, f->views[k].free, sizeof(fn.free));
    return fn;
}

/* The GPU the allocator gives a fraction on @fn: the most used with room. */
static int tight_gpu(const KbFragNode *fn, guint milli)
{
    int best = -1;
    for (guint g = 0; g < fn->n_gpus; g++)
        if (fn->free[g] >= milli && (best < 0 || fn->free[g] < fn->free[best]))
            best = (int)g;
    return best;
}

/* Node @k changed: its fragmentation (and view) are to be computed again. */
static void fgd_changed(Fgd *f, guint k)
{
    f->before_epoch[k] = 0;
    if (f->view_ok != NULL)
        f->view_ok[k] = FALSE;
}

/*
 * The node of @nodes (those @usable says, all when NULL) where placing @p raises the
 * fragmentation least, the first in order among equals; -1 when it fits none. @allocator: score a
 * fraction on the GPU kube-batchd's allocator takes (the most used that fits) instead of FGD's
 * own choice; *@gpu receives the GPU of a fraction.
 */
static int fgd_pick(Fgd *f, const Node *nodes, guint n, const Shape *p, const gboolean *usable,
                    gboolean allocator, int *gpu)
{
    KbFragShape s = f->dra != NULL ? f->shape : frag_shape(p);
    int best = -1;
    double best_delta = 0;
    *gpu = -1;
    for (guint k = 0; k < n; k++) {
        if ((usable != NULL && !usable[k]) || (usable == NULL && !fits(&nodes[k], p)))
            continue;
        KbFragNode fn = fgd_node(f, nodes, k);
        if (f->before_epoch[k] != f->epoch + 1) {
            f->before[k] = kb_frag_node(f->snap, &fn);
            f->before_epoch[k] = f->epoch + 1;
        }
        int want = allocator && s.gpus == 1 && s.milli < 1000 ? tight_gpu(&fn, s.milli) : -1;
        if (allocator && s.gpus == 1 && s.milli < 1000 && want < 0)
            continue;
        int g = -1;
        double after = kb_frag_place_after(f->snap, &fn, &s, want, &g);
        if (after == G_MAXDOUBLE)
            continue;
        double delta = after - f->before[k];
        if (best < 0 || delta < best_delta - 1e-9) {
            best = (int)k;
            best_delta = delta;
            *gpu = g;
        }
    }
    return best;
}

static gboolean fgd_place(Fgd *f, Node *nodes, guint n, const Shape *p)
{
    int gpu = -1;
    int k = fgd_pick(f, nodes, n, p, NULL, FALSE, &gpu);
    if (k < 0)
        return FALSE;
    KbFragShape s = frag_shape(p);
    KbFragNode fn = frag_node(&nodes[k]);
    kb_frag_take(&fn, &s, gpu);
    nodes[k].cpu -= p->cpu;
    nodes[k].mem -= p->mem;
    for (guint g = 0; g < fn.n_gpus; g++)
        nodes[k].free[g] = fn.free[g];
    fgd_changed(f, (guint)k);
    return TRUE;
}

static Node *expand_nodes(const KbGpushareTrace *t)
{
    Node *nodes = g_new0(Node, t->n_nodes);
    guint k = 0;
    for (guint s = 0; s < t->nodes->len; s++) {
        const Shape *sh = &g_array_index(t->nodes, Shape, s);
        for (guint c = 0; c < sh->count; c++, k++) {
            nodes[k].cpu = sh->cpu;
            nodes[k].mem = sh->mem;
            nodes[k].n_gpus = sh->gpus;
            for (guint g = 0; g < sh->gpus; g++)
                nodes[k].free[g] = 1000;
        }
    }
    return nodes;
}

/* ---- through kube-batchd's allocator -------------------------------------------------------- */

/*
 * KB_GPUSHARE_DRA and KB_GPUSHARE_DRA_MIG: nodes taken in trace order as first-fit does (the
 * first where the pod fits), the GPU (and the MIG placement) on the node chosen by
 * scheduler/dra.c (kb_dra_fits, kb_dra_assume) among the ResourceSlices kb-kubelet --dra
 * publishes:
 *   - DRA: for a node labelled kube-batchd.io/gpu-sharing=memory: each GPU allows multiple
 *     allocations, its memory stands for its 1000 milli-GPUs (published as 1000Gi, so that the
 *     whole-GiB request policy makes one step one milli-GPU). A fraction is a claim asking
 *     capacity.requests memory of that many Gi;
 *   - DRA_MIG: with --mig (an A100's MIG profiles): a fraction is a claim for the smallest
 *     profile with at least its share of the GPU's seven compute slices (1g.10gb .. 7g.80gb).
 * Whole GPUs are a claim of that count for whole GPUs (a shared GPU's policy default is all of
 * it; a MIG-capable GPU's whole device consumes all its counters). Node CPU and memory are the
 * model's; what the allocator chose (its claim write's devices) is mirrored per GPU only to skip,
 * before asking the allocator, nodes where no GPU could have room.
 */
typedef struct {
    KbDra *dra;
    Node *nodes;
    guint n_nodes;
    gboolean mig;
    guint8 (*slices)[KB_GPUSHARE_MAX_NODE_GPU]; /* MIG: memory slices used, per node and GPU */
    guint64 seq;
    guint disagree; /* the mirror said a node had room, the allocator said not */
    Fgd *fgd;       /* KB_GPUSHARE_DRA_FGD*: nodes by the fragmentation gradient */
    gboolean *usable;
    gboolean fgd_whole; /* whole GPUs by the gradient too */
    gboolean fgd_cpu;   /* CPU-only pods by the gradient too */
    guint window;       /* nodes scored per pod (0: all) */
    guint start;        /* where the next window starts */
} DraCluster;

/* An A100's MIG profiles: memory slices spanned and the first slices a placement may start at
 * (bits), as kb-kubelet --mig publishes them. */
static const struct {
    const char *name, *compact;
    guint size;
    guint8 starts;
} mig_profiles[] = {
        {"1g.10gb", "-1g10gb-", 1, 0x7f}, {"2g.20gb", "-2g20gb-", 2, 0x15},
        {"3g.40gb", "-3g40gb-", 4, 0x11}, {"4g.40gb", "-4g40gb-", 4, 0x01},
        {"7g.80gb", "-7g80gb-", 8, 0x01},
};

/* The profile for @milli of a GPU: the smallest with at least that many sevenths. */
static guint mig_profile(guint milli)
{
    guint sevenths = MAX((milli * 7 + 999) / 1000, 1u);
    return sevenths <= 4 ? sevenths - 1 : G_N_ELEMENTS(mig_profiles) - 1;
}

static gboolean mig_room(guint8 used, guint p)
{
    for (guint s = 0; s < 8; s++) {
        guint8 mask = (guint8)(((1u << mig_profiles[p].size) - 1) << s);
        if ((mig_profiles[p].starts & (1u << s)) != 0 && (used & mask) == 0)
            return TRUE;
    }
    return FALSE;
}

static void dra_put(KbDra *dra, int kind, const char *json)
{
    json_object *o = json_tokener_parse(json);
    g_autoptr(GError) error = NULL;
    if (kind == 0) {
        g_autoptr(KbDeviceClass) dc = kb_device_class_decode(o, FALSE, &error);
        if (dc != NULL)
            kb_dra_set_class(dra, dc);
    } else {
        g_autoptr(KbResourceClaim) c = kb_resource_claim_decode(o, FALSE, &error);
        if (c != NULL)
            kb_dra_set_claim(dra, c);
    }
    json_object_put(o);
    if (error != NULL)
        g_error("bench-gpushare: %s", error->message); /* our own JSON: a broken invariant */
}

static void dra_put_class(KbDra *dra, const char *name, const char *type)
{
    g_autofree char *j = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
            "\"device.attributes['gpu.nvidia.com'].type == '%s'\"}}]}}",
            name, type);
    dra_put(dra, 0, j);
}

static DraCluster *dra_cluster_new(const KbGpushareTrace *t, KbGpusharePolicy policy)
{
    DraCluster *c = g_new0(DraCluster, 1);
    gboolean mig = policy == KB_GPUSHARE_DRA_MIG || policy == KB_GPUSHARE_DRA_MIG_FGD;
    gboolean fgd = policy == KB_GPUSHARE_DRA_FGD || policy == KB_GPUSHARE_DRA_FGD_FRACTIONS ||
                   policy == KB_GPUSHARE_DRA_FGD_WINDOW || policy == KB_GPUSHARE_DRA_FGD_CPU ||
                   policy == KB_GPUSHARE_DRA_MIG_FGD;
    c->fgd = fgd ? fgd_new(t->n_nodes) : NULL;
    c->fgd_whole = policy != KB_GPUSHARE_DRA_FGD_FRACTIONS;
    c->fgd_cpu = policy == KB_GPUSHARE_DRA_FGD_CPU;
    c->window = policy == KB_GPUSHARE_DRA_FGD_WINDOW ? KB_GPUSHARE_WINDOW : 0;
    c->usable = g_new0(gboolean, MAX(t->n_nodes, 1));
    c->dra = kb_dra_new();
    c->nodes = expand_nodes(t);
    c->n_nodes = t->n_nodes;
    c->mig = mig;
    if (policy == KB_GPUSHARE_DRA_MIG_FGD) {
        c->fgd->dra = c->dra;
        c->fgd->views = g_new0(KbFragNode, MAX(c->n_nodes, 1));
        c->fgd->view_ok = g_new0(gboolean, MAX(c->n_nodes, 1));
    }
    c->slices = g_malloc0_n(MAX(c->n_nodes, 1), sizeof(*c->slices));
    dra_put_class(c->dra, "gpu.nvidia.com", "gpu");
    dra_put_class(c->dra, "mig.nvidia.com", "mig");
    for (guint k = 0; k < c->n_nodes; k++) {
        if (c->nodes[k].n_gpus == 0)
            continue;
        g_autofree char *nj = g_strdup_printf(
                "{\"metadata\":{\"name\":\"node-%u\",\"labels\":{%s}},\"status\":{"
                "\"allocatable\":{\"nvidia.com/gpu\":\"%u\"}}}",
                k,
                mig ? ""
                    : "\"kube-batchd.io/gpu-sharing\":\"memory\",\"nvidia.com/gpu.memory\":"
                      "\"1024000\"",
                c->nodes[k].n_gpus);
        json_object *node = json_tokener_parse(nj);
        g_autoptr(GError) error = NULL;
        json_object *slices = kbl_dra_slices(node, mig, &error);
        json_object_put(node);
        for (gsize i = 0; slices != NULL && i < json_object_array_length(slices); i++) {
            g_autoptr(KbResourceSlice) s =
                    kb_resource_slice_decode(json_object_array_get_idx(slices, i), FALSE, &error);
            if (s == NULL)
                g_error("bench-gpushare: %s", error->message);
            kb_dra_set_slice(c->dra, s);
        }
        json_object_put(slices);
    }
    return c;
}

static void dra_cluster_free(DraCluster *c)
{
    kb_dra_free(c->dra);
    fgd_free(c->fgd);
    g_free(c->usable);
    g_free(c->slices);
    g_free(c->nodes);
    g_free(c);
}

/* Could @p's GPUs fit on node @k as far as the mirror knows. */
static gboolean mirror_fits(const DraCluster *c, guint k, const Shape *p)
{
    const Node *n = &c->nodes[k];
    if (n->cpu < p->cpu || n->mem < p->mem)
        return FALSE;
    gboolean fraction = p->gpus == 1 && p->milli < 1000;
    if (!c->mig)
        return fraction ? pick_gpu(n, p->milli, FALSE) >= 0 : free_gpus(n) >= p->gpus;
    guint free = 0;
    for (guint g = 0; g < n->n_gpus; g++) {
        if (fraction && mig_room(c->slices[k][g], mig_profile(p->milli)))
            return TRUE;
        free += c->slices[k][g] == 0;
    }
    return !fraction && free >= p->gpus;
}

/* One device the allocator chose on node @k (@mem: a share's consumedCapacity memory, or NULL)
 * into the mirror. */
static void mirror_device(DraCluster *c, guint k, const char *dev, const char *mem)
{
    Node *n = &c->nodes[k];
    char *end = NULL;
    guint g = (guint)g_ascii_strtoull(dev + strlen("gpu-"), &end, 10);
    if (g >= n->n_gpus)
        return;
    if (!c->mig) {
        KbQuantity q;
        gint64 gib = mem != NULL && kb_quantity_parse(mem, &q, NULL) ? kb_quantity_value(&q) >> 30
                                                                     : 1000;
        n->free[g] -= (guint)MIN(gib, (gint64)n->free[g]);
        return;
    }
    if (*end == '\0') {
        c->slices[k][g] = 0xff; /* the whole GPU */
        return;
    }
    const char *start = strrchr(dev, '-');
    for (guint p = 0; p < G_N_ELEMENTS(mig_profiles); p++) {
        if (strstr(dev, mig_profiles[p].compact) != NULL)
            c->slices[k][g] |= (guint8)(((1u << mig_profiles[p].size) - 1)
                                        << g_ascii_strtoull(start + 1, NULL, 10));
    }
}

/* The allocator's choice for @pod (held) on node @k into the mirror. */
static void mirror_take(DraCluster *c, KbPod *pod, guint k)
{
    KbPod *pods[] = {pod};
    g_autofree GPtrArray **writes = kb_dra_gang_writes(c->dra, pods, 1);
    g_autoptr(GPtrArray) w = writes[0];
    for (guint i = 0; w != NULL && i < w->len; i++) {
        const KbClaimWrite *cw = w->pdata[i];
        json_object *body = json_tokener_parse(cw->body);
        json_object *st = json_object_object_get(body, "status");
        json_object *res = json_object_object_get(
                json_object_object_get(json_object_object_get(st, "allocation"), "devices"),
                "results");
        for (gsize r = 0; r < json_object_array_length(res); r++) {
            json_object *o = json_object_array_get_idx(res, r);
            mirror_device(c, k, json_object_get_string(json_object_object_get(o, "device")),
                          json_object_get_string(json_object_object_get(
                                  json_object_object_get(o, "consumedCapacity"), "memory")));
        }
        json_object_put(body);
    }
}

/* The claim of pod shape @p (a fraction or whole GPUs) as JSON, named c<@id>. */
static char *dra_claim_json(const DraCluster *c, const Shape *p, guint64 id)
{
    gboolean fraction = p->gpus == 1 && p->milli < 1000;
    g_autofree char *what = NULL;
    if (fraction && c->mig)
        what = g_strdup_printf("\"deviceClassName\":\"mig.nvidia.com\",\"selectors\":[{\"cel\":{"
                               "\"expression\":\"device.attributes['gpu.nvidia.com'].profile == "
                               "'%s'\"}}]",
                               mig_profiles[mig_profile(p->milli)].name);
    else if (fraction)
        what = g_strdup_printf("\"deviceClassName\":\"gpu.nvidia.com\",\"capacity\":{"
                               "\"requests\":{\"memory\":\"%uGi\"}}",
                               p->milli);
    else
        what = g_strdup_printf("\"deviceClassName\":\"gpu.nvidia.com\",\"count\":%u", p->gpus);
    return g_strdup_printf(
            "{\"metadata\":{\"name\":\"c%" G_GUINT64_FORMAT "\",\"namespace\":\"b\",\"uid\":"
            "\"cu%" G_GUINT64_FORMAT "\",\"resourceVersion\":\"1\"},\"spec\":{\"devices\":{"
            "\"requests\":[{\"name\":\"gpu\",\"exactly\":{%s}}]}}}",
            id, id, what);
}

/* With a window: only the first c->window usable nodes from c->start stay usable; the next
 * window starts after the last of them. */
static void dra_window(DraCluster *c)
{
    if (c->window == 0 || c->n_nodes == 0)
        return;
    guint seen = 0, last = c->start;
    for (guint i = 0; i < c->n_nodes; i++) {
        guint k = (c->start + i) % c->n_nodes;
        if (!c->usable[k])
            continue;
        if (seen < c->window) {
            seen++;
            last = k;
        } else {
            c->usable[k] = FALSE;
        }
    }
    if (seen > 0)
        c->start = (last + 1) % c->n_nodes;
}

static gboolean fraction_of(const Shape *p)
{
    return p->gpus == 1 && p->milli < 1000;
}

/* With the allocator's views (MIG): @pod's shape as the allocator would take it, from the first
 * node the mirror admits, into the gradient's histogram and c->fgd->shape. FALSE when it fits
 * on none. */
static gboolean dra_shape(DraCluster *c, const KbPod *pod, const Shape *p)
{
    for (guint k = 0; k < c->n_nodes; k++) {
        if (!c->usable[k])
            continue;
        g_autofree char *name = g_strdup_printf("node-%u", k);
        KbFragShape s = {p->cpu, 0, 0};
        gint gpu = -1;
        if (!kb_dra_pod_gpus(c->dra, pod, name, FALSE, &s.gpus, &s.milli, &gpu, NULL))
            continue;
        c->fgd->shape = s;
        fgd_observe_shape(c->fgd, &s);
        return TRUE;
    }
    return FALSE;
}

/* The next node to offer @p to: first-fit's order, or with FGD the node the gradient prefers
 * among those not refused yet; -1 when none is left. */
static int dra_next_node(DraCluster *c, const Shape *p, guint *from)
{
    if (c->fgd == NULL || (!c->fgd_whole && !fraction_of(p))) {
        for (; *from < c->n_nodes; (*from)++)
            if (mirror_fits(c, *from, p))
                return (int)(*from)++;
        return -1;
    }
    int gpu = -1;
    return fgd_pick(c->fgd, c->nodes, c->n_nodes, p, c->usable, TRUE, &gpu);
}

/* Place @p through the allocator: TRUE when it fitted somewhere. */
static gboolean dra_place(DraCluster *c, const Shape *p)
{
    if (c->fgd != NULL) {
        for (guint k = 0; k < c->n_nodes; k++)
            c->usable[k] = mirror_fits(c, k, p);
        dra_window(c);
    }
    if (p->gpus == 0 && (c->fgd == NULL || !c->fgd_cpu)) {
        /* the model's first-fit; FGD's cache told which node changed */
        for (guint k = 0; k < c->n_nodes; k++) {
            if (!fits(&c->nodes[k], p))
                continue;
            c->nodes[k].cpu -= p->cpu;
            c->nodes[k].mem -= p->mem;
            if (c->fgd != NULL)
                fgd_changed(c->fgd, k);
            return TRUE;
        }
        return FALSE;
    }
    if (p->gpus == 0) {
        int gpu = -1;
        int k = fgd_pick(c->fgd, c->nodes, c->n_nodes, p, c->usable, TRUE, &gpu);
        if (k < 0)
            return FALSE;
        c->nodes[k].cpu -= p->cpu;
        c->nodes[k].mem -= p->mem;
        fgd_changed(c->fgd, (guint)k);
        return TRUE;
    }
    guint64 id = ++c->seq;
    g_autofree char *claim = dra_claim_json(c, p, id);
    dra_put(c->dra, 1, claim);
    g_autofree char *pj = g_strdup_printf(
            "{\"metadata\":{\"name\":\"p%" G_GUINT64_FORMAT "\",\"namespace\":\"b\",\"uid\":"
            "\"u%" G_GUINT64_FORMAT "\"},\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\","
            "\"resourceClaimName\":\"c%" G_GUINT64_FORMAT "\"}],\"containers\":[{\"name\":"
            "\"c\"}]}}",
            id, id, id);
    json_object *o = json_tokener_parse(pj);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode(o, FALSE, &error);
    json_object_put(o);
    if (pod == NULL)
        g_error("bench-gpushare: %s", error->message);
    if (c->fgd != NULL && c->fgd->dra != NULL && !dra_shape(c, pod, p))
        return FALSE;
    guint from = 0;
    for (int k; (k = dra_next_node(c, p, &from)) >= 0;) {
        g_autofree char *name = g_strdup_printf("node-%d", k);
        if (!kb_dra_fits(c->dra, pod, name, NULL, NULL) || !kb_dra_assume(c->dra, pod, name)) {
            c->disagree++;
            c->usable[k] = FALSE;
            continue;
        }
        c->nodes[k].cpu -= p->cpu;
        c->nodes[k].mem -= p->mem;
        mirror_take(c, pod, (guint)k);
        if (c->fgd != NULL)
            fgd_changed(c->fgd, (guint)k);
        return TRUE;
    }
    return FALSE;
}

guint kb_gpushare_dra_disagreements(void)
{
    return dra_disagreements;
}

/* The allocator's cluster for @policy, or NULL for the model's policies. */
static DraCluster *dra_cluster_for(const KbGpushareTrace *t, KbGpusharePolicy policy)
{
    if (policy != KB_GPUSHARE_DRA && policy != KB_GPUSHARE_DRA_MIG &&
        policy != KB_GPUSHARE_DRA_FGD && policy != KB_GPUSHARE_DRA_FGD_FRACTIONS &&
        policy != KB_GPUSHARE_DRA_FGD_WINDOW && policy != KB_GPUSHARE_DRA_FGD_CPU &&
        policy != KB_GPUSHARE_DRA_MIG_FGD)
        return NULL;
    return dra_cluster_new(t, policy);
}

/* One placement by @policy on the model's @nodes (@f: FGD's state) or through @c. The FGD
 * policies see the pod's shape first. */
static gboolean place_any(Node *nodes, DraCluster *c, Fgd *f, guint n, const Shape *p,
                          KbGpusharePolicy policy)
{
    if (c != NULL && c->fgd != NULL && (c->fgd->dra == NULL || p->gpus == 0))
        fgd_observe(c->fgd, p);
    if (c != NULL)
        return dra_place(c, p);
    if (f != NULL) {
        fgd_observe(f, p);
        return fgd_place(f, nodes, n, p);
    }
    return place(nodes, n, p, policy);
}

/* A pod shape drawn with weight count. */
static const Shape *draw(const KbGpushareTrace *t, GRand *r)
{
    gint32 x = g_rand_int_range(r, 0, (gint32)t->n_pods);
    for (guint s = 0; s < t->pods->len; s++) {
        const Shape *sh = &g_array_index(t->pods, Shape, s);
        if (x < (gint32)sh->count)
            return sh;
        x -= (gint32)sh->count;
    }
    return &g_array_index(t->pods, Shape, t->pods->len - 1);
}

double kb_gpushare_place_seq(const KbGpushareTrace *t, KbGpusharePolicy policy, const guint *pods,
                             guint n, guint *placed)
{
    g_autofree Node *nodes = expand_nodes(t);
    DraCluster *c = dra_cluster_for(t, policy);
    Fgd *f = policy == KB_GPUSHARE_FGD ? fgd_new(t->n_nodes) : NULL;
    double capacity = 1000.0 * t->n_gpus, allocated = 0;
    guint ok = 0;
    for (guint i = 0; i < n; i++) {
        g_return_val_if_fail(pods[i] < t->pods->len, 1.0);
        const Shape *p = &g_array_index(t->pods, Shape, pods[i]);
        if (place_any(nodes, c, f, t->n_nodes, p, policy)) {
            allocated += p->gpus == 1 && p->milli < 1000 ? p->milli : 1000.0 * p->gpus;
            ok++;
        }
    }
    if (placed != NULL)
        *placed = ok;
    fgd_free(f);
    if (c != NULL) {
        dra_disagreements += c->disagree;
        dra_cluster_free(c);
    }
    return 1.0 - allocated / capacity;
}

void kb_gpushare_replay(const KbGpushareTrace *t, KbGpusharePolicy policy, guint64 seed,
                        const double *loads, guint n_loads, double *unallocated, guint *dropped)
{
    g_autofree Node *nodes = expand_nodes(t);
    DraCluster *c = dra_cluster_for(t, policy);
    Fgd *f = policy == KB_GPUSHARE_FGD ? fgd_new(t->n_nodes) : NULL;
    g_autoptr(GRand) r = g_rand_new_with_seed((guint32)(seed ^ (seed >> 32)));
    double capacity = 1000.0 * t->n_gpus, arrived = 0, allocated = 0;
    guint lost = 0, next = 0;
    while (next < n_loads) {
        const Shape *p = draw(t, r);
        double want = p->gpus == 1 && p->milli < 1000 ? p->milli : 1000.0 * p->gpus;
        arrived += want;
        if (place_any(nodes, c, f, t->n_nodes, p, policy))
            allocated += want;
        else
            lost++;
        while (next < n_loads && arrived >= loads[next] * capacity)
            unallocated[next++] = 1.0 - allocated / capacity;
    }
    if (dropped != NULL)
        *dropped = lost;
    fgd_free(f);
    if (c != NULL) {
        dra_disagreements += c->disagree;
        dra_cluster_free(c);
    }
}
