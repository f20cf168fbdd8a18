/* JSON helpers for the in-memory API server (see kas-json.h). */
#include "testbed/apiserver/kas-json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yaml.h>

#include "kube/kb-error.h"

/*
 * A tokener per thread and depth, reset before each parse instead of made and freed: a new one
 * callocs its stack (over 1 KiB, a large-bin request that makes glibc consolidate its fastbins
 * first), which was a tenth of kb-apiserver's CPU in a run of claim status PATCHes and
 * Bindings. Freed when its thread ends.
 */
static GPrivate body_tokener = G_PRIVATE_INIT((GDestroyNotify)json_tokener_free);
static GPrivate stored_tokener = G_PRIVATE_INIT((GDestroyNotify)json_tokener_free);

static json_tokener *thread_tokener(GPrivate *key, int depth)
{
    json_tokener *tok = g_private_get(key);
    if (tok != NULL) {
        json_tokener_reset(tok);
        return tok;
    }
    tok = json_tokener_new_ex(depth);
    if (tok != NULL)
        g_private_set(key, tok);
    return tok;
}

json_object *kas_json_parse(const char *text, gsize len, GError **error)
{
    json_tokener *tok = thread_tokener(&body_tokener, KAS_JSON_MAX_DEPTH);
    if (tok == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "out of memory");
        return NULL;
    }
    json_object *obj = NULL;
    if (len > G_MAXINT) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "body too large to parse");
    } else {
        obj = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        gsize end = json_tokener_get_parse_end(tok);
        if (jerr == json_tokener_continue) {
            /* A complete number at the very end needs an explicit end of input (the text was
             * read whole: the end counts from there, not from that second call's input). */
            obj = json_tokener_parse_ex(tok, "", 1);
            jerr = json_tokener_get_error(tok);
            end = len;
        }
        if (jerr != json_tokener_success) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "invalid JSON at byte %zu: %s", end,
                        json_tokener_error_desc(jerr));
            json_object_put(obj);
            obj = NULL;
        } else {
            /* Only whitespace may follow the value. */
            for (gsize i = end; i < len; i++) {
                if (!g_ascii_isspace(text[i]) && text[i] != '\0') {
                    g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                                "invalid JSON at byte %zu: trailing data after the value", i);
                    json_object_put(obj);
                    obj = NULL;
                    break;
                }
            }
        }
    }
    json_tokener_reset(tok); /* drop what a failed parse left */
    return obj;
}

json_object *kas_json_parse_stored(const char *text)
{
    json_tokener *tok = thread_tokener(&stored_tokener, JSON_TOKENER_DEFAULT_DEPTH);
    if (tok == NULL)
        return NULL;
    json_object *obj = json_tokener_parse_ex(tok, text, -1);
    if (json_tokener_get_error(tok) != json_tokener_success)
        g_clear_pointer(&obj, json_object_put);
    json_tokener_reset(tok);
    return obj;
}

