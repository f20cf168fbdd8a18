/*
 * kb_resource_claim_decode_bytes / kb_resource_claim_list_decode_bytes against the json-c path
 * (json-c parse + kb_resource_claim_decode): whatever the byte decoder returns is the same record
 * field by field (fixtures, the claims kb-apiserver's controller and kube-batchd write, thousands
 * of generated claims, lists); what it does not read it refuses, and json-c then decodes or
 * refuses it; the claims of a DRA run are never refused.
 */
#include <json-c/json.h>
#include <string.h>

#include "kube/kb-dra.h"
#include "kube/kb-error.h"
#include "kube/kb-objects.h"
#include "tests/lib/kb-test-util.h"

static KbResourceClaim *slow_decode(const char *text, gsize len, GError **error)
{
    json_object *obj = kb_test_json_parse_whole(text, len, error);
    if (obj == NULL)
        return NULL;
    KbResourceClaim *o = kb_resource_claim_decode(obj, FALSE, error);
    json_object_put(obj);
    return o;
}

/* Decode @text both ways. When the byte decoder returns a claim, json-c's must be equal; when
 * it refuses, it says so with an error. TRUE when the byte decoder read it. */
static gboolean check_same(const char *text)
{
    gsize len = strlen(text);
    g_autoptr(GError) slow_error = NULL, fast_error = NULL;
    g_autoptr(KbResourceClaim) slow = slow_decode(text, len, &slow_error);
    g_autoptr(KbResourceClaim) fast = kb_resource_claim_decode_bytes(text, len, &fast_error);
    if (fast == NULL) {
        g_assert_nonnull(fast_error);
        g_assert_true(fast_error->code == KB_ERROR_DECODE || fast_error->code == KB_ERROR_LIMIT);
        return FALSE;
    }
    g_assert_no_error(fast_error);
    if (slow == NULL)
        g_error("%.2000s\nread by the byte decoder, refused by json-c: %s", text,
                slow_error->message);
    g_autofree char *why = NULL;
    if (!kb_resource_claim_equal(slow, fast, &why))
        g_error("%.2000s\ndiffers: %s", text, why);
    g_assert_null(fast->meta.raw);
    return TRUE;
}

/* ---- claims of a run ------------------------------------------------------------------------ */

/* As kb-apiserver's resource-claim controller makes it from a template (ownerReferences,
 * annotation, generateName), then as the scheduler's status write and the controller's release
 * leave it. */
static const char *const run_claims[] = {
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
        "\"annotations\":{\"resource.kubernetes.io/pod-claim-name\":\"gpu\"},\"generateName\":"
        "\"job-3-w-5-gpu-\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":"
        "\"job-3-w-5\",\"uid\":\"4f1c2a7e-0000-4000-8000-000000000035\",\"controller\":true,"
        "\"blockOwnerDeletion\":true}],\"name\":\"job-3-w-5-gpu-x2k9q\",\"namespace\":\"bench\","
        "\"uid\":\"9a3e-1\",\"resourceVersion\":\"10233\",\"generation\":1,\"creationTimestamp\":"
        "\"2026-11-27T11:00:00Z\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
        "\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"allocationMode\":\"ExactCount\","
        "\"count\":1}}]}}}",
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
        "\"annotations\":{\"resource.kubernetes.io/pod-claim-name\":\"gpu\"},\"generateName\":"
        "\"job-3-w-5-gpu-\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":"
        "\"job-3-w-5\",\"uid\":\"4f1c\",\"controller\":true,\"blockOwnerDeletion\":true}],\"name\":"
        "\"job-3-w-5-gpu-x2k9q\",\"namespace\":\"bench\",\"uid\":\"9a3e-1\",\"resourceVersion\":"
        "\"10877\",\"generation\":1,\"creationTimestamp\":\"2026-11-27T11:00:00Z\"},\"spec\":{"
        "\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"
        "\"gpu.nvidia.com\",\"allocationMode\":\"ExactCount\",\"count\":1}}]}},\"status\":{"
        "\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.nvidia."
        "com\","
        "\"pool\":\"node-17\",\"device\":\"gpu-3\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{"
        "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"node-17\"]}]"
        "}]}"
        ",\"allocationTimestamp\":\"2026-11-27T11:00:01Z\"},\"reservedFor\":[{\"resource\":"
        "\"pods\","
        "\"name\":\"job-3-w-5\",\"uid\":\"4f1c\"}]}}",
        "{\"metadata\":{\"name\":\"shared\",\"namespace\":\"ml\",\"uid\":\"u\",\"resourceVersion\":"
        "\"7\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpus\",\"exactly\":{"
        "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2,\"selectors\":[{\"cel\":{"
        "\"expression\":"
        "\"device.attributes[\\\"gpu.nvidia.com\\\"].productName == \\\"NVIDIA A100\\\"\"}}]}},{"
        "\"name\":\"all\",\"exactly\":{\"deviceClassName\":\"mig.nvidia.com\",\"allocationMode\":"
        "\"All\",\"adminAccess\":false}}],\"constraints\":[{\"requests\":[\"gpus\"],"
        "\"matchAttribute\":"
        "\"gpu.nvidia.com/nvlinkIsland\"},{\"distinctAttribute\":\"gpu.nvidia.com/uuid\"}],"
        "\"config\":[{\"requests\":[\"gpus\"],\"opaque\":{\"driver\":\"gpu.nvidia.com\","
        "\"parameters\":"
        "{}}}]}},\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpus\","
        "\"driver\":"
        "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-0\"},{\"request\":\"gpus\",\"driver\":"
        "\"gpu.nvidia.com\",\"pool\":\"n1\",\"device\":\"gpu-1\"}]}},\"reservedFor\":[{"
        "\"resource\":"
        "\"pods\",\"name\":\"a\",\"uid\":\"1\"},{\"resource\":\"pods\",\"name\":\"b\",\"uid\":"
        "\"2\"}]}}",
        /* released: the controller emptied reservedFor and dropped the allocation */
        "{\"metadata\":{\"name\":\"c\",\"namespace\":\"ml\"},\"spec\":{\"devices\":{\"requests\":[{"
        "\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}},\"status\":{}}",
};

