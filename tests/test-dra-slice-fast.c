/*
 * kb_resource_slice_decode_bytes / kb_resource_slice_list_decode_bytes against the json-c path
 * (json-c parse + kb_resource_slice_decode): every slice kb-kubelet --dra publishes (whole GPUs,
 * NVLink islands, product and memory labels, shared GPUs, --mig's counter sets and partitions)
 * is read and is the same record field by field; what the byte decoder does not read it
 * refuses, and json-c then decodes or refuses it; each limit is read at the limit and refused
 * one past it; generated variants of the kubelet's slices are either refused or equal.
 */
#include <json-c/json.h>
#include <string.h>

#include "kube/kb-dra.h"
#include "kube/kb-error.h"
#include "kube/kb-objects.h"
#include "testbed/kubelet/kbl-dra.h"
#include "tests/lib/kb-test-util.h"

static KbResourceSlice *slow_decode(const char *text, gsize len, GError **error)
{
    json_object *obj = kb_test_json_parse_whole(text, len, error);
    if (obj == NULL)
        return NULL;
    KbResourceSlice *o = kb_resource_slice_decode(obj, FALSE, error);
    json_object_put(obj);
    return o;
}

/* Whether json-c read the last slice check_same() was given. */
static gboolean last_slow_read;

/* Decode @text both ways. When the byte decoder returns a slice, json-c's must be equal; when it
 * refuses, it says so with an error. TRUE when the byte decoder read it. */
static gboolean check_same(const char *text)
{
    gsize len = strlen(text);
    g_autoptr(GError) slow_error = NULL, fast_error = NULL;
    g_autoptr(KbResourceSlice) slow = slow_decode(text, len, &slow_error);
    g_autoptr(KbResourceSlice) fast = kb_resource_slice_decode_bytes(text, len, &fast_error);
    last_slow_read = slow != NULL;
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
    if (!kb_resource_slice_equal(slow, fast, &why))
        g_error("%.2000s\ndiffers: %s", text, why);
    g_assert_null(fast->meta.raw);
    return TRUE;
}

/* ---- what kb-kubelet --dra publishes -------------------------------------------------------- */

#define TOPOLOGY "{\\\"nvlink\\\":[[0,1,2,3],[4,5,6,7]]}"

/* Node forms: plain, NVLink islands, an H100 with its memory label, shared by memory. */
static const char *const node_forms[] = {
        "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}",
        "{\"metadata\":{\"name\":\"n2\",\"annotations\":{\"kube-batchd.io/gpu-topology\":"
        "\"" TOPOLOGY "\"}},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}",
        "{\"metadata\":{\"name\":\"n3\",\"labels\":{\"nvidia.com/gpu.product\":"
        "\"NVIDIA H100-SXM5-80GB\",\"nvidia.com/gpu.memory\":\"81559\"}},\"status\":{"
        "\"allocatable\":{\"nvidia.com/gpu\":\"4\"}}}",
        "{\"metadata\":{\"name\":\"n4\",\"labels\":{\"kube-batchd.io/gpu-sharing\":\"memory\"}},"
        "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"2\"}}}",
        "{\"metadata\":{\"name\":\"n5\"},\"status\":{\"allocatable\":{\"nvidia.com/"
        "gpu\":\"128\"}}}",
        "{\"metadata\":{\"name\":\"n6\"},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"17\"}}}",
};

/* The slices kbl_dra_slices() makes for every node form, with and without MIG, as JSON text. */
static GPtrArray *kubelet_slices(void)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    for (guint f = 0; f < G_N_ELEMENTS(node_forms); f++) {
        for (int mig = 0; mig < 2; mig++) {
            json_object *node = json_tokener_parse(node_forms[f]);
            g_assert_nonnull(node);
            g_autoptr(GError) error = NULL;
            json_object *slices = kbl_dra_slices(node, mig, &error);
            g_assert_no_error(error);
            g_assert_nonnull(slices);
            for (gsize i = 0; i < json_object_array_length(slices); i++)
                g_ptr_array_add(out, g_strdup(json_object_to_json_string_ext(
                                             json_object_array_get_idx(slices, i),
                                             JSON_C_TO_STRING_PLAIN)));
            json_object_put(slices);
            json_object_put(node);
        }
    }
    return out;
}

