/*
 * The gpu-topology plugin through the real cache and cycle: nodes with topology annotations and
 * rack/zone labels, bound pods with and without gpu-ids, one or more cycles; which node, which GPU
 * indices (KbPlacement.gpu_ids), what the cache counts as held. Plus the two annotation decoders
 * and their limits.
 */
#include <stdlib.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-objects.h"
#include "policies/plugin.h"
#include "scheduler/cache.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"
#include "tests/lib/kb-test-sched.h"

/* The default tiers without gpu-topology: what kube-batchd did before the plugin. */
static const char conf_without[] = "actions: \"enqueue, allocate\"\n"
                                   "tiers:\n"
                                   "- plugins:\n"
                                   "  - name: priority\n"
                                   "  - name: gang\n"
                                   "  - name: conformance\n"
                                   "- plugins:\n"
                                   "  - name: drf\n"
                                   "  - name: predicates\n"
                                   "  - name: proportion\n"
                                   "  - name: nodeorder\n";

/* ---- fixture -------------------------------------------------------------------------------- */

typedef KbTestSched Fx;

static json_object *jstr(const char *s)
{
    return json_object_new_string(s);
}

/* A Ready node with 32 cpu, 256Gi and @gpus GPUs; @topology, @rack, @zone may be NULL. */
static void add_node(Fx *fx, const char *name, int gpus, const char *topology, const char *rack,
                     const char *zone)
{
    json_object *o = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object *labels = json_object_new_object();
    json_object *ann = json_object_new_object();
    json_object_object_add(meta, "name", jstr(name));
    json_object_object_add(meta, "uid", jstr(name));
    if (rack != NULL)
        json_object_object_add(labels, KB_RACK_LABEL, jstr(rack));
    if (zone != NULL)
        json_object_object_add(labels, KB_ZONE_LABEL, jstr(zone));
    if (topology != NULL)
        json_object_object_add(ann, KB_GPU_TOPOLOGY_ANNOTATION, jstr(topology));
    json_object_object_add(meta, "labels", labels);
    json_object_object_add(meta, "annotations", ann);
    json_object_object_add(o, "metadata", meta);
    g_autofree char *status = g_strdup_printf(
            "{\"allocatable\":{\"cpu\":\"32\",\"memory\":\"256Gi\",\"pods\":\"110\","
            "\"nvidia.com/gpu\":\"%d\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}",
            gpus);
    json_object_object_add(o, "status", kb_test_sched_parse(status));
    kb_test_sched_add_node(fx, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
}

typedef struct {
    const char *group;     /* pod group annotation or NULL */
    int gpus;              /* nvidia.com/gpu request */
    const char *node;      /* spec.nodeName (bound, Running) or NULL (pending) */
    const char *gpu_ids;   /* gpu-ids annotation or NULL */
    const char *scheduler; /* default kube-batchd */
} PodOpts;

static void add_pod(Fx *fx, const char *name, const PodOpts *po)
{
    g_autofree char *json = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"u-%s\","
            "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"annotations\":{}},"
            "\"spec\":{\"schedulerName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":"
            "{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\",\"nvidia.com/gpu\":%d}}}]},"
            "\"status\":{\"phase\":\"%s\"}}",
            name, name, po->scheduler != NULL ? po->scheduler : "kube-batchd", po->gpus,
            po->node != NULL ? "Running" : "Pending");
    json_object *o = json_tokener_parse(json);
    json_object *meta = json_object_object_get(o, "metadata");
    if (po->group != NULL)
        json_object_object_add(json_object_object_get(meta, "annotations"),
                               "scheduling.k8s.io/group-name", jstr(po->group));
    if (po->gpu_ids != NULL)
        json_object_object_add(json_object_object_get(meta, "annotations"), KB_GPU_IDS_ANNOTATION,
                               jstr(po->gpu_ids));
    if (po->node != NULL)
        json_object_object_add(json_object_object_get(o, "spec"), "nodeName", jstr(po->node));
    kb_test_sched_put_pod(fx, o);
}

static void add_group(Fx *fx, const char *name, int min)
{
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"pg-%s\"},"
            "\"spec\":{\"minMember\":%d}}",
            name, name, min);
    kb_test_sched_add_pod_group(fx, json);
}

