/*
 * Gangs that lose a member (scheduler/stale.h) without an API server: a running gang in, nodes
 * going NotReady or away, members deleted; conditions, events and evictions out, cycle by cycle
 * on the fixture's clock (one second a cycle).
 */
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-objects.h"
#include "scheduler/cache.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"
#include "scheduler/stale.h"
#include "tests/lib/kb-test-sched.h"

#define RACK  "topology.kubernetes.io/rack"
#define GRACE 10
#define LOST  5

typedef KbTestSched Fx;

/* The built-in configuration with staleGangGrace GRACE and nodeLostAfter LOST (or @extra). */
static Fx *fx_new_with(const char *extra)
{
    g_autofree char *yaml = g_strdup_printf("%s%s", extra, kb_conf_default_yaml());
    return kb_test_sched_new(yaml);
}

static Fx *fx_new(void)
{
    return fx_new_with("staleGangGrace: 10s\nnodeLostAfter: 5s\n");
}

static char *node_json(const char *name, const char *rack, gboolean ready)
{
    g_autofree char *labels = rack != NULL
                                      ? g_strdup_printf(",\"labels\":{\"" RACK "\":\"%s\"}", rack)
                                      : g_strdup("");
    return g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":"
            "\"n-%s\"%s},\"status\":{\"allocatable\":{\"cpu\":\"8\",\"memory\":\"32Gi\","
            "\"pods\":\"110\",\"nvidia.com/gpu\":\"1\"},\"conditions\":[{\"type\":\"Ready\","
            "\"status\":\"%s\"}]}}",
            name, name, labels, ready ? "True" : "Unknown");
}

static void add_node(Fx *fx, const char *name, const char *rack, gboolean ready)
{
    g_autofree char *json = node_json(name, rack, ready);
    kb_test_sched_add_node(fx, json);
}

static void delete_node(Fx *fx, const char *name)
{
    g_autofree char *json = node_json(name, NULL, TRUE);
    json_object *o = kb_test_sched_parse(json);
    g_autoptr(GError) error = NULL;
    KbNode *node = kb_node_decode(o, FALSE, &error);
    g_assert_no_error(error);
    kb_cache_delete_node(fx->cache, node);
    kb_object_unref(node);
    json_object_put(o);
}

/* PodGroup team/tf, minMember 4: Volcano's, with @annotations (JSON members or ""), or the native
 * API's with a rack topology constraint when @native. */
static void add_group(Fx *fx, const char *annotations, gboolean native)
{
    g_autofree char *json =
            native ? g_strdup("{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\","
                              "\"metadata\":{\"name\":\"tf\",\"namespace\":\"team\",\"uid\":"
                              "\"pg-tf\"},\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":4}"
                              "},\"schedulingConstraints\":{\"topology\":[{\"key\":\"" RACK
                              "\"}]}}}")
                   : g_strdup_printf("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":"
                                     "\"PodGroup\",\"metadata\":{\"name\":\"tf\",\"namespace\":"
                                     "\"team\",\"uid\":\"pg-tf\",\"annotations\":{%s}},\"spec\":{"
                                     "\"minMember\":4}}",
                                     annotations);
    kb_test_sched_add_pod_group(fx, json);
}

/* Pod team/@name of job tf (uid @uid), 1 GPU: Running on @node, or Pending when @node is NULL. A
 * pod of another scheduler and no group when @name does not start with "tf-". */
static void put_pod(Fx *fx, const char *name, const char *uid, const char *node, gboolean native)
{
    gboolean member = g_str_has_prefix(name, "tf-");
    g_autofree char *where =
            node != NULL ? g_strdup_printf(",\"nodeName\":\"%s\"", node) : g_strdup("");
    const char *group = !member  ? ""
                        : native ? ",\"schedulingGroup\":{\"podGroupName\":\"tf\"}"
                                 : "";
    const char *ann = member && !native ? "\"scheduling.k8s.io/group-name\":\"tf\"" : "";
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
            "\"team\",\"uid\":\"%s\",\"annotations\":{%s}},\"spec\":{\"schedulerName\":\"%s\"%s%s,"
            "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\","
            "\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{"
            "\"phase\":\"%s\"}}",
            name, uid, ann, member ? "kube-batchd" : "default-scheduler", where, group,
            node != NULL ? "Running" : "Pending");
    kb_test_sched_put_pod(fx, kb_test_sched_parse(json));
}

