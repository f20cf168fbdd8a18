/*
 * Watch streams, informers, leader election and the event recorder.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "kube/kb-client.h"
#include "kube/kb-objects.h"

/* ---- watch-event decoding (pure; fuzzed) ------------------------------------------------------
 */

#define KB_WATCH_MAX_EVENT_BYTES (16 * 1024 * 1024) /* one event line */
#define KB_WATCH_MAX_DEPTH       128                /* JSON nesting of one event */

typedef enum {
    KB_WATCH_ADDED,
    KB_WATCH_MODIFIED,
    KB_WATCH_DELETED,
    KB_WATCH_BOOKMARK,
    KB_WATCH_ERROR,
} KbWatchEventType;

typedef struct {
    KbWatchEventType type;
    json_object *object; /* owned by the event */
} KbWatchEvent;

/*
 * Splits a chunked watch stream into events: feed bytes as they arrive (an event may be split
 * anywhere, several may come in one read); each complete line is decoded into an event.
 */
typedef struct KbWatchDecoder KbWatchDecoder;
KbWatchDecoder *kb_watch_decoder_new(void);
void kb_watch_decoder_free(KbWatchDecoder *decoder);
/* Append @len bytes. Returns FALSE with KB_ERROR_LIMIT if a line grows over
 * KB_WATCH_MAX_EVENT_BYTES (the stream must be restarted). */
gboolean kb_watch_decoder_feed(KbWatchDecoder *decoder, const char *data, gsize len,
                               GError **error);
/* The next complete event: TRUE and fills @event (free with kb_watch_event_clear), or FALSE when
 * no complete line is buffered. A malformed line is consumed and reported through @error
 * (returns FALSE with @error set); the caller logs it and calls again. */
gboolean kb_watch_decoder_next(KbWatchDecoder *decoder, KbWatchEvent *event, GError **error);
/* The same in two steps, for a caller that reads some lines itself: the next complete line (white
 * space trimmed, blank lines skipped; consumed), borrowed until the next feed; FALSE when none is
 * buffered. Then, unless the caller handled it, its event as kb_watch_decoder_next() decodes it. */
gboolean kb_watch_decoder_next_line(KbWatchDecoder *decoder, const char **line, gsize *len);
gboolean kb_watch_decoder_decode_line(KbWatchDecoder *decoder, const char *line, gsize len,
                                      KbWatchEvent *event, GError **error);
void kb_watch_event_clear(KbWatchEvent *event);
/* For an ERROR event: the metav1.Status code (410 for Expired/Gone), or 0. */
int kb_watch_event_status_code(const KbWatchEvent *event);
/* "ADDED", "MODIFIED", ... (static string). */
const char *kb_watch_event_type_to_string(KbWatchEventType type);
/* Drop buffered bytes and any limit failure, for reuse on a new stream. */
void kb_watch_decoder_reset(KbWatchDecoder *decoder);
/* Bytes buffered but not yet returned as events (a partial line, or lines not yet taken). */
gsize kb_watch_decoder_pending(const KbWatchDecoder *decoder);

/* ---- informers --------------------------------------------------------------------------- */

/* Decode one item into a record (kb_pod_decode, ...). Returns NULL with an error for a malformed
 * object: the informer logs it, counts it and skips it. */
typedef gpointer (*KbDecodeFunc)(json_object *obj, gboolean keep_raw, GError **error);

typedef struct {
    /* @old is NULL for adds; @new is NULL for deletes. Records are owned by the informer: take a
     * reference (kb_object_ref) to keep one beyond the call. */
    void (*on_add)(gpointer obj, gpointer user_data);
    void (*on_update)(gpointer old_obj, gpointer new_obj, gpointer user_data);
    void (*on_delete)(gpointer obj, gpointer user_data);
    /* The initial list was delivered (once), and again after every relist. */
    void (*on_synced)(gpointer user_data);
    /* The resource is not served (404 on list: a missing CRD). The informer retries slowly. */
    void (*on_missing)(gpointer user_data);
    /* An item (listed or watched) failed to decode and is skipped: @obj is the item as received
     * (borrowed), @error the decoder's error. Lets the caller report it, e.g. as an Event on the
     * object, beyond the informer's own log line and kb_informer_decode_errors() count. */
    void (*on_decode_error)(json_object *obj, const GError *error, gpointer user_data);
} KbInformerHandlers;

/*
 * Decode a whole list page from its bytes (@json, @len; not NUL-terminated): append the items'
 * records to @out (new references), and set *@resource_version / *@continue_token to the page's
 * metadata.resourceVersion / metadata.continue (newly allocated, NULL when absent). On failure
 * (FALSE with @error) it must append and set nothing. kb_pod_list_decode_bytes() fits as is.
 */
typedef gboolean (*KbPageDecodeFunc)(const char *json, gsize len, GPtrArray *out,
                                     char **resource_version, char **continue_token,
                                     GError **error);

