/*
 * Event recorder (client-go record semantics, see the header).
 *
 * Two LRU caches bound memory: aggregation entries keyed by (source, object, type, reason,
 * message), each remembering the Event it created and its running count; and token buckets keyed
 * by (source, object). Writes are asynchronous; an entry has at most one write in flight, and
 * repeats that arrive meanwhile are folded into the next PATCH. Entries and the recorder are
 * reference counted so that responses arriving after eviction or kb_recorder_free() are harmless.
 */
#include "kube/kb-recorder.h"

#include <stdarg.h>
#include <string.h>

#define DEFAULT_BURST       25
#define DEFAULT_REFILL_MS   (300 * 1000)
#define DEFAULT_WINDOW_MS   (600 * 1000)
#define DEFAULT_MAX_ENTRIES 4096

/* A small LRU map: key -> value, most recent at the head of the queue. */
typedef struct {
    GHashTable *map; /* key (owned by the value) -> GList link in order */
    GQueue order;    /* values */
    guint max;
    GDestroyNotify free_value;
    const char *(*key_of)(gconstpointer value);
} Lru;

typedef struct {
    gint ref_count;
    char *key;
    char *name;         /* the Event's metadata.name */
    char *namespace_;   /* the Event's namespace */
    json_object *event; /* the full Event as created, for re-creating it after a 404 */
    gint32 count;
    gint64 first_s;   /* firstTimestamp, unix seconds */
    gint64 last_s;    /* lastTimestamp */
    gint64 last_mono; /* local time of the last occurrence */
    gboolean in_flight;
    gboolean dirty;   /* repeats arrived while a write was in flight */
    gboolean created; /* the server has (or had) the Event */
} Entry;

typedef struct {
    char *key;
    double tokens;
    gint64 last_mono;
} Bucket;

struct KbRecorder {
    gint ref_count;
    gboolean freed;
    KbClient *client;
    char *component;
    char *host;
    guint burst;
    guint refill_ms;
    guint window_ms;
    Lru entries;
    Lru buckets;
    guint64 last_unique;
    guint64 dropped;
    guint64 created;
    guint64 patched;
    guint64 failed;
    guint pending;
};

typedef struct {
    KbRecorder *recorder; /* a reference */
    Entry *entry;         /* a reference */
    gboolean is_patch;
} Call;

/* ---- LRU ----------------------------------------------------------------------------------- */

static void lru_init(Lru *lru, guint max, const char *(*key_of)(gconstpointer),
                     GDestroyNotify free_value)
{
    lru->map = g_hash_table_new(g_str_hash, g_str_equal);
    g_queue_init(&lru->order);
    lru->max = max;
    lru->key_of = key_of;
    lru->free_value = free_value;
}

static void lru_clear(Lru *lru)
{
    g_hash_table_unref(lru->map);
    g_queue_clear_full(&lru->order, lru->free_value);
}

/* The value under @key, made the most recent; NULL when absent. */
static gpointer lru_get(Lru *lru, const char *key)
{
    GList *link = g_hash_table_lookup(lru->map, key);

    if (link == NULL)
        return NULL;
    g_queue_unlink(&lru->order, link);
    g_queue_push_head_link(&lru->order, link);
    return link->data;
}

static void lru_remove(Lru *lru, const char *key)
{
    GList *link = g_hash_table_lookup(lru->map, key);

    if (link == NULL)
        return;
    g_hash_table_remove(lru->map, key);
    g_queue_unlink(&lru->order, link);
    lru->free_value(link->data);
    g_list_free_1(link);
}

/* Insert @value (replacing any value under its key), evicting the least recent beyond max. */
static void lru_put(Lru *lru, gpointer value)
{
    lru_remove(lru, lru->key_of(value));
    g_queue_push_head(&lru->order, value);
    g_hash_table_insert(lru->map, (gpointer)lru->key_of(value), lru->order.head);
    while (lru->order.length > lru->max) {
        gpointer oldest = g_queue_peek_tail(&lru->order);
        lru_remove(lru, lru->key_of(oldest));
    }
}

/* ---- entries and buckets ------------------------------------------------------------------- */

static Entry *entry_ref(Entry *e)
{
    e->ref_count++;
    return e;
}

