/*
 * Fuzz target for kb-json and the byte-buffer pod decoders (kb_pod_decode_bytes,
 * kb_pod_list_decode_bytes), with a differential check against json-c + kb_pod_decode.
 *
 * Checks, for any input:
 *  - reading every value of the document (strings unescaped, numbers, literals) and skipping it
 *    whole with kb_json_skip() accept or refuse it alike;
 *  - each decoder returns a record or an error, never both or neither;
 *  - where json-c parses the input (it is laxer: duplicate members, invalid UTF-8, "\u0000",
 *    trailing text and non-JSON literals are the documented differences):
 *      the byte decoder succeeds  =>  kb_pod_decode succeeds with an equal record (kb_pod_equal);
 *      kb_pod_decode succeeds and the byte decoder fails  =>  its error is one of those
 *      strictness differences (a "JSON:" syntax error or a "duplicate member").
 *    When both fail their messages may differ (an object with several errors), so they are not
 *    compared.
 */
#include <stdint.h>
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-json.h"
#include "kube/kb-objects.h"

#define FUZZ_MAX_DEPTH 128

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void);

/* GLib leaks its old quark array when the intern table grows: see fuzz-objects.c. */
const char *__lsan_default_suppressions(void)
{
    return "leak:g_intern_string\n";
}

const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

/* Read one value completely (recursion is bounded by the reader's depth limit). */
static gboolean walk(KbJsonReader *r, GError **error)
{
    KbJsonStr s;
    gboolean b, integer;
    int rc;
    switch (kb_json_peek(r)) {
    case KB_JSON_OBJECT:
        if (!kb_json_object_begin(r, error))
            return FALSE;
        while ((rc = kb_json_object_next(r, &s, error)) == 1) {
            if (memchr(s.p, '\0', s.len) != NULL)
                __builtin_trap(); /* "\u0000" is refused */
            if (!walk(r, error))
                return FALSE;
        }
        return rc == 0;
    case KB_JSON_ARRAY:
        if (!kb_json_array_begin(r, error))
            return FALSE;
        while ((rc = kb_json_array_next(r, error)) == 1) {
            if (!walk(r, error))
                return FALSE;
        }
        return rc == 0;
    case KB_JSON_STRING:
        if (!kb_json_read_string(r, &s, error))
            return FALSE;
        if (!g_utf8_validate(s.p, (gssize)s.len, NULL))
            __builtin_trap();
        return TRUE;
    case KB_JSON_NUMBER:
        if (!kb_json_read_number(r, &s, &integer, error))
            return FALSE;
        if (integer)
            (void)kb_json_integer_value(&s);
        return TRUE;
    case KB_JSON_TRUE:
    case KB_JSON_FALSE:
        return kb_json_read_bool(r, &b, error);
    case KB_JSON_NULL:
        return kb_json_read_null(r, error);
    case KB_JSON_INVALID:
        break;
    }
    return kb_json_skip(r, error); /* fails, with the reader's message */
}

static void check_reader(const char *text, gsize len)
{
    KbJsonReader a, b;
    GError *ea = NULL, *eb = NULL;
    kb_json_reader_init(&a, text, len);
    kb_json_reader_init(&b, text, len);
    gboolean walked = walk(&a, &ea) && kb_json_finish(&a, &ea);
    gboolean skipped = kb_json_skip(&b, &eb) && kb_json_finish(&b, &eb);
    if (walked != skipped || walked != (ea == NULL) || skipped != (eb == NULL))
        __builtin_trap();
    if (ea != NULL && (ea->domain != KB_ERROR || strncmp(ea->message, "JSON: ", 6) != 0))
        __builtin_trap();
    g_clear_error(&ea);
    g_clear_error(&eb);
    kb_json_reader_clear(&a);
    kb_json_reader_clear(&b);
}

static gboolean strictness_error(const GError *error)
{
    return strstr(error->message, "JSON: ") != NULL ||
           strstr(error->message, "duplicate member") != NULL;
}

static void check_pod(const char *text, gsize len)
{
    GError *fast_error = NULL, *slow_error = NULL;
    KbPod *fast = kb_pod_decode_bytes(text, len, &fast_error);
    if ((fast == NULL) == (fast_error == NULL))
        __builtin_trap();

    json_tokener *tok = json_tokener_new_ex(FUZZ_MAX_DEPTH);
    json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    gboolean parsed = obj != NULL && json_tokener_get_parse_end(tok) == len;
    json_tokener_free(tok);
    if (parsed) {
        KbPod *slow = kb_pod_decode(obj, FALSE, &slow_error);
        if ((slow == NULL) == (slow_error == NULL))
            __builtin_trap();
        if (fast != NULL && (slow == NULL || !kb_pod_equal(slow, fast, NULL)))
            __builtin_trap();
        if (fast == NULL && slow != NULL && !strictness_error(fast_error))
            __builtin_trap();
        if (slow != NULL)
            kb_object_unref(slow);
    }
    json_object_put(obj);
    g_clear_error(&fast_error);
    g_clear_error(&slow_error);
    if (fast != NULL)
        kb_object_unref(fast);
}

static void check_list(const char *text, gsize len)
{
    GPtrArray *pods = g_ptr_array_new_with_free_func(kb_object_unref);
    GError *error = NULL;
    char *rv = NULL, *cont = NULL;
    gboolean ok = kb_pod_list_decode_bytes(text, len, pods, &rv, &cont, &error);
    if (ok == (error != NULL) || (!ok && (pods->len != 0 || rv != NULL || cont != NULL)))
        __builtin_trap();
    g_clear_error(&error);
    g_free(rv);
    g_free(cont);
    g_ptr_array_unref(pods);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > G_MAXINT)
        return 0;
    /* NUL-terminated copy: json-c needs it to end a top-level number. The decoders get the
     * length and must not read the terminator. */
    char *text = g_malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    check_reader(text, size);
    check_pod(text, size);
    check_list(text, size);
    g_free(text);
    return 0;
}
