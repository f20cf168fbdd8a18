/*
 * Tests for the object decoders and encoders of kube/kb-objects.h: realistic fixtures from
 * tests/data/objects/, malformed objects of every kind (the message names the object, the field
 * and the value), every decoder limit crossed, times, Binding and Eviction bodies.
 */
#include <glib.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-objects.h"

#define T0 G_GINT64_CONSTANT(1795323948) /* 2026-11-22T05:05:48Z */

static const char *srcdir(void)
{
    const char *d = g_getenv("KB_SRCDIR");
    return d != NULL ? d : ".";
}

static json_object *load_fixture(const char *name)
{
    g_autofree char *path = g_build_filename(srcdir(), "tests", "data", "objects", name, NULL);
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, &error));
    g_assert_no_error(error);
    json_object *obj = json_tokener_parse(text);
    g_assert_nonnull(obj);
    return obj;
}

static json_object *parse(const char *text)
{
    json_object *obj = json_tokener_parse(text);
    g_assert_nonnull(obj);
    return obj;
}

/* ---- pods ----------------------------------------------------------------------------------- */

static void test_pod_init_overhead(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("pod-init-overhead.json");
    g_autoptr(KbPod) pod = kb_pod_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_nonnull(pod);

    g_assert_cmpint(pod->meta.kind, ==, KB_KIND_POD);
    g_assert_cmpstr(pod->meta.name, ==, "trainer-worker-0");
    g_assert_true(pod->meta.namespace_ == g_intern_string("research"));
    g_assert_cmpstr(pod->meta.uid, ==, "6d3c2b7e-4f0a-4c57-9f55-1f3f2f0c1a01");
    g_assert_cmpstr(pod->meta.resource_version, ==, "184467");
    g_assert_cmpint(pod->meta.generation, ==, 2);
    g_assert_cmpint(pod->meta.creation_timestamp, ==, T0);
    g_assert_cmpint(pod->meta.deletion_timestamp, ==, 0);
    g_assert_null(pod->meta.raw);
    g_assert_cmpuint(g_hash_table_size(pod->meta.labels), ==, 3);
    g_assert_cmpstr(g_hash_table_lookup(pod->meta.labels, "tf-replica-type"), ==, "worker");
    g_assert_cmpstr(g_hash_table_lookup(pod->meta.labels, "app"), ==, "trainer");
    g_assert_cmpuint(g_hash_table_size(pod->meta.annotations), ==, 2);
    g_assert_cmpstr(g_hash_table_lookup(pod->meta.annotations,
                                        "kubectl.kubernetes.io/last-applied-configuration"),
                    ==, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}\n");
    g_assert_cmpuint(pod->meta.n_owners, ==, 1);
    g_assert_cmpstr(pod->meta.owners[0].kind, ==, "TFJob");
    g_assert_cmpstr(pod->meta.owners[0].api_version, ==, "kubeflow.org/v1");
    g_assert_cmpstr(pod->meta.owners[0].name, ==, "trainer");
    g_assert_cmpstr(pod->meta.owners[0].uid, ==, "0b1f4a5e-8c1d-4d7e-a1a2-9a3b4c5d6e7f");
    g_assert_true(pod->meta.owners[0].controller);

    g_assert_true(pod->scheduler_name == g_intern_string("kube-batchd"));
    g_assert_null(pod->node_name);
    g_assert_cmpstr(pod->priority_class_name, ==, "high");
    g_assert_true(pod->has_priority);
    g_assert_cmpint(pod->priority, ==, 1000);
    g_assert_cmpstr(pod->group_name, ==, "trainer");
    g_assert_cmpint(pod->phase, ==, KB_POD_PENDING);
    g_assert_false(kb_pod_is_terminated(pod));

    /*
     * containers: cpu 1500m+250m, memory 2Gi+128Mi, gpu 1, ephemeral 1Gi; the sidecar init
     * container adds 100m/64Mi to that (1850m, 2240Mi); the init peak is fetch-data (2 cpu,
     * 3Gi) since warmup + sidecar is only 1100m/1088Mi. max + overhead 250m/120Mi.
     */
    g_assert_cmpint(pod->requests.v[KB_RES_CPU], ==, 2250);
    g_assert_cmpint(pod->requests.v[KB_RES_MEMORY], ==, (3072 + 120) * G_GINT64_CONSTANT(1048576));
    g_assert_cmpint(pod->requests.v[KB_RES_GPU], ==, 1000);
    g_assert_cmpint(pod->requests.v[KB_RES_EPHEMERAL_STORAGE], ==, G_GINT64_CONSTANT(1) << 30);
    g_assert_cmpint(pod->requests.v[KB_RES_PODS], ==, 1);
    g_autofree char *s = kb_resources_to_string(&pod->requests);
    g_assert_cmpstr(s, ==,
                    "cpu=2250m, memory=3192Mi, pods=1, nvidia.com/gpu=1, ephemeral-storage=1Gi");
}

static void test_pod_gpu_limits_only(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("pod-gpu-limits-only.json");
    g_autoptr(KbPod) pod = kb_pod_decode(obj, TRUE, &error);
    g_assert_no_error(error);
    /* keep_raw holds a reference: the object outlives our own. */
    g_assert_true(pod->meta.raw == obj);
    json_object_put(obj);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(
                            json_object_object_get(pod->meta.raw, "metadata"), "name")),
                    ==, "gpu-burner");

    /* Requests default to limits, numbers as well as strings. */
    g_assert_cmpint(pod->requests.v[KB_RES_GPU], ==, 2000);
    g_assert_cmpint(pod->requests.v[KB_RES_CPU], ==, 500);
    g_assert_cmpint(pod->requests.v[KB_RES_MEMORY], ==, 1000000000);
    g_assert_cmpint(pod->requests.v[KB_RES_PODS], ==, 1);
    /* An empty schedulerName is the default scheduler's. */
    g_assert_true(pod->scheduler_name == g_intern_string("default-scheduler"));
    g_assert_true(pod->node_name == g_intern_string("gpu-node-7"));
    g_assert_false(pod->has_priority);
    g_assert_cmpint(pod->priority, ==, 0);
    /* scheduler-plugins' label names the group when there is no annotation. */
    g_assert_cmpstr(pod->group_name, ==, "burners");
    g_assert_cmpint(pod->phase, ==, KB_POD_RUNNING);
    g_assert_cmpint(pod->meta.creation_timestamp, ==, 1769903999);
}

static void test_pod_affinity_tolerations(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("pod-affinity-tolerations.json");
    g_autoptr(KbPod) pod = kb_pod_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);

    g_assert_cmpuint(g_hash_table_size(pod->node_selector), ==, 2);
    g_assert_cmpstr(g_hash_table_lookup(pod->node_selector, "nvidia.com/gpu.product"), ==,
                    "A100-SXM4-80GB");
    g_assert_cmpuint(g_hash_table_size(pod->meta.labels), ==, 0);
    g_assert_null(pod->group_name);

    g_assert_cmpuint(pod->n_affinity_terms, ==, 3);
    const KbNodeSelectorTerm *t0 = &pod->affinity_terms[0];
    g_assert_cmpuint(t0->n_exprs, ==, 3);
    g_assert_true(t0->exprs[0].key == g_intern_string("topology.kubernetes.io/zone"));
    g_assert_cmpint(t0->exprs[0].op, ==, KB_SELECTOR_IN);
    g_assert_cmpuint(t0->exprs[0].n_values, ==, 2);
    g_assert_true(t0->exprs[0].values[1] == g_intern_string("us-east-1b"));
    g_assert_false(t0->exprs[0].match_field);
    g_assert_cmpint(t0->exprs[1].op, ==, KB_SELECTOR_NOT_IN);
    g_assert_cmpint(t0->exprs[2].op, ==, KB_SELECTOR_GT);
    g_assert_cmpstr(t0->exprs[2].values[0], ==, "3");
    const KbNodeSelectorTerm *t1 = &pod->affinity_terms[1];
    g_assert_cmpuint(t1->n_exprs, ==, 2);
    g_assert_cmpint(t1->exprs[0].op, ==, KB_SELECTOR_EXISTS);
    g_assert_cmpuint(t1->exprs[0].n_values, ==, 0);
    g_assert_true(t1->exprs[1].match_field);
    g_assert_cmpstr(t1->exprs[1].key, ==, "metadata.name");
    g_assert_cmpstr(t1->exprs[1].values[0], ==, "node-1");
    const KbNodeSelectorTerm *t2 = &pod->affinity_terms[2];
    g_assert_cmpint(t2->exprs[0].op, ==, KB_SELECTOR_DOES_NOT_EXIST);
    g_assert_cmpint(t2->exprs[1].op, ==, KB_SELECTOR_LT);

    g_assert_cmpuint(pod->n_tolerations, ==, 5);
    const KbToleration *tl = pod->tolerations;
    g_assert_cmpstr(tl[0].key, ==, "nvidia.com/gpu");
    g_assert_true(tl[0].op_exists);
    g_assert_cmpint(tl[0].effect, ==, KB_EFFECT_NO_SCHEDULE);
    g_assert_false(tl[1].op_exists);
    g_assert_true(tl[1].value == g_intern_string("research"));
    g_assert_cmpint(tl[1].effect, ==, KB_EFFECT_NO_EXECUTE);
    /* No operator is Equal; no effect matches every effect. */
    g_assert_false(tl[2].op_exists);
    g_assert_cmpint(tl[2].effect, ==, KB_EFFECT_ALL);
    /* Empty key with Exists tolerates everything. */
    g_assert_null(tl[3].key);
    g_assert_true(tl[3].op_exists);
    g_assert_cmpint(tl[3].effect, ==, KB_EFFECT_ALL);
    g_assert_cmpint(tl[4].effect, ==, KB_EFFECT_PREFER_NO_SCHEDULE);

    /* No containers' resources: the pod still takes a pod slot. */
    KbResources want;
    kb_resources_clear(&want);
    want.v[KB_RES_PODS] = 1;
    g_assert_true(kb_resources_equal(&pod->requests, &want));
}

static void test_pod_failed(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("pod-failed.json");
    g_autoptr(KbPod) pod = kb_pod_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(pod->phase, ==, KB_POD_FAILED);
    g_assert_true(kb_pod_is_terminated(pod));
    g_assert_cmpint(pod->meta.deletion_timestamp, ==, 1795327200);
    /* Fractional seconds are dropped, not rounded. */
    g_assert_cmpint(pod->meta.creation_timestamp, ==, T0);
    g_assert_cmpint(pod->priority, ==, -5);
    g_assert_true(pod->has_priority);
    g_assert_cmpuint(pod->n_container_statuses, ==, 2);
    const KbContainerStatus *cs = pod->container_statuses;
    g_assert_cmpstr(cs[0].name, ==, "tensorflow");
    g_assert_true(cs[0].terminated);
    g_assert_false(cs[0].running);
    g_assert_cmpint(cs[0].exit_code, ==, 137);
    g_assert_cmpstr(cs[0].reason, ==, "OOMKilled");
    g_assert_cmpint(cs[0].restart_count, ==, 3);
    g_assert_true(cs[1].waiting);
    g_assert_false(cs[1].terminated);
    g_assert_cmpstr(cs[1].reason, ==, "CrashLoopBackOff");
    g_assert_cmpint(cs[1].restart_count, ==, 7);
}

static void test_pod_phases(void)
{
    static const struct {
        const char *phase;
        KbPodPhase want;
        gboolean terminated;
    } cases[] = {
            {"Pending", KB_POD_PENDING, FALSE},    {"Running", KB_POD_RUNNING, FALSE},
            {"Succeeded", KB_POD_SUCCEEDED, TRUE}, {"Failed", KB_POD_FAILED, TRUE},
            {"Unknown", KB_POD_UNKNOWN, FALSE},    {"Evicted", KB_POD_UNKNOWN, FALSE},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strdup_printf(
                "{\"metadata\":{\"name\":\"p\"},\"spec\":{},\"status\":{\"phase\":\"%s\"}}",
                cases[i].phase);
        json_object *obj = parse(text);
        g_autoptr(KbPod) pod = kb_pod_decode(obj, FALSE, NULL);
        json_object_put(obj);
        g_assert_nonnull(pod);
        g_assert_cmpint(pod->phase, ==, cases[i].want);
        g_assert_cmpint(kb_pod_is_terminated(pod), ==, cases[i].terminated);
        if (cases[i].want != KB_POD_UNKNOWN)
            g_assert_cmpstr(kb_pod_phase_to_string(pod->phase), ==, cases[i].phase);
    }
    g_assert_cmpstr(kb_pod_phase_to_string(KB_POD_UNKNOWN), ==, "Unknown");
}

