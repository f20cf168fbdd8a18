/*
 * Fuzz target for kb-apiserver's check of a conversion webhook's answer (testbed/apiserver/
 * kas-convert: kas_convert_answer): any bytes are what a webhook answered to a v1 review of two
 * TFJobs. It must never crash or leak, must set an error exactly when it returns NULL, and what it
 * returns must be one object per object sent, each in the desired apiVersion with the name,
 * namespace and uid of the one it came from.
 */
#include <stdint.h>
#include <string.h>

#include "testbed/apiserver/kas-convert.h"
#include "testbed/apiserver/kas-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void json_unref(gpointer p)
{
    json_object_put(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const sent[] = {
            "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"a\","
            "\"namespace\":\"d\",\"uid\":\"u1\",\"labels\":{\"x\":\"y\"}},\"spec\":{}}",
            "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"metadata\":{\"name\":\"b\","
            "\"namespace\":\"d\",\"uid\":\"u2\"},\"spec\":{}}"};
    g_autoptr(GPtrArray) in = g_ptr_array_new_with_free_func(json_unref);
    for (guint i = 0; i < G_N_ELEMENTS(sent); i++)
        g_ptr_array_add(in, json_tokener_parse(sent[i]));
    GError *error = NULL;
    GPtrArray *out =
            kas_convert_answer((const char *)data, size, "v1", "uid-1", in, "kubeflow.org/v1alpha1",
                               TRUE, "kubeflow.org/v1, Kind=TFJob", &error);
    if ((out == NULL) != (error != NULL))
        __builtin_trap();
    if (out == NULL) {
        if (!g_str_has_prefix(error->message,
                              "conversion webhook for kubeflow.org/v1, Kind=TFJob "))
            __builtin_trap();
        g_error_free(error);
        return 0;
    }
    if (out->len != in->len)
        __builtin_trap();
    for (guint i = 0; i < out->len; i++) {
        json_object *o = g_ptr_array_index(out, i), *s = g_ptr_array_index(in, i);
        if (g_strcmp0(kas_json_get_string(o, "apiVersion"), "kubeflow.org/v1alpha1") != 0 ||
            g_strcmp0(kas_json_get_string(o, "metadata.name"),
                      kas_json_get_string(s, "metadata.name")) != 0 ||
            g_strcmp0(kas_json_get_string(o, "metadata.uid"),
                      kas_json_get_string(s, "metadata.uid")) != 0)
            __builtin_trap();
    }
    g_ptr_array_unref(out);
    return 0;
}