static void test_kubelet(void)
{
    g_autoptr(GPtrArray) slices = kubelet_slices();
    gboolean counters = FALSE, consumes = FALSE, policy = FALSE;
    for (guint i = 0; i < slices->len; i++) {
        const char *text = g_ptr_array_index(slices, i);
        if (!check_same(text))
            g_error("%.2000s\nrefused by the byte decoder", text);
        counters |= strstr(text, "\"sharedCounters\"") != NULL;
        consumes |= strstr(text, "\"consumesCounters\"") != NULL;
        policy |= strstr(text, "\"requestPolicy\"") != NULL;
    }
    /* every partitionable-device field was among them */
    g_assert_true(counters && consumes && policy);
}

static void test_fixtures(void)
{
    g_autofree char *dir =
            g_build_filename(kb_test_src_dir(), "tests", "fuzz", "corpus", "slice-fast", NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    guint n = 0, read = 0;
    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d)) != NULL) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        read += check_same(text);
        n++;
    }
    g_assert_cmpuint(n, >=, 3);
    g_assert_cmpuint(read, >=, 3);
}

/* ---- refused -------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *slice;
    gboolean valid; /* json-c decodes it */
} Refused;

#define SMETA    "\"metadata\":{\"name\":\"s\"}"
#define SPEC(x)  "{" SMETA ",\"spec\":{\"driver\":\"gpu.nvidia.com\"" x "}}"
#define DEV(x)   SPEC(",\"devices\":[{\"name\":\"gpu-0\"" x "}]")
#define ATTR(x)  DEV(",\"attributes\":{\"a\":" x "}")
#define CAP(x)   DEV(",\"capacity\":{\"memory\":" x "}")
#define SHARE(x) SPEC(",\"sharedCounters\":[" x "]")

static const Refused refused[] = {
        {"devices-before-driver",
         "{" SMETA ",\"spec\":{\"devices\":[{\"name\":\"g\"}],\"driver\":\"d\"}}", TRUE},
        {"null-node-name", SPEC(",\"nodeName\":null"), TRUE},
        {"duplicate-driver", SPEC(",\"driver\":\"other\""), TRUE},
        {"duplicate-attribute", DEV(",\"attributes\":{\"a\":{\"int\":1},\"a\":{\"int\":2}}"), TRUE},
        {"nul-in-name", DEV(",\"attributes\":{\"a\\u0000b\":{\"int\":1}}"), TRUE},
        {"nul-in-string", ATTR("{\"string\":\"x\\u0000y\"}"), TRUE},
        {"int-as-float", ATTR("{\"int\":1.0}"), FALSE},
        {"two-kinds", ATTR("{\"int\":1,\"bool\":true}"), FALSE},
        {"no-kind", ATTR("{\"other\":1}"), FALSE},
        {"huge-int", ATTR("{\"int\":99999999999999999999}"), TRUE},
        {"bad-quantity", CAP("{\"value\":\"12Qi\"}"), FALSE},
        {"no-value", CAP("{\"requestPolicy\":{}}"), FALSE},
        {"values-descending",
         CAP("{\"value\":\"8\",\"requestPolicy\":{\"validValues\":[\"2\","
             "\"1\"]}}"),
         FALSE},
        {"range-inverted",
         CAP("{\"value\":\"8\",\"requestPolicy\":{\"validRange\":{\"min\":\"4\","
             "\"max\":\"2\"}}}"),
         FALSE},
        {"negative-counter", SHARE("{\"name\":\"c\",\"counters\":{\"m\":{\"value\":\"-1\"}}}"),
         FALSE},
        {"no-counters", SHARE("{\"name\":\"c\",\"counters\":{}}"), FALSE},
        {"set-without-name", SHARE("{\"counters\":{\"m\":{\"value\":\"1\"}}}"), FALSE},
        {"no-driver", "{" SMETA ",\"spec\":{\"nodeName\":\"n\"}}", FALSE},
        {"no-spec", "{" SMETA "}", FALSE},
        {"device-without-name", SPEC(",\"devices\":[{\"attributes\":{}}]"), FALSE},
        {"negative-generation", SPEC(",\"pool\":{\"name\":\"p\",\"generation\":-1}"), FALSE},
        {"devices-not-array", SPEC(",\"devices\":{}"), FALSE},
};

