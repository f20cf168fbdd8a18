/*
 * The scheduler core without an API server, for tests: a cache and a configuration, objects put in
 * from JSON text through the real decoders, cycles run at a fake clock, and questions about the
 * last cycle's placements.
 *
 *   KbTestSched *fx = kb_test_sched_new(NULL);
 *   kb_test_sched_add_node(fx, "{\"kind\":\"Node\",...}");
 *   kb_test_sched_put_pod(fx, kb_test_sched_parse(pod_json));
 *   kb_test_sched_run(fx);
 *   g_assert_cmpuint(kb_test_sched_binds(fx, "default/tf"), ==, 4);
 *   kb_test_sched_free(fx);
 *
 * Every function aborts the test (g_error / g_assert) on bad test input: they are for tests only.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "scheduler/cache.h"
#include "scheduler/conf.h"
#include "scheduler/cycle.h"

typedef struct {
    KbCache *cache;
    KbConf *conf;
    KbCycleResult *res; /* the last cycle's result, NULL before the first */
    GHashTable *pods;   /* "ns/name" -> json_object*: the last version given to the cache */
    gint64 now;         /* the clock of the next cycle (starts at 1000, +1 a cycle) */
    guint seq;          /* free for the test's own naming / timestamps (starts at 0) */
} KbTestSched;

/* A fixture with configuration @yaml (NULL: the built-in default). Free with
 * kb_test_sched_free(). */
KbTestSched *kb_test_sched_new(const char *yaml);
void kb_test_sched_free(KbTestSched *fx);

/* @json parsed; aborts when it is not JSON. The caller owns the result. */
json_object *kb_test_sched_parse(const char *json);

/* Decode @json (a Node, PodGroup, Queue or PriorityClass) and add it to the cache (a Node of the
 * same name is replaced). */
void kb_test_sched_add_node(KbTestSched *fx, const char *json);
void kb_test_sched_add_pod_group(KbTestSched *fx, const char *json);
void kb_test_sched_add_queue(KbTestSched *fx, const char *json);
void kb_test_sched_add_priority_class(KbTestSched *fx, const char *json);

/* A Ready node @node (64 cpus, 256Gi, @gpus nvidia.com/gpu, labels @labels: JSON members or "")
 * and the ResourceSlices kb-kubelet --dra publishes for it (MIG-capable with @mig, else GPUs as
 * its labels say: shared by memory with "kube-batchd.io/gpu-sharing": "memory"), into the cache. */
void kb_test_sched_add_dra_node(KbTestSched *fx, const char *node, guint gpus, gboolean mig,
                                const char *labels);

/* Decode Pod @o and add it to the cache, or update the cached pod of that namespace/name; keeps
 * @o (ownership taken) as fx->pods["ns/name"]. */
void kb_test_sched_put_pod(KbTestSched *fx, json_object *o);

/* One cycle at fx->now (the result replaces fx->res), then the clock advances by one. */
void kb_test_sched_run(KbTestSched *fx);

/* The placements of the last cycle for job @job ("ns/name"), or all of them when @job is NULL. */
guint kb_test_sched_binds(KbTestSched *fx, const char *job);

/* The node the last cycle placed pod @ns/@name on, or NULL. */
const char *kb_test_sched_bound_node(KbTestSched *fx, const char *ns, const char *name);

/* What the binder and the watch do with every placement of the last cycle: the bind succeeds,
 * then the pod is seen again with spec.nodeName set and phase Running (and, with
 * @write_gpu_ids, the placement's gpu-ids annotation when it has one). */
void kb_test_sched_confirm_all(KbTestSched *fx, gboolean write_gpu_ids);
