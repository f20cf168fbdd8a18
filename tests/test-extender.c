/*
 * Extender mode: the protocol codec (kube/kb-extender-codec.c) with its limits, the replay of
 * kube-scheduler 1.19's recorded calls (tests/data/kube-scheduler-extender/, both
 * nodeCacheCapable modes) through the real HTTP server, the decisions (scheduler/extender.c)
 * table by table, and the server's answers to bad requests.
 */
#include <curl/curl.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-extender-codec.h"
#include "scheduler/extender-server.h"
#include "scheduler/extender.h"
#include "tests/lib/kb-test-pki.h"
#include "tests/lib/kb-test-sched.h"

typedef json_object Json;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Json, json_object_put)

static const char *src_dir(void)
{
    const char *d = g_getenv("KB_SRCDIR");
    return d != NULL ? d : ".";
}

static char *fixture_path(const char *rel)
{
    return g_build_filename(src_dir(), "tests", "data", "kube-scheduler-extender", rel, NULL);
}

/* A recorded call: {"path", "request", "response"}. */
static json_object *load_call(const char *rel)
{
    g_autofree char *path = fixture_path(rel);
    json_object *o = json_object_from_file(path);
    if (o == NULL)
        g_error("cannot read %s", path);
    return o;
}

static char *request_text(json_object *call)
{
    return g_strdup(json_object_to_json_string_ext(json_object_object_get(call, "request"),
                                                   JSON_C_TO_STRING_PLAIN));
}

static gint cmp_str(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

/* ---- codec ----------------------------------------------------------------------------------- */

static void test_codec_fixtures(void)
{
    static const struct {
        const char *file;
        gboolean cache_capable;
        const char *pod;
        guint n_nodes;
    } filters[] = {
            {"node-cache-capable/000-filter.json", TRUE, "ext-true-0", 4},
            {"node-cache-capable/001-prioritize.json", TRUE, "ext-true-0", 3},
            {"node-cache-capable/008-filter.json", TRUE, "fill-1", 1},
            {"full-nodes/000-filter.json", FALSE, "ext-false-0", 3},
            {"full-nodes/001-prioritize.json", FALSE, "ext-false-0", 3},
    };
    for (guint i = 0; i < G_N_ELEMENTS(filters); i++) {
        g_autoptr(Json) call = load_call(filters[i].file);
        g_autofree char *body = request_text(call);
        g_autoptr(GError) error = NULL;
        g_autoptr(KbExtenderArgs) a = kb_extender_args_decode(body, strlen(body), &error);
        g_assert_no_error(error);
        g_assert_cmpstr(a->pod->meta.name, ==, filters[i].pod);
        g_assert_cmpstr(a->pod->meta.namespace_, ==, "default");
        g_assert_cmpint(a->pod->requests.v[KB_RES_GPU], >, 0);
        g_assert_nonnull(a->pod->group_name);
        g_assert_cmpint(a->node_cache_capable, ==, filters[i].cache_capable);
        g_assert_cmpuint(a->n_nodes, ==, filters[i].n_nodes);
        g_assert_true(g_str_has_prefix(a->node_names[0], "node-0000"));
        g_assert_cmpint(a->node_spans != NULL, ==, !filters[i].cache_capable);
    }
    g_autoptr(Json) call = load_call("node-cache-capable/002-bind.json");
    g_autofree char *body = request_text(call);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbExtenderBindingArgs) b =
            kb_extender_binding_args_decode(body, strlen(body), &error);
    g_assert_no_error(error);
    g_assert_cmpstr(b->pod_name, ==, "ext-true-0");
    g_assert_cmpstr(b->pod_namespace, ==, "default");
    g_assert_cmpstr(b->pod_uid, ==, "ba911ee2-0ee3-4244-be4f-3ade69390ea8");
    g_assert_cmpstr(b->node, ==, "node-00002");
}

static const char min_pod[] = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\",\"uid\":"
                              "\"u1\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}";

/* The answers use Go's field names and decode back to what went in. */
static void test_codec_encode(void)
{
    g_autofree char *req = g_strdup_printf("{\"Pod\":%s,\"Nodes\":null,\"NodeNames\":[\"a\","
                                           "\"b\\\"q\",\"c\"]}",
                                           min_pod);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbExtenderArgs) a = kb_extender_args_decode(req, strlen(req), &error);
    g_assert_no_error(error);
    const char *why[] = {NULL, "no \"room\"\n", NULL};
    gboolean unres[] = {FALSE, TRUE, FALSE};
    g_autofree char *out = kb_extender_filter_result_encode(a, why, unres, NULL);
    g_autoptr(Json) o = json_tokener_parse(out);
    g_assert_nonnull(o);
    json_object *names = json_object_object_get(o, "NodeNames");
    g_assert_cmpuint(json_object_array_length(names), ==, 2);
    g_assert_cmpstr(json_object_get_string(json_object_array_get_idx(names, 1)), ==, "c");
    json_object *failed = json_object_object_get(o, "FailedNodes");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(failed, "b\"q")), ==,
                    "no \"room\"\n");
    g_assert_nonnull(json_object_object_get(json_object_object_get(o, "FailedAndUnresolvableNodes"),
                                            "b\"q"));
    g_assert_cmpstr(json_object_get_string(json_object_object_get(o, "Error")), ==, "");

    g_autofree char *err = kb_extender_filter_result_encode(a, why, NULL, "not ready");
    g_autoptr(Json) e = json_tokener_parse(err);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(e, "Error")), ==, "not ready");

    gint64 scores[] = {-3, 7, 99};
    g_autofree char *pr = kb_extender_priorities_encode(a, scores);
    g_autoptr(Json) p = json_tokener_parse(pr);
    g_assert_cmpuint(json_object_array_length(p), ==, 3);
    g_assert_cmpstr(
            json_object_get_string(json_object_object_get(json_object_array_get_idx(p, 0), "Host")),
            ==, "a");
    g_assert_cmpint(
            json_object_get_int(json_object_object_get(json_object_array_get_idx(p, 0), "Score")),
            ==, 0);
    g_assert_cmpint(
            json_object_get_int(json_object_object_get(json_object_array_get_idx(p, 2), "Score")),
            ==, KB_EXTENDER_MAX_SCORE);
    g_autofree char *br = kb_extender_binding_result_encode("boom");
    g_assert_cmpstr(br, ==, "{\"Error\":\"boom\"}");

    /* NodeList mode echoes the passing nodes whole. */
    g_autoptr(Json) call = load_call("full-nodes/000-filter.json");
    g_autofree char *body = request_text(call);
    g_autoptr(KbExtenderArgs) full = kb_extender_args_decode(body, strlen(body), &error);
    g_assert_no_error(error);
    const char *fwhy[] = {NULL, "x", NULL};
    g_autofree char *fo = kb_extender_filter_result_encode(full, fwhy, NULL, NULL);
    g_autoptr(Json) f = json_tokener_parse(fo);
    json_object *items = json_object_object_get(json_object_object_get(f, "Nodes"), "items");
    g_assert_cmpuint(json_object_array_length(items), ==, 2);
    g_assert_nonnull(json_object_object_get(json_object_array_get_idx(items, 0), "status"));
    g_assert_null(json_object_object_get(f, "NodeNames"));
}

/* Go decodes field names case-insensitively: so do we. */
static void test_codec_case(void)
{
    g_autofree char *req = g_strdup_printf("{\"pod\":%s,\"nodenames\":[\"a\"]}", min_pod);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbExtenderArgs) a = kb_extender_args_decode(req, strlen(req), &error);
    g_assert_no_error(error);
    g_assert_cmpuint(a->n_nodes, ==, 1);
    const char *bind = "{\"podName\":\"p\",\"podnamespace\":\"d\",\"PODUID\":\"u\",\"node\":\"n\"}";
    g_autoptr(KbExtenderBindingArgs) b =
            kb_extender_binding_args_decode(bind, strlen(bind), &error);
    g_assert_no_error(error);
    g_assert_cmpstr(b->node, ==, "n");
}

typedef struct {
    const char *what;
    char *body;
    int code; /* KB_ERROR_DECODE or KB_ERROR_LIMIT */
    const char *needle;
} BadCase;

static char *nested(int depth)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "{\"Pod\":%s,\"NodeNames\":[],\"x\":", min_pod);
    for (int i = 0; i < depth; i++)
        g_string_append_c(s, '[');
    for (int i = 0; i < depth; i++)
        g_string_append_c(s, ']');
    g_string_append_c(s, '}');
    return g_string_free(s, FALSE);
}

static char *many_nodes(guint n)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "{\"Pod\":%s,\"NodeNames\":[", min_pod);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s, "%s\"n%u\"", i > 0 ? "," : "", i);
    g_string_append(s, "]}");
    return g_string_free(s, FALSE);
}

