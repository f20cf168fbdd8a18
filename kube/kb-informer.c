/*
 * Informers: list (paged) then watch one resource type into a store of decoded records, and tell
 * handlers about adds, updates and deletes (the informers section of kb-informer.h).
 *
 * The state machine runs entirely on the client's main context: a list is a chain of
 * asynchronous page requests; a watch is a KbStream whose bytes go through a KbWatchDecoder; every
 * restart (after an error, a clean end of the watch or a 410) goes through one timer source, so
 * that nothing is restarted from inside a client callback and at most one request is in flight.
 */
#include "kube/kb-informer.h"

#include "kube/kb-dra.h"
#include "kube/kb-json.h"
#include "kube/kb-objects.h"

#include <string.h>

#define DEFAULT_PAGE_SIZE          500
#define DEFAULT_BACKOFF_INITIAL_MS 800
/* client-go's reflector caps at 30 s; after an API server outage that left every informer 24 s
 * from its next try, new work waited that long once the server was back. A few seconds is
 * plenty of relief for a server coming back up. */
#define DEFAULT_BACKOFF_MAX_MS      KB_INFORMER_DEFAULT_BACKOFF_MAX_MS
#define DEFAULT_MISSING_RETRY_MS    30000
#define DEFAULT_WATCH_TIMEOUT_MIN_S 300
#define DEFAULT_WATCH_TIMEOUT_MAX_S 600

typedef enum {
    NEXT_LIST,
    NEXT_WATCH,
} NextStep;

/*
 * Where a page being buffered for the page decoder stands (scan_items()): a JSON tokenizer
 * reduced to strings and nesting, looking for the "items" array of the List and the commas
 * between its items. Offsets are into list_buf.
 */
typedef struct {
    gsize pos;          /* bytes scanned */
    guint depth;        /* nesting at pos: 1 in the List, 2 in its items array */
    gboolean in_string; /* inside a string at pos */
    gboolean escape;    /* after a backslash in a string */
    gsize key_start;    /* the string at depth 1 being read starts here (after its quote) */
    gboolean items_key; /* the last string closed at depth 1 was "items" */
    gsize items_start;  /* just after the items array's "[", 0 until it is seen */
    gsize comma;        /* the last comma between two items not decoded yet, 0: none */
    gboolean done;      /* the items array closed (or the page is not of the expected shape) */
} ItemScan;

/* What the current list asked for (list_resource_version()). */
typedef enum {
    LIST_CONSISTENT, /* no resourceVersion: etcd, paged */
    LIST_AT_ZERO,    /* "0": the watch cache, which ignores the limit */
    LIST_AT_LAST,    /* the last resourceVersion seen, without a limit: the watch cache */
} ListAt;

struct KbInformer {
    KbClient *client;
    GMainContext *context;
    const KbResourceType *type;
    char *namespace_;
    char *label_selector;
    char *field_selector;
    KbDecodeFunc decode;
    KbPageDecodeFunc decode_page; /* NULL when keep_raw */
    /* Pods and claims without keep_raw: watch events skip json-c too (NULL: they do not). */
    KbObjectMeta *(*decode_bytes)(const char *json, gsize len, GError **error);
    gboolean keep_raw;
    gint64 page_size;
    KbInformerHandlers handlers;
    gpointer user_data;
    char *what; /* "pods" or "pods in namespace ns", for logs */

    GHashTable *by_key; /* "ns/name" (owned) -> record (one reference) */
    GHashTable *by_uid; /* uid (the record's string) -> record (borrowed) */
    /* kb_informer_expect(): "ns/name" (owned) -> Expected, until the write's event, or any other
     * event or deletion of that key */
    GHashTable *expected;

    gboolean started;
    gboolean synced;
    gboolean missing;
    char *resource_version; /* where the next watch resumes */

    KbStream *list_stream;  /* the page request in flight, or NULL */
    json_tokener *list_tok; /* parses the page as its bytes arrive */
    json_object *list_body; /* the page, once complete */
    GString *list_buf;      /* the page's bytes not decoded yet, with a page decoder */
    gsize list_bytes;       /* of the current page */
    gsize max_page_bytes;
    /* A page's items are decoded in chunks of at least this many bytes as they arrive
     * (scan_items()), so that the bytes of a whole list are never held at once. */
    gsize chunk_bytes;
    ItemScan scan;
    char *list_rv;         /* the list's resourceVersion, committed when the list completes */
    GPtrArray *list_items; /* records of the pages so far, in list order */
    GHashTable *list_keys; /* key -> index + 1 in list_items */
    char *list_continue;
    /* Which resourceVersion lists ask for (list_resource_version()); see kb_informer_new in the
     * header. */
    ListAt list_at;
    gboolean rv_unavailable;   /* a list at a resourceVersion was refused: the next is consistent */
    gboolean consistent_lists; /* for good: the server pages "0" lists, or one was too large */

    KbStream *stream;
    KbWatchDecoder *decoder;
    gboolean watch_got_event; /* any event but ERROR on the current watch */
    gint64 watch_started_us;
    gboolean watch_stop; /* set from on_data: the stream is being cancelled */
    NextStep watch_next;
    guint watch_next_delay_ms;

    GSource *timer;
    NextStep timer_step;

    guint backoff_initial_ms;
    guint backoff_max_ms;
    guint backoff_ms;   /* the next delay before jitter */
    guint max_delay_ms; /* the longest retry delay chosen so far */
    guint missing_retry_ms;
    guint watch_timeout_min_s;
    guint watch_timeout_max_s;

    guint64 decode_errors;
    guint64 relists;
    guint64 events;
    guint64 lists_done;
    guint64 fast_pages;
    guint64 fast_events;
    guint64 echoes;
    guint64 fallback_pages;
    guint64 list_chunks;
};

/* Longest metadata name (a DNS subdomain) and resourceVersion an expected event is matched on. */
#define PEEK_NAME_MAX 256
#define PEEK_RV_MAX   64

/* A write of this process to an object the store holds (kb_informer_expect). */
typedef struct {
    KbObjectMeta *rec; /* what the write makes of the stored version (its resourceVersion set
                        * once answered) */
    gboolean answered;
    /* The object's first event while the answer was awaited: its bytes and resourceVersion,
     * taken in when the answer says whose it is. */
    char *stash;
    gsize stash_len;
    char *stash_rv;
} Expected;

static void expected_free(gpointer data)
{
    Expected *e = data;
    if (e->rec != NULL)
        kb_object_unref(e->rec);
    g_free(e->stash);
    g_free(e->stash_rv);
    g_free(e);
}

static void expected_flush(KbInformer *inf, const char *key);

static void start_list(KbInformer *inf);
static void start_watch(KbInformer *inf);

/* ---- store ------------------------------------------------------------------------------- */

static char *make_key(const char *namespace_, const char *name)
{
    if (namespace_ != NULL && namespace_[0] != '\0')
        return g_strconcat(namespace_, "/", name, NULL);
    return g_strdup(name);
}

static char *record_key(gconstpointer rec)
{
    const KbObjectMeta *meta = rec;
    return make_key(meta->namespace_, meta->name != NULL ? meta->name : "");
}

static const char *record_uid(gconstpointer rec)
{
    const KbObjectMeta *meta = rec;
    return meta->uid != NULL && meta->uid[0] != '\0' ? meta->uid : NULL;
}

static const char *record_rv(gconstpointer rec)
{
    return ((const KbObjectMeta *)rec)->resource_version;
}

