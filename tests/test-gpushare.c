/*
 * bench/lib/gpushare: bench-gpushare's shape file (errors name the line, field and value; its
 * limits) and the two placement policies on orders where they differ.
 */
#include <string.h>

#include "bench/lib/gpushare.h"
#include "kube/kb-error.h"

#define HEADER "# test\nkind,count,cpu_milli,memory_mib,gpus,gpu_milli,model\n"

static void test_parse(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbGpushareTrace) t = kb_gpushare_trace_parse(HEADER "node,2,8000,1024,4,,T4\n"
                                                                  "node,1,8000,1024,0,,\n"
                                                                  "pod,3,100,10,1,250,\n"
                                                                  "pod,2,100,10,2,1000,\n"
                                                                  "pod,5,100,10,0,0,\n",
                                                           "t.csv", &error);
    g_assert_no_error(error);
    g_assert_cmpuint(kb_gpushare_trace_nodes(t), ==, 3);
    g_assert_cmpuint(kb_gpushare_trace_gpus(t), ==, 8);
    guint frac = 0;
    g_assert_cmpuint(kb_gpushare_trace_pods(t, &frac), ==, 10);
    g_assert_cmpuint(frac, ==, 3);
}

static void test_errors(void)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
            {"node,1,8000,1024,4,,T4\ncpu,1,1,1,0,0,\n", "t.csv:2: kind \"cpu\": want node or pod"},
            {"node,1,8000,1024,4\n", "t.csv:1: 5 fields, want 7"},
            {"node,1,8000,1024,17,,X\n", "t.csv:1: gpus \"17\": want a whole number from 0 to 16"},
            {"node,1,8000,1024,1,,X\npod,1,1,1,1,1500,\n",
             "t.csv:2: gpu_milli \"1500\": want a whole number from 0 to 1000"},
            {"node,1,8000,1024,1,,X\npod,x,1,1,1,500,\n",
             "t.csv:2: count \"x\": want a whole number from 0 to 1000000"},
            {"node,1,8000,1024,4,,X\npod,1,1,1,2,500,\n",
             "t.csv:2: gpu_milli 500 with 2 GPUs: a fraction is of one GPU only"},
            {"node,1,8000,1024,0,,\npod,1,1,1,1,500,\n", "t.csv: no GPU node"},
            {"node,1,8000,1024,1,,X\npod,1,1,1,0,0,\n", "t.csv: no pod asking for a GPU"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(KbGpushareTrace) t = kb_gpushare_trace_parse(cases[i].text, "t.csv", &error);
        g_assert_null(t);
        g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
        g_assert_cmpstr(error->message, ==, cases[i].msg);
    }
}

