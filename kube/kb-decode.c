/* Typed json-c member access for the object decoders; see kb-decode.h. */
#include "kube/kb-decode.h"

#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-objects.h"

#define DESCRIBE_MAX 64
/* Values described in messages are parsed again: deep enough for any value a decoder names. */
#define KB_JSON_DESCRIBE_DEPTH 128

char *kb_decode_describe(json_object *v)
{
    const char *s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE);
    gsize len = strlen(s);
    if (len <= DESCRIBE_MAX)
        return g_strdup(s);
    /* Cut on a UTF-8 boundary so that the message stays valid text. */
    gsize cut = DESCRIBE_MAX;
    while (cut > 0 && ((guchar)s[cut] & 0xC0) == 0x80)
        cut--;
    return g_strdup_printf("%.*s...", (int)cut, s);
}

char *kb_decode_describe_text(const char *json, gsize len)
{
    /* NUL-terminated, so that json-c knows where a bare number ends. */
    g_autofree char *text = g_strndup(json, len);
    json_tokener *tok = json_tokener_new_ex(KB_JSON_DESCRIBE_DEPTH);
    json_object *v = json_tokener_parse_ex(tok, text, -1);
    gboolean whole = v != NULL && json_tokener_get_parse_end(tok) == len;
    json_tokener_free(tok);
    if (!whole) {
        /* Text json-c refuses (it is laxer than the byte-buffer reader, so rarely): cut raw. */
        json_object_put(v);
        gsize cut = MIN(len, DESCRIBE_MAX);
        while (cut > 0 && cut < len && ((guchar)json[cut] & 0xC0) == 0x80)
            cut--;
        return g_strdup_printf("%.*s%s", (int)cut, json, cut < len ? "..." : "");
    }
    char *s = kb_decode_describe(v);
    json_object_put(v);
    return s;
}

gboolean kb_decode_check_length(const char *key, gsize len, gsize max, GError **error)
{
    if (len <= max)
        return TRUE;
    g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                "%s: %" G_GSIZE_FORMAT " bytes, more than %" G_GSIZE_FORMAT, key, len, max);
    return FALSE;
}

gboolean kb_decode_check_range(const char *key, gint64 v, const char *got, gint64 min, gint64 max,
                               GError **error)
{
    if (v >= min && v <= max)
        return TRUE;
    g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                "%s: %s out of range [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", key, got, min,
                max);
    return FALSE;
}

gboolean kb_decode_time_text(const char *key, const char *s, gint64 *out, GError **error)
{
    if (kb_time_parse(s, out))
        return TRUE;
    g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: invalid time \"%s\"", key, s);
    return FALSE;
}

gboolean kb_decode_check_map_size(const char *key, gsize n, GError **error)
{
    if (n <= KB_MAX_LABELS)
        return TRUE;
    g_set_error(error, KB_ERROR, KB_ERROR_LIMIT, "%s: %" G_GSIZE_FORMAT " entries, more than %d",
                key, n, KB_MAX_LABELS);
    return FALSE;
}

gboolean kb_decode_check_map_key(const char *key, const char *k, gsize klen, GError **error)
{
    if (klen > 0 && klen <= KB_MAX_LABEL_KEY_LEN)
        return TRUE;
    g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                "%s: key of %" G_GSIZE_FORMAT " bytes, not 1 to %d: \"%.64s\"", key, klen,
                KB_MAX_LABEL_KEY_LEN, k);
    return FALSE;
}

static const char *type_name(json_type type)
{
    switch (type) {
    case json_type_object:
        return "an object";
    case json_type_array:
        return "an array";
    case json_type_string:
        return "a string";
    case json_type_int:
        return "an integer";
    case json_type_boolean:
        return "a boolean";
    case json_type_double:
        return "a number";
    case json_type_null:
        return "null";
    }
    return "a value";
}

gboolean kb_decode_type_error(GError **error, const char *key, const char *what, json_object *v)
{
    g_autofree char *got = kb_decode_describe(v);
    g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "%s: expected %s, got %s", key, what, got);
    return FALSE;
}

gboolean kb_decode_member(json_object *obj, const char *key, json_type type, json_object **out,
                          GError **error)
{
    json_object *v = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || v == NULL)
        return TRUE;
    if (!json_object_is_type(v, type))
        return kb_decode_type_error(error, key, type_name(type), v);
    *out = v;
    return TRUE;
}

gboolean kb_decode_string(json_object *obj, const char *key, gsize max_len, const char **out,
                          GError **error)
{
    json_object *v;
    *out = NULL;
    if (!kb_decode_member(obj, key, json_type_string, &v, error))
        return FALSE;
    if (v == NULL)
        return TRUE;
    if (!kb_decode_check_length(key, (gsize)json_object_get_string_len(v), max_len, error))
        return FALSE;
    *out = json_object_get_string(v);
    return TRUE;
}

gboolean kb_decode_interned(json_object *obj, const char *key, gsize max_len, gboolean empty_is_null,
                            const char **out, GError **error)
{
    const char *s;
    if (!kb_decode_string(obj, key, max_len, &s, error))
        return FALSE;
    *out = s == NULL || (empty_is_null && *s == '\0') ? NULL : g_intern_string(s);
    return TRUE;
}

