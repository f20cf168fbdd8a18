/*
 * resource.k8s.io/v1 decoders (kube/kb-dra.c): DeviceClass, ResourceClaim, ResourceClaimTemplate
 * and ResourceSlice as NVIDIA's DRA driver and a scheduler write them; malformed objects and
 * every limit crossed, each naming the object, field and value; the claim status body.
 */
#include <string.h>

#include "kube/kb-dra.h"
#include "kube/kb-error.h"

static json_object *parse(const char *text)
{
    json_object *obj = json_tokener_parse(text);
    g_assert_nonnull(obj);
    return obj;
}

static const char *const GPU_CLASS =
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
        "\"gpu.nvidia.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == "
        "'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'\"}}]}}";

static void test_device_class(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = parse(GPU_CLASS);
    g_autoptr(KbDeviceClass) dc = kb_device_class_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpstr(dc->meta.name, ==, "gpu.nvidia.com");
    g_assert_cmpuint(dc->n_selectors, ==, 1);
    g_assert_nonnull(strstr(dc->selectors[0], "device.attributes['gpu.nvidia.com'].type"));
}

static const char *const CLAIM =
        "{\"metadata\":{\"name\":\"job-w0-gpus-x7k2p\",\"namespace\":\"ml\",\"resourceVersion\":"
        "\"42\",\"uid\":\"c1\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpus\","
        "\"exactly\":"
        "{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2,\"selectors\":[{\"cel\":{"
        "\"expression\":"
        "\"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA "
        "A100'\"}}]}},{\"name\":\"any\","
        "\"firstAvailable\":[{\"name\":\"big\",\"deviceClassName\":\"gpu.nvidia.com\","
        "\"allocationMode\":"
        "\"All\"},{\"name\":\"mig\",\"deviceClassName\":\"mig.nvidia.com\"}]}],\"constraints\":[{"
        "\"requests\":[\"gpus\"],\"matchAttribute\":\"gpu.nvidia.com/nvlinkIsland\"}]}},"
        "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":"
        "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"},{\"request\":\"gpus\",\"driver\":"
        "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-1\"}]},\"nodeSelector\":{"
        "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
        "\"values\":[\"n1\"]}]}]}},\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"job-w0\","
        "\"uid\":\"p0\"}]}}";

static void test_claim(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = parse(CLAIM);
    g_autoptr(KbResourceClaim) c = kb_resource_claim_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpuint(c->spec.n_requests, ==, 2);
    const KbDeviceRequest *r = &c->spec.requests[0];
    g_assert_cmpstr(r->exactly.name, ==, "gpus");
    g_assert_cmpstr(r->exactly.device_class, ==, "gpu.nvidia.com");
    g_assert_cmpint(r->exactly.count, ==, 2);
    g_assert_false(r->exactly.all);
    g_assert_cmpuint(r->exactly.n_selectors, ==, 1);
    r = &c->spec.requests[1];
    g_assert_cmpstr(r->exactly.name, ==, "any");
    g_assert_cmpuint(r->n_first_available, ==, 2);
    g_assert_true(r->first_available[0].all);
    g_assert_cmpstr(r->first_available[1].name, ==, "mig");
    g_assert_cmpint(r->first_available[1].count, ==, 1); /* the default */
    g_assert_cmpuint(c->spec.n_constraints, ==, 1);
    g_assert_cmpstr(c->spec.constraints[0].match_attribute, ==, "gpu.nvidia.com/nvlinkIsland");
    g_assert_cmpstr(c->spec.constraints[0].requests[0], ==, "gpus");
    g_assert_true(c->allocated);
    g_assert_cmpuint(c->n_results, ==, 2);
    g_assert_cmpstr(c->results[1].device, ==, "gpu-1");
    g_assert_cmpstr(c->results[1].pool, ==, "n1");
    g_assert_cmpstr(c->node, ==, "n1");
    g_assert_true(kb_resource_claim_reserved_for(c, "p0"));
    g_assert_false(kb_resource_claim_reserved_for(c, "p1"));
}

static void test_claim_template(void)
{
    const char *text =
            "{\"metadata\":{\"name\":\"two-gpus\",\"namespace\":\"ml\"},\"spec\":{\"metadata\":{},"
            "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
            "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}]}}}}";
    g_autoptr(GError) error = NULL;
    json_object *obj = parse(text);
    g_autoptr(KbResourceClaimTemplate) t = kb_resource_claim_template_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpuint(t->spec.n_requests, ==, 1);
    g_assert_cmpint(t->spec.requests[0].exactly.count, ==, 2);
}

static const char *const SLICE =
        "{\"metadata\":{\"name\":\"n1-gpu.nvidia.com-abcde\"},\"spec\":{\"driver\":\"gpu.nvidia."
        "com\","
        "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":3,\"resourceSliceCount\":1},"
        "\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"type\":{\"string\":\"gpu\"},"
        "\"productName\":{\"string\":\"NVIDIA A100-SXM4-40GB\"},\"index\":{\"int\":0},"
        "\"driverVersion\":{\"version\":\"550.54.15\"},\"kube-batchd.io/nvlinkIsland\":{\"int\":1},"
        "\"mig\":{\"bool\":false}},\"capacity\":{\"memory\":{\"value\":\"40Gi\"}}}]}}";

static void test_slice(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = parse(SLICE);
    g_autoptr(KbResourceSlice) s = kb_resource_slice_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpstr(s->driver, ==, "gpu.nvidia.com");
    g_assert_cmpstr(s->node, ==, "n1");
    g_assert_cmpstr(s->pool, ==, "n1");
    g_assert_cmpint(s->pool_generation, ==, 3);
    g_assert_cmpuint(s->n_devices, ==, 1);
    const KbDevice *d = &s->devices[0];
    g_assert_cmpstr(d->name, ==, "gpu-0");
    g_assert_cmpuint(d->n_attributes, ==, 6);
    gboolean seen_island = FALSE, seen_product = FALSE;
    for (guint i = 0; i < d->n_attributes; i++) {
        const KbCelAttribute *a = &d->attributes[i];
        if (strcmp(a->name, "productName") == 0) {
            /* no domain in the slice: the driver's */
            g_assert_cmpstr(a->domain, ==, "gpu.nvidia.com");
            g_assert_cmpint(a->type, ==, KB_CEL_ATTR_STRING);
            g_assert_cmpstr(a->string_value, ==, "NVIDIA A100-SXM4-40GB");
            seen_product = TRUE;
        }
        if (strcmp(a->name, "nvlinkIsland") == 0) {
            g_assert_cmpstr(a->domain, ==, "kube-batchd.io");
            g_assert_cmpint(a->type, ==, KB_CEL_ATTR_INT);
            g_assert_cmpint(a->int_value, ==, 1);
            seen_island = TRUE;
        }
        if (strcmp(a->name, "driverVersion") == 0)
            g_assert_cmpint(a->type, ==, KB_CEL_ATTR_VERSION);
    }
    g_assert_true(seen_island && seen_product);
    g_assert_cmpuint(d->n_capacity, ==, 1);
    g_assert_cmpstr(d->capacity[0].name, ==, "memory");
    g_assert_cmpint(kb_quantity_value(&d->capacity[0].value), ==, G_GINT64_CONSTANT(40) << 30);
}

/* ---- malformed: the message names object, field and value ----------------------------------- */

typedef struct {
    const char *name;
    int which; /* 0 class, 1 claim, 2 template, 3 slice */
    const char *text;
    int code;
    const char *message; /* a part the message must hold */
} BadCase;

#define CM  "{\"metadata\":{\"name\":\"c\",\"namespace\":\"ml\"},"
#define REQ CM "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"exactly\":{"
#define SM  "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"gpu.nvidia.com\",\"devices\":[{"

static const BadCase bad_cases[] = {
        {"class-selector-not-cel", 0,
         "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"selectors\":[{}]}}", KB_ERROR_DECODE,
         "deviceclass x: spec.selectors[0].cel: missing"},
        {"class-expression-type", 0,
         "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":7}}]}}",
         KB_ERROR_DECODE, "deviceclass x: spec.selectors[0].cel.expression"},
        {"count-zero", 1, REQ "\"deviceClassName\":\"g\",\"count\":0}}]}}}", KB_ERROR_DECODE,
         "resourceclaim ml/c: spec.devices.requests[0].exactly.count"},
        {"count-with-all", 1,
         REQ "\"deviceClassName\":\"g\",\"count\":2,\"allocationMode\":\"All\"}}]}}}",
         KB_ERROR_DECODE, "count: not allowed with allocationMode All"},
        {"mode-unknown", 1, REQ "\"deviceClassName\":\"g\",\"allocationMode\":\"Some\"}}]}}}",
         KB_ERROR_DECODE, "allocationMode: unknown mode \"Some\""},
        {"no-class", 1, REQ "\"count\":1}}]}}}", KB_ERROR_DECODE,
         "requests[0].exactly.deviceClassName: missing"},
        {"neither", 1, CM "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\"}]}}}",
         KB_ERROR_DECODE, "requests[0].exactly one of exactly and firstAvailable"},
        {"request-no-name", 1,
         CM "\"spec\":{\"devices\":{\"requests\":[{\"exactly\":{\"deviceClassName\":\"g\"}}]}}}",
         KB_ERROR_DECODE, "requests[0].name: missing"},
        {"constraint-requests-type", 1,
         CM "\"spec\":{\"devices\":{\"constraints\":[{\"requests\":[1]}]}}}", KB_ERROR_DECODE,
         "constraints[0].requests[0]"},
        {"result-no-device", 1,
         CM "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"g\"}]}}}}",
         KB_ERROR_DECODE, "status.allocation.devices.results[0].device: missing"},
        {"reserved-no-uid", 1, CM "\"status\":{\"reservedFor\":[{\"name\":\"p\"}]}}",
         KB_ERROR_DECODE, "status.reservedFor[0].uid: missing"},
        {"template-inner", 2,
         CM "\"spec\":{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"exactly\":{}}]}}}}",
         KB_ERROR_DECODE, "resourceclaimtemplate ml/c: spec.spec.devices.requests[0]"},
        {"slice-no-spec", 3, "{\"metadata\":{\"name\":\"s\"}}", KB_ERROR_DECODE,
         "resourceslice s: spec.missing"},
        {"slice-no-driver", 3, "{\"metadata\":{\"name\":\"s\"},\"spec\":{}}", KB_ERROR_DECODE,
         "spec.driver: missing"},
        {"attribute-two-kinds", 3,
         SM "\"name\":\"d\",\"attributes\":{\"a\":{\"int\":1,\"bool\":true}}}]}}", KB_ERROR_DECODE,
         "devices[0].attributes[\"a\"]: exactly one of"},
        {"attribute-long-string", 3,
         SM "\"name\":\"d\",\"attributes\":{\"a\":{\"string\":\"0123456789012345678901234567890123"
            "4567890123456789012345678901234\"}}}]}}",
         KB_ERROR_LIMIT, "devices[0].attributes[\"a\"]: string"},
        {"capacity-bad", 3, SM "\"name\":\"d\",\"capacity\":{\"memory\":{\"value\":\"40Qi\"}}}]}}",
         KB_ERROR_DECODE, "devices[0].capacity[\"memory\"]: "},
        {"device-no-name", 3, SM "}]}}", KB_ERROR_DECODE, "devices[0].name: missing"},
        {"counter-set-no-name", 3,
         "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"sharedCounters\":[{"
         "\"counters\":{\"m\":{\"value\":\"1\"}}}]}}",
         KB_ERROR_DECODE, "resourceslice s: spec.sharedCounters[0].name: missing"},
        {"counter-value-bad", 3,
         "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"sharedCounters\":[{"
         "\"name\":\"g\",\"counters\":{\"memory\":{\"value\":\"8Qi\"}}}]}}",
         KB_ERROR_DECODE, "spec.sharedCounters[0].counters[\"memory\"].value: "},
        {"counter-set-empty", 3,
         "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"sharedCounters\":[{"
         "\"name\":\"g\",\"counters\":{}}]}}",
         KB_ERROR_DECODE, "spec.sharedCounters[0].counters: 0 entries, wanted 1 to 32"},
        {"consumes-no-set", 3,
         SM "\"name\":\"d\",\"consumesCounters\":[{\"counters\":{\"m\":{"
            "\"value\":\"1\"}}}]}]}}",
         KB_ERROR_DECODE, "devices[0].consumesCounters[0].counterSet: missing"},
        {"valid-values-order", 3,
         SM "\"name\":\"d\",\"capacity\":{\"memory\":{\"value\":\"40Gi\",\"requestPolicy\":{"
            "\"validValues\":[\"20Gi\",\"10Gi\"]}}}}]}}",
         KB_ERROR_DECODE,
         "devices[0].capacity[\"memory\"].requestPolicy.validValues[1]: not in ascending order"},
        {"valid-range-bad", 3,
         SM "\"name\":\"d\",\"capacity\":{\"memory\":{\"value\":\"40Gi\",\"requestPolicy\":{"
            "\"validRange\":{\"min\":\"2Gi\",\"max\":\"1Gi\"}}}}}]}}",
         KB_ERROR_DECODE, "requestPolicy.validRange: min, max and step must be"},
        {"capacity-request-negative", 1,
         REQ "\"deviceClassName\":\"g\",\"capacity\":{\"requests\":{\"memory\":\"-1Gi\"}}}}]}}}",
         KB_ERROR_DECODE,
         "spec.devices.requests[0].exactly.capacity.requests[\"memory\"]: -1Gi is negative"},
        {"share-id-long", 1,
         CM "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"g\","
            "\"driver\":\"d\",\"pool\":\"p\",\"device\":\"x\",\"shareID\":"
            "\"0123456789-0123456789-0123456789-0123\"}]}}}}",
         KB_ERROR_LIMIT, "status.allocation.devices.results[0].shareID"},
        {"consumed-bad", 1,
         CM "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"g\","
            "\"driver\":\"d\",\"pool\":\"p\",\"device\":\"x\",\"consumedCapacity\":{"
            "\"memory\":4}}]}}}}",
         KB_ERROR_DECODE, "results[0].consumedCapacity[\"memory\"]"},
};

