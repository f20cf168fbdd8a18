/*
 * bench/lib/qshare: the queue tree file of bench-trace --queue-tree (specs and errors) and the
 * share tracking over cycles (largest shortfall, how long it lasted, per level).
 */
#include <string.h>

#include "bench/lib/qshare.h"
#include "bench/lib/sim.h"
#include "bench/lib/trace.h"
#include "kube/kb-error.h"
#include "scheduler/cycle.h"

static void test_parse(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GHashTable) t = kb_qshare_parse_tree(
            "# comment\n\norg-a  -  weight=2\n  team  org-a capability=16 guarantee=4 "
            "deserved=8 reclaimable=false # trailing\n",
            "tree", &error);
    g_assert_no_error(error);
    g_assert_cmpuint(g_hash_table_size(t), ==, 2);
    g_assert_cmpstr(g_hash_table_lookup(t, "org-a"), ==, "{\"weight\":2}");
    g_assert_cmpstr(g_hash_table_lookup(t, "team"), ==,
                    "{\"parent\":\"org-a\",\"capability\":{\"nvidia.com\\/gpu\":16},"
                    "\"guarantee\":{\"resource\":{\"nvidia.com\\/gpu\":4}},\"deserved\":{"
                    "\"nvidia.com\\/gpu\":8},\"reclaimable\":false}");
}

typedef struct {
    const char *text;
    const char *message;
} BadCase;

static void test_parse_errors(void)
{
    static const BadCase cases[] = {
            {"a\n", "tree:1: want \"name parent [options]\""},
            {"a - weight=0\n", "tree:1: queue \"a\": weight=\"0\": want a whole number >= 1"},
            {"a -\nb - colour=red\n",
             "tree:2: queue \"b\": unknown option \"colour\" (weight, capability, guarantee, "
             "deserved, reclaimable)"},
            {"a -\na -\n", "tree:2: queue \"a\": listed twice"},
            {"a - capability=-1\n",
             "tree:1: queue \"a\": capability=\"-1\": want a whole number of GPUs"},
            {"a - reclaimable=no\n", "tree:1: queue \"a\": reclaimable=\"no\": want true or false"},
            {"a - weight\n", "tree:1: queue \"a\": \"weight\": want name=value"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GHashTable) t = kb_qshare_parse_tree(cases[i].text, "tree", &error);
        g_assert_null(t);
        g_assert_error(error, KB_ERROR, KB_ERROR_INVALID);
        g_assert_cmpstr(error->message, ==, cases[i].message);
    }
}

/* More queues than the limit: refused, naming the line. */
static void test_parse_limit(void)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i <= 100000; i++)
        g_string_append_printf(s, "q%u -\n", i);
    g_autoptr(GError) error = NULL;
    g_autoptr(GHashTable) t = kb_qshare_parse_tree(s->str, "big", &error);
    g_string_free(s, TRUE);
    g_assert_null(t);
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_assert_cmpstr(error->message, ==, "big:100001: more than 100000 queues");
}

/* A cycle result with queue @name (under @parent) holding @alloc of @des GPUs, at @now. */
static void feed(KbQshare *qs, gint64 now, const char *name, const char *parent, gint64 alloc,
                 gint64 des)
{
    KbCycleResult res = {0};
    res.now = now;
    res.queue_statuses = g_array_new(FALSE, TRUE, sizeof(KbQueueStatus));
    KbQueueStatus st = {0};
    st.name = g_intern_string(name);
    st.parent = g_intern_string(parent);
    st.allocated.v[KB_RES_GPU] = alloc * KB_GPU_MILLI;
    st.deserved.v[KB_RES_GPU] = des * KB_GPU_MILLI;
    g_array_append_val(res.queue_statuses, st);
    kb_qshare_on_cycle(&res, qs);
    g_array_unref(res.queue_statuses);
}

