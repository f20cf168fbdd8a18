/*
 * DRA in the gang plan (scheduler/dra.c through the real cycle): every member's claims are
 * allocated with its node, all or nothing; a device is never given twice; shared and allocated
 * claims pin their pods; firstAvailable, All, matchAttribute and the NVLink island preference;
 * the reason a gang waits names the short request; pods wait for a template's claim; the claim
 * writes the binder gets.
 */
#include <stdlib.h>
#include <string.h>

#include "kube/kb-dra.h"
#include "scheduler/dra.h"
#include "tests/lib/kb-test-sched.h"

typedef KbTestSched Fx;

static KbDra *dra(Fx *fx)
{
    return kb_cache_dra(fx->cache);
}

static void add_class(Fx *fx, const char *name, const char *selector)
{
    g_autofree char *text =
            selector == NULL
                    ? g_strdup_printf("{\"metadata\":{\"name\":\"%s\"},\"spec\":{}}", name)
                    : g_strdup_printf("{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"selectors\":[{"
                                      "\"cel\":{\"expression\":\"%s\"}}]}}",
                                      name, selector);
    json_object *o = kb_test_sched_parse(text);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbDeviceClass) dc = kb_device_class_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    kb_dra_set_class(dra(fx), dc);
}

static void put_slice(Fx *fx, const char *node, guint n, guint island, const char *product);

/* A node with @n GPUs (islands of @island GPUs) and its ResourceSlice, product @product. */
static void add_gpu_node(Fx *fx, const char *node, guint n, guint island, const char *product)
{
    g_autofree char *nj = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":{\"cpu\":\"64\","
            "\"memory\":\"256Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
            "\"status\":\"True\"}]}}",
            node);
    kb_test_sched_add_node(fx, nj);
    put_slice(fx, node, n, island, product);
}

/* The ResourceSlice of @node (set or replaced): @n GPUs, islands of @island, @product. */
static void put_slice(Fx *fx, const char *node, guint n, guint island, const char *product)
{
    g_autoptr(GString) s = g_string_new(NULL);
    g_string_printf(s,
                    "{\"metadata\":{\"name\":\"%s-gpu\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
                    "\"nodeName\":\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":1,"
                    "\"resourceSliceCount\":1},\"devices\":[",
                    node, node, node);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s,
                               "%s{\"name\":\"gpu-%u\",\"attributes\":{\"index\":{\"int\":%u},"
                               "\"productName\":{\"string\":\"%s\"},\"kube-batchd.io/"
                               "nvlinkIsland\":{\"int\":%u}},\"capacity\":{\"memory\":{\"value\":"
                               "\"40Gi\"}}}",
                               i == 0 ? "" : ",", i, i, product, i / island);
    g_string_append(s, "]}}");
    json_object *o = kb_test_sched_parse(s->str);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbResourceSlice) slice = kb_resource_slice_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    kb_dra_set_slice(dra(fx), slice);
}

/* Claim ml/@name (uid c-@uid) with spec.devices @devices (JSON) and status @status (JSON or
 * NULL), decoded. */
static KbResourceClaim *claim_new(Fx *fx, const char *name, const char *uid, const char *devices,
                                  const char *status)
{
    g_autofree char *text =
            g_strdup_printf("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"c-%s\","
                            "\"resourceVersion\":\"%u\"},\"spec\":{\"devices\":%s}%s%s}",
                            name, uid, ++fx->seq, devices, status != NULL ? ",\"status\":" : "",
                            status != NULL ? status : "");
    json_object *o = kb_test_sched_parse(text);
    g_autoptr(GError) error = NULL;
    KbResourceClaim *c = kb_resource_claim_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    return c;
}

/* Claim ml/@name with spec.devices @devices (JSON) and status @status (JSON or NULL). */
static void put_claim(Fx *fx, const char *name, const char *devices, const char *status)
{
    g_autoptr(KbResourceClaim) c = claim_new(fx, name, name, devices, status);
    kb_dra_set_claim(dra(fx), c);
}

static char *gpus_request(guint count, const char *klass)
{
    return g_strdup_printf("{\"requests\":[{\"name\":\"gpus\",\"exactly\":{\"deviceClassName\":"
                           "\"%s\",\"count\":%u}}]}",
                           klass, count);
}

/* A pod status's member naming @claim as its claim "gpus" (with its leading comma; "" for NULL:
 * not created yet); newly allocated. */
static char *claim_statuses(const char *claim)
{
    if (claim == NULL)
        return g_strdup("");
    return g_strdup_printf(",\"resourceClaimStatuses\":[{\"name\":\"gpus\","
                           "\"resourceClaimName\":\"%s\"}]",
                           claim);
}

/* Pod ml/@name of gang @group (size @min) using claim @claim through template "two-gpus" (the
 * claim named in its status; NULL: not created yet). */
static void put_pod(Fx *fx, const char *name, const char *group, const char *claim)
{
    g_autofree char *status = claim_statuses(claim);
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"u-%s\","
            "\"annotations\":{\"scheduling.k8s.io/group-name\":\"%s\"}},\"spec\":{"
            "\"schedulerName\":\"kube-batchd\",\"containers\":[{\"name\":\"c\",\"resources\":{"
            "\"requests\":{\"cpu\":\"1\"}}}],\"resourceClaims\":[{\"name\":\"gpus\","
            "\"resourceClaimTemplateName\":\"two-gpus\"}]},\"status\":{\"phase\":\"Pending\"%s}}",
            name, name, group, status);
    kb_test_sched_put_pod(fx, kb_test_sched_parse(text));
}

static void add_group(Fx *fx, const char *name, guint min)
{
    g_autofree char *text = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.incubator.k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
            "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},\"spec\":{\"minMember\":%u}}",
            name, min);
    kb_test_sched_add_pod_group(fx, text);
}

/* A gang of @n pods w0..w(n-1), each with its own claim w<i>-gpus of @per GPUs. */
static void add_gang(Fx *fx, const char *group, guint n, guint per)
{
    add_group(fx, group, n);
    g_autofree char *req = gpus_request(per, "gpu.nvidia.com");
    for (guint i = 0; i < n; i++) {
        g_autofree char *pod = g_strdup_printf("%s-w%u", group, i);
        g_autofree char *claim = g_strdup_printf("%s-w%u-gpus", group, i);
        put_claim(fx, claim, req, NULL);
        put_pod(fx, pod, group, claim);
    }
}

static const KbPlacement *placement(Fx *fx, const char *pod)
{
    for (guint i = 0; i < fx->res->placements->len; i++) {
        const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
        if (strcmp(p->pod->meta.name, pod) == 0)
            return p;
    }
    return NULL;
}

/* The claim write bodies write_status() parsed, freed at the end. */
static GPtrArray *bodies;

static void put_json(gpointer obj)
{
    json_object_put(obj);
}

/* The one write of @p (asserted), its body's status. */
static json_object *write_status(const KbPlacement *p, guint i)
{
    g_assert_nonnull(p->claim_writes);
    g_assert_cmpuint(p->claim_writes->len, >, i);
    const KbClaimWrite *w = p->claim_writes->pdata[i];
    json_object *body = json_tokener_parse(w->body);
    g_assert_nonnull(body);
    if (bodies == NULL)
        bodies = g_ptr_array_new_with_free_func(put_json);
    g_ptr_array_add(bodies, body);
    return json_object_object_get(body, "status");
}

static const char *status_node(json_object *status)
{
    json_object *sel =
            json_object_object_get(json_object_object_get(status, "allocation"), "nodeSelector");
    json_object *term =
            json_object_array_get_idx(json_object_object_get(sel, "nodeSelectorTerms"), 0);
    json_object *f = json_object_array_get_idx(json_object_object_get(term, "matchFields"), 0);
    return json_object_get_string(
            json_object_array_get_idx(json_object_object_get(f, "values"), 0));
}

static json_object *status_results(json_object *status)
{
    return json_object_object_get(
            json_object_object_get(json_object_object_get(status, "allocation"), "devices"),
            "results");
}

static Fx *fixture(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_class(fx, "gpu.nvidia.com", NULL);
    return fx;
}

/* A 4-pod gang, 2 GPUs each, on nodes of 4 GPUs: every claim allocated on its pod's node, each
 * device once, every pod reserved. */
static void test_gang_allocated(void)
{
    Fx *fx = fixture();
    for (guint n = 1; n <= 3; n++) {
        g_autofree char *node = g_strdup_printf("n%u", n);
        add_gpu_node(fx, node, 4, 4, "NVIDIA A100");
    }
    add_gang(fx, "job", 4, 2);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/job"), ==, 4);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) nodes = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < 4; i++) {
        g_autofree char *pod = g_strdup_printf("job-w%u", i);
        const KbPlacement *p = placement(fx, pod);
        g_assert_nonnull(p);
        g_assert_cmpuint(p->claim_writes->len, ==, 1);
        const KbClaimWrite *w = p->claim_writes->pdata[0];
        g_autofree char *claim = g_strdup_printf("job-w%u-gpus", i);
        g_assert_cmpstr(w->name, ==, claim);
        g_assert_true(w->allocates);
        json_object *st = write_status(p, 0);
        g_assert_cmpstr(status_node(st), ==, p->node);
        json_object *results = status_results(st);
        g_assert_cmpuint(json_object_array_length(results), ==, 2);
        for (guint r = 0; r < 2; r++) {
            json_object *res = json_object_array_get_idx(results, r);
            g_assert_cmpstr(json_object_get_string(json_object_object_get(res, "pool")), ==,
                            p->node);
            g_autofree char *dk =
                    g_strdup_printf("%s/%s", p->node,
                                    json_object_get_string(json_object_object_get(res, "device")));
            g_assert_false(g_hash_table_contains(seen, dk));
            g_hash_table_add(seen, g_steal_pointer(&dk));
        }
        json_object *reserved = json_object_object_get(st, "reservedFor");
        g_assert_cmpuint(json_object_array_length(reserved), ==, 1);
        g_assert_cmpstr(json_object_get_string(json_object_object_get(
                                json_object_array_get_idx(reserved, 0), "uid")),
                        ==, p->pod->meta.uid);
        g_hash_table_add(nodes, (gpointer)p->node);
    }
    /* gangs on few nodes: two full nodes, not three half-used ones */
    g_assert_cmpuint(g_hash_table_size(nodes), ==, 2);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 8);
    kb_test_sched_free(fx);
}

/* One GPU short: nothing placed, nothing held, and the reason names the short request. */
static void test_gang_one_short(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    add_gpu_node(fx, "n2", 3, 4, "NVIDIA A100");
    add_gang(fx, "job", 4, 2);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 0);
    const KbJobStatus *js = kb_cycle_result_job(fx->res, "ml/job");
    g_assert_nonnull(js);
    g_test_message("msg: %s", js->message);
    g_assert_nonnull(strstr(js->message, "claim ml/job-w3-gpus request gpus: 2 devices of class "
                                         "gpu.nvidia.com wanted, 1 free on node n2"));
    kb_test_sched_free(fx);
}

/* A pod whose template claim is not created yet waits, and says so. */
static void test_waits_for_claim(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    add_group(fx, "job", 1);
    put_pod(fx, "job-w0", "job", NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    const KbJobStatus *js = kb_cycle_result_job(fx->res, "ml/job");
    g_assert_nonnull(strstr(js->message, "the claim of resourceClaims gpus (template two-gpus) is "
                                         "not created yet"));
    /* the controller creates it: the pod is placed */
    g_autofree char *req = gpus_request(1, "gpu.nvidia.com");
    put_claim(fx, "job-w0-gpus-abcde", req, NULL);
    put_pod(fx, "job-w0", "job", "job-w0-gpus-abcde");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 1);
    kb_test_sched_free(fx);
}

/* A class that does not exist: the pod waits, naming it. */
static void test_class_missing(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    add_group(fx, "job", 1);
    g_autofree char *req = gpus_request(1, "mig.nvidia.com");
    put_claim(fx, "c0", req, NULL);
    put_pod(fx, "job-w0", "job", "c0");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    const KbJobStatus *js = kb_cycle_result_job(fx->res, "ml/job");
    g_assert_nonnull(strstr(js->message, "claim ml/c0 request gpus: device class mig.nvidia.com "
                                         "not found"));
    kb_test_sched_free(fx);
}

/* Devices an allocated claim holds are not given again, and the allocated claim pins its pod. */
static void test_allocated_claims(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 2, 2, "NVIDIA A100");
    add_gpu_node(fx, "n2", 2, 2, "NVIDIA A100");
    g_autofree char *req = gpus_request(2, "gpu.nvidia.com");
    /* someone else's claim holds both GPUs of n1 */
    put_claim(fx, "other", req,
              "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
              "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"},{\"request\":\"gpus\","
              "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-1\"}]},"
              "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
              "\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}},\"reservedFor\":"
              "[{\"resource\":\"pods\",\"name\":\"x\",\"uid\":\"ux\"}]}");
    add_gang(fx, "job", 1, 2);
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "ml", "job-w0"), ==, "n2");
    /* a pod using the allocated claim goes where it is, with a reservation only */
    add_group(fx, "share", 1);
    put_pod(fx, "share-w0", "share", "other");
    kb_test_sched_run(fx);
    const KbPlacement *p = placement(fx, "share-w0");
    g_assert_nonnull(p);
    g_assert_cmpstr(p->node, ==, "n1");
    const KbClaimWrite *w = p->claim_writes->pdata[0];
    g_assert_false(w->allocates);
    json_object *st = write_status(p, 0);
    g_assert_null(json_object_object_get(st, "allocation"));
    g_assert_cmpuint(json_object_array_length(json_object_object_get(st, "reservedFor")), ==, 2);
    kb_test_sched_free(fx);
}

/* A claim shared by two members: both on one node, one write reserving it for both. */
static void test_shared_claim(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 1, 1, "NVIDIA A100");
    add_gpu_node(fx, "n2", 1, 1, "NVIDIA A100");
    add_group(fx, "job", 2);
    g_autofree char *req = gpus_request(1, "gpu.nvidia.com");
    put_claim(fx, "shared", req, NULL);
    put_pod(fx, "job-w0", "job", "shared");
    put_pod(fx, "job-w1", "job", "shared");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 2);
    const KbPlacement *a = placement(fx, "job-w0"), *b = placement(fx, "job-w1");
    g_assert_cmpstr(a->node, ==, b->node);
    const KbPlacement *first = a->claim_writes != NULL ? a : b;
    const KbPlacement *second = first == a ? b : a;
    g_assert_null(second->claim_writes);
    json_object *st = write_status(first, 0);
    g_assert_cmpuint(json_object_array_length(json_object_object_get(st, "reservedFor")), ==, 2);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 1);
    kb_test_sched_free(fx);
}

/* matchAttribute: both GPUs of a claim on one NVLink island, even when the node has two free. */
static void test_match_attribute(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 4, 2, "NVIDIA A100"); /* islands {0,1} {2,3} */
    add_gpu_node(fx, "n2", 4, 2, "NVIDIA A100");
    g_autofree char *one = gpus_request(1, "gpu.nvidia.com");
    /* gpu-0 and gpu-2 of n1 taken: one free GPU on each island */
    put_claim(fx, "a", one,
              "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
              "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"},{\"request\":\"gpus\","
              "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-2\"}]}}}");
    add_group(fx, "job", 1);
    put_claim(fx, "c0",
              "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{\"deviceClassName\":"
              "\"gpu.nvidia.com\",\"count\":2}}],\"constraints\":[{\"matchAttribute\":"
              "\"kube-batchd.io/nvlinkIsland\"}]}",
              NULL);
    put_pod(fx, "job-w0", "job", "c0");
    kb_test_sched_run(fx);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "ml", "job-w0"), ==, "n2");
    kb_test_sched_free(fx);
}

/* Without a constraint the tightest island that holds the request is preferred. */
static void test_island_preferred(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 4, 2, "NVIDIA A100");
    g_autofree char *one = gpus_request(1, "gpu.nvidia.com");
    put_claim(fx, "a", one,
              "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
              "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-1\"}]}}}");
    add_gang(fx, "job", 1, 2);
    kb_test_sched_run(fx);
    json_object *results = status_results(write_status(placement(fx, "job-w0"), 0));
    g_assert_cmpstr(json_object_get_string(json_object_object_get(
                            json_object_array_get_idx(results, 0), "device")),
                    ==, "gpu-2");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(
                            json_object_array_get_idx(results, 1), "device")),
                    ==, "gpu-3");
    kb_test_sched_free(fx);
}