/* Every malformed body and every limit crossed is refused with a message naming the field. */
static void test_codec_errors(void)
{
    g_autofree char *long_name = g_strnfill(KB_EXTENDER_MAX_NAME_BYTES + 1, 'n');
    BadCase cases[] = {
            {"not JSON", g_strdup("{\"Pod\":"), KB_ERROR_DECODE, "JSON: "},
            {"trailing", g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[]} x", min_pod),
             KB_ERROR_DECODE, "JSON: "},
            {"array", g_strdup("[]"), KB_ERROR_DECODE, "expected a JSON object"},
            {"no pod", g_strdup("{\"NodeNames\":[\"a\"]}"), KB_ERROR_DECODE, "Pod: missing"},
            {"pod not object", g_strdup("{\"Pod\":3,\"NodeNames\":[]}"), KB_ERROR_DECODE, "Pod"},
            {"no nodes", g_strdup_printf("{\"Pod\":%s}", min_pod), KB_ERROR_DECODE,
             "neither NodeNames nor Nodes"},
            {"name type", g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[1]}", min_pod),
             KB_ERROR_DECODE, "NodeNames[0]"},
            {"empty name", g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[\"\"]}", min_pod),
             KB_ERROR_DECODE, "NodeNames[0]"},
            {"long name",
             g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[\"a\",\"%s\"]}", min_pod, long_name),
             KB_ERROR_LIMIT, "NodeNames[1]"},
            {"nodelist item", g_strdup_printf("{\"Pod\":%s,\"Nodes\":{\"items\":[{}]}}", min_pod),
             KB_ERROR_DECODE, "Nodes.items[0].metadata.name"},
            {"depth", nested(KB_EXTENDER_MAX_DEPTH + 1), KB_ERROR_LIMIT, "nested deeper than 64"},
            {"too many nodes", many_nodes(KB_EXTENDER_MAX_NODES + 1), KB_ERROR_LIMIT,
             "NodeNames: more than 50000 entries"},
            {"NUL", g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[]}", min_pod), KB_ERROR_DECODE,
             "JSON: "},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        gsize len = strlen(cases[i].body) + (strcmp(cases[i].what, "NUL") == 0 ? 1 : 0);
        g_autoptr(KbExtenderArgs) a = kb_extender_args_decode(cases[i].body, len, &error);
        if (a != NULL || !g_error_matches(error, KB_ERROR, cases[i].code) ||
            strstr(error->message, cases[i].needle) == NULL)
            g_error("%s: got %s", cases[i].what, error != NULL ? error->message : "success");
        g_free(cases[i].body);
    }
    /* Just under the limits passes. */
    g_autofree char *ok_depth = nested(KB_EXTENDER_MAX_DEPTH - 2);
    g_autoptr(KbExtenderArgs) a = kb_extender_args_decode(ok_depth, strlen(ok_depth), NULL);
    g_assert_nonnull(a);
    g_autofree char *ok_nodes = many_nodes(KB_EXTENDER_MAX_NODES);
    g_autoptr(KbExtenderArgs) b = kb_extender_args_decode(ok_nodes, strlen(ok_nodes), NULL);
    g_assert_nonnull(b);
    g_assert_cmpuint(b->n_nodes, ==, KB_EXTENDER_MAX_NODES);
    /* Oversized body. */
    g_autoptr(GError) error = NULL;
    g_assert_null(kb_extender_args_decode("{}", KB_EXTENDER_MAX_BODY_BYTES + 1, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_clear_error(&error);
    /* Binding args. */
    const char *nobody = "{\"PodName\":\"p\",\"PodNamespace\":\"d\"}";
    g_assert_null(kb_extender_binding_args_decode(nobody, strlen(nobody), &error));
    g_assert_true(strstr(error->message, "Node: missing") != NULL);
    g_clear_error(&error);
    const char *badtype = "{\"PodName\":3,\"PodNamespace\":\"d\",\"Node\":\"n\"}";
    g_assert_null(kb_extender_binding_args_decode(badtype, strlen(badtype), &error));
    g_assert_true(strstr(error->message, "PodName: expected a string") != NULL);
    g_clear_error(&error);
    /* Preemption args: too many victims on a node. */
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "{\"Pod\":%s,\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[", min_pod);
    for (guint i = 0; i <= KB_EXTENDER_MAX_VICTIMS; i++)
        g_string_append_printf(s, "%s{\"UID\":\"u%u\"}", i > 0 ? "," : "", i);
    g_string_append(s, "]}}}");
    g_assert_null(kb_extender_preemption_args_decode(s->str, s->len, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_assert_true(strstr(error->message, "NodeNameToMetaVictims[\"n1\"].Pods") != NULL);
    g_string_free(s, TRUE);
    g_clear_error(&error);
    g_autofree char *nouid = g_strdup_printf(
            "{\"Pod\":%s,\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{}]}}}", min_pod);
    g_assert_null(kb_extender_preemption_args_decode(nouid, strlen(nouid), &error));
    g_assert_true(strstr(error->message, "UID: missing") != NULL);
}

static void test_codec_preempt(void)
{
    g_autofree char *meta = g_strdup_printf(
            "{\"Pod\":%s,\"NodeNameToVictims\":null,\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":"
            "[{\"UID\":\"a\"},{\"UID\":\"b\"}],\"NumPDBViolations\":1},\"n2\":null}}",
            min_pod);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbExtenderPreemptionArgs) a =
            kb_extender_preemption_args_decode(meta, strlen(meta), &error);
    g_assert_no_error(error);
    g_assert_true(a->meta);
    g_assert_cmpuint(a->n_nodes, ==, 2);
    g_assert_cmpuint(a->nodes[0].n_pods, ==, 2);
    g_assert_cmpstr(a->nodes[0].pods[1].uid, ==, "b");
    g_assert_cmpint(a->nodes[0].num_pdb_violations, ==, 1);
    gboolean keep[] = {TRUE, FALSE};
    g_autoptr(GPtrArray) v = g_ptr_array_new();
    g_ptr_array_add(v, (gpointer) "a");
    GPtrArray *victims[] = {v, NULL};
    g_autofree char *out = kb_extender_preemption_result_encode(a, keep, victims);
    g_assert_cmpstr(out, ==,
                    "{\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":\"a\"}],"
                    "\"NumPDBViolations\":1}}}");
    g_autofree char *full = g_strdup_printf(
            "{\"Pod\":%s,\"NodeNameToVictims\":{\"n1\":{\"Pods\":[{\"metadata\":{\"name\":\"v\","
            "\"namespace\":\"default\",\"uid\":\"uv\"}}]}}}",
            min_pod);
    g_autoptr(KbExtenderPreemptionArgs) b =
            kb_extender_preemption_args_decode(full, strlen(full), &error);
    g_assert_no_error(error);
    g_assert_false(b->meta);
    g_assert_cmpstr(b->nodes[0].pods[0].name, ==, "v");
    g_assert_cmpstr(b->nodes[0].pods[0].uid, ==, "uv");
}

/* ---- decision fixture ------------------------------------------------------------------------ */

typedef struct {
    KbTestSched *fx;
    KbExtender *ext;
} Fx;

static Fx *fx_new(void)
{
    Fx *f = g_new0(Fx, 1);
    f->fx = kb_test_sched_new(NULL);
    f->ext = kb_extender_new(f->fx->cache, f->fx->conf, 30);
    return f;
}

static void fx_free(Fx *f)
{
    kb_extender_free(f->ext);
    kb_test_sched_free(f->fx);
    g_free(f);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Fx, fx_free)

static void add_node(Fx *f, const char *name, int gpus)
{
    g_autofree char *json = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"uid\":\"n-%s\",\"annotations\":{\"%s\":\"%s\"}},"
            "\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\",\"pods\":\"110\","
            "\"nvidia.com/"
            "gpu\":\"%d\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            name, name, KB_GPU_TOPOLOGY_ANNOTATION, "{\\\"nvlink\\\":[[0,1,2,3],[4,5,6,7]]}", gpus);
    kb_test_sched_add_node(f->fx, json);
}

static void add_group(Fx *f, const char *name, int min, const char *priority_class)
{
    g_autofree char *pc = priority_class != NULL
                                  ? g_strdup_printf(",\"priorityClassName\":\"%s\"", priority_class)
                                  : g_strdup("");
    g_autofree char *json = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"pg-%s\"},"
            "\"spec\":{\"minMember\":%d%s}}",
            name, name, min, pc);
    kb_test_sched_add_pod_group(f->fx, json);
}

/* A pod of kube-scheduler ("default-scheduler"): @group may be NULL, @node NULL (pending). */
static char *pod_json(const char *name, const char *group, int gpus, const char *node, int priority)
{
    g_autofree char *ann =
            group != NULL ? g_strdup_printf("\"scheduling.k8s.io/group-name\":\"%s\"", group)
                          : g_strdup("");
    g_autofree char *gpu =
            gpus > 0 ? g_strdup_printf(",\"nvidia.com/gpu\":\"%d\"", gpus) : g_strdup("");
    g_autofree char *bound =
            node != NULL ? g_strdup_printf(",\"nodeName\":\"%s\"", node) : g_strdup("");
    return g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"u-%s\","
            "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"annotations\":{%s}},"
            "\"spec\":{\"schedulerName\":\"default-scheduler\",\"priority\":%d%s,"
            "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\","
            "\"memory\":\"1Gi\"%s}}}]},\"status\":{\"phase\":\"%s\"}}",
            name, name, ann, priority, bound, gpu, node != NULL ? "Running" : "Pending");
}

static void add_pod(Fx *f, const char *name, const char *group, int gpus, const char *node,
                    int priority)
{
    g_autofree char *json = pod_json(name, group, gpus, node, priority);
    kb_test_sched_put_pod(f->fx, kb_test_sched_parse(json));
}

/* ExtenderArgs for pod @name (as in the cache's fixture) over @nodes (NULL-terminated). */
static KbExtenderArgs *args_for(Fx *f, const char *name, const char *const *nodes)
{
    g_autofree char *key = g_strdup_printf("default/%s", name);
    json_object *pod = g_hash_table_lookup(f->fx->pods, key);
    g_assert_nonnull(pod);
    GString *s = g_string_new("{\"Pod\":");
    g_string_append(s, json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN));
    g_string_append(s, ",\"Nodes\":null,\"NodeNames\":[");
    for (guint i = 0; nodes[i] != NULL; i++)
        g_string_append_printf(s, "%s\"%s\"", i > 0 ? "," : "", nodes[i]);
    g_string_append(s, "]}");
    g_autoptr(GError) error = NULL;
    KbExtenderArgs *a = kb_extender_args_decode(s->str, s->len, &error);
    g_assert_no_error(error);
    g_string_free(s, TRUE);
    return a;
}

static const char *const four_nodes[] = {"n0", "n1", "n2", "n3", NULL};

/* The one node filter passes for @name, or NULL; *@failed gets the failure count. */
static const char *filter_one(Fx *f, const char *name, guint *failed, char **message)
{
    g_autoptr(KbExtenderArgs) a = args_for(f, name, four_nodes);
    KbExtenderFilter r;
    kb_extender_filter(f->ext, a, f->fx->now, &r);
    g_assert_null(r.error);
    const char *passed = NULL;
    guint n_passed = 0;
    *failed = 0;
    for (guint i = 0; i < a->n_nodes; i++) {
        if (r.why[i] == NULL) {
            passed = four_nodes[i];
            n_passed++;
        } else {
            (*failed)++;
            if (message != NULL) {
                g_free(*message);
                *message = g_strdup(r.why[i]);
            }
        }
    }
    kb_extender_filter_clear(&r);
    g_assert_cmpuint(n_passed, <=, 1);
    return passed;
}

/* bind through the decisions, the write succeeding: the Binding's node and gpu-ids. */
static guint64 bind_ok(Fx *f, const char *name, const char *node)
{
    g_autofree char *req = g_strdup_printf("{\"PodName\":\"%s\",\"PodNamespace\":\"default\","
                                           "\"PodUID\":\"u-%s\",\"Node\":\"%s\"}",
                                           name, name, node);
    g_autoptr(KbExtenderBindingArgs) b = kb_extender_binding_args_decode(req, strlen(req), NULL);
    g_assert_nonnull(b);
    g_autofree char *why = NULL;
    const char *reason = NULL;
    g_autoptr(Json) binding = kb_extender_bind_begin(f->ext, b, &reason, &why);
    if (binding == NULL)
        g_error("bind %s to %s refused (%s): %s", name, node, reason, why);
    json_object *target = json_object_object_get(binding, "target");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(target, "name")), ==, node);
    json_object *ann = NULL;
    guint64 ids = 0;
    json_object *meta = json_object_object_get(binding, "metadata");
    if (json_object_object_get_ex(meta, "annotations", &ann))
        g_assert_true(kb_cache_gpu_ids_parse(
                json_object_get_string(json_object_object_get(ann, KB_GPU_IDS_ANNOTATION)), &ids,
                NULL));
    kb_extender_bind_end(f->ext, b, TRUE, f->fx->now);
    return ids;
}

static const char *node_at(KbCache *cache, gint id)
{
    guint n = 0;
    KbNodeInfo *nodes = kb_cache_nodes(cache, &n);
    g_assert_cmpint(id, >=, 0);
    g_assert_cmpuint((guint)id, <, n);
    return nodes[id].name;
}

static gboolean inside_one_island(guint64 ids)
{
    return (ids & ~(guint64)0x0f) == 0 || (ids & ~(guint64)0xf0) == 0;
}

/* ---- decisions ------------------------------------------------------------------------------- */

/* A gang that fits: every member passes onto exactly its planned node, binds there with GPU ids
 * inside one NVLink island, and the gang packs (2 nodes for 4 x 4 GPUs). */
static void test_gang_fits(void)
{
    g_autoptr(Fx) f = fx_new();
    for (int i = 0; i < 4; i++) {
        g_autofree char *n = g_strdup_printf("n%d", i);
        add_node(f, n, 8);
    }
    add_group(f, "g", 4, NULL);
    for (int i = 0; i < 4; i++) {
        g_autofree char *p = g_strdup_printf("w%d", i);
        add_pod(f, p, "g", 4, NULL, 0);
    }
    g_autoptr(GHashTable) used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint64 island_ids[4] = {0};
    for (int i = 0; i < 4; i++) {
        g_autofree char *p = g_strdup_printf("w%d", i);
        guint failed = 0;
        const char *node = filter_one(f, p, &failed, NULL);
        g_assert_nonnull(node);
        g_assert_cmpuint(failed, ==, 3);
        /* Filtering again answers the same node (the reservation holds). */
        g_assert_cmpstr(filter_one(f, p, &failed, NULL), ==, node);
        g_autoptr(KbExtenderArgs) a = args_for(f, p, four_nodes);
        gint64 scores[4];
        kb_extender_prioritize(f->ext, a, scores);
        for (int k = 0; k < 4; k++)
            g_assert_cmpint(scores[k], ==, strcmp(four_nodes[k], node) == 0 ? 10 : 0);
        island_ids[i] = bind_ok(f, p, node);
        g_assert_cmpuint(__builtin_popcountll(island_ids[i]), ==, 4);
        g_assert_true(inside_one_island(island_ids[i]));
        g_hash_table_add(used, g_strdup(node));
    }
    g_assert_cmpuint(g_hash_table_size(used), ==, 2);
    g_assert_cmpuint(kb_extender_reservations(f->ext), ==, 0);
}

