/*
 * The differential check of the DRA byte decoders (kube/kb-dra-fast.c), shared by the fuzz
 * targets fuzz-claim-fast and fuzz-slice-fast: for any input,
 *  - each decoder returns a record or an error, never both or neither; a list that fails
 *    appends and sets nothing;
 *  - the byte decoder reads an object  =>  json-c parses the same bytes and the json-c decoder
 *    returns an equal record (kb_resource_claim_equal, kb_resource_slice_equal). The byte decoder
 *    may refuse anything (it leaves what it does not read to json-c), so a refusal is never a
 *    finding by itself.
 */
#pragma once

#include <string.h>

#include "kube/kb-dra.h"
#include "kube/kb-error.h"

#define FUZZ_MAX_DEPTH 128

/* One kind's decoders, through wrappers of their own types. */
typedef struct {
    gpointer (*decode_bytes)(const char *text, gsize len, GError **error);
    gpointer (*decode)(json_object *obj, GError **error);
    gboolean (*equal)(gconstpointer a, gconstpointer b);
    gboolean (*list_decode_bytes)(const char *text, gsize len, GPtrArray *out, char **rv,
                                  char **cont, GError **error);
    const KbObjectMeta *(*meta)(gconstpointer o);
} Kind;

static gpointer claim_bytes(const char *t, gsize n, GError **e)
{
    return kb_resource_claim_decode_bytes(t, n, e);
}
static gpointer claim_json(json_object *o, GError **e)
{
    return kb_resource_claim_decode(o, FALSE, e);
}
static gboolean claim_equal(gconstpointer a, gconstpointer b)
{
    return kb_resource_claim_equal(a, b, NULL);
}
static const KbObjectMeta *claim_meta(gconstpointer o)
{
    return &((const KbResourceClaim *)o)->meta;
}
static gpointer slice_bytes(const char *t, gsize n, GError **e)
{
    return kb_resource_slice_decode_bytes(t, n, e);
}
static gpointer slice_json(json_object *o, GError **e)
{
    return kb_resource_slice_decode(o, FALSE, e);
}
static gboolean slice_equal(gconstpointer a, gconstpointer b)
{
    return kb_resource_slice_equal(a, b, NULL);
}
static const KbObjectMeta *slice_meta(gconstpointer o)
{
    return &((const KbResourceSlice *)o)->meta;
}

enum { KIND_CLAIM, KIND_SLICE };

static const Kind kinds[] = {
        {claim_bytes, claim_json, claim_equal, kb_resource_claim_list_decode_bytes, claim_meta},
        {slice_bytes, slice_json, slice_equal, kb_resource_slice_list_decode_bytes, slice_meta},
};

static void check_one(const Kind *k, const char *text, gsize len)
{
    GError *fast_error = NULL, *slow_error = NULL;
    gpointer fast = k->decode_bytes(text, len, &fast_error);
    if ((fast == NULL) == (fast_error == NULL))
        __builtin_trap();
    g_clear_error(&fast_error);
    if (fast == NULL)
        return;
    if (k->meta(fast)->name == NULL || k->meta(fast)->raw != NULL)
        __builtin_trap();
    json_tokener *tok = json_tokener_new_ex(FUZZ_MAX_DEPTH);
    json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    gboolean parsed = obj != NULL && json_tokener_get_error(tok) == json_tokener_success;
    json_tokener_free(tok);
    if (!parsed)
        __builtin_trap();
    gpointer slow = k->decode(obj, &slow_error);
    if (slow == NULL || !k->equal(slow, fast))
        __builtin_trap();
    kb_object_unref(slow);
    json_object_put(obj);
    kb_object_unref(fast);
}

static void check_list(const Kind *k, const char *text, gsize len)
{
    GPtrArray *items = g_ptr_array_new_with_free_func(kb_object_unref);
    GError *error = NULL;
    char *rv = NULL, *cont = NULL;
    gboolean ok = k->list_decode_bytes(text, len, items, &rv, &cont, &error);
    if (ok == (error != NULL) || (!ok && (items->len != 0 || rv != NULL || cont != NULL)))
        __builtin_trap();
    g_clear_error(&error);
    g_free(rv);
    g_free(cont);
    g_ptr_array_unref(items);
}

/* Run both checks of @kind on @data (any bytes). */
static void check_dra_fast(int kind, const uint8_t *data, size_t size)
{
    if (size > G_MAXINT)
        return;
    /* NUL-terminated copy for json-c; the byte decoders get the length only. */
    char *text = g_malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    check_one(&kinds[kind], text, size);
    check_list(&kinds[kind], text, size);
    g_free(text);
}
