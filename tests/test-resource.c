/*
 * Tests for kube/kb-resource: slots, vector arithmetic (saturating, with "unlimited"), fit checks
 * and formatting.
 */
#include <glib.h>
#include <string.h>

#include "kube/kb-resource.h"

static KbResources vec(gint64 cpu, gint64 mem, gint64 pods, gint64 gpu)
{
    KbResources r;
    kb_resources_clear(&r);
    r.v[KB_RES_CPU] = cpu;
    r.v[KB_RES_MEMORY] = mem;
    r.v[KB_RES_PODS] = pods;
    r.v[KB_RES_GPU] = gpu;
    return r;
}

static void test_fixed_slots(void)
{
    g_assert_cmpint(kb_resource_slot("cpu"), ==, KB_RES_CPU);
    g_assert_cmpint(kb_resource_slot("memory"), ==, KB_RES_MEMORY);
    g_assert_cmpint(kb_resource_slot("pods"), ==, KB_RES_PODS);
    g_assert_cmpint(kb_resource_slot("nvidia.com/gpu"), ==, KB_RES_GPU);
    g_assert_cmpint(kb_resource_slot("ephemeral-storage"), ==, KB_RES_EPHEMERAL_STORAGE);
    g_assert_cmpstr(kb_resource_name(KB_RES_GPU), ==, KB_RESOURCE_GPU_NAME);
    g_assert_cmpstr(kb_resource_name(KB_RES_CPU), ==, "cpu");
    g_assert_true(kb_resource_is_milli(KB_RES_CPU));
    g_assert_false(kb_resource_is_milli(KB_RES_MEMORY));
    g_assert_true(kb_resource_is_milli(KB_RES_GPU));
    g_assert_cmpint(kb_resource_whole_gpus(142), ==, 1);
    g_assert_cmpint(kb_resource_whole_gpus(2000), ==, 2);
    g_assert_cmpint(kb_resource_whole_gpus(2001), ==, 3);
    g_assert_cmpint(kb_resource_whole_gpus(0), ==, 0);
    g_assert_false(kb_resource_is_milli(KB_RES_PODS));
}

/* Extended slots are handed out in first-seen order, stable, and run out (subprocess: the slot
 * table is process-wide). */