static void entry_unref(gpointer p)
{
    Entry *e = p;

    if (--e->ref_count > 0)
        return;
    g_free(e->key);
    g_free(e->name);
    g_free(e->namespace_);
    g_clear_pointer(&e->event, json_object_put);
    g_free(e);
}

static const char *entry_key(gconstpointer p)
{
    return ((const Entry *)p)->key;
}

static void bucket_free(gpointer p)
{
    Bucket *b = p;

    g_free(b->key);
    g_free(b);
}

static const char *bucket_key(gconstpointer p)
{
    return ((const Bucket *)p)->key;
}

/* ---- life cycle ------------------------------------------------------------------------------ */

KbRecorder *kb_recorder_new_full(KbClient *client, const KbRecorderOptions *opts)
{
    KbRecorder *r;

    g_return_val_if_fail(client != NULL && opts != NULL, NULL);
    g_return_val_if_fail(opts->component != NULL && opts->component[0] != '\0', NULL);
    r = g_new0(KbRecorder, 1);
    r->ref_count = 1;
    r->client = client;
    r->component = g_strdup(opts->component);
    r->host = g_strdup(opts->host != NULL ? opts->host : "");
    r->burst = opts->burst > 0 ? opts->burst : DEFAULT_BURST;
    r->refill_ms = opts->refill_ms > 0 ? opts->refill_ms : DEFAULT_REFILL_MS;
    r->window_ms = opts->aggregate_window_ms > 0 ? opts->aggregate_window_ms : DEFAULT_WINDOW_MS;
    lru_init(&r->entries, opts->max_entries > 0 ? opts->max_entries : DEFAULT_MAX_ENTRIES,
             entry_key, entry_unref);
    lru_init(&r->buckets, opts->max_entries > 0 ? opts->max_entries : DEFAULT_MAX_ENTRIES,
             bucket_key, bucket_free);
    return r;
}

KbRecorder *kb_recorder_new(KbClient *client, const char *component)
{
    KbRecorderOptions opts = {.component = component};

    return kb_recorder_new_full(client, &opts);
}

static void recorder_unref(KbRecorder *r)
{
    if (--r->ref_count > 0)
        return;
    lru_clear(&r->entries);
    lru_clear(&r->buckets);
    g_free(r->component);
    g_free(r->host);
    g_free(r);
}

void kb_recorder_free(KbRecorder *recorder)
{
    if (recorder == NULL)
        return;
    recorder->freed = TRUE;
    recorder_unref(recorder);
}

guint64 kb_recorder_dropped(const KbRecorder *recorder)
{
    return recorder->dropped;
}

guint64 kb_recorder_created(const KbRecorder *recorder)
{
    return recorder->created;
}

guint64 kb_recorder_patched(const KbRecorder *recorder)
{
    return recorder->patched;
}

guint64 kb_recorder_failed(const KbRecorder *recorder)
{
    return recorder->failed;
}

guint kb_recorder_pending(const KbRecorder *recorder)
{
    return recorder->pending;
}

/* ---- writes ---------------------------------------------------------------------------------- */

static void on_response(const KbResponse *resp, gpointer data);

static void submit(KbRecorder *r, Entry *e, const char *method, const char *name, json_object *body,
                   const char *content_type)
{
    KbRequest req = {
            .method = method,
            .type = &kb_type_events,
            .namespace_ = e->namespace_,
            .name = name,
            .body = body,
            .content_type = content_type,
    };
    Call *c = g_new0(Call, 1);

    c->recorder = r;
    r->ref_count++;
    c->entry = entry_ref(e);
    c->is_patch = name != NULL;
    e->in_flight = TRUE;
    e->dirty = FALSE;
    r->pending++;
    kb_client_call_async(r->client, &req, on_response, c);
}

/* POST the Event with the entry's running count (first time, or again after a 404). */
static void send_create(KbRecorder *r, Entry *e)
{
    g_autofree char *last = kb_time_format(e->last_s);

    json_object_object_add(e->event, "count", json_object_new_int(e->count));
    json_object_object_add(e->event, "lastTimestamp", json_object_new_string(last));
    submit(r, e, "POST", NULL, e->event, NULL);
}

