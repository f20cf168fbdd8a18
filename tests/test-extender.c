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
    g_autoptr(Json) binding = kb_extender_bind_begin(f->ext, b, &why);
    g_assert_nonnull(binding);
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
    /* Its bind is a plain Binding. */
    g_assert_cmpuint(bind_ok(f, "web", "n0"), ==, 0);
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
    g_autoptr(Json) binding = kb_extender_bind_begin(f->ext, b, &why);
    kb_extender_bind_end(f->ext, b, FALSE, f->fx->now);
    g_assert_cmpint(kb_cache_lookup_task(f->fx->cache, "default", "a")->state, ==, KB_TASK_PENDING);
    g_assert_cmpint(kb_cache_lookup_task(f->fx->cache, "default", "b")->state, ==,
                    KB_TASK_ALLOCATED);
    /* The TTL passes with the gang incomplete: the rest is released. */
    g_assert_cmpuint(kb_extender_expire(f->ext, f->fx->now + 31), ==, 1);
    g_assert_cmpuint(job->n_state[KB_TASK_ALLOCATED], ==, 0);
    g_assert_cmpuint(kb_extender_reservations(f->ext), ==, 0);
    /* kube-scheduler binds b to n1 whatever was planned: the cache follows it. */
    bind_ok(f, "b", "n1");
    KbTaskInfo *tb = kb_cache_lookup_task(f->fx->cache, "default", "b");
    g_assert_cmpint(tb->state, ==, KB_TASK_BINDING);
    g_assert_cmpstr(node_at(f->fx->cache, tb->node_id), ==, "n1");
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
    g_autoptr(Json) binding = kb_extender_bind_begin(f->ext, b, &why);
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
    /* Unknown victims are refused, unmanaged preemptors pass through. */
    g_autofree char *r4 = preempt(f, "h0", "{\"n0\":{\"Pods\":[{\"UID\":\"nope\"}]}}");
    g_assert_cmpstr(r4, ==, "{\"NodeNameToMetaVictims\":{}}");
    add_pod(f, "web", NULL, 0, NULL, 100);
    g_autofree char *r5 = preempt(f, "web", "{\"n1\":{\"Pods\":[{\"UID\":\"u-sa\"}]}}");
    g_assert_cmpstr(r5, ==,
                    "{\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":\"u-sa\"}],"
                    "\"NumPDBViolations\":0}}}");
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
    g_test_add_func("/extender/decide/pod-from-request", test_pod_from_request);
    g_test_add_func("/extender/decide/scheduler-names", test_scheduler_names);
    g_test_add_func("/extender/decide/reservations", test_reservations);
    g_test_add_func("/extender/decide/requeue-parked", test_requeue_parked);
    g_test_add_func("/extender/decide/partial-gang-past-timeout", test_partial_gang_past_timeout);
    g_test_add_func("/extender/decide/preempt-whole-gangs", test_preempt);
    g_test_add_func("/extender/decide/preempt-spanning-gang", test_preempt_spanning_gang);
    g_test_add_func("/extender/replay/node-cache-capable", test_replay_node_cache_capable);
    g_test_add_func("/extender/replay/full-nodes", test_replay_full_nodes);
    g_test_add_func("/extender/http/errors", test_http_errors);
    g_test_add_func("/extender/http/too-large", test_http_too_large);
    g_test_add_func("/extender/http/tls", test_http_tls);
    int rc = g_test_run();
    curl_global_cleanup();
    return rc;
}