/* A gang that does not fit: every node fails, for every member, with the gang's reason (the
 * PodGroup condition's message); no reservation is held. */
static void test_gang_does_not_fit(void)
{
    g_autoptr(Fx) f = fx_new();
    for (int i = 0; i < 4; i++) {
        g_autofree char *n = g_strdup_printf("n%d", i);
        add_node(f, n, 8);
    }
    add_group(f, "big", 5, NULL);
    for (int i = 0; i < 5; i++) {
        g_autofree char *p = g_strdup_printf("b%d", i);
        add_pod(f, p, "big", 8, NULL, 0);
    }
    for (int i = 0; i < 5; i++) {
        g_autofree char *p = g_strdup_printf("b%d", i);
        guint failed = 0;
        g_autofree char *message = NULL;
        g_assert_null(filter_one(f, p, &failed, &message));
        g_assert_cmpuint(failed, ==, 4);
        KbJobInfo *job = kb_cache_lookup_job(f->fx->cache, "default", "big");
        g_assert_nonnull(job);
        g_assert_nonnull(job->last_message);
        g_autofree char *expect = g_strdup_printf("gang default/big: %s", job->last_message);
        g_assert_cmpstr(message, ==, expect);
        g_assert_cmpuint(job->n_state[KB_TASK_ALLOCATED], ==, 0);
    }
    g_assert_cmpuint(kb_extender_reservations(f->ext), ==, 0);
}

/* @json (a pod) with required node affinity on its node's name (matchFields metadata.name). */
static json_object *pin_to(const char *json, const char *node)
{
    json_object *o = kb_test_sched_parse(json);
    g_autofree char *aff = g_strdup_printf(
            "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
            "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
            "\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}}",
            node);
    json_object_object_add(json_object_object_get(o, "spec"), "affinity", kb_test_sched_parse(aff));
    return o;
}

/* A gang whose members name their nodes by matchFields metadata.name: each passes the filter on
 * its named node only, though every node would fit it; so does a pod known only from the
 * request. */
static void test_node_name_affinity(void)
{
    g_autoptr(Fx) f = fx_new();
    for (int i = 0; i < 4; i++) {
        g_autofree char *n = g_strdup_printf("n%d", i);
        add_node(f, n, 8);
    }
    add_group(f, "g", 2, NULL);
    static const char *const want[] = {"n3", "n1"};
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autofree char *p = g_strdup_printf("w%u", i);
        g_autofree char *json = pod_json(p, "g", 1, NULL, 0);
        kb_test_sched_put_pod(f->fx, pin_to(json, want[i]));
    }
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autofree char *p = g_strdup_printf("w%u", i);
        guint failed = 0;
        g_assert_cmpstr(filter_one(f, p, &failed, NULL), ==, want[i]);
        g_assert_cmpuint(failed, ==, 3);
        bind_ok(f, p, want[i]);
    }

    g_autofree char *solo = pod_json("solo", NULL, 1, NULL, 0);
    json_object *o = pin_to(solo, "n2");
    g_autofree char *req = g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[\"n0\",\"n1\",\"n2\","
                                           "\"n3\"]}",
                                           json_object_to_json_string(o));
    json_object_put(o);
    g_autoptr(KbExtenderArgs) a = kb_extender_args_decode(req, strlen(req), NULL);
    g_assert_nonnull(a);
    KbExtenderFilter r;
    kb_extender_filter(f->ext, a, f->fx->now, &r);
    g_assert_true(r.managed);
    for (guint i = 0; i < 4; i++) {
        if (i == 2)
            g_assert_null(r.why[i]);
        else
            g_assert_nonnull(r.why[i]);
    }
    kb_extender_filter_clear(&r);
}

/* Pods kube-batchd does not manage pass through: every node, zero scores, no task. */
static void test_pass_through(void)
{
    g_autoptr(Fx) f = fx_new();
    add_node(f, "n0", 8);
    add_pod(f, "web", NULL, 0, NULL, 0);
    g_autoptr(KbExtenderArgs) a = args_for(f, "web", four_nodes);
    KbExtenderFilter r;
    kb_extender_filter(f->ext, a, f->fx->now, &r);
    g_assert_false(r.managed);
    for (guint i = 0; i < 4; i++)
        g_assert_null(r.why[i]);
    kb_extender_filter_clear(&r);
    gint64 scores[4] = {5, 5, 5, 5};
    kb_extender_prioritize(f->ext, a, scores);
    for (guint i = 0; i < 4; i++)
        g_assert_cmpint(scores[i], ==, 0);
    g_assert_null(kb_cache_lookup_task(f->fx->cache, "default", "web"));
    /* Its bind is refused: kube-batchd binds only what it plans (managedResources keeps
     * kube-scheduler from asking). */
    const char *req = "{\"PodName\":\"web\",\"PodNamespace\":\"default\",\"PodUID\":\"u-web\","
                      "\"Node\":\"n0\"}";
    g_autoptr(KbExtenderBindingArgs) b = kb_extender_binding_args_decode(req, strlen(req), NULL);
    g_autofree char *why = NULL;
    const char *reason = NULL;
    g_assert_null(kb_extender_bind_begin(f->ext, b, &reason, &why));
    g_assert_cmpstr(reason, ==, "not-managed");
}

/* --extender-scheduler-name: only the named profiles' pods are planned for the extender. */
static void test_scheduler_names(void)
{
    g_autoptr(Fx) f = fx_new();
    const char *names[] = {"gpu-profile", NULL};
    kb_cache_set_extender_names(f->fx->cache, names);
    add_node(f, "n0", 8);
    add_pod(f, "other", NULL, 2, NULL, 0); /* default-scheduler: not named */
    g_assert_null(kb_cache_lookup_task(f->fx->cache, "default", "other"));
    g_autoptr(KbExtenderArgs) a = args_for(f, "other", four_nodes);
    KbExtenderFilter r;
    kb_extender_filter(f->ext, a, f->fx->now, &r);
    g_assert_false(r.managed);
    kb_extender_filter_clear(&r);
    g_autofree char *json = pod_json("mine", NULL, 2, NULL, 0);
    json_object *o = kb_test_sched_parse(json);
    json_object_object_add(json_object_object_get(o, "spec"), "schedulerName",
                           json_object_new_string("gpu-profile"));
    kb_test_sched_put_pod(f->fx, o);
    g_assert_nonnull(kb_cache_lookup_task(f->fx->cache, "default", "mine"));
}

/* A pod the watch has not brought yet is taken from the request; a gang of one with GPUs. */
static void test_pod_from_request(void)
{
    g_autoptr(Fx) f = fx_new();
    add_node(f, "n0", 8);
    g_autofree char *json = pod_json("solo", NULL, 2, NULL, 0);
    g_autofree char *req = g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[\"n0\"]}", json);
    g_autoptr(KbExtenderArgs) a = kb_extender_args_decode(req, strlen(req), NULL);
    g_assert_nonnull(a);
    KbExtenderFilter r;
    kb_extender_filter(f->ext, a, f->fx->now, &r);
    g_assert_true(r.managed);
    g_assert_null(r.why[0]);
    kb_extender_filter_clear(&r);
    KbTaskInfo *t = kb_cache_lookup_task(f->fx->cache, "default", "solo");
    g_assert_nonnull(t);
    g_assert_cmpint(t->state, ==, KB_TASK_ALLOCATED);
}

static const char *try_bind(Fx *f, const char *ns, const char *name, const char *uid,
                            const char *node, gboolean complete);

/* Reservations of a gang that does not complete expire; a failed bind releases only its pod;
 * kube-scheduler binding elsewhere moves the pod there. */
static void test_reservations(void)
{
    g_autoptr(Fx) f = fx_new();
    add_node(f, "n0", 8);
    add_node(f, "n1", 8);
    add_group(f, "g", 2, NULL);
    add_pod(f, "a", "g", 4, NULL, 0);
    add_pod(f, "b", "g", 4, NULL, 0);
    guint failed;
    const char *node = filter_one(f, "a", &failed, NULL);
    g_assert_nonnull(node);
    KbJobInfo *job = kb_cache_lookup_job(f->fx->cache, "default", "g");
    g_assert_cmpuint(job->n_state[KB_TASK_ALLOCATED], ==, 2);
    /* Not yet expired. */
    g_assert_cmpuint(kb_extender_expire(f->ext, f->fx->now + 10), ==, 0);
    g_assert_cmpuint(kb_extender_reservations(f->ext), ==, 1);
    /* Failed bind: only that pod goes back. */
    const char *req = "{\"PodName\":\"a\",\"PodNamespace\":\"default\",\"PodUID\":\"u-a\","
                      "\"Node\":\"n0\"}";
    g_autoptr(KbExtenderBindingArgs) b = kb_extender_binding_args_decode(req, strlen(req), NULL);
    g_autofree char *why = NULL;
    const char *reason = NULL;
    g_autoptr(Json) binding = kb_extender_bind_begin(f->ext, b, &reason, &why);
    g_assert_nonnull(binding);
    kb_extender_bind_end(f->ext, b, FALSE, f->fx->now);
    g_assert_cmpint(kb_cache_lookup_task(f->fx->cache, "default", "a")->state, ==, KB_TASK_PENDING);
    g_assert_cmpint(kb_cache_lookup_task(f->fx->cache, "default", "b")->state, ==,
                    KB_TASK_ALLOCATED);
    /* The TTL passes with the gang incomplete: the rest is released. */
    g_assert_cmpuint(kb_extender_expire(f->ext, f->fx->now + 31), ==, 1);
    g_assert_cmpuint(job->n_state[KB_TASK_ALLOCATED], ==, 0);
    g_assert_cmpuint(kb_extender_reservations(f->ext), ==, 0);
    /* Without a plan, binding one member alone would start a partial gang: refused. */
    g_assert_cmpstr(try_bind(f, "default", "b", "u-b", "n1", TRUE), ==, "no-plan");
    /* With a plan, kube-scheduler binds a member to another node than reserved (one that
     * admits it): its choice wins and the cache follows it. */
    g_autoptr(Fx) f2 = fx_new();
    add_node(f2, "n0", 8);
    add_node(f2, "n1", 8);
    add_group(f2, "g", 2, NULL);
    add_pod(f2, "c", "g", 1, NULL, 0);
    add_pod(f2, "d", "g", 1, NULL, 0);
    g_assert_nonnull(filter_one(f2, "c", &failed, NULL));
    KbTaskInfo *td = kb_cache_lookup_task(f2->fx->cache, "default", "d");
    g_assert_cmpint(td->state, ==, KB_TASK_ALLOCATED);
    const char *other = strcmp(node_at(f2->fx->cache, td->node_id), "n0") == 0 ? "n1" : "n0";
    bind_ok(f2, "d", other);
    g_assert_cmpint(td->state, ==, KB_TASK_BINDING);
    g_assert_cmpstr(node_at(f2->fx->cache, td->node_id), ==, other);
}

/* ---- requeue of parked members ----------------------------------------------------------------
 */

/* A cycle as the daemon runs it after a watch event: the plan, taken by the extender. */
static void cycle_at(Fx *f, gint64 now)
{
    g_autoptr(KbCycleResult) r = kb_cycle_run(f->fx->cache, f->fx->conf, now);
    kb_extender_take_placements(f->ext, r);
}

/* The names of the pods due for a requeue write, sorted, comma-separated ("" when none). */
static char *take_requeues(Fx *f)
{
    g_autoptr(GPtrArray) due = kb_extender_take_requeues(f->ext);
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    for (guint i = 0; i < due->len; i++) {
        const KbExtenderRequeue *q = due->pdata[i];
        g_autofree char *uid = g_strdup_printf("u-%s", q->name);
        g_assert_cmpstr(q->namespace_, ==, "default");
        g_assert_cmpstr(q->uid, ==, uid);
        g_ptr_array_add(names, q->name);
    }
    g_ptr_array_sort(names, cmp_str);
    g_ptr_array_add(names, NULL);
    return g_strjoinv(",", (char **)names->pdata);
}