static const KbPlacement *placement(Fx *fx, const char *name)
{
    for (guint i = 0; i < fx->res->placements->len; i++) {
        const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
        if (strcmp(p->pod->meta.name, name) == 0)
            return p;
    }
    g_error("pod %s was not placed", name);
    return NULL;
}

static guint64 ids_mask(const char *ids)
{
    guint64 m = 0;
    g_autoptr(GError) error = NULL;
    g_assert_true(kb_cache_gpu_ids_parse(ids, &m, &error));
    g_assert_no_error(error);
    return m;
}

static guint64 node_used(Fx *fx, const char *node)
{
    KbNodeInfo *ni = kb_cache_lookup_node(fx->cache, node);
    g_assert_nonnull(ni);
    return ni->gpu_used;
}

#define ISLANDS_4_4 "{\"nvlink\":[[0,1,2,3],[4,5,6,7]]}"
#define PAIRS       "{\"nvlink\":[[0,1],[2,3],[4,5],[6,7]]}"

/* ---- which indices on one node (table) ------------------------------------------------------ */

typedef struct {
    const char *path;
    const char *topology; /* annotation of node n1 (8 GPUs), NULL for none */
    const char *held[4];  /* gpu-ids of pods bound there ("-3": 3 GPUs without gpu-ids) */
    int gpus;             /* the pending pod's request */
    const char *want;     /* its gpu_ids */
} IdsCase;

static const IdsCase ids_cases[] = {
        {"/gpu-topology/ids/two-in-one-island", ISLANDS_4_4, {NULL}, 2, "0,1"},
        {"/gpu-topology/ids/island-with-room", ISLANDS_4_4, {"0,1,2"}, 2, "4,5"},
        {"/gpu-topology/ids/tightest-island", ISLANDS_4_4, {"4,5"}, 2, "6,7"},
        /* 0 and 5 held: no island has 4 free, so 3 of one island and the 4th from the other. */
        {"/gpu-topology/ids/four-across-two-islands", ISLANDS_4_4, {"0", "5"}, 4, "1,2,3,4"},
        {"/gpu-topology/ids/three-in-one-island", ISLANDS_4_4, {"0", "5"}, 3, "1,2,3"},
        {"/gpu-topology/ids/one-fills-a-broken-island", ISLANDS_4_4, {"0,1,2"}, 1, "3"},
        {"/gpu-topology/ids/pcie-inside-island",
         "{\"nvlink\":[[0,1,2,3,4,5,6,7]],\"pcie\":[[0,1],[2,3],[4,5],[6,7]]}",
         {"0", "2"},
         2,
         "4,5"},
        {"/gpu-topology/ids/numa-without-nvlink",
         "{\"numa\":[[0,1,2,3],[4,5,6,7]]}",
         {"0"},
         3,
         "1,2,3"},
        {"/gpu-topology/ids/no-annotation-is-one-island", NULL, {"0"}, 2, "1,2"},
        /* GPUs 4..7 are named by no island: each is an island alone. */
        {"/gpu-topology/ids/unnamed-gpus-are-singletons",
         "{\"nvlink\":[[0,1],[2,3]]}",
         {NULL},
         3,
         "0,1,4"},
        {"/gpu-topology/ids/fewest-islands", PAIRS, {"0", "2", "4"}, 3, "6,7,1"},
        /* A foreign pod without gpu-ids is counted on the lowest free indices (0, 1, 2). */
        {"/gpu-topology/ids/foreign-pod-lowest-free", ISLANDS_4_4, {"-3"}, 2, "4,5"},
        {"/gpu-topology/ids/malformed-is-one-island",
         "{\"nvlink\":[[0,1],[1,2]]}",
         {"0"},
         2,
         "1,2"},
};