static void test_refused(gconstpointer data)
{
    const Refused *c = data;
    gsize len = strlen(c->slice);
    g_autoptr(GError) fast_error = NULL, slow_error = NULL;
    g_autoptr(KbResourceSlice) fast = kb_resource_slice_decode_bytes(c->slice, len, &fast_error);
    g_assert_null(fast);
    g_assert_nonnull(fast_error);
    g_autoptr(KbResourceSlice) slow = slow_decode(c->slice, len, &slow_error);
    if (c->valid) {
        g_assert_no_error(slow_error);
        g_assert_nonnull(slow);
    } else {
        g_assert_null(slow);
        g_assert_nonnull(slow_error);
    }
}

/* ---- limits --------------------------------------------------------------------------------- */

/* A slice of @n devices; device 0 has @attrs attributes and @caps capacities. */
static char *slice_sized(guint n, guint attrs, guint caps)
{
    GString *s = g_string_new("{" SMETA ",\"spec\":{\"driver\":\"gpu.nvidia.com\",\"devices\":[");
    for (guint i = 0; i < n; i++) {
        g_string_append_printf(s, "%s{\"name\":\"gpu-%u\",\"attributes\":{", i > 0 ? "," : "", i);
        for (guint a = 0; i == 0 && a < attrs; a++)
            g_string_append_printf(s, "%s\"a%u\":{\"int\":%u}", a > 0 ? "," : "", a, a);
        g_string_append(s, "},\"capacity\":{");
        for (guint c = 0; i == 0 && c < caps; c++)
            g_string_append_printf(s, "%s\"c%u\":{\"value\":\"%uGi\"}", c > 0 ? "," : "", c, c);
        g_string_append(s, "}}");
    }
    g_string_append(s, "]}}");
    return g_string_free(s, FALSE);
}

/* @n counter sets (each of @counters counters) in sharedCounters, or @n consumesCounters. */
static char *slice_counters(guint n, guint counters, gboolean consumes)
{
    GString *s = g_string_new("");
    for (guint i = 0; i < n; i++) {
        g_string_append_printf(s, "%s{\"%s\":\"set-%u\",\"counters\":{", i > 0 ? "," : "",
                               consumes ? "counterSet" : "name", i);
        for (guint c = 0; c < counters; c++)
            g_string_append_printf(s, "%s\"m%u\":{\"value\":\"%u\"}", c > 0 ? "," : "", c, c);
        g_string_append(s, "}}");
    }
    g_autofree char *sets = g_string_free(s, FALSE);
    if (consumes)
        return g_strdup_printf(DEV(",\"consumesCounters\":[%s]"), sets);
    return g_strdup_printf(SHARE("%s"), sets);
}

static char *slice_values(guint n)
{
    GString *s = g_string_new("");
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s, "%s\"%uGi\"", i > 0 ? "," : "", i + 1);
    g_autofree char *v = g_string_free(s, FALSE);
    return g_strdup_printf(CAP("{\"value\":\"80Gi\",\"requestPolicy\":{\"validValues\":[%s]}}"), v);
}

static char *slice_attribute_len(guint len, gboolean name)
{
    g_autofree char *x = g_strnfill(len, 'x');
    if (name)
        return g_strdup_printf(DEV(",\"attributes\":{\"%s\":{\"int\":1}}"), x);
    return g_strdup_printf(ATTR("{\"string\":\"%s\"}"), x);
}

/* @at is read by both decoders and equal; @over is refused by both. */
static void limit_pair(const char *what, char *at, char *over)
{
    if (!check_same(at))
        g_error("%s: at the limit, refused by the byte decoder", what);
    g_autoptr(GError) fast_error = NULL, slow_error = NULL;
    g_autoptr(KbResourceSlice) fast =
            kb_resource_slice_decode_bytes(over, strlen(over), &fast_error);
    g_autoptr(KbResourceSlice) slow = slow_decode(over, strlen(over), &slow_error);
    if (fast != NULL || slow != NULL)
        g_error("%s: over the limit, read", what);
    g_free(at);
    g_free(over);
}