static void test_shortfall(void)
{
    g_autoptr(KbQshare) qs = kb_qshare_new();
    feed(qs, 0, "org", "root", 0, 0);
    feed(qs, 0, "team", "org", 4, 4);
    feed(qs, 100, "team", "org", 2, 4); /* 2 short from 100 */
    feed(qs, 150, "team", "org", 0, 4); /* 4 short */
    feed(qs, 200, "team", "org", 4, 4); /* episode 100..200: max 4, lasted 100 */
    feed(qs, 300, "team", "org", 3, 4); /* 1 short from 300 */
    feed(qs, 600, "team", "org", 8, 4); /* episode 300..600: max 1, lasted 300; over share */
    kb_qshare_finish(qs, 1000);
    KbQshareQueue q;
    g_assert_true(kb_qshare_queue(qs, "team", &q));
    g_assert_cmpuint(q.depth, ==, 2);
    g_assert_cmpint(q.max_short, ==, 4);
    g_assert_cmpint(q.max_short_lasted, ==, 100);
    g_assert_cmpint(q.longest_short, ==, 300);
    /* 2 x 50 + 4 x 50 + 1 x 300 GPU-seconds short. */
    g_assert_cmpfloat(q.short_gpu_s, ==, 600);
    /* held: 4x100 + 2x50 + 0x50 + 4x100 + 3x300 + 8x400 = 5000 over 1000 s */
    g_assert_cmpfloat(q.alloc_mean, ==, 5.0);
    g_assert_cmpfloat(q.deserved_mean, ==, 4.0);
    g_assert_true(kb_qshare_queue(qs, "org", &q));
    g_assert_cmpuint(q.depth, ==, 1);
    g_assert_false(kb_qshare_queue(qs, "nosuch", &q));
}

/* A shortfall still open at the end of the run counts until the end. */
static void test_open_at_end(void)
{
    g_autoptr(KbQshare) qs = kb_qshare_new();
    feed(qs, 10, "q", "root", 0, 8);
    kb_qshare_finish(qs, 70);
    KbQshareQueue q;
    g_assert_true(kb_qshare_queue(qs, "q", &q));
    g_assert_cmpint(q.max_short, ==, 8);
    g_assert_cmpint(q.max_short_lasted, ==, 60);
    g_assert_cmpfloat(q.short_gpu_s, ==, 480);
}

/*
 * A replay with the tree (t1, t2 under org-a weight 1; b under org-b weight 3) on one
 * 8-GPU node, every queue submitting eight 1-GPU jobs at once: the first wave starts 1, 1 and 6
 * jobs (8 x 1/4 split in two, 8 x 3/4), and the shares name the parents at level 1.
 */
static void test_replay_tree(void)
{
    g_autoptr(GString) csv = g_string_new("timestamp,duration,num_gpus,gpu_time,cluster\n");
    static const char *const queues[] = {"t1", "t2", "b"};
    for (guint q = 0; q < 3; q++) {
        for (guint i = 0; i < 8; i++)
            g_string_append_printf(csv, "2017-10-09 07:00:00,1000,1,1000,%s\n", queues[q]);
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(KbTrace) t = kb_trace_parse(csv->str, csv->len, "t.csv", NULL, &error);
    g_assert_no_error(error);
    kb_trace_sort(t);
    g_autoptr(GHashTable) tree = kb_qshare_parse_tree(
            "org-a - weight=1\nt1 org-a\nt2 org-a\norg-b - weight=3\nb org-b\n", "tree", &error);
    g_assert_no_error(error);
    g_autoptr(KbConf) conf = kb_conf_new_default();
    g_autoptr(KbQshare) qs = kb_qshare_new();
    KbSimOptions opts;
    kb_sim_options_init(&opts);
    opts.n_nodes = 1;
    opts.queue_specs = tree;
    opts.on_cycle = kb_qshare_on_cycle;
    opts.on_cycle_data = qs;
    g_autoptr(KbSimReport) r = kb_sim_run(t, conf, &opts, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(r->n_finished, ==, 24);
    guint first[3] = {0};
    for (guint j = 0; j < r->n_jobs; j++) {
        for (guint q = 0; q < 3; q++) {
            if (strcmp(r->jobs[j].queue, queues[q]) == 0 && r->jobs[j].start == r->first_submit)
                first[q]++;
        }
    }
    g_assert_cmpuint(first[0], ==, 1);
    g_assert_cmpuint(first[1], ==, 1);
    g_assert_cmpuint(first[2], ==, 6);
    kb_qshare_finish(qs, r->end);
    KbQshareQueue q;
    g_assert_true(kb_qshare_queue(qs, "org-a", &q));
    g_assert_cmpuint(q.depth, ==, 1);
    g_assert_true(kb_qshare_queue(qs, "t1", &q));
    g_assert_cmpuint(q.depth, ==, 2);
    g_assert_cmpint(q.max_short, ==, 0); /* a gang of one GPU always fits its share */
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench/qshare/tree/parse", test_parse);
    g_test_add_func("/bench/qshare/tree/errors", test_parse_errors);
    g_test_add_func("/bench/qshare/tree/limit", test_parse_limit);
    g_test_add_func("/bench/qshare/shares/shortfall", test_shortfall);
    g_test_add_func("/bench/qshare/shares/open-at-end", test_open_at_end);
    g_test_add_func("/bench/qshare/replay/tree", test_replay_tree);
    return g_test_run();
}
