/*
 * Strict JSON pull reader; see kb-json.h.
 *
 * Speed comes from scanning strings 16 bytes at a time (SSE2 where the compiler targets it, a
 * byte table elsewhere) for the few bytes that need attention ('"', '\\', control characters and
 * non-ASCII), and from skipping unwanted values with a flat loop over a bit stack rather than
 * recursion. Escapes are decoded only for strings the caller reads, in a second pass over text
 * the first pass has already validated.
 */
#include "kube/kb-json.h"

#include <stdint.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "kube/kb-error.h"

/* ---- errors --------------------------------------------------------------------------------- */

static gboolean fail_at(KbJsonReader *r, gsize pos, GError **error, const char *what)
{
    if (pos >= r->len) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "JSON: %s at byte %" G_GSIZE_FORMAT
                    ", got the end of the input", what, pos);
        return FALSE;
    }
    guchar c = (guchar)r->buf[pos];
    if (c >= 0x20 && c < 0x7f)
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "JSON: %s at byte %" G_GSIZE_FORMAT ", got '%c'", what, pos, c);
    else
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "JSON: %s at byte %" G_GSIZE_FORMAT ", got byte 0x%02x", what, pos, c);
    return FALSE;
}

static gboolean fail_depth(KbJsonReader *r, gsize pos, GError **error)
{
    g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                "JSON: nested deeper than %u levels at byte %" G_GSIZE_FORMAT, r->max_depth, pos);
    return FALSE;
}

/* ---- reader --------------------------------------------------------------------------------- */

void kb_json_reader_init(KbJsonReader *r, const char *buf, gsize len)
{
    memset(r, 0, sizeof(*r));
    r->buf = buf;
    r->len = len;
    r->max_depth = KB_JSON_MAX_DEPTH;
    r->max_string_len = KB_JSON_MAX_STRING_LEN;
}

void kb_json_reader_clear(KbJsonReader *r)
{
    if (r->scratch != NULL)
        g_string_free(r->scratch, TRUE);
    if (r->key_scratch != NULL)
        g_string_free(r->key_scratch, TRUE);
    r->scratch = NULL;
    r->key_scratch = NULL;
}