/* firstAvailable in order; allocationMode All takes every device of the node. */
static void test_first_available_and_all(void)
{
    Fx *fx = fixture();
    add_class(fx, "nothing.example.com", NULL);
    add_gpu_node(fx, "n1", 2, 2, "NVIDIA A100");
    add_group(fx, "job", 1);
    put_claim(fx, "c0",
              "{\"requests\":[{\"name\":\"gpus\",\"firstAvailable\":[{\"name\":\"four\","
              "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":4},{\"name\":\"all\","
              "\"deviceClassName\":\"gpu.nvidia.com\",\"allocationMode\":\"All\"}]}]}",
              NULL);
    put_pod(fx, "job-w0", "job", "c0");
    kb_test_sched_run(fx);
    json_object *results = status_results(write_status(placement(fx, "job-w0"), 0));
    g_assert_cmpuint(json_object_array_length(results), ==, 2);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(
                            json_object_array_get_idx(results, 0), "request")),
                    ==, "gpus/all");
    kb_test_sched_free(fx);
}

/* The binding failed for certain: the pod's devices are free again. */
static void test_bind_failure_releases(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 2, 2, "NVIDIA A100");
    add_gang(fx, "job", 1, 2);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 2);
    g_assert_true(kb_cache_bind_failed(fx->cache, "ml", "job-w0", "u-job-w0", NULL));
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 0);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 1);
    kb_test_sched_free(fx);
}

/* Written and bound: the devices stay held until the claim is seen allocated, then counted from
 * the claim alone. */
static void test_written_until_seen(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 2, 2, "NVIDIA A100");
    add_gang(fx, "job", 1, 2);
    kb_test_sched_run(fx);
    kb_dra_claim_written(dra(fx), "ml", "job-w0-gpus", TRUE);
    kb_test_sched_confirm_all(fx, FALSE);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 2);
    /* another pod finds nothing free meanwhile */
    add_gang(fx, "late", 1, 1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_autofree char *req = gpus_request(2, "gpu.nvidia.com");
    put_claim(
            fx, "job-w0-gpus", req,
            "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
            "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"},{\"request\":\"gpus\","
            "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-1\"}]}},"
            "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"job-w0\",\"uid\":\"u-job-w0\"}]}");
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 2);
    put_claim(fx, "job-w0-gpus", req, NULL); /* deallocated */
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 0);
    kb_test_sched_free(fx);
}

/* A claim write's echo (the watch showing the allocation this scheduler assumed, as written)
 * changes no room and needs no cycle (kube-batchd kicked one per claim); any other change does:
 * other devices, another claim of that name, an allocated claim's update, a reservation dropped,
 * or the echo once the assumption is gone. */
static void test_echo_confirms_assumed(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    add_gang(fx, "job", 1, 2);
    kb_test_sched_run(fx);
    const KbPlacement *p = placement(fx, "job-w0");
    g_assert_nonnull(p);
    json_object *st = write_status(p, 0);
    const char *written = json_object_to_json_string(st);
    g_autofree char *req = gpus_request(2, "gpu.nvidia.com");
    KbResourceClaim *old = (KbResourceClaim *)kb_dra_lookup_claim(dra(fx), "ml", "job-w0-gpus");
    g_assert_nonnull(old);
    g_autoptr(KbResourceClaim) before = kb_object_ref(old);
    g_autoptr(KbResourceClaim) echo = claim_new(fx, "job-w0-gpus", "job-w0-gpus", req, written);
    g_assert_true(kb_dra_claim_confirms_assumed(dra(fx), before, echo));
    /* devices the scheduler did not choose (it took two of the four) */
    json_object *results = status_results(st);
    gboolean low = strcmp(json_object_get_string(json_object_object_get(
                                  json_object_array_get_idx(results, 0), "device")),
                          "gpu-0") == 0;
    g_autofree char *other = g_strdup_printf(
            "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
            "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-%u\"},{\"request\":\"gpus\","
            "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-%u\"}]}},"
            "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"job-w0\",\"uid\":\"u-job-w0\"}]}",
            low ? 2 : 0, low ? 3 : 1);
    g_autoptr(KbResourceClaim) elsewhere = claim_new(fx, "job-w0-gpus", "job-w0-gpus", req, other);
    g_assert_false(kb_dra_claim_confirms_assumed(dra(fx), before, elsewhere));
    g_autoptr(KbResourceClaim) successor = claim_new(fx, "job-w0-gpus", "new", req, written);
    g_assert_false(kb_dra_claim_confirms_assumed(dra(fx), before, successor));
    g_assert_false(kb_dra_claim_confirms_assumed(dra(fx), echo, echo));
    g_assert_false(kb_dra_claim_confirms_assumed(dra(fx), NULL, echo));
    /* unallocated but reserved for a pod the echo no longer names */
    g_autoptr(KbResourceClaim) reserved =
            claim_new(fx, "job-w0-gpus", "job-w0-gpus", req,
                      "{\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"x\",\"uid\":\"u-x\"}]}");
    g_assert_false(kb_dra_claim_confirms_assumed(dra(fx), reserved, echo));
    kb_dra_set_claim(dra(fx), echo);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 2);
    g_assert_false(kb_dra_claim_confirms_assumed(dra(fx), before, echo));
    kb_test_sched_free(fx);
}

/* Backtracking across members: w0's claim is shared with w1, which also needs two GPUs of its
 * own. Greedy puts w0 (and the shared claim) on n1, where w1 cannot follow; the plan takes that
 * back and puts both on n2. */
static void test_backtrack_shared(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 1, 1, "NVIDIA A100");
    add_gpu_node(fx, "n2", 3, 4, "NVIDIA A100");
    add_group(fx, "job", 2);
    g_autofree char *one = gpus_request(1, "gpu.nvidia.com");
    g_autofree char *two = gpus_request(2, "gpu.nvidia.com");
    put_claim(fx, "shared", one, NULL);
    put_claim(fx, "own", two, NULL);
    put_pod(fx, "job-w0", "job", "shared");
    kb_test_sched_put_pod(
            fx, kb_test_sched_parse(
                        "{\"metadata\":{\"name\":\"job-w1\",\"namespace\":\"ml\",\"uid\":"
                        "\"u-job-w1\",\"annotations\":{\"scheduling.k8s.io/group-name\":\"job\"}},"
                        "\"spec\":{\"schedulerName\":\"kube-batchd\",\"containers\":[{\"name\":"
                        "\"c\"}],\"resourceClaims\":[{\"name\":\"a\",\"resourceClaimName\":"
                        "\"shared\"},{\"name\":\"b\",\"resourceClaimName\":\"own\"}]},"
                        "\"status\":{\"phase\":\"Pending\"}}"));
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 2);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "ml", "job-w0"), ==, "n2");
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "ml", "job-w1"), ==, "n2");
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 3);
    kb_test_sched_free(fx);
}

/* Selectors through kb-cel: the class's and a request's productName selector pick the node. */
static void test_product_selector(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_class(fx, "gpu.nvidia.com", "device.driver == 'gpu.nvidia.com'");
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100-SXM4-80GB");
    add_gpu_node(fx, "n2", 4, 4, "NVIDIA H100 80GB HBM3");
    add_group(fx, "job", 2);
    for (guint i = 0; i < 2; i++) {
        g_autofree char *claim = g_strdup_printf("c%u", i);
        g_autofree char *pod = g_strdup_printf("job-w%u", i);
        put_claim(fx, claim,
                  "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{\"deviceClassName\":"
                  "\"gpu.nvidia.com\",\"count\":2,\"selectors\":[{\"cel\":{\"expression\":"
                  "\"device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100') "
                  "&& device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= "
                  "0\"}}]}}]}",
                  NULL);
        put_pod(fx, pod, "job", claim);
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 2);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "ml", "job-w0"), ==, "n2");
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "ml", "job-w1"), ==, "n2");
    kb_test_sched_free(fx);
}

/* An expression kb-cel does not support: the pod waits, the message quotes it. */
/* Pod ml/@name using claim ml/@claim (not added to the cache: for kb_dra_fits/assume). */
static KbPod *pod_new(const char *name, const char *claim)
{
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"u-%s\"},\"spec\":{"
            "\"containers\":[{\"name\":\"c\"}],\"resourceClaims\":[{\"name\":\"gpus\","
            "\"resourceClaimName\":\"%s\"}]}}",
            name, name, claim);
    json_object *o = kb_test_sched_parse(text);
    g_autoptr(GError) error = NULL;
    KbPod *pod = kb_pod_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    return pod;
}

/* kb_dra_fits of @pod on @node; its reason into @why (cleared first). */
static gboolean fits(Fx *fx, const KbPod *pod, const char *node, GString *why)
{
    g_string_truncate(why, 0);
    gboolean ok = kb_dra_fits(dra(fx), pod, node, why, NULL);
    g_test_message("%s on %s: %s %s", pod->meta.name, node, ok ? "fits" : "no", why->str);
    return ok;
}

/* Class verdicts are cached per (class, device): a changed class or slice is seen at once. */
static void test_cache_class_and_slice_change(void)
{
    Fx *fx = fixture();
    add_class(fx, "gpu.nvidia.com",
              "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'");
    add_gpu_node(fx, "n1", 2, 2, "NVIDIA A100");
    g_autofree char *req = gpus_request(1, "gpu.nvidia.com");
    put_claim(fx, "c0", req, NULL);
    g_autoptr(KbPod) pod = pod_new("p0", "c0");
    g_autoptr(GString) why = g_string_new(NULL);
    g_assert_true(fits(fx, pod, "n1", why));
    add_class(fx, "gpu.nvidia.com",
              "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100'");
    g_assert_false(fits(fx, pod, "n1", why));
    g_assert_cmpstr(why->str, ==,
                    "claim ml/c0 request gpus: 1 device of class gpu.nvidia.com "
                    "wanted, 0 free on node n1");
    put_slice(fx, "n1", 2, 2, "NVIDIA H100");
    g_assert_true(fits(fx, pod, "n1", why));
    put_slice(fx, "n1", 0, 2, "NVIDIA H100");
    g_assert_false(fits(fx, pod, "n1", why));
    kb_test_sched_free(fx);
}

static const char *const HOLD_N1 =
        "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
        "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"},{\"request\":\"gpus\","
        "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-1\"}]},"
        "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
        "\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}},\"reservedFor\":"
        "[{\"resource\":\"pods\",\"name\":\"x\",\"uid\":\"ux\"}]}";

/* The free counts follow every hold: an allocated claim seen before or after its slice, its
 * deletion, a pod's assumed devices and their release. */
static void test_cache_free_counts(void)
{
    Fx *fx = fixture();
    g_autofree char *two = gpus_request(2, "gpu.nvidia.com");
    put_claim(fx, "other", two, HOLD_N1); /* before the slice */
    add_gpu_node(fx, "n1", 2, 2, "NVIDIA A100");
    g_autofree char *one = gpus_request(1, "gpu.nvidia.com");
    put_claim(fx, "c0", one, NULL);
    put_claim(fx, "c1", two, NULL);
    g_autoptr(KbPod) p0 = pod_new("p0", "c0");
    g_autoptr(KbPod) p1 = pod_new("p1", "c1");
    g_autoptr(GString) why = g_string_new(NULL);
    g_assert_false(fits(fx, p0, "n1", why));
    g_assert_cmpstr(why->str, ==,
                    "claim ml/c0 request gpus: 1 device of class gpu.nvidia.com "
                    "wanted, 0 free on node n1");
    g_autoptr(KbResourceClaim) other = NULL;
    {
        g_autofree char *text =
                g_strdup_printf("{\"metadata\":{\"name\":\"other\",\"namespace\":\"ml\"},\"spec\":{"
                                "\"devices\":%s}}",
                                two);
        json_object *o = kb_test_sched_parse(text);
        other = kb_resource_claim_decode(o, FALSE, NULL);
        json_object_put(o);
    }
    kb_dra_delete_claim(dra(fx), other);
    g_assert_true(fits(fx, p0, "n1", why));
    g_assert_true(fits(fx, p1, "n1", why));
    /* p0 holds one: p1's two no longer fit, p0's own claim is pinned there */
    g_assert_true(kb_dra_assume(dra(fx), p0, "n1"));
    g_assert_false(fits(fx, p1, "n1", why));
    g_assert_cmpstr(why->str, ==,
                    "claim ml/c1 request gpus: 2 devices of class gpu.nvidia.com "
                    "wanted, 1 free on node n1");
    kb_dra_release(dra(fx), "u-p0");
    g_assert_true(fits(fx, p1, "n1", why));
    /* seen allocated after the slice */
    put_claim(fx, "other", two, HOLD_N1);
    g_assert_false(fits(fx, p0, "n1", why));
    kb_test_sched_free(fx);
}

/* Request selectors are cached per claim: a claim replaced with another selector is judged anew,
 * and another claim's verdict on the same device is its own. */
static void test_cache_request_selectors(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 2, 2, "NVIDIA A100");
    const char *fmt = "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{\"deviceClassName\":"
                      "\"gpu.nvidia.com\",\"selectors\":[{\"cel\":{\"expression\":"
                      "\"device.attributes['gpu.nvidia.com'].index == %u\"}}]}}]}";
    g_autofree char *idx5 = g_strdup_printf(fmt, 5);
    g_autofree char *idx1 = g_strdup_printf(fmt, 1);
    put_claim(fx, "c0", idx5, NULL);
    put_claim(fx, "c1", idx1, NULL);
    g_autoptr(KbPod) p0 = pod_new("p0", "c0");
    g_autoptr(KbPod) p1 = pod_new("p1", "c1");
    g_autoptr(GString) why = g_string_new(NULL);
    g_assert_false(fits(fx, p0, "n1", why));
    g_assert_cmpstr(why->str, ==,
                    "claim ml/c0 request gpus: 1 device of class gpu.nvidia.com "
                    "wanted, 0 free on node n1");
    g_assert_true(fits(fx, p1, "n1", why));
    /* a status update keeps the verdicts (the same spec); another spec does not */
    g_autoptr(KbResourceClaim) a5 = claim_new(fx, "c0", "c0", idx5, NULL);
    g_autoptr(KbResourceClaim) b5 = claim_new(fx, "c0", "c0", idx5, NULL);
    g_autoptr(KbResourceClaim) a1 = claim_new(fx, "c0", "c0", idx1, NULL);
    g_assert_true(kb_claim_spec_equal(&a5->spec, &b5->spec));
    g_assert_false(kb_claim_spec_equal(&a5->spec, &a1->spec));
    put_claim(fx, "c0", idx1, NULL);
    g_assert_true(fits(fx, p0, "n1", why));
    /* c0 takes gpu-1: c1 (the same device only) no longer fits */
    g_assert_true(kb_dra_assume(dra(fx), p0, "n1"));
    g_assert_false(fits(fx, p1, "n1", why));
    kb_test_sched_free(fx);
}

static void test_unsupported_selector(void)
{
    Fx *fx = kb_test_sched_new(NULL);
    add_class(fx, "gpu.nvidia.com", "device.driver.lastIndexOf('.') > 0");
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    add_gang(fx, "job", 1, 1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    const KbJobStatus *js = kb_cycle_result_job(fx->res, "ml/job");
    g_assert_nonnull(strstr(js->message, "device class gpu.nvidia.com: selector "
                                         "\"device.driver.lastIndexOf('.') > 0\" refused"));
    g_assert_nonnull(strstr(js->message, "lastIndexOf"));
    kb_test_sched_free(fx);
}

/* ---- partitionable devices, consumable capacity, firstAvailable in gangs -------------------- */

static void add_slice(Fx *fx, const char *json)
{
    json_object *o = kb_test_sched_parse(json);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbResourceSlice) slice = kb_resource_slice_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    kb_dra_set_slice(dra(fx), slice);
}

static Fx *mig_fixture(void)
{
    Fx *fx = fixture();
    add_class(fx, "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].type == 'mig'");
    add_class(fx, "whole.nvidia.com", "device.attributes['gpu.nvidia.com'].type == 'gpu'");
    return fx;
}

/* A one-pod gang @name whose claim @name-c asks class @klass for one device, with request
 * selector @selector (or NULL) and capacity.requests memory @memory (or NULL). */
