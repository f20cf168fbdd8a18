/*
 * Watch-event decoding: splits the newline-delimited JSON of a watch stream into events (the
 * watch-event decoding section of kb-informer.h).
 *
 * Bytes are appended to one buffer; complete lines are counted while they are appended, so that
 * kb_watch_decoder_next() never scans a partial line again and a long event that arrives in many
 * small chunks costs linear time. Consumed bytes are dropped lazily, once they make up at least
 * half of the buffer, which keeps the memmove cost amortized linear too.
 */
#include "kube/kb-informer.h"

#include <string.h>

#define SNIPPET_LEN 64

struct KbWatchDecoder {
    GByteArray *buf;
    gsize start;       /* first byte not yet returned as an event */
    gsize partial_len; /* bytes of the trailing line that has no '\n' yet */
    guint complete;    /* complete lines in buf[start..] */
    gboolean failed;   /* a line crossed the limit: refuse bytes until reset */
    json_tokener *tok;
};

KbWatchDecoder *kb_watch_decoder_new(void)
{
    KbWatchDecoder *decoder = g_new0(KbWatchDecoder, 1);
    decoder->buf = g_byte_array_new();
    decoder->tok = json_tokener_new_ex(KB_WATCH_MAX_DEPTH);
    return decoder;
}

void kb_watch_decoder_free(KbWatchDecoder *decoder)
{
    if (decoder == NULL)
        return;
    g_byte_array_unref(decoder->buf);
    json_tokener_free(decoder->tok);
    g_free(decoder);
}

void kb_watch_decoder_reset(KbWatchDecoder *decoder)
{
    g_byte_array_set_size(decoder->buf, 0);
    decoder->start = 0;
    decoder->partial_len = 0;
    decoder->complete = 0;
    decoder->failed = FALSE;
}

gsize kb_watch_decoder_pending(const KbWatchDecoder *decoder)
{
    return decoder->buf->len - decoder->start;
}

static void compact(KbWatchDecoder *decoder)
{
    if (decoder->start == 0)
        return;
    if (decoder->start == decoder->buf->len) {
        g_byte_array_set_size(decoder->buf, 0);
        decoder->start = 0;
    } else if (decoder->start >= decoder->buf->len / 2) {
        g_byte_array_remove_range(decoder->buf, 0, decoder->start);
        decoder->start = 0;
    }
}

gboolean kb_watch_decoder_feed(KbWatchDecoder *decoder, const char *data, gsize len, GError **error)
{
    if (decoder->failed) {
        g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                    "watch stream: an event line exceeded %d bytes; restart the stream",
                    KB_WATCH_MAX_EVENT_BYTES);
        return FALSE;
    }
    compact(decoder);

    /* Count the lines this chunk completes and check each one against the limit before
     * buffering it, so that a runaway line is never held in memory beyond the limit. */
    const char *p = data;
    const char *end = data + len;
    gsize partial = decoder->partial_len;
    gsize accepted = 0; /* bytes of @data up to the last complete line that passed */
    guint lines = 0;
    const char *nl;
    while (p < end && (nl = memchr(p, '\n', (gsize)(end - p))) != NULL) {
        gsize line_len = partial + (gsize)(nl - p);
        if (line_len > KB_WATCH_MAX_EVENT_BYTES)
            goto too_long;
        partial = 0;
        lines++;
        p = nl + 1;
        accepted = (gsize)(p - data);
    }
    partial += (gsize)(end - p);
    if (partial > KB_WATCH_MAX_EVENT_BYTES)
        goto too_long;
    g_byte_array_append(decoder->buf, (const guint8 *)data, (guint)len);
    decoder->partial_len = partial;
    decoder->complete += lines;
    return TRUE;

too_long:
    /* Keep the good lines before the long one: the caller still gets their events, and the
     * resourceVersion it resumes from covers them. */
    if (accepted == 0) /* the buffered partial line is the start of the long one */
        g_byte_array_set_size(decoder->buf, (guint)(decoder->buf->len - decoder->partial_len));
    g_byte_array_append(decoder->buf, (const guint8 *)data, (guint)accepted);
    decoder->complete += lines;
    decoder->partial_len = 0;
    decoder->failed = TRUE;
    g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                "watch stream: event line longer than the limit of %d bytes",
                KB_WATCH_MAX_EVENT_BYTES);
    return FALSE;
}

/* A printable, bounded copy of the start of a line for error messages. */
static char *snippet(const char *line, gsize len)
{
    g_autofree char *head = g_strndup(line, MIN(len, SNIPPET_LEN));
    g_autofree char *escaped = g_strescape(head, NULL);
    return g_strdup_printf("\"%s\"%s", escaped, len > SNIPPET_LEN ? "..." : "");
}

static gboolean parse_type(const char *s, KbWatchEventType *type)
{
    static const struct {
        const char *name;
        KbWatchEventType type;
    } types[] = {
            {"ADDED", KB_WATCH_ADDED},     {"MODIFIED", KB_WATCH_MODIFIED},
            {"DELETED", KB_WATCH_DELETED}, {"BOOKMARK", KB_WATCH_BOOKMARK},
            {"ERROR", KB_WATCH_ERROR},
    };
    for (gsize i = 0; i < G_N_ELEMENTS(types); i++) {
        if (strcmp(s, types[i].name) == 0) {
            *type = types[i].type;
            return TRUE;
        }
    }
    return FALSE;
}

