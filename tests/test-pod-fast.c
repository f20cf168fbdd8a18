/*
 * kb_pod_decode_bytes / kb_pod_list_decode_bytes against the json-c path (json-c parse +
 * kb_pod_decode): the same record field by field for every pod fixture, thousands of generated
 * pods and the bench's pods; the same error code and message for malformed pods and crossed
 * limits; lists; and the documented cases where the byte decoder is stricter.
 */
#include <json-c/json.h>
#include <malloc.h>
#include <string.h>

#include "bench/lib/gen-pods.h"
#include "kube/kb-error.h"
#include "kube/kb-objects.h"

static const char *srcdir(void)
{
    const char *d = g_getenv("KB_SRCDIR");
    return d != NULL ? d : ".";
}

/* Decode @text both ways; both must succeed with equal records, or fail alike. Returns TRUE when
 * they succeeded. */
static gboolean check_same(const char *text, gsize len)
{
    g_autoptr(GError) slow_error = NULL, fast_error = NULL;
    json_tokener *tok = json_tokener_new_ex(128);
    json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    g_assert_nonnull(obj);
    json_tokener_free(tok);
    g_autoptr(KbPod) slow = kb_pod_decode(obj, FALSE, &slow_error);
    json_object_put(obj);
    g_autoptr(KbPod) fast = kb_pod_decode_bytes(text, len, &fast_error);
    if (slow == NULL || fast == NULL) {
        if (slow != NULL || fast != NULL)
            g_error("%.300s\njson-c path: %s\nfast path: %s", text,
                    slow_error != NULL ? slow_error->message : "ok",
                    fast_error != NULL ? fast_error->message : "ok");
        g_assert_cmpint(fast_error->code, ==, slow_error->code);
        g_assert_cmpstr(fast_error->message, ==, slow_error->message);
        return FALSE;
    }
    g_autofree char *why = NULL;
    if (!kb_pod_equal(slow, fast, &why))
        g_error("%.2000s\ndiffers: %s", text, why);
    g_assert_null(fast->meta.raw);
    return TRUE;
}

/* ---- same records --------------------------------------------------------------------------- */

static void test_fixtures(void)
{
    g_autofree char *dir = g_build_filename(srcdir(), "tests", "data", "objects", NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    guint n = 0;
    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d)) != NULL) {
        if (!g_str_has_prefix(name, "pod-"))
            continue;
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_autofree char *text = NULL;
        gsize len;
        g_assert_true(g_file_get_contents(path, &text, &len, NULL));
        if (!check_same(text, len))
            g_error("%s: does not decode", name);
        n++;
    }
    g_assert_cmpuint(n, >=, 4);
}

static void test_generated(void)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(20261122);
    guint ok = 0;
    for (guint i = 0; i < 3000; i++) {
        g_autoptr(GString) s = g_string_new(NULL);
        kb_gen_pod_append_varied(s, rand);
        ok += check_same(s->str, s->len);
    }
    /* The generator makes valid pods: all of them decode. */
    g_assert_cmpuint(ok, ==, 3000);
}

static void test_bench_pods(void)
{
    for (guint i = 0; i < 2000; i += 7) {
        g_autoptr(GString) s = g_string_new(NULL);
        kb_gen_pod_append(s, i);
        g_assert_true(check_same(s->str, s->len));
    }
}

/* Fields the generator does not vary: the decoded values themselves. */
static void test_values(void)
{
    const char *text =
        "{\"spec\":{\"overhead\":{\"cpu\":\"250m\"},\"initContainers\":[{\"restartPolicy\":"
        "\"Always\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}},{\"resources\":{\"limits\":{"
        "\"cpu\":\"3\",\"memory\":\"1Gi\"},\"requests\":{\"memory\":\"0\"}}}],\"containers\":[{"
        "\"resources\":{\"limits\":{\"nvidia.com/gpu\":2}}}],\"schedulerName\":\"\",\"priority\":"
        "-7},\"metadata\":{\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"g\\u00e9\"},"
        "\"namespace\":\"d\",\"name\":\"p\"}}";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode_bytes(text, strlen(text), &error);
    g_assert_no_error(error);
    /* Init peak: sidecar 1 + plain 3 = 4 cpu; app: 0 + sidecar 1; overhead 250m. */
    g_assert_cmpint(pod->requests.v[KB_RES_CPU], ==, 4250);
    /* memory "0" requested: the limit does not default it. */
    g_assert_cmpint(pod->requests.v[KB_RES_MEMORY], ==, 0);
    g_assert_cmpint(pod->requests.v[KB_RES_GPU], ==, 2000);
    g_assert_cmpint(pod->requests.v[KB_RES_PODS], ==, 1);
    g_assert_cmpstr(pod->scheduler_name, ==, "default-scheduler");
    g_assert_cmpstr(pod->group_name, ==, "g\xc3\xa9");
    g_assert_true(pod->has_priority);
    g_assert_cmpint(pod->priority, ==, -7);
    g_assert_true(check_same(text, strlen(text)));
}

/* Records kept for a pod's life take no room they do not use: empty labels, annotations and node
 * selectors are one shared table (for both decoders), the arrays hold what was decoded. */
