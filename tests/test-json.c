/* kb-json: the strict pull reader. */
#include <string.h>

#include "kube/kb-error.h"
#include "kube/kb-json.h"

/* Read a whole value, every string unescaped (recursion bounded by the depth limit). */
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
        return kb_json_read_string(r, &s, error);
    case KB_JSON_NUMBER:
        return kb_json_read_number(r, &s, &integer, error);
    case KB_JSON_TRUE:
    case KB_JSON_FALSE:
        return kb_json_read_bool(r, &b, error);
    case KB_JSON_NULL:
        return kb_json_read_null(r, error);
    default:
        return kb_json_skip(r, error);
    }
}

/* Both ways (walking and skipping): the same verdict and message. */
static gboolean check(const char *text, gsize len, GError **error)
{
    KbJsonReader a, b;
    g_autoptr(GError) skip_error = NULL;
    kb_json_reader_init(&a, text, len);
    kb_json_reader_init(&b, text, len);
    gboolean walked = walk(&a, error) && kb_json_finish(&a, error);
    gboolean skipped = kb_json_skip(&b, &skip_error) && kb_json_finish(&b, &skip_error);
    kb_json_reader_clear(&a);
    kb_json_reader_clear(&b);
    g_assert_cmpint(walked, ==, skipped);
    if (!walked) {
        /* Same code and place; the wording may differ (the walker knows more about the value
         * it expected). */
        g_assert_cmpint((*error)->code, ==, skip_error->code);
        g_autofree char *where = g_strdup(strstr((*error)->message, " at byte "));
        g_autofree char *skip_where = g_strdup(strstr(skip_error->message, " at byte "));
        g_assert_nonnull(where);
        g_assert_nonnull(skip_where);
        g_strdelimit(where, ",", '\0');
        g_strdelimit(skip_where, ",", '\0');
        g_assert_cmpstr(where, ==, skip_where);
    }
    return walked;
}

static const char *const valid[] = {
    "{}",
    "[]",
    " \t\r\n1 \n",
    "-0",
    "0.5e-10",
    "1E+2",
    "123456789012345678901234567890",
    "true",
    "false",
    "null",
    "\"\"",
    "\"\\u00e9\\ud83d\\ude00\\/\\\"\\\\\\b\\f\\n\\r\\t\"",
    "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"",
    "{\"a\":[1,{\"b\":null}],\"c\":\"x\",\"\":{}}",
    "[[[],[[]]],{\"\\u0041\":{\"b\":[true,false]}}]",
    /* escapes and non-ASCII on both sides of the 16-byte scanning boundary */
    "\"0123456789abcde\\n0123456789abcdef\xc3\xa9" "0123456789abcd\\u00e9\"",
    "\"0123456789abcdef0123456789abcdef0123456789abcdef\"",
};

static void test_valid(gconstpointer data)
{
    const char *text = data;
    g_autoptr(GError) error = NULL;
    g_assert_true(check(text, strlen(text), &error));
    g_assert_no_error(error);
}

typedef struct {
    const char *text;
    const char *message; /* the whole message */
} Invalid;

static const Invalid invalid[] = {
    {"", "JSON: expected a value at byte 0, got the end of the input"},
    {"   ", "JSON: expected a value at byte 3, got the end of the input"},
    {"{\"a\":1,}", "JSON: expected a member name after ',' at byte 7, got '}'"},
    {"[1,]", "JSON: expected a value after ',' at byte 3, got ']'"},
    {"[1 2]", "JSON: expected ',' or ']' at byte 3, got '2'"},
    {"{\"a\" 1}", "JSON: expected ':' at byte 5, got '1'"},
    {"{a:1}", "JSON: expected a member name at byte 1, got 'a'"},
    {"[}", "JSON: expected a value at byte 1, got '}'"},
    {"{\"a\":1]", "JSON: expected ',' or '}' at byte 6, got ']'"},
    {"{\"a\":1}}", "JSON: expected the end of the input at byte 7, got '}'"},
    {"01", "JSON: expected the end of the input at byte 1, got '1'"},
    {"1.", "JSON: expected a digit after '.' at byte 2, got the end of the input"},
    {".5", "JSON: expected a value at byte 0, got '.'"},
    {"+1", "JSON: expected a value at byte 0, got '+'"},
    {"1e", "JSON: expected a digit in the exponent at byte 2, got the end of the input"},
    {"-", "JSON: expected a digit at byte 1, got the end of the input"},
    {"-a", "JSON: expected a digit at byte 1, got 'a'"},
    {"tru", "JSON: invalid literal at byte 0, got 't'"},
    {"nul", "JSON: invalid literal at byte 0, got 'n'"},
    {"truex", "JSON: expected the end of the input at byte 4, got 'x'"},
    {"NaN", "JSON: expected a value at byte 0, got 'N'"},
    {"'a'", "JSON: expected a value at byte 0, got '''"},
    {"\"abc", "JSON: unterminated string at byte 4, got the end of the input"},
    {"\"\\x\"", "JSON: invalid escape in string at byte 1, got '\\'"},
    {"\"\\u12g4\"", "JSON: invalid escape in string at byte 1, got '\\'"},
    {"\"\\ud800\"", "JSON: invalid escape in string at byte 1, got '\\'"},
    {"\"\\ud800\\u0041\"", "JSON: invalid escape in string at byte 1, got '\\'"},
    {"\"\\udc00\"", "JSON: invalid escape in string at byte 1, got '\\'"},
    {"\"\\u0000\"", "JSON: invalid escape in string at byte 1, got '\\'"},
    {"\"a\x01\"", "JSON: unescaped control character in string at byte 2, got byte 0x01"},
    {"\"\xc0\x80\"", "JSON: invalid UTF-8 in string at byte 1, got byte 0xc0"},
    {"\"\xe0\x80\x80\"", "JSON: invalid UTF-8 in string at byte 1, got byte 0xe0"},
    {"\"\xed\xa0\x80\"", "JSON: invalid UTF-8 in string at byte 1, got byte 0xed"},
    {"\"\xf4\x90\x80\x80\"", "JSON: invalid UTF-8 in string at byte 1, got byte 0xf4"},
    {"\"\xc3\"", "JSON: invalid UTF-8 in string at byte 1, got byte 0xc3"},
    {"\"0123456789abcdef\xff\"", "JSON: invalid UTF-8 in string at byte 17, got byte 0xff"},
    {"[1,[2,{\"a\":[3}]]]", "JSON: expected ',' or ']' at byte 13, got '}'"},
    {"{\"a\":{\"b\":1}", "JSON: expected ',' or '}' at byte 12, got the end of the input"},
};

