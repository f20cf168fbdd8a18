/* CRD schemas: protected groups, structural checks, pruning, validation (see kas-schema.h). */
#include "testbed/apiserver/kas-schema.h"

#include <math.h>
#include <string.h>

#include "testbed/apiserver/kas-json.h"

#define APPROVAL "api-approved.kubernetes.io"

static gboolean flag(json_object *schema, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(schema, key, &v) && json_object_get_boolean(v);
}

static json_object *member(json_object *obj, const char *key)
{
    json_object *v = NULL;
    if (!json_object_is_type(obj, json_type_object) || !json_object_object_get_ex(obj, key, &v))
        return NULL;
    return v;
}

/* ---- the CRD itself ------------------------------------------------------------------------- */

static gboolean protected_group(const char *group)
{
    return strcmp(group, "k8s.io") == 0 || strcmp(group, "kubernetes.io") == 0 ||
           g_str_has_suffix(group, ".k8s.io") || g_str_has_suffix(group, ".kubernetes.io");
}

/* url.ParseRequestURI accepting: an absolute URL (scheme:...) or an absolute path. */
static gboolean request_uri(const char *s)
{
    if (s[0] == '/')
        return TRUE;
    const char *colon = strchr(s, ':');
    if (colon == NULL || colon == s || !g_ascii_isalpha(s[0]))
        return FALSE;
    for (const char *p = s; p < colon; p++)
        if (!g_ascii_isalnum(*p) && *p != '+' && *p != '-' && *p != '.')
            return FALSE;
    return TRUE;
}

static void check_approval(json_object *crd, KasFieldErrors *errs)
{
    const char *group = kas_json_get_string(crd, "spec.group");
    if (group == NULL || !protected_group(group))
        return;
    json_object *v = member(kas_json_get(crd, "metadata.annotations"), APPROVAL);
    const char *field = "metadata.annotations[" APPROVAL "]";
    if (v == NULL) {
        kas_field_errors_add(
                errs, field,
                "Required value: protected groups must have approval annotation \"" APPROVAL
                "\", see https://github.com/kubernetes/enhancements/pull/1111");
        return;
    }
    const char *s = json_object_get_string(v);
    if (g_str_has_prefix(s, "unapproved") || request_uri(s))
        return;
    kas_field_errors_addf(
            errs, field,
            "Invalid value: \"%s\": protected groups must have approval annotation "
            "\"" APPROVAL "\" with either a URL or a reason starting with "
            "\"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111",
            s);
}

/* Is @s a structural schema node? Errors at @path. */
static void check_node(json_object *s, const char *path, gboolean root, guint depth,
                       KasFieldErrors *errs)
{
    if (depth > KAS_SCHEMA_MAX_DEPTH) {
        kas_field_errors_addf(errs, path, "Forbidden: must not be nested deeper than %d",
                              KAS_SCHEMA_MAX_DEPTH);
        return;
    }
    if (!json_object_is_type(s, json_type_object)) {
        kas_field_errors_add(errs, path, "Invalid value: must be an object");
        return;
    }
    const char *type = kas_json_get_string(s, "type");
    g_autofree char *tpath = g_strdup_printf("%s.type", path);
    if ((type == NULL || type[0] == '\0') && !flag(s, "x-kubernetes-int-or-string") &&
        !flag(s, "x-kubernetes-preserve-unknown-fields") &&
        !flag(s, "x-kubernetes-embedded-resource"))
        kas_field_errors_add(errs, tpath,
                             "Required value: must not be empty for specified object fields");
    if (root && type != NULL && type[0] != '\0' && strcmp(type, "object") != 0)
        kas_field_errors_addf(errs, tpath, "Invalid value: \"%s\": must be object at the root",
                              type);
    json_object *props = member(s, "properties"), *addl = member(s, "additionalProperties");
    if (props != NULL && json_object_is_type(addl, json_type_object)) {
        g_autofree char *ap = g_strdup_printf("%s.additionalProperties", path);
        kas_field_errors_add(errs, ap,
                             "Forbidden: additionalProperties and properties are mutual exclusive");
    }
    if (json_object_is_type(props, json_type_object)) {
        json_object_object_foreach(props, k, v)
        {
            g_autofree char *p = g_strdup_printf("%s.properties[%s]", path, k);
            check_node(v, p, FALSE, depth + 1, errs);
        }
    }
    json_object *items = member(s, "items");
    if (items != NULL) {
        g_autofree char *p = g_strdup_printf("%s.items", path);
        check_node(items, p, FALSE, depth + 1, errs);
    } else if (g_strcmp0(type, "array") == 0) {
        g_autofree char *p = g_strdup_printf("%s.items", path);
        kas_field_errors_add(errs, p, "Required value: must be specified");
    }
    if (json_object_is_type(addl, json_type_object)) {
        g_autofree char *p = g_strdup_printf("%s.additionalProperties", path);
        check_node(addl, p, FALSE, depth + 1, errs);
    }
}