static inline gboolean is_ws(guchar c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline gsize skip_ws(const char *buf, gsize pos, gsize len)
{
    /* API server bodies are compact: one compare settles the common case. */
    while (pos < len && (guchar)buf[pos] <= ' ' && is_ws((guchar)buf[pos]))
        pos++;
    return pos;
}

/* ---- strings -------------------------------------------------------------------------------- */

/* 1 for bytes a string scan must stop at: '"', '\\', control characters, non-ASCII. */
static const guint8 special[256] = {
    [0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1,
};

/* How many bytes from @p on need no attention. */
static inline gsize plain_run(const guchar *p, const guchar *end)
{
    const guchar *s = p;
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        /* Signed compare: bytes >= 0x80 are negative, so "< 0x20" catches them too. */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmplt_epi8(v, space));
        int mask = _mm_movemask_epi8(m);
        if (mask != 0)
            return (gsize)(p - s) + (gsize)__builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    while (p < end && !special[*p])
        p++;
    return (gsize)(p - s);
}

/*
 * The string at @pos (a '"') when it is plain (no escapes, no control characters, ASCII only)
 * and within @max bytes: the position after its closing quote, with its content at
 * buf + pos + 1 for end - pos - 2 bytes. 0 for anything else: scan_string() decides then.
 */
static inline gsize plain_string_end(const char *buf, gsize pos, gsize len, gsize max)
{
    const guchar *p = (const guchar *)buf + pos + 1, *end = (const guchar *)buf + len;
    gsize n = plain_run(p, end);
    if (n < (gsize)(end - p) && p[n] == '"' && n <= max)
        return pos + n + 2;
    return 0;
}

/* Length of the valid UTF-8 sequence at @p (a byte >= 0x80), or 0 (RFC 3629 table 3.7). */
static gsize utf8_sequence(const guchar *p, const guchar *end)
{
    guchar c = p[0];
    gsize n;
    guchar lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f; /* no UTF-16 surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if ((gsize)(end - p) < n || p[1] < lo || p[1] > hi)
        return 0;
    for (gsize i = 2; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    }
    return n;
}

static int hex_value(guchar c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* The four hex digits at @p as a code unit, or -1. */
static gint32 hex4(const guchar *p, const guchar *end)
{
    if (end - p < 4)
        return -1;
    gint32 v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hex_value(p[i]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

/*
 * The escape at @p ('\\'): its length, with the code point of a "\u" escape (surrogate pairs
 * joined) in *cp, or 0 when invalid.
 */
static gsize escape_length(const guchar *p, const guchar *end, gunichar *cp)
{
    if (end - p < 2)
        return 0;
    switch (p[1]) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
        *cp = p[1];
        return 2;
    case 'u':
        break;
    default:
        return 0;
    }
    gint32 u = hex4(p + 2, end);
    if (u <= 0 || (u >= 0xdc00 && u <= 0xdfff))
        return 0; /* U+0000 would cut C strings; a low surrogate must follow a high one */
    if (u < 0xd800 || u > 0xdbff) {
        *cp = (gunichar)u;
        return 6;
    }
    if (end - p < 12 || p[6] != '\\' || p[7] != 'u')
        return 0;
    gint32 lo = hex4(p + 8, end);
    if (lo < 0xdc00 || lo > 0xdfff)
        return 0;
    *cp = 0x10000 + (((gunichar)u - 0xd800) << 10) + ((gunichar)lo - 0xdc00);
    return 12;
}

/* Decode the (validated) escaped string content at @p, @n bytes, into @out. */
static void unescape(const guchar *p, gsize n, GString *out)
{
    static const char simple[128] = {['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b',
                                     ['f'] = '\f', ['n'] = '\n', ['r'] = '\r', ['t'] = '\t'};
    const guchar *end = p + n;
    g_string_truncate(out, 0);
    while (p < end) {
        const guchar *b = memchr(p, '\\', (gsize)(end - p));
        if (b == NULL) {
            g_string_append_len(out, (const char *)p, end - p);
            return;
        }
        g_string_append_len(out, (const char *)p, b - p);
        gunichar cp = 0;
        gsize len = escape_length(b, end, &cp);
        if (len == 2)
            g_string_append_c(out, simple[b[1]]);
        else
            g_string_append_unichar(out, cp);
        p = b + len;
    }
}

/*
 * Scan the string at r->pos (a '"'), validating it. With @out, set it to the content (a view of
 * the buffer, or @scratch unescaped). Leaves r->pos after the closing quote.
 */
static gboolean scan_string_slow(KbJsonReader *r, KbJsonStr *out, GString **scratch,
                                 GError **error)
{
    const guchar *buf = (const guchar *)r->buf;
    const guchar *end = buf + r->len;
    const guchar *start = buf + r->pos + 1;
    const guchar *p = start;
    gboolean escaped = FALSE;

    for (;;) {
        p += plain_run(p, end);
        if (p >= end)
            return fail_at(r, r->len, error, "unterminated string");
        guchar c = *p;
        if (c == '"')
            break;
        gsize n;
        if (c == '\\') {
            gunichar cp;
            n = escape_length(p, end, &cp);
            if (n == 0)
                return fail_at(r, (gsize)(p - buf), error, "invalid escape in string");
            escaped = TRUE;
        } else if (c < 0x20) {
            return fail_at(r, (gsize)(p - buf), error, "unescaped control character in string");
        } else {
            n = utf8_sequence(p, end);
            if (n == 0)
                return fail_at(r, (gsize)(p - buf), error, "invalid UTF-8 in string");
        }
        p += n;
    }
    gsize raw = (gsize)(p - start);
    if (raw > r->max_string_len) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "JSON: string of %" G_GSIZE_FORMAT " bytes at byte %" G_GSIZE_FORMAT
                    ", more than %" G_GSIZE_FORMAT,
                    raw, r->pos, r->max_string_len);
        return FALSE;
    }
    if (out != NULL) {
        if (!escaped) {
            out->p = (const char *)start;
            out->len = raw;
        } else {
            if (*scratch == NULL)
                *scratch = g_string_sized_new(256);
            unescape(start, raw, *scratch);
            out->p = (*scratch)->str;
            out->len = (*scratch)->len;
        }
    }
    r->pos = (gsize)(p + 1 - buf);
    return TRUE;
}

static inline gboolean scan_string(KbJsonReader *r, KbJsonStr *out, GString **scratch,
                                   GError **error)
{
    gsize end = plain_string_end(r->buf, r->pos, r->len, r->max_string_len);
    if (end == 0)
        return scan_string_slow(r, out, scratch, error);
    if (out != NULL) {
        out->p = r->buf + r->pos + 1;
        out->len = end - r->pos - 2;
    }
    r->pos = end;
    return TRUE;
}

/* ---- numbers and literals ------------------------------------------------------------------- */

static inline gboolean is_digit(guchar c)
{
    return c >= '0' && c <= '9';
}

/* The number at r->pos (RFC 8259 grammar); leaves r->pos after it. */
static gboolean scan_number(KbJsonReader *r, KbJsonStr *text, gboolean *is_integer, GError **error)
{
    const guchar *buf = (const guchar *)r->buf;
    gsize pos = r->pos, len = r->len;
    gboolean integer = TRUE;

    if (pos < len && buf[pos] == '-')
        pos++;
    if (pos < len && buf[pos] == '0') {
        pos++;
    } else if (pos < len && buf[pos] >= '1' && buf[pos] <= '9') {
        while (pos < len && is_digit(buf[pos]))
            pos++;
    } else {
        return fail_at(r, pos, error, "expected a digit");
    }
    if (pos < len && buf[pos] == '.') {
        integer = FALSE;
        pos++;
        if (pos >= len || !is_digit(buf[pos]))
            return fail_at(r, pos, error, "expected a digit after '.'");
        while (pos < len && is_digit(buf[pos]))
            pos++;
    }
    if (pos < len && (buf[pos] == 'e' || buf[pos] == 'E')) {
        integer = FALSE;
        pos++;
        if (pos < len && (buf[pos] == '+' || buf[pos] == '-'))
            pos++;
        if (pos >= len || !is_digit(buf[pos]))
            return fail_at(r, pos, error, "expected a digit in the exponent");
        while (pos < len && is_digit(buf[pos]))
            pos++;
    }
    if (text != NULL) {
        text->p = r->buf + r->pos;
        text->len = pos - r->pos;
    }
    if (is_integer != NULL)
        *is_integer = integer;
    r->pos = pos;
    return TRUE;
}

static gboolean scan_literal(KbJsonReader *r, const char *lit, gsize n, GError **error)
{
    if (r->len - r->pos < n || memcmp(r->buf + r->pos, lit, n) != 0)
        return fail_at(r, r->pos, error, "invalid literal");
    r->pos += n;
    return TRUE;
}

gint64 kb_json_integer_value(const KbJsonStr *text)
{
    gsize i = 0;
    gboolean neg = text->len > 0 && text->p[0] == '-';
    guint64 v = 0, limit = neg ? (guint64)G_MAXINT64 + 1 : (guint64)G_MAXINT64;
    for (i = neg ? 1 : 0; i < text->len && is_digit((guchar)text->p[i]); i++) {
        guint d = (guint)(text->p[i] - '0');
        if (v > (limit - d) / 10) {
            v = limit;
            break;
        }
        v = v * 10 + d;
    }
    if (!neg)
        return (gint64)v;
    return v == (guint64)G_MAXINT64 + 1 ? G_MININT64 : -(gint64)v;
}

/* ---- structure ------------------------------------------------------------------------------ */

KbJsonType kb_json_peek(KbJsonReader *r)
{
    r->pos = skip_ws(r->buf, r->pos, r->len);
    if (r->pos >= r->len)
        return KB_JSON_INVALID;
    switch (r->buf[r->pos]) {
    case '{':
        return KB_JSON_OBJECT;
    case '[':
        return KB_JSON_ARRAY;
    case '"':
        return KB_JSON_STRING;
    case 't':
        return KB_JSON_TRUE;
    case 'f':
        return KB_JSON_FALSE;
    case 'n':
        return KB_JSON_NULL;
    case '-':
    case '0' ... '9':
        return KB_JSON_NUMBER;
    default:
        return KB_JSON_INVALID;
    }
}

static gboolean begin(KbJsonReader *r, char open, GError **error)
{
    r->pos = skip_ws(r->buf, r->pos, r->len);
    if (r->pos >= r->len || r->buf[r->pos] != open)
        return fail_at(r, r->pos, error, open == '{' ? "expected '{'" : "expected '['");
    if (r->depth >= MIN(r->max_depth, KB_JSON_DEPTH_CAP))
        return fail_depth(r, r->pos, error);
    r->pos++;
    r->depth++;
    r->first = TRUE;
    return TRUE;
}

gboolean kb_json_object_begin(KbJsonReader *r, GError **error)
{
    return begin(r, '{', error);
}

gboolean kb_json_array_begin(KbJsonReader *r, GError **error)
{
    return begin(r, '[', error);
}

/* Consume the closer at r->pos: the container is a value of its parent, which goes on. */
static inline int close_container(KbJsonReader *r)
{
    r->pos++;
    r->depth--;
    r->first = FALSE;
    return 0;
}

/*
 * Separators are read lazily, here rather than after each value: at the start of a container
 * the closer or a first item may come, afterwards the closer or ',' and an item.
 * Returns 1 at an item, 0 after the closer (consumed), -1 on error.
 */
static inline int next_item(KbJsonReader *r, char close, GError **error)
{
    gsize pos = skip_ws(r->buf, r->pos, r->len);
    char c = pos < r->len ? r->buf[pos] : '\0';
    r->pos = pos;
    if (c == close)
        return close_container(r);
    if (!r->first) {
        if (c != ',') {
            fail_at(r, pos, error, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
            return -1;
        }
        pos = skip_ws(r->buf, pos + 1, r->len);
        r->pos = pos;
        if (pos < r->len && (r->buf[pos] == '}' || r->buf[pos] == ']')) {
            fail_at(r, pos, error, close == '}' ? "expected a member name after ','"
                                               : "expected a value after ','");
            return -1;
        }
    }
    r->first = FALSE;
    return 1;
}

int kb_json_object_next(KbJsonReader *r, KbJsonStr *key, GError **error)
{
    int rc = next_item(r, '}', error);
    if (rc != 1)
        return rc;
    if (r->pos >= r->len || r->buf[r->pos] != '"') {
        fail_at(r, r->pos, error, "expected a member name");
        return -1;
    }
    if (!scan_string(r, key, &r->key_scratch, error))
        return -1;
    r->pos = skip_ws(r->buf, r->pos, r->len);
    if (r->pos >= r->len || r->buf[r->pos] != ':') {
        fail_at(r, r->pos, error, "expected ':'");
        return -1;
    }
    r->pos++;
    return 1;
}

int kb_json_array_next(KbJsonReader *r, GError **error)
{
    return next_item(r, ']', error);
}

/* ---- skipping ------------------------------------------------------------------------------- */

/* One scalar at r->pos (white space skipped), or FALSE. */
static gboolean skip_scalar(KbJsonReader *r, GError **error)
{
    switch (r->buf[r->pos]) {
    case '"':
        return scan_string(r, NULL, NULL, error);
    case 't':
        return scan_literal(r, "true", 4, error);
    case 'f':
        return scan_literal(r, "false", 5, error);
    case 'n':
        return scan_literal(r, "null", 4, error);
    case '-':
    case '0' ... '9':
        return scan_number(r, NULL, NULL, error);
    default:
        return fail_at(r, r->pos, error, "expected a value");
    }
}

/* The string at @pos: plain ones inline, the rest through scan_string(). 0 on error. */
static inline gsize skip_string(KbJsonReader *r, gsize pos, GError **error)
{
    gsize end = plain_string_end(r->buf, pos, r->len, r->max_string_len);
    if (end != 0)
        return end;
    r->pos = pos;
    return scan_string_slow(r, NULL, NULL, error) ? r->pos : 0;
}

/*
 * Skip one value without recursion, on local copies of the reader's position: a state machine
 * whose states are the labels below (expecting a value, a member name, or what follows a value).
 * @arrays keeps one bit per open container (set for arrays), d is the number open; nesting
 * counts from the reader's own depth.
 */
static gboolean skip_value(KbJsonReader *r, GError **error)
{
    const char *buf = r->buf;
    gsize len = r->len, pos = r->pos;
    guint64 arrays[KB_JSON_DEPTH_CAP / 64];
    guint d = 0, limit = MIN(r->max_depth, KB_JSON_DEPTH_CAP);
    char c;

value:
    pos = skip_ws(buf, pos, len);
    if (pos >= len)
        return fail_at(r, pos, error, "expected a value");
    c = buf[pos];
    if (c == '"') {
        if ((pos = skip_string(r, pos, error)) == 0)
            return FALSE;
    } else if (c == '{' || c == '[') {
        if (r->depth + d >= limit)
            return fail_depth(r, pos, error);
        guint64 bit = G_GUINT64_CONSTANT(1) << (d % 64);
        arrays[d / 64] = c == '[' ? arrays[d / 64] | bit : arrays[d / 64] & ~bit;
        d++;
        pos = skip_ws(buf, pos + 1, len);
        if (pos < len && buf[pos] == (c == '{' ? '}' : ']')) {
            pos++;
            d--;
        } else if (c == '{') {
            goto key;
        } else {
            goto value;
        }
    } else {
        r->pos = pos;
        if (!skip_scalar(r, error))
            return FALSE;
        pos = r->pos;
    }
after:
    if (d == 0) {
        r->pos = pos;
        return TRUE;
    }
    pos = skip_ws(buf, pos, len);
    gboolean array = (arrays[(d - 1) / 64] >> ((d - 1) % 64)) & 1;
    if (pos < len && buf[pos] == ',') {
        pos++;
        if (array)
            goto value;
        goto key;
    }
    if (pos < len && buf[pos] == (array ? ']' : '}')) {
        pos++;
        d--;
        goto after;
    }
    return fail_at(r, pos, error, array ? "expected ',' or ']'" : "expected ',' or '}'");
key:
    pos = skip_ws(buf, pos, len);
    if (pos >= len || buf[pos] != '"')
        return fail_at(r, pos, error, "expected a member name");
    if ((pos = skip_string(r, pos, error)) == 0)
        return FALSE;
    pos = skip_ws(buf, pos, len);
    if (pos >= len || buf[pos] != ':')
        return fail_at(r, pos, error, "expected ':'");
    pos++;
    goto value;
}

gboolean kb_json_skip(KbJsonReader *r, GError **error)
{
    return skip_value(r, error);
}

gboolean kb_json_skip_span(KbJsonReader *r, KbJsonStr *span, GError **error)
{
    r->pos = skip_ws(r->buf, r->pos, r->len);
    gsize start = r->pos;
    if (!skip_value(r, error))
        return FALSE;
    span->p = r->buf + start;
    span->len = r->pos - start;
    return TRUE;
}

/* ---- scalars -------------------------------------------------------------------------------- */

static gboolean expect(KbJsonReader *r, KbJsonType type, const char *what, GError **error)
{
    if (kb_json_peek(r) != type)
        return fail_at(r, r->pos, error, what);
    return TRUE;
}

gboolean kb_json_read_string(KbJsonReader *r, KbJsonStr *out, GError **error)
{
    r->pos = skip_ws(r->buf, r->pos, r->len);
    if (r->pos >= r->len || r->buf[r->pos] != '"')
        return fail_at(r, r->pos, error, "expected a string");
    return scan_string(r, out, &r->scratch, error);
}

gboolean kb_json_read_bool(KbJsonReader *r, gboolean *out, GError **error)
{
    KbJsonType t = kb_json_peek(r);
    if (t != KB_JSON_TRUE && t != KB_JSON_FALSE)
        return fail_at(r, r->pos, error, "expected true or false");
    if (!scan_literal(r, t == KB_JSON_TRUE ? "true" : "false", t == KB_JSON_TRUE ? 4 : 5, error))
        return FALSE;
    *out = t == KB_JSON_TRUE;
    return TRUE;
}

gboolean kb_json_read_null(KbJsonReader *r, GError **error)
{
    return expect(r, KB_JSON_NULL, "expected null", error) && scan_literal(r, "null", 4, error);
}

gboolean kb_json_read_number(KbJsonReader *r, KbJsonStr *text, gboolean *is_integer,
                             GError **error)
{
    return expect(r, KB_JSON_NUMBER, "expected a number", error) &&
           scan_number(r, text, is_integer, error);
}

gboolean kb_json_finish(KbJsonReader *r, GError **error)
{
    r->pos = skip_ws(r->buf, r->pos, r->len);
    if (r->depth != 0 || r->pos != r->len)
        return fail_at(r, r->pos, error, "expected the end of the input");
    return TRUE;
}

char *kb_json_str_dup(const KbJsonStr *s)
{
    return g_strndup(s->p, s->len);
}