/* spec.schedulingGroup wins over the annotation, which wins over the label; empty values name
 * no group. */
static void test_pod_group_name(void)
{
    static const struct {
        const char *meta;
        const char *want;
    } cases[] = {
            {"\"annotations\":{\"scheduling.k8s.io/group-name\":\"a\"}},\"spec\":{"
             "\"schedulingGroup\":{\"podGroupName\":\"native\"}",
             "native"},
            {"\"annotations\":{\"scheduling.k8s.io/group-name\":\"a\"}},\"spec\":{"
             "\"schedulingGroup\":{}",
             "a"},
            {"\"annotations\":{\"scheduling.k8s.io/group-name\":\"a\"},"
             "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"b\"}",
             "a"},
            {"\"annotations\":{\"scheduling.k8s.io/group-name\":\"\"},"
             "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"b\"}",
             "b"},
            {"\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"\"}", NULL},
            {"\"labels\":{\"pod-group\":\"x\"}", NULL},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text =
                strstr(cases[i].meta, "\"spec\"") != NULL
                        ? g_strdup_printf("{\"metadata\":{\"name\":\"p\",%s}}", cases[i].meta)
                        : g_strdup_printf("{\"metadata\":{\"name\":\"p\",%s},\"spec\":{}}",
                                          cases[i].meta);
        json_object *obj = parse(text);
        g_autoptr(KbPod) pod = kb_pod_decode(obj, FALSE, NULL);
        json_object_put(obj);
        g_assert_nonnull(pod);
        g_assert_cmpstr(pod->group_name, ==, cases[i].want);
    }
}

/* A request of 0 given explicitly is kept even when a limit exists (API server defaulting only
 * fills in missing requests); whitespace around quantities is trimmed as UnmarshalJSON does. */
static void test_pod_request_defaulting(void)
{
    json_object *obj =
            parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"resources\":{"
                  "\"requests\":{\"cpu\":\"0\",\"memory\":\" 1Gi \"},"
                  "\"limits\":{\"cpu\":\"2\",\"memory\":\"2Gi\",\"nvidia.com/gpu\":\"1\"}}}]}}");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(pod->requests.v[KB_RES_CPU], ==, 0);
    g_assert_cmpint(pod->requests.v[KB_RES_MEMORY], ==, G_GINT64_CONSTANT(1) << 30);
    g_assert_cmpint(pod->requests.v[KB_RES_GPU], ==, 1000);
}

/* ---- nodes ---------------------------------------------------------------------------------- */

static void test_node_gpu_tainted(void)
{
    g_autoptr(GError) error = NULL;
    int slots_before = kb_resource_count();
    json_object *obj = load_fixture("node-gpu-tainted.json");
    g_autoptr(KbNode) node = kb_node_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(node->meta.kind, ==, KB_KIND_NODE);
    g_assert_null(node->meta.namespace_);
    g_autofree char *key = kb_object_key(&node->meta);
    g_assert_cmpstr(key, ==, "gpu-node-7");

    g_assert_cmpint(node->allocatable.v[KB_RES_CPU], ==, 95500);
    g_assert_cmpint(node->allocatable.v[KB_RES_MEMORY], ==, G_GINT64_CONSTANT(1070158426112));
    g_assert_cmpint(node->allocatable.v[KB_RES_GPU], ==, 8000);
    g_assert_cmpint(node->allocatable.v[KB_RES_PODS], ==, 110);
    g_assert_cmpint(node->allocatable.v[KB_RES_EPHEMERAL_STORAGE], ==,
                    G_GINT64_CONSTANT(441586313242));
    g_assert_cmpint(node->capacity.v[KB_RES_CPU], ==, 96000);
    g_assert_cmpint(node->capacity.v[KB_RES_MEMORY], ==, G_GINT64_CONSTANT(1081969586176));
    /* hugepages-* at 0 take no extended-resource slot. */
    g_assert_cmpint(kb_resource_count(), ==, slots_before);

    g_assert_cmpuint(node->n_taints, ==, 2);
    g_assert_true(node->taints[0].key == g_intern_string("nvidia.com/gpu"));
    g_assert_cmpstr(node->taints[0].value, ==, "present");
    g_assert_cmpint(node->taints[0].effect, ==, KB_EFFECT_NO_SCHEDULE);
    g_assert_null(node->taints[1].value);
    g_assert_cmpint(node->taints[1].effect, ==, KB_EFFECT_PREFER_NO_SCHEDULE);
    g_assert_true(node->ready);
    g_assert_false(node->unschedulable);
    g_assert_cmpstr(g_hash_table_lookup(node->meta.labels, "nvidia.com/gpu.product"), ==,
                    "A100-SXM4-80GB");
}

static void test_node_not_ready(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("node-not-ready.json");
    g_autoptr(KbNode) node = kb_node_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_false(node->ready);
    g_assert_true(node->unschedulable);
    /* No allocatable: capacity is what can be allocated. */
    g_assert_true(kb_resources_equal(&node->allocatable, &node->capacity));
    g_assert_cmpint(node->allocatable.v[KB_RES_CPU], ==, 8000);
    g_assert_cmpint(node->allocatable.v[KB_RES_MEMORY], ==, G_GINT64_CONSTANT(32) << 30);
    g_assert_cmpuint(node->n_taints, ==, 1);
    g_assert_cmpint(node->taints[0].effect, ==, KB_EFFECT_NO_EXECUTE);
}

/* A node with no conditions at all is not Ready. */
static void test_node_no_status(void)
{
    json_object *obj = parse("{\"metadata\":{\"name\":\"bare\"}}");
    g_autoptr(KbNode) node = kb_node_decode(obj, FALSE, NULL);
    json_object_put(obj);
    g_assert_nonnull(node);
    g_assert_false(node->ready);
    g_assert_true(kb_resources_is_zero(&node->allocatable));
    g_assert_cmpuint(node->n_taints, ==, 0);
}

/* ---- pod groups, queues, priority classes, leases ------------------------------------------ */

static void test_podgroup_kube_batch(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("podgroup-kube-batch.json");
    g_autoptr(KbPodGroup) pg = kb_pod_group_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(pg->meta.kind, ==, KB_KIND_POD_GROUP);
    g_assert_cmpint(pg->dialect, ==, KB_PODGROUP_KUBE_BATCH);
    g_assert_cmpint(pg->min_member, ==, 3);
    g_assert_true(pg->queue == g_intern_string("research"));
    g_assert_cmpstr(pg->priority_class_name, ==, "high");
    g_assert_true(kb_resources_is_zero(&pg->min_resources));
    g_assert_cmpint(pg->schedule_timeout_seconds, ==, 0);
    g_assert_cmpstr(pg->phase, ==, "Pending");
}

static void test_podgroup_volcano(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("podgroup-volcano.json");
    g_autoptr(KbPodGroup) pg = kb_pod_group_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(pg->dialect, ==, KB_PODGROUP_VOLCANO);
    g_assert_cmpint(pg->min_member, ==, 8);
    g_assert_cmpstr(pg->queue, ==, "gpu");
    g_assert_null(pg->priority_class_name);
    g_assert_cmpint(pg->min_resources.v[KB_RES_CPU], ==, 16000);
    g_assert_cmpint(pg->min_resources.v[KB_RES_MEMORY], ==, G_GINT64_CONSTANT(64) << 30);
    g_assert_cmpint(pg->min_resources.v[KB_RES_GPU], ==, 8000);
    g_assert_cmpint(pg->min_resources.v[KB_RES_PODS], ==, 0);
    g_assert_cmpstr(pg->phase, ==, "Inqueue");
    g_assert_cmpuint(pg->meta.n_owners, ==, 1);
}

/* Volcano's subGroupPolicy: read as written; each limit and malformed member refused, naming
 * the field. */
static KbPodGroup *volcano_with(const char *spec, GError **error)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"tf\",\"namespace\":\"ns\"},\"spec\":{\"minMember\":25%s}}",
            spec);
    json_object *o = json_tokener_parse(text);
    g_assert_nonnull(o);
    KbPodGroup *pg = kb_pod_group_decode(o, FALSE, error);
    json_object_put(o);
    return pg;
}

static void test_podgroup_sub_groups(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPodGroup) pg = volcano_with(
            ",\"subGroupPolicy\":[{\"name\":\"workers\",\"subGroupSize\":8,\"minSubGroups\":3,"
            "\"labelSelector\":{\"matchLabels\":{\"role\":\"worker\"}},\"matchLabelKeys\":"
            "[\"group\"],\"networkTopology\":{\"mode\":\"hard\",\"highestTierName\":\"rack\"}},"
            "{\"name\":\"ps\",\"networkTopology\":{\"mode\":\"soft\",\"highestTierName\":"
            "\"rack\"}}]",
            &error);
    g_assert_no_error(error);
    g_assert_cmpuint(pg->n_sub_groups, ==, 2);
    const KbSubGroupPolicy *w = &pg->sub_groups[0];
    g_assert_cmpstr(w->name, ==, "workers");
    g_assert_cmpint(w->size, ==, 8);
    g_assert_cmpint(w->min_groups, ==, 3);
    g_assert_cmpstr(g_hash_table_lookup(w->match_labels, "role"), ==, "worker");
    g_assert_cmpuint(w->n_keys, ==, 1);
    g_assert_cmpstr(w->keys[0], ==, "group");
    g_assert_cmpstr(w->topology_key, ==, "rack");
    g_assert_null(pg->sub_groups[1].match_labels);
    g_assert_cmpint(pg->sub_groups[1].size, ==, 0);
    g_assert_null(pg->sub_groups[1].topology_key); /* soft asks for nothing */

    g_autoptr(GString) many = g_string_new(",\"subGroupPolicy\":[");
    for (int i = 0; i <= KB_MAX_SUB_GROUP_POLICIES; i++)
        g_string_append_printf(many, "%s{\"name\":\"p%d\"}", i > 0 ? "," : "", i);
    g_string_append(many, "]");
    g_autoptr(GString) keys = g_string_new(",\"subGroupPolicy\":[{\"matchLabelKeys\":[");
    for (int i = 0; i <= KB_MAX_MATCH_LABEL_KEYS; i++)
        g_string_append_printf(keys, "%s\"k%d\"", i > 0 ? "," : "", i);
    g_string_append(keys, "]}]");
    const struct {
        const char *spec;
        const char *message;
    } bad[] = {
            {many->str, "spec.subGroupPolicy"},
            {keys->str, "spec.subGroupPolicy[0].matchLabelKeys"},
            {",\"subGroupPolicy\":[{\"subGroupSize\":0}]", "spec.subGroupPolicy[0].subGroupSize"},
            {",\"subGroupPolicy\":[{\"minSubGroups\":-1}]", "spec.subGroupPolicy[0].minSubGroups"},
            {",\"subGroupPolicy\":[{\"matchLabelKeys\":[\"\"]}]",
             "spec.subGroupPolicy[0].matchLabelKeys[0]"},
            {",\"subGroupPolicy\":[{\"labelSelector\":{\"matchExpressions\":[]}}]",
             "spec.subGroupPolicy[0].labelSelector.matchExpressions: not supported"},
            {",\"subGroupPolicy\":[{\"networkTopology\":{\"mode\":\"strict\"}}]",
             "spec.subGroupPolicy[0].networkTopology.mode: Unsupported value: \"strict\""},
            {",\"subGroupPolicy\":{}", "spec.subGroupPolicy"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) e = NULL;
        g_autoptr(KbPodGroup) none = volcano_with(bad[i].spec, &e);
        g_assert_null(none);
        g_assert_nonnull(e);
        if (strstr(e->message, bad[i].message) == NULL)
            g_error("case %u: \"%s\" lacks \"%s\"", i, e->message, bad[i].message);
        g_assert_nonnull(strstr(e->message, "ns/tf"));
    }
}