/* Remove the record stored under @key; returns it with the store's reference, or NULL. */
static gpointer store_take(KbInformer *inf, const char *key)
{
    gpointer old_key = NULL;
    gpointer old = NULL;
    if (!g_hash_table_steal_extended(inf->by_key, key, &old_key, &old))
        return NULL;
    g_free(old_key);
    const char *uid = record_uid(old);
    if (uid != NULL && g_hash_table_lookup(inf->by_uid, uid) == old)
        g_hash_table_remove(inf->by_uid, uid);
    return old;
}

/* Store @rec (consumes the reference) under @key (consumed); the slot must be empty. */
static void store_put(KbInformer *inf, char *key, gpointer rec)
{
    g_hash_table_insert(inf->by_key, key, rec);
    const char *uid = record_uid(rec);
    if (uid != NULL)
        g_hash_table_insert(inf->by_uid, (gpointer)uid, rec);
}

static void unref_record(gpointer rec)
{
    if (rec != NULL)
        kb_object_unref(rec);
}

static void notify_add(KbInformer *inf, gpointer rec)
{
    if (inf->handlers.on_add != NULL)
        inf->handlers.on_add(rec, inf->user_data);
}

static void notify_update(KbInformer *inf, gpointer old, gpointer rec)
{
    if (inf->handlers.on_update != NULL)
        inf->handlers.on_update(old, rec, inf->user_data);
}

static void notify_delete(KbInformer *inf, gpointer old)
{
    if (inf->handlers.on_delete != NULL)
        inf->handlers.on_delete(old, inf->user_data);
}

static gboolean same_uid(gconstpointer a, gconstpointer b)
{
    const char *ua = record_uid(a);
    const char *ub = record_uid(b);
    /* an object without a uid (test fixtures) is taken to be the same incarnation */
    return ua == NULL || ub == NULL || strcmp(ua, ub) == 0;
}

/*
 * Put @rec (consumes the reference) into the store and tell the handlers: an add for a new key,
 * an update for a changed one, a delete and an add when the key now names another incarnation
 * (a different uid). A record with the same uid and resourceVersion as the stored one is a repeat
 * and is dropped. Returns FALSE for a repeat.
 */
static gboolean store_apply(KbInformer *inf, gpointer rec)
{
    char *key = record_key(rec);
    /* whatever happens to the key now, an expected version is either this one or never comes */
    if (g_hash_table_size(inf->expected) > 0)
        expected_flush(inf, key);
    gpointer old = g_hash_table_lookup(inf->by_key, key);
    if (old != NULL && same_uid(old, rec) && g_strcmp0(record_rv(old), record_rv(rec)) == 0) {
        g_free(key);
        kb_object_unref(rec);
        return FALSE;
    }
    old = store_take(inf, key);
    store_put(inf, key, rec);
    if (old == NULL) {
        notify_add(inf, rec);
    } else if (same_uid(old, rec)) {
        notify_update(inf, old, rec);
    } else {
        notify_delete(inf, old);
        notify_add(inf, rec);
    }
    if (old != NULL)
        kb_object_unref(old);
    return TRUE;
}

static void store_delete(KbInformer *inf, const char *key)
{
    if (g_hash_table_size(inf->expected) > 0)
        expected_flush(inf, key);
    gpointer old = store_take(inf, key);
    if (old == NULL)
        return;
    notify_delete(inf, old);
    kb_object_unref(old);
}

/*
 * Replace the store with the records of a complete list (@items, in list order; the array's
 * references are taken over): deletes for keys that vanished, then adds and updates in list
 * order. Records whose resourceVersion did not change stay as they are, without a callback.
 */
static void store_replace(KbInformer *inf, GPtrArray *items, GHashTable *keys)
{
    g_autoptr(GPtrArray) vanished = g_ptr_array_new_with_free_func(g_free);
    GHashTableIter iter;
    gpointer key;
    g_hash_table_iter_init(&iter, inf->by_key);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        if (!g_hash_table_contains(keys, key))
            g_ptr_array_add(vanished, g_strdup(key));
    }
    for (guint i = 0; i < vanished->len; i++)
        store_delete(inf, g_ptr_array_index(vanished, i));
    for (guint i = 0; i < items->len; i++) {
        gpointer rec = g_ptr_array_index(items, i);
        if (rec != NULL) {
            items->pdata[i] = NULL;
            store_apply(inf, rec);
        }
    }
}

/* ---- helpers ----------------------------------------------------------------------------- */

