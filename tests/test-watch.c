/* Tests for the watch-stream decoder (kube/kb-watch.c). */
#include <string.h>

#include "kube/kb-informer.h"

/* A stream of four events of every ordinary kind, with multi-byte UTF-8 inside. */
static const char *const stream_lines[] = {
        "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\","
        "\"namespace\":\"default\",\"resourceVersion\":\"11\"}}}\n",
        "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\","
        "\"namespace\":\"default\",\"resourceVersion\":\"12\",\"annotations\":{\"a\":\"h\xc3\xa9\"}"
        "}}}\n",
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":"
        "\"15\"}}}\n",
        "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\","
        "\"namespace\":\"default\",\"resourceVersion\":\"16\"}}}\n",
};
static const KbWatchEventType stream_types[] = {KB_WATCH_ADDED, KB_WATCH_MODIFIED,
                                                KB_WATCH_BOOKMARK, KB_WATCH_DELETED};
static const char *const stream_rvs[] = {"11", "12", "15", "16"};

static char *stream_text(void)
{
    GString *s = g_string_new(NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(stream_lines); i++)
        g_string_append(s, stream_lines[i]);
    return g_string_free(s, FALSE);
}

static const char *event_rv(const KbWatchEvent *ev)
{
    json_object *meta = NULL;
    json_object *rv = NULL;
    if (!json_object_object_get_ex(ev->object, "metadata", &meta) ||
        !json_object_object_get_ex(meta, "resourceVersion", &rv))
        return NULL;
    return json_object_get_string(rv);
}

/* Take every complete event; malformed lines are counted in @n_errors (may be NULL). */
static void drain(KbWatchDecoder *dec, GPtrArray *rvs, GArray *types, guint *n_errors)
{
    for (;;) {
        KbWatchEvent ev;
        g_autoptr(GError) error = NULL;
        if (kb_watch_decoder_next(dec, &ev, &error)) {
            g_assert_no_error(error);
            g_assert_nonnull(ev.object);
            g_ptr_array_add(rvs, g_strdup(event_rv(&ev)));
            if (types != NULL)
                g_array_append_val(types, ev.type);
            kb_watch_event_clear(&ev);
            g_assert_null(ev.object);
        } else if (error != NULL) {
            g_assert_null(ev.object);
            if (n_errors == NULL)
                g_error("unexpected decode error: %s", error->message);
            (*n_errors)++;
        } else {
            return;
        }
    }
}

static void assert_stream_events(GPtrArray *rvs, GArray *types)
{
    g_assert_cmpuint(rvs->len, ==, G_N_ELEMENTS(stream_rvs));
    for (guint i = 0; i < rvs->len; i++) {
        g_assert_cmpstr(g_ptr_array_index(rvs, i), ==, stream_rvs[i]);
        g_assert_cmpint(g_array_index(types, KbWatchEventType, i), ==, stream_types[i]);
    }
}