static void test_run_claims(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(run_claims); i++) {
        if (!check_same(run_claims[i]))
            g_error("claim %u of a run refused by the byte decoder: %s", i, run_claims[i]);
    }
}

/* The status body kube-batchd writes (kb_resource_claim_status_new), merged into the claim as
 * the server stores it: read by the byte decoder, and equal. */
static void test_written_status(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(KbResourceClaim) claim = slow_decode(run_claims[0], strlen(run_claims[0]), &error);
    g_assert_no_error(error);
    KbDeviceResult res = {.request = (char *)"gpu",
                          .driver = g_intern_string("gpu.nvidia.com"),
                          .pool = g_intern_string("node-2"),
                          .device = (char *)"gpu-7"};
    json_object *body = kb_resource_claim_status_new(claim, &res, 1, "node-2", "job-3-w-5", "4f1c");
    json_tokener *tok = json_tokener_new();
    json_object *doc = json_tokener_parse_ex(tok, run_claims[0], (int)strlen(run_claims[0]));
    json_tokener_free(tok);
    json_object *status = NULL;
    g_assert_true(json_object_object_get_ex(body, "status", &status));
    json_object_object_add(doc, "status", json_object_get(status));
    const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
    g_assert_true(check_same(text));
    g_autoptr(KbResourceClaim) fast = kb_resource_claim_decode_bytes(text, strlen(text), &error);
    g_assert_no_error(error);
    g_assert_true(fast->allocated);
    g_assert_cmpstr(fast->node, ==, "node-2");
    g_assert_cmpuint(fast->n_results, ==, 1);
    g_assert_cmpstr(fast->results[0].device, ==, "gpu-7");
    g_assert_true(kb_resource_claim_reserved_for(fast, "4f1c"));
    json_object_put(doc);
    json_object_put(body);
}

static void test_fixtures(void)
{
    g_autofree char *dir =
            g_build_filename(kb_test_src_dir(), "tests", "fuzz", "corpus", "claim-fast", NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    guint n = 0;
    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d)) != NULL) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        check_same(text);
        n++;
    }
    g_assert_cmpuint(n, >=, 4);
}

/* ---- refused -------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *claim;
    gboolean valid; /* json-c decodes it */
} Refused;

#define META       "\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"}"
#define REQ(x)     "{" META ",\"spec\":{\"devices\":{\"requests\":[" x "]}}}"
#define EXACTLY(x) REQ("{\"name\":\"r\",\"exactly\":{" x "}}")
#define STATUS(x)  "{" META ",\"status\":" x "}"