static void test_compact(void)
{
    const char *bare =
            "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\"},\"spec\":{\"containers\":"
            "[{\"name\":\"c\"}],\"tolerations\":[{\"key\":\"k\",\"operator\":"
            "\"Exists\"}]},\"status\":{\"containerStatuses\":[{\"name\":\"c\","
            "\"ready\":true,\"state\":{\"running\":{}}}]}}";
    const char *labelled = "{\"metadata\":{\"name\":\"b\",\"namespace\":\"d\",\"labels\":{\"x\":"
                           "\"1\"},\"annotations\":{\"y\":\"2\"}},\"spec\":{\"nodeSelector\":{"
                           "\"z\":\"3\"},\"containers\":[{\"name\":\"c\"}]}}";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) a = kb_pod_decode_bytes(bare, strlen(bare), &error);
    g_assert_no_error(error);
    g_autoptr(KbPod) b = kb_pod_decode_bytes(labelled, strlen(labelled), &error);
    g_assert_no_error(error);
    json_object *obj = json_tokener_parse(bare);
    g_autoptr(KbPod) a2 = kb_pod_decode(obj, FALSE, &error);
    g_assert_no_error(error);
    json_object_put(obj);

    g_assert_true(a->meta.labels == a2->meta.labels);
    g_assert_true(a->meta.annotations == a2->meta.annotations);
    g_assert_true(a->node_selector == a2->node_selector);
    g_assert_true(a->meta.labels != b->meta.labels);
    g_assert_true(a->meta.annotations != b->meta.annotations);
    g_assert_true(a->node_selector != b->node_selector);
    g_assert_cmpstr(g_hash_table_lookup(b->meta.labels, "x"), ==, "1");
    g_assert_cmpstr(g_hash_table_lookup(b->node_selector, "z"), ==, "3");
    g_assert_cmpuint(g_hash_table_size(a->meta.labels), ==, 0);
    g_assert_cmpuint(g_hash_table_size(a->node_selector), ==, 0);
    g_clear_pointer(&b, kb_object_unref); /* its own tables go, the shared ones stay */
    g_assert_cmpuint(g_hash_table_size(a->meta.annotations), ==, 0);

    g_assert_cmpuint(a->n_container_statuses, ==, 1);
    g_assert_cmpuint(malloc_usable_size(a->container_statuses), <, 2 * sizeof(KbContainerStatus));
    g_assert_cmpuint(a->n_tolerations, ==, 1);
    g_assert_cmpuint(malloc_usable_size(a->tolerations), <, 2 * sizeof(KbToleration));
    g_assert_true(check_same(bare, strlen(bare)));
    g_assert_true(check_same(labelled, strlen(labelled)));
}

/* activeDeadlineSeconds (an estimate for reserve): kept when positive, else 0; the same from
 * both decoders; not an integer is the same error from both, naming it. */
static void test_deadline(void)
{
    static const struct {
        const char *value;
        gint64 want;
    } rows[] = {{"3600", 3600}, {"0", 0}, {"-5", 0}, {"9223372036854775807", G_MAXINT64}};
    for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
        g_autofree char *text = g_strdup_printf(
                "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{"
                "\"containers\":[],\"activeDeadlineSeconds\":%s}}",
                rows[i].value);
        g_autoptr(GError) error = NULL;
        g_autoptr(KbPod) pod = kb_pod_decode_bytes(text, strlen(text), &error);
        g_assert_no_error(error);
        g_assert_cmpint(pod->active_deadline_seconds, ==, rows[i].want);
        g_assert_true(check_same(text, strlen(text)));
    }
    const char *bad = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{"
                      "\"containers\":[],\"activeDeadlineSeconds\":\"1h\"}}";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode_bytes(bad, strlen(bad), &error);
    g_assert_null(pod);
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, "activeDeadlineSeconds"));
    g_assert_false(check_same(bad, strlen(bad)));
}

/* Claims (persistentVolumeClaim and ephemeral volumes, others dropped) and scheduling gates,
 * the same from both decoders. */
static void test_claims_and_gates(void)
{
    const char *text =
            "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{\"containers\":[],"
            "\"volumes\":[{\"name\":\"cfg\",\"configMap\":{\"name\":\"c\"}},{\"name\":\"data\","
            "\"persistentVolumeClaim\":{\"claimName\":\"ckpt\",\"readOnly\":true}},{\"name\":"
            "\"scratch\",\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{}}}}],"
            "\"schedulingGates\":[{\"name\":\"kueue.x-k8s.io/admission\"},{\"name\":\"b\"}]}}";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode_bytes(text, strlen(text), &error);
    g_assert_no_error(error);
    g_assert_cmpuint(pod->n_claims, ==, 2);
    g_assert_cmpstr(pod->claims[0].volume, ==, "data");
    g_assert_cmpstr(pod->claims[0].claim, ==, "ckpt");
    g_assert_cmpstr(pod->claims[1].volume, ==, "scratch");
    g_assert_null(pod->claims[1].claim);
    g_assert_cmpuint(pod->n_scheduling_gates, ==, 2);
    g_assert_cmpstr(pod->scheduling_gate, ==, "kueue.x-k8s.io/admission");
    g_assert_true(check_same(text, strlen(text)));
}

/* DRA: spec.resourceClaims and status.resourceClaimStatuses; a template's entry resolves to the
 * claim the status names, a claim that is not created yet to NULL. */