static void one_pod(Fx *fx, const char *name, const char *klass, const char *selector,
                    const char *memory)
{
    g_autofree char *sel = selector != NULL
                                   ? g_strdup_printf(",\"selectors\":[{\"cel\":{\"expression\":"
                                                     "\"%s\"}}]",
                                                     selector)
                                   : g_strdup("");
    g_autofree char *cap = memory != NULL ? g_strdup_printf(",\"capacity\":{\"requests\":{"
                                                            "\"memory\":\"%s\"}}",
                                                            memory)
                                          : g_strdup("");
    g_autofree char *req = g_strdup_printf("{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
                                           "\"deviceClassName\":\"%s\"%s%s}}]}",
                                           klass, sel, cap);
    g_autofree char *claim = g_strdup_printf("%s-c", name);
    add_group(fx, name, 1);
    put_claim(fx, claim, req, NULL);
    put_pod(fx, name, name, claim);
}

static void mig_pod(Fx *fx, const char *name, const char *profile)
{
    g_autofree char *sel =
            g_strdup_printf("device.attributes['gpu.nvidia.com'].profile == '%s'", profile);
    one_pod(fx, name, "mig.nvidia.com", sel, NULL);
}

/* The result @i of the claim write of pod @pod in the last cycle. */
static json_object *pod_result(Fx *fx, const char *pod, guint i)
{
    const KbPlacement *p = placement(fx, pod);
    g_assert_nonnull(p);
    return json_object_array_get_idx(status_results(write_status(p, 0)), i);
}

static const char *result_device(Fx *fx, const char *pod)
{
    return json_object_get_string(json_object_object_get(pod_result(fx, pod, 0), "device"));
}

/* The memory slices (bits) a MIG device name gpu-<g>-mig-<profile>-<id>-<start> spans. */
static guint mig_slices_of(const char *device)
{
    static const struct {
        const char *profile;
        guint size;
    } sizes[] = {
            {"-1g10gb-", 1}, {"-2g20gb-", 2}, {"-3g40gb-", 4}, {"-4g40gb-", 4}, {"-7g80gb-", 8}};
    const char *start = strrchr(device, '-');
    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
        if (strstr(device, sizes[i].profile) != NULL)
            return ((1u << sizes[i].size) - 1) << atoi(start + 1);
    }
    g_assert_not_reached();
}

/* One A100 as kb-kubelet --mig publishes it: three 1g and one 3g fit together, never on
 * overlapping memory slices; a further 3g waits, naming its request and the exhausted counter;
 * a whole GPU is not given beside the slices. */
static void test_mig_counters(void)
{
    Fx *fx = mig_fixture();
    kb_test_sched_add_dra_node(fx, "n1", 1, TRUE, "");
    mig_pod(fx, "a", "1g.10gb");
    mig_pod(fx, "b", "1g.10gb");
    mig_pod(fx, "c", "1g.10gb");
    mig_pod(fx, "d", "3g.40gb");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 4);
    guint used = 0;
    static const char *const pods[] = {"a", "b", "c", "d"};
    for (guint i = 0; i < G_N_ELEMENTS(pods); i++) {
        guint s = mig_slices_of(result_device(fx, pods[i]));
        g_assert_cmpuint(used & s, ==, 0);
        used |= s;
    }
    mig_pod(fx, "e", "3g.40gb");
    one_pod(fx, "w", "whole.nvidia.com", NULL, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    const KbJobStatus *js = kb_cycle_result_job(fx->res, "ml/e");
    g_test_message("e: %s", js->message);
    g_assert_nonnull(strstr(js->message, "claim ml/e-c request gpu: 1 device of class "
                                         "mig.nvidia.com wanted, 0 free on node n1 (counter "));
    g_assert_nonnull(strstr(js->message, " of gpu-0-counter-set exhausted"));
    js = kb_cycle_result_job(fx->res, "ml/w");
    g_assert_nonnull(strstr(js->message, "exhausted"));
    kb_test_sched_free(fx);
}

/* Node n1 with three devices part-0..2 each consuming 10Gi of counter set gpu-0 (20Gi), the
 * set published in a slice of its own (the split layout). */
static Fx *counter_fixture(void)
{
    Fx *fx = mig_fixture();
    add_gpu_node(fx, "n1", 0, 1, "NVIDIA A100");
    add_slice(fx, "{\"metadata\":{\"name\":\"n1-counters\"},\"spec\":{\"driver\":"
                  "\"gpu.nvidia.com\",\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\","
                  "\"generation\":1,\"resourceSliceCount\":2},\"sharedCounters\":[{\"name\":"
                  "\"gpu-0\",\"counters\":{\"memory\":{\"value\":\"20Gi\"}}}]}}");
    g_autoptr(GString) devs = g_string_new(NULL);
    for (guint i = 0; i < 3; i++)
        g_string_append_printf(devs,
                               "%s{\"name\":\"part-%u\",\"consumesCounters\":[{\"counterSet\":"
                               "\"gpu-0\",\"counters\":{\"memory\":{\"value\":\"10Gi\"}}}]}",
                               i == 0 ? "" : ",", i);
    g_autofree char *sj = g_strdup_printf(
            "{\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
            "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":1,"
            "\"resourceSliceCount\":2},\"devices\":[%s]}}",
            devs->str);
    add_slice(fx, sj);
    return fx;
}

/* Counters exactly at their value fit, one over does not; a hold given back returns them. */
static void test_counter_limits(void)
{
    Fx *fx = counter_fixture();
    one_pod(fx, "a", "gpu.nvidia.com", NULL, NULL);
    one_pod(fx, "b", "gpu.nvidia.com", NULL, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 2); /* 20Gi of 20Gi */
    one_pod(fx, "c", "gpu.nvidia.com", NULL, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0); /* 30Gi of 20Gi */
    g_assert_nonnull(strstr(kb_cycle_result_job(fx->res, "ml/c")->message,
                            "(counter memory of gpu-0 exhausted: 10Gi wanted, 0 left)"));
    /* a's binding fails: its hold ends and its 10Gi come back (a or c is placed again) */
    g_assert_true(kb_cache_bind_failed(fx->cache, "ml", "a", "u-a", NULL));
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 1);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 1);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 2);
    kb_test_sched_free(fx);
}

/* An allocated claim's device consumes its counters until the claim is deleted. */
static void test_counter_claim_deleted(void)
{
    Fx *fx = counter_fixture();
    g_autofree char *one = gpus_request(1, "gpu.nvidia.com");
    put_claim(fx, "other", one,
              "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
              "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"part-0\"}]}}}");
    one_pod(fx, "a", "gpu.nvidia.com", NULL, NULL);
    one_pod(fx, "b", "gpu.nvidia.com", NULL, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 1);
    json_object *o = kb_test_sched_parse(
            "{\"metadata\":{\"name\":\"other\",\"namespace\":\"ml\",\"uid\":\"c-other\"}}");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbResourceClaim) gone = kb_resource_claim_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    kb_dra_delete_claim(dra(fx), gone);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 1);
    kb_test_sched_free(fx);
}

/* A gang of three 3g slices on one GPU that holds two: nothing placed, nothing held. */
static void test_mig_gang_all_or_nothing(void)
{
    Fx *fx = mig_fixture();
    kb_test_sched_add_dra_node(fx, "n1", 1, TRUE, "");
    add_group(fx, "job", 3);
    for (guint i = 0; i < 3; i++) {
        g_autofree char *pod = g_strdup_printf("job-w%u", i);
        g_autofree char *claim = g_strdup_printf("job-w%u-c", i);
        put_claim(fx, claim,
                  "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"
                  "\"mig.nvidia.com\",\"selectors\":[{\"cel\":{\"expression\":\"device."
                  "attributes['gpu.nvidia.com'].profile == '3g.40gb'\"}}]}}]}",
                  NULL);
        put_pod(fx, pod, "job", claim);
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 0);
    /* the counters were given back with the plan: two 3g fit now */
    mig_pod(fx, "x", "3g.40gb");
    mig_pod(fx, "y", "3g.40gb");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/x") + kb_test_sched_binds(fx, "ml/y"), ==, 2);
    kb_test_sched_free(fx);
}

/* Small slices go to the GPU already partly used; the fraction of a GPU a slice takes. */
static void test_mig_packing(void)
{
    Fx *fx = mig_fixture();
    kb_test_sched_add_dra_node(fx, "n1", 2, TRUE, "");
    g_autofree char *one = gpus_request(1, "mig.nvidia.com");
    put_claim(fx, "other", one,
              "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
              "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-1-mig-1g10gb-19-6\"}]}}}");
    mig_pod(fx, "a", "1g.10gb");
    kb_test_sched_run(fx);
    const char *dev = result_device(fx, "a");
    g_assert_true(g_str_has_prefix(dev, "gpu-1-mig-1g10gb-19-"));
    /* on that GPU, where it blocks no 3g placement the other slice has not blocked already */
    g_assert_cmpuint(mig_slices_of(dev) & 0x0f, ==, 0);
    KbDeviceResult r = {(char *)"gpu", "gpu.nvidia.com", "n1", (char *)dev, NULL, 0, NULL};
    /* 14 of the A100's 98 multiprocessors, in steps of 1/1000 rounded down */
    g_assert_cmpfloat_with_epsilon(kb_dra_gpu_fraction(dra(fx), &r), 0.142, 1e-9);
    r.device = (char *)"gpu-0";
    g_assert_cmpfloat(kb_dra_gpu_fraction(dra(fx), &r), ==, 1.0);
    r.device = (char *)"nope";
    g_assert_cmpfloat(kb_dra_gpu_fraction(dra(fx), &r), ==, -1.0);
    kb_test_sched_free(fx);
}

static const char *result_member(Fx *fx, const char *pod, const char *path)
{
    json_object *o = pod_result(fx, pod, 0);
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    for (guint i = 0; parts[i] != NULL && o != NULL; i++)
        o = json_object_object_get(o, parts[i]);
    return o != NULL ? json_object_get_string(o) : NULL;
}

/* Two claims share one GPU's memory (each 40Gi of 80Gi), a third waits; shareIDs differ; a share
 * takes what it asked, rounded up to the policy's step; the fraction of a GPU a share takes. */
static void test_capacity_shares(void)
{
    Fx *fx = fixture();
    kb_test_sched_add_dra_node(fx, "s1", 1, FALSE, "\"kube-batchd.io/gpu-sharing\":\"memory\"");
    one_pod(fx, "a", "gpu.nvidia.com", NULL, "40Gi");
    one_pod(fx, "b", "gpu.nvidia.com", NULL, "39500Mi");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 2);
    g_assert_cmpstr(result_device(fx, "a"), ==, "gpu-0");
    g_assert_cmpstr(result_device(fx, "b"), ==, "gpu-0");
    g_assert_cmpstr(result_member(fx, "a", "consumedCapacity.memory"), ==, "40Gi");
    g_assert_cmpstr(result_member(fx, "b", "consumedCapacity.memory"), ==, "39Gi");
    const char *sa = result_member(fx, "a", "shareID"), *sb = result_member(fx, "b", "shareID");
    g_assert_nonnull(sa);
    g_assert_cmpuint(strlen(sa), ==, 36);
    g_assert_cmpstr(sa, !=, sb);
    KbCapacityAmount am = {g_intern_string("memory"), (G_GINT64_CONSTANT(40) << 30) * 1000};
    KbDeviceResult r = {(char *)"gpu", "gpu.nvidia.com", "s1", (char *)"gpu-0", &am, 1, (char *)sa};
    g_assert_cmpfloat_with_epsilon(kb_dra_gpu_fraction(dra(fx), &r), 0.5, 1e-9);
    /* 79Gi of 80Gi taken: 2Gi does not fit, 1Gi (at least the policy's min) does */
    one_pod(fx, "c", "gpu.nvidia.com", NULL, "2Gi");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_nonnull(strstr(kb_cycle_result_job(fx->res, "ml/c")->message,
                            "(capacity memory of device gpu.nvidia.com/s1/gpu-0 exhausted: 2Gi "
                            "wanted, 1Gi left)"));
    one_pod(fx, "d", "gpu.nvidia.com", NULL, "100Mi");
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/d"), ==, 1);
    g_assert_cmpstr(result_member(fx, "d", "consumedCapacity.memory"), ==, "1Gi");
    /* 80Gi of 80Gi taken; b's binding fails: its 39Gi come back, and b or c fits again */
    g_assert_true(kb_cache_bind_failed(fx->cache, "ml", "b", "u-b", NULL));
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), >=, 1);
    kb_test_sched_free(fx);
}

/* requestPolicy validValues: the smallest valid value at least the request; none: no share;
 * no request: the default. A share lands on the GPU already partly shared. */
static void test_capacity_valid_values(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 0, 1, "NVIDIA A100");
    g_autoptr(GString) devs = g_string_new(NULL);
    for (guint i = 0; i < 2; i++)
        g_string_append_printf(devs,
                               "%s{\"name\":\"gpu-%u\",\"allowMultipleAllocations\":true,"
                               "\"capacity\":{\"memory\":{\"value\":\"40Gi\",\"requestPolicy\":{"
                               "\"default\":\"10Gi\",\"validValues\":[\"10Gi\",\"20Gi\","
                               "\"40Gi\"]}}}}",
                               i == 0 ? "" : ",", i);
    g_autofree char *sj = g_strdup_printf(
            "{\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
            "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":1,"
            "\"resourceSliceCount\":1},\"devices\":[%s]}}",
            devs->str);
    add_slice(fx, sj);
    g_autofree char *one = gpus_request(1, "gpu.nvidia.com");
    put_claim(fx, "other", one,
              "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
              "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-1\",\"consumedCapacity\":{"
              "\"memory\":\"10Gi\"},\"shareID\":\"0b5c3f5e-4b0e-4b9a-9d1c-3b7f6a2e8d10\"}]}}}");
    one_pod(fx, "a", "gpu.nvidia.com", NULL, "15Gi");
    one_pod(fx, "b", "gpu.nvidia.com", NULL, "50Gi");
    kb_test_sched_run(fx);
    g_assert_cmpstr(result_member(fx, "a", "consumedCapacity.memory"), ==, "20Gi");
    g_assert_cmpstr(result_device(fx, "a"), ==, "gpu-1");
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/b"), ==, 0);
    g_assert_nonnull(strstr(kb_cycle_result_job(fx->res, "ml/b")->message,
                            "no share of 50Gi allowed by its requestPolicy"));
    one_pod(fx, "c", "gpu.nvidia.com", NULL, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpstr(result_member(fx, "c", "consumedCapacity.memory"), ==, "10Gi");
    g_assert_cmpstr(result_device(fx, "c"), ==, "gpu-1"); /* 40Gi of 40Gi */
    kb_test_sched_free(fx);
}

/* A gang whose members' claims say firstAvailable [one A100, two H100]: only one A100 exists, so
 * the members would mix; the plan gives it back and places the whole gang on the second. A gang
 * for which the first fits every member gets the first. */
static void test_first_available_gang(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 1, 1, "NVIDIA A100");
    add_gpu_node(fx, "n2", 4, 4, "NVIDIA H100");
    const char *spec = "{\"requests\":[{\"name\":\"gpus\",\"firstAvailable\":[{\"name\":\"a100\","
                       "\"deviceClassName\":\"gpu.nvidia.com\",\"selectors\":[{\"cel\":{"
                       "\"expression\":\"device.attributes['gpu.nvidia.com'].productName == "
                       "'NVIDIA A100'\"}}]},{\"name\":\"two-h100\",\"deviceClassName\":"
                       "\"gpu.nvidia.com\",\"count\":2,\"selectors\":[{\"cel\":{\"expression\":"
                       "\"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA "
                       "H100'\"}}]}]}]}";
    add_group(fx, "job", 2);
    for (guint i = 0; i < 2; i++) {
        g_autofree char *pod = g_strdup_printf("job-w%u", i);
        g_autofree char *claim = g_strdup_printf("job-w%u-c", i);
        put_claim(fx, claim, spec, NULL);
        put_pod(fx, pod, "job", claim);
    }
    /* a plan giving a100 to one member cannot give it to the other: given back */
    kb_test_sched_run(fx);
    g_test_message("cycle 1: %u placed", kb_test_sched_binds(fx, "ml/job"));
    if (kb_test_sched_binds(fx, "ml/job") == 0)
        kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/job"), ==, 2);
    for (guint i = 0; i < 2; i++) {
        g_autofree char *pod = g_strdup_printf("job-w%u", i);
        g_assert_cmpstr(result_member(fx, pod, "request"), ==, "gpus/two-h100");
        g_assert_cmpstr(kb_test_sched_bound_node(fx, "ml", pod), ==, "n2");
    }
    /* one member: the first alternative fits it */
    add_group(fx, "solo", 1);
    put_claim(fx, "solo-c", spec, NULL);
    put_pod(fx, "solo-w0", "solo", "solo-c");
    kb_test_sched_run(fx);
    g_assert_cmpstr(result_member(fx, "solo-w0", "request"), ==, "gpus/a100");
    kb_test_sched_free(fx);
}