static void test_single_event(void)
{
    g_autoptr(GError) error = NULL;
    KbWatchDecoder *dec = kb_watch_decoder_new();
    KbWatchEvent ev;
    g_assert_false(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_no_error(error);
    g_assert_true(kb_watch_decoder_feed(dec, stream_lines[0], strlen(stream_lines[0]), &error));
    g_assert_no_error(error);
    g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_cmpint(ev.type, ==, KB_WATCH_ADDED);
    g_assert_cmpstr(event_rv(&ev), ==, "11");
    kb_watch_event_clear(&ev);
    g_assert_false(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(kb_watch_decoder_pending(dec), ==, 0);
    kb_watch_decoder_free(dec);
}

/* Split the stream into two pieces at every byte offset, and into three at pairs of offsets. */
static void test_split_every_offset(void)
{
    g_autofree char *text = stream_text();
    gsize len = strlen(text);
    for (gsize cut = 0; cut <= len; cut++) {
        for (gsize cut2 = cut; cut2 <= len; cut2 += (cut % 7 == 0 ? 1 : 41)) {
            g_autoptr(GPtrArray) rvs = g_ptr_array_new_with_free_func(g_free);
            g_autoptr(GArray) types = g_array_new(FALSE, FALSE, sizeof(KbWatchEventType));
            KbWatchDecoder *dec = kb_watch_decoder_new();
            g_assert_true(kb_watch_decoder_feed(dec, text, cut, NULL));
            drain(dec, rvs, types, NULL);
            g_assert_true(kb_watch_decoder_feed(dec, text + cut, cut2 - cut, NULL));
            drain(dec, rvs, types, NULL);
            g_assert_true(kb_watch_decoder_feed(dec, text + cut2, len - cut2, NULL));
            drain(dec, rvs, types, NULL);
            assert_stream_events(rvs, types);
            g_assert_cmpuint(kb_watch_decoder_pending(dec), ==, 0);
            kb_watch_decoder_free(dec);
        }
    }
}

static void test_byte_by_byte(void)
{
    g_autofree char *text = stream_text();
    g_autoptr(GPtrArray) rvs = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GArray) types = g_array_new(FALSE, FALSE, sizeof(KbWatchEventType));
    KbWatchDecoder *dec = kb_watch_decoder_new();
    for (gsize i = 0; text[i] != '\0'; i++) {
        g_assert_true(kb_watch_decoder_feed(dec, text + i, 1, NULL));
        guint before = rvs->len;
        drain(dec, rvs, types, NULL);
        /* an event appears exactly when its newline arrives */
        g_assert_cmpuint(rvs->len, ==, before + (text[i] == '\n' ? 1 : 0));
    }
    assert_stream_events(rvs, types);
    kb_watch_decoder_free(dec);
}

/* Several events per read, and events taken only after many reads were buffered. */
static void test_many_per_chunk(void)
{
    GString *s = g_string_new(NULL);
    const guint n = 2000;
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s,
                               "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p%u\","
                               "\"resourceVersion\":\"%u\"}}}\n",
                               i, 100 + i);
    g_autoptr(GPtrArray) rvs = g_ptr_array_new_with_free_func(g_free);
    KbWatchDecoder *dec = kb_watch_decoder_new();
    /* 1000-byte reads that cut events anywhere; drain only every third read */
    for (gsize off = 0, k = 0; off < s->len; off += 1000, k++) {
        g_assert_true(kb_watch_decoder_feed(dec, s->str + off, MIN(1000, s->len - off), NULL));
        if (k % 3 == 0)
            drain(dec, rvs, NULL, NULL);
    }
    drain(dec, rvs, NULL, NULL);
    g_assert_cmpuint(rvs->len, ==, n);
    for (guint i = 0; i < n; i++) {
        g_autofree char *want = g_strdup_printf("%u", 100 + i);
        g_assert_cmpstr(g_ptr_array_index(rvs, i), ==, want);
    }
    /* all in one read */
    g_ptr_array_set_size(rvs, 0);
    g_assert_true(kb_watch_decoder_feed(dec, s->str, s->len, NULL));
    drain(dec, rvs, NULL, NULL);
    g_assert_cmpuint(rvs->len, ==, n);
    kb_watch_decoder_free(dec);
    g_string_free(s, TRUE);
}

