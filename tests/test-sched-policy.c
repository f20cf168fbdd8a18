/*
 * The scheduler core end to end without an API server: objects in (decoded from JSON with the
 * real decoders), one or more cycles, binds / conditions / events out. Volcano-style cases.
 */
#include <string.h>

#include "kube/kb-objects.h"
#include "policies/plugin.h"
#include "scheduler/cache.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"
#include "scheduler/reserve.h"
#include "scheduler/session.h"
#include "scheduler/usage.h"
#include "tests/lib/kb-test-sched.h"

/* ---- fixture -------------------------------------------------------------------------------- */

typedef KbTestSched Fx;

/* A node: @gpus GPUs, @cpu cores, @mem Gi; @extra_spec / @labels are JSON members or "". */
static void add_node_full(Fx *fx, const char *name, int cpu, int mem_gi, int gpus,
                          const char *labels, const char *spec, gboolean ready)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"n-%"
            "s\","
            "\"labels\":{%s}},\"spec\":{%s},\"status\":{\"allocatable\":{\"cpu\":\"%d\",\"memory\":"
            "\"%dGi\",\"pods\":\"110\",\"nvidia.com/"
            "gpu\":\"%d\"},\"conditions\":[{\"type\":\"Ready\","
            "\"status\":\"%s\"}]}}",
            name, name, labels, spec, cpu, mem_gi, gpus, ready ? "True" : "False");
    kb_test_sched_add_node(fx, json);
}

static void add_node(Fx *fx, const char *name, int gpus)
{
    add_node_full(fx, name, 32, 128, gpus, "", "", TRUE);
}

typedef struct {
    const char *ns;
    const char *group;     /* pod group (annotation), or NULL */
    const char *requests;  /* JSON members, e.g. "\"cpu\":\"1\",\"nvidia.com/gpu\":1" */
    const char *node;      /* spec.nodeName or NULL */
    const char *phase;     /* status.phase, default Pending */
    const char *scheduler; /* default kube-batchd */
    const char *spec;      /* extra spec members (with a leading comma) or NULL */
    const char *pc;        /* priorityClassName or NULL */
    gboolean terminating;  /* metadata.deletionTimestamp set (evicted or deleted) */
} PodOpts;

static void add_pod(Fx *fx, const char *name, const PodOpts *po)
{
    const char *ns = po->ns != NULL ? po->ns : "default";
    g_autofree char *ann =
            po->group != NULL
                    ? g_strdup_printf("\"scheduling.k8s.io/group-name\":\"%s\"", po->group)
                    : g_strdup("");
    g_autofree char *node =
            po->node != NULL ? g_strdup_printf(",\"nodeName\":\"%s\"", po->node) : g_strdup("");
    g_autofree char *pc = po->pc != NULL ? g_strdup_printf(",\"priorityClassName\":\"%s\"", po->pc)
                                         : g_strdup("");
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
            "\"%s\","
            "\"uid\":\"u-%s-%s\",\"creationTimestamp\":\"2026-01-01T00:%02u:%02uZ\",%s"
            "\"annotations\":{%s}},"
            "\"spec\":{\"schedulerName\":\"%s\"%s%s%s,\"containers\":[{\"name\":\"c\","
            "\"resources\":"
            "{\"requests\":{%s}}}]},\"status\":{\"phase\":\"%s\"}}",
            name, ns, ns, name, (fx->seq / 60) % 60, fx->seq % 60,
            po->terminating ? "\"deletionTimestamp\":\"2026-01-01T01:00:00Z\"," : "", ann,
            po->scheduler != NULL ? po->scheduler : "kube-batchd", node, pc,
            po->spec != NULL ? po->spec : "", po->requests != NULL ? po->requests : "\"cpu\":\"1\"",
            po->phase != NULL ? po->phase : "Pending");
    fx->seq++;
    kb_test_sched_put_pod(fx, kb_test_sched_parse(json));
}

/* @n pods "<prefix>-<i>" in group @group, each with @requests. */
static void add_gang_pods(Fx *fx, const char *ns, const char *group, guint n, const char *requests)
{
    for (guint i = 0; i < n; i++) {
        g_autofree char *name = g_strdup_printf("%s-%u", group, i);
        PodOpts po = {.ns = ns, .group = group, .requests = requests};
        add_pod(fx, name, &po);
    }
}

static void add_group_full(Fx *fx, const char *ns, const char *name, int min, const char *queue,
                           const char *extra_spec, const char *api)
{
    g_autofree char *q = queue != NULL ? g_strdup_printf(",\"queue\":\"%s\"", queue) : g_strdup("");
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"%s\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"%s\","
            "\"namespace\":\"%s\",\"uid\":\"pg-%s\",\"creationTimestamp\":\"2026-01-01T00:00:%"
            "02uZ\"},"
            "\"spec\":{\"minMember\":%d%s%s}}",
            api != NULL ? api : "scheduling.volcano.sh/v1beta1", name, ns, name, fx->seq++ % 60,
            min, q, extra_spec != NULL ? extra_spec : "");
    kb_test_sched_add_pod_group(fx, json);
}

static void add_group(Fx *fx, const char *ns, const char *name, int min, const char *queue)
{
    add_group_full(fx, ns, name, min, queue, NULL, NULL);
}

static void add_queue(Fx *fx, const char *name, int weight, const char *spec_extra)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\",\"metadata\":"
            "{\"name\":\"%s\",\"uid\":\"q-%s\"},\"spec\":{\"weight\":%d%s}}",
            name, name, weight, spec_extra != NULL ? spec_extra : "");
    kb_test_sched_add_queue(fx, json);
}

static void add_priority_class(Fx *fx, const char *name, int value, gboolean global_default)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":"
            "{\"name\":\"%s\",\"uid\":\"pc-%s\"},\"value\":%d,\"globalDefault\":%s}",
            name, name, value, global_default ? "true" : "false");
    kb_test_sched_add_priority_class(fx, json);
}

static const KbJobStatus *status(Fx *fx, const char *key)
{
    const KbJobStatus *st = kb_cycle_result_job(fx->res, key);
    g_assert_nonnull(st);
    return st;
}

static void assert_message(Fx *fx, const char *key, const char *substr)
{
    const KbJobStatus *st = status(fx, key);
    if (st->message == NULL || strstr(st->message, substr) == NULL)
        g_error("job %s: message \"%s\" lacks \"%s\"", key,
                st->message != NULL ? st->message : "(none)", substr);
}

static guint node_gpus_used(Fx *fx, const char *node)
{
    KbNodeInfo *ni = kb_cache_lookup_node(fx->cache, node);
    g_assert_nonnull(ni);
    return (guint)(ni->used.v[KB_RES_GPU] / KB_GPU_MILLI);
}

#define GPU1 "\"cpu\":\"1\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":1"

/* ---- gang ----------------------------------------------------------------------------------- */

/* ---- native PodGroups (scheduling.k8s.io/v1beta1) ------------------------------------------- */

#define RACK "topology.kubernetes.io/rack"

static void add_native_group(Fx *fx, const char *name, int min, const char *topology)
{
    g_autofree char *c = topology != NULL ? g_strdup_printf(",\"schedulingConstraints\":{"
                                                            "\"topology\":[{\"key\":\"%s\"}]}",
                                                            topology)
                                          : g_strdup("");
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"
            "\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"pg-%s\"},\"spec\":{"
            "\"schedulingPolicy\":{\"gang\":{\"minCount\":%d}}%s}}",
            name, name, min, c);
    kb_test_sched_add_pod_group(fx, json);
}

/* A native gang (pods naming it in spec.schedulingGroup) with a topology key lands inside one
 * domain of the label: rack-a cannot hold it, rack-b can; the same gang without the key spreads
 * from the first node on. */
static void test_native_topology_one_rack(void)
{
    for (int constrained = 0; constrained < 2; constrained++) {
        Fx *fx = kb_test_sched_new(NULL);
        add_node_full(fx, "a1", 32, 128, 2, "\"" RACK "\":\"rack-a\"", "", TRUE);
        add_node_full(fx, "b1", 32, 128, 2, "\"" RACK "\":\"rack-b\"", "", TRUE);
        add_node_full(fx, "b2", 32, 128, 2, "\"" RACK "\":\"rack-b\"", "", TRUE);
        add_node_full(fx, "x1", 32, 128, 4, "", "", TRUE); /* no rack label */
        add_native_group(fx, "tf", 4, constrained ? RACK : NULL);
        for (int i = 0; i < 4; i++) {
            g_autofree char *name = g_strdup_printf("tf-%d", i);
            PodOpts po = {.requests = GPU1,
                          .spec = ",\"schedulingGroup\":{\"podGroupName\":\"tf\"}"};
            add_pod(fx, name, &po);
        }
        kb_test_sched_run(fx);
        g_assert_cmpuint(kb_test_sched_binds(fx, "default/tf"), ==, 4);
        guint in_b = 0;
        for (int i = 0; i < 4; i++) {
            g_autofree char *name = g_strdup_printf("tf-%d", i);
            const char *node = kb_test_sched_bound_node(fx, "default", name);
            in_b += g_str_has_prefix(node, "b");
        }
        if (constrained)
            g_assert_cmpuint(in_b, ==, 4);
        else
            g_assert_cmpuint(in_b, <, 4);
        kb_test_sched_free(fx);
    }
}

/* ---- sub-gangs: Volcano's subGroupPolicy ---------------------------------------------------- */

/*
 * Racks r0..r3 of two 4-GPU nodes each (r3's nodes have @r3_gpus each), one unlabelled node
 * for the chief. Job "tf": a chief and 4 groups of 8 workers (labels role, group), minMember
 * 25, workers split by their group label, 8 a sub-group, 3 needed, each inside one rack.
 */
static Fx *sub_group_fixture(int r3_gpus, int racks_with_room)
{
    Fx *fx = kb_test_sched_new(NULL);
    for (int r = 0; r < 4; r++) {
        for (int n = 0; n < 2; n++) {
            g_autofree char *name = g_strdup_printf("r%d-n%d", r, n);
            g_autofree char *labels = g_strdup_printf("\"" RACK "\":\"r%d\"", r);
            int gpus = r == 3 ? r3_gpus : r < racks_with_room ? 4 : 2;
            add_node_full(fx, name, 32, 128, gpus, labels, "", TRUE);
        }
    }
    add_node_full(fx, "chief-node", 32, 128, 1, "", "", TRUE);
    add_group_full(fx, "default", "tf", 25, NULL,
                   ",\"subGroupPolicy\":[{\"name\":\"workers\",\"subGroupSize\":8,"
                   "\"minSubGroups\":3,\"labelSelector\":{\"matchLabels\":{\"role\":\"worker\"}},"
                   "\"matchLabelKeys\":[\"group\"],\"networkTopology\":{\"mode\":\"hard\","
                   "\"highestTierName\":\"" RACK "\"}}]",
                   NULL);
    for (int i = -1; i < 32; i++) {
        g_autofree char *name =
                i < 0 ? g_strdup("tf-chief") : g_strdup_printf("tf-w%d-%d", i / 8, i % 8);
        g_autofree char *labels =
                i < 0 ? g_strdup("\"role\":\"chief\"")
                      : g_strdup_printf("\"role\":\"worker\",\"group\":\"g%d\"", i / 8);
        g_autofree char *json = g_strdup_printf(
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
                "\"namespace\":\"default\",\"uid\":\"u-%s\",\"creationTimestamp\":"
                "\"2026-01-01T00:00:%02dZ\",\"labels\":{%s},\"annotations\":{"
                "\"scheduling.k8s.io/group-name\":\"tf\"}},\"spec\":{\"schedulerName\":"
                "\"kube-batchd\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{" GPU1
                "}}}]},\"status\":{\"phase\":\"Pending\"}}",
                name, name, i + 1, labels);
        kb_test_sched_put_pod(fx, kb_test_sched_parse(json));
    }
    return fx;
}

/* Workers of group @g placed by the last cycle, and in how many racks. */
static guint sub_group_placed(Fx *fx, int g, guint *n_racks)
{
    g_autoptr(GHashTable) racks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint n = 0;
    for (int i = 0; i < 8; i++) {
        g_autofree char *name = g_strdup_printf("tf-w%d-%d", g, i);
        const char *node = kb_test_sched_bound_node(fx, "default", name);
        if (node == NULL)
            continue;
        n++;
        g_hash_table_add(racks, g_strndup(node, 2));
    }
    *n_racks = g_hash_table_size(racks);
    return n;
}

/* Three racks with room: the chief and 3 whole groups start, each group inside one rack; the
 * fourth group gets nothing (no rack holds 8), not the 4 GPUs that are free. */
static void test_sub_groups_three_of_four(void)
{
    Fx *fx = sub_group_fixture(2, 3);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/tf"), ==, 25);
    g_assert_nonnull(kb_test_sched_bound_node(fx, "default", "tf-chief"));
    guint whole = 0, none = 0;
    for (int g = 0; g < 4; g++) {
        guint racks = 0, n = sub_group_placed(fx, g, &racks);
        g_assert_true(n == 0 || n == 8);
        if (n == 8) {
            g_assert_cmpuint(racks, ==, 1);
            whole++;
        } else {
            none++;
        }
    }
    g_assert_cmpuint(whole, ==, 3);
    g_assert_cmpuint(none, ==, 1);
    kb_test_sched_free(fx);
}

/* Two racks with room: 2 of the 3 groups the job needs; nothing at all binds although 20 GPUs
 * are free (chief and two groups would fit), and the message says which policy fell short. */
static void test_sub_groups_too_few(void)
{
    Fx *fx = sub_group_fixture(2, 2);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    assert_message(fx, "default/tf",
                   "sub-group policy \"workers\": 2/3 sub-groups placeable whole inside one " RACK);
    kb_test_sched_free(fx);
}

/* Four racks with room: the minimum takes 3 groups, the second round adds the fourth whole. */
static void test_sub_groups_growth_whole(void)
{
    Fx *fx = sub_group_fixture(4, 3);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/tf"), ==, 33);
    for (int g = 0; g < 4; g++) {
        guint racks = 0;
        g_assert_cmpuint(sub_group_placed(fx, g, &racks), ==, 8);
        g_assert_cmpuint(racks, ==, 1);
    }
    kb_test_sched_free(fx);
}

/* ---- sub-gangs: CompositePodGroup scheduling.k8s.io/v1alpha3 ----------------------------- */

#define V1ALPHA3 "\"apiVersion\":\"scheduling.k8s.io/v1alpha3\""

static void add_composite(Fx *fx, const char *name, int min_groups)
{
    g_autofree char *json = g_strdup_printf(
            "{" V1ALPHA3 ",\"kind\":\"CompositePodGroup\",\"metadata\":{\"name\":\"%s\","
            "\"namespace\":\"default\",\"uid\":\"cpg-%s\"},\"spec\":{\"workloadRef\":{"
            "\"workloadName\":\"%s\",\"templateName\":\"all\"},\"schedulingPolicy\":{\"gang\":{"
            "\"minGroupCount\":%d}}}}",
            name, name, name, min_groups);
    json_object *o = kb_test_sched_parse(json);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPodGroup) cpg = kb_composite_pod_group_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    kb_cache_add_pod_group(fx->cache, cpg);
}

/* A v1alpha3 PodGroup of @min_count inside one rack, child of @parent (none when NULL). */
static void add_child(Fx *fx, const char *name, const char *parent, int min_count)
{
    g_autofree char *p =
            parent != NULL ? g_strdup_printf("\"parentCompositePodGroupName\":\"%s\",", parent)
                           : g_strdup("");
    g_autofree char *json = g_strdup_printf(
            "{" V1ALPHA3 ",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
            "\"default\",\"uid\":\"pg-%s\"},\"spec\":{%s\"schedulingPolicy\":{\"gang\":{"
            "\"minCount\":%d}},\"schedulingConstraints\":{\"topology\":[{\"key\":\"" RACK "\"}]}}}",
            name, name, p, min_count);
    kb_test_sched_add_pod_group(fx, json);
}

static void add_member(Fx *fx, const char *name, const char *group)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
            "\"default\",\"uid\":\"u-%s\",\"creationTimestamp\":\"2026-01-01T00:00:01Z\"},"
            "\"spec\":{\"schedulerName\":\"kube-batchd\",\"schedulingGroup\":{\"podGroupName\":"
            "\"%s\"},\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{" GPU1 "}}}]},"
            "\"status\":{\"phase\":\"Pending\"}}",
            name, name, group);
    kb_test_sched_put_pod(fx, kb_test_sched_parse(json));
}

