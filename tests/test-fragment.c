/*
 * scheduler/fragment: the decayed shape histogram and FGD's fragmentation gradient, on nodes where
 * it chooses otherwise than best fit (the GPU or node most used already) would.
 */
#include "scheduler/fragment.h"

static const KbFragShape cpu_only = {4000, 0, 0};

static KbFragShape frac(guint milli)
{
    return (KbFragShape){1000, 1, milli};
}

static KbFragShape whole(guint gpus)
{
    return (KbFragShape){1000, gpus, 1000};
}

static KbFragNode node1(guint free0)
{
    return (KbFragNode){32000, 1, {free0}};
}

/* How much placing @s on @n raises its fragmentation (G_MAXDOUBLE: does not fit); *@gpu the GPU. */
static double delta(const KbFragModel *m, const KbFragNode *n, const KbFragShape *s, int *gpu)
{
    double after = kb_frag_place_after(m, n, s, -1, gpu);
    return after == G_MAXDOUBLE ? after : after - kb_frag_node(m, n);
}

static void observe(KbFragModel *m, KbFragShape s, guint times)
{
    for (guint i = 0; i < times; i++)
        g_assert_true(kb_frag_model_observe(m, &s));
}

/* The common shape asks 500: a 200 goes where 500 stays free (a GPU with 700 free) rather than
 * onto the GPU with 600 free that best fit would take (400 left, which no 500 can use). */
static void test_prefers_common_remainder(void)
{
    g_autoptr(KbFragModel) m = kb_frag_model_new(1e9);
    observe(m, frac(500), 8);
    observe(m, frac(200), 2);
    KbFragNode a = node1(700), b = node1(600);
    KbFragShape p = frac(200);
    double da = delta(m, &a, &p, NULL), db = delta(m, &b, &p, NULL);
    g_assert_cmpfloat(da, <, db);
    /* b leaves 400 that 80% of pods (the 500s) cannot use: 0.8 x 400 more than before */
    g_assert_cmpfloat_with_epsilon(db, 0.8 * 400, 1e-6);
    g_assert_cmpfloat_with_epsilon(da, 0.0, 1e-6);
    /* the same two GPUs on one node: the 200 goes on the one with 700 free */
    KbFragNode two = {32000, 2, {600, 700}};
    int gpu = -1;
    g_assert_cmpfloat(delta(m, &two, &p, &gpu), <, G_MAXDOUBLE);
    g_assert_cmpint(gpu, ==, 1);
}

/* Whole-GPU pods are common: a share goes on the GPU already partly used, not on an untouched
 * one, on a node and across nodes. */
static void test_keeps_whole_gpu(void)
{
    g_autoptr(KbFragModel) m = kb_frag_model_new(1e9);
    observe(m, whole(1), 5);
    observe(m, frac(300), 5);
    KbFragShape p = frac(300);
    KbFragNode n = {32000, 2, {1000, 600}};
    int gpu = -1;
    double d = delta(m, &n, &p, &gpu);
    g_assert_cmpint(gpu, ==, 1);
    /* left: 1000 and 300, each usable by one of the two shapes: 300 is lost to the whole-GPU
     * pods, as 600 was before */
    g_assert_cmpfloat_with_epsilon(d, 0.5 * 300 - 0.5 * 600, 1e-6);
    KbFragNode untouched = node1(1000), partly = node1(600);
    g_assert_cmpfloat(delta(m, &partly, &p, NULL), <, delta(m, &untouched, &p, NULL));
    /* taking the GPU given */
    g_assert_cmpfloat(kb_frag_place_after(m, &n, &p, 0, &gpu), >,
                      kb_frag_place_after(m, &n, &p, 1, NULL));
    g_assert_cmpint(gpu, ==, 0);
    KbFragShape two = whole(2);
    g_assert_cmpfloat(kb_frag_place_after(m, &n, &two, -1, NULL), ==, G_MAXDOUBLE);
}

/* A remainder no known shape fits counts as lost, so a GPU with more room is preferred; once the
 * pods seen ask for what the remainder holds, it no longer is: the model learns from them. */