static void test_ids_case(gconstpointer data)
{
    const IdsCase *c = data;
    Fx *fx = kb_test_sched_new(NULL);
    if (strstr(c->path, "malformed") != NULL)
        g_test_expect_message(NULL, G_LOG_LEVEL_WARNING, "*node n1*gpu-topology*one GPU island*");
    add_node(fx, "n1", 8, c->topology, NULL, NULL);
    g_test_assert_expected_messages();
    guint64 held = 0;
    for (guint i = 0; i < G_N_ELEMENTS(c->held) && c->held[i] != NULL; i++) {
        g_autofree char *name = g_strdup_printf("held-%u", i);
        gboolean foreign = c->held[i][0] == '-';
        PodOpts po = {.gpus = foreign ? atoi(c->held[i] + 1)
                                      : __builtin_popcountll(ids_mask(c->held[i])),
                      .node = "n1",
                      .gpu_ids = foreign ? NULL : c->held[i],
                      .scheduler = foreign ? "default-scheduler" : NULL};
        add_pod(fx, name, &po);
        held |= foreign ? (G_GUINT64_CONSTANT(1) << po.gpus) - 1 : ids_mask(c->held[i]);
    }
    g_assert_cmphex(node_used(fx, "n1"), ==, held);
    PodOpts po = {.gpus = c->gpus};
    add_pod(fx, "p", &po);
    kb_test_sched_run(fx);
    const KbPlacement *p = placement(fx, "p");
    g_assert_cmpstr(p->node, ==, "n1");
    g_assert_cmphex(ids_mask(p->gpu_ids), ==, ids_mask(c->want));
    /* Assumed: the cache counts the chosen indices as held. */
    g_assert_cmphex(node_used(fx, "n1"), ==, held | ids_mask(c->want));
    kb_test_sched_free(fx);
}

/* ---- which node ----------------------------------------------------------------------------- */

/* Both nodes have 4 free GPUs; only on "b" do two of them share an island. */
static void test_node_two_gpus_one_island(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "a", 8, PAIRS, NULL, NULL);
    add_node(fx, "b", 8, PAIRS, NULL, NULL);
    const char *held_a[] = {"0", "2", "4", "6"};
    for (guint i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("held-a%u", i);
        PodOpts po = {.gpus = 1, .node = "a", .gpu_ids = held_a[i]};
        add_pod(fx, name, &po);
    }
    PodOpts hb = {.gpus = 4, .node = "b", .gpu_ids = "0,1,2,3"};
    add_pod(fx, "held-b", &hb);
    PodOpts po = {.gpus = 2};
    add_pod(fx, "p", &po);
    kb_test_sched_run(fx);
    g_assert_cmpstr(placement(fx, "p")->node, ==, "b");
    g_assert_cmpstr(placement(fx, "p")->gpu_ids, ==, "4,5");
    kb_test_sched_free(fx);
}

/*
 * 4 GPUs asked. "x" (islands 0-3, 4-7; 0 and 5 held) has 6 free but no free island; "z" has only
 * 4 free, one whole island. nodeorder alone spreads to x; with gpu-topology the pod gets z's
 * island. Without z, x is used across two islands.
 */
static void test_node_four_gpus(gconstpointer data)
{
    gboolean with_z = GPOINTER_TO_INT(data);
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "x", 8, ISLANDS_4_4, NULL, NULL);
    PodOpts h0 = {.gpus = 1, .node = "x", .gpu_ids = "0"};
    PodOpts h5 = {.gpus = 1, .node = "x", .gpu_ids = "5"};
    add_pod(fx, "held-0", &h0);
    add_pod(fx, "held-5", &h5);
    if (with_z) {
        add_node(fx, "z", 8, ISLANDS_4_4, NULL, NULL);
        PodOpts hz = {.gpus = 4, .node = "z", .gpu_ids = "0,1,2,3"};
        add_pod(fx, "held-z", &hz);
    }
    PodOpts po = {.gpus = 4};
    add_pod(fx, "p", &po);
    kb_test_sched_run(fx);
    const KbPlacement *p = placement(fx, "p");
    g_assert_cmpstr(p->node, ==, with_z ? "z" : "x");
    g_assert_cmpstr(p->gpu_ids, ==, with_z ? "4,5,6,7" : "1,2,3,4");
    kb_test_sched_free(fx);
}

/*
 * A gang of 4 pods x 4 GPUs over 4 nodes x 8 GPUs in 2 racks, the racks interleaved in node order.
 * With gpu-topology: 2 nodes of one rack, one island per pod. Without it (nodeorder spreads): 4
 * nodes, no gpu-ids.
 */
