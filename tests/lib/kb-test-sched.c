#include "tests/lib/kb-test-sched.h"

#include <string.h>

#include "kube/kb-dra.h"
#include "kube/kb-objects.h"
#include "scheduler/dra.h"
#include "testbed/kubelet/kbl-dra.h"

static void json_put(gpointer o)
{
    json_object_put(o);
}

KbTestSched *kb_test_sched_new(const char *yaml)
{
    KbTestSched *fx = g_new0(KbTestSched, 1);
    fx->cache = kb_cache_new(NULL, "default");
    if (yaml != NULL) {
        g_autoptr(GError) error = NULL;
        fx->conf = kb_conf_parse(yaml, strlen(yaml), &error);
        g_assert_no_error(error);
    } else {
        fx->conf = kb_conf_new_default();
    }
    fx->pods = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, json_put);
    fx->now = 1000;
    return fx;
}

void kb_test_sched_free(KbTestSched *fx)
{
    kb_cycle_result_free(fx->res);
    kb_cache_free(fx->cache);
    kb_conf_free(fx->conf);
    g_hash_table_unref(fx->pods);
    g_free(fx);
}

json_object *kb_test_sched_parse(const char *json)
{
    json_object *o = json_tokener_parse(json);
    if (o == NULL)
        g_error("bad test JSON: %s", json);
    return o;
}

/* The kinds kb_test_sched_add_*() take: they share parse, decode, add and release. */
typedef enum { KIND_NODE, KIND_POD_GROUP, KIND_QUEUE, KIND_PRIORITY_CLASS } Kind;

static void add_decoded(KbTestSched *fx, const char *json, Kind kind)
{
    json_object *o = kb_test_sched_parse(json);
    g_autoptr(GError) error = NULL;
    gpointer obj = NULL;
    switch (kind) {
    case KIND_NODE:
        obj = kb_node_decode(o, FALSE, &error);
        g_assert_no_error(error);
        /* add and update are one operation in the cache; update also covers a re-sent node */
        kb_cache_update_node(fx->cache, obj);
        break;
    case KIND_POD_GROUP:
        obj = kb_pod_group_decode(o, FALSE, &error);
        g_assert_no_error(error);
        kb_cache_add_pod_group(fx->cache, obj);
        break;
    case KIND_QUEUE:
        obj = kb_queue_decode(o, FALSE, &error);
        g_assert_no_error(error);
        kb_cache_add_queue(fx->cache, obj);
        break;
    case KIND_PRIORITY_CLASS:
        obj = kb_priority_class_decode(o, FALSE, &error);
        g_assert_no_error(error);
        kb_cache_add_priority_class(fx->cache, obj);
        break;
    }
    kb_object_unref(obj);
    json_object_put(o);
}

void kb_test_sched_add_node(KbTestSched *fx, const char *json)
{
    add_decoded(fx, json, KIND_NODE);
}

void kb_test_sched_add_pod_group(KbTestSched *fx, const char *json)
{
    add_decoded(fx, json, KIND_POD_GROUP);
}

void kb_test_sched_add_queue(KbTestSched *fx, const char *json)
{
    add_decoded(fx, json, KIND_QUEUE);
}

void kb_test_sched_add_priority_class(KbTestSched *fx, const char *json)
{
    add_decoded(fx, json, KIND_PRIORITY_CLASS);
}

void kb_test_sched_put_pod(KbTestSched *fx, json_object *o)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode(o, FALSE, &error);
    g_assert_no_error(error);
    /* The cache's add is its update: one entry point serves new pods and new versions. */
    kb_cache_update_pod(fx->cache, pod);
    g_hash_table_replace(fx->pods, g_strdup_printf("%s/%s", pod->meta.namespace_, pod->meta.name),
                         o);
}

void kb_test_sched_run(KbTestSched *fx)
{
    kb_cycle_result_free(fx->res);
    fx->res = kb_cycle_run(fx->cache, fx->conf, fx->now);
    fx->now += 1;
}

guint kb_test_sched_binds(KbTestSched *fx, const char *job)
{
    guint n = 0;
    for (guint i = 0; i < fx->res->placements->len; i++) {
        const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
        if (job == NULL || strcmp(p->job, job) == 0)
            n++;
    }
    return n;
}

const char *kb_test_sched_bound_node(KbTestSched *fx, const char *ns, const char *name)
{
    for (guint i = 0; i < fx->res->placements->len; i++) {
        const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
        if (strcmp(p->pod->meta.namespace_, ns) == 0 && strcmp(p->pod->meta.name, name) == 0)
            return p->node;
    }
    return NULL;
}

void kb_test_sched_confirm_all(KbTestSched *fx, gboolean write_gpu_ids)
{
    for (guint i = 0; i < fx->res->placements->len; i++) {
        const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
        g_assert_true(kb_cache_bind_succeeded(fx->cache, p->pod->meta.namespace_, p->pod->meta.name,
                                              p->pod->meta.uid, fx->now));
        g_autofree char *key = g_strdup_printf("%s/%s", p->pod->meta.namespace_, p->pod->meta.name);
        json_object *o = g_hash_table_lookup(fx->pods, key);
        g_assert_nonnull(o);
        json_object *copy = NULL;
        json_object_deep_copy(o, &copy, NULL);
        if (write_gpu_ids && p->gpu_ids != NULL) {
            json_object *meta = json_object_object_get(copy, "metadata");
            json_object_object_add(json_object_object_get(meta, "annotations"),
                                   KB_GPU_IDS_ANNOTATION, json_object_new_string(p->gpu_ids));
        }
        json_object_object_add(json_object_object_get(copy, "spec"), "nodeName",
                               json_object_new_string(p->node));
        json_object_object_add(json_object_object_get(copy, "status"), "phase",
                               json_object_new_string("Running"));
        kb_test_sched_put_pod(fx, copy);
    }
}

void kb_test_sched_add_dra_node(KbTestSched *fx, const char *node, guint gpus, gboolean mig,
                                const char *labels)
{
    g_autofree char *nj = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"labels\":{%s}},\"status\":{\"allocatable\":{"
            "\"cpu\":\"64\",\"memory\":\"256Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%u\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            node, labels, gpus);
    kb_test_sched_add_node(fx, nj);
    json_object *n = kb_test_sched_parse(nj);
    g_autoptr(GError) error = NULL;
    json_object *slices = kbl_dra_slices(n, mig, &error);
    g_assert_no_error(error);
    for (gsize i = 0; i < json_object_array_length(slices); i++) {
        g_autoptr(KbResourceSlice) sl =
                kb_resource_slice_decode(json_object_array_get_idx(slices, i), FALSE, &error);
        g_assert_no_error(error);
        kb_dra_set_slice(kb_cache_dra(fx->cache), sl);
    }
    json_object_put(slices);
    json_object_put(n);
}