const char *kb_watch_event_type_to_string(KbWatchEventType type)
{
    switch (type) {
    case KB_WATCH_ADDED:
        return "ADDED";
    case KB_WATCH_MODIFIED:
        return "MODIFIED";
    case KB_WATCH_DELETED:
        return "DELETED";
    case KB_WATCH_BOOKMARK:
        return "BOOKMARK";
    case KB_WATCH_ERROR:
        return "ERROR";
    }
    return "UNKNOWN";
}

static json_object *parse_json(KbWatchDecoder *decoder, const char *line, gsize len, GError **error)
{
    json_tokener_reset(decoder->tok);
    json_object *obj = json_tokener_parse_ex(decoder->tok, line, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(decoder->tok);
    if (obj == NULL || jerr != json_tokener_success) {
        g_autofree char *s = snippet(line, len);
        json_object_put(obj);
        if (jerr == json_tokener_error_depth) {
            g_set_error(error, KB_ERROR, KB_ERROR_LIMIT,
                        "watch event %s: JSON nested deeper than %d levels", s, KB_WATCH_MAX_DEPTH);
        } else {
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "watch event %s: malformed JSON: %s", s,
                        jerr == json_tokener_continue ? "truncated"
                                                      : json_tokener_error_desc(jerr));
        }
        return NULL;
    }
    for (gsize i = json_tokener_get_parse_end(decoder->tok); i < len; i++) {
        if (!g_ascii_isspace(line[i])) {
            g_autofree char *s = snippet(line, len);
            json_object_put(obj);
            g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                        "watch event %s: trailing bytes after the JSON at offset %" G_GSIZE_FORMAT,
                        s, i);
            return NULL;
        }
    }
    return obj;
}

static gboolean decode_line(KbWatchDecoder *decoder, const char *line, gsize len,
                            KbWatchEvent *event, GError **error)
{
    json_object *root = parse_json(decoder, line, len, error);
    if (root == NULL)
        return FALSE;
    g_autofree char *s = NULL;
    json_object *type_obj = NULL;
    json_object *object = NULL;
    KbWatchEventType type;
    if (!json_object_is_type(root, json_type_object) ||
        !json_object_object_get_ex(root, "type", &type_obj) ||
        !json_object_is_type(type_obj, json_type_string)) {
        s = snippet(line, len);
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "watch event %s: no \"type\" string", s);
    } else if (!parse_type(json_object_get_string(type_obj), &type)) {
        g_autofree char *t = g_strescape(json_object_get_string(type_obj), NULL);
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE, "watch event: unknown type \"%s\"", t);
    } else if (!json_object_object_get_ex(root, "object", &object) ||
               !json_object_is_type(object, json_type_object)) {
        g_set_error(error, KB_ERROR, KB_ERROR_DECODE,
                    "watch event %s: \"object\" is missing or not an object",
                    kb_watch_event_type_to_string(type));
        object = NULL;
    } else {
        event->type = type;
        event->object = json_object_get(object);
    }
    json_object_put(root);
    return event->object != NULL;
}

gboolean kb_watch_decoder_next_line(KbWatchDecoder *decoder, const char **line_out, gsize *len_out)
{
    while (decoder->complete > 0) {
        const char *line = (const char *)decoder->buf->data + decoder->start;
        gsize avail = decoder->buf->len - decoder->start;
        const char *nl = memchr(line, '\n', avail);
        g_assert(nl != NULL); /* counted by feed */
        gsize len = (gsize)(nl - line);
        decoder->start += len + 1;
        decoder->complete--;
        while (len > 0 && g_ascii_isspace(line[len - 1]))
            len--;
        gsize skip = 0;
        while (skip < len && g_ascii_isspace(line[skip]))
            skip++;
        if (skip == len)
            continue; /* blank lines carry nothing */
        *line_out = line + skip;
        *len_out = len - skip;
        return TRUE;
    }
    return FALSE;
}

gboolean kb_watch_decoder_decode_line(KbWatchDecoder *decoder, const char *line, gsize len,
                                      KbWatchEvent *event, GError **error)
{
    event->type = KB_WATCH_ADDED;
    event->object = NULL;
    return decode_line(decoder, line, len, event, error);
}

gboolean kb_watch_decoder_next(KbWatchDecoder *decoder, KbWatchEvent *event, GError **error)
{
    const char *line;
    gsize len;
    event->type = KB_WATCH_ADDED;
    event->object = NULL;
    if (!kb_watch_decoder_next_line(decoder, &line, &len))
        return FALSE;
    gboolean ok = decode_line(decoder, line, len, event, error);
    if (decoder->complete == 0 && decoder->start == decoder->buf->len)
        compact(decoder);
    return ok;
}

void kb_watch_event_clear(KbWatchEvent *event)
{
    g_clear_pointer(&event->object, json_object_put);
}

int kb_watch_event_status_code(const KbWatchEvent *event)
{
    json_object *v = NULL;
    if (event == NULL || event->type != KB_WATCH_ERROR || event->object == NULL)
        return 0;
    if (json_object_object_get_ex(event->object, "code", &v) &&
        json_object_is_type(v, json_type_int)) {
        gint64 code = json_object_get_int64(v);
        return code >= 0 && code < 1000 ? (int)code : 0;
    }
    /* Some servers send only the reason. */
    if (json_object_object_get_ex(event->object, "reason", &v) &&
        json_object_is_type(v, json_type_string)) {
        const char *reason = json_object_get_string(v);
        if (strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0)
            return 410;
    }
    return 0;
}