static guint gang_nodes(Fx *fx, GHashTable *racks)
{
    static const char *const names[] = {"a1", "b1", "a2", "b2"};
    for (guint i = 0; i < 4; i++)
        add_node(fx, names[i], 8, ISLANDS_4_4, names[i][0] == 'a' ? "rack-a" : "rack-b", "z1");
    add_group(fx, "tf", 4);
    for (guint i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("tf-%u", i);
        PodOpts po = {.group = "tf", .gpus = 4};
        add_pod(fx, name, &po);
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->placements->len, ==, 4);
    g_autoptr(GHashTable) nodes = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < 4; i++) {
        const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
        g_hash_table_add(nodes, (gpointer)p->node);
        g_hash_table_add(racks, p->node[0] == 'a' ? "rack-a" : "rack-b");
        if (kb_conf_find_plugin(fx->conf, "gpu-topology") != NULL)
            g_assert_true(g_strcmp0(p->gpu_ids, "0,1,2,3") == 0 ||
                          g_strcmp0(p->gpu_ids, "4,5,6,7") == 0);
        else
            g_assert_null(p->gpu_ids);
    }
    return g_hash_table_size(nodes);
}

static void test_gang_packs_rack(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    g_autoptr(GHashTable) racks = g_hash_table_new(g_str_hash, g_str_equal);
    g_assert_cmpuint(gang_nodes(fx, racks), ==, 2);
    g_assert_cmpuint(g_hash_table_size(racks), ==, 1);
    kb_test_sched_free(fx);
}

/* Weight 0: no preference (nodeorder spreads the gang), but indices are still chosen. */
static void test_gang_weight_zero(void)
{
    GString *yaml = g_string_new(conf_without);
    g_string_append(yaml, "  - name: gpu-topology\n    arguments:\n      gpu-topology.weight: 0\n");
    Fx *fx = kb_test_sched_new(yaml->str);
    g_string_free(yaml, TRUE);
    g_autoptr(GHashTable) racks = g_hash_table_new(g_str_hash, g_str_equal);
    g_assert_cmpuint(gang_nodes(fx, racks), ==, 4);
    kb_test_sched_free(fx);
}

static void test_gang_plugin_off_spreads(void)
{
    Fx *fx = kb_test_sched_new(conf_without);
    g_autoptr(GHashTable) racks = g_hash_table_new(g_str_hash, g_str_equal);
    g_assert_cmpuint(gang_nodes(fx, racks), ==, 4);
    g_assert_cmpuint(g_hash_table_size(racks), ==, 2);
    kb_test_sched_free(fx);
}

/* Racks unlabelled: the zone is the next level up. 3 x 8 GPUs over zones z1 (1 node), z2 (2). */
static void test_gang_packs_zone(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n0", 8, ISLANDS_4_4, NULL, "z2");
    add_node(fx, "n1", 8, ISLANDS_4_4, NULL, "z1");
    add_node(fx, "n2", 8, ISLANDS_4_4, NULL, "z2");
    add_group(fx, "tf", 2);
    for (guint i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("tf-%u", i);
        PodOpts po = {.group = "tf", .gpus = 8};
        add_pod(fx, name, &po);
    }
    kb_test_sched_run(fx);
    g_assert_cmpstr(placement(fx, "tf-0")->node, ==, "n0");
    g_assert_cmpstr(placement(fx, "tf-1")->node, ==, "n2");
    /* 8 GPUs span the two islands of a node: all of them. */
    g_assert_cmpstr(placement(fx, "tf-1")->gpu_ids, ==, "0,1,2,3,4,5,6,7");
    kb_test_sched_free(fx);
}