static gpointer decode_any(int which, json_object *obj, GError **error)
{
    switch (which) {
    case 0:
        return kb_device_class_decode(obj, FALSE, error);
    case 1:
        return kb_resource_claim_decode(obj, FALSE, error);
    case 2:
        return kb_resource_claim_template_decode(obj, FALSE, error);
    default:
        return kb_resource_slice_decode(obj, FALSE, error);
    }
}

static void test_bad(gconstpointer data)
{
    const BadCase *c = data;
    g_autoptr(GError) error = NULL;
    json_object *obj = parse(c->text);
    gpointer rec = decode_any(c->which, obj, &error);
    json_object_put(obj);
    g_assert_null(rec);
    g_assert_nonnull(error);
    if (strstr(error->message, c->message) == NULL || error->code != c->code)
        g_error("%s: got (%d) \"%s\", want (%d) ...\"%s\"...", c->name, error->code, error->message,
                c->code, c->message);
}

/* ---- limits: at the limit it decodes, one over fails with KB_ERROR_LIMIT -------------------- */

typedef struct {
    const char *name;
    int which;
    const char *before, *item, *after; /* item is a printf format taking the index */
    int limit;
} LimitCase;

static const LimitCase limit_cases[] = {
        {"requests", 1, CM "\"spec\":{\"devices\":{\"requests\":[",
         "{\"name\":\"r%d\",\"exactly\":{\"deviceClassName\":\"g\"}}", "]}}}", KB_DRA_MAX_REQUESTS},
        {"selectors", 1, REQ "\"deviceClassName\":\"g\",\"selectors\":[",
         "{\"cel\":{\"expression\":\"true || %d == 0\"}}", "]}}]}}}", KB_DRA_MAX_SELECTORS},
        {"first-available", 1,
         CM "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"firstAvailable\":[",
         "{\"name\":\"s%d\",\"deviceClassName\":\"g\"}", "]}]}}}", KB_DRA_MAX_SUBREQUESTS},
        {"constraints", 1, CM "\"spec\":{\"devices\":{\"constraints\":[",
         "{\"matchAttribute\":\"a/b%d\"}", "]}}}", KB_DRA_MAX_REQUESTS},
        {"results", 1, CM "\"status\":{\"allocation\":{\"devices\":{\"results\":[",
         "{\"request\":\"g\",\"driver\":\"d\",\"pool\":\"p\",\"device\":\"d%d\"}", "]}}}}",
         KB_DRA_MAX_REQUESTS},
        {"reserved-for", 1, CM "\"status\":{\"reservedFor\":[",
         "{\"resource\":\"pods\",\"name\":\"p%d\",\"uid\":\"u\"}", "]}}", KB_DRA_MAX_RESERVED_FOR},
        {"class-selectors", 0, "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"selectors\":[",
         "{\"cel\":{\"expression\":\"true || %d == 0\"}}", "]}}", KB_DRA_MAX_SELECTORS},
        {"devices", 3, "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"devices\":[",
         "{\"name\":\"gpu-%d\"}", "]}}", KB_DRA_MAX_SLICE_DEVICES},
        {"device-fields", 3, SM "\"name\":\"d\",\"attributes\":{", "\"a%d\":{\"int\":1}", "}}]}}",
         KB_DRA_MAX_DEVICE_FIELDS},
        {"count", 1, REQ "\"deviceClassName\":\"g\",\"count\":", "%d", "}}]}}}", 0},
        {"shared-counters", 3,
         "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"sharedCounters\":[",
         "{\"name\":\"set-%d\",\"counters\":{\"m\":{\"value\":\"1\"}}}", "]}}",
         KB_DRA_MAX_COUNTER_SETS},
        {"counters", 3,
         "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d\",\"sharedCounters\":[{"
         "\"name\":\"g\",\"counters\":{",
         "\"c%d\":{\"value\":\"1\"}", "}}]}}", KB_DRA_MAX_COUNTERS},
        {"consumes-counters", 3, SM "\"name\":\"d\",\"consumesCounters\":[",
         "{\"counterSet\":\"s%d\",\"counters\":{\"m\":{\"value\":\"1\"}}}", "]}]}}",
         KB_DRA_MAX_CONSUMES},
        {"valid-values", 3,
         SM "\"name\":\"d\",\"allowMultipleAllocations\":true,\"capacity\":{\"memory\":{"
            "\"value\":\"100\",\"requestPolicy\":{\"validValues\":[",
         "\"%d\"", "]}}}}]}}", KB_DRA_MAX_VALID_VALUES},
        {"capacity-requests", 1, REQ "\"deviceClassName\":\"g\",\"capacity\":{\"requests\":{",
         "\"c%d\":\"1\"", "}}}}]}}}", KB_DRA_MAX_DEVICE_FIELDS},
        {"consumed-capacity", 1,
         CM "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"g\","
            "\"driver\":\"d\",\"pool\":\"p\",\"device\":\"x\",\"consumedCapacity\":{",
         "\"c%d\":\"1\"", "}}]}}}}", KB_DRA_MAX_DEVICE_FIELDS},
};