static void test_podgroup_x_k8s(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("podgroup-x-k8s.json");
    g_autoptr(KbPodGroup) pg = kb_pod_group_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(pg->dialect, ==, KB_PODGROUP_X_K8S);
    g_assert_cmpint(pg->min_member, ==, 2);
    g_assert_null(pg->queue);
    g_assert_cmpint(pg->min_resources.v[KB_RES_GPU], ==, 4000);
    g_assert_cmpint(pg->schedule_timeout_seconds, ==, 60);
    g_assert_null(pg->phase);
}

/* Kubernetes' own PodGroup, every field kube-batchd reads. */
static void test_podgroup_native(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("podgroup-native.json");
    g_autoptr(KbPodGroup) pg = kb_pod_group_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(pg->dialect, ==, KB_PODGROUP_NATIVE);
    g_assert_cmpstr(kb_pod_group_api_version(pg->dialect), ==, "scheduling.k8s.io/v1beta1");
    g_assert_cmpint(pg->min_member, ==, 4);
    g_assert_cmpstr(pg->queue, ==, "research");
    g_assert_cmpstr(pg->priority_class_name, ==, "high");
    g_assert_true(pg->has_priority);
    g_assert_cmpint(pg->priority, ==, 1000);
    g_assert_true(pg->preempt_never);
    g_assert_true(pg->disruption_all);
    g_assert_cmpstr(pg->topology_key, ==, "topology.kubernetes.io/rack");
    g_assert_cmpstr(pg->workload_name, ==, "train");
    g_assert_cmpstr(pg->workload_template, ==, "workers");
    g_assert_cmpstr(pg->scheduled_status, ==, "False");
    g_assert_cmpstr(pg->scheduled_message, ==, "3/4 pods placeable");
    g_assert_cmpstr(pg->scheduled_since, ==, "2026-08-20T10:00:05Z");
}

/* As a list of the built-in type gives it: no apiVersion. Another API is refused. */
static void test_podgroup_native_listed(void)
{
    json_object *obj = parse("{\"metadata\":{\"name\":\"pg\",\"namespace\":\"ns\"},\"spec\":{"
                             "\"schedulingPolicy\":{\"gang\":{\"minCount\":3}}}}");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPodGroup) pg = kb_pod_group_decode_native(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(pg->dialect, ==, KB_PODGROUP_NATIVE);
    g_assert_cmpint(pg->min_member, ==, 3);
    obj = parse("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"metadata\":{\"name\":"
                "\"pg\",\"namespace\":\"ns\"},\"spec\":{}}");
    g_autoptr(KbPodGroup) other = kb_pod_group_decode_native(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_null(other);
    g_assert_cmpstr(error->message, ==,
                    "podgroup ns/pg: apiVersion: \"scheduling.volcano.sh/v1beta1\" where "
                    "scheduling.k8s.io/v1beta1 was listed");
}

/* v1alpha3: the same PodGroup with a parent CompositePodGroup; v1beta1 has no such field. */
static void test_podgroup_v1alpha3(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("podgroup-v1alpha3-child.json");
    g_autoptr(KbPodGroup) pg = kb_pod_group_decode(obj, FALSE, &error);
    g_assert_no_error(error);
    g_autoptr(KbPodGroup) listed = kb_pod_group_decode_v1alpha3(obj, FALSE, &error);
    g_assert_no_error(error);
    g_autoptr(KbPodGroup) beta = kb_pod_group_decode_native(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_null(beta);
    g_assert_cmpstr(error->message, ==,
                    "podgroup ml/train-g0: apiVersion: \"scheduling.k8s.io/v1alpha3\" where "
                    "scheduling.k8s.io/v1beta1 was listed");
    g_clear_error(&error);
    for (KbPodGroup **p = (KbPodGroup *[]){pg, listed, NULL}; *p != NULL; p++) {
        g_assert_cmpint((*p)->dialect, ==, KB_PODGROUP_NATIVE);
        g_assert_true((*p)->v1alpha3);
        g_assert_false((*p)->composite);
        g_assert_cmpstr((*p)->parent, ==, "train");
        g_assert_cmpint((*p)->min_member, ==, 2);
        g_assert_cmpstr((*p)->topology_key, ==, "topology.kubernetes.io/rack");
    }
    obj = parse("{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"metadata\":{\"name\":\"pg\","
                "\"namespace\":\"ns\"},\"spec\":{\"parentCompositePodGroupName\":\"train\","
                "\"schedulingPolicy\":{\"basic\":{}}}}");
    g_autoptr(KbPodGroup) v1beta1 = kb_pod_group_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_false(v1beta1->v1alpha3);
    g_assert_null(v1beta1->parent);
}

/* CompositePodGroup: every field read, listed without apiVersion, basic. */
static void test_composite_pod_group(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("compositepodgroup.json");
    g_autoptr(KbPodGroup) cpg = kb_composite_pod_group_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_true(cpg->composite);
    g_assert_true(cpg->v1alpha3);
    g_assert_cmpint(cpg->dialect, ==, KB_PODGROUP_NATIVE);
    g_assert_cmpint(cpg->min_groups, ==, 3);
    g_assert_cmpint(cpg->min_member, ==, 1);
    g_assert_null(cpg->parent);
    g_assert_cmpstr(cpg->queue, ==, "research");
    g_assert_cmpstr(cpg->topology_key, ==, "topology.kubernetes.io/zone");
    g_assert_cmpstr(cpg->workload_name, ==, "train");
    g_assert_cmpstr(cpg->workload_template, ==, "all");
    g_assert_true(cpg->disruption_all);
    g_assert_true(cpg->has_priority);
    g_assert_cmpint(cpg->priority, ==, 100);
    g_assert_false(cpg->preempt_never);
    /* its own condition type, CompositePodGroupInitiallyScheduled, not a PodGroup's */
    g_assert_cmpstr(cpg->scheduled_status, ==, "False");
    g_assert_cmpstr(cpg->scheduled_message, ==, "2/3 groups");

    obj = parse("{\"metadata\":{\"name\":\"inner\",\"namespace\":\"ns\"},\"spec\":{"
                "\"parentCompositePodGroupName\":\"outer\",\"schedulingPolicy\":{\"basic\":{}}}}");
    g_autoptr(KbPodGroup) basic = kb_composite_pod_group_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_true(basic->composite);
    g_assert_cmpint(basic->min_groups, ==, 0);
    g_assert_cmpstr(basic->parent, ==, "outer");
    g_assert_false(basic->disruption_all);
}

/* basic: each pod alone; the queue from the annotation when no label names one; defaults. */
static void test_podgroup_native_basic(void)
{
    json_object *obj = parse("{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"metadata\":{"
                             "\"name\":\"pg\",\"namespace\":\"ns\",\"annotations\":{"
                             "\"kube-batchd.io/queue\":\"q2\"}},\"spec\":{\"schedulingPolicy\":{"
                             "\"basic\":{}},\"disruptionMode\":{\"single\":{}}}}");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPodGroup) pg = kb_pod_group_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(pg->min_member, ==, 1);
    g_assert_cmpstr(pg->queue, ==, "q2");
    g_assert_false(pg->disruption_all);
    g_assert_false(pg->has_priority);
    g_assert_false(pg->preempt_never);
    g_assert_null(pg->topology_key);
    g_assert_null(pg->workload_name);
    g_assert_null(pg->scheduled_status);
}

/* minMember absent or 0 is a gang of one. */
static void test_podgroup_min_member_default(void)
{
    static const char *const specs[] = {"{}", "{\"minMember\":0}", "{\"minMember\":null}"};
    for (gsize i = 0; i < G_N_ELEMENTS(specs); i++) {
        g_autofree char *text = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"metadata\":{\"name\":\"pg\","
                "\"namespace\":\"ns\"},\"spec\":%s}",
                specs[i]);
        json_object *obj = parse(text);
        g_autoptr(KbPodGroup) pg = kb_pod_group_decode(obj, FALSE, NULL);
        json_object_put(obj);
        g_assert_nonnull(pg);
        g_assert_cmpint(pg->min_member, ==, 1);
    }
}

static void test_queue_volcano(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("queue-volcano.json");
    g_autoptr(KbQueue) q = kb_queue_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(q->meta.kind, ==, KB_KIND_QUEUE);
    g_assert_null(q->meta.namespace_);
    g_assert_cmpint(q->meta.generation, ==, 3);
    g_assert_cmpint(q->weight, ==, 4);
    g_assert_false(q->reclaimable);
    g_assert_true(q->parent == g_intern_string("root"));
    g_assert_false(q->open);
    g_assert_cmpint(q->capability.v[KB_RES_CPU], ==, 64000);
    g_assert_cmpint(q->capability.v[KB_RES_MEMORY], ==, G_GINT64_CONSTANT(256) << 30);
    g_assert_cmpint(q->capability.v[KB_RES_GPU], ==, 16000);
    /* Not listed: unlimited. */
    g_assert_cmpint(q->capability.v[KB_RES_PODS], ==, KB_RESOURCE_UNLIMITED);
    g_assert_cmpint(q->capability.v[KB_RES_EPHEMERAL_STORAGE], ==, KB_RESOURCE_UNLIMITED);
    g_assert_cmpint(q->guarantee.v[KB_RES_CPU], ==, 8000);
    g_assert_cmpint(q->guarantee.v[KB_RES_GPU], ==, 2000);
    g_assert_cmpint(q->guarantee.v[KB_RES_MEMORY], ==, 0);
}

/* status.usage (what kube-batchd writes, scheduler/status-writer.h) is read back in slot units
 * (cpu in milli-core-seconds); a bad figure is an error naming the field and the value; more
 * resources than KB_USAGE_MAX_RESOURCES is refused. */
static void test_queue_usage(void)
{
    static const struct {
        const char *usage;
        const char *error; /* NULL: decodes */
    } cases[] = {
            {"{\"time\":\"2026-11-27T07:00:00Z\",\"resourceSeconds\":{\"nvidia.com/gpu\":3600,"
             "\"cpu\":1.5,\"memory\":2e12,\"example.com/other\":7}}",
             NULL},
            {"{\"time\":\"2026-11-27T07:00:00Z\",\"resourceSeconds\":{\"nvidia.com/gpu\":-1}}",
             "queue q1: status.usage.resourceSeconds.nvidia.com/gpu: expected a number >= 0, got "
             "-1"},
            {"{\"time\":\"2026-11-27T07:00:00Z\",\"resourceSeconds\":{\"cpu\":\"12\"}}",
             "queue q1: status.usage.resourceSeconds.cpu: expected a number >= 0, got \"12\""},
            {"{\"time\":\"yesterday\",\"resourceSeconds\":{}}", "status.usage.time"},
            {"{\"time\":\"2026-11-27T07:00:00Z\",\"resourceSeconds\":[]}",
             "status.usage.resourceSeconds: expected an object"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\","
                "\"metadata\":{\"name\":\"q1\"},\"status\":{\"usage\":%s}}",
                cases[i].usage);
        json_object *obj = json_tokener_parse(text);
        g_assert_nonnull(obj);
        g_autoptr(GError) error = NULL;
        g_autoptr(KbQueue) q = kb_queue_decode(obj, FALSE, &error);
        json_object_put(obj);
        if (cases[i].error == NULL) {
            g_assert_no_error(error);
            g_assert_cmpint(q->usage_time, ==, 1795762800);
            g_assert_cmpfloat(q->usage[KB_RES_GPU], ==, 3600000);
            g_assert_cmpfloat(q->usage[KB_RES_CPU], ==, 1500);
            g_assert_cmpfloat(q->usage[KB_RES_MEMORY], ==, 2e12);
            continue;
        }
        g_assert_null(q);
        g_assert_nonnull(error);
        if (strstr(error->message, cases[i].error) == NULL)
            g_error("case %u: %s", i, error->message);
    }
    /* Crossing the limit on resources. */
    GString *text = g_string_new("{\"kind\":\"Queue\",\"metadata\":{\"name\":\"q1\"},"
                                 "\"status\":{\"usage\":{\"time\":\"2026-11-27T07:00:00Z\","
                                 "\"resourceSeconds\":{");
    for (int i = 0; i <= KB_USAGE_MAX_RESOURCES; i++)
        g_string_append_printf(text, "%s\"example.com/r%d\":1", i > 0 ? "," : "", i);
    g_string_append(text, "}}}}");
    json_object *obj = json_tokener_parse(text->str);
    g_string_free(text, TRUE);
    g_assert_nonnull(obj);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbQueue) q = kb_queue_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_null(q);
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    /* Without usage: none. */
    obj = json_tokener_parse("{\"kind\":\"Queue\",\"metadata\":{\"name\":\"q1\"},"
                             "\"status\":{\"state\":\"Open\"}}");
    g_autoptr(KbQueue) q2 = kb_queue_decode(obj, FALSE, NULL);
    json_object_put(obj);
    g_assert_nonnull(q2);
    g_assert_cmpint(q2->usage_time, ==, 0);
}

