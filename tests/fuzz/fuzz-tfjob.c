/*
 * Fuzz target for the TFJob decoder: any bytes that parse as JSON are decoded (with and without
 * keeping the raw object), and a decoded job is read back through the model's accessors. The
 * decoder must never crash or leak, must fail with an error set when it returns NULL, and a job
 * must be either valid or carry a message that names it.
 */
#include <stdint.h>
#include <string.h>

#include "kube/kb-tfjob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inspect(const KbTfJob *job)
{
    if (job->invalid != NULL && strstr(job->invalid, "tfjob ") != job->invalid)
        __builtin_trap();
    for (int t = 0; t < KB_TF_N_TYPES; t++) {
        gint32 n = kb_tfjob_effective_replicas(job, t);
        if (n < 0 || n > KB_TF_MAX_REPLICAS)
            __builtin_trap();
        if (job->specs[t].present && job->specs[t].template_ == NULL)
            __builtin_trap();
        if (job->specs[t].present && (job->specs[t].port < 1 || job->specs[t].port > 65535))
            __builtin_trap();
    }
    (void)kb_tfjob_has_chief(job);
    (void)kb_tfjob_is_finished(job);
    (void)kb_tfjob_code_is_user_retryable(job, 138);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_tokener *tok = json_tokener_new_ex(64);
    json_object *obj = json_tokener_parse_ex(tok, (const char *)data, (int)MIN(size, G_MAXINT));
    json_tokener_free(tok);
    if (obj == NULL)
        return 0;
    for (int keep = 0; keep < 2; keep++) {
        GError *error = NULL;
        KbTfJob *job = kb_tfjob_decode(obj, keep, &error);
        if ((job == NULL) != (error != NULL))
            __builtin_trap();
        if (job != NULL) {
            inspect(job);
            kb_tfjob_free(job);
        } else {
            g_error_free(error);
        }
    }
    json_object_put(obj);
    return 0;
}