static void send_patch(KbRecorder *r, Entry *e)
{
    g_autofree char *last = kb_time_format(e->last_s);
    json_object *patch = json_object_new_object();

    json_object_object_add(patch, "count", json_object_new_int(e->count));
    json_object_object_add(patch, "lastTimestamp", json_object_new_string(last));
    submit(r, e, "PATCH", e->name, patch, "application/merge-patch+json");
    json_object_put(patch);
}

static void handle_response(KbRecorder *r, Entry *e, gboolean is_patch, const KbResponse *resp)
{
    if (resp->error == NULL) {
        if (is_patch)
            r->patched++;
        else
            r->created++;
        e->created = TRUE;
    } else if (is_patch && g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND)) {
        /* The Event expired on the server (1 h TTL by default): create it again. */
        send_create(r, e);
        return;
    } else if (!is_patch && g_error_matches(resp->error, KB_ERROR, KB_ERROR_ALREADY_EXISTS)) {
        e->created = TRUE;
    } else {
        r->failed++;
        g_warning("event %s/%s: cannot %s: %s", e->namespace_, e->name,
                  is_patch ? "update" : "create", resp->error->message);
    }
    if (e->dirty) {
        if (e->created)
            send_patch(r, e);
        else
            send_create(r, e);
    }
}

static void on_response(const KbResponse *resp, gpointer data)
{
    Call *c = data;
    KbRecorder *r = c->recorder;
    Entry *e = c->entry;

    r->pending--;
    e->in_flight = FALSE;
    if (!r->freed)
        handle_response(r, e, c->is_patch, resp);
    entry_unref(e);
    recorder_unref(r);
    g_free(c);
}

/* ---- recording ------------------------------------------------------------------------------- */

static void key_append(GString *key, const char *s)
{
    if (s == NULL)
        s = "";
    g_string_append_printf(key, "%zu:%s", strlen(s), s);
}

/* client-go's spam filter: a token bucket per (source, object). */
static gboolean take_token(KbRecorder *r, const char *object_key)
{
    gint64 now = g_get_monotonic_time();
    Bucket *b = lru_get(&r->buckets, object_key);

    if (b == NULL) {
        b = g_new0(Bucket, 1);
        b->key = g_strdup(object_key);
        b->tokens = r->burst;
        b->last_mono = now;
        lru_put(&r->buckets, b);
    } else {
        b->tokens += (double)(now - b->last_mono) / (r->refill_ms * 1000.0);
        b->tokens = MIN(b->tokens, (double)r->burst);
        b->last_mono = now;
    }
    if (b->tokens < 1)
        return FALSE;
    b->tokens -= 1;
    return TRUE;
}

/* Valid UTF-8, at most KB_RECORDER_MAX_MESSAGE bytes, cut on a character boundary. */
static char *clean_message(const char *raw)
{
    char *msg = g_utf8_make_valid(raw, -1);
    gsize cut = strlen(msg);

    if (cut <= KB_RECORDER_MAX_MESSAGE)
        return msg;
    cut = KB_RECORDER_MAX_MESSAGE;
    while (cut > 0 && ((guchar)msg[cut] & 0xC0) == 0x80)
        cut--;
    msg[cut] = '\0';
    return msg;
}

/* "<object>.<hex unix nanoseconds>", unique within the process and at most 253 bytes. */
static char *event_name(KbRecorder *r, const char *object)
{
    guint64 unique = (guint64)g_get_real_time() * 1000;

    if (unique <= r->last_unique)
        unique = r->last_unique + 1;
    r->last_unique = unique;
    return g_strdup_printf("%.*s.%" G_GINT64_MODIFIER "x", 253 - 17, object, unique);
}

typedef struct {
    const KbObjectMeta *involved;
    const char *api_version;
    const char *kind;
    const char *type;
    const char *reason;
    const char *message;
} EventFields;