static void test_resource_claims(void)
{
    const char *text =
            "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{\"containers\":[],"
            "\"resourceClaims\":[{\"name\":\"gpus\",\"resourceClaimTemplateName\":\"two-gpus\"},"
            "{\"name\":\"shared\",\"resourceClaimName\":\"team-gpu\"},{\"name\":\"later\","
            "\"resourceClaimTemplateName\":\"t\"}]},\"status\":{\"resourceClaimStatuses\":["
            "{\"name\":\"gpus\",\"resourceClaimName\":\"p-gpus-x7k2p\"}]}}";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode_bytes(text, strlen(text), &error);
    g_assert_no_error(error);
    g_assert_cmpuint(pod->n_resource_claims, ==, 3);
    g_assert_cmpstr(pod->resource_claims[0].name, ==, "gpus");
    g_assert_cmpstr(pod->resource_claims[0].template_name, ==, "two-gpus");
    g_assert_null(pod->resource_claims[0].claim_name);
    g_assert_cmpstr(kb_pod_resource_claim_name(pod, 0), ==, "p-gpus-x7k2p");
    g_assert_cmpstr(kb_pod_resource_claim_name(pod, 1), ==, "team-gpu");
    g_assert_null(kb_pod_resource_claim_name(pod, 2));
    g_assert_true(check_same(text, strlen(text)));
}

/* spec.schedulingGroup names the gang (before the annotation); pod-level spec.resources
 * requests replace the containers' sum for cpu and memory, limits count where nothing asks. */
static void test_native_group_and_pod_resources(void)
{
    const char *text =
            "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\",\"annotations\":{"
            "\"scheduling.k8s.io/group-name\":\"old\"}},\"spec\":{\"schedulingGroup\":{"
            "\"podGroupName\":\"train\"},\"resources\":{\"requests\":{\"cpu\":\"4\"},"
            "\"limits\":{\"memory\":\"8Gi\",\"nvidia.com/gpu\":\"2\"}},\"containers\":[{"
            "\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"1\"}}},{"
            "\"resources\":{\"requests\":{\"cpu\":\"500m\"}}}],\"overhead\":{\"cpu\":\"100m\"}}}";
    g_autoptr(GError) error = NULL;
    g_autoptr(KbPod) pod = kb_pod_decode_bytes(text, strlen(text), &error);
    g_assert_no_error(error);
    g_assert_cmpstr(pod->scheduling_group, ==, "train");
    g_assert_cmpstr(pod->group_name, ==, "train");
    g_assert_cmpint(pod->requests.v[KB_RES_CPU], ==, 4100);
    g_assert_cmpint(pod->requests.v[KB_RES_MEMORY], ==, 8LL << 30);
    /* a pod-level gpu limit is not a pod-level resource: the containers' 1 stands */
    g_assert_cmpint(pod->requests.v[KB_RES_GPU], ==, 1000);
    g_assert_true(check_same(text, strlen(text)));
    /* an empty name is no group: the annotation decides */
    const char *empty = "{\"metadata\":{\"name\":\"p\",\"annotations\":{"
                        "\"scheduling.k8s.io/group-name\":\"old\"}},\"spec\":{"
                        "\"schedulingGroup\":{\"podGroupName\":\"\"},\"resources\":{"
                        "\"limits\":{\"cpu\":\"2\"}},\"containers\":[{\"resources\":{"
                        "\"requests\":{\"cpu\":\"1\"}}}]}}";
    g_autoptr(KbPod) p2 = kb_pod_decode_bytes(empty, strlen(empty), &error);
    g_assert_no_error(error);
    g_assert_null(p2->scheduling_group);
    g_assert_cmpstr(p2->group_name, ==, "old");
    /* a container asks for cpu: the pod-level limit does not replace it */
    g_assert_cmpint(p2->requests.v[KB_RES_CPU], ==, 1000);
    g_assert_true(check_same(empty, strlen(empty)));
    /* the name's limit: 253 bytes decode, 254 fail alike */
    for (int n = KB_MAX_NAME_LEN; n <= KB_MAX_NAME_LEN + 1; n++) {
        g_autofree char *name = g_strnfill(n, 'a');
        g_autofree char *t = g_strdup_printf("{\"metadata\":{\"name\":\"p\"},\"spec\":{"
                                             "\"schedulingGroup\":{\"podGroupName\":\"%s\"}}}",
                                             name);
        g_assert_true(check_same(t, strlen(t)) == (n == KB_MAX_NAME_LEN));
        g_autoptr(KbPod) p3 = kb_pod_decode_bytes(t, strlen(t), &error);
        if (n > KB_MAX_NAME_LEN) {
            g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
            g_clear_error(&error);
        }
    }
}

/* A pod resized in place counts what the node holds: max(spec, allocatedResources,
 * resources.requests) per app container (by name), or only the status when the resize is
 * infeasible; both decoders alike, whatever the order of spec and status. */