static void test_strands_unknown_remainder(void)
{
    g_autoptr(KbFragModel) m = kb_frag_model_new(50);
    observe(m, frac(400), 10);
    KbFragShape p = frac(300);
    KbFragNode a = node1(700), b = node1(500); /* a leaves 400, b leaves 200 */
    g_assert_cmpfloat(delta(m, &b, &p, NULL), >, delta(m, &a, &p, NULL));
    g_assert_cmpfloat_with_epsilon(delta(m, &b, &p, NULL), 200, 1e-6);
    /* the mix moves to 200s: the older 400s decay (half-life 50 observations) */
    observe(m, frac(200), 400);
    KbFragShape old = frac(400);
    g_assert_cmpfloat(kb_frag_model_share(m, &old), <, 0.01);
    /* b's 200 left is now what most pods ask: almost nothing is lost (was 200) */
    g_assert_cmpfloat(delta(m, &b, &p, NULL), <, 1);
}

/* CPU: a GPU pod that leaves a node too little CPU for the common GPU shapes strands its GPUs; a
 * CPU-only pod goes where it strands nothing (a node without GPUs). */
static void test_cpu(void)
{
    g_autoptr(KbFragModel) m = kb_frag_model_new(1e9);
    observe(m, (KbFragShape){8000, 1, 1000}, 10);
    observe(m, cpu_only, 1);
    KbFragNode gpu_node = {10000, 2, {1000, 1000}}, cpu_node = {64000, 0, {0}};
    double on_gpu = delta(m, &gpu_node, &cpu_only, NULL);
    g_assert_cmpfloat(on_gpu, >, 0);
    g_assert_cmpfloat_with_epsilon(delta(m, &cpu_node, &cpu_only, NULL), 0, 1e-9);
    /* no GPU shape fits a node short of CPU: all its free GPU is lost to each of them */
    KbFragNode starved = {4000, 2, {1000, 1000}};
    g_assert_cmpfloat_with_epsilon(kb_frag_node(m, &starved), 2000, 1e-6);
    g_assert_false(kb_frag_fits(&starved, &(KbFragShape){8000, 1, 1000}));
}

/* The model: bad shapes refused, at most KB_FRAG_MAX_SHAPES kept (the lightest forgotten), shares
 * summing to 1, weights that stay finite over many observations. */
static void test_model(void)
{
    g_autoptr(KbFragModel) m = kb_frag_model_new(10);
    g_assert_false(kb_frag_model_observe(m, &(KbFragShape){1000, 2, 500}));
    g_assert_false(kb_frag_model_observe(m, &(KbFragShape){1000, 1, 1001}));
    g_assert_false(kb_frag_model_observe(m, &(KbFragShape){1000, 0, 100}));
    g_assert_false(kb_frag_model_observe(m, &(KbFragShape){1000, KB_FRAG_MAX_GPUS + 1, 1000}));
    g_assert_cmpuint(kb_frag_model_shapes(m), ==, 0);
    KbFragNode n = node1(500);
    g_assert_cmpfloat(kb_frag_node(m, &n), ==, 0);
    guint gen = kb_frag_model_gen(m);
    for (guint i = 0; i < KB_FRAG_MAX_SHAPES + 10; i++)
        observe(m, frac(10 + i), 1);
    g_assert_cmpuint(kb_frag_model_gen(m), !=, gen);
    g_assert_cmpuint(kb_frag_model_shapes(m), ==, KB_FRAG_MAX_SHAPES);
    KbFragShape first = frac(10), one = whole(1);
    g_assert_cmpfloat(kb_frag_model_share(m, &first), ==, 0);
    double sum = 0;
    for (guint i = 0; i < KB_FRAG_MAX_SHAPES + 10; i++) {
        KbFragShape s = frac(10 + i);
        sum += kb_frag_model_share(m, &s);
    }
    g_assert_cmpfloat_with_epsilon(sum, 1.0, 1e-9);
    observe(m, whole(1), 100000);
    g_assert_cmpfloat_with_epsilon(kb_frag_model_share(m, &one), 1.0, 1e-9);
    g_autoptr(KbFragModel) copy = kb_frag_model_copy(m);
    observe(m, frac(500), 1000);
    g_assert_cmpfloat_with_epsilon(kb_frag_model_share(copy, &one), 1.0, 1e-9);
}