/*
 * Where the Queue's CRD prunes status.usage and status.runtimeHistory (Volcano's own), kube-batchd
 * keeps them in annotations: both places are read and the newer time wins; a bad annotation is
 * refused naming it.
 */
static void test_queue_usage_annotations(void)
{
    static const struct {
        const char *status;      /* status members, or "" */
        const char *annotations; /* metadata.annotations members */
        double gpu;              /* usage read, or -1: refused */
        guint history;           /* runtimes read in bucket "1" */
        const char *error;
    } cases[] = {
            /* Annotations alone. */
            {"",
             "\"kube-batchd.io/usage\":\"{\\\"time\\\":\\\"2026-11-27T07:00:00Z\\\","
             "\\\"resourceSeconds\\\":{\\\"nvidia.com/gpu\\\":7200}}\","
             "\"kube-batchd.io/runtime-history\":\"{\\\"time\\\":\\\"2026-11-27T07:00:00Z\\\","
             "\\\"runtimeSeconds\\\":{\\\"1\\\":[60,120]}}\"",
             7200, 2, NULL},
            /* The annotation is newer than the status: it wins. */
            {"\"usage\":{\"time\":\"2026-11-27T06:00:00Z\",\"resourceSeconds\":{\"nvidia.com/gpu\":"
             "100}}",
             "\"kube-batchd.io/usage\":\"{\\\"time\\\":\\\"2026-11-27T07:00:00Z\\\","
             "\\\"resourceSeconds\\\":{\\\"nvidia.com/gpu\\\":7200}}\"",
             7200, 0, NULL},
            /* The status is newer (an older kube-batchd's annotation left behind): it wins. */
            {"\"usage\":{\"time\":\"2026-11-27T08:00:00Z\",\"resourceSeconds\":{\"nvidia.com/gpu\":"
             "100}},\"runtimeHistory\":{\"time\":\"2026-11-27T08:00:00Z\",\"runtimeSeconds\":{"
             "\"1\":[5]}}",
             "\"kube-batchd.io/usage\":\"{\\\"time\\\":\\\"2026-11-27T07:00:00Z\\\","
             "\\\"resourceSeconds\\\":{\\\"nvidia.com/gpu\\\":7200}}\","
             "\"kube-batchd.io/runtime-history\":\"{\\\"time\\\":\\\"2026-11-27T07:00:00Z\\\","
             "\\\"runtimeSeconds\\\":{\\\"1\\\":[60,120]}}\"",
             100, 1, NULL},
            {"", "\"kube-batchd.io/usage\":\"lots\"", -1, 0,
             "queue q1: metadata.annotations[kube-batchd.io/usage]: expected a JSON object, got "
             "\"lots\""},
            {"",
             "\"kube-batchd.io/usage\":\"{\\\"time\\\":\\\"2026-11-27T07:00:00Z\\\","
             "\\\"resourceSeconds\\\":{\\\"cpu\\\":-1}}\"",
             -1, 0,
             "queue q1: metadata.annotations[kube-batchd.io/usage]: usage.resourceSeconds.cpu: "
             "expected a number >= 0, got -1"},
            {"", "\"kube-batchd.io/runtime-history\":\"[1]\"", -1, 0,
             "queue q1: metadata.annotations[kube-batchd.io/runtime-history]: runtimeHistory: "},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\","
                "\"metadata\":{\"name\":\"q1\",\"annotations\":{%s}},\"status\":{%s}}",
                cases[i].annotations, cases[i].status);
        json_object *obj = json_tokener_parse(text);
        if (obj == NULL)
            g_error("case %u: not JSON: %s", i, text);
        g_autoptr(GError) error = NULL;
        g_autoptr(KbQueue) q = kb_queue_decode(obj, FALSE, &error);
        json_object_put(obj);
        if (cases[i].error != NULL) {
            g_assert_null(q);
            g_assert_nonnull(error);
            if (strstr(error->message, cases[i].error) == NULL)
                g_error("case %u: %s", i, error->message);
            continue;
        }
        g_assert_no_error(error);
        /* GPU-seconds are kept in milli-GPU-seconds */
        g_assert_cmpfloat(q->usage[KB_RES_GPU], ==, cases[i].gpu * KB_GPU_MILLI);
        g_assert_cmpuint(q->history != NULL ? q->history->n[1] : 0, ==, cases[i].history);
    }
}

/* status.runtimeHistory (scheduler/history.h) is read back per size bucket, oldest first; a bad
 * bucket or runtime is an error naming it; more than KB_QUEUE_HISTORY_KEEP runtimes is refused. */
static void test_queue_history(void)
{
    static const struct {
        const char *history;
        const char *error; /* NULL: decodes */
    } cases[] = {
            {"{\"time\":\"2026-11-27T07:00:00Z\",\"runtimeSeconds\":{\"1\":[60,120],"
             "\"17+\":[86400]}}",
             NULL},
            {"{\"time\":\"2026-11-27T07:00:00Z\",\"runtimeSeconds\":{\"3\":[60]}}",
             "queue q1: status.runtimeHistory.runtimeSeconds: unknown size bucket \"3\""},
            {"{\"time\":\"2026-11-27T07:00:00Z\",\"runtimeSeconds\":{\"1\":[60,0]}}",
             "status.runtimeHistory.runtimeSeconds.1[1]: expected whole seconds from 1 to "
             "1099511627776, got 0"},
            {"{\"time\":\"2026-11-27T07:00:00Z\",\"runtimeSeconds\":{\"2-4\":[\"60\"]}}",
             "runtimeSeconds.2-4[0]: expected whole seconds"},
            {"{\"time\":\"2026-11-27T07:00:00Z\",\"runtimeSeconds\":{\"1\":60}}",
             "runtimeSeconds.1: expected an array, got 60"},
            {"{\"time\":\"soon\",\"runtimeSeconds\":{}}", "status.runtimeHistory.time"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\","
                "\"metadata\":{\"name\":\"q1\"},\"status\":{\"runtimeHistory\":%s}}",
                cases[i].history);
        json_object *obj = json_tokener_parse(text);
        g_assert_nonnull(obj);
        g_autoptr(GError) error = NULL;
        g_autoptr(KbQueue) q = kb_queue_decode(obj, FALSE, &error);
        json_object_put(obj);
        if (cases[i].error == NULL) {
            g_assert_no_error(error);
            g_assert_nonnull(q->history);
            g_assert_cmpint(q->history->time, ==, 1795762800);
            g_assert_cmpuint(q->history->n[1], ==, 2);
            g_assert_cmpint(q->history->runtime[1][0], ==, 60);
            g_assert_cmpint(q->history->runtime[1][1], ==, 120);
            g_assert_cmpuint(q->history->n[5], ==, 1);
            g_assert_cmpint(q->history->runtime[5][0], ==, 86400);
            g_assert_cmpuint(q->history->n[0] + q->history->n[2], ==, 0);
            continue;
        }
        g_assert_null(q);
        g_assert_nonnull(error);
        if (strstr(error->message, cases[i].error) == NULL)
            g_error("case %u: %s", i, error->message);
    }
    /* Crossing the limit on runtimes per bucket. */
    GString *text = g_string_new("{\"kind\":\"Queue\",\"metadata\":{\"name\":\"q1\"},"
                                 "\"status\":{\"runtimeHistory\":{\"time\":"
                                 "\"2026-11-27T07:00:00Z\",\"runtimeSeconds\":{\"1\":[");
    for (int i = 0; i <= KB_QUEUE_HISTORY_KEEP; i++)
        g_string_append_printf(text, "%s60", i > 0 ? "," : "");
    g_string_append(text, "]}}}}");
    json_object *obj = json_tokener_parse(text->str);
    g_string_free(text, TRUE);
    g_assert_nonnull(obj);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbQueue) q = kb_queue_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_null(q);
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    /* Without it: none. */
    obj = json_tokener_parse("{\"kind\":\"Queue\",\"metadata\":{\"name\":\"q1\"},"
                             "\"status\":{\"state\":\"Open\"}}");
    g_autoptr(KbQueue) q2 = kb_queue_decode(obj, FALSE, NULL);
    json_object_put(obj);
    g_assert_nonnull(q2);
    g_assert_null(q2->history);
}

static void test_queue_defaults(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("queue-minimal.json");
    g_autoptr(KbQueue) q = kb_queue_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(q->weight, ==, 1);
    g_assert_true(q->reclaimable);
    g_assert_true(q->open);
    g_assert_null(q->parent);
    /* {"cpu": 0} is a capability of no cpu, not "unlimited". */
    g_assert_cmpint(q->capability.v[KB_RES_CPU], ==, 0);
    g_assert_cmpint(q->capability.v[KB_RES_GPU], ==, KB_RESOURCE_UNLIMITED);
    g_assert_true(kb_resources_is_zero(&q->guarantee));
    g_assert_cmpint(q->deserved.v[KB_RES_GPU], ==, -1); /* not given: the weight split */

    json_object *bare = parse("{\"metadata\":{\"name\":\"q\"},\"status\":{\"state\":\"Open\"}}");
    g_autoptr(KbQueue) b = kb_queue_decode(bare, FALSE, &error);
    json_object_put(bare);
    g_assert_no_error(error);
    g_assert_cmpint(b->weight, ==, 1);
    g_assert_true(b->open);
    KbResources unlimited;
    kb_resources_set_unlimited(&unlimited);
    g_assert_true(kb_resources_equal(&b->capability, &unlimited));
}

static void test_priority_class(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("priorityclass.json");
    g_autoptr(KbPriorityClass) pc = kb_priority_class_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(pc->meta.kind, ==, KB_KIND_PRIORITY_CLASS);
    g_assert_cmpint(pc->value, ==, 1000000);
    g_assert_false(pc->global_default);
    g_assert_true(pc->preempt_never);

    json_object *def = parse("{\"metadata\":{\"name\":\"d\"},\"value\":-10,\"globalDefault\":true,"
                             "\"preemptionPolicy\":\"PreemptLowerPriority\"}");
    g_autoptr(KbPriorityClass) d = kb_priority_class_decode(def, FALSE, &error);
    json_object_put(def);
    g_assert_no_error(error);
    g_assert_cmpint(d->value, ==, -10);
    g_assert_true(d->global_default);
    g_assert_false(d->preempt_never);
}

static void test_lease(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = load_fixture("lease.json");
    g_autoptr(KbLease) lease = kb_lease_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpint(lease->meta.kind, ==, KB_KIND_LEASE);
    g_assert_cmpstr(lease->holder_identity, ==, "kube-batchd-7d9f_3f2a");
    g_assert_cmpint(lease->lease_duration_seconds, ==, 15);
    g_assert_cmpint(lease->lease_transitions, ==, 4);
    g_assert_cmpint(lease->acquire_time_us, ==, T0 * G_USEC_PER_SEC + 123456);
    g_assert_cmpint(lease->renew_time_us, ==, (T0 + 15) * G_USEC_PER_SEC + 1);
    g_autofree char *key = kb_object_key(&lease->meta);
    g_assert_cmpstr(key, ==, "kube-system/kube-batchd");
}