static const char *json_str(json_object *obj, const char *field)
{
    json_object *v = NULL;
    if (obj == NULL || !json_object_object_get_ex(obj, field, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static json_object *json_metadata(json_object *obj)
{
    json_object *meta = NULL;
    if (obj == NULL || !json_object_is_type(obj, json_type_object) ||
        !json_object_object_get_ex(obj, "metadata", &meta) ||
        !json_object_is_type(meta, json_type_object))
        return NULL;
    return meta;
}

static void skip_malformed(KbInformer *inf, json_object *obj, const GError *error)
{
    json_object *meta = json_metadata(obj);
    const char *kind = json_str(obj, "kind");
    const char *ns = json_str(meta, "namespace");
    const char *name = json_str(meta, "name");
    g_autofree char *key = make_key(ns, name != NULL ? name : "(no name)");
    inf->decode_errors++;
    g_warning("informer %s: skipping malformed %s %s: %s", inf->what,
              kind != NULL ? kind : "object", key, error != NULL ? error->message : "?");
    if (inf->handlers.on_decode_error != NULL && error != NULL)
        inf->handlers.on_decode_error(obj, error, inf->user_data);
}

static gpointer decode_object(KbInformer *inf, json_object *obj)
{
    g_autoptr(GError) error = NULL;
    gpointer rec;
    if (inf->decode != NULL)
        rec = inf->decode(obj, inf->keep_raw, &error);
    else
        rec = kb_meta_object_decode(obj, inf->keep_raw, &error);
    if (rec == NULL) {
        skip_malformed(inf, obj, error);
        return NULL;
    }
    if (((KbObjectMeta *)rec)->name == NULL) {
        g_autoptr(GError) no_name =
                g_error_new_literal(KB_ERROR, KB_ERROR_DECODE, "metadata.name: missing");
        kb_object_unref(rec);
        skip_malformed(inf, obj, no_name);
        return NULL;
    }
    return rec;
}

static guint next_backoff(KbInformer *inf)
{
    guint base = inf->backoff_ms;
    inf->backoff_ms = (guint)MIN((guint64)base * 2, (guint64)inf->backoff_max_ms);
    /* +-20% so that many informers restarting together spread out */
    guint delay = (guint)(base * g_random_double_range(0.8, 1.2));
    inf->max_delay_ms = MAX(inf->max_delay_ms, delay);
    return delay;
}

guint kb_informer_max_retry_delay_ms(const KbInformer *informer)
{
    return informer->max_delay_ms;
}

static void reset_backoff(KbInformer *inf)
{
    inf->backoff_ms = inf->backoff_initial_ms;
}

static gboolean on_timer(gpointer user_data)
{
    KbInformer *inf = user_data;
    g_clear_pointer(&inf->timer, g_source_unref);
    if (inf->timer_step == NEXT_LIST)
        start_list(inf);
    else
        start_watch(inf);
    return G_SOURCE_REMOVE;
}

/* Run @step after @delay_ms on the informer's context, replacing any pending step. */
static void schedule(KbInformer *inf, NextStep step, guint delay_ms)
{
    if (inf->timer != NULL) {
        g_source_destroy(inf->timer);
        g_clear_pointer(&inf->timer, g_source_unref);
    }
    inf->timer_step = step;
    inf->timer = g_timeout_source_new(delay_ms);
    g_source_set_callback(inf->timer, on_timer, inf, NULL);
    g_source_set_name(inf->timer, "kb-informer");
    g_source_attach(inf->timer, inf->context);
}

/* ---- list --------------------------------------------------------------------------------- */

static void clear_list_state(KbInformer *inf)
{
    if (inf->list_stream != NULL)
        kb_stream_cancel(g_steal_pointer(&inf->list_stream));
    g_clear_pointer(&inf->list_body, json_object_put);
    /* a list's pages can be large: do not hold the buffer while watching */
    if (inf->list_buf != NULL)
        g_string_free(g_steal_pointer(&inf->list_buf), TRUE);
    g_clear_pointer(&inf->list_rv, g_free);
    g_clear_pointer(&inf->list_items, g_ptr_array_unref);
    g_clear_pointer(&inf->list_keys, g_hash_table_unref);
    g_clear_pointer(&inf->list_continue, g_free);
}

static gboolean on_list_data(const char *data, gsize len, gpointer user_data);
static void on_list_done(const KbResponse *resp, gpointer user_data);

/*
 * The resourceVersion a list asks for, as client-go's reflector chooses it: "0" for the first
 * list and the last one seen for a relist, both answered from the API server's watch cache (no
 * read of etcd; a relist after 410 Gone gets a state at least that new); NULL, a consistent read
 * from etcd, after a list at a resourceVersion the server no longer has or does not have yet,
 * or for good once the server has paged a "0" list (its watch cache is off) or an unpaged
 * answer crossed the page byte limit. The cache answers in one piece, so only informers with a
 * page decoder ask it: their page costs its bytes, where json-c's tree of a whole list of 5,000
 * real nodes (images and all) would cost several times its tens of MiB. The others read etcd
 * page by page.
 */
static const char *list_resource_version(const KbInformer *inf)
{
    if (inf->decode_page == NULL || inf->rv_unavailable || inf->consistent_lists)
        return NULL;
    return inf->resource_version != NULL ? inf->resource_version : "0";
}

static void request_page(KbInformer *inf)
{
    KbListOptions lo = {
            .label_selector = inf->label_selector,
            .field_selector = inf->field_selector,
            .limit = inf->page_size,
            .continue_token = inf->list_continue,
    };
    /* A later page carries only its continue token (the server refuses both). The watch cache
     * ignores the limit of a "0" list; a list at any other resourceVersion is sent without one
     * so that the cache can answer it (with a limit, kube-apiserver reads it from etcd). */
    if (inf->list_continue == NULL) {
        lo.resource_version = list_resource_version(inf);
        inf->list_at = lo.resource_version == NULL             ? LIST_CONSISTENT
                       : strcmp(lo.resource_version, "0") == 0 ? LIST_AT_ZERO
                                                               : LIST_AT_LAST;
        if (inf->list_at == LIST_AT_LAST)
            lo.limit = 0;
    }
    KbRequest req = {
            .method = "GET",
            .type = inf->type,
            .namespace_ = inf->namespace_,
            .list = &lo,
    };
    /* A stream rather than kb_client_call_async: it can be cancelled when the informer goes
     * away, and the page is parsed as it arrives instead of being buffered first. */
    json_tokener_reset(inf->list_tok);
    g_clear_pointer(&inf->list_body, json_object_put);
    if (inf->decode_page != NULL && inf->list_buf == NULL)
        inf->list_buf = g_string_sized_new(64 * 1024);
    else if (inf->list_buf != NULL)
        g_string_truncate(inf->list_buf, 0);
    inf->list_bytes = 0;
    memset(&inf->scan, 0, sizeof(inf->scan));
    inf->list_stream = kb_client_stream(inf->client, &req, on_list_data, on_list_done, inf);
}

static void start_list(KbInformer *inf)
{
    clear_list_state(inf);
    inf->list_items = g_ptr_array_new_with_free_func(unref_record);
    inf->list_keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    request_page(inf);
}

/* Whether @resp refuses a list for its resourceVersion (client-go's isExpiredError and
 * isTooLargeResourceVersionError): 410 Expired/Gone (etcd compacted it), or the 504 of a watch
 * cache that has not reached it within 3 s, with the cause ResourceVersionTooLarge (before
 * 1.18.6 only its message tells). */
static gboolean rv_refused(const KbResponse *resp)
{
    if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_GONE))
        return TRUE;
    if (resp->http_status != 504)
        return FALSE;
    json_object *details = NULL, *causes = NULL;
    if (resp->body != NULL && json_object_object_get_ex(resp->body, "details", &details))
        json_object_object_get_ex(details, "causes", &causes);
    for (gsize i = 0; causes != NULL && json_object_is_type(causes, json_type_array) &&
                      i < json_object_array_length(causes);
         i++) {
        if (g_strcmp0(json_str(json_object_array_get_idx(causes, i), "reason"),
                      "ResourceVersionTooLarge") == 0)
            return TRUE;
    }
    return strstr(resp->error->message, "Too large resource version") != NULL;
}

/* The list failed with @error (HTTP @http_status): tell on_missing for a 404, back off, relist.
 * The caller has already detached inf->list_stream when it is being cancelled. */
static void list_failed(KbInformer *inf, const GError *error, int http_status,
                        guint retry_after_seconds)
{
    clear_list_state(inf);
    if (inf->list_at != LIST_CONSISTENT && g_error_matches(error, KB_ERROR, KB_ERROR_LIMIT)) {
        /* the watch cache answers in one piece: only etcd pages */
        inf->consistent_lists = TRUE;
        g_warning("informer %s: %s; listing from etcd in pages of %" G_GINT64_FORMAT " from now on",
                  inf->what, error->message, inf->page_size);
    }
    if (g_error_matches(error, KB_ERROR, KB_ERROR_NOT_FOUND)) {
        /* the resource is not served (a CRD not installed yet): say so once, retry slowly */
        if (!inf->missing) {
            inf->missing = TRUE;
            g_message("informer %s: the server does not serve this resource; retrying every "
                      "%u ms",
                      inf->what, inf->missing_retry_ms);
            if (inf->handlers.on_missing != NULL)
                inf->handlers.on_missing(inf->user_data);
        }
        schedule(inf, NEXT_LIST, inf->missing_retry_ms);
        return;
    }
    guint delay = next_backoff(inf);
    if (retry_after_seconds > 0)
        delay = MAX(delay, MIN(retry_after_seconds, 60u) * 1000u);
    g_warning("informer %s: list failed (HTTP %d): %s; retrying in %u ms", inf->what, http_status,
              error->message, delay);
    schedule(inf, NEXT_LIST, delay);
}

/* Add @rec (consumes the reference) to the records of the list so far. */
static void list_add(KbInformer *inf, gpointer rec)
{
    char *key = record_key(rec);
    guint slot = GPOINTER_TO_UINT(g_hash_table_lookup(inf->list_keys, key));
    if (slot != 0) { /* a key twice in one list: the later item wins */
        g_free(key);
        kb_object_unref(inf->list_items->pdata[slot - 1]);
        inf->list_items->pdata[slot - 1] = rec;
    } else {
        g_ptr_array_add(inf->list_items, rec);
        g_hash_table_insert(inf->list_keys, key, GUINT_TO_POINTER(inf->list_items->len));
    }
}

/* A page's resourceVersion (kept for when the list completes) and continue token (borrowed). */
static void take_page_meta(KbInformer *inf, const char *rv, const char *cont)
{
    if (rv != NULL && rv[0] != '\0') {
        g_free(inf->list_rv);
        inf->list_rv = g_strdup(rv);
    }
    g_free(inf->list_continue);
    inf->list_continue = cont != NULL && cont[0] != '\0' ? g_strdup(cont) : NULL;
}

/* Decode the items of one page into the list state. FALSE when the page is not a List. */
static gboolean take_page(KbInformer *inf, json_object *body)
{
    json_object *items = NULL;
    if (body == NULL || !json_object_object_get_ex(body, "items", &items) ||
        !(json_object_is_type(items, json_type_array) ||
          json_object_is_type(items, json_type_null)))
        return FALSE;
    gsize n = items != NULL && json_object_is_type(items, json_type_array)
                      ? json_object_array_length(items)
                      : 0;
    for (gsize i = 0; i < n; i++) {
        gpointer rec = decode_object(inf, json_object_array_get_idx(items, i));
        if (rec != NULL)
            list_add(inf, rec);
    }
    json_object *meta = json_metadata(body);
    take_page_meta(inf, json_str(meta, "resourceVersion"), json_str(meta, "continue"));
    return TRUE;
}

/*
 * Decode the buffered page with the page decoder into the list state. FALSE, with nothing
 * changed, when the page must go through json-c instead (see kb_informer_new in the header).
 */
static gboolean take_page_fast(KbInformer *inf)
{
    g_autoptr(GPtrArray) recs = g_ptr_array_new_with_free_func(unref_record);
    g_autofree char *rv = NULL;
    g_autofree char *cont = NULL;
    g_autoptr(GError) error = NULL;
    if (!inf->decode_page(inf->list_buf->str, inf->list_buf->len, recs, &rv, &cont, &error)) {
        inf->fallback_pages++;
        g_debug("informer %s: list page of %" G_GSIZE_FORMAT " bytes goes through json-c: %s",
                inf->what, inf->list_buf->len, error != NULL ? error->message : "?");
        return FALSE;
    }
    if (recs->len == 0)
        return FALSE; /* json-c tells an empty List from a body that is not a List */
    for (guint i = 0; i < recs->len; i++) {
        if (((KbObjectMeta *)g_ptr_array_index(recs, i))->name == NULL) {
            inf->fallback_pages++; /* json-c skips and counts that item, with its message */
            return FALSE;
        }
    }
    for (guint i = 0; i < recs->len; i++)
        list_add(inf, g_steal_pointer(&recs->pdata[i]));
    take_page_meta(inf, rv, cont);
    inf->fast_pages++;
    return TRUE;
}

static void finish_list(KbInformer *inf)
{
    inf->rv_unavailable = FALSE;
    g_autoptr(GPtrArray) items = g_steal_pointer(&inf->list_items);
    g_autoptr(GHashTable) keys = g_steal_pointer(&inf->list_keys);
    if (inf->list_rv != NULL) {
        g_free(inf->resource_version);
        inf->resource_version = g_steal_pointer(&inf->list_rv);
    }
    clear_list_state(inf);
    if (inf->lists_done++ > 0)
        inf->relists++;
    inf->missing = FALSE;
    inf->synced = TRUE;
    reset_backoff(inf);
    g_debug("informer %s: listed %u objects at resourceVersion %s", inf->what, items->len,
            inf->resource_version != NULL ? inf->resource_version : "(none)");
    store_replace(inf, items, keys);
    if (inf->handlers.on_synced != NULL)
        inf->handlers.on_synced(inf->user_data);
    schedule(inf, NEXT_WATCH, 0);
}

/* Fail the page from inside its data callback; the client cancels the stream on return. */
static gboolean list_data_failed(KbInformer *inf, GError *error)
{
    inf->list_stream = NULL;
    list_failed(inf, error, 200, 0);
    g_error_free(error);
    return FALSE;
}

static gboolean only_space(const char *data, gsize len)
{
    for (gsize i = 0; i < len; i++) {
        if (!g_ascii_isspace(data[i]))
            return FALSE;
    }
    return TRUE;
}

/* Parse @len more bytes of the page (from byte @offset) with json-c: one JSON document, then
 * only white space. */
static gboolean feed_page_json(KbInformer *inf, const char *data, gsize len, gsize offset,
                               GError **error)
{
    if (inf->list_body == NULL) {
        inf->list_body = json_tokener_parse_ex(inf->list_tok, data, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(inf->list_tok);
        if (jerr == json_tokener_continue)
            return TRUE;
        if (jerr != json_tokener_success || inf->list_body == NULL) {
            g_set_error(error, KB_ERROR,
                        jerr == json_tokener_error_depth ? KB_ERROR_LIMIT : KB_ERROR_DECODE,
                        "list page: malformed JSON at byte %" G_GSIZE_FORMAT ": %s",
                        offset + json_tokener_get_parse_end(inf->list_tok),
                        json_tokener_error_desc(jerr));
            return FALSE;
        }
        gsize end = json_tokener_get_parse_end(inf->list_tok);
        data += end;
        len -= end;
    }
    if (!only_space(data, len)) {
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "list page: data after the JSON");
        return FALSE;
    }
    return TRUE;
}

/* json_tokener_parse_ex() takes an int length: feed a buffered page in pieces. */
#define PARSE_CHUNK ((gsize)16 * 1024 * 1024)

static gboolean parse_buffered_page(KbInformer *inf, GError **error)
{
    const char *data = inf->list_buf->str;
    gsize len = inf->list_buf->len;
    json_tokener_reset(inf->list_tok);
    for (gsize off = 0; off < len; off += PARSE_CHUNK) {
        if (!feed_page_json(inf, data + off, MIN(PARSE_CHUNK, len - off), off, error))
            return FALSE;
    }
    return TRUE;
}

static GError *page_limit_error(const KbInformer *inf)
{
    return g_error_new(KB_ERROR, KB_ERROR_LIMIT, "list page larger than %" G_GSIZE_FORMAT " bytes",
                       inf->max_page_bytes);
}

/*
 * Decode @len bytes of items (as found between the brackets of a List's items, commas between
 * them) into the list state: with the page decoder, else (it refused them, see kb_informer_new in
 * the header) through json-c item by item, a malformed item skipped and counted. FALSE with
 * @error when the bytes are not JSON: the page is malformed.
 */
static gboolean take_chunk(KbInformer *inf, const char *items, gsize len, GError **error)
{
    g_autoptr(GString) page = g_string_sized_new(len + 16);
    g_string_append(page, "{\"items\":[");
    g_string_append_len(page, items, (gssize)len);
    g_string_append(page, "]}");
    g_autoptr(GPtrArray) recs = g_ptr_array_new_with_free_func(unref_record);
    gboolean fast = inf->decode_page(page->str, page->len, recs, NULL, NULL, NULL);
    for (guint i = 0; fast && i < recs->len; i++)
        fast = ((KbObjectMeta *)g_ptr_array_index(recs, i))->name != NULL;
    inf->list_chunks++;
    if (fast && recs->len > 0) {
        for (guint i = 0; i < recs->len; i++)
            list_add(inf, g_steal_pointer(&recs->pdata[i]));
        return TRUE;
    }
    inf->fallback_pages++;
    json_tokener_reset(inf->list_tok); /* unused while the page decoder buffers */
    json_object *body = json_tokener_parse_ex(inf->list_tok, page->str, (int)page->len);
    json_object *array = NULL;
    if (body == NULL || json_tokener_get_error(inf->list_tok) != json_tokener_success ||
        !json_object_object_get_ex(body, "items", &array) ||
        !json_object_is_type(array, json_type_array)) {
        json_object_put(body);
        g_set_error_literal(error, KB_ERROR, KB_ERROR_DECODE, "list page: malformed JSON in items");
        return FALSE;
    }
    for (gsize i = 0; i < json_object_array_length(array); i++) {
        gpointer rec = decode_object(inf, json_object_array_get_idx(array, i));
        if (rec != NULL)
            list_add(inf, rec);
    }
    json_object_put(body);
    return TRUE;
}

/* Advance the scan of list_buf over the bytes appended since the last call (see ItemScan). */
static void scan_advance(KbInformer *inf)
{
    ItemScan *sc = &inf->scan;
    const char *buf = inf->list_buf->str;
    gsize len = inf->list_buf->len;
    for (gsize i = sc->pos; i < len && !sc->done; i++) {
        char c = buf[i];
        if (sc->in_string) {
            if (sc->escape) {
                sc->escape = FALSE;
            } else if (c == '\\') {
                sc->escape = TRUE;
            } else if (c == '"') {
                sc->in_string = FALSE;
                if (sc->depth == 1)
                    sc->items_key =
                            i - sc->key_start == 5 && memcmp(buf + sc->key_start, "items", 5) == 0;
            }
            continue;
        }
        switch (c) {
        case '"':
            sc->in_string = TRUE;
            sc->key_start = i + 1;
            break;
        case '{':
        case '[':
            if (c == '[' && sc->depth == 1 && sc->items_key && sc->items_start == 0)
                sc->items_start = i + 1;
            sc->depth++;
            break;
        case '}':
        case ']':
            if (sc->depth == 0) {
                sc->done = TRUE; /* not JSON: left to the decoders to say so */
                break;
            }
            sc->depth--;
            if (sc->depth == 1 && sc->items_start != 0)
                sc->done = TRUE; /* the items array closed */
            break;
        case ',':
            if (sc->depth == 2 && sc->items_start != 0)
                sc->comma = i;
            break;
        default:
            break;
        }
    }
    sc->pos = len;
}

/*
 * With the page decoder: once the items seen whole since the last chunk come to chunk_bytes,
 * decode them (take_chunk) and drop their bytes from list_buf, which stays a valid List of the
 * items left. FALSE with @error when they are malformed.
 */
static gboolean scan_items(KbInformer *inf, GError **error)
{
    ItemScan *sc = &inf->scan;
    scan_advance(inf);
    if (sc->items_start == 0 || sc->comma <= sc->items_start ||
        sc->comma - sc->items_start < inf->chunk_bytes)
        return TRUE;
    if (!take_chunk(inf, inf->list_buf->str + sc->items_start, sc->comma - sc->items_start, error))
        return FALSE;
    gsize cut = sc->comma + 1 - sc->items_start;
    g_string_erase(inf->list_buf, (gssize)sc->items_start, (gssize)cut);
    sc->pos -= cut;
    sc->comma = 0;
    return TRUE;
}

static gboolean on_list_data(const char *data, gsize len, gpointer user_data)
{
    KbInformer *inf = user_data;
    GError *error = NULL;
    inf->list_bytes += len;
    if (inf->list_buf != NULL) {
        /* the page decoder's bytes: the items seen whole are decoded and dropped as they come,
         * so the limit applies to what is held undecoded */
        g_string_append_len(inf->list_buf, data, (gssize)len);
        if (!scan_items(inf, &error))
            return list_data_failed(inf, error);
        if (inf->list_buf->len > inf->max_page_bytes)
            return list_data_failed(inf, page_limit_error(inf));
        return TRUE;
    }
    if (inf->list_bytes > inf->max_page_bytes)
        return list_data_failed(inf, page_limit_error(inf));
    if (!feed_page_json(inf, data, len, inf->list_bytes - len, &error))
        return list_data_failed(inf, error);
    return TRUE;
}

/* The json-c path at the end of a page: parse the buffered bytes if there are any, decode the
 * items. FALSE when the list failed (handled here). */
static gboolean take_page_json(KbInformer *inf, int http_status)
{
    g_autoptr(GError) error = NULL;
    if (inf->list_buf != NULL && !parse_buffered_page(inf, &error)) {
        list_failed(inf, error, http_status, 0);
        return FALSE;
    }
    json_object *body = g_steal_pointer(&inf->list_body);
    gboolean ok = take_page(inf, body);
    if (!ok) {
        error = g_error_new_literal(KB_ERROR, KB_ERROR_DECODE,
                                    body == NULL ? "list page: truncated JSON"
                                                 : "list page: not a List (no items array)");
        list_failed(inf, error, http_status, 0);
    }
    json_object_put(body);
    return ok;
}

static void on_list_done(const KbResponse *resp, gpointer user_data)
{
    KbInformer *inf = user_data;
    inf->list_stream = NULL;
    if (resp->error != NULL && inf->list_at != LIST_CONSISTENT && rv_refused(resp)) {
        /* as client-go's reflector: list again at once, consistently */
        inf->rv_unavailable = TRUE;
        clear_list_state(inf);
        g_message("informer %s: list at resourceVersion %s refused (%s); listing from etcd",
                  inf->what, inf->resource_version != NULL ? inf->resource_version : "0",
                  resp->error->message);
        schedule(inf, NEXT_LIST, 0);
        return;
    }
    if (resp->error != NULL) {
        list_failed(inf, resp->error, resp->http_status, resp->retry_after_seconds);
        return;
    }
    if (inf->list_buf == NULL || !take_page_fast(inf)) {
        if (!take_page_json(inf, resp->http_status))
            return;
    }
    if (inf->list_continue != NULL && inf->list_at == LIST_AT_ZERO && !inf->consistent_lists) {
        /* a "0" list came in pages: no watch cache answers them (client-go's paginatedResult) */
        inf->consistent_lists = TRUE;
        g_message("informer %s: the server pages lists at resourceVersion 0 (no watch cache); "
                  "listing from etcd from now on",
                  inf->what);
    }
    if (inf->list_continue != NULL)
        request_page(inf);
    else
        finish_list(inf);
}

/* ---- watch -------------------------------------------------------------------------------- */

static void advance_rv(KbInformer *inf, json_object *obj)
{
    const char *rv = json_str(json_metadata(obj), "resourceVersion");
    if (rv != NULL && rv[0] != '\0' && g_strcmp0(rv, inf->resource_version) != 0) {
        g_free(inf->resource_version);
        inf->resource_version = g_strdup(rv);
    }
}

static void apply_delete(KbInformer *inf, json_object *obj)
{
    json_object *meta = json_metadata(obj);
    const char *name = json_str(meta, "name");
    if (name == NULL) {
        g_autoptr(GError) error =
                g_error_new_literal(KB_ERROR, KB_ERROR_DECODE, "DELETED event: no metadata.name");
        skip_malformed(inf, obj, error);
        return;
    }
    g_autofree char *key = make_key(json_str(meta, "namespace"), name);
    gpointer old = g_hash_table_lookup(inf->by_key, key);
    const char *uid = json_str(meta, "uid");
    if (old == NULL)
        return; /* never seen, or already gone: nothing to tell */
    if (uid != NULL && uid[0] != '\0' && record_uid(old) != NULL &&
        strcmp(uid, record_uid(old)) != 0)
        return; /* the delete of an older incarnation than the one stored */
    inf->events++;
    store_delete(inf, key);
}

/* Stop the current watch from inside its data callback, then do @step after @delay_ms. */
static void stop_watch(KbInformer *inf, NextStep step, guint delay_ms)
{
    inf->watch_stop = TRUE;
    inf->watch_next = step;
    inf->watch_next_delay_ms = delay_ms;
}

static void handle_event(KbInformer *inf, KbWatchEvent *ev)
{
    if (ev->type != KB_WATCH_ERROR) {
        inf->watch_got_event = TRUE;
        reset_backoff(inf); /* a healthy watch */
    }
    switch (ev->type) {
    case KB_WATCH_BOOKMARK:
        advance_rv(inf, ev->object);
        return;
    case KB_WATCH_ERROR: {
        int code = kb_watch_event_status_code(ev);
        const char *message = json_str(ev->object, "message");
        if (code == 410) {
            g_message("informer %s: watch expired (%s); relisting", inf->what,
                      message != NULL ? message : "410 Gone");
            stop_watch(inf, NEXT_LIST, 0);
        } else {
            guint delay = next_backoff(inf);
            g_warning("informer %s: watch error %d: %s; rewatching in %u ms", inf->what, code,
                      message != NULL ? message : "(no message)", delay);
            stop_watch(inf, NEXT_WATCH, delay);
        }
        return;
    }
    case KB_WATCH_DELETED:
        apply_delete(inf, ev->object);
        advance_rv(inf, ev->object);
        return;
    case KB_WATCH_ADDED:
    case KB_WATCH_MODIFIED: {
        gpointer rec = decode_object(inf, ev->object);
        if (rec != NULL && store_apply(inf, rec))
            inf->events++;
        /* resume after a malformed object too, or it would come back on every restart */
        advance_rv(inf, ev->object);
        return;
    }
    }
}

static KbObjectMeta *pod_bytes(const char *json, gsize len, GError **error)
{
    return (KbObjectMeta *)kb_pod_decode_bytes(json, len, error);
}

static KbObjectMeta *claim_bytes(const char *json, gsize len, GError **error)
{
    return (KbObjectMeta *)kb_resource_claim_decode_bytes(json, len, error);
}

static KbObjectMeta *slice_bytes(const char *json, gsize len, GError **error)
{
    return (KbObjectMeta *)kb_resource_slice_decode_bytes(json, len, error);
}

/* Copy string @s into @buf (@size bytes, NUL-terminated); FALSE when it does not fit or holds a
 * NUL. */
static gboolean str_copy(const KbJsonStr *s, char *buf, gsize size)
{
    if (s->len >= size || memchr(s->p, '\0', s->len) != NULL)
        return FALSE;
    memcpy(buf, s->p, s->len);
    buf[s->len] = '\0';
    return TRUE;
}

/* The metadata members of the object @json starts (after "metadata"): name, namespace and
 * resourceVersion into the buffers (empty when absent). FALSE on anything unexpected. */
static gboolean peek_members(KbJsonReader *r, char *name, char *ns, char *rv)
{
    KbJsonStr key, v;
    int more;
    while ((more = kb_json_object_next(r, &key, NULL)) == 1) {
        char *into = KB_JSON_STR_IS(key, "name")              ? name
                     : KB_JSON_STR_IS(key, "namespace")       ? ns
                     : KB_JSON_STR_IS(key, "resourceVersion") ? rv
                                                              : NULL;
        gsize size = into == rv ? PEEK_RV_MAX : PEEK_NAME_MAX;
        if (into == NULL ? !kb_json_skip(r, NULL)
                         : kb_json_peek(r) != KB_JSON_STRING || !kb_json_read_string(r, &v, NULL) ||
                                   !str_copy(&v, into, size))
            return FALSE;
    }
    return more == 0;
}

/* The key and resourceVersion of the object @json (whose syntax the caller checked), read from
 * its metadata alone; @key newly allocated. FALSE when either is missing or unusual. */
static gboolean peek_meta(const char *json, gsize len, char **key, char *rv)
{
    char name[PEEK_NAME_MAX] = "", ns[PEEK_NAME_MAX] = "";
    KbJsonReader r;
    KbJsonStr k;
    gboolean ok, found = FALSE;
    kb_json_reader_init(&r, json, len);
    ok = kb_json_object_begin(&r, NULL);
    while (ok && !found && kb_json_object_next(&r, &k, NULL) == 1) {
        if (KB_JSON_STR_IS(k, "metadata") && kb_json_peek(&r) == KB_JSON_OBJECT) {
            ok = kb_json_object_begin(&r, NULL) && peek_members(&r, name, ns, rv);
            found = TRUE;
        } else {
            ok = kb_json_skip(&r, NULL);
        }
    }
    kb_json_reader_clear(&r);
    if (!ok || !found || name[0] == '\0' || rv[0] == '\0')
        return FALSE;
    *key = make_key(ns, name);
    return TRUE;
}

/* Decode an object's bytes as a watch event's (the byte decoder, else json-c) and apply it. */
static void apply_bytes(KbInformer *inf, const char *json, gsize len)
{
    KbObjectMeta *rec = inf->decode_bytes(json, len, NULL);
    if (rec != NULL && rec->name == NULL)
        g_clear_pointer(&rec, kb_object_unref);
    if (rec == NULL) {
        json_object *obj = json_tokener_parse(json);
        if (obj != NULL)
            rec = decode_object(inf, obj);
        json_object_put(obj);
    }
    if (rec != NULL && store_apply(inf, rec))
        inf->events++;
}

/* Drop @key's expectation; an event it held back is taken in now, decoded. */
static void expected_flush(KbInformer *inf, const char *key)
{
    gpointer k = NULL, v = NULL;
    if (!g_hash_table_steal_extended(inf->expected, key, &k, &v))
        return;
    Expected *e = v;
    if (e->stash != NULL)
        apply_bytes(inf, e->stash, e->stash_len);
    expected_free(e);
    g_free(k);
}

/*
 * A watch event's object @json (syntax checked) whose key has an expectation: the record to take
 * in for it without a decode (a new reference: the write's own version, answered), NULL to decode
 * it (store_apply() then drops the expectation); or, with *@held set, nothing yet: the object's
 * first event while the write's answer is awaited, kept until the answer says whose it is. @rv
 * (PEEK_RV_MAX bytes) gets the object's resourceVersion when read.
 */
static KbObjectMeta *take_expected(KbInformer *inf, const char *json, gsize len, gboolean *held,
                                   char *rv)
{
    *held = FALSE;
    rv[0] = '\0';
    if (g_hash_table_size(inf->expected) == 0)
        return NULL;
    g_autofree char *key = NULL;
    if (!peek_meta(json, len, &key, rv))
        return NULL;
    Expected *e = g_hash_table_lookup(inf->expected, key);
    if (e == NULL)
        return NULL;
    if (!e->answered) {
        if (e->stash != NULL)
            return NULL; /* a second event before the answer: both decoded, in order */
        e->stash = g_memdup2(json, len + 1);
        e->stash[len] = '\0';
        e->stash_len = len;
        e->stash_rv = g_strdup(rv);
        *held = TRUE;
        return NULL;
    }
    if (g_strcmp0(e->rec->resource_version, rv) != 0)
        return NULL;
    KbObjectMeta *rec = g_steal_pointer(&e->rec);
    g_hash_table_remove(inf->expected, key);
    inf->echoes++;
    return rec;
}

/*
 * An ADDED or MODIFIED event of a type with a byte decoder (pods, claims, slices), decoded from
 * the line's bytes as list pages are: a json-c DOM per event was most of a scheduler's watch cost
 * while thousands of bindings came back. The record is the same by contract; anything else, or
 * anything unexpected (no name, a decode error, another event type), returns FALSE untouched and
 * goes through json-c, which then reports it in its own words.
 */
static gboolean fast_event(KbInformer *inf, const char *line, gsize len)
{
    KbJsonReader r;
    KbJsonStr key, type, object = {NULL, 0};
    gboolean ok, typed = FALSE;
    int more = -1;
    kb_json_reader_init(&r, line, len);
    ok = kb_json_object_begin(&r, NULL);
    while (ok && (more = kb_json_object_next(&r, &key, NULL)) == 1) {
        if (KB_JSON_STR_IS(key, "type")) {
            ok = kb_json_read_string(&r, &type, NULL) &&
                 (KB_JSON_STR_IS(type, "ADDED") || KB_JSON_STR_IS(type, "MODIFIED"));
            typed = TRUE;
        } else if (KB_JSON_STR_IS(key, "object") && kb_json_peek(&r) == KB_JSON_OBJECT) {
            ok = kb_json_skip_span(&r, &object, NULL);
        } else {
            ok = kb_json_skip(&r, NULL);
        }
    }
    ok = ok && more == 0 && typed && object.p != NULL && kb_json_finish(&r, NULL);
    kb_json_reader_clear(&r);
    gboolean held = FALSE;
    char peeked_rv[PEEK_RV_MAX];
    KbObjectMeta *rec = ok ? take_expected(inf, object.p, object.len, &held, peeked_rv) : NULL;
    if (rec == NULL && ok && !held)
        rec = inf->decode_bytes(object.p, object.len, NULL);
    if (!held && (rec == NULL || rec->name == NULL)) {
        if (rec != NULL)
            kb_object_unref(rec);
        return FALSE;
    }
    g_autofree char *rv = g_strdup(held ? peeked_rv : rec->resource_version);
    inf->fast_events++;
    inf->watch_got_event = TRUE;
    reset_backoff(inf); /* a healthy watch */
    if (rec != NULL && store_apply(inf, rec))
        inf->events++;
    if (rv != NULL && rv[0] != '\0' && g_strcmp0(rv, inf->resource_version) != 0) {
        g_free(inf->resource_version);
        inf->resource_version = g_steal_pointer(&rv);
    }
    return TRUE;
}

static gboolean on_watch_data(const char *data, gsize len, gpointer user_data)
{
    KbInformer *inf = user_data;
    g_autoptr(GError) feed_error = NULL;
    gboolean fed = kb_watch_decoder_feed(inf->decoder, data, len, &feed_error);
    const char *line;
    gsize line_len;
    while (!inf->watch_stop && kb_watch_decoder_next_line(inf->decoder, &line, &line_len)) {
        KbWatchEvent ev;
        g_autoptr(GError) error = NULL;
        if (inf->decode_bytes != NULL && fast_event(inf, line, line_len))
            continue;
        if (kb_watch_decoder_decode_line(inf->decoder, line, line_len, &ev, &error)) {
            handle_event(inf, &ev);
            kb_watch_event_clear(&ev);
        } else {
            inf->decode_errors++;
            g_warning("informer %s: skipping watch event: %s", inf->what,
                      error != NULL ? error->message : "?");
        }
    }
    if (!fed && !inf->watch_stop) {
        guint delay = next_backoff(inf);
        g_warning("informer %s: %s; rewatching in %u ms", inf->what, feed_error->message, delay);
        stop_watch(inf, NEXT_WATCH, delay);
    }
    if (inf->watch_stop) {
        KbStream *stream = g_steal_pointer(&inf->stream);
        inf->watch_stop = FALSE;
        schedule(inf, inf->watch_next, inf->watch_next_delay_ms);
        if (stream != NULL)
            kb_stream_cancel(stream);
        return FALSE;
    }
    return TRUE;
}

static void on_watch_done(const KbResponse *resp, gpointer user_data)
{
    KbInformer *inf = user_data;
    const GError *error = resp->error;
    inf->stream = NULL;
    if (error == NULL) {
        /* The server's timeoutSeconds ran out: resume at once. A watch that ends within a
         * second without a single event is suspect (client-go calls it a "very short watch"):
         * back off, or a server that closes every watch at once would be hammered. */
        gboolean healthy = inf->watch_got_event ||
                           g_get_monotonic_time() - inf->watch_started_us >= G_USEC_PER_SEC;
        if (healthy)
            reset_backoff(inf);
        schedule(inf, NEXT_WATCH, healthy ? 0 : next_backoff(inf));
    } else if (g_error_matches(error, KB_ERROR, KB_ERROR_GONE) ||
               g_error_matches(error, KB_ERROR, KB_ERROR_NOT_FOUND)) {
        g_message("informer %s: watch from resourceVersion %s: %s; relisting", inf->what,
                  inf->resource_version != NULL ? inf->resource_version : "(none)", error->message);
        schedule(inf, NEXT_LIST, 0);
    } else {
        guint delay = next_backoff(inf);
        g_warning("informer %s: watch failed (HTTP %d): %s; rewatching in %u ms", inf->what,
                  resp->http_status, error->message, delay);
        schedule(inf, NEXT_WATCH, delay);
    }
}

static void start_watch(KbInformer *inf)
{
    guint timeout = inf->watch_timeout_min_s;
    if (inf->watch_timeout_max_s > inf->watch_timeout_min_s)
        timeout = (guint)g_random_int_range((gint32)inf->watch_timeout_min_s,
                                            (gint32)inf->watch_timeout_max_s + 1);
    KbListOptions lo = {
            .label_selector = inf->label_selector,
            .field_selector = inf->field_selector,
            .resource_version = inf->resource_version,
            .watch = TRUE,
            .allow_watch_bookmarks = TRUE,
            .timeout_seconds = timeout,
    };
    KbRequest req = {
            .method = "GET",
            .type = inf->type,
            .namespace_ = inf->namespace_,
            .list = &lo,
            .stream = TRUE,
    };
    kb_watch_decoder_reset(inf->decoder);
    inf->watch_got_event = FALSE;
    inf->watch_stop = FALSE;
    inf->watch_started_us = g_get_monotonic_time();
    inf->stream = kb_client_stream(inf->client, &req, on_watch_data, on_watch_done, inf);
}

/* ---- public ------------------------------------------------------------------------------ */

KbInformer *kb_informer_new(KbClient *client, const KbInformerOptions *opts,
                            const KbInformerHandlers *handlers, gpointer user_data)
{
    g_return_val_if_fail(client != NULL && opts != NULL && opts->type != NULL, NULL);
    KbInformer *inf = g_new0(KbInformer, 1);
    inf->client = client;
    inf->context = g_main_context_ref_thread_default();
    inf->type = opts->type;
    inf->namespace_ = g_strdup(opts->namespace_);
    inf->label_selector = g_strdup(opts->label_selector);
    inf->field_selector = g_strdup(opts->field_selector);
    inf->decode = opts->decode;
    inf->keep_raw = opts->keep_raw;
    inf->decode_page = opts->decode_page;
    if (inf->decode_page == NULL && opts->decode == (KbDecodeFunc)kb_pod_decode)
        inf->decode_page = kb_pod_list_decode_bytes;
    if (opts->decode == (KbDecodeFunc)kb_pod_decode)
        inf->decode_bytes = pod_bytes;
    if (opts->decode == (KbDecodeFunc)kb_resource_claim_decode) {
        if (inf->decode_page == NULL)
            inf->decode_page = kb_resource_claim_list_decode_bytes;
        inf->decode_bytes = claim_bytes;
    }
    if (opts->decode == (KbDecodeFunc)kb_resource_slice_decode) {
        if (inf->decode_page == NULL)
            inf->decode_page = kb_resource_slice_list_decode_bytes;
        inf->decode_bytes = slice_bytes;
    }
    if (inf->keep_raw) {
        /* the byte decoders keep no raw object */
        inf->decode_page = NULL;
        inf->decode_bytes = NULL;
    }
    inf->page_size = opts->page_size > 0 ? opts->page_size : DEFAULT_PAGE_SIZE;
    if (handlers != NULL)
        inf->handlers = *handlers;
    inf->user_data = user_data;
    const char *group = opts->type->group;
    g_autofree char *resource = group != NULL && group[0] != '\0'
                                        ? g_strdup_printf("%s.%s", opts->type->plural, group)
                                        : g_strdup(opts->type->plural);
    inf->what = opts->namespace_ != NULL
                        ? g_strdup_printf("%s in namespace %s", resource, opts->namespace_)
                        : g_steal_pointer(&resource);
    inf->by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, kb_object_unref);
    inf->by_uid = g_hash_table_new(g_str_hash, g_str_equal);
    inf->expected = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, expected_free);
    inf->decoder = kb_watch_decoder_new();
    inf->list_tok = json_tokener_new_ex(KB_WATCH_MAX_DEPTH);
    inf->max_page_bytes = KB_INFORMER_MAX_PAGE_BYTES;
    inf->chunk_bytes = KB_INFORMER_LIST_CHUNK_BYTES;
    inf->backoff_initial_ms = DEFAULT_BACKOFF_INITIAL_MS;
    inf->backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
    inf->backoff_ms = DEFAULT_BACKOFF_INITIAL_MS;
    inf->missing_retry_ms = DEFAULT_MISSING_RETRY_MS;
    inf->watch_timeout_min_s = DEFAULT_WATCH_TIMEOUT_MIN_S;
    inf->watch_timeout_max_s = DEFAULT_WATCH_TIMEOUT_MAX_S;
    return inf;
}

