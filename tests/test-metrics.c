/* Prometheus registry and exposition format: golden strings. */
#include <math.h>
#include <string.h>

#include "kube/kb-metrics.h"

static void test_counter_plain(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    KbMetric *c = kb_metrics_counter(m, "kb_binds_total", "Pods bound.", NULL);
    g_autofree char *before = kb_metrics_render(m);
    g_autofree char *after = NULL;

    g_assert_cmpstr(before, ==,
                    "# HELP kb_binds_total Pods bound.\n"
                    "# TYPE kb_binds_total counter\n"
                    "kb_binds_total 0\n");
    kb_metric_inc(c);
    kb_metric_add(c, 2.5);
    after = kb_metrics_render(m);
    g_assert_cmpstr(after, ==,
                    "# HELP kb_binds_total Pods bound.\n"
                    "# TYPE kb_binds_total counter\n"
                    "kb_binds_total 3.5\n");
}

static void test_counter_never_decreases(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    KbMetric *c = kb_metrics_counter(m, "kb_x_total", "X.", NULL);

    kb_metric_add(c, 4);
    kb_metric_add(c, -1);
    kb_metric_add(c, NAN);
    g_assert_cmpfloat(kb_series_value(kb_metric_series(c, NULL)), ==, 4);
}

static void test_gauge_labels_sorted(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    KbMetric *g = kb_metrics_gauge(m, "kb_queue_allocated", "Allocated per queue.",
                                   (const char *const[]){"queue", "resource", NULL});
    g_autofree char *out = NULL;

    kb_series_set(kb_metric_with(g, "research", "nvidia.com/gpu", NULL), 12);
    kb_series_set(kb_metric_with(g, "default", "cpu", NULL), 0.5);
    kb_series_set(kb_metric_with(g, "research", "cpu", NULL), 64);
    kb_series_sub(kb_metric_with(g, "research", "cpu", NULL), 4);
    out = kb_metrics_render(m);
    g_assert_cmpstr(out, ==,
                    "# HELP kb_queue_allocated Allocated per queue.\n"
                    "# TYPE kb_queue_allocated gauge\n"
                    "kb_queue_allocated{queue=\"default\",resource=\"cpu\"} 0.5\n"
                    "kb_queue_allocated{queue=\"research\",resource=\"cpu\"} 60\n"
                    "kb_queue_allocated{queue=\"research\",resource=\"nvidia.com/gpu\"} 12\n");
}

static void test_labelled_family_without_series_is_omitted(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    g_autofree char *out = NULL;

    kb_metrics_gauge(m, "kb_b", "B.", (const char *const[]){"queue", NULL});
    kb_metrics_gauge(m, "kb_a", "A.", NULL);
    out = kb_metrics_render(m);
    g_assert_cmpstr(out, ==, "# HELP kb_a A.\n# TYPE kb_a gauge\nkb_a 0\n");
}

static void test_families_sorted_by_name(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    g_autofree char *out = NULL;

    kb_metrics_counter(m, "kb_zeta_total", "Z.", NULL);
    kb_metrics_gauge(m, "kb_alpha", "A.", NULL);
    kb_metrics_gauge(m, "kb_mid", "M.", NULL);
    out = kb_metrics_render(m);
    g_assert_cmpstr(out, ==,
                    "# HELP kb_alpha A.\n# TYPE kb_alpha gauge\nkb_alpha 0\n"
                    "# HELP kb_mid M.\n# TYPE kb_mid gauge\nkb_mid 0\n"
                    "# HELP kb_zeta_total Z.\n# TYPE kb_zeta_total counter\nkb_zeta_total 0\n");
}

static void test_histogram(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    const double buckets[] = {0.1, 1, 10};
    KbMetric *h = kb_metrics_histogram(m, "kb_cycle_seconds", "Cycle duration.", NULL, buckets,
                                       G_N_ELEMENTS(buckets));
    g_autofree char *out = NULL;

    kb_metric_observe(h, 0.05);
    kb_metric_observe(h, 0.1); /* bounds are inclusive */
    kb_metric_observe(h, 0.5);
    kb_metric_observe(h, 20);
    out = kb_metrics_render(m);
    g_assert_cmpstr(out, ==,
                    "# HELP kb_cycle_seconds Cycle duration.\n"
                    "# TYPE kb_cycle_seconds histogram\n"
                    "kb_cycle_seconds_bucket{le=\"0.1\"} 2\n"
                    "kb_cycle_seconds_bucket{le=\"1\"} 3\n"
                    "kb_cycle_seconds_bucket{le=\"10\"} 3\n"
                    "kb_cycle_seconds_bucket{le=\"+Inf\"} 4\n"
                    "kb_cycle_seconds_sum 20.65\n"
                    "kb_cycle_seconds_count 4\n");
    g_assert_cmpuint(kb_series_count(kb_metric_series(h, NULL)), ==, 4);
}