static void test_limits(void)
{
    limit_pair("devices", slice_sized(KB_DRA_MAX_SLICE_DEVICES, 1, 1),
               slice_sized(KB_DRA_MAX_SLICE_DEVICES + 1, 1, 1));
    limit_pair("attributes", slice_sized(1, KB_DRA_MAX_DEVICE_FIELDS, 0),
               slice_sized(1, KB_DRA_MAX_DEVICE_FIELDS + 1, 0));
    limit_pair("capacity", slice_sized(1, 0, KB_DRA_MAX_DEVICE_FIELDS),
               slice_sized(1, 0, KB_DRA_MAX_DEVICE_FIELDS + 1));
    limit_pair("attributes and capacity", slice_sized(1, 16, KB_DRA_MAX_DEVICE_FIELDS - 16),
               slice_sized(1, 17, KB_DRA_MAX_DEVICE_FIELDS - 16));
    limit_pair("sharedCounters", slice_counters(KB_DRA_MAX_COUNTER_SETS, 1, FALSE),
               slice_counters(KB_DRA_MAX_COUNTER_SETS + 1, 1, FALSE));
    limit_pair("consumesCounters", slice_counters(KB_DRA_MAX_CONSUMES, 1, TRUE),
               slice_counters(KB_DRA_MAX_CONSUMES + 1, 1, TRUE));
    limit_pair("counters", slice_counters(1, KB_DRA_MAX_COUNTERS, FALSE),
               slice_counters(1, KB_DRA_MAX_COUNTERS + 1, FALSE));
    limit_pair("validValues", slice_values(KB_DRA_MAX_VALID_VALUES),
               slice_values(KB_DRA_MAX_VALID_VALUES + 1));
    limit_pair("attribute value", slice_attribute_len(KB_DRA_MAX_ATTRIBUTE_LEN, FALSE),
               slice_attribute_len(KB_DRA_MAX_ATTRIBUTE_LEN + 1, FALSE));
    limit_pair("attribute name", slice_attribute_len(KB_MAX_LABEL_KEY_LEN, TRUE),
               slice_attribute_len(KB_MAX_LABEL_KEY_LEN + 1, TRUE));
    g_autofree char *x = g_strnfill(KB_MAX_NAME_LEN, 'x');
    g_autofree char *y = g_strnfill(KB_MAX_NAME_LEN + 1, 'y');
    limit_pair("device name", g_strdup_printf(SPEC(",\"devices\":[{\"name\":\"%s\"}]"), x),
               g_strdup_printf(SPEC(",\"devices\":[{\"name\":\"%s\"}]"), y));
    limit_pair("driver", g_strdup_printf("{" SMETA ",\"spec\":{\"driver\":\"%s\"}}", x),
               g_strdup_printf("{" SMETA ",\"spec\":{\"driver\":\"%s\"}}", y));
    /* nesting, in a member nobody reads (a device's taints): refused past the reader's depth */
    for (guint depth = 100; depth <= 200; depth += 100) {
        g_autoptr(GString) deep =
                g_string_new("{" SMETA ",\"spec\":{\"driver\":\"d\",\"devices\":[{\"name\":"
                             "\"g\",\"taints\":");
        for (guint i = 0; i < depth; i++)
            g_string_append_c(deep, '[');
        for (guint i = 0; i < depth; i++)
            g_string_append_c(deep, ']');
        g_string_append(deep, "}]}}");
        g_assert_cmpint(check_same(deep->str), ==, depth == 100);
    }
}

/* ---- generated ------------------------------------------------------------------------------ */

