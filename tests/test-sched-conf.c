/* Scheduler configuration parsing (kube-batch/Volcano format). */
#include <string.h>

#include "kube/kb-error.h"
#include "scheduler/conf.h"
#include "tests/lib/kb-test-confs.h"

/* "a,b;c,d": the plugin names of each tier. */
static char *plugin_set(const KbConf *conf)
{
    GString *s = g_string_new(NULL);
    for (guint t = 0; t < conf->n_tiers; t++) {
        if (t > 0)
            g_string_append_c(s, ';');
        for (guint i = 0; i < conf->tiers[t].n_plugins; i++)
            g_string_append_printf(s, "%s%s", i > 0 ? "," : "", conf->tiers[t].plugins[i].name);
    }
    return g_string_free(s, FALSE);
}

/* Every warning of @conf contains one of @want (NULL-terminated), and each of @want is in one. */
static void assert_warnings(const KbConf *conf, const char *const *want)
{
    for (guint i = 0; i < conf->warnings->len; i++)
        g_test_message("warning: %s", (const char *)conf->warnings->pdata[i]);
    guint n = 0;
    for (; want[n] != NULL; n++) {
        gboolean found = FALSE;
        for (guint i = 0; i < conf->warnings->len && !found; i++)
            found = strstr(conf->warnings->pdata[i], want[n]) != NULL;
        if (!found)
            g_error("no warning contains \"%s\"", want[n]);
    }
    g_assert_cmpuint(conf->warnings->len, ==, n);
}