char *kas_json_dump(json_object *obj)
{
    return g_strdup(json_object_to_json_string_ext(
        obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

json_object *kas_json_get(json_object *obj, const char *dotted)
{
    const char *p = dotted;
    while (obj != NULL && *p != '\0') {
        const char *dot = strchr(p, '.');
        gsize n = dot != NULL ? (gsize)(dot - p) : strlen(p);
        char key[256];
        if (n >= sizeof key || !json_object_is_type(obj, json_type_object))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        json_object *next = NULL;
        if (!json_object_object_get_ex(obj, key, &next))
            return NULL;
        obj = next;
        p += n;
        if (*p == '.')
            p++;
    }
    return obj;
}

const char *kas_json_get_string(json_object *obj, const char *dotted)
{
    json_object *v = kas_json_get(obj, dotted);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

json_object *kas_json_ensure_object(json_object *parent, const char *key)
{
    json_object *v = NULL;
    if (json_object_object_get_ex(parent, key, &v) && json_object_is_type(v, json_type_object))
        return v;
    v = json_object_new_object();
    json_object_object_add(parent, key, v);
    return v;
}

void kas_json_set_string(json_object *obj, const char *key, const char *value)
{
    json_object_object_add(obj, key, json_object_new_string(value));
}

/* ---- merge patch ----------------------------------------------------------------------------- */

json_object *kas_json_merge_patch(json_object *target, json_object *patch)
{
    if (!json_object_is_type(patch, json_type_object)) {
        json_object_put(target);
        json_object *copy = NULL;
        json_object_deep_copy(patch, &copy, NULL);
        return copy;
    }
    if (!json_object_is_type(target, json_type_object)) {
        json_object_put(target);
        target = json_object_new_object();
    }
    json_object_object_foreach(patch, key, value)
    {
        if (value == NULL) {
            json_object_object_del(target, key);
            continue;
        }
        json_object *cur = NULL;
        json_object_object_get_ex(target, key, &cur);
        json_object *merged = kas_json_merge_patch(json_object_get(cur), value);
        json_object_object_add(target, key, merged);
    }
    return target;
}

/* ---- strategic merge patch (simplified) --------------------------------------------------------- */

static const char *const merge_keys[] = { "name", "containerPort", "mountPath", "devicePath",
                                          "ip", "type", "key", NULL };

static const char *list_merge_key(json_object *list)
{
    gsize n = json_object_array_length(list);
    if (n == 0)
        return NULL;
    for (const char *const *k = merge_keys; *k != NULL; k++) {
        gboolean all = TRUE;
        for (gsize i = 0; i < n && all; i++) {
            json_object *e = json_object_array_get_idx(list, i);
            json_object *v = NULL;
            all = json_object_is_type(e, json_type_object) && json_object_object_get_ex(e, *k, &v);
        }
        if (all)
            return *k;
    }
    return NULL;
}

static gssize find_by_key(json_object *list, const char *key, json_object *value)
{
    gsize n = json_object_array_length(list);
    for (gsize i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        json_object *v = NULL;
        if (json_object_object_get_ex(e, key, &v) && json_object_equal(v, value))
            return (gssize)i;
    }
    return -1;
}

static json_object *strategic_list(json_object *target, json_object *patch)
{
    const char *key = list_merge_key(patch);
    if (key == NULL || !json_object_is_type(target, json_type_array)) {
        json_object_put(target);
        json_object *copy = NULL;
        json_object_deep_copy(patch, &copy, NULL);
        return copy;
    }
    gsize n = json_object_array_length(patch);
    for (gsize i = 0; i < n; i++) {
        json_object *pe = json_object_array_get_idx(patch, i);
        json_object *kv = NULL;
        json_object_object_get_ex(pe, key, &kv);
        gssize at = find_by_key(target, key, kv);
        const char *directive = kas_json_get_string(pe, "$patch");
        if (directive != NULL && strcmp(directive, "delete") == 0) {
            if (at >= 0)
                json_object_array_del_idx(target, (gsize)at, 1);
        } else if (at >= 0) {
            json_object *cur = json_object_get(json_object_array_get_idx(target, (gsize)at));
            json_object_array_put_idx(target, (gsize)at, kas_json_strategic_merge(cur, pe));
        } else {
            json_object_array_add(target, kas_json_strategic_merge(NULL, pe));
        }
    }
    return target;
}

json_object *kas_json_strategic_merge(json_object *target, json_object *patch)
{
    if (!json_object_is_type(patch, json_type_object))
        return kas_json_merge_patch(target, patch);
    const char *directive = kas_json_get_string(patch, "$patch");
    if (directive != NULL && strcmp(directive, "replace") == 0) {
        json_object_put(target);
        target = NULL;
    }
    if (!json_object_is_type(target, json_type_object)) {
        json_object_put(target);
        target = json_object_new_object();
    }
    json_object_object_foreach(patch, key, value)
    {
        if (key[0] == '$')
            continue;
        if (value == NULL) {
            json_object_object_del(target, key);
            continue;
        }
        json_object *cur = NULL;
        json_object_object_get_ex(target, key, &cur);
        json_object *merged;
        if (json_object_is_type(value, json_type_array))
            merged = strategic_list(json_object_get(cur), value);
        else
            merged = kas_json_strategic_merge(json_object_get(cur), value);
        json_object_object_add(target, key, merged);
    }
    return target;
}

/* ---- JSON patch ------------------------------------------------------------------------------------ */

/* Split a JSON pointer into unescaped tokens; NULL on a malformed pointer. */
static char **pointer_tokens(const char *ptr)
{
    if (ptr == NULL || (ptr[0] != '\0' && ptr[0] != '/'))
        return NULL;
    if (ptr[0] == '\0')
        return g_new0(char *, 1);
    char **parts = g_strsplit(ptr + 1, "/", -1);
    for (char **p = parts; *p != NULL; p++) {
        GString *s = g_string_new(NULL);
        for (const char *c = *p; *c != '\0'; c++) {
            if (c[0] == '~' && c[1] == '1') {
                g_string_append_c(s, '/');
                c++;
            } else if (c[0] == '~' && c[1] == '0') {
                g_string_append_c(s, '~');
                c++;
            } else {
                g_string_append_c(s, *c);
            }
        }
        g_free(*p);
        *p = g_string_free(s, FALSE);
    }
    return parts;
}

static gboolean array_index(json_object *arr, const char *tok, gboolean allow_end, gsize *out)
{
    gsize n = json_object_array_length(arr);
    if (allow_end && strcmp(tok, "-") == 0) {
        *out = n;
        return TRUE;
    }
    char *end = NULL;
    if (!g_ascii_isdigit(tok[0]))
        return FALSE;
    guint64 v = g_ascii_strtoull(tok, &end, 10);
    if (*end != '\0' || v > n || (!allow_end && v == n))
        return FALSE;
    *out = (gsize)v;
    return TRUE;
}

/* The container holding the last token of @toks (borrowed), or NULL. */
static json_object *pointer_parent(json_object *doc, char **toks)
{
    guint n = g_strv_length(toks);
    json_object *cur = doc;
    for (guint i = 0; i + 1 < n && cur != NULL; i++) {
        json_object *next = NULL;
        if (json_object_is_type(cur, json_type_object)) {
            json_object_object_get_ex(cur, toks[i], &next);
        } else if (json_object_is_type(cur, json_type_array)) {
            gsize idx;
            if (array_index(cur, toks[i], FALSE, &idx))
                next = json_object_array_get_idx(cur, idx);
        }
        cur = next;
    }
    return cur;
}

static json_object *pointer_get(json_object *doc, char **toks)
{
    guint n = g_strv_length(toks);
    if (n == 0)
        return doc;
    json_object *parent = pointer_parent(doc, toks);
    json_object *v = NULL;
    if (json_object_is_type(parent, json_type_object)) {
        json_object_object_get_ex(parent, toks[n - 1], &v);
    } else if (json_object_is_type(parent, json_type_array)) {
        gsize idx;
        if (array_index(parent, toks[n - 1], FALSE, &idx))
            v = json_object_array_get_idx(parent, idx);
    }
    return v;
}

/* Removes the value at @toks and returns it (new reference), or NULL when absent. */
static json_object *pointer_remove(json_object *doc, char **toks)
{
    guint n = g_strv_length(toks);
    if (n == 0)
        return NULL;
    json_object *parent = pointer_parent(doc, toks);
    json_object *v = NULL;
    if (json_object_is_type(parent, json_type_object)) {
        if (json_object_object_get_ex(parent, toks[n - 1], &v)) {
            json_object_get(v);
            json_object_object_del(parent, toks[n - 1]);
            return v != NULL ? v : json_object_new_null();
        }
    } else if (json_object_is_type(parent, json_type_array)) {
        gsize idx;
        if (array_index(parent, toks[n - 1], FALSE, &idx)) {
            v = json_object_get(json_object_array_get_idx(parent, idx));
            json_object_array_del_idx(parent, idx, 1);
            return v != NULL ? v : json_object_new_null();
        }
    }
    return NULL;
}

/* json-c 0.16 has no insert: shift the tail by one. */
static void array_insert(json_object *arr, gsize idx, json_object *value)
{
    gsize n = json_object_array_length(arr);
    json_object_array_add(arr, NULL);
    for (gsize i = n; i > idx; i--)
        json_object_array_put_idx(arr, i, json_object_get(json_object_array_get_idx(arr, i - 1)));
    json_object_array_put_idx(arr, idx, value);
}

/* Adds @value (consumed) at @toks; FALSE when the parent is missing or the index is invalid. */
static gboolean pointer_add(json_object **doc, char **toks, json_object *value, gboolean replace)
{
    guint n = g_strv_length(toks);
    if (n == 0) {
        json_object_put(*doc);
        *doc = value;
        return TRUE;
    }
    json_object *parent = pointer_parent(*doc, toks);
    if (json_object_is_type(parent, json_type_object)) {
        json_object_object_add(parent, toks[n - 1], value);
        return TRUE;
    }
    if (json_object_is_type(parent, json_type_array)) {
        gsize idx;
        if (array_index(parent, toks[n - 1], !replace, &idx)) {
            if (replace) {
                json_object_array_put_idx(parent, idx, value);
            } else if (idx == json_object_array_length(parent)) {
                json_object_array_add(parent, value);
            } else {
                array_insert(parent, idx, value);
            }
            return TRUE;
        }
    }
    json_object_put(value);
    return FALSE;
}

static gboolean patch_one(json_object **doc, json_object *op, GError **error)
{
    const char *name = kas_json_get_string(op, "op");
    const char *path = kas_json_get_string(op, "path");
    g_auto(GStrv) toks = pointer_tokens(path);
    if (name == NULL || toks == NULL) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "operation needs \"op\" and a valid \"path\"");
        return FALSE;
    }
    json_object *value = NULL;
    gboolean has_value = json_object_object_get_ex(op, "value", &value);
    if (strcmp(name, "test") == 0) {
        if (!json_object_equal(pointer_get(*doc, toks), value)) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "test operation failed at %s", path);
            return FALSE;
        }
        return TRUE;
    }
    json_object *moved = NULL;
    if (strcmp(name, "replace") == 0) {
        if (!has_value)
            goto missing_value;
        if (g_strv_length(toks) > 0 && pointer_get(*doc, toks) == NULL)
            goto missing_path;
        json_object_deep_copy(value, &moved, NULL);
        if (!pointer_add(doc, toks, moved, TRUE))
            goto missing_path;
        return TRUE;
    }
    if (strcmp(name, "remove") == 0) {
        moved = pointer_remove(*doc, toks);
        if (moved == NULL)
            goto missing_path;
        json_object_put(moved);
        return TRUE;
    }
    if (strcmp(name, "add") == 0) {
        if (!has_value)
            goto missing_value;
        json_object_deep_copy(value, &moved, NULL);
    } else if (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) {
        g_auto(GStrv) from = pointer_tokens(kas_json_get_string(op, "from"));
        if (from == NULL || pointer_get(*doc, from) == NULL) {
            g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "%s operation: missing \"from\" value",
                        name);
            return FALSE;
        }
        if (name[0] == 'm')
            moved = pointer_remove(*doc, from);
        else
            json_object_deep_copy(pointer_get(*doc, from), &moved, NULL);
    } else {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "unknown JSON patch operation \"%s\"", name);
        return FALSE;
    }
    if (!pointer_add(doc, toks, moved, FALSE)) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "%s operation does not apply: doc is missing path: \"%s\"",
                    name, path);
        return FALSE;
    }
    return TRUE;
