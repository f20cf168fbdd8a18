/*
 * The asynchronous side of the REST client: one libcurl multi handle driven from the client's
 * GMainContext. libcurl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION: one
 * g_unix_fd_source per socket) and when to call it back (CURLMOPT_TIMERFUNCTION: one timeout
 * source); we call curl_multi_socket_action() from those sources and then collect finished
 * transfers. Requests beyond max_in_flight wait in a FIFO. See kb-client.h.
 *
 * libcurl forbids calling the multi API from inside its own callbacks. The only user code that
 * runs inside libcurl is a stream's on_data; what it does to the multi (cancel a stream, submit a
 * request) is deferred until curl_multi_socket_action() returns.
 */
#include "kube/kb-client-private.h"

#include <glib-unix.h>

static void drive(KbClient *client, curl_socket_t fd, int ev_bitmask);

/* ---- sockets and timer --------------------------------------------------------------------- */

static gboolean on_socket(gint fd, GIOCondition condition, gpointer user_data)
{
    KbClient *client = user_data;
    if (condition & G_IO_NVAL) {
        /* libcurl closed it without telling us; never spin on a dead descriptor. */
        g_hash_table_remove(client->sockets, GINT_TO_POINTER(fd));
        return G_SOURCE_REMOVE;
    }
    int ev = 0;
    if (condition & G_IO_IN)
        ev |= CURL_CSELECT_IN;
    if (condition & G_IO_OUT)
        ev |= CURL_CSELECT_OUT;
    if (condition & (G_IO_ERR | G_IO_HUP))
        ev |= CURL_CSELECT_ERR;
    drive(client, fd, ev);
    return G_SOURCE_CONTINUE;
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *user_data, void *socketp)
{
    KbClient *client = user_data;
    if (what == CURL_POLL_REMOVE) {
        g_hash_table_remove(client->sockets, GINT_TO_POINTER(fd));
        return 0;
    }
    GIOCondition condition = G_IO_ERR | G_IO_HUP;
    if (what & CURL_POLL_IN)
        condition |= G_IO_IN;
    if (what & CURL_POLL_OUT)
        condition |= G_IO_OUT;
    GSource *source = g_unix_fd_source_new(fd, condition);
    g_source_set_callback(source, G_SOURCE_FUNC(on_socket), client, NULL);
    g_source_set_name(source, "kb-client socket");
    g_source_attach(source, client->context);
    g_hash_table_replace(client->sockets, GINT_TO_POINTER(fd), source);
    return 0;
}

static gboolean on_timer(gpointer user_data)
{
    KbClient *client = user_data;
    GSource *self = g_steal_pointer(&client->timer);
    drive(client, CURL_SOCKET_TIMEOUT, 0);
    g_source_unref(self);
    return G_SOURCE_REMOVE;
}

static int timer_cb(CURLM *multi, long timeout_ms, void *user_data)
{
    KbClient *client = user_data;
    if (client->timer != NULL) {
        g_source_destroy(client->timer);
        g_clear_pointer(&client->timer, g_source_unref);
    }
    if (timeout_ms < 0 || client->closing)
        return 0;
    client->timer = g_timeout_source_new((guint)MIN(timeout_ms, G_MAXUINT));
    g_source_set_callback(client->timer, on_timer, client, NULL);
    g_source_set_name(client->timer, "kb-client timer");
    g_source_attach(client->timer, client->context);
    return 0;
}

static void destroy_source(gpointer source)
{
    g_source_destroy(source);
    g_source_unref(source);
}

/* ---- transfers ----------------------------------------------------------------------------- */

/* Finished handles kept for reuse: creating and destroying one per request (libcurl allocates
 * its buffers in each) cost a binding loop a sixth of its CPU time in malloc and free. Beyond
 * this many (the window's worth) they are destroyed. */
#define IDLE_EASY_MAX 256

/* Take @t off the wire, keeping its handle for the next transfer. */
static void release_easy(KbClient *client, KbTransfer *t)
{
    curl_multi_remove_handle(client->multi, t->easy);
    g_hash_table_remove(client->active, t);
    if (!client->closing && client->idle_easy->len < IDLE_EASY_MAX) {
        /* Options go back to their defaults; the connection stays in the multi's pool. */
        curl_easy_reset(t->easy);
        g_ptr_array_add(client->idle_easy, t->easy);
    } else {
        curl_easy_cleanup(t->easy);
    }
    t->easy = NULL;
}

static void remove_and_free(KbClient *client, KbTransfer *t)
{
    release_easy(client, t);
    kb_client_transfer_free(t);
}

static CURL *take_easy(KbClient *client)
{
    if (client->idle_easy->len > 0)
        return g_ptr_array_steal_index(client->idle_easy, client->idle_easy->len - 1);
    return curl_easy_init();
}

/* Queue @t: last, or when urgent after the urgent transfers already waiting (they are at the
 * head: few wait at once, so the walk is short). */
static void enqueue(KbClient *client, KbTransfer *t)
{
    GList *l = client->waiting.head;
    while (t->urgent && l != NULL && ((KbTransfer *)l->data)->urgent)
        l = l->next;
    if (!t->urgent || l == NULL)
        g_queue_push_tail(&client->waiting, t);
    else
        g_queue_insert_before(&client->waiting, l, t);
}