/*
 * Racks r0..r3 of one node each: 2 GPUs in the first @racks_with_room, 1 in the others.
 * Composite "train" (minGroupCount 3) over children train-g0..g3 of 2 one-GPU pods each (gang
 * minCount 2, inside one rack). The pods come first, then the children, then the composite: the
 * pods move from their groups' jobs into the composite's as the parent links appear.
 */
static Fx *composite_fixture(int racks_with_room)
{
    Fx *fx = kb_test_sched_new(NULL);
    for (int r = 0; r < 4; r++) {
        g_autofree char *name = g_strdup_printf("r%d-n0", r);
        g_autofree char *labels = g_strdup_printf("\"" RACK "\":\"r%d\"", r);
        add_node_full(fx, name, 32, 128, r < racks_with_room ? 2 : 1, labels, "", TRUE);
    }
    for (int g = 0; g < 4; g++) {
        for (int i = 0; i < 2; i++) {
            g_autofree char *pod = g_strdup_printf("train-g%d-%d", g, i);
            g_autofree char *group = g_strdup_printf("train-g%d", g);
            add_member(fx, pod, group);
        }
    }
    for (int g = 0; g < 4; g++) {
        g_autofree char *group = g_strdup_printf("train-g%d", g);
        add_child(fx, group, "train", 2);
    }
    add_composite(fx, "train", 3);
    return fx;
}

/* Room for 3 children: 3 bind whole, each inside one rack; the fourth gets nothing, not the
 * one GPU each of its rack's node and another rack's have free. */
static void test_composite_three_of_four(void)
{
    Fx *fx = composite_fixture(3);
    KbJobInfo *job = kb_cache_lookup_job(fx->cache, "default", "train");
    g_assert_nonnull(job);
    g_assert_true(job->is_composite);
    g_assert_cmpuint(job->tasks->len, ==, 8);
    g_assert_null(kb_cache_lookup_job(fx->cache, "default", "train-g0"));
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/train"), ==, 6);
    guint whole = 0;
    for (int g = 0; g < 4; g++) {
        g_autofree char *a = g_strdup_printf("train-g%d-0", g);
        g_autofree char *b = g_strdup_printf("train-g%d-1", g);
        const char *na = kb_test_sched_bound_node(fx, "default", a);
        const char *nb = kb_test_sched_bound_node(fx, "default", b);
        g_assert_true((na == NULL) == (nb == NULL));
        if (na != NULL) {
            g_assert_cmpstr(na, ==, nb);
            whole++;
        }
    }
    g_assert_cmpuint(whole, ==, 3);
    /* the composite's status once bound: its children, 3 scheduled, the composite too */
    kb_test_sched_confirm_all(fx, FALSE);
    kb_test_sched_run(fx);
    const KbJobStatus *st = status(fx, "default/train");
    g_assert_nonnull(st->children);
    g_assert_cmpuint(st->children->len, ==, 4);
    g_assert_cmpuint(st->n_children_scheduled, ==, 3);
    g_assert_true(st->initially_scheduled);
    for (guint i = 0; i < st->children->len; i++) {
        const KbChildStatus *cs = &g_array_index(st->children, KbChildStatus, i);
        g_assert_cmpuint(cs->n_pods, ==, 2);
        g_assert_true(cs->initially_scheduled == (cs->n_bound == 2));
    }
    kb_test_sched_free(fx);
}

/* Room for 2 children of the 3 needed: nothing binds, and the message says so. */
static void test_composite_too_few(void)
{
    Fx *fx = composite_fixture(2);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    /* the children that fall short by name, not a task count against the composite's 1 */
    assert_message(fx, "default/train",
                   "CompositePodGroup \"train\": 2/3 child PodGroups placeable whole, each inside "
                   "one " RACK " (short: train-g");
    const char *msg = status(fx, "default/train")->message;
    g_assert_true(g_str_has_prefix(msg, "CompositePodGroup"));
    const char *shorts = strstr(msg, "(short: ");
    g_assert_nonnull(strchr(shorts, ','));
    g_assert_nonnull(strstr(shorts, "; train-g"));
    g_assert_cmpuint(status(fx, "default/train")->n_children_scheduled, ==, 0);
    g_assert_false(status(fx, "default/train")->initially_scheduled);
    kb_test_sched_free(fx);
}

/* Without the composite the children wait (no child starts alone); without their parent link
 * they are gangs of their own again: the two that fit start. */
static void test_composite_missing_waits(void)
{
    Fx *fx = composite_fixture(2);
    KbPodGroup fake = {.meta = {.namespace_ = "default", .name = "train"}, .composite = TRUE};
    kb_cache_delete_pod_group(fx->cache, &fake);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    for (int g = 0; g < 4; g++) {
        g_autofree char *group = g_strdup_printf("train-g%d", g);
        add_child(fx, group, NULL, 2);
    }
    g_assert_null(kb_cache_lookup_job(fx->cache, "default", "train"));
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 4);
    kb_test_sched_free(fx);
}

/* A child's pod placed but not bound stays in the composite's job when the child leaves it;
 * the pending one moves to the child's own job. */
static void test_composite_placed_pod_stays(void)
{
    Fx *fx = composite_fixture(3);
    KbJobInfo *job = kb_cache_lookup_job(fx->cache, "default", "train");
    KbTaskInfo *placed = kb_cache_lookup_task(fx->cache, "default", "train-g0-0");
    g_assert_true(placed->job == job);
    kb_cache_assume_task(fx->cache, placed, kb_cache_lookup_node(fx->cache, "r0-n0")->id);
    add_child(fx, "train-g0", NULL, 2);
    g_assert_true(kb_cache_lookup_task(fx->cache, "default", "train-g0-0") == placed);
    g_assert_true(placed->job == job);
    g_assert_cmpint(placed->state, ==, KB_TASK_ALLOCATED);
    KbTaskInfo *moved = kb_cache_lookup_task(fx->cache, "default", "train-g0-1");
    g_assert_true(moved->job == kb_cache_lookup_job(fx->cache, "default", "train-g0"));
    g_assert_false(moved->job->is_composite);
    g_assert_cmpuint(job->tasks->len, ==, 7);
    kb_test_sched_free(fx);
}

/* ---- pods resized in place ------------------------------------------------------------------ */

/* A running pod whose spec asks 2 GPUs but whose node still holds 4 for it (resized down, not yet
 * applied: status.containerStatuses[].allocatedResources) leaves 4 of 8 free: a pending pod of 5
 * waits; once the status says 2, it binds. */
static void test_resized_pod_holds_allocated(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    static const char *const fmt =
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"big\","
            "\"namespace\":\"default\",\"uid\":\"u-big\"},\"spec\":{\"schedulerName\":"
            "\"kube-batchd\",\"nodeName\":\"n1\",\"containers\":[{\"name\":\"main\","
            "\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":2}}}]},\"status\":{"
            "\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"main\","
            "\"allocatedResources\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"%d\"}}]}}";
    g_autofree char *held4 = g_strdup_printf(fmt, 4);
    kb_test_sched_put_pod(fx, kb_test_sched_parse(held4));
    PodOpts po = {.requests = "\"cpu\":\"1\",\"nvidia.com/gpu\":5"};
    add_pod(fx, "five", &po);
    kb_test_sched_run(fx);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 4);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_autofree char *held2 = g_strdup_printf(fmt, 2);
    kb_test_sched_put_pod(fx, kb_test_sched_parse(held2));
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/five"), ==, 1);
    kb_test_sched_free(fx);
}

/* The queue of a native group: its own label kube-batchd.io/queue, else its Workload's (which
 * may come before or after the group, and go), else the default queue. */
static void test_native_queue_from_workload(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_queue(fx, "research", 1, NULL);
    add_queue(fx, "infra", 1, NULL);
    static const char *const groups[] = {"tf", "own"};
    for (guint g = 0; g < G_N_ELEMENTS(groups); g++) {
        g_autofree char *json = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"pg-%s\"%s},"
                "\"spec\":{\"workloadRef\":{\"workloadName\":\"train\",\"templateName\":\"w\"},"
                "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}}}}",
                groups[g], groups[g],
                g == 1 ? ",\"labels\":{\"kube-batchd.io/queue\":\"infra\"}" : "");
        kb_test_sched_add_pod_group(fx, json);
        g_autofree char *pod = g_strdup_printf("%s-0", groups[g]);
        g_autofree char *spec =
                g_strdup_printf(",\"schedulingGroup\":{\"podGroupName\":\"%s\"}", groups[g]);
        PodOpts po = {.requests = GPU1, .spec = spec};
        add_pod(fx, pod, &po);
    }
    kb_test_sched_run(fx);
    g_assert_cmpstr(status(fx, "default/tf")->queue, ==, "default");
    json_object *o = kb_test_sched_parse(
            "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"Workload\",\"metadata\":{"
            "\"name\":\"train\",\"namespace\":\"default\",\"labels\":{\"kube-batchd.io/queue\":"
            "\"research\"}},\"spec\":{}}");
    g_autoptr(GError) error = NULL;
    KbObjectMeta *w = kb_meta_object_decode(o, FALSE, &error);
    g_assert_no_error(error);
    json_object_put(o);
    kb_cache_set_workload(fx->cache, w);
    kb_test_sched_run(fx);
    g_assert_cmpstr(status(fx, "default/tf")->queue, ==, "research");
    g_assert_cmpstr(status(fx, "default/own")->queue, ==, "infra");
    kb_cache_delete_workload(fx->cache, w);
    kb_test_sched_run(fx);
    g_assert_cmpstr(status(fx, "default/tf")->queue, ==, "default");
    kb_object_unref(w);
    kb_test_sched_free(fx);
}

/* No rack holds the gang: nothing binds although the cluster has room, and the message says so. */
static void test_native_topology_no_domain(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node_full(fx, "a1", 32, 128, 2, "\"" RACK "\":\"rack-a\"", "", TRUE);
    add_node_full(fx, "b1", 32, 128, 3, "\"" RACK "\":\"rack-b\"", "", TRUE);
    add_native_group(fx, "tf", 4, RACK);
    for (int i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("tf-%d", i);
        PodOpts po = {.requests = GPU1, .spec = ",\"schedulingGroup\":{\"podGroupName\":\"tf\"}"};
        add_pod(fx, name, &po);
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/tf"), ==, 0);
    assert_message(fx, "default/tf", "3/4 tasks placeable inside one " RACK " (best rack-b)");
    kb_test_sched_free(fx);
}

static void test_gang_partial_then_node_added(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "tf", 10, NULL);
    add_gang_pods(fx, "default", "tf", 10, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpint(status(fx, "default/tf")->phase, ==, KB_JOB_PENDING);
    assert_message(fx, "default/tf", "nvidia.com/gpu");
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 0);
    add_node(fx, "n2", 8);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/tf"), ==, 10);
    /* Placed, not yet running: Inqueue (Volcano), with the Scheduled condition. */
    g_assert_cmpint(status(fx, "default/tf")->phase, ==, KB_JOB_INQUEUE);
    g_assert_cmpuint(status(fx, "default/tf")->n_running, ==, 0);
    g_assert_cmpstr(status(fx, "default/tf")->reason, ==, "Scheduled");
    g_assert_cmpstr(status(fx, "default/tf")->message, ==, "10/10 tasks placed");
    g_assert_cmpuint(node_gpus_used(fx, "n1") + node_gpus_used(fx, "n2"), ==, 10);
    kb_test_sched_free(fx);
}

static void test_gang_partial_allocate_only(void)
{
    /* Without enqueue the statement itself must discard: 8 of 10 placeable, none bound. */
    Fx *fx = kb_test_sched_new("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
                               "  - name: predicates\n  - name: nodeorder\n");
    add_node(fx, "n1", 8);
    add_group(fx, "default", "tf", 10, NULL);
    add_gang_pods(fx, "default", "tf", 10, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpuint(fx->res->n_jobs_discarded, ==, 1);
    assert_message(fx, "default/tf",
                   "8/10 tasks placeable: no node fits: 1 node short of "
                   "nvidia.com/gpu");
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 0);
    KbTaskInfo *t = kb_cache_lookup_task(fx->cache, "default", "tf-0");
    g_assert_cmpint(t->state, ==, KB_TASK_PENDING);
    kb_test_sched_free(fx);
}

static void test_gang_min_below_size(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 5);
    add_group(fx, "default", "elastic", 4, NULL);
    add_gang_pods(fx, "default", "elastic", 6, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/elastic"), ==, 5);
    g_assert_cmpint(status(fx, "default/elastic")->phase, ==, KB_JOB_INQUEUE);
    kb_test_sched_confirm_all(fx, FALSE);
    kb_test_sched_run(fx);
    g_assert_cmpint(status(fx, "default/elastic")->phase, ==, KB_JOB_RUNNING);
    g_assert_cmpuint(status(fx, "default/elastic")->n_running, ==, 5);
    g_assert_cmpstr(status(fx, "default/elastic")->message, ==, "5/4 tasks placed");
    kb_test_sched_free(fx);
}

/*
 * Three gangs of minMember 2 with 5 pods each in one queue on 8 free GPUs: each starts at its
 * minimum (6 GPUs), and the 2 left go one each to the first jobs in order, not all to the first
 * job (which took all 8 when a job was placed whole before the next).
 */
static void test_gang_minimums_before_growth(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    const char *jobs[] = {"a", "b", "c"};
    for (guint i = 0; i < G_N_ELEMENTS(jobs); i++) {
        add_group(fx, "default", jobs[i], 2, NULL);
        add_gang_pods(fx, "default", jobs[i], 5, GPU1);
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/a"), ==, 3);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/b"), ==, 3);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/c"), ==, 2);
    g_assert_cmpuint(fx->res->n_jobs_placed, ==, 3);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 8);
    kb_test_sched_free(fx);
}

/*
 * Two jobs of minimum 1 and 20 pods on 4 x 8 GPUs take turns: 16 each, and no node holds more
 * than its 8 (each job keeps its own node candidates from turn to turn while the other fills
 * the same nodes).
 */
static void test_gang_growth_takes_turns(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    for (guint i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("n%u", i);
        add_node(fx, name, 8);
    }
    add_group(fx, "default", "a", 1, NULL);
    add_gang_pods(fx, "default", "a", 20, GPU1);
    add_group(fx, "default", "b", 1, NULL);
    add_gang_pods(fx, "default", "b", 20, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/a"), ==, 16);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/b"), ==, 16);
    for (guint i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("n%u", i);
        g_assert_cmpuint(node_gpus_used(fx, name), ==, 8);
    }
    kb_test_sched_free(fx);
}

/*
 * Growth stops at a job's first task that does not fit, and the others keep growing: a's extra
 * pods ask for 4 GPUs, b's for 1.
 */
static void test_gang_growth_skips_a_job_that_no_longer_fits(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "a", 1, NULL);
    add_gang_pods(fx, "default", "a", 1, GPU1);
    for (guint i = 1; i < 3; i++) {
        g_autofree char *name = g_strdup_printf("a-%u", i);
        PodOpts po = {.group = "a", .requests = "\"cpu\":\"1\",\"nvidia.com/gpu\":4"};
        add_pod(fx, name, &po);
    }
    add_group(fx, "default", "b", 1, NULL);
    add_gang_pods(fx, "default", "b", 6, GPU1);
    kb_test_sched_run(fx);
    /* Minimums: a-0 (1), b-0 (1); growth: a-1 (4), b-1, then a-2 (4) no longer fits, b grows. */
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/a"), ==, 2);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/b"), ==, 3);
    g_assert_null(kb_test_sched_bound_node(fx, "default", "a-2"));
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 8);
    kb_test_sched_free(fx);
}

static void test_gang_of_one(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 1);
    PodOpts po = {.requests = GPU1};
    add_pod(fx, "solo", &po);
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "default", "solo"), ==, "n1");
    const KbJobStatus *st = status(fx, "default/solo");
    g_assert_null(st->group);
    g_assert_nonnull(st->pod);
    kb_test_sched_free(fx);
}

static void test_gang_waiting_for_pods(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "tf", 8, NULL);
    add_gang_pods(fx, "default", "tf", 3, GPU1);
    PodOpts po = {.requests = GPU1};
    add_pod(fx, "other", &po);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/tf"), ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/other"), ==, 1);
    g_assert_cmpstr(status(fx, "default/tf")->reason, ==, "NotEnoughPods");
    assert_message(fx, "default/tf", "waiting for pods: 3/8");
    kb_test_sched_free(fx);
}