static void test_resized_in_place(void)
{
    static const char *const spec =
            "\"spec\":{\"containers\":[{\"name\":\"main\",\"resources\":{\"requests\":{"
            "\"cpu\":\"2\",\"memory\":\"4Gi\",\"nvidia.com/gpu\":1}}},{\"name\":\"side\","
            "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}";
    static const struct {
        const char *status;
        gint64 cpu, memory, gpu;
    } cases[] = {
            /* no status: the spec */
            {"{}", 3000, 4LL << 30, 1},
            /* resized down, the node still holds the old 6 cpus: the larger counts */
            {"{\"containerStatuses\":[{\"name\":\"main\",\"allocatedResources\":{\"cpu\":\"6\"},"
             "\"resources\":{\"requests\":{\"cpu\":\"6\",\"memory\":\"2Gi\"}}}]}",
             7000, 4LL << 30, 1},
            /* resized up, not yet granted: the spec asks more than the status */
            {"{\"containerStatuses\":[{\"name\":\"main\",\"allocatedResources\":{\"cpu\":\"1\"}}]}",
             3000, 4LL << 30, 1},
            /* infeasible (1.33+ condition): the node holds what the status says; the gpu the
             * status does not name stays */
            {"{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":"
             "\"PodResizePending\",\"status\":\"True\",\"reason\":\"Infeasible\"}],"
             "\"containerStatuses\":[{\"name\":\"main\",\"allocatedResources\":{\"cpu\":\"1\","
             "\"memory\":\"1Gi\"}}]}",
             2000, 1LL << 30, 1},
            /* infeasible (before 1.33: status.resize) */
            {"{\"resize\":\"Infeasible\",\"containerStatuses\":[{\"name\":\"main\","
             "\"resources\":{\"requests\":{\"cpu\":\"500m\"}}}]}",
             1500, 4LL << 30, 1},
            /* a status of another container changes nothing of main */
            {"{\"containerStatuses\":[{\"name\":\"side\",\"allocatedResources\":{\"cpu\":\"3\"}}]}",
             5000, 4LL << 30, 1},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        for (int status_first = 0; status_first < 2; status_first++) {
            g_autofree char *text =
                    status_first ? g_strdup_printf("{\"status\":%s,\"metadata\":{\"name\":"
                                                   "\"p\",\"namespace\":\"d\"},%s}",
                                                   cases[i].status, spec)
                                 : g_strdup_printf("{\"metadata\":{\"name\":\"p\",\"namespace\":"
                                                   "\"d\"},%s,\"status\":%s}",
                                                   spec, cases[i].status);
            g_autoptr(GError) error = NULL;
            g_autoptr(KbPod) pod = kb_pod_decode_bytes(text, strlen(text), &error);
            g_assert_no_error(error);
            if (pod->requests.v[KB_RES_CPU] != cases[i].cpu ||
                pod->requests.v[KB_RES_MEMORY] != cases[i].memory ||
                pod->requests.v[KB_RES_GPU] != cases[i].gpu * KB_GPU_MILLI)
                g_error("case %u: cpu %" G_GINT64_FORMAT " memory %" G_GINT64_FORMAT
                        " gpu %" G_GINT64_FORMAT,
                        i, pod->requests.v[KB_RES_CPU], pod->requests.v[KB_RES_MEMORY],
                        pod->requests.v[KB_RES_GPU]);
            g_assert_true(check_same(text, strlen(text)));
        }
    }
}

/* The condition kube-batchd sets on the pods of a gang it evicts whole (True only), read alike. */
static void test_gang_evicted(void)
{
    static const struct {
        const char *conditions;
        gboolean evicted;
    } cases[] = {
            {"[{\"type\":\"" KB_GANG_EVICTED_CONDITION "\",\"status\":\"True\",\"reason\":"
             "\"GangIncomplete\"},{\"type\":\"Ready\",\"status\":\"False\"}]",
             TRUE},
            {"[{\"type\":\"" KB_GANG_EVICTED_CONDITION "\",\"status\":\"False\"}]", FALSE},
            {"[{\"type\":\"DisruptionTarget\",\"status\":\"True\",\"reason\":"
             "\"GangIncomplete\"}]",
             FALSE},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strdup_printf(
                "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{},\"status\":{"
                "\"phase\":\"Running\",\"conditions\":%s}}",
                cases[i].conditions);
        g_autoptr(GError) error = NULL;
        g_autoptr(KbPod) pod = kb_pod_decode_bytes(text, strlen(text), &error);
        g_assert_no_error(error);
        g_assert_cmpint(pod->gang_evicted, ==, cases[i].evicted);
        g_assert_true(check_same(text, strlen(text)));
    }
}

/* ---- same errors ---------------------------------------------------------------------------- */

#define POD_META "\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"}"
#define AFF                                                                                        \
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"         \
    "\"nodeSelectorTerms\":"

