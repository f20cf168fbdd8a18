/*
 * Internals shared by kb-client.c (requests, responses, blocking calls) and kb-client-async.c
 * (the libcurl multi handle on the GLib main loop). Not for other modules.
 */
#pragma once

#include <curl/curl.h>
#include <sys/types.h>

#include "kube/kb-client.h"

struct KbClient {
    KbConfig *config;
    char *base_url; /* server without trailing '/' */
    GMainContext *context;
    CURLSH *share;
    GMutex share_locks[CURL_LOCK_DATA_LAST];
    GMutex blocking_lock; /* one blocking call at a time on @easy */
    CURL *easy;
    gsize max_body;

    /* asynchronous side, main context only */
    CURLM *multi;
    guint max_in_flight;
    guint stream_idle_s;
    GQueue waiting;      /* KbTransfer, not started yet */
    GHashTable *active;  /* KbTransfer set, added to @multi */
    GPtrArray *reap;     /* KbTransfer cancelled from inside libcurl, removed once it returns */
    GHashTable *sockets; /* fd -> GSource */
    GPtrArray *idle_easy; /* CURL handles of finished transfers, reset, for the next ones */
    GSource *timer;
    int in_curl; /* > 0 while inside curl_multi_socket_action() */
    gboolean closing;

    /* protobuf bodies (Bindings): refused once by a 415, or taken once (no JSON kept then) */
    gboolean protobuf_refused;
    gboolean protobuf_taken;

    /* bearer token, re-read from config->token_file when it changes */
    GMutex token_lock;
    char *token;
    dev_t token_dev;
    ino_t token_ino;
    gint64 token_mtime_ns;
    off_t token_size;
    gboolean token_warned; /* warn once per failure, not per request */
};

/* One request, blocking or asynchronous; a KbStream is a streaming KbTransfer. */
typedef struct {
    KbClient *client;
    CURL *easy; /* owned for asynchronous transfers, borrowed for blocking ones */
    char *url;
    char *what; /* "GET /api/v1/pods?watch=true", for messages */
    char *method;
    char *body;
    gsize body_len;
    char *content_type;
    char *json_fallback; /* a protobuf body's JSON form, sent instead if the server answers 415 */
    gboolean stream;
    gboolean urgent; /* KbRequest.urgent */
    gboolean version_only; /* KbRequest.version_only */
    GByteArray *response;
    gboolean over_limit;
    guint retry_after; /* from the Retry-After header of the last response */
    char errbuf[CURL_ERROR_SIZE];
    struct curl_slist *headers;
    KbResponseFunc callback;
    KbStreamDataFunc on_data;
    KbStreamDoneFunc on_done;
    gpointer user_data;
    gboolean cancelled;
    gboolean in_data;      /* inside on_data */
    gint64 last_data_us;   /* streams: monotonic time of the last byte received */
    guint idle_s;          /* streams: silence after which the stream is dead (stream_idle_s,
                            * plus the watch's timeoutSeconds when it has one) */
    gboolean idle_timeout; /* streams: aborted for receiving nothing for idle_s */
} KbTransfer;

/* A transfer for @req with everything it needs copied; NULL body/callbacks. */
KbTransfer *kb_client_transfer_new(KbClient *client, const KbRequest *req);
/* Same, with a raw body (@body may be NULL) and content type instead of req->body. */
KbTransfer *kb_client_transfer_new_raw(KbClient *client, const KbRequest *req, const char *body,
                                       const char *content_type);
/* Same, with a binary body of @len bytes (copied). */
KbTransfer *kb_client_transfer_new_bytes(KbClient *client, const KbRequest *req, const void *body,
                                         gsize len, const char *content_type);
void kb_client_transfer_free(KbTransfer *t);
/* After @t's response @resp: TRUE when @t was a protobuf body the server refused (415) and now
 * carries its JSON form instead, to be sent again (the response is then the caller's to clear
 * and drop); FALSE otherwise. Remembers the server's answer either way. */
gboolean kb_client_transfer_fall_back(KbTransfer *t, const KbResponse *resp);
/* Queue @t (its body set, callback none yet) as an asynchronous call. */
void kb_client_queue_async(KbClient *client, KbTransfer *t, KbResponseFunc callback,
                           gpointer user_data);
/* Set every option of t->easy (freshly created or reset). */
void kb_client_transfer_setup(KbTransfer *t);
/* Fill @resp from the finished transfer (@rc from libcurl). resp->body and resp->error are
 * owned by the caller. */
void kb_client_transfer_finish(KbTransfer *t, CURLcode rc, KbResponse *resp);
void kb_client_response_clear(KbResponse *resp);

/* The async side's part of kb_client_new/kb_client_free. */
void kb_client_async_init(KbClient *client);
void kb_client_async_fini(KbClient *client);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(KbTransfer, kb_client_transfer_free)
