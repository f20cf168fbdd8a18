/*
 * JSON helpers for the in-memory API server: bounded parsing, dotted-path access, the three
 * patch formats kubectl sends (merge, JSON patch, strategic merge), a small JSONPath subset for
 * printer columns, YAML to JSON (for --nodes files only) and Kubernetes time formatting.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#define KAS_JSON_MAX_DEPTH 64

/* Parse @len bytes of @text as one JSON value, nesting at most KAS_JSON_MAX_DEPTH.
 * Returns a new reference or NULL with a message naming the byte offset. */
json_object *kas_json_parse(const char *text, gsize len, GError **error);

/* Parse NUL-terminated @text as json_tokener_parse() does (nesting at most 32, NULL when
 * malformed), for text the server wrote itself (stored objects). A new reference. Both parsers
 * keep one tokener per thread. */
json_object *kas_json_parse_stored(const char *text);

/* Compact serialization without escaped slashes; newly allocated. */
char *kas_json_dump(json_object *obj);

/* The value at a dotted path ("metadata.name"), borrowed, or NULL. */
json_object *kas_json_get(json_object *obj, const char *dotted);
/* The string at a dotted path, borrowed, or NULL when missing or not a string. */
const char *kas_json_get_string(json_object *obj, const char *dotted);
/* The object member @key of @parent, created empty when missing or not an object; borrowed. */
json_object *kas_json_ensure_object(json_object *parent, const char *key);
void kas_json_set_string(json_object *obj, const char *key, const char *value);

/* RFC 7386 merge patch: returns the merged document (new reference); @target is consumed. */
json_object *kas_json_merge_patch(json_object *target, json_object *patch);

/* Strategic merge patch, simplified: a merge patch in which lists of objects carrying a "name"
 * (or "containerPort", "type", "key", "ip", "devicePath", "mountPath") are merged element by
 * element on that key, "$patch": "delete"/"replace" are honoured, and the other "$" directives
 * ($setElementOrder, $retainKeys, $deleteFromPrimitiveList) are ignored. @target is consumed. */
json_object *kas_json_strategic_merge(json_object *target, json_object *patch);

/* RFC 6902 JSON patch: applies @ops (an array) to *@doc in place (*@doc may be replaced).
 * On error *@doc is left partially patched: callers patch a copy. */
gboolean kas_json_patch_apply(json_object **doc, json_object *ops, GError **error);

/* True when @a and @b differ outside "metadata" and "status" (a spec change for generation). */
gboolean kas_json_spec_changed(json_object *a, json_object *b);

/* Evaluate the JSONPath subset used by printer columns (".a.b", "[N]", "[-N:]", "[*]",
 * "['key']") on @obj; returns the matched values (borrowed) in a new array. */
GPtrArray *kas_jsonpath_eval(json_object *obj, const char *path);

/* YAML (one or more documents) to JSON: a single document gives its value, several an array.
 * Plain scalars follow the YAML 1.2 core schema (null, booleans, integers, floats). Aliases are
 * rejected. Returns a new reference or NULL with the line and column in the message. */
json_object *kas_yaml_to_json(const char *text, gsize len, GError **error);

/* "2006-01-02T15:04:05Z" for @unix_seconds; newly allocated. */
char *kas_time_format(gint64 unix_seconds);
/* Seconds since the epoch of an RFC 3339 time, or -1. */
gint64 kas_time_parse(const char *s);
/* apimachinery's duration.HumanDuration: "5s", "3m2s", "2d5h"; newly allocated. */
char *kas_human_duration(gint64 seconds);