static const Refused refused[] = {
        {"first-available",
         REQ("{\"name\":\"r\",\"firstAvailable\":[{\"name\":\"a\",\"deviceClassName\":\"c\"}]}"),
         TRUE},
        {"capacity",
         EXACTLY("\"deviceClassName\":\"c\",\"capacity\":{\"requests\":{\"memory\":"
                 "\"10Gi\"}}"),
         TRUE},
        {"share-id",
         STATUS("{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"d\","
                "\"pool\":\"p\",\"device\":\"x\",\"shareID\":\"6f1b3c4e-0000-4000-8000-"
                "000000000001\"}]}}}"),
         TRUE},
        {"node-selector-expressions",
         STATUS("{\"allocation\":{\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
                "\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}]}]}}}"),
         TRUE},
        {"node-selector-two-terms",
         STATUS("{\"allocation\":{\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{"
                "\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"a\"]}]},{"
                "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"b\"]"
                "}]}"
                "]}}}"),
         TRUE},
        {"null-spec", "{" META ",\"spec\":null}", TRUE},
        {"null-count", EXACTLY("\"deviceClassName\":\"c\",\"count\":null"), TRUE},
        {"duplicate-status", "{" META ",\"status\":{},\"status\":{}}", TRUE},
        {"count-zero", EXACTLY("\"deviceClassName\":\"c\",\"count\":0"), FALSE},
        {"count-big", EXACTLY("\"deviceClassName\":\"c\",\"count\":129"), FALSE},
        {"count-fraction", EXACTLY("\"deviceClassName\":\"c\",\"count\":1.5"), FALSE},
        {"count-with-all",
         EXACTLY("\"deviceClassName\":\"c\",\"allocationMode\":\"All\",\"count\":1"), FALSE},
        {"unknown-mode", EXACTLY("\"deviceClassName\":\"c\",\"allocationMode\":\"Some\""), FALSE},
        {"empty-mode", EXACTLY("\"deviceClassName\":\"c\",\"allocationMode\":\"\""), FALSE},
        {"no-class", EXACTLY("\"count\":1"), FALSE},
        {"empty-expression",
         EXACTLY("\"deviceClassName\":\"c\",\"selectors\":[{\"cel\":{"
                 "\"expression\":\"\"}}]"),
         FALSE},
        {"selector-without-cel", EXACTLY("\"deviceClassName\":\"c\",\"selectors\":[{}]"), FALSE},
        {"no-name", REQ("{\"exactly\":{\"deviceClassName\":\"c\"}}"), FALSE},
        {"neither", REQ("{\"name\":\"r\"}"), FALSE},
        {"result-without-device",
         STATUS("{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\"}]}}}"), FALSE},
        {"consumer-without-uid",
         STATUS("{\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\"}]}"), FALSE},
        {"no-name-in-meta", "{\"metadata\":{\"namespace\":\"ns\"}}", FALSE},
        {"no-metadata", "{\"spec\":{}}", FALSE},
        {"not-an-object", "[1]", FALSE},
        {"trailing", "{" META "} x", FALSE},
};

static void test_refused(gconstpointer data)
{
    const Refused *c = data;
    g_autoptr(GError) fast_error = NULL, slow_error = NULL;
    gsize len = strlen(c->claim);
    g_autoptr(KbResourceClaim) fast = kb_resource_claim_decode_bytes(c->claim, len, &fast_error);
    g_assert_null(fast);
    g_assert_error(fast_error, KB_ERROR, KB_ERROR_DECODE);
    g_autoptr(KbResourceClaim) slow = slow_decode(c->claim, len, &slow_error);
    if (c->valid) {
        g_assert_no_error(slow_error);
        g_assert_nonnull(slow);
    } else {
        g_assert_null(slow);
        g_assert_nonnull(slow_error);
    }
}