/* Limits: more GPUs asked than a node has, a fraction on a GPU out of range or without room, a
 * node of KB_FRAG_MAX_GPUS GPUs, an empty node: no crash, no fit, nothing lost. */
static void test_limits(void)
{
    g_autoptr(KbFragModel) m = kb_frag_model_new(1e9);
    observe(m, whole(KB_FRAG_MAX_GPUS), 1);
    observe(m, frac(300), 1);
    KbFragNode full = {64000, KB_FRAG_MAX_GPUS, {0}};
    for (guint g = 0; g < KB_FRAG_MAX_GPUS; g++)
        full.free[g] = 1000;
    g_assert_cmpfloat_with_epsilon(kb_frag_node(m, &full), 0, 1e-9);
    KbFragShape all = whole(KB_FRAG_MAX_GPUS), p = frac(300);
    g_assert_cmpfloat_with_epsilon(kb_frag_place_after(m, &full, &all, -1, NULL), 0, 1e-9);
    KbFragNode small = node1(200);
    g_assert_cmpfloat(kb_frag_place_after(m, &small, &all, -1, NULL), ==, G_MAXDOUBLE);
    g_assert_cmpfloat(kb_frag_place_after(m, &small, &p, -1, NULL), ==, G_MAXDOUBLE);
    g_assert_cmpfloat(kb_frag_place_after(m, &full, &p, KB_FRAG_MAX_GPUS, NULL), ==, G_MAXDOUBLE);
    g_assert_cmpfloat(kb_frag_place_after(m, &full, &p, -2, NULL), <, G_MAXDOUBLE);
    kb_frag_take(&small, &p, 5); /* out of range: only the CPU is taken */
    g_assert_cmpuint(small.free[0], ==, 200);
    KbFragNode none = {0, 0, {0}};
    g_assert_cmpfloat(kb_frag_node(m, &none), ==, 0);
    g_assert_false(kb_frag_fits(&none, &p));
    g_assert_true(kb_frag_fits(&none, &(KbFragShape){0, 0, 0}));
}

/* Shapes the random tests draw from: no GPU, whole GPUs, fractions, each with some CPUs. */
static KbFragShape pool_shape(guint i)
{
    static const gint64 cpus[] = {0, 2000, 8000};
    gint64 cpu = cpus[i % 3];
    guint kind = i / 3 % 14;
    if (kind == 0)
        return (KbFragShape){cpu, 0, 0};
    if (kind <= 4)
        return (KbFragShape){cpu, kind, 1000};
    return (KbFragShape){cpu, 1, (kind - 4) * 100};
}
#define POOL 42

/* A node of 1-8 GPUs, each free, taken or (unless @whole_only) partly used. */
static KbFragNode random_node(gboolean whole_only)
{
    static const gint64 cpus[] = {0, 4000, 8000, 16000};
    KbFragNode n = {cpus[g_test_rand_int_range(0, 4)], (guint)g_test_rand_int_range(1, 9), {0}};
    for (guint g = 0; g < n.n_gpus; g++) {
        gint r = g_test_rand_int_range(0, whole_only ? 2 : 3);
        n.free[g] = r == 0 ? 0 : r == 1 ? 1000 : (guint)g_test_rand_int_range(1, 1000);
    }
    return n;
}

/* The definition, shape by shape: what @s cannot use of @n's free GPUs. */
static guint reference_lost(const KbFragNode *n, const KbFragShape *s)
{
    guint total = 0, whole = 0, below = 0;
    gboolean room = FALSE;
    for (guint g = 0; g < n->n_gpus; g++) {
        total += n->free[g];
        whole += n->free[g] == 1000;
        if (n->free[g] < s->milli)
            below += n->free[g];
        else
            room = TRUE;
    }
    if (n->cpu < s->cpu || s->gpus == 0)
        return total;
    gboolean fits = s->milli == 1000 ? whole >= s->gpus : room;
    return fits ? below : total;
}

