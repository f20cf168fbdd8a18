/*
 * Label and field selectors, parsed as k8s.io/apimachinery does.
 *
 * Labels: requirements separated by commas: "k", "!k", "k=v", "k==v", "k!=v", "k in (a,b)",
 * "k notin (a,b)", "k>1", "k<1". Fields: "k=v", "k==v", "k!=v" separated by commas, with
 * backslash escapes in values. Limits: KAS_SELECTOR_MAX_LEN characters, KAS_SELECTOR_MAX_REQS
 * requirements.
 */
#pragma once

#include <glib.h>

#define KAS_SELECTOR_MAX_LEN 8192
#define KAS_SELECTOR_MAX_REQS 64

typedef struct KasSelector KasSelector;

/* Parse a label selector; NULL or "" gives the selector that matches everything. */
KasSelector *kas_label_selector_parse(const char *text, GError **error);
/* Parse a field selector; NULL or "" gives the selector that matches everything. */
KasSelector *kas_field_selector_parse(const char *text, GError **error);
void kas_selector_free(KasSelector *sel);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(KasSelector, kas_selector_free)

gboolean kas_selector_empty(const KasSelector *sel);

/* The keys the selector mentions, in order (borrowed, NULL-terminated). */
const char *const *kas_selector_keys(const KasSelector *sel);

/* Returns the value of @key for the object being tested, or NULL when it has none. */
typedef const char *(*KasSelectorLookup)(const char *key, gpointer data);

gboolean kas_selector_matches(const KasSelector *sel, KasSelectorLookup lookup, gpointer data);

/* Lookup over a NULL-terminated "k0, v0, k1, v1, ..." array passed as @data. */
const char *kas_selector_lookup_pairs(const char *key, gpointer data);