static void test_meta_object(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = parse("{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":{"
                             "\"name\":\"research\",\"labels\":{\"team\":\"ml\"}}}");
    KbObjectMeta *meta = kb_meta_object_decode(obj, TRUE, &error);
    g_assert_no_error(error);
    g_assert_cmpint(meta->kind, ==, KB_KIND_NAMESPACE);
    g_assert_true(meta->raw == obj);
    g_assert_cmpstr(g_hash_table_lookup(meta->labels, "team"), ==, "ml");
    /* References: the record outlives an unref while someone else holds it. */
    g_assert_true(kb_object_ref(meta) == meta);
    kb_object_unref(meta);
    g_assert_cmpstr(meta->name, ==, "research");
    kb_object_unref(meta);
    json_object_put(obj);

    json_object *ev =
            parse("{\"kind\":\"Event\",\"metadata\":{\"name\":\"e\",\"namespace\":\"n\"}}");
    meta = kb_meta_object_decode(ev, FALSE, &error);
    json_object_put(ev);
    g_assert_cmpint(meta->kind, ==, KB_KIND_EVENT);
    kb_object_unref(meta);

    /* A pod read as metadata only is not a KbPod. */
    json_object *pod = parse("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{}}");
    meta = kb_meta_object_decode(pod, FALSE, &error);
    json_object_put(pod);
    g_assert_cmpint(meta->kind, ==, KB_KIND_OTHER);
    kb_object_unref(meta);
}

/* ---- malformed objects ---------------------------------------------------------------------- */

typedef enum { D_POD, D_NODE, D_PODGROUP, D_QUEUE, D_PC, D_LEASE, D_META, D_CPG } Decoder;

static gpointer decode_with(Decoder d, json_object *obj, GError **error)
{
    switch (d) {
    case D_POD:
        return kb_pod_decode(obj, FALSE, error);
    case D_NODE:
        return kb_node_decode(obj, FALSE, error);
    case D_PODGROUP:
        return kb_pod_group_decode(obj, FALSE, error);
    case D_QUEUE:
        return kb_queue_decode(obj, FALSE, error);
    case D_PC:
        return kb_priority_class_decode(obj, FALSE, error);
    case D_LEASE:
        return kb_lease_decode(obj, FALSE, error);
    case D_CPG:
        return kb_composite_pod_group_decode(obj, FALSE, error);
    case D_META:
        break;
    }
    return kb_meta_object_decode(obj, FALSE, error);
}

typedef struct {
    const char *name;
    Decoder decoder;
    const char *json;
    const char *message; /* the whole message */
} BadCase;

#define POD_META "\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"}"
#define AFF                                                                                        \
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"         \
    "\"nodeSelectorTerms\":"
#define AFF_PATH                                                                                   \
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
#define PG_API "\"apiVersion\":\"scheduling.volcano.sh/v1beta1\""
#define CPG    "\"metadata\":{\"name\":\"c\",\"namespace\":\"d\"}"
#define NPG                                                                                        \
    "\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"metadata\":{\"name\":\"pg\",\"namespace\":"    \
    "\"d\"}"

static const BadCase bad_cases[] = {
        {"pod/not-an-object", D_POD, "[1,2]", "pod: object: expected an object, got [1,2]"},
        {"pod/no-metadata", D_POD, "{\"spec\":{}}", "pod: metadata: missing"},
        {"pod/no-name", D_POD, "{\"metadata\":{\"namespace\":\"default\"},\"spec\":{}}",
         "pod: metadata.name: missing"},
        {"pod/name-not-string", D_POD, "{\"metadata\":{\"name\":5},\"spec\":{}}",
         "pod: metadata.name: expected a string, got 5"},
        {"pod/label-not-string", D_POD,
         "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\",\"labels\":{\"app\":1}},\"spec\":"
         "{}}",
         "pod default/p: metadata.labels[\"app\"]: expected a string, got 1"},
        {"pod/bad-timestamp", D_POD,
         "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\",\"creationTimestamp\":\"yesterday\"},"
         "\"spec\":{}}",
         "pod d/p: metadata.creationTimestamp: invalid time \"yesterday\""},
        {"pod/negative-generation", D_POD,
         "{\"metadata\":{\"name\":\"p\",\"generation\":-1},\"spec\":{}}",
         "pod p: metadata.generation: -1 out of range [0, 9223372036854775807]"},
        {"pod/owner-not-object", D_POD,
         "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\",\"ownerReferences\":[1]},"
         "\"spec\":{}}",
         "pod default/p: metadata.ownerReferences[0]: expected an object, got 1"},
        {"pod/no-spec", D_POD, "{" POD_META "}", "pod default/p: spec: missing"},
        {"pod/containers-not-array", D_POD, "{" POD_META ",\"spec\":{\"containers\":{}}}",
         "pod default/p: spec.containers: expected an array, got {}"},
        {"pod/container-not-object", D_POD, "{" POD_META ",\"spec\":{\"containers\":[\"x\"]}}",
         "pod default/p: spec.containers[0]: expected an object, got \"x\""},
        {"pod/quantity-unknown-suffix", D_POD,
         "{" POD_META ",\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"nvidia.com/gpu\":"
         "\"12Qi\"}}}]}}",
         "pod default/p: spec.containers[0].resources.requests[\"nvidia.com/gpu\"]: invalid "
         "quantity "
         "\"12Qi\": unknown suffix \"Qi\""},
        {"pod/quantity-not-string", D_POD,
         "{" POD_META
         ",\"spec\":{\"containers\":[{},{\"resources\":{\"limits\":{\"cpu\":true}}}]}}",
         "pod default/p: spec.containers[1].resources.limits[\"cpu\"]: expected a quantity, got "
         "true"},
        {"pod/quantity-negative", D_POD,
         "{" POD_META
         ",\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"-1\"}}}]}}",
         "pod default/p: spec.containers[0].resources.requests[\"cpu\"]: negative quantity \"-1\""},
        {"pod/quantity-space", D_POD,
         "{" POD_META
         ",\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"1 Gi\"}}}]}}",
         "pod default/p: spec.containers[0].resources.requests[\"memory\"]: invalid quantity \"1 "
         "Gi\": "
         "contains white space"},
        {"pod/resources-not-object", D_POD,
         "{" POD_META ",\"spec\":{\"containers\":[{\"resources\":[]}]}}",
         "pod default/p: spec.containers[0].resources: expected an object, got []"},
        {"pod/init-quantity", D_POD,
         "{" POD_META ",\"spec\":{\"initContainers\":[{\"resources\":{\"requests\":{\"memory\":"
         "\"1.2.3\"}}}]}}",
         "pod default/p: spec.initContainers[0].resources.requests[\"memory\"]: invalid quantity "
         "\"1.2.3\": more than one decimal point"},
        {"pod/init-restart-policy", D_POD,
         "{" POD_META ",\"spec\":{\"initContainers\":[{\"restartPolicy\":1}]}}",
         "pod default/p: spec.initContainers[0].restartPolicy: expected a string, got 1"},
        {"pod/overhead", D_POD, "{" POD_META ",\"spec\":{\"overhead\":{\"cpu\":\"lots\"}}}",
         "pod default/p: spec.overhead[\"cpu\"]: invalid quantity \"lots\": no digits"},
        {"pod/priority-string", D_POD, "{" POD_META ",\"spec\":{\"priority\":\"high\"}}",
         "pod default/p: spec.priority: expected an integer, got \"high\""},
        {"pod/priority-range", D_POD, "{" POD_META ",\"spec\":{\"priority\":3000000000}}",
         "pod default/p: spec.priority: 3000000000 out of range [-2147483648, 2147483647]"},
        {"pod/scheduler-name-type", D_POD, "{" POD_META ",\"spec\":{\"schedulerName\":[]}}",
         "pod default/p: spec.schedulerName: expected a string, got []"},
        {"pod/node-selector-value", D_POD,
         "{" POD_META ",\"spec\":{\"nodeSelector\":{\"disk\":1}}}",
         "pod default/p: spec.nodeSelector[\"disk\"]: expected a string, got 1"},
        {"pod/toleration-operator", D_POD,
         "{" POD_META ",\"spec\":{\"tolerations\":[{\"key\":\"k\",\"operator\":\"Maybe\"}]}}",
         "pod default/p: spec.tolerations[0].operator: unknown operator \"Maybe\""},
        {"pod/toleration-effect", D_POD,
         "{" POD_META ",\"spec\":{\"tolerations\":[{},{\"key\":\"k\",\"effect\":\"NoWay\"}]}}",
         "pod default/p: spec.tolerations[1].effect: unknown effect \"NoWay\""},
        {"pod/affinity-not-object", D_POD,
         "{" POD_META ",\"spec\":{\"affinity\":{\"nodeAffinity\":7}}}",
         "pod default/p: spec.affinity.nodeAffinity: expected an object, got 7"},
        {"pod/affinity-operator", D_POD,
         "{" POD_META ",\"spec\":{" AFF "[{\"matchExpressions\":[{\"key\":\"k\",\"operator\":"
         "\"Like\"}]}]}}}}}",
         "pod default/p: " AFF_PATH "[0].matchExpressions[0].operator: unknown operator \"Like\""},
        {"pod/affinity-value-type", D_POD,
         "{" POD_META ",\"spec\":{" AFF "[{},{\"matchExpressions\":[{\"key\":\"k\",\"operator\":"
         "\"In\",\"values\":[\"a\",3]}]}]}}}}}",
         "pod default/p: " AFF_PATH "[1].matchExpressions[0].values[1]: expected a string, got 3"},
        {"pod/affinity-field-key", D_POD,
         "{" POD_META ",\"spec\":{" AFF "[{\"matchFields\":[{\"operator\":\"In\",\"values\":"
         "[\"n\"]}]}]}}}}}",
         "pod default/p: " AFF_PATH "[0].matchFields[0].key: missing"},
        /* What kube-apiserver's validation refuses in matchFields, refused here too. */
        {"pod/affinity-field-not-name", D_POD,
         "{" POD_META ",\"spec\":{" AFF "[{\"matchFields\":[{\"key\":\"metadata.labels\","
         "\"operator\":\"In\",\"values\":[\"n\"]}]}]}}}}}",
         "pod default/p: " AFF_PATH
         "[0].matchFields[0].key: \"metadata.labels\" is not a node field "
         "(only metadata.name)"},
        {"pod/affinity-field-operator", D_POD,
         "{" POD_META ",\"spec\":{" AFF "[{},{\"matchExpressions\":[],\"matchFields\":[{\"key\":"
         "\"metadata.name\",\"operator\":\"In\",\"values\":[\"a\"]},{\"key\":\"metadata.name\","
         "\"operator\":\"Exists\"}]}]}}}}}",
         "pod default/p: " AFF_PATH
         "[1].matchFields[1].operator: \"Exists\" is not In or NotIn, as a "
         "node field selector needs"},
        {"pod/affinity-field-values", D_POD,
         "{" POD_META ",\"spec\":{" AFF
         "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
         "\"NotIn\",\"values\":[\"a\",\"b\"]}]}]}}}}}",
         "pod default/p: " AFF_PATH
         "[0].matchFields[0].values: 2 values, a node field selector takes "
         "exactly one"},
        {"pod/affinity-field-no-values", D_POD,
         "{" POD_META ",\"spec\":{" AFF
         "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
         "\"In\",\"values\":[]}]}]}}}}}",
         "pod default/p: " AFF_PATH
         "[0].matchFields[0].values: 0 values, a node field selector takes "
         "exactly one"},
        {"pod/affinity-term-type", D_POD, "{" POD_META ",\"spec\":{" AFF "[null]}}}}}",
         "pod default/p: " AFF_PATH "[0]: expected an object, got null"},
        {"pod/exit-code-string", D_POD,
         "{" POD_META ",\"spec\":{},\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"state\":{"
         "\"terminated\":{\"exitCode\":\"137\"}}}]}}",
         "pod default/p: status.containerStatuses[0].state.terminated.exitCode: expected an "
         "integer, "
         "got \"137\""},
        {"pod/phase-type", D_POD, "{" POD_META ",\"spec\":{},\"status\":{\"phase\":2}}",
         "pod default/p: status.phase: expected a string, got 2"},
        {"node/taint-no-effect", D_NODE,
         "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":\"k\"}]}}",
         "node n1: spec.taints[0].effect: unknown effect \"\""},
        {"node/taint-no-key", D_NODE,
         "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"effect\":\"NoSchedule\"}]}}",
         "node n1: spec.taints[0].key: missing"},
        {"node/allocatable-quantity", D_NODE,
         "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"memory\":\"12Qi\"}}}",
         "node n1: status.allocatable[\"memory\"]: invalid quantity \"12Qi\": unknown suffix "
         "\"Qi\""},
        {"node/capacity-type", D_NODE,
         "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"capacity\":[]}}",
         "node n1: status.capacity: expected an object, got []"},
        {"node/unschedulable-string", D_NODE,
         "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"unschedulable\":\"yes\"}}",
         "node n1: spec.unschedulable: expected a boolean, got \"yes\""},
        {"node/conditions-type", D_NODE,
         "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":{\"type\":\"Ready\"}}}",
         "node n1: status.conditions: expected an array, got {\"type\":\"Ready\"}"},
        {"podgroup/unknown-api", D_PODGROUP,
         "{\"apiVersion\":\"scheduling.k8s.io/"
         "v1\",\"metadata\":{\"name\":\"pg\",\"namespace\":\"d\"}}",
         "podgroup d/pg: apiVersion: unknown PodGroup API \"scheduling.k8s.io/v1\""},
        {"podgroup/no-api", D_PODGROUP, "{\"metadata\":{\"name\":\"pg\",\"namespace\":\"d\"}}",
         "podgroup d/pg: apiVersion: unknown PodGroup API \"\""},
        {"podgroup/min-member-negative", D_PODGROUP,
         "{" PG_API
         ",\"metadata\":{\"name\":\"pg\",\"namespace\":\"d\"},\"spec\":{\"minMember\":-1}}",
         "podgroup d/pg: spec.minMember: -1 out of range [0, 2147483647]"},
        {"podgroup/min-resources", D_PODGROUP,
         "{" PG_API
         ",\"metadata\":{\"name\":\"pg\",\"namespace\":\"d\"},\"spec\":{\"minResources\":"
         "{\"cpu\":\"x\"}}}",
         "podgroup d/pg: spec.minResources[\"cpu\"]: invalid quantity \"x\": no digits"},
        {"podgroup/timeout-type", D_PODGROUP,
         "{\"apiVersion\":\"scheduling.x-k8s.io/"
         "v1alpha1\",\"metadata\":{\"name\":\"pg\",\"namespace\":"
         "\"d\"},\"spec\":{\"scheduleTimeoutSeconds\":\"60s\"}}",
         "podgroup d/pg: spec.scheduleTimeoutSeconds: expected an integer, got \"60s\""},
        {"podgroup/queue-type", D_PODGROUP,
         "{" PG_API ",\"metadata\":{\"name\":\"pg\",\"namespace\":\"d\"},\"spec\":{\"queue\":{}}}",
         "podgroup d/pg: spec.queue: expected a string, got {}"},
        {"composite/no-spec", D_CPG, "{" CPG "}", "compositepodgroup d/c: spec: Required value"},
        {"composite/other-api", D_CPG,
         "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\"," CPG ",\"spec\":{}}",
         "compositepodgroup d/c: apiVersion: \"scheduling.k8s.io/v1beta1\" where "
         "scheduling.k8s.io/v1alpha3 was listed"},
        {"composite/no-policy", D_CPG, "{" CPG ",\"spec\":{}}",
         "compositepodgroup d/c: spec.schedulingPolicy: must specify one of: `basic`, `gang`"},
        {"composite/min-group-count-zero", D_CPG,
         "{" CPG ",\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":0}}}}",
         "compositepodgroup d/c: spec.schedulingPolicy.gang.minGroupCount: must be at least 1, got "
         "0"},
        {"composite/min-count-not-min-group-count", D_CPG,
         "{" CPG ",\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}}}",
         "compositepodgroup d/c: spec.schedulingPolicy.gang.minGroupCount: must be at least 1, got "
         "0"},
        {"composite/min-group-count-type", D_CPG,
         "{" CPG ",\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":\"3\"}}}}",
         "compositepodgroup d/c: spec.schedulingPolicy.gang.minGroupCount: expected an integer, "
         "got "
         "\"3\""},
        {"composite/parent-type", D_CPG,
         "{" CPG
         ",\"spec\":{\"parentCompositePodGroupName\":7,\"schedulingPolicy\":{\"basic\":{}}}}",
         "compositepodgroup d/c: spec.parentCompositePodGroupName: expected a string, got 7"},
        {"composite/disruption-both", D_CPG,
         "{" CPG ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}},\"disruptionMode\":{\"single\":{},"
         "\"all\":{}}}}",
         "compositepodgroup d/c: spec.disruptionMode: exactly one of `single`, `all` is required, "
         "but "
         "multiple fields are set"},
        {"podgroup/v1alpha3-parent-type", D_PODGROUP,
         "{\"apiVersion\":\"scheduling.k8s.io/"
         "v1alpha3\",\"metadata\":{\"name\":\"pg\",\"namespace\":"
         "\"d\"},\"spec\":{\"parentCompositePodGroupName\":[],\"schedulingPolicy\":{\"basic\":{}}}"
         "}",
         "podgroup d/pg: spec.parentCompositePodGroupName: expected a string, got []"},
        {"podgroup/native-no-spec", D_PODGROUP, "{" NPG "}", "podgroup d/pg: spec: Required value"},
        {"podgroup/native-no-policy", D_PODGROUP, "{" NPG ",\"spec\":{}}",
         "podgroup d/pg: spec.schedulingPolicy: must specify one of: `basic`, `gang`"},
        {"podgroup/native-both-policies", D_PODGROUP,
         "{" NPG ",\"spec\":{\"schedulingPolicy\":{\"basic\":{},\"gang\":{\"minCount\":2}}}}",
         "podgroup d/pg: spec.schedulingPolicy: exactly one of `basic`, `gang` is required, but "
         "multiple fields are set"},
        {"podgroup/native-min-count-zero", D_PODGROUP,
         "{" NPG ",\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":0}}}}",
         "podgroup d/pg: spec.schedulingPolicy.gang.minCount: must be at least 1, got 0"},
        {"podgroup/native-min-count-type", D_PODGROUP,
         "{" NPG ",\"spec\":{\"schedulingPolicy\":{\"gang\":{\"minCount\":\"4\"}}}}",
         "podgroup d/pg: spec.schedulingPolicy.gang.minCount: expected an integer, got \"4\""},
        {"podgroup/native-gang-type", D_PODGROUP,
         "{" NPG ",\"spec\":{\"schedulingPolicy\":{\"gang\":4}}}",
         "podgroup d/pg: spec.schedulingPolicy.gang: expected an object, got 4"},
        {"podgroup/native-disruption-both", D_PODGROUP,
         "{" NPG ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}},\"disruptionMode\":{\"single\":{},"
         "\"all\":{}}}}",
         "podgroup d/pg: spec.disruptionMode: exactly one of `single`, `all` is required, but "
         "multiple fields are set"},
        {"podgroup/native-preemption-policy", D_PODGROUP,
         "{" NPG
         ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}},\"preemptionPolicy\":\"Sometimes\"}}",
         "podgroup d/pg: spec.preemptionPolicy: unsupported value \"Sometimes\": supported values: "
         "\"Never\", \"PreemptLowerPriority\""},
        {"podgroup/native-topology-key", D_PODGROUP,
         "{" NPG ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}},\"schedulingConstraints\":{"
         "\"topology\":[{}]}}}",
         "podgroup d/pg: spec.schedulingConstraints.topology[0].key: Required value"},
        {"podgroup/native-workload-ref", D_PODGROUP,
         "{" NPG ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}},\"workloadRef\":{\"workloadName\":"
         "1}}}",
         "podgroup d/pg: spec.workloadRef.workloadName: expected a string, got 1"},
        {"podgroup/native-conditions", D_PODGROUP,
         "{" NPG ",\"spec\":{\"schedulingPolicy\":{\"basic\":{}}},\"status\":{\"conditions\":[{"
         "\"type\":\"PodGroupInitiallyScheduled\",\"status\":true}]}}",
         "podgroup d/pg: status.conditions[0].status: expected a string, got true"},
        {"pod/scheduling-group-type", D_POD,
         "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{\"schedulingGroup\":"
         "{\"podGroupName\":[]}}}",
         "pod d/p: spec.schedulingGroup.podGroupName: expected a string, got []"},
        {"pod/pod-level-requests", D_POD,
         "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{\"resources\":"
         "{\"requests\":{\"memory\":\"1 Gi\"}}}}",
         "pod d/p: spec.resources.requests[\"memory\"]: invalid quantity \"1 Gi\": contains white "
         "space"},
        {"queue/weight-negative", D_QUEUE,
         "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"weight\":-2}}",
         "queue q: spec.weight: -2 out of range [0, 2147483647]"},
        {"queue/capability", D_QUEUE,
         "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"capability\":{\"memory\":\"1.5.5Gi\"}}}",
         "queue q: spec.capability[\"memory\"]: invalid quantity \"1.5.5Gi\": more than one "
         "decimal "
         "point"},
        {"queue/deserved", D_QUEUE,
         "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"deserved\":{\"nvidia.com/gpu\":\"two\"}}}",
         "queue q: spec.deserved[\"nvidia.com/gpu\"]: invalid quantity \"two\": no digits"},
        {"queue/guarantee", D_QUEUE,
         "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"guarantee\":{\"resource\":{\"cpu\":\"-\"}}}}",
         "queue q: spec.guarantee.resource[\"cpu\"]: invalid quantity \"-\": no digits"},
        {"queue/guarantee-flat", D_QUEUE,
         "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"guarantee\":{\"resource\":\"8\"}}}",
         "queue q: spec.guarantee.resource: expected an object, got \"8\""},
        {"queue/reclaimable-string", D_QUEUE,
         "{\"metadata\":{\"name\":\"q\"},\"spec\":{\"reclaimable\":\"no\"}}",
         "queue q: spec.reclaimable: expected a boolean, got \"no\""},
        {"queue/state-type", D_QUEUE, "{\"metadata\":{\"name\":\"q\"},\"status\":{\"state\":0}}",
         "queue q: status.state: expected a string, got 0"},
        {"priorityclass/value-string", D_PC,
         "{\"metadata\":{\"name\":\"high\"},\"value\":\"1000\"}",
         "priorityclass high: value: expected an integer, got \"1000\""},
        {"priorityclass/value-range", D_PC,
         "{\"metadata\":{\"name\":\"high\"},\"value\":2147483648}",
         "priorityclass high: value: 2147483648 out of range [-2147483648, 2147483647]"},
        {"lease/renew-time", D_LEASE,
         "{\"metadata\":{\"name\":\"l\",\"namespace\":\"kube-system\"},\"spec\":{\"renewTime\":"
         "\"2026-13-01T00:00:00.000000Z\"}}",
         "lease kube-system/l: spec.renewTime: invalid time \"2026-13-01T00:00:00.000000Z\""},
        {"lease/duration-negative", D_LEASE,
         "{\"metadata\":{\"name\":\"l\"},\"spec\":{\"leaseDurationSeconds\":-15}}",
         "lease l: spec.leaseDurationSeconds: -15 out of range [0, 2147483647]"},
        {"meta/no-name", D_META, "{\"kind\":\"Service\",\"metadata\":{}}",
         "object: metadata.name: missing"},
        {"meta/labels-type", D_META, "{\"metadata\":{\"name\":\"svc\",\"labels\":[\"a\"]}}",
         "object svc: metadata.labels: expected an object, got [\"a\"]"},
};