static char *build(const LimitCase *c, int n)
{
    GString *s = g_string_new(c->before);
    if (c->limit == 0) {
        /* a scalar limit: the item is the value itself */
        g_string_append_printf(s, c->item, n);
    } else {
        for (int i = 0; i < n; i++) {
            if (i > 0)
                g_string_append_c(s, ',');
            g_string_append_printf(s, c->item, i);
        }
    }
    g_string_append(s, c->after);
    return g_string_free(s, FALSE);
}

static void test_limit(gconstpointer data)
{
    const LimitCase *c = data;
    int limit = c->limit != 0 ? c->limit : KB_DRA_MAX_COUNT;
    g_autofree char *ok = build(c, limit);
    g_autofree char *over = build(c, limit + 1);
    g_autoptr(GError) error = NULL;
    json_object *obj = parse(ok);
    gpointer rec = decode_any(c->which, obj, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    kb_object_unref(rec);
    obj = parse(over);
    g_assert_null(decode_any(c->which, obj, &error));
    json_object_put(obj);
    /* count is a range, not a length: a decode error, as for any out-of-range integer */
    int want = c->limit != 0 ? KB_ERROR_LIMIT : KB_ERROR_DECODE;
    g_assert_error(error, KB_ERROR, want);
}

/* A selector longer than KB_DRA_MAX_EXPRESSION_LEN. */
static void test_limit_expression(void)
{
    for (int extra = 0; extra <= 1; extra++) {
        g_autoptr(GString) s = g_string_new(REQ "\"deviceClassName\":\"g\",\"selectors\":[{\"cel\":"
                                                "{\"expression\":\"");
        for (int i = 0; i < KB_DRA_MAX_EXPRESSION_LEN + extra; i++)
            g_string_append_c(s, ' ');
        g_string_append(s, "\"}}]}}]}}}");
        g_autoptr(GError) error = NULL;
        json_object *obj = parse(s->str);
        g_autoptr(KbResourceClaim) c = kb_resource_claim_decode(obj, FALSE, &error);
        json_object_put(obj);
        if (extra == 0)
            g_assert_no_error(error);
        else
            g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    }
}

/* sharedCounters, consumesCounters, allowMultipleAllocations and requestPolicy as kb-kubelet
 * --dra publishes them, in milli-units. */
static void test_slice_sharing(void)
{
    json_object *obj =
            parse("{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
                  "\"sharedCounters\":[{\"name\":\"gpu-0-counter-set\",\"counters\":{\"memory\":{"
                  "\"value\":\"81152Mi\"},\"multiprocessors\":{\"value\":\"98\"}}}],\"devices\":[{"
                  "\"name\":\"gpu-0-mig-1g10gb-19-0\",\"consumesCounters\":[{\"counterSet\":"
                  "\"gpu-0-counter-set\",\"counters\":{\"memory\":{\"value\":\"9728Mi\"},"
                  "\"multiprocessors\":{\"value\":\"14\"}}}]},{\"name\":\"gpu-1\","
                  "\"allowMultipleAllocations\":true,\"capacity\":{\"memory\":{\"value\":\"80Gi\","
                  "\"requestPolicy\":{\"default\":\"80Gi\",\"validRange\":{\"min\":\"1Gi\","
                  "\"step\":\"1Gi\"}}}}}]}}");
    g_autoptr(GError) error = NULL;
    g_autoptr(KbResourceSlice) s = kb_resource_slice_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpuint(s->n_counter_sets, ==, 1);
    g_assert_cmpstr(s->counter_sets[0].name, ==, "gpu-0-counter-set");
    g_assert_cmpuint(s->counter_sets[0].n_counters, ==, 2);
    g_assert_cmpint(s->counter_sets[0].counters[0].milli, ==,
                    (G_GINT64_CONSTANT(81152) << 20) * 1000);
    g_assert_cmpint(s->counter_sets[0].counters[1].milli, ==, 98000);
    const KbDevice *mig = &s->devices[0], *shared = &s->devices[1];
    g_assert_cmpuint(mig->n_consumes, ==, 1);
    g_assert_cmpstr(mig->consumes[0].name, ==, "gpu-0-counter-set");
    g_assert_cmpint(mig->consumes[0].counters[1].milli, ==, 14000);
    g_assert_false(mig->multiple);
    g_assert_true(shared->multiple);
    g_assert_nonnull(shared->policies);
    g_assert_true(shared->policies[0].has_default && shared->policies[0].has_range);
    g_assert_cmpint(shared->policies[0].min, ==, (G_GINT64_CONSTANT(1) << 30) * 1000);
    g_assert_cmpint(shared->policies[0].step, ==, (G_GINT64_CONSTANT(1) << 30) * 1000);
    g_assert_cmpint(shared->policies[0].max, ==, 0);
}

/* ---- the status a scheduler writes ---------------------------------------------------------- */

static void test_status_body(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = parse(CLAIM);
    g_autoptr(KbResourceClaim) c = kb_resource_claim_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    KbDeviceResult results[] = {{"gpus", "gpu.nvidia.com", "n2", "gpu-3"}};
    json_object *body = kb_resource_claim_status_new(c, results, 1, "n2", "job-w1", "p1");
    g_assert_cmpstr(
            json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN), ==,
            "{\"metadata\":{\"resourceVersion\":\"42\"},\"status\":{\"allocation\":{"
            "\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":\"gpu.nvidia.com\","
            "\"pool\":\"n2\",\"device\":\"gpu-3\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":"
            "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
            "[\"n2\"]}]}]}},\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"job-w0\","
            "\"uid\":\"p0\"},{\"resource\":\"pods\",\"name\":\"job-w1\",\"uid\":\"p1\"}]}}");
    json_object_put(body);
    /* a share of a device allowing multiple allocations: consumedCapacity and shareID */
    KbCapacityAmount am = {"memory", (G_GINT64_CONSTANT(40) << 30) * 1000};
    KbDeviceResult share = {"gpus",
                            "gpu.nvidia.com",
                            "n2",
                            "gpu-3",
                            &am,
                            1,
                            "0b5c3f5e-4b0e-4b9a-9d1c-3b7f6a2e8d10"};
    body = kb_resource_claim_status_new(c, &share, 1, "n2", "job-w1", "p1");
    json_object *alloc =
            json_object_object_get(json_object_object_get(body, "status"), "allocation");
    json_object *r0 = json_object_array_get_idx(
            json_object_object_get(json_object_object_get(alloc, "devices"), "results"), 0);
    g_assert_cmpstr(json_object_to_json_string_ext(r0, JSON_C_TO_STRING_PLAIN), ==,
                    "{\"request\":\"gpus\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"n2\","
                    "\"device\":\"gpu-3\",\"consumedCapacity\":{\"memory\":\"40Gi\"},"
                    "\"shareID\":\"0b5c3f5e-4b0e-4b9a-9d1c-3b7f6a2e8d10\"}");
    json_object_put(body);
    /* and decoded back as written */
    obj = parse(CM "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":"
                   "\"g\",\"driver\":\"d\",\"pool\":\"p\",\"device\":\"x\","
                   "\"consumedCapacity\":{\"memory\":\"1536Mi\"},\"shareID\":"
                   "\"0b5c3f5e-4b0e-4b9a-9d1c-3b7f6a2e8d10\"}]}}}}");
    g_autoptr(KbResourceClaim) sc = kb_resource_claim_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    g_assert_cmpuint(sc->results[0].n_consumed, ==, 1);
    g_assert_cmpint(sc->results[0].consumed[0].milli, ==, G_GINT64_CONSTANT(1536) * 1048576 * 1000);
    g_assert_cmpstr(sc->results[0].share_id, ==, "0b5c3f5e-4b0e-4b9a-9d1c-3b7f6a2e8d10");
    /* already allocated (a shared claim): reservedFor only, the pod not listed twice */
    body = kb_resource_claim_status_new(c, NULL, 0, NULL, "job-w0", "p0");
    g_assert_cmpstr(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN), ==,
                    "{\"metadata\":{\"resourceVersion\":\"42\"},\"status\":{\"reservedFor\":[{"
                    "\"resource\":\"pods\",\"name\":\"job-w0\",\"uid\":\"p0\"}]}}");
    json_object_put(body);
}