static void test_gang_group_missing_waits(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_gang_pods(fx, "default", "late", 2, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpstr(status(fx, "default/late")->reason, ==, "PodGroupNotFound");
    add_group(fx, "default", "late", 2, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/late"), ==, 2);
    kb_test_sched_free(fx);
}

static void test_gang_bind_failure_rolls_back(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "tf", 4, NULL);
    add_gang_pods(fx, "default", "tf", 4, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 4);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 4);
    /* One bind succeeds, then another fails for certain: only that pod goes back; the others
     * (bound, or with their bindings in flight) keep their GPUs. */
    g_assert_true(kb_cache_bind_succeeded(fx->cache, "default", "tf-0", "u-default-tf-0", fx->now));
    g_assert_true(kb_cache_pod_is_assumed(fx->cache, "default", "tf-2", "u-default-tf-2"));
    guint n = 0;
    g_assert_true(kb_cache_bind_failed(fx->cache, "default", "tf-1", "u-default-tf-1", &n));
    g_assert_cmpuint(n, ==, 1);
    g_assert_true(kb_cache_pod_is_assumed(fx->cache, "default", "tf-2", "u-default-tf-2"));
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 3);
    /* Unknown uid: ignored. */
    g_assert_false(kb_cache_bind_failed(fx->cache, "default", "tf-3", "other-uid", NULL));
    /* The next cycle places the released pod again (the gang is short one member). */
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/tf"), ==, 1);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 4);
    kb_test_sched_free(fx);
}

static void test_gang_assumed_until_confirmed(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "a", 8, NULL);
    add_gang_pods(fx, "default", "a", 8, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 8);
    PodOpts po = {.requests = GPU1};
    add_pod(fx, "late", &po);
    kb_test_sched_run(fx); /* the 8 are only assumed: their GPUs are still taken */
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    for (guint i = 0; i < 8; i++) {
        g_autofree char *name = g_strdup_printf("a-%u", i);
        g_autofree char *uid = g_strdup_printf("u-default-a-%u", i);
        g_assert_true(kb_cache_bind_succeeded(fx->cache, "default", name, uid, fx->now));
    }
    g_assert_cmpuint(kb_cache_expire_assumed(fx->cache, fx->now + 10, 30), ==, 0);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    /* Never confirmed by the watch: forgotten after the TTL, the GPUs come back. */
    g_assert_cmpuint(kb_cache_expire_assumed(fx->cache, fx->now + 100, 30), ==, 8);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 0);
    kb_test_sched_free(fx);
}

/* A Volcano PodGroup whose pods are bound (not yet running): nothing its status says changed
 * (phase, condition and counts are those of the cycle that placed it), so no second write. */
static void test_gang_bound_status_unchanged(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "tf", 2, NULL);
    add_gang_pods(fx, "default", "tf", 2, GPU1);
    kb_test_sched_run(fx);
    g_assert_true(status(fx, "default/tf")->changed);
    g_assert_false(status(fx, "default/tf")->initially_scheduled);
    for (guint i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("tf-%u", i);
        g_autofree char *uid = g_strdup_printf("u-default-tf-%u", i);
        g_assert_true(kb_cache_bind_succeeded(fx->cache, "default", name, uid, fx->now));
    }
    kb_test_sched_run(fx);
    g_assert_true(status(fx, "default/tf")->initially_scheduled);
    g_assert_false(status(fx, "default/tf")->changed);
    kb_test_sched_confirm_all(fx, FALSE);
    kb_test_sched_run(fx);
    kb_test_sched_free(fx);
}

static void test_gang_confirmed_status_stable(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "tf", 4, NULL);
    add_gang_pods(fx, "default", "tf", 4, GPU1);
    kb_test_sched_run(fx);
    g_assert_true(status(fx, "default/tf")->changed);
    kb_test_sched_confirm_all(fx, FALSE);
    KbTaskInfo *t = kb_cache_lookup_task(fx->cache, "default", "tf-0");
    g_assert_cmpint(t->state, ==, KB_TASK_RUNNING);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 4);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpint(status(fx, "default/tf")->phase, ==, KB_JOB_RUNNING);
    g_assert_cmpuint(status(fx, "default/tf")->n_running, ==, 4);
    kb_test_sched_run(fx);
    g_assert_false(status(fx, "default/tf")->changed);
    g_assert_cmpuint(fx->res->events->len, ==, 0);
    kb_test_sched_free(fx);
}

static void test_gang_completed(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "done", 2, NULL);
    for (guint i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("done-%u", i);
        PodOpts po = {.group = "done", .requests = GPU1, .node = "n1", .phase = "Succeeded"};
        add_pod(fx, name, &po);
    }
    kb_test_sched_run(fx);
    g_assert_cmpint(status(fx, "default/done")->phase, ==, KB_JOB_COMPLETED);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 0);
    kb_test_sched_free(fx);
}

/* Pod @group-@i of one GPU on n1, in @phase, terminating or not. */
static void put_node_pod(Fx *fx, const char *group, guint i, const char *phase,
                         gboolean terminating)
{
    g_autofree char *name = g_strdup_printf("%s-%u", group, i);
    PodOpts po = {.group = group,
                  .requests = GPU1,
                  .node = "n1",
                  .phase = phase,
                  .terminating = terminating};
    add_pod(fx, name, &po);
}

/* A running gang whose pods all terminate (evicted, or its job deleted) is not done: Pending, so
 * that it goes through admission again when its controller brings it back. A gang that succeeded
 * is Completed while its leftovers are deleted. */
static void test_gang_terminating(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "tf", 2, NULL);
    add_group(fx, "default", "done", 2, NULL);
    for (guint i = 0; i < 2; i++) {
        put_node_pod(fx, "tf", i, "Running", FALSE);
        put_node_pod(fx, "done", i, "Running", FALSE);
    }
    kb_test_sched_run(fx);
    g_assert_cmpint(status(fx, "default/tf")->phase, ==, KB_JOB_RUNNING);
    g_assert_cmpint(status(fx, "default/done")->phase, ==, KB_JOB_RUNNING);
    for (guint i = 0; i < 2; i++)
        put_node_pod(fx, "tf", i, "Running", TRUE);
    put_node_pod(fx, "done", 0, "Succeeded", FALSE);
    put_node_pod(fx, "done", 1, "Running", TRUE);
    kb_test_sched_run(fx);
    g_assert_cmpint(status(fx, "default/tf")->phase, ==, KB_JOB_PENDING);
    g_assert_cmpint(status(fx, "default/done")->phase, ==, KB_JOB_COMPLETED);
    kb_test_sched_free(fx);
}

static void test_gang_schedule_timeout(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 2);
    add_group_full(fx, "default", "big", 4, NULL, ",\"scheduleTimeoutSeconds\":5",
                   "scheduling.x-k8s.io/v1alpha1");
    add_gang_pods(fx, "default", "big", 4, GPU1);
    PodOpts po = {.requests = GPU1};
    add_pod(fx, "small", &po);
    kb_test_sched_run(fx);
    g_assert_cmpstr(status(fx, "default/big")->reason, ==, "NotEnoughResources");
    fx->now += 10;
    kb_test_sched_run(fx);
    g_assert_cmpstr(status(fx, "default/big")->reason, ==, "ScheduleTimeout");
    assert_message(fx, "default/big", "scheduleTimeoutSeconds=5");
    /* The timed-out gang never blocked the small pod. */
    g_assert_cmpuint(kb_cache_lookup_node(fx->cache, "n1")->used.v[KB_RES_GPU], ==, 1000);
    kb_test_sched_free(fx);
}

static void test_gang_events_once(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 2);
    add_group(fx, "default", "big", 4, NULL);
    add_gang_pods(fx, "default", "big", 4, GPU1);
    kb_test_sched_run(fx);
    guint pg = 0, pods = 0;
    for (guint i = 0; i < fx->res->events->len; i++) {
        const KbSchedEvent *ev = &g_array_index(fx->res->events, KbSchedEvent, i);
        if (strcmp(ev->kind, "PodGroup") == 0) {
            pg++;
            g_assert_cmpstr(ev->reason, ==, "Unschedulable");
            g_assert_cmpstr(ev->api_version, ==, "scheduling.volcano.sh/v1beta1");
        } else {
            pods++;
            g_assert_cmpstr(ev->reason, ==, "FailedScheduling");
            g_assert_cmpstr(ev->type, ==, "Warning");
            g_assert_nonnull(strstr(ev->message, "(4 pods of job default/big wait)"));
        }
    }
    /* Aggregated per job: one on the PodGroup, one FailedScheduling for the four pods. */
    g_assert_cmpuint(pg, ==, 1);
    g_assert_cmpuint(pods, ==, 1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->events->len, ==, 0);
    g_assert_false(status(fx, "default/big")->changed);
    kb_test_sched_free(fx);
}

static void test_gang_impossible_request(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    PodOpts big = {.requests = "\"nvidia.com/gpu\":16"};
    add_pod(fx, "huge", &big);
    PodOpts po = {.requests = GPU1};
    add_pod(fx, "fine", &po);
    kb_test_sched_run(fx);
    assert_message(fx, "default/huge", "requests 16 nvidia.com/gpu but no node has more than 8");
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/fine"), ==, 1);
    kb_test_sched_free(fx);
}

/* ---- queues --------------------------------------------------------------------------------- */

/* Queues weighted as given, each with more one-GPU jobs than the cluster holds, share the
 * contended GPUs in proportion; nothing is left idle by rounding. */
typedef struct {
    const char *name;
    guint nodes, gpus_per_node;
    guint weights[3];
    guint expect[3];
} ShareCase;

static const ShareCase share_cases[] = {
        {"1-3-over-8", 1, 8, {1, 3, 0}, {2, 6, 0}},
        {"1-3-over-40", 5, 8, {1, 3, 0}, {10, 30, 0}},
        {"1-1-1-over-9", 1, 9, {1, 1, 1}, {3, 3, 3}},
        {"1-2-over-8", 1, 8, {1, 2, 0}, {3, 5, 0}},
};

static void test_queue_weights_share(gconstpointer data)
{
    const ShareCase *c = data;
    Fx *fx = kb_test_sched_new(NULL);
    for (guint i = 0; i < c->nodes; i++) {
        g_autofree char *name = g_strdup_printf("n%u", i);
        add_node(fx, name, c->gpus_per_node);
    }
    static const char *const queues[] = {"a", "b", "c"};
    guint nq = 0, total = c->nodes * c->gpus_per_node;
    for (; nq < 3 && c->weights[nq] != 0; nq++)
        add_queue(fx, queues[nq], c->weights[nq], NULL);
    for (guint i = 0; i < total; i++) {
        for (guint q = 0; q < nq; q++) {
            g_autofree char *name = g_strdup_printf("%s%u", queues[q], i);
            add_group(fx, "default", name, 1, queues[q]);
            PodOpts po = {.group = name, .requests = GPU1};
            add_pod(fx, name, &po);
        }
    }
    kb_test_sched_run(fx);
    guint got[3] = {0};
    for (guint i = 0; i < fx->res->placements->len; i++) {
        const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
        got[p->job[strlen("default/")] - 'a']++;
    }
    for (guint q = 0; q < nq; q++)
        g_assert_cmpuint(got[q], ==, c->expect[q]);
    const KbQueueStatus *qa = NULL;
    for (guint i = 0; i < fx->res->queue_statuses->len; i++) {
        const KbQueueStatus *qs = &g_array_index(fx->res->queue_statuses, KbQueueStatus, i);
        if (strcmp(qs->name, "a") == 0)
            qa = qs;
    }
    g_assert_nonnull(qa);
    g_assert_cmpint(qa->allocated.v[KB_RES_GPU], ==, c->expect[0] * KB_GPU_MILLI);
    g_assert_cmpuint(qa->n_running, ==, c->expect[0]);
    g_assert_cmpuint(qa->n_pending + qa->n_inqueue, ==, total - c->expect[0]);
    kb_test_sched_free(fx);
}

/* Three equal queues over 16 GPUs deserve 6 each (5.33 rounded up), yet each holds one gang of
 * 8: a queue below its share may start a gang that takes it over the share, so two gangs run
 * instead of the cluster sitting idle with all three waiting. */
static void test_queue_gang_larger_than_share(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_node(fx, "n2", 8);
    static const char *const queues[] = {"a", "b", "c"};
    for (guint q = 0; q < 3; q++) {
        add_queue(fx, queues[q], 1, NULL);
        add_group(fx, "default", queues[q], 8, queues[q]);
        add_gang_pods(fx, "default", queues[q], 8, GPU1);
    }
    kb_test_sched_run(fx);
    guint started = 0;
    for (guint q = 0; q < 3; q++) {
        g_autofree char *job = g_strdup_printf("default/%s", queues[q]);
        guint n = kb_test_sched_binds(fx, job);
        g_assert_true(n == 0 || n == 8);
        started += n == 8;
    }
    g_assert_cmpuint(started, ==, 2);
    kb_test_sched_free(fx);
}

/* Members beyond a job's minMember are elastic: they only take what the queue deserves. */
static void test_queue_elastic_members_within_share(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_queue(fx, "a", 1, NULL);
    add_queue(fx, "b", 1, NULL);
    add_group(fx, "default", "elastic", 1, "a");
    add_gang_pods(fx, "default", "elastic", 8, GPU1);
    for (guint i = 0; i < 8; i++) {
        g_autofree char *name = g_strdup_printf("b%u", i);
        add_group(fx, "default", name, 1, "b");
        PodOpts po = {.group = name, .requests = GPU1};
        add_pod(fx, name, &po);
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/elastic"), ==, 4);
    kb_test_sched_free(fx);
}

static void test_queue_capability(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_queue(fx, "research", 1, ",\"capability\":{\"nvidia.com/gpu\":4}");
    add_group(fx, "default", "elastic", 1, "research");
    add_gang_pods(fx, "default", "elastic", 8, GPU1);
    add_group(fx, "default", "gang", 8, "research");
    add_gang_pods(fx, "default", "gang", 8, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/elastic"), ==, 4);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/gang"), ==, 0);
    assert_message(fx, "default/gang", "capability");
    kb_test_sched_free(fx);
}

static void test_queue_capability_message(void)
{
    Fx *fx = kb_test_sched_new("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
                               "  - name: proportion\n  - name: predicates\n");
    add_node(fx, "n1", 32);
    add_queue(fx, "research", 1, ",\"capability\":{\"nvidia.com/gpu\":16}");
    add_group(fx, "default", "tf", 8, "research");
    add_gang_pods(fx, "default", "tf", 8, "\"nvidia.com/gpu\":6");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    assert_message(fx, "default/tf",
                   "2/8 tasks placeable: queue \"research\" is at its "
                   "capability for nvidia.com/gpu (12/16)");
    kb_test_sched_free(fx);
}

static void test_queue_guarantee(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    for (guint i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("n%u", i);
        add_node(fx, name, 8);
    }
    add_queue(fx, "small", 1, ",\"guarantee\":{\"resource\":{\"nvidia.com/gpu\":16}}");
    add_queue(fx, "big", 10, NULL);
    for (guint i = 0; i < 32; i++) {
        for (guint q = 0; q < 2; q++) {
            g_autofree char *name = g_strdup_printf("%s%u", q == 0 ? "s" : "b", i);
            add_group(fx, "default", name, 1, q == 0 ? "small" : "big");
            PodOpts po = {.group = name, .requests = GPU1};
            add_pod(fx, name, &po);
        }
    }
    kb_test_sched_run(fx);
    guint ns = 0;
    for (guint i = 0; i < fx->res->placements->len; i++) {
        const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
        if (p->job[strlen("default/")] == 's')
            ns++;
    }
    g_assert_cmpuint(ns, >=, 16);
    kb_test_sched_free(fx);
}

static void test_queue_unknown(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "lost", 1, "nowhere");
    add_gang_pods(fx, "default", "lost", 1, GPU1);
    add_group(fx, "default", "ok", 1, NULL);
    add_gang_pods(fx, "default", "ok", 1, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/lost"), ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/ok"), ==, 1);
    g_assert_cmpstr(status(fx, "default/lost")->reason, ==, "QueueNotFound");
    assert_message(fx, "default/lost", "queue \"nowhere\" does not exist");
    add_queue(fx, "nowhere", 1, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/lost"), ==, 1);
    kb_test_sched_free(fx);
}