/* Limits: at the limit read (and equal), one over refused by both. */
static void test_limits(void)
{
    struct {
        const char *prefix, *item, *suffix;
        guint max;
    } cases[] = {
            {"{" META ",\"spec\":{\"devices\":{\"requests\":[",
             "{\"name\":\"r%u\",\"exactly\":{\"deviceClassName\":\"c\"}}", "]}}}",
             KB_DRA_MAX_REQUESTS},
            {"{" META ",\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\",\"exactly\":{"
             "\"deviceClassName\":\"c\",\"selectors\":[",
             "{\"cel\":{\"expression\":\"device.driver == 'd%u'\"}}", "]}}]}}}",
             KB_DRA_MAX_SELECTORS},
            {"{" META ",\"spec\":{\"devices\":{\"constraints\":[",
             "{\"requests\":[\"r%u\"],\"matchAttribute\":\"d/a%u\"}", "]}}}", KB_DRA_MAX_REQUESTS},
            {"{" META ",\"spec\":{\"devices\":{\"constraints\":[{\"requests\":[", "\"r%u%u\"",
             "]}]}}}", KB_DRA_MAX_REQUESTS},
            {"{" META ",\"status\":{\"reservedFor\":[",
             "{\"resource\":\"pods\",\"name\":\"p%u\",\"uid\":\"u%u\"}", "]}}",
             KB_DRA_MAX_RESERVED_FOR},
            {"{" META ",\"status\":{\"allocation\":{\"devices\":{\"results\":[",
             "{\"request\":\"r\",\"driver\":\"d\",\"pool\":\"p\",\"device\":\"x%u\"}", "]}}}}",
             KB_DRA_MAX_REQUESTS},
    };
    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        for (guint n = cases[c].max; n <= cases[c].max + 1; n++) {
            g_autoptr(GString) s = g_string_new(cases[c].prefix);
            for (guint i = 0; i < n; i++) {
                if (i > 0)
                    g_string_append_c(s, ',');
                g_string_append_printf(s, cases[c].item, i, i);
            }
            g_string_append(s, cases[c].suffix);
            g_autoptr(GError) slow_error = NULL;
            g_autoptr(KbResourceClaim) slow = slow_decode(s->str, s->len, &slow_error);
            gboolean read = check_same(s->str);
            g_assert_cmpint(read, ==, n == cases[c].max);
            g_assert_cmpint(slow != NULL, ==, n == cases[c].max);
        }
    }
    /* strings: an expression of the longest length, and one byte more */
    for (gsize len = KB_DRA_MAX_EXPRESSION_LEN; len <= KB_DRA_MAX_EXPRESSION_LEN + 1; len++) {
        g_autofree char *expr = g_strnfill(len, 'x');
        g_autofree char *text =
                g_strdup_printf(EXACTLY("\"deviceClassName\":\"c\",\"selectors\":[{\"cel\":{"
                                        "\"expression\":\"%s\"}}]"),
                                expr);
        g_assert_cmpint(check_same(text), ==, len == KB_DRA_MAX_EXPRESSION_LEN);
    }
    /* a request's name, and a device's */
    for (gsize len = KB_MAX_NAME_LEN; len <= KB_MAX_NAME_LEN + 1; len++) {
        g_autofree char *name = g_strnfill(len, 'a');
        g_autofree char *req = g_strdup_printf(REQ("{\"name\":\"%s\",\"exactly\":{"
                                                   "\"deviceClassName\":\"c\"}}"),
                                               name);
        g_assert_cmpint(check_same(req), ==, len == KB_MAX_NAME_LEN);
        g_autofree char *res = g_strdup_printf(
                STATUS("{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\","
                       "\"device\":\"%s\"}]}}}"),
                name);
        g_assert_cmpint(check_same(res), ==, len == KB_MAX_NAME_LEN);
    }
    /* nesting, in a member nobody reads: refused past the reader's depth */
    for (guint depth = 100; depth <= 200; depth += 100) {
        g_autoptr(GString) deep = g_string_new("{" META ",\"spec\":{\"devices\":{\"config\":");
        for (guint i = 0; i < depth; i++)
            g_string_append_c(deep, '[');
        for (guint i = 0; i < depth; i++)
            g_string_append_c(deep, ']');
        g_string_append(deep, "}}}");
        g_assert_cmpint(check_same(deep->str), ==, depth == 100);
    }
}

/* ---- generated ------------------------------------------------------------------------------ */

static const char *pick(GRand *rand, const char *const *v, guint n)
{
    return v[g_rand_int_range(rand, 0, (gint32)n)];
}
#define PICK(rand, v) pick(rand, v, G_N_ELEMENTS(v))

/* Members of an object, in a random order (each a complete "key":value text). */
static void append_object(GString *s, GRand *rand, GPtrArray *members)
{
    for (guint i = members->len; i > 1; i--) {
        guint j = (guint)g_rand_int_range(rand, 0, (gint32)i);
        gpointer t = members->pdata[i - 1];
        members->pdata[i - 1] = members->pdata[j];
        members->pdata[j] = t;
    }
    g_string_append_c(s, '{');
    for (guint i = 0; i < members->len; i++)
        g_string_append_printf(s, "%s%s", i > 0 ? "," : "", (char *)members->pdata[i]);
    g_string_append_c(s, '}');
}