/* A random replacement value: types and forms either decoder may meet. */
static json_object *random_value(GRand *rand)
{
    switch (g_rand_int_range(rand, 0, 12)) {
    case 0:
        return NULL;
    case 1:
        return json_object_new_int(g_rand_int_range(rand, -3, 3));
    case 2:
        return json_object_new_double(1.5);
    case 3:
        return json_object_new_boolean(g_rand_boolean(rand));
    case 4:
        return json_object_new_string("");
    case 5:
        return json_object_new_string("12Qi");
    case 6:
        return json_object_new_string("4Gi");
    case 7:
        return json_object_new_array();
    case 8:
        return json_object_new_object();
    case 9: {
        g_autofree char *s = g_strnfill(g_rand_int_range(rand, 60, 70), 'v');
        return json_object_new_string(s);
    }
    case 10: {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "string", json_object_new_string("x"));
        return o;
    }
    default: {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "value", json_object_new_string("-1"));
        return o;
    }
    }
}

/* Every container under @o (objects and arrays), depth first. */
static void collect(json_object *o, GPtrArray *out)
{
    if (json_object_is_type(o, json_type_object)) {
        g_ptr_array_add(out, o);
        json_object_object_foreach(o, k, v)
        {
            (void)k;
            collect(v, out);
        }
    } else if (json_object_is_type(o, json_type_array)) {
        g_ptr_array_add(out, o);
        for (gsize i = 0; i < json_object_array_length(o); i++)
            collect(json_object_array_get_idx(o, i), out);
    }
}

/* One to three mutations of @slice: a member replaced, removed or added, an element replaced. */
static void mutate(json_object *slice, GRand *rand)
{
    static const char *const keys[] = {"int",         "bool",   "string",       "version",
                                       "value",       "name",   "counters",     "counterSet",
                                       "default",     "min",    "max",          "step",
                                       "validValues", "driver", "nodeName",     "allNodes",
                                       "generation",  "memory", "requestPolicy"};
    for (int m = g_rand_int_range(rand, 1, 4); m > 0; m--) {
        g_autoptr(GPtrArray) containers = g_ptr_array_new();
        collect(slice, containers);
        json_object *c =
                g_ptr_array_index(containers, g_rand_int_range(rand, 0, (gint32)containers->len));
        if (json_object_is_type(c, json_type_array)) {
            gsize n = json_object_array_length(c);
            if (n > 0)
                json_object_array_put_idx(c, g_rand_int_range(rand, 0, (gint32)n),
                                          random_value(rand));
            continue;
        }
        int op = g_rand_int_range(rand, 0, 3);
        gsize n = json_object_object_length(c);
        if (op < 2 && n > 0) {
            gint32 pick = g_rand_int_range(rand, 0, (gint32)n), i = 0;
            json_object_object_foreach(c, k, v)
            {
                (void)v;
                if (i++ == pick) {
                    g_autofree char *key = g_strdup(k);
                    if (op == 0)
                        json_object_object_add(c, key, random_value(rand));
                    else
                        json_object_object_del(c, key);
                    break;
                }
            }
        } else {
            json_object_object_add(c, keys[g_rand_int_range(rand, 0, G_N_ELEMENTS(keys))],
                                   random_value(rand));
        }
    }
}

static void test_generated(void)
{
    g_autoptr(GPtrArray) base = kubelet_slices();
    g_autoptr(GRand) rand = g_rand_new_with_seed(22);
    guint n = 3000, read = 0, valid = 0;
    for (guint i = 0; i < n; i++) {
        const char *text = g_ptr_array_index(base, g_rand_int_range(rand, 0, (gint32)base->len));
        json_object *s = json_tokener_parse(text);
        mutate(s, rand);
        read += check_same(json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN));
        valid += last_slow_read;
        json_object_put(s);
    }
    g_test_message("%u generated slices: %u read by json-c, %u by the byte decoder", n, valid,
                   read);
    /* the byte decoder reads most of what json-c reads (it refuses nulls, which json-c takes
     * for absent members) */
    g_assert_cmpuint(read, >=, n / 8);
    g_assert_cmpuint(read, >=, valid / 2);
}

/* ---- lists ---------------------------------------------------------------------------------- */