static void test_histogram_labels_and_defaults(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    KbMetric *h = kb_metrics_histogram(m, "kb_bind_seconds", "Bind latency.",
                                       (const char *const[]){"result", NULL}, NULL, 0);
    g_autofree char *out = NULL;

    kb_series_observe(kb_metric_with(h, "ok", NULL), 0.003);
    out = kb_metrics_render(m);
    g_assert_cmpstr(out, ==,
                    "# HELP kb_bind_seconds Bind latency.\n"
                    "# TYPE kb_bind_seconds histogram\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"0.005\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"0.01\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"0.025\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"0.05\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"0.1\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"0.25\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"0.5\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"1\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"2.5\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"5\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"10\"} 1\n"
                    "kb_bind_seconds_bucket{result=\"ok\",le=\"+Inf\"} 1\n"
                    "kb_bind_seconds_sum{result=\"ok\"} 0.003\n"
                    "kb_bind_seconds_count{result=\"ok\"} 1\n");
}

static void test_escaping(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    KbMetric *g = kb_metrics_gauge(m, "kb_esc", "Help with \\ backslash\nand \"quotes\".",
                                   (const char *const[]){"v", NULL});
    g_autofree char *out = NULL;

    kb_series_set(kb_metric_with(g, "a\\b\"c\nd", NULL), 1);
    out = kb_metrics_render(m);
    /* HELP escapes backslash and newline only; label values also escape the quote. */
    g_assert_cmpstr(out, ==,
                    "# HELP kb_esc Help with \\\\ backslash\\nand \"quotes\".\n"
                    "# TYPE kb_esc gauge\n"
                    "kb_esc{v=\"a\\\\b\\\"c\\nd\"} 1\n");
}

static void test_series_limit(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    KbMetric *c = kb_metrics_counter(m, "kb_events_total", "Events.",
                                     (const char *const[]){"object", NULL});
    g_autofree char *out = NULL;
    guint lines = 0;

    for (guint i = 0; i < KB_METRICS_MAX_SERIES; i++) {
        g_autofree char *v = g_strdup_printf("pod-%05u", i);
        g_assert_nonnull(kb_metric_with(c, v, NULL));
    }
    g_assert_cmpuint(kb_metric_size(c), ==, KB_METRICS_MAX_SERIES);
    g_assert_cmpuint(kb_metric_refused(c), ==, 0);
    /* One more is refused, and the NULL it gets is a harmless no-op. */
    g_assert_null(kb_metric_with(c, "one-too-many", NULL));
    kb_series_inc(kb_metric_with(c, "another", NULL));
    g_assert_cmpuint(kb_metric_refused(c), ==, 2);
    g_assert_cmpuint(kb_metric_size(c), ==, KB_METRICS_MAX_SERIES);
    /* Existing label sets keep working. */
    kb_series_inc(kb_metric_with(c, "pod-00007", NULL));
    g_assert_cmpfloat(kb_series_value(kb_metric_with(c, "pod-00007", NULL)), ==, 1);
    out = kb_metrics_render(m);
    for (const char *p = out; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    g_assert_cmpuint(lines, ==, KB_METRICS_MAX_SERIES + 2);
    g_assert_null(strstr(out, "one-too-many"));
}

static void test_series_limit_configurable(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    KbMetric *c;

    kb_metrics_set_max_series(m, 2);
    c = kb_metrics_gauge(m, "kb_small", "S.", (const char *const[]){"q", NULL});
    g_assert_nonnull(kb_metric_with(c, "a", NULL));
    g_assert_nonnull(kb_metric_with(c, "b", NULL));
    g_assert_null(kb_metric_with(c, "c", NULL));
    /* Removing one makes room again. */
    g_assert_true(kb_metric_remove(c, (const char *const[]){"a"}));
    g_assert_false(kb_metric_remove(c, (const char *const[]){"a"}));
    g_assert_nonnull(kb_metric_with(c, "c", NULL));
    g_assert_cmpuint(kb_metric_refused(c), ==, 1);
}

static void test_label_value_too_long(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    KbMetric *c = kb_metrics_counter(m, "kb_t_total", "T.", (const char *const[]){"v", NULL});
    g_autofree char *ok = g_strnfill(KB_METRICS_MAX_LABEL_VALUE, 'x');
    g_autofree char *big = g_strnfill(KB_METRICS_MAX_LABEL_VALUE + 1, 'x');

    g_assert_nonnull(kb_metric_with(c, ok, NULL));
    g_assert_null(kb_metric_with(c, big, NULL));
    g_assert_cmpuint(kb_metric_refused(c), ==, 1);
    g_assert_cmpuint(kb_metric_size(c), ==, 1);
}

static void test_remove_and_reset(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    KbMetric *g = kb_metrics_gauge(m, "kb_q", "Q.", (const char *const[]){"queue", NULL});
    KbMetric *plain = kb_metrics_counter(m, "kb_p_total", "P.", NULL);
    g_autofree char *out = NULL;

    kb_series_set(kb_metric_with(g, "a", NULL), 1);
    kb_series_set(kb_metric_with(g, "b", NULL), 2);
    kb_metric_remove(g, (const char *const[]){"a"});
    g_assert_cmpuint(kb_metric_size(g), ==, 1);
    kb_metric_reset(g);
    g_assert_cmpuint(kb_metric_size(g), ==, 0);
    kb_metric_add(plain, 5);
    kb_metric_reset(plain);
    out = kb_metrics_render(m);
    g_assert_cmpstr(out, ==, "# HELP kb_p_total P.\n# TYPE kb_p_total counter\nkb_p_total 0\n");
}

static void collect(KbMetrics *m, gpointer user_data)
{
    guint *calls = user_data;

    (*calls)++;
    kb_metric_set(kb_metrics_lookup(m, "kb_cache_pods"), 42);
}

static void test_collector(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();
    guint calls = 0;
    g_autofree char *out = NULL;

    kb_metrics_gauge(m, "kb_cache_pods", "Pods in the cache.", NULL);
    kb_metrics_add_collector(m, collect, &calls);
    out = kb_metrics_render(m);
    g_assert_cmpuint(calls, ==, 1);
    g_assert_nonnull(strstr(out, "\nkb_cache_pods 42\n"));
}

static void test_invalid_registration(void)
{
    g_autoptr(KbMetrics) m = kb_metrics_new();

    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*invalid metric name \"9lives\"*");
    g_assert_null(kb_metrics_counter(m, "9lives", "x", NULL));
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*invalid label name \"le\"*");
    g_assert_null(kb_metrics_histogram(m, "kb_h", "x", (const char *const[]){"le", NULL}, NULL, 0));
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*finite and increasing*");
    g_assert_null(kb_metrics_histogram(m, "kb_h", "x", NULL, (const double[]){1, 1}, 2));
    g_assert_nonnull(kb_metrics_gauge(m, "kb_ok:sub", "x", NULL));
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*registered twice*");
    g_assert_null(kb_metrics_counter(m, "kb_ok:sub", "x", NULL));
    g_test_expect_message(NULL, G_LOG_LEVEL_CRITICAL, "*duplicate label name*");
    g_assert_null(kb_metrics_gauge(m, "kb_d", "x", (const char *const[]){"a", "a", NULL}));
    g_test_assert_expected_messages();
}