static void test_queue_closed(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_queue(fx, "shut", 1, ",\"state\":\"Closed\"");
    add_group(fx, "default", "j", 1, "shut");
    add_gang_pods(fx, "default", "j", 1, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpstr(status(fx, "default/j")->reason, ==, "QueueClosed");
    kb_test_sched_free(fx);
}

/* A deleted queue leaves the cache once (it was freed twice, crashing kube-batchd on the first
 * Queue deleted): the last queue takes its slot with its id, and a job there still binds. */
static void test_queue_deleted(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_queue(fx, "gone", 1, NULL);
    add_queue(fx, "mid", 1, NULL);
    add_queue(fx, "last", 1, NULL);
    KbQueueInfo *gone = kb_cache_lookup_queue(fx->cache, "gone");
    g_assert_nonnull(gone);
    guint slot = gone->id;
    kb_object_ref(gone->queue);
    g_autoptr(KbQueue) q = gone->queue;
    kb_cache_delete_queue(fx->cache, q);
    g_assert_null(kb_cache_lookup_queue(fx->cache, "gone"));
    KbQueueInfo *last = kb_cache_lookup_queue(fx->cache, "last");
    g_assert_cmpuint(last->id, ==, slot);
    g_assert_true(g_ptr_array_index(kb_cache_queues(fx->cache), slot) == last);
    kb_cache_delete_queue(fx->cache, q); /* again: nothing */
    add_group(fx, "default", "j", 1, "last");
    add_gang_pods(fx, "default", "j", 1, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/j"), ==, 1);
    kb_test_sched_free(fx);
}

static void test_queue_overused_gets_nothing(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_node(fx, "n2", 8);
    add_queue(fx, "a", 1, NULL);
    add_queue(fx, "b", 1, NULL);
    add_group(fx, "default", "arun", 1, "a");
    for (guint i = 0; i < 8; i++) {
        g_autofree char *name = g_strdup_printf("arun-%u", i);
        PodOpts po = {.group = "arun", .requests = GPU1, .node = "n1", .phase = "Running"};
        add_pod(fx, name, &po);
    }
    add_group(fx, "default", "amore", 1, "a");
    add_gang_pods(fx, "default", "amore", 8, GPU1);
    add_group(fx, "default", "bjob", 1, "b");
    add_gang_pods(fx, "default", "bjob", 8, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/amore"), ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/bjob"), ==, 8);
    assert_message(fx, "default/amore", "queue \"a\"");
    kb_test_sched_free(fx);
}

/* ---- priority and drf ----------------------------------------------------------------------- */

static void test_priority_order(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_priority_class(fx, "high", 1000, FALSE);
    add_group(fx, "default", "low", 8, NULL);
    add_gang_pods(fx, "default", "low", 8, GPU1);
    add_group_full(fx, "default", "urgent", 8, NULL, ",\"priorityClassName\":\"high\"", NULL);
    add_gang_pods(fx, "default", "urgent", 8, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/urgent"), ==, 8);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/low"), ==, 0);
    kb_test_sched_free(fx);
}

static void test_priority_pod_values(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_priority_class(fx, "high", 1000, FALSE);
    add_priority_class(fx, "normal", 7, TRUE);
    PodOpts a = {.pc = "high", .spec = ",\"priority\":5"};
    PodOpts b = {.pc = "high"};
    PodOpts c = {0};
    add_pod(fx, "a", &a);
    add_pod(fx, "b", &b);
    add_pod(fx, "c", &c);
    g_assert_cmpint(kb_cache_lookup_task(fx->cache, "default", "a")->priority, ==, 5);
    g_assert_cmpint(kb_cache_lookup_task(fx->cache, "default", "b")->priority, ==, 1000);
    g_assert_cmpint(kb_cache_lookup_task(fx->cache, "default", "c")->priority, ==, 7);
    kb_test_sched_free(fx);
}

static void test_priority_pods_without_group(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 1);
    PodOpts lo = {.requests = GPU1, .spec = ",\"priority\":1"};
    PodOpts hi = {.requests = GPU1, .spec = ",\"priority\":100"};
    add_pod(fx, "lo", &lo);
    add_pod(fx, "hi", &hi);
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "default", "hi"), ==, "n1");
    g_assert_null(kb_test_sched_bound_node(fx, "default", "lo"));
    kb_test_sched_free(fx);
}

static const char drf_conf[] = "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: drf\n"
                               "  - name: predicates\n";
static const char fifo_conf[] = "actions: \"allocate\"\ntiers:\n- plugins:\n"
                                "  - name: predicates\n";

/*
 * a runs 2 pods and b 1, each at its minimum (1) with one more pending; one GPU is free. Both
 * grow in the second round, in job order: drf gives it to b (the smaller dominant share), the
 * plain order to a (the older job).
 */
static void drf_case(const char *conf, const char *winner)
{
    Fx *fx = kb_test_sched_new(conf);
    add_node(fx, "n1", 4);
    add_group(fx, "default", "a", 1, NULL);
    PodOpts run_a = {.group = "a", .requests = GPU1, .node = "n1", .phase = "Running"};
    add_pod(fx, "a-0", &run_a);
    add_pod(fx, "a-1", &run_a);
    PodOpts pend_a = {.group = "a", .requests = GPU1};
    add_pod(fx, "a-2", &pend_a);
    add_group(fx, "default", "b", 1, NULL);
    PodOpts run_b = {.group = "b", .requests = GPU1, .node = "n1", .phase = "Running"};
    add_pod(fx, "b-0", &run_b);
    PodOpts pend_b = {.group = "b", .requests = GPU1};
    add_pod(fx, "b-1", &pend_b);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 1);
    g_assert_cmpuint(kb_test_sched_binds(fx, winner), ==, 1);
    kb_test_sched_free(fx);
}

static void test_drf_order(void)
{
    drf_case(drf_conf, "default/b");  /* b holds less: smallest dominant share */
    drf_case(fifo_conf, "default/a"); /* without drf: the older job */
}

/*
 * Without the gang plugin a job's minimum still goes first: a runs 1 pod (its minimum) and has
 * one more pending, b none of its minimum 1; the one free GPU goes to b, though a is older.
 */
static void test_minimum_first_without_gang(void)
{
    Fx *fx = kb_test_sched_new(fifo_conf);
    add_node(fx, "n1", 2);
    add_group(fx, "default", "a", 1, NULL);
    PodOpts run_a = {.group = "a", .requests = GPU1, .node = "n1", .phase = "Running"};
    add_pod(fx, "a-0", &run_a);
    PodOpts pend_a = {.group = "a", .requests = GPU1};
    add_pod(fx, "a-1", &pend_a);
    add_group(fx, "default", "b", 1, NULL);
    add_gang_pods(fx, "default", "b", 1, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 1);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/b"), ==, 1);
    kb_test_sched_free(fx);
}

/* ---- other schedulers, terminated pods ------------------------------------------------------ */

static void test_foreign_pods_consume(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    PodOpts f = {.requests = "\"nvidia.com/gpu\":6",
                 .node = "n1",
                 .phase = "Running",
                 .scheduler = "default-scheduler"};
    add_pod(fx, "foreign", &f);
    g_assert_null(kb_cache_lookup_task(fx->cache, "default", "foreign"));
    add_group(fx, "default", "tf", 4, NULL);
    add_gang_pods(fx, "default", "tf", 4, GPU1);
    PodOpts po = {.requests = GPU1};
    add_pod(fx, "one", &po);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/tf"), ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/one"), ==, 1);
    g_assert_null(kb_cache_lookup_job(fx->cache, "default", "foreign"));
    kb_test_sched_free(fx);
}

static void test_foreign_pod_terminated_releases(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    PodOpts f = {.requests = "\"nvidia.com/gpu\":8",
                 .node = "n1",
                 .phase = "Running",
                 .scheduler = "default-scheduler"};
    add_pod(fx, "foreign", &f);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 8);
    PodOpts done = f;
    done.phase = "Succeeded";
    json_object *o = kb_test_sched_parse(
            "{\"metadata\":{\"name\":\"foreign\",\"namespace\":\"default\",\"uid\":"
            "\"u-default-foreign\"},\"spec\":{\"schedulerName\":\"default-scheduler\","
            "\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"resources\":{"
            "\"requests\":{\"nvidia.com/gpu\":8}}}]},\"status\":{\"phase\":"
            "\"Succeeded\"}}");
    kb_test_sched_put_pod(fx, o);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 0);
    (void)done;
    kb_test_sched_free(fx);
}

static void test_pod_before_node(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    PodOpts f = {.requests = "\"nvidia.com/gpu\":3",
                 .node = "n1",
                 .phase = "Running",
                 .scheduler = "default-scheduler"};
    add_pod(fx, "early", &f);
    add_node(fx, "n1", 8);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 3);
    g_assert_cmpint(kb_cache_lookup_node(fx->cache, "n1")->idle.v[KB_RES_GPU], ==, 5000);
    kb_test_sched_free(fx);
}

static void test_pod_delete_releases(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "tf", 2, NULL);
    add_gang_pods(fx, "default", "tf", 2, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 2);
    json_object *o = g_hash_table_lookup(fx->pods, "default/tf-0");
    g_autoptr(KbPod) pod = kb_pod_decode(o, FALSE, NULL);
    kb_cache_delete_pod(fx->cache, pod);
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 1);
    g_assert_null(kb_cache_lookup_task(fx->cache, "default", "tf-0"));
    kb_test_sched_free(fx);
}

/* A finished job goes away whatever the order of deletes (the operator deletes pods, then the
 * PodGroup; the garbage collector may do it the other way round), and a job that remains keeps
 * its place in the job list. */
static void test_job_removed_when_group_and_pods_go(gconstpointer data)
{
    gboolean group_first = GPOINTER_TO_INT(data);
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group(fx, "default", "tf", 2, NULL);
    add_gang_pods(fx, "default", "tf", 2, GPU1);
    add_group(fx, "default", "other", 1, NULL);
    add_gang_pods(fx, "default", "other", 1, GPU1);
    kb_test_sched_run(fx);
    g_autoptr(GError) error = NULL;
    json_object *go =
            kb_test_sched_parse("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":"
                                "\"PodGroup\",\"metadata\":{\"name\":\"tf\",\"namespace\":"
                                "\"default\",\"uid\":\"pg-tf\"},\"spec\":{\"minMember\":2}}");
    g_autoptr(KbPodGroup) pg = kb_pod_group_decode(go, FALSE, &error);
    g_assert_no_error(error);
    json_object_put(go);
    if (group_first)
        kb_cache_delete_pod_group(fx->cache, pg);
    for (guint i = 0; i < 2; i++) {
        g_autofree char *key = g_strdup_printf("default/tf-%u", i);
        g_autoptr(KbPod) pod = kb_pod_decode(g_hash_table_lookup(fx->pods, key), FALSE, NULL);
        kb_cache_delete_pod(fx->cache, pod);
    }
    if (!group_first)
        kb_cache_delete_pod_group(fx->cache, pg);
    g_assert_null(kb_cache_lookup_job(fx->cache, "default", "tf"));
    g_assert_nonnull(kb_cache_lookup_job(fx->cache, "default", "other"));
    g_assert_cmpuint(node_gpus_used(fx, "n1"), ==, 1);
    kb_test_sched_run(fx);
    kb_test_sched_free(fx);
}

/* ---- scoring -------------------------------------------------------------------------------- */

static void score_case(const char *conf, const char *want)
{
    Fx *fx = kb_test_sched_new(conf);
    add_node(fx, "busy", 8);
    add_node(fx, "idle", 8);
    PodOpts f = {.requests = "\"cpu\":\"16\",\"memory\":\"64Gi\",\"nvidia.com/gpu\":6",
                 .node = "busy",
                 .phase = "Running",
                 .scheduler = "default-scheduler"};
    add_pod(fx, "foreign", &f);
    PodOpts po = {.requests = GPU1};
    add_pod(fx, "p", &po);
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "default", "p"), ==, want);
    kb_test_sched_free(fx);
}

static void test_nodeorder_least_requested(void)
{
    score_case(
            "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
            "  - name: predicates\n  - name: nodeorder\n    arguments:\n"
            "      nodeorder.leastrequested.weight: 1\n      nodeorder.mostrequested.weight: 0\n",
            "idle");
}

/* The built-in configuration packs: a GPU pod joins the node that is already busy, keeping
 * whole nodes free for the large gangs (see bench-trace's "spread" configuration). */
static void test_nodeorder_default_packs(void)
{
    score_case(NULL, "busy");
}

static void test_nodeorder_most_requested(void)
{
    score_case("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
               "  - name: predicates\n  - name: nodeorder\n    arguments:\n"
               "      nodeorder.leastrequested.weight: 0\n      nodeorder.mostrequested.weight: 2\n"
               "      nodeorder.balancedresource.weight: 0\n",
               "busy");
}

/* ---- binpack --------------------------------------------------------------------------------- */

#define BINPACK_CONF(args)                                                                         \
    "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"                         \
    "  - name: predicates\n  - name: binpack\n" args

/* Where least-requested spreads (the idle node), binpack packs (the busy one). */
static void test_binpack_packs(void)
{
    score_case("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
               "  - name: predicates\n  - name: nodeorder\n    arguments:\n"
               "      leastrequested.weight: 1\n      mostrequested.weight: 0\n"
               "      balancedresource.weight: 0\n",
               "idle");
    score_case(BINPACK_CONF(""), "busy");
    /* Volcano's weight 0 turns the score off: the nodes tie, and least-requested decides. */
    score_case("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
               "  - name: predicates\n  - name: nodeorder\n    arguments:\n"
               "      leastrequested.weight: 1\n      mostrequested.weight: 0\n"
               "      balancedresource.weight: 0\n"
               "  - name: binpack\n    arguments:\n      binpack.weight: 0\n",
               "idle");
}

typedef struct {
    const char *path;
    const char *args; /* binpack's arguments (YAML lines) */
    const char *want; /* the node a cpu + GPU pod goes to */
} BinpackCase;

/*
 * Node "cpuhot" has 24 of its 32 cores requested, node "gpuhot" 6 of its 8 GPUs; the pod asks
 * one core, 1Gi and one GPU. Volcano's weights: cpu and memory only by default; a resource
 * counts once listed in binpack.resources, with its own weight.
 */
static const BinpackCase binpack_cases[] = {
        {"/scheduler/binpack/weights/default-cpu-memory", "", "cpuhot"},
        {"/scheduler/binpack/weights/gpu-only",
         "    arguments:\n      binpack.cpu: 0\n      binpack.memory: 0\n"
         "      binpack.resources: nvidia.com/gpu\n",
         "gpuhot"},
        {"/scheduler/binpack/weights/gpu-weighted",
         "    arguments:\n      binpack.resources: nvidia.com/gpu, example.com/none\n"
         "      binpack.resources.nvidia.com/gpu: 10\n",
         "gpuhot"},
        {"/scheduler/binpack/weights/gpu-listed-weight-1",
         "    arguments:\n      binpack.cpu: 5\n      binpack.resources: nvidia.com/gpu\n",
         "cpuhot"},
};

static void test_binpack_weights(gconstpointer data)
{
    const BinpackCase *c = data;
    g_autofree char *conf = g_strdup_printf(BINPACK_CONF("%s"), c->args);
    Fx *fx = kb_test_sched_new(conf);
    add_node(fx, "cpuhot", 8);
    add_node(fx, "gpuhot", 8);
    PodOpts cpu = {.requests = "\"cpu\":\"24\",\"memory\":\"8Gi\"",
                   .node = "cpuhot",
                   .phase = "Running",
                   .scheduler = "default-scheduler"};
    add_pod(fx, "cpu-user", &cpu);
    PodOpts gpu = {.requests = "\"cpu\":\"1\",\"memory\":\"8Gi\",\"nvidia.com/gpu\":6",
                   .node = "gpuhot",
                   .phase = "Running",
                   .scheduler = "default-scheduler"};
    add_pod(fx, "gpu-user", &gpu);
    PodOpts po = {.requests = GPU1};
    add_pod(fx, "p", &po);
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "default", "p"), ==, c->want);
    kb_test_sched_free(fx);
}

/* ---- sla ------------------------------------------------------------------------------------- */

#define T_2026 1767225600 /* 2026-01-01T00:00:00Z */

typedef struct {
    const char *path;
    gboolean plugin;          /* sla configured */
    const char *argument;     /* its sla-waiting-time, or NULL */
    const char *early, *late; /* annotations (JSON members) of the groups created at 0 s, 10 s */
    gint64 now;               /* seconds after T_2026 */
    const char *first;        /* the job that gets the node */
} SlaCase;