static void test_bad(gconstpointer data)
{
    const BadCase *c = data;
    g_autoptr(GError) error = NULL;
    json_object *obj = parse(c->json);
    gpointer rec = decode_with(c->decoder, obj, &error);
    json_object_put(obj);
    g_assert_null(rec);
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_assert_cmpstr(error->message, ==, c->message);
}

/* A long value is cut in the message, not copied whole. */
static void test_bad_long_value(void)
{
    g_autoptr(GString) s = g_string_new("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"priority\":\"");
    for (int i = 0; i < 10000; i++)
        g_string_append_c(s, 'x');
    g_string_append(s, "\"}}");
    json_object *obj = parse(s->str);
    g_autoptr(GError) error = NULL;
    g_assert_null(kb_pod_decode(obj, FALSE, &error));
    json_object_put(obj);
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_assert_cmpuint(strlen(error->message), <, 200);
    g_assert_true(g_str_has_suffix(error->message, "xxx..."));
}

/* ---- limits --------------------------------------------------------------------------------- */

typedef json_object *(*Builder)(int n);

static json_object *pod_with_spec(json_object *spec)
{
    json_object *pod = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"}}");
    json_object_object_add(pod, "spec", spec != NULL ? spec : json_object_new_object());
    return pod;
}

static json_object *array_of(int n, const char *item)
{
    json_object *arr = json_object_new_array();
    for (int i = 0; i < n; i++)
        json_object_array_add(arr, parse(item));
    return arr;
}

