/*
 * The binder (see the header). The binder is reference counted: every binding on the wire holds a
 * reference, so a response that arrives after kb_binder_free() finds the binder marked freed and
 * only drops its own data.
 */
#include "scheduler/binder.h"

#include <string.h>

typedef struct {
    KbPod *pod; /* ref */
    char *node;
    char *job;
    char *gpu_ids; /* "0,1" chosen by gpu-topology, or NULL */
} Pending;

struct KbBinder {
    gint ref_count;
    gboolean freed;
    gboolean paused;
    KbClient *client;
    KbCache *cache;
    KbRecorder *recorder;
    KbBinderDoneFunc done;
    gpointer done_data;
    gint64 (*now_s)(void);
    guint max_in_flight;
    guint in_flight;
    GQueue queue; /* Pending* */
    guint64 counts[KB_BIND_N_RESULTS];
    guint64 skipped;
    KbBinderEvictFunc evict_done;
    gpointer evict_data;
    guint evictions_in_flight;
    guint64 evict_counts[KB_EVICT_N_RESULTS];
};

typedef struct {
    KbBinder *binder; /* a reference */
    Pending *p;
    gint64 sent_us;
} Call;

static gint64 default_now_s(void)
{
    return g_get_real_time() / G_USEC_PER_SEC;
}

static void pending_free(Pending *p)
{
    kb_object_unref(p->pod);
    g_free(p->node);
    g_free(p->job);
    g_free(p->gpu_ids);
    g_free(p);
}

static void binder_unref(KbBinder *b)
{
    if (--b->ref_count > 0)
        return;
    g_queue_clear_full(&b->queue, (GDestroyNotify)pending_free);
    g_free(b);
}

KbBinder *kb_binder_new(KbClient *client, KbCache *cache, KbRecorder *recorder)
{
    KbBinder *b = g_new0(KbBinder, 1);
    b->ref_count = 1;
    b->client = client;
    b->cache = cache;
    b->recorder = recorder;
    b->now_s = default_now_s;
    b->max_in_flight = KB_BINDER_DEFAULT_MAX_IN_FLIGHT;
    g_queue_init(&b->queue);
    return b;
}

void kb_binder_free(KbBinder *binder)
{
    if (binder == NULL)
        return;
    binder->freed = TRUE;
    g_queue_clear_full(&binder->queue, (GDestroyNotify)pending_free);
    binder_unref(binder);
}

void kb_binder_set_done_func(KbBinder *binder, KbBinderDoneFunc func, gpointer user_data)
{
    binder->done = func;
    binder->done_data = user_data;
}

void kb_binder_set_max_in_flight(KbBinder *binder, guint n)
{
    binder->max_in_flight = MAX(n, 1);
}

void kb_binder_set_clock(KbBinder *binder, gint64 (*now_s)(void))
{
    binder->now_s = now_s != NULL ? now_s : default_now_s;
}

const char *kb_bind_result_to_string(KbBindResult result)
{
    switch (result) {
    case KB_BIND_SUCCEEDED:
        return "succeeded";
    case KB_BIND_CONFLICT:
        return "conflict";
    case KB_BIND_NOT_FOUND:
        return "not_found";
    case KB_BIND_ERROR:
    case KB_BIND_N_RESULTS:
        break;
    }
    return "error";
}

static KbBindResult classify(const KbResponse *resp)
{
    if (resp->error == NULL)
        return KB_BIND_SUCCEEDED;
    if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_CONFLICT) ||
        g_error_matches(resp->error, KB_ERROR, KB_ERROR_ALREADY_EXISTS))
        return KB_BIND_CONFLICT;
    if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND))
        return KB_BIND_NOT_FOUND;
    return KB_BIND_ERROR;
}

/* Cache update and events for one finished binding. */
static void report(KbBinder *b, Pending *p, KbBindResult result, const GError *error,
                   gint64 latency_us)
{
    const KbObjectMeta *m = &p->pod->meta;
    KbBindOutcome out = {.result = result,
                         .pod = p->pod,
                         .node = p->node,
                         .job = p->job,
                         .error = error,
                         .latency_us = latency_us};

    b->counts[result]++;
    if (result == KB_BIND_SUCCEEDED) {
        kb_cache_bind_succeeded(b->cache, m->namespace_, m->name, m->uid, b->now_s());
        if (b->recorder != NULL)
            kb_recorder_event(b->recorder, m, "v1", "Pod", "Normal", "Scheduled",
                              "Successfully assigned %s/%s to %s", m->namespace_, m->name, p->node);
    } else {
        kb_cache_bind_failed(b->cache, m->namespace_, m->name, m->uid, &out.n_rolled_back);
        g_warning("pod %s/%s: binding to node %s failed (%s); job %s: %u pods back to pending",
                  m->namespace_, m->name, p->node, error != NULL ? error->message : "error", p->job,
                  out.n_rolled_back);
        if (b->recorder != NULL)
            kb_recorder_event(b->recorder, m, "v1", "Pod", "Warning", "FailedScheduling",
                              "Binding rejected: %s; gang %s goes back to pending",
                              error != NULL ? error->message : "error", p->job);
    }
    if (b->done != NULL)
        b->done(&out, b->done_data);
}