/* The pod inputs of tests/test-objects.c's malformed table, and a few more. */
static const char *const bad_pods[] = {
        "[1,2]",
        "{\"spec\":{}}",
        "{\"metadata\":{\"namespace\":\"default\"},\"spec\":{}}",
        "{\"metadata\":{\"name\":5},\"spec\":{}}",
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\",\"labels\":{\"app\":1}},\"spec\":{"
        "}}",
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\",\"creationTimestamp\":\"yesterday\"},"
        "\"spec\":{}}",
        "{\"metadata\":{\"name\":\"p\",\"generation\":-1},\"spec\":{}}",
        "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\",\"ownerReferences\":[1]},\"spec\":"
        "{}}",
        "{" POD_META "}",
        "{" POD_META ",\"spec\":{\"containers\":{}}}",
        "{" POD_META ",\"spec\":{\"containers\":[\"x\"]}}",
        "{" POD_META ",\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"nvidia.com/gpu\":"
        "\"12Qi\"}}}]}}",
        "{" POD_META ",\"spec\":{\"containers\":[{},{\"resources\":{\"limits\":{\"cpu\":true}}}]}}",
        "{" POD_META
        ",\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"-1\"}}}]}}",
        "{" POD_META
        ",\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"1 Gi\"}}}]}}",
        "{" POD_META ",\"spec\":{\"containers\":[{\"resources\":[]}]}}",
        "{" POD_META ",\"spec\":{\"initContainers\":[{\"resources\":{\"requests\":{\"memory\":"
        "\"1.2.3\"}}}]}}",
        "{" POD_META ",\"spec\":{\"initContainers\":[{\"restartPolicy\":1}]}}",
        "{" POD_META ",\"spec\":{\"overhead\":{\"cpu\":\"lots\"}}}",
        "{" POD_META ",\"spec\":{\"priority\":\"high\"}}",
        "{" POD_META ",\"spec\":{\"priority\":3000000000}}",
        "{" POD_META ",\"spec\":{\"priority\":1.5}}",
        "{" POD_META ",\"spec\":{\"priority\":99999999999999999999}}",
        "{" POD_META ",\"spec\":{\"schedulerName\":[]}}",
        "{" POD_META ",\"spec\":{\"nodeSelector\":{\"disk\":1}}}",
        "{" POD_META ",\"spec\":{\"tolerations\":[{\"key\":\"k\",\"operator\":\"Maybe\"}]}}",
        "{" POD_META ",\"spec\":{\"tolerations\":[{},{\"key\":\"k\",\"effect\":\"NoWay\"}]}}",
        "{" POD_META ",\"spec\":{\"affinity\":{\"nodeAffinity\":7}}}",
        "{" POD_META ",\"spec\":{" AFF "[{\"matchExpressions\":[{\"key\":\"k\",\"operator\":"
        "\"Like\"}]}]}}}}}",
        "{" POD_META ",\"spec\":{" AFF "[{},{\"matchExpressions\":[{\"key\":\"k\",\"operator\":"
        "\"In\",\"values\":[\"a\",3]}]}]}}}}}",
        "{" POD_META ",\"spec\":{" AFF "[{\"matchFields\":[{\"operator\":\"In\",\"values\":"
        "[\"n\"]}]}]}}}}}",
        "{" POD_META ",\"spec\":{" AFF "[null]}}}}}",
        "{" POD_META ",\"spec\":{" AFF "[{\"matchFields\":[{\"key\":\"metadata.labels\","
        "\"operator\":\"In\",\"values\":[\"n\"]}]}]}}}}}",
        "{" POD_META ",\"spec\":{" AFF "[{},{\"matchExpressions\":[],\"matchFields\":[{\"key\":"
        "\"metadata.name\",\"operator\":\"In\",\"values\":[\"a\"]},{\"key\":\"metadata.name\","
        "\"operator\":\"Exists\"}]}]}}}}}",
        "{" POD_META ",\"spec\":{" AFF "[{\"matchFields\":[{\"values\":[\"a\",\"b\"],\"key\":"
        "\"metadata.name\",\"operator\":\"NotIn\"}]}]}}}}}",
        "{" POD_META ",\"spec\":{" AFF "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
        "\"In\"}]}]}}}}}",
        "{" POD_META ",\"spec\":{" AFF "[{\"matchExpressions\":[{\"values\":{},\"key\":\"k\","
        "\"operator\":\"In\"}]}]}}}}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"state\":{"
        "\"terminated\":{\"exitCode\":\"137\"}}}]}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"state\":{"
        "\"waiting\":{\"reason\":5}}}]}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"phase\":2}}",
        "{" POD_META ",\"spec\":{},\"status\":[]}",
        "{" POD_META ",\"spec\":{},\"status\":{\"containerStatuses\":[{\"name\":\"c\","
        "\"allocatedResources\":{\"cpu\":\"lots\"}}]}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"containerStatuses\":[{\"name\":\"c\","
        "\"allocatedResources\":[]}]}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"containerStatuses\":[{\"name\":\"c\","
        "\"resources\":{\"requests\":{\"memory\":true}}}]}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"containerStatuses\":[{\"name\":\"c\","
        "\"resources\":5}]}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"resize\":7}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"conditions\":{}}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"conditions\":[{\"type\":\"Ready\"},3]}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"reason\":"
        "[]}]}}",
        "{" POD_META ",\"spec\":{\"containers\":[{\"name\":5}]}}",
        "{" POD_META ",\"spec\":{\"schedulingGroup\":\"pg\"}}",
        "{" POD_META ",\"spec\":{\"schedulingGroup\":{\"podGroupName\":7}}}",
        "{" POD_META ",\"spec\":{\"resources\":[]}}",
        "{" POD_META ",\"spec\":{\"resources\":{\"requests\":{\"cpu\":\"much\"}}}}",
        "{" POD_META ",\"spec\":{\"resources\":{\"limits\":{\"memory\":true}}}}",
        "{" POD_META ",\"spec\":{\"resourceClaims\":{}}}",
        "{" POD_META ",\"spec\":{\"resourceClaims\":[{\"resourceClaimName\":\"c\"}]}}",
        "{" POD_META ",\"spec\":{\"resourceClaims\":[{\"name\":\"g\"}]}}",
        "{" POD_META ",\"spec\":{\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"c\","
        "\"resourceClaimTemplateName\":\"t\"}]}}",
        "{" POD_META ",\"spec\":{\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":7}]}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"resourceClaimStatuses\":[{\"name\":\"g\","
        "\"resourceClaimName\":[]}]}}",
        "{" POD_META ",\"spec\":{},\"status\":{\"resourceClaimStatuses\":[{\"resourceClaimName\":"
        "\"c\"}]}}",
        /* spec before metadata: the message still names the pod */
        "{\"spec\":{\"priority\":\"x\"}," POD_META "}",
        "{\"spec\":{},\"metadata\":{\"labels\":{\"a\":[]},\"name\":\"p\",\"namespace\":\"n\"}}",
};