static void test_extended_slots(void)
{
    if (g_test_subprocess()) {
        g_assert_cmpint(kb_resource_count(), ==, KB_RES_FIRST_EXTENDED);
        g_assert_null(kb_resource_name(KB_RES_FIRST_EXTENDED));
        g_assert_null(kb_resource_name(-1));
        g_assert_null(kb_resource_name(KB_RES_MAX));
        char name[64];
        for (int i = KB_RES_FIRST_EXTENDED; i < KB_RES_MAX; i++) {
            g_snprintf(name, sizeof(name), "example.com/dev-%d", i);
            g_assert_cmpint(kb_resource_slot(name), ==, i);
            /* Asked again (from a different buffer): the same slot. */
            g_autofree char *copy = g_strdup(name);
            g_assert_cmpint(kb_resource_slot(copy), ==, i);
            g_assert_cmpstr(kb_resource_name(i), ==, name);
            g_assert_cmpint(kb_resource_count(), ==, i + 1);
        }
        g_assert_cmpint(kb_resource_slot("example.com/one-too-many"), ==, -1);
        g_assert_cmpint(kb_resource_count(), ==, KB_RES_MAX);
        /* Known names still resolve when the table is full. */
        g_assert_cmpint(kb_resource_slot("memory"), ==, KB_RES_MEMORY);
        g_assert_cmpint(kb_resource_slot("example.com/dev-5"), ==, 5);
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
}

static void test_clear_unlimited(void)
{
    KbResources r;
    kb_resources_set_unlimited(&r);
    for (int i = 0; i < KB_RES_MAX; i++)
        g_assert_cmpint(r.v[i], ==, KB_RESOURCE_UNLIMITED);
    g_assert_false(kb_resources_is_zero(&r));
    kb_resources_clear(&r);
    g_assert_true(kb_resources_is_zero(&r));
    r.v[KB_RES_MAX - 1] = 1;
    g_assert_false(kb_resources_is_zero(&r));
}

static void test_add(void)
{
    KbResources a = vec(500, 1024, 1, 0), b = vec(1500, 2048, 1, 2);
    kb_resources_add(&a, &b);
    KbResources want = vec(2000, 3072, 2, 2);
    g_assert_true(kb_resources_equal(&a, &want));
}

static void test_add_saturates(void)
{
    KbResources a = vec(G_MAXINT64 - 1, 5, G_MININT64 + 1, 0);
    KbResources b = vec(10, KB_RESOURCE_UNLIMITED, -10, 0);
    kb_resources_add(&a, &b);
    /* No wrap-around: overflow saturates, unlimited absorbs. */
    g_assert_cmpint(a.v[KB_RES_CPU], ==, KB_RESOURCE_UNLIMITED);
    g_assert_cmpint(a.v[KB_RES_MEMORY], ==, KB_RESOURCE_UNLIMITED);
    g_assert_cmpint(a.v[KB_RES_PODS], ==, G_MININT64);
}

static void test_sub(void)
{
    KbResources a = vec(2000, 4096, 3, 8), b = vec(500, 1024, 1, 8);
    kb_resources_sub(&a, &b);
    KbResources want = vec(1500, 3072, 2, 0);
    g_assert_true(kb_resources_equal(&a, &want));
    /* Over-release goes negative, visibly. */
    kb_resources_sub(&a, &b);
    kb_resources_sub(&a, &b);
    kb_resources_sub(&a, &b);
    g_assert_cmpint(a.v[KB_RES_CPU], ==, 0);
    g_assert_cmpint(a.v[KB_RES_GPU], ==, -24);
}

static void test_sub_unlimited(void)
{
    KbResources cap;
    kb_resources_set_unlimited(&cap);
    KbResources used = vec(1000, 1 << 20, 1, 4);
    kb_resources_sub(&cap, &used);
    /* Unlimited minus anything is still unlimited. */
    for (int i = 0; i < KB_RES_MAX; i++)
        g_assert_cmpint(cap.v[i], ==, KB_RESOURCE_UNLIMITED);
    /* Subtracting the most negative value does not overflow. */
    KbResources a = vec(0, 0, 0, 0), b = vec(G_MININT64, 0, 0, 0);
    kb_resources_sub(&a, &b);
    g_assert_cmpint(a.v[KB_RES_CPU], ==, KB_RESOURCE_UNLIMITED);
}

static void test_max(void)
{
    KbResources a = vec(500, 4096, 1, 0), b = vec(1500, 1024, 1, 2);
    kb_resources_max(&a, &b);
    KbResources want = vec(1500, 4096, 1, 2);
    g_assert_true(kb_resources_equal(&a, &want));
}

typedef struct {
    const char *name;
    KbResources need;
    KbResources avail;
    int first_short;
} FitCase;

static FitCase fit_cases[] = {
    {"fits", {{100, 1024, 1, 0}}, {{1000, 4096, 10, 0}}, -1},
    {"exact", {{1000, 4096, 10, 8}}, {{1000, 4096, 10, 8}}, -1},
    {"cpu-short", {{1001, 1, 1, 0}}, {{1000, 4096, 10, 0}}, KB_RES_CPU},
    {"memory-short", {{1, 4097, 1, 0}}, {{1000, 4096, 10, 0}}, KB_RES_MEMORY},
    {"gpu-short", {{1, 1, 1, 1}}, {{1000, 4096, 10, 0}}, KB_RES_GPU},
    {"first-of-several", {{2000, 8192, 1, 1}}, {{1000, 4096, 10, 0}}, KB_RES_CPU},
    {"extended-short", {{0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}, {{1, 1, 1, 1, 1, 1, 1, 1, 1, 0}},
     KB_RES_MAX - 1},
    {"negative-avail", {{0, 0, 1, 0}}, {{0, 0, -1, 0}}, KB_RES_PODS},
    {"zero-fits-zero", {{0}}, {{0}}, -1},
};

static void test_fit(gconstpointer data)
{
    const FitCase *c = data;
    g_assert_cmpint(kb_resources_first_short(&c->need, &c->avail), ==, c->first_short);
    g_assert_cmpint(kb_resources_fit(&c->need, &c->avail), ==, c->first_short == -1);
}

static void test_fit_unlimited(void)
{
    KbResources cap, need = vec(G_MAXINT64 - 1, G_MAXINT64, 1000000, 1000);
    kb_resources_set_unlimited(&cap);
    g_assert_true(kb_resources_fit(&need, &cap));
    cap.v[KB_RES_GPU] = 999;
    g_assert_false(kb_resources_fit(&need, &cap));
    g_assert_cmpint(kb_resources_first_short(&need, &cap), ==, KB_RES_GPU);
}

static void test_equal(void)
{
    KbResources a = vec(1, 2, 3, 4), b = vec(1, 2, 3, 4);
    g_assert_true(kb_resources_equal(&a, &b));
    b.v[KB_RES_EPHEMERAL_STORAGE] = 1;
    g_assert_false(kb_resources_equal(&a, &b));
    /* Plain values: `=` copies. */
    KbResources c = a;
    g_assert_true(kb_resources_equal(&a, &c));
}

typedef struct {
    int slot;
    gint64 value;
    const char *out;
} FormatCase;

static const FormatCase format_cases[] = {
    {KB_RES_CPU, 500, "500m"},
    {KB_RES_CPU, 2000, "2"},
    {KB_RES_CPU, 1500, "1500m"},
    {KB_RES_CPU, 0, "0"},
    {KB_RES_CPU, 95500, "95500m"},
    {KB_RES_MEMORY, G_GINT64_CONSTANT(16) << 30, "16Gi"},
    {KB_RES_MEMORY, 1536 * 1024 * 1024LL, "1536Mi"},
    {KB_RES_MEMORY, 1024, "1Ki"},
    {KB_RES_MEMORY, 1000, "1000"},
    {KB_RES_MEMORY, 1536, "1536"},
    {KB_RES_MEMORY, 129000000, "129000000"},
    {KB_RES_MEMORY, 0, "0"},
    {KB_RES_MEMORY, G_GINT64_CONSTANT(1) << 60, "1Ei"},
    {KB_RES_MEMORY, G_GINT64_CONSTANT(4) << 60, "4Ei"},
    {KB_RES_EPHEMERAL_STORAGE, G_GINT64_CONSTANT(10) << 30, "10Gi"},
    {KB_RES_GPU, 8000, "8"},
    {KB_RES_GPU, 1024000, "1024"},
    {KB_RES_GPU, 142, "0.142"},
    {KB_RES_GPU, 1500, "1.5"},
    {KB_RES_GPU, 2050, "2.05"},
    {KB_RES_PODS, 110, "110"},
    {KB_RES_CPU, KB_RESOURCE_UNLIMITED, "unlimited"},
    {KB_RES_MEMORY, KB_RESOURCE_UNLIMITED, "unlimited"},
    {KB_RES_MEMORY, -2048, "-2Ki"},
};

static void test_format(gconstpointer data)
{
    const FormatCase *c = data;
    g_autofree char *s = kb_resource_format_value(c->slot, c->value);
    g_assert_cmpstr(s, ==, c->out);
}

static void test_to_string(void)
{
    KbResources r = vec(2250, G_GINT64_CONSTANT(3192) << 20, 1, 8000);
    g_autofree char *s = kb_resources_to_string(&r);
    g_assert_cmpstr(s, ==, "cpu=2250m, memory=3192Mi, pods=1, nvidia.com/gpu=8");
    KbResources z;
    kb_resources_clear(&z);
    g_autofree char *e = kb_resources_to_string(&z);
    g_assert_cmpstr(e, ==, "");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    g_test_add_func("/kube/resource/slots/fixed", test_fixed_slots);
    g_test_add_func("/kube/resource/slots/extended", test_extended_slots);
    g_test_add_func("/kube/resource/vector/clear-unlimited", test_clear_unlimited);
    g_test_add_func("/kube/resource/vector/add", test_add);
    g_test_add_func("/kube/resource/vector/add-saturates", test_add_saturates);
    g_test_add_func("/kube/resource/vector/sub", test_sub);
    g_test_add_func("/kube/resource/vector/sub-unlimited", test_sub_unlimited);
    g_test_add_func("/kube/resource/vector/max", test_max);
    g_test_add_func("/kube/resource/vector/equal", test_equal);
    for (gsize i = 0; i < G_N_ELEMENTS(fit_cases); i++) {
        g_autofree char *p = g_strdup_printf("/kube/resource/fit/%s", fit_cases[i].name);
        g_test_add_data_func(p, &fit_cases[i], test_fit);
    }
    g_test_add_func("/kube/resource/fit/unlimited", test_fit_unlimited);
    for (gsize i = 0; i < G_N_ELEMENTS(format_cases); i++) {
        g_autofree char *p = g_strdup_printf("/kube/resource/format/%s/%" G_GINT64_FORMAT,
                                             kb_resource_name(format_cases[i].slot),
                                             format_cases[i].value);
        g_test_add_data_func(p, &format_cases[i], test_format);
    }
    g_test_add_func("/kube/resource/to-string", test_to_string);
    return g_test_run();
}