/* A 4-pod gang created pod by pod on four free 8-GPU nodes: kube-scheduler asks for each member
 * as it is created and parks the first three (every node failed); the cycle after the last
 * member's creation plans the gang. Returns with the plan made. */
static void gang_pod_by_pod(Fx *f, gboolean requeue)
{
    for (int i = 0; i < 4; i++) {
        g_autofree char *n = g_strdup_printf("n%d", i);
        add_node(f, n, 8);
    }
    kb_extender_set_requeue(f->ext, requeue);
    add_group(f, "g", 4, NULL);
    guint failed = 0;
    for (int i = 0; i < 3; i++) {
        g_autofree char *p = g_strdup_printf("g-%d", i);
        add_pod(f, p, "g", 4, NULL, 0);
        g_assert_null(filter_one(f, p, &failed, NULL));
        g_assert_cmpuint(failed, ==, 4);
        g_autofree char *none = take_requeues(f);
        g_assert_cmpstr(none, ==, "");
    }
    /* A pass-through pod parked for its own reasons is never kube-batchd's to requeue. */
    add_pod(f, "plain", NULL, 0, NULL, 0);
    add_pod(f, "g-3", "g", 4, NULL, 0);
    cycle_at(f, f->fx->now);
    KbJobInfo *job = kb_cache_lookup_job(f->fx->cache, "default", "g");
    g_assert_cmpuint(job->n_state[KB_TASK_ALLOCATED], ==, 4);
}

/* The plan of a gang tells each member kube-scheduler parked, once; the member it had not asked
 * about yet (its filter finds the plan) costs no write. */
static void test_requeue_parked(void)
{
    g_autoptr(Fx) f = fx_new();
    gang_pod_by_pod(f, TRUE);
    g_autofree char *due = take_requeues(f);
    g_assert_cmpstr(due, ==, "g-0,g-1,g-2");
    /* Once per plan: later cycles and the retried filters add nothing. */
    cycle_at(f, f->fx->now + 1);
    guint failed = 0;
    for (int i = 0; i < 4; i++) {
        g_autofree char *p = g_strdup_printf("g-%d", i);
        const char *node = filter_one(f, p, &failed, NULL);
        g_assert_nonnull(node);
        bind_ok(f, p, node);
    }
    cycle_at(f, f->fx->now + 2);
    g_autofree char *after = take_requeues(f);
    g_assert_cmpstr(after, ==, "");
    g_assert_cmpuint(kb_extender_reservations(f->ext), ==, 0);

    /* --extender-no-requeue: the same story writes nothing. */
    g_autoptr(Fx) off = fx_new();
    gang_pod_by_pod(off, FALSE);
    g_autofree char *none = take_requeues(off);
    g_assert_cmpstr(none, ==, "");
}

/*
 * A member bound ahead of the others: kube-scheduler binds g-0 after the requeue but fails the
 * others elsewhere (say its own plugins), so the gang is 1/4 bound when the reservation timeout
 * passes. The unbound members' reservations are released (g-0 stays: a binding is not undone),
 * the next cycle plans the rest again around g-0, and that new plan requeues every unbound
 * member kube-scheduler holds, so the gang completes at once instead of after kube-scheduler's
 * own flush; a failed bind counts as parked too.
 */
static void test_partial_gang_past_timeout(void)
{
    g_autoptr(Fx) f = fx_new();
    gang_pod_by_pod(f, TRUE);
    gint64 t0 = f->fx->now;
    g_autofree char *first = take_requeues(f);
    g_assert_cmpstr(first, ==, "g-0,g-1,g-2");
    guint failed = 0;
    const char *node0 = filter_one(f, "g-0", &failed, NULL);
    g_assert_nonnull(node0);
    bind_ok(f, "g-0", node0);
    g_assert_nonnull(filter_one(f, "g-1", &failed, NULL));
    g_assert_nonnull(filter_one(f, "g-3", &failed, NULL));
    /* g-2's bind fails: kube-scheduler forgets it and parks it; the cache releases its room. */
    const char *req = "{\"PodName\":\"g-2\",\"PodNamespace\":\"default\",\"PodUID\":\"u-g-2\","
                      "\"Node\":\"n3\"}";
    g_autoptr(KbExtenderBindingArgs) b = kb_extender_binding_args_decode(req, strlen(req), NULL);
    g_autofree char *why = NULL;
    const char *reason = NULL;
    g_autoptr(Json) binding = kb_extender_bind_begin(f->ext, b, &reason, &why);
    g_assert_nonnull(binding);
    kb_extender_bind_end(f->ext, b, FALSE, t0);
    /* The cycle places g-2 again in the gang's standing plan: it is told, the others not. */
    cycle_at(f, t0 + 1);
    g_autofree char *rebind = take_requeues(f);
    g_assert_cmpstr(rebind, ==, "g-2");
    /* Nothing more binds; the timeout passes: the three unbound reservations go. */
    KbJobInfo *job = kb_cache_lookup_job(f->fx->cache, "default", "g");
    g_assert_cmpuint(kb_extender_expire(f->ext, t0 + 29), ==, 0);
    g_assert_cmpuint(kb_extender_expire(f->ext, t0 + 31), ==, 3);
    g_assert_cmpuint(job->n_state[KB_TASK_ALLOCATED], ==, 0);
    KbTaskInfo *t = kb_cache_lookup_task(f->fx->cache, "default", "g-0");
    g_assert_cmpint(t->state, ==, KB_TASK_BINDING);
    g_assert_cmpstr(node_at(f->fx->cache, t->node_id), ==, node0);
    /* The next cycle plans the rest around the bound member and requeues all three. */
    cycle_at(f, t0 + 32);
    g_assert_cmpuint(job->n_state[KB_TASK_ALLOCATED], ==, 3);
    g_autofree char *again = take_requeues(f);
    g_assert_cmpstr(again, ==, "g-1,g-2,g-3");
    for (int i = 1; i < 4; i++) {
        g_autofree char *p = g_strdup_printf("g-%d", i);
        const char *node = filter_one(f, p, &failed, NULL);
        g_assert_nonnull(node);
        bind_ok(f, p, node);
    }
    g_assert_cmpuint(job->n_state[KB_TASK_BINDING], ==, 4);
}

/* preempt: whole gangs only, and only when the preemptor's whole gang then fits. */
static KbExtenderPreemptionArgs *preempt_args(Fx *f, const char *pod, const char *victims_json)
{
    g_autofree char *key = g_strdup_printf("default/%s", pod);
    json_object *p = g_hash_table_lookup(f->fx->pods, key);
    g_autofree char *req = g_strdup_printf(
            "{\"Pod\":%s,\"NodeNameToMetaVictims\":%s}",
            json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), victims_json);
    g_autoptr(GError) error = NULL;
    KbExtenderPreemptionArgs *a = kb_extender_preemption_args_decode(req, strlen(req), &error);
    g_assert_no_error(error);
    return a;
}

static char *preempt(Fx *f, const char *pod, const char *victims_json)
{
    g_autoptr(KbExtenderPreemptionArgs) a = preempt_args(f, pod, victims_json);
    g_autofree gboolean *keep = g_new0(gboolean, a->n_nodes + 1);
    g_autofree GPtrArray **victims = g_new0(GPtrArray *, a->n_nodes + 1);
    kb_extender_preempt(f->ext, a, f->fx->now, keep, victims);
    for (guint i = 0; i < a->n_nodes; i++) {
        if (victims[i] != NULL)
            g_ptr_array_sort(victims[i], cmp_str);
    }
    char *out = kb_extender_preemption_result_encode(a, keep, victims);
    for (guint i = 0; i < a->n_nodes; i++)
        g_clear_pointer(&victims[i], g_ptr_array_unref);
    return out;
}

static void test_preempt(void)
{
    g_autoptr(Fx) f = fx_new();
    add_node(f, "n0", 8);
    add_node(f, "n1", 8);
    /* low1: a gang of 2 x 4 GPUs wholly on n0. low2: a gang across n1 and... n1 (2 x 2) plus
     * one member on n0 (2 GPUs would not fit: n0 is full), so low2 lies on n1 only, and low3
     * spans n1 and nothing else. Then n1's gang "span" spans both nodes. */
    add_group(f, "low1", 2, NULL);
    add_pod(f, "l1a", "low1", 4, "n0", 0);
    add_pod(f, "l1b", "low1", 4, "n0", 0);
    add_group(f, "span", 2, NULL);
    add_pod(f, "sa", "span", 4, "n1", 0);
    add_pod(f, "sb", "span", 4, "n1", 0);
    add_group(f, "hi", 1, NULL);
    add_pod(f, "h0", "hi", 8, NULL, 100);
    kb_test_sched_run(f->fx);
    /* kube-scheduler proposes one member of low1 on n0: the answer widens it to the gang. */
    g_autofree char *r1 = preempt(f, "h0", "{\"n0\":{\"Pods\":[{\"UID\":\"u-l1a\"}]}}");
    g_assert_cmpstr(r1, ==,
                    "{\"NodeNameToMetaVictims\":{\"n0\":{\"Pods\":[{\"UID\":\"u-l1a\"},"
                    "{\"UID\":\"u-l1b\"}],\"NumPDBViolations\":0}}}");
    /* A victim of no lower priority: refused. */
    add_pod(f, "l1a", "low1", 4, "n0", 100);
    g_autofree char *r2 = preempt(f, "h0", "{\"n0\":{\"Pods\":[{\"UID\":\"u-l1b\"}]}}");
    g_assert_cmpstr(r2, ==, "{\"NodeNameToMetaVictims\":{}}");
    add_pod(f, "l1a", "low1", 4, "n0", 0);
    /* The whole gang freed still leaves the preemptor short: a 2-member gang of 8 GPUs each needs
     * both nodes, and n1 is not freed. */
    add_group(f, "hi2", 2, NULL);
    add_pod(f, "h2a", "hi2", 8, NULL, 100);
    add_pod(f, "h2b", "hi2", 8, NULL, 100);
    g_autofree char *r3 = preempt(f, "h2a", "{\"n0\":{\"Pods\":[{\"UID\":\"u-l1a\"}]}}");
    g_assert_cmpstr(r3, ==, "{\"NodeNameToMetaVictims\":{}}");
    /* Unknown victims are refused. */
    g_autofree char *r4 = preempt(f, "h0", "{\"n0\":{\"Pods\":[{\"UID\":\"nope\"}]}}");
    g_assert_cmpstr(r4, ==, "{\"NodeNameToMetaVictims\":{}}");
    /* Unmanaged preemptors: kube-scheduler's victims stand where they are plain lower-priority
     * pods on that node; a gang member would be split, so that node is dropped. */
    add_pod(f, "web", NULL, 0, NULL, 100);
    add_pod(f, "plain", NULL, 0, "n1", 0);
    g_autofree char *r5 = preempt(f, "web", "{\"n1\":{\"Pods\":[{\"UID\":\"u-sa\"}]}}");
    g_assert_cmpstr(r5, ==, "{\"NodeNameToMetaVictims\":{}}");
    g_autofree char *r6 = preempt(f, "web", "{\"n1\":{\"Pods\":[{\"UID\":\"u-plain\"}]}}");
    g_assert_cmpstr(r6, ==,
                    "{\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":\"u-plain\"}],"
                    "\"NumPDBViolations\":0}}}");
    /* ...and not a victim on another node than named, nor one of no lower priority. */
    g_autofree char *r7 = preempt(f, "web", "{\"n0\":{\"Pods\":[{\"UID\":\"u-plain\"}]}}");
    g_assert_cmpstr(r7, ==, "{\"NodeNameToMetaVictims\":{}}");
    add_pod(f, "peer", NULL, 0, "n1", 100);
    g_autofree char *r8 = preempt(f, "web", "{\"n1\":{\"Pods\":[{\"UID\":\"u-peer\"}]}}");
    g_assert_cmpstr(r8, ==, "{\"NodeNameToMetaVictims\":{}}");
}