static json_object *spec_with(const char *key, json_object *value)
{
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, key, value);
    return spec;
}

static json_object *build_name(int n)
{
    json_object *pod = pod_with_spec(NULL);
    g_autofree char *name = g_strnfill((gsize)n, 'a');
    json_object_object_add(json_object_object_get(pod, "metadata"), "name",
                           json_object_new_string(name));
    return pod;
}

static json_object *build_namespace(int n)
{
    json_object *pod = pod_with_spec(NULL);
    g_autofree char *ns = g_strnfill((gsize)n, 'n');
    json_object_object_add(json_object_object_get(pod, "metadata"), "namespace",
                           json_object_new_string(ns));
    return pod;
}

static json_object *map_of(int n, const char *value)
{
    json_object *map = json_object_new_object();
    for (int i = 0; i < n; i++) {
        g_autofree char *k = g_strdup_printf("example.com/key-%d", i);
        json_object_object_add(map, k, json_object_new_string(value));
    }
    return map;
}

static json_object *build_labels(int n)
{
    json_object *pod = pod_with_spec(NULL);
    json_object_object_add(json_object_object_get(pod, "metadata"), "labels", map_of(n, "v"));
    return pod;
}

static json_object *build_annotations(int n)
{
    json_object *pod = pod_with_spec(NULL);
    json_object_object_add(json_object_object_get(pod, "metadata"), "annotations", map_of(n, "v"));
    return pod;
}

static json_object *build_annotation_value(int n)
{
    json_object *pod = pod_with_spec(NULL);
    json_object *map = json_object_new_object();
    g_autofree char *v = g_strnfill((gsize)n, 'v');
    json_object_object_add(map, "big", json_object_new_string(v));
    json_object_object_add(json_object_object_get(pod, "metadata"), "annotations", map);
    return pod;
}

static json_object *build_label_key(int n)
{
    json_object *pod = pod_with_spec(NULL);
    json_object *map = json_object_new_object();
    g_autofree char *k = g_strnfill((gsize)n, 'k');
    json_object_object_add(map, k, json_object_new_string("v"));
    json_object_object_add(json_object_object_get(pod, "metadata"), "labels", map);
    return pod;
}

static json_object *build_owners(int n)
{
    json_object *pod = pod_with_spec(NULL);
    json_object_object_add(json_object_object_get(pod, "metadata"), "ownerReferences",
                           array_of(n, "{\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"u\"}"));
    return pod;
}

static json_object *build_containers(int n)
{
    return pod_with_spec(spec_with(
            "containers",
            array_of(n, "{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1m\"}}}")));
}

static json_object *build_init_containers(int n)
{
    return pod_with_spec(spec_with("initContainers", array_of(n, "{\"name\":\"i\"}")));
}

static json_object *build_tolerations(int n)
{
    return pod_with_spec(spec_with("tolerations", array_of(n, "{\"operator\":\"Exists\"}")));
}

static json_object *build_node_selector(int n)
{
    return pod_with_spec(spec_with("nodeSelector", map_of(n, "v")));
}

static json_object *affinity_with(json_object *terms)
{
    json_object *req = spec_with("nodeSelectorTerms", terms);
    json_object *na = spec_with("requiredDuringSchedulingIgnoredDuringExecution", req);
    json_object *aff = spec_with("nodeAffinity", na);
    return pod_with_spec(spec_with("affinity", aff));
}

static json_object *build_terms(int n)
{
    return affinity_with(
            array_of(n, "{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}"));
}

static json_object *build_expressions(int n)
{
    json_object *term =
            spec_with("matchExpressions", array_of(n, "{\"key\":\"k\",\"operator\":\"Exists\"}"));
    json_object *terms = json_object_new_array();
    json_object_array_add(terms, term);
    return affinity_with(terms);
}

static json_object *build_values(int n)
{
    json_object *expr = parse("{\"key\":\"k\",\"operator\":\"In\"}");
    json_object_object_add(expr, "values", array_of(n, "\"v\""));
    json_object *exprs = json_object_new_array();
    json_object_array_add(exprs, expr);
    json_object *terms = json_object_new_array();
    json_object_array_add(terms, spec_with("matchExpressions", exprs));
    return affinity_with(terms);
}

static json_object *build_container_statuses(int n)
{
    json_object *pod = pod_with_spec(NULL);
    json_object_object_add(pod, "status",
                           spec_with("containerStatuses", array_of(n, "{\"name\":\"c\"}")));
    return pod;
}

static json_object *build_requests(int n)
{
    /* Zero quantities: many names without using up resource slots. */
    json_object *c = spec_with("resources", spec_with("requests", map_of(n, "0")));
    json_object *arr = json_object_new_array();
    json_object_array_add(arr, c);
    return pod_with_spec(spec_with("containers", arr));
}

static json_object *build_taints(int n)
{
    json_object *node = parse("{\"metadata\":{\"name\":\"n\"}}");
    json_object_object_add(
            node, "spec",
            spec_with("taints", array_of(n, "{\"key\":\"k\",\"effect\":\"NoSchedule\"}")));
    return node;
}

static json_object *build_conditions(int n)
{
    json_object *node = parse("{\"metadata\":{\"name\":\"n\"}}");
    json_object_object_add(
            node, "status",
            spec_with("conditions", array_of(n, "{\"type\":\"X\",\"status\":\"True\"}")));
    return node;
}

typedef struct {
    const char *name;
    Decoder decoder;
    Builder build;
    int limit;
    const char *message_part;
} LimitCase;

static const LimitCase limit_cases[] = {
        {"name", D_POD, build_name, KB_MAX_NAME_LEN, "metadata.name: 254 bytes, more than 253"},
        {"namespace", D_POD, build_namespace, KB_MAX_NAME_LEN, "metadata.namespace: 254 bytes"},
        {"labels", D_POD, build_labels, KB_MAX_LABELS,
         "metadata.labels: 257 entries, more than 256"},
        {"annotations", D_POD, build_annotations, KB_MAX_LABELS,
         "metadata.annotations: 257 entries"},
        {"annotation-value", D_POD, build_annotation_value, KB_MAX_LABEL_VALUE_LEN,
         "metadata.annotations[\"big\"]: 65537 bytes, more than 65536"},
        {"label-key", D_POD, build_label_key, KB_MAX_LABEL_KEY_LEN,
         "metadata.labels: key of 318 bytes, not 1 to 317"},
        {"owner-references", D_POD, build_owners, KB_MAX_LIST_ITEMS,
         "metadata.ownerReferences: 65 items, more than 64"},
        {"containers", D_POD, build_containers, KB_MAX_CONTAINERS,
         "spec.containers: 65 items, more than 64"},
        {"init-containers", D_POD, build_init_containers, KB_MAX_CONTAINERS,
         "spec.initContainers: 65 items"},
        {"tolerations", D_POD, build_tolerations, KB_MAX_LIST_ITEMS, "spec.tolerations: 65 items"},
        {"node-selector", D_POD, build_node_selector, KB_MAX_LABELS,
         "spec.nodeSelector: 257 entries"},
        {"affinity-terms", D_POD, build_terms, KB_MAX_LIST_ITEMS, AFF_PATH ": 65 items"},
        {"affinity-expressions", D_POD, build_expressions, KB_MAX_LIST_ITEMS,
         AFF_PATH "[0].matchExpressions: 65 items"},
        {"affinity-values", D_POD, build_values, KB_MAX_LIST_ITEMS,
         AFF_PATH "[0].matchExpressions[0].values: 65 items"},
        {"container-statuses", D_POD, build_container_statuses, KB_MAX_CONTAINERS,
         "status.containerStatuses: 65 items"},
        {"resource-map", D_POD, build_requests, KB_MAX_LABELS,
         "spec.containers[0].resources.requests: 257 entries, more than 256"},
        {"taints", D_NODE, build_taints, KB_MAX_LIST_ITEMS, "node n: spec.taints: 65 items"},
        {"conditions", D_NODE, build_conditions, KB_MAX_LIST_ITEMS, "status.conditions: 65 items"},
};

static void test_limit(gconstpointer data)
{
    const LimitCase *c = data;
    g_autoptr(GError) error = NULL;

    /* At the limit: decodes. */
    json_object *ok = c->build(c->limit);
    gpointer rec = decode_with(c->decoder, ok, &error);
    json_object_put(ok);
    g_assert_no_error(error);
    g_assert_nonnull(rec);
    kb_object_unref(rec);

    /* One over: KB_ERROR_LIMIT naming the field. */
    json_object *over = c->build(c->limit + 1);
    rec = decode_with(c->decoder, over, &error);
    json_object_put(over);
    g_assert_null(rec);
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    if (strstr(error->message, c->message_part) == NULL)
        g_error("\"%s\" does not contain \"%s\"", error->message, c->message_part);
}

/* Extended resources beyond the slots: the one that does not fit is named. Slots are
 * process-wide, so this runs in a subprocess. */