static void add(GPtrArray *m, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void add(GPtrArray *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_ptr_array_add(m, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

static gboolean chance(GRand *rand, double p)
{
    return g_rand_double(rand) < p;
}

static char *gen_exactly(GRand *rand)
{
    static const char *const classes[] = {"\"gpu.nvidia.com\"", "\"mig.nvidia.com\"", "\"\"", "3"};
    static const char *const modes[] = {"\"ExactCount\"", "\"All\"", "\"Some\"", "null"};
    static const char *const counts[] = {"1", "2", "8", "128", "0", "129", "1.0", "-1", "null"};
    static const char *const exprs[] = {
            "device.driver == \\\"gpu.nvidia.com\\\"",
            "device.attributes[\\\"gpu.nvidia.com\\\"].productName == \\\"NVIDIA A100\\\"",
            "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity(\\\"40Gi\\\")) >= 0", "",
            "caf\\u00e9 \\n"};
    g_autoptr(GPtrArray) m = g_ptr_array_new_with_free_func(g_free);
    if (!chance(rand, 0.05))
        add(m, "\"deviceClassName\":%s", chance(rand, 0.9) ? classes[0] : PICK(rand, classes));
    if (chance(rand, 0.3))
        add(m, "\"allocationMode\":%s",
            chance(rand, 0.8) ? modes[g_rand_int_range(rand, 0, 2)] : PICK(rand, modes));
    if (chance(rand, 0.5))
        add(m, "\"count\":%s",
            chance(rand, 0.9) ? counts[g_rand_int_range(rand, 0, 4)] : PICK(rand, counts));
    if (chance(rand, 0.3)) {
        GString *sel = g_string_new("\"selectors\":[");
        guint n = (guint)g_rand_int_range(rand, 0, 3);
        for (guint i = 0; i < n; i++)
            g_string_append_printf(sel, "%s{\"cel\":{\"expression\":\"%s\"}}", i > 0 ? "," : "",
                                   chance(rand, 0.9) ? exprs[g_rand_int_range(rand, 0, 3)]
                                                     : PICK(rand, exprs));
        g_string_append_c(sel, ']');
        g_ptr_array_add(m, g_string_free(sel, FALSE));
    }
    if (chance(rand, 0.1))
        add(m, "\"adminAccess\":%s", chance(rand, 0.5) ? "true" : "false");
    if (chance(rand, 0.03))
        add(m, "\"capacity\":{\"requests\":{\"memory\":\"10Gi\"}}");
    if (chance(rand, 0.1))
        add(m, "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}]");
    g_autoptr(GString) s = g_string_new(NULL);
    append_object(s, rand, m);
    return g_string_free(g_steal_pointer(&s), FALSE);
}

static void gen_spec(GString *s, GRand *rand)
{
    g_autoptr(GPtrArray) dev = g_ptr_array_new_with_free_func(g_free);
    GString *reqs = g_string_new("\"requests\":[");
    guint n = (guint)g_rand_int_range(rand, 0, 4);
    for (guint i = 0; i < n; i++) {
        g_autoptr(GPtrArray) r = g_ptr_array_new_with_free_func(g_free);
        if (!chance(rand, 0.03))
            add(r, "\"name\":\"req-%u\"", i);
        if (chance(rand, 0.05))
            add(r, "\"firstAvailable\":[{\"name\":\"a\",\"deviceClassName\":\"gpu.nvidia.com\"}]");
        else if (!chance(rand, 0.03)) {
            g_autofree char *x = gen_exactly(rand);
            g_ptr_array_add(r, g_strconcat("\"exactly\":", x, NULL));
        }
        if (i > 0)
            g_string_append_c(reqs, ',');
        append_object(reqs, rand, r);
    }
    g_string_append_c(reqs, ']');
    g_ptr_array_add(dev, g_string_free(reqs, FALSE));
    if (chance(rand, 0.3))
        add(dev, "\"constraints\":[{\"requests\":[\"req-0\"],\"matchAttribute\":\"%s\"}]",
            chance(rand, 0.8) ? "gpu.nvidia.com/nvlinkIsland" : "");
    if (chance(rand, 0.1))
        add(dev, "\"config\":[{\"opaque\":{\"driver\":\"d\",\"parameters\":{\"a\":[1,2]}}}]");
    g_autoptr(GString) devices = g_string_new("\"devices\":");
    append_object(devices, rand, dev);
    g_string_append_printf(s, "\"spec\":{%s}", devices->str);
}

static void gen_status(GString *s, GRand *rand)
{
    static const char *const nodes[] = {
            "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
            "\"In\","
            "\"values\":[\"node-%u\"]}]}]}",
            "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"operator\":\"In\",\"key\":\"metadata."
            "name\","
            "\"values\":[\"node-%u\"]}]}]}",
            "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
            "\"In\","
            "\"values\":[\"\"]}]}]}",
            "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
            "\"NotIn\",\"values\":[\"node-%u\"]}]}]}",
            "{\"nodeSelectorTerms\":[]}",
    };
    g_autoptr(GPtrArray) st = g_ptr_array_new_with_free_func(g_free);
    guint node = (guint)g_rand_int_range(rand, 0, 1000);
    if (chance(rand, 0.6)) {
        g_autoptr(GPtrArray) alloc = g_ptr_array_new_with_free_func(g_free);
        GString *res = g_string_new("\"devices\":{\"results\":[");
        guint n = (guint)g_rand_int_range(rand, 0, 3);
        for (guint i = 0; i < n; i++) {
            g_autoptr(GPtrArray) r = g_ptr_array_new_with_free_func(g_free);
            add(r, "\"request\":\"req-%u\"", i);
            add(r, "\"driver\":\"%s\"", chance(rand, 0.95) ? "gpu.nvidia.com" : "");
            add(r, "\"pool\":\"node-%u\"", node);
            if (!chance(rand, 0.03))
                add(r, "\"device\":\"gpu-%u\"", i);
            if (chance(rand, 0.03))
                add(r, "\"consumedCapacity\":{\"memory\":\"5Gi\"}");
            if (i > 0)
                g_string_append_c(res, ',');
            append_object(res, rand, r);
        }
        g_string_append(res, "]}");
        g_ptr_array_add(alloc, g_string_free(res, FALSE));
        if (chance(rand, 0.8)) {
            const char *fmt = chance(rand, 0.8) ? nodes[0] : PICK(rand, nodes);
            g_autofree char *sel = g_strdup_printf(fmt, node);
            add(alloc, "\"nodeSelector\":%s", sel);
        }
        if (chance(rand, 0.5))
            add(alloc, "\"allocationTimestamp\":\"2026-11-27T11:00:01Z\"");
        g_autoptr(GString) a = g_string_new("\"allocation\":");
        append_object(a, rand, alloc);
        g_ptr_array_add(st, g_string_free(g_steal_pointer(&a), FALSE));
    }
    if (chance(rand, 0.7)) {
        GString *rf = g_string_new("\"reservedFor\":[");
        guint n = (guint)g_rand_int_range(rand, 0, 4);
        for (guint i = 0; i < n; i++) {
            g_autoptr(GPtrArray) c = g_ptr_array_new_with_free_func(g_free);
            if (!chance(rand, 0.05))
                add(c, "\"resource\":\"pods\"");
            add(c, "\"name\":\"pod-%u\"", i);
            if (!chance(rand, 0.03))
                add(c, "\"uid\":\"uid-%u-%u\"", node, i);
            if (chance(rand, 0.2))
                add(c, "\"apiGroup\":\"\"");
            if (i > 0)
                g_string_append_c(rf, ',');
            append_object(rf, rand, c);
        }
        g_string_append_c(rf, ']');
        g_ptr_array_add(st, g_string_free(rf, FALSE));
    }
    g_autoptr(GString) o = g_string_new(NULL);
    append_object(o, rand, st);
    g_string_append_printf(s, "\"status\":%s", o->str);
}

static char *gen_claim(GRand *rand, guint i)
{
    g_autoptr(GPtrArray) top = g_ptr_array_new_with_free_func(g_free);
    add(top, "\"apiVersion\":\"resource.k8s.io/v1\"");
    add(top, "\"kind\":\"ResourceClaim\"");
    if (!chance(rand, 0.02)) {
        g_autoptr(GPtrArray) meta = g_ptr_array_new_with_free_func(g_free);
        add(meta, "\"name\":\"pod-%u-gpu-x%u\"", i, i % 7);
        add(meta, "\"namespace\":\"ns-%u\"", i % 3);
        add(meta, "\"uid\":\"u-%u\"", i);
        add(meta, "\"resourceVersion\":\"%u\"", 1000 + i);
        if (chance(rand, 0.5))
            add(meta, "\"annotations\":{\"resource.kubernetes.io/pod-claim-name\":\"gpu\"}");
        if (chance(rand, 0.3))
            add(meta, "\"labels\":{\"team\":\"t%u\"}", i % 5);
        if (chance(rand, 0.5))
            add(meta,
                "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":"
                "\"pod-%u\",\"uid\":\"p-%u\",\"controller\":true}]",
                i, i);
        GString *m = g_string_new("\"metadata\":");
        append_object(m, rand, meta);
        g_ptr_array_add(top, g_string_free(m, FALSE));
    }
    if (chance(rand, 0.9)) {
        GString *s = g_string_new(NULL);
        gen_spec(s, rand);
        g_ptr_array_add(top, g_string_free(s, FALSE));
    }
    if (chance(rand, 0.7)) {
        GString *s = g_string_new(NULL);
        gen_status(s, rand);
        g_ptr_array_add(top, g_string_free(s, FALSE));
    }
    GString *s = g_string_new(NULL);
    append_object(s, rand, top);
    return g_string_free(s, FALSE);
}

static void test_generated(void)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(22);
    guint read = 0, n = 4000;
    for (guint i = 0; i < n; i++) {
        g_autofree char *text = gen_claim(rand, i);
        read += check_same(text);
    }
    /* Most generated claims are of the shapes a run writes: the byte decoder reads them. */
    g_test_message("%u of %u generated claims read by the byte decoder", read, n);
    g_assert_cmpuint(read, >=, n / 4);
}

/* ---- lists ---------------------------------------------------------------------------------- */

static void test_list(void)
{
    g_autoptr(GString) list = g_string_new("{\"kind\":\"ResourceClaimList\",\"metadata\":{"
                                           "\"resourceVersion\":\"99\",\"continue\":\"abc\"},"
                                           "\"items\":[");
    for (guint i = 0; i < G_N_ELEMENTS(run_claims); i++)
        g_string_append_printf(list, "%s%s", i > 0 ? "," : "", run_claims[i]);
    g_string_append(list, "]}");
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(kb_object_unref);
    g_autofree char *rv = NULL, *cont = NULL;
    g_autoptr(GError) error = NULL;
    g_assert_true(
            kb_resource_claim_list_decode_bytes(list->str, list->len, out, &rv, &cont, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(rv, ==, "99");
    g_assert_cmpstr(cont, ==, "abc");
    g_assert_cmpuint(out->len, ==, G_N_ELEMENTS(run_claims));
    for (guint i = 0; i < out->len; i++) {
        g_autoptr(KbResourceClaim) slow = slow_decode(run_claims[i], strlen(run_claims[i]), &error);
        g_assert_no_error(error);
        g_autofree char *why = NULL;
        if (!kb_resource_claim_equal(slow, g_ptr_array_index(out, i), &why))
            g_error("item %u differs: %s", i, why);
    }
    /* One claim it does not read refuses the page, which then goes through json-c whole. */
    g_string_truncate(list, list->len - 2);
    g_string_append_printf(list, ",%s]}", refused[0].claim);
    g_autoptr(GPtrArray) none = g_ptr_array_new_with_free_func(kb_object_unref);
    g_autofree char *rv2 = NULL, *cont2 = NULL;
    g_assert_false(
            kb_resource_claim_list_decode_bytes(list->str, list->len, none, &rv2, &cont2, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_assert_cmpuint(none->len, ==, 0);
    g_assert_null(rv2);
    g_assert_null(cont2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kube/dra-fast/same/run-claims", test_run_claims);
    g_test_add_func("/kube/dra-fast/same/written-status", test_written_status);
    g_test_add_func("/kube/dra-fast/same/fixtures", test_fixtures);
    g_test_add_func("/kube/dra-fast/same/generated", test_generated);
    for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autofree char *p = g_strdup_printf("/kube/dra-fast/refused/%s", refused[i].name);
        g_test_add_data_func(p, &refused[i], test_refused);
    }
    g_test_add_func("/kube/dra-fast/limits", test_limits);
    g_test_add_func("/kube/dra-fast/list", test_list);
    return g_test_run();
}