/* A victim gang with members on two nodes cannot be evicted whole from one: refused. */
static void test_preempt_spanning_gang(void)
{
    g_autoptr(Fx) f = fx_new();
    add_node(f, "n0", 8);
    add_node(f, "n1", 8);
    add_group(f, "wide", 2, NULL);
    add_pod(f, "wa", "wide", 8, "n0", 0);
    add_pod(f, "wb", "wide", 8, "n1", 0);
    add_group(f, "hi", 1, NULL);
    add_pod(f, "h0", "hi", 8, NULL, 100);
    kb_test_sched_run(f->fx);
    g_autofree char *r = preempt(f, "h0",
                                 "{\"n0\":{\"Pods\":[{\"UID\":\"u-wa\"}]},"
                                 "\"n1\":{\"Pods\":[{\"UID\":\"u-wb\"}]}}");
    g_assert_cmpstr(r, ==, "{\"NodeNameToMetaVictims\":{}}");
}

/* ---- bind authorization ---------------------------------------------------------------------- */

/* A node with @labels and @taints (JSON fragments, may be ""), @gpus GPUs. */
static void add_node_full(Fx *f, const char *name, int gpus, const char *labels, const char *taints)
{
    g_autofree char *json = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"uid\":\"n-%s\",\"labels\":{%s}},"
            "\"spec\":{\"taints\":[%s]},"
            "\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\",\"pods\":\"110\","
            "\"nvidia.com/"
            "gpu\":\"%d\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            name, name, labels, taints, gpus);
    kb_test_sched_add_node(f->fx, json);
}

/* A pending GPU pod of default-scheduler in @ns with nodeSelector secure=yes. */
static void add_secure_pod(Fx *f, const char *ns, const char *name, int gpus)
{
    g_autofree char *json = pod_json(name, NULL, gpus, NULL, 0);
    json_object *o = kb_test_sched_parse(json);
    json_object *meta = json_object_object_get(o, "metadata");
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object *sel = json_object_new_object();
    json_object_object_add(sel, "secure", json_object_new_string("yes"));
    json_object_object_add(json_object_object_get(o, "spec"), "nodeSelector", sel);
    kb_test_sched_put_pod(f->fx, o);
}

/* bind_begin's verdict: NULL (allowed; the write then fails, as if the API server refused, so
 * the case leaves nothing bound) or the refusal's reason. */
static const char *try_bind(Fx *f, const char *ns, const char *name, const char *uid,
                            const char *node, gboolean complete)
{
    g_autofree char *req = g_strdup_printf("{\"PodName\":\"%s\",\"PodNamespace\":\"%s\","
                                           "\"PodUID\":\"%s\",\"Node\":\"%s\"}",
                                           name, ns, uid, node);
    g_autoptr(KbExtenderBindingArgs) b = kb_extender_binding_args_decode(req, strlen(req), NULL);
    g_assert_nonnull(b);
    g_autofree char *why = NULL;
    const char *reason = NULL;
    g_autoptr(Json) binding = kb_extender_bind_begin(f->ext, b, &reason, &why);
    if (binding == NULL) {
        g_assert_nonnull(reason);
        g_assert_nonnull(why);
        g_test_message("%s/%s -> %s: %s: %s", ns, name, node, reason, why);
        return reason;
    }
    g_assert_null(reason);
    if (complete)
        kb_extender_bind_end(f->ext, b, FALSE, f->fx->now);
    return NULL;
}

/*
 * The issue's attack and its variants, table-driven: a pending one-GPU pod "victim" with
 * nodeSelector secure=yes, a node "evil" without the label or GPUs. Every bind the plan could not
 * make is refused with its reason and leaves the pod as it was (pending, on no node); the one
 * onto a node that admits it goes through.
 */
static void test_bind_authorization(void)
{
    g_autoptr(Fx) f = fx_new();
    add_node_full(f, "evil", 0, "", "");
    add_node_full(f, "evil-gpu", 8, "", "");
    add_node_full(f, "secure", 8, "\"secure\":\"yes\"", "");
    add_node_full(f, "tainted", 8, "\"secure\":\"yes\"",
                  "{\"key\":\"dedicated\",\"value\":\"infra\",\"effect\":\"NoSchedule\"}");
    add_node_full(f, "small", 1, "\"secure\":\"yes\"", "");
    add_secure_pod(f, "default", "victim", 1);
    add_secure_pod(f, "default", "big", 4);
    add_secure_pod(f, "team-b", "other", 1);
    add_pod(f, "web", NULL, 0, NULL, 0);
    add_pod(f, "running", NULL, 1, "evil-gpu", 0);
    static const struct {
        const char *ns, *name, *uid, *node, *reason;
    } cases[] = {
            {"default", "victim", "u-victim", "evil", "predicates"},
            {"default", "victim", "u-victim", "evil-gpu", "predicates"},
            {"default", "victim", "u-victim", "tainted", "predicates"},
            {"default", "victim", "u-victim", "nowhere", "unknown-node"},
            {"default", "victim", "", "secure", "no-uid"},
            {"default", "victim", "u-other", "secure", "uid-mismatch"},
            {"team-b", "victim", "u-victim", "secure", "not-managed"},
            {"default", "other", "u-other", "secure", "not-managed"},
            {"default", "ghost", "u-ghost", "secure", "not-managed"},
            {"default", "web", "u-web", "secure", "not-managed"},
            {"default", "running", "u-running", "evil-gpu", "already-bound"},
            {"default", "big", "u-big", "small", "capacity"},
            {"default", "victim", "u-victim", "secure", NULL},
            {"team-b", "other", "u-other", "secure", NULL},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *got =
                try_bind(f, cases[i].ns, cases[i].name, cases[i].uid, cases[i].node, TRUE);
        if (g_strcmp0(got, cases[i].reason) != 0)
            g_error("case %u: bind %s/%s (%s) to %s: %s, expected %s", i, cases[i].ns,
                    cases[i].name, cases[i].uid, cases[i].node, got != NULL ? got : "allowed",
                    cases[i].reason != NULL ? cases[i].reason : "allowed");
        KbTaskInfo *t = kb_cache_lookup_task(f->fx->cache, "default", "victim");
        g_assert_cmpint(t->state, ==, KB_TASK_PENDING);
        g_assert_cmpint(t->node_id, ==, -1);
    }
    /* A bind on the wire: the same bind again is refused; once done, a replay too. */
    g_assert_null(try_bind(f, "default", "victim", "u-victim", "secure", FALSE));
    g_assert_cmpstr(try_bind(f, "default", "victim", "u-victim", "secure", FALSE), ==, "in-flight");
    const char *req = "{\"PodName\":\"victim\",\"PodNamespace\":\"default\","
                      "\"PodUID\":\"u-victim\",\"Node\":\"secure\"}";
    g_autoptr(KbExtenderBindingArgs) b = kb_extender_binding_args_decode(req, strlen(req), NULL);
    kb_extender_bind_end(f->ext, b, TRUE, f->fx->now);
    g_assert_cmpstr(try_bind(f, "default", "victim", "u-victim", "secure", TRUE), ==,
                    "already-bound");
    g_assert_cmpstr(try_bind(f, "default", "victim", "u-victim", "evil", TRUE), ==,
                    "already-bound");
}

/*
 * A pod known only from a filter request is planned but never bound until the watch brings it,
 * and a request never replaces the watch's copy: a forged body (no nodeSelector, another UID)
 * changes neither the pod nor what a bind may do.
 */
static void test_bind_request_pods(void)
{
    g_autoptr(Fx) f = fx_new();
    add_node_full(f, "evil", 8, "", "");
    add_node_full(f, "secure", 8, "\"secure\":\"yes\"", "");
    add_secure_pod(f, "default", "victim", 1);
    const char *const nodes[] = {"evil", "secure", NULL};
    /* The forged copy: same name, no nodeSelector, another UID. */
    g_autofree char *forged = pod_json("victim", NULL, 1, NULL, 0);
    g_autofree char *fake_uid = NULL;
    {
        json_object *o = kb_test_sched_parse(forged);
        json_object_object_add(json_object_object_get(o, "metadata"), "uid",
                               json_object_new_string("u-forged"));
        fake_uid = g_strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
    }
    for (int variant = 0; variant < 2; variant++) {
        const char *pod = variant == 0 ? forged : fake_uid;
        GString *req = g_string_new(NULL);
        g_string_printf(req, "{\"Pod\":%s,\"NodeNames\":[\"%s\",\"%s\"]}", pod, nodes[0], nodes[1]);
        g_autoptr(KbExtenderArgs) a = kb_extender_args_decode(req->str, req->len, NULL);
        g_string_free(req, TRUE);
        g_assert_nonnull(a);
        KbExtenderFilter r;
        kb_extender_filter(f->ext, a, f->fx->now, &r);
        /* evil never passes. */
        g_assert_true(r.error != NULL || r.why[0] != NULL);
        kb_extender_filter_clear(&r);
        KbTaskInfo *t = kb_cache_lookup_task(f->fx->cache, "default", "victim");
        g_assert_cmpstr(t->pod->meta.uid, ==, "u-victim");
        g_assert_cmpstr(try_bind(f, "default", "victim", "u-victim", "evil", TRUE), ==,
                        "predicates");
        g_assert_cmpstr(try_bind(f, "default", "victim", "u-forged", "evil", TRUE), ==,
                        "uid-mismatch");
    }
    /* A pod the watch has not brought: planned from the request, bound only once confirmed. */
    g_autofree char *json = pod_json("solo", NULL, 2, NULL, 0);
    g_autofree char *req = g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[\"secure\"]}", json);
    g_autoptr(KbExtenderArgs) a = kb_extender_args_decode(req, strlen(req), NULL);
    KbExtenderFilter r;
    kb_extender_filter(f->ext, a, f->fx->now, &r);
    g_assert_null(r.why[0]);
    kb_extender_filter_clear(&r);
    g_assert_cmpstr(try_bind(f, "default", "solo", "u-solo", "secure", TRUE), ==, "unconfirmed");
    add_pod(f, "solo", NULL, 2, NULL, 0); /* the watch brings it */
    g_assert_null(try_bind(f, "default", "solo", "u-solo", "secure", TRUE));
    /* One the watch never brings is forgotten after the TTL. */
    g_autofree char *ghost = pod_json("ghost", NULL, 2, NULL, 0);
    g_autofree char *greq = g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[\"secure\"]}", ghost);
    g_autoptr(KbExtenderArgs) ga = kb_extender_args_decode(greq, strlen(greq), NULL);
    kb_extender_filter(f->ext, ga, f->fx->now, &r);
    kb_extender_filter_clear(&r);
    g_assert_nonnull(kb_cache_lookup_task(f->fx->cache, "default", "ghost"));
    kb_extender_expire(f->ext, f->fx->now + 29);
    g_assert_nonnull(kb_cache_lookup_task(f->fx->cache, "default", "ghost"));
    kb_extender_expire(f->ext, f->fx->now + 31);
    g_assert_null(kb_cache_lookup_task(f->fx->cache, "default", "ghost"));
    /* The confirmed one stays. */
    g_assert_nonnull(kb_cache_lookup_task(f->fx->cache, "default", "solo"));
}

/* Where each pod of the property fixture is (NULL: pending) and may go; priority. */
typedef struct {
    const char *name, *node, *gang;
    int gpus, priority;
    gboolean secure; /* nodeSelector secure=yes */
} PropPod;

static const PropPod prop_pods[] = {
        {"victim", NULL, NULL, 1, 0, TRUE}, {"big", NULL, NULL, 4, 0, TRUE},
        {"g0", NULL, "g", 4, 0, FALSE},     {"g1", NULL, "g", 4, 0, FALSE},
        {"web", NULL, NULL, 0, 0, FALSE},   {"hi", NULL, NULL, 8, 100, FALSE},
        {"run0", "n0", NULL, 2, 0, FALSE},  {"low0", "n0", "low", 4, 0, FALSE},
        {"low1", "n1", "low", 4, 0, FALSE}, {"peer", "n1", NULL, 0, 100, FALSE},
};
static const char *const prop_nodes[] = {"evil", "secure", "tainted", "small",
                                         "n0",   "n1",     "n2",      "nowhere"};