/* An elastic job with members running on "busy" from an earlier cycle: the new one joins them. */
static void test_gang_joins_running_members(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "idle", 8, ISLANDS_4_4, NULL, NULL);
    add_node(fx, "busy", 8, ISLANDS_4_4, NULL, NULL);
    add_group(fx, "tf", 1);
    PodOpts r = {.group = "tf", .gpus = 2, .node = "busy", .gpu_ids = "0,1"};
    add_pod(fx, "tf-0", &r);
    PodOpts po = {.group = "tf", .gpus = 2};
    add_pod(fx, "tf-1", &po);
    kb_test_sched_run(fx);
    g_assert_cmpstr(placement(fx, "tf-1")->node, ==, "busy");
    g_assert_cmpstr(placement(fx, "tf-1")->gpu_ids, ==, "2,3");
    kb_test_sched_free(fx);
}

/* ---- bookkeeping ---------------------------------------------------------------------------- */

/*
 * Several cycles of 1-, 2- and 3-GPU pods on nodes with bound pods, some without gpu-ids: the
 * indices of a placement never overlap what is held on its node, nor each other.
 */
static void test_never_overlap(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8, PAIRS, NULL, NULL);
    add_node(fx, "n2", 8, ISLANDS_4_4, NULL, NULL);
    PodOpts f = {.gpus = 3, .node = "n1", .scheduler = "default-scheduler"};
    add_pod(fx, "foreign", &f);
    PodOpts b = {.gpus = 2, .node = "n2", .gpu_ids = "2,6"};
    add_pod(fx, "bound", &b);
    guint seq = 0;
    for (guint round = 0; round < 3; round++) {
        for (guint i = 0; i < 3; i++) {
            g_autofree char *name = g_strdup_printf("p%u", seq++);
            PodOpts po = {.gpus = 1 + (int)i};
            add_pod(fx, name, &po);
        }
        guint64 before[2] = {node_used(fx, "n1"), node_used(fx, "n2")};
        kb_test_sched_run(fx);
        guint64 given[2] = {0, 0};
        for (guint i = 0; i < fx->res->placements->len; i++) {
            const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
            guint n = strcmp(p->node, "n1") == 0 ? 0 : 1;
            guint64 m = ids_mask(p->gpu_ids);
            g_assert_cmpint(__builtin_popcountll(m), ==,
                            (int)(p->pod->requests.v[KB_RES_GPU] / KB_GPU_MILLI));
            g_assert_cmphex(m & (before[n] | given[n]), ==, 0);
            given[n] |= m;
        }
        if (round == 1)
            kb_test_sched_confirm_all(fx, TRUE); /* now bound with gpu-ids: still held */
    }
    /* 3 + 2 held, 3 rounds of 1 + 2 + 3 asked = 23 > 16: what does not fit waits. */
    KbNodeInfo *n1 = kb_cache_lookup_node(fx->cache, "n1");
    KbNodeInfo *n2 = kb_cache_lookup_node(fx->cache, "n2");
    g_assert_cmpint(__builtin_popcountll(n1->gpu_used), ==, n1->used.v[KB_RES_GPU] / KB_GPU_MILLI);
    g_assert_cmpint(__builtin_popcountll(n2->gpu_used), ==, n2->used.v[KB_RES_GPU] / KB_GPU_MILLI);
    kb_test_sched_free(fx);
}

/* A pod bound to a node the cache has not seen yet holds indices once the node arrives. */
static void test_pod_before_node(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    PodOpts f = {.gpus = 2, .node = "n1", .scheduler = "default-scheduler"};
    add_pod(fx, "foreign", &f);
    add_node(fx, "n1", 8, ISLANDS_4_4, NULL, NULL);
    g_assert_cmphex(node_used(fx, "n1"), ==, 0x3);
    PodOpts po = {.gpus = 2};
    add_pod(fx, "p", &po);
    kb_test_sched_run(fx);
    g_assert_cmpstr(placement(fx, "p")->gpu_ids, ==, "2,3");
    kb_test_sched_free(fx);
}

