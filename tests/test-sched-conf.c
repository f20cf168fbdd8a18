/* Scheduler configuration parsing (kube-batch/Volcano format). */
#include <string.h>

#include "kube/kb-error.h"
#include "scheduler/conf.h"

static void test_default(void)
{
    g_autoptr(KbConf) conf = kb_conf_new_default();
    g_assert_cmpuint(conf->n_actions, ==, 3);
    g_assert_cmpstr(conf->actions[0], ==, "enqueue");
    g_assert_cmpstr(conf->actions[1], ==, "reserve");
    g_assert_cmpstr(conf->actions[2], ==, "allocate");
    g_assert_null(conf->actions[3]);
    g_assert_cmpuint(conf->n_tiers, ==, 2);
    g_assert_cmpuint(conf->tiers[0].n_plugins, ==, 3);
    g_assert_cmpstr(conf->tiers[0].plugins[1].name, ==, "gang");
    const KbConfPlugin *no = kb_conf_find_plugin(conf, "nodeorder");
    g_assert_nonnull(no);
    g_assert_cmpfloat(kb_conf_plugin_arg_double(no, "nodeorder.leastrequested.weight", 9), ==, 0);
    g_assert_cmpfloat(kb_conf_plugin_arg_double(no, "nodeorder.mostrequested.weight", 9), ==, 1);
    g_assert_cmpfloat(kb_conf_plugin_arg_double(no, "absent", 9), ==, 9);
    g_assert_true(kb_conf_has_action(conf, "enqueue"));
    g_assert_false(kb_conf_has_action(conf, "preempt"));
    for (int s = 0; s < KB_SWITCH_MAX; s++)
        g_assert_true(no->enabled[s]);
}