static const PropPod *prop_pod(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(prop_pods); i++) {
        if (strcmp(prop_pods[i].name, name) == 0)
            return &prop_pods[i];
    }
    return NULL;
}

/* The oracle, from the fixture's definition: may @p go to @node at all (selector, taints, GPUs
 * the node has)? Capacity left is checked against the cache's free GPUs by the caller. */
static gboolean prop_node_fits(const PropPod *p, const char *node)
{
    if (p->secure && strcmp(node, "secure") != 0 && strcmp(node, "small") != 0)
        return FALSE;
    if (strcmp(node, "secure") == 0 || strcmp(node, "n0") == 0 || strcmp(node, "n1") == 0 ||
        strcmp(node, "n2") == 0)
        return TRUE;
    return strcmp(node, "small") == 0 && p->gpus <= 1;
}

/*
 * The decisions' property, seeded (GTest's --seed), many more calls than the end-to-end storm:
 * 3,000 random binds (any of the pods, namespaces, UIDs, nodes; successes and failures of the
 * write at random) and 1,000 random preempts. A bind allowed is always of a managed pending pod
 * in its namespace under its UID, onto a node its selector, taints and GPUs allow, with the GPUs
 * free, never twice; a preempt answer names only nodes and victims kube-scheduler proposed or
 * their gang mates on that node, all of lower priority than the preemptor.
 */
static void test_property(void)
{
    g_autoptr(Fx) f = fx_new();
    add_node_full(f, "evil", 0, "", "");
    add_node_full(f, "secure", 8, "\"secure\":\"yes\"", "");
    add_node_full(f, "tainted", 8, "\"secure\":\"yes\"",
                  "{\"key\":\"dedicated\",\"value\":\"infra\",\"effect\":\"NoSchedule\"}");
    add_node_full(f, "small", 1, "\"secure\":\"yes\"", "");
    add_node_full(f, "n0", 8, "", "");
    add_node_full(f, "n1", 8, "", "");
    add_node_full(f, "n2", 8, "", "");
    add_group(f, "g", 2, NULL);
    add_group(f, "low", 2, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(prop_pods); i++) {
        const PropPod *p = &prop_pods[i];
        if (p->secure) {
            add_secure_pod(f, "default", p->name, p->gpus);
            continue;
        }
        add_pod(f, p->name, p->gang, p->gpus, p->node, p->priority);
    }
    /* pod name -> the node a bind put it on */
    g_autoptr(GHashTable) bound = g_hash_table_new(g_str_hash, g_str_equal);
    guint32 seed = g_test_rand_int();
    g_test_message("seed %u", seed);
    g_autoptr(GRand) r = g_rand_new_with_seed(seed);
    guint allowed = 0;
    for (guint i = 0; i < 3000; i++) {
        const PropPod *p = &prop_pods[g_rand_int_range(r, 0, G_N_ELEMENTS(prop_pods))];
        const PropPod *q = &prop_pods[g_rand_int_range(r, 0, G_N_ELEMENTS(prop_pods))];
        const char *ns = g_rand_boolean(r) ? "default" : "team-b";
        g_autofree char *uid =
                g_strdup_printf("u-%s", g_rand_int_range(r, 0, 3) > 0 ? p->name : q->name);
        const char *node = prop_nodes[g_rand_int_range(r, 0, G_N_ELEMENTS(prop_nodes))];
        if (g_rand_int_range(r, 0, 4) == 0) { /* let the plan reserve the gang sometimes */
            guint failed = 0;
            filter_one(f, "g0", &failed, NULL);
        }
        KbTaskInfo *t = kb_cache_lookup_task(f->fx->cache, "default", p->name);
        gint64 free_gpus = 0;
        KbNodeInfo *ni = kb_cache_lookup_node(f->fx->cache, node);
        if (ni != NULL)
            free_gpus = ni->idle.v[KB_RES_GPU] / KB_GPU_MILLI;
        gboolean reserved_here = t != NULL && t->state == KB_TASK_ALLOCATED && ni != NULL &&
                                 t->node_id == (gint)ni->id;
        gboolean ok_write = g_rand_int_range(r, 0, 8) == 0;
        g_autofree char *req = g_strdup_printf("{\"PodName\":\"%s\",\"PodNamespace\":\"%s\","
                                               "\"PodUID\":\"%s\",\"Node\":\"%s\"}",
                                               p->name, ns, uid, node);
        g_autoptr(KbExtenderBindingArgs) b =
                kb_extender_binding_args_decode(req, strlen(req), NULL);
        g_autofree char *why = NULL;
        const char *reason = NULL;
        g_autoptr(Json) binding = kb_extender_bind_begin(f->ext, b, &reason, &why);
        if (binding == NULL)
            continue;
        allowed++;
        gboolean right = strcmp(ns, "default") == 0 && g_str_has_suffix(uid, p->name) &&
                         strlen(uid) == strlen(p->name) + 2 && p->node == NULL &&
                         (p->gpus > 0 || p->gang != NULL) &&
                         !g_hash_table_contains(bound, p->name) && prop_node_fits(p, node) &&
                         (reserved_here || free_gpus >= p->gpus);
        if (!right)
            g_error("call %u: bind %s/%s (%s) to %s allowed (free GPUs %" G_GINT64_FORMAT
                    ", reserved there %d)",
                    i, ns, p->name, uid, node, free_gpus, reserved_here);
        kb_extender_bind_end(f->ext, b, ok_write, f->fx->now);
        if (ok_write)
            g_hash_table_insert(bound, (gpointer)p->name, (gpointer)node);
    }
    g_test_message("%u binds allowed, %u pods bound", allowed, g_hash_table_size(bound));
    g_assert_cmpuint(allowed, >, 0);
    /* preempt */
    static const char *const preemptors[] = {"hi", "web", "victim", "g1"};
    static const char *const victims[] = {"run0", "low0", "low1", "peer", "g0", "nope"};
    for (guint i = 0; i < 1000; i++) {
        const char *who = preemptors[g_rand_int_range(r, 0, G_N_ELEMENTS(preemptors))];
        const char *node = prop_nodes[g_rand_int_range(r, 0, G_N_ELEMENTS(prop_nodes))];
        const char *v = victims[g_rand_int_range(r, 0, G_N_ELEMENTS(victims))];
        g_autofree char *vj = g_strdup_printf("{\"%s\":{\"Pods\":[{\"UID\":\"u-%s\"}]}}", node, v);
        g_autofree char *out = preempt(f, who, vj);
        g_autoptr(Json) o = json_tokener_parse(out);
        json_object_object_foreach(json_object_object_get(o, "NodeNameToMetaVictims"), k, nv)
        {
            g_assert_cmpstr(k, ==, node);
            json_object *pods = json_object_object_get(nv, "Pods");
            for (size_t j = 0; j < json_object_array_length(pods); j++) {
                const char *u = json_object_get_string(
                        json_object_object_get(json_object_array_get_idx(pods, j), "UID"));
                const PropPod *vp = prop_pod(u + 2);
                const PropPod *proposed = prop_pod(v);
                const PropPod *pp = prop_pod(who);
                g_assert_nonnull(vp);
                g_assert_nonnull(proposed);
                if (strcmp(vp->name, v) != 0 &&
                    (vp->gang == NULL || g_strcmp0(vp->gang, proposed->gang) != 0))
                    g_error("preempt by %s on %s: victim %s was not proposed (%s)", who, node,
                            vp->name, v);
                /* where it runs: the fixture's node, or the one a bind above put it on */
                const char *on = g_hash_table_lookup(bound, vp->name);
                if (on == NULL)
                    on = vp->node;
                if (g_strcmp0(on, node) != 0 || vp->priority >= pp->priority)
                    g_error("preempt by %s on %s: victim %s is on %s, priority %d", who, node,
                            vp->name, on != NULL ? on : "-", vp->priority);
            }
        }
    }
}

/* ---- HTTP: replay and bad requests ----------------------------------------------------------- */

typedef struct {
    guint port;
    const char *path;
    const char *method;
    const char *body;
    gsize len;
    long status;
    GString *out;
    gboolean done;
    const char *cainfo; /* HTTPS verified against this CA when set */
    const char *cert;   /* client certificate and key (PEM files), may be NULL */
    const char *key;
} Post;

static size_t on_data(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(((Post *)user)->out, data, (gssize)(size * n));
    return size * n;
}

static gpointer post_thread(gpointer data)
{
    Post *p = data;
    CURL *c = curl_easy_init();
    g_autofree char *url =
            g_strdup_printf("%s://127.0.0.1:%u%s", p->cainfo ? "https" : "http", p->port, p->path);
    if (p->cainfo != NULL)
        curl_easy_setopt(c, CURLOPT_CAINFO, p->cainfo);
    if (p->cert != NULL) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, p->cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY, p->key);
    }
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, p->method);
    if (strcmp(p->method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, p->body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)p->len);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &p->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    g_atomic_int_set(&p->done, TRUE);
    g_main_context_wakeup(NULL);
    return NULL;
}

/* A request from another thread while this one runs the server's main loop. */
static long http_full(guint port, const char *method, const char *path, const char *body, gsize len,
                      const char *cainfo, char **out)
{
    Post p = {.port = port,
              .path = path,
              .method = method,
              .body = body,
              .len = len,
              .cainfo = cainfo};
    p.out = g_string_new(NULL);
    GThread *t = g_thread_new("post", post_thread, &p);
    while (!g_atomic_int_get(&p.done))
        g_main_context_iteration(NULL, TRUE);
    g_thread_join(t);
    if (out != NULL)
        *out = g_strdup(p.out->str);
    g_string_free(p.out, TRUE);
    return p.status;
}

/* HTTPS with the client certificate @name (@name.pem, @name-key.pem of @pki; NULL: none). */
static long https_as(KbTestPki *pki, guint port, const char *name, const char *path,
                     const char *body, char **out)
{
    g_autofree char *cert = name != NULL ? g_strdup_printf("%s.pem", name) : NULL;
    g_autofree char *key = name != NULL ? g_strdup_printf("%s-key.pem", name) : NULL;
    Post p = {.port = port,
              .path = path,
              .method = body != NULL ? "POST" : "GET",
              .body = body,
              .len = body != NULL ? strlen(body) : 0,
              .cainfo = kb_test_pki_path(pki, "ca.pem"),
              .cert = name != NULL ? kb_test_pki_path(pki, cert) : NULL,
              .key = name != NULL ? kb_test_pki_path(pki, key) : NULL};
    p.out = g_string_new(NULL);
    GThread *t = g_thread_new("post", post_thread, &p);
    while (!g_atomic_int_get(&p.done))
        g_main_context_iteration(NULL, TRUE);
    g_thread_join(t);
    if (out != NULL)
        *out = g_strdup(p.out->str);
    g_string_free(p.out, TRUE);
    return p.status;
}

static long http(guint port, const char *method, const char *path, const char *body, gsize len,
                 char **out)
{
    return http_full(port, method, path, body, len, NULL, out);
}

typedef struct {
    Fx *f;
    KbExtenderServer *srv;
    guint port;
} Srv;

static gint64 fixed_now(void)
{
    return 1000;
}

static Srv *srv_new(gsize max_body)
{
    Srv *s = g_new0(Srv, 1);
    s->f = fx_new();
    KbExtenderServerOptions o = {
            .address = "127.0.0.1:0", .max_body = max_body, .now_s = fixed_now};
    g_autoptr(GError) error = NULL;
    s->srv = kb_extender_server_new(&o, s->f->ext, NULL, NULL, &error);
    g_assert_no_error(error);
    s->port = kb_extender_server_port(s->srv);
    return s;
}