/* Bind failure and discard give the indices back; a deleted pod releases its indices. */
static void test_rollback_releases(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8, ISLANDS_4_4, NULL, NULL);
    add_group(fx, "tf", 2);
    for (guint i = 0; i < 2; i++) {
        g_autofree char *name = g_strdup_printf("tf-%u", i);
        PodOpts po = {.group = "tf", .gpus = 4};
        add_pod(fx, name, &po);
    }
    kb_test_sched_run(fx);
    g_assert_cmphex(node_used(fx, "n1"), ==, 0xff);
    /* A certain failure gives back that pod's indices only. */
    guint64 kept = kb_cache_lookup_task(fx->cache, "default", "tf-1")->gpu_ids;
    g_assert_true(kb_cache_bind_failed(fx->cache, "default", "tf-0", "u-tf-0", NULL));
    g_assert_cmphex(node_used(fx, "n1"), ==, kept);
    g_assert_cmphex(kb_cache_lookup_task(fx->cache, "default", "tf-0")->gpu_ids, ==, 0);
    g_assert_true(kb_cache_bind_failed(fx->cache, "default", "tf-1", "u-tf-1", NULL));
    g_assert_cmphex(node_used(fx, "n1"), ==, 0);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->placements->len, ==, 2);
    kb_test_sched_confirm_all(fx, TRUE);
    g_assert_cmphex(node_used(fx, "n1"), ==, 0xff);
    g_autoptr(KbPod) pod =
            kb_pod_decode(g_hash_table_lookup(fx->pods, "default/tf-1"), FALSE, NULL);
    guint64 ids = ids_mask(placement(fx, "tf-1")->gpu_ids);
    kb_cache_delete_pod(fx->cache, pod);
    g_assert_cmphex(node_used(fx, "n1"), ==, 0xff & ~ids);
    kb_test_sched_free(fx);
}

/* A pending pod still carrying gpu-ids from an earlier failed bind is counted on the new ones. */
static void test_stale_annotation_ignored(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_node(fx, "n1", 8, ISLANDS_4_4, NULL, NULL);
    PodOpts h = {.gpus = 2, .node = "n1", .gpu_ids = "0,1"};
    add_pod(fx, "held", &h);
    PodOpts po = {.gpus = 2, .gpu_ids = "0,1"};
    add_pod(fx, "p", &po);
    kb_test_sched_run(fx);
    g_assert_cmpstr(placement(fx, "p")->gpu_ids, ==, "2,3");
    g_assert_cmphex(node_used(fx, "n1"), ==, 0x0f);
    kb_test_sched_free(fx);
}

/* Without the plugin, or for a pod without GPUs: no gpu-ids; node choice as before. */
static void test_plugin_off(void)
{
    Fx *fx = kb_test_sched_new(conf_without);
    add_node(fx, "n1", 8, ISLANDS_4_4, NULL, NULL);
    PodOpts po = {.gpus = 2};
    add_pod(fx, "p", &po);
    PodOpts cpu = {.gpus = 0};
    add_pod(fx, "cpu", &cpu);
    kb_test_sched_run(fx);
    g_assert_null(placement(fx, "p")->gpu_ids);
    g_assert_null(placement(fx, "cpu")->gpu_ids);
    /* The cache still counts 2 indices held (the lowest free), so counts and masks agree. */
    g_assert_cmphex(node_used(fx, "n1"), ==, 0x3);
    kb_conf_free(fx->conf);
    fx->conf = kb_conf_new_default();
    PodOpts cpu2 = {.gpus = 0};
    add_pod(fx, "cpu2", &cpu2);
    kb_test_sched_run(fx);
    g_assert_null(placement(fx, "cpu2")->gpu_ids);
    g_assert_nonnull(kb_plugin_lookup("gpu-topology"));
    g_assert_nonnull(strstr(kb_plugin_names(), "gpu-topology"));
    kb_test_sched_free(fx);
}