static void delete_pod(Fx *fx, const char *name)
{
    g_autofree char *key = g_strdup_printf("team/%s", name);
    json_object *o = g_hash_table_lookup(fx->pods, key);
    g_assert_nonnull(o);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode(o, FALSE, &error);
    g_assert_no_error(error);
    kb_cache_delete_pod(fx->cache, pod);
    g_hash_table_remove(fx->pods, key);
}

/* Nodes n0..n3 (rack-a) and a gang of 4 running there, one pod a node. */
static Fx *fx_running(const char *annotations, gboolean native)
{
    Fx *fx = fx_new();
    for (int i = 0; i < 4; i++) {
        g_autofree char *n = g_strdup_printf("n%d", i);
        add_node(fx, n, "rack-a", TRUE);
    }
    add_group(fx, annotations, native);
    for (int i = 0; i < 4; i++) {
        g_autofree char *p = g_strdup_printf("tf-%d", i);
        g_autofree char *u = g_strdup_printf("u-tf-%d", i);
        g_autofree char *n = g_strdup_printf("n%d", i);
        put_pod(fx, p, u, n, native);
    }
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_cycle_result_job(fx->res, "team/tf")->condition_type, ==, "Scheduled");
    return fx;
}

static const KbJobStatus *status(Fx *fx)
{
    const KbJobStatus *st = kb_cycle_result_job(fx->res, "team/tf");
    g_assert_nonnull(st);
    return st;
}

/* Evictions of the last cycle (all must be the gang's, reason GangIncomplete). */
static guint evictions(Fx *fx)
{
    for (guint i = 0; i < fx->res->evictions->len; i++) {
        const KbEviction *ev = &g_array_index(fx->res->evictions, KbEviction, i);
        g_assert_cmpstr(ev->reason, ==, KB_GANG_INCOMPLETE);
        g_assert_cmpstr(ev->job, ==, "team/tf");
    }
    return fx->res->evictions->len;
}

static gboolean has_group_event(Fx *fx, const char *reason)
{
    for (guint i = 0; i < fx->res->events->len; i++) {
        const KbSchedEvent *ev = &g_array_index(fx->res->events, KbSchedEvent, i);
        if (strcmp(ev->kind, "PodGroup") == 0 && strcmp(ev->reason, reason) == 0)
            return TRUE;
    }
    return FALSE;
}

static void assert_incomplete(Fx *fx, const char *reason, const char *needle)
{
    const KbJobStatus *st = status(fx);
    g_assert_cmpstr(st->condition_type, ==, KB_GANG_INCOMPLETE);
    g_assert_cmpstr(st->condition_status, ==, "True");
    g_assert_cmpstr(st->reason, ==, reason);
    if (strstr(st->message, needle) == NULL)
        g_error("message \"%s\" does not name \"%s\"", st->message, needle);
}