/* ---- devices as resources (dra.h: kb_dra_pod_demand, kb_dra_node_capacity) ------------------- */

/* Template ml/@name with spec.devices @devices (JSON). */
static void put_template(Fx *fx, const char *name, const char *devices)
{
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},\"spec\":{\"spec\":{"
            "\"devices\":%s}}}",
            name, devices);
    json_object *o = kb_test_sched_parse(text);
    g_autoptr(GError) error = NULL;
    g_autoptr(KbResourceClaimTemplate) t = kb_resource_claim_template_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    kb_dra_set_template(dra(fx), t);
}

/* A pod of ml whose claims come from @templates (comma-separated), decoded (not cached). */
static KbPod *template_pod(const char *templates)
{
    g_auto(GStrv) names = g_strsplit(templates, ",", -1);
    g_autoptr(GString) rc = g_string_new(NULL);
    for (guint i = 0; names[i] != NULL; i++)
        g_string_append_printf(rc, "%s{\"name\":\"c%u\",\"resourceClaimTemplateName\":\"%s\"}",
                               i == 0 ? "" : ",", i, names[i]);
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"uid\":\"u-p\"},\"spec\":{"
            "\"containers\":[{\"name\":\"c\"}],\"resourceClaims\":[%s]}}",
            rc->str);
    json_object *o = kb_test_sched_parse(text);
    g_autoptr(GError) error = NULL;
    KbPod *pod = kb_pod_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    return pod;
}

/* What a pod's template claims count, request form by request form; gpu.nvidia.com counts as
 * nvidia.com/gpu, another class under its own name. */
static void test_resources_demand(void)
{
    Fx *fx = fixture();
    add_class(fx, "mig.nvidia.com", NULL);
    add_class(fx, "cpu", NULL);
    put_template(fx, "two",
                 "{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
                 "\"gpu.nvidia.com\",\"count\":2}}]}");
    put_template(fx, "all",
                 "{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
                 "\"gpu.nvidia.com\",\"allocationMode\":\"All\"}}]}");
    put_template(fx, "first-same",
                 "{\"requests\":[{\"name\":\"g\",\"firstAvailable\":[{\"name\":\"a\","
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":4},{\"name\":\"b\","
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":3}]}]}");
    put_template(fx, "first-mixed",
                 "{\"requests\":[{\"name\":\"g\",\"firstAvailable\":[{\"name\":\"a\","
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":4},{\"name\":\"b\","
                 "\"deviceClassName\":\"mig.nvidia.com\",\"count\":1}]}]}");
    put_template(fx, "admin",
                 "{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
                 "\"gpu.nvidia.com\",\"adminAccess\":true}}]}");
    put_template(fx, "mig",
                 "{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
                 "\"mig.nvidia.com\",\"count\":3}},{\"name\":\"h\",\"exactly\":{"
                 "\"deviceClassName\":\"cpu\"}}]}");
    /* a share of a device's memory: may sit beside other claims on one shared GPU */
    put_template(fx, "share",
                 "{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
                 "\"gpu.nvidia.com\",\"capacity\":{\"requests\":{\"memory\":\"10Gi\"}}}}]}");
    struct {
        const char *templates;
        gint64 gpus, mig;
    } rows[] = {
            {"two", 2000, 0},         {"all", 1000, 0},         {"first-same", 3000, 0},
            {"first-mixed", 0, 0},    {"admin", 0, 0},          {"mig", 0, 3},
            {"two,all,mig", 3000, 3}, {"missing,two", 2000, 0}, {"share", 0, 0},
            {"share,two", 2000, 0},
    };
    int mig = kb_resource_slot("mig.nvidia.com");
    g_assert_cmpint(mig, >=, KB_RES_FIRST_EXTENDED);
    for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
        g_autoptr(KbPod) pod = template_pod(rows[i].templates);
        KbResources r;
        kb_resources_clear(&r);
        kb_dra_pod_demand(dra(fx), pod, &r);
        g_test_message("%s", rows[i].templates);
        g_assert_cmpint(r.v[KB_RES_GPU], ==, rows[i].gpus);
        g_assert_cmpint(r.v[mig], ==, rows[i].mig);
        g_assert_cmpint(r.v[KB_RES_CPU], ==, 0); /* a class named "cpu" is not cpu */
    }
    kb_test_sched_free(fx);
}

/* A node's allocatable gains its devices per class (once slices and classes are in), a pod's
 * requests its template claims' demand (also when the template comes after the pod). */
static void test_resources_vectors(void)
{
    Fx *fx = fixture();
    add_class(fx, "a100.example.com",
              "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'");
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    add_gpu_node(fx, "n2", 2, 2, "NVIDIA H100");
    add_group(fx, "job", 1);
    put_pod(fx, "job-w0", "job", NULL);
    kb_test_sched_run(fx);
    const KbNodeInfo *n1 = kb_cache_lookup_node(fx->cache, "n1");
    const KbNodeInfo *n2 = kb_cache_lookup_node(fx->cache, "n2");
    /* a class takes a slot only once something names it (here as a queue capability would);
     * the nodes count it from the next cycle on */
    int a100 = kb_resource_slot("a100.example.com");
    g_assert_cmpint(n1->allocatable.v[a100], ==, 0);
    kb_test_sched_run(fx);
    g_assert_cmpint(n1->allocatable.v[KB_RES_GPU], ==, 4000);
    g_assert_cmpint(n2->allocatable.v[KB_RES_GPU], ==, 2000);
    g_assert_cmpint(n1->allocatable.v[a100], ==, 4);
    g_assert_cmpint(n2->allocatable.v[a100], ==, 0);
    const KbTaskInfo *t = kb_cache_lookup_task(fx->cache, "ml", "job-w0");
    g_assert_cmpint(t->resreq.v[KB_RES_GPU], ==, 0); /* template two-gpus not known yet */
    put_template(fx, "two-gpus",
                 "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}]}");
    g_autofree char *req = gpus_request(2, "gpu.nvidia.com");
    put_claim(fx, "job-w0-gpus", req, NULL);
    put_pod(fx, "job-w0", "job", "job-w0-gpus");
    kb_test_sched_run(fx);
    g_assert_cmpint(t->resreq.v[KB_RES_GPU], ==, 2000);
    g_assert_cmpint(t->job->allocated.v[KB_RES_GPU], ==, 2000);
    const char *node = kb_test_sched_bound_node(fx, "ml", "job-w0");
    g_assert_nonnull(node);
    const KbNodeInfo *ni = kb_cache_lookup_node(fx->cache, node);
    g_assert_cmpint(ni->used.v[KB_RES_GPU], ==, 2000);
    /* a slice that grows grows the node */
    put_slice(fx, "n2", 8, 4, "NVIDIA H100");
    kb_test_sched_run(fx);
    g_assert_cmpint(n2->allocatable.v[KB_RES_GPU], ==, 8000);
    kb_test_sched_free(fx);
}

/* Pod ml/@name from template @tmpl, its claim named @claim in its status (NULL: none yet), bound
 * to n1 or pending, updated in the cache. */
static void put_kept_pod(Fx *fx, const char *name, const char *tmpl, const char *claim,
                         gboolean bound)
{
    g_autofree char *status = claim_statuses(claim);
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"u-%s\"},\"spec\":{"
            "\"schedulerName\":\"kube-batchd\",%s\"containers\":[{\"name\":\"c\",\"resources\":{"
            "\"requests\":{\"cpu\":\"1\"}}}],\"resourceClaims\":[{\"name\":\"gpus\","
            "\"resourceClaimTemplateName\":\"%s\"}]},\"status\":{\"phase\":\"%s\"%s}}",
            name, name, bound ? "\"nodeName\":\"n1\"," : "", tmpl, bound ? "Running" : "Pending",
            status);
    kb_test_sched_put_pod(fx, kb_test_sched_parse(text));
}

/* Claim ml/@name for one GPU: not allocated (@n 0) or allocated @n GPUs of n1 from @first. */
static void put_kept_claim(Fx *fx, const char *name, guint n, guint first)
{
    g_autoptr(GString) st = g_string_new(NULL);
    if (n > 0) {
        g_string_append(st, "{\"allocation\":{\"devices\":{\"results\":[");
        for (guint i = 0; i < n; i++)
            g_string_append_printf(st,
                                   "%s{\"request\":\"gpus\",\"driver\":\"gpu.nvidia.com\","
                                   "\"pool\":\"n1\",\"device\":\"gpu-%u\"}",
                                   i == 0 ? "" : ",", (first + i) % 8);
        g_string_append(st, "]}}}");
    }
    g_autofree char *req = gpus_request(1, "gpu.nvidia.com");
    g_autoptr(KbResourceClaim) c = claim_new(fx, name, name, req, n > 0 ? st->str : NULL);
    kb_dra_set_claim(dra(fx), c);
}

/* The demand the cache keeps per pod (kb_dra_pod_demand_current) is always what counting again
 * gives, over a random sequence of pod, claim, template, class and slice updates: each pod
 * updated is counted with its claims as they are now. */
static void test_resources_demand_kept(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 8, 4, "NVIDIA A100");
    put_template(fx, "ta",
                 "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1}}]}");
    put_template(fx, "tb",
                 "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":3}}]}");
    static const char *const pods[] = {"p0", "p1", "p2"};
    static const char *const claims[] = {"k0", "k1", "k2", "k3"};
    g_autoptr(GRand) rand = g_rand_new_with_seed(22);
    guint checked = 0;
    for (guint step = 0; step < 3000; step++) {
        const char *claim = claims[g_rand_int_range(rand, 0, G_N_ELEMENTS(claims))];
        switch (g_rand_int_range(rand, 0, 20)) {
        case 0:
            put_template(fx, "tb",
                         g_rand_boolean(rand)
                                 ? "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                                   "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":3}}]}"
                                 : "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                                   "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}]}");
            break;
        case 1:
            /* a slice with fewer devices: results on the missing ones count nothing */
            put_slice(fx, "n1", g_rand_boolean(rand) ? 8 : 4, 4, "NVIDIA A100");
            break;
        case 2:
            add_class(fx, "gpu.nvidia.com", NULL);
            break;
        case 3:
        case 4: {
            g_autofree char *req = gpus_request(1, "gpu.nvidia.com");
            g_autoptr(KbResourceClaim) gone = claim_new(fx, claim, claim, req, NULL);
            kb_dra_delete_claim(dra(fx), gone);
            break;
        }
        default:
            if (g_rand_boolean(rand)) {
                put_kept_claim(fx, claim, g_rand_int_range(rand, 0, 3),
                               g_rand_int_range(rand, 0, 8));
                break;
            }
            const char *pod = pods[g_rand_int_range(rand, 0, G_N_ELEMENTS(pods))];
            guint c = g_rand_int_range(rand, 0, G_N_ELEMENTS(claims) + 1);
            put_kept_pod(fx, pod, g_rand_boolean(rand) ? "ta" : "tb",
                         c < G_N_ELEMENTS(claims) ? claims[c] : NULL, g_rand_int_range(rand, 0, 4));
            const KbTaskInfo *t = kb_cache_lookup_task(fx->cache, "ml", pod);
            g_assert_nonnull(t);
            KbResources now = t->pod->requests;
            kb_dra_pod_demand(dra(fx), t->pod, &now);
            g_assert_cmpint(t->resreq.v[KB_RES_GPU], ==, now.v[KB_RES_GPU]);
            g_assert_true(kb_resources_equal(&t->resreq, &now));
            checked++;
            break;
        }
    }
    g_assert_cmpuint(checked, >, 500);
    kb_test_sched_free(fx);
}

/* A queue's GPU capability stops DRA gangs exactly at the limit: 16 GPUs, gangs of 8 x 1. */
static void test_resources_capability(void)
{
    Fx *fx = fixture();
    for (guint n = 1; n <= 4; n++) {
        g_autofree char *node = g_strdup_printf("n%u", n);
        add_gpu_node(fx, node, 8, 4, "NVIDIA A100");
    }
    kb_test_sched_add_queue(fx, "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":"
                                "\"Queue\",\"metadata\":{\"name\":\"research\"},\"spec\":{"
                                "\"weight\":1,\"capability\":{\"nvidia.com/gpu\":16}}}");
    put_template(fx, "two-gpus",
                 "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1}}]}");
    g_autofree char *req = gpus_request(1, "gpu.nvidia.com");
    for (guint j = 0; j < 3; j++) {
        g_autofree char *group = g_strdup_printf("job%u", j);
        g_autofree char *text = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"creationTimestamp\":"
                "\"2026-01-01T00:00:0%uZ\"},\"spec\":{\"minMember\":8,\"queue\":\"research\"}}",
                group, j);
        kb_test_sched_add_pod_group(fx, text);
        for (guint i = 0; i < 8; i++) {
            g_autofree char *pod = g_strdup_printf("%s-w%u", group, i);
            g_autofree char *claim = g_strdup_printf("%s-w%u-gpus", group, i);
            put_claim(fx, claim, req, NULL);
            put_pod(fx, pod, group, claim);
        }
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 16);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/job0"), ==, 8);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/job1"), ==, 8);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/job2"), ==, 0);
    kb_test_sched_free(fx);
}

/* GPUs of a claim count as nvidia.com/gpu but get no device-plugin GPU indices (gpu-ids): the
 * DRA allocator chose them. */
static void test_resources_no_gpu_ids(void)
{
    Fx *fx = fixture();
    kb_test_sched_add_node(fx, "{\"metadata\":{\"name\":\"n1\",\"annotations\":{"
                               "\"kube-batchd.io/gpu-topology\":\"{\\\"nvlink\\\":[[0,1,2,3]]}\"}},"
                               "\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\","
                               "\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
                               "\"status\":\"True\"}]}}");
    put_slice(fx, "n1", 4, 4, "NVIDIA A100");
    put_template(fx, "two-gpus",
                 "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}]}");
    add_gang(fx, "job", 1, 2);
    kb_test_sched_run(fx);
    const KbPlacement *p = placement(fx, "job-w0");
    g_assert_nonnull(p);
    g_assert_cmpint(kb_cache_lookup_task(fx->cache, "ml", "job-w0")->resreq.v[KB_RES_GPU], ==,
                    2000);
    g_assert_null(p->gpu_ids);
    kb_test_sched_free(fx);
}

/* A gang short of GPUs in the cluster is not admitted; the reason names the request. */
static void test_resources_not_admitted(void)
{
    Fx *fx = fixture();
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    put_template(fx, "two-gpus",
                 "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}]}");
    add_gang(fx, "first", 1, 2);
    add_gang(fx, "second", 2, 2);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/first"), ==, 1);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/second"), ==, 0);
    const KbJobStatus *js = kb_cycle_result_job(fx->res, "ml/second");
    g_assert_cmpstr(js->message, ==,
                    "not admitted: the cluster has 2 nvidia.com/gpu free (after admitted jobs), "
                    "the job needs 4 to start (each pod's claim ml/second-w0-gpus request gpus: "
                    "2 devices of class gpu.nvidia.com)");
    kb_test_sched_free(fx);
}

/* ---- preemption and reclaim free a victim's claims ----------------------------------------- */

#define T_2026 1767225600 /* 2026-01-01T00:00:00Z: the jobs' creation; the clock an hour later */

static Fx *actions_fixture(const char *actions)
{
    const char *def = kb_conf_default_yaml();
    g_autofree char *yaml = g_strdup_printf("actions: \"%s\"\n%s", actions, strstr(def, "tiers:"));
    Fx *fx = kb_test_sched_new(yaml);
    fx->now = T_2026 + 3600;
    add_class(fx, "gpu.nvidia.com", NULL);
    put_template(fx, "gpus",
                 "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1}}]}");
    put_template(fx, "two-gpus",
                 "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}]}");
    kb_test_sched_add_priority_class(fx, "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":"
                                         "\"PriorityClass\",\"metadata\":{\"name\":\"low\"},"
                                         "\"value\":10}");
    kb_test_sched_add_priority_class(fx, "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":"
                                         "\"PriorityClass\",\"metadata\":{\"name\":\"high\"},"
                                         "\"value\":1000}");
    return fx;
}