static void srv_free(Srv *s)
{
    kb_extender_server_free(s->srv);
    fx_free(s->f);
    g_free(s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Srv, srv_free)

/* The recording's cluster: the nodes of the full-nodes NodeList (4 x 8 H100), the pods of the
 * recorded calls (as the watch would have brought them) and their PodGroups. */
static void replay_cluster(Fx *f, const char *mode, const char *group)
{
    g_autoptr(Json) call = load_call("full-nodes/000-filter.json");
    json_object *items = json_object_object_get(
            json_object_object_get(json_object_object_get(call, "request"), "Nodes"), "items");
    for (guint i = 0; i < json_object_array_length(items); i++)
        kb_test_sched_add_node(f->fx,
                               json_object_to_json_string_ext(json_object_array_get_idx(items, i),
                                                              JSON_C_TO_STRING_PLAIN));
    /* node-00002 was full (the other run's pods) when the NodeList was recorded: its twin. */
    g_autoptr(Json) twin = NULL;
    json_object_deep_copy(json_object_array_get_idx(items, 0), &twin, NULL);
    json_object_object_add(json_object_object_get(twin, "metadata"), "name",
                           json_object_new_string("node-00002"));
    kb_test_sched_add_node(f->fx, json_object_to_json_string_ext(twin, JSON_C_TO_STRING_PLAIN));
    add_group(f, group, 2, NULL);
    g_autofree char *dir = fixture_path(mode);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *e;
    while ((e = g_dir_read_name(d)) != NULL) {
        if (strstr(e, "filter") == NULL)
            continue;
        g_autofree char *rel = g_build_filename(mode, e, NULL);
        g_autoptr(Json) c = load_call(rel);
        json_object *pod = json_object_object_get(json_object_object_get(c, "request"), "Pod");
        kb_test_sched_put_pod(f->fx, json_object_get(pod));
    }
}

static guint candidates(json_object *req)
{
    json_object *names = json_object_object_get(req, "NodeNames");
    if (names != NULL)
        return (guint)json_object_array_length(names);
    return (guint)json_object_array_length(
            json_object_object_get(json_object_object_get(req, "Nodes"), "items"));
}

/*
 * kube-scheduler 1.19's recorded calls, in order, through the HTTP server. The recorder that
 * answered them was a dummy; ours must answer in kube-scheduler's types with the gang plan:
 * filter passes one node (the reserved one) for the gang's members, prioritize gives it 10,
 * bind posts where kube-scheduler says (no API server here: "no connection" Error, the cache
 * unchanged). The 8-GPU "fill" pods of the same group then get nodes of their own.
 */
static void replay(const char *mode, const char *group)
{
    g_autoptr(Srv) s = srv_new(0);
    replay_cluster(s->f, mode, group);
    g_autofree char *dir = fixture_path(mode);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
    const char *e;
    while ((e = g_dir_read_name(d)) != NULL)
        g_ptr_array_add(files, g_strdup(e));
    g_ptr_array_sort(files, cmp_str);
    g_assert_cmpuint(files->len, >=, 6);
    g_autoptr(GHashTable) reserved = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; i < files->len; i++) {
        g_autofree char *rel = g_build_filename(mode, files->pdata[i], NULL);
        g_autoptr(Json) call = load_call(rel);
        const char *path = json_object_get_string(json_object_object_get(call, "path"));
        json_object *req = json_object_object_get(call, "request");
        g_autofree char *body = request_text(call);
        g_autofree char *out = NULL;
        long st = http(s->port, "POST", path, body, strlen(body), &out);
        g_assert_cmpint(st, ==, 200);
        g_autoptr(Json) ans = json_tokener_parse(out);
        g_assert_nonnull(ans);
        if (g_str_has_suffix(path, "/bind")) {
            g_assert_cmpstr(json_object_get_string(json_object_object_get(ans, "Error")), ==,
                            "kube-batchd has no API server connection");
            continue;
        }
        json_object *meta = json_object_object_get(json_object_object_get(req, "Pod"), "metadata");
        const char *pod = json_object_get_string(json_object_object_get(meta, "name"));
        KbTaskInfo *t = kb_cache_lookup_task(s->f->fx->cache, "default", pod);
        g_assert_nonnull(t);
        if (t->state != KB_TASK_ALLOCATED)
            g_error("%s: pod %s not reserved: %s", rel, pod, out);
        const char *node = node_at(s->f->fx->cache, t->node_id);
        if (g_str_has_suffix(path, "/filter")) {
            g_hash_table_insert(reserved, g_strdup(pod), g_strdup(node));
            json_object *names = json_object_object_get(ans, "NodeNames");
            json_object *nodes = json_object_object_get(ans, "Nodes");
            json_object *failed = json_object_object_get(ans, "FailedNodes");
            g_assert_cmpstr(json_object_get_string(json_object_object_get(ans, "Error")), ==, "");
            gboolean offered = strstr(body, node) != NULL;
            guint n_pass =
                    names != NULL
                            ? json_object_array_length(names)
                            : json_object_array_length(json_object_object_get(nodes, "items"));
            g_assert_cmpuint(n_pass, ==, offered ? 1 : 0);
            g_assert_cmpint(names != NULL, ==, strstr(mode, "cache") != NULL);
            if (offered && names != NULL)
                g_assert_cmpstr(json_object_get_string(json_object_array_get_idx(names, 0)), ==,
                                node);
            g_assert_cmpuint(json_object_object_length(failed) + n_pass, ==, candidates(req));
        } else {
            g_assert_cmpuint(json_object_array_length(ans), >, 0);
            for (guint k = 0; k < json_object_array_length(ans); k++) {
                json_object *hp = json_object_array_get_idx(ans, k);
                const char *host = json_object_get_string(json_object_object_get(hp, "Host"));
                gint64 score = json_object_get_int64(json_object_object_get(hp, "Score"));
                g_assert_cmpint(score, ==, strcmp(host, node) == 0 ? 10 : 0);
            }
        }
    }
    /* The two 4-GPU members share one node (packed). */
    const char *a =
            g_hash_table_lookup(reserved, strstr(mode, "cache") ? "ext-true-0" : "ext-false-0");
    const char *b =
            g_hash_table_lookup(reserved, strstr(mode, "cache") ? "ext-true-1" : "ext-false-1");
    g_assert_nonnull(a);
    g_assert_cmpstr(a, ==, b);
    g_assert_cmpuint(kb_extender_server_count(s->srv, 200), ==, files->len);
}

static void test_replay_node_cache_capable(void)
{
    replay("node-cache-capable", "g-true");
}

static void test_replay_full_nodes(void)
{
    replay("full-nodes", "g-false");
}

/* Refusals are logged as warnings: counted here instead of aborting the test. */
static guint n_refusal_logs;

static void log_handler(const char *domain, GLogLevelFlags level, const char *message,
                        gpointer data)
{
    if ((level & G_LOG_LEVEL_WARNING) != 0 &&
        (g_str_has_prefix(message, "extender: ") || g_str_has_prefix(message, "httpd: ")))
        n_refusal_logs++;
    g_log_default_handler(domain, level, message, data);
}

/* Bad requests: 400, 413, 404, 405, each logged; the server answers a good call afterwards. */
static void test_http_errors(void)
{
    g_autoptr(Srv) s = srv_new(64 * 1024);
    add_node(s->f, "n0", 8);
    g_autofree char *good = g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[\"n0\"]}", min_pod);
    g_autofree char *big = g_strnfill(65 * 1024, ' ');
    g_autofree char *many = many_nodes(KB_EXTENDER_MAX_NODES + 1);
    static const struct {
        const char *method, *path;
        int body; /* 0 good, 1 malformed, 2 big, 3 too many nodes */
        long status;
    } cases[] = {
            {"POST", "/filter", 1, 400}, {"POST", "/prioritize", 1, 400},
            {"POST", "/bind", 1, 400},   {"POST", "/preempt", 1, 400},
            {"POST", "/filter", 2, 413}, {"POST", "/scheduler/filter", 3, 413},
            {"POST", "/nope", 0, 404},   {"POST", "/", 0, 404},
            {"GET", "/filter", 0, 405},  {"POST", "/scheduler/filter", 0, 200},
            {"POST", "/filter", 0, 200},
    };
    n_refusal_logs = 0;
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *body = cases[i].body == 0   ? good
                           : cases[i].body == 1 ? "{\"Pod\":"
                           : cases[i].body == 2 ? big
                                                : many;
        gsize len = strlen(body);
        if (cases[i].body == 3) {
            /* Over the small max_body: use the limit of the codec through a default server. */
            continue;
        }
        g_autofree char *out = NULL;
        long st = http(s->port, cases[i].method, cases[i].path, body, len, &out);
        if (st != cases[i].status)
            g_error("%s %s (body %d): %ld, expected %ld: %s", cases[i].method, cases[i].path,
                    cases[i].body, st, cases[i].status, out);
        if (st == 200) {
            g_autoptr(Json) o = json_tokener_parse(out);
            g_assert_cmpuint(json_object_array_length(json_object_object_get(o, "NodeNames")), ==,
                             1);
        }
    }
    g_assert_cmpuint(kb_extender_server_count(s->srv, 400), ==, 4);
    g_assert_cmpuint(kb_extender_server_count(s->srv, 413), ==, 0);
    g_assert_cmpuint(kb_extender_server_count(s->srv, 404), ==, 2);
    g_assert_cmpuint(kb_extender_server_count(s->srv, 405), ==, 1);
    g_assert_cmpuint(kb_extender_server_count(s->srv, 200), ==, 2);
    /* One log line per refusal. */
    g_assert_cmpuint(n_refusal_logs, ==, 8);

    /* Too many nodes inside a body the HTTP limit lets through: 413 from the codec. */
    g_autoptr(Srv) s2 = srv_new(0);
    g_autofree char *out = NULL;
    g_assert_cmpint(http(s2->port, "POST", "/filter", many, strlen(many), &out), ==, 413);
    g_assert_true(strstr(out, "NodeNames: more than 50000 entries") != NULL);
    g_assert_cmpint(http(s2->port, "POST", "/filter", good, strlen(good), NULL), ==, 200);
}

/* A body over the HTTP limit is refused with 413 by kb-httpd before the codec sees it. */
static void test_http_too_large(void)
{
    g_autoptr(Srv) s = srv_new(1024);
    g_autofree char *big = g_strnfill(4096, ' ');
    g_autofree char *good = g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[\"n0\"]}", min_pod);
    g_autofree char *out = NULL;
    g_assert_cmpint(http(s->port, "POST", "/filter", big, strlen(big), &out), ==, 413);
    g_assert_cmpint(http(s->port, "POST", "/filter", good, strlen(good), NULL), ==, 200);
    g_assert_cmpint(http(s->port, "POST", "/filter", big, strlen(big), NULL), ==, 413);
    g_assert_cmpint(http(s->port, "POST", "/filter", good, strlen(good), NULL), ==, 200);
}

/* --extender-tls-cert/--extender-tls-key: HTTPS verified against the test CA. */
static void test_http_tls(void)
{
    g_autoptr(Fx) f = fx_new();
    g_autofree char *cert = g_build_filename(src_dir(), "tests/data/tls/server.pem", NULL);
    g_autofree char *key = g_build_filename(src_dir(), "tests/data/tls/server-key.pem", NULL);
    g_autofree char *ca = g_build_filename(src_dir(), "tests/data/tls/ca.pem", NULL);
    KbExtenderServerOptions o = {.address = "127.0.0.1:0", .tls_cert = cert, .tls_key = key};
    g_autoptr(GError) error = NULL;
    g_autoptr(KbExtenderServer) srv = kb_extender_server_new(&o, f->ext, NULL, NULL, &error);
    if (srv == NULL && g_error_matches(error, KB_ERROR, KB_ERROR_CONFIG) &&
        strstr(error->message, "without TLS") != NULL) {
        g_test_skip(error->message);
        return;
    }
    g_assert_no_error(error);
    g_autofree char *good = g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[\"n0\"]}", min_pod);
    g_autofree char *out = NULL;
    g_assert_cmpint(http_full(kb_extender_server_port(srv), "POST", "/filter", good, strlen(good),
                              ca, &out),
                    ==, 200);
    g_assert_nonnull(strstr(out, "\"NodeNames\":[\"n0\"]"));
    /* Plain HTTP to the TLS port gets no answer. */
    g_assert_cmpint(http(kb_extender_server_port(srv), "POST", "/filter", good, strlen(good), NULL),
                    !=, 200);
    /* A missing key file is refused at startup, naming it. */
    KbExtenderServerOptions bad = {
            .address = "127.0.0.1:0", .tls_cert = cert, .tls_key = "/nonexistent/key.pem"};
    g_clear_error(&error);
    g_assert_null(kb_extender_server_new(&bad, f->ext, NULL, NULL, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, "/nonexistent/key.pem"));
}