/* Cycles within the grace: reported, nothing evicted. Then the rest is evicted, once. */
static void run_grace_then_evict(Fx *fx, guint expect, const char *needle, gint64 grace)
{
    for (gint64 i = 1; i < grace; i++) {
        kb_test_sched_run(fx);
        g_assert_cmpuint(evictions(fx), ==, 0);
        assert_incomplete(fx, "MemberLost", needle);
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(evictions(fx), ==, expect);
    assert_incomplete(fx, "GangEvicted", needle);
    kb_test_sched_run(fx);
    g_assert_cmpuint(evictions(fx), ==, 0);
    assert_incomplete(fx, "GangEvicted", needle);
}

/* A node NotReady counts only after nodeLostAfter; then reported at once, evicted after grace. */
static void test_node_not_ready(void)
{
    Fx *fx = fx_running("", FALSE);
    add_node(fx, "n3", "rack-a", FALSE);
    for (int i = 0; i < LOST; i++) {
        kb_test_sched_run(fx);
        g_assert_cmpstr(status(fx)->condition_type, ==, "Scheduled");
        g_assert_cmpuint(evictions(fx), ==, 0);
    }
    kb_test_sched_run(fx);
    assert_incomplete(fx, "MemberLost",
                      "pod team/tf-3 on a lost node (node n3 NotReady for 5s or more)");
    g_autofree char *first = g_strdup(status(fx)->message);
    g_assert_true(strstr(status(fx)->message, "3/4 members healthy") != NULL);
    g_assert_true(has_group_event(fx, KB_GANG_INCOMPLETE));
    g_assert_cmpuint(evictions(fx), ==, 0);
    /* The same words while it lasts: one status write, one event. */
    kb_test_sched_run(fx);
    g_assert_cmpstr(status(fx)->message, ==, first);
    g_assert_false(status(fx)->changed);
    g_assert_false(has_group_event(fx, KB_GANG_INCOMPLETE));
    /* Every member still on a node goes, the one on the lost node too. */
    run_grace_then_evict(fx, 4, "tf-3", GRACE - 1);
    kb_test_sched_free(fx);
}

/* The node comes back within nodeLostAfter: nothing happens. Within grace: the report clears. */
static void test_node_back(void)
{
    Fx *fx = fx_running("", FALSE);
    add_node(fx, "n3", "rack-a", FALSE);
    for (int i = 0; i < LOST + 3; i++)
        kb_test_sched_run(fx);
    assert_incomplete(fx, "MemberLost", "n3 NotReady");
    add_node(fx, "n3", "rack-a", TRUE);
    for (int i = 0; i < 2 * GRACE; i++) {
        kb_test_sched_run(fx);
        g_assert_cmpuint(evictions(fx), ==, 0);
        g_assert_cmpstr(status(fx)->condition_type, ==, "Scheduled");
    }
    kb_test_sched_free(fx);
}

static void test_node_deleted(void)
{
    Fx *fx = fx_running("", FALSE);
    delete_node(fx, "n2");
    kb_test_sched_run(fx);
    assert_incomplete(fx, "MemberLost", "pod team/tf-2 on a lost node (node n2 deleted)");
    run_grace_then_evict(fx, 4, "tf-2", GRACE);
    kb_test_sched_free(fx);
}

/* The gang placed by one cycle loses a node before the next cycle sees it bound: still whole
 * once, so reported. */
static void test_lost_before_bound(void)
{
    Fx *fx = fx_new();
    for (int i = 0; i < 4; i++) {
        g_autofree char *n = g_strdup_printf("n%d", i);
        add_node(fx, n, NULL, TRUE);
    }
    add_group(fx, "", FALSE);
    for (int i = 0; i < 4; i++) {
        g_autofree char *p = g_strdup_printf("tf-%d", i);
        g_autofree char *u = g_strdup_printf("u-tf-%d", i);
        put_pod(fx, p, u, NULL, FALSE);
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "team/tf"), ==, 4);
    const char *lost = kb_test_sched_bound_node(fx, "team", "tf-0");
    g_autofree char *lost_node = g_strdup(lost);
    kb_test_sched_confirm_all(fx, FALSE);
    delete_node(fx, lost_node);
    kb_test_sched_run(fx);
    g_autofree char *needle = g_strdup_printf("node %s deleted", lost_node);
    assert_incomplete(fx, "MemberLost", needle);
    kb_test_sched_free(fx);
}

/*
 * kube-batchd restarts while a gang is short (its replacement member waits for a GPU another
 * pod took): the PodGroup's phase Running, written before, says it ran whole, so it is reported
 * and evicted after the grace. A group that never ran (no such phase) is not.
 */