/* KB_GPUSHARE_MAX_SHAPES pod shapes accepted, one more refused; the node total likewise. */
static void test_limits(void)
{
    for (guint n = KB_GPUSHARE_MAX_SHAPES; n <= KB_GPUSHARE_MAX_SHAPES + 1; n++) {
        GString *s = g_string_new("node,1,8000,1024,1,,X\n");
        for (guint i = 0; i < n; i++)
            g_string_append(s, "pod,1,1,1,1,500,\n");
        g_autoptr(GError) error = NULL;
        g_autoptr(KbGpushareTrace) t = kb_gpushare_trace_parse(s->str, "big", &error);
        g_string_free(s, TRUE);
        if (n == KB_GPUSHARE_MAX_SHAPES) {
            g_assert_no_error(error);
            continue;
        }
        g_assert_null(t);
        g_assert_cmpstr(error->message, ==, "big:4098: more than 4096 pod shapes");
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(KbGpushareTrace) t = kb_gpushare_trace_parse(
            "node,65536,8000,1024,1,,X\nnode,1,8000,1024,1,,X\npod,1,1,1,1,500,\n", "n", &error);
    g_assert_null(t);
    g_assert_cmpstr(error->message, ==, "n:2: more than 65536 nodes");
}

/* Two 1-GPU nodes; 300, 800, 200, 700 milli-GPU in this order: first-fit puts the 200 on the
 * first GPU with room (the 300's), so the 700 fits nowhere; packing puts it on the 800's GPU,
 * the tightest already partly used, and all four fit. Then two nodes of 2 and 1 GPUs and one
 * whole GPU then two: first-fit breaks the 2-GPU node, packing takes the 1-GPU node. */
static void test_policies(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbGpushareTrace) t = kb_gpushare_trace_parse(
            HEADER "node,2,8000,1024,1,,X\npod,1,1,1,1,300,\npod,1,1,1,1,800,\n"
                   "pod,1,1,1,1,200,\npod,1,1,1,1,700,\n",
            "t", &error);
    g_assert_no_error(error);
    const guint seq[] = {0, 1, 2, 3};
    guint placed = 0;
    double u = kb_gpushare_place_seq(t, KB_GPUSHARE_FIRST_FIT, seq, 4, &placed);
    g_assert_cmpuint(placed, ==, 3);
    g_assert_cmpfloat_with_epsilon(u, 0.35, 1e-9);
    u = kb_gpushare_place_seq(t, KB_GPUSHARE_PACKING, seq, 4, &placed);
    g_assert_cmpuint(placed, ==, 4);
    g_assert_cmpfloat_with_epsilon(u, 0.0, 1e-9);

    g_autoptr(KbGpushareTrace) w = kb_gpushare_trace_parse(
            "node,1,8000,1024,2,,X\nnode,1,8000,1024,1,,X\npod,1,1,1,1,1000,\npod,1,1,1,2,1000,\n",
            "w", &error);
    g_assert_no_error(error);
    const guint wseq[] = {0, 1};
    kb_gpushare_place_seq(w, KB_GPUSHARE_FIRST_FIT, wseq, 2, &placed);
    g_assert_cmpuint(placed, ==, 1);
    u = kb_gpushare_place_seq(w, KB_GPUSHARE_PACKING, wseq, 2, &placed);
    g_assert_cmpuint(placed, ==, 2);
    g_assert_cmpfloat_with_epsilon(u, 0.0, 1e-9);
    /* CPU counts too: a pod whose CPU no node has is dropped */
    g_autoptr(KbGpushareTrace) c =
            kb_gpushare_trace_parse("node,1,1000,1024,1,,X\npod,1,2000,1,1,100,\n", "c", &error);
    g_assert_no_error(error);
    const guint cseq[] = {0};
    u = kb_gpushare_place_seq(c, KB_GPUSHARE_PACKING, cseq, 1, &placed);
    g_assert_cmpuint(placed, ==, 0);
    g_assert_cmpfloat_with_epsilon(u, 1.0, 1e-9);
}

/* The replay: unallocated at each load, deterministic for a seed, nothing lost below capacity
 * when every pod fits. */
static void test_replay(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbGpushareTrace) t =
            kb_gpushare_trace_parse("node,4,8000,1024,2,,X\npod,1,1,1,1,500,\n", "t", &error);
    g_assert_no_error(error);
    const double loads[] = {0.5, 1.0, 1.5};
    double u[3], v[3];
    guint dropped = 0;
    kb_gpushare_replay(t, KB_GPUSHARE_FIRST_FIT, 7, loads, 3, u, &dropped);
    g_assert_cmpfloat_with_epsilon(u[0], 0.5, 1e-9);
    g_assert_cmpfloat_with_epsilon(u[1], 0.0, 1e-9);
    g_assert_cmpfloat_with_epsilon(u[2], 0.0, 1e-9);
    g_assert_cmpuint(dropped, ==, 8);
    kb_gpushare_replay(t, KB_GPUSHARE_PACKING, 7, loads, 3, v, NULL);
    g_assert_cmpfloat_with_epsilon(v[1], 0.0, 1e-9);
}

/* Through kube-batchd's allocator (scheduler/dra.c on kb-kubelet's shared-GPU slices): one node
 * of 2 GPUs, 600, 700, 300, 400 milli-GPU in this order. First-fit puts the 300 on the first GPU
 * with room (the 600's), so the 400 fits nowhere; the allocator puts it on the GPU most used
 * already (the 700's) and all four fit. A whole GPU asks for an untouched one. */
static void test_allocator(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbGpushareTrace) t = kb_gpushare_trace_parse(
            HEADER "node,1,8000,1024,2,,X\npod,1,1,1,1,600,\npod,1,1,1,1,700,\n"
                   "pod,1,1,1,1,300,\npod,1,1,1,1,400,\npod,1,1,1,1,1000,\n",
            "t", &error);
    g_assert_no_error(error);
    const guint seq[] = {0, 1, 2, 3};
    guint placed = 0;
    double u = kb_gpushare_place_seq(t, KB_GPUSHARE_FIRST_FIT, seq, 4, &placed);
    g_assert_cmpuint(placed, ==, 3);
    g_assert_cmpfloat_with_epsilon(u, 0.2, 1e-9);
    u = kb_gpushare_place_seq(t, KB_GPUSHARE_DRA, seq, 4, &placed);
    g_assert_cmpuint(placed, ==, 4);
    g_assert_cmpfloat_with_epsilon(u, 0.0, 1e-9);
    /* a 300 on one GPU, then a whole GPU fits on the other, a second does not */
    const guint whole[] = {2, 4, 4};
    u = kb_gpushare_place_seq(t, KB_GPUSHARE_DRA, whole, 3, &placed);
    g_assert_cmpuint(placed, ==, 2);
    g_assert_cmpfloat_with_epsilon(u, 1.0 - 1300.0 / 2000.0, 1e-9);
    g_assert_cmpuint(kb_gpushare_dra_disagreements(), ==, 0);
}