static void pump(KbBinder *b);

static void on_bound(const KbResponse *resp, gpointer data)
{
    Call *c = data;
    KbBinder *b = c->binder;

    b->in_flight--;
    if (!b->freed) {
        report(b, c->p, classify(resp), resp->error, g_get_monotonic_time() - c->sent_us);
        /* The done callback may have freed the binder. */
        if (!b->freed)
            pump(b);
    }
    pending_free(c->p);
    binder_unref(b);
    g_free(c);
}

static void send_binding(Call *c)
{
    const KbObjectMeta *m = &c->p->pod->meta;
    kb_client_bind_async(c->binder->client, m->namespace_, m->name, m->uid, c->p->node, on_bound,
                         c);
}

/* The GPU indices are on the pod: bind it. A failed patch fails the bind (and rolls the gang
 * back): a pod must never run on GPUs other than the ones the cache holds for it. */
static void on_annotated(const KbResponse *resp, gpointer data)
{
    Call *c = data;
    if (resp->error != NULL || c->binder->freed) {
        on_bound(resp, c);
        return;
    }
    send_binding(c);
}

/* Merge-patch kube-batchd.io/gpu-ids onto the pod before its binding, so that the device plugin
 * or runtime hook sees the indices when the kubelet starts the pod. */
static void send_gpu_ids(Call *c)
{
    const KbObjectMeta *m = &c->p->pod->meta;
    json_object *annotations = json_object_new_object();
    json_object_object_add(annotations, KB_GPU_IDS_ANNOTATION,
                           json_object_new_string(c->p->gpu_ids));
    json_object *meta = json_object_new_object();
    json_object_object_add(meta, "annotations", annotations);
    json_object *body = json_object_new_object();
    json_object_object_add(body, "metadata", meta);
    KbRequest req = {.method = "PATCH",
                     .type = &kb_type_pods,
                     .namespace_ = m->namespace_,
                     .name = m->name,
                     .body = body,
                     .content_type = "application/merge-patch+json"};
    kb_client_call_async(c->binder->client, &req, on_annotated, c);
    json_object_put(body);
}

/* Send queued placements while the window has room; skip those rolled back meanwhile. */
static void pump(KbBinder *b)
{
    while (!b->paused && b->in_flight < b->max_in_flight && !g_queue_is_empty(&b->queue)) {
        Pending *p = g_queue_pop_head(&b->queue);
        const KbObjectMeta *m = &p->pod->meta;
        if (!kb_cache_pod_is_assumed(b->cache, m->namespace_, m->name, m->uid)) {
            b->skipped++;
            pending_free(p);
            continue;
        }
        Call *c = g_new0(Call, 1);
        c->binder = b;
        b->ref_count++;
        c->p = p;
        c->sent_us = g_get_monotonic_time();
        b->in_flight++;
        if (p->gpu_ids != NULL)
            send_gpu_ids(c);
        else
            send_binding(c);
    }
}

void kb_binder_submit(KbBinder *binder, const GArray *placements)
{
    for (guint i = 0; placements != NULL && i < placements->len; i++) {
        const KbPlacement *pl = &g_array_index(placements, KbPlacement, i);
        Pending *p = g_new0(Pending, 1);
        p->pod = kb_object_ref(pl->pod);
        p->node = g_strdup(pl->node);
        p->job = g_strdup(pl->job);
        p->gpu_ids = g_strdup(pl->gpu_ids);
        g_queue_push_tail(&binder->queue, p);
    }
    pump(binder);
}

guint kb_binder_drop_queued(KbBinder *binder)
{
    guint n = 0;
    Pending *p;

    while ((p = g_queue_pop_head(&binder->queue)) != NULL) {
        const KbObjectMeta *m = &p->pod->meta;
        if (kb_cache_pod_is_assumed(binder->cache, m->namespace_, m->name, m->uid))
            kb_cache_bind_failed(binder->cache, m->namespace_, m->name, m->uid, NULL);
        pending_free(p);
        n++;
    }
    return n;
}

void kb_binder_set_paused(KbBinder *binder, gboolean paused)
{
    binder->paused = paused;
    if (!paused)
        pump(binder);
}

guint kb_binder_queued(const KbBinder *binder)
{
    return binder->queue.length;
}

guint kb_binder_in_flight(const KbBinder *binder)
{
    return binder->in_flight;
}

guint64 kb_binder_count(const KbBinder *binder, KbBindResult result)
{
    return result < KB_BIND_N_RESULTS ? binder->counts[result] : 0;
}

guint64 kb_binder_skipped(const KbBinder *binder)
{
    return binder->skipped;
}

/* ---- evictions ------------------------------------------------------------------------------ */

static const char *const eviction_versions[] = {"policy/v1", "policy/v1beta1"};

typedef struct {
    KbBinder *binder; /* a reference */
    KbPod *pod;       /* ref */
    const char *reason;
    guint version; /* index into eviction_versions */
} EvictCall;