static const SlaCase sla_cases[] = {
        {"/scheduler/sla/within-limit-no-opinion", TRUE, NULL, "", "\"sla-waiting-time\":\"1m\"",
         30, "early"},
        {"/scheduler/sla/overdue-goes-first", TRUE, NULL, "", "\"sla-waiting-time\":\"1m\"", 75,
         "late"},
        {"/scheduler/sla/argument-for-all", TRUE, "1m", "\"sla-waiting-time\":\"1h\"", "", 75,
         "late"},
        {"/scheduler/sla/annotation-over-argument", TRUE, "1m", "\"sla-waiting-time\":\"1h\"",
         "\"sla-waiting-time\":\"20s\"", 40, "late"},
        {"/scheduler/sla/volcano-key-first", TRUE, NULL, "",
         "\"volcano.sh/sla-waiting-time\":\"20s\",\"sla-waiting-time\":\"1h\"", 40, "late"},
        {"/scheduler/sla/malformed-annotation-argument-applies", TRUE, "20s",
         "\"sla-waiting-time\":\"1h\"", "\"sla-waiting-time\":\"soon\"", 40, "late"},
        {"/scheduler/sla/earliest-limit-first", TRUE, NULL, "\"sla-waiting-time\":\"1m\"",
         "\"sla-waiting-time\":\"5s\"", 75, "late"},
        {"/scheduler/sla/go-units", TRUE, NULL, "", "\"sla-waiting-time\":\"0.25m15000ms\"", 40,
         "late"},
        {"/scheduler/sla/without-plugin-ignored", FALSE, NULL, "", "\"sla-waiting-time\":\"5s\"",
         75, "early"},
};

static void add_sla_group(Fx *fx, const char *name, gint64 created, const char *annotations)
{
    g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(T_2026 + created);
    g_autofree char *ts = g_date_time_format(dt, "%Y-%m-%dT%H:%M:%SZ");
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"pg-%s\","
            "\"creationTimestamp\":\"%s\",\"annotations\":{%s}},\"spec\":{\"minMember\":8}}",
            name, name, ts, annotations);
    kb_test_sched_add_pod_group(fx, json);
    add_gang_pods(fx, "default", name, 8, GPU1);
}

/* Two gangs of 8 GPUs, one node of 8: the job order decides which one runs. */
static void test_sla_order(gconstpointer data)
{
    const SlaCase *c = data;
    g_autofree char *arg =
            c->argument != NULL
                    ? g_strdup_printf("    arguments:\n      sla-waiting-time: %s\n", c->argument)
                    : g_strdup("");
    g_autofree char *sla = c->plugin ? g_strdup_printf("  - name: sla\n%s", arg) : g_strdup("");
    g_autofree char *conf = g_strdup_printf(
            "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n"
            "  - name: gang\n  - name: conformance\n%s- plugins:\n  - name: drf\n"
            "  - name: predicates\n  - name: proportion\n  - name: nodeorder\n",
            sla);
    Fx *fx = kb_test_sched_new(conf);
    add_node(fx, "n1", 8);
    add_sla_group(fx, "early", 0, c->early);
    add_sla_group(fx, "late", 10, c->late);
    fx->now = T_2026 + c->now;
    kb_test_sched_run(fx);
    g_autofree char *key = g_strdup_printf("default/%s", c->first);
    g_assert_cmpuint(kb_test_sched_binds(fx, key), ==, 8);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 8);
    kb_test_sched_free(fx);
}

static void test_nodeorder_spread_gang(void)
{
    Fx *fx =
            kb_test_sched_new("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
                              "  - name: predicates\n  - name: nodeorder\n");
    for (guint i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("n%u", i);
        add_node(fx, name, 8);
    }
    add_group(fx, "default", "tf", 4, NULL);
    add_gang_pods(fx, "default", "tf", 4, GPU1);
    kb_test_sched_run(fx);
    for (guint i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("n%u", i);
        g_assert_cmpuint(node_gpus_used(fx, name), ==, 1);
    }
    kb_test_sched_free(fx);
}

static void test_nodeorder_binpack_gang(void)
{
    Fx *fx =
            kb_test_sched_new("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
                              "  - name: predicates\n  - name: nodeorder\n    arguments:\n"
                              "      leastrequested.weight: 0\n      mostrequested.weight: 1\n"
                              "      balancedresource.weight: 0\n");
    for (guint i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("n%u", i);
        add_node(fx, name, 8);
    }
    add_group(fx, "default", "tf", 8, NULL);
    add_gang_pods(fx, "default", "tf", 8, GPU1);
    kb_test_sched_run(fx);
    guint full = 0;
    for (guint i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("n%u", i);
        if (node_gpus_used(fx, name) == 8)
            full++;
    }
    g_assert_cmpuint(full, ==, 1);
    kb_test_sched_free(fx);
}

/* ---- predicates (table) --------------------------------------------------------------------- */

typedef struct {
    const char *path;
    const char *labels; /* node labels (JSON members) */
    const char *spec;   /* node spec members */
    gboolean ready;
    const char *pod_spec; /* pod spec members, leading comma */
    gboolean binds;
    const char *message; /* when not bound */
} PredCase;

#define TAINT(k, v, e) "\"taints\":[{\"key\":\"" k "\",\"value\":\"" v "\",\"effect\":\"" e "\"}]"
#define TOL(json)      ",\"tolerations\":[" json "]"
#define AFF(expr)                                                                                  \
    ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"        \
    "\"nodeSelectorTerms\":[{\"matchExpressions\":[" expr "]}]}}}"
#define ZONE "\"zone\":\"a\",\"rank\":\"5\""
/* One term given whole (matchExpressions and/or matchFields). */
#define AFF_TERM(term)                                                                             \
    ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"        \
    "\"nodeSelectorTerms\":[" term "]}}}"
#define NAME_IS(op, v)                                                                             \
    "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"" op "\",\"values\":[\"" v "\"]}]"
#define ZONE_IS(v)                                                                                 \
    "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"" v "\"]}]"

static const PredCase pred_cases[] = {
        {"/scheduler/predicates/taint/untolerated", "", TAINT("dedicated", "infra", "NoSchedule"),
         TRUE, "", FALSE, "no node fits: 1 node has taint dedicated=infra:NoSchedule"},
        {"/scheduler/predicates/taint/equal", "", TAINT("dedicated", "infra", "NoSchedule"), TRUE,
         TOL("{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"infra\","
             "\"effect\":\"NoSchedule\"}"),
         TRUE, NULL},
        {"/scheduler/predicates/taint/equal-wrong-value", "",
         TAINT("dedicated", "infra", "NoSchedule"), TRUE,
         TOL("{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"ml\"}"), FALSE,
         "1 node has taint dedicated=infra:NoSchedule"},
        {"/scheduler/predicates/taint/exists", "", TAINT("dedicated", "infra", "NoSchedule"), TRUE,
         TOL("{\"key\":\"dedicated\",\"operator\":\"Exists\"}"), TRUE, NULL},
        {"/scheduler/predicates/taint/wildcard", "", TAINT("dedicated", "infra", "NoExecute"), TRUE,
         TOL("{\"operator\":\"Exists\"}"), TRUE, NULL},
        {"/scheduler/predicates/taint/no-execute", "", TAINT("gpu", "bad", "NoExecute"), TRUE, "",
         FALSE, "taint gpu=bad:NoExecute"},
        {"/scheduler/predicates/taint/effect-mismatch", "", TAINT("gpu", "bad", "NoExecute"), TRUE,
         TOL("{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}"), FALSE,
         "taint"},
        {"/scheduler/predicates/taint/prefer-no-schedule", "",
         TAINT("soft", "x", "PreferNoSchedule"), TRUE, "", TRUE, NULL},
        {"/scheduler/predicates/node-selector/match", ZONE, "", TRUE,
         ",\"nodeSelector\":{\"zone\":\"a\"}", TRUE, NULL},
        {"/scheduler/predicates/node-selector/mismatch", ZONE, "", TRUE,
         ",\"nodeSelector\":{\"zone\":\"b\"}", FALSE, "1 node does not match nodeSelector"},
        {"/scheduler/predicates/node-selector/missing-label", "", "", TRUE,
         ",\"nodeSelector\":{\"zone\":\"a\"}", FALSE, "nodeSelector"},
        {"/scheduler/predicates/affinity/in", ZONE, "", TRUE,
         AFF("{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"b\",\"a\"]}"), TRUE, NULL},
        {"/scheduler/predicates/affinity/in-miss", ZONE, "", TRUE,
         AFF("{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"b\"]}"), FALSE,
         "does not match node affinity"},
        {"/scheduler/predicates/affinity/not-in", ZONE, "", TRUE,
         AFF("{\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"a\"]}"), FALSE, "affinity"},
        {"/scheduler/predicates/affinity/not-in-absent", "", "", TRUE,
         AFF("{\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"a\"]}"), TRUE, NULL},
        {"/scheduler/predicates/affinity/exists", ZONE, "", TRUE,
         AFF("{\"key\":\"zone\",\"operator\":\"Exists\"}"), TRUE, NULL},
        {"/scheduler/predicates/affinity/does-not-exist", ZONE, "", TRUE,
         AFF("{\"key\":\"zone\",\"operator\":\"DoesNotExist\"}"), FALSE, "affinity"},
        {"/scheduler/predicates/affinity/gt", ZONE, "", TRUE,
         AFF("{\"key\":\"rank\",\"operator\":\"Gt\",\"values\":[\"4\"]}"), TRUE, NULL},
        {"/scheduler/predicates/affinity/gt-miss", ZONE, "", TRUE,
         AFF("{\"key\":\"rank\",\"operator\":\"Gt\",\"values\":[\"5\"]}"), FALSE, "affinity"},
        {"/scheduler/predicates/affinity/lt", ZONE, "", TRUE,
         AFF("{\"key\":\"rank\",\"operator\":\"Lt\",\"values\":[\"10\"]}"), TRUE, NULL},
        {"/scheduler/predicates/affinity/lt-not-a-number", "\"rank\":\"high\"", "", TRUE,
         AFF("{\"key\":\"rank\",\"operator\":\"Lt\",\"values\":[\"10\"]}"), FALSE, "affinity"},
        /* matchFields: metadata.name is the node's name (n1), never a label of that name. */
        {"/scheduler/predicates/affinity/field-in", "", "", TRUE,
         AFF_TERM("{" NAME_IS("In", "n1") "}"), TRUE, NULL},
        {"/scheduler/predicates/affinity/field-in-miss", "", "", TRUE,
         AFF_TERM("{" NAME_IS("In", "n2") "}"), FALSE, "1 node does not match node affinity"},
        {"/scheduler/predicates/affinity/field-not-in", "", "", TRUE,
         AFF_TERM("{" NAME_IS("NotIn", "n1") "}"), FALSE, "does not match node affinity"},
        {"/scheduler/predicates/affinity/field-not-in-other", "", "", TRUE,
         AFF_TERM("{" NAME_IS("NotIn", "n2") "}"), TRUE, NULL},
        {"/scheduler/predicates/affinity/field-not-a-label", "\"metadata.name\":\"n2\"", "", TRUE,
         AFF_TERM("{" NAME_IS("In", "n1") "}"), TRUE, NULL},
        {"/scheduler/predicates/affinity/label-not-a-field", "", "", TRUE,
         AFF("{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}"), FALSE,
         "does not match node affinity"},
        {"/scheduler/predicates/affinity/field-and-expression", ZONE, "", TRUE,
         AFF_TERM("{" ZONE_IS("a") "," NAME_IS("In", "n1") "}"), TRUE, NULL},
        {"/scheduler/predicates/affinity/field-and-expression-miss", ZONE, "", TRUE,
         AFF_TERM("{" ZONE_IS("b") "," NAME_IS("In", "n1") "}"), FALSE,
         "does not match node affinity"},
        {"/scheduler/predicates/affinity/field-or-expression", ZONE, "", TRUE,
         AFF_TERM("{" ZONE_IS("b") "},{" NAME_IS("In", "n1") "}"), TRUE, NULL},
        {"/scheduler/predicates/unschedulable", "", "\"unschedulable\":true", TRUE, "", FALSE,
         "1 node unschedulable"},
        {"/scheduler/predicates/unschedulable-tolerated", "", "\"unschedulable\":true", TRUE,
         TOL("{\"key\":\"node.kubernetes.io/unschedulable\",\"operator\":\"Exists\","
             "\"effect\":\"NoSchedule\"}"),
         TRUE, NULL},
        {"/scheduler/predicates/not-ready", "", "", FALSE, "", FALSE, "1 node not Ready"},
        {"/scheduler/predicates/resources/more-than-any-node", "", "", TRUE,
         ",\"overhead\":{\"nvidia.com/gpu\":\"8\"}", FALSE,
         "pod default/p requests 9 nvidia.com/gpu but no node has more than 8"},
};

/*
 * Node counts in the message are exact: 1,000 full nodes, 2 of them in zone a. A pod of zone a
 * fails 998 nodes on node affinity and 2 on GPUs, whichever full neighbour shares a subtree of
 * the idle tree with them (kube-scheduler checks affinity before resources).
 */
static void test_message_counts_nodes_exactly(void)
{
    Fx *fx = kb_test_sched_new("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
                               "  - name: predicates\n  - name: nodeorder\n");
    for (guint i = 0; i < 1000; i++) {
        g_autofree char *name = g_strdup_printf("n%04u", i);
        /* Zone a: the 2nd and the 501st node, each next to a zone-b node in its subtree. */
        add_node_full(fx, name, 32, 128, 1,
                      i == 1 || i == 500 ? "\"zone\":\"a\"" : "\"zone\":\"b\"", "", TRUE);
        g_autofree char *pod = g_strdup_printf("fill-%04u", i);
        PodOpts fill = {.requests = GPU1, .node = name, .phase = "Running"};
        add_pod(fx, pod, &fill);
    }
    PodOpts po = {.requests = GPU1,
                  .spec = AFF("{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}")};
    add_pod(fx, "p", &po);
    kb_test_sched_run(fx);
    g_assert_null(kb_test_sched_bound_node(fx, "default", "p"));
    g_assert_cmpstr(status(fx, "default/p")->message, ==,
                    "0/1 tasks placeable: no node fits: 998 nodes do not match node affinity, 2 "
                    "nodes short of nvidia.com/gpu");
    kb_test_sched_free(fx);
}

static void test_predicate_case(gconstpointer data)
{
    const PredCase *c = data;
    /* Without enqueue: a refused admission would hide the predicate's message. */
    Fx *fx = kb_test_sched_new("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
                               "  - name: predicates\n  - name: nodeorder\n");
    add_node_full(fx, "n1", 32, 128, 8, c->labels, c->spec, c->ready);
    PodOpts po = {.requests = GPU1, .spec = c->pod_spec};
    add_pod(fx, "p", &po);
    kb_test_sched_run(fx);
    if (c->binds) {
        g_assert_cmpstr(kb_test_sched_bound_node(fx, "default", "p"), ==, "n1");
    } else {
        g_assert_null(kb_test_sched_bound_node(fx, "default", "p"));
        assert_message(fx, "default/p", c->message);
    }
    kb_test_sched_free(fx);
}

/* A gang whose pods each name their node (matchFields metadata.name, as DaemonSets and many
 * controllers write) binds each pod to its own node, among more nodes that would fit. */
static void test_gang_node_name_affinity(void)
{
    Fx *fx = kb_test_sched_new("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n"
                               "  - name: gang\n  - name: predicates\n  - name: nodeorder\n");
    for (guint i = 0; i < 8; i++) {
        g_autofree char *name = g_strdup_printf("n%u", i);
        add_node(fx, name, 8);
    }
    add_group(fx, "default", "tf", 3, NULL);
    static const char *const want[] = {"n6", "n2", "n5"};
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autofree char *name = g_strdup_printf("tf-%u", i);
        g_autofree char *spec = g_strdup_printf(AFF_TERM("{" NAME_IS("In", "%s") "}"), want[i]);
        PodOpts po = {.group = "tf", .requests = GPU1, .spec = spec};
        add_pod(fx, name, &po);
    }
    kb_test_sched_run(fx);
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autofree char *name = g_strdup_printf("tf-%u", i);
        g_assert_cmpstr(kb_test_sched_bound_node(fx, "default", name), ==, want[i]);
    }
    kb_test_sched_free(fx);
}