static void test_partial_line_pending(void)
{
    KbWatchDecoder *dec = kb_watch_decoder_new();
    KbWatchEvent ev;
    g_autoptr(GError) error = NULL;
    const char *line = stream_lines[0];
    gsize len = strlen(line);
    /* the whole event but its newline: not an event yet */
    g_assert_true(kb_watch_decoder_feed(dec, line, len - 1, NULL));
    g_assert_false(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(kb_watch_decoder_pending(dec), ==, len - 1);
    g_assert_true(kb_watch_decoder_feed(dec, "\n", 1, NULL));
    g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
    kb_watch_event_clear(&ev);
    /* reset drops a partial line */
    g_assert_true(kb_watch_decoder_feed(dec, line, 10, NULL));
    kb_watch_decoder_reset(dec);
    g_assert_cmpuint(kb_watch_decoder_pending(dec), ==, 0);
    g_assert_true(kb_watch_decoder_feed(dec, line, len, NULL));
    g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_cmpstr(event_rv(&ev), ==, "11");
    kb_watch_event_clear(&ev);
    kb_watch_decoder_free(dec);
}

/* Blank lines, CRLF endings and surrounding spaces are tolerated. */
static void test_blank_and_crlf(void)
{
    const char *text = "\n\r\n   \n{\"type\":\"ADDED\",\"object\":{\"metadata\":"
                       "{\"resourceVersion\":\"1\"}}}\r\n  {\"type\":\"DELETED\",\"object\":"
                       "{\"metadata\":{\"resourceVersion\":\"2\"}}}  \n\n";
    g_autoptr(GPtrArray) rvs = g_ptr_array_new_with_free_func(g_free);
    KbWatchDecoder *dec = kb_watch_decoder_new();
    g_assert_true(kb_watch_decoder_feed(dec, text, strlen(text), NULL));
    drain(dec, rvs, NULL, NULL);
    g_assert_cmpuint(rvs->len, ==, 2);
    g_assert_cmpstr(g_ptr_array_index(rvs, 0), ==, "1");
    g_assert_cmpstr(g_ptr_array_index(rvs, 1), ==, "2");
    kb_watch_decoder_free(dec);
}

static void test_types(void)
{
    static const struct {
        const char *name;
        KbWatchEventType type;
    } cases[] = {
            {"ADDED", KB_WATCH_ADDED},     {"MODIFIED", KB_WATCH_MODIFIED},
            {"DELETED", KB_WATCH_DELETED}, {"BOOKMARK", KB_WATCH_BOOKMARK},
            {"ERROR", KB_WATCH_ERROR},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *line =
                g_strdup_printf("{\"object\":{\"metadata\":{}},\"type\":\"%s\"}\n", cases[i].name);
        KbWatchDecoder *dec = kb_watch_decoder_new();
        KbWatchEvent ev;
        g_autoptr(GError) error = NULL;
        g_assert_true(kb_watch_decoder_feed(dec, line, strlen(line), NULL));
        g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
        g_assert_no_error(error);
        g_assert_cmpint(ev.type, ==, cases[i].type);
        g_assert_cmpstr(kb_watch_event_type_to_string(ev.type), ==, cases[i].name);
        kb_watch_event_clear(&ev);
        kb_watch_decoder_free(dec);
    }
}

/* Each malformed line is reported, consumed, and the good line after it still decodes. */
static void test_malformed_then_good(void)
{
    static const struct {
        const char *line;
        int code;
        const char *message_part;
    } cases[] = {
            {"not json at all", KB_ERROR_DECODE, "malformed JSON"},
            {"{\"type\":\"ADDED\",\"object\":{\"metadata\":", KB_ERROR_DECODE, "truncated"},
            {"[1,2,3]", KB_ERROR_DECODE, "no \"type\""},
            {"\"ADDED\"", KB_ERROR_DECODE, "no \"type\""},
            {"{\"object\":{}}", KB_ERROR_DECODE, "no \"type\""},
            {"{\"type\":7,\"object\":{}}", KB_ERROR_DECODE, "no \"type\""},
            {"{\"type\":\"RENAMED\",\"object\":{}}", KB_ERROR_DECODE, "unknown type \"RENAMED\""},
            {"{\"type\":\"ADDED\"}", KB_ERROR_DECODE, "\"object\" is missing"},
            {"{\"type\":\"ADDED\",\"object\":[]}", KB_ERROR_DECODE, "not an object"},
            {"{\"type\":\"ADDED\",\"object\":null}", KB_ERROR_DECODE, "not an object"},
            {"{\"type\":\"ADDED\",\"object\":{}} {\"x\":1}", KB_ERROR_DECODE, "trailing bytes"},
            {"{\"type\":\"ADDED\",\"object\":{}}garbage", KB_ERROR_DECODE, "trailing bytes"},
            {"{\"type\":\"ADDED\",\"obj\0ect\":{}}", KB_ERROR_DECODE, ""},
    };
    const char *good =
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n";
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        KbWatchDecoder *dec = kb_watch_decoder_new();
        KbWatchEvent ev;
        g_autoptr(GError) error = NULL;
        /* the NUL case needs its real length */
        gsize len = strlen(cases[i].line);
        if (i == G_N_ELEMENTS(cases) - 1)
            len = sizeof("{\"type\":\"ADDED\",\"obj\0ect\":{}}") - 1;
        g_assert_true(kb_watch_decoder_feed(dec, cases[i].line, len, NULL));
        g_assert_true(kb_watch_decoder_feed(dec, "\n", 1, NULL));
        g_assert_true(kb_watch_decoder_feed(dec, good, strlen(good), NULL));
        g_assert_false(kb_watch_decoder_next(dec, &ev, &error));
        g_assert_error(error, KB_ERROR, cases[i].code);
        g_assert_nonnull(strstr(error->message, cases[i].message_part));
        g_assert_null(ev.object);
        g_clear_error(&error);
        g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
        g_assert_no_error(error);
        g_assert_cmpstr(event_rv(&ev), ==, "9");
        kb_watch_event_clear(&ev);
        g_assert_false(kb_watch_decoder_next(dec, &ev, &error));
        g_assert_no_error(error);
        kb_watch_decoder_free(dec);
    }
}