missing_value:
    g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "%s operation: missing \"value\"", name);
    return FALSE;
missing_path:
    g_set_error(error, KB_ERROR, KB_ERROR_INVALID,
                "%s operation does not apply: doc is missing path: \"%s\"", name, path);
    return FALSE;
}

gboolean kas_json_patch_apply(json_object **doc, json_object *ops, GError **error)
{
    if (!json_object_is_type(ops, json_type_array)) {
        g_set_error(error, KB_ERROR, KB_ERROR_INVALID, "a JSON patch must be an array of operations");
        return FALSE;
    }
    gsize n = json_object_array_length(ops);
    for (gsize i = 0; i < n; i++) {
        if (!patch_one(doc, json_object_array_get_idx(ops, i), error)) {
            g_prefix_error(error, "JSON patch operation %zu: ", i);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean kas_json_spec_changed(json_object *a, json_object *b)
{
    json_object_object_foreach(a, ka, va)
    {
        if (strcmp(ka, "metadata") == 0 || strcmp(ka, "status") == 0)
            continue;
        json_object *vb = NULL;
        if (!json_object_object_get_ex(b, ka, &vb) || !json_object_equal(va, vb))
            return TRUE;
    }
    json_object_object_foreach(b, kb, vb2)
    {
        (void)vb2;
        if (strcmp(kb, "metadata") == 0 || strcmp(kb, "status") == 0)
            continue;
        if (!json_object_object_get_ex(a, kb, NULL))
            return TRUE;
    }
    return FALSE;
}

/* ---- JSONPath subset ------------------------------------------------------------------------------- */

static void jsonpath_step(GPtrArray *in, GPtrArray *out, const char *seg_key, gboolean is_index,
                          gint64 lo, gint64 hi, gboolean is_slice, gboolean all)
{
    for (guint i = 0; i < in->len; i++) {
        json_object *v = g_ptr_array_index(in, i);
        if (seg_key != NULL) {
            json_object *next = NULL;
            if (json_object_is_type(v, json_type_object) &&
                json_object_object_get_ex(v, seg_key, &next) && next != NULL)
                g_ptr_array_add(out, next);
            continue;
        }
        if (!json_object_is_type(v, json_type_array))
            continue;
        gint64 n = (gint64)json_object_array_length(v);
        if (all) {
            for (gint64 j = 0; j < n; j++)
                g_ptr_array_add(out, json_object_array_get_idx(v, (gsize)j));
        } else if (is_index) {
            gint64 j = lo < 0 ? n + lo : lo;
            if (j >= 0 && j < n)
                g_ptr_array_add(out, json_object_array_get_idx(v, (gsize)j));
        } else if (is_slice) {
            gint64 a = lo < 0 ? MAX(n + lo, 0) : MIN(lo, n);
            gint64 b = hi == G_MAXINT64 ? n : (hi < 0 ? MAX(n + hi, 0) : MIN(hi, n));
            for (gint64 j = a; j < b; j++)
                g_ptr_array_add(out, json_object_array_get_idx(v, (gsize)j));
        }
    }
}

GPtrArray *kas_jsonpath_eval(json_object *obj, const char *path)
{
    GPtrArray *cur = g_ptr_array_new();
    g_ptr_array_add(cur, obj);
    const char *p = path;
    if (*p == '{') /* kubectl style "{.a.b}" */
        p++;
    if (*p == '$')
        p++;
    while (*p != '\0' && *p != '}' && cur->len > 0) {
        GPtrArray *next = g_ptr_array_new();
        if (*p == '.') {
            p++;
            gsize n = strcspn(p, ".[}");
            g_autofree char *key = g_strndup(p, n);
            p += n;
            if (n > 0)
                jsonpath_step(cur, next, key, FALSE, 0, 0, FALSE, FALSE);
            else
                g_ptr_array_extend(next, cur, NULL, NULL);
        } else if (*p == '[') {
            const char *close = strchr(p, ']');
            if (close == NULL) {
                g_ptr_array_free(next, TRUE);
                next = g_ptr_array_new();
                g_ptr_array_free(cur, TRUE);
                return next;
            }
            g_autofree char *in = g_strndup(p + 1, (gsize)(close - p - 1));
            p = close + 1;
            if (in[0] == '\'' || in[0] == '"') {
                gsize l = strlen(in);
                if (l >= 2)
                    in[l - 1] = '\0';
                jsonpath_step(cur, next, in + 1, FALSE, 0, 0, FALSE, FALSE);
            } else if (strcmp(in, "*") == 0) {
                jsonpath_step(cur, next, NULL, FALSE, 0, 0, FALSE, TRUE);
            } else if (strchr(in, ':') != NULL) {
                char *colon = strchr(in, ':');
                *colon = '\0';
                gint64 lo = in[0] != '\0' ? g_ascii_strtoll(in, NULL, 10) : 0;
                gint64 hi = colon[1] != '\0' ? g_ascii_strtoll(colon + 1, NULL, 10) : G_MAXINT64;
                jsonpath_step(cur, next, NULL, FALSE, lo, hi, TRUE, FALSE);
            } else {
                jsonpath_step(cur, next, NULL, TRUE, g_ascii_strtoll(in, NULL, 10), 0, FALSE,
                              FALSE);
            }
        } else {
            /* Filters and other JSONPath features are not supported: no match. */
            g_ptr_array_set_size(cur, 0);
            g_ptr_array_free(next, TRUE);
            break;
        }
        g_ptr_array_free(cur, TRUE);
        cur = next;
    }
    return cur;
}

/* ---- YAML ------------------------------------------------------------------------------------------ */

static json_object *yaml_plain_scalar(const char *s)
{
    static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
    for (const char *const *n = nulls; *n != NULL; n++)
        if (strcmp(s, *n) == 0)
            return NULL;
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
        return json_object_new_boolean(TRUE);
    if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0)
        return json_object_new_boolean(FALSE);
    char *end = NULL;
    errno = 0;
    gint64 i = g_ascii_strtoll(s, &end, 10);
    if (end != s && *end == '\0' && errno == 0 && (g_ascii_isdigit(s[0]) || s[0] == '-' || s[0] == '+'))
        return json_object_new_int64(i);
    if (g_ascii_isdigit(s[0]) || ((s[0] == '-' || s[0] == '+' || s[0] == '.') && g_ascii_isdigit(s[1]))) {
        double d = g_ascii_strtod(s, &end);
        if (end != s && *end == '\0')
            return json_object_new_double(d);
    }
    return json_object_new_string(s);
}

/* Attach @v (consumed) to the container on top of @stack; keys wait in @pending_key. */
static void yaml_attach(GPtrArray *stack, GPtrArray *keys, json_object *v, json_object **root)
{
    if (stack->len == 0) {
        json_object_put(*root);
        *root = v;
        return;
    }
    json_object *top = g_ptr_array_index(stack, stack->len - 1);
    if (json_object_is_type(top, json_type_array)) {
        json_object_array_add(top, v);
        return;
    }
    char **key = (char **)&keys->pdata[keys->len - 1];
    if (*key == NULL) {
        *key = g_strdup(v != NULL ? json_object_get_string(v) : "");
        json_object_put(v);
    } else {
        json_object_object_add(top, *key, v);
        g_clear_pointer(key, g_free);
    }
}

json_object *kas_yaml_to_json(const char *text, gsize len, GError **error)
{
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    g_autoptr(GPtrArray) stack = g_ptr_array_new();
    g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
    json_object *docs = json_object_new_array();
    json_object *root = NULL;
    gboolean done = FALSE, ok = TRUE;
    while (!done && ok) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "YAML line %zu column %zu: %s",
                        parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                        parser.problem != NULL ? parser.problem : "parse error");
            ok = FALSE;
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = TRUE;
            break;
        case YAML_DOCUMENT_END_EVENT:
            json_object_array_add(docs, root);
            root = NULL;
            break;
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT: {
            if (stack->len >= KAS_JSON_MAX_DEPTH) {
                g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "YAML nested deeper than %d",
                            KAS_JSON_MAX_DEPTH);
                ok = FALSE;
                break;
            }
            json_object *c = ev.type == YAML_MAPPING_START_EVENT ? json_object_new_object()
                                                                 : json_object_new_array();
            yaml_attach(stack, keys, json_object_get(c), &root);
            g_ptr_array_add(stack, c);
            g_ptr_array_add(keys, NULL);
            break;
        }
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            json_object_put(g_ptr_array_steal_index(stack, stack->len - 1));
            g_ptr_array_remove_index(keys, keys->len - 1);
            break;
        case YAML_SCALAR_EVENT: {
            const char *s = (const char *)ev.data.scalar.value;
            json_object *v = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE
                                 ? yaml_plain_scalar(s)
                                 : json_object_new_string_len(s, (int)ev.data.scalar.length);
            yaml_attach(stack, keys, v, &root);
            break;
        }
        case YAML_ALIAS_EVENT:
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "YAML line %zu: aliases are not supported",
                        ev.start_mark.line + 1);
            ok = FALSE;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    for (guint i = 0; i < stack->len; i++)
        json_object_put(g_ptr_array_index(stack, i));
    json_object_put(root);
    if (!ok) {
        json_object_put(docs);
        return NULL;
    }
    /* Empty documents ("---" separators at the ends) are dropped. */
    json_object *kept = json_object_new_array();
    for (gsize i = 0; i < json_object_array_length(docs); i++) {
        json_object *d = json_object_array_get_idx(docs, i);
        if (d != NULL)
            json_object_array_add(kept, json_object_get(d));
    }
    json_object_put(docs);
    if (json_object_array_length(kept) == 1) {
        json_object *one = json_object_get(json_object_array_get_idx(kept, 0));
        json_object_put(kept);
        return one;
    }
    return kept;
}

