/*
 * A strict, allocation-free JSON pull reader over a byte buffer (RFC 8259), for decoders that
 * need a few fields out of large documents (pod lists) and must skip the rest quickly.
 *
 * The caller walks the document: kb_json_peek() says what the next value is; objects are read
 * with kb_json_object_begin() then kb_json_object_next() until it returns 0, arrays with
 * kb_json_array_begin() then kb_json_array_next(); after each key (or each element) the caller
 * reads exactly one value: a scalar reader, a nested container, or kb_json_skip().
 *
 *   KbJsonReader r;
 *   KbJsonStr key;
 *   int rc;
 *   kb_json_reader_init(&r, text, len);
 *   if (!kb_json_object_begin(&r, error)) return FALSE;
 *   while ((rc = kb_json_object_next(&r, &key, error)) == 1) {
 *       if (KB_JSON_STR_IS(key, "name")) ok = kb_json_read_string(&r, &name, error);
 *       else ok = kb_json_skip(&r, error);
 *       ...
 *   }
 *   if (rc == -1) return FALSE;
 *   ok = kb_json_finish(&r, error);
 *
 * Strictness (stricter than json-c, which the other decoders use): exactly one value and white
 * space; no trailing commas, comments, single quotes, leading zeros, "+1", ".5", NaN or Infinity;
 * strings must be valid UTF-8 (overlong forms and surrogates refused), control characters must be
 * escaped, "\u" escapes must pair surrogates and must not encode U+0000 (decoders use C strings).
 * Skipped values are validated the same way: a document is accepted or refused as a whole,
 * whatever the caller reads of it.
 *
 * Limits: nesting deeper than max_depth (default KB_JSON_MAX_DEPTH) and strings longer than
 * max_string_len bytes as written (default KB_JSON_MAX_STRING_LEN) fail with KB_ERROR_LIMIT;
 * every other problem fails with KB_ERROR_DECODE. Messages give the byte offset:
 * "JSON: expected ',' or '}' at byte 1234, got 'x'".
 *
 * Strings: a KbJsonStr points into the buffer when the string has no escapes, else into the
 * reader's scratch buffer (valid until the next string is read); it is not NUL-terminated.
 * Keys have their own scratch buffer, so a key stays valid while its value is read.
 */
#pragma once

#include <glib.h>
#include <string.h>

#define KB_JSON_MAX_DEPTH 128
/* max_depth is capped here: skipping keeps one bit per level on the stack. */
#define KB_JSON_DEPTH_CAP 1024
/* The API server stores objects of at most 1.5 MiB. */
#define KB_JSON_MAX_STRING_LEN (2 * 1024 * 1024)

typedef enum {
    KB_JSON_INVALID, /* end of input, or a byte that starts no value */
    KB_JSON_OBJECT,
    KB_JSON_ARRAY,
    KB_JSON_STRING,
    KB_JSON_NUMBER,
    KB_JSON_TRUE,
    KB_JSON_FALSE,
    KB_JSON_NULL,
} KbJsonType;

typedef struct {
    const char *p;
    gsize len;
} KbJsonStr;

/* TRUE when @s (a KbJsonStr) is the string literal @lit. */
#define KB_JSON_STR_IS(s, lit) ((s).len == sizeof(lit) - 1 && memcmp((s).p, lit, sizeof(lit) - 1) == 0)

typedef struct {
    const char *buf;
    gsize len;
    gsize pos;
    guint depth;
    guint max_depth;
    gsize max_string_len;
    gboolean first; /* just inside a container: no ',' before the next item */
    GString *scratch;
    GString *key_scratch;
} KbJsonReader;

/* Start reading @len bytes at @buf (borrowed: it must outlive the reader). Limits take their
 * defaults; change max_depth (at most KB_JSON_DEPTH_CAP) and max_string_len after init. */
void kb_json_reader_init(KbJsonReader *r, const char *buf, gsize len);
/* Free the scratch buffers (the reader itself is the caller's). */
void kb_json_reader_clear(KbJsonReader *r);

/* The type of the next value, after skipping white space; KB_JSON_INVALID at the end. */
KbJsonType kb_json_peek(KbJsonReader *r);

/* Consume '{' / '['. FALSE (error set) for anything else, or past max_depth. */
gboolean kb_json_object_begin(KbJsonReader *r, GError **error);
gboolean kb_json_array_begin(KbJsonReader *r, GError **error);

/*
 * The next member of the object being read: 1 with *key set (the reader is then at its value),
 * 0 after the closing '}', -1 on error.
 */
int kb_json_object_next(KbJsonReader *r, KbJsonStr *key, GError **error);
/* The next element of the array being read: 1 (the reader is at it), 0 after ']', -1 on error. */
int kb_json_array_next(KbJsonReader *r, GError **error);

/* Skip (and validate) the next value, whatever it is. */
gboolean kb_json_skip(KbJsonReader *r, GError **error);
/* The same, with the value's text (white space around it excluded) in *span. */
gboolean kb_json_skip_span(KbJsonReader *r, KbJsonStr *span, GError **error);

/* Scalars. Each fails (KB_ERROR_DECODE) when the next value is not of its type. */
gboolean kb_json_read_string(KbJsonReader *r, KbJsonStr *out, GError **error);
gboolean kb_json_read_bool(KbJsonReader *r, gboolean *out, GError **error);
gboolean kb_json_read_null(KbJsonReader *r, GError **error);
/* A number's text as written; *is_integer is FALSE when it has a fraction or an exponent. */
gboolean kb_json_read_number(KbJsonReader *r, KbJsonStr *text, gboolean *is_integer,
                             GError **error);

/* The integer text of a number read above, saturated to the gint64 range (as json-c does). */
gint64 kb_json_integer_value(const KbJsonStr *text);

/* After the top-level value: only white space may remain. */
gboolean kb_json_finish(KbJsonReader *r, GError **error);

/* A NUL-terminated copy of @s; newly allocated. */
char *kb_json_str_dup(const KbJsonStr *s);
