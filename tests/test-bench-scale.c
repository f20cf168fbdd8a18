/*
 * bench-scale's smoke test, so the benchmark cannot rot: every scenario at a small scale, through
 * the very code the benchmark runs (kb-apiserver, kb-kubelet, kube-batchd), with --check turning
 * what each scenario expects (all bound, victims evicted, the gang marked Unschedulable, the
 * restarted scheduler binding the new gangs) into the exit status. Nothing is timed; each
 * scenario's line must be printed with a figure. Bad arguments are refused with their value.
 */
#include <glib.h>
#include <string.h>

#include "tests/lib/kb-test-util.h"

static const char *const scenario_names[] = {
        "kai-gang-512",      "kai-jobs-4000",     "kai-reclaim-250", "kai-reclaim-single",
        "kai-consolidation", "kai-unschedulable", "volcano-restart",
};

/* Run bench-scale with @args; its standard output, exit status in *@status. */
static char *bench_scale(const char *const *args, int *status, char **err)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(argv, g_build_filename(kb_test_bin_dir(), "bench-scale", NULL));
    for (const char *const *a = args; *a != NULL; a++)
        g_ptr_array_add(argv, g_strdup(*a));
    g_ptr_array_add(argv, NULL);
    g_autoptr(GError) error = NULL;
    char *out = NULL;
    /* The real server stays out of the smoke test: its own suites cover it. */
    g_auto(GStrv) env = g_environ_unsetenv(g_get_environ(), "KB_K8S_BIN");
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, env, G_SPAWN_DEFAULT, NULL, NULL, &out,
                               err, status, &error));
    g_assert_no_error(error);
    return out;
}

static void test_list(void)
{
    int status;
    g_autofree char *err = NULL;
    g_autofree char *out = bench_scale((const char *[]){"--list", NULL}, &status, &err);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    for (gsize i = 0; i < G_N_ELEMENTS(scenario_names); i++) {
        g_autofree char *line = g_strdup_printf("%s ", scenario_names[i]);
        g_assert_nonnull(strstr(out, line));
    }
}

static void test_bad_arguments(void)
{
    int status;
    g_autofree char *err = NULL;
    g_autofree char *out = bench_scale((const char *[]){"kai-nonesuch", NULL}, &status, &err);
    g_assert_false(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(err, "unknown scenario \"kai-nonesuch\""));
    g_clear_pointer(&err, g_free);
    g_free(bench_scale((const char *[]){"--scale", "2", NULL}, &status, &err));
    g_assert_false(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(err, "--scale 2"));
}

static void test_all_scenarios(void)
{
    int status;
    g_autofree char *err = NULL;
    g_autofree char *out =
            bench_scale((const char *[]){"--scale", "0.01", "--check", NULL}, &status, &err);
    g_test_message("%s%s", out, err);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    g_assert_null(strstr(out, "FAILED"));
    for (gsize i = 0; i < G_N_ELEMENTS(scenario_names); i++) {
        g_autofree char *line = g_strdup_printf("\n%s: ours ", scenario_names[i]);
        const char *at = strstr(out, line);
        g_assert_nonnull(at);
        /* A figure, the peer's and the ratio. */
        double ours = g_ascii_strtod(at + strlen(line), NULL);
        g_assert_cmpfloat(ours, >, 0);
        g_assert_nonnull(strstr(at, ", peer "));
    }
    /* The scenarios' behaviour as the benchmark states it. */
    g_assert_nonnull(strstr(out, "filler pods evicted"));
    g_assert_null(strstr(out, " 0 filler pods evicted"));
    g_assert_nonnull(strstr(out, "Unschedulable, nothing bound"));
    g_assert_nonnull(strstr(out, "restarted: caches synced"));
    g_assert_nonnull(strstr(out, "kb-kubelet's cost to the server: "));
    /* What the measured workload wrote, by kind: creations and bindings at least. */
    const char *w = strstr(out, "kb-apiserver's writes since the measurement began: ");
    g_assert_nonnull(w);
    g_autofree char *wline = g_strndup(w, strcspn(w, "\n"));
    g_assert_nonnull(strstr(wline, " per pod):"));
    g_assert_nonnull(strstr(wline, "POST pods/binding "));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench-scale/list", test_list);
    g_test_add_func("/bench-scale/bad-arguments", test_bad_arguments);
    g_test_add_func("/bench-scale/all-scenarios-small", test_all_scenarios);
    return g_test_run();
}