/*
 * A DRA gang @name of @n pods (minMember @n) in @queue (NULL: default) with class @pc, each with
 * a claim <name>-w<i>-gpus of @per GPUs from template "gpus" (1) or "two-gpus" (2). With @node,
 * every pod runs there, its claim allocated the node's GPUs from *@next on and reserved for it.
 */
static void put_dra_job(Fx *fx, const char *name, const char *queue, const char *pc, guint n,
                        guint per, const char *node, guint *next)
{
    g_autofree char *q = queue != NULL ? g_strdup_printf(",\"queue\":\"%s\"", queue) : g_strdup("");
    g_autofree char *gj = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
            "{\"name\":\"%s\",\"namespace\":\"ml\",\"creationTimestamp\":\"2026-01-01T00:00:%"
            "02uZ\"}"
            ",\"spec\":{\"minMember\":%u,\"priorityClassName\":\"%s\"%s}}",
            name, ++fx->seq, n, pc, q);
    kb_test_sched_add_pod_group(fx, gj);
    g_autofree char *req = gpus_request(per, "gpu.nvidia.com");
    for (guint i = 0; i < n; i++) {
        g_autofree char *pod = g_strdup_printf("%s-w%u", name, i);
        g_autofree char *claim = g_strdup_printf("%s-w%u-gpus", name, i);
        g_autoptr(GString) st = g_string_new(NULL);
        if (node != NULL) {
            g_string_append(st, "{\"allocation\":{\"devices\":{\"results\":[");
            for (guint d = 0; d < per; d++)
                g_string_append_printf(st,
                                       "%s{\"request\":\"gpus\",\"driver\":\"gpu.nvidia.com\","
                                       "\"pool\":\"%s\",\"device\":\"gpu-%u\"}",
                                       d == 0 ? "" : ",", node, (*next)++);
            g_string_append_printf(
                    st,
                    "]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
                    "\"metadata.name\",\"operator\":\"In\",\"values\":[\"%s\"]}]}]}},"
                    "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"%s\",\"uid\":\"u-%s\"}]}",
                    node, pod, pod);
        }
        put_claim(fx, claim, req, node != NULL ? st->str : NULL);
        g_autofree char *on =
                node != NULL ? g_strdup_printf(",\"nodeName\":\"%s\"", node) : g_strdup("");
        g_autofree char *text = g_strdup_printf(
                "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"u-%s\","
                "\"creationTimestamp\":\"2026-01-01T00:00:%02uZ\",\"annotations\":{"
                "\"scheduling.k8s.io/group-name\":\"%s\"}},\"spec\":{\"schedulerName\":"
                "\"kube-batchd\",\"priorityClassName\":\"%s\"%s,\"containers\":[{\"name\":\"c\","
                "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],\"resourceClaims\":[{\"name\":"
                "\"gpus\",\"resourceClaimTemplateName\":\"%s\"}]},\"status\":{\"phase\":\"%s\","
                "\"resourceClaimStatuses\":[{\"name\":\"gpus\",\"resourceClaimName\":\"%s\"}]}}",
                pod, pod, fx->seq, name, pc, on, per == 1 ? "gpus" : "two-gpus",
                node != NULL ? "Running" : "Pending", claim);
        kb_test_sched_put_pod(fx, kb_test_sched_parse(text));
    }
}

static gint str_ptr_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The pods evicted by the last cycle, sorted, comma-separated. */
static char *evicted_names(Fx *fx)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    for (guint i = 0; i < fx->res->evictions->len; i++)
        g_ptr_array_add(names,
                        (gpointer)g_array_index(fx->res->evictions, KbEviction, i).pod->meta.name);
    g_ptr_array_sort(names, str_ptr_cmp);
    g_ptr_array_add(names, NULL);
    return g_strjoinv(",", (char **)names->pdata);
}

/* The pods of gang @job (@n) are deleted, and their claims with them (the resource-claim
 * controller). */
static void gang_gone(Fx *fx, const char *job, guint n)
{
    for (guint i = 0; i < n; i++) {
        g_autofree char *key = g_strdup_printf("ml/%s-w%u", job, i);
        g_autoptr(KbPod) pod = kb_pod_decode(g_hash_table_lookup(fx->pods, key), FALSE, NULL);
        g_assert_nonnull(pod);
        g_autofree char *claim = g_strdup_printf("%s-gpus", pod->meta.name);
        KbResourceClaim c = {.meta = {.namespace_ = "ml", .name = claim}};
        kb_dra_delete_claim(dra(fx), &c);
        kb_cache_delete_pod(fx->cache, pod);
    }
}

/* The devices the last cycle's claim writes allocate, sorted "pool/device,...". */
static char *written_devices(Fx *fx)
{
    g_autoptr(GPtrArray) devs = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < fx->res->placements->len; i++) {
        const KbPlacement *p = &g_array_index(fx->res->placements, KbPlacement, i);
        for (guint w = 0; p->claim_writes != NULL && w < p->claim_writes->len; w++) {
            json_object *results = status_results(write_status(p, w));
            for (gsize r = 0; r < json_object_array_length(results); r++) {
                json_object *o = json_object_array_get_idx(results, r);
                g_ptr_array_add(
                        devs,
                        g_strdup_printf(
                                "%s/%s", json_object_get_string(json_object_object_get(o, "pool")),
                                json_object_get_string(json_object_object_get(o, "device"))));
            }
        }
    }
    g_ptr_array_sort(devs, str_ptr_cmp);
    g_ptr_array_add(devs, NULL);
    return g_strjoinv(",", (char **)devs->pdata);
}

/*
 * A full cluster (2 nodes x 4 GPUs, two low-priority DRA gangs of 4 x 1 GPU): a high-priority
 * DRA gang of 2 x 2 GPUs evicts one gang (the younger), holds nothing meanwhile, evicts no more
 * while the victims terminate, and once they are gone gets exactly their devices.
 */
static void test_preempt_frees_claims(void)
{
    Fx *fx = actions_fixture("enqueue, allocate, preempt, reclaim");
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    add_gpu_node(fx, "n2", 4, 4, "NVIDIA A100");
    guint d1 = 0, d2 = 0;
    put_dra_job(fx, "old", NULL, "low", 4, 1, "n1", &d1);
    put_dra_job(fx, "young", NULL, "low", 4, 1, "n2", &d2);
    put_dra_job(fx, "urgent", NULL, "high", 2, 2, NULL, NULL);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 8);
    kb_test_sched_run(fx);
    g_autofree char *ev = evicted_names(fx);
    g_assert_cmpstr(ev, ==, "young-w0,young-w1,young-w2,young-w3");
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    /* the plan's frees and holds end with it: the victims' claims are still allocated */
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 8);
    /* victims terminating: no further eviction, nothing bound */
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    gang_gone(fx, "young", 4);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/urgent"), ==, 2);
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "ml", "urgent-w0"), ==, "n2");
    g_assert_cmpstr(kb_test_sched_bound_node(fx, "ml", "urgent-w1"), ==, "n2");
    g_autofree char *devs = written_devices(fx);
    g_assert_cmpstr(devs, ==, "n2/gpu-0,n2/gpu-1,n2/gpu-2,n2/gpu-3");
    kb_test_sched_free(fx);
}

/* In a plan, a victim's devices are free, and a preemptor's hold on some of them keeps them from
 * the next member; the plan's end makes them held again. */
static void test_preempt_plan_holds(void)
{
    Fx *fx = actions_fixture("enqueue, allocate");
    add_gpu_node(fx, "n1", 2, 2, "NVIDIA A100");
    guint d1 = 0;
    put_dra_job(fx, "victim", NULL, "low", 1, 2, "n1", &d1);
    put_dra_job(fx, "one", NULL, "high", 1, 1, NULL, NULL);
    put_dra_job(fx, "two", NULL, "high", 1, 2, NULL, NULL);
    g_autoptr(KbPod) victim =
            kb_pod_decode(g_hash_table_lookup(fx->pods, "ml/victim-w0"), FALSE, NULL);
    g_autoptr(KbPod) one = kb_pod_decode(g_hash_table_lookup(fx->pods, "ml/one-w0"), FALSE, NULL);
    g_autoptr(KbPod) two = kb_pod_decode(g_hash_table_lookup(fx->pods, "ml/two-w0"), FALSE, NULL);
    g_assert_false(kb_dra_fits(dra(fx), two, "n1", NULL, NULL));
    kb_dra_plan_evict(dra(fx), victim, TRUE);
    g_assert_true(kb_dra_fits(dra(fx), two, "n1", NULL, NULL));
    g_assert_true(kb_dra_assume(dra(fx), one, "n1"));
    g_assert_false(kb_dra_fits(dra(fx), two, "n1", NULL, NULL)); /* one holds a freed GPU */
    kb_dra_release(dra(fx), one->meta.uid);
    g_assert_true(kb_dra_fits(dra(fx), two, "n1", NULL, NULL));
    kb_dra_plan_evict(dra(fx), victim, FALSE); /* discarded */
    g_assert_false(kb_dra_fits(dra(fx), two, "n1", NULL, NULL));
    kb_dra_plan_evict(dra(fx), victim, TRUE);
    kb_dra_plan_end(dra(fx));
    g_assert_false(kb_dra_fits(dra(fx), two, "n1", NULL, NULL));
    g_assert_false(kb_dra_fits(dra(fx), one, "n1", NULL, NULL));
    kb_test_sched_free(fx);
}

/* A preemptor whose claims no device can serve even after evicting (a selector no GPU
 * matches) evicts nothing, and the plan leaves every device held as before. */
static void test_preempt_exact_check(void)
{
    Fx *fx = actions_fixture("enqueue, allocate, preempt, reclaim");
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    guint d1 = 0;
    put_dra_job(fx, "low", NULL, "low", 4, 1, "n1", &d1);
    put_template(fx, "h100",
                 "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"selectors\":[{\"cel\":{"
                 "\"expression\":\"device.attributes['gpu.nvidia.com'].productName"
                 " == 'NVIDIA H100'\"}}]}}]}");
    put_dra_job(fx, "urgent", NULL, "high", 1, 1, NULL, NULL);
    /* its claim asks for an H100 */
    put_claim(fx, "urgent-w0-gpus",
              "{\"requests\":[{\"name\":\"gpus\",\"exactly\":{\"deviceClassName\":"
              "\"gpu.nvidia.com\",\"selectors\":[{\"cel\":{\"expression\":\"device.attributes["
              "'gpu.nvidia.com'].productName == 'NVIDIA H100'\"}}]}}]}",
              NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 4);
    /* the victims' devices were not left free: a new low pod finds none */
    put_dra_job(fx, "late", NULL, "low", 1, 1, NULL, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    kb_test_sched_free(fx);
}

/*
 * Reclaim across queues counts DRA GPUs: queue a holds all 8 GPUs (two gangs of 4), queue b
 * (same weight) waits with a gang of 4 x 1 GPU; reclaim evicts one of a's gangs, and b gets its
 * devices once they are gone.
 */
static void test_reclaim_counts_devices(void)
{
    Fx *fx = actions_fixture("enqueue, allocate, preempt, reclaim");
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    add_gpu_node(fx, "n2", 4, 4, "NVIDIA A100");
    for (guint q = 0; q < 2; q++) {
        g_autofree char *text = g_strdup_printf(
                "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\","
                "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"weight\":1,\"reclaimable\":true}}",
                q == 0 ? "a" : "b");
        kb_test_sched_add_queue(fx, text);
    }
    guint d1 = 0, d2 = 0;
    put_dra_job(fx, "a1", "a", "low", 4, 1, "n1", &d1);
    put_dra_job(fx, "a2", "a", "low", 4, 1, "n2", &d2);
    put_dra_job(fx, "b1", "b", "low", 4, 1, NULL, NULL);
    kb_test_sched_run(fx);
    g_autofree char *ev = evicted_names(fx);
    g_assert_cmpstr(ev, ==, "a2-w0,a2-w1,a2-w2,a2-w3");
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 8);
    gang_gone(fx, "a2", 4);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/b1"), ==, 4);
    g_autofree char *devs = written_devices(fx);
    g_assert_cmpstr(devs, ==, "n2/gpu-0,n2/gpu-1,n2/gpu-2,n2/gpu-3");
    kb_test_sched_free(fx);
}

/*
 * The reserve action holds nodes for a waiting DRA gang by its devices counted as resources: a
 * node whose GPUs are all in use now is where the gang will run once they end, so a later small
 * job does not take the other node's free GPUs meanwhile.
 */
static void test_reserve_counts_devices(void)
{
    Fx *fx = actions_fixture("enqueue, reserve, allocate");
    add_gpu_node(fx, "n1", 4, 4, "NVIDIA A100");
    add_gpu_node(fx, "n2", 4, 4, "NVIDIA A100");
    guint d1 = 0;
    put_dra_job(fx, "busy", NULL, "low", 4, 1, "n1", &d1);
    kb_test_sched_add_pod_group(
            fx, "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
                "\"metadata\":{\"name\":\"busy\",\"namespace\":\"ml\",\"creationTimestamp\":"
                "\"2026-01-01T00:00:01Z\",\"annotations\":{\"kube-batchd.io/expected-runtime\":"
                "\"2h\"}},\"spec\":{\"minMember\":4,\"priorityClassName\":\"low\"}}");
    put_dra_job(fx, "big", NULL, "low", 4, 2, NULL, NULL); /* 8 GPUs: both nodes */
    put_dra_job(fx, "small", NULL, "low", 1, 1, NULL, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    const KbJobStatus *js = kb_cycle_result_job(fx->res, "ml/big");
    g_assert_nonnull(js);
    g_assert_nonnull(strstr(js->message, "reserved 2 nodes"));
    kb_test_sched_free(fx);
}

/* ---- preemption frees MIG slices and GPU shares --------------------------------------------- */

/*
 * A one-pod gang @name (class @pc, created at second @sec of 2026) whose claim @name-c has one
 * request "gpu" with exactly @exactly (JSON members). With @node the pod runs there and the
 * claim is allocated the device result @result (JSON members besides request, driver and pool),
 * reserved for the pod.
 */
static void put_slice_job(Fx *fx, const char *name, const char *pc, guint sec, const char *exactly,
                          const char *node, const char *result)
{
    g_autofree char *gj = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
            "{\"name\":\"%s\",\"namespace\":\"ml\",\"creationTimestamp\":\"2026-01-01T00:00:%"
            "02uZ\"},\"spec\":{\"minMember\":1,\"priorityClassName\":\"%s\"}}",
            name, sec, pc);
    kb_test_sched_add_pod_group(fx, gj);
    g_autofree char *claim = g_strdup_printf("%s-c", name);
    g_autofree char *spec =
            g_strdup_printf("{\"requests\":[{\"name\":\"gpu\",\"exactly\":{%s}}]}", exactly);
    g_autofree char *st =
            node == NULL
                    ? NULL
                    : g_strdup_printf(
                              "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
                              "\"driver\":\"gpu.nvidia.com\",\"pool\":\"%s\",%s}]},"
                              "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{"
                              "\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"%s\"]"
                              "}]}]}},\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"%s\","
                              "\"uid\":\"u-%s\"}]}",
                              node, result, node, name, name);
    put_claim(fx, claim, spec, st);
    g_autofree char *on =
            node != NULL ? g_strdup_printf(",\"nodeName\":\"%s\"", node) : g_strdup("");
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"u-%s\","
            "\"creationTimestamp\":\"2026-01-01T00:00:%02uZ\",\"annotations\":{"
            "\"scheduling.k8s.io/group-name\":\"%s\"}},\"spec\":{\"schedulerName\":"
            "\"kube-batchd\",\"priorityClassName\":\"%s\"%s,\"containers\":[{\"name\":\"c\","
            "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],\"resourceClaims\":[{\"name\":"
            "\"gpu\",\"resourceClaimName\":\"%s\"}]},\"status\":{\"phase\":\"%s\"}}",
            name, name, sec, name, pc, on, claim, node != NULL ? "Running" : "Pending");
    kb_test_sched_put_pod(fx, kb_test_sched_parse(text));
}