static void test_bad(gconstpointer data)
{
    const char *text = data;
    g_assert_false(check_same(text, strlen(text)));
}

/* A bad quantity of the bench's pod at the end of a long document. */
static void test_bad_long_value(void)
{
    g_autoptr(GString) s = g_string_new("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"priority\":\"");
    for (int i = 0; i < 10000; i++)
        g_string_append_c(s, 'x');
    g_string_append(s, "\"}}");
    g_assert_false(check_same(s->str, s->len));
}

/* ---- limits: at the limit both decode, one over both fail alike ----------------------------- */

typedef struct {
    const char *name;
    const char *before, *item, *after; /* the text is before + n items (comma-separated) + after */
    int limit;
    int code; /* KbErrorCode */
} LimitCase;

#define P "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\""

static const LimitCase limit_cases[] = {
        {"owner-references", P ",\"ownerReferences\":[", "{\"kind\":\"Job\",\"name\":\"j\"}",
         "]},\"spec\":{}}", 64, KB_ERROR_LIMIT},
        {"containers", P "},\"spec\":{\"containers\":[",
         "{\"resources\":{\"requests\":{\"cpu\":\"1m\"}}}", "]}}", 64, KB_ERROR_LIMIT},
        {"init-containers", P "},\"spec\":{\"initContainers\":[", "{\"name\":\"i\"}", "]}}", 64,
         KB_ERROR_LIMIT},
        {"tolerations", P "},\"spec\":{\"tolerations\":[", "{\"operator\":\"Exists\"}", "]}}", 64,
         KB_ERROR_LIMIT},
        {"affinity-terms", P "},\"spec\":{" AFF "[",
         "{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}", "]}}}}}", 64,
         KB_ERROR_LIMIT},
        {"affinity-expressions", P "},\"spec\":{" AFF "[{\"matchExpressions\":[",
         "{\"key\":\"k\",\"operator\":\"Exists\"}", "]}]}}}}}", 64, KB_ERROR_LIMIT},
        {"affinity-values",
         P "},\"spec\":{" AFF "[{\"matchExpressions\":[{\"key\":\"k\","
           "\"operator\":\"In\",\"values\":[",
         "\"v\"", "]}]}]}}}}}", 64, KB_ERROR_LIMIT},
        {"container-statuses", P "},\"spec\":{},\"status\":{\"containerStatuses\":[",
         "{\"name\":\"c\"}", "]}}", 64, KB_ERROR_LIMIT},
        {"resource-claims", P "},\"spec\":{\"resourceClaims\":[",
         "{\"name\":\"g\",\"resourceClaimTemplateName\":\"t\"}", "]}}", 32, KB_ERROR_LIMIT},
        {"resource-claim-statuses", P "},\"spec\":{},\"status\":{\"resourceClaimStatuses\":[",
         "{\"name\":\"g\",\"resourceClaimName\":\"c\"}", "]}}", 32, KB_ERROR_LIMIT},
        {"conditions", P "},\"spec\":{},\"status\":{\"conditions\":[",
         "{\"type\":\"Ready\",\"status\":\"True\"}", "]}}", 64, KB_ERROR_LIMIT},
};

static char *build(const LimitCase *c, int n, gboolean numbered)
{
    GString *s = g_string_new(c->before);
    for (int i = 0; i < n; i++) {
        if (i > 0)
            g_string_append_c(s, ',');
        if (numbered)
            g_string_append_printf(s, c->item, i);
        else
            g_string_append(s, c->item);
    }
    g_string_append(s, c->after);
    return g_string_free(s, FALSE);
}

static void test_limit(gconstpointer data)
{
    const LimitCase *c = data;
    g_autofree char *ok = build(c, c->limit, FALSE);
    g_autofree char *over = build(c, c->limit + 1, FALSE);
    g_assert_true(check_same(ok, strlen(ok)));
    g_assert_false(check_same(over, strlen(over)));
    g_autoptr(GError) error = NULL;
    g_assert_null(kb_pod_decode_bytes(over, strlen(over), &error));
    g_assert_error(error, KB_ERROR, c->code);
}

/* Maps: labels, annotations, nodeSelector and resource maps of 256 and 257 entries; long keys,
 * names and values. */