void kb_informer_set_backoff(KbInformer *informer, guint initial_ms, guint max_ms)
{
    informer->backoff_initial_ms = MAX(initial_ms, 1u);
    informer->backoff_max_ms = MAX(max_ms, informer->backoff_initial_ms);
    informer->backoff_ms = informer->backoff_initial_ms;
}

void kb_informer_set_missing_retry(KbInformer *informer, guint interval_ms)
{
    informer->missing_retry_ms = interval_ms;
}

void kb_informer_set_max_page_bytes(KbInformer *informer, gsize max_bytes)
{
    informer->max_page_bytes = max_bytes;
}

void kb_informer_set_list_chunk_bytes(KbInformer *informer, gsize bytes)
{
    informer->chunk_bytes = MAX(bytes, (gsize)1);
}

guint64 kb_informer_list_chunks(const KbInformer *informer)
{
    return informer->list_chunks;
}

void kb_informer_set_watch_timeout(KbInformer *informer, guint min_s, guint max_s)
{
    informer->watch_timeout_min_s = min_s;
    informer->watch_timeout_max_s = MAX(max_s, min_s);
}

void kb_informer_start(KbInformer *informer)
{
    if (informer->started)
        return;
    informer->started = TRUE;
    schedule(informer, NEXT_LIST, 0);
}