#define MIG_EXACTLY(profile)                                                                       \
    "\"deviceClassName\":\"mig.nvidia.com\",\"selectors\":[{\"cel\":{\"expression\":"              \
    "\"device.attributes['gpu.nvidia.com'].profile == '" profile "'\"}}]"

/* Low-priority pod lo-<start> holding the 1g.10gb placement at memory slice @start of n1's GPU,
 * created at second @sec. */
static void put_1g_holder(Fx *fx, guint start, guint sec, const char *pc)
{
    g_autofree char *name = g_strdup_printf("%s-%u", pc, start);
    g_autofree char *res = g_strdup_printf("\"device\":\"gpu-0-mig-1g10gb-19-%u\"", start);
    put_slice_job(fx, name, pc, sec, MIG_EXACTLY("1g.10gb"), "n1", res);
}

static Fx *mig_actions_fixture(void)
{
    Fx *fx = actions_fixture("enqueue, allocate, preempt, reclaim");
    add_class(fx, "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].type == 'mig'");
    kb_test_sched_add_dra_node(fx, "n1", 1, TRUE, "");
    return fx;
}

/* The pods @names (NULL-terminated) are deleted (@pods), and their claims <name>-c
 * (@claims: the resource-claim controller, which may come after the pods are seen gone). */
static void pods_gone(Fx *fx, const char *const *names, gboolean pods, gboolean claims)
{
    for (guint i = 0; names[i] != NULL; i++) {
        g_autofree char *claim = g_strdup_printf("%s-c", names[i]);
        KbResourceClaim c = {.meta = {.namespace_ = "ml", .name = claim}};
        if (claims)
            kb_dra_delete_claim(dra(fx), &c);
        if (!pods)
            continue;
        g_autofree char *key = g_strdup_printf("ml/%s", names[i]);
        g_autoptr(KbPod) pod = kb_pod_decode(g_hash_table_lookup(fx->pods, key), FALSE, NULL);
        g_assert_nonnull(pod);
        kb_cache_delete_pod(fx->cache, pod);
    }
}

/*
 * A full MIG A100 (seven low-priority 1g.10gb pods): a high-priority 3g.40gb claim evicts
 * exactly the pods whose slices free a 3g placement's counters (4, 5 and 6: the one at slice 0,
 * taken first as the youngest, is given back), evicts no more while they terminate, nor once
 * the pods are gone but not yet their claims, and once the claims are gone too gets the 3g
 * placement at slice 4.
 */
static void test_preempt_mig(void)
{
    Fx *fx = mig_actions_fixture();
    /* youngest first: 0, 4, 5, 6, 1, 2, 3 */
    static const guint order[] = {0, 4, 5, 6, 1, 2, 3};
    for (guint i = 0; i < G_N_ELEMENTS(order); i++)
        put_1g_holder(fx, order[i], 40 - i, "low");
    put_slice_job(fx, "urgent", "high", 50, MIG_EXACTLY("3g.40gb"), NULL, NULL);
    kb_test_sched_run(fx);
    g_autofree char *ev = evicted_names(fx);
    g_assert_cmpstr(ev, ==, "low-4,low-5,low-6");
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 7);
    /* victims terminating: no further eviction, nothing bound */
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    static const char *const gone[] = {"low-4", "low-5", "low-6", NULL};
    pods_gone(fx, gone, TRUE, FALSE);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 7);
    pods_gone(fx, gone, FALSE, TRUE);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/urgent"), ==, 1);
    g_assert_cmpstr(result_device(fx, "urgent"), ==, "gpu-0-mig-3g40gb-9-4");
    kb_test_sched_free(fx);
}

/*
 * The youngest 1g.10gb pods are those at slices 0 to 3: taken in age order they free the 3g.40gb
 * placement at slice 0 with four victims, where the three pods at 4, 5 and 6 free the one at
 * slice 4. The plan takes the three, and no pod the placement does not need.
 */
static void test_preempt_fewest_victims(void)
{
    Fx *fx = mig_actions_fixture();
    for (guint i = 0; i < 7; i++)
        put_1g_holder(fx, i, 40 - i, "low");
    put_slice_job(fx, "urgent", "high", 50, MIG_EXACTLY("3g.40gb"), NULL, NULL);
    kb_test_sched_run(fx);
    g_autofree char *ev = evicted_names(fx);
    g_assert_cmpstr(ev, ==, "low-4,low-5,low-6");
    kb_test_sched_free(fx);
}

/* Slices at 0 and 4 held by pods of the preemptor's priority: evicting every low-priority pod
 * would free no 3g placement, so nothing is evicted and every device stays held. */
static void test_preempt_mig_not_enough(void)
{
    Fx *fx = mig_actions_fixture();
    static const guint low[] = {1, 2, 3, 5, 6};
    for (guint i = 0; i < G_N_ELEMENTS(low); i++)
        put_1g_holder(fx, low[i], 40 - i, "low");
    put_1g_holder(fx, 0, 10, "high");
    put_1g_holder(fx, 4, 11, "high");
    put_slice_job(fx, "urgent", "high", 50, MIG_EXACTLY("3g.40gb"), NULL, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    g_assert_cmpuint(kb_dra_devices_held(dra(fx)), ==, 7);
    /* the plan gave the counters back: a 1g claim finds the GPU still full */
    put_slice_job(fx, "late", "low", 51, MIG_EXACTLY("1g.10gb"), NULL, NULL);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    kb_test_sched_free(fx);
}

#define SHARE_EXACTLY(memory)                                                                      \
    "\"deviceClassName\":\"gpu.nvidia.com\",\"capacity\":{\"requests\":{\"memory\":\"" memory "\"" \
    "}}"

/* Low-priority pod @name holding a share of @memory of s1's GPU, created at second @sec. */
static void put_share_holder(Fx *fx, const char *name, guint sec, const char *memory)
{
    g_autofree char *res = g_strdup_printf(
            "\"device\":\"gpu-0\",\"consumedCapacity\":{\"memory\":\"%s\"},\"shareID\":"
            "\"0b5c3f5e-4b0e-4b9a-9d1c-3b7f6a2e8d%02u\"",
            memory, sec);
    put_slice_job(fx, name, "low", sec, SHARE_EXACTLY("40Gi"), "s1", res);
}

/*
 * A GPU shared by memory, full (two low-priority shares of 40Gi of 80Gi): a high-priority
 * share of 40Gi evicts one (the younger); a second high-priority share in the same cycle is not
 * given the capacity the first took and evicts the other. While they terminate nothing more is
 * evicted; once gone, both preemptors get their shares of the GPU.
 */
static void test_preempt_shares(void)
{
    Fx *fx = actions_fixture("enqueue, allocate, preempt, reclaim");
    kb_test_sched_add_dra_node(fx, "s1", 1, FALSE, "\"kube-batchd.io/gpu-sharing\":\"memory\"");
    put_share_holder(fx, "old", 10, "40Gi");
    put_share_holder(fx, "young", 20, "40Gi");
    put_slice_job(fx, "h1", "high", 30, SHARE_EXACTLY("40Gi"), NULL, NULL);
    kb_test_sched_run(fx);
    g_autofree char *ev = evicted_names(fx);
    g_assert_cmpstr(ev, ==, "young");
    put_slice_job(fx, "h2", "high", 31, SHARE_EXACTLY("40Gi"), NULL, NULL);
    kb_test_sched_run(fx);
    g_autofree char *ev2 = evicted_names(fx);
    g_assert_cmpstr(ev2, ==, "old");
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    static const char *const gone[] = {"old", "young", NULL};
    pods_gone(fx, gone, TRUE, TRUE);
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 2);
    g_assert_cmpstr(result_member(fx, "h1", "consumedCapacity.memory"), ==, "40Gi");
    g_assert_cmpstr(result_member(fx, "h2", "consumedCapacity.memory"), ==, "40Gi");
    kb_test_sched_free(fx);
}

static KbPod *fx_pod(Fx *fx, const char *name)
{
    g_autofree char *key = g_strdup_printf("ml/%s", name);
    return kb_pod_decode(g_hash_table_lookup(fx->pods, key), FALSE, NULL);
}

/* In a plan, victims' MIG slices give back their counters and a victim's share its capacity,
 * once each however often the victim is counted; a discarded statement and the plan's end
 * take them again. */
static void test_preempt_plan_discard(void)
{
    Fx *fx = mig_actions_fixture();
    for (guint s = 0; s < 7; s++)
        put_1g_holder(fx, s, 10 + s, "low");
    put_slice_job(fx, "urgent", "high", 50, MIG_EXACTLY("3g.40gb"), NULL, NULL);
    kb_test_sched_add_dra_node(fx, "s1", 1, FALSE, "\"kube-batchd.io/gpu-sharing\":\"memory\"");
    put_share_holder(fx, "sa", 20, "40Gi");
    put_share_holder(fx, "sb", 21, "40Gi");
    put_slice_job(fx, "s40", "high", 51, SHARE_EXACTLY("40Gi"), NULL, NULL);
    put_slice_job(fx, "s80", "high", 52, SHARE_EXACTLY("80Gi"), NULL, NULL);
    g_autoptr(KbPod) urgent = fx_pod(fx, "urgent");
    g_autoptr(KbPod) s40 = fx_pod(fx, "s40");
    g_autoptr(KbPod) s80 = fx_pod(fx, "s80");
    g_autoptr(KbPod) sb = fx_pod(fx, "sb");
    g_autoptr(GPtrArray) lows = g_ptr_array_new_with_free_func(kb_object_unref);
    for (guint s = 4; s < 7; s++) {
        g_autofree char *name = g_strdup_printf("low-%u", s);
        g_ptr_array_add(lows, fx_pod(fx, name));
    }
    g_autoptr(GString) why = g_string_new(NULL);
    g_assert_false(kb_dra_fits(dra(fx), urgent, "n1", why, NULL));
    g_assert_false(kb_dra_fits(dra(fx), s40, "s1", NULL, NULL));
    for (guint i = 0; i < lows->len; i++)
        kb_dra_plan_evict(dra(fx), lows->pdata[i], TRUE);
    kb_dra_plan_evict(dra(fx), sb, TRUE);
    kb_dra_plan_evict(dra(fx), sb, TRUE); /* counted twice: given back once */
    g_assert_true(kb_dra_fits(dra(fx), urgent, "n1", NULL, NULL));
    g_assert_true(kb_dra_fits(dra(fx), s40, "s1", NULL, NULL));
    g_assert_false(kb_dra_fits(dra(fx), s80, "s1", NULL, NULL));
    /* the statement is discarded */
    for (guint i = 0; i < lows->len; i++)
        kb_dra_plan_evict(dra(fx), lows->pdata[i], FALSE);
    kb_dra_plan_evict(dra(fx), sb, FALSE);
    kb_dra_plan_evict(dra(fx), sb, FALSE);
    g_string_truncate(why, 0);
    g_assert_false(kb_dra_fits(dra(fx), urgent, "n1", why, NULL));
    g_assert_nonnull(strstr(why->str, "exhausted"));
    g_assert_false(kb_dra_fits(dra(fx), s40, "s1", NULL, NULL));
    /* the plan's end */
    kb_dra_plan_evict(dra(fx), lows->pdata[0], TRUE);
    kb_dra_plan_evict(dra(fx), lows->pdata[1], TRUE);
    kb_dra_plan_evict(dra(fx), lows->pdata[2], TRUE);
    kb_dra_plan_evict(dra(fx), sb, TRUE);
    g_assert_true(kb_dra_fits(dra(fx), urgent, "n1", NULL, NULL));
    kb_dra_plan_end(dra(fx));
    g_assert_false(kb_dra_fits(dra(fx), urgent, "n1", NULL, NULL));
    g_assert_false(kb_dra_fits(dra(fx), s40, "s1", NULL, NULL));
    kb_test_sched_free(fx);
}

/* ---- what slices and shares count (dra.h: kb_dra_pod_demand, kb_dra_gpu_fraction) ----------- */

/* NVIDIA's classes as its driver defines them: whole GPUs and MIG devices apart. */
static Fx *nvidia_fixture(const char *actions)
{
    Fx *fx = actions != NULL ? actions_fixture(actions) : kb_test_sched_new(NULL);
    add_class(fx, "gpu.nvidia.com", "device.attributes['gpu.nvidia.com'].type == 'gpu'");
    add_class(fx, "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].type == 'mig'");
    return fx;
}

/*
 * Job @name (one pod, queue @queue, class @pc or NULL, created at second @sec) whose claim
 * @name-c (spec.devices @spec) comes from template @tmpl (the pod's status names it); with @node
 * the pod runs there and the claim is allocated device @device (with share @share: its
 * consumedCapacity memory), reserved for the pod.
 */
static void put_tmpl_job(Fx *fx, const char *name, const char *queue, const char *pc, guint sec,
                         const char *tmpl, const char *spec, const char *node, const char *device,
                         const char *share)
{
    g_autofree char *gj = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":"
            "{\"name\":\"%s\",\"namespace\":\"ml\",\"creationTimestamp\":\"2026-01-01T00:%02u:%"
            "02uZ\"},\"spec\":{\"minMember\":1,\"queue\":\"%s\"%s%s%s}}",
            name, sec / 60, sec % 60, queue, pc != NULL ? ",\"priorityClassName\":\"" : "",
            pc != NULL ? pc : "", pc != NULL ? "\"" : "");
    kb_test_sched_add_pod_group(fx, gj);
    g_autofree char *claim = g_strdup_printf("%s-c", name);
    g_autofree char *shared =
            share != NULL ? g_strdup_printf(",\"consumedCapacity\":{\"memory\":\"%s\"},"
                                            "\"shareID\":\"0b5c3f5e-4b0e-4b9a-9d1c-3b7f6a2e%04u\"",
                                            share, sec)
                          : g_strdup("");
    g_autofree char *st =
            node == NULL
                    ? NULL
                    : g_strdup_printf(
                              "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
                              "\"driver\":\"gpu.nvidia.com\",\"pool\":\"%s\",\"device\":\"%s\"%s"
                              "}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{"
                              "\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"%s\"]"
                              "}]}]}},\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"%s\","
                              "\"uid\":\"u-%s\"}]}",
                              node, device, shared, node, name, name);
    put_claim(fx, claim, spec, st);
    g_autofree char *on =
            node != NULL ? g_strdup_printf(",\"nodeName\":\"%s\"", node) : g_strdup("");
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"u-%s\","
            "\"creationTimestamp\":\"2026-01-01T00:%02u:%02uZ\",\"annotations\":{"
            "\"scheduling.k8s.io/group-name\":\"%s\"}},\"spec\":{\"schedulerName\":"
            "\"kube-batchd\"%s%s%s%s,\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
            "{\"cpu\":\"1\"}}}],\"resourceClaims\":[{\"name\":\"gpu\","
            "\"resourceClaimTemplateName\":\"%s\"}]},\"status\":{\"phase\":\"%s\","
            "\"resourceClaimStatuses\":[{\"name\":\"gpu\",\"resourceClaimName\":\"%s\"}]}}",
            name, name, sec / 60, sec % 60, name, pc != NULL ? ",\"priorityClassName\":\"" : "",
            pc != NULL ? pc : "", pc != NULL ? "\"" : "", on, tmpl,
            node != NULL ? "Running" : "Pending", claim);
    kb_test_sched_put_pod(fx, kb_test_sched_parse(text));
}

/* As add_kubelet_node, the node publishing its GPUs as slices only (as kb-kubelet --dra does). */
static void add_dra_node(Fx *fx, const char *node, guint gpus, gboolean mig, const char *labels)
{
    kb_test_sched_add_dra_node(fx, node, gpus, mig, labels);
    g_autofree char *nj = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"labels\":{%s}},\"status\":{\"allocatable\":{"
            "\"cpu\":\"64\",\"memory\":\"256Gi\",\"pods\":\"110\"},"
            "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
            node, labels);
    kb_test_sched_add_node(fx, nj);
}

/* The nvidia.com/gpu queue @name held in the last cycle (milli-GPUs). */
static gint64 queue_gpus(Fx *fx, const char *name)
{
    for (guint i = 0; i < fx->res->queue_statuses->len; i++) {
        const KbQueueStatus *x = &g_array_index(fx->res->queue_statuses, KbQueueStatus, i);
        if (strcmp(x->name, name) == 0)
            return x->allocated.v[KB_RES_GPU];
    }
    g_error("no status for queue %s", name);
}

