/*
 * Fuzz target for the object decoders: the bytes go through json_tokener (with a depth limit, as
 * the watch decoder and the list reader use), then the document, its "items" (a List) and its
 * "object" (a watch event) go to every decoder, with and without keep_raw. Each decoder must
 * return a record or an error, never both or neither, and never crash or leak. Strings also go
 * to the time parsers, objects to kb_resources_decode().
 */
#include <stdint.h>

#include "kube/kb-dra.h"
#include "kube/kb-objects.h"

#define FUZZ_MAX_DEPTH 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void);

/*
 * GLib leaks its previous quark array each time the table of interned strings grows by 2048
 * entries (on purpose: it keeps lookups lock-free). Fuzzed label values grow it all the time, so
 * that one leak is suppressed; the full unwinding lets the suppression see g_intern_string()
 * through GLib's frames and keeps every other leak reported.
 */
const char *__lsan_default_suppressions(void)
{
    return "leak:g_intern_string\n";
}

const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

typedef gpointer (*Decode)(json_object *obj, gboolean keep_raw, GError **error);

/* Wrappers, so that every call goes through the function's own type. */
#define WRAP(fn)                                                                                   \
    static gpointer wrap_##fn(json_object *obj, gboolean keep_raw, GError **error)                 \
    {                                                                                              \
        return fn(obj, keep_raw, error);                                                           \
    }
WRAP(kb_pod_decode)
WRAP(kb_node_decode)
WRAP(kb_pod_group_decode)
WRAP(kb_pod_group_decode_native)
WRAP(kb_pod_group_decode_v1alpha3)
WRAP(kb_composite_pod_group_decode)
WRAP(kb_queue_decode)
WRAP(kb_priority_class_decode)
WRAP(kb_lease_decode)
WRAP(kb_meta_object_decode)
WRAP(kb_device_class_decode)
WRAP(kb_resource_claim_decode)
WRAP(kb_resource_claim_template_decode)
WRAP(kb_resource_slice_decode)

static void check_record(gpointer rec, GError *error)
{
    if ((rec == NULL) == (error == NULL))
        __builtin_trap();
    if (error != NULL) {
        if (error->message == NULL || error->message[0] == '\0')
            __builtin_trap();
        g_error_free(error);
        return;
    }
    KbObjectMeta *meta = rec;
    if (meta->name == NULL || meta->labels == NULL || meta->annotations == NULL)
        __builtin_trap();
    g_free(kb_object_key(meta));
    kb_object_unref(rec);
}

static void decode_all(json_object *obj, gboolean keep_raw)
{
    static const Decode decoders[] = {
        wrap_kb_pod_decode,   wrap_kb_node_decode,           wrap_kb_pod_group_decode,
        wrap_kb_queue_decode, wrap_kb_priority_class_decode, wrap_kb_lease_decode,
        wrap_kb_meta_object_decode, wrap_kb_pod_group_decode_native,
        wrap_kb_pod_group_decode_v1alpha3, wrap_kb_composite_pod_group_decode,
        wrap_kb_device_class_decode, wrap_kb_resource_claim_decode,
        wrap_kb_resource_claim_template_decode, wrap_kb_resource_slice_decode,
    };
    for (gsize i = 0; i < G_N_ELEMENTS(decoders); i++) {
        GError *error = NULL;
        gpointer rec = decoders[i](obj, keep_raw, &error);
        check_record(rec, error);
    }
    if (json_object_is_type(obj, json_type_object)) {
        KbResources r;
        GError *error = NULL;
        kb_resources_clear(&r);
        if (!kb_resources_decode(obj, "fuzz", &r, &error)) {
            if (error == NULL)
                __builtin_trap();
            g_error_free(error);
        } else {
            json_object_put(kb_resources_encode(&r));
        }
    }
    if (json_object_is_type(obj, json_type_string)) {
        gint64 t;
        if (kb_time_parse(json_object_get_string(obj), &t))
            g_free(kb_time_format(t));
        if (kb_micro_time_parse(json_object_get_string(obj), &t))
            g_free(kb_micro_time_format(t));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_tokener *tok = json_tokener_new_ex(FUZZ_MAX_DEPTH);
    json_object *doc = json_tokener_parse_ex(tok, (const char *)data, (int)MIN(size, G_MAXINT));
    json_tokener_free(tok);
    if (doc == NULL)
        return 0;
    decode_all(doc, size % 2 == 0);
    json_object *sub;
    if (json_object_object_get_ex(doc, "object", &sub))
        decode_all(sub, FALSE);
    if (json_object_object_get_ex(doc, "items", &sub) && json_object_is_type(sub, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(sub) && i < 64; i++)
            decode_all(json_object_array_get_idx(sub, i), TRUE);
    }
    json_object_put(doc);
    return 0;
}