void kb_informer_free(KbInformer *informer)
{
    if (informer == NULL)
        return;
    if (informer->stream != NULL)
        kb_stream_cancel(g_steal_pointer(&informer->stream));
    if (informer->timer != NULL) {
        g_source_destroy(informer->timer);
        g_clear_pointer(&informer->timer, g_source_unref);
    }
    clear_list_state(informer);
    g_hash_table_unref(informer->expected);
    g_hash_table_unref(informer->by_uid);
    g_hash_table_unref(informer->by_key);
    kb_watch_decoder_free(informer->decoder);
    json_tokener_free(informer->list_tok);
    g_main_context_unref(informer->context);
    g_free(informer->resource_version);
    g_free(informer->namespace_);
    g_free(informer->label_selector);
    g_free(informer->field_selector);
    g_free(informer->what);
    g_free(informer);
}

gboolean kb_informer_has_synced(const KbInformer *informer)
{
    return informer->synced;
}

gpointer kb_informer_get(const KbInformer *informer, const char *namespace_, const char *name)
{
    g_autofree char *key = make_key(namespace_, name);
    return g_hash_table_lookup(informer->by_key, key);
}

gpointer kb_informer_get_by_uid(const KbInformer *informer, const char *uid)
{
    return uid != NULL ? g_hash_table_lookup(informer->by_uid, uid) : NULL;
}