static void test_invalid(gconstpointer data)
{
    const Invalid *c = data;
    g_autoptr(GError) error = NULL;
    g_assert_false(check(c->text, strlen(c->text), &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_assert_cmpstr(error->message, ==, c->message);
}

/* The skipper and the walker report the same place; the skipper's own words may differ where
 * the walker's API says more: only the verdict matters for these. */
static void test_invalid_skip_only(void)
{
    static const char *const texts[] = {"[1,", "{\"a\":", "{\"a\"", "[[[[", "{\"a\":1,"};
    for (gsize i = 0; i < G_N_ELEMENTS(texts); i++) {
        KbJsonReader r;
        g_autoptr(GError) error = NULL;
        kb_json_reader_init(&r, texts[i], strlen(texts[i]));
        g_assert_false(kb_json_skip(&r, &error));
        g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
        g_assert_nonnull(strstr(error->message, "got the end of the input"));
        kb_json_reader_clear(&r);
    }
}

static void test_unescape(void)
{
    const char *text = "{\"k\\u00e9y\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\","
                       "\"plain\":\"xyz\"}";
    KbJsonReader r;
    KbJsonStr key, value;
    kb_json_reader_init(&r, text, strlen(text));
    g_assert_true(kb_json_object_begin(&r, NULL));
    g_assert_cmpint(kb_json_object_next(&r, &key, NULL), ==, 1);
    g_assert_true(kb_json_read_string(&r, &value, NULL));
    /* The key (in its own scratch) survives reading an escaped value. */
    g_assert_cmpmem(key.p, key.len, "k\xc3\xa9y", 4);
    g_assert_cmpmem(value.p, value.len, "a\"b\\c/d\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80", 18);
    g_assert_cmpint(kb_json_object_next(&r, &key, NULL), ==, 1);
    g_assert_true(KB_JSON_STR_IS(key, "plain"));
    g_assert_true(kb_json_read_string(&r, &value, NULL));
    /* Without escapes: a view of the input, no copy. */
    g_assert_true(value.p == text + strlen(text) - 5);
    g_assert_true(KB_JSON_STR_IS(value, "xyz"));
    g_autofree char *dup = kb_json_str_dup(&value);
    g_assert_cmpstr(dup, ==, "xyz");
    g_assert_cmpint(kb_json_object_next(&r, &key, NULL), ==, 0);
    g_assert_true(kb_json_finish(&r, NULL));
    kb_json_reader_clear(&r);
}

static void test_numbers(void)
{
    static const struct {
        const char *text;
        gboolean integer;
        gint64 value;
    } cases[] = {
        {"0", TRUE, 0},
        {"-0", TRUE, 0},
        {"12", TRUE, 12},
        {"9223372036854775807", TRUE, G_MAXINT64},
        {"9223372036854775808", TRUE, G_MAXINT64},
        {"99999999999999999999999", TRUE, G_MAXINT64},
        {"-9223372036854775808", TRUE, G_MININT64},
        {"-9223372036854775809", TRUE, G_MININT64},
        {"1.0", FALSE, 0},
        {"1e2", FALSE, 0},
        {"-2E-2", FALSE, 0},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        KbJsonReader r;
        KbJsonStr text;
        gboolean integer;
        g_autoptr(GError) error = NULL;
        kb_json_reader_init(&r, cases[i].text, strlen(cases[i].text));
        g_assert_cmpint(kb_json_peek(&r), ==, KB_JSON_NUMBER);
        g_assert_true(kb_json_read_number(&r, &text, &integer, &error));
        g_assert_no_error(error);
        g_assert_cmpmem(text.p, text.len, cases[i].text, strlen(cases[i].text));
        g_assert_cmpint(integer, ==, cases[i].integer);
        if (integer)
            g_assert_cmpint(kb_json_integer_value(&text), ==, cases[i].value);
        g_assert_true(kb_json_finish(&r, NULL));
    }
}

/* Readers refuse the wrong type with the offset; the value is not consumed. */
static void test_wrong_type(void)
{
    KbJsonReader r;
    KbJsonStr s;
    gboolean b;
    g_autoptr(GError) error = NULL;
    kb_json_reader_init(&r, " [1]", 4);
    g_assert_false(kb_json_read_string(&r, &s, &error));
    g_assert_cmpstr(error->message, ==, "JSON: expected a string at byte 1, got '['");
    g_clear_error(&error);
    g_assert_false(kb_json_read_bool(&r, &b, &error));
    g_clear_error(&error);
    g_assert_false(kb_json_object_begin(&r, &error));
    g_assert_cmpstr(error->message, ==, "JSON: expected '{' at byte 1, got '['");
    g_clear_error(&error);
    g_assert_cmpint(kb_json_peek(&r), ==, KB_JSON_ARRAY);
    KbJsonStr span;
    g_assert_true(kb_json_skip_span(&r, &span, NULL));
    g_assert_cmpmem(span.p, span.len, "[1]", 3);
    g_assert_cmpint(kb_json_peek(&r), ==, KB_JSON_INVALID);
    kb_json_reader_clear(&r);
}

static char *nested(int depth)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < depth; i++)
        g_string_append(s, i % 2 == 0 ? "[" : "{\"a\":");
    if (depth % 2 == 0)
        g_string_append(s, "0"); /* the innermost object's value */
    for (int i = depth - 1; i >= 0; i--)
        g_string_append(s, i % 2 == 0 ? "]" : "}");
    return g_string_free(s, FALSE);
}

