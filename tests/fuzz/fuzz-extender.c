/*
 * Fuzz target for the extender protocol codec (kube/kb-extender-codec.c): whatever the bytes,
 * each decoder either refuses them with a KB_ERROR_DECODE / KB_ERROR_LIMIT error, or returns
 * arguments within the limits whose answers encode to valid JSON that names every candidate.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-extender-codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(GError *error)
{
    if (error == NULL || error->domain != KB_ERROR ||
        (error->code != KB_ERROR_DECODE && error->code != KB_ERROR_LIMIT) ||
        error->message[0] == '\0')
        __builtin_trap();
    g_error_free(error);
}

static void must_parse(const char *text)
{
    json_object *o = json_tokener_parse(text);
    if (o == NULL)
        __builtin_trap();
    json_object_put(o);
}

static void args(const char *body, size_t size)
{
    GError *error = NULL;
    KbExtenderArgs *a = kb_extender_args_decode(body, size, &error);
    if (a == NULL) {
        check_error(error);
        return;
    }
    if (error != NULL || a->pod == NULL || a->n_nodes > KB_EXTENDER_MAX_NODES)
        __builtin_trap();
    const char **why = g_new0(const char *, a->n_nodes + 1);
    gboolean *unres = g_new0(gboolean, a->n_nodes + 1);
    gint64 *scores = g_new0(gint64, a->n_nodes + 1);
    for (guint i = 0; i < a->n_nodes; i++) {
        if (a->node_names[i] == NULL || strlen(a->node_names[i]) > KB_EXTENDER_MAX_NAME_BYTES)
            __builtin_trap();
        why[i] = (i % 2) != 0 ? a->node_names[i] : NULL;
        unres[i] = (i % 3) == 0;
        scores[i] = (gint64)i - 3;
    }
    char *f = kb_extender_filter_result_encode(a, why, unres, NULL);
    must_parse(f);
    g_free(f);
    char *p = kb_extender_priorities_encode(a, scores);
    must_parse(p);
    g_free(p);
    g_free(why);
    g_free(unres);
    g_free(scores);
    kb_extender_args_free(a);
}

static void binding(const char *body, size_t size)
{
    GError *error = NULL;
    KbExtenderBindingArgs *b = kb_extender_binding_args_decode(body, size, &error);
    if (b == NULL) {
        check_error(error);
        return;
    }
    if (b->pod_name[0] == '\0' || b->pod_namespace[0] == '\0' || b->node[0] == '\0')
        __builtin_trap();
    char *r = kb_extender_binding_result_encode(b->pod_name);
    must_parse(r);
    g_free(r);
    kb_extender_binding_args_free(b);
}

static void preemption(const char *body, size_t size)
{
    GError *error = NULL;
    KbExtenderPreemptionArgs *p = kb_extender_preemption_args_decode(body, size, &error);
    if (p == NULL) {
        check_error(error);
        return;
    }
    gboolean *keep = g_new0(gboolean, p->n_nodes + 1);
    GPtrArray **victims = g_new0(GPtrArray *, p->n_nodes + 1);
    for (guint i = 0; i < p->n_nodes; i++) {
        keep[i] = TRUE;
        victims[i] = g_ptr_array_new();
        if (p->nodes[i].n_pods > KB_EXTENDER_MAX_VICTIMS)
            __builtin_trap();
        for (guint v = 0; v < p->nodes[i].n_pods; v++)
            g_ptr_array_add(victims[i], (gpointer)p->nodes[i].pods[v].uid);
    }
    char *r = kb_extender_preemption_result_encode(p, keep, victims);
    must_parse(r);
    g_free(r);
    for (guint i = 0; i < p->n_nodes; i++)
        g_ptr_array_unref(victims[i]);
    g_free(victims);
    g_free(keep);
    kb_extender_preemption_args_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    args(body, size);
    binding(body, size);
    preemption(body, size);
    return 0;
}