/* A malformed annotation is logged and counted once per value; a fixed one is used. */
static void test_malformed_once(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    g_test_expect_message(NULL, G_LOG_LEVEL_WARNING, "*node n1*\"nvlink\"[0][1]*64*");
    add_node(fx, "n1", 8, "{\"nvlink\":[[0,64]]}", NULL, NULL);
    g_test_assert_expected_messages();
    add_node(fx, "n1", 8, "{\"nvlink\":[[0,64]]}", NULL, NULL); /* status heartbeat: silent */
    g_assert_cmpuint(kb_cache_gpu_topology_errors(fx->cache), ==, 1);
    KbNodeInfo *ni = kb_cache_lookup_node(fx->cache, "n1");
    g_assert_cmpuint(ni->gpu_topology->first[1], ==, 1); /* one island */
    g_assert_cmphex(ni->gpu_topology->groups[0], ==, 0xff);
    g_test_expect_message(NULL, G_LOG_LEVEL_WARNING, "*node n1*not a JSON object*");
    add_node(fx, "n1", 8, "nvlink: 0-3", NULL, NULL);
    g_test_assert_expected_messages();
    g_assert_cmpuint(kb_cache_gpu_topology_errors(fx->cache), ==, 2);
    add_node(fx, "n1", 8, PAIRS, NULL, NULL);
    ni = kb_cache_lookup_node(fx->cache, "n1");
    g_assert_cmpuint(ni->gpu_topology->first[1], ==, 4);
    g_assert_cmpuint(kb_cache_gpu_topology_errors(fx->cache), ==, 2);
    kb_test_sched_free(fx);
}

/* ---- decoders (tables) ---------------------------------------------------------------------- */

typedef struct {
    const char *text;
    gint64 n_gpus;
    int error; /* -1: valid */
    guint64 all;
    guint n_nvlink, n_pcie, n_numa;
} TopoCase;