/* A pod naming a node by matchFields and one naming the same value by a label of key
 * metadata.name are not alike: each goes where its own requirement points (n1 by name, n2 by
 * label), though their specs differ only in where the requirement is written. */
static void test_field_and_label_pods_differ(void)
{
    Fx *fx = kb_test_sched_new("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n"
                               "  - name: gang\n  - name: predicates\n  - name: nodeorder\n");
    add_node_full(fx, "n1", 32, 128, 1, "", "", TRUE);
    add_node_full(fx, "n2", 32, 128, 1, "\"metadata.name\":\"n1\"", "", TRUE);
    add_group(fx, "default", "tf", 2, NULL);
    PodOpts by_field = {
            .group = "tf", .requests = GPU1, .spec = AFF_TERM("{" NAME_IS("In", "n1") "}")};
    add_pod(fx, "tf-0", &by_field);
    PodOpts by_label = {.group = "tf",
                        .requests = GPU1,
                        .spec = AFF("{\"key\":\"metadata.name\",\"operator\":\"In\","
                                    "\"values\":[\"n1\"]}")};
    add_pod(fx, "tf-1", &by_label);
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "default", "tf-0"), ==, "n1");
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "default", "tf-1"), ==, "n2");
    kb_test_sched_free(fx);
}

static void test_predicates_message_counts(void)
{
    Fx *fx = kb_test_sched_new("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
                               "  - name: predicates\n");
    for (guint i = 0; i < 5; i++) {
        g_autofree char *name = g_strdup_printf("full%u", i);
        add_node(fx, name, 0);
    }
    add_node_full(fx, "infra1", 32, 128, 8, "", TAINT("dedicated", "infra", "NoSchedule"), TRUE);
    add_node_full(fx, "infra2", 32, 128, 8, "", TAINT("dedicated", "infra", "NoSchedule"), TRUE);
    add_node(fx, "ok", 1);
    add_group(fx, "default", "tf", 2, NULL);
    add_gang_pods(fx, "default", "tf", 2, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    assert_message(fx, "default/tf", "1/2 tasks placeable: no node fits: ");
    assert_message(fx, "default/tf", "6 nodes short of nvidia.com/gpu");
    assert_message(fx, "default/tf", "2 nodes have taint dedicated=infra:NoSchedule");
    kb_test_sched_free(fx);
}

/* ---- conformance ---------------------------------------------------------------------------- */

static void test_conformance_critical(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    PodOpts sys = {
            .ns = "kube-system", .pc = "system-cluster-critical", .node = "n1", .phase = "Running"};
    PodOpts node_crit = {
            .ns = "team", .pc = "system-node-critical", .node = "n1", .phase = "Running"};
    PodOpts plain = {.ns = "team", .node = "n1", .phase = "Running"};
    add_node(fx, "n1", 8);
    add_pod(fx, "dns", &sys);
    add_pod(fx, "agent", &node_crit);
    add_pod(fx, "work", &plain);
    g_autoptr(KbCycleResult) res = g_new0(KbCycleResult, 1);
    KbSession *ssn = kb_session_open(fx->cache, fx->conf, fx->now, res);
    g_autoptr(GPtrArray) victims = g_ptr_array_new();
    g_ptr_array_add(victims, kb_cache_lookup_task(fx->cache, "kube-system", "dns"));
    g_ptr_array_add(victims, kb_cache_lookup_task(fx->cache, "team", "agent"));
    g_ptr_array_add(victims, kb_cache_lookup_task(fx->cache, "team", "work"));
    kb_session_preemptable(ssn, victims->pdata[2], victims);
    g_assert_cmpuint(victims->len, ==, 1);
    g_assert_cmpstr(((KbTaskInfo *)victims->pdata[0])->pod->meta.name, ==, "work");
    kb_session_close(ssn);
    kb_test_sched_free(fx);
}

/* ---- configuration switches change behaviour ------------------------------------------------ */

static void test_switch_job_ready_off(void)
{
    /* enableJobReady: false turns the gang check off: the partial gang binds what fits. */
    Fx *fx = kb_test_sched_new("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
                               "    enableJobReady: false\n  - name: predicates\n");
    add_node(fx, "n1", 8);
    add_group(fx, "default", "tf", 10, NULL);
    add_gang_pods(fx, "default", "tf", 10, GPU1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 8);
    kb_test_sched_free(fx);
}

static void test_switch_job_order_off(void)
{
    Fx *fx = kb_test_sched_new("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: priority\n"
                               "    enableJobOrder: false\n  - name: gang\n  - name: predicates\n");
    add_node(fx, "n1", 1);
    PodOpts old = {.requests = GPU1, .spec = ",\"priority\":1"};
    PodOpts hi = {.requests = GPU1, .spec = ",\"priority\":100"};
    add_pod(fx, "old", &old);
    add_pod(fx, "hi", &hi);
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "default", "old"), ==, "n1");
    kb_test_sched_free(fx);
}

static void test_switch_predicate_off(void)
{
    Fx *fx = kb_test_sched_new("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n"
                               "  - name: predicates\n    enablePredicate: false\n");
    add_node_full(fx, "n1", 32, 128, 8, "", TAINT("dedicated", "infra", "NoSchedule"), TRUE);
    PodOpts po = {.requests = GPU1};
    add_pod(fx, "p", &po);
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "default", "p"), ==, "n1");
    kb_test_sched_free(fx);
}

/* ---- scheduler names, dialects -------------------------------------------------------------- */

static void test_served_names(void)
{
    const char *names[] = {"kube-batchd", "volcano", NULL};
    KbCache *cache = kb_cache_new(names, NULL);
    g_assert_true(kb_cache_serves(cache, "volcano"));
    g_assert_false(kb_cache_serves(cache, "default-scheduler"));
    g_assert_cmpstr(kb_cache_default_queue(cache), ==, "default");
    g_assert_nonnull(kb_cache_lookup_queue(cache, "default"));
    kb_cache_free(cache);
}

static void test_dialects(void)
{
    static const char *const apis[] = {"scheduling.incubator.k8s.io/v1alpha1",
                                       "scheduling.volcano.sh/v1beta1",
                                       "scheduling.x-k8s.io/v1alpha1"};
    for (guint i = 0; i < G_N_ELEMENTS(apis); i++) {
        Fx *fx = kb_test_sched_new(NULL);
        add_node(fx, "n1", 8);
        add_group_full(fx, "default", "g", 2, NULL, NULL, apis[i]);
        add_gang_pods(fx, "default", "g", 2, GPU1);
        kb_test_sched_run(fx);
        g_assert_cmpuint(kb_test_sched_binds(fx, "default/g"), ==, 2);
        kb_test_sched_free(fx);
    }
}

static void test_x_k8s_label_membership(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8);
    add_group_full(fx, "default", "xg", 2, NULL, NULL, "scheduling.x-k8s.io/v1alpha1");
    for (guint i = 0; i < 2; i++) {
        g_autofree char *json = g_strdup_printf(
                "{\"metadata\":{\"name\":\"x%u\",\"namespace\":\"default\",\"uid\":\"ux%u\","
                "\"labels\":{\"scheduling.x-k8s.io/"
                "pod-group\":\"xg\"}},\"spec\":{\"schedulerName\":"
                "\"kube-batchd\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{"
                "\"nvidia.com/gpu\":1}}}]},\"status\":{\"phase\":\"Pending\"}}",
                i, i);
        kb_test_sched_put_pod(fx, kb_test_sched_parse(json));
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/xg"), ==, 2);
    kb_test_sched_free(fx);
}

/* ---- enqueue and queue order (issue 26, part 0) --------------------------------------------- */

static const char share_conf[] = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n"
                                 "  - name: priority\n  - name: gang\n- plugins:\n"
                                 "  - name: drf\n  - name: predicates\n  - name: proportion\n";

/* A running pod of @gpus GPUs on @node, alone in its group (a job of one at its minimum). */
static void add_running(Fx *fx, const char *ns, const char *name, const char *queue,
                        const char *node, int gpus)
{
    add_group(fx, ns, name, 1, queue);
    g_autofree char *req =
            g_strdup_printf("\"cpu\":\"1\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":%d", gpus);
    g_autofree char *pod = g_strdup_printf("%s-0", name);
    PodOpts po = {.ns = ns, .group = name, .requests = req, .node = node, .phase = "Running"};
    add_pod(fx, pod, &po);
}

/* A waiting job of one pod of @gpus GPUs. */
static void add_waiting(Fx *fx, const char *ns, const char *name, const char *queue, int gpus)
{
    add_group(fx, ns, name, 1, queue);
    g_autofree char *req =
            g_strdup_printf("\"cpu\":\"1\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":%d", gpus);
    g_autofree char *pod = g_strdup_printf("%s-0", name);
    PodOpts po = {.ns = ns, .group = name, .requests = req};
    add_pod(fx, pod, &po);
}

/*
 * 4 GPUs are free; queue qa holds 4, qb nothing. qa's 4-GPU job is older than qb's: admitted in
 * job order alone it took the whole budget and qb's waited. Admission follows queue order: qb's
 * first, and qa's no longer fits.
 */
static void test_enqueue_queue_order(void)
{
    Fx *fx = kb_test_sched_new(share_conf);
    add_queue(fx, "qa", 1, NULL);
    add_queue(fx, "qb", 1, NULL);
    add_queue(fx, "qc", 1, NULL);
    add_node(fx, "n1", 8);
    add_node(fx, "n2", 8);
    add_running(fx, "default", "ra", "qa", "n1", 4);
    add_running(fx, "default", "rc", "qc", "n2", 8);
    add_waiting(fx, "default", "wa", "qa", 4);
    add_waiting(fx, "default", "wb", "qb", 4);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/wb"), ==, 1);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/wa"), ==, 0);
    assert_message(fx, "default/wa", "not admitted");
    kb_test_sched_free(fx);
}

/*
 * qa's 4-GPU pod was admitted against 4 idle GPUs that are 2 on each of two nodes, so it cannot
 * be placed (qa also runs a 1-GPU pod on a third node). Then qb asks for 2 GPUs: admission is
 * decided again for jobs with nothing placed, qb's job (its queue less served) is admitted and
 * placed, and qa's goes back to Pending. Admitted for good, qa's job held the idle GPUs' budget and
 * qb's waited with them idle.
 */
static void test_enqueue_readmits_unplaced(void)
{
    Fx *fx = kb_test_sched_new(share_conf);
    add_queue(fx, "qa", 1, NULL);
    add_queue(fx, "qb", 1, NULL);
    add_queue(fx, "qc", 1, NULL);
    add_node(fx, "n1", 8);
    add_node(fx, "n2", 8);
    add_running(fx, "default", "rc1", "qc", "n1", 6);
    add_running(fx, "default", "rc2", "qc", "n2", 6);
    add_node(fx, "n3", 1);
    add_running(fx, "default", "ra", "qa", "n3", 1);
    add_waiting(fx, "default", "wa", "qa", 4);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpint(status(fx, "default/wa")->phase, ==, KB_JOB_INQUEUE);
    add_waiting(fx, "default", "wb", "qb", 2);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/wb"), ==, 1);
    g_assert_cmpint(status(fx, "default/wa")->phase, ==, KB_JOB_PENDING);
    kb_test_sched_free(fx);
}

/* ---- decayed usage (issue 26, part 1) ------------------------------------------------------- */

static void test_usage_decay(void)
{
    g_autoptr(KbUsage) u = kb_usage_new();
    KbResources held = {0}, none = {0};
    held.v[KB_RES_GPU] = 8;
    kb_usage_advance(u, "qa", &held, 1000, 3600); /* the first call only stamps the time */
    g_assert_cmpfloat(kb_usage_get(u, "qa", KB_RES_GPU), ==, 0);
    kb_usage_advance(u, "qa", &held, 1000 + 3600, 3600);
    /* 8 GPUs for one half-life: 8 h / ln 2 x (1 - 1/2) GPU-seconds. */
    double one = 8 * 3600 / G_LN2 * 0.5;
    g_assert_cmpfloat_with_epsilon(kb_usage_get(u, "qa", KB_RES_GPU), one, 1e-6);
    kb_usage_advance(u, "qa", &none, 1000 + 2 * 3600, 3600);
    g_assert_cmpfloat_with_epsilon(kb_usage_get(u, "qa", KB_RES_GPU), one / 2, 1e-6);
    kb_usage_advance(u, "qa", &held, 1000, 3600); /* back in time: nothing */
    g_assert_cmpfloat_with_epsilon(kb_usage_get(u, "qa", KB_RES_GPU), one / 2, 1e-6);
    g_assert_cmpfloat(kb_usage_get(u, "qb", KB_RES_GPU), ==, 0);
}

/*
 * Two queues of equal weight on 8 GPUs; qa has held all 8 for the last hour (half-life 1 h). When
 * both ask for 8 one-GPU jobs, with usageWeight 1 the rested qb gets the larger part; with 0 (the
 * default) they split evenly, as before.
 */
static void usage_case(const char *weight, guint *a_out, guint *b_out)
{
    g_autofree char *conf = g_strdup_printf(
            "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n"
            "  - name: gang\n- plugins:\n  - name: drf\n  - name: predicates\n"
            "  - name: proportion\n    arguments:\n      usageHalfLife: 1h\n"
            "      usageWeight: %s\n",
            weight);
    Fx *fx = kb_test_sched_new(conf);
    add_queue(fx, "qa", 1, NULL);
    add_queue(fx, "qb", 1, NULL);
    add_node(fx, "n1", 8);
    add_running(fx, "default", "ra", "qa", "n1", 8);
    kb_test_sched_run(fx);
    fx->now += 3600;
    kb_test_sched_run(fx); /* the hour qa held 8 GPUs */
    PodOpts done = {.group = "ra",
                    .requests = "\"cpu\":\"1\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":8",
                    .node = "n1",
                    .phase = "Succeeded"};
    add_pod(fx, "ra-0", &done);
    for (guint i = 0; i < 8; i++) {
        g_autofree char *a = g_strdup_printf("wa%u", i);
        g_autofree char *b = g_strdup_printf("wb%u", i);
        add_waiting(fx, "default", a, "qa", 1);
        add_waiting(fx, "default", b, "qb", 1);
    }
    kb_test_sched_run(fx);
    *a_out = *b_out = 0;
    for (guint i = 0; i < 8; i++) {
        g_autofree char *a = g_strdup_printf("default/wa%u", i);
        g_autofree char *b = g_strdup_printf("default/wb%u", i);
        *a_out += kb_test_sched_binds(fx, a);
        *b_out += kb_test_sched_binds(fx, b);
    }
    kb_test_sched_free(fx);
}

static void test_usage_rested_queue_first(void)
{
    guint a, b;
    usage_case("1", &a, &b);
    g_assert_cmpuint(a + b, ==, 8);
    g_assert_cmpuint(b, >=, 6);
    usage_case("0", &a, &b);
    g_assert_cmpuint(a, ==, 4);
    g_assert_cmpuint(b, ==, 4);
}

/* Figures read back adopt only when newer than what is held (a leader's own write coming back
 * through its informer changes nothing). */
static void test_usage_restore(void)
{
    g_autoptr(KbUsage) u = kb_usage_new();
    double v[KB_RES_MAX] = {0};
    v[KB_RES_GPU] = 5000;
    g_assert_cmpint(kb_usage_time(u, "qa"), ==, -1);
    g_assert_true(kb_usage_restore(u, "qa", v, 2000));
    g_assert_cmpint(kb_usage_time(u, "qa"), ==, 2000);
    g_assert_cmpfloat(kb_usage_get(u, "qa", KB_RES_GPU), ==, 5000);
    v[KB_RES_GPU] = 1;
    g_assert_false(kb_usage_restore(u, "qa", v, 2000)); /* not newer */
    g_assert_false(kb_usage_restore(u, "qa", v, 1500));
    g_assert_false(kb_usage_restore(u, "qb", v, 0)); /* no time: nothing */
    g_assert_cmpfloat(kb_usage_get(u, "qa", KB_RES_GPU), ==, 5000);
    KbResources none = {0};
    kb_usage_advance(u, "qa", &none, 2000 + 3600, 3600); /* decays from the restored time */
    g_assert_cmpfloat_with_epsilon(kb_usage_get(u, "qa", KB_RES_GPU), 2500, 1e-6);
}