static void test_limit_maps(void)
{
    static const char *const maps[][2] = {
        {P ",\"labels\":{", "}},\"spec\":{}}"},
        {P ",\"annotations\":{", "}},\"spec\":{}}"},
        {P "},\"spec\":{\"nodeSelector\":{", "}}}"},
        {P "},\"spec\":{\"containers\":[{\"resources\":{\"requests\":{", "}}}]}}"},
    };
    for (gsize m = 0; m < G_N_ELEMENTS(maps); m++) {
        for (int n = 256; n <= 257; n++) {
            g_autoptr(GString) s = g_string_new(maps[m][0]);
            for (int i = 0; i < n; i++)
                g_string_append_printf(s, "%s\"example.com/key-%d\":\"0\"", i > 0 ? "," : "", i);
            g_string_append(s, maps[m][1]);
            g_assert_cmpint(check_same(s->str, s->len), ==, n == 256);
        }
    }
    static const struct {
        const char *fmt; /* %s: a run of n 'a's */
        int limit;
    } lengths[] = {
        {P "},\"spec\":{},\"x\":0,\"metadata\":{\"name\":\"%s\"}}", 253},
        {"{\"metadata\":{\"name\":\"p\",\"namespace\":\"%s\"},\"spec\":{}}", 253},
        {P ",\"labels\":{\"%s\":\"v\"}},\"spec\":{}}", 317},
        {P ",\"annotations\":{\"k\":\"%s\"}},\"spec\":{}}", 65536},
        {P "},\"spec\":{\"nodeName\":\"%s\"}}", 253},
        {P "},\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"%s\":\"0\"}}}]}}", 317},
        {P "},\"spec\":{\"tolerations\":[{\"key\":\"%s\"}]}}", 317},
        {P "},\"spec\":{},\"status\":{\"phase\":\"%s\"}}", 253},
        {P ",\"creationTimestamp\":\"%s\"},\"spec\":{}}", 64},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(lengths); i++) {
        /* The duplicate metadata of the first case is refused by the byte decoder only. */
        if (i == 0)
            continue;
        g_autofree char *at = g_strnfill((gsize)lengths[i].limit, 'a');
        g_autofree char *over = g_strnfill((gsize)lengths[i].limit + 1, 'a');
        g_autofree char *ok_text = g_strdup_printf(lengths[i].fmt, at);
        g_autofree char *bad_text = g_strdup_printf(lengths[i].fmt, over);
        /* A 64-letter time is not a time: both fail, alike. */
        check_same(ok_text, strlen(ok_text));
        g_assert_false(check_same(bad_text, strlen(bad_text)));
        g_autoptr(GError) error = NULL;
        g_assert_null(kb_pod_decode_bytes(bad_text, strlen(bad_text), &error));
        g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    }
}

/* ---- lists ---------------------------------------------------------------------------------- */

static void test_list(void)
{
    gsize bytes;
    g_autoptr(GPtrArray) pages = kb_gen_pod_pages(1200, 500, &bytes);
    g_autoptr(GPtrArray) pods = g_ptr_array_new_with_free_func(kb_object_unref);
    for (guint p = 0; p < pages->len; p++) {
        const char *text = pages->pdata[p];
        g_autoptr(GError) error = NULL;
        g_autofree char *rv = NULL, *cont = NULL;
        g_assert_true(kb_pod_list_decode_bytes(text, strlen(text), pods, &rv, &cont, &error));
        g_assert_no_error(error);
        g_assert_cmpstr(rv, ==, "2000000");
        g_autofree char *want = g_strdup_printf("page-%u", p + 1);
        g_assert_cmpstr(cont, ==, want);
    }
    g_assert_cmpuint(pods->len, ==, 1200);
    g_assert_cmpstr(((KbPod *)pods->pdata[1199])->meta.name, ==, "job-74-worker-15");

    /* Empty, null items, absent metadata, out pointers NULL. */
    const char *empty = " {\"kind\":\"PodList\",\"items\":null} ";
    g_assert_true(kb_pod_list_decode_bytes(empty, strlen(empty), pods, NULL, NULL, NULL));
    g_assert_cmpuint(pods->len, ==, 1200);
}

static void test_list_bad(void)
{
    static const struct {
        const char *text;
        int code; /* KbErrorCode */
        const char *message;
    } cases[] = {
        {"{\"items\":[{" POD_META ",\"spec\":{}},{" POD_META ",\"spec\":{\"priority\":\"x\"}}]}",
         KB_ERROR_DECODE, "items[1]: pod default/p: spec.priority: expected an integer, got \"x\""},
        {"{\"items\":{}}", KB_ERROR_DECODE, "items: expected an array, got {}"},
        {"[]", KB_ERROR_DECODE, "list: expected an object, got []"},
        {"{\"items\":[],\"metadata\":{\"continue\":7}}", KB_ERROR_DECODE,
         "metadata.continue: expected a string, got 7"},
        {"{\"items\":[]} x", KB_ERROR_DECODE,
         "JSON: expected the end of the input at byte 13, got 'x'"},
        {"{\"items\":[{" POD_META ",\"spec\":{}},", KB_ERROR_DECODE,
         "items[1]: pod: JSON: expected a value at byte 68, got the end of the input"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GPtrArray) pods = g_ptr_array_new_with_free_func(kb_object_unref);
        g_autoptr(GError) error = NULL;
        char *rv = NULL;
        g_assert_false(kb_pod_list_decode_bytes(cases[i].text, strlen(cases[i].text), pods, &rv,
                                                NULL, &error));
        g_assert_error(error, KB_ERROR, cases[i].code);
        g_assert_cmpstr(error->message, ==, cases[i].message);
        /* Nothing appended, nothing set. */
        g_assert_cmpuint(pods->len, ==, 0);
        g_assert_null(rv);
    }
}

