/* Node decoding (kb_node_decode); see kb-objects.h. */
#include <string.h>

#include "kube/kb-decode.h"
#include "kube/kb-error.h"
#include "kube/kb-objects.h"

static gboolean decode_taint(json_object *o, KbTaint *t, GError **error)
{
    const char *effect;
    if (!kb_decode_interned(o, "key", KB_MAX_LABEL_KEY_LEN, TRUE, &t->key, error) ||
        !kb_decode_interned(o, "value", KB_MAX_NAME_LEN, TRUE, &t->value, error) ||
        !kb_decode_string(o, "effect", KB_MAX_NAME_LEN, &effect, error))
        return FALSE;
    if (t->key == NULL) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "key: missing");
        return FALSE;
    }
    /* Unlike a toleration's, a taint's effect is required. */
    if (effect == NULL || !kb_decode_taint_effect(effect, &t->effect)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "effect: unknown effect \"%s\"",
                    effect != NULL ? effect : "");
        return FALSE;
    }
    return TRUE;
}

static gboolean decode_spec(json_object *spec, KbNode *node, GError **error)
{
    json_object *arr;
    gsize n;
    if (!kb_decode_bool(spec, "unschedulable", &node->unschedulable, error) ||
        !kb_decode_array(spec, "taints", KB_MAX_LIST_ITEMS, &arr, &n, error))
        return FALSE;
    node->taints = n > 0 ? g_new0(KbTaint, n) : NULL;
    for (gsize i = 0; i < n; i++) {
        json_object *o;
        if (!kb_decode_element(arr, i, &o, error)) {
            g_prefix_error(error, "taints");
            return FALSE;
        }
        if (!decode_taint(o, &node->taints[i], error)) {
            g_prefix_error(error, "taints[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
        node->n_taints++;
    }
    return TRUE;
}

/* ready: a condition of type Ready with status "True" ("False" and "Unknown" are not). */
static gboolean decode_conditions(json_object *status, KbNode *node, GError **error)
{
    json_object *arr;
    gsize n;
    if (!kb_decode_array(status, "conditions", KB_MAX_LIST_ITEMS, &arr, &n, error))
        return FALSE;
    for (gsize i = 0; i < n; i++) {
        json_object *o;
        const char *type, *st;
        if (!kb_decode_element(arr, i, &o, error)) {
            g_prefix_error(error, "conditions");
            return FALSE;
        }
        if (!kb_decode_string(o, "type", KB_MAX_NAME_LEN, &type, error) ||
            !kb_decode_string(o, "status", KB_MAX_NAME_LEN, &st, error)) {
            g_prefix_error(error, "conditions[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
        if (type != NULL && strcmp(type, "Ready") == 0)
            node->ready = st != NULL && strcmp(st, "True") == 0;
    }
    return TRUE;
}

static gboolean decode_status(json_object *status, KbNode *node, GError **error)
{
    json_object *alloc, *cap;
    if (!kb_decode_member(status, "allocatable", json_type_object, &alloc, error) ||
        !kb_decode_member(status, "capacity", json_type_object, &cap, error))
        return FALSE;
    if (cap != NULL && !kb_resources_decode(cap, "capacity", &node->capacity, error))
        return FALSE;
    /* A node without allocatable (an old kubelet) can use all of its capacity. */
    if (alloc == NULL)
        node->allocatable = node->capacity;
    else if (!kb_resources_decode(alloc, "allocatable", &node->allocatable, error))
        return FALSE;
    return decode_conditions(status, node, error);
}

static gboolean decode_body(json_object *obj, KbNode *node, GError **error)
{
    json_object *spec, *status;
    if (!kb_decode_member(obj, "spec", json_type_object, &spec, error) ||
        !kb_decode_member(obj, "status", json_type_object, &status, error))
        return FALSE;
    if (spec != NULL && !decode_spec(spec, node, error)) {
        g_prefix_error(error, "spec.");
        return FALSE;
    }
    if (status != NULL && !decode_status(status, node, error)) {
        g_prefix_error(error, "status.");
        return FALSE;
    }
    return TRUE;
}

KbNode *kb_node_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    g_autoptr(KbNode) node = g_new0(KbNode, 1);
    if (!kb_meta_decode(obj, KB_KIND_NODE, keep_raw, &node->meta, error) ||
        !decode_body(obj, node, error)) {
        kb_decode_prefix_object(error, "node", &node->meta);
        return NULL;
    }
    return g_steal_pointer(&node);
}