static void add_gpu_queue(Fx *fx, const char *name, guint weight, const char *capability)
{
    g_autofree char *q = g_strdup_printf(
            "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\",\"metadata\":{"
            "\"name\":\"%s\"},\"spec\":{\"weight\":%u,\"reclaimable\":true%s%s%s}}",
            name, weight, capability != NULL ? ",\"capability\":{\"nvidia.com/gpu\":\"" : "",
            capability != NULL ? capability : "", capability != NULL ? "\"}" : "");
    kb_test_sched_add_queue(fx, q);
}

#define TMPL_1G                                                                                    \
    "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"mig.nvidia.com\","        \
    "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.nvidia.com'].profile == "    \
    "'1g.10gb'\"}}]}}]}"

#define WHOLE_GPU                                                                                  \
    "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}"
#define SHARE_OF(memory)                                                                           \
    "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\","        \
    "\"capacity\":{\"requests\":{\"memory\":\"" memory "\"}}}}]}"
#define SHARE_39500 SHARE_OF("39500Mi")
#define SHARE_40G   SHARE_OF("40Gi")
#define TMPL_3G                                                                                    \
    "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"mig.nvidia.com\","        \
    "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.nvidia.com'].profile == "    \
    "'3g.40gb'\"}}]}}]}"

/*
 * What a template's request counts before its claim is allocated, on a MIG-capable A100 and a
 * GPU shared by memory (80Gi, whole GiB): the least part of a GPU any device of its class and
 * selectors could give it, times its count; the least over firstAvailable alternatives of GPU
 * classes; a share's request rounded up by the policy; MIG devices also by number.
 */
static void test_acct_demand_least(void)
{
    Fx *fx = nvidia_fixture(NULL);
    add_dra_node(fx, "n1", 1, TRUE, "");
    add_dra_node(fx, "s1", 1, FALSE, "\"kube-batchd.io/gpu-sharing\":\"memory\"");
    add_class(fx, "fpga.example.com", NULL);
    put_template(fx, "mig-any",
                 "{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
                 "\"mig.nvidia.com\",\"count\":2}}]}");
    put_template(fx, "three", TMPL_3G);
    put_template(fx, "whole", WHOLE_GPU);
    put_template(fx, "all",
                 "{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
                 "\"gpu.nvidia.com\",\"allocationMode\":\"All\"}}]}");
    put_template(fx, "first-mixed",
                 "{\"requests\":[{\"name\":\"g\",\"firstAvailable\":[{\"name\":\"a\","
                 "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2},{\"name\":\"b\","
                 "\"deviceClassName\":\"mig.nvidia.com\",\"selectors\":[{\"cel\":{"
                 "\"expression\":\"device.attributes['gpu.nvidia.com'].profile == '2g.20gb'\"}}]}"
                 "]}]}");
    put_template(fx, "first-other",
                 "{\"requests\":[{\"name\":\"g\",\"firstAvailable\":[{\"name\":\"a\","
                 "\"deviceClassName\":\"gpu.nvidia.com\"},{\"name\":\"b\","
                 "\"deviceClassName\":\"fpga.example.com\"}]}]}");
    put_template(fx, "admin",
                 "{\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":"
                 "\"gpu.nvidia.com\",\"adminAccess\":true}}]}");
    put_template(fx, "share", SHARE_OF("10Gi"));
    put_template(fx, "share-odd", SHARE_OF("1500Mi"));
    struct {
        const char *templates;
        gint64 gpus, mig;
    } rows[] = {
            {"mig-any", 284, 2},       /* two 1g.10gb: 2 x 14/98 */
            {"three", 428, 1},         /* its selector: a 3g.40gb, 42/98 */
            {"whole", 1000, 0},        /* a whole GPU, or the shared one's default share: all */
            {"all", 1000, 0},          /* All: one device at least */
            {"first-mixed", 285, 0},   /* two whole GPUs or a 2g.20gb (28/98) */
            {"first-other", 0, 0},     /* an fpga may serve it */
            {"admin", 0, 0},           /* holds nothing */
            {"share", 125, 0},         /* 10Gi of 80Gi */
            {"share-odd", 25, 0},      /* rounded up to 2Gi */
            {"mig-any,share", 409, 2}, /* claims add up */
    };
    int mig = kb_resource_slot("mig.nvidia.com");
    for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
        g_autoptr(KbPod) pod = template_pod(rows[i].templates);
        KbResources r = {0};
        kb_dra_pod_demand(dra(fx), pod, &r);
        g_test_message("%s", rows[i].templates);
        g_assert_cmpint(r.v[KB_RES_GPU], ==, rows[i].gpus);
        g_assert_cmpint(r.v[mig], ==, rows[i].mig);
    }
    kb_test_sched_free(fx);
}

/*
 * A queue whose capability is 1 nvidia.com/gpu holds seven 1g.10gb slices of an A100 (each 1/7
 * of the GPU: 14 of its 98 multiprocessors, 0.142 counted) and no eighth, though another GPU has
 * room: the eighth waits, its reason naming the queue and the resource. The slices count in
 * mig.nvidia.com too, by number.
 */
static void test_acct_quota_slices(void)
{
    Fx *fx = nvidia_fixture(NULL);
    add_dra_node(fx, "n1", 2, TRUE, "");
    add_gpu_queue(fx, "research", 1, "1");
    put_template(fx, "slice", TMPL_1G);
    for (guint i = 0; i < 8; i++) {
        g_autofree char *name = g_strdup_printf("nb-%u", i);
        put_tmpl_job(fx, name, "research", NULL, i, "slice", TMPL_1G, NULL, NULL, NULL);
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 7);
    g_assert_cmpuint(kb_test_sched_binds(fx, "ml/nb-7"), ==, 0);
    const KbJobStatus *js = kb_cycle_result_job(fx->res, "ml/nb-7");
    g_test_message("%s", js->message);
    g_assert_nonnull(strstr(js->message, "\"research\""));
    g_assert_nonnull(strstr(js->message, "nvidia.com/gpu"));
    const KbTaskInfo *t = kb_cache_lookup_task(fx->cache, "ml", "nb-0");
    g_assert_cmpint(t->resreq.v[KB_RES_GPU], ==, 142);
    g_assert_cmpint(t->resreq.v[kb_resource_slot("mig.nvidia.com")], ==, 1);
    /* the node's two GPUs as slices: once each, not once per MIG placement */
    g_assert_cmpint(kb_cache_lookup_node(fx->cache, "n1")->allocatable.v[KB_RES_GPU], ==, 2000);
    kb_test_sched_free(fx);
}

/*
 * Before its claim is allocated a pod counts the least part of a GPU its request could take
 * (the smallest MIG placement its selectors match; a share's request rounded up by the policy,
 * over the GPU's memory); once the claim is seen allocated, what its device takes: a 3g.40gb 0.428
 * (42 of 98 multiprocessors), a whole GPU 1, a share of 40Gi of 80Gi 0.5; the queue's allocated
 * follows.
 */
static void test_acct_allocated(void)
{
    Fx *fx = nvidia_fixture(NULL);
    add_dra_node(fx, "n1", 1, TRUE, "");
    add_dra_node(fx, "s1", 1, FALSE, "\"kube-batchd.io/gpu-sharing\":\"memory\"");
    add_gpu_queue(fx, "team", 1, NULL);
    put_template(fx, "mig", TMPL_1G);
    put_template(fx, "whole", WHOLE_GPU);
    put_template(fx, "share", SHARE_39500);
    put_tmpl_job(fx, "m", "team", NULL, 1, "mig", TMPL_1G, NULL, NULL, NULL);
    put_tmpl_job(fx, "s", "team", NULL, 2, "share", SHARE_39500, NULL, NULL, NULL);
    put_template(fx, "three", TMPL_3G);
    put_tmpl_job(fx, "t", "team", NULL, 4, "three", TMPL_3G, NULL, NULL, NULL);
    kb_cache_sync_dra(fx->cache);
    /* the request's selectors are read: a 3g.40gb counts as one before it is allocated */
    g_assert_cmpint(kb_cache_lookup_task(fx->cache, "ml", "t")->resreq.v[KB_RES_GPU], ==, 428);
    const KbTaskInfo *m = kb_cache_lookup_task(fx->cache, "ml", "m");
    const KbTaskInfo *s = kb_cache_lookup_task(fx->cache, "ml", "s");
    g_assert_cmpint(m->resreq.v[KB_RES_GPU], ==, 142);
    /* 39500Mi rounded up to whole GiB (the policy's step): 39Gi of 80Gi */
    g_assert_cmpint(s->resreq.v[KB_RES_GPU], ==, 487);
    /* seen allocated: a 3g placement, a 40Gi share */
    put_tmpl_job(fx, "m", "team", NULL, 1, "mig", TMPL_1G, "n1", "gpu-0-mig-3g40gb-9-4", NULL);
    put_tmpl_job(fx, "s", "team", NULL, 2, "share", SHARE_39500, "s1", "gpu-0", "40Gi");
    put_tmpl_job(fx, "w", "team", NULL, 3, "whole", WHOLE_GPU, "n1", "gpu-0", NULL);
    kb_cache_sync_dra(fx->cache);
    m = kb_cache_lookup_task(fx->cache, "ml", "m");
    s = kb_cache_lookup_task(fx->cache, "ml", "s");
    const KbTaskInfo *w = kb_cache_lookup_task(fx->cache, "ml", "w");
    g_assert_cmpint(m->resreq.v[KB_RES_GPU], ==, 428);
    g_assert_cmpint(s->resreq.v[KB_RES_GPU], ==, 500);
    g_assert_cmpint(w->resreq.v[KB_RES_GPU], ==, 1000);
    g_assert_cmpint(kb_cache_lookup_node(fx->cache, "s1")->used.v[KB_RES_GPU], ==, 500);
    kb_test_sched_run(fx);
    g_assert_cmpint(queue_gpus(fx, "team"), ==, 1928);
    /* the claim deleted (its pod finished): the template's least again */
    KbResourceClaim c = {.meta = {.namespace_ = "ml", .name = (char *)"m-c"}};
    kb_dra_delete_claim(dra(fx), &c);
    kb_cache_sync_dra(fx->cache);
    g_assert_cmpint(kb_cache_lookup_task(fx->cache, "ml", "m")->resreq.v[KB_RES_GPU], ==, 142);
    kb_test_sched_free(fx);
}

/*
 * Two queues (weights 3 and 1) sharing four GPUs by memory, eight 40Gi shares (half a GPU each)
 * asked by each: the first gets six shares (3 GPUs), the second two (1 GPU). Counted as no GPU,
 * the shares went to both queues alike.
 */
static void test_acct_proportion_shares(void)
{
    Fx *fx = nvidia_fixture(NULL);
    add_dra_node(fx, "s1", 4, FALSE, "\"kube-batchd.io/gpu-sharing\":\"memory\"");
    add_gpu_queue(fx, "big", 3, NULL);
    add_gpu_queue(fx, "small", 1, NULL);
    put_template(fx, "half", SHARE_40G);
    for (guint i = 0; i < 8; i++) {
        g_autofree char *b = g_strdup_printf("big-%u", i);
        g_autofree char *s = g_strdup_printf("small-%u", i);
        put_tmpl_job(fx, b, "big", NULL, 2 * i, "half", SHARE_40G, NULL, NULL, NULL);
        put_tmpl_job(fx, s, "small", NULL, 2 * i + 1, "half", SHARE_40G, NULL, NULL, NULL);
    }
    kb_test_sched_run(fx);
    guint big = 0, small = 0;
    for (guint i = 0; i < 8; i++) {
        g_autofree char *b = g_strdup_printf("ml/big-%u", i);
        g_autofree char *s = g_strdup_printf("ml/small-%u", i);
        big += kb_test_sched_binds(fx, b);
        small += kb_test_sched_binds(fx, s);
    }
    g_assert_cmpuint(big, ==, 6);
    g_assert_cmpuint(small, ==, 2);
    kb_test_sched_free(fx);
}

/*
 * Reclaim counts slices by the part of a GPU they take: queue a holds every 1g.10gb slice of two
 * A100s (1.988 GPUs), queue b (same weight) asks for eight 3g.40gb pods, so each deserves one
 * GPU and a is above its share. b's admitted job reclaims the three pods under one 3g placement
 * (at slice 4; the one at 0 would take four). Counted as no GPU, a's slices were above no share
 * and nothing was reclaimed.
 */
static void test_acct_reclaim_slices(void)
{
    Fx *fx = nvidia_fixture("enqueue, allocate, preempt, reclaim");
    add_dra_node(fx, "n1", 2, TRUE, "");
    add_gpu_queue(fx, "a", 1, NULL);
    add_gpu_queue(fx, "b", 1, NULL);
    put_template(fx, "slice", TMPL_1G);
    put_template(fx, "big", TMPL_3G);
    for (guint g = 0; g < 2; g++) {
        for (guint i = 0; i < 7; i++) {
            g_autofree char *name = g_strdup_printf("a-%u-%u", g, i);
            g_autofree char *dev = g_strdup_printf("gpu-%u-mig-1g10gb-19-%u", g, i);
            put_tmpl_job(fx, name, "a", NULL, g * 7 + i, "slice", TMPL_1G, "n1", dev, NULL);
        }
    }
    for (guint i = 0; i < 8; i++) {
        g_autofree char *name = g_strdup_printf("b-%u", i);
        put_tmpl_job(fx, name, "b", NULL, 30 + i, "big", TMPL_3G, NULL, NULL, NULL);
    }
    kb_test_sched_run(fx);
    g_autofree char *ev = evicted_names(fx);
    g_assert_cmpstr(ev, ==, "a-1-4,a-1-5,a-1-6");
    g_assert_cmpint(queue_gpus(fx, "a"), ==, 1988);
    /* while they terminate, nothing more is evicted (the next jobs are not admitted: the
     * cluster's GPUs are all counted) */
    kb_test_sched_run(fx);
    g_assert_cmpuint(fx->res->evictions->len, ==, 0);
    kb_test_sched_free(fx);
}

/* A gang whose slices exceed the cluster's GPUs is not admitted; the reason says what part of
 * a GPU each pod's request counts. */
static void test_acct_not_admitted(void)
{
    Fx *fx = nvidia_fixture(NULL);
    add_dra_node(fx, "n1", 1, TRUE, "");
    put_template(fx, "two-gpus", TMPL_1G);
    add_group(fx, "nb", 8);
    for (guint i = 0; i < 8; i++) {
        g_autofree char *pod = g_strdup_printf("nb-w%u", i);
        g_autofree char *claim = g_strdup_printf("nb-w%u-gpus", i);
        put_claim(fx, claim, TMPL_1G, NULL);
        put_pod(fx, pod, "nb", claim);
    }
    kb_test_sched_run(fx);
    g_assert_cmpuint(kb_test_sched_binds(fx, NULL), ==, 0);
    const KbJobStatus *js = kb_cycle_result_job(fx->res, "ml/nb");
    g_test_message("%s", js->message);
    g_assert_cmpstr(js->message, ==,
                    "not admitted: the cluster has 1 nvidia.com/gpu free (after admitted jobs), "
                    "the job needs 1.136 to start (each pod's claim ml/nb-w0-gpus request gpu: "
                    "0.142 nvidia.com/gpu (1 device of class mig.nvidia.com))");
    kb_test_sched_free(fx);
}

/* A pod naming claim ml/@a directly, and ml/@b too unless NULL. */
static KbPod *pod_claims_new(const char *name, const char *a, const char *b)
{
    g_autofree char *more =
            b != NULL ? g_strdup_printf(",{\"name\":\"more\",\"resourceClaimName\":\"%s\"}", b)
                      : g_strdup("");
    g_autofree char *text = g_strdup_printf(
            "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"uid\":\"u-%s\"},\"spec\":{"
            "\"containers\":[{\"name\":\"c\"}],\"resourceClaims\":[{\"name\":\"gpus\","
            "\"resourceClaimName\":\"%s\"}%s]}}",
            name, name, a, more);
    json_object *o = kb_test_sched_parse(text);
    g_autoptr(GError) error = NULL;
    KbPod *pod = kb_pod_decode(o, FALSE, &error);
    json_object_put(o);
    g_assert_no_error(error);
    return pod;
}

/* Claim ml/@name set to a random shape (counted, another class, a selector, two requests,
 * allocated on n1 or n2) or deleted. */