static void test_short_after_restart(void)
{
    for (int ran = 0; ran < 2; ran++) {
        Fx *fx = fx_new();
        for (int i = 0; i < 4; i++) {
            g_autofree char *n = g_strdup_printf("n%d", i);
            add_node(fx, n, NULL, TRUE);
        }
        kb_test_sched_add_pod_group(
                fx, ran ? "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                          "\"metadata\":{\"name\":\"tf\",\"namespace\":\"team\",\"uid\":\"pg-tf\"},"
                          "\"spec\":{\"minMember\":4},\"status\":{\"phase\":\"Running\"}}"
                        : "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                          "\"metadata\":{\"name\":\"tf\",\"namespace\":\"team\",\"uid\":\"pg-tf\"},"
                          "\"spec\":{\"minMember\":4}}");
        for (int i = 0; i < 3; i++) {
            g_autofree char *p = g_strdup_printf("tf-%d", i);
            g_autofree char *u = g_strdup_printf("u-tf-%d", i);
            g_autofree char *n = g_strdup_printf("n%d", i);
            put_pod(fx, p, u, n, FALSE);
        }
        put_pod(fx, "other", "u-other", "n3", FALSE);
        put_pod(fx, "tf-3", "u-tf-3b", NULL, FALSE);
        kb_test_sched_run(fx);
        if (!ran) {
            for (int i = 0; i < 2 * GRACE; i++) {
                g_assert_cmpstr(status(fx)->condition_type, !=, KB_GANG_INCOMPLETE);
                g_assert_cmpuint(evictions(fx), ==, 0);
                kb_test_sched_run(fx);
            }
        } else {
            assert_incomplete(fx, "MemberLost", "pod team/tf-3 was not placed again");
            run_grace_then_evict(fx, 3, "tf-3", GRACE);
        }
        kb_test_sched_free(fx);
    }
}

/* A member deleted; its replacement finds no room (another scheduler's pod took its GPU). */
static void test_member_deleted_unplaceable(void)
{
    Fx *fx = fx_running("", FALSE);
    delete_pod(fx, "tf-3");
    put_pod(fx, "other", "u-other", "n3", FALSE);
    kb_test_sched_run(fx);
    assert_incomplete(fx, "MemberLost", "1 member gone");
    put_pod(fx, "tf-3", "u-tf-3b", NULL, FALSE);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "team/tf"), ==, 0);
    assert_incomplete(fx, "MemberLost", "pod team/tf-3 was not placed again");
    run_grace_then_evict(fx, 3, "tf-3", GRACE - 1);
    kb_test_sched_free(fx);
}

/* A member deleted and its replacement placed at once: never reported, nothing evicted. */
static void test_member_replaced(void)
{
    Fx *fx = fx_running("", FALSE);
    delete_pod(fx, "tf-1");
    put_pod(fx, "tf-1", "u-tf-1b", NULL, FALSE);
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "team", "tf-1"), ==, "n1");
    g_assert_cmpstr(status(fx)->condition_type, !=, KB_GANG_INCOMPLETE);
    kb_test_sched_confirm_all(fx, FALSE);
    for (int i = 0; i < 2 * GRACE; i++) {
        kb_test_sched_run(fx);
        g_assert_cmpuint(evictions(fx), ==, 0);
        g_assert_cmpstr(status(fx)->condition_type, ==, "Scheduled");
    }
    kb_test_sched_free(fx);
}

/*
 * A gang held to one rack: its replacement goes to the free node of its own rack, not to the
 * emptier rack beside it; with no room left in its rack it is not placed elsewhere, and the gang
 * is evicted after the grace.
 */
static void test_replacement_in_domain(void)
{
    for (int room = 0; room < 2; room++) {
        Fx *fx = fx_running("", TRUE);
        for (int i = 0; i < 4; i++) {
            g_autofree char *n = g_strdup_printf("b%d", i);
            add_node(fx, n, "rack-b", TRUE);
        }
        if (room)
            add_node(fx, "n4", "rack-a", TRUE);
        delete_pod(fx, "tf-3");
        put_pod(fx, "other", "u-other", "n3", FALSE);
        put_pod(fx, "tf-3", "u-tf-3b", NULL, TRUE);
        kb_test_sched_run(fx);
        if (room) {
            g_assert_cmpstr(kb_test_sched_bound_node(fx, "team", "tf-3"), ==, "n4");
            g_assert_cmpstr(status(fx)->condition_type, !=, KB_GANG_INCOMPLETE);
        } else {
            g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
            assert_incomplete(fx, "MemberLost", "tf-3 was not placed again");
            run_grace_then_evict(fx, 3, "tf-3", GRACE);
        }
        kb_test_sched_free(fx);
    }
}