/*
 * A restart: the usage a first kube-batchd reported for qa (the cycle's queue status, what the
 * status writer puts in status.usage) is read back from the Queue by a second one, whose first
 * cycle then gives the rested qb the larger part; without status.usage they split evenly.
 */
static void restart_case(gboolean with_usage, guint *a_out, guint *b_out)
{
    const char *conf = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n"
                       "  - name: gang\n- plugins:\n  - name: drf\n  - name: predicates\n"
                       "  - name: proportion\n    arguments:\n      usageHalfLife: 1h\n"
                       "      usageWeight: 1\n";
    Fx *fx = kb_test_sched_new(conf);
    add_queue(fx, "qa", 1, NULL);
    add_node(fx, "n1", 8);
    add_running(fx, "default", "ra", "qa", "n1", 8);
    kb_test_sched_run(fx);
    fx->now += 3600;
    kb_test_sched_run(fx);
    const KbQueueStatus *qs = NULL;
    for (guint i = 0; i < fx->res->queue_statuses->len; i++) {
        const KbQueueStatus *x = &g_array_index(fx->res->queue_statuses, KbQueueStatus, i);
        if (strcmp(x->name, "qa") == 0)
            qs = x;
    }
    g_assert_nonnull(qs);
    g_assert_cmpfloat(qs->usage[KB_RES_GPU], >, 8 * 3600 / 2 * KB_GPU_MILLI);
    g_autofree char *t = kb_time_format(qs->usage_time);
    g_autofree char *queue = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\",\"metadata\":"
            "{\"name\":\"qa\",\"uid\":\"q-qa\"},\"spec\":{\"weight\":1},\"status\":{\"usage\":"
            "{\"time\":\"%s\",\"resourceSeconds\":{\"nvidia.com/gpu\":%.0f}}}}",
            t, qs->usage[KB_RES_GPU] / KB_GPU_MILLI);
    gint64 now = fx->now;
    kb_test_sched_free(fx);

    fx = kb_test_sched_new(conf);
    fx->now = now;
    if (with_usage)
        kb_test_sched_add_queue(fx, queue);
    else
        add_queue(fx, "qa", 1, NULL);
    add_queue(fx, "qb", 1, NULL);
    add_node(fx, "n1", 8);
    for (guint i = 0; i < 8; i++) {
        g_autofree char *a = g_strdup_printf("wa%u", i);
        g_autofree char *b = g_strdup_printf("wb%u", i);
        add_waiting(fx, "default", a, "qa", 1);
        add_waiting(fx, "default", b, "qb", 1);
    }
    kb_test_sched_run(fx);
    *a_out = *b_out = 0;
    for (guint i = 0; i < 8; i++) {
        g_autofree char *a = g_strdup_printf("default/wa%u", i);
        g_autofree char *b = g_strdup_printf("default/wb%u", i);
        *a_out += kb_test_sched_binds(fx, a);
        *b_out += kb_test_sched_binds(fx, b);
    }
    kb_test_sched_free(fx);
}

static void test_usage_survives_restart(void)
{
    guint a, b;
    restart_case(TRUE, &a, &b);
    g_assert_cmpuint(a + b, ==, 8);
    g_assert_cmpuint(b, >=, 6);
    restart_case(FALSE, &a, &b);
    g_assert_cmpuint(a, ==, 4);
    g_assert_cmpuint(b, ==, 4);
}

/* A waiting job of one pod of @gpus GPUs announcing @runtime (the group's annotation; NULL:
 * none). */
static void add_waiting_runtime(Fx *fx, const char *name, const char *queue, int gpus,
                                const char *runtime)
{
    g_autofree char *ann =
            runtime != NULL ? g_strdup_printf(",\"annotations\":{\"" KB_RESERVE_RUNTIME_ANNOTATION
                                              "\":\"%s\"}",
                                              runtime)
                            : g_strdup("");
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
            "{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"pg-%s\",\"creationTimestamp\":"
            "\"2026-01-01T00:00:%02uZ\"%s},\"spec\":{\"minMember\":1,\"queue\":\"%s\"}}",
            name, name, fx->seq++ % 60, ann, queue);
    kb_test_sched_add_pod_group(fx, json);
    g_autofree char *req =
            g_strdup_printf("\"cpu\":\"1\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":%d", gpus);
    g_autofree char *pod = g_strdup_printf("%s-0", name);
    PodOpts po = {.group = name, .requests = req};
    add_pod(fx, pod, &po);
}

/*
 * The fixture of the cases below: four equal queues and the default one on 3 nodes of 8 GPUs;
 * qa holds 16 in two jobs without an estimate and waits with a 4-GPU job of 24 h ("long") and,
 * with @with_short, a 4-GPU job of 1 h ("short"). @proportion is the plugin's YAML after its name.
 */
static Fx *qa_long_fixture(const char *proportion, gboolean with_short)
{
    g_autofree char *conf = g_strdup_printf(
            "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n"
            "  - name: gang\n- plugins:\n  - name: drf\n  - name: predicates\n"
            "  - name: proportion\n%s",
            proportion);
    Fx *fx = kb_test_sched_new(conf);
    add_queue(fx, "qa", 1, NULL);
    add_queue(fx, "qb", 1, NULL);
    add_queue(fx, "qc", 1, NULL);
    add_queue(fx, "qd", 1, NULL);
    add_node(fx, "n1", 8);
    add_node(fx, "n2", 8);
    add_node(fx, "n3", 8);
    add_running(fx, "default", "ra1", "qa", "n1", 8);
    add_running(fx, "default", "ra2", "qa", "n2", 8);
    add_waiting_runtime(fx, "long", "qa", 4, "24h");
    if (with_short)
        add_waiting_runtime(fx, "short", "qa", 4, "1h");
    return fx;
}

/*
 * Four equal queues and the default one on 24 GPUs: a share by weight of 4.8 each, 14.4 with the
 * default limit of 3. qa holds 16; its 4-GPU job expected to run 24 h may not take it to 20 (the
 * idle GPUs stay for the others' jobs), its 4-GPU job of 1 h may (the limit alone: longEarnedShare
 * and longClusterLimit 0). With longBorrowLimit 0 (as before) or a longRuntime of 48 h, both run.
 */
static void long_case(const char *args, guint long_binds)
{
    Fx *fx = qa_long_fixture(args, TRUE);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/short"), ==, 1);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/long"), ==, long_binds);
    if (long_binds == 0)
        assert_message(fx, "default/long", "expected to run longer than");
    kb_test_sched_free(fx);
}

static void test_long_borrow_limit(void)
{
    long_case("    arguments:\n      longBorrowLimit: 3\n      longEarnedShare: 0\n"
              "      longClusterLimit: 0\n",
              0);
    long_case("    arguments:\n      longEarnedShare: 0\n      longClusterLimit: 0\n",
              0); /* 3 by default */
    /* By default the short job's demand earns qa 4 GPUs more than it holds (longEarnedShare):
     * the long job starts beside it, within the cluster-wide cap of 0.85. */
    long_case("", 1);
    long_case("    arguments:\n      longBorrowLimit: 0\n", 1);
    long_case("    arguments:\n      longBorrowLimit: 3\n      longRuntime: 48h\n", 1);
}

/*
 * The default limit holds back a job known to run long, never one without an estimate: qa holds
 * 16 of 24 GPUs (a limit of 14.4); its 4-GPU job of 24 h waits, its 4-GPU job that announces
 * nothing starts (a cluster of such jobs would otherwise keep GPUs idle). The limit alone
 * (longEarnedShare and longClusterLimit 0): by default the other job's demand would earn the
 * long one its room (long-earned-share).
 */
static void test_long_limit_no_estimate(void)
{
    Fx *fx = kb_test_sched_new("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n"
                               "  - name: priority\n  - name: gang\n- plugins:\n  - name: drf\n"
                               "  - name: predicates\n  - name: proportion\n    arguments:\n"
                               "      longEarnedShare: 0\n      longClusterLimit: 0\n");
    add_queue(fx, "qa", 1, NULL);
    add_queue(fx, "qb", 1, NULL);
    add_queue(fx, "qc", 1, NULL);
    add_queue(fx, "qd", 1, NULL);
    add_node(fx, "n1", 8);
    add_node(fx, "n2", 8);
    add_node(fx, "n3", 8);
    add_running(fx, "default", "ra1", "qa", "n1", 8);
    add_running(fx, "default", "ra2", "qa", "n2", 8);
    add_waiting_runtime(fx, "long", "qa", 4, "24h");
    add_waiting_runtime(fx, "unknown", "qa", 4, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/unknown"), ==, 1);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/long"), ==, 0);
    assert_message(fx, "default/long", "expected to run longer than");
    kb_test_sched_free(fx);
}

/* The long-job limit's cases: four equal queues qa-qd and the default one on 40 GPUs (n1-n5),
 * proportion's longBorrowLimit 1 (a limit of 8 each), @extra further argument lines; @head: the
 * actions line and what else comes before the tiers (NULL: enqueue and allocate); qa's queue
 * spec ends with @qa_spec (NULL: nothing more). */
static Fx *long_limit_fixture_with(const char *head, const char *extra, const char *qa_spec)
{
    g_autofree char *conf =
            g_strdup_printf("%stiers:\n- plugins:\n  - name: priority\n"
                            "  - name: gang\n- plugins:\n  - name: drf\n  - name: predicates\n"
                            "  - name: proportion\n    arguments:\n      longBorrowLimit: 1\n%s",
                            head != NULL ? head : "actions: \"enqueue, allocate\"\n", extra);
    Fx *fx = kb_test_sched_new(conf);
    add_queue(fx, "qa", 1, qa_spec);
    add_queue(fx, "qb", 1, NULL);
    add_queue(fx, "qc", 1, NULL);
    add_queue(fx, "qd", 1, NULL);
    for (guint i = 1; i <= 5; i++) {
        g_autofree char *n = g_strdup_printf("n%u", i);
        add_node(fx, n, 8);
    }
    return fx;
}

static Fx *long_limit_fixture(const char *extra)
{
    return long_limit_fixture_with(NULL, extra, NULL);
}

/*
 * The long-job limit keeps nothing for anyone while GPUs are ample: four equal queues and the
 * default one on 40 GPUs, longBorrowLimit 1 (a limit of 8 each); qa holds 8, its 8-GPU job of
 * 24 h takes it to 16. With longIdleLimits 1.5 and 24 GPUs idle after it (at least 1.5 times the
 * limit, up to 3) it starts; by default (0: off), or with qb holding 16 more (8 idle after it),
 * it waits. @head, @extra and @qa_spec as long_limit_fixture_with's; returns the job's binds.
 */
static guint long_job_case(const char *head, const char *extra, const char *qa_spec,
                           gboolean qb_busy)
{
    Fx *fx = long_limit_fixture_with(head, extra, qa_spec);
    add_running(fx, "default", "ra1", "qa", "n1", 8);
    if (qb_busy) {
        add_running(fx, "default", "rb1", "qb", "n2", 8);
        add_running(fx, "default", "rb2", "qb", "n3", 8);
    }
    add_waiting_runtime(fx, "long", "qa", 8, "24h");
    kb_test_sched_run(fx);
    guint binds = kb_test_sched_binds(fx, "default/long");
    if (binds == 0)
        assert_message(fx, "default/long", "expected to run longer than");
    kb_test_sched_free(fx);
    return binds;
}

static guint long_idle_case(const char *extra, gboolean qb_busy)
{
    return long_job_case(NULL, extra, NULL, qb_busy);
}

static void test_long_limit_idle(void)
{
    g_assert_cmpuint(long_idle_case("", FALSE), ==, 0); /* off by default */
    g_assert_cmpuint(long_idle_case("      longIdleLimits: 1.5\n", FALSE), ==, 1);
    g_assert_cmpuint(long_idle_case("      longIdleLimits: 1.5\n", TRUE), ==, 0);
    g_assert_cmpuint(long_idle_case("      longIdleLimits: 3\n", FALSE), ==, 1);
    g_assert_cmpuint(long_idle_case("      longIdleLimits: 3.1\n", FALSE), ==, 0);
}

/*
 * longClusterLimit: past its queue's limit, a long job may start while the long jobs of the whole
 * cluster, with it, hold at most that part of its GPUs (alone: longEarnedShare 0). Four equal
 * queues and the default one on 40 GPUs, longBorrowLimit 1 (a limit of 8 each); qa runs an
 * 8-GPU job of 24 h, qb one of @qb_run (NULL: none). qa's @n_waiting 4-GPU jobs of 24 h are all
 * past qa's limit: with @cluster NULL (0: off) none starts; with a limit of @cluster they start
 * while the cluster's long GPUs, counting the ones placed in the same cycle, stay within it.
 * Returns how many started.
 */
static guint long_cluster_case(const char *cluster, const char *qb_run, guint n_waiting)
{
    g_autofree char *extra =
            g_strdup_printf("      longEarnedShare: 0\n      longClusterLimit: %s\n",
                            cluster != NULL ? cluster : "0");
    Fx *fx = long_limit_fixture(extra);
    add_waiting_runtime(fx, "ra", "qa", 8, "24h");
    if (qb_run != NULL)
        add_waiting_runtime(fx, "rb", "qb", 8, qb_run);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, qb_run != NULL ? 2 : 1);
    kb_test_sched_confirm_all(fx, FALSE);
    for (guint i = 0; i < n_waiting; i++) {
        g_autofree char *name = g_strdup_printf("long%u", i);
        add_waiting_runtime(fx, name, "qa", 4, "24h");
    }
    kb_test_sched_run(fx);
    guint binds = kb_test_sched_binds(fx, NULL);
    if (binds < n_waiting) {
        g_autofree char *last = g_strdup_printf("default/long%u", n_waiting - 1);
        assert_message(fx, last, "expected to run longer than");
        if (cluster != NULL)
            assert_message(fx, last, "the cluster's long jobs hold");
    }
    kb_test_sched_free(fx);
    return binds;
}

static void test_long_limit_cluster(void)
{
    g_assert_cmpuint(long_cluster_case(NULL, NULL, 1), ==, 0);    /* off: the limit alone */
    g_assert_cmpuint(long_cluster_case("0.45", NULL, 1), ==, 1);  /* 8 + 4 within 18 */
    g_assert_cmpuint(long_cluster_case("0.45", "24h", 1), ==, 0); /* qb's too: 16 + 4 */
    g_assert_cmpuint(long_cluster_case("0.45", "1h", 1), ==, 1);  /* a short job does not count */
    /* 8 held, a limit of 16: two of three start, the third is held by the first two's GPUs. */
    g_assert_cmpuint(long_cluster_case("0.4", NULL, 3), ==, 2);
}

static guint long_held_demand_case_with(const char *head, const char *extra);

/*
 * Reclaim's borrowedLongJobsOnly: past its queue's limit a long job borrows idle GPUs, within
 * longClusterLimit, since reclaim may take them back. The long-job limit's fixture (a limit of 8
 * each on 40 GPUs) with reclaim configured by @head; qa runs 8 GPUs and waits with an 8-GPU job
 * of 24 h (16 > 8); @extra: proportion's further arguments, @qa_spec qa's. Returns whether the
 * job started.
 */
static gboolean borrow_case(const char *head, const char *extra, const char *qa_spec)
{
    return long_job_case(head, extra, qa_spec, FALSE) > 0;
}

static void test_long_borrows_idle(void)
{
    const char *borrow = "actions: \"enqueue, allocate, reclaim\"\nconfigurations:\n"
                         "- name: reclaim\n  arguments:\n    borrowedLongJobsOnly: true\n";
    const char *alone = "      longEarnedShare: 0\n      longClusterLimit: 0\n";
    /* Without reclaim the limit holds it; with borrowedLongJobsOnly it borrows (8 of 40 long
     * GPUs within the default cap of 0.85) or, with no cap, without bound. */
    g_assert_false(borrow_case(NULL, alone, NULL));
    g_assert_true(borrow_case(borrow, "", NULL));
    g_assert_true(borrow_case(borrow, "      longClusterLimit: 0\n", NULL));
    /* Within the cap only: 8 > 0.1 of 40. */
    g_assert_false(borrow_case(borrow, "      longClusterLimit: 0.1\n", NULL));
    /* What reclaim may not take back is not lent: the limit alone holds it. */
    g_assert_false(borrow_case(borrow, "", ",\"reclaimable\":false"));
    /* A long job the cap holds leaves its queue's demand, as longHeldDemand 0 has it: qb
     * deserves 32 and both its jobs start beside qa's held one (long_held_demand_case). */
    g_assert_cmpuint(long_held_demand_case_with(borrow, "      longClusterLimit: 0.1\n"), ==, 2);
    /* Plain reclaim has no limit at all. */
    g_assert_true(borrow_case("actions: \"enqueue, allocate, reclaim\"\n", "", NULL));
    g_assert_true(
            borrow_case("actions: \"enqueue, allocate, reclaim\"\n", "", ",\"reclaimable\":false"));
}