static void put_random_claim(Fx *fx, GRand *rand, const char *name)
{
    g_autofree char *req = NULL;
    g_autofree char *status = NULL;
    switch (g_rand_int_range(rand, 0, 7)) {
    case 0:
    case 1:
        req = gpus_request(g_rand_int_range(rand, 1, 4), "gpu.nvidia.com");
        break;
    case 2:
        req = gpus_request(g_rand_int_range(rand, 1, 3), "h100.example.com");
        break;
    case 3:
        req = g_strdup("{\"requests\":[{\"name\":\"gpus\",\"exactly\":{\"deviceClassName\":"
                       "\"gpu.nvidia.com\",\"count\":1,\"selectors\":[{\"cel\":{\"expression\":"
                       "\"device.attributes['gpu.nvidia.com'].index >= 2\"}}]}}]}");
        break;
    case 4:
        req = g_strdup("{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":"
                       "\"gpu.nvidia.com\",\"count\":1}},{\"name\":\"b\",\"exactly\":{"
                       "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1}}]}");
        break;
    case 5: {
        const char *node = g_rand_boolean(rand) ? "n1" : "n2";
        req = gpus_request(1, "gpu.nvidia.com");
        status = g_strdup_printf(
                "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
                "\"gpu.nvidia.com\",\"pool\":\"%s\",\"device\":\"gpu-%d\"}]},\"nodeSelector\":{"
                "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
                "\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}}",
                node, g_rand_int_range(rand, 0, 4), node);
        break;
    }
    default: {
        g_autofree char *any = gpus_request(1, "gpu.nvidia.com");
        g_autoptr(KbResourceClaim) gone = claim_new(fx, name, name, any, NULL);
        kb_dra_delete_claim(dra(fx), gone);
        return;
    }
    }
    put_claim(fx, name, req, status);
}

/*
 * kb_dra_fits_on (what allocate asks, with the node's devices and the pod's claims kept between
 * calls) answers as kb_dra_fits (everything looked up again) for every pod and node, before and
 * after each of 3,000 random changes: claims set (shared by several pods, allocated, of other
 * shapes) and deleted, devices held and released, claims written, slices and classes changed,
 * a node's first slice. The node handles are kept as allocate keeps them (until
 * kb_dra_nodes_gen changes), and one KbDraPodFit serves every call.
 */
static void test_plan_fits_on_kept(void)
{
    Fx *fx = fixture();
    add_class(fx, "h100.example.com",
              "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100'");
    put_slice(fx, "n1", 4, 2, "NVIDIA A100");
    put_slice(fx, "n2", 4, 4, "NVIDIA H100");
    static const char *const nodes[] = {"n1", "n2", "n3", "n4"}; /* n4 never has devices */
    static const char *const claims[] = {"c0", "c1", "c2", "c3", "c4"};
    g_autoptr(GRand) rand = g_rand_new_with_seed(909);
    for (guint c = 0; c < G_N_ELEMENTS(claims); c++)
        put_random_claim(fx, rand, claims[c]);
    /* p0-p3 share claims c0-c3 in pairs and c4 with p4 */
    KbPod *pods[] = {pod_claims_new("p0", "c0", NULL), pod_claims_new("p1", "c0", NULL),
                     pod_claims_new("p2", "c1", NULL), pod_claims_new("p3", "c2", "c3"),
                     pod_claims_new("p4", "c4", NULL), pod_claims_new("p5", "c1", NULL)};
    KbDraNode *handles[G_N_ELEMENTS(nodes)];
    guint gen = kb_dra_nodes_gen(dra(fx)) + 1;
    KbDraPodFit fit = {0};
    guint checked = 0, yes = 0, held = 0;
    for (guint step = 0; step < 3000; step++) {
        KbPod *pod = pods[g_rand_int_range(rand, 0, G_N_ELEMENTS(pods))];
        for (int pass = 0; pass < 2; pass++) {
            if (gen != kb_dra_nodes_gen(dra(fx))) {
                for (guint n = 0; n < G_N_ELEMENTS(nodes); n++)
                    handles[n] = kb_dra_node(dra(fx), nodes[n]);
                gen = kb_dra_nodes_gen(dra(fx));
            }
            for (guint n = 0; n < G_N_ELEMENTS(nodes); n++) {
                gboolean want = kb_dra_fits(dra(fx), pod, nodes[n], NULL, NULL);
                gboolean got = kb_dra_fits_on(dra(fx), pod, nodes[n], handles[n], &fit);
                if (want != got)
                    g_error("step %u: %s on %s: kb_dra_fits says %d, kb_dra_fits_on %d", step,
                            pod->meta.name, nodes[n], want, got);
                checked++;
                yes += want;
            }
            if (pass == 1)
                break;
            /* one change between the two passes over the same pod */
            KbPod *other = pods[g_rand_int_range(rand, 0, G_N_ELEMENTS(pods))];
            const char *claim = claims[g_rand_int_range(rand, 0, G_N_ELEMENTS(claims))];
            switch (g_rand_int_range(rand, 0, 12)) {
            case 0:
            case 1:
            case 2:
                held += kb_dra_assume(dra(fx), other,
                                      nodes[g_rand_int_range(rand, 0, G_N_ELEMENTS(nodes))]);
                break;
            case 3:
            case 4:
                kb_dra_release(dra(fx), other->meta.uid);
                break;
            case 5:
                kb_dra_claim_written(dra(fx), "ml", claim, g_rand_boolean(rand));
                break;
            case 6:
                kb_dra_pod_bound(dra(fx), other->meta.uid);
                break;
            case 7:
                put_slice(fx, g_rand_boolean(rand) ? "n1" : "n3", g_rand_int_range(rand, 1, 5), 2,
                          g_rand_boolean(rand) ? "NVIDIA A100" : "NVIDIA H100");
                break;
            case 8:
                add_class(fx, "gpu.nvidia.com",
                          g_rand_boolean(rand)
                                  ? NULL
                                  : "device.attributes['gpu.nvidia.com'].productName == "
                                    "'NVIDIA A100'");
                break;
            default:
                put_random_claim(fx, rand, claim);
                break;
            }
        }
    }
    g_assert_cmpuint(yes, >, checked / 10);
    g_assert_cmpuint(yes, <, checked - checked / 10);
    g_assert_cmpuint(held, >, 100);
    for (guint i = 0; i < G_N_ELEMENTS(pods); i++)
        kb_object_unref(pods[i]);
    kb_test_sched_free(fx);
}

/* The devices (names, in result order) @pod holds on its one claim, from its claim write. */
static char *assumed_devices(Fx *fx, KbPod *pod)
{
    KbPod *pods[] = {pod};
    g_autofree GPtrArray **writes = kb_dra_gang_writes(dra(fx), pods, 1);
    g_assert_nonnull(writes[0]);
    g_autoptr(GPtrArray) w = writes[0];
    const KbClaimWrite *cw = w->pdata[0];
    json_object *body = json_tokener_parse(cw->body);
    g_assert_nonnull(body);
    json_object *results = json_object_object_get(
            json_object_object_get(
                    json_object_object_get(json_object_object_get(body, "status"), "allocation"),
                    "devices"),
            "results");
    g_autoptr(GString) out = g_string_new(NULL);
    for (size_t i = 0; i < json_object_array_length(results); i++)
        g_string_append_printf(out, "%s%s", i == 0 ? "" : ",",
                               json_object_get_string(json_object_object_get(
                                       json_object_array_get_idx(results, i), "device")));
    json_object_put(body);
    return g_string_free(g_steal_pointer(&out), FALSE);
}

/*
 * The island preference against a recount: on a node of random size whose GPUs sit on random
 * NVLink islands (up to 24 islands, past the short list order_by_island keeps) with some held,
 * a claim of @count GPUs takes the first free devices (slice order) of the island with the
 * fewest free devices that still holds @count (ties: the lesser attribute text, "i10" before
 * "i2"), else the first free devices of the node; over 400 random nodes.
 */
static void test_plan_island_reference(void)
{
    Fx *fx = fixture();
    g_autoptr(GRand) rand = g_rand_new_with_seed(4242);
    g_autoptr(KbPod) pod = pod_claims_new("p", "want", NULL);
    for (guint round = 0; round < 400; round++) {
        guint n = g_rand_int_range(rand, 1, 41);
        guint n_islands = g_rand_int_range(rand, 1, 25);
        guint island[40];
        gboolean taken[40];
        g_autoptr(GString) s = g_string_new(NULL);
        g_string_append(s, "{\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":"
                           "\"gpu.nvidia.com\",\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\","
                           "\"generation\":1,\"resourceSliceCount\":1},\"devices\":[");
        g_autoptr(GString) results = g_string_new(NULL);
        for (guint i = 0; i < n; i++) {
            island[i] = g_rand_int_range(rand, 0, n_islands);
            taken[i] = g_rand_int_range(rand, 0, 4) == 0;
            g_string_append_printf(s,
                                   "%s{\"name\":\"gpu-%u\",\"attributes\":{\"kube-batchd.io/"
                                   "nvlinkIsland\":{\"int\":%u}}}",
                                   i == 0 ? "" : ",", i, island[i]);
            if (taken[i])
                g_string_append_printf(results,
                                       "%s{\"request\":\"gpus\",\"driver\":\"gpu.nvidia.com\","
                                       "\"pool\":\"n1\",\"device\":\"gpu-%u\"}",
                                       results->len == 0 ? "" : ",", i);
        }
        g_string_append(s, "]}}");
        json_object *o = kb_test_sched_parse(s->str);
        g_autoptr(KbResourceSlice) slice = kb_resource_slice_decode(o, FALSE, NULL);
        json_object_put(o);
        g_assert_nonnull(slice);
        kb_dra_set_slice(dra(fx), slice);
        g_autofree char *one = gpus_request(1, "gpu.nvidia.com");
        if (results->len > 0) {
            g_autofree char *st = g_strdup_printf(
                    "{\"allocation\":{\"devices\":{\"results\":[%s]},\"nodeSelector\":{"
                    "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
                    "\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}",
                    results->str);
            put_claim(fx, "held", one, st);
        } else {
            put_claim(fx, "held", one, NULL);
        }
        /* the recount: free devices per island, the best island, the devices it gives */
        guint free_in[24] = {0}, n_free = 0;
        for (guint i = 0; i < n; i++) {
            free_in[island[i]] += !taken[i];
            n_free += !taken[i];
        }
        guint count = g_rand_int_range(rand, 1, 5);
        gint best = -1;
        for (guint k = 0; k < n_islands; k++) {
            g_autofree char *name = g_strdup_printf("i%u", k);
            g_autofree char *best_name = best >= 0 ? g_strdup_printf("i%d", best) : NULL;
            if (free_in[k] >= count &&
                (best < 0 || free_in[k] < free_in[best] ||
                 (free_in[k] == free_in[best] && strcmp(name, best_name) < 0)))
                best = (gint)k;
        }
        g_autoptr(GString) want = g_string_new(NULL);
        guint left = count;
        for (guint i = 0; i < n && left > 0; i++) {
            if (!taken[i] && (best < 0 || island[i] == (guint)best)) {
                g_string_append_printf(want, "%sgpu-%u", want->len == 0 ? "" : ",", i);
                left--;
            }
        }
        g_autofree char *req = gpus_request(count, "gpu.nvidia.com");
        put_claim(fx, "want", req, NULL);
        gboolean ok = kb_dra_assume(dra(fx), pod, "n1");
        g_assert_cmpint(ok, ==, n_free >= count);
        if (ok) {
            g_autofree char *got = assumed_devices(fx, pod);
            g_assert_cmpstr(got, ==, want->str);
            kb_dra_release(dra(fx), pod->meta.uid);
        }
    }
    kb_test_sched_free(fx);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/scheduler/dra/gang-allocated", test_gang_allocated);
    g_test_add_func("/scheduler/dra/gang-one-gpu-short", test_gang_one_short);
    g_test_add_func("/scheduler/dra/mig/counters", test_mig_counters);
    g_test_add_func("/scheduler/dra/mig/counter-limits", test_counter_limits);
    g_test_add_func("/scheduler/dra/mig/counter-claim-deleted", test_counter_claim_deleted);
    g_test_add_func("/scheduler/dra/mig/gang-all-or-nothing", test_mig_gang_all_or_nothing);
    g_test_add_func("/scheduler/dra/mig/packing", test_mig_packing);
    g_test_add_func("/scheduler/dra/capacity/shares", test_capacity_shares);
    g_test_add_func("/scheduler/dra/capacity/valid-values", test_capacity_valid_values);
    g_test_add_func("/scheduler/dra/first-available/gang", test_first_available_gang);
    g_test_add_func("/scheduler/dra/waits-for-template-claim", test_waits_for_claim);
    g_test_add_func("/scheduler/dra/class-missing", test_class_missing);
    g_test_add_func("/scheduler/dra/allocated-claims", test_allocated_claims);
    g_test_add_func("/scheduler/dra/shared-claim", test_shared_claim);
    g_test_add_func("/scheduler/dra/match-attribute", test_match_attribute);
    g_test_add_func("/scheduler/dra/island-preferred", test_island_preferred);
    g_test_add_func("/scheduler/dra/first-available-and-all", test_first_available_and_all);
    g_test_add_func("/scheduler/dra/bind-failure-releases", test_bind_failure_releases);
    g_test_add_func("/scheduler/dra/written-until-seen", test_written_until_seen);
    g_test_add_func("/scheduler/dra/echo-confirms-assumed", test_echo_confirms_assumed);
    g_test_add_func("/scheduler/dra/backtrack/shared-claim", test_backtrack_shared);
    g_test_add_func("/scheduler/dra/selector/product-name", test_product_selector);
    g_test_add_func("/scheduler/dra/selector/unsupported-quoted", test_unsupported_selector);
    g_test_add_func("/scheduler/dra/cache/class-and-slice-change",
                    test_cache_class_and_slice_change);
    g_test_add_func("/scheduler/dra/cache/free-counts", test_cache_free_counts);
    g_test_add_func("/scheduler/dra/cache/request-selectors", test_cache_request_selectors);
    g_test_add_func("/scheduler/dra/plan/fits-on-kept", test_plan_fits_on_kept);
    g_test_add_func("/scheduler/dra/plan/island-reference", test_plan_island_reference);
    g_test_add_func("/scheduler/dra/resources/demand", test_resources_demand);
    g_test_add_func("/scheduler/dra/resources/vectors", test_resources_vectors);
    g_test_add_func("/scheduler/dra/resources/demand-kept", test_resources_demand_kept);
    g_test_add_func("/scheduler/dra/resources/capability-stops-at-limit",
                    test_resources_capability);
    g_test_add_func("/scheduler/dra/resources/no-gpu-ids", test_resources_no_gpu_ids);
    g_test_add_func("/scheduler/dra/resources/not-admitted-names-request",
                    test_resources_not_admitted);
    g_test_add_func("/scheduler/dra/preempt/frees-claims", test_preempt_frees_claims);
    g_test_add_func("/scheduler/dra/preempt/exact-check", test_preempt_exact_check);
    g_test_add_func("/scheduler/dra/preempt/plan-holds", test_preempt_plan_holds);
    g_test_add_func("/scheduler/dra/preempt/mig-counters", test_preempt_mig);
    g_test_add_func("/scheduler/dra/preempt/mig-not-enough", test_preempt_mig_not_enough);
    g_test_add_func("/scheduler/dra/preempt/fewest-victims", test_preempt_fewest_victims);
    g_test_add_func("/scheduler/dra/preempt/shares", test_preempt_shares);
    g_test_add_func("/scheduler/dra/preempt/plan-discard-counters", test_preempt_plan_discard);
    g_test_add_func("/scheduler/dra/reclaim/counts-devices", test_reclaim_counts_devices);
    g_test_add_func("/scheduler/dra/reserve/counts-devices", test_reserve_counts_devices);
    g_test_add_func("/scheduler/dra/accounting/demand-least", test_acct_demand_least);
    g_test_add_func("/scheduler/dra/accounting/quota-slices", test_acct_quota_slices);
    g_test_add_func("/scheduler/dra/accounting/allocated", test_acct_allocated);
    g_test_add_func("/scheduler/dra/accounting/proportion-shares", test_acct_proportion_shares);
    g_test_add_func("/scheduler/dra/accounting/reclaim-slices", test_acct_reclaim_slices);
    g_test_add_func("/scheduler/dra/accounting/not-admitted", test_acct_not_admitted);
    int rc = g_test_run();
    g_clear_pointer(&bodies, g_ptr_array_unref);
    return rc;
}