/* ---- time -------------------------------------------------------------------------------------------- */

char *kas_time_format(gint64 unix_seconds)
{
    time_t t = (time_t)unix_seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    char buf[32];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return g_strdup(buf);
}

gint64 kas_time_parse(const char *s)
{
    if (s == NULL)
        return -1;
    g_autoptr(GDateTime) dt = g_date_time_new_from_iso8601(s, NULL);
    return dt != NULL ? g_date_time_to_unix(dt) : -1;
}

char *kas_human_duration(gint64 seconds)
{
    if (seconds < -1)
        return g_strdup("<invalid>");
    if (seconds < 0)
        return g_strdup("0s");
    if (seconds < 120)
        return g_strdup_printf("%" G_GINT64_FORMAT "s", seconds);
    gint64 minutes = seconds / 60;
    if (minutes < 10)
        return seconds % 60 == 0 ? g_strdup_printf("%" G_GINT64_FORMAT "m", minutes)
                                 : g_strdup_printf("%" G_GINT64_FORMAT "m%" G_GINT64_FORMAT "s",
                                                   minutes, seconds % 60);
    if (minutes < 180)
        return g_strdup_printf("%" G_GINT64_FORMAT "m", minutes);
    gint64 hours = seconds / 3600;
    if (hours < 8)
        return minutes % 60 == 0 ? g_strdup_printf("%" G_GINT64_FORMAT "h", hours)
                                 : g_strdup_printf("%" G_GINT64_FORMAT "h%" G_GINT64_FORMAT "m",
                                                   hours, minutes % 60);
    if (hours < 48)
        return g_strdup_printf("%" G_GINT64_FORMAT "h", hours);
    if (hours < 24 * 8)
        return hours % 24 == 0 ? g_strdup_printf("%" G_GINT64_FORMAT "d", hours / 24)
                               : g_strdup_printf("%" G_GINT64_FORMAT "d%" G_GINT64_FORMAT "h",
                                                 hours / 24, hours % 24);
    if (hours < 24 * 365 * 2)
        return g_strdup_printf("%" G_GINT64_FORMAT "d", hours / 24);
    if (hours < 24 * 365 * 8) {
        gint64 dy = (hours / 24) % 365;
        return dy == 0 ? g_strdup_printf("%" G_GINT64_FORMAT "y", hours / 24 / 365)
                       : g_strdup_printf("%" G_GINT64_FORMAT "y%" G_GINT64_FORMAT "d",
                                         hours / 24 / 365, dy);
    }
    return g_strdup_printf("%" G_GINT64_FORMAT "y", hours / 24 / 365);
}