static void test_deploy_file_matches(void)
{
    const char *srcdir = g_getenv("KB_SRCDIR") != NULL ? g_getenv("KB_SRCDIR") : ".";
    g_autofree char *path = g_build_filename(srcdir, "deploy", "scheduler.conf", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_load(path, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(conf->n_tiers, ==, 2);
    g_assert_nonnull(kb_conf_find_plugin(conf, "proportion"));
    g_assert_true(kb_conf_has_action(conf, "reserve"));
}

static void test_switches(void)
{
    static const char yaml[] = "actions: \"allocate\"\n"
                               "tiers:\n"
                               "- plugins:\n"
                               "  - name: gang\n"
                               "    enableJobOrder: false\n"
                               "    enableJobReady: False\n"
                               "    enablePreemptable: true\n"
                               "  - name: drf\n"
                               "    enableBestNode: true\n"
                               "- plugins:\n"
                               "  - name: predicates\n"
                               "    enablePredicate: false\n"
                               "  - name: nodeorder\n"
                               "    enableNodeOrder: no\n"
                               "    arguments:\n"
                               "      leastrequested.weight: 2.5\n"
                               "      bogus: abc\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse(yaml, strlen(yaml), &error);
    g_assert_no_error(error);
    const KbConfPlugin *gang = kb_conf_find_plugin(conf, "gang");
    g_assert_false(gang->enabled[KB_SWITCH_JOB_ORDER]);
    g_assert_false(gang->enabled[KB_SWITCH_JOB_READY]);
    g_assert_true(gang->enabled[KB_SWITCH_PREEMPTABLE]);
    g_assert_true(gang->enabled[KB_SWITCH_TASK_ORDER]);
    g_assert_false(kb_conf_find_plugin(conf, "predicates")->enabled[KB_SWITCH_PREDICATE]);
    const KbConfPlugin *no = kb_conf_find_plugin(conf, "nodeorder");
    g_assert_false(no->enabled[KB_SWITCH_NODE_ORDER]);
    g_assert_cmpfloat(kb_conf_plugin_arg_double(no, "leastrequested.weight", 0), ==, 2.5);
    g_assert_cmpfloat(kb_conf_plugin_arg_double(no, "bogus", 7), ==, 7);
    g_assert_cmpstr(kb_conf_switch_name(KB_SWITCH_NODE_ORDER), ==, "enableNodeOrder");
}

static void test_actions_list(void)
{
    static const char yaml[] = "actions: [enqueue, allocate]\ntiers: []\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse(yaml, strlen(yaml), &error);
    g_assert_no_error(error);
    g_assert_cmpuint(conf->n_actions, ==, 2);
    g_assert_cmpuint(conf->n_tiers, ==, 0);
}

typedef struct {
    const char *path;
    const char *yaml;
    KbErrorCode code;
    const char *message;
} BadCase;

static const BadCase bad_cases[] = {
        {"/scheduler/conf/bad/unknown-plugin",
         "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gnag\n", KB_ERROR_CONFIG,
         "unknown plugin \"gnag\" (known: priority, gang"},
        {"/scheduler/conf/bad/unknown-action", "actions: \"enqueue, backfil\"\n", KB_ERROR_CONFIG,
         "unknown action \"backfil\" (known: enqueue, allocate, preempt, reclaim, reserve, "
         "backfill)"},
        {"/scheduler/conf/bad/not-yaml", "actions: [\n", KB_ERROR_CONFIG, "invalid YAML"},
        {"/scheduler/conf/bad/not-a-mapping", "- a\n- b\n", KB_ERROR_CONFIG, "expected a mapping"},
        {"/scheduler/conf/bad/no-actions", "tiers: []\n", KB_ERROR_CONFIG, "no \"actions\""},
        {"/scheduler/conf/bad/switch-not-bool",
         "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enableJobReady: maybe\n",
         KB_ERROR_CONFIG, "enableJobReady: expected true or false, got \"maybe\""},
        {"/scheduler/conf/bad/unknown-field",
         "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    weight: 3\n", KB_ERROR_CONFIG,
         "plugin \"gang\": unknown field \"weight\""},
        {"/scheduler/conf/bad/unknown-top-level", "actions: allocate\ntires: []\n", KB_ERROR_CONFIG,
         "unknown field \"tires\""},
        {"/scheduler/conf/bad/plugin-without-name",
         "actions: allocate\ntiers:\n- plugins:\n  - {}\n", KB_ERROR_CONFIG, "without a name"},
        {"/scheduler/conf/bad/tier-not-mapping", "actions: allocate\ntiers:\n- gang\n",
         KB_ERROR_CONFIG, "tier 1: "},
        {"/scheduler/conf/bad/arguments-not-mapping",
         "actions: allocate\ntiers:\n- plugins:\n  - name: nodeorder\n    arguments: [1]\n",
         KB_ERROR_CONFIG, "arguments: expected a mapping"},
};

static void test_bad(gconstpointer data)
{
    const BadCase *c = data;
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse(c->yaml, strlen(c->yaml), &error);
    g_assert_null(conf);
    g_assert_error(error, KB_ERROR, (gint)c->code);
    if (strstr(error->message, c->message) == NULL)
        g_error("message \"%s\" lacks \"%s\"", error->message, c->message);
}

static void test_limits(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *big = g_malloc(KB_CONF_MAX_BYTES + 2);
    memset(big, ' ', KB_CONF_MAX_BYTES + 1);
    big[KB_CONF_MAX_BYTES + 1] = '\0';
    g_assert_null(kb_conf_parse(big, KB_CONF_MAX_BYTES + 1, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_clear_error(&error);

    g_autoptr(GString) s = g_string_new("actions: \"allocate");
    for (int i = 0; i < KB_CONF_MAX_ACTIONS; i++)
        g_string_append(s, ", allocate");
    g_string_append(s, "\"\n");
    g_assert_null(kb_conf_parse(s->str, s->len, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_clear_error(&error);

    g_string_assign(s, "actions: allocate\ntiers:\n- plugins:\n");
    for (int i = 0; i <= KB_CONF_MAX_PLUGINS; i++)
        g_string_append(s, "  - name: gang\n");
    g_assert_null(kb_conf_parse(s->str, s->len, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_clear_error(&error);

    g_string_assign(s, "actions: allocate\ntiers:\n");
    for (int i = 0; i <= KB_CONF_MAX_TIERS; i++)
        g_string_append(s, "- plugins: [{name: gang}]\n");
    g_assert_null(kb_conf_parse(s->str, s->len, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_clear_error(&error);

    g_string_assign(s, "actions: allocate\ntiers:\n- plugins:\n  - name: nodeorder\n"
                       "    arguments:\n");
    for (int i = 0; i <= KB_CONF_MAX_ARGS; i++)
        g_string_append_printf(s, "      k%d: 1\n", i);
    g_assert_null(kb_conf_parse(s->str, s->len, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
}

static void test_load_missing_file(void)
{
    g_autoptr(GError) error = NULL;
    g_assert_null(kb_conf_load("/nonexistent/scheduler.conf", &error));
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, "/nonexistent/scheduler.conf"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    g_test_add_func("/scheduler/conf/default", test_default);
    g_test_add_func("/scheduler/conf/deploy-file", test_deploy_file_matches);
    g_test_add_func("/scheduler/conf/switches", test_switches);
    g_test_add_func("/scheduler/conf/actions-list", test_actions_list);
    for (guint i = 0; i < G_N_ELEMENTS(bad_cases); i++)
        g_test_add_data_func(bad_cases[i].path, &bad_cases[i], test_bad);
    g_test_add_func("/scheduler/conf/limits", test_limits);
    g_test_add_func("/scheduler/conf/load-missing-file", test_load_missing_file);
    return g_test_run();
}