/*
 * longHeldDemand 0: a long job the limit holds does not count in its queue's demand. Four equal
 * queues and the default one on 40 GPUs, longBorrowLimit 1 (a limit of 8 each); qa runs 8 GPUs
 * and waits with an 8-GPU job of 24 h (held: 16 > 8), qb runs 16 and waits with two 8-GPU jobs
 * of 1 h. Counted (longHeldDemand's default, with longEarnedShare and longClusterLimit 0), qa's
 * demand of 16 keeps qb's deserved share at 24: one of qb's jobs starts and 8 GPUs stay idle. Not
 * counted, qb deserves 32 and both start.
 */
static guint long_held_demand_case_with(const char *head, const char *extra)
{
    Fx *fx = long_limit_fixture_with(head, extra, NULL);
    add_running(fx, "default", "ra1", "qa", "n1", 8);
    add_running(fx, "default", "rb1", "qb", "n2", 8);
    add_running(fx, "default", "rb2", "qb", "n3", 8);
    add_waiting_runtime(fx, "long", "qa", 8, "24h");
    add_waiting_runtime(fx, "b1", "qb", 8, "1h");
    add_waiting_runtime(fx, "b2", "qb", 8, "1h");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/long"), ==, 0); /* held either way */
    guint binds = kb_test_sched_binds(fx, "default/b1") + kb_test_sched_binds(fx, "default/b2");
    kb_test_sched_free(fx);
    return binds;
}

static guint long_held_demand_case(const char *extra)
{
    return long_held_demand_case_with(NULL, extra);
}

static void test_long_held_demand(void)
{
    const char *alone = "      longEarnedShare: 0\n      longClusterLimit: 0\n";
    g_autofree char *counted = g_strdup_printf("%s      longHeldDemand: 1\n", alone);
    g_autofree char *left_out = g_strdup_printf("%s      longHeldDemand: 0\n", alone);
    g_assert_cmpuint(long_held_demand_case(alone), ==, 1);
    g_assert_cmpuint(long_held_demand_case(counted), ==, 1);
    g_assert_cmpuint(long_held_demand_case(left_out), ==, 2);
}

/*
 * longEarnedShare (on by default): past its queue's long-job limit, a long job starts only within
 * the share its queue's other demand earns, and within longClusterLimit when set (0.85 by default).
 * Four equal queues and the default one on 24 GPUs (a share by weight of 4.8, a limit of 14.4 with
 * the default longBorrowLimit 3); qa holds 16 (jobs without an estimate) and waits with a 4-GPU job
 * of 24 h and, with @with_short, a 4-GPU job of 1 h. Returns whether the long job started; the
 * short one always starts in the same cycle (its room is its own, whoever allocate tries first).
 */
static gboolean earned_case(const char *args, gboolean with_short)
{
    g_autofree char *proportion = g_strconcat("    arguments:\n", args, NULL);
    Fx *fx = qa_long_fixture(proportion, with_short);
    kb_test_sched_run(fx);
    if (with_short)
        g_assert_cmpuint(kb_test_sched_binds(fx, "default/short"), ==, 1);
    guint binds = kb_test_sched_binds(fx, "default/long");
    if (binds == 0)
        assert_message(fx, "default/long", "expected to run longer than");
    if (binds == 0 && !with_short && strstr(args, "longEarnedShare: 0") == NULL)
        assert_message(fx, "default/long",
                       "other jobs earn (16 nvidia.com/gpu; the queue counts 16)");
    kb_test_sched_free(fx);
    return binds > 0;
}

static void test_long_earned_share(void)
{
    const char *on = "      longEarnedShare: 1\n";
    const char *dflt = "      longRuntime: 6h\n";
    /* Alone, qa's other demand is what it holds: no room is earned, the job waits. */
    g_assert_false(earned_case(on, FALSE));
    g_assert_false(earned_case(dflt, FALSE));
    /* The short job's demand earns qa 4 more GPUs than it holds: the long job starts, and the
     * short one too (its room is not counted as taken). */
    g_assert_true(earned_case(on, TRUE));
    g_assert_true(earned_case(dflt, TRUE));
    /* The cluster-wide cap alone starts it (no long job held), the rule with it does not. */
    g_assert_true(earned_case("      longEarnedShare: 0\n      longClusterLimit: 0.9\n", FALSE));
    g_assert_false(earned_case("      longClusterLimit: 0.9\n      longEarnedShare: 1\n", FALSE));
    /* Earned room, but past the cap (4 GPUs of long jobs > 0.1 of 24). */
    g_assert_false(earned_case("      longClusterLimit: 0.1\n      longEarnedShare: 1\n", TRUE));
    g_assert_true(earned_case("      longClusterLimit: 0.2\n      longEarnedShare: 1\n", TRUE));
    /* Off (the limit alone), and without a long-job limit there is nothing to earn. */
    g_assert_false(earned_case("      longEarnedShare: 0\n      longClusterLimit: 0\n", TRUE));
    g_assert_true(earned_case("      longBorrowLimit: 0\n      longEarnedShare: 1\n", FALSE));
}

/*
 * longEarnedShare leaves a long job past its queue's limit out of the queue's demand, as
 * longHeldDemand 0 does: qb's deserved share is 32 and both its jobs start beside qa's held one
 * (long_held_demand_case), also when the cluster-wide cap would let qa's job start (16 + 8 of
 * 40 long GPUs within 0.9) but qa's other demand earns no room.
 */
static void test_long_earned_demand(void)
{
    g_assert_cmpuint(long_held_demand_case(""), ==, 2); /* the default */
    g_assert_cmpuint(long_held_demand_case("      longEarnedShare: 1\n"), ==, 2);
    g_assert_cmpuint(
            long_held_demand_case("      longEarnedShare: 1\n      longClusterLimit: 0.9\n"), ==,
            2);
}

/*
 * The long-job limit reads the configured weights, not the ones usage lowered: qa held 8 of 24
 * GPUs for the last hour (usageWeight 1; five equal queues with the default one, the others idle:
 * a share by weight of 4.8, 14.4 with the limit) and holds them still; its 4-GPU job of 24 h takes
 * it to 12 and starts (with its weight lowered by usage the limit would be 2.9).
 */
static void test_long_limit_configured_weights(void)
{
    Fx *fx = kb_test_sched_new("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n"
                               "  - name: priority\n  - name: gang\n- plugins:\n  - name: drf\n"
                               "  - name: predicates\n  - name: proportion\n    arguments:\n"
                               "      usageHalfLife: 1h\n      usageWeight: 1\n"
                               "      longBorrowLimit: 3\n");
    add_queue(fx, "qa", 1, NULL);
    add_queue(fx, "qb", 1, NULL);
    add_queue(fx, "qc", 1, NULL);
    add_queue(fx, "qd", 1, NULL);
    add_node(fx, "n1", 8);
    add_node(fx, "n2", 8);
    add_node(fx, "n3", 8);
    add_running(fx, "default", "ra1", "qa", "n1", 8);
    kb_test_sched_run(fx);
    fx->now += 3600;
    kb_test_sched_run(fx);
    add_waiting_runtime(fx, "long", "qa", 4, "24h");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "default/long"), ==, 1);
    kb_test_sched_free(fx);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    g_test_add_func("/scheduler/predicates/message-counts-nodes-exactly",
                    test_message_counts_nodes_exactly);
    g_test_add_func("/scheduler/gang/partial-binds-nothing-then-node-added",
                    test_gang_partial_then_node_added);
    g_test_add_func("/scheduler/gang/statement-discards", test_gang_partial_allocate_only);
    g_test_add_func("/scheduler/gang/min-below-size", test_gang_min_below_size);
    g_test_add_func("/scheduler/native/topology-one-rack", test_native_topology_one_rack);
    g_test_add_func("/scheduler/native/topology-no-domain", test_native_topology_no_domain);
    g_test_add_func("/scheduler/native/queue-from-workload", test_native_queue_from_workload);
    g_test_add_func("/scheduler/sub-groups/three-of-four-each-in-one-rack",
                    test_sub_groups_three_of_four);
    g_test_add_func("/scheduler/sub-groups/too-few-binds-nothing", test_sub_groups_too_few);
    g_test_add_func("/scheduler/composite/three-of-four-children-whole",
                    test_composite_three_of_four);
    g_test_add_func("/scheduler/composite/too-few-binds-nothing", test_composite_too_few);
    g_test_add_func("/scheduler/composite/missing-parent-waits", test_composite_missing_waits);
    g_test_add_func("/scheduler/composite/placed-pod-stays", test_composite_placed_pod_stays);
    g_test_add_func("/scheduler/resize/running-pod-holds-allocated",
                    test_resized_pod_holds_allocated);
    g_test_add_func("/scheduler/sub-groups/growth-adds-a-whole-group",
                    test_sub_groups_growth_whole);
    g_test_add_func("/scheduler/gang/minimums-before-growth", test_gang_minimums_before_growth);
    g_test_add_func("/scheduler/gang/minimum-first-without-gang", test_minimum_first_without_gang);
    g_test_add_func("/scheduler/gang/growth-takes-turns", test_gang_growth_takes_turns);
    g_test_add_func("/scheduler/gang/growth-skips-a-job-that-no-longer-fits",
                    test_gang_growth_skips_a_job_that_no_longer_fits);
    g_test_add_func("/scheduler/gang/pod-without-group", test_gang_of_one);
    g_test_add_func("/scheduler/gang/waiting-for-pods", test_gang_waiting_for_pods);
    g_test_add_func("/scheduler/gang/group-missing-waits", test_gang_group_missing_waits);
    g_test_add_func("/scheduler/gang/bind-failure-rolls-back", test_gang_bind_failure_rolls_back);
    g_test_add_func("/scheduler/gang/assumed-until-confirmed", test_gang_assumed_until_confirmed);
    g_test_add_func("/scheduler/gang/confirmed-status-stable", test_gang_confirmed_status_stable);
    g_test_add_func("/scheduler/gang/bound-status-unchanged", test_gang_bound_status_unchanged);
    g_test_add_func("/scheduler/gang/completed", test_gang_completed);
    g_test_add_func("/scheduler/gang/terminating-not-completed", test_gang_terminating);
    g_test_add_func("/scheduler/gang/schedule-timeout", test_gang_schedule_timeout);
    g_test_add_func("/scheduler/gang/events-once", test_gang_events_once);
    g_test_add_func("/scheduler/gang/impossible-request", test_gang_impossible_request);
    for (guint i = 0; i < G_N_ELEMENTS(share_cases); i++) {
        g_autofree char *path =
                g_strdup_printf("/scheduler/proportion/weights/%s", share_cases[i].name);
        g_test_add_data_func(path, &share_cases[i], test_queue_weights_share);
    }
    g_test_add_func("/scheduler/proportion/gang-larger-than-share",
                    test_queue_gang_larger_than_share);
    g_test_add_func("/scheduler/proportion/elastic-members-within-share",
                    test_queue_elastic_members_within_share);
    g_test_add_func("/scheduler/proportion/capability", test_queue_capability);
    g_test_add_func("/scheduler/proportion/capability-message", test_queue_capability_message);
    g_test_add_func("/scheduler/proportion/guarantee", test_queue_guarantee);
    g_test_add_func("/scheduler/proportion/overused", test_queue_overused_gets_nothing);
    g_test_add_func("/scheduler/queue/unknown", test_queue_unknown);
    g_test_add_func("/scheduler/queue/closed", test_queue_closed);
    g_test_add_func("/scheduler/queue/deleted", test_queue_deleted);
    g_test_add_func("/scheduler/priority/job-order", test_priority_order);
    g_test_add_func("/scheduler/priority/pod-values", test_priority_pod_values);
    g_test_add_func("/scheduler/priority/pods-without-group", test_priority_pods_without_group);
    g_test_add_func("/scheduler/drf/order", test_drf_order);
    g_test_add_func("/scheduler/cache/foreign-pods-consume", test_foreign_pods_consume);
    g_test_add_func("/scheduler/cache/terminated-releases", test_foreign_pod_terminated_releases);
    g_test_add_func("/scheduler/cache/pod-before-node", test_pod_before_node);
    g_test_add_data_func("/scheduler/cache/job-removed/pods-then-group", GINT_TO_POINTER(FALSE),
                         test_job_removed_when_group_and_pods_go);
    g_test_add_data_func("/scheduler/cache/job-removed/group-then-pods", GINT_TO_POINTER(TRUE),
                         test_job_removed_when_group_and_pods_go);
    g_test_add_func("/scheduler/cache/pod-delete-releases", test_pod_delete_releases);
    g_test_add_func("/scheduler/cache/served-names", test_served_names);
    g_test_add_func("/scheduler/cache/dialects", test_dialects);
    g_test_add_func("/scheduler/cache/x-k8s-label", test_x_k8s_label_membership);
    g_test_add_func("/scheduler/nodeorder/least-requested", test_nodeorder_least_requested);
    g_test_add_func("/scheduler/nodeorder/default-packs", test_nodeorder_default_packs);
    g_test_add_func("/scheduler/nodeorder/most-requested", test_nodeorder_most_requested);
    g_test_add_func("/scheduler/nodeorder/spread-gang", test_nodeorder_spread_gang);
    g_test_add_func("/scheduler/nodeorder/binpack-gang", test_nodeorder_binpack_gang);
    g_test_add_func("/scheduler/binpack/packs", test_binpack_packs);
    for (guint i = 0; i < G_N_ELEMENTS(binpack_cases); i++)
        g_test_add_data_func(binpack_cases[i].path, &binpack_cases[i], test_binpack_weights);
    for (guint i = 0; i < G_N_ELEMENTS(sla_cases); i++)
        g_test_add_data_func(sla_cases[i].path, &sla_cases[i], test_sla_order);
    for (guint i = 0; i < G_N_ELEMENTS(pred_cases); i++)
        g_test_add_data_func(pred_cases[i].path, &pred_cases[i], test_predicate_case);
    g_test_add_func("/scheduler/predicates/message-counts", test_predicates_message_counts);
    g_test_add_func("/scheduler/predicates/affinity/gang-node-names", test_gang_node_name_affinity);
    g_test_add_func("/scheduler/predicates/affinity/field-and-label-pods-differ",
                    test_field_and_label_pods_differ);
    g_test_add_func("/scheduler/conformance/critical", test_conformance_critical);
    g_test_add_func("/scheduler/conf/switch/job-ready-off", test_switch_job_ready_off);
    g_test_add_func("/scheduler/conf/switch/job-order-off", test_switch_job_order_off);
    g_test_add_func("/scheduler/conf/switch/predicate-off", test_switch_predicate_off);
    g_test_add_func("/scheduler/enqueue/queue-order", test_enqueue_queue_order);
    g_test_add_func("/scheduler/enqueue/readmits-unplaced", test_enqueue_readmits_unplaced);
    g_test_add_func("/scheduler/proportion/long-borrow-limit", test_long_borrow_limit);
    g_test_add_func("/scheduler/proportion/long-borrows-idle", test_long_borrows_idle);
    g_test_add_func("/scheduler/proportion/long-limit-idle", test_long_limit_idle);
    g_test_add_func("/scheduler/proportion/long-limit-cluster", test_long_limit_cluster);
    g_test_add_func("/scheduler/proportion/long-held-demand", test_long_held_demand);
    g_test_add_func("/scheduler/proportion/long-earned-share", test_long_earned_share);
    g_test_add_func("/scheduler/proportion/long-earned-demand", test_long_earned_demand);
    g_test_add_func("/scheduler/proportion/long-limit-no-estimate", test_long_limit_no_estimate);
    g_test_add_func("/scheduler/proportion/long-limit-configured-weights",
                    test_long_limit_configured_weights);
    g_test_add_func("/scheduler/usage/decay", test_usage_decay);
    g_test_add_func("/scheduler/usage/rested-queue-first", test_usage_rested_queue_first);
    g_test_add_func("/scheduler/usage/restore-only-newer", test_usage_restore);
    g_test_add_func("/scheduler/usage/survives-restart", test_usage_survives_restart);
    return g_test_run();
}