/* kb_frag_node reads a node once for all its whole-GPU shapes: the same as the definition (each
 * shape's share of what it cannot use) on random models and nodes. */
static void test_node_reference(void)
{
    for (guint round = 0; round < 200; round++) {
        g_autoptr(KbFragModel) m = kb_frag_model_new(g_test_rand_int_range(1, 50));
        guint kinds = (guint)g_test_rand_int_range(1, 12);
        for (guint k = 0; k < kinds; k++)
            observe(m, pool_shape((guint)g_test_rand_int_range(0, POOL)),
                    (guint)g_test_rand_int_range(1, 20));
        for (guint v = 0; v < 20; v++) {
            KbFragNode n = random_node(v % 2 == 0);
            double want = 0;
            for (guint i = 0; i < POOL; i++) {
                KbFragShape s = pool_shape(i);
                want += kb_frag_model_share(m, &s) * reference_lost(&n, &s);
            }
            g_assert_cmpfloat_with_epsilon(kb_frag_node(m, &n), want, 1e-9 * MAX(1.0, want));
        }
    }
}

/* KbFragMemo gives exactly what kb_frag_node computes, while the model changes under it (new
 * shapes, weights moving) and nodes of the same free GPUs differ in CPU or in partly used GPUs. */
static void test_memo(void)
{
    g_autoptr(KbFragModel) m = kb_frag_model_new(5);
    KbFragMemo memo;
    kb_frag_memo_init(&memo);
    for (guint i = 0; i < 5000; i++) {
        if (g_test_rand_int_range(0, 8) == 0)
            observe(m, pool_shape((guint)g_test_rand_int_range(0, POOL)), 1);
        gboolean whole_only = g_test_rand_int_range(0, 4) != 0;
        KbFragNode n = random_node(whole_only);
        if (whole_only) {
            g_assert_true(kb_frag_memo_keeps(&n));
            guint free_gpus = 0;
            for (guint g = 0; g < n.n_gpus; g++)
                free_gpus += n.free[g] == 1000;
            g_assert_cmpfloat(kb_frag_whole_memo(m, &memo, n.cpu, free_gpus), ==,
                              kb_frag_node(m, &n));
        }
        g_assert_cmpfloat(kb_frag_node_memo(m, &memo, &n), ==, kb_frag_node(m, &n));
        KbFragShape s = pool_shape((guint)g_test_rand_int_range(0, POOL));
        int gpu = g_test_rand_int_range(0, 3) == 0 ? g_test_rand_int_range(0, 8) : -1;
        int chosen = -2, chosen_memo = -3;
        double want = kb_frag_place_after(m, &n, &s, gpu, &chosen);
        g_assert_cmpfloat(kb_frag_place_after_memo(m, &memo, &n, &s, gpu, &chosen_memo), ==, want);
        g_assert_cmpint(chosen_memo, ==, chosen);
    }
    g_assert_false(kb_frag_memo_keeps(&(KbFragNode){0, 2, {1000, 999}}));
    g_assert_cmpfloat(kb_frag_node_memo(m, NULL, &(KbFragNode){0, 1, {1000}}), ==,
                      kb_frag_node(m, &(KbFragNode){0, 1, {1000}}));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fragment/prefers-common-remainder", test_prefers_common_remainder);
    g_test_add_func("/fragment/keeps-whole-gpu", test_keeps_whole_gpu);
    g_test_add_func("/fragment/strands-unknown-remainder", test_strands_unknown_remainder);
    g_test_add_func("/fragment/cpu", test_cpu);
    g_test_add_func("/fragment/model", test_model);
    g_test_add_func("/fragment/limits", test_limits);
    g_test_add_func("/fragment/node-reference", test_node_reference);
    g_test_add_func("/fragment/memo", test_memo);
    return g_test_run();
}