GPtrArray *kb_informer_list(const KbInformer *informer)
{
    GPtrArray *out = g_ptr_array_sized_new(g_hash_table_size(informer->by_key));
    GHashTableIter iter;
    gpointer rec;
    g_hash_table_iter_init(&iter, informer->by_key);
    while (g_hash_table_iter_next(&iter, NULL, &rec))
        g_ptr_array_add(out, rec);
    return out;
}

guint kb_informer_size(const KbInformer *informer)
{
    return g_hash_table_size(informer->by_key);
}

guint64 kb_informer_decode_errors(const KbInformer *informer)
{
    return informer->decode_errors;
}

guint64 kb_informer_relists(const KbInformer *informer)
{
    return informer->relists;
}

guint64 kb_informer_fast_events(const KbInformer *informer)
{
    return informer->fast_events;
}

void kb_informer_expect(KbInformer *informer, gpointer rec, const char *from_rv)
{
    char *key = record_key(rec);
    const KbObjectMeta *stored = g_hash_table_lookup(informer->by_key, key);
    const char *uid = record_uid(rec);
    if (informer->decode_bytes == NULL || stored == NULL || from_rv == NULL || uid == NULL ||
        g_strcmp0(record_uid(stored), uid) != 0 ||
        g_strcmp0(stored->resource_version, from_rv) != 0 ||
        g_hash_table_contains(informer->expected, key)) {
        g_free(key);
        kb_object_unref(rec);
        return;
    }
    Expected *e = g_new0(Expected, 1);
    e->rec = rec;
    g_hash_table_insert(informer->expected, key, e);
}

