/*
 * Object metadata, metadata-only objects and resource maps; see kb-objects.h.
 */
#include <string.h>

#include "kube/kb-decode.h"
#include "kube/kb-error.h"
#include "kube/kb-objects.h"
#include "kube/kb-quantity.h"

/* ---- metadata ------------------------------------------------------------------------------- */

static gboolean decode_time(json_object *meta, const char *key, gint64 *out, GError **error)
{
    const char *s;
    if (!kb_decode_string(meta, key, KB_MAX_TIME_LEN, &s, error))
        return FALSE;
    return s == NULL || kb_decode_time_text(key, s, out, error);
}

static gboolean decode_owner(json_object *o, KbOwnerRef *ref, GError **error)
{
    const char *api_version, *kind, *name, *uid;
    if (!kb_decode_string(o, "apiVersion", KB_MAX_NAME_LEN, &api_version, error) ||
        !kb_decode_string(o, "kind", KB_MAX_NAME_LEN, &kind, error) ||
        !kb_decode_string(o, "name", KB_MAX_NAME_LEN, &name, error) ||
        !kb_decode_string(o, "uid", KB_MAX_NAME_LEN, &uid, error) ||
        !kb_decode_bool(o, "controller", &ref->controller, error))
        return FALSE;
    ref->api_version = g_strdup(api_version);
    ref->kind = g_strdup(kind);
    ref->name = g_strdup(name);
    ref->uid = g_strdup(uid);
    return TRUE;
}

static gboolean decode_owners(json_object *m, KbObjectMeta *meta, GError **error)
{
    json_object *arr;
    gsize n;
    if (!kb_decode_array(m, "ownerReferences", KB_MAX_LIST_ITEMS, &arr, &n, error))
        return FALSE;
    if (n == 0)
        return TRUE;
    meta->owners = g_new0(KbOwnerRef, n);
    for (gsize i = 0; i < n; i++) {
        json_object *o;
        if (!kb_decode_element(arr, i, &o, error)) {
            g_prefix_error(error, "ownerReferences");
            return FALSE;
        }
        /* Counted before decoding so that kb_meta_clear() frees a partial entry. */
        meta->n_owners++;
        if (!decode_owner(o, &meta->owners[i], error)) {
            g_prefix_error(error, "ownerReferences[%" G_GSIZE_FORMAT "].", i);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean decode_identity(json_object *m, KbObjectMeta *meta, GError **error)
{
    const char *name, *uid, *rv;
    if (!kb_decode_string(m, "name", KB_MAX_NAME_LEN, &name, error) ||
        !kb_decode_interned(m, "namespace", KB_MAX_NAME_LEN, TRUE, &meta->namespace_, error))
        return FALSE;
    if (name == NULL || *name == '\0') {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "name: missing");
        return FALSE;
    }
    meta->name = g_strdup(name);
    if (!kb_decode_string(m, "uid", KB_MAX_NAME_LEN, &uid, error) ||
        !kb_decode_string(m, "resourceVersion", KB_MAX_NAME_LEN, &rv, error))
        return FALSE;
    meta->uid = g_strdup(uid);
    meta->resource_version = g_strdup(rv);
    return TRUE;
}

static gboolean decode_metadata(json_object *m, KbObjectMeta *meta, GError **error)
{
    return decode_identity(m, meta, error) &&
           kb_decode_int(m, "generation", 0, G_MAXINT64, &meta->generation, NULL, error) &&
           decode_time(m, "creationTimestamp", &meta->creation_timestamp, error) &&
           decode_time(m, "deletionTimestamp", &meta->deletion_timestamp, error) &&
           kb_decode_string_map(m, "labels", KB_MAX_LABEL_VALUE_LEN, KB_STRING_MAP_INTERN_KEYS,
                                meta->labels, error) &&
           kb_decode_string_map(m, "annotations", KB_MAX_LABEL_VALUE_LEN, KB_STRING_MAP_OWNED,
                                meta->annotations, error) &&
           decode_owners(m, meta, error);
}

void kb_meta_init(KbObjectMeta *meta, KbKind kind)
{
    meta->kind = kind;
    meta->ref_count = 1;
    /* Labels hash by content: callers look them up with literals, not interned pointers. Keys
     * are interned (few distinct ones), values owned (job names, indices, uids: unbounded). */
    if (meta->labels == NULL)
        meta->labels = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    if (meta->annotations == NULL)
        meta->annotations = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

gboolean kb_meta_decode(json_object *obj, KbKind kind, gboolean keep_raw, KbObjectMeta *meta,
                        GError **error)
{
    json_object *m;

    kb_meta_init(meta, kind);
    if (obj == NULL || !json_object_is_type(obj, json_type_object))
        return kb_decode_type_error(error, "object", "an object", obj);
    if (!kb_decode_member(obj, "metadata", json_type_object, &m, error))
        return FALSE;
    if (m == NULL) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "metadata: missing");
        return FALSE;
    }
    if (!decode_metadata(m, meta, error)) {
        g_prefix_error(error, "metadata.");
        return FALSE;
    }
    if (keep_raw)
        meta->raw = json_object_get(obj);
    return TRUE;
}

static KbKind meta_only_kind(json_object *obj)
{
    json_object *k;
    if (!json_object_object_get_ex(obj, "kind", &k) || !json_object_is_type(k, json_type_string))
        return KB_KIND_OTHER;
    const char *s = json_object_get_string(k);
    if (strcmp(s, "Namespace") == 0)
        return KB_KIND_NAMESPACE;
    if (strcmp(s, "Event") == 0)
        return KB_KIND_EVENT;
    return KB_KIND_OTHER;
}

KbObjectMeta *kb_meta_object_decode(json_object *obj, gboolean keep_raw, GError **error)
{
    KbObjectMeta *meta = g_new0(KbObjectMeta, 1);
    KbKind kind = obj != NULL && json_object_is_type(obj, json_type_object) ? meta_only_kind(obj)
                                                                           : KB_KIND_OTHER;
    if (!kb_meta_decode(obj, kind, keep_raw, meta, error)) {
        g_prefix_error(error, "object%s%s: ", meta->name != NULL ? " " : "",
                       meta->name != NULL ? meta->name : "");
        kb_object_unref(meta);
        return NULL;
    }
    return meta;
}

/* ---- resource maps -------------------------------------------------------------------------- */

static gboolean check_resource_name(const char *what, const char *name, gsize len, GError **error)
{
    if (len > 0 && len <= KB_MAX_LABEL_KEY_LEN)
        return TRUE;
    g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                "%s: resource name of %" G_GSIZE_FORMAT " bytes, not 1 to %d: \"%.64s\"", what,
                len, KB_MAX_LABEL_KEY_LEN, name);
    return FALSE;
}