gboolean kb_decode_int(json_object *obj, const char *key, gint64 min, gint64 max, gint64 *out,
                       gboolean *present, GError **error)
{
    json_object *v = NULL;
    if (present != NULL)
        *present = FALSE;
    if (!json_object_object_get_ex(obj, key, &v) || v == NULL)
        return TRUE;
    if (!json_object_is_type(v, json_type_int))
        return kb_decode_type_error(error, key, "an integer", v);
    /* json-c clamps values beyond int64 to the int64 range: the range check catches them. */
    gint64 i = json_object_get_int64(v);
    if (i < min || i > max) {
        g_autofree char *got = kb_decode_describe(v);
        return kb_decode_check_range(key, i, got, min, max, error);
    }
    *out = i;
    if (present != NULL)
        *present = TRUE;
    return TRUE;
}

gboolean kb_decode_bool(json_object *obj, const char *key, gboolean *out, GError **error)
{
    json_object *v;
    if (!kb_decode_member(obj, key, json_type_boolean, &v, error))
        return FALSE;
    if (v != NULL)
        *out = json_object_get_boolean(v);
    return TRUE;
}

gboolean kb_decode_array(json_object *obj, const char *key, gsize max_items, json_object **out,
                         gsize *n, GError **error)
{
    *n = 0;
    if (!kb_decode_member(obj, key, json_type_array, out, error))
        return FALSE;
    if (*out == NULL)
        return TRUE;
    gsize len = json_object_array_length(*out);
    if (len > max_items) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "%s: %" G_GSIZE_FORMAT " items, more than %" G_GSIZE_FORMAT, key, len,
                    max_items);
        *out = NULL;
        return FALSE;
    }
    *n = len;
    return TRUE;
}

gboolean kb_decode_element(json_object *array, gsize i, json_object **out, GError **error)
{
    json_object *v = json_object_array_get_idx(array, i);
    if (v == NULL || !json_object_is_type(v, json_type_object)) {
        g_autofree char *idx = g_strdup_printf("[%" G_GSIZE_FORMAT "]", i);
        return kb_decode_type_error(error, idx, "an object", v);
    }
    *out = v;
    return TRUE;
}

void kb_decode_string_map_insert(GHashTable *table, KbStringMapMode mode, const char *k,
                                 gboolean k_interned, const char *v)
{
    const char *ik = k_interned || mode == KB_STRING_MAP_OWNED ? k : g_intern_string(k);
    switch (mode) {
    case KB_STRING_MAP_OWNED:
        g_hash_table_insert(table, g_strdup(k), g_strdup(v));
        break;
    case KB_STRING_MAP_INTERN_KEYS:
        g_hash_table_insert(table, (gpointer)ik, g_strdup(v));
        break;
    case KB_STRING_MAP_INTERNED:
        g_hash_table_insert(table, (gpointer)ik, (gpointer)g_intern_string(v));
        break;
    }
}

gboolean kb_decode_string_map(json_object *obj, const char *key, gsize max_value,
                              KbStringMapMode mode, GHashTable *table, GError **error)
{
    json_object *map;
    if (!kb_decode_member(obj, key, json_type_object, &map, error))
        return FALSE;
    if (map == NULL)
        return TRUE;
    if (!kb_decode_check_map_size(key, (gsize)json_object_object_length(map), error))
        return FALSE;
    json_object_object_foreach(map, k, v)
    {
        if (!kb_decode_check_map_key(key, k, strlen(k), error))
            return FALSE;
        if (!json_object_is_type(v, json_type_string) ||
            (gsize)json_object_get_string_len(v) > max_value) {
            /* Formatted only when something is wrong. */
            g_autofree char *field = g_strdup_printf("%s[\"%s\"]", key, k);
            if (!json_object_is_type(v, json_type_string))
                return kb_decode_type_error(error, field, "a string", v);
            return kb_decode_check_length(field, (gsize)json_object_get_string_len(v), max_value,
                                          error);
        }
        kb_decode_string_map_insert(table, mode, k, FALSE, json_object_get_string(v));
    }
    return TRUE;
}

void kb_decode_prefix_object(GError **error, const char *kind, const KbObjectMeta *meta)
{
    if (meta->name == NULL)
        g_prefix_error(error, "%s: ", kind);
    else if (meta->namespace_ == NULL)
        g_prefix_error(error, "%s %s: ", kind, meta->name);
    else
        g_prefix_error(error, "%s %s/%s: ", kind, meta->namespace_, meta->name);
}

gboolean kb_decode_taint_effect(const char *s, KbTaintEffect *effect)
{
    if (strcmp(s, "NoSchedule") == 0)
        *effect = KB_EFFECT_NO_SCHEDULE;
    else if (strcmp(s, "PreferNoSchedule") == 0)
        *effect = KB_EFFECT_PREFER_NO_SCHEDULE;
    else if (strcmp(s, "NoExecute") == 0)
        *effect = KB_EFFECT_NO_EXECUTE;
    else
        return FALSE;
    return TRUE;
}
