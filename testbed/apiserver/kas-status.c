/* Errors with kube-apiserver's exact Status details (see kas-status.h). */
#include "testbed/apiserver/kas-status.h"

#include <string.h>

#include "testbed/apiserver/kas-json.h"

#define DETAILS_SEP '\x1f'

/* The arrays are made at the first error: most validations find none (a claim status write
 * validates one per DRA pod bound, and their allocation was a sixth of its CPU). */
struct KasFieldErrors {
    GPtrArray *fields; /* char*; NULL while there is none */
    GPtrArray *whats;  /* char* */
};

KasFieldErrors *kas_field_errors_new(void)
{
    return g_new0(KasFieldErrors, 1);
}

static void errors_grow(KasFieldErrors *errs)
{
    if (errs->fields != NULL)
        return;
    errs->fields = g_ptr_array_new_with_free_func(g_free);
    errs->whats = g_ptr_array_new_with_free_func(g_free);
}

void kas_field_errors_free(KasFieldErrors *errs)
{
    if (errs == NULL)
        return;
    if (errs->fields != NULL) {
        g_ptr_array_unref(errs->fields);
        g_ptr_array_unref(errs->whats);
    }
    g_free(errs);
}

void kas_field_errors_add(KasFieldErrors *errs, const char *field, const char *what)
{
    errors_grow(errs);
    g_ptr_array_add(errs->fields, g_strdup(field));
    g_ptr_array_add(errs->whats, g_strdup(what));
}

void kas_field_errors_addf(KasFieldErrors *errs, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errors_grow(errs);
    g_ptr_array_add(errs->fields, g_strdup(field));
    g_ptr_array_add(errs->whats, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

guint kas_field_errors_len(const KasFieldErrors *errs)
{
    return errs->fields != NULL ? errs->fields->len : 0;
}

/* field.ErrorType names, by the text kube-apiserver starts the message with. */
static const char *cause_reason(const char *what)
{
    static const char *const types[][2] = {
            {"Invalid value", "FieldValueInvalid"},
            {"Required value", "FieldValueRequired"},
            {"Forbidden", "FieldValueForbidden"},
            {"Too long", "FieldValueTooLong"},
            {"Too many", "FieldValueTooMany"},
            {"Unsupported value", "FieldValueNotSupported"},
            {"Duplicate value", "FieldValueDuplicate"},
            {"Not found", "FieldValueNotFound"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(types); i++)
        if (g_str_has_prefix(what, types[i][0]))
            return types[i][1];
    return "InternalError";
}

gboolean kas_field_errors_check_kind(KasFieldErrors *errs, const char *kind, const char *group,
                                     const char *name, GError **error)
{
    if (errs->fields == NULL || errs->fields->len == 0)
        return TRUE;
    json_object *details = json_object_new_object();
    if (name != NULL && name[0] != '\0')
        kas_json_set_string(details, "name", name);
    if (group != NULL && group[0] != '\0')
        kas_json_set_string(details, "group", group);
    kas_json_set_string(details, "kind", kind);
    json_object *causes = json_object_new_array();
    /* the message lists each distinct "field: what" once (an aggregate of a set) */
    g_autoptr(GPtrArray) seen = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < errs->fields->len; i++) {
        const char *f = g_ptr_array_index(errs->fields, i), *w = g_ptr_array_index(errs->whats, i);
        json_object *c = json_object_new_object();
        kas_json_set_string(c, "reason", cause_reason(w));
        kas_json_set_string(c, "message", w);
        kas_json_set_string(c, "field", f);
        json_object_array_add(causes, c);
        char *line = g_strdup_printf("%s: %s", f, w);
        gboolean dup = FALSE;
        for (guint j = 0; j < seen->len && !dup; j++)
            dup = strcmp(g_ptr_array_index(seen, j), line) == 0;
        if (dup)
            g_free(line);
        else
            g_ptr_array_add(seen, line);
    }
    json_object_object_add(details, "causes", causes);
    g_ptr_array_add(seen, NULL);
    g_autofree char *joined = g_strjoinv(", ", (char **)seen->pdata);
    g_autofree char *qual = group != NULL && group[0] != '\0'
                                    ? g_strdup_printf("%s.%s", kind, group)
                                    : g_strdup(kind);
    if (seen->len > 2)
        kas_status_set(error, KAS_ERR_INVALID, details, "%s \"%s\" is invalid: [%s]", qual,
                       name != NULL ? name : "", joined);
    else
        kas_status_set(error, KAS_ERR_INVALID, details, "%s \"%s\" is invalid: %s", qual,
                       name != NULL ? name : "", joined);
    return FALSE;
}

gboolean kas_field_errors_check(KasFieldErrors *errs, const KasRes *res, const char *name,
                                GError **error)
{
    return kas_field_errors_check_kind(errs, res->kind_name, res->group, name, error);
}

gboolean kas_status_invalid(GError **error, const KasRes *res, const char *name, const char *field,
                            const char *what)
{
    g_autoptr(KasFieldErrors) e = kas_field_errors_new();
    kas_field_errors_add(e, field, what);
    return kas_field_errors_check(e, res, name, error);
}

void kas_status_set(GError **error, KasErr code, json_object *details, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    const char *d =
            details != NULL
                    ? json_object_to_json_string_ext(
                              details, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
                    : "null";
    g_set_error(error, KAS_ERROR, code, "%s%c%s", msg, DETAILS_SEP, d);
    json_object_put(details);
}

char *kas_status_split(const char *message, gboolean *has_details, json_object **details)
{
    *details = NULL;
    const char *sep = strrchr(message, DETAILS_SEP);
    *has_details = sep != NULL;
    if (sep == NULL)
        return g_strdup(message);
    if (strcmp(sep + 1, "null") != 0)
        *details = kas_json_parse(sep + 1, strlen(sep + 1), NULL);
    return g_strndup(message, (gsize)(sep - message));
}
