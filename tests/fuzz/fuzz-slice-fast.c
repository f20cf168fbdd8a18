/*
 * Fuzz target for the byte-buffer slice decoders (kb_resource_slice_decode_bytes,
 * kb_resource_slice_list_decode_bytes), with a differential check against json-c +
 * kb_resource_slice_decode.
 *
 * Checks, for any input:
 *  - each decoder returns a record or an error, never both or neither; a list that fails
 *    appends and sets nothing;
 *  - the byte decoder reads a slice  =>  json-c parses the same bytes and kb_resource_slice_decode
 *    returns an equal record (kb_resource_slice_equal). The byte decoder may refuse anything
 *    (it leaves what it does not read to json-c), so a refusal is never a finding by itself.
 */
#include <stdint.h>
#include <string.h>

#include "kube/kb-dra.h"
#include "kube/kb-error.h"

#define FUZZ_MAX_DEPTH 128

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void);

/* GLib leaks its old quark array when the intern table grows: see fuzz-objects.c. Slices
 * intern many names (every attribute's), and the first array to go is the one GLib's own
 * constructor allocated, whose stack names no g_intern_string: leaks from library
 * constructors (_dl_init) are suppressed too. */
const char *__lsan_default_suppressions(void)
{
    return "leak:g_intern_string\nleak:_dl_init\n";
}

const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

static void check_slice(const char *text, gsize len)
{
    GError *fast_error = NULL, *slow_error = NULL;
    KbResourceSlice *fast = kb_resource_slice_decode_bytes(text, len, &fast_error);
    if ((fast == NULL) == (fast_error == NULL))
        __builtin_trap();
    g_clear_error(&fast_error);
    if (fast == NULL)
        return;
    if (fast->meta.name == NULL || fast->meta.raw != NULL)
        __builtin_trap();
    json_tokener *tok = json_tokener_new_ex(FUZZ_MAX_DEPTH);
    json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    gboolean parsed = obj != NULL && json_tokener_get_error(tok) == json_tokener_success;
    json_tokener_free(tok);
    if (!parsed)
        __builtin_trap();
    KbResourceSlice *slow = kb_resource_slice_decode(obj, FALSE, &slow_error);
    if (slow == NULL || !kb_resource_slice_equal(slow, fast, NULL))
        __builtin_trap();
    kb_object_unref(slow);
    json_object_put(obj);
    kb_object_unref(fast);
}

static void check_list(const char *text, gsize len)
{
    GPtrArray *slices = g_ptr_array_new_with_free_func(kb_object_unref);
    GError *error = NULL;
    char *rv = NULL, *cont = NULL;
    gboolean ok = kb_resource_slice_list_decode_bytes(text, len, slices, &rv, &cont, &error);
    if (ok == (error != NULL) || (!ok && (slices->len != 0 || rv != NULL || cont != NULL)))
        __builtin_trap();
    g_clear_error(&error);
    g_free(rv);
    g_free(cont);
    g_ptr_array_unref(slices);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > G_MAXINT)
        return 0;
    /* NUL-terminated copy for json-c; the byte decoders get the length only. */
    char *text = g_malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    check_slice(text, size);
    check_list(text, size);
    g_free(text);
    return 0;
}
