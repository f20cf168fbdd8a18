/* GPU-sharing placement model for bench-gpushare (see gpushare.h). */
#include "bench/lib/gpushare.h"

#include <stdlib.h>
#include <string.h>

#include "kube/kb-error.h"

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
    return p == KB_GPUSHARE_PACKING ? "packing" : "first-fit";
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
    double capacity = 1000.0 * t->n_gpus, allocated = 0;
    guint ok = 0;
    for (guint i = 0; i < n; i++) {
        g_return_val_if_fail(pods[i] < t->pods->len, 1.0);
        const Shape *p = &g_array_index(t->pods, Shape, pods[i]);
        if (place(nodes, t->n_nodes, p, policy)) {
            allocated += p->gpus == 1 && p->milli < 1000 ? p->milli : 1000.0 * p->gpus;
            ok++;
        }
    }
    if (placed != NULL)
        *placed = ok;
    return 1.0 - allocated / capacity;
}

void kb_gpushare_replay(const KbGpushareTrace *t, KbGpusharePolicy policy, guint64 seed,
                        const double *loads, guint n_loads, double *unallocated, guint *dropped)
{
    g_autofree Node *nodes = expand_nodes(t);
    g_autoptr(GRand) r = g_rand_new_with_seed((guint32)(seed ^ (seed >> 32)));
    double capacity = 1000.0 * t->n_gpus, arrived = 0, allocated = 0;
    guint lost = 0, next = 0;
    while (next < n_loads) {
        const Shape *p = draw(t, r);
        double want = p->gpus == 1 && p->milli < 1000 ? p->milli : 1000.0 * p->gpus;
        arrived += want;
        if (place(nodes, t->n_nodes, p, policy))
            allocated += want;
        else
            lost++;
        while (next < n_loads && arrived >= loads[next] * capacity)
            unallocated[next++] = 1.0 - allocated / capacity;
    }
    if (dropped != NULL)
        *dropped = lost;
}