json_object *kas_schema_of_version(json_object *crd, const char *version)
{
    json_object *vs = kas_json_get(crd, "spec.versions");
    for (gsize i = 0; json_object_is_type(vs, json_type_array) && i < json_object_array_length(vs);
         i++) {
        json_object *v = json_object_array_get_idx(vs, i);
        if (version == NULL || g_strcmp0(kas_json_get_string(v, "name"), version) == 0)
            return kas_json_get(v, "schema.openAPIV3Schema");
    }
    return NULL;
}

void kas_schema_check_crd(json_object *crd, KasFieldErrors *errs)
{
    json_object *vs = kas_json_get(crd, "spec.versions");
    gsize n = json_object_is_type(vs, json_type_array) ? json_object_array_length(vs) : 0;
    /* identical schemas are reported where v1beta1 kept one: spec.validation */
    gboolean same = TRUE;
    json_object *first =
            n > 0 ? kas_json_get(json_object_array_get_idx(vs, 0), "schema.openAPIV3Schema") : NULL;
    for (gsize i = 1; i < n; i++)
        same = same && json_object_equal(first, kas_json_get(json_object_array_get_idx(vs, i),
                                                             "schema.openAPIV3Schema"));
    for (gsize i = 0; i < n; i++) {
        json_object *schema =
                kas_json_get(json_object_array_get_idx(vs, i), "schema.openAPIV3Schema");
        g_autofree char *path =
                same ? g_strdup("spec.validation.openAPIV3Schema")
                     : g_strdup_printf("spec.versions[%zu].schema.openAPIV3Schema", i);
        if (schema == NULL) {
            g_autofree char *p = g_strdup_printf("spec.versions[%zu].schema.openAPIV3Schema", i);
            kas_field_errors_add(errs, p, "Required value: schemas are required");
            continue;
        }
        check_node(schema, path, TRUE, 0, errs);
        if (same)
            break;
    }
    check_approval(crd, errs);
}

void kas_schema_crd_defaults(json_object *crd)
{
    json_object *names = kas_json_get(crd, "spec.names");
    const char *kind = kas_json_get_string(names, "kind");
    if (json_object_is_type(names, json_object_get_type(names)) && names != NULL && kind != NULL &&
        kas_json_get(names, "listKind") == NULL) {
        g_autofree char *lk = g_strdup_printf("%sList", kind);
        kas_json_set_string(names, "listKind", lk);
    }
    json_object *spec = kas_json_get(crd, "spec");
    if (json_object_is_type(spec, json_type_object) && kas_json_get(spec, "conversion") == NULL) {
        json_object *conv = json_object_new_object();
        kas_json_set_string(conv, "strategy", "None");
        json_object_object_add(spec, "conversion", conv);
    }
}

/* ---- pruning -------------------------------------------------------------------------------- */

static void prune(json_object *schema, json_object *obj, gboolean root, guint depth)
{
    if (depth > KAS_SCHEMA_MAX_DEPTH || !json_object_is_type(schema, json_type_object))
        return;
    if (json_object_is_type(obj, json_type_array)) {
        json_object *items = member(schema, "items");
        for (gsize i = 0; items != NULL && i < json_object_array_length(obj); i++)
            prune(items, json_object_array_get_idx(obj, i), FALSE, depth + 1);
        return;
    }
    if (!json_object_is_type(obj, json_type_object))
        return;
    gboolean keep_meta = root || flag(schema, "x-kubernetes-embedded-resource");
    gboolean preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    json_object *props = member(schema, "properties"),
                *addl = member(schema, "additionalProperties");
    g_autoptr(GPtrArray) drop = g_ptr_array_new_with_free_func(g_free);
    json_object_object_foreach(obj, k, v)
    {
        if (keep_meta &&
            (strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0 || strcmp(k, "metadata") == 0))
            continue;
        json_object *sub = member(props, k);
        if (sub != NULL)
            prune(sub, v, FALSE, depth + 1);
        else if (json_object_is_type(addl, json_type_object))
            prune(addl, v, FALSE, depth + 1);
        else if (!preserve && !json_object_is_type(addl, json_type_boolean))
            g_ptr_array_add(drop, g_strdup(k));
    }
    for (guint i = 0; i < drop->len; i++)
        json_object_object_del(obj, g_ptr_array_index(drop, i));
}