static void test_format_double(void)
{
    static const struct {
        double v;
        const char *want;
    } cases[] = {
            {0, "0"},
            {1, "1"},
            {-3, "-3"},
            {0.5, "0.5"},
            {0.1, "0.1"},
            {2.5, "2.5"},
            {100, "100"},
            {123456, "123456"},
            {1e6, "1e+06"},
            {1234567, "1.234567e+06"},
            {1e21, "1e+21"},
            {0.0001, "0.0001"},
            {0.00001, "1e-05"},
            {1.5e-7, "1.5e-07"},
            {0.30000000000000004, "0.30000000000000004"},
            {1.0 / 3, "0.3333333333333333"},
            {1700000000.25, "1.70000000025e+09"},
    };
    char buf[40];

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
        g_assert_cmpstr(kb_metrics_format_double(cases[i].v, buf), ==, cases[i].want);
    g_assert_cmpstr(kb_metrics_format_double(NAN, buf), ==, "NaN");
    g_assert_cmpstr(kb_metrics_format_double(INFINITY, buf), ==, "+Inf");
    g_assert_cmpstr(kb_metrics_format_double(-INFINITY, buf), ==, "-Inf");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    g_test_add_func("/kube/metrics/counter/plain", test_counter_plain);
    g_test_add_func("/kube/metrics/counter/never-decreases", test_counter_never_decreases);
    g_test_add_func("/kube/metrics/gauge/labels-sorted", test_gauge_labels_sorted);
    g_test_add_func("/kube/metrics/render/empty-family-omitted",
                    test_labelled_family_without_series_is_omitted);
    g_test_add_func("/kube/metrics/render/families-sorted", test_families_sorted_by_name);
    g_test_add_func("/kube/metrics/histogram/buckets", test_histogram);
    g_test_add_func("/kube/metrics/histogram/labels-default-buckets",
                    test_histogram_labels_and_defaults);
    g_test_add_func("/kube/metrics/render/escaping", test_escaping);
    g_test_add_func("/kube/metrics/limit/series", test_series_limit);
    g_test_add_func("/kube/metrics/limit/configurable", test_series_limit_configurable);
    g_test_add_func("/kube/metrics/limit/label-value-length", test_label_value_too_long);
    g_test_add_func("/kube/metrics/series/remove-reset", test_remove_and_reset);
    g_test_add_func("/kube/metrics/collector", test_collector);
    g_test_add_func("/kube/metrics/register/invalid", test_invalid_registration);
    g_test_add_func("/kube/metrics/format-double", test_format_double);
    return g_test_run();
}