void kb_informer_expect_answered(KbInformer *informer, const char *namespace_, const char *name,
                                 const char *rv)
{
    g_autofree char *key = make_key(namespace_, name);
    Expected *e = g_hash_table_lookup(informer->expected, key);
    if (e == NULL || e->answered)
        return;
    const KbObjectMeta *stored = g_hash_table_lookup(informer->by_key, key);
    /* failed, or changed nothing (no event comes: the store has that version) */
    if (rv == NULL || rv[0] == '\0' ||
        (stored != NULL && g_strcmp0(stored->resource_version, rv) == 0)) {
        expected_flush(informer, key);
        return;
    }
    g_free(e->rec->resource_version);
    e->rec->resource_version = g_strdup(rv);
    e->answered = TRUE;
    if (e->stash == NULL)
        return;
    if (strcmp(e->stash_rv, rv) != 0) {
        expected_flush(informer, key);
        return;
    }
    KbObjectMeta *rec = g_steal_pointer(&e->rec);
    g_hash_table_remove(informer->expected, key);
    informer->echoes++;
    if (store_apply(informer, rec))
        informer->events++;
}

guint64 kb_informer_echoes(const KbInformer *informer)
{
    return informer->echoes;
}

void kb_informer_feed_watch(KbInformer *informer, const char *data, gsize len)
{
    on_watch_data(data, len, informer);
}

guint64 kb_informer_fast_pages(const KbInformer *informer)
{
    return informer->fast_pages;
}

guint64 kb_informer_fallback_pages(const KbInformer *informer)
{
    return informer->fallback_pages;
}

guint64 kb_informer_events(const KbInformer *informer)
{
    return informer->events;
}

const char *kb_informer_resource_version(const KbInformer *informer)
{
    return informer->resource_version;
}
