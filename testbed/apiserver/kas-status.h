/*
 * Errors that carry kube-apiserver's exact metav1.Status details: the field errors (causes) of
 * an Invalid answer, or any details object a particular error has (pods/binding conflicts,
 * eviction's DisruptionBudget cause, the empty details of 415).
 *
 * The details travel inside the GError's message, after a \x1f separator, so the usual
 * g_prefix_error()/g_propagate_error() path keeps them; kas_status_split() takes them apart when
 * the reply is rendered (kas_reply_gerror()).
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "testbed/apiserver/kas-store.h"

/* kube-apiserver's field.ErrorList: causes in order. */
typedef struct KasFieldErrors KasFieldErrors;

KasFieldErrors *kas_field_errors_new(void);
void kas_field_errors_free(KasFieldErrors *errs);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KasFieldErrors, kas_field_errors_free)

/* Add the error of @field; @what is the message as kube-apiserver renders it, starting with its
 * type ("Invalid value: \"x\": must be ...", "Required value", "Forbidden: ...", "Too long: ...",
 * "Unsupported value: ..."), from which the cause's reason is derived. */
void kas_field_errors_add(KasFieldErrors *errs, const char *field, const char *what);
void kas_field_errors_addf(KasFieldErrors *errs, const char *field, const char *fmt, ...)
        G_GNUC_PRINTF(3, 4);
guint kas_field_errors_len(const KasFieldErrors *errs);

/* With errors: set @error to 422 Invalid for object @name of @res (kind and group as in
 * "Pod \"p\" is invalid: ..." and "PodGroup.example.io \"p\" is invalid: [a: x, b: y]", repeated
 * messages once, causes all) and return FALSE. Without: TRUE. */
gboolean kas_field_errors_check(KasFieldErrors *errs, const KasRes *res, const char *name,
                                GError **error);
/* The same with the kind and group given (for kinds that are not a stored resource). */
gboolean kas_field_errors_check_kind(KasFieldErrors *errs, const char *kind, const char *group,
                                     const char *name, GError **error);

/* One field error as an Invalid GError (FALSE). */
gboolean kas_status_invalid(GError **error, const KasRes *res, const char *name, const char *field,
                            const char *what);

/* Set @error to @code with @message and exactly @details (stolen; NULL: no details at all). */
void kas_status_set(GError **error, KasErr code, json_object *details, const char *fmt, ...)
        G_GNUC_PRINTF(4, 5);

/* Split @message: returns the visible message (new string); *@has_details tells whether it
 * carries details, *@details is them (new reference; NULL: the answer has no details). */
char *kas_status_split(const char *message, gboolean *has_details, json_object **details);