static json_object *event_new(const KbRecorder *r, const Entry *e, const EventFields *f)
{
    json_object *ev = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object *obj = json_object_new_object();
    json_object *source = json_object_new_object();
    g_autofree char *first = kb_time_format(e->first_s);

    json_object_object_add(meta, "name", json_object_new_string(e->name));
    json_object_object_add(meta, "namespace", json_object_new_string(e->namespace_));
    json_object_object_add(obj, "kind", json_object_new_string(f->kind));
    if (f->involved->namespace_ != NULL)
        json_object_object_add(obj, "namespace", json_object_new_string(f->involved->namespace_));
    json_object_object_add(obj, "name", json_object_new_string(f->involved->name));
    if (f->involved->uid != NULL)
        json_object_object_add(obj, "uid", json_object_new_string(f->involved->uid));
    json_object_object_add(obj, "apiVersion", json_object_new_string(f->api_version));
    json_object_object_add(source, "component", json_object_new_string(r->component));
    if (r->host[0] != '\0')
        json_object_object_add(source, "host", json_object_new_string(r->host));

    json_object_object_add(ev, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(ev, "kind", json_object_new_string("Event"));
    json_object_object_add(ev, "metadata", meta);
    json_object_object_add(ev, "involvedObject", obj);
    json_object_object_add(ev, "reason", json_object_new_string(f->reason));
    json_object_object_add(ev, "message", json_object_new_string(f->message));
    json_object_object_add(ev, "type", json_object_new_string(f->type));
    json_object_object_add(ev, "source", source);
    json_object_object_add(ev, "firstTimestamp", json_object_new_string(first));
    json_object_object_add(ev, "lastTimestamp", json_object_new_string(first));
    json_object_object_add(ev, "count", json_object_new_int(e->count));
    json_object_object_add(ev, "reportingComponent", json_object_new_string(r->component));
    json_object_object_add(ev, "reportingInstance", json_object_new_string(r->host));
    return ev;
}

static void record(KbRecorder *r, const EventFields *f)
{
    const KbObjectMeta *inv = f->involved;
    g_autoptr(GString) key = g_string_new(NULL);
    gint64 now_mono = g_get_monotonic_time();
    gint64 now_s = g_get_real_time() / G_USEC_PER_SEC;
    Entry *e;

    key_append(key, r->component);
    key_append(key, r->host);
    key_append(key, f->kind);
    key_append(key, inv->namespace_);
    key_append(key, inv->name);
    key_append(key, inv->uid);
    key_append(key, f->api_version);
    if (!take_token(r, key->str)) {
        r->dropped++;
        g_debug("event %s %s/%s %s dropped by the rate limit", f->kind,
                inv->namespace_ != NULL ? inv->namespace_ : "", inv->name, f->reason);
        return;
    }
    key_append(key, f->type);
    key_append(key, f->reason);
    key_append(key, f->message);

    e = lru_get(&r->entries, key->str);
    if (e != NULL && now_mono - e->last_mono < (gint64)r->window_ms * 1000) {
        e->count++;
        e->last_s = now_s;
        e->last_mono = now_mono;
        if (e->in_flight)
            e->dirty = TRUE;
        else if (e->created)
            send_patch(r, e);
        else
            send_create(r, e);
        return;
    }
    e = g_new0(Entry, 1);
    e->ref_count = 1;
    e->key = g_string_free(g_steal_pointer(&key), FALSE);
    e->name = event_name(r, inv->name);
    e->namespace_ = g_strdup(inv->namespace_ != NULL ? inv->namespace_ : "default");
    e->count = 1;
    e->first_s = now_s;
    e->last_s = now_s;
    e->last_mono = now_mono;
    e->event = event_new(r, e, f);
    lru_put(&r->entries, e);
    send_create(r, e);
}

void kb_recorder_event(KbRecorder *recorder, const KbObjectMeta *involved, const char *api_version,
                       const char *kind, const char *type, const char *reason, const char *fmt, ...)
{
    g_autofree char *raw = NULL;
    g_autofree char *message = NULL;
    EventFields f;
    va_list ap;

    g_return_if_fail(recorder != NULL && involved != NULL && involved->name != NULL);
    g_return_if_fail(api_version != NULL && kind != NULL && type != NULL && reason != NULL);
    va_start(ap, fmt);
    raw = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    message = clean_message(raw);
    f = (EventFields){involved, api_version, kind, type, reason, message};
    record(recorder, &f);
}