/* The error message shows the start of the offending line, bounded and escaped. */
static void test_malformed_message_bounded(void)
{
    g_autofree char *junk = g_strnfill(5000, 'x');
    KbWatchDecoder *dec = kb_watch_decoder_new();
    KbWatchEvent ev;
    g_autoptr(GError) error = NULL;
    g_assert_true(kb_watch_decoder_feed(dec, junk, strlen(junk), NULL));
    g_assert_true(kb_watch_decoder_feed(dec, "\n", 1, NULL));
    g_assert_false(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_DECODE);
    g_assert_cmpuint(strlen(error->message), <, 300);
    g_assert_nonnull(strstr(error->message, "xxxx\"..."));
    kb_watch_decoder_free(dec);
}

static char *nested_line(guint depth)
{
    GString *s = g_string_new("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":"
                              "\"3\"},\"x\":");
    for (guint i = 0; i < depth; i++)
        g_string_append_c(s, '[');
    for (guint i = 0; i < depth; i++)
        g_string_append_c(s, ']');
    g_string_append(s, "}}\n");
    return g_string_free(s, FALSE);
}

static void test_depth_limit(void)
{
    /* the envelope and the object take two levels */
    g_autofree char *ok_line = nested_line(KB_WATCH_MAX_DEPTH - 2);
    g_autofree char *deep_line = nested_line(KB_WATCH_MAX_DEPTH - 1);
    KbWatchDecoder *dec = kb_watch_decoder_new();
    KbWatchEvent ev;
    g_autoptr(GError) error = NULL;
    g_assert_true(kb_watch_decoder_feed(dec, ok_line, strlen(ok_line), NULL));
    g_assert_true(kb_watch_decoder_feed(dec, deep_line, strlen(deep_line), NULL));
    g_assert_true(kb_watch_decoder_feed(dec, ok_line, strlen(ok_line), NULL));
    g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
    kb_watch_event_clear(&ev);
    g_assert_false(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_assert_nonnull(strstr(error->message, "nested deeper"));
    g_clear_error(&error);
    g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_cmpstr(event_rv(&ev), ==, "3");
    kb_watch_event_clear(&ev);
    kb_watch_decoder_free(dec);
}

/* A line of exactly @total bytes (newline excluded) that is a valid event. */
static char *line_of_size(gsize total)
{
    const char *head = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"},"
                       "\"pad\":\"";
    const char *tail = "\"}}";
    gsize fill = total - strlen(head) - strlen(tail);
    char *s = g_malloc(total + 2);
    char *p = g_stpcpy(s, head);
    memset(p, 'a', fill);
    p += fill;
    p = g_stpcpy(p, tail);
    *p++ = '\n';
    *p = '\0';
    return s;
}

/* A line of exactly the limit decodes; one byte more fails the feed in small and in one read. */
static void test_oversize_line(void)
{
    g_autofree char *at_limit = line_of_size(KB_WATCH_MAX_EVENT_BYTES);
    g_autofree char *over = line_of_size(KB_WATCH_MAX_EVENT_BYTES + 1);
    gsize chunk = 1024 * 1024;
    KbWatchEvent ev;

    KbWatchDecoder *dec = kb_watch_decoder_new();
    gsize len = strlen(at_limit);
    for (gsize off = 0; off < len; off += chunk)
        g_assert_true(kb_watch_decoder_feed(dec, at_limit + off, MIN(chunk, len - off), NULL));
    g_autoptr(GError) error = NULL;
    g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(event_rv(&ev), ==, "7");
    kb_watch_event_clear(&ev);

    /* in chunks, without its newline yet: fails once the partial line crosses */
    len = strlen(over);
    gboolean failed = FALSE;
    for (gsize off = 0; off < len - 1 && !failed; off += chunk) {
        if (!kb_watch_decoder_feed(dec, over + off, MIN(chunk, len - 1 - off), &error)) {
            g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
            g_clear_error(&error);
            g_assert_cmpuint(off + chunk, >, KB_WATCH_MAX_EVENT_BYTES);
            failed = TRUE;
        }
    }
    g_assert_true(failed);
    /* the decoder holds no more than the limit and refuses bytes until reset */
    g_assert_cmpuint(kb_watch_decoder_pending(dec), <=, KB_WATCH_MAX_EVENT_BYTES);
    g_assert_false(kb_watch_decoder_feed(dec, stream_lines[0], strlen(stream_lines[0]), &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_clear_error(&error);
    kb_watch_decoder_reset(dec);

    /* in one read with a good event before it: the good event survives */
    GString *s = g_string_new(stream_lines[0]);
    g_string_append(s, over);
    g_assert_false(kb_watch_decoder_feed(dec, s->str, s->len, &error));
    g_assert_error(error, KB_ERROR, KB_ERROR_LIMIT);
    g_clear_error(&error);
    g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_cmpstr(event_rv(&ev), ==, "11");
    kb_watch_event_clear(&ev);
    g_assert_false(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_no_error(error);
    g_string_free(s, TRUE);
    kb_watch_decoder_free(dec);
}

static void test_status_code(void)
{
    static const struct {
        const char *line;
        int code;
    } cases[] = {
            {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
             "\"Failure\",\"message\":\"too old resource version: 1 (5)\",\"reason\":\"Expired\","
             "\"code\":410}}",
             410},
            {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":\"Gone\"}}", 410},
            {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":\"Expired\"}}", 410},
            {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,\"reason\":"
             "\"InternalError\"}}",
             500},
            {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":\"410\"}}", 0},
            {"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":99999}}", 0},
            {"{\"type\":\"ERROR\",\"object\":{}}", 0},
            {"{\"type\":\"ADDED\",\"object\":{\"code\":410}}", 0},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        KbWatchDecoder *dec = kb_watch_decoder_new();
        KbWatchEvent ev;
        g_autoptr(GError) error = NULL;
        g_assert_true(kb_watch_decoder_feed(dec, cases[i].line, strlen(cases[i].line), NULL));
        g_assert_true(kb_watch_decoder_feed(dec, "\n", 1, NULL));
        g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
        g_assert_cmpint(kb_watch_event_status_code(&ev), ==, cases[i].code);
        kb_watch_event_clear(&ev);
        kb_watch_decoder_free(dec);
    }
    g_assert_cmpint(kb_watch_event_status_code(NULL), ==, 0);
}

static void test_bookmark(void)
{
    const char *line = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
                       "\"metadata\":{\"resourceVersion\":\"12746\",\"creationTimestamp\":null,"
                       "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}},\"spec\":"
                       "{\"containers\":null},\"status\":{}}}\n";
    KbWatchDecoder *dec = kb_watch_decoder_new();
    KbWatchEvent ev;
    g_autoptr(GError) error = NULL;
    g_assert_true(kb_watch_decoder_feed(dec, line, strlen(line), NULL));
    g_assert_true(kb_watch_decoder_next(dec, &ev, &error));
    g_assert_cmpint(ev.type, ==, KB_WATCH_BOOKMARK);
    g_assert_cmpstr(event_rv(&ev), ==, "12746");
    g_assert_cmpint(kb_watch_event_status_code(&ev), ==, 0);
    kb_watch_event_clear(&ev);
    kb_watch_decoder_free(dec);
}

/* The object outlives the decoder and the next event (owned by the event). */
static void test_event_owns_object(void)
{
    g_autofree char *text = stream_text();
    KbWatchDecoder *dec = kb_watch_decoder_new();
    KbWatchEvent first;
    KbWatchEvent second;
    g_assert_true(kb_watch_decoder_feed(dec, text, strlen(text), NULL));
    g_assert_true(kb_watch_decoder_next(dec, &first, NULL));
    g_assert_true(kb_watch_decoder_next(dec, &second, NULL));
    kb_watch_decoder_free(dec);
    g_assert_cmpstr(event_rv(&first), ==, "11");
    g_assert_cmpstr(event_rv(&second), ==, "12");
    kb_watch_event_clear(&first);
    kb_watch_event_clear(&second);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
    g_test_add_func("/kube/watch/decode/single-event", test_single_event);
    g_test_add_func("/kube/watch/decode/split-every-offset", test_split_every_offset);
    g_test_add_func("/kube/watch/decode/byte-by-byte", test_byte_by_byte);
    g_test_add_func("/kube/watch/decode/many-per-chunk", test_many_per_chunk);
    g_test_add_func("/kube/watch/decode/partial-line-pending", test_partial_line_pending);
    g_test_add_func("/kube/watch/decode/blank-and-crlf", test_blank_and_crlf);
    g_test_add_func("/kube/watch/decode/types", test_types);
    g_test_add_func("/kube/watch/decode/malformed-then-good", test_malformed_then_good);
    g_test_add_func("/kube/watch/decode/malformed-message-bounded", test_malformed_message_bounded);
    g_test_add_func("/kube/watch/decode/depth-limit", test_depth_limit);
    g_test_add_func("/kube/watch/decode/oversize-line", test_oversize_line);
    g_test_add_func("/kube/watch/decode/event-owns-object", test_event_owns_object);
    g_test_add_func("/kube/watch/status-code", test_status_code);
    g_test_add_func("/kube/watch/bookmark", test_bookmark);
    return g_test_run();
}