typedef struct {
    const KbResourceType *type;
    const char *namespace_;     /* NULL: all namespaces */
    const char *label_selector; /* may be NULL */
    const char *field_selector; /* may be NULL */
    KbDecodeFunc decode;        /* kb_pod_decode, ... ; NULL keeps KbObjectMeta only */
    gboolean keep_raw;
    gint64 page_size; /* list paging; default 500 */
    /*
     * Optional fast path for list pages (ignored when keep_raw): must produce the records @decode
     * would. NULL picks kb_pod_list_decode_bytes when @decode is kb_pod_decode itself; a caller
     * that wraps kb_pod_decode (to report malformed pods, say) sets it. See kb_informer_new().
     */
    KbPageDecodeFunc decode_page;
} KbInformerOptions;

typedef struct KbInformer KbInformer;

/* Largest list page accepted (KB_ERROR_LIMIT beyond: logged, backed off, relisted, in pages from
 * etcd when it was a watch cache's answer in one piece); at the default page size of 500
 * objects a page is typically a few MiB. */
#define KB_INFORMER_MAX_PAGE_BYTES ((gsize)256 * 1024 * 1024)
/* With a page decoder, a page's items are decoded as they arrive, in chunks of about this many
 * bytes, and their bytes dropped: a list of 150,000 pods in one piece (a few hundred MiB) is
 * never held whole, and KB_INFORMER_MAX_PAGE_BYTES then bounds what is held undecoded. */
#define KB_INFORMER_LIST_CHUNK_BYTES ((gsize)1024 * 1024)

/*
 * List then watch @opts->type from the list's resourceVersion with bookmarks. On 410 Gone (HTTP
 * or in-stream ERROR) it relists and synthesizes deletes for objects that vanished and updates
 * for those that changed. Errors back off with jitter from 0.8 s to 30 s. Repeated events (same
 * resourceVersion) are ignored. Runs on the client's main context once started.
 *
 * Details: a watch resumes from the last resourceVersion seen (bookmarks included) when it ends
 * cleanly or fails; ADDED for a stored key is delivered as an update, and as a delete plus an add
 * when the uid differs (the object was recreated); DELETED for an unknown key, or for another uid
 * than the stored one, is ignored; on_delete receives the stored record. Malformed objects are
 * logged, counted (kb_informer_decode_errors) and skipped. on_missing is called once each time
 * the resource goes from served to not served; the list is retried meanwhile. Handlers must not
 * free the informer.
 *
 * With a page decoder, which resourceVersion a list asks for follows client-go's reflector: "0"
 * for the first list and the last resourceVersion seen for a relist (then without a limit), so
 * that the API server's watch cache answers it in one piece instead of etcd page by page (a
 * restarted scheduler on a large cluster lists its pods without loading etcd). Informers without
 * one read etcd page by page: json-c's tree of a whole list costs several times its size. When
 * the server refuses that resourceVersion (410 Expired, or 504 ResourceVersionTooLarge), the
 * list is sent again at once as a consistent read (no resourceVersion, paged), and the next
 * relist goes back to the cache. Lists are consistent reads for good once the server pages a "0"
 * list (it has no watch cache for the resource) or an unpaged answer crossed the page byte
 * limit.
 *
 * List pages and the page decoder: with a page decoder (opts->decode_page, or the one picked for
 * kb_pod_decode and kb_resource_claim_decode) and without keep_raw, each page's bytes are buffered
 * (no tree is built) and given to the page decoder in place; while they arrive, the items seen
 * whole (a comma after them in the List's "items") are cut from the buffer once they make
 * KB_INFORMER_LIST_CHUNK_BYTES and decoded as a chunk, the same way, so that what is held is one
 * chunk and not the whole page (the byte limit applies to that). When it fails, for whatever reason
 * (a malformed item: it fails the whole page or chunk; a duplicate member or bad UTF-8 it is
 * stricter about than json-c; a token over its length limit), the same bytes go through json-c and
 * @decode item by item, exactly as without a page decoder: malformed items are skipped and counted,
 * the others delivered. A page where it finds no item, or an item without metadata.name, also goes
 * through json-c, which tells a List without "items" from an empty one. The decoder is picked
 * rather than asked for because its records are those of kb_pod_decode by contract
 * (tests/test-pod-fast.c, and tests/test-dra-fast.c for claims), so that plain pod and claim
 * informers all get it; a wrapped decode function cannot be recognized, hence the option. Their
 * ADDED and MODIFIED watch events are decoded from their bytes too (kb_pod_decode_bytes,
 * kb_resource_claim_decode_bytes), falling back to json-c as pages do; every other type's go
 * through json-c and @decode.
 */
KbInformer *kb_informer_new(KbClient *client, const KbInformerOptions *opts,
                            const KbInformerHandlers *handlers, gpointer user_data);