void kb_binder_set_evict_func(KbBinder *binder, KbBinderEvictFunc func, gpointer user_data)
{
    binder->evict_done = func;
    binder->evict_data = user_data;
}

guint kb_binder_evictions_in_flight(const KbBinder *binder)
{
    return binder->evictions_in_flight;
}

guint64 kb_binder_evict_count(const KbBinder *binder, KbEvictResult result)
{
    return result < KB_EVICT_N_RESULTS ? binder->evict_counts[result] : 0;
}

const char *kb_evict_result_to_string(KbEvictResult result)
{
    switch (result) {
    case KB_EVICT_ACCEPTED:
        return "accepted";
    case KB_EVICT_GONE:
        return "gone";
    case KB_EVICT_REFUSED:
    case KB_EVICT_N_RESULTS:
        break;
    }
    return "refused";
}

/* The server does not serve Eviction in this policy version (kb_client_evict's test). */
static gboolean eviction_version_unknown(const KbResponse *resp)
{
    if (resp->http_status == 400 && resp->error != NULL)
        return strstr(resp->error->message, "no kind") != NULL ||
               strstr(resp->error->message, "is not registered") != NULL;
    if (resp->http_status == 404) {
        json_object *details = NULL, *kind = NULL;
        if (resp->body == NULL || !json_object_object_get_ex(resp->body, "details", &details) ||
            !json_object_object_get_ex(details, "kind", &kind))
            return TRUE;
        return g_strcmp0(json_object_get_string(kind), "pods") != 0;
    }
    return FALSE;
}

static void send_eviction(EvictCall *c);

static void evict_report(KbBinder *b, EvictCall *c, const KbResponse *resp)
{
    const KbObjectMeta *m = &c->pod->meta;
    KbEvictOutcome out = {.pod = c->pod, .reason = c->reason};
    if (resp->error == NULL) {
        out.result = KB_EVICT_ACCEPTED;
    } else if (g_error_matches(resp->error, KB_ERROR, KB_ERROR_NOT_FOUND)) {
        out.result = KB_EVICT_GONE;
    } else {
        out.result = KB_EVICT_REFUSED;
        out.error = resp->error;
        kb_cache_evict_failed(b->cache, m->namespace_, m->name, m->uid);
        g_warning("pod %s/%s: eviction (%s) refused: %s; it keeps running", m->namespace_, m->name,
                  c->reason, resp->error->message);
        if (b->recorder != NULL)
            kb_recorder_event(b->recorder, m, "v1", "Pod", "Warning", "FailedEviction",
                              "Eviction (%s) refused: %s", c->reason, resp->error->message);
    }
    b->evict_counts[out.result]++;
    if (b->evict_done != NULL)
        b->evict_done(&out, b->evict_data);
}

static void on_evicted(const KbResponse *resp, gpointer data)
{
    EvictCall *c = data;
    KbBinder *b = c->binder;
    if (!b->freed && resp->error != NULL && c->version + 1 < G_N_ELEMENTS(eviction_versions) &&
        eviction_version_unknown(resp)) {
        c->version++;
        send_eviction(c);
        return;
    }
    b->evictions_in_flight--;
    if (!b->freed)
        evict_report(b, c, resp);
    kb_object_unref(c->pod);
    binder_unref(b);
    g_free(c);
}

static void send_eviction(EvictCall *c)
{
    const KbObjectMeta *m = &c->pod->meta;
    json_object *body = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object_object_add(body, "apiVersion",
                           json_object_new_string(eviction_versions[c->version]));
    json_object_object_add(body, "kind", json_object_new_string("Eviction"));
    json_object_object_add(meta, "name", json_object_new_string(m->name));
    json_object_object_add(meta, "namespace", json_object_new_string(m->namespace_));
    json_object_object_add(body, "metadata", meta);
    if (m->uid != NULL) {
        /* The pod we chose, not a successor that took its name meanwhile. */
        json_object *pre = json_object_new_object();
        json_object_object_add(pre, "uid", json_object_new_string(m->uid));
        json_object *opts = json_object_new_object();
        json_object_object_add(opts, "preconditions", pre);
        json_object_object_add(body, "deleteOptions", opts);
    }
    KbRequest req = {.method = "POST",
                     .type = &kb_type_pods,
                     .namespace_ = m->namespace_,
                     .name = m->name,
                     .subresource = "eviction",
                     .body = body};
    kb_client_call_async(c->binder->client, &req, on_evicted, c);
    json_object_put(body);
}

void kb_binder_evict(KbBinder *binder, const GArray *evictions)
{
    for (guint i = 0; evictions != NULL && i < evictions->len; i++) {
        const KbEviction *ev = &g_array_index(evictions, KbEviction, i);
        EvictCall *c = g_new0(EvictCall, 1);
        c->binder = binder;
        binder->ref_count++;
        c->pod = kb_object_ref(ev->pod);
        c->reason = ev->reason;
        binder->evictions_in_flight++;
        send_eviction(c);
    }
}
