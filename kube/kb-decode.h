/*
 * Typed access to the members of a json-c object, for the object decoders of kube/
 * (kb-meta.c, kb-pod.c, kb-node.c, kb-podgroup.c, ...).
 *
 * Error messages start with the member's name relative to the object given ("priority: expected
 * an integer, got \"high\""); callers prefix their own path on the way up with g_prefix_error()
 * ("spec." then "pod default/p1: "), so nothing is formatted unless something is wrong.
 *
 * A member that is absent or JSON null is "absent": getters return TRUE and leave the output
 * untouched (or NULL for pointers). A member of the wrong JSON type fails with KB_ERROR_DECODE;
 * a string or array over its limit fails with KB_ERROR_LIMIT.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-objects.h"

/* A short printable rendering of @v for messages (JSON text, cut at 64 bytes); newly allocated. */
char *kb_decode_describe(json_object *v);

/* Member @key of @obj when present and of @type; *out = NULL when absent. */
gboolean kb_decode_member(json_object *obj, const char *key, json_type type, json_object **out,
                          GError **error);

/* A string member no longer than @max_len bytes. *out borrows from @obj (NULL when absent). */
gboolean kb_decode_string(json_object *obj, const char *key, gsize max_len, const char **out,
                          GError **error);

/* The same, interned with g_intern_string(); "" reads as absent (NULL) when @empty_is_null. */
gboolean kb_decode_interned(json_object *obj, const char *key, gsize max_len, gboolean empty_is_null,
                            const char **out, GError **error);

/* An integer member in [@min, @max]; *out untouched when absent. @present may be NULL. */
gboolean kb_decode_int(json_object *obj, const char *key, gint64 min, gint64 max, gint64 *out,
                       gboolean *present, GError **error);

/* A boolean member; *out untouched when absent. */
gboolean kb_decode_bool(json_object *obj, const char *key, gboolean *out, GError **error);

/* An array member with at most @max_items elements; *out = NULL and *n = 0 when absent. */
gboolean kb_decode_array(json_object *obj, const char *key, gsize max_items, json_object **out,
                         gsize *n, GError **error);

/* Element @i of @array, which must be an object ("[3]: expected an object, got 7" otherwise). */
gboolean kb_decode_element(json_object *array, gsize i, json_object **out, GError **error);

/* Set a type error "@key: expected @what, got <value>". Returns FALSE. */
gboolean kb_decode_type_error(GError **error, const char *key, const char *what, json_object *v);

/*
 * A string-to-string map member (labels, annotations, nodeSelector): at most KB_MAX_LABELS
 * entries, keys of 1..KB_MAX_LABEL_KEY_LEN bytes, values up to @max_value bytes. Entries are
 * inserted into @table interned (@intern) or as copies (the table must free both then).
 */
gboolean kb_decode_string_map(json_object *obj, const char *key, gsize max_value, gboolean intern,
                              GHashTable *table, GError **error);

/* Prefix "<kind> ns/name: " (or "<kind> name: ", "<kind>: " while the name is unknown). */
void kb_decode_prefix_object(GError **error, const char *kind, const KbObjectMeta *meta);

/* "NoSchedule", "PreferNoSchedule" or "NoExecute"; FALSE for anything else (empty included). */
gboolean kb_decode_taint_effect(const char *s, KbTaintEffect *effect);