void kb_informer_start(KbInformer *informer);
void kb_informer_free(KbInformer *informer);
gboolean kb_informer_has_synced(const KbInformer *informer);
/* Store lookups: borrowed records, NULL when absent. @namespace_ NULL for cluster-scoped. */
gpointer kb_informer_get(const KbInformer *informer, const char *namespace_, const char *name);
gpointer kb_informer_get_by_uid(const KbInformer *informer, const char *uid);
/* A new array of borrowed records (free the array only). */
GPtrArray *kb_informer_list(const KbInformer *informer);
guint kb_informer_size(const KbInformer *informer);
/* Statistics for metrics: events applied, decode errors, relists. */
guint64 kb_informer_decode_errors(const KbInformer *informer);
guint64 kb_informer_relists(const KbInformer *informer);
/* List pages decoded by the page decoder, and pages it refused that json-c then decoded (pages
 * with no item go to json-c directly and count in neither). */
guint64 kb_informer_fast_pages(const KbInformer *informer);
guint64 kb_informer_fallback_pages(const KbInformer *informer);
/* ADDED/MODIFIED watch events of pods or claims decoded straight from their bytes (for an
 * informer decoding with kb_pod_decode or kb_resource_claim_decode without keep_raw); the others
 * go through json-c. */
guint64 kb_informer_fast_events(const KbInformer *informer);
/*
 * This process is about to write the object the store holds at @from_rv, and @rec (consumed: a
 * record of the informer's type) is what the write makes of it; kb_informer_expect_answered()
 * then gives the version the answer names. When the watch brings the object at that version
 * (ADDED or MODIFIED, with a byte decoder: pods, claims, slices), @rec is taken in instead of a
 * decode of the event: only the event's metadata is read. A resourceVersion names one state of
 * one object, and the store holds the version the write changed until that event, so the store
 * stays what decoding would make it. The object's first event before the answer is held back
 * until it (the server may send the event first): taken in as @rec when it has the answer's
 * version, else decoded. Any other event or deletion of the key, a relist, or a failed write
 * ends the expectation (an event held back is decoded and taken in first). Refused (and @rec
 * dropped) unless the store holds the object at @from_rv with @rec's uid and nothing is expected
 * of it yet.
 */
void kb_informer_expect(KbInformer *informer, gpointer rec, const char *from_rv);
/* The write kb_informer_expect() announced for @namespace_/@name was answered 2xx with
 * resourceVersion @rv, or failed (@rv NULL). */
void kb_informer_expect_answered(KbInformer *informer, const char *namespace_, const char *name,
                                 const char *rv);
/* Watch events taken in as kb_informer_expect() records, without a decode. */
guint64 kb_informer_echoes(const KbInformer *informer);
/* Feed watch stream bytes as if the current watch had brought them (tests). */
void kb_informer_feed_watch(KbInformer *informer, const char *data, gsize len);
/* Watch events applied to the store (repeats and bookmarks excluded). */
guint64 kb_informer_events(const KbInformer *informer);
/* The resourceVersion the next watch resumes from (borrowed), NULL before the first list. */
const char *kb_informer_resource_version(const KbInformer *informer);
/* The longest retry delay chosen so far (ms, jitter included): at most 1.2 x the backoff cap. */
guint kb_informer_max_retry_delay_ms(const KbInformer *informer);
#define KB_INFORMER_DEFAULT_BACKOFF_MAX_MS 4000
/*
 * Timing knobs (tests use short ones); call before kb_informer_start(). Errors back off from
 * @initial_ms doubling to @max_ms with +-20% jitter (defaults 800 and
 * KB_INFORMER_DEFAULT_BACKOFF_MAX_MS); the backoff resets
 * after a healthy watch or a complete list. A 404 on list retries every @interval_ms (default
 * 30000). Watches ask the server to end them after a random @min_s..@max_s seconds (defaults
 * 300..600, as client-go does).
 */
void kb_informer_set_backoff(KbInformer *informer, guint initial_ms, guint max_ms);
void kb_informer_set_missing_retry(KbInformer *informer, guint interval_ms);
void kb_informer_set_watch_timeout(KbInformer *informer, guint min_s, guint max_s);
/* Lower the list page limit (tests); default KB_INFORMER_MAX_PAGE_BYTES. */
void kb_informer_set_max_page_bytes(KbInformer *informer, gsize max_bytes);
/* The chunk size of list pages decoded as they arrive (tests); default
 * KB_INFORMER_LIST_CHUNK_BYTES. */
void kb_informer_set_list_chunk_bytes(KbInformer *informer, gsize bytes);
/* Chunks of list items decoded before their page was complete. */
guint64 kb_informer_list_chunks(const KbInformer *informer);

/* ---- leader election ---------------------------------------------------------------------- */

#include "kube/kb-leader.h"

/* ---- event recorder ----------------------------------------------------------------------- */

#include "kube/kb-recorder.h"