static void test_default(void)
{
    g_autoptr(KbConf) conf = kb_conf_new_default();
    g_assert_cmpuint(conf->n_actions, ==, 4);
    g_assert_cmpstr(conf->actions[0], ==, "enqueue");
    g_assert_cmpstr(conf->actions[1], ==, "reserve");
    g_assert_cmpstr(conf->actions[2], ==, "allocate");
    g_assert_cmpstr(conf->actions[3], ==, "reclaim");
    g_assert_null(conf->actions[4]);
    /* reclaim takes back only what long jobs borrowed past their queues' limits */
    g_assert_true(kb_conf_reclaim_borrowed_only(conf));
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
    g_autofree char *path = g_build_filename(srcdir, "deploy", "base", "scheduler.conf", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_load(path, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(conf->n_tiers, ==, 2);
    g_assert_nonnull(kb_conf_find_plugin(conf, "proportion"));
    g_assert_true(kb_conf_has_action(conf, "reserve"));
    g_assert_true(kb_conf_reclaim_borrowed_only(conf));
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
    static const char *const want[] = {
            "plugin \"drf\": switch \"enableBestNode\" is not supported, ignored",
            "plugin \"nodeorder\": argument \"bogus\" is not supported, ignored", NULL};
    assert_warnings(conf, want);
}

/* ---- Volcano's and kube-batch's own files ---------------------------------------------------- */

typedef struct {
    const char *path;
    const char *yaml;
    const char *actions; /* as kept, joined with "," */
    const char *plugins; /* plugin_set() */
    const char *warnings[6];
    const char *strict_error; /* with KB_CONF_STRICT, or NULL: parses the same */
} ShippedCase;

static const ShippedCase shipped_cases[] = {
        {"/scheduler/conf/shipped/kube-batch",
         kb_test_kube_batch_conf,
         "reclaim,allocate,backfill,preempt",
         "priority,gang,conformance;drf,predicates,proportion,nodeorder",
         {NULL},
         NULL},
        {"/scheduler/conf/shipped/volcano",
         kb_test_volcano_conf,
         "enqueue,allocate,backfill",
         "priority,gang,conformance;drf,predicates,proportion,nodeorder,binpack",
         {"plugin \"overcommit\" ignored: enqueue admits jobs against the idle capacity", NULL},
         "line 9: plugin \"overcommit\" is not implemented (--strict-config): enqueue admits"},
        {"/scheduler/conf/shipped/volcano-ci",
         kb_test_volcano_ci_conf,
         "enqueue,allocate,backfill,reclaim,preempt",
         "priority,gang,conformance,sla;drf,predicates,proportion,nodeorder,binpack",
         {"plugin \"overcommit\" ignored",
          "plugin \"network-topology-aware\" ignored: HyperNodes are not read",
          "plugin \"predicates\": argument \"predicate.DynamicResourceAllocationEnable\" is not "
          "supported, ignored",
          "plugin \"sla\": without the reserve action", NULL},
         "line 10: plugin \"overcommit\" is not implemented (--strict-config)"},
};

static void test_shipped(gconstpointer data)
{
    const ShippedCase *c = data;
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse(c->yaml, strlen(c->yaml), &error);
    g_assert_no_error(error);
    g_autofree char *actions = g_strjoinv(",", conf->actions);
    g_assert_cmpstr(actions, ==, c->actions);
    g_autofree char *plugins = plugin_set(conf);
    g_assert_cmpstr(plugins, ==, c->plugins);
    assert_warnings(conf, c->warnings);
    /* What the file switches off is kept (Volcano's gang and drf do not choose victims). */
    if (kb_conf_find_plugin(conf, "drf") != NULL && strstr(c->yaml, "enablePreemptable") != NULL)
        g_assert_false(kb_conf_find_plugin(conf, "drf")->enabled[KB_SWITCH_PREEMPTABLE]);

    g_autoptr(KbConf) strict =
            kb_conf_parse_flags(c->yaml, strlen(c->yaml), KB_CONF_STRICT, &error);
    if (c->strict_error == NULL) {
        g_assert_no_error(error);
        g_assert_cmpuint(strict->warnings->len, ==, 0);
        return;
    }
    g_assert_null(strict);
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    if (strstr(error->message, c->strict_error) == NULL)
        g_error("message \"%s\" lacks \"%s\"", error->message, c->strict_error);
}

/* A plugin ignored in two tiers, an argument ignored twice: one warning each. */
static void test_warnings_once(void)
{
    static const char yaml[] = "actions: \"enqueue, shuffle, allocate, shuffle\"\n"
                               "tiers:\n"
                               "- plugins:\n"
                               "  - name: overcommit\n"
                               "  - name: gang\n"
                               "    enableBestNode: true\n"
                               "- plugins:\n"
                               "  - name: overcommit\n"
                               "    arguments: {overcommit-factor: 1.2}\n"
                               "  - name: nodeorder\n"
                               "    arguments: {nodeaffinity.weight: 2, leastrequested.weight: 1}\n"
                               "  - name: pdb\n"
                               "  - name: nodeorder\n"
                               "    arguments: {nodeaffinity.weight: 3}\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse(yaml, strlen(yaml), &error);
    g_assert_no_error(error);
    g_autofree char *actions = g_strjoinv(",", conf->actions);
    g_assert_cmpstr(actions, ==, "enqueue,allocate");
    g_autofree char *plugins = plugin_set(conf);
    g_assert_cmpstr(plugins, ==, "gang;nodeorder,nodeorder");
    static const char *const want[] = {
            "action \"shuffle\" ignored: it evicts what the rescheduling plugin picks",
            "plugin \"overcommit\" ignored",
            "plugin \"gang\": switch \"enableBestNode\" is not supported, ignored",
            "plugin \"nodeorder\": argument \"nodeaffinity.weight\" is not supported, ignored",
            "plugin \"pdb\" ignored: evictions go through the Eviction API",
            NULL};
    assert_warnings(conf, want);
}

/* Past KB_CONF_MAX_WARNINGS the rest are counted in one more. */
static void test_warnings_limit(void)
{
    g_autoptr(GString) s = g_string_new("actions: allocate\ntiers:\n");
    for (int t = 0; t < 2; t++) {
        g_string_append(s, "- plugins:\n  - name: nodeorder\n    arguments:\n");
        for (int i = 0; i < KB_CONF_MAX_ARGS; i++)
            g_string_append_printf(s, "      t%d-k%d: 1\n", t, i);
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse(s->str, s->len, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(conf->warnings->len, ==, KB_CONF_MAX_WARNINGS + 1);
    g_assert_cmpstr(conf->warnings->pdata[KB_CONF_MAX_WARNINGS], ==, "64 more warnings left out");
}

typedef struct {
    const char *path;
    const char *yaml;
    KbConfFlags flags;
    const char *message;
} RefusedCase;

#define TIER_OF(p) "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n" p

static const RefusedCase refused_cases[] = {
        {"/scheduler/conf/refused/numa-aware", TIER_OF("  - name: numa-aware\n"), 0,
         "line 5: plugin \"numa-aware\" is not implemented and cannot be ignored: NUMA placement "
         "is a hard constraint"},
        {"/scheduler/conf/refused/capacity", TIER_OF("  - name: capacity\n"), 0,
         "line 5: plugin \"capacity\" is not implemented and cannot be ignored: queue capacities "
         "would not be enforced (the proportion plugin"},
        {"/scheduler/conf/refused/cdp", TIER_OF("  - name: cdp\n"), 0,
         "plugin \"cdp\" is not implemented and cannot be ignored: pods would be evicted within "
         "their cooldown time"},
        {"/scheduler/conf/refused/deviceshare", TIER_OF("  - name: deviceshare\n"), 0,
         "plugin \"deviceshare\" is not implemented and cannot be ignored"},
        {"/scheduler/conf/refused/unknown-still-unknown", TIER_OF("  - name: binpak\n"), 0,
         "line 5: unknown plugin \"binpak\" (known: priority, gang, drf, proportion, predicates, "
         "nodeorder, conformance, gpu-topology, sla, binpack)"},
        {"/scheduler/conf/refused/strict-action", "actions: \"enqueue, gangpreempt\"\n",
         KB_CONF_STRICT,
         "line 1: actions: action \"gangpreempt\" is not implemented (--strict-config): the "
         "preempt action evicts whole gangs"},
        {"/scheduler/conf/refused/strict-switch", TIER_OF("    enableHierarchy: true\n"),
         KB_CONF_STRICT,
         "line 5: plugin \"gang\": switch \"enableHierarchy\" is not implemented "
         "(--strict-config)"},
        {"/scheduler/conf/refused/strict-argument",
         TIER_OF("  - name: binpack\n    arguments:\n      binpack.weight: 2\n"
                 "      binpack.gpu: 3\n"),
         KB_CONF_STRICT,
         "line 8: plugin \"binpack\": argument \"binpack.gpu\" is not implemented "
         "(--strict-config)"},
        {"/scheduler/conf/refused/argument-not-a-number",
         TIER_OF("  - name: binpack\n    arguments:\n      binpack.weight: heavy\n"), 0,
         "line 7: plugin \"binpack\": argument binpack.weight: \"heavy\" is not a number"},
        {"/scheduler/conf/refused/resource-weight-not-a-number",
         TIER_OF("  - name: binpack\n    arguments:\n      binpack.resources: nvidia.com/gpu\n"
                 "      binpack.resources.nvidia.com/gpu: lots\n"),
         0,
         "line 8: plugin \"binpack\": argument binpack.resources.nvidia.com/gpu: \"lots\" is not "
         "a number"},
        {"/scheduler/conf/refused/sla-not-a-duration",
         TIER_OF("  - name: sla\n    arguments:\n      sla-waiting-time: soon\n"), 0,
         "line 7: plugin \"sla\": argument sla-waiting-time: \"soon\" is not a duration like "
         "\"1h30m\""},
        {"/scheduler/conf/refused/sla-not-positive",
         TIER_OF("  - name: sla\n    arguments:\n      sla-waiting-time: 0s\n"), 0,
         "line 7: plugin \"sla\": argument sla-waiting-time: \"0s\" is not a positive duration"},
        {"/scheduler/conf/refused/sla-list",
         TIER_OF("  - name: sla\n    arguments:\n      sla-waiting-time: [1h]\n"), 0,
         "line 7: plugin \"sla\": argument sla-waiting-time: expected a single value"},
};

static void test_refused(gconstpointer data)
{
    const RefusedCase *c = data;
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse_flags(c->yaml, strlen(c->yaml), c->flags, &error);
    g_assert_null(conf);
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    if (strstr(error->message, c->message) == NULL)
        g_error("message \"%s\" lacks \"%s\"", error->message, c->message);
}

typedef struct {
    const char *text;
    gint64 ns; /* G_MININT64: refused */
} GoDuration;

static void test_go_duration(void)
{
    static const GoDuration cases[] = {
            {"1h2m3s4ms5us6ns", 3723004005006},
            {"1h2m3s4ms5\xc2\xb5s6ns", 3723004005006},
            {"1.5h", 5400 * G_GINT64_CONSTANT(1000000000)},
            {"300ms", 300000000},
            {".5s", 500000000},
            {"3s", 3000000000},
            {"-2m", -120 * G_GINT64_CONSTANT(1000000000)},
            {"0", 0},
            {"2000000h", 2000000 * G_GINT64_CONSTANT(3600000000000)},
            {"", G_MININT64},
            {"1", G_MININT64},
            {"1x", G_MININT64},
            {"h", G_MININT64},
            {".s", G_MININT64},
            {"1h-2m", G_MININT64},
            {"1h ", G_MININT64},
            {"3000000h", G_MININT64},
            {"99999999999999999999999h", G_MININT64},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        gint64 ns = 42;
        g_autoptr(GError) error = NULL;
        gboolean ok = kb_conf_parse_go_duration(cases[i].text, &ns, &error);
        g_test_message("\"%s\"", cases[i].text);
        if (cases[i].ns == G_MININT64) {
            g_assert_false(ok);
            g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
            g_assert_nonnull(strstr(error->message, cases[i].text));
        } else {
            g_assert_no_error(error);
            g_assert_true(ok);
            g_assert_cmpint(ns, ==, cases[i].ns);
        }
    }
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
        {"/scheduler/conf/bad/tiers-twice",
         "actions: allocate\ntiers:\n- plugins: [{name: gang}]\ntiers:\n- plugins: [{name: drf}]\n",
         KB_ERROR_CONFIG, "line 5: tiers given twice"},
        {"/scheduler/conf/bad/plugin-name-twice",
         "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    name: drf\n", KB_ERROR_CONFIG,
         "line 5: plugin \"gang\": name given twice"},
        {"/scheduler/conf/bad/configuration-name-twice",
         "actions: allocate\nconfigurations:\n- name: preempt\n  name: reclaim\n", KB_ERROR_CONFIG,
         "line 4: configurations: \"preempt\": name given twice"},
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
    for (guint i = 0; i < G_N_ELEMENTS(shipped_cases); i++)
        g_test_add_data_func(shipped_cases[i].path, &shipped_cases[i], test_shipped);
    g_test_add_func("/scheduler/conf/warnings-once", test_warnings_once);
    g_test_add_func("/scheduler/conf/warnings-limit", test_warnings_limit);
    for (guint i = 0; i < G_N_ELEMENTS(refused_cases); i++)
        g_test_add_data_func(refused_cases[i].path, &refused_cases[i], test_refused);
    g_test_add_func("/scheduler/conf/go-duration", test_go_duration);
    g_test_add_func("/scheduler/conf/limits", test_limits);
    g_test_add_func("/scheduler/conf/load-missing-file", test_load_missing_file);
    return g_test_run();
}