static void test_list(void)
{
    g_autoptr(GPtrArray) slices = kubelet_slices();
    g_autoptr(GString) list = g_string_new("{\"kind\":\"ResourceSliceList\",\"metadata\":{"
                                           "\"resourceVersion\":\"7\",\"continue\":\"c\"},"
                                           "\"items\":[");
    for (guint i = 0; i < slices->len; i++)
        g_string_append_printf(list, "%s%s", i > 0 ? "," : "",
                               (char *)g_ptr_array_index(slices, i));
    g_string_append(list, "]}");
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(kb_object_unref);
    g_autofree char *rv = NULL, *cont = NULL;
    g_autoptr(GError) error = NULL;
    g_assert_true(
            kb_resource_slice_list_decode_bytes(list->str, list->len, out, &rv, &cont, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(rv, ==, "7");
    g_assert_cmpstr(cont, ==, "c");
    g_assert_cmpuint(out->len, ==, slices->len);
    for (guint i = 0; i < out->len; i++) {
        const char *text = g_ptr_array_index(slices, i);
        g_autoptr(KbResourceSlice) slow = slow_decode(text, strlen(text), &error);
        g_assert_no_error(error);
        g_autofree char *why = NULL;
        if (!kb_resource_slice_equal(slow, g_ptr_array_index(out, i), &why))
            g_error("item %u differs: %s", i, why);
    }
    /* One slice it does not read refuses the page, which then goes through json-c whole. */
    g_string_truncate(list, list->len - 2);
    g_string_append_printf(list, ",%s]}", refused[0].slice);
    g_autoptr(GPtrArray) none = g_ptr_array_new_with_free_func(kb_object_unref);
    g_autofree char *rv2 = NULL, *cont2 = NULL;
    g_assert_false(
            kb_resource_slice_list_decode_bytes(list->str, list->len, none, &rv2, &cont2, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_assert_cmpuint(none->len, ==, 0);
    g_assert_null(rv2);
    g_assert_null(cont2);
}

/* kb_resource_slice_equal tells records apart by each field it compares. */
static void test_equal_differs(void)
{
    g_autoptr(GPtrArray) slices = kubelet_slices();
    const char *mig = NULL;
    for (guint i = 0; i < slices->len && mig == NULL; i++) {
        const char *t = g_ptr_array_index(slices, i);
        if (strstr(t, "consumesCounters") != NULL)
            mig = t;
    }
    g_assert_nonnull(mig);
    g_autoptr(KbResourceSlice) a = kb_resource_slice_decode_bytes(mig, strlen(mig), NULL);
    g_autoptr(KbResourceSlice) b = kb_resource_slice_decode_bytes(mig, strlen(mig), NULL);
    g_assert_nonnull(a);
    g_assert_nonnull(b);
    g_assert_true(kb_resource_slice_equal(a, b, NULL));
    g_autofree char *why = NULL;
    b->devices[1].consumes[0].counters[0].milli++;
    g_assert_false(kb_resource_slice_equal(a, b, &why));
    g_assert_nonnull(strstr(why, "consumesCounters"));
    b->devices[1].consumes[0].counters[0].milli--;
    KbCelAttribute *attr = NULL;
    for (guint i = 0; i < b->devices[0].n_attributes && attr == NULL; i++) {
        if (b->devices[0].attributes[i].type == KB_CEL_ATTR_INT)
            attr = &b->devices[0].attributes[i];
    }
    g_assert_nonnull(attr);
    attr->int_value++;
    g_clear_pointer(&why, g_free);
    g_assert_false(kb_resource_slice_equal(a, b, &why));
    g_assert_nonnull(strstr(why, "attribute int"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/kube/dra-slice-fast/same/kubelet", test_kubelet);
    g_test_add_func("/kube/dra-slice-fast/same/fixtures", test_fixtures);
    g_test_add_func("/kube/dra-slice-fast/same/generated", test_generated);
    for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autofree char *p = g_strdup_printf("/kube/dra-slice-fast/refused/%s", refused[i].name);
        g_test_add_data_func(p, &refused[i], test_refused);
    }
    g_test_add_func("/kube/dra-slice-fast/limits", test_limits);
    g_test_add_func("/kube/dra-slice-fast/list", test_list);
    g_test_add_func("/kube/dra-slice-fast/equal-differs", test_equal_differs);
    return g_test_run();
}