static void test_topology_decoder(void)
{
    g_autofree char *at_limit = g_strnfill(KB_GPU_TOPOLOGY_MAX_BYTES, ' ');
    memcpy(at_limit, "{\"nvlink\":[[0,1]]}", strlen("{\"nvlink\":[[0,1]]}"));
    g_autofree char *over = g_strnfill(KB_GPU_TOPOLOGY_MAX_BYTES + 1, ' ');
    memcpy(over, "{\"nvlink\":[[0,1]]}", strlen("{\"nvlink\":[[0,1]]}"));
    const TopoCase cases[] = {
            {ISLANDS_4_4, 8, -1, 0xff, 2, 0, 0},
            {"{\"nvlink\":[[0,1],[2,3]],\"pcie\":[[0,1,2,3]],\"numa\":[[0,1,2,3]]}", 4, -1, 0xf, 2,
             1, 1},
            {"{\"nvlink\":[[0,1]]}", 4, -1, 0xf, 3, 0, 0},  /* 2 and 3 alone */
            {"{\"nvlink\":[[6,7]]}", 2, -1, 0xc3, 3, 0, 0}, /* named beyond allocatable */
            {"{\"numa\":[[0,1]],\"future\":{\"x\":1}}", 2, -1, 0x3, 2, 0, 1},
            {"{}", 2, -1, 0x3, 2, 0, 0},
            {"{\"nvlink\":[[63]]}", 0, -1, G_GUINT64_CONSTANT(1) << 63, 1, 0, 0},
            {at_limit, 2, -1, 0x3, 1, 0, 0},
            {over, 2, KB_ERROR_LIMIT, 0, 0, 0, 0},
            {"{\"nvlink\":[[0,64]]}", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
            {"{\"nvlink\":[[-1]]}", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
            {"{\"nvlink\":[[\"0\"]]}", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
            {"{\"nvlink\":[[0,1],[1,2]]}", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
            {"{\"nvlink\":[[0,0]]}", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
            {"{\"nvlink\":[[]]}", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
            {"{\"nvlink\":[0,1]}", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
            {"{\"pcie\":{\"0\":[0]}}", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
            {"{\"nvlink\":[[[0]]]}", 8, KB_ERROR_DECODE, 0, 0, 0, 0}, /* depth 4 */
            {"[[0,1]]", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
            {"{\"nvlink\":[[0,1]]} x", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
            {"", 8, KB_ERROR_DECODE, 0, 0, 0, 0},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const TopoCase *c = &cases[i];
        g_autoptr(GError) error = NULL;
        g_autofree KbGpuTopology *t = kb_cache_gpu_topology_new(c->text, c->n_gpus, &error);
        if (c->error >= 0) {
            g_assert_error(error, KB_ERROR, c->error);
            g_assert_null(t);
            continue;
        }
        g_assert_no_error(error);
        g_assert_nonnull(t);
        g_assert_cmphex(t->all, ==, c->all);
        g_assert_cmpuint(t->first[1] - t->first[0], ==, c->n_nvlink);
        g_assert_cmpuint(t->first[2] - t->first[1], ==, c->n_pcie);
        g_assert_cmpuint(t->first[3] - t->first[2], ==, c->n_numa);
    }
    /* No annotation: one island; no GPU at all: nothing. */
    g_autofree KbGpuTopology *one = kb_cache_gpu_topology_new(NULL, 100, NULL);
    g_assert_cmphex(one->all, ==, G_MAXUINT64);
    g_assert_cmpuint(one->first[1], ==, 1);
    g_assert_null(kb_cache_gpu_topology_new(NULL, 0, NULL));
}

static void test_ids_decoder(void)
{
    g_autofree char *long_ok = g_strnfill(KB_GPU_IDS_MAX_BYTES, ' ');
    long_ok[0] = '7';
    g_autofree char *too_long = g_strnfill(KB_GPU_IDS_MAX_BYTES + 1, ' ');
    too_long[0] = '7';
    const struct {
        const char *text;
        int error;
        guint64 mask;
    } cases[] = {
            {"0,1", -1, 0x3},
            {" 5 , 63", -1, 0x20 | (G_GUINT64_CONSTANT(1) << 63)},
            {long_ok, -1, 0x80},
            {too_long, KB_ERROR_LIMIT, 0},
            {"64", KB_ERROR_DECODE, 0},
            {"1,1", KB_ERROR_DECODE, 0},
            {"", KB_ERROR_DECODE, 0},
            {"0,", KB_ERROR_DECODE, 0},
            {"a", KB_ERROR_DECODE, 0},
            {"-1", KB_ERROR_DECODE, 0},
            {"1;2", KB_ERROR_DECODE, 0},
            {"99999999999999999999999", KB_ERROR_DECODE, 0},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        guint64 m = 0;
        gboolean ok = kb_cache_gpu_ids_parse(cases[i].text, &m, &error);
        if (cases[i].error >= 0) {
            g_assert_false(ok);
            g_assert_error(error, KB_ERROR, cases[i].error);
        } else {
            g_assert_no_error(error);
            g_assert_cmphex(m, ==, cases[i].mask);
        }
    }
    g_assert_null(kb_cache_gpu_ids_format(0));
    g_autofree char *s = kb_cache_gpu_ids_format(0x8000000000000013);
    g_assert_cmpstr(s, ==, "0,1,4,63");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    for (guint i = 0; i < G_N_ELEMENTS(ids_cases); i++)
        g_test_add_data_func(ids_cases[i].path, &ids_cases[i], test_ids_case);
    g_test_add_func("/gpu-topology/node/two-gpus-one-island", test_node_two_gpus_one_island);
    g_test_add_data_func("/gpu-topology/node/four-gpus-whole-island-elsewhere",
                         GINT_TO_POINTER(TRUE), test_node_four_gpus);
    g_test_add_data_func("/gpu-topology/node/four-gpus-only-node", GINT_TO_POINTER(FALSE),
                         test_node_four_gpus);
    g_test_add_func("/gpu-topology/gang/two-nodes-one-rack", test_gang_packs_rack);
    g_test_add_func("/gpu-topology/gang/plugin-off-spreads", test_gang_plugin_off_spreads);
    g_test_add_func("/gpu-topology/gang/weight-zero", test_gang_weight_zero);
    g_test_add_func("/gpu-topology/cache/pod-before-node", test_pod_before_node);
    g_test_add_func("/gpu-topology/gang/zone", test_gang_packs_zone);
    g_test_add_func("/gpu-topology/gang/joins-running-members", test_gang_joins_running_members);
    g_test_add_func("/gpu-topology/cache/never-overlap", test_never_overlap);
    g_test_add_func("/gpu-topology/cache/rollback-releases", test_rollback_releases);
    g_test_add_func("/gpu-topology/cache/stale-annotation", test_stale_annotation_ignored);
    g_test_add_func("/gpu-topology/cache/malformed-once", test_malformed_once);
    g_test_add_func("/gpu-topology/plugin-off", test_plugin_off);
    g_test_add_func("/gpu-topology/decode/topology", test_topology_decoder);
    g_test_add_func("/gpu-topology/decode/gpu-ids", test_ids_decoder);
    return g_test_run();
}