/* Through the allocator on kb-kubelet --mig slices (one A100): three 140 milli-GPU pods take
 * 1g.10gb and a 420 takes 3g.40gb, all four on the one GPU; a second 420 finds no 3g placement.
 * Two 500s each need a 4g.40gb (4 of 7 compute slices), of which a GPU has one placement: the
 * second does not fit, where the milli-GPU model fits both. */
static void test_allocator_mig(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbGpushareTrace) t = kb_gpushare_trace_parse(
            HEADER "node,1,8000,1024,1,,A100\npod,1,1,1,1,140,\npod,1,1,1,1,420,\n"
                   "pod,1,1,1,1,500,\n",
            "t", &error);
    g_assert_no_error(error);
    const guint seq[] = {0, 0, 0, 1, 1};
    guint placed = 0;
    double u = kb_gpushare_place_seq(t, KB_GPUSHARE_DRA_MIG, seq, 5, &placed);
    g_assert_cmpuint(placed, ==, 4);
    g_assert_cmpfloat_with_epsilon(u, 1.0 - 840.0 / 1000.0, 1e-9);
    const guint halves[] = {2, 2};
    kb_gpushare_place_seq(t, KB_GPUSHARE_DRA_MIG, halves, 2, &placed);
    g_assert_cmpuint(placed, ==, 1);
    kb_gpushare_place_seq(t, KB_GPUSHARE_FIRST_FIT, halves, 2, &placed);
    g_assert_cmpuint(placed, ==, 2);
    g_assert_cmpuint(kb_gpushare_dra_disagreements(), ==, 0);
}

/* Node choice by the fragmentation gradient: a 1-GPU node and a 2-GPU node; 500, 600, 400, 500
 * milli-GPU, then a whole GPU. First-fit's node order (and the allocator behind it) puts the 400
 * beside the 500 (100 left) and the second 500 on the 2-GPU node's free GPU, so the whole GPU
 * fits nowhere; FGD puts the 400 beside the 600 and the 500 beside the 500, and the whole GPU
 * fits. Through the allocator (nodes by the gradient, the GPU the allocator's) the same. */
static void test_fgd(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbGpushareTrace) t = kb_gpushare_trace_parse(
            HEADER "node,1,8000,1024,1,,X\nnode,1,8000,1024,2,,X\npod,1,1,1,1,500,\n"
                   "pod,1,1,1,1,600,\npod,1,1,1,1,400,\npod,1,1,1,1,1000,\n",
            "t", &error);
    g_assert_no_error(error);
    const guint seq[] = {0, 1, 2, 0, 3};
    guint placed = 0;
    double u = kb_gpushare_place_seq(t, KB_GPUSHARE_FIRST_FIT, seq, 5, &placed);
    g_assert_cmpuint(placed, ==, 4);
    u = kb_gpushare_place_seq(t, KB_GPUSHARE_DRA, seq, 5, &placed);
    g_assert_cmpuint(placed, ==, 4);
    g_assert_cmpfloat_with_epsilon(u, 1.0 - 2000.0 / 3000.0, 1e-9);
    u = kb_gpushare_place_seq(t, KB_GPUSHARE_FGD, seq, 5, &placed);
    g_assert_cmpuint(placed, ==, 5);
    g_assert_cmpfloat_with_epsilon(u, 0.0, 1e-9);
    u = kb_gpushare_place_seq(t, KB_GPUSHARE_DRA_FGD, seq, 5, &placed);
    g_assert_cmpuint(placed, ==, 5);
    g_assert_cmpfloat_with_epsilon(u, 0.0, 1e-9);
    g_assert_cmpuint(kb_gpushare_dra_disagreements(), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gpushare/parse", test_parse);
    g_test_add_func("/gpushare/errors", test_errors);
    g_test_add_func("/gpushare/limits", test_limits);
    g_test_add_func("/gpushare/policies", test_policies);
    g_test_add_func("/gpushare/allocator", test_allocator);
    g_test_add_func("/gpushare/allocator-mig", test_allocator_mig);
    g_test_add_func("/gpushare/fgd", test_fgd);
    g_test_add_func("/gpushare/replay", test_replay);
    return g_test_run();
}