void kas_schema_prune(json_object *schema, json_object *obj)
{
    if (schema != NULL)
        prune(schema, obj, TRUE, 0);
}

/* ---- validation ----------------------------------------------------------------------------- */

typedef struct {
    KasFieldErrors *errs;
} Ctx;

static const char *json_type_name(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null:
        return "null";
    case json_type_boolean:
        return "boolean";
    case json_type_int:
        return "integer";
    case json_type_double: {
        double d = json_object_get_double(v);
        return d == floor(d) && fabs(d) < 9e15 ? "integer" : "number";
    }
    case json_type_string:
        return "string";
    case json_type_array:
        return "array";
    default:
        return "object";
    }
}

static gboolean type_ok(const char *want, json_object *v)
{
    const char *have = json_type_name(v);
    return strcmp(want, have) == 0 || (strcmp(want, "number") == 0 && strcmp(have, "integer") == 0);
}

/* Go's %v of a JSON number: 0, 1.5, 1e+21 */
static char *go_number(json_object *v)
{
    if (json_object_is_type(v, json_type_int))
        return g_strdup_printf("%" G_GINT64_FORMAT, json_object_get_int64(v));
    double d = json_object_get_double(v);
    if (d == floor(d) && fabs(d) < 1e21)
        return g_strdup_printf("%.0f", d);
    return g_strdup_printf("%g", d);
}

/* The value as field.Invalid prints it: strings quoted, numbers and booleans as they are. */
static char *go_value(json_object *v)
{
    if (json_object_is_type(v, json_type_string)) {
        GString *s = g_string_new("\"");
        for (const char *p = json_object_get_string(v); *p != '\0'; p++) {
            if (*p == '"' || *p == '\\')
                g_string_append_c(s, '\\');
            g_string_append_c(s, *p);
        }
        g_string_append_c(s, '"');
        return g_string_free(s, FALSE);
    }
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
        return go_number(v);
    return g_strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
}

static gboolean full(Ctx *c)
{
    return kas_field_errors_len(c->errs) >= KAS_SCHEMA_MAX_ERRORS;
}

static void bounds(json_object *s, json_object *v, const char *path, Ctx *c)
{
    double d = json_object_get_double(v);
    json_object *min = member(s, "minimum"), *max = member(s, "maximum");
    if (min != NULL) {
        gboolean excl = flag(s, "exclusiveMinimum");
        double m = json_object_get_double(min);
        if (excl ? d <= m : d < m) {
            g_autofree char *ms = go_number(min);
            kas_field_errors_addf(c->errs, path,
                                  "Invalid value: %s: %s in body should be greater than %s%s", ms,
                                  path, excl ? "" : "or equal to ", ms);
        }
    }
    if (max != NULL) {
        gboolean excl = flag(s, "exclusiveMaximum");
        double m = json_object_get_double(max);
        if (excl ? d >= m : d > m) {
            g_autofree char *ms = go_number(max);
            kas_field_errors_addf(c->errs, path,
                                  "Invalid value: %s: %s in body should be less than %s%s", ms,
                                  path, excl ? "" : "or equal to ", ms);
        }
    }
}

static void strings(json_object *s, json_object *v, const char *path, Ctx *c)
{
    const char *str = json_object_get_string(v);
    glong len = g_utf8_strlen(str, -1);
    json_object *maxl = member(s, "maxLength"), *minl = member(s, "minLength");
    g_autofree char *gv = go_value(v);
    if (maxl != NULL && len > json_object_get_int64(maxl))
        kas_field_errors_addf(c->errs, path,
                              "Invalid value: %s: %s in body should be at most %" G_GINT64_FORMAT
                              " chars long",
                              gv, path, json_object_get_int64(maxl));
    if (minl != NULL && len < json_object_get_int64(minl))
        kas_field_errors_addf(c->errs, path,
                              "Invalid value: %s: %s in body should be at least %" G_GINT64_FORMAT
                              " chars long",
                              gv, path, json_object_get_int64(minl));
    const char *pattern = kas_json_get_string(s, "pattern");
    if (pattern != NULL) {
        g_autoptr(GRegex) re = g_regex_new(pattern, 0, 0, NULL);
        if (re != NULL && !g_regex_match(re, str, 0, NULL))
            kas_field_errors_addf(c->errs, path, "Invalid value: %s: %s in body should match '%s'",
                                  gv, path, pattern);
    }
}

static void validate(json_object *s, json_object *v, const char *path, guint depth, Ctx *c);