/* The value of a resource map entry: a JSON string, a number (as json-c prints it: json-c keeps a
 * double's original text, integers print exactly) or null (Quantity.UnmarshalJSON reads it as
 * zero). */
static gboolean resource_entry(const char *what, const char *name, json_object *v, gboolean set,
                               KbResources *out, GError **error)
{
    gsize len = strlen(name);
    if (v == NULL)
        return kb_resources_decode_entry(what, name, len, "0", FALSE, set, out, error);
    if (json_object_is_type(v, json_type_string))
        return kb_resources_decode_entry(what, name, len, json_object_get_string(v), TRUE, set,
                                         out, error);
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
        return kb_resources_decode_entry(
            what, name, len, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), FALSE, set,
            out, error);
    if (!check_resource_name(what, name, len, error))
        return FALSE;
    g_autofree char *field = g_strdup_printf("%s[\"%s\"]", what, name);
    return kb_decode_type_error(error, field, "a quantity", v);
}

gboolean kb_resources_decode_entry(const char *what, const char *name, gsize name_len,
                                   const char *text, gboolean is_string, gboolean set,
                                   KbResources *out, GError **error)
{
    g_autofree char *copy = NULL;
    KbQuantity q;
    g_autoptr(GError) qerr = NULL;

    if (!check_resource_name(what, name, name_len, error))
        return FALSE;
    /* UnmarshalJSON trims white space; copy only when there is some. */
    gsize len = is_string ? strlen(text) : 0;
    if (len > 0 && (g_ascii_isspace(text[0]) || g_ascii_isspace(text[len - 1]))) {
        copy = g_strstrip(g_strdup(text));
        text = copy;
    }
    if (!kb_quantity_parse(text, &q, &qerr)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s[\"%s\"]: %s", what, name, qerr->message);
        return FALSE;
    }
    if (q.unscaled < 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s[\"%s\"]: negative quantity \"%s\"",
                    what, name, text);
        return FALSE;
    }
    /* Only take a slot for a resource that is there: nodes list every hugepages-* size at 0. */
    if (q.unscaled == 0 && !set)
        return TRUE;
    int slot = kb_resource_slot(name);
    if (slot < 0) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "%s[\"%s\"]: no free resource slot for \"%s\" (all %d in use)", what, name,
                    name, KB_RES_MAX);
        return FALSE;
    }
    gint64 value = kb_resource_is_milli(slot) ? kb_quantity_milli_value(&q) : kb_quantity_value(&q);
    if (set || __builtin_add_overflow(out->v[slot], value, &out->v[slot]))
        out->v[slot] = set ? value : KB_RESOURCE_UNLIMITED;
    return TRUE;
}

/* Add (or, with @set, assign) every entry of @map to @out. */
static gboolean resources_decode(json_object *map, const char *what, gboolean set,
                                 KbResources *out, GError **error)
{
    if (map == NULL || !json_object_is_type(map, json_type_object))
        return kb_decode_type_error(error, what, "an object", map);
    if (!kb_decode_check_map_size(what, (gsize)json_object_object_length(map), error))
        return FALSE;
    json_object_object_foreach(map, name, v)
    {
        if (!resource_entry(what, name, v, set, out, error))
            return FALSE;
    }
    return TRUE;
}

gboolean kb_resources_decode(json_object *map, const char *what, KbResources *out, GError **error)
{
    return resources_decode(map, what, FALSE, out, error);
}

gboolean kb_resources_decode_assign(json_object *map, const char *what, KbResources *out,
                                 GError **error)
{
    return resources_decode(map, what, TRUE, out, error);
}

json_object *kb_resources_encode(const KbResources *r)
{
    json_object *map = json_object_new_object();
    for (int i = 0; i < kb_resource_count(); i++) {
        if (r->v[i] == 0 || r->v[i] == KB_RESOURCE_UNLIMITED)
            continue;
        g_autofree char *v = kb_resource_format_value(i, r->v[i]);
        json_object_object_add(map, kb_resource_name(i), json_object_new_string(v));
    }
    return map;
}