/*
 * --extender-client-ca-file: only a certificate the CA signed, within its dates and allowed for
 * client authentication, gets through; anything else is 401 before the body is read (a bind
 * changes nothing), logged and counted. Probe paths need no certificate.
 */
static void test_http_client_certificates(void)
{
    g_autoptr(KbTestPki) pki = kb_test_pki_new();
    kb_test_pki_issue(pki, "expired", "kube-scheduler", KB_TEST_CERT_EXPIRED);
    kb_test_pki_issue(pki, "stranger", "kube-scheduler", KB_TEST_CERT_OTHER_CA);
    kb_test_pki_issue(pki, "self", "kube-scheduler", KB_TEST_CERT_SELF_SIGNED);
    kb_test_pki_issue(pki, "server-only", "kube-scheduler", KB_TEST_CERT_SERVER_ONLY);
    g_autoptr(Fx) f = fx_new();
    add_node_full(f, "evil", 8, "", "");
    add_pod(f, "victim", NULL, 1, NULL, 0);
    g_autoptr(KbMetrics) metrics = kb_metrics_new();
    KbExtenderServerOptions o = {.address = ":0",
                                 .tls_cert = kb_test_pki_path(pki, "server.pem"),
                                 .tls_key = kb_test_pki_path(pki, "server-key.pem"),
                                 .client_ca = kb_test_pki_path(pki, "ca.pem")};
    g_autoptr(GError) error = NULL;
    g_autoptr(KbExtenderServer) srv = kb_extender_server_new(&o, f->ext, NULL, metrics, &error);
    g_assert_no_error(error);
    /* With a client CA it listens where it was told. */
    g_assert_cmpstr(kb_extender_server_address(srv), ==, ":0");
    guint port = kb_extender_server_port(srv);
    const char *bind = "{\"PodName\":\"victim\",\"PodNamespace\":\"default\","
                       "\"PodUID\":\"u-victim\",\"Node\":\"evil\"}";
    static const char *const refused[] = {NULL, "expired", "stranger", "self", "server-only"};
    for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autofree char *out = NULL;
        long st = https_as(pki, port, refused[i], "/scheduler/bind", bind, &out);
        if (st != 401)
            g_error("certificate %s: HTTP %ld (%s), expected 401",
                    refused[i] != NULL ? refused[i] : "(none)", st, out);
        g_assert_true(g_str_has_prefix(out, "unauthenticated: "));
        g_test_message("%s: %s", refused[i] != NULL ? refused[i] : "(none)", out);
        KbTaskInfo *t = kb_cache_lookup_task(f->fx->cache, "default", "victim");
        g_assert_cmpint(t->state, ==, KB_TASK_PENDING);
    }
    g_assert_cmpuint(kb_extender_server_count(srv, 401), ==, G_N_ELEMENTS(refused));
    g_autofree char *text = kb_metrics_render(metrics);
    g_assert_nonnull(strstr(text, "kube_batchd_extender_unauthenticated_total 5\n"));
    g_assert_nonnull(
            strstr(text, "kube_batchd_extender_requests_total{verb=\"bind\",code=\"401\"} 5"));
    /* Probes need no certificate. */
    g_assert_cmpint(https_as(pki, port, NULL, "/healthz", NULL, NULL), ==, 200);
    /* The right certificate gets an answer (here: no API server, so the bind says so). */
    g_autofree char *good = g_strdup_printf("{\"Pod\":%s,\"NodeNames\":[\"evil\"]}", min_pod);
    g_autofree char *out = NULL;
    g_assert_cmpint(https_as(pki, port, "client", "/scheduler/filter", good, &out), ==, 200);
    g_assert_nonnull(strstr(out, "\"NodeNames\":[\"evil\"]"));
    g_clear_pointer(&out, g_free);
    g_assert_cmpint(https_as(pki, port, "client", "/scheduler/bind", bind, &out), ==, 200);
    g_assert_cmpstr(out, !=, "{\"Error\":\"\"}");
    /* A certificate that passed is remembered; the others are still refused after it. */
    g_assert_cmpint(https_as(pki, port, "expired", "/scheduler/filter", good, NULL), ==, 401);
    g_assert_cmpint(https_as(pki, port, "stranger", "/scheduler/filter", good, NULL), ==, 401);
    g_assert_cmpint(https_as(pki, port, "client", "/scheduler/filter", good, NULL), ==, 200);
}

/* Without a client CA: loopback only unless explicitly insecure; a client CA needs TLS, and a
 * file holding no certificate is refused at startup naming it. */
static void test_http_listen_rules(void)
{
    g_autoptr(Fx) f = fx_new();
    g_autoptr(GError) error = NULL;
    KbExtenderServerOptions o = {.address = ":0"};
    g_autoptr(KbExtenderServer) s1 = kb_extender_server_new(&o, f->ext, NULL, NULL, &error);
    g_assert_no_error(error);
    g_autofree char *loop = g_strdup_printf("127.0.0.1:%u", 0);
    g_assert_cmpstr(kb_extender_server_address(s1), ==, loop);
    o.address = "0.0.0.0:0";
    g_autoptr(KbExtenderServer) s2 = kb_extender_server_new(&o, f->ext, NULL, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(kb_extender_server_address(s2), ==, loop);
    o.address = "127.0.0.1:0";
    g_autoptr(KbExtenderServer) s3 = kb_extender_server_new(&o, f->ext, NULL, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(kb_extender_server_address(s3), ==, "127.0.0.1:0");
    o.address = ":0";
    o.allow_unauthenticated = TRUE;
    g_autoptr(KbExtenderServer) s4 = kb_extender_server_new(&o, f->ext, NULL, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(kb_extender_server_address(s4), ==, ":0");

    g_autoptr(KbTestPki) pki = kb_test_pki_new();
    KbExtenderServerOptions no_tls = {.address = "127.0.0.1:0",
                                      .client_ca = kb_test_pki_path(pki, "ca.pem")};
    g_assert_null(kb_extender_server_new(&no_tls, f->ext, NULL, NULL, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    g_clear_error(&error);
    KbExtenderServerOptions bad_ca = {.address = "127.0.0.1:0",
                                      .tls_cert = kb_test_pki_path(pki, "server.pem"),
                                      .tls_key = kb_test_pki_path(pki, "server-key.pem"),
                                      .client_ca = kb_test_pki_path(pki, "server-key.pem")};
    g_assert_null(kb_extender_server_new(&bad_ca, f->ext, NULL, NULL, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_CONFIG);
    g_assert_nonnull(strstr(error->message, "server-key.pem"));
}

/* A claim as read back after our write met a conflict is adopted only when it is allocated on
 * the bind's node (or on none in particular) and reserved for the pod being bound. */
static void test_claim_adoptable(void)
{
    static const struct {
        const char *node;     /* the allocation's node selector, NULL: none */
        const char *reserved; /* reservedFor uid, NULL: none */
        gboolean allocated;
        gboolean adopt;
    } cases[] = {
            {"n1", "u1", TRUE, TRUE},  {NULL, "u1", TRUE, TRUE},  {"n2", "u1", TRUE, FALSE},
            {"n1", "u2", TRUE, FALSE}, {"n1", NULL, TRUE, FALSE}, {NULL, NULL, FALSE, FALSE},
    };
    KbExtenderBindingArgs args = {
            .pod_name = "p", .pod_namespace = "default", .pod_uid = "u1", .node = "n1"};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *sel =
                cases[i].node != NULL
                        ? g_strdup_printf(",\"nodeSelector\":{\"nodeSelectorTerms\":[{"
                                          "\"matchFields\":[{\"key\":\"metadata.name\","
                                          "\"operator\":\"In\",\"values\":[\"%s\"]}]}]}",
                                          cases[i].node)
                        : g_strdup("");
        g_autofree char *alloc =
                cases[i].allocated ? g_strdup_printf("\"allocation\":{\"devices\":{\"results\":[{"
                                                     "\"request\":\"gpus\",\"driver\":\"d\","
                                                     "\"pool\":\"n1\",\"device\":\"gpu-0\"}]}%s}",
                                                     sel)
                                   : g_strdup("");
        g_autofree char *res =
                cases[i].reserved != NULL
                        ? g_strdup_printf("%s\"reservedFor\":[{\"resource\":\"pods\","
                                          "\"name\":\"p\",\"uid\":\"%s\"}]",
                                          cases[i].allocated ? "," : "", cases[i].reserved)
                        : g_strdup("");
        g_autofree char *text = g_strdup_printf(
                "{\"metadata\":{\"name\":\"c\",\"namespace\":\"default\"},\"spec\":{"
                "\"devices\":{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                "\"deviceClassName\":\"gpu\"}}]}},\"status\":{%s%s}}",
                alloc, res);
        json_object *obj = json_tokener_parse(text);
        g_assert_nonnull(obj);
        g_autoptr(GError) error = NULL;
        g_autoptr(KbResourceClaim) claim = kb_resource_claim_decode(obj, FALSE, &error);
        g_assert_no_error(error);
        json_object_put(obj);
        g_assert_cmpint(kb_extender_claim_adoptable(claim, &args), ==, cases[i].adopt);
    }
    g_assert_false(kb_extender_claim_adoptable(NULL, &args));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    g_log_set_default_handler(log_handler, NULL);
    g_test_add_func("/extender/codec/fixtures", test_codec_fixtures);
    g_test_add_func("/extender/codec/encode", test_codec_encode);
    g_test_add_func("/extender/codec/case-insensitive", test_codec_case);
    g_test_add_func("/extender/codec/errors-and-limits", test_codec_errors);
    g_test_add_func("/extender/codec/preempt", test_codec_preempt);
    g_test_add_func("/extender/decide/gang-fits", test_gang_fits);
    g_test_add_func("/extender/decide/gang-does-not-fit", test_gang_does_not_fit);
    g_test_add_func("/extender/decide/pass-through", test_pass_through);
    g_test_add_func("/extender/decide/node-name-affinity", test_node_name_affinity);
    g_test_add_func("/extender/decide/pod-from-request", test_pod_from_request);
    g_test_add_func("/extender/decide/scheduler-names", test_scheduler_names);
    g_test_add_func("/extender/decide/reservations", test_reservations);
    g_test_add_func("/extender/decide/requeue-parked", test_requeue_parked);
    g_test_add_func("/extender/decide/partial-gang-past-timeout", test_partial_gang_past_timeout);
    g_test_add_func("/extender/decide/preempt-whole-gangs", test_preempt);
    g_test_add_func("/extender/decide/preempt-spanning-gang", test_preempt_spanning_gang);
    g_test_add_func("/extender/decide/bind-authorization", test_bind_authorization);
    g_test_add_func("/extender/decide/bind-request-pods", test_bind_request_pods);
    g_test_add_func("/extender/decide/claim-adoptable", test_claim_adoptable);
    g_test_add_func("/extender/decide/property", test_property);
    g_test_add_func("/extender/replay/node-cache-capable", test_replay_node_cache_capable);
    g_test_add_func("/extender/replay/full-nodes", test_replay_full_nodes);
    g_test_add_func("/extender/http/errors", test_http_errors);
    g_test_add_func("/extender/http/too-large", test_http_too_large);
    g_test_add_func("/extender/http/tls", test_http_tls);
    g_test_add_func("/extender/http/client-certificates", test_http_client_certificates);
    g_test_add_func("/extender/http/listen-rules", test_http_listen_rules);
    int rc = g_test_run();
    curl_global_cleanup();
    return rc;
}