/*
 * The member listed first sits on a node that was deleted: the gang's domain is still the rack of
 * its other members, and a fifth pod goes to the free node there (before, the deleted node had no
 * label and the gang found no domain at all).
 */
static void test_domain_after_node_deleted(void)
{
    Fx *fx = fx_running("", TRUE);
    for (int i = 0; i < 4; i++) {
        g_autofree char *n = g_strdup_printf("b%d", i);
        add_node(fx, n, "rack-b", TRUE);
    }
    add_node(fx, "n4", "rack-a", TRUE);
    delete_node(fx, "n0");
    put_pod(fx, "tf-4", "u-tf-4", NULL, TRUE);
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "team", "tf-4"), ==, "n4");
    g_assert_cmpstr(status(fx)->condition_type, !=, KB_GANG_INCOMPLETE);
    kb_test_sched_confirm_all(fx, FALSE);
    for (int i = 0; i < 2 * GRACE; i++) {
        kb_test_sched_run(fx);
        g_assert_cmpuint(evictions(fx), ==, 0);
    }
    kb_test_sched_free(fx);
}

/* kube-batchd.io/tolerate-partial: "true": reported, never evicted. */
static void test_tolerate_partial(void)
{
    Fx *fx = fx_running("\"" KB_TOLERATE_PARTIAL_ANNOTATION "\":\"true\"", FALSE);
    delete_node(fx, "n0");
    for (int i = 0; i < 3 * GRACE; i++) {
        kb_test_sched_run(fx);
        g_assert_cmpuint(evictions(fx), ==, 0);
        assert_incomplete(fx, "MemberLost", "left partly running");
    }
    kb_test_sched_free(fx);
}

/* The annotation's grace beats the configuration's; a malformed one is named and ignored. */
static void test_grace_annotation(void)
{
    Fx *fx = fx_running("\"" KB_STALE_GRACE_ANNOTATION "\":\"3s\"", FALSE);
    delete_node(fx, "n0");
    kb_test_sched_run(fx);
    run_grace_then_evict(fx, 4, "n0 deleted", 3);
    kb_test_sched_free(fx);

    fx = fx_running("\"" KB_STALE_GRACE_ANNOTATION "\":\"soon\"", FALSE);
    delete_node(fx, "n0");
    kb_test_sched_run(fx);
    assert_incomplete(fx, "MemberLost", "annotation " KB_STALE_GRACE_ANNOTATION);
    assert_incomplete(fx, "MemberLost", "\"soon\"");
    run_grace_then_evict(fx, 4, "staleGangGrace 10s holds", GRACE);
    kb_test_sched_free(fx);
}

/* Evictions refused (a PodDisruptionBudget's 429): the members run again and the gang is tried
 * again after 1 s, 2 s, 4 s; never anything but an eviction. */
static void test_eviction_refused(void)
{
    Fx *fx = fx_running("\"" KB_STALE_GRACE_ANNOTATION "\":\"2s\"", FALSE);
    delete_node(fx, "n3");
    kb_test_sched_run(fx);
    kb_test_sched_run(fx);
    g_assert_cmpuint(evictions(fx), ==, 0);
    /* Cycles: 1 evicts, then refused each time; the next round after 1, 2, 4 s. */
    static const guint expect[] = {4, 4, 0, 4, 0, 0, 0, 4};
    for (guint i = 0; i < G_N_ELEMENTS(expect); i++) {
        kb_test_sched_run(fx);
        g_assert_cmpuint(evictions(fx), ==, expect[i]);
        assert_incomplete(fx, "GangEvicted", "n3 deleted");
        if (i > 0)
            assert_incomplete(fx, "GangEvicted", "an eviction was refused");
        for (guint e = 0; e < fx->res->evictions->len; e++) {
            const KbPod *pod = g_array_index(fx->res->evictions, KbEviction, e).pod;
            g_assert_true(kb_cache_evict_failed(fx->cache, "team", pod->meta.name, pod->meta.uid));
        }
    }
    kb_test_sched_free(fx);
}