/* The body as the binder sends it: JSON text in json-c's own form, the claim's reservations
 * first, then each pod not reserved yet, strings escaped. */
static void test_status_text(void)
{
    g_autoptr(GError) error = NULL;
    json_object *obj = parse(CLAIM);
    g_autoptr(KbResourceClaim) c = kb_resource_claim_decode(obj, FALSE, &error);
    json_object_put(obj);
    g_assert_no_error(error);
    KbCapacityAmount am = {"memory", (G_GINT64_CONSTANT(3) << 29) * 1000};
    KbDeviceResult results[] = {{"gpus", "gpu.nvidia.com", "n2", "gpu-3"},
                                {"gpus", "gpu.nvidia.com", "n2", "gpu-4", &am, 1, "ab"}};
    KbClaimConsumer pods[] = {
            {"pods", "job-w1", "p1"}, {"pods", "job-w0", "p0"}, {"pods", "job-w2", "p2"}};
    g_autofree char *text = kb_resource_claim_status_text(c, results, 2, "n2", pods, 3);
    json_object *body = json_tokener_parse(text);
    g_assert_nonnull(body);
    g_assert_cmpstr(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE),
                    ==, text);
    g_assert_cmpstr(
            text, ==,
            "{\"metadata\":{\"resourceVersion\":\"42\"},\"status\":{\"allocation\":{"
            "\"devices\":{\"results\":[{\"request\":\"gpus\",\"driver\":\"gpu.nvidia.com\","
            "\"pool\":\"n2\",\"device\":\"gpu-3\"},{\"request\":\"gpus\",\"driver\":"
            "\"gpu.nvidia.com\",\"pool\":\"n2\",\"device\":\"gpu-4\",\"consumedCapacity\":{"
            "\"memory\":\"1536Mi\"},\"shareID\":\"ab\"}]},\"nodeSelector\":{"
            "\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
            "\"In\",\"values\":[\"n2\"]}]}]}},\"reservedFor\":[{\"resource\":\"pods\",\"name\":"
            "\"job-w0\",\"uid\":\"p0\"},{\"resource\":\"pods\",\"name\":\"job-w1\",\"uid\":"
            "\"p1\"},{\"resource\":\"pods\",\"name\":\"job-w2\",\"uid\":\"p2\"}]}}");
    json_object_put(body);
    /* reserved already and the pod again: listed once, where it was */
    g_autofree char *again = kb_resource_claim_status_text(c, NULL, 0, NULL, &pods[1], 1);
    g_assert_cmpstr(again, ==,
                    "{\"metadata\":{\"resourceVersion\":\"42\"},\"status\":{\"reservedFor\":[{"
                    "\"resource\":\"pods\",\"name\":\"job-w0\",\"uid\":\"p0\"}]}}");
    /* what JSON escapes, escaped */
    KbClaimConsumer odd = {"pods", "w\"1\\", "u\n\x01"};
    g_autofree char *esc = kb_resource_claim_status_text(c, NULL, 0, NULL, &odd, 1);
    body = json_tokener_parse(esc);
    g_assert_nonnull(body);
    json_object *rf = json_object_object_get(json_object_object_get(body, "status"), "reservedFor");
    json_object *last = json_object_array_get_idx(rf, json_object_array_length(rf) - 1);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(last, "name")), ==, "w\"1\\");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(last, "uid")), ==, "u\n\x01");
    json_object_put(body);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kube/dra/device-class", test_device_class);
    g_test_add_func("/kube/dra/claim", test_claim);
    g_test_add_func("/kube/dra/claim-template", test_claim_template);
    g_test_add_func("/kube/dra/slice", test_slice);
    g_test_add_func("/kube/dra/slice-sharing", test_slice_sharing);
    for (guint i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
        g_autofree char *p = g_strdup_printf("/kube/dra/malformed/%s", bad_cases[i].name);
        g_test_add_data_func(p, &bad_cases[i], test_bad);
    }
    for (guint i = 0; i < G_N_ELEMENTS(limit_cases); i++) {
        g_autofree char *p = g_strdup_printf("/kube/dra/limit/%s", limit_cases[i].name);
        g_test_add_data_func(p, &limit_cases[i], test_limit);
    }
    g_test_add_func("/kube/dra/limit/expression-length", test_limit_expression);
    g_test_add_func("/kube/dra/status-body", test_status_body);
    g_test_add_func("/kube/dra/status-text", test_status_text);
    return g_test_run();
}