/* Start waiting transfers while there is room. */
static void pump(KbClient *client)
{
    if (client->in_curl > 0 || client->closing)
        return;
    while (g_hash_table_size(client->active) < client->max_in_flight &&
           !g_queue_is_empty(&client->waiting)) {
        KbTransfer *t = g_queue_pop_head(&client->waiting);
        t->easy = take_easy(client);
        kb_client_transfer_setup(t);
        /* Over TLS, wait for an HTTP/2 connection being set up rather than open another. */
        if (g_str_has_prefix(t->url, "https:"))
            curl_easy_setopt(t->easy, CURLOPT_PIPEWAIT, 1L);
        g_hash_table_add(client->active, t);
        CURLMcode mc = curl_multi_add_handle(client->multi, t->easy);
        if (mc != CURLM_OK)
            g_warning("kb-client: %s: curl_multi_add_handle: %s", t->what, curl_multi_strerror(mc));
    }
}

static void complete(KbClient *client, KbTransfer *t, CURLcode rc)
{
    if (!t->cancelled) {
        KbResponse resp;
        kb_client_transfer_finish(t, rc, &resp);
        if (!t->stream && kb_client_transfer_fall_back(t, &resp)) {
            /* Sent again, as JSON, ahead of everything queued (pump() starts it). */
            kb_client_response_clear(&resp);
            release_easy(client, t);
            g_queue_push_head(&client->waiting, t);
            return;
        }
        /* A kb_stream_cancel() from inside on_done is then a no-op, not a double free. */
        t->cancelled = TRUE;
        if (t->stream && t->on_done != NULL)
            t->on_done(&resp, t->user_data);
        else if (!t->stream && t->callback != NULL)
            t->callback(&resp, t->user_data);
        kb_client_response_clear(&resp);
    }
    remove_and_free(client, t);
}

static void collect_finished(KbClient *client)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(client->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        KbTransfer *t = NULL;
        CURLcode rc = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        complete(client, t, rc);
    }
}

static void drive(KbClient *client, curl_socket_t fd, int ev_bitmask)
{
    int running = 0;
    client->in_curl++;
    curl_multi_socket_action(client->multi, fd, ev_bitmask, &running);
    client->in_curl--;
    while (client->reap->len > 0)
        remove_and_free(client, g_ptr_array_steal_index(client->reap, client->reap->len - 1));
    collect_finished(client);
    pump(client);
}

/* ---- public -------------------------------------------------------------------------------- */

void kb_client_async_init(KbClient *client)
{
    client->context = g_main_context_ref_thread_default();
    client->active = g_hash_table_new(NULL, NULL);
    client->reap = g_ptr_array_new();
    client->sockets = g_hash_table_new_full(NULL, NULL, NULL, destroy_source);
    client->idle_easy = g_ptr_array_new_with_free_func((GDestroyNotify)curl_easy_cleanup);
    g_queue_init(&client->waiting);
    client->multi = curl_multi_init();
    curl_multi_setopt(client->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(client->multi, CURLMOPT_SOCKETDATA, client);
    curl_multi_setopt(client->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(client->multi, CURLMOPT_TIMERDATA, client);
    curl_multi_setopt(client->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
}

void kb_client_async_fini(KbClient *client)
{
    client->closing = TRUE;
    GList *active = g_hash_table_get_keys(client->active);
    for (GList *l = active; l != NULL; l = l->next)
        remove_and_free(client, l->data);
    g_list_free(active);
    g_queue_clear_full(&client->waiting, (GDestroyNotify)kb_client_transfer_free);
    g_ptr_array_unref(client->idle_easy);
    curl_multi_cleanup(client->multi);
    if (client->timer != NULL) {
        g_source_destroy(client->timer);
        g_clear_pointer(&client->timer, g_source_unref);
    }
    g_hash_table_unref(client->sockets);
    g_hash_table_unref(client->active);
    g_ptr_array_unref(client->reap);
    g_main_context_unref(client->context);
}

void kb_client_queue_async(KbClient *client, KbTransfer *t, KbResponseFunc callback,
                           gpointer user_data)
{
    t->stream = FALSE;
    t->callback = callback;
    t->user_data = user_data;
    enqueue(client, t);
    pump(client);
}

void kb_client_call_async(KbClient *client, const KbRequest *req, KbResponseFunc callback,
                          gpointer user_data)
{
    kb_client_queue_async(client, kb_client_transfer_new(client, req), callback, user_data);
}

guint kb_client_pending(const KbClient *client)
{
    return g_queue_get_length((GQueue *)&client->waiting) + g_hash_table_size(client->active);
}

KbStream *kb_client_stream(KbClient *client, const KbRequest *req, KbStreamDataFunc on_data,
                           KbStreamDoneFunc on_done, gpointer user_data)
{
    KbTransfer *t = kb_client_transfer_new(client, req);
    t->stream = TRUE;
    t->on_data = on_data;
    t->on_done = on_done;
    t->user_data = user_data;
    enqueue(client, t);
    pump(client);
    return (KbStream *)t;
}

void kb_stream_cancel(KbStream *stream)
{
    KbTransfer *t = (KbTransfer *)stream;
    KbClient *client;
    if (t == NULL || t->cancelled)
        return;
    client = t->client;
    t->cancelled = TRUE;
    if (!g_hash_table_contains(client->active, t)) {
        g_queue_remove(&client->waiting, t);
        kb_client_transfer_free(t);
    } else if (client->in_curl > 0) {
        g_ptr_array_add(client->reap, t);
    } else {
        remove_and_free(client, t);
    }
}