static void children(json_object *s, json_object *v, const char *path, guint depth, Ctx *c)
{
    if (json_object_is_type(v, json_type_array)) {
        json_object *items = member(s, "items");
        gsize n = json_object_array_length(v);
        json_object *maxi = member(s, "maxItems"), *mini = member(s, "minItems");
        if (maxi != NULL && (gint64)n > json_object_get_int64(maxi))
            kas_field_errors_addf(c->errs, path,
                                  "Too many: %zu: must have at most %" G_GINT64_FORMAT " items", n,
                                  json_object_get_int64(maxi));
        if (mini != NULL && (gint64)n < json_object_get_int64(mini))
            kas_field_errors_addf(
                    c->errs, path,
                    "Invalid value: %zu: %s in body should have at least %" G_GINT64_FORMAT
                    " items",
                    n, path, json_object_get_int64(mini));
        for (gsize i = 0; items != NULL && i < n && !full(c); i++) {
            g_autofree char *p = g_strdup_printf("%s[%zu]", path, i);
            validate(items, json_object_array_get_idx(v, i), p, depth + 1, c);
        }
        return;
    }
    if (!json_object_is_type(v, json_type_object))
        return;
    json_object *req = member(s, "required");
    for (gsize i = 0;
         json_object_is_type(req, json_type_array) && i < json_object_array_length(req); i++) {
        const char *k = json_object_get_string(json_object_array_get_idx(req, i));
        if (k != NULL && member(v, k) == NULL) {
            g_autofree char *p = *path != '\0' ? g_strdup_printf("%s.%s", path, k) : g_strdup(k);
            kas_field_errors_add(c->errs, p, "Required value");
        }
    }
    json_object *props = member(s, "properties"), *addl = member(s, "additionalProperties");
    json_object_object_foreach(v, k, cv)
    {
        if (full(c))
            break;
        if (depth == 0 &&
            (strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0 || strcmp(k, "metadata") == 0))
            continue;
        json_object *sub = member(props, k);
        if (sub == NULL && json_object_is_type(addl, json_type_object))
            sub = addl;
        if (sub == NULL)
            continue;
        g_autofree char *p = *path != '\0' ? g_strdup_printf("%s.%s", path, k) : g_strdup(k);
        validate(sub, cv, p, depth + 1, c);
    }
}

static void validate(json_object *s, json_object *v, const char *path, guint depth, Ctx *c)
{
    if (!json_object_is_type(s, json_type_object) || full(c))
        return;
    if (depth > KAS_SCHEMA_MAX_DEPTH) {
        kas_field_errors_addf(c->errs, path, "Forbidden: must not be nested deeper than %d",
                              KAS_SCHEMA_MAX_DEPTH);
        return;
    }
    const char *type = kas_json_get_string(s, "type");
    if (v == NULL) {
        if (flag(s, "nullable"))
            return;
        if (type == NULL || type[0] == '\0')
            return;
    }
    if (flag(s, "x-kubernetes-int-or-string")) {
        if (!json_object_is_type(v, json_type_string) &&
            strcmp(json_type_name(v), "integer") != 0) {
            kas_field_errors_addf(
                    c->errs, path,
                    "Invalid value: \"%s\": %s in body must be of type integer,string: \"%s\"",
                    json_type_name(v), path, json_type_name(v));
            return;
        }
    } else if (type != NULL && type[0] != '\0' && !type_ok(type, v)) {
        kas_field_errors_addf(c->errs, path,
                              "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"",
                              json_type_name(v), path, type, json_type_name(v));
        return;
    }
    json_object *en = member(s, "enum");
    if (json_object_is_type(en, json_type_array)) {
        gboolean found = FALSE;
        GString *list = g_string_new(NULL);
        for (gsize i = 0; i < json_object_array_length(en); i++) {
            json_object *e = json_object_array_get_idx(en, i);
            found = found || json_object_equal(e, v);
            g_autofree char *gv = go_value(e);
            g_string_append_printf(list, "%s%s", i > 0 ? ", " : "", gv);
        }
        if (!found) {
            g_autofree char *gv = go_value(v);
            kas_field_errors_addf(c->errs, path, "Unsupported value: %s: supported values: %s", gv,
                                  list->str);
        }
        g_string_free(list, TRUE);
    }
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))
        bounds(s, v, path, c);
    else if (json_object_is_type(v, json_type_string))
        strings(s, v, path, c);
    children(s, v, path, depth, c);
}

void kas_schema_validate(json_object *schema, json_object *obj, KasFieldErrors *errs)
{
    if (schema == NULL)
        return;
    Ctx c = {errs};
    validate(schema, obj, "", 0, &c);
}