/* ---- strictness: json-c accepts these, the byte decoder refuses them ------------------------ */

static void test_stricter(void)
{
    static const struct {
        const char *text;
        const char *message_part;
    } cases[] = {
        {"{" POD_META ",\"spec\":{\"nodeName\":\"a\",\"nodeName\":\"b\"}}",
         "pod default/p: spec.nodeName: duplicate member"},
        {"{" POD_META ",\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\","
         "\"cpu\":\"2\"}}}]}}",
         "requests[\"cpu\"]: duplicate member"},
        {"{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"1\",\"a\":\"2\"}},\"spec\":{}}",
         "metadata.labels[\"a\"]: duplicate member"},
        {"{" POD_META ",\"spec\":{\"nodeName\":\"\xff\"}}", "invalid UTF-8"},
        {"{" POD_META ",\"spec\":{\"nodeName\":\"a\\u0000b\"}}", "invalid escape"},
        {"{" POD_META ",\"spec\":{\"nodeName\":\"\\ud800\"}}", "invalid escape"},
        {"{" POD_META ",\"spec\":{},}", "expected a member name after ','"},
        {"{" POD_META ",\"spec\":{}} {}", "expected the end of the input"},
        {"{" POD_META ",\"spec\":{\"x\":[01]}}", "expected ',' or ']'"},
        {"{" POD_META ",\"spec\":{\"x\":NaN}}", "expected a value"},
        {"{" POD_META ",\"spec\":{\"x\":'a'}}", "expected a value"},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        json_object *obj = json_tokener_parse(cases[i].text);
        g_autoptr(GError) error = NULL;
        g_assert_null(kb_pod_decode_bytes(cases[i].text, strlen(cases[i].text), &error));
        g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
        if (strstr(error->message, cases[i].message_part) == NULL)
            g_error("\"%s\" does not contain \"%s\"", error->message, cases[i].message_part);
        json_object_put(obj);
    }
}

/* Nesting beyond kb-json's depth limit in a skipped member. */
static void test_depth(void)
{
    for (int depth = 120; depth <= 130; depth += 10) {
        g_autoptr(GString) s = g_string_new("{" POD_META ",\"spec\":{\"x\":");
        for (int i = 0; i < depth; i++)
            g_string_append_c(s, '[');
        for (int i = 0; i < depth; i++)
            g_string_append_c(s, ']');
        g_string_append(s, "}}");
        g_autoptr(GError) error = NULL;
        g_autoptr(KbPod) pod = kb_pod_decode_bytes(s->str, s->len, &error);
        if (depth < 126) {
            g_assert_no_error(error);
            continue;
        }
        g_assert_null(pod);
        g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    g_test_add_func("/kube/pod-fast/same/fixtures", test_fixtures);
    g_test_add_func("/kube/pod-fast/same/generated", test_generated);
    g_test_add_func("/kube/pod-fast/same/bench-pods", test_bench_pods);
    g_test_add_func("/kube/pod-fast/same/values", test_values);
    g_test_add_func("/kube/pod-fast/compact-records", test_compact);
    g_test_add_func("/kube/pod-fast/same/claims-and-gates", test_claims_and_gates);
    g_test_add_func("/kube/pod-fast/same/resource-claims", test_resource_claims);
    g_test_add_func("/kube/pod-fast/same/active-deadline", test_deadline);
    g_test_add_func("/kube/pod-fast/same/resized-in-place", test_resized_in_place);
    g_test_add_func("/kube/pod-fast/same/gang-evicted-condition", test_gang_evicted);
    g_test_add_func("/kube/pod-fast/same/native-group-and-pod-resources",
                    test_native_group_and_pod_resources);
    for (gsize i = 0; i < G_N_ELEMENTS(bad_pods); i++) {
        g_autofree char *p = g_strdup_printf("/kube/pod-fast/malformed/%" G_GSIZE_FORMAT, i);
        g_test_add_data_func(p, bad_pods[i], test_bad);
    }
    g_test_add_func("/kube/pod-fast/malformed/long-value-cut", test_bad_long_value);
    for (gsize i = 0; i < G_N_ELEMENTS(limit_cases); i++) {
        g_autofree char *p = g_strdup_printf("/kube/pod-fast/limit/%s", limit_cases[i].name);
        g_test_add_data_func(p, &limit_cases[i], test_limit);
    }
    g_test_add_func("/kube/pod-fast/limit/maps-and-lengths", test_limit_maps);
    g_test_add_func("/kube/pod-fast/limit/depth", test_depth);
    g_test_add_func("/kube/pod-fast/list/pages", test_list);
    g_test_add_func("/kube/pod-fast/list/errors", test_list_bad);
    g_test_add_func("/kube/pod-fast/stricter-than-json-c", test_stricter);
    return g_test_run();
}