static void test_limit_depth(void)
{
    g_autofree char *at = nested(KB_JSON_MAX_DEPTH);
    g_autofree char *over = nested(KB_JSON_MAX_DEPTH + 1);
    g_autoptr(GError) error = NULL;
    g_assert_true(check(at, strlen(at), &error));
    g_assert_false(check(over, strlen(over), &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_assert_nonnull(strstr(error->message, "nested deeper than 128 levels"));

    /* A lower limit set by the caller. */
    KbJsonReader r;
    g_clear_error(&error);
    kb_json_reader_init(&r, "[[[]]]", 6);
    r.max_depth = 2;
    g_assert_false(kb_json_skip(&r, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    kb_json_reader_clear(&r);
}

static void test_limit_string(void)
{
    static const char *const texts[] = {"\"0123456789\"", "\"\\u0030123456789\""};
    for (gsize i = 0; i < G_N_ELEMENTS(texts); i++) {
        for (gsize max = 9; max <= 16; max += 7) {
            KbJsonReader r;
            KbJsonStr s;
            g_autoptr(GError) error = NULL;
            /* The limit counts bytes as written: 10 plain, 15 with the escape. */
            gsize written = strlen(texts[i]) - 2;
            kb_json_reader_init(&r, texts[i], strlen(texts[i]));
            r.max_string_len = max;
            gboolean ok = kb_json_read_string(&r, &s, &error);
            g_assert_cmpint(ok, ==, written <= max);
            if (!ok) {
                g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
            } else {
                g_assert_cmpmem(s.p, s.len, "0123456789", 10);
            }
            kb_json_reader_clear(&r);
        }
    }
    /* Skipped strings are held to the limit too. */
    KbJsonReader r;
    g_autoptr(GError) error = NULL;
    kb_json_reader_init(&r, "[\"0123456789\"]", 14);
    r.max_string_len = 9;
    g_assert_false(kb_json_skip(&r, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    kb_json_reader_clear(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);

    for (gsize i = 0; i < G_N_ELEMENTS(valid); i++) {
        g_autofree char *p = g_strdup_printf("/kube/json/valid/%" G_GSIZE_FORMAT, i);
        g_test_add_data_func(p, valid[i], test_valid);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(invalid); i++) {
        g_autofree char *p = g_strdup_printf("/kube/json/invalid/%" G_GSIZE_FORMAT, i);
        g_test_add_data_func(p, &invalid[i], test_invalid);
    }
    g_test_add_func("/kube/json/invalid/truncated", test_invalid_skip_only);
    g_test_add_func("/kube/json/strings/unescape-and-views", test_unescape);
    g_test_add_func("/kube/json/numbers", test_numbers);
    g_test_add_func("/kube/json/wrong-type", test_wrong_type);
    g_test_add_func("/kube/json/limit/depth", test_limit_depth);
    g_test_add_func("/kube/json/limit/string", test_limit_string);
    return g_test_run();
}