static void test_resource_slots_exhausted(void)
{
    if (g_test_subprocess()) {
        int free_slots = KB_RES_MAX - kb_resource_count();
        g_autoptr(GString) s = g_string_new("{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},"
                                            "\"spec\":{\"containers\":[");
        for (int i = 0; i <= free_slots; i++)
            g_string_append_printf(s, "%s{\"resources\":{\"limits\":{\"example.com/dev-%d\":1}}}",
                                   i > 0 ? "," : "", i);
        g_string_append(s, "]}}");
        json_object *obj = parse(s->str);
        g_autoptr(GError) error = NULL;
        g_assert_null(kb_pod_decode(obj, FALSE, &error));
        json_object_put(obj);
        g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
        g_autofree char *want = g_strdup_printf(
                "pod d/p: spec.containers[%d].resources.limits[\"example.com/dev-%d\"]: no free "
                "resource slot for \"example.com/dev-%d\" (all %d in use)",
                free_slots, free_slots, free_slots, KB_RES_MAX);
        g_assert_cmpstr(error->message, ==, want);
        /* The ones that fitted are usable. */
        g_assert_cmpint(kb_resource_slot("example.com/dev-0"), ==, KB_RES_MAX - free_slots);
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
}

/* ---- resource maps -------------------------------------------------------------------------- */

static void test_resources_decode_encode(void)
{
    g_autoptr(GError) error = NULL;
    json_object *map = parse("{\"cpu\":\"1.5\",\"memory\":\"129M\",\"nvidia.com/gpu\":2,"
                             "\"pods\":\"110\",\"ephemeral-storage\":\"10Gi\"}");
    KbResources r;
    kb_resources_clear(&r);
    g_assert_true(kb_resources_decode(map, "spec.x", &r, &error));
    g_assert_no_error(error);
    /* Added to what is there. */
    g_assert_true(kb_resources_decode(map, "spec.x", &r, &error));
    json_object_put(map);
    g_assert_cmpint(r.v[KB_RES_CPU], ==, 3000);
    g_assert_cmpint(r.v[KB_RES_MEMORY], ==, 258000000);
    g_assert_cmpint(r.v[KB_RES_GPU], ==, 4000);
    g_assert_cmpint(r.v[KB_RES_PODS], ==, 220);

    json_object *enc = kb_resources_encode(&r);
    g_assert_cmpstr(json_object_to_json_string_ext(enc, JSON_C_TO_STRING_PLAIN |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE),
                    ==,
                    "{\"cpu\":\"3\",\"memory\":\"258000000\",\"pods\":\"220\",\"nvidia.com/gpu\":"
                    "\"4\",\"ephemeral-storage\":\"20Gi\"}");
    /* The encoding decodes back to the same vector. */
    KbResources back;
    kb_resources_clear(&back);
    g_assert_true(kb_resources_decode(enc, "x", &back, &error));
    json_object_put(enc);
    g_assert_true(kb_resources_equal(&back, &r));

    /* Unlimited and zero slots are left out. */
    KbResources u;
    kb_resources_set_unlimited(&u);
    u.v[KB_RES_CPU] = 500;
    u.v[KB_RES_MEMORY] = 0;
    json_object *enc2 = kb_resources_encode(&u);
    g_assert_cmpstr(json_object_to_json_string_ext(enc2, JSON_C_TO_STRING_PLAIN), ==,
                    "{\"cpu\":\"500m\"}");
    json_object_put(enc2);
}

static void test_resources_decode_errors(void)
{
    g_autoptr(GError) error = NULL;
    KbResources r;
    kb_resources_clear(&r);
    json_object *notmap = parse("[\"cpu\"]");
    g_assert_false(kb_resources_decode(notmap, "spec.minResources", &r, &error));
    json_object_put(notmap);
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_assert_cmpstr(error->message, ==, "spec.minResources: expected an object, got [\"cpu\"]");
    g_clear_error(&error);

    json_object *empty_key = parse("{\"\":\"1\"}");
    g_assert_false(kb_resources_decode(empty_key, "m", &r, &error));
    json_object_put(empty_key);
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_clear_error(&error);

    /* A part of a GPU is kept in milli-GPUs (a queue's capability of half a GPU); a huge number
     * saturates. */
    json_object *m = parse("{\"nvidia.com/gpu\":\"0.5\",\"memory\":\"1e30\"}");
    g_assert_true(kb_resources_decode(m, "m", &r, &error));
    json_object_put(m);
    g_assert_cmpint(r.v[KB_RES_GPU], ==, 500);
    g_assert_cmpint(r.v[KB_RES_MEMORY], ==, G_MAXINT64);
}

/* ---- times ---------------------------------------------------------------------------------- */

typedef struct {
    const char *in;
    gboolean ok;
    gint64 secs;
} TimeCase;

static const TimeCase time_cases[] = {
        {"2026-11-22T05:05:48Z", TRUE, T0},
        {"1970-01-01T00:00:00Z", TRUE, 0},
        {"1969-12-31T23:59:59Z", TRUE, -1},
        {"2000-02-29T12:00:00Z", TRUE, 951825600},
        {"2026-11-22T07:05:48+02:00", TRUE, T0},
        {"2026-11-22T00:05:48-05:00", TRUE, T0},
        {"2026-11-22T05:05:48.999999Z", TRUE, T0},
        {"2026-11-22t05:05:48z", TRUE, T0},
        {"1969-12-31T23:59:59.5Z", TRUE, -1},
        {"", FALSE, 0},
        {"2026-11-22", FALSE, 0},
        {"2026-11-22 05:05:48Z", FALSE, 0},
        {"2026-11-22T05:05:48", FALSE, 0},
        {"2026-11-22T24:00:00Z", FALSE, 0},
        {"2026-02-29T00:00:00Z", FALSE, 0},
        {"2026-11-31T00:00:00Z", FALSE, 0},
        {"2026-11-22T05:05:48Zjunk", FALSE, 0},
        {"2026-11-22T05:05:48.Z", FALSE, 0},
        {"2026-11-22T05:05:48+0200", FALSE, 0},
        {"26-11-22T05:05:48Z", FALSE, 0},
};

static void test_time(gconstpointer data)
{
    const TimeCase *c = data;
    gint64 t = 42;
    g_assert_cmpint(kb_time_parse(c->in, &t), ==, c->ok);
    if (!c->ok) {
        g_assert_cmpint(t, ==, 42);
        return;
    }
    g_assert_cmpint(t, ==, c->secs);
    g_autofree char *s = kb_time_format(t);
    gint64 back = 0;
    g_assert_true(kb_time_parse(s, &back));
    g_assert_cmpint(back, ==, t);
}

static void test_time_format(void)
{
    g_autofree char *a = kb_time_format(T0);
    g_assert_cmpstr(a, ==, "2026-11-22T05:05:48Z");
    g_autofree char *b = kb_time_format(0);
    g_assert_cmpstr(b, ==, "1970-01-01T00:00:00Z");
    g_autofree char *c = kb_time_format(-1);
    g_assert_cmpstr(c, ==, "1969-12-31T23:59:59Z");
    g_autofree char *d = kb_micro_time_format(T0 * G_USEC_PER_SEC + 123456);
    g_assert_cmpstr(d, ==, "2026-11-22T05:05:48.123456Z");
    g_autofree char *e = kb_micro_time_format(-1);
    g_assert_cmpstr(e, ==, "1969-12-31T23:59:59.999999Z");
    g_autofree char *f = kb_time_format(G_MAXINT64);
    g_assert_cmpstr(f, ==, "9999-12-31T23:59:59Z");

    gint64 us = 0;
    g_assert_true(kb_micro_time_parse("2026-11-22T05:05:48.1Z", &us));
    g_assert_cmpint(us, ==, T0 * G_USEC_PER_SEC + 100000);
    g_assert_true(kb_micro_time_parse("2026-11-22T05:05:48.1234567Z", &us));
    g_assert_cmpint(us, ==, T0 * G_USEC_PER_SEC + 123456);
    g_assert_true(kb_micro_time_parse("2026-11-22T05:05:48Z", &us));
    g_assert_cmpint(us, ==, T0 * G_USEC_PER_SEC);
    g_assert_false(kb_micro_time_parse("2026-11-22T05:05:48.123456", &us));
    g_assert_false(kb_micro_time_parse(NULL, &us));
}

/* ---- encoders ------------------------------------------------------------------------------- */

static void test_binding(void)
{
    json_object *b = kb_binding_new("research", "trainer-worker-0", "uid-1", "gpu-node-7");
    g_assert_cmpstr(
            json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN), ==,
            "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":"
            "\"trainer-worker-0\",\"namespace\":\"research\",\"uid\":\"uid-1\"},"
            "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"gpu-node-7\"}}");
    json_object_put(b);
    /* Without a uid there is no uid precondition. */
    b = kb_binding_new("d", "p", NULL, "n");
    json_object *meta = json_object_object_get(b, "metadata");
    g_assert_false(json_object_object_get_ex(meta, "uid", NULL));
    json_object_put(b);
}

static void test_eviction(void)
{
    json_object *e = kb_eviction_new("research", "p1", TRUE);
    g_assert_cmpstr(json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE),
                    ==,
                    "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":"
                    "\"p1\",\"namespace\":\"research\"}}");
    json_object_put(e);
    e = kb_eviction_new("research", "p1", FALSE);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(e, "apiVersion")), ==,
                    "policy/v1beta1");
    json_object_put(e);
}

/* Records decoded twice from the same JSON share their interned strings; high-cardinality
 * strings (label values, group names) are owned, so that they are freed with the record. */
static void test_interning(void)
{
    json_object *obj = load_fixture("pod-init-overhead.json");
    g_autoptr(KbPod) a = kb_pod_decode(obj, FALSE, NULL);
    g_autoptr(KbPod) b = kb_pod_decode(obj, FALSE, NULL);
    json_object_put(obj);
    g_assert_true(a->meta.namespace_ == b->meta.namespace_);
    g_assert_true(a->scheduler_name == b->scheduler_name);
    /* Label keys are interned, label values and group names owned. */
    GHashTableIter it;
    gpointer ka, va;
    g_hash_table_iter_init(&it, a->meta.labels);
    while (g_hash_table_iter_next(&it, &ka, &va)) {
        gpointer kb, vb;
        g_assert_true(g_hash_table_lookup_extended(b->meta.labels, ka, &kb, &vb));
        g_assert_true(ka == kb);
        g_assert_true(ka == g_intern_string(ka));
        g_assert_cmpstr(va, ==, vb);
        g_assert_true(va != vb);
    }
    g_assert_cmpstr(a->group_name, ==, b->group_name);
    g_assert_true(a->group_name != b->group_name);
    /* Owned strings are not shared. */
    g_assert_true(a->meta.name != b->meta.name);
    g_autofree char *key = kb_object_key(&a->meta);
    g_assert_cmpstr(key, ==, "research/trainer-worker-0");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    g_test_add_func("/kube/objects/pod/init-containers-overhead-sidecar", test_pod_init_overhead);
    g_test_add_func("/kube/objects/pod/gpu-limits-only", test_pod_gpu_limits_only);
    g_test_add_func("/kube/objects/pod/affinity-tolerations", test_pod_affinity_tolerations);
    g_test_add_func("/kube/objects/pod/failed-container-statuses", test_pod_failed);
    g_test_add_func("/kube/objects/pod/phases", test_pod_phases);
    g_test_add_func("/kube/objects/pod/group-name", test_pod_group_name);
    g_test_add_func("/kube/objects/pod/request-defaulting", test_pod_request_defaulting);
    g_test_add_func("/kube/objects/pod/interning", test_interning);
    g_test_add_func("/kube/objects/node/gpu-tainted", test_node_gpu_tainted);
    g_test_add_func("/kube/objects/node/not-ready", test_node_not_ready);
    g_test_add_func("/kube/objects/node/no-status", test_node_no_status);
    g_test_add_func("/kube/objects/podgroup/kube-batch", test_podgroup_kube_batch);
    g_test_add_func("/kube/objects/podgroup/volcano", test_podgroup_volcano);
    g_test_add_func("/kube/objects/podgroup/volcano-sub-groups", test_podgroup_sub_groups);
    g_test_add_func("/kube/objects/podgroup/x-k8s", test_podgroup_x_k8s);
    g_test_add_func("/kube/objects/podgroup/native", test_podgroup_native);
    g_test_add_func("/kube/objects/podgroup/native-basic", test_podgroup_native_basic);
    g_test_add_func("/kube/objects/podgroup/native-listed", test_podgroup_native_listed);
    g_test_add_func("/kube/objects/podgroup/v1alpha3", test_podgroup_v1alpha3);
    g_test_add_func("/kube/objects/composite-pod-group", test_composite_pod_group);
    g_test_add_func("/kube/objects/podgroup/min-member-default", test_podgroup_min_member_default);
    g_test_add_func("/kube/objects/queue/volcano", test_queue_volcano);
    g_test_add_func("/kube/objects/queue/defaults", test_queue_defaults);
    g_test_add_func("/kube/objects/queue/status-usage", test_queue_usage);
    g_test_add_func("/kube/objects/queue/usage-in-annotations", test_queue_usage_annotations);
    g_test_add_func("/kube/objects/queue/status-runtime-history", test_queue_history);
    g_test_add_func("/kube/objects/priorityclass", test_priority_class);
    g_test_add_func("/kube/objects/lease", test_lease);
    g_test_add_func("/kube/objects/meta-only", test_meta_object);
    for (gsize i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
        g_autofree char *p = g_strdup_printf("/kube/objects/malformed/%s", bad_cases[i].name);
        g_test_add_data_func(p, &bad_cases[i], test_bad);
    }
    g_test_add_func("/kube/objects/malformed/long-value-cut", test_bad_long_value);
    for (gsize i = 0; i < G_N_ELEMENTS(limit_cases); i++) {
        g_autofree char *p = g_strdup_printf("/kube/objects/limit/%s", limit_cases[i].name);
        g_test_add_data_func(p, &limit_cases[i], test_limit);
    }
    g_test_add_func("/kube/objects/limit/resource-slots", test_resource_slots_exhausted);
    g_test_add_func("/kube/objects/resources/decode-encode", test_resources_decode_encode);
    g_test_add_func("/kube/objects/resources/errors", test_resources_decode_errors);
    for (gsize i = 0; i < G_N_ELEMENTS(time_cases); i++) {
        g_autofree char *p = g_strdup_printf("/kube/objects/time/parse/%" G_GSIZE_FORMAT, i);
        g_test_add_data_func(p, &time_cases[i], test_time);
    }
    g_test_add_func("/kube/objects/time/format", test_time_format);
    g_test_add_func("/kube/objects/binding", test_binding);
    g_test_add_func("/kube/objects/eviction", test_eviction);
    return g_test_run();
}