/* A gang that has a member done is finishing: the others leaving is no loss. */
static void test_finishing(void)
{
    Fx *fx = fx_running("", FALSE);
    json_object *o = json_object_get(g_hash_table_lookup(fx->pods, "team/tf-0"));
    json_object *st = json_object_object_get(o, "status");
    json_object_object_add(st, "phase", json_object_new_string("Succeeded"));
    kb_test_sched_put_pod(fx, o);
    delete_pod(fx, "tf-1");
    for (int i = 0; i < 2 * GRACE; i++) {
        kb_test_sched_run(fx);
        g_assert_cmpuint(evictions(fx), ==, 0);
        g_assert_cmpstr(status(fx)->condition_type, !=, KB_GANG_INCOMPLETE);
    }
    kb_test_sched_free(fx);
}

static void test_conf(void)
{
    g_autoptr(KbConf) def = kb_conf_new_default();
    g_assert_cmpint(def->stale_gang_grace, ==, KB_CONF_DEFAULT_STALE_GANG_GRACE);
    g_assert_cmpint(def->node_lost_after, ==, KB_CONF_DEFAULT_NODE_LOST_AFTER);
    static const char ok[] = "staleGangGrace: 2m\nnodeLostAfter: \"90\"\nactions: \"allocate\"\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbConf) conf = kb_conf_parse(ok, strlen(ok), &error);
    g_assert_no_error(error);
    g_assert_cmpint(conf->stale_gang_grace, ==, 120);
    g_assert_cmpint(conf->node_lost_after, ==, 90);
    static const char *const bad[] = {
            "actions: \"allocate\"\nstaleGangGrace: soon\n",
            "actions: \"allocate\"\nnodeLostAfter: [1]\n",
    };
    static const char *const says[] = {"line 2: staleGangGrace: ", "line 2: nodeLostAfter: "};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) e = NULL;
        g_autoptr(KbConf) c = kb_conf_parse(bad[i], strlen(bad[i]), &e);
        g_assert_null(c);
        g_assert_error(e, KB_ERROR, KB_ERROR_CONFIG);
        if (!g_str_has_prefix(e->message, says[i]))
            g_error("\"%s\" does not start with \"%s\"", e->message, says[i]);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/scheduler/stale/node-not-ready", test_node_not_ready);
    g_test_add_func("/scheduler/stale/node-back-within-time", test_node_back);
    g_test_add_func("/scheduler/stale/node-deleted", test_node_deleted);
    g_test_add_func("/scheduler/stale/node-lost-before-next-cycle", test_lost_before_bound);
    g_test_add_func("/scheduler/stale/member-deleted-unplaceable", test_member_deleted_unplaceable);
    g_test_add_func("/scheduler/stale/member-replaced", test_member_replaced);
    g_test_add_func("/scheduler/stale/short-after-restart", test_short_after_restart);
    g_test_add_func("/scheduler/stale/replacement-in-own-domain", test_replacement_in_domain);
    g_test_add_func("/scheduler/stale/replacement-domain-after-node-deleted",
                    test_domain_after_node_deleted);
    g_test_add_func("/scheduler/stale/tolerate-partial", test_tolerate_partial);
    g_test_add_func("/scheduler/stale/grace-annotation", test_grace_annotation);
    g_test_add_func("/scheduler/stale/eviction-refused-backs-off", test_eviction_refused);
    g_test_add_func("/scheduler/stale/finishing-gang-left-alone", test_finishing);
    g_test_add_func("/scheduler/stale/conf", test_conf);
    return g_test_run();
}
